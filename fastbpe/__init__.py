"""fastbpe: byte-pair-encoding tokenizers trained and used at corpus scale on CPU.

>>> import fastbpe
>>> tok = fastbpe.train("the cat sat on the mat " * 50, vocab_size=270, progress=False)
>>> tok.decode(tok.encode("the cat"))
'the cat'
"""
from importlib import import_module

from . import reference
from .counting import CorpusDecodeError, count_words
from .pretokenize import PATTERNS, pretokenize, pretokenize_bytes
from .tokenizer import Tokenizer
from .training import learn_from_table, train, train_words
from .wordtable import WordTable
from .formats import openai
from .shards import encode_files, read_shard

__version__ = "0.1.0"

# The embedding kernels import Numba (about a second); they load on first use so that the
# tokenizer and the CLI start fast.
_LAZY = {
    "kernels": ("kernels", None),
    "gather": ("kernels", "gather"),
    "scatter_add": ("kernels", "scatter_add"),
    "scatter_add_sparse": ("kernels", "scatter_add_sparse"),
    "normalize_rows": ("kernels", "normalize_rows"),
    "cosine_similarity": ("kernels", "cosine_similarity"),
    "topk_cosine": ("kernels", "topk_cosine"),
    "analogy": ("kernels", "analogy"),
    "Embedding": ("embedding", "Embedding"),
}

__all__ = [
    "reference",
    "train",
    "train_words",
    "learn_from_table",
    "Tokenizer",
    "WordTable",
    "count_words",
    "CorpusDecodeError",
    "pretokenize",
    "pretokenize_bytes",
    "PATTERNS",
    "openai",
    "encode_files",
    "read_shard",
    *_LAZY,
]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'fastbpe' has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    module = import_module(f".{module_name}", __name__)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
