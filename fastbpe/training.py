"""Learning merges: validation, conversion to flat id arrays, and dispatch to a backend.

``train_words`` is the low-level contract both backends implement; ``learn_from_table`` is the
corpus-scale path that feeds a :class:`~fastbpe.wordtable.WordTable` to the compiled learner
without building Python tuples.
"""
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import reference
from ._train import MergeLearner
from .wordtable import WordTable

Symbol = Union[str, bytes]
Pair = Tuple[Symbol, Symbol]
ProgressCallback = Callable[[int, int], None]

__all__ = ["train_words", "learn_from_table", "BACKENDS"]

BACKENDS = ("fast", "reference")


def _check_num_merges(num_merges: int, min_frequency: int) -> None:
    if isinstance(num_merges, bool) or not isinstance(num_merges, (int, np.integer)):
        raise TypeError(f"num_merges must be an int, got {type(num_merges).__name__}")
    if num_merges < 0:
        raise ValueError(f"num_merges must be >= 0, got {num_merges}")
    if isinstance(min_frequency, bool) or not isinstance(min_frequency, (int, np.integer)):
        raise TypeError(f"min_frequency must be an int, got {type(min_frequency).__name__}")
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")


def _validate_words(words: Mapping) -> Optional[type]:
    """Check a word table; return the symbol type (str or bytes), None for an empty table.

    >>> _validate_words({("a", "b"): 2}) is str
    True
    """
    if not isinstance(words, Mapping):
        raise TypeError(f"words must be a mapping of symbol tuples to counts, got {type(words).__name__}")
    kind = None
    for i, (word, count) in enumerate(words.items()):
        if not isinstance(word, tuple):
            raise TypeError(f"word {i} must be a tuple of symbols, got {type(word).__name__}")
        if not word:
            raise ValueError(f"word {i} is empty")
        for symbol in word:
            if type(symbol) not in (str, bytes):
                raise TypeError(f"word {i}: symbols must be str or bytes, got {type(symbol).__name__}")
            if kind is None:
                kind = type(symbol)
            elif type(symbol) is not kind:
                raise TypeError(f"word {i} mixes str and bytes symbols; use one kind for the whole table")
            if not symbol:
                raise ValueError(f"word {i} has an empty symbol")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
            raise TypeError(f"word {i}: count must be an int, got {type(count).__name__}")
        if count <= 0:
            raise ValueError(f"word {i}: count must be positive, got {count}")
        if count >= 2**63:
            raise OverflowError(f"word {i}: count {count} does not fit in 64 bits")
    return kind


def _encode_symbol(symbol: Symbol) -> bytes:
    return symbol.encode("utf-8", "surrogatepass") if isinstance(symbol, str) else symbol


def _decode_symbol(content: bytes, kind: type) -> Symbol:
    return content.decode("utf-8", "surrogatepass") if kind is str else content


def _run_learner(
    symbols: np.ndarray,
    word_starts: np.ndarray,
    counts: np.ndarray,
    base_tokens: List[bytes],
    num_merges: int,
    min_frequency: int,
    progress: Optional[ProgressCallback],
) -> Tuple[np.ndarray, np.ndarray, List[bytes]]:
    learner = MergeLearner(symbols, word_starts, counts, base_tokens)
    return learner.run(int(num_merges), int(min_frequency), progress)


def train_words(
    words: Mapping[Tuple[Symbol, ...], int],
    num_merges: int,
    *,
    min_frequency: int = 1,
    backend: str = "fast",
    with_counts: bool = False,
    progress: Optional[ProgressCallback] = None,
):
    """Learn merges from a word table; the contract shared by every backend.

    ``words`` maps tuples of symbols (all ``str`` or all ``bytes``) to positive counts, in
    first-appearance order. Returns ``[(left, right), ...]``, or ``(merges, counts)`` with
    ``with_counts=True``. ``backend="reference"`` runs :mod:`fastbpe.reference`.

    >>> train_words({tuple("abab"): 2, tuple("ab"): 1}, 2)
    [('a', 'b'), ('ab', 'ab')]
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    _check_num_merges(num_merges, min_frequency)
    kind = _validate_words(words)
    if backend == "reference" or kind is None:
        merges, counts = reference.learn(words, num_merges, min_frequency)
    else:
        base_ids: Dict[Symbol, int] = {}
        flat: List[int] = []
        starts = [0]
        for word in words:
            for symbol in word:
                flat.append(base_ids.setdefault(symbol, len(base_ids)))
            starts.append(len(flat))
        base_tokens = [_encode_symbol(symbol) for symbol in base_ids]
        merge_ids, merge_counts, tokens = _run_learner(
            np.asarray(flat, dtype=np.int32),
            np.asarray(starts, dtype=np.int64),
            np.fromiter(words.values(), dtype=np.int64, count=len(words)),
            base_tokens,
            num_merges,
            min_frequency,
            progress,
        )
        symbols = list(base_ids) + [_decode_symbol(t, kind) for t in tokens[len(base_ids):]]
        merges = [(symbols[left], symbols[right]) for left, right, _ in merge_ids.tolist()]
        counts = merge_counts.tolist()
    return (merges, counts) if with_counts else merges


def learn_from_table(
    table: WordTable,
    num_merges: int,
    *,
    min_frequency: int = 1,
    progress: Optional[ProgressCallback] = None,
) -> Tuple[np.ndarray, np.ndarray, List[bytes]]:
    """Byte-level merges from a :class:`WordTable`, all in flat arrays.

    Base ids are the 256 byte values (every byte is in the vocabulary, so any input encodes).
    Returns ``(merges, counts, tokens)``: int32 rows ``(left, right, new)``, each merge's count,
    and the bytes of every token id.
    """
    _check_num_merges(num_merges, min_frequency)
    base_tokens = [bytes([b]) for b in range(256)]
    return _run_learner(
        table.data.astype(np.int32),
        table.offsets,
        table.counts,
        base_tokens,
        num_merges,
        min_frequency,
        progress,
    )
