"""Streaming normalisation: the normalisation of the whole text, whatever the pieces."""
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastbpe.corpus.cut import _starts_afresh, normalize_stream
from fastbpe.split.pretokenize import InvalidUTF8

from tests.conftest import ALWAYS_NAMES, ALWAYS_PIECES

FORMS = ["NFC", "NFD", "NFKC", "NFKD"]
# characters that reorder, compose, decompose or expand, beside plain ones
TRICKY = list("ab .\n\u00e9e\u0301\u0323\u0958\u093c\u0915\u2475\u2100\u00a8\u1100\u1161\u11a8\uac00\uff9e"
              "\u0f73\u0344\u30ab\u3099\u4e2d\u3002\u212b\u0bc6\u0bbe\ufb01\u1e9b")


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(TRICKY), max_size=60), cuts=st.lists(st.integers(0, 200)),
       form=st.sampled_from(FORMS))
def test_equals_the_normalisation_of_the_whole(text, cuts, form):
    data = text.encode()
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    pieces = [data[a:b] for a, b in zip(bounds, bounds[1:])]  # anywhere, inside characters too
    assert b"".join(normalize_stream(pieces, form)) == unicodedata.normalize(form, text).encode()


def test_long_text_without_spaces_is_normalised_piece_by_piece():
    text = ("\u4e2d\u6587e\u0301\u0958\u3002" * 20_000)
    data = text.encode()
    pieces = [data[i:i + 1000] for i in range(0, len(data), 1000)]
    out = list(normalize_stream(pieces, "NFC"))
    assert b"".join(out) == unicodedata.normalize("NFC", text).encode()
    assert len(out) >= len(pieces) - 1 and max(map(len, out)) < 1500  # nothing held for long (NFC of U+0958: 3 to 6 bytes)


def test_invalid_utf8_has_its_offset_and_byte():
    with pytest.raises(InvalidUTF8) as info:
        list(normalize_stream([b"fine text ", b"then \xff", b" more"], "NFC"))
    assert info.value.offset == 15 and info.value.bad == b"\xff"


def test_what_starts_afresh_excludes_every_second_of_a_composition():
    """Canonical composition joins a character to the one before it only when it is the second
    of a primary composite: all of those are marks (or have a combining class) or Hangul vowels
    and finals, which _starts_afresh refuses (checked on this Python's Unicode tables)."""
    seconds = set()
    for code in range(sys.maxunicode + 1):
        parts = unicodedata.decomposition(chr(code)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            pair = chr(int(parts[0], 16)) + chr(int(parts[1], 16))
            if unicodedata.normalize("NFC", pair) == chr(code):  # primary (not excluded)
                seconds.add(pair[1])
    assert len(seconds) > 50
    for form in ("NFD", "NFKD"):
        assert not any(_starts_afresh(c, form) for c in seconds)
        assert not any(_starts_afresh(c, form) for c in map(chr, range(0x1161, 0x1176)))
        assert _starts_afresh("\u4e2d", form) and _starts_afresh("a", form) and not _starts_afresh("\u0301", form)
        assert not _starts_afresh("\u0f73", form) and not _starts_afresh("\udcff", form)  # decomposes to marks; a bad byte
    assert not _starts_afresh("\uffc2", "NFKD") and _starts_afresh("\uffc2", "NFD")  # halfwidth jamo: a vowel under NFK*


@settings(max_examples=80, deadline=None)
@given(stretches=st.lists(st.tuples(st.sampled_from(["x", "\u4e2d", "\u00e9", " ", "\n", ".", "a\n"]),
                                    st.sampled_from([1, 3, 70_000, 140_000])), min_size=1, max_size=5),
       pos=st.one_of(st.integers(0, 500_000), st.integers(-8, 8).map(lambda d: (d,))),
       span=st.integers(1, 200_000), rule=st.sampled_from(["gpt2", "cl100k", "whitespace"]))
def test_file_cut_at_or_after_is_the_first_cut_of_the_whole(tmp_path_factory, stretches, pos, span, rule):
    """Read piece by piece, keeping only a few bytes of a long stretch without a cut: the first
    cut at or after pos that find_cut gives on the whole file; with ``end``, a result at or
    past end exactly when there is no cut before end. ``pos=(d,)``: the end of the first
    stretch lies d bytes from where the reading of the second 64 KiB piece starts."""
    from fastbpe._core.split import find_cut
    from fastbpe.corpus.cut import file_cut_at_or_after
    from fastbpe.split.patterns import cut_rule

    data = "".join(s * n for s, n in stretches).encode()
    if isinstance(pos, tuple):  # the file is read from pos - 4 on, 64 KiB at a time
        pos = len((stretches[0][0] * stretches[0][1]).encode()) - (1 << 16) + 4 + pos[0]
    pos = max(0, min(pos, len(data)))
    path = tmp_path_factory.mktemp("cut") / "text.txt"
    path.write_bytes(data)
    r = cut_rule(rule)
    whole = find_cut(data, pos, r) if 0 < pos < len(data) else -1
    expected = 0 if pos <= 0 else len(data) if whole < 0 else whole
    with open(path, "rb", buffering=0) as f:
        assert file_cut_at_or_after(f, pos, len(data), r) == expected
        bounded = file_cut_at_or_after(f, pos, len(data), r, pos + span)
        assert (bounded >= pos + span) == (expected >= pos + span)
        if expected < pos + span:
            assert bounded == expected


def test_file_cut_at_or_after_decides_the_positions_where_pieces_meet(tmp_path):
    """The file is read from pos - 4 on, 64 KiB at a time: a cut (or none) just before, at or
    after the place where one piece's bytes meet the next's is found as in the whole file."""
    from fastbpe._core.split import find_cut
    from fastbpe.corpus.cut import file_cut_at_or_after
    from fastbpe.split.patterns import cut_rule

    checked = 0
    for first in ["x", "\u4e2d", "\u00e9"]:
        for after in [" ", "\n", ".", "\n\n", "\u3002"]:
            head = (first * 70_000).encode()
            data = head + (after + "x" * 9 + " ").encode() * 3
            path = tmp_path / "text.txt"
            path.write_bytes(data)
            for rule in map(cut_rule, ["gpt2", "cl100k", "whitespace"]):
                for d in range(-12, 13):
                    pos = len(head) - (1 << 16) + d
                    with open(path, "rb", buffering=0) as f:
                        assert file_cut_at_or_after(f, pos, len(data), rule) == find_cut(data, pos, rule)
                    checked += 1
    assert checked == 3 * 5 * 3 * 25


# ---- cuts around tokens split out first (a tokenizer's tokens matched always)

def _cuts_that_pass(data: bytes, accept) -> list:
    from fastbpe.corpus.cut import CheckedRule, find_checked_cut
    from fastbpe.split.patterns import cut_rule

    rule = CheckedRule(cut_rule("cl100k"), accept)
    found, i = [], find_checked_cut(data, 1, rule)
    while i >= 0:
        found.append(i)
        i = find_checked_cut(data, i + 1, rule)
    return found


@pytest.mark.parametrize("form", [None, "NFC", "NFD", "NFKC", "NFKD"])
@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.sampled_from(ALWAYS_PIECES), min_size=1, max_size=14))
def test_a_cut_outside_the_tokens_changes_no_id(always_tokenizers, form, parts):
    """Every cut the check accepts gives, side after side, the ids of the whole: the tokens are
    split out of the text as given, then each piece normalised and split (``tokenizers``' order)."""
    from fastbpe.corpus.cut import CutOutsideTokens

    tok = always_tokenizers[form]
    data = ("12345678 " + "".join(parts) + " 123456789").encode()
    whole = tok.encode_ordinary(data.decode())
    for i in _cuts_that_pass(data, CutOutsideTokens(ALWAYS_NAMES, form)):
        assert tok.encode_ordinary(data[:i].decode()) + tok.encode_ordinary(data[i:].decode()) == whole, (data, i)


@pytest.mark.parametrize("form, text, at", [
    (None, "12345678 xab</t> 123456789", 12),  # inside a token
    ("NFC", "12345678 \u0958>ab 123456789", 12),  # U+0958 is a letter; its NFC ends with a mark
    ("NFD", "12345678 \u212b>ab 123456789", 12),  # the angstrom sign decomposes to A and a ring
    ("NFKC", "12345678 \u2475>\u00e9=\u00c5<中文 123456789", 12),  # ⑵ is "(2)" in NFKC
])
def test_the_check_refuses_the_cuts_that_change_ids(always_tokenizers, form, text, at):
    """Cuts the split's rule alone would take, that change the ids: the check refuses each."""
    from fastbpe._core.split import find_cut
    from fastbpe.corpus.cut import CutOutsideTokens
    from fastbpe.split.patterns import cut_rule

    tok, data = always_tokenizers[form], text.encode()
    assert find_cut(data, at, cut_rule("cl100k")) == at
    assert tok.encode_ordinary(data[:at].decode()) + tok.encode_ordinary(data[at:].decode()) != \
        tok.encode_ordinary(text)
    assert not CutOutsideTokens(ALWAYS_NAMES, form)(data, at)
