"""The protobuf reader of SentencePiece ``.model`` files: the compiled one against the field by
field one that specifies it, on generated messages, whole and damaged. (The models themselves,
trained by sentencepiece, are tested in test_sentencepiece.py.)"""
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastbpe._core.encode import read_model_pieces
from fastbpe.formats.sentencepiece import read_pieces, read_pieces_by_field


def varint(value: int, padding: int = 0) -> bytes:
    """``value``'s protobuf varint, with ``padding`` bytes of leading zeros' continuation (a longer
    form readers accept) as far as ten bytes allow."""
    out = bytearray()
    while True:
        out.append(value & 0x7F | 0x80)
        value >>= 7
        if not value:
            break
    while padding and len(out) < 10:
        out.append(0x80)
        padding -= 1
    out[-1] &= 0x7F
    return bytes(out)


def field(number: int, wire: int, value, padding: int = 0) -> bytes:
    key = varint(number << 3 | wire, padding)
    if wire == 0:
        return key + varint(value, padding)
    if wire == 2:
        return key + varint(len(value), padding) + value
    return key + value  # (wires 1 and 5: value is 8 or 4 bytes)


paddings = st.sampled_from([0, 0, 0, 1, 9])
texts = st.one_of(st.text(min_size=1, max_size=6).map(lambda t: t.encode("utf-8", "surrogatepass")),
                  st.binary(max_size=5))  # (not UTF-8, or empty, now and then)
numbers = st.one_of(st.integers(0, 8), st.integers(0, (1 << 64) - 1))
# a number of ten bytes whose last one sets bits past 64 (protobuf keeps the low 64)
past_64 = st.integers(1, 0x7F).map(lambda top: b"\xff" * 9 + bytes([top]))


def _unknown_field(number: int):
    return st.one_of(
        st.builds(lambda v, p: field(number, 0, v, p), numbers, paddings),
        st.builds(lambda v: field(number, 1, v), st.binary(min_size=8, max_size=8)),
        st.builds(lambda v, p: field(number, 2, v, p), st.binary(max_size=6), paddings),
        st.builds(lambda v: field(number, 5, v), st.binary(min_size=4, max_size=4)))


piece_fields = st.one_of(
    st.builds(lambda t, p: field(1, 2, t, p), texts, paddings),
    st.builds(lambda f: field(2, 5, struct.pack("<f", f)), st.floats(width=32)),
    st.builds(lambda b: field(2, 5, b), st.binary(min_size=4, max_size=4)),  # (NaNs of any payload)
    st.builds(lambda k, p: field(3, 0, k, p), numbers, paddings),
    st.builds(lambda b: varint(3 << 3) + b, past_64),
    st.builds(lambda v: field(1, 0, v), numbers),  # (a text of the wrong wire type: skipped)
    st.builds(lambda v: field(3, 5, v), st.binary(min_size=4, max_size=4)),
    st.integers(4, 40).flatmap(_unknown_field))
# a piece as SentencePiece writes it (text, score, type), or with its fields in any number and order
written_piece = st.builds(lambda t, f, k: field(1, 2, t) + field(2, 5, struct.pack("<f", f)) + field(3, 0, k),
                          st.text(min_size=1, max_size=6).map(str.encode), st.floats(width=32), st.integers(1, 6))
pieces = st.one_of(written_piece, st.lists(piece_fields, max_size=5).map(b"".join))
spec = st.lists(st.integers(1, 40).flatmap(_unknown_field), max_size=4).map(b"".join)
top_fields = st.one_of(
    st.builds(lambda m, p: field(1, 2, m, p), pieces, paddings),
    st.builds(lambda n, m: field(n, 2, m), st.sampled_from([2, 3]), spec),
    st.builds(lambda v: field(1, 0, v), numbers),  # (pieces of the wrong wire type: skipped)
    st.integers(4, 40).flatmap(_unknown_field))
models = st.lists(top_fields, max_size=8).map(b"".join)


def _by_field(data: bytes):
    """What the field by field reader makes of data, as the compiled one gives it; None: a ValueError."""
    try:
        read, specs = read_pieces_by_field(data, "m")
    except ValueError:
        return None
    return read.texts, read.scores, read.kinds, specs


def _compiled(data: bytes):
    read = read_model_pieces(data)
    if read is None:
        return None
    texts, scores, kinds, spans = read
    return texts, scores, kinds, [(number, data[begin:end]) for number, begin, end in spans]


def _check_same(data: bytes) -> bool:
    """The compiled reader reads what the field by field one reads and refuses what it refuses;
    whether data was read."""
    fast, slow = _compiled(data), _by_field(data)
    assert (fast is None) == (slow is None), data
    if fast is None:
        return False
    assert fast[0] == slow[0]
    assert fast[1].dtype == slow[1].dtype == np.float64 and np.array_equal(fast[1], slow[1], equal_nan=True)
    assert fast[2].dtype == slow[2].dtype == np.uint64 and fast[2].tolist() == slow[2].tolist()
    assert fast[3] == slow[3]
    return True


@settings(max_examples=400, deadline=None)
@given(data=models)
def test_the_compiled_reader_reads_a_model_as_the_field_by_field_one(data):
    _check_same(data)


@settings(max_examples=400, deadline=None)
@given(data=models, at=st.integers(0, 1 << 16), value=st.integers(0, 255),
       damage=st.sampled_from(["cut", "byte", "insert"]))
def test_a_damaged_model_is_refused_by_both_readers_alike(data, at, value, damage):
    at %= len(data) + 1
    damaged = {"cut": data[:at], "byte": data[:at] + bytes([value]) + data[at + 1:],
               "insert": data[:at] + bytes([value]) + data[at:]}[damage]
    _check_same(damaged)


def test_the_readers_on_a_hand_made_model():
    """One piece of text "a" and score -1, and a trainer spec of model_type 2 (BPE); the same cut
    short and with a wire type protobuf does not have, which the field by field reader names."""
    data = b"\x0a\x08\x0a\x01a\x15\x00\x00\x80\xbf" + b"\x12\x02\x18\x02"
    assert _check_same(data)
    pieces, trainer, normalizer = read_pieces(data, "m")
    assert (pieces.texts, pieces.scores.tolist(), pieces.kinds.tolist(), trainer, normalizer) == \
        ([b"a"], [-1.0], [1], {3: 2}, {})
    assert not _check_same(data[:5]) and not _check_same(b"\x0f")
    with pytest.raises(ValueError, match="runs past its end"):
        read_pieces(data[:5], "m")
    with pytest.raises(ValueError, match="wire type 7"):
        read_pieces(b"\x0f", "m")
    with pytest.raises(ValueError, match="piece 1 is not UTF-8"):
        read_pieces(data + field(1, 2, field(1, 2, b"\xff")), "m")
    with pytest.raises(ValueError, match="piece 1 has no text"):
        read_pieces(data + field(1, 2, field(3, 0, 2)), "m")


def test_numbers_past_64_bits_keep_their_low_64_and_longer_forms_read_alike():
    """A varint is at most ten bytes; its bits past 64 are dropped, as protobuf drops them. A
    number written longer than it needs reads as the short form."""
    long_type = varint(3 << 3) + b"\xff" * 9 + b"\x7f"
    data = field(1, 2, field(1, 2, b"x") + long_type) + field(1, 2, field(1, 2, b"y", 3) + field(3, 0, 6, 9))
    assert _check_same(data)
    assert read_pieces(data, "m")[0].kinds.tolist() == [(1 << 64) - 1, 6]
    assert not _check_same(field(1, 2, field(1, 2, b"x") + varint(3 << 3) + b"\xff" * 10 + b"\x01"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from("abé"), min_size=1, max_size=4).map("".join),
                          st.sampled_from([0.0, -0.0, -1.0, -2.5, 3.0, float("nan"), float("-inf")]),
                          st.sampled_from([1, 1, 1, 2, 3, 6])), max_size=30, unique_by=lambda p: p[0]))
def test_merges_are_ranked_by_score_then_by_the_ids(pieces):
    """A model's merges: every way a normal piece is two normal pieces, the highest score first
    (a NaN last, as NumPy sorts it), ties by the piece's id, a piece's ways by the left id; each
    with the piece it makes."""
    from fastbpe.formats.sentencepiece import NORMAL, Pieces, _merges
    from fastbpe.reference.encode import two_piece_splits

    texts = [text.encode() for text, _, _ in pieces]
    scores = [score for _, score, _ in pieces]
    splits = two_piece_splits(texts, [kind == NORMAL for _, _, kind in pieces])

    def key(split):
        score = scores[split[0]]
        return (score != score, -score if score == score else 0.0, split[0], split[1])

    expected = [[left, right, made] for made, left, right in sorted(splits, key=key)]
    got = _merges(Pieces(texts, np.array(scores, dtype=np.float64), np.array([k for _, _, k in pieces], np.uint64)))
    assert got.tolist() == expected and got.dtype == np.int64 and got.shape == (len(expected), 3)
