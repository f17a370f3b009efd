"""The reference against worked examples computed by hand (the ``worked_example`` fixture)."""
import doctest


from fastbpe import reference

def test_doctests():
    results = [doctest.testmod(module) for module in (reference.learning, reference.encode, reference.split)]
    assert sum(r.attempted for r in results) > 5 and sum(r.failed for r in results) == 0


def test_worked_merges_and_counts(worked_example):
    merges, counts = reference.learn(worked_example.words(), 15)
    assert [(a, b, c) for (a, b), c in zip(merges, counts)] == worked_example.merges


def test_worked_encodings(worked_example):
    merges, _ = reference.learn(worked_example.words(), 15)
    for word, expected in worked_example.encodings.items():
        assert reference.encode_word(tuple("_" + word), merges) == expected, word


def test_sennrich_toy_corpus(worked_example):
    sennrich = worked_example.sennrich
    assert reference.corpus_size(sennrich) == 95
    assert len(reference.symbols_of(sennrich)) == 11
    merges, counts = reference.learn(sennrich, 10)
    assert (merges[0], counts[0]) == (("e", "s"), 9)
    table = dict(sennrich)
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
