"""The specification of learning merges (Sennrich et al. 2016), in plain Python.

The compiled learner (``fastbpe/_core/learn.pyx``) is tested against this module; when the two
disagree, this module is right. Standard library only, clarity over speed.

The algorithm ("BPE by hand"):

1. Each word is a tuple of base symbols (characters, or bytes as 1-byte ``bytes`` objects),
   counted by frequency. The word table keeps **first-appearance order**.
2. Count every adjacent pair in every word, weighted by the word's count. Overlapping windows
   count: ``aaa`` holds ``(a, a)`` twice.
3. Pick the pair with the highest count. **Ties go to the pair seen first** when scanning the
   words in table order, left to right: what ``max()`` returns over a freshly built dict.
4. Replace it in every word, left to right, never overlapping (``aaa`` -> ``aa a``); the new
   symbol is the concatenation. Record the merge. Repeat until the requested number of merges,
   until no pair is left, or until the best count is below ``min_frequency``.
5. Encoding a word replays the merges in learned order (:mod:`fastbpe.reference.encode`).
"""
from typing import Dict, List, Mapping, Sequence, Tuple, TypeVar, Union

Symbol = TypeVar("Symbol", str, bytes)
Word = Tuple[Union[str, bytes], ...]
Pair = Tuple[Union[str, bytes], Union[str, bytes]]

__all__ = ["pair_counts", "best_pair", "merge_word", "apply_merge", "learn", "corpus_size", "symbols_of"]


def pair_counts(words: Mapping[Word, int]) -> Dict[Pair, int]:
    """Count adjacent pairs, weighted by word count; overlapping windows count.

    The dict's insertion order is the order in which pairs are first seen (words in table
    order, each left to right), which is what the tie rule of :func:`best_pair` relies on.

    >>> pair_counts({("a", "a", "a"): 2, ("b", "a"): 1})
    {('a', 'a'): 4, ('b', 'a'): 1}
    """
    counts: Dict[Pair, int] = {}
    for word, count in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + count
    return counts


def best_pair(counts: Mapping[Pair, int]) -> Tuple[Pair, int]:
    """The pair with the highest count; among equal counts, the one seen first.

    ``max()`` keeps the first of equal maxima, so insertion (first-seen) order breaks ties.

    >>> best_pair({("x", "y"): 2, ("a", "b"): 3, ("c", "d"): 3})
    (('a', 'b'), 3)
    """
    pair = max(counts, key=counts.__getitem__)
    return pair, counts[pair]


def merge_word(word: Word, pair: Pair) -> Word:
    """Replace every occurrence of ``pair`` in ``word``, left to right, never overlapping.

    >>> merge_word(("a", "a", "a"), ("a", "a"))
    ('aa', 'a')
    >>> merge_word((b"l", b"o", b"w"), (b"o", b"w"))
    (b'l', b'ow')
    """
    left, right = pair
    out = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == left and word[i + 1] == right:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def apply_merge(words: Mapping[Word, int], pair: Pair) -> Dict[Word, int]:
    """Merge ``pair`` in every word, keeping table order.

    Two different tuples with the same concatenation (only possible when the caller's base
    symbols are longer than one character) can become equal; their counts are then summed at
    the position of the first, which changes neither pair counts nor first-seen order.

    >>> apply_merge({("a", "b", "c"): 2, ("b", "c"): 1}, ("b", "c"))
    {('a', 'bc'): 2, ('bc',): 1}
    """
    merged: Dict[Word, int] = {}
    for word, count in words.items():
        new_word = merge_word(word, pair)
        merged[new_word] = merged.get(new_word, 0) + count
    return merged


def learn(
    words: Mapping[Word, int], num_merges: int, min_frequency: int = 1
) -> Tuple[List[Pair], List[int]]:
    """Learn up to ``num_merges`` merges; returns the merges and the count of each when chosen.

    >>> words = {tuple("low_"): 5, tuple("lower_"): 2, tuple("newest_"): 6, tuple("widest_"): 3}
    >>> merges, counts = learn(words, 2)
    >>> merges, counts
    ([('e', 's'), ('es', 't')], [9, 9])
    """
    merges: List[Pair] = []
    counts: List[int] = []
    table = dict(words)
    while len(merges) < num_merges:
        pairs = pair_counts(table)
        if not pairs:
            break
        pair, count = best_pair(pairs)
        if count < min_frequency:
            break
        merges.append(pair)
        counts.append(count)
        table = apply_merge(table, pair)
    return merges, counts


def corpus_size(words: Mapping[Word, int]) -> int:
    """Total number of symbols in the corpus the table stands for (each word times its count).

    >>> corpus_size({("a", "b"): 3, ("c",): 1})
    7
    """
    return sum(len(word) * count for word, count in words.items())


def symbols_of(words: Mapping[Word, int]) -> Sequence[Union[str, bytes]]:
    """The distinct symbols of a table, in first-seen order.

    >>> symbols_of({("b", "a"): 1, ("a", "c"): 2})
    ['b', 'a', 'c']
    """
    return list(dict.fromkeys(symbol for word in words for symbol in word))
