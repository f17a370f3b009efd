# cython: language_level=3
"""Compiled chunk counting: the Python shell around chunk_table.h.

``ChunkCounter`` pre-tokenizes documents with the scanners of scan.h and counts their chunks
in a C++ hash table that keeps first-appearance order, then exports the three arrays of a
``fastbpe.WordTable``. This shell checks the ids and the document bounds, releases the GIL
while counting and copies the arrays out; there are no Python objects in the hot loop.

Pattern and error-mode ids are those of ``fastbpe._core.split`` (patterns.h). The table's
layout, and why it is fast, are described in chunk_table.h.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcpy
from libcpp.vector cimport vector
from fastbpe._core.buffers cimport lend_vector

from fastbpe._core.chunk_table cimport ChunkTable, MAX_CHUNKS
from fastbpe._core.patterns cimport PAT_COUNT, ERR_COUNT
from fastbpe._core.utf8 cimport utf8_from_str_data, utf8_max_per_unit

cdef extern from "Python.h":
    int PyUnicode_READY(object o) except -1   # (a no-op from Python 3.12 on)
    int PyUnicode_KIND(object o)
    void* PyUnicode_DATA(object o)
    bint PyUnicode_IS_ASCII(object o)

cnp.import_array()

cdef extern from *:
    """
    #ifdef __GLIBC__
    #include <malloc.h>
    static void fbpt_fix_malloc_thresholds(void) {
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        mallopt(M_TRIM_THRESHOLD, 2 << 20);
    }
    #else
    static void fbpt_fix_malloc_thresholds(void) {}
    #endif
    """
    void fbpt_fix_malloc_thresholds() nogil


cdef class Utf8Reader:
    r"""A str read as a file of its UTF-8, ``str.encode("utf-8", "surrogatepass")`` (a lone
    surrogate is its 3 bytes: invalid UTF-8 the counter reports, replaces or counts as bytes),
    transcoded as it is read: ``readinto`` fills a buffer the reader of a long text reuses, so
    the text's whole UTF-8 never exists at once.

    ``readinto`` fills the buffer whole unless the text ends first (0: the end), so a reader
    that stops at a short read stops at the end: a character whose bytes do not all fit waits,
    its last bytes held, for the next call. ``bound``: the UTF-8's length at most.

    >>> r = Utf8Reader("a\u00e9\ud800z")
    >>> b = bytearray(3)
    >>> [bytes(b[:r.readinto(b)]) for _ in range(4)]
    [b'a\xc3\xa9', b'\xed\xa0\x80', b'z', b'']
    """
    cdef object text  # held: its characters stay put while they are read without the GIL
    cdef const char* chars
    cdef int kind
    cdef size_t widest  # UTF-8 bytes per character at most
    cdef size_t length, pos  # characters; those read
    cdef uint8_t held[4]  # the bytes of a character that did not fit, from held_at on
    cdef int held_len, held_at
    cdef readonly size_t bound

    def __init__(self, text):
        if not isinstance(text, str):  # (a str subclass is fine: typing the argument str is not)
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        PyUnicode_READY(text)
        self.text = text
        self.chars = <const char*>PyUnicode_DATA(text)
        self.kind = PyUnicode_KIND(text)
        self.widest = 1 if PyUnicode_IS_ASCII(text) else utf8_max_per_unit(self.kind)
        self.length = len(text)
        self.pos = 0
        self.held_len = self.held_at = 0
        self.bound = self.widest * self.length

    def readinto(self, uint8_t[::1] out not None):
        """Write the next UTF-8 bytes into ``out``; returns how many (fewer only at the end)."""
        cdef size_t room = out.shape[0], o = 0, k
        cdef uint8_t* p = &out[0] if room else NULL
        with nogil:
            while o < room:
                if self.held_at < self.held_len:
                    p[o] = self.held[self.held_at]
                    o += 1
                    self.held_at += 1
                    continue
                if self.pos == self.length:
                    break
                # whole characters that surely fit; past them, one character through `held`
                k = min(self.length - self.pos, (room - o) // self.widest)
                if k == 0:
                    self.held_len = utf8_from_str_data(self.kind, self.chars + self.pos * self.kind, 1, self.held, True)
                    self.held_at = 0
                    self.pos += 1
                elif self.widest == 1:  # an ASCII str: its characters are its UTF-8
                    memcpy(p + o, self.chars + self.pos, k)
                    o += k
                    self.pos += k
                else:
                    o += utf8_from_str_data(self.kind, self.chars + self.pos * self.kind, k, p + o, True)
                    self.pos += k
        return o


def fix_malloc_thresholds():
    """Fix glibc's malloc thresholds (elsewhere: nothing): blocks of 1 MB and more become
    mapped pages of their own (given back when freed), and an arena's free top over 2 MB is
    given back. glibc's default raises both thresholds to the size of the largest block freed
    so far (up to 32 and 64 MB), and only the main arena's top is ever trimmed after that: the
    counting threads' arenas kept about 60 MB resident through training on one 50 MB chunk
    (the peak fell from 393 to 312 MB), memory the learner, on the main thread, never reuses.

    It holds for the rest of the process (glibc has no way back to its adaptive thresholds), so
    counting calls it, not the import: a process that only encodes keeps glibc's defaults."""
    fbpt_fix_malloc_thresholds()


cdef class ChunkCounter:
    """Counts chunks of documents into one table, in first-appearance order.

    >>> c = ChunkCounter()
    >>> c.add_documents(b"the the thethe", np.array([11, 14], dtype=np.int64), 1, 0)
    -1
    >>> data, offsets, counts = c.arrays()
    >>> data.tobytes(), offsets.tolist(), counts.tolist()
    (b'the the', [0, 3, 7], [2, 2])
    """
    cdef ChunkTable* table
    cdef public int64_t bad_offset

    def __cinit__(self):
        self.table = new ChunkTable()
        self.bad_offset = -1

    def __dealloc__(self):
        del self.table

    def __len__(self):
        return self.table.size()

    def add_documents(self, const uint8_t[::1] buf, const int64_t[::1] ends, int pattern, int errors):
        """Count the chunks of ``buf[ends[k-1]:ends[k]]`` for each k (each an independent text).

        Returns -1, or the index of the first document holding invalid UTF-8 under
        errors=strict (the byte offset inside it is then in ``self.bad_offset``).
        """
        cdef size_t ndocs = ends.shape[0]
        cdef int64_t r, bad = -1
        cdef const uint8_t* base
        cdef uint8_t empty = 0
        cdef Py_ssize_t k
        if not 0 <= pattern < PAT_COUNT or not 0 <= errors < ERR_COUNT:
            raise ValueError(f"unknown pattern id {pattern} or errors id {errors}")
        if ndocs == 0:
            return -1
        if ends[ndocs - 1] > buf.shape[0] or ends[0] < 0:
            raise ValueError("document ends beyond the buffer")
        for k in range(1, ndocs):
            if ends[k] < ends[k - 1]:
                raise ValueError("document ends must be non-decreasing")
        base = &buf[0] if buf.shape[0] else &empty
        with nogil:
            r = self.table.add_documents(base, &ends[0], ndocs, pattern, errors, &bad)
        self.bad_offset = bad
        return r

    def add_table(self, data, offsets, counts):
        """Add the chunks of a table (arrays of a WordTable) in its order, summing counts."""
        cdef const uint8_t[::1] d = np.ascontiguousarray(data, dtype=np.uint8)
        cdef const int64_t[::1] o = np.ascontiguousarray(offsets, dtype=np.int64)
        cdef const int64_t[::1] c = np.ascontiguousarray(counts, dtype=np.int64)
        cdef size_t n = c.shape[0]
        cdef uint8_t empty = 0
        cdef size_t k
        cdef bint summed
        if <size_t>o.shape[0] != n + 1 or o[0] != 0 or o[n] != d.shape[0]:
            raise ValueError("inconsistent table arrays")
        for k in range(n):
            if o[k + 1] <= o[k]:  # also keeps every read inside data
                raise ValueError("table chunks must be non-empty (offsets strictly increasing)")
            if c[k] <= 0:  # (a merge takes counts of 0 and below for chunks it settled)
                raise ValueError("table counts must be positive")
        if n == 0:
            return
        with nogil:
            summed = self.table.add_table(&d[0] if d.shape[0] else &empty, &o[0], &c[0], n)
        if not summed:
            raise OverflowError("a chunk's count passes 2**63 - 1")

    def reserve(self, size_t chunks):
        """Make room for ``chunks`` unique chunks in all, so that adding up to that many
        costs no rehash (a hint: the table still grows past it when needed)."""
        if chunks > MAX_CHUNKS:
            raise ValueError(f"a table holds at most {MAX_CHUNKS} chunks")
        with nogil:
            self.table.reserve(chunks)

    def arrays(self):
        """(data uint8, offsets int64[n+1], counts int64[n]) copies of the table."""
        cdef size_t n = self.table.size()
        data = np.empty(self.table.data.size(), dtype=np.uint8)
        offsets = np.empty(n + 1, dtype=np.int64)
        cdef uint8_t[::1] dv = data
        cdef int64_t[::1] ov = offsets
        if self.table.data.size():
            memcpy(&dv[0], self.table.data.data(), self.table.data.size())
        memcpy(&ov[0], self.table.offsets.data(), (n + 1) * sizeof(int64_t))
        return data, offsets, self._counts()

    def take_arrays(self):
        """The arrays of ``arrays()``, the chunk bytes and the offsets handed over without a
        copy (the table's own buffers: one long chunk can make the bytes as large as the
        input); the counter is left empty."""
        counts = self._counts()
        cdef _TableBytes data = _TableBytes()
        cdef _TableOffsets offsets = _TableOffsets()
        data.data.swap(self.table.data)
        offsets.offsets.swap(self.table.offsets)
        del self.table  # its slots too, before the caller builds on the arrays
        self.table = new ChunkTable()
        return (np.frombuffer(data, dtype=np.uint8) if data.data.size() else np.empty(0, dtype=np.uint8),
                np.frombuffer(offsets, dtype=np.int64), counts)

    cdef _counts(self):
        """The counts (int64[n]), in first-appearance order."""
        counts = np.empty(self.table.size(), dtype=np.int64)
        cdef int64_t[::1] cv = counts
        if self.table.size():
            with nogil:
                self.table.export_counts(&cv[0])
        return counts

    def begin_task(self, int64_t task):
        """Mark the start of task ``task`` (tasks numbered from 0 in corpus order, each counter
        given an increasing subset of them): see merge_partition."""
        if task < 0 or task <= self.table.last_task():
            raise ValueError("tasks are numbered from 0 and begun in increasing order")
        self.table.begin_task(task)

    def finish_tasks(self):
        """After the last task of this counter, before merge_partition."""
        with nogil:
            self.table.finish_tasks()


cdef class _TableBytes:
    """A chunk table's bytes, moved out of it and lent to NumPy through the buffer protocol."""
    cdef vector[uint8_t] data
    cdef Py_ssize_t shape[1]

    def __getbuffer__(self, Py_buffer* view, int flags):
        self.shape[0] = <Py_ssize_t>self.data.size()
        lend_vector(view, self, <void*>self.data.data(), self.shape, 1, b"B", flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef class _TableOffsets:
    """A chunk table's offsets, moved out of it and lent to NumPy through the buffer protocol."""
    cdef vector[int64_t] offsets
    cdef Py_ssize_t shape[1]

    def __getbuffer__(self, Py_buffer* view, int flags):
        self.shape[0] = <Py_ssize_t>self.offsets.size()
        lend_vector(view, self, <void*>self.offsets.data(), self.shape, sizeof(int64_t), b"q", flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef vector[ChunkTable*] _merged_tables(list counters) except *:
    """The tables of counters to merge, each checked to be ready (merge_partition and
    write_merged read every chunk's task and merged count, which only these have)."""
    cdef vector[ChunkTable*] tables
    cdef ChunkCounter c
    if len(set(map(id, counters))) != len(counters):
        raise ValueError("a counter is given twice")
    for c in counters:
        if c is None:
            raise TypeError("counters must be ChunkCounters, not None")
        if not c.table.ready_to_merge():
            raise ValueError("every counter must count in tasks (begin_task before its first chunk) "
                             "and be finished (finish_tasks) before merging")
        tables.push_back(c.table)
    return tables


def merge_partition(list counters, size_t part, size_t parts, int64_t[::1] task_chunks, int64_t[::1] task_bytes):
    """Settle hash partition ``part`` of ``parts`` of the chunks of counters that counted
    interleaved tasks (marked by begin_task, each counter ended by finish_tasks): the
    partitions run on as many threads at once; only these calls touch the counters meanwhile.
    Adds to ``task_chunks[t]`` and ``task_bytes[t]`` (an entry per task) the partition's
    unique chunks first seen in task t and their bytes, which write_merged needs."""
    cdef vector[ChunkTable*] tables = _merged_tables(counters)
    cdef size_t w
    cdef int64_t empty = 0
    if not part < parts:
        raise ValueError("part must be below parts")
    if task_chunks.shape[0] != task_bytes.shape[0]:
        raise ValueError("task_chunks and task_bytes must have an entry per task")
    for w in range(tables.size()):
        if tables[w].last_task() >= task_chunks.shape[0]:
            raise ValueError("task_chunks and task_bytes must have an entry per task")
    if task_chunks.shape[0] == 0:
        return
    with nogil:
        for w in range(tables.size()):
            tables[w].merge_partition(tables.data(), tables.size(), w, part, parts, &task_chunks[0], &task_bytes[0])


def write_merged(list counters, int64_t task_lo, int64_t task_hi, uint8_t[::1] data, int64_t[::1] offsets,
                 int64_t[::1] counts, int64_t chunk_at, int64_t chunk_end, int64_t byte_at, int64_t byte_end):
    """Write the merged table's chunks first seen in tasks ``[task_lo, task_hi)``, in corpus
    first-appearance order, into ``data[byte_at:byte_end]``, ``counts[chunk_at:chunk_end]`` and
    ``offsets[chunk_at + 1:chunk_end + 1]`` (after every merge_partition; the bounds are sums
    of its task totals). Runs of tasks may be written at the same time. ValueError when the
    chunks do not fill those ranges exactly."""
    cdef vector[ChunkTable*] tables = _merged_tables(counters)
    cdef uint8_t no_byte = 0
    cdef int64_t no_int = 0
    cdef bint filled
    if offsets.shape[0] != counts.shape[0] + 1:
        raise ValueError("offsets must have one entry more than counts")
    if not (0 <= chunk_at <= chunk_end <= counts.shape[0] and 0 <= byte_at <= byte_end <= data.shape[0]):
        raise ValueError("the ranges to write lie outside the arrays")
    with nogil:
        filled = ChunkTable.merged_write(tables.data(), tables.size(), task_lo, task_hi,
                                         &data[0] if data.shape[0] else &no_byte, &offsets[0],
                                         &counts[0] if counts.shape[0] else &no_int, chunk_at, chunk_end,
                                         byte_at, byte_end)
    if not filled:
        raise ValueError("the merged chunks of these tasks do not fill the given ranges")
