"""Tokenizers from files: any format by its content, and OpenAI's encodings by name."""
import os
from typing import Union

from ..formats import detect, tiktoken
from .tokenizer import Tokenizer

__all__ = ["load", "openai"]

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
