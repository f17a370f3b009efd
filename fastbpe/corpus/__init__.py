"""Stage 2: the corpus. Expanding paths and opening files (``files``), cutting text into blocks
at safe places (``cut``), and counting unique chunks in bounded memory, in parallel or on a Dask
cluster (``count``) into a ``WordTable`` (``wordtable``).
"""
from .count import count_words
from .files import CorpusDecodeError, expand_paths, open_bytes
from .wordtable import WordTable

__all__ = ["count_words", "CorpusDecodeError", "WordTable", "expand_paths", "open_bytes"]
