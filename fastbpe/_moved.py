"""Module paths of earlier versions, kept importable with the public names they exported.

``import fastbpe.tokenizer`` and ``from fastbpe.counting import count_words`` keep working: each
old module is a stand-in whose names resolve, on first use, to their new homes listed here.
This table is the only place that knows the old layout; new code imports from the new homes.
(``fastbpe.pretokenize`` stays the function: a module of that name used to hide it.)
"""
import importlib
import importlib.util
import sys
import types

__all__ = ["install", "MOVED"]

MOVED = {
    "fastbpe.tokenizer": {
        "Tokenizer": "fastbpe.encode.tokenizer:Tokenizer",
        "MERGE_RULES": "fastbpe.encode.tokenizer:MERGE_RULES",
        "FORMAT_NAME": "fastbpe.formats.native:FORMAT_NAME",
        "FORMAT_VERSION": "fastbpe.formats.native:FORMAT_VERSION",
        "bytes_to_unicode": "fastbpe.formats.bytelevel:bytes_to_unicode",
    },
    "fastbpe.training": {
        "train": "fastbpe.learn.train:train",
        "train_words": "fastbpe.learn.train:train_words",
        "learn_from_table": "fastbpe.learn.learner:learn_from_table",
        "BACKENDS": "fastbpe.learn.train:BACKENDS",
    },
    "fastbpe.counting": {
        "count_words": "fastbpe.corpus.count:count_words",
        "CorpusDecodeError": "fastbpe.corpus.files:CorpusDecodeError",
        "iter_corpus_files": "fastbpe.corpus.files:expand_paths",
        "count_words_reference": "fastbpe._moved:count_words_reference",
    },
    "fastbpe.wordtable": {"WordTable": "fastbpe.corpus.wordtable:WordTable"},
    "fastbpe.chunking": {
        "chunk_bounds": "fastbpe.split.bounds:chunk_bounds",
        "staged_chunk_bounds": "fastbpe.split.bounds:staged_chunk_bounds",
        "fused_pattern_id": "fastbpe.split.patterns:fused_scanner_id",
        "pattern_source": "fastbpe.split.patterns:source",
        "check_pattern": "fastbpe.split.patterns:compiled_regex",
    },
    "fastbpe.merge_rules": {
        "encode_by_pair_rank": "fastbpe.reference.encode:encode_by_pair_rank",
        "encode_by_token_rank": "fastbpe.reference.encode:encode_by_token_rank",
    },
    "fastbpe.kernels": "fastbpe.embed.kernels",
    "fastbpe.embedding": "fastbpe.embed.embedding",
}


def count_words_reference(texts, pretokenizer: str = "gpt2", errors: str = "strict"):
    """The reference count as a WordTable (what ``fastbpe.counting.count_words_reference`` was)."""
    from .corpus.wordtable import WordTable
    from .reference.count import count_words
    from .split.patterns import source

    counts = count_words(texts, source(pretokenizer), errors)
    if not counts:
        raise ValueError("the corpus is empty: it holds no chunk to count")
    return WordTable.from_counts(counts)


def _resolve(target: str):
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


class _Alias:
    """Finds an old module name; loads the new module itself (a whole module that moved) or a
    stand-in whose attributes are the old public names. A meta path finder and loader by
    their methods, not by importlib.abc's base classes: importing that module costs every
    ``import fastbpe`` about 10 ms (it imports importlib.resources)."""

    def find_spec(self, name, path=None, target=None):
        if name in MOVED:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        target = MOVED[spec.name]
        if isinstance(target, str):
            return importlib.import_module(target)
        module = types.ModuleType(spec.name, f"Moved: see {sorted(set(t.split(':')[0] for t in target.values()))}.")
        module.__all__ = list(target)

        def __getattr__(name):
            if name not in target:
                raise AttributeError(f"module {spec.name!r} has no attribute {name!r}")
            return _resolve(target[name])

        module.__getattr__ = __getattr__
        return module

    def exec_module(self, module):
        pass


def install() -> None:
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.append(_Alias())
