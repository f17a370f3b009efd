# cython: language_level=3
"""Compiled pre-tokenizers: the Python shell around scan.h (the scanners), cut.h (safe cuts) and
documents.h (the separators of line and paragraph documents).

This is the one place Python gets the ids of the compiled split patterns (``PATTERN_IDS``),
the error modes (``ERRORS_IDS``) and the cut rule for user regexes (``CUSTOM_CUT_RULE``), all
defined in patterns.h / cut.h. Every entry point takes UTF-8 bytes, checks its ids, releases
the GIL while scanning, and converts the C++ chunk list into Python objects; ``fastbpe.split``
is the public face.

The algorithms, and the proof of the cut rules, are in the headers.
"""
from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcpy
from libcpp.vector cimport vector
from libcpp.string cimport string
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8
from cpython.exc cimport PyErr_CheckSignals

import threading

import numpy as np

# A list of chunks of a huge text takes seconds to build (160 MB of English: 10 s): Ctrl-C is
# looked at every POLL_MASK + 1 chunks (a few ms).
cdef Py_ssize_t POLL_MASK = (1 << 16) - 1
# The scan before it looks every POLL_UNITS chunks (poll.h), in a text of this many bytes or
# more on the main thread (a shorter one's scan ends within milliseconds: no look needed).
cdef size_t POLL_FROM_BYTES = 1 << 20

from fastbpe._core.cut cimport RULE_CUSTOM, find_cut as c_find_cut
from fastbpe._core.documents cimport document_spans as c_document_spans, find_newline_run
from fastbpe._core.poll cimport check_signals
from fastbpe._core.patterns cimport (PAT_WHITESPACE, PAT_GPT2, PAT_CL100K, PAT_O200K, PAT_LLAMA3, PAT_QWEN,
                                     PAT_TEKKEN,
                                     PAT_COUNT, ERR_STRICT, ERR_REPLACE, ERR_BYTES, ERR_COUNT)
from fastbpe._core.scan cimport ChunkList, scan_document_to_list
from fastbpe._core.utf8 cimport NPOS

PATTERN_IDS = {
    "whitespace": PAT_WHITESPACE,
    "gpt2": PAT_GPT2,
    "cl100k": PAT_CL100K,
    "o200k": PAT_O200K,
    "llama3": PAT_LLAMA3,
    "qwen": PAT_QWEN,
    "tekken": PAT_TEKKEN,
}
# find_cut's rule for user regexes (no scanner): the cuts that hold for every such pattern.
CUSTOM_CUT_RULE = RULE_CUSTOM
ERRORS_IDS = {"strict": ERR_STRICT, "replace": ERR_REPLACE, "bytes": ERR_BYTES}


class InvalidUTF8(ValueError):
    """Invalid UTF-8 at byte ``offset`` of the input (errors="strict")."""

    def __init__(self, offset):
        super().__init__(f"invalid UTF-8 at byte offset {offset}")
        self.offset = offset


cdef check_ids(int pattern, int errors):
    """ValueError unless ``pattern`` and ``errors`` are ids of patterns.h (the scanners assume it)."""
    if not 0 <= pattern < PAT_COUNT or not 0 <= errors < ERR_COUNT:
        raise ValueError(f"unknown pattern id {pattern} or errors id {errors}")


cdef _split(const uint8_t[::1] data, int pattern, int errors, ChunkList* out):
    cdef size_t n = data.shape[0]
    cdef int64_t bad = -1
    cdef string scratch
    check_ids(pattern, errors)
    if n == 0:
        return
    if n >= POLL_FROM_BYTES and threading.current_thread() is threading.main_thread():
        out.poll.check = check_signals  # (Ctrl-C stops the scan: out is freed by the caller)
    with nogil:
        bad = scan_document_to_list(&data[0], n, pattern, errors, out[0], scratch)
    if bad >= 0:
        raise InvalidUTF8(bad)


def split_bytes(const uint8_t[::1] data, int pattern, int errors=ERR_STRICT):
    """Chunks of UTF-8 ``data`` as a list of bytes.

    >>> split_bytes(b"Hello world!!", PATTERN_IDS["gpt2"])
    [b'Hello', b' world', b'!!']
    """
    cdef ChunkList out
    _split(data, pattern, errors, &out)
    cdef list result = []
    cdef int64_t start = 0, end
    cdef const char* base = <const char*>out.data.data()
    for end in out.ends:
        result.append(PyBytes_FromStringAndSize(base + start, end - start))
        start = end
        if (len(result) & POLL_MASK) == 0:
            PyErr_CheckSignals()
    return result


def chunk_ends(const uint8_t[::1] data, int pattern, int errors=ERR_STRICT):
    """int64 end offset of every chunk within the concatenated chunks, with no per-chunk
    objects: what the encoder consumes. For the patterns whose chunks tile the text (all but
    ``whitespace``) these are offsets into ``data`` itself.

    >>> chunk_ends(b"Hello world!!", PATTERN_IDS["gpt2"]).tolist()
    [5, 11, 13]
    """
    cdef ChunkList out
    _split(data, pattern, errors, &out)
    ends = np.empty(out.ends.size(), dtype=np.int64)
    cdef int64_t[::1] view = ends
    if out.ends.size():
        memcpy(&view[0], out.ends.data(), out.ends.size() * sizeof(int64_t))
    return ends


def split_text(str text, int pattern):
    """Chunks of ``text`` as a list of str. Raises UnicodeEncodeError for lone surrogates.

    >>> split_text("I'm here  now", PATTERN_IDS["gpt2"])
    ['I', "'m", ' here', ' ', ' now']
    """
    cdef bytes data = text.encode("utf-8")
    cdef ChunkList out
    _split(data, pattern, ERR_STRICT, &out)
    cdef list result = []
    cdef int64_t start = 0, end
    cdef const char* base = <const char*>out.data.data()
    for end in out.ends:
        result.append(PyUnicode_DecodeUTF8(base + start, end - start, NULL))
        start = end
        if (len(result) & POLL_MASK) == 0:
            PyErr_CheckSignals()
    return result


def find_cut(const uint8_t[::1] buf, size_t start, int rule):
    """First safe block boundary i with start <= i < len(buf), or -1 (see cut.h). ``rule``: a
    ``PATTERN_IDS`` value (that pattern's rules) or ``CUSTOM_CUT_RULE``.

    >>> find_cut(b"one two", 0, PATTERN_IDS["gpt2"])
    3
    """
    cdef size_t n = buf.shape[0], r
    if not 0 <= rule <= RULE_CUSTOM:
        raise ValueError(f"unknown cut rule {rule}")
    if n == 0:
        return -1
    with nogil:
        r = c_find_cut(&buf[0], n, start, rule)
    return -1 if r == NPOS else <Py_ssize_t>r


def document_spans(const uint8_t[::1] data, int newlines):
    """The documents of ``data`` that runs of ``newlines`` or more line ends (``\\n`` or
    ``\\r\\n``) separate (1: lines, 2: paragraphs between blank lines), empty ones left out, as
    byte offsets ``(starts, stops)``: two int64 arrays. One pass, the GIL released (the line
    and paragraph documents of ``encode_files``, encoded in place by ``encode_text_many``). The
    reference is ``fastbpe.reference.split.document_spans``.

    >>> [a.tolist() for a in document_spans(b"ab\\n\\ncd\\ne", 1)]
    [[0, 4, 7], [2, 6, 8]]
    >>> [a.tolist() for a in document_spans(b"ab\\r\\n\\r\\ncd\\ne", 2)]
    [[0, 6], [2, 10]]
    """
    cdef Py_ssize_t n = data.shape[0], count
    cdef vector[int64_t] begins, ends
    if newlines < 1:
        raise ValueError(f"newlines must be at least 1, got {newlines}")
    if n > 0:
        with nogil:
            c_document_spans(&data[0], n, newlines, begins, ends)
    count = begins.size()
    starts = np.empty(count, dtype=np.int64)
    stops = np.empty(count, dtype=np.int64)
    cdef int64_t[::1] sv = starts, ev = stops
    if count > 0:
        memcpy(&sv[0], begins.data(), count * sizeof(int64_t))
        memcpy(&ev[0], ends.data(), count * sizeof(int64_t))
    return starts, stops


def find_newlines(const uint8_t[::1] data, int newlines, Py_ssize_t start, Py_ssize_t stop):
    """Where the first run of ``newlines`` line ends (``\\n`` or ``\\r\\n``) lying whole in
    ``data[start:stop]`` starts, or -1, for ``0 <= start <= stop <= len(data)``, the GIL released:
    the first separator of line (1) or paragraph (2) documents. As
    ``re.compile(rb"(?:\\r?\\n){%d}" % newlines).search(data, start, stop)``.

    >>> find_newlines(b"a\\nb\\n\\nc", 2, 0, 6), find_newlines(b"a\\nb\\n\\nc", 2, 0, 4)
    (3, -1)
    >>> find_newlines(b"a\\r\\nb", 1, 0, 4), find_newlines(b"a\\r\\nb", 1, 2, 4)
    (1, 2)
    """
    cdef int64_t found
    if newlines < 1:
        raise ValueError(f"newlines must be at least 1, got {newlines}")
    if not 0 <= start <= stop <= data.shape[0]:
        raise ValueError(f"[{start}:{stop}] is not inside {data.shape[0]} bytes")
    if start == stop:
        return -1
    with nogil:
        found = find_newline_run(&data[0], start, stop, newlines)
    return found
