"""The learner's long-chunk store (a byte and a bit per symbol) gives exactly the reference's
merges: long chunks alone and beside normal words, with ties between them, runs of one symbol
(``aaaa``) across coarse blocks, ids that do not fit a token's bytes, counts above one, and the
``tie_ranks`` rule. The size from which a chunk counts as long is lowered so that words of a
few hundred symbols take that path."""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import fastbpe
import fastbpe._core.learn as core_learn
from fastbpe import reference
from fastbpe._core.learn import MergeLearner

BYTES = [bytes([b]) for b in range(256)]


def learn_bytes(words, counts, num_merges, min_frequency=1, compact=False, tie_ranks=None, **store):
    """Merges of a byte-level table through MergeLearner: ``(merges as bytes, counts)``, and the
    learner (for its corpus size and memory)."""
    flat = np.frombuffer(b"".join(words), np.uint8)
    starts = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
    learner = MergeLearner(flat, starts, np.array(counts, np.int64), BYTES, tie_ranks, **store)
    if compact:
        learner.compact_slack = -(1 << 40)  # drop stale positions after every merge
    merge_ids, merge_counts, tokens = learner.run(num_merges, min_frequency)
    return ([(tokens[a], tokens[b]) for a, b, _ in merge_ids.tolist()], merge_counts.tolist()), learner


def reference_bytes(words, counts, num_merges, min_frequency=1):
    table = {}
    for word, count in zip(words, counts):
        table[tuple(bytes([b]) for b in word)] = count
    return reference.learn(table, num_merges, min_frequency)


def random_words(seed, letters, lengths):
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(letters, np.uint8)
    words = [rng.choice(alphabet, n).astype(np.uint8).tobytes() for n in lengths]
    return list(dict.fromkeys(words))


@settings(max_examples=40, deadline=None)
@given(letters=st.sampled_from([b"a", b"ab", b"aab", b"ab\xff", b"a\xc3\xa9", b"\x00\xfe\xff"]),
       lengths=st.lists(st.integers(1, 400), min_size=1, max_size=5), seed=st.integers(0, 2**32 - 1),
       counts=st.lists(st.integers(1, 3), min_size=5, max_size=5), long_chunk=st.integers(2, 300),
       coarse_bits=st.integers(6, 9), num_merges=st.integers(1, 50), min_frequency=st.integers(1, 2),
       compact=st.booleans())
def test_long_and_normal_chunks_equal_reference(letters, lengths, seed, counts, long_chunk, coarse_bits,
                                                num_merges, min_frequency, compact):
    """Tables mixing long chunks (through the store) and normal words, counts above one, bytes
    that are not ASCII or not UTF-8 (0xff does not fit a one-symbol token's byte)."""
    words = random_words(seed, letters, lengths)
    counts = counts[:len(words)]
    expected = reference_bytes(words, counts, num_merges, min_frequency)
    got, _ = learn_bytes(words, counts, num_merges, min_frequency, compact, long_chunk=long_chunk,
                         coarse_bits=coarse_bits)
    assert got == expected


@pytest.mark.parametrize("coarse_bits", [6, 7, 16])
@pytest.mark.parametrize("n", [63, 64, 65, 127, 128, 129, 300, 1000])
def test_runs_of_one_symbol_across_coarse_blocks(n, coarse_bits):
    """``aaaa``: overlapping pairs merge left to right, also where a run crosses a block."""
    words = [b"a" * n, b"b" + b"a" * (n - 1), b"aa"]
    for counts in ([1, 1, 1], [3, 1, 2]):
        got, _ = learn_bytes(words, counts, 30, long_chunk=60, coarse_bits=coarse_bits)
        assert got == reference_bytes(words, counts, 30)


def test_ties_between_a_long_chunk_and_normal_words_follow_table_order():
    """Equal counts go to the pair seen first in table order, whichever store holds it."""
    long_word = b"xy" * 100
    normal = b"uv"
    counts_long, counts_normal = 1, 100  # (x, y) and (u, v) both occur 100 times
    for words, counts in (([long_word, normal], [counts_long, counts_normal]),
                          ([normal, long_word], [counts_normal, counts_long])):
        got, _ = learn_bytes(words, counts, 1, long_chunk=150)
        assert got == reference_bytes(words, counts, 1)
        assert got[0][0] == ((b"x", b"y") if words[0] == long_word else (b"u", b"v"))


def test_ties_between_two_long_chunks_and_words_between_them():
    words = [b"pq", b"ab" * 80 + b"cd", b"rs", b"cd" * 80 + b"ab", b"pq" * 2]
    counts = [40, 1, 81, 1, 20]
    assert learn_bytes(words, counts, 12, long_chunk=100)[0] == reference_bytes(words, counts, 12)


def test_the_long_store_replaces_the_nodes_and_counts_the_same_corpus():
    words = random_words(7, b"abc", [500, 3, 700])
    counts = [2, 5, 1]
    got, learner = learn_bytes(words, counts, 40, long_chunk=400)
    nodes_only, node_learner = learn_bytes(words, counts, 40, long_chunk=1 << 30)
    assert got == nodes_only == reference_bytes(words, counts, 40)
    assert learner.memory_use()["nodes"] < node_learner.memory_use()["nodes"] / 100
    assert learner.memory_use()["long_chunks"] > 0
    assert learner.corpus_tokens() == node_learner.corpus_tokens()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), lengths=st.lists(st.integers(1, 300), min_size=1, max_size=4),
       num_merges=st.integers(1, 40), long_chunk=st.integers(2, 200))
def test_tie_ranks_rule_is_the_same_through_the_long_store(seed, lengths, num_merges, long_chunk):
    """Hugging Face's tie rule (rank of the pair's ids) does not depend on where a pair sits."""
    words = random_words(seed, b"abcd\xff", lengths)
    counts = [1 + i % 3 for i in range(len(words))]
    ranks = np.random.default_rng(seed).permutation(256).tolist()
    via_store, _ = learn_bytes(words, counts, num_merges, tie_ranks=ranks, long_chunk=long_chunk, coarse_bits=6)
    via_nodes, _ = learn_bytes(words, counts, num_merges, tie_ranks=ranks, long_chunk=1 << 30)
    assert via_store == via_nodes


@settings(max_examples=25, deadline=None)
@given(words=st.dictionaries(st.lists(st.sampled_from(["a", "b", "ab", "日", "é"] + [chr(0x4E00 + i) for i in range(300)]),
                                      min_size=1, max_size=300).map(tuple),
                             st.integers(1, 3), min_size=1, max_size=4),
       num_merges=st.integers(1, 40))
def test_symbols_with_large_ids_and_tokens_that_recur(words, num_merges):
    """Over 256 base symbols (ids stored beside the bytes), and multi-character symbols whose
    merges recreate an existing token, through ``train_words`` with the store's size lowered."""
    expected = reference.learn(words, num_merges)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(core_learn, "LONG_CHUNK_SYMBOLS", 20)
        patch.setattr(core_learn, "COARSE_BITS", 6)
        assert fastbpe.train_words(words, num_merges, with_counts=True) == (expected[0], expected[1])


def test_a_merge_that_recreates_a_base_symbol_ties_by_its_first_occurrence(monkeypatch):
    """A merge whose token is a base symbol (``a`` + ``b`` = ``ab``) makes pairs that step 0
    lists as base pairs, per coarse block: their first occurrence is the earlier of the two
    kinds, not the first base occurrence in the block (which chose ``(x, ab)`` over
    ``(ab, x)`` here)."""
    pad = tuple(chr(0x4E00 + i) for i in range(300))
    words = {("a", "a", "b", "x", "ab", "x", "a", "b") + pad: 1}
    monkeypatch.setattr(core_learn, "LONG_CHUNK_SYMBOLS", 100)
    assert fastbpe.train_words(words, 2, with_counts=True) == ([("a", "b"), ("ab", "x")], [2, 2])
    monkeypatch.setattr(core_learn, "LONG_CHUNK_SYMBOLS", 2)
    words = {("a", "b", "a", "b", "x", "x", "x"): 1, ("ab", "x"): 1}
    assert fastbpe.train_words(words, 3, with_counts=True) == reference.learn(words, 3)


@settings(max_examples=150, deadline=None)
@given(words=st.dictionaries(st.lists(st.sampled_from(["a", "b", "ab", "x", "abx"]), min_size=1, max_size=40).map(tuple),
                             st.integers(1, 3), min_size=1, max_size=4),
       num_merges=st.integers(1, 12), long_chunk=st.integers(2, 30))
@example(words={("b", "ab", "x", "a", "abx", "a", "ab", "x"): 1}, num_merges=2, long_chunk=2)  # (found so)
def test_merges_that_recreate_base_symbols_in_the_long_store(words, num_merges, long_chunk):
    """Few symbols, some the concatenations of others, so that merges recreate base symbols
    and their pairs tie often, in and out of the store."""
    expected = reference.learn(words, num_merges)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(core_learn, "LONG_CHUNK_SYMBOLS", long_chunk)
        patch.setattr(core_learn, "COARSE_BITS", 6)
        assert fastbpe.train_words(words, num_merges, with_counts=True) == (expected[0], expected[1])


def test_train_on_one_long_line_equals_training_through_nodes(monkeypatch):
    text = "".join(np.random.default_rng(3).choice(list("thequickbrownfx"), 3000).tolist())
    node_path = fastbpe.train(text=text, vocab_size=400, progress=False)
    hf_node_path = fastbpe.train(text=text, vocab_size=400, progress=False, compat="hf")
    monkeypatch.setattr(core_learn, "LONG_CHUNK_SYMBOLS", 100)
    monkeypatch.setattr(core_learn, "COARSE_BITS", 8)
    store_path = fastbpe.train(text=text, vocab_size=400, progress=False)
    assert store_path.merges == node_path.merges and len(store_path.merges) > 100
    assert store_path.training_stats["corpus_tokens"] == node_path.training_stats["corpus_tokens"]
    assert fastbpe.train(text=text, vocab_size=400, progress=False, compat="hf").merges == hf_node_path.merges


def test_a_second_run_with_a_lower_min_frequency_continues_exactly():
    """Pairs below a run's min_frequency stay out of the heap; a later run with a lower one
    queues them again."""
    words = random_words(11, b"abcde", [300, 40, 5])
    counts = [1, 2, 1]
    flat = np.frombuffer(b"".join(words), np.uint8)
    starts = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
    for long_chunk in (100, 1 << 30):
        learner = MergeLearner(flat, starts, np.array(counts, np.int64), BYTES, long_chunk=long_chunk)
        first, _, _ = learner.run(500, 4)
        both, _, tokens = learner.run(30, 1)  # every merge so far: the first run's, then 30 more
        assert 0 < len(first) < 500 and len(both) == len(first) + 30
        merges = [(tokens[a], tokens[b]) for a, b, _ in both.tolist()]
        assert merges == reference_bytes(words, counts, len(first) + 30)[0]


@pytest.mark.parametrize("long_chunk", [100, 1 << 30])
def test_a_batch_of_merges_ends_when_its_time_is_up_with_the_same_merges(monkeypatch, long_chunk):
    """A batch of merges between two looks at Ctrl-C ends after ``BATCH_SECONDS`` even short of
    ``progress_every`` merges (the merges of one huge chunk can each take milliseconds): with no
    time at all, progress is reported after every merge, and the merges are those of one batch."""
    words = random_words(5, b"abcd", [400, 30, 7])
    flat = np.frombuffer(b"".join(words), np.uint8)
    starts = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
    runs = {}
    for seconds in (1e9, 0.0):
        monkeypatch.setattr(core_learn, "BATCH_SECONDS", seconds)
        reports = []
        learner = MergeLearner(flat, starts, np.array([1, 3, 2], np.int64), BYTES, long_chunk=long_chunk)
        merge_ids, counts, _ = learner.run(60, progress=lambda done, count: reports.append(done))
        runs[seconds] = (merge_ids.tolist(), counts.tolist(), reports)
    assert runs[0.0][:2] == runs[1e9][:2] and len(runs[0.0][0]) == 60
    assert runs[1e9][2] == [60] and runs[0.0][2] == list(range(1, 61))


def test_bad_store_settings():
    flat, starts, counts = np.frombuffer(b"ab", np.uint8), np.array([0, 2], np.int64), np.array([1], np.int64)
    with pytest.raises(ValueError, match="long_chunk"):
        MergeLearner(flat, starts, counts, BYTES, long_chunk=1)
    with pytest.raises(ValueError, match="coarse_bits"):
        MergeLearner(flat, starts, counts, BYTES, coarse_bits=5)


@settings(max_examples=30, deadline=None)
@given(letters=st.sampled_from([b"ab", b"aab", b"abc", b"ab\xff"]), seed=st.integers(0, 2**32 - 1),
       lengths=st.lists(st.integers(200, 1500), min_size=1, max_size=3),
       cuts=st.lists(st.integers(0, 60), min_size=1, max_size=4), num_merges=st.integers(1, 80),
       min_frequency=st.integers(1, 2))
def test_compactions_at_any_merges_give_the_reference_merges(letters, seed, lengths, cuts, num_merges,
                                                             min_frequency):
    """A compaction after any merge (exact blocks, then pushes that move lists out of them, then
    compactions of those) changes no merge: the run is cut into pieces, each ending in one."""
    words = random_words(seed, letters, lengths)
    counts = [1 + i % 2 for i in range(len(words))]
    expected = reference_bytes(words, counts, num_merges, min_frequency)
    flat = np.frombuffer(b"".join(words), np.uint8)
    starts = np.cumsum([0] + [len(w) for w in words]).astype(np.int64)
    learner = MergeLearner(flat, starts, np.array(counts, np.int64), BYTES, long_chunk=100, coarse_bits=6)
    done = 0
    for cut in sorted(cuts):
        if cut > done:
            learner.run(cut - done, min_frequency)
            done = cut
        learner.compact_slack = -(1 << 40)  # the next merge compacts
        learner.run(1, min_frequency)
        learner.compact_slack = 1_000_000
        done += 1
    merge_ids, merge_counts, tokens = learner.run(max(num_merges - done, 0), min_frequency)
    got = [(tokens[a], tokens[b]) for a, b, _ in merge_ids.tolist()][:num_merges]
    assert (got, merge_counts.tolist()[:num_merges]) == (expected[0][:len(got)], expected[1][:len(got)])
    assert len(got) == min(num_merges, len(expected[0]))
    assert learner.compactions >= 1 or len(merge_ids) <= min(cuts)  # (no merge left to compact after)


def test_a_merge_steps_scratch_lists_are_given_back():
    """The first merges of one long chunk list hundreds of thousands of positions; the lists
    that held them are given back once the steps are small, instead of kept to the end."""
    word = b"ab" * 400_000 + b"c"
    learner = MergeLearner(np.frombuffer(word, np.uint8), np.array([0, len(word)], np.int64),
                           np.array([1], np.int64), BYTES)
    merge_ids, _, tokens = learner.run(2)
    assert [tokens[i] for i in merge_ids[:, 2].tolist()] == [b"ab", b"abab"]
    assert learner.memory_use()["scratch"] > 16 << 18  # kept while the steps are that large
    merge_ids, _, tokens = learner.run(40)
    assert tokens[merge_ids[-1, 2]] == word  # the last steps merged a few tokens each
    assert learner.memory_use()["scratch"] <= 16 << 18  # 2**18 values in each, at most


@pytest.mark.parametrize("compact", [False, True])
def test_big_lists_cut_short_give_the_merges_of_the_node_path(compact):
    """On one chunk of 1.2M symbols the lists of the first merges' pairs hold tens of thousands
    of positions; when stale ones are dropped (by compaction, forced here after every merge, or
    when a pair's first position is checked) such a list gives back the pages past its new end.
    Pushes after that land on fresh pages, and the merges stay those of the node path."""
    word = np.random.default_rng(11).choice(np.frombuffer(b"ab", np.uint8), 1_200_000).tobytes()
    nodes, _ = learn_bytes([word], [1], 40, long_chunk=1 << 30)
    store, learner = learn_bytes([word], [1], 40, compact=compact)
    assert store == nodes and len(nodes[0]) == 40
    assert learner.compactions >= (40 if compact else 0)


@settings(max_examples=30, deadline=None)
@given(letters=st.sampled_from([b"ab", b"abc", b"ab\xff"]), seed=st.integers(0, 2**32 - 1),
       long_chunk=st.sampled_from([64, 65, 127, 128, 300, 1000]),
       extra=st.lists(st.integers(0, 700), min_size=2, max_size=8), num_merges=st.integers(1, 60),
       compact=st.booleans())
def test_chunks_of_any_length_around_a_lookup_page_are_found(letters, seed, long_chunk, extra, num_merges,
                                                             compact):
    """The store finds a position's chunk from the chunk at the start of its page (2**k
    positions, the largest power of two not above ``long_chunk``) and the chunks after it:
    chunks just at the threshold, padded to 64 positions, start at any offset of a page, two
    can share one; the merges are the reference's."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(letters, np.uint8)
    words = list(dict.fromkeys(rng.choice(alphabet, long_chunk + e).astype(np.uint8).tobytes() for e in extra))
    counts = [1 + i % 3 for i in range(len(words))]
    got, _ = learn_bytes(words, counts, num_merges, 1, compact, long_chunk=long_chunk, coarse_bits=7)
    assert got == reference_bytes(words, counts, num_merges, 1)
