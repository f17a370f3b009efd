"""Tokenizers from files: any format by its content, and OpenAI's encodings by name."""
import os
from typing import Mapping, Optional, Union

from ..arguments import check_count
from ..formats import detect, tiktoken
from .tokenizer import Tokenizer

__all__ = ["load", "openai", "Encoding"]

PathLike = Union[str, os.PathLike]


def load(path: PathLike) -> Tokenizer:
    """Any tokenizer file fastbpe reads, recognised by its content: a fastbpe file, a Hugging
    Face ``tokenizer.json`` (or a folder holding one), an OpenAI ``{name}.tiktoken`` file, or a
    SentencePiece BPE ``.model`` file."""
    return Tokenizer._from_file(detect.read_any(path), path)


def openai(name: str, path: PathLike) -> Tokenizer:
    """One of OpenAI's encodings (``r50k_base``, ``p50k_base``, ``p50k_edit``, ``cl100k_base``,
    ``o200k_base``) from its ``.tiktoken`` file, or from a folder holding ``{name}.tiktoken``,
    with its published pattern and special tokens. Nothing is downloaded."""
    return Tokenizer._from_file(tiktoken.read_openai(name, path), path)


def Encoding(name: str, *, pat_str: str, mergeable_ranks: Mapping[bytes, int], special_tokens: Mapping[str, int],
             explicit_n_vocab: Optional[int] = None) -> Tokenizer:  # noqa: N802 (tiktoken's name)
    """A tokenizer made as ``tiktoken.Encoding(...)`` makes one, with its arguments: the split
    regex, ``{token bytes: rank}`` (rank = id) and ``{name: id}``; it encodes as tiktoken does.
    tiktoken's recipe for an encoding with more special tokens works as it is written:

    >>> import fastbpe
    >>> base = fastbpe.Encoding("tiny", pat_str=r"\\S+|\\s+", special_tokens={"<|endoftext|>": 257},
    ...                         mergeable_ranks={**{bytes([b]): b for b in range(256)}, b"ab": 256})
    >>> enc = fastbpe.Encoding("tiny_im", pat_str=base._pat_str, mergeable_ranks=base._mergeable_ranks,
    ...                        special_tokens={**base._special_tokens, "<|im_start|>": 258})
    >>> enc.encode("ab<|im_start|>", allowed_special="all"), enc.name
    ([256, 258], 'tiny_im')

    ``explicit_n_vocab``: as in tiktoken, the number of ranks and special tokens, checked to be
    one more than the largest id (a ValueError otherwise)."""
    if not isinstance(mergeable_ranks, Mapping) or not isinstance(special_tokens, Mapping):
        raise TypeError("mergeable_ranks and special_tokens must be mappings ({bytes: rank}, {name: id})")
    if not all(isinstance(t, bytes) for t in mergeable_ranks):
        raise TypeError("mergeable_ranks must map token bytes to ranks")
    if explicit_n_vocab is not None:
        check_count(explicit_n_vocab, "explicit_n_vocab", 1)
        ids = list(mergeable_ranks.values()) + list(special_tokens.values())
        if len(ids) != explicit_n_vocab or max(ids, default=-1) != explicit_n_vocab - 1:
            raise ValueError(f"explicit_n_vocab={explicit_n_vocab}: {len(mergeable_ranks)} ranks and "
                             f"{len(special_tokens)} special tokens, the largest id {max(ids, default=-1)}")
    tok = Tokenizer._from_file(tiktoken.spec_from_ranks(mergeable_ranks, pat_str, special_tokens, name), name)
    tok.name = name
    return tok
