"""Which reader fits a tokenizer file, decided from its name and content."""
import errno
import os
import re
from pathlib import Path
from typing import Mapping, Union

from ..fileio import check_regular_file, read_json
from . import gpt2, huggingface, native, sentencepiece, tekken, tiktoken

__all__ = ["read_any"]

GPT2_FILES = ("encoder.json", "vocab.bpe")


def _gpt2_pair(path: Path) -> dict:
    """GPT-2's two files, given their folder or either one of them (the other sits beside it)."""
    folder = path if path.is_dir() else path.parent
    encoder, vocab = (folder / name for name in GPT2_FILES)
    if not path.is_dir() and path.name not in GPT2_FILES:
        encoder = path if path.suffix.lower() == ".json" else encoder
        vocab = path if path.suffix.lower() == ".bpe" else vocab
    for part in (encoder, vocab):
        if not part.is_file():
            raise ValueError(f"{path}: " + (_HUGGING_FACE_PAIR if path.name == "vocab.json" else
                                             f"GPT-2's files come in pairs and {part} is missing "
                                             "(Tokenizer.from_gpt2(encoder_json, vocab_bpe) takes them by name)"))
    return gpt2.read(encoder, vocab)


# Hugging Face's vocab.json + merges.txt are GPT-2's pair renamed, without the split pattern of
# the model they come from (GPT-2's for RoBERTa, another for Qwen): not read as GPT-2's.
_HUGGING_FACE_PAIR = ("Hugging Face's vocab.json + merges.txt hold no split pattern: "
                      "Tokenizer.from_gpt2(vocab_json, merges_txt, pattern=...) reads them")


# A rank file's first line: a base64 token, a space, its rank.
_RANK_LINE = re.compile(rb"[A-Za-z0-9+/]+=*[ \t]+[0-9]+\r?\n")


# The first bytes of gzip, xz, bzip2 and zstd files (corpus.files reads them; not imported
# here: it costs a tokenizer's load 6 ms).
_COMPRESSED = (b"\x1f\x8b", b"\xfd7zXZ\x00", b"BZh", b"\x28\xb5\x2f\xfd")


def _kind_by_content(path: Path) -> str:
    """What a file's first bytes say it is, where its name may not: ``"compressed"``,
    ``"ranks"`` (a tiktoken rank file), ``"protobuf"`` (a SentencePiece model starts with its
    first piece, field 1: byte 0x0A; Mistral's are named ``tokenizer.model.v3``), or ``""``."""
    with open(path, "rb") as f:
        head = f.read(256)
    if head.startswith(_COMPRESSED):
        return "compressed"
    if _RANK_LINE.match(head):
        return "ranks"
    if head.lstrip()[:1] in (b"{", b"["):  # (JSON under another name, a newline first, say)
        return ""
    # field 1 (a piece: 0x0A, its varint length), whose own field 1 (the piece's text) comes first
    at = 1
    while at < len(head) and head[at] & 0x80:
        at += 1
    return "protobuf" if head[:1] == b"\x0a" and head[at + 1:at + 2] == b"\x0a" else ""


def read_any(path: Union[str, os.PathLike]) -> dict:
    """The Tokenizer keyword arguments of any tokenizer file fastbpe reads: a fastbpe file, a
    Hugging Face ``tokenizer.json`` (or a folder holding one), GPT-2's ``encoder.json`` and
    ``vocab.bpe`` (their folder or either file; the other must sit beside it), a
    ``NAME.tiktoken`` file with the ``NAME.tiktoken.json`` written beside it (its ``pat_str``
    and ``special_tokens``), an OpenAI ``{name}.tiktoken`` file (its name picks the published
    pattern and special tokens), Mistral's ``tekken.json``, or a SentencePiece BPE model (a
    ``.model`` file, or one its content says is one)."""
    path = Path(path)
    if not path.exists():  # said first, before what its name says should sit beside it
        if os.fspath(path) in tiktoken.OPENAI_ENCODINGS:  # (a name, as tiktoken.get_encoding takes it)
            raise FileNotFoundError(errno.ENOENT, f"No such file or directory (an OpenAI encoding by its name: "
                                    f"fastbpe.get_encoding({os.fspath(path)!r}))", os.fspath(path))
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", os.fspath(path))
    check_regular_file(path)  # (a file is read more than once: its first bytes, then as its format)
    if path.is_dir():
        if not (path / "tokenizer.json").exists() and all((path / name).exists() for name in GPT2_FILES):
            return _gpt2_pair(path)
        if not (path / "tokenizer.json").exists():
            raise ValueError(f"{path}: a folder must hold a Hugging Face tokenizer.json or GPT-2's encoder.json "
                             f"and vocab.bpe; give the file's own path for other formats ({_HUGGING_FACE_PAIR})")
        return huggingface.read(path)
    suffix = path.suffix.lower()  # (names are recognised as fastbpe train names its outputs: T.TIKTOKEN too)
    if path.name == "merges.txt":
        raise ValueError(f"{path}: {_HUGGING_FACE_PAIR}")
    if suffix == ".bpe":
        return _gpt2_pair(path)
    kind = "" if suffix in (".tiktoken", ".json") else _kind_by_content(path)
    if kind == "compressed":
        raise ValueError(f"{path}: a compressed file; decompress it first (gunzip -k, xz -dk...) and load that")
    if kind == "ranks":
        raise ValueError(f"{path}: a tiktoken rank file (a base64 token and its rank a line), which holds no split "
                         "pattern or special tokens (Llama 3's tokenizer.model is one): load it with "
                         "Tokenizer.from_tiktoken(path, pattern, special_tokens), or name it NAME.tiktoken with "
                         "the NAME.tiktoken.json fastbpe writes beside one")
    if suffix == ".model" or kind == "protobuf":
        return sentencepiece.read(path)
    stem = path.name[: -len(".tiktoken")] if suffix == ".tiktoken" else None
    if stem is not None:
        sidecar = Path(os.fspath(path) + ".json")
        if sidecar.exists():
            return tiktoken.read_with_sidecar(path, sidecar)
        if stem not in tiktoken.OPENAI_ENCODINGS:
            raise ValueError(f"{path}: a .tiktoken file needs its pattern: keep the {sidecar.name} written "
                             f"beside it, name it after one of {sorted(tiktoken.OPENAI_ENCODINGS)}, or use "
                             "Tokenizer.from_tiktoken")
        return tiktoken.read_openai(stem, path)
    if suffix == ".json" and path.name != "encoder.json":
        # the common large files, their tokens and merges read without a full JSON parse
        found = native.read_plain(path) if native.starts_as_native(path) else huggingface.read_plain(path)
        if found is not None:
            return found
    data = read_json(path, "tokenizer file")
    if isinstance(data, Mapping) and data.get("format") == native.FORMAT_NAME:
        return native.read_dict(data, os.fspath(path))
    if isinstance(data, Mapping) and isinstance(data.get("model"), Mapping):
        return huggingface.read(path, data)
    if tekken.is_tekken(data):
        return tekken.read_dict(data, os.fspath(path))
    if isinstance(data, Mapping) and data and all(isinstance(v, int) for v in data.values()):
        return _gpt2_pair(path)  # a flat token -> id table: GPT-2's encoder.json
    raise ValueError(f"{path}: neither a fastbpe tokenizer file nor a Hugging Face tokenizer.json nor "
                     "GPT-2's encoder.json nor Mistral's tekken.json: fastbpe's own JSON has "
                     f"\"format\": \"{native.FORMAT_NAME}\", a Hugging Face tokenizer.json a \"model\", "
                     "GPT-2's encoder.json maps tokens to ids (with vocab.bpe beside it); "
                     ".tiktoken files are recognised by their name")
