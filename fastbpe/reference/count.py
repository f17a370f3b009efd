"""The specification of counting: ``regex`` on each whole text, chunks counted in a dict.

:func:`fastbpe.count_words` must give the same chunks, counts and first-appearance order for any
block size and any number of workers.
"""
from typing import Dict, Iterable, Union

from .split import pretokenize_bytes

__all__ = ["count_words"]


def count_words(texts: Iterable[Union[str, bytes]], pattern: str, errors: str = "strict") -> Dict[bytes, int]:
    """Unique chunks (UTF-8 bytes) of in-memory texts with their counts, in first-appearance
    order; ``pattern`` is a name of :data:`fastbpe.reference.split.NAMED` or a regex text.

    >>> count_words(["a b a"], r" ?\\w+")
    {b'a': 1, b' b': 1, b' a': 1}
    """
    counts: Dict[bytes, int] = {}
    for text in texts:
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
        for chunk in pretokenize_bytes(data, pattern, errors):
            key = chunk.encode("utf-8", "surrogateescape")
            counts[key] = counts.get(key, 0) + 1
    return counts
