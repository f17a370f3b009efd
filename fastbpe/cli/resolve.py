"""``--tokenizer NAME_OR_PATH``: what every analysis subcommand accepts as a tokenizer.

An existing path is any file :func:`fastbpe.load` reads, or GPT-2's ``encoder.json`` (with
``vocab.bpe`` beside it, or a folder holding both). Anything else is the name of an OpenAI
encoding (``r50k_base``, ``cl100k_base``, ``o200k_base``...; ``gpt2`` is ``r50k_base``), read
from the folder named by ``FASTBPE_ENCODINGS`` (nothing is downloaded).
"""
import os
from pathlib import Path

from ..encode.loading import load, openai
from ..encode.tokenizer import Tokenizer

__all__ = ["load_tokenizer", "ENCODINGS_ENV"]

ENCODINGS_ENV = "FASTBPE_ENCODINGS"
_ALIASES = {"gpt2": "r50k_base"}


def _gpt2_files(path: Path):
    """``(encoder.json, vocab.bpe)`` when ``path`` is GPT-2's encoder file or a folder of both."""
    folder = path if path.is_dir() else path.parent
    encoder, vocab = folder / "encoder.json", folder / "vocab.bpe"
    if (path.is_dir() or path.name == "encoder.json") and encoder.is_file() and vocab.is_file():
        return encoder, vocab
    return None


def load_tokenizer(spec: str) -> Tokenizer:
    """The tokenizer a ``--tokenizer`` value names (see the module docstring)."""
    path = Path(spec)
    if path.exists():
        gpt2 = _gpt2_files(path)
        return Tokenizer.from_gpt2(*gpt2) if gpt2 else load(path)
    import fastbpe

    get_encoding = getattr(fastbpe, "get_encoding", None)  # the registry of named encodings, when present
    if get_encoding is not None:
        return get_encoding(spec)
    folder = os.environ.get(ENCODINGS_ENV)
    if not folder:
        raise ValueError(f"--tokenizer {spec!r} is not a file; to use it as an OpenAI encoding name, set "
                         f"{ENCODINGS_ENV} to the folder holding its .tiktoken file")
    return openai(_ALIASES.get(spec, spec), folder)
