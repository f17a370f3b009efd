"""Stage 2: the corpus. Expanding paths and opening files (``files``), cutting text into blocks
at safe places (``cut``), and counting unique chunks in bounded memory, in parallel or on a Dask
cluster (``count``) into a ``WordTable`` (``wordtable``).
"""
from .._lazy import lazy_names

__all__ = ["count_words", "CorpusDecodeError", "WordTable", "expand_paths", "open_bytes"]

# Each name is imported from its module on first use: reading files (``fastbpe encode``) needs
# neither the counter nor its cluster support.
_HOMES = {"count_words": "count:count_words", "CorpusDecodeError": "files:CorpusDecodeError",
          "expand_paths": "files:expand_paths", "open_bytes": "files:open_bytes", "WordTable": "wordtable:WordTable"}


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
