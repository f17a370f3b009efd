"""The reference against the seed pages' worked examples, computed by hand there."""
import doctest
from collections import Counter

import pytest

from fastbpe import reference

SEED_TEXT = (
    "saya makan nasi lemak dan minum teh tarik . kami makan makanan sedap dan minum minuman "
    "sejuk . mereka makan nasi lemak lagi . we eat nasi lemak and we drink teh tarik . they eat "
    "and they drink ."
)
SEED_MERGES = [
    ("a", "n", 10), ("_", "m", 8), ("a", "k", 7), ("_", "t", 6), ("i", "n", 5), ("_", ".", 5),
    ("_m", "ak", 4), ("_mak", "an", 4), ("_", "l", 4), ("_", "d", 4), ("_", "s", 3),
    ("_", "n", 3), ("_n", "a", 3), ("_na", "s", 3), ("_nas", "i", 3),
]
SEED_ENCODINGS = {
    "makanan": ("_makan", "an"),
    "minuman": ("_m", "in", "u", "m", "an"),
    "lemak": ("_l", "e", "m", "ak"),
    "makan-makan": ("_makan", "-", "m", "ak", "an"),
    "drinking": ("_d", "r", "in", "k", "in", "g"),
}
SENNRICH = {tuple("low_"): 5, tuple("lower_"): 2, tuple("newest_"): 6, tuple("widest_"): 3}


def seed_words():
    return Counter(tuple("_" + w) for w in SEED_TEXT.split())


def test_doctests():
    result = doctest.testmod(reference)
    assert result.attempted > 5 and result.failed == 0


def test_seed_merges_and_counts():
    merges, counts = reference.learn(seed_words(), 15)
    assert [(a, b, c) for (a, b), c in zip(merges, counts)] == SEED_MERGES


@pytest.mark.parametrize("word,expected", SEED_ENCODINGS.items())
def test_seed_encodings(word, expected):
    merges, _ = reference.learn(seed_words(), 15)
    assert reference.encode_word(tuple("_" + word), merges) == expected


def test_sennrich_toy_corpus():
    assert reference.corpus_size(SENNRICH) == 95
    assert len(reference.symbols_of(SENNRICH)) == 11
    merges, counts = reference.learn(SENNRICH, 10)
    assert (merges[0], counts[0]) == (("e", "s"), 9)
    table = dict(SENNRICH)
    for pair in merges:
        table = reference.apply_merge(table, pair)
    assert reference.corpus_size(table) == 28
    assert ("newest_",) in table and ("low_",) in table
    assert ("widest_",) not in table


def test_overlapping_pairs_count_twice_merge_once():
    assert reference.pair_counts({("a", "a", "a"): 1}) == {("a", "a"): 2}
    assert reference.merge_word(("a",) * 4, ("a", "a")) == ("aa", "aa")
    assert reference.merge_word(("a",) * 3, ("a", "a")) == ("aa", "a")


def test_tie_goes_to_pair_seen_first():
    # (c, d) and (a, b) both occur twice; (c, d) is seen first.
    merges, _ = reference.learn({("c", "d"): 1, ("a", "b"): 2, ("c", "d", "x"): 1}, 1)
    assert merges == [("c", "d")]


def test_stops_when_no_pair_or_below_min_frequency():
    assert reference.learn({("a",): 3}, 5) == ([], [])
    assert reference.learn({("a", "b"): 1, ("c", "d"): 2}, 5, min_frequency=2) == ([("c", "d")], [2])
