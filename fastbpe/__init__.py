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
from . import _moved
from ._lazy import lazy_names

__version__ = "0.1.0"

# Every public name loads on first use, so that ``import fastbpe.X`` (the command, a format
# reader, the Tokenizer) pays for what it uses: the embedding kernels import Numba (about a
# second), and the whole package takes longer to import than one tokenizer takes to load.
# ``from fastbpe import train`` and ``fastbpe.Tokenizer`` work as if imported here.
_HOMES = {
    "train": "learn.train:train",
    "train_words": "learn.train:train_words",
    "learn_from_table": "learn.learner:learn_from_table",
    "Tokenizer": "encode.tokenizer:Tokenizer",
    "load": "encode.loading:load",
    "openai": "encode.loading:openai",
    "Encoding": "encode.loading:Encoding",
    "get_encoding": "encode.registry:get_encoding",
    "encoding_for_model": "encode.registry:encoding_for_model",
    "encoding_name_for_model": "encode.registry:encoding_name_for_model",
    "list_encoding_names": "encode.registry:list_encoding_names",
    "WordTable": "corpus.wordtable:WordTable",
    "count_words": "corpus.count:count_words",
    "CorpusDecodeError": "corpus.files:CorpusDecodeError",
    "UnknownTokenIdError": "encode.vocab:UnknownTokenIdError",
    "pretokenize": "split.pretokenize:pretokenize",
    "pretokenize_bytes": "split.pretokenize:pretokenize_bytes",
    "PATTERNS": "split.patterns:PATTERNS",
    "encode_files": "shards:encode_files",
    "read_shard": "shards:read_shard",
    "reference": "reference",
    "formats": "formats",
    "analysis": "analysis",
    "embed": "embed",
    "kernels": "embed.kernels",
    "gather": "embed.kernels:gather",
    "scatter_add": "embed.kernels:scatter_add",
    "scatter_add_sparse": "embed.kernels:scatter_add_sparse",
    "normalize_rows": "embed.kernels:normalize_rows",
    "cosine_similarity": "embed.kernels:cosine_similarity",
    "topk_cosine": "embed.kernels:topk_cosine",
    "analogy": "embed.kernels:analogy",
    "Embedding": "embed.embedding:Embedding",
}

# The subpackages and modules, as attributes of the package before their first import.
_SUBMODULES = ("analysis", "arguments", "cli", "cluster", "corpus", "embed", "encode", "fileio", "formats",
               "learn", "progress", "reference", "shards", "split")

__all__ = list(_HOMES)

_moved.install()


__getattr__, __dir__ = lazy_names(__name__, _HOMES, _SUBMODULES)
