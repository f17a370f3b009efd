"""The unique-chunk table: what counting produces and what training consumes.

(Sennrich et al. 2016 call a chunk a "word", hence the names ``WordTable`` and ``count_words``.)

Chunks are byte strings (the UTF-8 of a pre-tokenized chunk, or raw bytes) kept in three flat
arrays rather than a dict of Python objects, so that a table of millions of chunks costs a few
bytes per chunk beyond its text and crosses into compiled code without conversion.

Invariants: ``offsets[0] == 0``, ``offsets`` is non-decreasing with ``offsets[-1] == len(data)``,
every chunk is non-empty and distinct, every count is positive, and the order is the order of
first appearance in the corpus (training on the table then gives exactly the reference's merges).
"""
from typing import Dict, Iterable, Iterator, Mapping, Tuple

import numpy as np

from .._core.count import ChunkCounter

__all__ = ["WordTable"]


class WordTable:
    """Unique chunks with 64-bit counts, in first-appearance order.

    >>> table = WordTable.from_counts({b" the": 3, b" cat": 1})
    >>> len(table), table.total_count, list(table.items())
    (2, 4, [(b' the', 3), (b' cat', 1)])
    """

    __slots__ = ("data", "offsets", "counts")

    def __init__(self, data: np.ndarray, offsets: np.ndarray, counts: np.ndarray):
        self.data = np.ascontiguousarray(data, dtype=np.uint8)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.counts = np.ascontiguousarray(counts, dtype=np.int64)
        if self.offsets.ndim != 1 or len(self.offsets) != len(self.counts) + 1:
            raise ValueError("offsets must have one entry more than counts")
        if self.offsets[0] != 0 or self.offsets[-1] != len(self.data):
            raise ValueError("offsets must start at 0 and end at len(data)")
        if (self.offsets[1:] <= self.offsets[:-1]).any():  # (no np.diff: its int64 array costs 6x)
            raise ValueError("every chunk must be non-empty")
        if (self.counts <= 0).any():
            raise ValueError("every count must be positive")

    @classmethod
    def from_counts(cls, counts: Mapping[bytes, int]) -> "WordTable":
        """Build from a mapping of chunk bytes to count, keeping the mapping's order."""
        chunks = list(counts)
        for chunk in chunks:
            if not isinstance(chunk, (bytes, bytearray)):
                raise TypeError(f"chunks must be bytes, got {type(chunk).__name__}")
        lengths = np.fromiter((len(c) for c in chunks), dtype=np.int64, count=len(chunks))
        offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(chunks), dtype=np.uint8)
        values = np.fromiter(counts.values(), dtype=np.int64, count=len(chunks))
        return cls(data, offsets, values)

    @classmethod
    def concat(cls, tables: Iterable["WordTable"]) -> "WordTable":
        """Combine tables counted on consecutive parts of a corpus, in that order.

        A chunk keeps the position of its first appearance in the earliest table, and its
        counts are summed, so the result equals counting the whole corpus at once (in the
        compiled chunk table: no Python object per chunk).

        >>> a, b = WordTable.from_counts({b"x": 1, b"y": 2}), WordTable.from_counts({b"z": 1, b"x": 5})
        >>> WordTable.concat([a, b]).to_dict()
        {b'x': 6, b'y': 2, b'z': 1}
        """
        counter = ChunkCounter()
        for table in tables:
            counter.add_table(table.data, table.offsets, table.counts)
        return cls(*counter.arrays())

    def __len__(self) -> int:
        return len(self.counts)

    def chunk(self, i: int) -> bytes:
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()

    def items(self) -> Iterator[Tuple[bytes, int]]:
        buf = self.data.tobytes()
        offsets = self.offsets.tolist()
        for i, count in enumerate(self.counts.tolist()):
            yield buf[offsets[i] : offsets[i + 1]], count

    def to_dict(self) -> Dict[bytes, int]:
        return dict(self.items())

    @property
    def total_count(self) -> int:
        """Number of chunks in the corpus (with repetition)."""
        return int(self.counts.sum())

    @property
    def total_bytes(self) -> int:
        """Bytes of corpus text the table stands for (each chunk times its count)."""
        return int((np.diff(self.offsets) * self.counts).sum())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WordTable):
            return NotImplemented
        return (
            np.array_equal(self.data, other.data)
            and np.array_equal(self.offsets, other.offsets)
            and np.array_equal(self.counts, other.counts)
        )

    def __repr__(self) -> str:
        return f"WordTable({len(self)} unique chunks, {self.total_count} in all)"
