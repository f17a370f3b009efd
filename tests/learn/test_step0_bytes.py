"""Step 0 of a byte-level table (symbols given as uint8) tallies each run of ordinary words by
16-bit pair key and fills every pair's position list at once; the int32 path adds pairs one
occurrence at a time. Both must leave the learner in a state that gives the reference's merges:
ties, runs of one symbol (``aaaa``), one-symbol words, counts above one, and long chunks (their
size lowered) between runs of ordinary words, whose pairs the ordinary words then meet again."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fastbpe import reference
from fastbpe._core.learn import MergeLearner

BYTES = [bytes([b]) for b in range(256)]


def learn(words, counts, num_merges, dtype, min_frequency=1, compact=False, tie_ranks=None, **store):
    """``(merges as bytes, counts)`` of MergeLearner on the table, its symbols given as ``dtype``."""
    flat = np.frombuffer(b"".join(words), np.uint8).astype(dtype)
    starts = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
    learner = MergeLearner(flat, starts, np.array(counts, np.int64), BYTES, tie_ranks, **store)
    if compact:
        learner.compact_slack = -(1 << 40)  # drop stale positions after every merge
    merge_ids, merge_counts, tokens = learner.run(num_merges, min_frequency)
    return [(tokens[a], tokens[b]) for a, b, _ in merge_ids.tolist()], merge_counts.tolist()


def reference_merges(words, counts, num_merges, min_frequency=1):
    table = {}
    for word, count in zip(words, counts):
        table[tuple(bytes([b]) for b in word)] = count
    return reference.learn(table, num_merges, min_frequency)


word = st.one_of(
    st.binary(min_size=1, max_size=1),                                   # one symbol
    st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=2), st.integers(1, 12)),  # aaaa, abab
    st.lists(st.sampled_from(b"ab\x00\xff\xc3\xa9"), min_size=1, max_size=30).map(bytes),
    st.lists(st.sampled_from(b"ab"), min_size=40, max_size=120).map(bytes),  # long when lowered
)


@settings(max_examples=150, deadline=None)
@given(words=st.lists(word, min_size=1, max_size=12), counts=st.lists(st.integers(1, 3), min_size=12, max_size=12),
       long_chunk=st.sampled_from([2, 8, 40, 65536]), num_merges=st.integers(1, 40),
       min_frequency=st.integers(1, 2), compact=st.booleans())
def test_byte_step0_equals_reference_and_the_int32_path(words, counts, long_chunk, num_merges, min_frequency,
                                                         compact):
    words = list(dict.fromkeys(words))
    counts = counts[:len(words)]
    expected = reference_merges(words, counts, num_merges, min_frequency)
    store = dict(long_chunk=long_chunk, coarse_bits=6)
    assert learn(words, counts, num_merges, np.uint8, min_frequency, compact, **store) == expected
    assert learn(words, counts, num_merges, np.int32, min_frequency, compact, **store) == expected


def test_ordinary_words_around_long_chunks_keep_scan_order():
    """A pair first seen once in a long chunk (a single pair) and then in ordinary words on both
    sides of another long chunk; ties are broken by first position across all of them."""
    words = [b"ba", b"ab" * 30 + b"c", b"abab", b"cd", b"dc" * 30, b"a", b"ab", b"cdcd", b"b"]
    counts = [2, 1, 1, 3, 1, 5, 1, 1, 2]
    for num_merges in (1, 3, 10):
        expected = reference_merges(words, counts, num_merges)
        for long_chunk in (2, 5, 50, 65536):
            assert learn(words, counts, num_merges, np.uint8, long_chunk=long_chunk, coarse_bits=6) == expected


def test_a_pair_with_thousands_of_occurrences_gets_its_own_block():
    """Lists past the pool's largest block size, filled at once, then grown by merges."""
    words = [b"ab" * 3000, b"ba" * 2500 + b"c", b"abc", b"ca" * 5000]
    counts = [1, 2, 3, 1]
    expected = reference_merges(words, counts, 30)
    assert learn(words, counts, 30, np.uint8) == expected
    assert learn(words, counts, 30, np.uint8, compact=True) == expected


def test_tie_ranks_rule_through_byte_step0():
    rng = np.random.default_rng(5)
    words = list(dict.fromkeys(rng.choice(np.frombuffer(b"abcd", np.uint8), n).astype(np.uint8).tobytes()
                               for n in rng.integers(1, 20, 60)))
    counts = rng.integers(1, 4, len(words)).tolist()
    ranks = rng.permutation(256).tolist()
    got8 = learn(words, counts, 25, np.uint8, tie_ranks=ranks, long_chunk=15)
    got32 = learn(words, counts, 25, np.int32, tie_ranks=ranks, long_chunk=15)
    assert got8 == got32
