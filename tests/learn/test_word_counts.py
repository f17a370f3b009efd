"""A word's count lives in its nodes while every count is below 2**31, else in an array by word:
both ways merge as the reference does and count the same corpus, whether the table is byte-level
(uint8 symbols) or given as int32 ids."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fastbpe import reference
from fastbpe._core.learn import MergeLearner

BYTES = [bytes([b]) for b in range(256)]
# around the largest count a node holds (2**31 - 1)
EDGE_COUNTS = [1, 2, 3, 2**31 - 2, 2**31 - 1, 2**31, 2**31 + 1, 2**40 + 7]


def learn(words, counts, num_merges, dtype):
    flat = np.frombuffer(b"".join(words), np.uint8).astype(dtype)
    starts = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
    learner = MergeLearner(flat, starts, np.array(counts, np.int64), BYTES)
    merge_ids, merge_counts, tokens = learner.run(num_merges)
    merges = [(tokens[a], tokens[b]) for a, b, _ in merge_ids.tolist()]
    return merges, merge_counts.tolist(), learner


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), lengths=st.lists(st.integers(1, 40), min_size=1, max_size=8),
       counts=st.lists(st.sampled_from(EDGE_COUNTS), min_size=8, max_size=8),
       num_merges=st.integers(1, 40), dtype=st.sampled_from([np.uint8, np.int32]))
def test_counts_below_and_past_31_bits_merge_as_the_reference(seed, lengths, counts, num_merges, dtype):
    rng = np.random.default_rng(seed)
    words = list(dict.fromkeys(rng.choice(np.frombuffer(b"abcab", np.uint8), n).astype(np.uint8).tobytes()
                               for n in lengths))
    counts = counts[:len(words)]
    merges, merge_counts, learner = learn(words, counts, num_merges, dtype)
    expected = reference.learn({tuple(bytes([b]) for b in w): c for w, c in zip(words, counts)}, num_merges)
    assert (merges, merge_counts) == tuple(map(list, expected))
    # the corpus after the merges, counted from the nodes' live symbols and their words' counts
    assert learner.corpus_tokens() == sum(len(reference.encode_word(tuple(bytes([b]) for b in w), merges)) * c
                                          for w, c in zip(words, counts))


def test_one_count_past_31_bits_keeps_the_counts_by_word():
    """The largest count decides: 2**31 - 1 fits a node (no array by word), 2**31 does not."""
    words = [b"abab", b"ba"]
    for big, array_bytes in ((2**31 - 1, 0), (2**31, 2 * 8)):
        merges, merge_counts, learner = learn(words, [big, 1], 2, np.uint8)
        assert merges == [(b"a", b"b"), (b"ab", b"ab")]
        assert merge_counts == [2 * big, big]
        assert learner.memory_use()["word_counts"] == array_bytes

