"""Feeding the compiled learner: argument checks, a table's chunks as flat base-symbol ids,
and the learner itself. Everything here works on arrays and a :class:`WordTable`; turning the
result into a :class:`~fastbpe.encode.Tokenizer` is for :mod:`fastbpe.learn.train` and
:mod:`fastbpe.learn.extend`, so this module needs no tokenizer.
"""
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from .._core.learn import MergeLearner
from ..arguments import check_count
from ..corpus.wordtable import WordTable
from ..formats.ids import ID_LIMIT

__all__ = ["check_num_merges", "make_learner", "table_symbols", "learn_from_table"]

ProgressCallback = Callable[[int, int], None]


def check_num_merges(num_merges: int, min_frequency: int) -> None:
    check_count(num_merges, "num_merges", 0, ID_LIMIT)  # (each merge makes a token: an int32 id)
    check_count(min_frequency, "min_frequency", 0)  # (0, BpeTrainer's default: as 1, every pair occurs)


def make_learner(symbols, word_starts, counts, base_tokens, tie_ranks=None) -> MergeLearner:
    # A pair's count is at most the sum over words of count * (length - 1); refuse tables
    # where that could pass 2**63 rather than let a 64-bit counter wrap (float64 is plenty
    # precise for a bound). Not np.dot: BLAS wakes its threads, which then spin on the other
    # core for CPU time that dwarfs the product itself.
    pair_weight = float((counts.astype(np.float64) * (np.diff(word_starts) - 1)).sum()) if len(counts) else 0.0
    if pair_weight >= 2.0**63:
        raise OverflowError("the word counts are too large: pair counts could overflow 64 bits")
    return MergeLearner(symbols, word_starts, counts, base_tokens, tie_ranks)


def run_learner(
    symbols: np.ndarray,
    word_starts: np.ndarray,
    counts: np.ndarray,
    base_tokens: List[bytes],
    num_merges: int,
    min_frequency: int,
    progress: Optional[ProgressCallback],
    max_tokens: int = -1,
) -> Tuple[np.ndarray, np.ndarray, List[bytes]]:
    learner = make_learner(symbols, word_starts, counts, base_tokens)
    return learner.run(int(num_merges), int(min_frequency), int(max_tokens), progress)


def table_symbols(table: WordTable, unit: str, word_start: str, word_end: str):
    """Flat base-symbol ids of a table's chunks: the 256 byte values, or the characters in
    first-seen order. Returns ``(symbols, word_starts, base_tokens)``."""
    if unit == "bytes" and not word_start and not word_end:
        # The common case stays vectorised: a chunk's bytes are already its base ids (uint8,
        # which the learner reads as they are: no int32 copy of the table).
        return table.data, table.offsets, [bytes([b]) for b in range(256)]
    start, end = word_start.encode("utf-8"), word_end.encode("utf-8")
    base_ids: Dict[bytes, int] = {}
    if unit == "bytes":
        base_ids = {bytes([b]): b for b in range(256)}
    flat: List[int] = []
    starts = [0]
    for i, (chunk, _) in enumerate(table.items()):
        if unit == "bytes":
            flat.extend(start + chunk + end)
        else:
            try:
                text = word_start + chunk.decode("utf-8") + word_end
            except UnicodeDecodeError as exc:
                raise ValueError(f"chunk {i} is not valid UTF-8 ({exc}); use unit='bytes'") from None
            for char in text:
                flat.append(base_ids.setdefault(char.encode("utf-8"), len(base_ids)))
        starts.append(len(flat))
    return np.asarray(flat, dtype=np.int32), np.asarray(starts, dtype=np.int64), list(base_ids)


def learn_from_table(
    table: WordTable,
    num_merges: int,
    *,
    unit: str = "bytes",
    word_start: str = "",
    word_end: str = "",
    min_frequency: int = 1,
    max_tokens: int = -1,
    progress: Optional[ProgressCallback] = None,
) -> Tuple[np.ndarray, np.ndarray, List[bytes]]:
    """Merges from a :class:`WordTable`, all in flat arrays.

    Byte-level base ids are the 256 byte values (every byte is in the vocabulary, so any input
    encodes); character-level base ids are the table's characters in first-seen order.
    Returns ``(merges, counts, tokens)``: int32 rows ``(left, right, new)``, each merge's count,
    and the bytes of every token id (UTF-8 for characters).
    """
    check_num_merges(num_merges, min_frequency)
    if unit not in ("bytes", "chars"):
        raise ValueError(f"unit must be 'bytes' or 'chars', got {unit!r}")
    symbols, starts, base_tokens = table_symbols(table, unit, word_start, word_end)
    return run_learner(symbols, starts, table.counts, base_tokens, num_merges, min_frequency,
                        progress, max_tokens)
