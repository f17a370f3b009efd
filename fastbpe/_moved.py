"""Module paths of earlier versions, kept importable: ``import fastbpe.tokenizer`` gives
``fastbpe.encode.tokenizer``, and so on. The new homes are the ones to use; this table is the
only place that knows the old ones. (``fastbpe.pretokenize`` stays the function: a module of that
name used to hide it.)
"""
import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["install", "MOVED"]

MOVED = {
    "fastbpe.tokenizer": "fastbpe.encode.tokenizer",
    "fastbpe.training": "fastbpe.learn.train",
    "fastbpe.counting": "fastbpe.corpus.count",
    "fastbpe.wordtable": "fastbpe.corpus.wordtable",
    "fastbpe.chunking": "fastbpe.split.bounds",
    "fastbpe.merge_rules": "fastbpe.reference.encode",
    "fastbpe.kernels": "fastbpe.embed.kernels",
    "fastbpe.embedding": "fastbpe.embed.embedding",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module name and loads it as the module at its new home (the same object)."""

    def find_spec(self, name, path=None, target=None):
        if name in MOVED:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module):
        pass


def install() -> None:
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.append(_Alias())
