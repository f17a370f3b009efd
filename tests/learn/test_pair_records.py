"""The learner keeps a record, an index slot and a position list for the pairs that occur, not
for every pair it ever saw: a pair whose count falls to 0 is freed and its id reused. The
merges stay the reference's (ties, ``aaaa`` overlaps, long chunks, the ``tie_ranks`` rule), and
after training the live records are exactly the distinct adjacent pairs of the merged corpus."""
import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fastbpe import reference
import fastbpe._core.learn as core_learn
from fastbpe._core.learn import MergeLearner

BYTES = [bytes([b]) for b in range(256)]


def replay(words, merges):
    """Each word as its tokens after applying ``merges`` in order, as the reference encodes it."""
    return [list(reference.encode_word(tuple(BYTES[b] for b in word), merges)) for word in words]


def learn(words, counts, num_merges, min_frequency=1, tie_ranks=None, **store):
    flat = np.frombuffer(b"".join(words), np.uint8)
    starts = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
    learner = MergeLearner(flat, starts, np.array(counts, np.int64), BYTES, tie_ranks, **store)
    merge_ids, merge_counts, tokens = learner.run(num_merges, min_frequency)
    merges = [(tokens[a], tokens[b]) for a, b, _ in merge_ids.tolist()]
    return merges, merge_counts.tolist(), learner


def reference_bytes(words, counts, num_merges, min_frequency=1):
    return reference.learn({tuple(bytes([b]) for b in w): c for w, c in zip(words, counts)},
                           num_merges, min_frequency)


def live_pairs(words, merges):
    return len({(t[i], t[i + 1]) for t in replay(words, merges) for i in range(len(t) - 1)})


@settings(max_examples=40, deadline=None)
@given(letters=st.sampled_from([b"a", b"ab", b"abc", b"abcdefgh", bytes(range(40)), bytes(range(200, 256))]),
       lengths=st.lists(st.integers(1, 600), min_size=1, max_size=6), seed=st.integers(0, 2**32 - 1),
       num_merges=st.integers(0, 120), min_frequency=st.integers(1, 2), long_chunk=st.sampled_from([2, 100, 1 << 30]))
def test_live_records_are_the_pairs_of_the_merged_corpus(letters, lengths, seed, num_merges, min_frequency,
                                                         long_chunk):
    """Many pairs die (every merge empties its own pair and often its neighbours'), new ones
    take their ids; a freed pair that comes back is a new record. Alphabets of up to 56 bytes
    make thousands of distinct pairs: the index grows and erases across its probe runs."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(letters, np.uint8)
    words = list(dict.fromkeys(rng.choice(alphabet, n).astype(np.uint8).tobytes() for n in lengths))
    counts = [1 + i % 3 for i in range(len(words))]
    merges, merge_counts, learner = learn(words, counts, num_merges, min_frequency, long_chunk=long_chunk,
                                          coarse_bits=6)
    assert (merges, merge_counts) == tuple(map(list, reference_bytes(words, counts, num_merges, min_frequency)))
    assert learner.memory_use()["pairs_count"] == live_pairs(words, merges)


def test_runs_of_one_symbol_free_and_recreate_their_pairs():
    """``aaaa``: (a, a) empties when merged, (aa, aa) is born and dies in turn; ties between
    equal counts go to the pair seen first."""
    words = [b"a" * 257, b"ba" * 40, b"ab" * 40 + b"a" * 9]
    counts = [1, 2, 3]
    for long_chunk in (2, 1 << 30):
        merges, merge_counts, learner = learn(words, counts, 60, long_chunk=long_chunk, coarse_bits=6)
        assert (merges, merge_counts) == tuple(map(list, reference_bytes(words, counts, 60)))
        assert learner.memory_use()["pairs_count"] == live_pairs(words, merges)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), lengths=st.lists(st.integers(2, 300), min_size=1, max_size=5),
       num_merges=st.integers(1, 80))
def test_tie_ranks_with_reused_ids_match_the_rule(seed, lengths, num_merges):
    """Under ``tie_ranks`` a heap entry's tie key is the pair's ranks, fixed per pair but not
    per id: an entry left by a freed pair must not pass for the pair that reuses its id. The
    rule's merges, replayed in Python: the highest count, then the smallest (rank, rank) where
    a merged token's rank is its id."""
    rng = np.random.default_rng(seed)
    words = list(dict.fromkeys(rng.choice(np.frombuffer(b"abcde", np.uint8), n).astype(np.uint8).tobytes()
                               for n in lengths))
    counts = [1 + i % 2 for i in range(len(words))]
    ranks = rng.permutation(256).tolist()
    got, got_counts, _ = learn(words, counts, num_merges, tie_ranks=ranks)
    # the rule, step by step, on the replayed corpus
    rank = {bytes([b]): ranks[b] for b in range(256)}
    expected, next_id = [], 256
    for _ in range(num_merges):
        pair_counts = {}
        for tokens, c in zip(replay(words, expected), counts):
            for pair in zip(tokens, tokens[1:]):
                pair_counts[pair] = pair_counts.get(pair, 0) + c
        if not pair_counts:
            break
        best = min(pair_counts, key=lambda p: (-pair_counts[p], rank[p[0]], rank[p[1]]))
        expected.append(best)
        if best[0] + best[1] not in rank:  # a token that exists keeps its id
            rank[best[0] + best[1]] = next_id
            next_id += 1
    assert got == expected


def pair_counts(words, counts, merges):
    """Weighted count of each adjacent pair of the corpus after ``merges``."""
    found = {}
    for tokens, c in zip(replay(words, merges), counts):
        for pair in zip(tokens, tokens[1:]):
            found[pair] = found.get(pair, 0) + c
    return found


def test_a_pair_seen_once_then_twice_gets_its_record_and_merges():
    """In a long chunk, below the floor, a pair created once is a single pair (an index slot,
    no record); its second occurrence gives it a record with both positions, and the tie
    between two pairs of count 2 goes to the one whose single occurrence came first."""
    words, counts = [b"abxabyabxab"], [1]
    learner = MergeLearner(np.frombuffer(words[0], np.uint8), np.array([0, 11], np.int64),
                           np.array(counts, np.int64), BYTES, long_chunk=2)
    ids, _, tokens = learner.run(1, 2)  # (a, b) x4: (ab, x) and (x, ab) twice, (ab, y) and (y, ab) once
    assert learner.memory_use()["single_pairs"] == 2
    assert learner.memory_use()["pairs_count"] == live_pairs(words, [(b"a", b"b")])
    ids, merge_counts, tokens = learner.run(5, 2)
    merges = [(tokens[a], tokens[b]) for a, b, _ in ids.tolist()]
    assert (merges, merge_counts.tolist()) == tuple(map(list, reference_bytes(words, counts, 6, 2)))
    assert merges[1] == (b"ab", b"x")  # count 2 at positions 0 and 6, before (x, ab) at 2 and 8
    # a run with floor 1 gives the single pairs left their records and merges them in order
    ids, merge_counts, tokens = learner.run(10, 1)
    merges = [(tokens[a], tokens[b]) for a, b, _ in ids.tolist()]
    assert learner.memory_use()["single_pairs"] == 0
    assert (merges, merge_counts.tolist()) == tuple(map(list, reference_bytes(words, counts, len(merges), 1)))
    assert learner.memory_use()["pairs_count"] == live_pairs(words, merges)


@settings(max_examples=40, deadline=None)
@given(letters=st.sampled_from([b"a", b"ab", b"abc", b"abcdefgh", bytes(range(40)), bytes(range(200, 256))]),
       lengths=st.lists(st.integers(1, 500), min_size=1, max_size=5), seed=st.integers(0, 2**32 - 1),
       steps=st.lists(st.integers(0, 40), min_size=1, max_size=4), floor=st.integers(2, 3),
       long_chunk=st.sampled_from([2, 50]), counts=st.lists(st.integers(1, 3), min_size=5, max_size=5))
def test_single_pairs_in_runs_of_any_length(letters, lengths, seed, steps, floor, long_chunk, counts):
    """Runs of a few merges each (each run refills the heap from its first cut): the merges
    are the reference's, every live pair is a record or a single pair, and the single pairs
    are exactly the pairs counted below the floor with one occurrence, in a long chunk, not of
    two one-symbol tokens (step 0 lists those by block): a record left so by a merge is a single
    pair again."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(letters, np.uint8)
    words = list(dict.fromkeys(rng.choice(alphabet, n).astype(np.uint8).tobytes() for n in lengths))
    counts = counts[:len(words)]
    flat = np.frombuffer(b"".join(words), np.uint8)
    starts = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
    learner = MergeLearner(flat, starts, np.array(counts, np.int64), BYTES, long_chunk=long_chunk,
                           coarse_bits=6)
    done = 0
    for step in steps:
        ids, merge_counts, tokens = learner.run(step, floor)
        merges = [(tokens[a], tokens[b]) for a, b, _ in ids.tolist()]
        assert len(merges) <= done + step
        done = len(merges)
        assert (merges, merge_counts.tolist()) == tuple(map(list, reference_bytes(words, counts, done, floor)))
        live = pair_counts(words, counts, merges)
        use = learner.memory_use()
        assert use["pairs_count"] == len(live)
        assert use["single_pairs"] == len(single_pairs(words, counts, merges, floor, long_chunk))


def single_pairs(words, counts, merges, floor, long_chunk):
    """The pairs after ``merges`` that the learner keeps as single pairs: one occurrence, in a
    word of at least ``long_chunk`` symbols counted below ``floor``, not two one-symbol tokens."""
    seen = {}
    for word, tokens, c in zip(words, replay(words, merges), counts):
        for pair in zip(tokens, tokens[1:]):
            seen.setdefault(pair, []).append((len(word) >= long_chunk, c))
    return {pair for pair, where in seen.items()
            if len(where) == 1 and where[0][0] and where[0][1] < floor and len(pair[0]) + len(pair[1]) > 2}


def test_a_record_left_with_one_occurrence_is_a_single_pair_again():
    """``acaacacb``: merging (a, c) left to right makes (ac, a) at 0 (a single pair), at 3 (its
    record, count 2), and the merge at 5 takes the one at 3 back. Left with one occurrence below
    the floor, (ac, a) is a single pair again, like the three other pairs of the merged chunk;
    a later run with floor 1 gives them records back and merges as the reference."""
    words, counts = [b"acaacacb"], [1]
    learner = MergeLearner(np.frombuffer(words[0], np.uint8), np.array([0, 8], np.int64),
                           np.array(counts, np.int64), BYTES, long_chunk=2)
    ids, _, tokens = learner.run(1, 2)
    merges = [(tokens[a], tokens[b]) for a, b, _ in ids.tolist()]
    assert merges == [(b"a", b"c")]
    assert single_pairs(words, counts, merges, 2, 2) == {(b"ac", b"a"), (b"a", b"ac"), (b"ac", b"ac"), (b"ac", b"b")}
    assert learner.memory_use()["single_pairs"] == 4
    assert learner.memory_use()["pairs_count"] == 4
    ids, merge_counts, tokens = learner.run(10, 1)
    merges = [(tokens[a], tokens[b]) for a, b, _ in ids.tolist()]
    assert (merges, merge_counts.tolist()) == tuple(map(list, reference_bytes(words, counts, len(merges), 1)))
    assert learner.memory_use()["single_pairs"] == 0


def test_no_pair_at_all():
    """An empty table and one of one-symbol words: no pair, no merge, at any floor."""
    for words in ([], [b"a", b"b"]):
        flat = np.frombuffer(b"".join(words), np.uint8)
        starts = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
        for floor in (1, 2):
            learner = MergeLearner(flat, starts, np.ones(len(words), np.int64), BYTES, long_chunk=2)
            ids, merge_counts, _ = learner.run(5, floor)
            assert ids.shape == (0, 3) and merge_counts.tolist() == []
            assert learner.memory_use()["pairs_count"] == 0


@settings(max_examples=30, deadline=None)
@given(letters=st.sampled_from([b"ab", b"abcdefgh", bytes(range(40)), bytes(range(200, 256))]),
       lengths=st.lists(st.integers(1, 600), min_size=1, max_size=6), seed=st.integers(0, 2**32 - 1),
       num_merges=st.integers(0, 120), min_frequency=st.integers(1, 2), long_chunk=st.sampled_from([2, 100, 1 << 30]),
       dense_from=st.sampled_from([1, 7, 300]))
def test_an_index_filled_to_thirteen_sixteenths_finds_every_pair(letters, lengths, seed, num_merges, min_frequency,
                                                                 long_chunk, dense_from):
    """From DENSE_INDEX_PAIRS pairs on the index fills to 13/16 (long probe runs, erasures that
    shift entries across the end of the slots back to the start, capacities that are not powers
    of two): the merges are the reference's and the live records the merged corpus's pairs."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(letters, np.uint8)
    words = list(dict.fromkeys(rng.choice(alphabet, n).astype(np.uint8).tobytes() for n in lengths))
    counts = [1 + i % 3 for i in range(len(words))]
    saved = core_learn.DENSE_INDEX_PAIRS
    core_learn.DENSE_INDEX_PAIRS = dense_from
    try:
        merges, merge_counts, learner = learn(words, counts, num_merges, min_frequency, long_chunk=long_chunk,
                                              coarse_bits=6)
    finally:
        core_learn.DENSE_INDEX_PAIRS = saved
    assert (merges, merge_counts) == tuple(map(list, reference_bytes(words, counts, num_merges, min_frequency)))
    assert learner.memory_use()["pairs_count"] == live_pairs(words, merges)


def test_a_dense_index_grows_by_an_eighth_in_seven_byte_slots():
    """Once dense, the index fills to 13/16 and grows by an eighth (its load stays over 13/18),
    7 bytes a slot (a 24-bit tag and the id): 40,000 random bytes make about 30,000 pairs, grown
    to from 1024 slots in a few dozen steps; merging then erases and adds single pairs, whose
    ids hold positions, and the merges are the reference's."""
    rng = np.random.default_rng(5)
    words, counts = [rng.integers(0, 256, 40_000, dtype=np.uint8).tobytes()], [1]
    saved = core_learn.DENSE_INDEX_PAIRS
    core_learn.DENSE_INDEX_PAIRS = 1
    try:
        learner = MergeLearner(np.frombuffer(words[0], np.uint8), np.array([0, 40_000], np.int64),
                               np.array(counts, np.int64), BYTES, long_chunk=2, coarse_bits=6)
    finally:
        core_learn.DENSE_INDEX_PAIRS = saved
    use = learner.memory_use()
    assert use["pairs_count"] > 25_000
    assert use["pair_index"] <= 7 * (use["pairs_count"] * 18 // 13 + 2) + 1
    ids, merge_counts, tokens = learner.run(40, 2)
    merges = [(tokens[a], tokens[b]) for a, b, _ in ids.tolist()]
    assert (merges, merge_counts.tolist()) == tuple(map(list, reference_bytes(words, counts, 40, 2)))
    assert learner.memory_use()["pairs_count"] == live_pairs(words, merges)
    assert learner.memory_use()["single_pairs"] == len(single_pairs(words, counts, merges, 2, 2))


def test_a_list_mostly_stale_is_filtered_without_a_compaction():
    """Merging (a, b) lists (ab, c) at 16,000 positions; merging (c, d) (18,000) then takes
    12,000 of them. Its count falls past powers of two to 4,000 with 16,000 entries listed,
    over a third of them stale: the step filters that list, and no compaction runs (on so
    small a table the slack puts compaction off). The lists then hold the live occurrences of
    the pairs beyond two one-symbol tokens, and a coarse entry per base pair and block."""
    words, counts = [b"abcd" * 12000 + b"abcx" * 4000 + b"abq" * 10000 + b"zcd" * 6000], [1]
    learner = MergeLearner(np.frombuffer(words[0], np.uint8), np.array([0, len(words[0])], np.int64),
                           np.array(counts, np.int64), BYTES, long_chunk=2)
    ids, merge_counts, tokens = learner.run(2, 2)
    merges = [(tokens[a], tokens[b]) for a, b, _ in ids.tolist()]
    assert (merges, merge_counts.tolist()) == ([(b"a", b"b"), (b"c", b"d")], [26000, 18000])
    assert (merges, merge_counts.tolist()) == tuple(map(list, reference_bytes(words, counts, 2, 2)))
    assert learner.compactions == 0
    live = pair_counts(words, counts, merges)
    own = sum(c for (left, right), c in live.items() if len(left) + len(right) > 2)
    blocks = -(-len(words[0]) // (1 << core_learn.COARSE_BITS))
    base = sum(1 for left, right in live if len(left) + len(right) == 2)
    assert own <= learner.memory_use()["positions_listed"] <= own + blocks * base
    ids, merge_counts, tokens = learner.run(20, 2)
    merges = [(tokens[a], tokens[b]) for a, b, _ in ids.tolist()]
    assert (merges, merge_counts.tolist()) == tuple(map(list, reference_bytes(words, counts, len(merges), 2)))


def _random_table(letters: bytes, lengths, seed: int):
    """Distinct random words of the given lengths over ``letters``, counted 1, 2, 1, 2...:
    ``(words, counts, flat, starts)``, the last two as MergeLearner takes them."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(letters, np.uint8)
    words = list(dict.fromkeys(rng.choice(alphabet, n).astype(np.uint8).tobytes() for n in lengths))
    counts = [1 + i % 2 for i in range(len(words))]
    flat = np.frombuffer(b"".join(words), np.uint8)
    starts = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
    return words, counts, flat, starts


@settings(max_examples=30, deadline=None)
@given(letters=st.sampled_from([b"a", b"ab", b"abc", b"ab\xff"]), lengths=st.lists(st.integers(1, 500), min_size=1, max_size=5),
       seed=st.integers(0, 2**32 - 1), steps=st.lists(st.integers(0, 40), min_size=1, max_size=3),
       long_chunk=st.sampled_from([2, 50, 300]))
def test_base_pairs_of_long_chunks_are_counted_as_they_go(letters, lengths, seed, steps, long_chunk):
    """The learner counts the live pairs of two one-symbol tokens in the long chunks (they are
    listed by step 0's coarse entries, so its compactions leave them out of what can be
    listed): after any run, the number in the merged corpus."""
    words, counts, flat, starts = _random_table(letters, lengths, seed)
    learner = MergeLearner(flat, starts, np.array(counts, np.int64), BYTES, long_chunk=long_chunk, coarse_bits=6)
    for step in steps:
        ids, _, tokens = learner.run(step, 1)
        merges = [(tokens[a], tokens[b]) for a, b, _ in ids.tolist()]
        long_tokens = [t for w, t in zip(words, replay(words, merges)) if len(w) >= long_chunk]
        expected = sum(len(t[i]) == 1 and len(t[i + 1]) == 1 for t in long_tokens for i in range(len(t) - 1))
        assert learner.memory_use()["base_pairs_long"] == expected


@settings(max_examples=40, deadline=None)
@given(letters=st.sampled_from([b"a", b"ab", b"abc", b"ab\xff", bytes(range(40))]),
       lengths=st.lists(st.integers(1, 500), min_size=1, max_size=6), seed=st.integers(0, 2**32 - 1),
       num_merges=st.integers(0, 80), long_chunk=st.sampled_from([2, 50, 300, 1 << 30]),
       coarse_bits=st.integers(6, 8))
@example(letters=b"ab", lengths=[50, 2, 51], seed=0, num_merges=1, long_chunk=50, coarse_bits=7)  # "ba" between
def test_a_compaction_leaves_each_live_occurrence_listed_once(letters, lengths, seed, num_merges, long_chunk,
                                                              coarse_bits):
    """Compaction filters each list where it lies, without sorting it or dropping repeats: after
    one (forced after every merge) the lists hold each live occurrence once, no stale one, and
    besides them only step 0's coarse entries (one per pair and coarse block, for the base pairs
    of the long chunks) of the pairs still alive. Long-chunk occurrences of two one-symbol tokens
    are those coarse entries' to list; every other live occurrence has an entry of its own.
    Words between two long chunks of one coarse block make step 0 list the block twice, once
    in the lists after a compaction."""
    words, counts, flat, starts = _random_table(letters, lengths, seed)
    learner = MergeLearner(flat, starts, np.array(counts, np.int64), BYTES, long_chunk=long_chunk,
                           coarse_bits=coarse_bits)
    learner.compact_slack = -(1 << 40)  # every merge ends in a compaction
    ids, merge_counts, tokens = learner.run(num_merges, 1)
    merges = [(tokens[a], tokens[b]) for a, b, _ in ids.tolist()]
    assert (merges, merge_counts.tolist()) == tuple(map(list, reference_bytes(words, counts, num_merges, 1)))
    own_entries, alive = 0, set()
    for word, toks in zip(words, replay(words, merges)):
        for left, right in zip(toks, toks[1:]):
            alive.add((left, right))
            own_entries += len(word) < long_chunk or len(left) > 1 or len(right) > 1
    coarse, begin = set(), 0  # the long chunks' store positions: each from a multiple of 64
    for word in words:
        if len(word) >= long_chunk:
            for i in range(len(word) - 1):
                pair = (word[i:i + 1], word[i + 1:i + 2])
                if pair in alive:
                    coarse.add((pair, (begin + i) >> coarse_bits))
            begin += -(-len(word) // 64) * 64
    listed = learner.memory_use()["positions_listed"]
    assert learner.compactions == len(merges)
    assert own_entries <= listed
    if merges:  # (step 0 may list a coarse block twice: two long chunks with words between them)
        # (a pair's first position, when checked, may drop its coarse entries before the first live one)
        assert listed <= own_entries + len(coarse)
