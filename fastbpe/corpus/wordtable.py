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
from ..split.patterns import same_split

__all__ = ["WordTable"]


class WordTable:
    """Unique chunks with 64-bit counts, in first-appearance order.

    >>> table = WordTable.from_counts({b" the": 3, b" cat": 1})
    >>> len(table), table.total_count, list(table.items())
    (2, 4, [(b' the', 3), (b' cat', 1)])
    """

    __slots__ = ("data", "offsets", "counts", "pattern")
    # ``pattern``: the split it was counted with (a name or a regex, as count_words was given
    # it), which train and extend use or check; None where unknown (a table made of counts).

    def __init__(self, data, offsets: np.ndarray, counts: np.ndarray):
        """A table of the given arrays, checked: ``data`` bytes (uint8 values, or a bytes-like
        object), ``offsets`` and ``counts`` integers, with the module's invariants (distinct
        chunks among them)."""
        data = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) \
            else _integers(data, "data", 255)
        self._set(data, _integers(offsets, "offsets"), _integers(counts, "counts"))
        distinct = ChunkCounter()
        distinct.add_table(self.data, self.offsets, np.ones(len(self.counts), dtype=np.int64))
        if len(distinct) != len(self.counts):
            raise ValueError("every chunk must be distinct (a chunk listed twice: WordTable.concat sums them)")

    @classmethod
    def _of_counter(cls, data: np.ndarray, offsets: np.ndarray, counts: np.ndarray) -> "WordTable":
        """The table of a compiled counter's arrays (distinct chunks by construction: not
        looked up again)."""
        table = cls.__new__(cls)
        table._set(data, offsets, counts)
        return table

    def _set(self, data: np.ndarray, offsets: np.ndarray, counts: np.ndarray) -> None:
        self.pattern = None
        self.data = np.ascontiguousarray(data, dtype=np.uint8)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.counts = np.ascontiguousarray(counts, dtype=np.int64)
        if self.data.ndim != 1 or self.offsets.ndim != 1 or self.counts.ndim != 1:
            raise ValueError("data, offsets and counts must be one-dimensional")
        if len(self.offsets) != len(self.counts) + 1:
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
        # (a mapping's keys are distinct: no lookup of them again; _set refuses a count of 0)
        return cls._of_counter(data, offsets, _integers(list(counts.values()), "counts"))

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
        pattern = None  # the split of the tables that say theirs (one: tables of two are refused)
        for table in tables:
            if not isinstance(table, WordTable):
                raise TypeError(f"concat takes WordTables, got {type(table).__name__} "
                                "(WordTable.from_counts makes one)")
            if table.pattern is not None:
                if pattern is not None and not same_split(pattern, table.pattern):
                    raise ValueError(f"the tables were counted with different patterns ({pattern!r:.60} and "
                                     f"{table.pattern!r:.60}): their chunks split text two ways")
                pattern = pattern or table.pattern
            counter.add_table(table.data, table.offsets, table.counts)  # (OverflowError past 2**63 - 1)
        combined = cls._of_counter(*counter.arrays())
        combined.pattern = pattern
        return combined

    def __setstate__(self, state) -> None:
        # (a table pickled before tables kept their pattern has none: unknown)
        self.pattern = None
        for name, value in (state[1] if isinstance(state, tuple) else state or {}).items():
            setattr(self, name, value)

    def __len__(self) -> int:
        return len(self.counts)

    def chunk(self, i: int) -> bytes:
        """Chunk ``i`` (from the end when negative, as a list's)."""
        n = len(self.counts)
        if not -n <= i < n:
            raise IndexError(f"chunk {i} of a table of {n}")
        i %= n
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
        return _exact_sum(self.counts)

    @property
    def total_bytes(self) -> int:
        """Bytes of corpus text the table stands for (each chunk times its count)."""
        return _exact_sum(self.counts, np.diff(self.offsets))

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


def _integers(values, name: str, top: int = 2**63 - 1) -> np.ndarray:
    """``values`` as an integer array whose values lie in ``[0, top]`` (floats and other kinds
    refused, not cut to integers; what int64 or uint8 cannot hold refused, not wrapped)."""
    array = np.asarray(values)
    if array.size and array.dtype.kind not in "iu":  # (bools, floats, str; ints past 64 bits: objects)
        raise TypeError(f"{name} must be integers, got {array.dtype}")
    if array.size and (int(array.min()) < 0 or int(array.max()) > top):
        raise ValueError(f"{name} must lie in 0..{top}, got values from {int(array.min())} to {int(array.max())}")
    return array


def _exact_sum(counts: np.ndarray, weights=None) -> int:
    """The sum of ``counts`` (times ``weights``), exact however large: int64 arithmetic where
    a float estimate shows it cannot overflow, Python ints otherwise.

    >>> _exact_sum(np.array([2**62, 2**62, 2**62])) == 3 * 2**62
    True
    """
    floats = counts.astype(np.float64)
    estimate = float(floats.sum() if weights is None else np.dot(floats, weights))
    if estimate < 2**62:
        return int(np.sum(counts) if weights is None else np.dot(counts, weights))
    if weights is None:
        return sum(counts.tolist())
    return sum(c * w for c, w in zip(counts.tolist(), weights.tolist()))
