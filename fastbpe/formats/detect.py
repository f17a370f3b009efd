"""Which reader fits a tokenizer file, decided from its name and content."""
import os
from pathlib import Path
from typing import Mapping, Union

from ..fileio import read_json
from . import huggingface, native, tiktoken

__all__ = ["read_any"]


def read_any(path: Union[str, os.PathLike]) -> dict:
    """The Tokenizer keyword arguments of any tokenizer file fastbpe reads: a fastbpe file, a
    Hugging Face ``tokenizer.json`` (or a folder holding one), a ``NAME.tiktoken`` file with the
    ``NAME.tiktoken.json`` written beside it (its ``pat_str`` and ``special_tokens``), or an
    OpenAI ``{name}.tiktoken`` file (its name picks the published pattern and special tokens)."""
    path = Path(path)
    if path.is_dir():
        return huggingface.read(path)
    stem = path.name[: -len(".tiktoken")] if path.name.endswith(".tiktoken") else None
    if stem is not None:
        sidecar = Path(os.fspath(path) + ".json")
        if sidecar.exists():
            return tiktoken.read_with_sidecar(path, sidecar)
        if stem not in tiktoken.OPENAI_ENCODINGS:
            raise ValueError(f"{path}: a .tiktoken file needs its pattern: keep the {sidecar.name} written "
                             f"beside it, name it after one of {sorted(tiktoken.OPENAI_ENCODINGS)}, or use "
                             "Tokenizer.from_tiktoken")
        return tiktoken.read_openai(stem, path)
    data = read_json(path, "tokenizer file")
    if isinstance(data, Mapping) and data.get("format") == native.FORMAT_NAME:
        return native.read_dict(data)
    if isinstance(data, Mapping) and "model" in data:
        return huggingface.read(path)
    raise ValueError(f"{path}: neither a fastbpe tokenizer file nor a Hugging Face tokenizer.json")
