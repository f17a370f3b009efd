"""The line and paragraph documents of a piece (``document_spans``, split.pyx) against the
reference: every run of bytes between separators of one or more line ends (``\\n`` or
``\\r\\n``), in place, empty documents left out."""
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastbpe._core.split import document_spans, find_newlines
from fastbpe.reference.split import document_spans as reference_document_spans

# bytes of text with many line ends, runs of them (Windows ones, and "\r" that ends no line,
# among them) and the other bytes a memchr loop could trip on (0, 0x0a's neighbours, invalid
# UTF-8)
text_bytes = st.lists(st.sampled_from([b"\n", b"\n\n", b"\n\n\n", b"\r\n", b"\r\n\r\n", b"a", b"word ", b"\r",
                                       b"\r\r", b"\x00", b"\x0b", b"\x09", b"\xff", "é中😀".encode()]),
                      max_size=60).map(b"".join)
NEWLINES = [1, 2, 3]


def spans(data, newlines) -> list:
    starts, stops = document_spans(data, newlines)
    assert starts.dtype == stops.dtype == np.int64
    assert starts.flags.c_contiguous and stops.flags.c_contiguous  # (what encode_text_many takes)
    return list(zip(starts.tolist(), stops.tolist()))


@pytest.mark.parametrize("newlines", NEWLINES)
@given(data=text_bytes)
def test_equal_the_reference(newlines, data):
    assert spans(data, newlines) == reference_document_spans(data, newlines)


@pytest.mark.parametrize("newlines", NEWLINES)
@given(data=st.binary(max_size=300))
def test_equal_the_reference_on_any_bytes(newlines, data):
    assert spans(data, newlines) == reference_document_spans(data, newlines)


@pytest.mark.parametrize("data, newlines, want", [
    (b"", 1, []),
    (b"\n", 1, []),
    (b"\n\n\n", 2, []),
    (b"a", 1, [(0, 1)]),
    (b"a\n", 1, [(0, 1)]),
    (b"a\n", 2, [(0, 2)]),  # (a single newline is the paragraph's)
    (b"\na", 1, [(1, 2)]),
    (b"\na", 2, [(0, 2)]),
    (b"ab\n\ncd\ne", 1, [(0, 2), (4, 6), (7, 8)]),
    (b"ab\n\ncd\ne", 2, [(0, 2), (4, 8)]),
    (b"ab\n\n\n\ncd\n\n", 2, [(0, 2), (6, 8)]),
    (b"ab\n\ncd\n\n\ne", 3, [(0, 6), (9, 10)]),
    # Windows line ends: the "\r" is the line end's; any other "\r" is text
    (b"ab\r\ncd\r\n", 1, [(0, 2), (4, 6)]),
    (b"\r\n\r\n", 1, []),
    (b"ab\r\r\n\rc\r", 1, [(0, 3), (5, 8)]),
    (b"ab\r\n\r\ncd\r\ne\r\n", 2, [(0, 2), (6, 13)]),
    (b"ab\n\r\ncd", 2, [(0, 2), (5, 7)]),
    (b"ab\r\n\r\r\ncd", 2, [(0, 9)]),  # (a line of "\r" is no blank line)
    (b"ab\r\n\n\r\ncd", 3, [(0, 2), (7, 9)]),
])
def test_edges(data, newlines, want):
    assert spans(data, newlines) == want


def test_reads_a_view_in_place_and_a_long_line():
    """A memoryview slice (as the document reader passes it: up to its last separator) and a
    line of a megabyte; the offsets are the view's."""
    data = b"x\n" + b"y" * (1 << 20) + b"\nrest"
    assert spans(memoryview(data)[2:], 1) == [(0, 1 << 20), (1 + (1 << 20), 5 + (1 << 20))]
    assert spans(memoryview(data)[:len(data) - 4], 1) == [(0, 1), (2, 2 + (1 << 20))]


def test_no_separator_shorter_than_one_newline():
    with pytest.raises(ValueError, match="at least 1"):
        document_spans(b"a\nb", 0)


@pytest.mark.parametrize("newlines", NEWLINES)
@given(data=text_bytes | st.binary(max_size=100), bounds=st.tuples(st.integers(0, 400), st.integers(0, 400)))
def test_find_newlines_is_a_regex_search(newlines, data, bounds):
    """find_newlines (the separator search of the document reader, 16 bytes at a time) gives
    the regex's answer, separators straddling the block seams and the search's ends included."""
    start, stop = min(min(bounds), len(data)), min(max(bounds), len(data))
    found = re.compile(b"(?:\r?\n){%d}" % newlines).search(data, start, stop)
    assert find_newlines(data, newlines, start, stop) == (-1 if found is None else found.start())


@pytest.mark.parametrize("blank", [b"\n\n", b"\r\n\r\n", b"\n\r\n", b"\r\n\n"])
@pytest.mark.parametrize("at", range(14, 36))
def test_find_newlines_at_every_place_of_a_block(at, blank):
    data = bytearray(b"x\n" * 30)
    data[at:at + len(blank)] = blank
    data = bytes(data)
    for start in (0, at - 1, at, at + 1):
        for stop in (s for s in range(at, at + len(blank) + 1) if s >= start):
            found = re.compile(b"(?:\r?\n){2}").search(data, start, stop)
            assert find_newlines(data, 2, start, stop) == (-1 if found is None else found.start()), (start, stop)


def test_find_newlines_checks_its_bounds():
    with pytest.raises(ValueError, match="not inside"):
        find_newlines(b"ab", 1, 1, 3)
    with pytest.raises(ValueError, match="not inside"):
        find_newlines(b"ab", 1, 2, 1)
    with pytest.raises(ValueError, match="at least 1"):
        find_newlines(b"ab", 0, 0, 2)
