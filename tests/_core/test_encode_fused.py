"""The one-pass compiled path (``BPECore.encode_text``: scanner + BPE, no offsets array) and
``BPECore.id_list`` against their references: the regex split (``regex.findall`` of the
pattern) fed to ``encode_chunks``, and ``ndarray.tolist()``."""
import gc

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe._core.encode import BPECore, EncodeState
from fastbpe.split.patterns import TABLE

# the patterns the encoder splits itself (their chunks tile the text)
TILING_PATTERN_IDS = {name: entry.scanner for name, entry in TABLE.items() if entry.tiles}
from fastbpe.split.patterns import fused_scanner_id as fused_pattern_id
from fastbpe import PATTERNS
from fastbpe import Tokenizer


# Letters, digits, marks, CJK, spaces of several kinds, newlines, apostrophes, punctuation.
ALPHABET = "ab AB\t\n\r 09'sllve.,!?é\u0301\u4e2d\u3002\u00a0\u2028😀"


@pytest.fixture(scope="module")
def trained(shared_data):
    text = shared_data.text("english.txt.gz", 100_000)
    return fastbpe.train(text, vocab_size=600, progress=False), text


def _with_pattern(tok: Tokenizer, name: str) -> Tokenizer:
    return Tokenizer(tok.token_bytes, tok.merge_ids.tolist(), pattern=name)


def _regex_reference(tok: Tokenizer, text: str) -> list:
    """Chunks by the regex module, ids by encode_chunks: the two-pass path, without the scanner."""
    chunks = [c.encode("utf-8", "surrogatepass") for c in regex.findall(PATTERNS[tok.pattern], text)]
    lengths = np.array([len(c) for c in chunks], dtype=np.int64)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    return tok._core().encode_chunks(b"".join(chunks), starts, ends, EncodeState()).tolist()


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=ALPHABET, max_size=80))
def test_encode_text_equals_regex_split(trained, name, text):
    tok = _with_pattern(trained[0], name)
    ids = tok._core().encode_text(text.encode("utf-8"), TILING_PATTERN_IDS[name], EncodeState())
    assert ids.dtype == np.int32
    assert ids.tolist() == _regex_reference(tok, text)
    assert tok._core().encode_str(text, TILING_PATTERN_IDS[name], EncodeState()).tolist() == ids.tolist()
    assert tok.encode_ordinary(text) == ids.tolist()


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=40) | st.text(alphabet="aé\xff", max_size=40) | st.text(alphabet="a\u0100\u4e2d\uffff", max_size=40))
def test_encode_str_transcodes_every_kind_of_str(trained, text):
    """Every str storage kind (ASCII, Latin-1, UCS-2, UCS-4) and every code point (lone
    surrogates: None, as there is no UTF-8 for them)."""
    tok = _with_pattern(trained[0], "o200k")
    core, pattern = tok._core(), TILING_PATTERN_IDS["o200k"]
    got = core.encode_str(text, pattern, EncodeState())
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        assert got is None
        assert tok.encode(text) == _regex_reference(tok, text)
        return
    # (the split itself is checked against the regex above and in test_pretokenize.py)
    assert got.tolist() == core.encode_text(data, pattern, EncodeState()).tolist()


@pytest.mark.parametrize("name", sorted(TILING_PATTERN_IDS))
def test_encode_text_on_real_text_across_blocks_and_cache_clears(trained, name):
    tok, text = trained
    tok = _with_pattern(tok, name)
    sample = text[:20_000] + " ünïcödé 😀 中文。"   # thousands of chunks: many scanner blocks
    expected = _regex_reference(tok, sample)
    core = tok._core()
    small = EncodeState(max_ids=50)                 # the chunk cache clears over and over
    for state in (small, small, EncodeState()):
        assert core.encode_text(sample.encode(), TILING_PATTERN_IDS[name], state).tolist() == expected
    assert tok.encode(sample) == expected


def test_encode_text_edge_cases(trained):
    tok = _with_pattern(trained[0], "cl100k")
    core, pattern = tok._core(), TILING_PATTERN_IDS["cl100k"]
    assert core.encode_text(b"", pattern, EncodeState()).tolist() == []
    assert core.encode_str("", pattern, EncodeState()).tolist() == []

    class Text(str):
        pass

    assert core.encode_str(Text("héllo wörld"), pattern, EncodeState()).tolist() == _regex_reference(tok, "héllo wörld")
    assert core.encode_str("\U0001F600" * 3 + "\ud800", pattern, EncodeState()) is None
    state = EncodeState()                          # one state, strs of shrinking/growing widths
    for text in ["中文" * 500, "é" * 10, "a😀" * 700, "x"]:
        assert core.encode_str(text, pattern, state).tolist() == _regex_reference(tok, text)
    assert core.encode_text(b"a", pattern, EncodeState()).tolist() == [tok._ids[b"a"]]
    assert core.encode_text(b"a" * 5000, pattern, EncodeState()).tolist() == _regex_reference(tok, "a" * 5000)
    # not UTF-8: None, and the tokenizer falls back to the regex path for lone surrogates
    assert core.encode_text(b"ab\xff", pattern, EncodeState()) is None
    text = "ab \ud800 cd"
    assert core.encode_text(text.encode("utf-8", "surrogatepass"), pattern, EncodeState()) is None
    assert tok.encode(text) == _regex_reference(tok, text)
    with pytest.raises(ValueError, match="tile"):
        core.encode_text(b"ab", 0, EncodeState())    # whitespace drops text: not fusable
    with pytest.raises(ValueError, match="tile"):
        core.encode_text(b"ab", 99, EncodeState())
    with pytest.raises(TypeError):
        core.encode_text(b"ab", pattern, None)
    with pytest.raises(TypeError):
        core.encode_str(b"ab", pattern, EncodeState())
    with pytest.raises(ValueError, match="tile"):
        core.encode_str("ab", 0, EncodeState())
    no_z = Tokenizer([bytes([b]) for b in range(97, 100)], [], pattern="cl100k")
    with pytest.raises(ValueError, match="0x7a is not in the vocabulary"):
        no_z.encode("ab" * 300 + "z")
    assert no_z.tokens("abz") == [b"a", b"b", b"z"]


def test_fused_pattern_id():
    for name, pattern in TILING_PATTERN_IDS.items():
        assert fused_pattern_id(name) == pattern
        assert fused_pattern_id(PATTERNS[name]) == pattern
    assert fused_pattern_id("whitespace") is None
    assert fused_pattern_id(r"\S+|\s+") is None


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-2**31, 2**31 - 1) | st.integers(0, 300), max_size=50))
def test_id_list_equals_tolist(ids):
    core = BPECore([bytes([b]) for b in range(256)] + [b"ab"], np.array([97], np.int32), np.array([98], np.int32))
    array = np.array(ids, dtype=np.int32)
    state = EncodeState()
    assert core.id_list(array, state) == array.tolist()
    assert all(type(x) is int for x in core.id_list(array, state))
    # a state whose ints came from a smaller core grows them; a bigger core's are fine too
    small = BPECore([bytes([b]) for b in range(256)], np.zeros(0, np.int32), np.zeros(0, np.int32))
    for first, second in ((small, core), (core, small)):
        state = EncodeState()
        assert first.id_list(array, state) == second.id_list(array, state) == array.tolist()


def test_id_list_outlives_its_core():
    core = BPECore([bytes([b]) for b in range(256)] + [b"\x01\x02"], np.array([1], np.int32), np.array([2], np.int32))
    state = EncodeState()
    ids = core.id_list(np.array([256, 255, 256, 1000], np.int32), state)
    del core, state
    gc.collect()
    assert ids == [256, 255, 256, 1000]
