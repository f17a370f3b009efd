"""Stage 5: tokenizer files. One module per format, each with ``read`` (the file's Tokenizer
keyword arguments) and ``write`` (a Tokenizer to the file):

``native`` fastbpe's versioned JSON; ``huggingface`` ``tokenizer.json``; ``tiktoken`` ``.tiktoken``
rank files and OpenAI's presets; ``gpt2`` ``encoder.json`` + ``vocab.bpe``; ``detect`` picks the
reader for any file; ``bytelevel`` is GPT-2's byte-to-character codec they share.

The readers return plain keyword arguments and never build a Tokenizer themselves, so this
package depends on nothing above it; ``Tokenizer.from_huggingface(path)`` and friends (and
:func:`fastbpe.load`) turn them into tokenizers.
"""
from importlib import import_module

from . import bytelevel, detect, gpt2, huggingface, native, tiktoken
from .bytelevel import bytes_to_unicode
from .huggingface import from_oniguruma_pattern, oniguruma_pattern
from .tiktoken import OPENAI_ENCODINGS, read_tiktoken_ranks, to_tiktoken_encoding

__all__ = ["bytelevel", "detect", "gpt2", "huggingface", "native", "tiktoken", "bytes_to_unicode",
           "oniguruma_pattern", "from_oniguruma_pattern", "OPENAI_ENCODINGS", "read_tiktoken_ranks",
           "to_tiktoken_encoding", "to_huggingface", "to_tiktoken", "to_gpt2"]

# Writers under the names earlier versions exported.
to_huggingface = huggingface.write
to_tiktoken = tiktoken.write
to_gpt2 = gpt2.write

# Earlier versions exported functions here that return a Tokenizer; they now live where
# Tokenizers are made and are looked up on first use (importing them here would make this
# package depend on the one that depends on it).
_RETURN_TOKENIZERS = {
    "from_huggingface": ("fastbpe.encode.tokenizer", "Tokenizer.from_huggingface"),
    "from_tiktoken": ("fastbpe.encode.tokenizer", "Tokenizer.from_tiktoken"),
    "from_gpt2": ("fastbpe.encode.tokenizer", "Tokenizer.from_gpt2"),
    "openai": ("fastbpe.encode.loading", "openai"),
    "load_tokenizer": ("fastbpe.encode.loading", "load"),
}


def __getattr__(name: str):
    if name not in _RETURN_TOKENIZERS:
        raise AttributeError(f"module 'fastbpe.formats' has no attribute {name!r}")
    module_name, attribute = _RETURN_TOKENIZERS[name]
    value = import_module(module_name)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value
