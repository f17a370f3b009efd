"""SentencePiece's normaliser compiled (charsmap.h) against its specification
(fastbpe.reference.normalize), on character maps built here (keys that are prefixes of one
another, replacements with spaces or empty, damaged blobs) and on nmt_nfkc, the map
SentencePiece's models carry by default."""
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastbpe._core.normalize import SentencePieceNormalizer
from fastbpe.reference.normalize import parse_charsmap, sentencepiece_normalize

OPTIONS = [(True, True), (True, False), (False, True), (False, False)]


def build_charsmap(rules):
    """A blob in SentencePiece's layout for ``rules`` ({key bytes: replacement bytes}; keys
    without NUL, not empty): a double array laid out as darts-clone lays one out (a unit
    holds its label in bits 0-7, bit 8 when a key ends below it, the offset to its children
    from bit 10; a key's value, the offset of its replacement, sits in the unit below the
    node its last byte reaches, with bit 31 set)."""
    pool, values = b"", {}
    for key, replacement in rules.items():
        values[key] = len(pool)
        pool += replacement + b"\0"
    trie = {}
    for key in rules:
        node = trie
        for byte in key:
            node = node.setdefault(byte, {})
        node[None] = values[key]  # (the key ends here)
    units = {}

    def place(index, node):
        labels = [byte for byte in node if byte is not None]
        base = 1
        while any(base ^ c in units for c in labels + [0]) or base ^ index >= 1 << 21:
            base += 1
        units[index] = units.get(index, 0) | (base ^ index) << 10
        units[base] = (1 << 31) | node[None] if None in node else 0  # (slot 0 taken, a value or not)
        for c in labels:
            units[base ^ c] = (1 << 8 if None in node[c] else 0) | c
        for c in labels:
            place(base ^ c, node[c])

    place(0, trie)
    array = [units.get(i, 0) for i in range(max(units) + 1)]
    return struct.pack(f"<I{len(array)}I", 4 * len(array), *array) + pool


RULES = {b"a": b"A", b"ab": b"x y", b"abc": b"", b"\xc3\xa9": b"e\xcc\x81", b" ": b" ", b"\t": b" ",
         b"q": b"  ", b"z": b" z ", b"\xe2\x80\x8b": b""}
BLOB = build_charsmap(RULES)
ALPHABET = list("abcqz é\t\u200b▁x\x00😀") + ["\ud800"]


def test_the_built_map_reads_as_its_rules():
    """The builder is right (the walk finds every rule, the longest first): else the other
    tests would compare two readings of nothing."""
    from fastbpe.reference.normalize import longest_rule

    units, pool = parse_charsmap(BLOB)
    for key, replacement in RULES.items():
        length, value = longest_rule(units, key + b"!", 0)
        assert (length, pool[value:pool.index(b"\0", value)]) == (len(key), replacement)
    assert longest_rule(units, b"abd", 0)[0] == 2 and longest_rule(units, b"b", 0) is None


@pytest.mark.parametrize("dummy_prefix, extra_whitespaces", OPTIONS)
def test_worked_examples(dummy_prefix, extra_whitespaces):
    normalize = SentencePieceNormalizer(BLOB, dummy_prefix, extra_whitespaces)
    want = {(True, True): "▁A▁x▁yd", (True, False): "▁▁A▁x▁yd▁", (False, True): "A▁x▁yd", (False, False): "▁A▁x▁yd▁"}
    assert normalize(" a abd ") == want[dummy_prefix, extra_whitespaces]
    assert normalize("") == "" and normalize("abc") == ("▁" if dummy_prefix else "") * (not extra_whitespaces)


@settings(max_examples=400, deadline=None)
@given(text=st.lists(st.sampled_from(ALPHABET), max_size=25).map("".join), options=st.sampled_from(OPTIONS))
def test_compiled_is_the_reference(text, options):
    assert SentencePieceNormalizer(BLOB, *options)(text) == sentencepiece_normalize(BLOB, text, *options)
    assert SentencePieceNormalizer(b"", *options)(text) == sentencepiece_normalize(b"", text, *options)


@settings(max_examples=200, deadline=None)
@given(rules=st.dictionaries(st.binary(min_size=1, max_size=4).filter(lambda k: b"\0" not in k),
                             st.sampled_from([b"", b" ", b"  ", b"x", b" y ", "é".encode()]), max_size=12),
       data=st.lists(st.sampled_from([b"a", b"b", b" ", b"\xc3\xa9", b"\xff", b"\x00"]), max_size=20).map(b"".join),
       options=st.sampled_from(OPTIONS))
def test_generated_maps(rules, data, options):
    """Generated rules over generated text, including keys and text that are not UTF-8 (the
    text as the surrogate escapes of its bytes: each a character no rule of UTF-8 keys names)."""
    blob = build_charsmap(rules)
    text = data.decode("utf-8", "surrogateescape")
    try:
        want = sentencepiece_normalize(blob, text, *options)
    except ValueError:
        with pytest.raises(ValueError, match="damaged"):
            SentencePieceNormalizer(blob, *options)(text)
        return
    assert SentencePieceNormalizer(blob, *options)(text) == want


@settings(max_examples=400, deadline=None)
@given(text=st.lists(st.sampled_from(ALPHABET + ["<m>", "  "]), max_size=25).map("".join),
       kept=st.lists(st.sampled_from(["<m>", "<", "a", "ab", "abc", " a", "  ", "é", "\u200b", "z z", "▁x", "😀"]),
                     max_size=5),
       options=st.sampled_from(OPTIONS))
def test_kept_pieces_are_the_reference_s(text, kept, options):
    """User-defined pieces kept as they are where one begins (the longest first, before the
    map's rules, then spaced as any prefix): compiled and reference alike, with and without
    a map."""
    for blob in (BLOB, b""):
        want = sentencepiece_normalize(blob, text, *options, kept)
        assert SentencePieceNormalizer(blob, *options, kept)(text) == want


def test_a_kept_piece_is_left_as_it_is():
    normalize = SentencePieceNormalizer(BLOB, True, True, ["ab", "q", "  "])
    assert normalize("ab abc q") == "▁ab▁abc▁q"  # (ab kept where it begins, though the rule abc is longer)
    assert normalize("a  a") == "▁A▁▁A" and SentencePieceNormalizer(BLOB, True, True)("a  a") == "▁A▁A"
    with pytest.raises(TypeError, match="a kept piece must be a str"):
        SentencePieceNormalizer(BLOB, True, True, [b"ab"])


@settings(max_examples=300, deadline=None)
@given(at=st.integers(0, len(BLOB) - 1), value=st.integers(0, 255), cut=st.booleans())
def test_damaged_maps_are_value_errors(at, value, cut):
    """A blob cut short or with a byte changed: the same answer or ValueError from both, never
    a read outside it (the sanitizer lane runs this too)."""
    blob = BLOB[:at] if cut else BLOB[:at] + bytes([value]) + BLOB[at + 1:]
    for text in ("abc a\u200b é", "q z\tab", ""):
        try:
            want = sentencepiece_normalize(blob, text, True, True)
        except ValueError:
            with pytest.raises(ValueError):
                SentencePieceNormalizer(blob, True, True)(text)
            continue
        assert SentencePieceNormalizer(blob, True, True)(text) == want


@pytest.fixture(scope="module")
def nmt_nfkc(tmp_path_factory):
    """The nmt_nfkc map, from a model sentencepiece trains (its default normaliser)."""
    spm = pytest.importorskip("sentencepiece", reason="sentencepiece (test extra) makes the nmt_nfkc map")
    from fastbpe.formats.sentencepiece import read_pieces

    folder = tmp_path_factory.mktemp("nfkc")
    (folder / "corpus.txt").write_text("the cat sat on the mat\nÅngström ｆｕｌｌ ① ﬁ\n" * 50, encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(folder / "corpus.txt"), model_prefix=str(folder / "m"),
                                   vocab_size=60, model_type="bpe", minloglevel=2, num_threads=1)
    blob = read_pieces((folder / "m.model").read_bytes(), "m")[2][2]
    return blob, spm.SentencePieceProcessor(model_file=str(folder / "m.model"))


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("aeAÅ ①ﬁｆ\t\n\u00a0\u3000\u200b\u00ad¨\u0301\u0308\u1100\u1161"
                                                  "\u11a8ﾊﾟ\u0928\u093c▁\x00😀")), max_size=20))
def test_nmt_nfkc_is_sentencepiece_s(nmt_nfkc, text):
    """The compiled normaliser, the reference and sentencepiece's own ``normalize``."""
    blob, processor = nmt_nfkc
    got = SentencePieceNormalizer(blob, True, True)(text)
    assert got == processor.normalize(text)
    assert got == sentencepiece_normalize(blob, text, True, True)


def test_a_str_subclass_is_its_str():
    import numpy as np

    normalize = SentencePieceNormalizer(BLOB, True, True)
    assert normalize(np.array(["a abd"])[0]) == normalize("a abd")
    with pytest.raises(TypeError, match="takes a str"):
        normalize(b"a abd")


def test_blobs_that_do_not_fit_are_refused():
    for blob in (b"\x01", b"\x08\x00\x00\x00\x00", b"\x03\x00\x00\x00abc"):
        with pytest.raises(ValueError, match="charsmap"):
            SentencePieceNormalizer(blob, True, True)
        with pytest.raises(ValueError, match="charsmap"):
            sentencepiece_normalize(blob, "a", True, True)
