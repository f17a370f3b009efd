"""fastbpe: byte-pair-encoding tokenizers trained and used at corpus scale on CPU.

The subpackages are the stages of the pipeline, in the order text flows through them:
``split`` (text -> chunks), ``corpus`` (files -> blocks -> counted chunks), ``learn`` (counts ->
merges), ``encode`` (the Tokenizer: text -> ids), ``formats`` (tokenizer files), ``shards``
(corpora -> token files), ``embed`` (the [V, d] table the ids index); ``reference`` specifies each
stage in plain Python and ``_core`` holds the compiled code. Glossary: a *chunk* is a pre-token
(what the split pattern yields; Sennrich et al. 2016 call it a word), a *symbol* one unit of a
chunk during BPE, a *pair* two adjacent symbols, a *merge* a pair joined into a new *token*, and
a *rank* a merge's (or tiktoken token's) priority.

>>> import fastbpe
>>> tok = fastbpe.train("the cat sat on the mat " * 50, vocab_size=270, progress=False)
>>> tok.decode(tok.encode("the cat"))
'the cat'
"""
from importlib import import_module

from . import _moved, formats, reference
from .corpus import CorpusDecodeError, WordTable, count_words
from .encode import Tokenizer, encoding_for_model, get_encoding, load, openai
from .learn import learn_from_table, train, train_words
from .shards import encode_files, read_shard
from .split import PATTERNS, pretokenize, pretokenize_bytes

__version__ = "0.1.0"

# The embedding kernels import Numba (about a second); they load on first use so that the
# tokenizer and the CLI start fast. The analyses load on first use too.
_LAZY = {
    "analysis": ("analysis", None),
    "embed": ("embed", None),
    "kernels": ("embed.kernels", None),
    "gather": ("embed.kernels", "gather"),
    "scatter_add": ("embed.kernels", "scatter_add"),
    "scatter_add_sparse": ("embed.kernels", "scatter_add_sparse"),
    "normalize_rows": ("embed.kernels", "normalize_rows"),
    "cosine_similarity": ("embed.kernels", "cosine_similarity"),
    "topk_cosine": ("embed.kernels", "topk_cosine"),
    "analogy": ("embed.kernels", "analogy"),
    "Embedding": ("embed.embedding", "Embedding"),
}

__all__ = [
    "reference",
    "formats",
    "train",
    "train_words",
    "learn_from_table",
    "Tokenizer",
    "load",
    "WordTable",
    "count_words",
    "CorpusDecodeError",
    "pretokenize",
    "pretokenize_bytes",
    "PATTERNS",
    "openai",
    "get_encoding",
    "encoding_for_model",
    "encode_files",
    "read_shard",
    *_LAZY,
]

_moved.install()


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
