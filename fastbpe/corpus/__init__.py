"""Stage 2: the corpus. Expanding paths and opening files (``files``), cutting text into blocks
at safe places (``cut``), and counting unique chunks in bounded memory, in parallel or on a Dask
cluster (``count``) into a ``WordTable`` (``wordtable``).
"""
from importlib import import_module

__all__ = ["count_words", "CorpusDecodeError", "WordTable", "expand_paths", "open_bytes"]

# Each name is imported from its module on first use: reading files (``fastbpe encode``) needs
# neither the counter nor its cluster support.
_HOMES = {"count_words": "count", "CorpusDecodeError": "files", "expand_paths": "files", "open_bytes": "files",
          "WordTable": "wordtable"}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_HOMES))
