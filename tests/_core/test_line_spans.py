"""The line documents of a piece (``line_spans``, split.pyx) against the reference: every run of
bytes between newlines, in place, empty lines left out."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastbpe._core.split import line_spans
from fastbpe.reference.split import line_spans as reference_line_spans

# bytes of text with many newlines, runs of them and the other bytes a memchr loop could trip
# on (0, 0x0a's neighbours, invalid UTF-8)
line_bytes = st.lists(st.sampled_from([b"\n", b"\n\n", b"a", b"word ", b"\r", b"\x00", b"\x0b", b"\x09", b"\xff",
                                       "é中😀".encode()]), max_size=60).map(b"".join)


def spans(data) -> list:
    starts, stops = line_spans(data)
    assert starts.dtype == stops.dtype == np.int64
    assert starts.flags.c_contiguous and stops.flags.c_contiguous  # (what encode_text_many takes)
    return list(zip(starts.tolist(), stops.tolist()))


@given(line_bytes)
def test_equal_the_reference(data):
    assert spans(data) == reference_line_spans(data)


@given(st.binary(max_size=300))
def test_equal_the_reference_on_any_bytes(data):
    assert spans(data) == reference_line_spans(data)


@pytest.mark.parametrize("data, want", [
    (b"", []),
    (b"\n", []),
    (b"\n\n\n", []),
    (b"a", [(0, 1)]),
    (b"a\n", [(0, 1)]),
    (b"\na", [(1, 2)]),
    (b"ab\n\ncd\ne", [(0, 2), (4, 6), (7, 8)]),
])
def test_edges(data, want):
    assert spans(data) == want


def test_reads_a_view_in_place_and_a_long_line():
    """A memoryview slice (as the line reader passes it: up to the last newline) and a line of a
    megabyte; the offsets are the view's."""
    data = b"x\n" + b"y" * (1 << 20) + b"\nrest"
    assert spans(memoryview(data)[2:]) == [(0, 1 << 20), (1 + (1 << 20), 5 + (1 << 20))]
    assert spans(memoryview(data)[:len(data) - 4]) == [(0, 1), (2, 2 + (1 << 20))]
