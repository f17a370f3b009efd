"""encode_batch gives every text exactly encode's ids (or error), whatever the worker count,
through the calling thread's loop for a small batch or the general path's groups and threads."""
import os
from contextlib import contextmanager, nullcontext

import numpy as np

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import fastbpe
from fastbpe.encode import batch
from fastbpe.encode.batch import byte_balanced_groups, texts_with_specials

TEXT = "the cat sat on the mat; le chat était assis. 猫が座った. кот сидел 😀 " * 20


@contextmanager
def general_path():
    """Every batch through encode_batch's general path (groups, threads), not the calling
    thread's loop that takes small batches."""
    old = batch.SMALL_BATCH_TEXTS
    batch.SMALL_BATCH_TEXTS = -1  # (no batch is that small, not even an empty one)
    try:
        yield
    finally:
        batch.SMALL_BATCH_TEXTS = old


def both_paths(run):
    """``run()`` through the small-batch path and through the general path: what it returns,
    or the type and message of what it raises, for each."""
    out = []
    for path in (nullcontext, general_path):
        with path():
            try:
                out.append(("ok", run()))
            except Exception as exc:  # (compared between the paths)
                out.append((type(exc), str(exc)))
    return out


@pytest.fixture(scope="module")
def byte_level():
    return fastbpe.train(TEXT, vocab_size=330, progress=False, special_tokens=["<|endoftext|>"])


@pytest.fixture(scope="module")
def char_level():
    return fastbpe.train(TEXT, vocab_size=200, unit="chars", pattern="whitespace", progress=False)


@given(st.lists(st.text(max_size=30), max_size=12), st.integers(1, 4))
def test_batch_equals_a_loop_of_encode(byte_level, texts, workers):
    want = [byte_level.encode(t, disallowed_special=()) for t in texts]
    for path in (nullcontext, general_path):
        with path():
            assert byte_level.encode_batch(texts, workers=workers, disallowed_special=()) == want
            got = byte_level.encode_batch(texts, workers=workers, disallowed_special=(), as_numpy=True)
        assert [a.tolist() for a in got] == want and all(a.dtype == byte_level.id_dtype for a in got)


def test_batch_special_tokens_follow_encode(byte_level):
    texts = ["a <|endoftext|> b", "plain", "", "<|endoftext|>"]
    for options in ({"allowed_special": "all"}, {"disallowed_special": ()}):
        assert byte_level.encode_batch(texts, workers=2, **options) == [byte_level.encode(t, **options) for t in texts]
    with pytest.raises(ValueError, match="endoftext"):
        byte_level.encode_batch(texts, workers=2)
    # a name across the seam of two texts is no special token in either
    texts = ["<|endof", "text|>"]
    assert byte_level.encode_batch(texts, workers=1) == [byte_level.encode(t) for t in texts]


def test_batch_errors_are_encode_errors(char_level, byte_level):
    with pytest.raises(ValueError, match="not in the vocabulary"):
        char_level.encode_batch(["the cat", "Ω"], workers=2)
    with pytest.raises(TypeError, match="str"):
        byte_level.encode_batch(["ok", b"bytes"], workers=2)
    assert char_level.encode_batch(["the cat", "sat"], workers=2) == [char_level.encode("the cat"), char_level.encode("sat")]


def test_batch_on_real_text_and_real_files(shared_data):
    rows = shared_data.rows("parallel_multi.tsv.gz", 300)
    tok = fastbpe.openai("cl100k_base", shared_data.path("tokenizers", "tiktoken"))
    want = [tok.encode(r) for r in rows]
    for workers in (1, 2, 3):
        assert tok.encode_batch(rows, workers=workers) == want


def test_a_byte_outside_the_vocabulary_fails_as_in_encode():
    tok = fastbpe.Tokenizer([bytes([b]) for b in range(128)], [], pattern="gpt2")
    with pytest.raises(ValueError, match="0xc3"):
        tok.encode_batch(["ok", "é"], workers=2)


@given(st.lists(st.tuples(st.sampled_from(["", "x", "\x00", "ü" * 300, "ā" * 70, "😀" * 5000, "<", ">", "<<s",
                                           "\ud800"]),
                          st.sampled_from(["", "<s>", "<s", "s>", "<t>", "é|t>", "é|", "😀<", "😀<s\x00", "[PA",
                                           "[PAD", "[PAD]", "[PADS]", "[PAD[PAD]"]),
                          st.booleans()), max_size=8))
def test_the_texts_holding_a_name_are_flagged(parts):
    """Texts of every kind of str (1, 2 and 4 bytes a character, a lone surrogate, NUL), names
    that share a first character or start with a wide one, names that share a longer prefix
    ("[PAD"), parts of names."""
    texts = [pad + name if at_end else name + pad for pad, name, at_end in parts]
    names = frozenset(["<s>", "<s\x00", "é|t>", "😀<s", "[PAD]", "[PADS]"])
    assert texts_with_specials(texts, names) == [k for k, t in enumerate(texts) if any(n in t for n in names)]


@given(st.lists(st.text("<|a😀é", max_size=12), max_size=6), st.sets(st.text("<|a😀é", min_size=1, max_size=4), max_size=6))
def test_names_are_found_whatever_their_first_two_characters(texts, names):
    """Names of one character, names that share a first character and differ in the second
    (the second is compared before the whole name), a first character at a text's end."""
    assert texts_with_specials(texts, frozenset(names)) == [k for k, t in enumerate(texts) if any(n in t for n in names)]


def test_many_names_with_one_first_character():
    names = frozenset([f"<|reserved_{i}|>" for i in range(256)] + ["<", "<|x"])
    texts = ["a < b", "a <| b", "<|reserved_7|>", "x<|reserved_300|>", "ends <", "ends <|", "<|x", "none"]
    assert texts_with_specials(texts, names - {"<"}) == [2, 6]
    assert texts_with_specials(texts, names) == [0, 1, 2, 3, 4, 5, 6]
    # a name with a lone surrogate has no UTF-8: every text is searched by its characters
    texts = ["x<\ud800>y", "ab", "a\ud800b", "<\ud800", "é<\ud800>"]
    assert texts_with_specials(texts, frozenset(["<\ud800>", "ab"])) == [0, 1, 4]


@given(st.lists(st.integers(0, 50), max_size=30), st.integers(1, 5))
def test_groups_are_contiguous_and_cover_everything(sizes, groups):
    parts = byte_balanced_groups(np.array(sizes, dtype=np.int64), groups)
    covered = [i for p in parts for i in range(p.start, p.stop)]
    assert covered == list(range(len(sizes))) and len(parts) <= max(groups, 1)


@given(st.lists(st.one_of(st.text(max_size=20), st.sampled_from(["<|endoftext|>", "a<|endof", "text|>b", "x <|endoftext|>"])),
                max_size=10), st.integers(1, 3))
def test_batch_with_special_tokens_among_the_texts(byte_level, texts, workers):
    want = [byte_level.encode(t, allowed_special="all") for t in texts]
    assert byte_level.encode_batch(texts, workers=workers, allowed_special="all") == want
    if any("<|endoftext|>" in t for t in texts):
        with pytest.raises(ValueError, match="endoftext"):
            byte_level.encode_batch(texts, workers=workers)
    else:
        assert byte_level.encode_batch(texts, workers=workers) == [byte_level.encode(t) for t in texts]


@given(st.lists(st.sampled_from(["plain", "", "x <|endoftext|>", "<|endof", "text|>", "猫 😀"]), min_size=1,
                max_size=30), st.integers(2, 3))
def test_special_tokens_are_found_in_every_group(byte_level, texts, workers):
    """Each group of a batch searches its own texts for special tokens' names, on its worker:
    allowed, they encode as encode does; disallowed, the error names the first text holding one."""
    old = batch.GROUP_CHARS
    batch.GROUP_CHARS = 1  # a group for about every text
    try:
        with general_path():
            got = byte_level.encode_batch(texts, workers=workers, allowed_special="all")
            holding = [k for k, t in enumerate(texts) if "<|endoftext|>" in t]
            if holding:
                with pytest.raises(ValueError, match=rf"^text {holding[0]} of the batch: .*endoftext"):
                    byte_level.encode_batch(texts, workers=workers)
    finally:
        batch.GROUP_CHARS = old
    assert got == [byte_level.encode(t, allowed_special="all") for t in texts]


@given(st.lists(st.text(max_size=30), min_size=8, max_size=40), st.integers(1, 3))
def test_several_groups_per_worker_keep_the_order(byte_level, texts, workers):
    """Large batches are cut into several groups per worker (one's list building overlaps
    another's encoding): the groups' results come back in text order."""
    old = batch.GROUP_CHARS
    batch.GROUP_CHARS = 1  # many groups even for short texts
    try:
        assert batch._group_count(sum(len(t) + 1 for t in texts), workers) > workers
        with general_path():
            got = byte_level.encode_batch(texts, workers=workers, disallowed_special=())
    finally:
        batch.GROUP_CHARS = old
    assert got == [byte_level.encode(t, disallowed_special=()) for t in texts]


def test_the_cycle_collector_is_left_as_it_was(byte_level, char_level):
    """encode_batch pauses the cycle collector while it builds its lists, and leaves it as it
    found it (on, or off), also when a text fails; the lists it returns are tracked."""
    import gc

    texts = ["the cat", "", "sat on the mat"] * 50
    assert gc.isenabled()
    lists = byte_level.encode_batch(texts, workers=2, disallowed_special=())
    assert gc.isenabled()
    assert gc.is_tracked(lists) and all(map(gc.is_tracked, lists))
    assert lists == [byte_level.encode(t, disallowed_special=()) for t in texts]
    gc.disable()
    try:
        byte_level.encode_batch(texts, workers=2, disallowed_special=())
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(ValueError, match="not in the vocabulary"):  # raised while paused
        char_level.encode_batch(["the cat", "Ω"], workers=2)
    assert gc.isenabled()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")
def test_a_child_forked_during_a_batch_has_the_collector_back(byte_level):
    """The pause is the process's: a child forked while a batch ran (another thread's) had the
    collector off for good, its own batches counting down to the parent's count, never to 0."""
    import gc

    with batch._cycle_collector_paused():  # (as a batch running in another thread at the fork)
        pid = os.fork()
        if pid == 0:  # the child: its own batch, then the collector as before the parent's pause
            try:
                byte_level.encode_batch(["the cat"] * 10, workers=2)
                os._exit(0 if gc.isenabled() and batch._collector_pauses == 0 else 1)
            except BaseException:
                os._exit(2)
        assert not gc.isenabled()  # (the parent's pause goes on)
    assert os.waitpid(pid, 0)[1] == 0
    assert gc.isenabled()


@pytest.mark.parametrize("workers", [1, 2])
def test_lists_built_in_steps_with_young_collections(byte_level, workers):
    """With the collector on and at least as many texts as start a young collection, the lists
    are built a few at a time, the young generation collected after each step: every step's
    lists in order, each text's ids as encode gives them (one failing text among them), the
    last step short; with fewer texts, or the collector off, none collected."""
    import gc

    texts = ["the cat", "", "sat on the mat", "Ω\ud800", "x" * 40] * 30
    collections = []
    record = lambda phase, info: collections.append(info["generation"]) if phase == "start" else None  # noqa: E731
    old, thresholds = batch.LISTS_PER_COLLECTION, gc.get_threshold()
    batch.LISTS_PER_COLLECTION = 7  # (150 texts: 22 steps in all, the last of 3 or fewer)
    # (the older generations' counts set to zero: those the tests before left could make the
    # first collection the call starts an older generation's)
    gc.collect()
    gc.callbacks.append(record)
    try:
        gc.set_threshold(150, *thresholds[1:])
        got = byte_level.encode_batch(texts, workers=workers, disallowed_special=())
        assert collections and set(collections) == {0}
        assert len(collections) >= len(texts) // 7
        collections.clear()
        gc.set_threshold(151, *thresholds[1:])  # (one text short of a young collection)
        assert byte_level.encode_batch(texts, workers=workers, disallowed_special=()) == got
        assert len(collections) <= 1  # (no steps: at most the collection that new objects start)
        collections.clear()
        gc.set_threshold(150, *thresholds[1:])
        gc.disable()
        try:
            assert byte_level.encode_batch(texts, workers=workers, disallowed_special=()) == got
        finally:
            gc.enable()
        assert collections == []
    finally:
        gc.callbacks.remove(record)
        gc.set_threshold(*thresholds)
        batch.LISTS_PER_COLLECTION = old
    assert got == [byte_level.encode(t, disallowed_special=()) for t in texts]


def test_batch_keeps_the_prefix_space():
    """A tokenizer that puts a space before every piece (ByteLevel's add_prefix_space) encodes a
    batch as encode does, though its pattern has the one-call path."""
    from fastbpe.split.patterns import GPT2_ORIGINAL_PATTERN

    tok = fastbpe.Tokenizer([bytes([b]) for b in range(256)], [], pattern=GPT2_ORIGINAL_PATTERN, split_gaps=True,
                            prefix_space=True, merge_rule="pair")
    texts = ["hello", " x", "", "naïve 日本"]
    assert tok.encode_batch(texts, workers=2) == [tok.encode(t) for t in texts]
    assert tok.encode("hello")[0] == ord(" ")


@contextmanager
def lists_made_by(where: str):
    """encode_batch's groups' lists (or arrays) made by the calling thread (as for short texts)
    or by the workers (as for long ones), whatever the texts' length."""
    old = batch.SHORT_TEXT_CHARS
    batch.SHORT_TEXT_CHARS = 1 << 40 if where == "caller" else 0
    try:
        yield
    finally:
        batch.SHORT_TEXT_CHARS = old


@pytest.mark.parametrize("where", ["caller", "workers"])
@pytest.mark.parametrize("as_numpy", [False, True])
def test_workers_1_2_3_give_the_same_ids_in_order(byte_level, as_numpy, where):
    """Empty texts, one long text among tiny ones, many tiny ones: every worker count returns
    each text's ids at its place, cut into many groups or few, their lists made by the calling
    thread or by the workers."""
    texts = ["", "a", ""] * 200 + [TEXT * 30] + ["x", "", "猫 😀"] * 300 + [""]
    want = [byte_level.encode(t, disallowed_special=()) for t in texts]
    old = batch.GROUP_CHARS
    try:
        with lists_made_by(where):
            for group_chars in (old, 100):
                batch.GROUP_CHARS = group_chars
                for workers in (1, 2, 3):
                    got = byte_level.encode_batch(texts, workers=workers, disallowed_special=(), as_numpy=as_numpy)
                    assert [list(ids) for ids in got] == want
    finally:
        batch.GROUP_CHARS = old


@pytest.mark.parametrize("where", ["caller", "workers"])
@pytest.mark.parametrize("path", [nullcontext, general_path])
def test_a_failing_text_is_named_by_its_index(char_level, byte_level, path, where):
    with path(), lists_made_by(where):
        with pytest.raises(ValueError, match=r"text 3 of the batch: .*not in the vocabulary"):
            char_level.encode_batch(["the cat", "sat", "", "Ω", "Ω"], workers=2)
        with pytest.raises(TypeError, match=r"text 1 of the batch must be a str, got bytes"):
            byte_level.encode_batch(["ok", b"bytes"], workers=2)
        with pytest.raises(ValueError, match=r"text 2 of the batch: .*endoftext"):
            byte_level.encode_batch(["a", "b", "c <|endoftext|>"], workers=2)
        with pytest.raises(ValueError, match=r"text 0 of the batch: .*endoftext"):
            byte_level.encode_batch(["<|endoftext|>"])


def test_str_sizes_are_the_lengths():
    from fastbpe._core.encode import str_sizes

    texts = ["", "abc", "é猫😀", "\ud800"]
    assert str_sizes(texts).tolist() == [len(t) for t in texts]
    with pytest.raises(TypeError, match="text 2 of the batch"):
        str_sizes(["a", "b", 3])


@given(st.sampled_from([np.uint16, np.uint32, np.int32, np.int64]), st.integers(0, 40), st.data())
def test_array_views_are_the_slices(dtype, size, data):
    """array_views (encode_batch's arrays of ids, one C loop) gives what slicing gives: the
    values, the dtype, and views of the one buffer that keep it alive."""
    from fastbpe._core.encode import array_views

    flat = np.arange(size, dtype=dtype)
    cuts = sorted(data.draw(st.lists(st.integers(0, size), max_size=8)))
    ends = np.array(cuts, dtype=np.int64)
    views = array_views(flat, ends)
    assert len(views) == max(0, len(cuts) - 1)
    for view, a, b in zip(views, cuts, cuts[1:]):
        assert view.dtype == flat.dtype and view.tolist() == flat[a:b].tolist()
        assert view.base is flat and (b == a or np.shares_memory(view, flat))
    if views and len(views[-1]):
        views[-1][0] = 7
        assert flat[cuts[-2]] == 7
        del flat
        assert views[-1][0] == 7


def test_array_views_check_their_arguments():
    from fastbpe._core.encode import array_views

    flat = np.arange(6, dtype=np.uint32)
    for ends in ([0, 3, 2], [0, 7], [-1, 2]):
        with pytest.raises(ValueError, match="ends must be non-decreasing and within the array"):
            array_views(flat, np.array(ends, dtype=np.int64))
    for bad in (flat.reshape(2, 3), flat[::2], flat.astype(">u4" if np.little_endian else "<u4"),
                flat.astype(np.float64), flat.astype("datetime64[D]")):
        with pytest.raises(ValueError, match="one-dimensional C-contiguous array of integers in native byte order"):
            array_views(bad, np.array([0, 1], dtype=np.int64))


def test_array_views_of_read_only_ids_are_read_only():
    """Views of a buffer that may not be written (bytes, a read-only mapping) cannot write it."""
    from fastbpe._core.encode import array_views

    frozen = np.frombuffer(bytes(range(8)), dtype=np.uint16)
    views = array_views(frozen, np.array([0, 1, 4], dtype=np.int64))
    assert [v.tolist() for v in views] == [frozen[:1].tolist(), frozen[1:4].tolist()]
    for view in views:
        assert not view.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            view[0] = 7
    assert all(v.flags.writeable for v in array_views(np.arange(4), np.array([0, 2, 4], dtype=np.int64)))


def test_str_many_over_a_range_equals_the_slice(byte_level):
    """encode_str_many over texts[start:stop] given as a range (no slice of the list made)."""
    texts = ["ab", "", "le chat était", "\ud800", "猫 😀", "the mat"]
    core, state = byte_level._core(), byte_level._state()
    pattern = batch._fused_pattern(byte_level)
    for start, stop in ((0, 6), (1, 4), (3, 3), (2, 6), (5, 6)):
        ids, ends, failed = core.encode_str_many(texts, pattern, state, start, stop)
        want_ids, want_ends, want_failed = core.encode_str_many(texts[start:stop], pattern, state)
        assert (ids.tolist(), ends.tolist(), failed) == (want_ids.tolist(), want_ends.tolist(), want_failed)
    assert core.encode_str_many(texts, pattern, state, 2)[1].tolist() == core.encode_str_many(
        texts[2:], pattern, state)[1].tolist()
    for start, stop in ((-1, 2), (3, 2), (0, 7)):
        with pytest.raises(ValueError, match=r"outside a list of 6"):
            core.encode_str_many(texts, pattern, state, start, stop)


# Pieces of the texts below: chunks that end a text, hits of the short-chunk cache near a
# text's end (repeated words), two-byte and four-byte letters, a lone surrogate (not UTF-8:
# encoded alone), empty texts.
PIECES = ["", "a", "the", " cat", " the", "\n", "  ", " été", "猫", " 😀", "\ud800", "aaaa", " sat on the mat"]


def _each_alone(tok, texts, ids, ends, failed):
    """Whether encode_str_many's result gives each text the ids of encoding it alone, and
    fails exactly the texts that encoding alone cannot take."""
    for k, text in enumerate(texts):
        got = ids[ends[k]:ends[k + 1]].tolist()
        try:
            want = tok.encode_ordinary(text) if "\ud800" not in text else None
        except ValueError:  # (a byte outside the vocabulary)
            want = None
        if want is None:
            assert k in failed and got == []
        else:
            assert k not in failed and got == want, k


@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=6).map("".join), max_size=600))
def test_texts_share_the_tiled_loops_blocks_yet_each_gets_its_own_ids(byte_level, texts):
    """encode_str_many encodes a run of texts in one pass of the tiled loop, a block's chunks
    running on from one text into the next: each text's ids are its own call's."""
    core, state = byte_level._core(), byte_level._state()
    _each_alone(byte_level, texts, *core.encode_str_many(texts, batch._fused_pattern(byte_level), state))


def test_blocks_of_many_texts_empty_ones_long_ones_and_a_tiny_cache(byte_level):
    """More texts end in one block than it holds chunks (empty ones), texts of many blocks
    between short ones (one long enough to be encoded alone), and a two-entry short-chunk cache
    that evicts on every put."""
    from fastbpe._core.encode import EncodeState

    texts = ([""] * 700 + ["the cat"] + [""] * 300 + [" the mat" * 400] + ["a", "", "aaaa"] * 200
             + [" the cat" * 600, "", "the" * 90, " cat"] * 3)
    core, pattern = byte_level._core(), batch._fused_pattern(byte_level)
    for state in (byte_level._state(), EncodeState(short_cache_bits=1, short_cache_max_bits=1)):
        _each_alone(byte_level, texts, *core.encode_str_many(texts, pattern, state))
        _each_alone(byte_level, texts[::-1], *core.encode_str_many(texts[::-1], pattern, state))


def test_a_byte_outside_the_vocabulary_fails_its_text_alone():
    """A text with a byte the vocabulary lacks fails in the middle of a block of many texts:
    that text alone is named, the others of its block (before and after it) get their ids."""
    ascii_only = fastbpe.Tokenizer([bytes([b]) for b in range(128)], [], pattern="gpt2")
    texts = (["plain words"] * 300 + ["café"] + ["more", ""] * 150 + [" naïve", "x", "\ud800", "é"] + ["end"] * 5
             + ["plain words " * 400 + "é", "plain words " * 400, "a"])
    core, state = ascii_only._core(), ascii_only._state()
    ids, ends, failed = core.encode_str_many(texts, batch._fused_pattern(ascii_only), state)
    assert failed == [300, 601, 603, 604, 610]
    _each_alone(ascii_only, texts, ids, ends, failed)


@given(st.lists(st.binary(max_size=12) | st.text(max_size=12).map(lambda t: t.encode()), max_size=10))
def test_many_utf8_texts_in_one_call_equal_each_encoded(byte_level, pieces):
    """encode_text_many (the many short documents of encode_files) gives each text's ids, and
    names the texts that are not UTF-8 as failed, left empty. The texts are read in place,
    with bytes between them that belong to none (a newline and an invalid byte)."""
    from fastbpe.encode.batch import utf8_batch_encoder, utf8_encoder

    encode_many, (encode_one, _) = utf8_batch_encoder(byte_level), utf8_encoder(byte_level)
    gap = b"\n\xff"
    starts = np.array([sum(len(p) + len(gap) for p in pieces[:k]) for k in range(len(pieces))], dtype=np.int64)
    stops = starts + np.array([len(p) for p in pieces], dtype=np.int64)
    ids, ends, failed = encode_many(b"".join(p + gap for p in pieces), starts, stops)
    for k, piece in enumerate(pieces):
        try:
            want = byte_level.encode_ordinary(piece.decode("utf-8"))
        except UnicodeDecodeError:
            assert k in failed and encode_one(piece) is None
            want = []
        else:
            assert k not in failed and encode_one(piece).tolist() == want
        assert ids[ends[k]:ends[k + 1]].tolist() == want
    with pytest.raises(ValueError, match="out of order"):
        encode_many(b"abc", np.array([0, 2], dtype=np.int64), np.array([2, 1], dtype=np.int64))
    with pytest.raises(ValueError, match="outside the data"):
        encode_many(b"abc", np.array([1], dtype=np.int64), np.array([4], dtype=np.int64))
    with pytest.raises(ValueError, match="2 starts but 1 stops"):
        encode_many(b"abc", np.array([0, 1], dtype=np.int64), np.array([1], dtype=np.int64))


@given(st.text(max_size=40).map(str.encode).flatmap(
    lambda data: st.tuples(st.just(data), st.lists(st.tuples(st.integers(0, len(data)), st.integers(0, len(data))),
                                                   max_size=10), st.booleans())))
@example(cut=("aé".encode(), [(0, 1), (2, 3)], True))  # (a text that starts inside a character)
@example(cut=("éa".encode(), [(0, 1), (2, 3)], True))  # (and one that ends inside one)
def test_many_texts_cut_anywhere_from_valid_utf8_equal_each_encoded(byte_level, cut):
    """Texts cut from valid UTF-8 at any byte, in order (the lines of a file) or not,
    overlapping or apart: each gets its own ids, and a text that starts or ends inside a
    character (not UTF-8 alone, though the bytes around it are) fails."""
    from fastbpe.encode.batch import utf8_batch_encoder

    data, bounds, in_order = cut
    starts = np.array([min(a, b) for a, b in bounds], dtype=np.int64)
    stops = np.array([max(a, b) for a, b in bounds], dtype=np.int64)
    if in_order:  # (each text after the one before it)
        starts = np.sort(starts)
        stops = np.minimum(np.sort(stops), np.append(starts[1:], len(data)))
    ids, ends, failed = utf8_batch_encoder(byte_level)(data, starts, stops)
    for k, (start, stop) in enumerate(zip(starts.tolist(), stops.tolist())):
        try:
            want = byte_level.encode_ordinary(data[start:stop].decode("utf-8"))
        except UnicodeDecodeError:
            assert k in failed
            want = []
        else:
            assert k not in failed
        assert ids[ends[k]:ends[k + 1]].tolist() == want


@given(st.lists(st.tuples(st.binary(max_size=12) | st.text(max_size=12).map(lambda t: t.encode()), st.booleans()),
                max_size=12))
def test_many_utf8_texts_with_a_separator_before_the_flagged_ones(byte_level, flagged):
    """A separator id put in by encode_text_many before the flagged texts: the ids np.insert
    puts in the call's ids without it, each separator counted with the text after it (a text
    that fails keeps its separator); a separator without one flag per text is refused."""
    from fastbpe.encode.batch import utf8_batch_encoder

    encode_many = utf8_batch_encoder(byte_level)
    texts, before = [text for text, _ in flagged], np.array([flag for _, flag in flagged], dtype=np.uint8)
    starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]]).astype(np.int64)[:len(texts)]
    stops = starts + np.array([len(t) for t in texts], dtype=np.int64)
    data = b"\n".join(texts)
    ids, ends, failed = encode_many(data, starts, stops)
    got_ids, got_ends, got_failed = encode_many(data, starts, stops, 7, before)
    assert got_failed == failed
    assert got_ids.tolist() == np.insert(ids, ends[:-1][before.astype(bool)], 7).tolist()
    assert got_ends.tolist() == (ends + np.concatenate([[0], np.cumsum(before)])).tolist()
    assert all(got_ids[got_ends[k]] == 7 for k in range(len(texts)) if before[k])
    with pytest.raises(ValueError, match="one flag per text"):
        encode_many(b"ab", np.array([0], dtype=np.int64), np.array([2], dtype=np.int64), 7)
    with pytest.raises(ValueError, match="one flag per text"):
        encode_many(b"ab", np.array([0], dtype=np.int64), np.array([2], dtype=np.int64), 7, np.ones(2, np.uint8))


@pytest.mark.parametrize("ascii_only", [False, True])
def test_separators_among_many_texts_failing_and_long_ones(byte_level, ascii_only):
    """Separators before thousands of texts (blocks of the encoder end between a separator and
    its text, and inside texts), some texts empty, not UTF-8, with a byte outside the
    vocabulary (ASCII-only vocabulary) or long enough to be encoded alone: the ids np.insert
    puts in the call's ids without separators, a failed text keeping its separator."""
    from fastbpe.encode.batch import utf8_batch_encoder

    tok = fastbpe.Tokenizer([bytes([b]) for b in range(128)], [], pattern="gpt2") if ascii_only else byte_level
    encode_many = utf8_batch_encoder(tok)
    rng = np.random.default_rng(7)
    kinds = [b"", b"a", b" the cat", b"x\xc3(", "caf\u00e9 ".encode() * 3, b"word " * 1000, b"  \n\t", b"1234567"]
    pieces = [kinds[k] for k in rng.choice(len(kinds), size=3000, p=[.1, .2, .3, .05, .1, .02, .13, .1])]
    before = rng.integers(0, 2, size=len(pieces)).astype(np.uint8)
    data = b"\n".join(pieces)
    stops = np.cumsum([len(p) + 1 for p in pieces]).astype(np.int64) - 1
    starts = stops - np.array([len(p) for p in pieces], dtype=np.int64)
    ids, ends, failed = encode_many(data, starts, stops)
    got_ids, got_ends, got_failed = encode_many(data, starts, stops, 99, before)
    assert got_failed == failed and len(failed) > 100
    assert got_ids.tolist() == np.insert(ids, ends[:-1][before.astype(bool)], 99).tolist()
    assert got_ends.tolist() == (ends + np.concatenate([[0], np.cumsum(before)])).tolist()
    for k in failed:
        assert got_ids[got_ends[k]:got_ends[k + 1]].tolist() == ([99] if before[k] else [])


@pytest.mark.parametrize("ascii_only", [False, True])
def test_many_utf8_texts_past_one_run_with_failing_ones_among_them(byte_level, ascii_only):
    """encode_text_many checks and encodes its texts a run of about 1 MB at a time: texts of
    later runs, texts that are not UTF-8, hold a byte outside the vocabulary (ASCII-only
    vocabulary) or are empty, each get their own ids or fail alone."""
    from fastbpe.encode.batch import utf8_batch_encoder

    tok = fastbpe.Tokenizer([bytes([b]) for b in range(128)], [], pattern="gpt2") if ascii_only else byte_level
    pieces = [b"the cat sat", b"", b" on the mat\n", "café".encode(), b"x\xc3(", b"word " * 40] * 5000
    bounds = np.cumsum([0] + list(map(len, pieces)))
    ids, ends, failed = utf8_batch_encoder(tok)(b"".join(pieces), bounds[:-1], bounds[1:])
    assert ends[-1] > 0
    want = {}
    for piece in set(pieces):
        try:
            want[piece] = tok.encode_ordinary(piece.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            want[piece] = None
    failing = {k for k, piece in enumerate(pieces) if want[piece] is None}
    assert set(failed) == failing and len(failing) == (10000 if ascii_only else 5000)
    for k, piece in enumerate(pieces):
        assert ids[ends[k]:ends[k + 1]].tolist() == (want[piece] or [])


def test_many_utf8_texts_results_outlive_the_next_call_and_a_huge_call_has_its_own(byte_level):
    """encode_text_many's ids are written where the next call cannot reach them: a result of
    the state's buffer (moved into it) keeps its ids through later calls, and a call of more
    than the buffer's bound (16M bytes: 64 MB of ids at most) writes into its result alone."""
    from fastbpe._core.encode import IDS_MOVED_FROM_BYTES
    from fastbpe.encode.batch import utf8_batch_encoder, utf8_encoder

    encode_many, (encode_one, _) = utf8_batch_encoder(byte_level), utf8_encoder(byte_level)
    docs = [b"the cat sat on the mat. " * (IDS_MOVED_FROM_BYTES // 24 + 1), "le chat était là ".encode() * 9]
    bounds = np.cumsum([0] + [len(d) for d in docs]).astype(np.int64)
    first = encode_many(b"".join(docs), bounds[:-1], bounds[1:])
    kept = first[0].copy()
    second = encode_many(b"other words, other ids " * 50_000, np.array([0], dtype=np.int64),
                         np.array([23 * 50_000], dtype=np.int64))
    assert first[0].tolist() == kept.tolist()
    assert first[0][:first[1][1]].tolist() == encode_one(docs[0]).tolist() and second[2] == []
    huge = b"a cat, a hat. " * (17_000_000 // 14)
    ids, ends, failed = encode_many(huge, np.array([0], dtype=np.int64), np.array([len(huge)], dtype=np.int64))
    assert failed == [] and ends.tolist() == [0, len(ids)] and ids.tolist() == encode_one(huge).tolist()


def _fresh(text: str) -> str:
    """An equal str that is a new object (nothing cached in it yet)."""
    return "".join(list(text))


def test_a_str_keeps_its_utf8_and_the_next_pass_reads_it(byte_level):
    """A non-ASCII str is read through the UTF-8 CPython keeps inside it (made on the first
    encode, seen as the str's size growing): the second pass reads it and gives the same ids,
    for strs of 1, 2 and 4 bytes a character; a lone surrogate (no UTF-8) still becomes U+FFFD."""
    import sys

    base = ["plain ascii", "le chat était", "кот сидел", "猫が座った 😀", "a\ud800b \udfff c", ""]
    fixed = [t.replace("\ud800", "\ufffd").replace("\udfff", "\ufffd") for t in base]
    want = [byte_level.encode(t, disallowed_special=()) for t in fixed]
    for workers in (1, 2):
        texts = [_fresh(t) for t in base]
        sizes = [sys.getsizeof(t) for t in texts]
        first = byte_level.encode_batch(texts, workers=workers, disallowed_special=())
        grown = [sys.getsizeof(t) - s for t, s in zip(texts, sizes)]
        assert grown[0] == 0 and grown[4] == 0 and grown[5] == 0   # ASCII read in place; no UTF-8 exists
        assert grown[1:4] == [len(t.encode("utf-8")) + 1 for t in texts[1:4]]
        assert first == want
        assert byte_level.encode_batch(texts, workers=workers, disallowed_special=()) == want
        got = byte_level.encode_batch(texts, workers=workers, disallowed_special=(), as_numpy=True)
        assert [a.tolist() for a in got] == want
    # encode (one text) makes and reads the kept UTF-8 the same way
    for k, (t, w) in enumerate(zip(base, want)):
        text = _fresh(t)
        size = sys.getsizeof(text)
        assert byte_level.encode(text, disallowed_special=()) == w
        assert sys.getsizeof(text) - size == (len(text.encode("utf-8")) + 1 if k in (1, 2, 3) else 0)
        assert byte_level.encode(text, disallowed_special=()) == w
        assert byte_level.encode_to_numpy(text, disallowed_special=()).tolist() == w


def test_a_str_past_the_bound_is_transcoded_without_keeping_its_utf8(byte_level):
    """A str whose UTF-8 could pass UTF8_KEPT_IN_STR_UP_TO bytes (length times its widest
    character's bytes) is not grown by its UTF-8: it is transcoded into scratch, on every call."""
    import sys
    from fastbpe._core.encode import UTF8_KEPT_IN_STR_UP_TO

    unit = "😀 b\n"   # 4 bytes a character once it holds an emoji; its chunks end where it ends
    text = unit * (UTF8_KEPT_IN_STR_UP_TO // 4 // len(unit) + 1)
    small = _fresh(unit * 50)
    size = sys.getsizeof(text)
    want = byte_level.encode_to_numpy(small, disallowed_special=()).tolist()
    got = byte_level.encode_batch([text, small], workers=1, disallowed_special=(), as_numpy=True)
    assert sys.getsizeof(text) == size and sys.getsizeof(small) > sys.getsizeof(unit * 50)
    assert got[1].tolist() == want
    per_unit = len(byte_level.encode(unit, disallowed_special=()))
    assert len(got[0]) == per_unit * (len(text) // len(unit))
    assert got[0][:per_unit * 50].tolist() == want
    ids = byte_level.encode_to_numpy(text, disallowed_special=())
    assert sys.getsizeof(text) == size and np.array_equal(ids, got[0])
    # the search for special tokens' names reads it by its characters
    assert texts_with_specials([small, text], frozenset(["b\n😀 b\n😀 b\n😀 b", "x"])) == [0, 1]
    assert texts_with_specials([text], frozenset(["b😀"])) == [] and sys.getsizeof(text) == size


@pytest.mark.parametrize("workers", [1, 2])
def test_large_results_keep_their_ids_through_later_calls(byte_level, workers):
    """A call's ids of IDS_MOVED_FROM_BYTES bytes or more become its result without a copy (the
    encoder's buffer is moved into it): later calls on the same threads, large or small, leave
    every earlier result as it was, and each equals encode's ids."""
    from fastbpe._core.encode import IDS_MOVED_FROM_BYTES

    units = ["kot 猫が ždí 😀 qx\n", "zebra Ωμέγα 42 ", "the cat sat on the mat\n"]
    per_unit = [len(byte_level.encode(u, disallowed_special=())) for u in units]
    big = [u * (IDS_MOVED_FROM_BYTES // 4 // n + 1) for u, n in zip(units, per_unit)]
    want = {u: byte_level.encode(u, disallowed_special=()) for u in units}
    kept = []
    for k, text in enumerate(big):
        batch_ids = byte_level.encode_batch([text] * workers, workers=workers, disallowed_special=(), as_numpy=True)
        single = byte_level.encode_to_numpy(text, disallowed_special=())
        small = byte_level.encode_batch(["a b", "c"], workers=workers, as_numpy=True)
        assert len(single) * 4 >= IDS_MOVED_FROM_BYTES and [ids.tolist() for ids in small] == [
            byte_level.encode("a b"), byte_level.encode("c")]
        kept.append((k, batch_ids, single))
        for j, earlier_batch, earlier_single in kept:
            unit = units[j]
            expected = want[unit] * (len(big[j]) // len(unit))
            assert all(ids.tolist() == expected for ids in earlier_batch)
            assert earlier_single.tolist() == expected and earlier_single.flags.writeable


@pytest.mark.parametrize("workers", [1, 2])
def test_a_dropped_large_result_lends_its_buffer_to_later_calls(byte_level, workers):
    """A large result gives its buffer back to the encoder when the last array that views it
    is gone, and a later call writes there: a view that outlives its array keeps the buffer
    (and its ids) until it goes too, and every call's ids equal encode's, whichever buffer
    they went to."""
    from fastbpe._core.encode import IDS_MOVED_FROM_BYTES

    units = ["the cat sat on the mat\n", "zebra \u03a9\u03bc\u03ad\u03b3\u03b1 42 ", "kot \u732b\u304c \u017ed\u00ed \U0001f600 qx\n"]
    want = {u: byte_level.encode(u, disallowed_special=()) for u in units}
    texts = [u * (IDS_MOVED_FROM_BYTES // 4 // len(want[u]) + 2) for u in units]

    def expected(text):
        unit = next(u for u in units if text.startswith(u))
        return want[unit] * (len(text) // len(unit))

    for round_ in range(2):
        for k, text in enumerate(texts):
            batch_ids = byte_level.encode_batch([text] * workers, workers=workers, disallowed_special=(),
                                                as_numpy=True)
            view = batch_ids[0][3:40]  # outlives its array
            first = batch_ids[0][3:40].tolist()
            del batch_ids
            later = texts[(k + 1) % len(texts)]
            single = byte_level.encode_to_numpy(later, disallowed_special=())
            again = byte_level.encode_batch([later] * workers, workers=workers, disallowed_special=(),
                                            as_numpy=True)
            assert view.tolist() == first == expected(text)[3:40]
            assert single.tolist() == expected(later)
            assert all(ids.tolist() == expected(later) for ids in again)
            del view, single, again  # the buffers back for the next round's calls


def test_a_batch_of_many_groups_reuses_their_buffers(byte_level):
    """A batch big enough to be cut into several groups per worker, each group's ids moved into
    its result: encoded again after the first result is dropped (the groups' buffers given
    back, several to each worker's encoder), and again while the second is kept, every text's
    ids equal encode's."""
    from fastbpe._core.encode import IDS_MOVED_FROM_BYTES
    from fastbpe.encode.batch import GROUP_CHARS

    unit = "kot \u732b\u304c \u017ed\u00ed \U0001f600 qx\n"
    want = byte_level.encode(unit, disallowed_special=())
    text = unit * (GROUP_CHARS // len(unit) // 2)
    texts = [text] * 12  # three groups a worker of two texts each, each group's ids moved
    assert len(want) * (len(text) // len(unit)) * 4 * 2 >= IDS_MOVED_FROM_BYTES
    expected = want * (len(text) // len(unit))
    first = byte_level.encode_batch(texts, workers=2, disallowed_special=(), as_numpy=True)
    assert all(ids.tolist() == expected for ids in first)
    del first
    for _ in range(2):
        kept = byte_level.encode_batch(texts, workers=2, disallowed_special=(), as_numpy=True)
        assert all(ids.tolist() == expected for ids in kept)


POLICIES = [{}, {"allowed_special": "all"}, {"disallowed_special": ()}, {"allowed_special": {"<|endoftext|>"}},
            {"allowed_special": set(), "disallowed_special": ["<|endoftext|>"]},
            {"allowed_special": "all", "disallowed_special": ()}]


def _comparable(result):
    """A batch's result or error, arrays as (dtype, shape, ids)."""
    kind, value = result
    if kind != "ok" or not value or not isinstance(value[0], np.ndarray):
        return result
    return kind, [(a.dtype, a.shape, a.tolist()) for a in value]


@given(st.lists(st.one_of(st.text(max_size=40), st.sampled_from(["", "<|endoftext|>", "a <|endoftext|>b", "<|endof",
                                                                 "x\ud800y", "\udc80", "😀 ok"])), max_size=20),
       st.sampled_from(POLICIES), st.booleans(), st.integers(1, 3))
def test_a_small_batch_gives_what_the_general_path_gives(byte_level, texts, policy, as_numpy, workers):
    """Ids (lists, or arrays of the same dtype and shape) or the same error, under every
    special-token policy: texts holding special tokens (allowed, disallowed, ordinary), lone
    surrogates, empty texts."""
    small, general = both_paths(lambda: byte_level.encode_batch(texts, workers=workers, as_numpy=as_numpy, **policy))
    assert _comparable(small) == _comparable(general)
    if small[0] == "ok" and not as_numpy:
        assert small[1] == [byte_level.encode(t, **policy) for t in texts]


@pytest.mark.parametrize("texts", [[], [""], ["", "", ""], ("a b", "", "😀"), ["only one text"]])
@pytest.mark.parametrize("as_numpy", [False, True])
def test_small_batches_of_empty_and_few_texts(byte_level, texts, as_numpy):
    small, general = both_paths(lambda: byte_level.encode_batch(texts, as_numpy=as_numpy))
    assert small[0] == "ok" and _comparable(small) == _comparable(general)
    assert len(small[1]) == len(texts)
    if as_numpy:
        assert all(a.dtype == byte_level.id_dtype and a.ndim == 1 for a in small[1])
    else:
        assert small[1] == [byte_level.encode(t) for t in texts]


def test_only_small_batches_take_the_calling_threads_loop(byte_level, char_level):
    """At the bounds (texts, characters) a batch is encoded in the calling thread; one text or
    one character more, or a tokenizer without the one-call path, or an iterator of special
    tokens (read once, then gone), and the general path decides."""
    def small(tok, texts, *policy):
        return batch.encode_small(tok, texts, not policy, *(policy or (frozenset(), "all")), False)

    at_bound = ["ab"] * batch.SMALL_BATCH_TEXTS
    assert small(byte_level, at_bound) == [byte_level.encode("ab")] * len(at_bound)
    assert small(byte_level, at_bound + ["ab"]) is None
    longest = "x" * batch.SMALL_BATCH_CHARS
    assert small(byte_level, [longest]) == [byte_level.encode(longest)]
    assert small(byte_level, [longest, "y"]) is None and small(byte_level, [longest + "y"]) is None
    assert small(char_level, ["the cat"]) is None
    assert small(byte_level, ["a", 3]) is None and small(byte_level, iter(["a"])) is None
    assert small(byte_level, ["a"], frozenset(), iter(["<|endoftext|>"])) is None
    assert small(byte_level, ["a"], "bogus", "all") is None  # (the general path raises)
    for texts in (at_bound + ["ab"], [longest, "y"]):
        assert byte_level.encode_batch(texts, workers=2) == [byte_level.encode(t) for t in texts]


@pytest.mark.parametrize("policy", [{"allowed_special": "bogus"}, {"disallowed_special": [1]},
                                    {"disallowed_special": {""}}, {"disallowed_special": 5}])
def test_a_small_batch_refuses_a_bad_policy_as_the_general_path(byte_level, policy):
    small, general = both_paths(lambda: byte_level.encode_batch(["a", "b"], **policy))
    assert small == general and small[0] in (TypeError, ValueError)


@pytest.mark.parametrize("policy", [{"allowed_special": {"<nope>"}}, {"disallowed_special": ["<nope>"]},
                                    {"disallowed_special": None}])
def test_a_small_batch_reads_tiktoken_s_lenient_policies_as_the_general_path(byte_level, policy):
    """Names the vocabulary lacks (allowed: none of its tokens; disallowed: text to refuse) and
    None for nothing disallowed, as tiktoken reads them."""
    small, general = both_paths(lambda: byte_level.encode_batch(["a", "b<|endoftext|>"], **policy))
    assert small == general
    small, general = both_paths(lambda: byte_level.encode_batch(["a", "b<nope>"], **policy))
    assert small == general


def test_small_batches_from_several_threads_at_once(byte_level):
    """Small batches encoded by many threads at once on one tokenizer (each thread its own
    encoding state): every call gets its own texts' ids."""
    from concurrent.futures import ThreadPoolExecutor

    words = TEXT.split()
    batches = [[" ".join(words[k:k + n]) for n in range(1 + k % 7)] for k in range(200)]
    want = [[byte_level.encode(t) for t in texts] for texts in batches]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda texts: byte_level.encode_batch(texts, workers=2), batches))
    assert got == want


@pytest.fixture(scope="module")
def one_chunk_chars():
    """Characters, the text one chunk (SentencePiece's layout), without byte fallback: a batch
    of them goes through one compiled call a group. (Trained on words: a space has no token.)"""
    trained = fastbpe.train(TEXT, vocab_size=200, unit="chars", pattern="whitespace", progress=False)
    tok = fastbpe.Tokenizer(trained.token_bytes, trained.merge_ids, unit="chars", pattern=r"(?s:.+)",
                            special_tokens=["<eot>"])
    assert tok._text_is_one_chunk()
    return tok


@given(st.lists(st.text(st.sampled_from(list("thecasonmé猫к😀")), max_size=30), max_size=12), st.integers(1, 3))
def test_one_chunk_characters_batch_equals_a_loop_of_encode(one_chunk_chars, texts, workers):
    want = [one_chunk_chars.encode(t) for t in texts]
    with_special = [t + "<eot>" + t for t in texts]
    for path in (nullcontext, general_path):
        with path():
            assert one_chunk_chars.encode_batch(texts, workers=workers) == want
            got = one_chunk_chars.encode_batch(texts, workers=workers, as_numpy=True)
            assert [a.tolist() for a in got] == want
            assert one_chunk_chars.encode_batch(with_special, workers=workers, allowed_special="all") == \
                [one_chunk_chars.encode(t, allowed_special="all") for t in with_special]


def test_one_chunk_characters_batch_names_a_missing_character(one_chunk_chars):
    with pytest.raises(ValueError, match=r"'Ω' is not in the vocabulary"):
        one_chunk_chars.encode("theΩ")  # (the one-call path hands it to encode's own)
    for path in (nullcontext, general_path):
        with path(), pytest.raises(ValueError, match=r"text 1 of the batch: 'Ω' is not in the vocabulary"):
            one_chunk_chars.encode_batch(["thecat", "theΩ", "sat"], workers=2)
