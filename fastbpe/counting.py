"""Counting chunks of a corpus into a WordTable.

(Minimal version: the ``regex`` module, one process. The compiled, streaming, parallel counter
replaces the implementation, keeping this API.)
"""
import gzip
import os
from pathlib import Path
from typing import Dict, Iterable, Iterator, Union

import regex

from .pretokenize import resolve_pattern
from .wordtable import WordTable

__all__ = ["count_words", "iter_texts"]

Corpus = Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]]


def _open_text(path: Path, errors: str):
    opener = gzip.open if path.suffix == ".gz" else open
    return opener(path, "rt", encoding="utf-8", errors=errors)


def iter_texts(corpus: Corpus, errors: str = "strict", block_size: int = 1 << 22) -> Iterator[str]:
    """Texts of a corpus: a str is text (a path if such a file exists), a path-like is a file;
    iterables of either."""
    if isinstance(corpus, os.PathLike) or (isinstance(corpus, str) and "\n" not in corpus
                                           and len(corpus) < 4096 and os.path.isfile(corpus)):
        with _open_text(Path(corpus), errors) as f:
            yield from iter(lambda: f.read(block_size), "")
    elif isinstance(corpus, str):
        yield corpus
    else:
        for item in corpus:
            yield from iter_texts(item, errors, block_size)


def count_words(corpus: Corpus, pretokenizer: str = "gpt2", workers=None, progress=None,
                errors: str = "strict") -> WordTable:
    pattern = regex.compile(resolve_pattern(pretokenizer))
    counts: Dict[bytes, int] = {}
    for text in iter_texts(corpus, errors):
        for chunk in pattern.findall(text):
            key = chunk.encode("utf-8")
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        raise ValueError("the corpus is empty: no chunk to count")
    return WordTable.from_counts(counts)
