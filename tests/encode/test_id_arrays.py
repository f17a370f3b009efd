"""The encoder's int32 ids as the id dtype, held once: read as uint32, narrowed to uint16 in
their own buffer; encode_to_numpy of a long word gives tiktoken's ids."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe.encode import id_arrays
from fastbpe.encode.id_arrays import as_id_dtype


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3 * id_arrays.NARROW_IN_PLACE_MIN + 7), st.integers(0, 2**32 - 1))
def test_narrowing_in_place_keeps_every_id(n, seed):
    ids = np.random.default_rng(seed).integers(0, 1 << 16, size=n, dtype=np.int32)
    expected = ids.astype(np.uint16)
    got = as_id_dtype(ids.copy(), np.uint16)
    assert got.dtype == np.uint16 and np.array_equal(got, expected)


def test_a_large_array_is_narrowed_inside_its_own_buffer():
    ids = np.arange(id_arrays.NARROW_IN_PLACE_MIN * 2 + 1, dtype=np.int32) % 60_000
    expected = ids.astype(np.uint16)
    got = as_id_dtype(ids, np.uint16)
    assert np.array_equal(got, expected) and np.shares_memory(got, ids)
    assert ids.nbytes == 4 * ((len(expected) + 1) // 2)  # the buffer was cut to the uint16 ids


def test_views_and_small_arrays_are_copied_and_uint32_is_a_view():
    base = np.arange(id_arrays.NARROW_IN_PLACE_MIN * 2, dtype=np.int32)
    view = base[::1][10:]
    assert np.array_equal(as_id_dtype(view, np.uint16), view.astype(np.uint16))
    assert np.array_equal(base, np.arange(len(base)))  # a view's owner is left alone
    wide = as_id_dtype(base, np.uint32)
    assert wide.dtype == np.uint32 and np.shares_memory(wide, base)


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base"])
def test_encode_to_numpy_of_a_long_word_gives_tiktokens_ids(name, shared_data, tiktoken_encoding):
    """One chunk of ~300 KB with non-ASCII letters, by the backtracking encoder (its tables built
    on the first long chunk) and by the merge loops (the default budget: this one chunk does not
    earn the tables); uint16 narrowed in place for r50k, uint32 read in place for cl100k."""
    rng = np.random.default_rng(7)
    parts = np.array(["the", "qu", "ick", "é", "жук", "日本", "ß", "ab", "ing", "ø"])
    word = "".join(parts[rng.integers(0, len(parts), 100_000)].tolist())
    expected = tiktoken_encoding(name).encode_ordinary(word)
    assert len(expected) >= id_arrays.NARROW_IN_PLACE_MIN
    for budget, built in [(0, True), (-1, False)]:
        tok = fastbpe.openai(name, shared_data.path("tokenizers", "tiktoken"))
        tok._core().backtrack_budget = budget
        ids = tok.encode_to_numpy(word)
        assert ids.dtype == np.uint32 and ids.tolist() == expected  # (uint32 as tiktoken's)
        assert tok._core().backtrack_built == built
        if built:  # (and the search found every encoding: no chunk fell back to the loops)
            assert tok._core().backtracking()["fallbacks"] == 0


@pytest.mark.parametrize("backtrack", [True, False])
def test_uint16_ids_straight_from_the_encoder_equal_encode_text(backtrack, shared_data):
    """encode_text_u16 (long chunks backtracked into the uint16 result, the others in runs
    through the int32 buffer; without backtracking, every chunk through the buffer) against
    encode_text, on long words mixed with ordinary text, non-ASCII letters and invalid UTF-8."""
    from fastbpe._core.encode import EncodeState
    from fastbpe.encode.batch import _fused_pattern

    tok = fastbpe.openai("r50k_base", shared_data.path("tokenizers", "tiktoken"))
    core, state, pattern = tok._core(), EncodeState(), _fused_pattern(tok)
    saved = core.backtrack_min
    core.backtrack_min = saved if backtrack else 1 << 40
    core.backtrack_budget = 0  # (the tables from the first long chunk on)
    try:
        rng = np.random.default_rng(11)
        letters = np.array(["the", "qu", "ick", "é", "жук", "日本", "ß", "ab", "ing", "ø"])
        other = np.array([" ", "  ", "\n", "12345", ", ", " word", "!?"])
        for size in (0, 5, 3000, 70_000, 150_000):
            picks = rng.random(size // 3) < (0.999 if size > 50_000 else 0.7)
            text = "".join(rng.choice(letters) if p else rng.choice(other) for p in picks)
            data = text.encode()
            got = core.encode_text_u16(data, pattern, state)
            assert got.dtype == np.uint16 and got.tolist() == core.encode_text(data, pattern, state).tolist()
        assert core.encode_text_u16(b"ab\xffcd" * 20_000, pattern, state) is None
    finally:
        core.backtrack_min, core.backtrack_budget = saved, -1


def test_a_piece_past_two_mib_equals_the_merge_loops(shared_data):
    """A 2.5 MB word (the backtracker's dead-end bits then come from calloc, untouched until
    marked) gives the ids of the merge loops, as uint16 and as int32."""
    from fastbpe._core.encode import EncodeState
    from fastbpe.encode.batch import _fused_pattern

    tok = fastbpe.openai("r50k_base", shared_data.path("tokenizers", "tiktoken"))
    core, state, pattern = tok._core(), EncodeState(), _fused_pattern(tok)
    rng = np.random.default_rng(13)
    parts = np.array(["the", "qu", "ick", "é", "жук", "日本", "ß", "ab", "ing", "ø"])
    data = "".join(parts[rng.integers(0, len(parts), 800_000)].tolist()).encode()
    assert len(data) > 2 << 20
    narrow, wide = core.encode_text_u16(data, pattern, state), core.encode_text(data, pattern, state)
    saved = core.backtrack_min
    core.backtrack_min = 1 << 40
    try:
        merged = core.encode_text(data, pattern, state)
    finally:
        core.backtrack_min = saved
    assert narrow.tolist() == wide.tolist() == merged.tolist()
