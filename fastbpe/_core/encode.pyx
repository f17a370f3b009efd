# distutils: language = c++
"""The BPE encoder: the Python shell around bpe.h.

``BPECore`` holds the encoding tables (built here from token bytes and merges, then read-only)
and ``EncodeState`` one thread's chunk cache and buffers. Each entry point checks its
arguments and bounds, releases the GIL for the whole encoding, and copies the ids out (or,
from IDS_MOVED_FROM_BYTES up, moves the buffer that holds them into the result):
``encode_chunks`` (chunk bounds given), ``encode_text``/``encode_str`` (split by a compiled
pattern too, in one pass; ``encode_str`` makes the UTF-8 of a str without the GIL as well),
``encode_symbols`` (words as base symbol ids), ``encode_str_many`` (many texts in one call,
for ``encode_batch``), ``id_list``/``id_lists`` (lists of ids from shared int objects: list
output costs no allocation per token), ``ByteTable`` (decoding: the bytes of ids gathered from one
flat buffer) and ``decode_single_token_bytes`` (one id's bytes: a Tokenizer method).

The merge rules (``MERGE_RULES``), the cache, the whole-chunk lookup and the merge loops are
described in bpe.h; pattern ids are those of ``fastbpe._core.split`` (patterns.h).
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy, memmove
from libcpp.string cimport string
from libcpp.string_view cimport string_view
from libcpp.atomic cimport atomic
from libcpp.vector cimport vector

import os
import threading

import numpy as np
cimport numpy as cnp

from cpython.exc cimport PyErr_SetString
from cpython.ref cimport PyObject, Py_INCREF

from fastbpe._core.derive_merges cimport (derive_merges as c_derive_merges, first_repeat as c_first_repeat,
                                          two_piece_splits as c_two_piece_splits)
from fastbpe._core.buffers cimport lend_vector

from fastbpe._core.bpe cimport (Backtracker, BpeEncoder, EncodeScratch, FUSED_BLOCK, IdBuffer, MERGE_REPLAY,
                                MERGE_PAIR, MERGE_TOKEN, SCAN_MAX_CHUNK, SHORT_IDS_MAX, SharedChunkCache,
                                KEEP_BUFFER_BYTES, TEXTS_AHEAD)
from fastbpe._core.pair_table cimport pair_key
from fastbpe._core.patterns cimport pattern_tiles
from fastbpe._core.poll cimport check_signals_with_gil
from fastbpe._core.utf8 cimport utf8_valid, utf8_valid_in_order, utf8_from_str_data, utf8_max_per_unit
from fastbpe._core.str_utf8 cimport str_utf8, str_utf8_filled_here

cnp.import_array()


cdef extern from "Python.h":
    int PyUnicode_READY(object o) except -1   # (a no-op from Python 3.12 on)
    int PyUnicode_KIND(object o)
    void* PyUnicode_DATA(object o)
    bint PyUnicode_IS_ASCII(object o)
    Py_ssize_t PyUnicode_FindChar(object o, Py_UCS4 ch, Py_ssize_t start, Py_ssize_t end, int direction)
    Py_ssize_t PyUnicode_Tailmatch(object s, object sub, Py_ssize_t start, Py_ssize_t end, int direction) except -1
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index) nogil
    list PyList_New(Py_ssize_t n)
    void PyList_SET_ITEM(list lst, Py_ssize_t i, PyObject* item)   # steals the reference
    PyObject* PyTuple_GET_ITEM(tuple t, Py_ssize_t i)                # borrowed
    PyObject* PyLong_FromLong(long v)                                # new reference
    PyObject* PyList_GET_ITEM(list lst, Py_ssize_t i)                # borrowed
    bint PyLong_CheckExact(PyObject* o)
    long long PyLong_AsLongLongAndOverflow(PyObject* o, int* overflow)
    bytes PyBytes_FromStringAndSize(const char* s, Py_ssize_t n)
    char* PyBytes_AS_STRING(object o)
    void PyErr_Clear()
    Py_ssize_t PyUnicode_GET_LENGTH(object o)

cdef extern from *:
    void __builtin_prefetch(const void* p) nogil


cdef tuple _byte_views(list items, vector[string_view]& views):
    """Views of the bytes of ``items`` (each a bytes object), no copy: the returned tuple holds
    them, so they stay valid as long as the caller keeps it, whatever happens to the list
    while the GIL is released. (A std::string copy of each, SSO or malloc, took a 32k
    vocabulary 1-2 ms, twice a SentencePiece load.)"""
    cdef tuple held = tuple(items)
    cdef bytes item
    views.reserve(len(held))
    for item in held:
        if item is None:
            raise TypeError("expected bytes, NoneType found")  # (what the std::string conversion said)
        views.push_back(string_view(PyBytes_AS_STRING(item), len(item)))
    return held

MERGE_RULE_IDS = {"replay": MERGE_REPLAY, "pair": MERGE_PAIR, "token": MERGE_TOKEN}
# the names in id order: what Tokenizer(merge_rule=...) accepts
MERGE_RULES = tuple(sorted(MERGE_RULE_IDS, key=MERGE_RULE_IDS.get))
WHOLE_TOKEN_LOOKUPS = ("all", "consistent", "none")
# Buffers bigger than this are freed after a call instead of kept for the next one (bpe.h's
# bound, which a call that ends by an exception settles by itself).
cdef size_t KEEP_BUFFER = KEEP_BUFFER_BYTES
# encode_text_many checks the UTF-8 of this many bytes of texts at most, then encodes them
cdef int64_t RUN_BYTES = 1 << 20
# A text of this many bytes or more is encoded alone, not in a run of texts (_encode_run)
cdef size_t ALONE_BYTES = 4096
# A non-ASCII str of at most this many bytes of UTF-8 (bounded by its length times its widest
# character's bytes) is read through str_utf8 (str_utf8.h), which keeps the UTF-8 inside the
# str: encoding the same str again (a second pass over a corpus) transcodes nothing. The trade
# is memory: such a str holds its UTF-8 beside its characters for as long as the caller keeps
# it (as after str.encode by tiktoken and the other PyO3 tokenizers). A bigger str is
# transcoded into this thread's scratch on every call instead, so a huge text is not doubled.
cdef size_t KEEP_UTF8_IN_STR = 64 * 1024 * 1024
UTF8_KEPT_IN_STR_UP_TO = KEEP_UTF8_IN_STR   # (the bound, seen from Python)
# Whether that UTF-8 is made by fastbpe's encoder (str_utf8.h) rather than CPython's
STR_UTF8_MADE_HERE = str_utf8_filled_here()
# A call's ids of at least this many bytes become its result without a copy: the state's buffer
# is moved into the result (_buffer_ids), and given back to the state when the result dies, for
# a later call to write into, its pages still mapped (while a result lives, the next call takes
# fresh pages, huge ones, as a copy's destination would). Fewer are copied out, and the buffer
# stays warm for the next call. (encode_batch's workers copied each group's ids into arrays
# that glibc took from their threads' arenas, on 4 KB pages faulted anew on every pass: 100 MB
# of English on two workers spent 12% of a warm pass's CPU clearing pages.)
cdef size_t MOVE_IDS_MIN_BYTES = 2 * 1024 * 1024
IDS_MOVED_FROM_BYTES = MOVE_IDS_MIN_BYTES   # (the bound, seen from Python)


# Each BPECore's number, from 1: the caches of a state (and of a shared cache) hold one core's
# ids for chunk bytes, so they remember whose (0: none yet).
cdef uint64_t _cores_made = 0


cdef class SharedCache:
    """A chunk cache that several threads encode with at once (each through its own
    :class:`EncodeState`, made with ``shared=`` this cache): a chunk merged by one thread is
    found by the others. Its room is fixed, for about ``max_ids`` ids (at most half its
    ``2**10..2**22`` slots used, 24 bytes of keys and ids per id); once ``full`` it takes no
    more chunks (the threads keep their own caches for those). ``clear()`` only while no thread
    encodes with it.
    """
    cdef SharedChunkCache* cache
    cdef uint64_t core   # the BPECore whose ids it holds (0: none yet): it serves one

    def __cinit__(self, size_t max_ids=4_000_000):
        self.cache = new SharedChunkCache(max_ids)

    def __dealloc__(self):
        del self.cache

    @property
    def size(self):
        """Number of cached chunks."""
        return self.cache.size()

    @property
    def capacity(self):
        """The most chunks it takes."""
        return self.cache.capacity()

    @property
    def full(self):
        """Whether it takes no more chunks."""
        return self.cache.full()

    def clear(self):
        """Empty it; only while no thread encodes with it."""
        self.cache.clear()


cdef extern from "Python.h":
    unsigned long PyThread_get_thread_ident() noexcept nogil

# Only the main thread runs Python's signal handlers: another thread's long loops never take
# the GIL to look (a thread of a pool would wait for it while the others run). (The main
# thread's, not the importing thread's: the module may be imported first in another.)
cdef unsigned long _main_thread = threading.main_thread().ident


def _forked():
    global _main_thread
    _main_thread = PyThread_get_thread_ident()  # (the forking thread is the child's main one)


os.register_at_fork(after_in_child=_forked)


cdef int _check_signals(void* stop) noexcept nogil:
    """The poll of a state's long loops (poll.h): nonzero, KeyboardInterrupt (or what a signal
    handler raised) set, when the call should stop. (Cython's ``except +`` raises an exception
    already set in place of the C++ one that carries the call out.) Another thread stops when
    the :class:`StopFlag` its state watches (``stop``: its flag, or NULL) is set."""
    if PyThread_get_thread_ident() != _main_thread:
        if stop == NULL or not (<atomic[int]*>stop).load():
            return 0
        with gil:
            PyErr_SetString(KeyboardInterrupt, "the call that handed this encode to a worker thread stopped")
        return 1
    with gil:
        return check_signals_with_gil()


cdef class StopFlag:
    """Set once by a call that hands its work to other threads when it stops early (Ctrl-C):
    their encode calls with a state that watches it (``EncodeState.watch``) stop at their next
    poll, as the calling thread's would at a signal, and raise KeyboardInterrupt."""
    cdef atomic[int] flag

    def set(self):
        self.flag.store(1)

    @property
    def is_set(self):
        return self.flag.load() != 0


cdef class EncodeState:
    """Per-thread scratch space and chunk cache. Never share one between threads.

    The cache maps chunk bytes (chunks of up to 1024 bytes) to their ids; it is cleared when it
    holds more than ``max_ids`` ids or ``16 * max_ids`` bytes of chunks, which bounds its
    memory. In front of it, a cache of ``2**short_cache_bits`` entries (32 bytes each,
    two-way) answers the chunks of up to 8 ids that come back most: of 1 to 15 bytes, or
    words of up to 13 two-byte letters such as Cyrillic or Greek (see bytes_map.h); it
    quadruples while it evicts much, up to ``2**short_cache_max_bits`` entries (default:
    2**20, 32 MB, or ``short_cache_bits`` if more). Tests make it tiny and fixed to
    force collisions. ``shared``: a :class:`SharedCache` that takes the place of the cache
    (behind the short-chunk one) for as long as it has room, shared with the other threads
    attached to it. The id buffers of large results (``IDS_MOVED_FROM_BYTES`` of ids and
    more) come back to their state when the arrays go, and later calls write into them: a
    state keeps those while their ids come to 64 MB at most.
    """
    cdef EncodeScratch scratch
    cdef readonly SharedCache shared   # (held: the scratch points into it)
    cdef int64_t fresh_ints     # ints its lists made fresh while ints was too short (_shared_ints)
    cdef tuple ints             # id_list's int of every id: this thread's own objects, so two
                                # threads never write to the same refcount (cache-line ping-pong)
    cdef public int64_t hits, misses
    cdef uint64_t core          # the BPECore whose ids its caches hold (0: none yet)
    cdef StopFlag watched       # (held: the poll's context points into it)

    def __init__(self, size_t max_ids=4_000_000, int short_cache_bits=16, short_cache_max_bits=None,
                 SharedCache shared=None):
        if self.scratch.poll.checking:
            raise RuntimeError("this state's encode call is paused in a signal handler: it cannot be made anew "
                               "from there")
        if not 1 <= short_cache_bits <= 24:
            raise ValueError(f"short_cache_bits must be between 1 and 24, got {short_cache_bits}")
        if short_cache_max_bits is None:
            short_cache_max_bits = max(20, short_cache_bits)
        if not short_cache_bits <= short_cache_max_bits <= 24:
            raise ValueError(f"short_cache_max_bits must be between short_cache_bits ({short_cache_bits}) and 24, "
                             f"got {short_cache_max_bits}")
        self.scratch.max_ids = max_ids
        self.scratch.poll.check = _check_signals  # (Ctrl-C stops a call of seconds within ~50 ms)
        self.scratch.short_cache.set_bits(short_cache_bits, short_cache_max_bits)
        self.hits = 0
        self.misses = 0
        if shared is not None and self.shared is None:
            self.shared = shared
            self.scratch.shared = shared.cache
            self.scratch.arena = shared.cache.take_arena()

    def __dealloc__(self):
        if self.shared is not None:
            self.shared.cache.give_back(self.scratch.arena)

    def watch(self, StopFlag stop):
        """Stop this state's encode calls on another thread than the main one once ``stop`` is
        set (None: never, as made). The thread that encodes with it calls this, between calls."""
        self.watched = stop
        self.scratch.poll.context = <void*>&stop.flag if stop is not None else NULL

    @property
    def buffer_bytes(self):
        """Bytes its call buffers hold between calls (UTF-8, ids, a huge chunk's merges): at most
        64 MB once a call has ended, whether it returned or raised."""
        return self.scratch.buffer_bytes()

    @property
    def short_cache_bits(self):
        """The short-chunk cache's size now: ``2**short_cache_bits`` entries."""
        return self.scratch.short_cache.bits()

    def clear(self):
        if self.scratch.poll.checking:  # (the paused call reads the cache: see BPECore._take)
            raise RuntimeError("this state's encode call is paused in a signal handler: its cache cannot be "
                               "cleared from there")
        self.scratch.clear_cache()

    @property
    def size(self):
        """Number of cached chunks."""
        return self.scratch.cache_size()


cdef void _settle(EncodeState state, int64_t chunks, int64_t misses):
    """After a call: count its cache hits and misses, and let go of the scratch buffers a huge
    call grew past KEEP_BUFFER (the merge buffers of a huge chunk too)."""
    state.misses += misses
    state.hits += chunks - misses
    state.scratch.settle(KEEP_BUFFER)


cdef class BPECore:
    """Immutable encoding tables; safe to use from many threads at once (each with its own
    :class:`EncodeState`).

    ``token_bytes``: bytes of every id (``b""`` for an unused id). ``left``, ``right``:
    int32 merge pairs in rank order (merge rules ``replay`` and ``pair``; ignored for ``token``,
    which derives its pairs from the vocabulary; ``made`` then holds the id each merge makes).
    ``made``: int32, the id each merge makes, when the caller has them (a reader's third column,
    the learner's): each is checked against its merge's two tokens, byte for byte, instead of
    looked up.
    ``whole_token_lookup``: ``"all"`` (every token is
    looked up before merging), ``"consistent"`` (only tokens that BPE rebuilds from their own
    bytes, so the lookup is a pure shortcut) or ``"none"``.
    """
    cdef BpeEncoder enc
    cdef readonly Py_ssize_t num_tokens
    cdef readonly Py_ssize_t num_pairs
    cdef readonly object made     # int32: the token each merge makes (rules replay and pair)
    cdef uint64_t number          # this core's number (_cores_made): whose ids a cache holds
    cdef bint built               # __init__ ran: the tables are built once

    def __cinit__(self):
        global _cores_made
        _cores_made += 1
        self.number = _cores_made

    def __init__(self, list token_bytes, const int32_t[::1] left, const int32_t[::1] right,
                 str merge_rule="replay", str whole_token_lookup="consistent", const int32_t[::1] made=None):
        cdef vector[string_view] tokens
        cdef vector[uint64_t] keys, vals
        cdef Py_ssize_t i, n = len(token_bytes), m = left.shape[0]
        cdef int64_t bad = -1, first = -1
        cdef int why = 0
        cdef bint consistent = whole_token_lookup == "consistent"
        if self.built:
            raise RuntimeError("a BPECore is built once: make a new one for other tables")
        self.built = True  # (from here on: a failed build leaves tables no call should trust)
        if merge_rule not in MERGE_RULE_IDS:
            raise ValueError(f"merge_rule must be one of {MERGE_RULES}, got {merge_rule!r}")
        if whole_token_lookup not in WHOLE_TOKEN_LOOKUPS:
            raise ValueError(f"whole_token_lookup must be 'all', 'consistent' or 'none', got {whole_token_lookup!r}")
        if left.shape[0] != right.shape[0]:
            raise ValueError("left and right must have the same length")
        if n >= 0x7FFFFFFF or left.shape[0] >= 0x7FFFFFFF:
            raise OverflowError("too many tokens or merges")
        self.enc.merge_rule = MERGE_RULE_IDS[merge_rule]
        self.num_tokens = n
        held = _byte_views(token_bytes, tokens)  # (read during this call only: set_tokens copies them)
        # (MERGE_TOKEN's merges are checked too, though its ranks decide: a vocabulary cut
        # short under them would load as a smaller one, quietly; the made ids are dropped)
        if made is not None and made.shape[0] != m:
            raise ValueError("made must have one id per merge")
        cdef bint given = made is not None and m > 0
        made_ids = np.array(made, dtype=np.int32) if given else np.full(m, -1, dtype=np.int32)
        cdef int32_t[::1] mv = made_ids
        with nogil:
            bad = self.enc.set_tokens(tokens, &first)
        if bad >= 0:
            raise ValueError(f"token {bad} ({held[bad]!r}) duplicates token {first}")
        if m > 0:
            # rank = merge index; checked here, where a bad merge can name itself
            with nogil:
                bad = self.enc.merge_pairs(tokens, &left[0], &right[0], m, &mv[0], keys, vals, &why, given)
            if bad >= 0 and why == 1:
                raise ValueError(f"merge {bad} refers to an unknown token id")
            if bad >= 0 and why == 3:
                joined = held[left[bad]] + held[right[bad]]
                actual = self.enc.token_id(<const uint8_t*><const char*>joined, len(joined))
                raise ValueError(f"merge {bad} says it makes token {mv[bad]}, but its concatenation is "
                                 + (f"token {actual}" if actual >= 0 else "not a token"))
            if bad >= 0:
                raise ValueError(f"merge {bad}: the concatenation of tokens {left[bad]} and {right[bad]} is not a token")
        if self.enc.merge_rule == MERGE_TOKEN:
            keys.clear()
            vals.clear()
            made_ids = made_ids[:0]
            with nogil:
                self.enc.token_pairs(tokens, keys, vals)
        self.made = made_ids
        with nogil:
            self.enc.build_pairs(keys, vals)
            if self.enc.merge_rule == MERGE_PAIR:
                self.enc.use_spans_for_pairs(tokens, &left[0] if m > 0 else NULL, &mv[0] if m > 0 else NULL, m)
        self.num_pairs = keys.size()
        if whole_token_lookup != "none":
            with nogil:
                self.enc.add_whole_tokens(tokens, consistent)

    def token_id(self, bytes token):
        """The id of the token with these bytes, or -1."""
        return self.enc.token_id(<const uint8_t*><const char*>token, len(token))

    def encode_chunks(self, const uint8_t[::1] data, const int64_t[::1] starts,
                      const int64_t[::1] ends, EncodeState state):
        """int32 ids of the chunks ``data[starts[i]:ends[i]]``, concatenated.

        Bounds are checked (in order, inside ``data``) before the GIL is released. Raises
        ValueError naming the first byte the vocabulary lacks.
        """
        cdef Py_ssize_t m = starts.shape[0], c
        cdef int64_t total = 0, s, e, prev_end = 0, got = 0, misses = 0
        if ends.shape[0] != m:
            raise ValueError("starts and ends must have the same length")
        self._take(state)
        for c in range(m):
            s = starts[c]
            e = ends[c]
            if s < prev_end or e < s or e > data.shape[0]:
                raise ValueError(f"chunk {c} has bounds ({s}, {e}) out of order or outside the data")
            prev_end = e
            total += e - s
        if total >= 0xFFFFFFFF:
            raise OverflowError("more than 4 GiB in one call; split the text")
        # Ids go to the state's reusable buffer (at most one id per byte), then one exact-size
        # copy: a fresh buffer per call would page-fault on every call, serialising threads on
        # the process's memory map. A huge call writes straight into its result (_output).
        cdef EncodeScratch* st = &state.scratch
        big = self._output(state, total)
        cdef int32_t* op = self._output_ids(state, big)
        cdef const uint8_t* dp = &data[0] if data.shape[0] > 0 else NULL
        if m > 0:
            with nogil:
                st.expect_text(total)
                got = self.enc.encode_run(dp, data.shape[0], &starts[0], &ends[0], m, st[0], op, &misses)
        return self._result(state, got, m, misses, big)

    cdef object _output(self, EncodeState state, int64_t room):
        """Where a call's ``room`` ids at most go: None for the state's reusable buffer (made
        big enough), or, past KEEP_BUFFER, a fresh int32 array that becomes the result (cut to
        size in place by _result), so that a huge call never holds its ids twice. Pages of
        either are taken only where ids are written."""
        cdef EncodeScratch* st = &state.scratch
        if <size_t>room * sizeof(int32_t) > KEEP_BUFFER:
            return np.empty(room, dtype=np.int32)
        st.out_room(room)
        return None

    cdef int32_t* _output_ids(self, EncodeState state, object big):
        cdef int32_t[::1] bv
        if big is None:
            return state.scratch.out.data()
        bv = big
        return &bv[0]

    cdef object _result(self, EncodeState state, int64_t got, Py_ssize_t chunks, int64_t misses, object big=None,
                        bint as_list=False):
        """The first ``got`` ids of the call's output (``big``, or the state's buffer) as an
        int32 array of their own, or a list (``as_list``: ``id_list``'s, made from the buffer
        with no array between), or the ValueError of a negative ``got``; then _settle."""
        if got < 0:
            _settle(state, chunks, misses)
            raise ValueError(f"byte 0x{-1 - got:02x} is not in the vocabulary")
        if big is not None:
            big.resize(got, refcheck=False)  # realloc: shrinks in place, the tail never touched
            out = self.id_list(big, state) if as_list else big
        elif as_list:
            out = self._list_of(state.scratch.out.data(), got, self._shared_ints(state, got))
        else:
            out = _buffer_ids(state, got)
        _settle(state, chunks, misses)   # (after the ids are out: it may free the state's buffer)
        return out

    def encode_text(self, const uint8_t[::1] data, int pattern, EncodeState state):
        """int32 ids of UTF-8 ``data`` split by the compiled pattern ``pattern`` (a
        ``PATTERN_IDS`` value whose chunks tile the text: any but whitespace), in
        one pass with the GIL released: the scanner hands blocks of chunk bounds straight to
        the encoder, with no offsets array and no copy of the chunks.

        Returns None when ``data`` is not valid UTF-8 (the caller falls back to the regex path,
        which knows what to do with the lone surrogates ``surrogatepass`` wrote).
        """
        cdef size_t n = data.shape[0]
        cdef int64_t got = 0, chunks = 0, misses = 0
        cdef bint valid = True
        self._check_fused(pattern, state, n)
        if n == 0:
            return np.empty(0, dtype=np.int32)
        cdef EncodeScratch* st = &state.scratch
        big = self._output(state, n)
        cdef int32_t* op = self._output_ids(state, big)
        with nogil:
            valid = utf8_valid(&data[0], n)
            if valid:
                st.expect_text(n)
                got = self.enc.encode_utf8(&data[0], n, pattern, st[0], &chunks, &misses, op)
        return self._result(state, got, chunks, misses, big) if valid else None

    def encode_text_u16(self, const uint8_t[::1] data, int pattern, EncodeState state):
        """``encode_text`` as uint16 ids (a vocabulary of at most 65,536 tokens), for one huge
        text: a long chunk is backtracked straight into the result, so the ids are held once,
        at 2 bytes each (bpe.h, ``encode_utf8_u16``); the result is cut to size in place.
        None when ``data`` is not valid UTF-8."""
        cdef size_t n = data.shape[0]
        cdef int64_t got = 0, chunks = 0, misses = 0
        cdef bint valid = True
        self._check_fused(pattern, state, n)
        if self.num_tokens > 65536:
            raise ValueError(f"uint16 ids need at most 65536 tokens, this vocabulary has {self.num_tokens}")
        out = np.empty(n, dtype=np.uint16)  # (pages are taken only where ids are written)
        if n == 0:
            return out
        cdef uint16_t[::1] ov = out
        cdef EncodeScratch* st = &state.scratch
        with nogil:
            valid = utf8_valid(&data[0], n)
            if valid:
                st.expect_text(n)
                got = self.enc.encode_utf8_u16(&data[0], n, pattern, st[0], &chunks, &misses, &ov[0])
        ov = None  # (released before the resize)
        _settle(state, chunks, misses)
        if not valid:
            return None
        if got < 0:
            raise ValueError(f"byte 0x{-1 - got:02x} is not in the vocabulary")
        out.resize(got, refcheck=False)  # realloc: shrinks in place, the tail never touched
        return out

    def encode_str(self, text, int pattern, EncodeState state, bint as_list=False):
        """``encode_text(text.encode("utf-8"), pattern, state)``, only building the result
        holding the GIL. An ASCII str is read in place, and so is a str that keeps its UTF-8
        (``KEEP_UTF8_IN_STR``: made on the first call, under the GIL); a bigger one is
        transcoded with the GIL released. None when ``text`` has a lone surrogate (no UTF-8
        exists). ``as_list``: the ids as ``id_list`` gives them, with no array between (a short
        text's encode costs little more than the call).
        """
        if not isinstance(text, str):   # (a str subclass is fine: typing the argument str is not)
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        PyUnicode_READY(text)
        cdef size_t n = len(text)
        cdef int kind = PyUnicode_KIND(text)
        cdef const void* chars = PyUnicode_DATA(text)
        cdef const uint8_t* dp = <const uint8_t*>chars
        cdef bint ascii = PyUnicode_IS_ASCII(text)
        cdef int64_t size = n, got = 0, chunks = 0, misses = 0
        # UTF-8 bytes per character at most: 1 (ASCII), 2 (Latin-1 str), 3 (UCS-2 str), 4
        cdef size_t widest = 1 if ascii else utf8_max_per_unit(kind)
        self._check_fused(pattern, state, widest * n)
        if n == 0:
            return [] if as_list else np.empty(0, dtype=np.int32)
        cdef EncodeScratch* st = &state.scratch
        cdef Py_ssize_t kept = 0
        cdef const char* u = _utf8_in_place(text, &kept)   # (NULL: a lone surrogate, or past the bound)
        if u != NULL:
            dp = <const uint8_t*>u
            size = kept
            ascii = True   # (read in place from here on, as an ASCII str is)
        if not ascii:
            if st.utf8.size() < widest * n:
                st.utf8.resize(widest * n)
            dp = st.utf8.data()
        # (room for the ids: the UTF-8's length, at most widest * n before it is made)
        big = self._output(state, widest * n) if widest * n * sizeof(int32_t) > KEEP_BUFFER else None
        cdef int32_t* op = self._output_ids(state, big) if big is not None else NULL
        # The str is immutable and the caller holds it: its characters (and the UTF-8 it keeps)
        # stay put without the GIL.
        with nogil:
            if not ascii:
                size = utf8_from_str_data(kind, chars, n, st.utf8.data())
            if size >= 0:
                if op == NULL:
                    st.out_room(size)
                st.expect_text(size)
                got = self.enc.encode_utf8(dp, size, pattern, st[0], &chunks, &misses, op)
        if size < 0:
            _settle(state, 0, 0)   # (the UTF-8 buffer a huge str grew)
            return None
        return self._result(state, got, chunks, misses, big, as_list)

    def encode_str_many(self, list texts, int pattern, EncodeState state, Py_ssize_t start=0, Py_ssize_t stop=-1):
        """``encode_str`` of every str of ``texts[start:stop]`` (stop -1: to the end) in one
        call, the GIL released for all of them: ``(ids, ends, failed)``, the ids of text
        ``start + k`` being ``ids[ends[k]:ends[k + 1]]`` (int32 ids, int64 ends). ``failed``
        lists the texts (``k``) left empty here, for the caller to encode one by one: a lone
        surrogate (no UTF-8) or a byte outside the vocabulary (whose error the single-text path
        names). (A range rather than a slice of the list: a slice of 10^5 texts touches every
        str's reference count twice, a cache miss each.)"""
        if stop == -1:
            stop = len(texts)
        if not 0 <= start <= stop <= len(texts):
            raise ValueError(f"texts [{start}:{stop}] outside a list of {len(texts)}")
        cdef Py_ssize_t count = stop - start, k
        cdef vector[int] kinds
        cdef vector[const void*] datas
        cdef vector[size_t] lengths
        cdef vector[char] in_place   # the UTF-8 is datas[k] itself (an ASCII str, or one that keeps its UTF-8)
        cdef vector[char] bad
        cdef size_t widest = 1, n, room = 0, transcoded = 0
        cdef int64_t size = 0, chunks = 0, misses = 0, total = 0
        cdef const char* u
        cdef Py_ssize_t kept
        kinds.resize(count)
        datas.resize(count)
        lengths.resize(count)
        in_place.resize(count)
        for k in range(count):
            if k + TEXTS_AHEAD < count:  # (each str's header: a miss, 586,000 texts of English lines)
                __builtin_prefetch(PyList_GET_ITEM(texts, start + k + TEXTS_AHEAD))
            text = <object>PyList_GET_ITEM(texts, start + k)
            if not isinstance(text, str):
                raise TypeError(f"text must be a str, got {type(text).__name__}")
            PyUnicode_READY(text)
            kinds[k] = PyUnicode_KIND(text)
            datas[k] = PyUnicode_DATA(text)
            lengths[k] = PyUnicode_GET_LENGTH(text)
            u = _utf8_in_place(text, &kept)   # (NULL: a lone surrogate, or past the bound)
            in_place[k] = u != NULL
            if u != NULL:
                datas[k] = u
                n = lengths[k] = kept
            else:  # the UTF-8's bytes at most: its length times its widest character's bytes
                n = lengths[k] * utf8_max_per_unit(kinds[k])
            widest = n if n > widest else widest
            if not in_place[k] and n > transcoded:
                transcoded = n   # the UTF-8 buffer serves the strs not read in place only
            room += n
        self._check_fused(pattern, state, widest)
        # All the ids go to one buffer, text after text (at most a text's bytes each, and
        # SHORT_IDS_MAX more for encode_utf8_many): the state's, kept from call to call (its
        # pages are not taken again on the next pass), then copied out once; or, past
        # KEEP_BUFFER, the result itself (_output).
        big = self._output(state, room + SHORT_IDS_MAX)
        cdef int32_t* op = self._output_ids(state, big)
        ends = np.zeros(count + 1, dtype=np.int64)
        cdef int64_t[::1] ev = ends
        bad.resize(count)
        cdef EncodeScratch* st = &state.scratch
        if st.utf8.size() < transcoded:
            st.utf8.resize(transcoded)
        cdef Py_ssize_t run_end
        # The list holds every str, and strs are immutable: their characters stay put without the GIL.
        with nogil:
            st.expect_text(room)
            k = 0
            while k < count:
                if in_place[k]:  # a run of texts read in place: one pass of the tiled loop
                    run_end = k + 1
                    while run_end < count and in_place[run_end]:
                        run_end += 1
                    k = self._encode_run(<const uint8_t* const*>datas.data(), lengths.data(), k, run_end, pattern,
                                         st, op, ev, bad, &chunks, &misses)
                    continue
                # a lone surrogate (no UTF-8), or a str that keeps no UTF-8 of its own: made here
                size = utf8_from_str_data(kinds[k], datas[k], lengths[k], st.utf8.data())
                self._encode_alone(st.utf8.data(), size, k, pattern, st, op, ev, bad, &chunks, &misses)
                k += 1
            total = ev[count]
        return self._many_result(state, big, total, chunks, misses, ends, bad)

    cdef Py_ssize_t _encode_run(self, const uint8_t* const* texts, const size_t* lengths, Py_ssize_t k,
                                Py_ssize_t stop, int pattern, EncodeScratch* st, int32_t* op, int64_t[::1] ev,
                                vector[char]& bad, int64_t* chunks, int64_t* misses) except -1 nogil:
        """The UTF-8 texts ``texts[k][:lengths[k]]`` .. ``stop - 1``, their ids from ``op + ev[k]``
        on, ``ev[k + 1:stop + 1]`` set: runs of short texts by encode_utf8_many, a text of
        ALONE_BYTES or more alone by encode_utf8 (whose loop for one text stores less a chunk:
        64 KB documents of English ran 2-5% slower through encode_utf8_many). A text with a byte
        outside the vocabulary fails alone (``bad``, no ids): the texts of its block are encoded
        again one by one, up to it. Returns ``stop``."""
        cdef size_t done
        cdef int64_t got, base
        cdef int failed
        cdef Py_ssize_t i, run_end, alone = 0  # alone: texts still to encode one by one (a failing block's)
        while k < stop:
            if alone == 0 and lengths[k] < ALONE_BYTES:
                run_end = k + 1
                while run_end < stop and lengths[run_end] < ALONE_BYTES:
                    run_end += 1
                base = ev[k]
                got = self.enc.encode_utf8_many(texts + k, lengths + k, run_end - k, pattern, st[0], chunks, misses,
                                                op + base, &ev[k + 1], &done)
                for i in range(k + 1, k + 1 + <Py_ssize_t>done):
                    ev[i] += base
                k += done
                if got < 0:
                    alone = FUSED_BLOCK + 1  # (at most FUSED_BLOCK texts end in a block)
                continue
            failed = self._encode_alone(texts[k], <int64_t>lengths[k], k, pattern, st, op, ev, bad, chunks, misses)
            k += 1
            alone = 0 if failed or alone == 0 else alone - 1
        return k

    cdef int _encode_alone(self, const uint8_t* dp, int64_t size, Py_ssize_t k, int pattern, EncodeScratch* st,
                           int32_t* op, int64_t[::1] ev, vector[char]& bad, int64_t* chunks,
                           int64_t* misses) except -1 nogil:
        """Text ``k``, ``dp[0:size]`` (``size`` < 0: it has no UTF-8), alone: its ids from
        ``op + ev[k]`` on, ``ev[k + 1]`` set. 1 when it fails (``bad[k]``, no ids): no UTF-8, or a
        byte outside the vocabulary."""
        cdef int64_t got = 0
        if size > 0:
            got = self.enc.encode_utf8(dp, size, pattern, st[0], chunks, misses, op + ev[k])
        bad[k] = size < 0 or got < 0
        ev[k + 1] = ev[k] + (0 if bad[k] else got)
        return bad[k]

    def encode_text_many(self, const uint8_t[::1] data, const int64_t[::1] starts, const int64_t[::1] stops,
                         int pattern, EncodeState state, int32_t separator=-1, const uint8_t[::1] before=None):
        """``encode_text`` of every text ``data[starts[k]:stops[k]]`` in one call, the GIL
        released for all of them (the many short documents of ``encode_files``; the lines of
        a file read in place, their newlines left between them): ``(ids, ends, failed)`` as
        ``encode_str_many`` gives them; ``failed`` lists the texts that are not UTF-8 or hold
        a byte outside the vocabulary (left empty here). ``separator`` (an id, -1 for none):
        put before each text ``k`` whose ``before[k]`` is set, and counted with that text's
        ids (``ids[ends[k]]``; a failed text keeps it)."""
        cdef Py_ssize_t count = starts.shape[0], k
        cdef int64_t chunks = 0, misses = 0, widest = 0, s, e, written = 0, room = 0, shift = 0
        cdef vector[char] bad
        cdef vector[const uint8_t*] texts
        cdef vector[size_t] sizes
        cdef const uint8_t* dp = &data[0] if data.shape[0] > 0 else NULL
        if stops.shape[0] != count:
            raise ValueError(f"{count} starts but {stops.shape[0]} stops")
        if separator >= 0:
            if before is None or before.shape[0] != count:
                raise ValueError(f"a separator needs before= with one flag per text ({count})")
            for k in range(count):
                shift += before[k] != 0
        texts.resize(count)
        sizes.resize(count)
        for k in range(count):
            s = starts[k]
            e = stops[k]
            if s < 0 or e < s or e > data.shape[0]:
                raise ValueError(f"text {k} has bounds ({s}, {e}) out of order or outside the data")
            texts[k] = dp + s
            sizes[k] = <size_t>(e - s)
            widest = max(widest, e - s)
            room += e - s
        self._check_fused(pattern, state, widest)
        ends = np.zeros(count + 1, dtype=np.int64)
        cdef int64_t[::1] ev = ends
        bad.resize(count)
        cdef EncodeScratch* st = &state.scratch
        # All the ids go to one buffer, text after text (at most a text's bytes each), as in
        # encode_str_many: the state's, kept from call to call and moved into the result
        # (_buffer_ids), or past KEEP_BUFFER the result itself. (Gathered in a vector and
        # copied into a fresh array, calls of 4 MB of English ran at 356-377 MB/s, cl100k;
        # 413-428 this way, about the speed of encode_text.)
        big = self._output(state, room + SHORT_IDS_MAX + shift)  # (encode_utf8_many's room; the separators)
        cdef int32_t* op = self._output_ids(state, big)
        cdef Py_ssize_t run_end, run_stop
        cdef int64_t run_bytes
        cdef bint stopped_bad
        with nogil:
            st.expect_text(room)
            k = 0
            while k < count:
                # a run of UTF-8 texts, checked just before they are encoded (RUN_BYTES at most:
                # their bytes still in the caches) at once when they can be, else one by one up
                # to the first that is not UTF-8
                run_end = k
                run_bytes = 0
                while run_end < count and run_bytes < RUN_BYTES:
                    run_bytes += sizes[run_end]
                    run_end += 1
                stopped_bad = False
                if not utf8_valid_in_order(texts.data() + k, sizes.data() + k, <size_t>(run_end - k)):
                    run_stop = run_end
                    run_end = k
                    while run_end < run_stop:
                        if sizes[run_end] > 0 and not utf8_valid(texts[run_end], sizes[run_end]):
                            stopped_bad = True
                            break
                        run_end += 1
                k = self._encode_run(texts.data(), sizes.data(), k, run_end, pattern, st, op, ev, bad, &chunks,
                                     &misses)
                if stopped_bad:
                    bad[k] = 1
                    ev[k + 1] = ev[k]
                    k += 1
            # The separators, in one pass from the last text back: text k's ids move right by
            # ``shift``, the separators before and at it (where np.insert held the GIL: 110 us
            # for 4,096 lines, a third of their encoding's time).
            k = count - 1
            while shift > 0:
                memmove(op + ev[k] + shift, op + ev[k], (ev[k + 1] - ev[k]) * sizeof(int32_t))
                ev[k + 1] += shift
                if before[k]:
                    shift -= 1
                    op[ev[k] + shift] = separator
                k -= 1
            written = ev[count]
        return self._many_result(state, big, written, chunks, misses, ends, bad)

    cdef tuple _many_result(self, EncodeState state, object big, int64_t total, int64_t chunks, int64_t misses,
                            object ends, const vector[char]& bad):
        """encode_str_many's and encode_text_many's ``(ids, ends, failed)``: the ``total`` ids
        of the call's output (``big``, shrunk in place, or the state's buffer, moved out) and
        the texts that failed (``bad``); then _settle."""
        failed = [k for k in range(<Py_ssize_t>bad.size()) if bad[k]]
        if big is not None:
            _settle(state, chunks, misses)
            big.resize(total, refcheck=False)  # realloc: shrinks in place
            return big, ends, failed
        ids = _buffer_ids(state, total)   # (op is the state's buffer here)
        _settle(state, chunks, misses)   # (after the copy: it may free the state's buffer)
        return ids, ends, failed

    cdef int _take(self, EncodeState state) except -1:
        """Check that ``state`` may encode with this core: its caches (and its shared cache's)
        map chunk bytes to this core's ids. A state that encoded with another core has its own
        caches emptied (a state serves one thread, so nothing else reads them now); a shared
        cache that holds another core's ids is refused (other threads may be reading it)."""
        if state is None:
            raise TypeError("state must be an EncodeState")
        if state.scratch.poll.checking:
            raise RuntimeError("a signal handler encoded on the thread whose encode call it interrupted, with the "
                               "same tokenizer, whose buffers that call is using: encode in a handler with another "
                               "Tokenizer object, or leave the work to the code the handler returns to")
        if state.shared is not None and state.shared.core != self.number:
            if state.shared.core != 0:
                raise ValueError("this state's SharedCache holds another BPECore's ids: a shared cache "
                                 "serves one core")
            state.shared.core = self.number
        if state.core != self.number:
            if state.core != 0:
                state.scratch.clear_cache()
            state.core = self.number
        return 0

    cdef _check_fused(self, int pattern, EncodeState state, size_t n):
        if not pattern_tiles(pattern):
            raise ValueError(f"encode_text needs a pattern whose chunks tile the text, got id {pattern}")
        self._take(state)
        if n >= 0xFFFFFFFF:
            raise OverflowError("more than 4 GiB in one call; split the text")

    def id_list(self, const int32_t[::1] ids, EncodeState state):
        """``ids.tolist()``, faster: ``state`` (this thread's) makes the int of every vocabulary
        id once and every list shares them, so building a list allocates no int objects (once
        its lists have held as many ids as the vocabulary has: the first ones make their own,
        see ``_shared_ints``). Ids outside the vocabulary (special tokens) get fresh ints.

        >>> core = BPECore([b"a", b"b", b"ab"], np.array([0], np.int32), np.array([1], np.int32))
        >>> core.id_list(np.array([2, 0, 7], np.int32), EncodeState())
        [2, 0, 7]
        """
        cdef tuple ints = self._shared_ints(state, ids.shape[0])
        return self._list_of(&ids[0] if ids.shape[0] else NULL, ids.shape[0], ints)

    def id_lists(self, const int32_t[::1] ids, const int64_t[::1] ends, EncodeState state):
        """``[id_list(ids[ends[k]:ends[k + 1]]) for k ...]`` in one call."""
        cdef Py_ssize_t k, count = ends.shape[0] - 1
        if count <= 0:
            return []
        _check_ends(ends, ids.shape[0], "the ids")
        cdef tuple ints = self._shared_ints(state, ids.shape[0])
        cdef const int32_t* base = &ids[0] if ids.shape[0] else NULL
        cdef list out = PyList_New(count)
        for k in range(count):
            item = self._list_of(base + ends[k] if base != NULL else NULL, ends[k + 1] - ends[k], ints)
            Py_INCREF(item)
            PyList_SET_ITEM(out, k, <PyObject*>item)
        return out

    cdef tuple _shared_ints(self, EncodeState state, Py_ssize_t n):
        """The state's int of every id, for a list of ``n`` ids; None (the list makes its ints
        fresh) until the lists made so far and this one add up to as many ints as the
        vocabulary has ids. The tuple costs an int an id (0.5 ms for 32k ids, 2 ms for 128k),
        which a tokenizer's first encode of a short text paid in full; this way the lists a
        thread makes before the tuple, all together, make at most as many ints as it holds,
        and a busy thread shares its ints as before."""
        if state is None:
            raise TypeError("state must be an EncodeState")
        if state.ints is None or len(state.ints) < self.num_tokens:
            state.fresh_ints += n
            if state.fresh_ints < self.num_tokens:
                return None
            # range() makes a new object for every int above 256, hence per thread
            state.ints = tuple(range(self.num_tokens))
        return state.ints

    cdef list _list_of(self, const int32_t* ids, Py_ssize_t n, tuple ints):
        cdef Py_ssize_t i
        cdef int32_t v
        cdef PyObject* item
        cdef list out = PyList_New(n)
        for i in range(n):
            v = ids[i]
            if ints is not None and 0 <= v < self.num_tokens:   # (ints may be longer: a state used by a bigger core)
                item = PyTuple_GET_ITEM(ints, v)
                Py_INCREF(<object>item)
            else:
                item = <PyObject*>PyLong_FromLong(v)   # a new reference, which the list takes
            PyList_SET_ITEM(out, i, item)
        return out

    def encode_offsets(self, const uint8_t[::1] data, const int64_t[::1] offsets, EncodeState state):
        """int32 ids of contiguous chunks: chunk ``i`` is ``data[offsets[i]:offsets[i + 1]]``
        (``len(chunks) + 1`` offsets, what a scanner that tiles the text gives)."""
        if offsets.shape[0] == 0:
            return np.empty(0, dtype=np.int32)
        return self.encode_chunks(data, offsets[:offsets.shape[0] - 1], offsets[1:], state)

    def encode_bytes(self, const uint8_t[::1] data, EncodeState state):
        """int32 ids of ``data`` as a single chunk (no cache for long data)."""
        cdef int64_t[::1] bounds = np.array([0, data.shape[0]], dtype=np.int64)
        return self.encode_chunks(data, bounds[:1], bounds[1:], state)

    def encode_symbols(self, const int32_t[::1] symbols, const int64_t[::1] ends, EncodeState state,
                       bint with_ends=False):
        """int32 ids of words given as base symbol ids: word k is ``symbols[ends[k-1]:ends[k]]``;
        ``with_ends``: ``(ids, id_ends)``, the ids of word k being
        ``ids[id_ends[k]:id_ends[k + 1]]`` (int64, one more than the words).

        The same merge loop as every other entry, started from the caller's symbols instead of
        bytes: the path of character-level tokenizers (a symbol is a character's token) and of
        word markers. A negative symbol (a character outside the vocabulary) never merges and
        comes out as itself. The whole-chunk lookup does not apply here (it reads a chunk's
        bytes; the Tokenizer refuses it for characters and markers).
        """
        cdef Py_ssize_t n = symbols.shape[0], words = ends.shape[0], k
        cdef int64_t total = 0
        self._take(state)
        for k in range(n):
            if symbols[k] >= self.num_tokens:
                raise ValueError(f"symbol {symbols[k]} is not a token id")
        for k in range(words):
            if ends[k] < (ends[k - 1] if k else 0) or ends[k] > n:
                raise ValueError("ends must be non-decreasing and within the symbols")
        if (ends[words - 1] if words else 0) != n:
            raise ValueError("the last end must be len(symbols)")
        out = np.empty(n, dtype=np.int32)
        id_ends = np.zeros(words + 1, dtype=np.int64)
        if words == 0 or n == 0:
            return (out, id_ends) if with_ends else out
        cdef int32_t[::1] ov = out
        cdef int64_t[::1] ev = id_ends
        cdef int64_t* word_ends = &ev[1] if with_ends else NULL
        with nogil:
            total = self.enc.encode_symbols(&symbols[0], &ends[0], words, state.scratch, &ov[0], word_ends)
        state.scratch.trim(KEEP_BUFFER)
        return (out[:total], id_ends) if with_ends else out[:total]

    def encode_chars(self, str text, const int32_t[::1] char_ids, const int32_t[::1] byte_ids, EncodeState state,
                     bint as_list=False, int32_t unk_id=-1, bint fuse_unk=False, const int64_t[::1] frozen=None):
        """The ids of ``text`` as one chunk of characters (a character-level tokenizer that keeps
        a text whole: SentencePiece's layout), in one call: each character's symbol is
        ``char_ids[code point]`` (``-1 - code point`` for one without a token; 0x110000
        entries), then the merge loop. A character left without a token becomes the tokens
        that ``byte_ids`` (256 entries) gives its UTF-8 bytes (byte fallback). With an empty
        ``byte_ids`` it becomes ``unk_id`` instead (a run of such characters one, with
        ``fuse_unk``); when ``unk_id`` is -1 too, the answer is None (the caller's own path
        names the character).
        ``frozen``: ``(start, end, id)`` triples, flattened, of character spans in text order that
        are one symbol each, that id (a token no merge names: it never merges, as
        SentencePiece's user-defined pieces).
        int32 ids, or a list with ``as_list``. ``encode_symbols`` of the same symbols, then the
        fallback, without the arrays between them (a short text cost twice its BPE in them).
        """
        if char_ids.shape[0] != 0x110000:
            raise ValueError("char_ids needs one entry per code point (0x110000)")
        if byte_ids.shape[0] not in (0, 256):
            raise ValueError("byte_ids needs 256 entries, or none")
        self._take(state)
        PyUnicode_READY(text)
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i, j, k = 0, missing = 0, spelled = 0
        cdef Py_ssize_t spans = 0, f = 0, o = 0, at = 0
        if frozen is not None:
            if frozen.shape[0] % 3:
                raise ValueError("frozen needs (start, end, id) triples")
            spans = frozen.shape[0] // 3
            for f in range(spans):  # (in order, apart, inside the text, ids of tokens)
                if not (at <= frozen[3 * f] < frozen[3 * f + 1] <= n) or not 0 <= frozen[3 * f + 2] < self.num_tokens:
                    raise ValueError(f"frozen span {f} is not a span of the text after the one before, with a token id")
                at = frozen[3 * f + 1]
            f = 0
        cdef int kind = PyUnicode_KIND(text)
        cdef void* data = PyUnicode_DATA(text)
        cdef int64_t total = 0, end = n, width
        cdef uint32_t point
        cdef uint8_t spelling[4]
        cdef bint after_missing = False
        cdef vector[int32_t] symbols
        out = np.empty(n, dtype=np.int32)
        cdef int32_t[::1] ov = out, fv
        if n:
            symbols.resize(n)
            with nogil:
                i = 0
                while i < n:
                    if f < spans and i == frozen[3 * f]:
                        symbols[o] = <int32_t>frozen[3 * f + 2]
                        i = frozen[3 * f + 1]
                        f += 1
                    else:
                        symbols[o] = char_ids[PyUnicode_READ(kind, data, i)]
                        i += 1
                    o += 1
                end = o
                total = self.enc.encode_symbols(symbols.data(), &end, 1, state.scratch, &ov[0], NULL)
            state.scratch.trim(KEEP_BUFFER)
        for i in range(total):  # characters without a token, and (for byte fallback) their UTF-8 bytes
            if ov[i] < 0:
                missing += 1
                if byte_ids.shape[0]:
                    point = <uint32_t>(-1 - ov[i])
                    spelled += utf8_from_str_data(4, &point, 1, spelling, True)
        if missing and byte_ids.shape[0] == 0:
            if unk_id < 0:
                return None
            for i in range(total):  # (in place: the ids only shrink)
                if ov[i] >= 0:
                    ov[k] = ov[i]
                    k += 1
                    after_missing = False
                    continue
                if not (fuse_unk and after_missing):
                    ov[k] = unk_id
                    k += 1
                after_missing = True
            total = k
        elif missing:
            out = np.empty(total - missing + spelled, dtype=np.int32)
            fv = out
            for i in range(total):
                if ov[i] >= 0:
                    fv[k] = ov[i]
                    k += 1
                    continue
                # (a lone surrogate as surrogatepass spells it: 3 bytes)
                point = <uint32_t>(-1 - ov[i])
                width = utf8_from_str_data(4, &point, 1, spelling, True)
                for j in range(width):
                    fv[k + j] = byte_ids[spelling[j]]
                k += width
            ov, total = fv, k
        if as_list:
            return self._list_of(&ov[0] if total else NULL, total, self._shared_ints(state, total))
        return out[:total]

    @property
    def scan_max(self):
        """Chunks up to this many bytes are merged by the scan, longer ones by the heap."""
        return self.enc.scan_max

    @scan_max.setter
    def scan_max(self, int value):
        if not 0 <= value <= SCAN_MAX_CHUNK:
            raise ValueError(f"scan_max must be between 0 and {SCAN_MAX_CHUNK}")
        self.enc.scan_max = value

    @property
    def short_token_max(self):
        """Under the token rule, chunks up to this many bytes are merged from the ids of all
        their substrings, looked up at once (0: never; at most 15); under the pair rule too when
        the merges are the token rule's (``spans_for_pairs``)."""
        return self.enc.short_token_max

    @short_token_max.setter
    def short_token_max(self, int value):
        if not 0 <= value <= 15:
            raise ValueError("short_token_max must be between 0 and 15")
        self.enc.short_token_max = value

    @property
    def rank_queue_min(self):
        """Chunks of at least this many symbols are merged by the rank queue (long chunks),
        shorter ones above ``scan_max`` by the heap."""
        return self.enc.rank_queue_min

    @rank_queue_min.setter
    def rank_queue_min(self, int64_t value):
        if value < 0:
            raise ValueError("rank_queue_min must be at least 0")
        self.enc.rank_queue_min = value

    @property
    def rank_sort_budget(self):
        """The rank queue hands a chunk over to the heap once it has sorted more than this many
        times the positions it pushed (which bounds its cost at O(n log n)); 0 hands over at
        its first sort."""
        return self.enc.rank_sort_budget

    @rank_sort_budget.setter
    def rank_sort_budget(self, int64_t value):
        if value < 0:
            raise ValueError("rank_sort_budget must be at least 0")
        self.enc.rank_sort_budget = value

    @property
    def backtrack_min(self):
        """Chunks of at least this many bytes (and more than ``scan_max``) are encoded by
        backtracking over the vocabulary where the model allows it (see ``backtracking``) and
        its tables are built (see ``backtrack_budget``); 0 backtracks every chunk past the scan."""
        return self.enc.backtrack_min

    @backtrack_min.setter
    def backtrack_min(self, int64_t value):
        if value < 0:
            raise ValueError("backtrack_min must be at least 0")
        self.enc.backtrack_min = value

    @property
    def backtrack_budget(self):
        """Bytes of long chunks (``backtrack_min`` bytes or more) merged by the merge loops
        before the backtracking tables are built: about what building them costs, so that a
        text with a few long chunks does not pay for them. By default twice the bytes of the
        vocabulary's tokens; set 0 to build them on the first long chunk, -1 for the default."""
        return self.enc.backtrack_budget_bytes()

    @backtrack_budget.setter
    def backtrack_budget(self, int64_t value):
        if value < -1:
            raise ValueError("backtrack_budget must be at least -1 (-1: the default)")
        self.enc.backtrack_budget = value

    @property
    def backtrack_built(self):
        """Whether the backtracking tables are built (by long chunks or by ``backtracking()``)."""
        return self.enc.backtrack_built()

    def backtracking(self):
        """What the backtracking encoder of long chunks found about this model, building its
        tables if no long chunk did yet: a dict with ``usable`` (long chunks are backtracked;
        else the merge loops take them), ``non_monotone`` (tokens whose last merge does not
        rank above the merges that made its parts: each rules backtracking out), ``replay_repeats`` (the
        replay rule with a repeated pair: rules it out too), ``build_seconds``, ``memory`` (bytes
        of the tables), ``trie_nodes`` and ``fallbacks`` (long chunks the search gave up on, so
        that the merge loops took them: 0 for a usable model)."""
        cdef const Backtracker* bt
        with nogil:
            bt = &self.enc.backtrack_tables()
        return {"usable": bt.usable(), "non_monotone": bt.non_monotone, "replay_repeats": bt.repeats,
                "too_big": bt.too_big, "build_seconds": bt.build_seconds, "memory": bt.memory(),
                "trie_nodes": bt.trie_nodes(), "fallbacks": self.enc.backtrack_fallbacks()}

    @property
    def spans_for_pairs(self):
        """Whether this pair-rule core merges short chunks as the token rule does (its merges
        are every split of every short token, ranked in the order of the tokens' ids, as in
        files converted from tiktoken's ranks), declining the chunks where the two rules may
        differ (see bpe.h, ``use_spans_for_pairs``)."""
        return self.enc.spans_for_pairs()

    def whole_lookup_size(self):
        """How many tokens the whole-chunk lookup knows."""
        return self.enc.whole_lookup_size()


def derive_merges(list token_bytes):
    """The merges of a rank-only vocabulary (a tiktoken file), in rank order: int32 arrays
    ``(left, right, new)``. tiktoken's rule run on every token's bytes with only the tokens of
    lower rank; see derive_merges.h. Empty bytes mark unused ids; a token listed twice is a
    ValueError.

    >>> [a.tolist() for a in derive_merges([b"a", b"b", b"ab", b"abb"])]
    [[0, 2], [1, 1], [2, 3]]
    """
    cdef vector[string] tokens
    cdef vector[int32_t] left, right, made
    cdef bytes tb
    cdef int64_t repeated
    for tb in token_bytes:
        tokens.push_back(<string>tb)
    with nogil:
        repeated = c_derive_merges(tokens, left, right, made)
    if repeated >= 0:
        raise ValueError(f"token {repeated} ({token_bytes[repeated]!r}) repeats an earlier token")
    return _int32_array(left), _int32_array(right), _int32_array(made)


def two_piece_splits(list pieces, joinable):
    """Every way a piece is two pieces (a SentencePiece model's merges, before they are ranked
    by score): int32 arrays ``(made, left, right)``, for each piece of ``pieces`` (UTF-8 bytes)
    whose ``joinable`` is true, each cut at a character boundary into two joinable pieces, in id
    order and cuts left to right; see derive_merges.h. A joinable text listed twice is a
    ValueError.

    >>> [a.tolist() for a in two_piece_splits([b"a", b"b", b"ab", b"abb"], [1, 1, 1, 1])]
    [[2, 3], [0, 2], [1, 1]]
    """
    cdef vector[string_view] texts
    cdef vector[int32_t] made, left, right
    cdef int64_t repeated
    # (as one array: a loop over a NumPy array's items cost a 32k-piece model 1 ms)
    cdef const uint8_t[::1] flags = np.asarray(joinable, dtype=bool).view(np.uint8).reshape(-1)
    if flags.shape[0] != len(pieces):
        raise ValueError("joinable needs one entry per piece")
    cdef vector[uint8_t] can_join = vector[uint8_t](flags.shape[0])
    if flags.shape[0]:
        memcpy(can_join.data(), &flags[0], flags.shape[0])
    held = _byte_views(pieces, texts)
    with nogil:
        repeated = c_two_piece_splits(texts, can_join, made, left, right)
    if repeated >= 0:
        raise ValueError(f"piece {repeated} ({held[repeated]!r}) repeats an earlier piece")
    return _int32_array(made), _int32_array(left), _int32_array(right)


def first_repeat(list texts):
    """``(i, j)``: ``texts[i]`` (bytes) is the first that repeats an earlier one, ``texts[j]``
    the first of those; ``(-1, -1)`` when none does. One hash of each text (see derive_merges.h;
    :func:`fastbpe.reference.encode.first_repeat` specifies it).

    >>> first_repeat([b"a", b"b", b"a", b"b"]), first_repeat([b"a", b""])
    ((2, 0), (-1, -1))
    """
    cdef vector[string_view] views
    cdef int64_t repeated, first = -1
    held = _byte_views(texts, views)
    with nogil:
        repeated = c_first_repeat(views, &first)
    if repeated < 0:
        return -1, -1
    return repeated, first


def byte_lengths(list items):
    """int64 length of each item of ``items`` when every one is a bytes object (not a
    subclass), else None: in one C pass, where ``np.fromiter(map(len, ...))`` took 1.5 ms of
    a 32k vocabulary (numpy packs each Python int on its own), and it checks the types that a
    set of them took 1 ms to.

    >>> byte_lengths([b"ab", b"", b"c"]).tolist(), byte_lengths([b"a", bytearray(b"b")])
    ([2, 0, 1], None)
    """
    cdef Py_ssize_t k, count = len(items)
    cdef PyObject* item
    out = np.empty(count, dtype=np.int64)
    cdef int64_t[::1] ov = out
    for k in range(count):
        item = PyList_GET_ITEM(items, k)
        if type(<object>item) is not bytes:
            return None
        ov[k] = len(<object>item)
    return out


cdef _int32_array(const vector[int32_t]& v):
    out = np.empty(v.size(), dtype=np.int32)
    cdef int32_t[::1] ov = out
    if v.size():
        memcpy(&ov[0], v.data(), v.size() * sizeof(int32_t))
    return out


def str_sizes(list texts):
    """int64 character count of every text of ``texts``, checked to be strs: the sizes by which
    ``encode_batch`` cuts a batch into groups, in one C pass instead of a Python loop over the
    texts. A text that is not a str is a TypeError naming its index.

    >>> str_sizes(["ab", "", "\u00e9"]).tolist()
    [2, 0, 1]
    """
    cdef Py_ssize_t k, count = len(texts)
    cdef PyObject* text
    out = np.empty(count, dtype=np.int64)
    cdef int64_t[::1] ov = out
    for k in range(count):
        text = PyList_GET_ITEM(texts, k)
        if not isinstance(<object>text, str):
            raise TypeError(f"text {k} of the batch must be a str, got {type(<object>text).__name__}")
        ov[k] = len(<object>text)
    return out


cdef int _check_ends(const int64_t[::1] ends, Py_ssize_t size, str what) except -1:
    """ValueError unless ``ends`` (the cuts of ``size`` items: piece k is ``[ends[k], ends[k + 1])``)
    is non-decreasing from 0 or more up to ``size`` at most."""
    cdef Py_ssize_t k
    for k in range(ends.shape[0] - 1):
        if ends[k] < 0 or ends[k + 1] < ends[k] or ends[k + 1] > size:
            raise ValueError(f"ends must be non-decreasing and within {what}")
    return 0


def array_views(cnp.ndarray flat, const int64_t[::1] ends):
    """``[flat[ends[k]:ends[k + 1]] for k ...]`` for a one-dimensional C-contiguous array, made
    in one C loop: ``encode_batch``'s arrays of ids, one per text, all viewing the buffer of the
    batch (a Python loop of slices took about 250 ns a text, most of it parsing the index).

    >>> array_views(np.arange(5), np.array([0, 2, 2, 5]))
    [array([0, 1]), array([], dtype=int64), array([2, 3, 4])]
    """
    if cnp.PyArray_NDIM(flat) != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(flat) or not cnp.PyArray_ISNOTSWAPPED(flat) \
            or not cnp.PyArray_ISINTEGER(flat):
        raise ValueError("array_views needs a one-dimensional C-contiguous array of integers in native byte order")
    cdef bint read_only = not cnp.PyArray_ISWRITEABLE(flat)  # (then so is every view)
    cdef Py_ssize_t k, count = ends.shape[0] - 1
    if count <= 0:
        return []
    _check_ends(ends, cnp.PyArray_DIM(flat, 0), "the array")
    cdef int typenum = cnp.PyArray_TYPE(flat)
    cdef char* data = <char*>cnp.PyArray_DATA(flat)
    cdef Py_ssize_t itemsize = cnp.PyArray_ITEMSIZE(flat)
    cdef cnp.npy_intp n
    cdef list out = PyList_New(count)
    for k in range(count):
        n = ends[k + 1] - ends[k]
        view = cnp.PyArray_SimpleNewFromData(1, &n, typenum, data + ends[k] * itemsize)
        if read_only:
            cnp.PyArray_CLEARFLAGS(view, cnp.NPY_ARRAY_WRITEABLE)
        cnp.set_array_base(view, flat)  # (the view keeps the buffer alive, as a slice would)
        Py_INCREF(view)
        PyList_SET_ITEM(out, k, <PyObject*>view)
    return out


cdef class _IdStore:
    """A call's ids in the buffer moved out of its state (_buffer_ids), lent to NumPy as int32;
    the buffer goes back to the state with the last array that views it, for a later call to
    write into (EncodeScratch::give_back_out). Its room past the ids (the call's worst case,
    one id per byte) is address space only: pages never written are never taken (on huge
    pages, the rest of the one that holds the last ids is: under 2 MB)."""
    cdef IdBuffer ids
    cdef Py_ssize_t shape[1]
    cdef EncodeState state

    def __getbuffer__(self, Py_buffer* view, int flags):
        lend_vector(view, self, <void*>self.ids.data(), self.shape, sizeof(int32_t), b"i", flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass

    def __dealloc__(self):
        if self.state is not None:
            self.state.scratch.give_back_out(self.ids, self.shape[0] * sizeof(int32_t), KEEP_BUFFER)


cdef object _buffer_ids(EncodeState state, int64_t count):
    """The first ``count`` ids of the state's buffer as an int32 array of their own: from
    MOVE_IDS_MIN_BYTES up the buffer itself, moved out of the state (which is left an empty
    one, until the array gives it back); below, a copy, the buffer kept."""
    cdef EncodeScratch* st = &state.scratch
    cdef _IdStore store
    cdef int32_t[::1] ov
    if <size_t>count * sizeof(int32_t) >= MOVE_IDS_MIN_BYTES:
        store = _IdStore.__new__(_IdStore)
        store.ids.swap(st.out)
        store.shape[0] = count
        store.state = state
        return np.frombuffer(store, dtype=np.int32)
    out = np.empty(count, dtype=np.int32)
    ov = out
    if count > 0:
        with nogil:
            memcpy(&ov[0], st.out.data(), count * sizeof(int32_t))
    return out


cdef const char* _utf8_in_place(object text, Py_ssize_t* size):
    """The UTF-8 of the str ``text`` read in place, its length in ``*size``: an ASCII str's
    characters, or the UTF-8 kept inside a str (made at the first call, under the GIL: str_utf8)
    while its bound passes no KEEP_UTF8_IN_STR; else NULL (a bigger str, or a lone surrogate,
    whose error is cleared: the scratch transcoding finds it again)."""
    PyUnicode_READY(text)
    cdef int kind = PyUnicode_KIND(text)
    cdef size_t n = PyUnicode_GET_LENGTH(text)
    if PyUnicode_IS_ASCII(text):
        size[0] = n
        return <const char*>PyUnicode_DATA(text)
    if n * utf8_max_per_unit(kind) > KEEP_UTF8_IN_STR:
        return NULL
    cdef const char* u = str_utf8(text, size)
    if u == NULL:
        PyErr_Clear()
    return u


cdef uint32_t ANY_CHAR = 0xFFFFFFFF   # no character (they end at 0x10FFFF)


cdef bint _utf8_holds_a_name(const char* u, Py_ssize_t size, const vector[vector[string]]& groups,
                             const vector[uint64_t]& seconds):
    """Whether one of the names (UTF-8, grouped by first byte, none empty) occurs in u[0:size]:
    memchr finds each group's first byte, then the names whose second byte follows are
    compared (UTF-8 is self-synchronizing: a name's bytes occur only where its characters do).
    ``seconds[4 * g:4 * g + 4]``: the bits of group g's second bytes (all of them when the group
    has a name of one byte), so that most hits are passed over with one test."""
    cdef const char* hit
    cdef const char* end = u + size
    cdef size_t g, j, left
    cdef uint8_t b
    for g in range(groups.size()):
        hit = <const char*>memchr(u, groups[g][0][0], size)
        while hit != NULL:
            left = end - hit
            b = <uint8_t>hit[1] if left > 1 else 0
            if left > 1 and not (seconds[4 * g + (b >> 6)] >> (b & 63)) & 1:
                hit = <const char*>memchr(hit + 1, groups[g][0][0], left - 1)
                continue
            for j in range(groups[g].size()):
                if groups[g][j].size() <= left and (groups[g][j].size() == 1 or groups[g][j][1] == hit[1]) \
                        and memcmp(hit, groups[g][j].data(), groups[g][j].size()) == 0:
                    return True
            hit = <const char*>memchr(hit + 1, groups[g][0][0], left - 1) if left > 1 else NULL
    return False


cdef class NameFinder:
    """Finds which texts hold at least one of the strs ``names`` (the non-empty ones; special
    tokens' names, which most texts hold none of), in place: in a text's UTF-8 when it is read
    in place (``_utf8_in_place``: made here for encode_batch to read next) by memchr of each
    first byte of a name's UTF-8; else, for each distinct first character of a name, its
    occurrences by ``PyUnicode_FindChar`` (a memchr-speed search on a 1-byte str). Either way
    each occurrence is followed by a comparison of the names that start with it (a regex search
    of each text that holds a name's first character scanned it more slowly). The names are
    grouped once, here: a call on one short text costs little more than the call.

    >>> finder = NameFinder(["<s>", "<t>", ""])
    >>> finder.holding(["a<s>", "<s", "", "x<t><s>", "<<s>"]).tolist(), finder.holds("<<t>"), finder.holds("<")
    ([0, 3, 4], True, False)
    """
    cdef list groups            # (first character, the names starting with it)
    cdef vector[Py_UCS4] firsts
    # Each name's second character (ANY for a name of one): a text's first character is
    # compared with the names only where the next one matches (Llama 3's 256 names all start
    # with "<|": a "<" in a text cost 256 calls to PyUnicode_Tailmatch).
    cdef vector[vector[uint32_t]] seconds
    # the names' UTF-8 grouped by first byte; none when a name has a lone surrogate (no UTF-8)
    cdef vector[vector[string]] by_byte
    cdef vector[uint64_t] second_bits

    def __cinit__(self, names):
        cdef dict starting = {}   # first character -> the names starting with it
        cdef dict byte_groups = {}
        cdef bint bytes_ok = True
        cdef str name
        cdef bytes one
        cdef Py_ssize_t g, j
        unique = sorted(set(names))
        for name in unique:
            if len(name):
                starting.setdefault(name[0], []).append(name)
        self.groups = list(starting.items())
        self.firsts = [ord(group[0]) for group in self.groups]
        self.seconds = [[ord(name[1]) if len(name) > 1 else ANY_CHAR for name in group[1]] for group in self.groups]
        for name in unique:
            try:
                if len(name):
                    byte_groups.setdefault(name.encode("utf-8")[0], []).append(name.encode("utf-8"))
            except UnicodeEncodeError:
                bytes_ok = False
        if bytes_ok:
            self.by_byte = list(byte_groups.values())
            self.second_bits.resize(4 * self.by_byte.size())
            for g, group in enumerate(byte_groups.values()):
                for one in group:
                    for j in (range(256) if len(one) == 1 else (one[1],)):
                        self.second_bits[4 * g + (j >> 6)] |= (<uint64_t>1) << (j & 63)

    cdef bint _holds(self, object text) except -1:
        cdef Py_ssize_t g, j, pos, size, utf8_size
        cdef const char* u = _utf8_in_place(text, &utf8_size) if self.by_byte.size() > 0 else NULL
        if u != NULL:
            return _utf8_holds_a_name(u, utf8_size, self.by_byte, self.second_bits)
        PyUnicode_READY(text)
        size = len(text)
        cdef int kind = PyUnicode_KIND(text)
        cdef void* data = PyUnicode_DATA(text)
        cdef uint32_t after
        for g in range(<Py_ssize_t>self.firsts.size()):
            pos = PyUnicode_FindChar(text, self.firsts[g], 0, size, 1)
            while pos >= 0:
                after = PyUnicode_READ(kind, data, pos + 1) if pos + 1 < size else ANY_CHAR
                for j in range(<Py_ssize_t>self.seconds[g].size()):
                    if self.seconds[g][j] != ANY_CHAR and self.seconds[g][j] != after:
                        continue
                    if PyUnicode_Tailmatch(text, self.groups[g][1][j], pos, size, -1):
                        return True
                pos = PyUnicode_FindChar(text, self.firsts[g], pos + 1, size, 1)
            if pos == -2:
                raise MemoryError()
        return False

    def holds(self, text):
        """Whether the str ``text`` holds one of the names."""
        if not isinstance(text, str):   # (a str subclass is fine: typing the argument str is not)
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self._holds(text)

    def holding(self, list texts not None, Py_ssize_t start=0, Py_ssize_t stop=-1):
        """int64 indices of the strs of ``texts[start:stop]`` (stop -1: to the end) that hold
        one of the names, counted from the list's start (TypeError at the first text that is
        no str). (A range rather than a slice: see ``encode_str_many``.)"""
        if stop == -1:
            stop = len(texts)
        if not 0 <= start <= stop <= len(texts):
            raise ValueError(f"texts [{start}:{stop}] outside a list of {len(texts)}")
        cdef Py_ssize_t k, held = 0
        cdef PyObject* text
        out = np.empty(stop - start, dtype=np.int64)
        cdef int64_t[::1] ov = out
        for k in range(start, stop):
            text = PyList_GET_ITEM(texts, k)
            if not isinstance(<object>text, str):
                raise TypeError(f"text {k} must be a str, got {type(<object>text).__name__}")
            if self._holds(<object>text):
                ov[held] = k
                held += 1
        return out[:held]


def is_utf8(const uint8_t[::1] data):
    """Whether ``data`` is valid UTF-8 (utf8.h's check, without the GIL: no str is made).

    >>> is_utf8(b"caf\\xc3\\xa9"), is_utf8(b"caf\\xe9"), is_utf8(b"")
    (True, False, True)
    """
    cdef size_t n = data.shape[0]
    cdef bint valid = True
    if n:
        with nogil:
            valid = utf8_valid(&data[0], n)
    return valid


def utf8_positions(str text, const int64_t[::1] char_positions):
    """UTF-8 byte offsets of ascending character positions of ``text`` (one pass over the
    string's code points; a lone surrogate counts 3 bytes, as ``surrogatepass`` writes it)."""
    cdef Py_ssize_t n = len(text), m = char_positions.shape[0], i = 0, c = 0
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef int64_t offset = 0, target
    cdef Py_UCS4 cp
    out = np.empty(m, dtype=np.int64)
    cdef int64_t[::1] ov = out
    for c in range(m):
        if char_positions[c] < 0 or char_positions[c] > n or (c and char_positions[c] < char_positions[c - 1]):
            raise ValueError("char_positions must be ascending positions inside the text")
    c = 0
    with nogil:
        while c < m:
            target = char_positions[c]
            while i < target:
                cp = PyUnicode_READ(kind, data, i)
                offset += 1 if cp < 0x80 else (2 if cp < 0x800 else (3 if cp < 0x10000 else 4))
                i += 1
            ov[c] = offset
            c += 1
    return out


def lookup_tokens(list token_bytes, const uint8_t[::1] blob, const int64_t[::1] offsets):
    """int32 ids of the byte strings ``blob[offsets[i]:offsets[i + 1]]`` in the vocabulary
    ``token_bytes`` (``-1`` where none is a token; a repeated token: ``ValueError``). Turns
    a file's merges, given as token texts, into ids without a Python dict.

    >>> lookup_tokens([b"a", b"b", b"ab"], np.frombuffer(b"abxab", np.uint8), np.array([0, 1, 3, 5])).tolist()
    [0, -1, 2]
    """
    cdef BpeEncoder enc
    cdef vector[string_view] tokens
    cdef int64_t first = -1, bad = -1
    cdef Py_ssize_t i, m = offsets.shape[0] - 1 if offsets.shape[0] else 0
    for i in range(m):
        if offsets[i] > offsets[i + 1] or offsets[i] < 0 or offsets[i + 1] > blob.shape[0]:
            raise ValueError("offsets must ascend inside the blob")
    held = _byte_views(token_bytes, tokens)
    out = np.empty(m, dtype=np.int32)
    cdef int32_t[::1] ov = out
    cdef const uint8_t* base = &blob[0] if blob.shape[0] else NULL
    with nogil:
        bad = enc.set_tokens(tokens, &first)
        if bad < 0 and m > 0:
            enc.token_ids(base, &offsets[0], m, &ov[0])
    if bad >= 0:
        raise ValueError(f"token {bad} ({held[bad]!r}) duplicates token {first}")
    return out


cdef extern from "bpe_json.h" namespace "fbpj" nogil:
    cdef cppclass ModelScan:
        size_t vocab_begin, vocab_end, merges_begin, merges_end
        vector[uint8_t] vocab_blob, merge_blob
        vector[int64_t] vocab_ends, ids, merge_ends, merge_ids
        int merge_width
    bint scan_bpe_model(const uint8_t* p, size_t n, const int16_t* byte_of, size_t table_size,
                        ModelScan& out) except +
    bint scan_native_file(const uint8_t* p, size_t n, const int16_t* byte_of, size_t table_size,
                          ModelScan& out) except +
    bint scan_gpt2_pair(const uint8_t* vocab, size_t vocab_size, const uint8_t* merges, size_t merges_size,
                        const int16_t* byte_of, size_t table_size, ModelScan& out) except +


cdef list _split_blob(const vector[uint8_t]& blob, const vector[int64_t]& ends):
    """The bytes ``blob[ends[k-1]:ends[k]]`` of every k, as a list."""
    cdef const char* base = <const char*>blob.data()
    cdef Py_ssize_t k, count = ends.size()
    cdef int64_t start = 0
    out = PyList_New(count)
    for k in range(count):
        item = PyBytes_FromStringAndSize(base + start, ends[k] - start)
        Py_INCREF(item)
        PyList_SET_ITEM(out, k, <PyObject*>item)
        start = ends[k]
    return out


def scan_bpe_json(const uint8_t[::1] data, const int16_t[::1] byte_of):
    """The vocabulary and merges of a plain byte-level BPE ``tokenizer.json``, read from the
    file's bytes (see bpe_json.h), or None when the file is not one this reader takes.

    ``byte_of``: the byte each code point stands for in byte-level text (-1: none); None for a
    character-level vocabulary, each text its UTF-8. Returns
    ``(spans, tokens, ids, merge_blob, merge_offsets)``: the byte ranges ``(vocab_begin,
    vocab_end, merges_begin, merges_end)`` of the two values in ``data``, every vocabulary
    key's token bytes in file order with its int64 id, and the merges' parts (two per merge)
    as ``merge_blob[merge_offsets[j]:merge_offsets[j + 1]]``.

    >>> table = np.full(300, -1, np.int16); table[ord("a")] = 97; table[ord("b")] = 98
    >>> spans, tokens, ids, blob, offsets = scan_bpe_json(b'{"model": {"vocab": {"a": 0, "b": 1}, "merges": ["a b"]}}', table)
    >>> tokens, ids.tolist(), blob.tobytes(), offsets.tolist()
    ([b'a', b'b'], [0, 1], b'ab', [0, 1, 2])
    """
    cdef ModelScan found
    if not _scan_json(data, byte_of, False, found):
        return None
    return (_spans(found),) + _scanned(found)


def scan_gpt2_files(const uint8_t[::1] vocab, const uint8_t[::1] merges, const int16_t[::1] byte_of):
    """GPT-2's ``encoder.json`` (``vocab``: its bytes) and ``vocab.bpe`` (``merges``: its bytes
    after the ``#version`` line), read as :func:`scan_bpe_json` reads a model's vocabulary and
    merges; or None when they are not plain byte-level files (see bpe_json.h). Returns
    ``(tokens, ids, merge_blob, merge_offsets)`` as that function does.

    >>> table = np.full(300, -1, np.int16); table[ord("a")] = 97; table[ord("b")] = 98
    >>> tokens, ids, blob, offsets = scan_gpt2_files(b'{"a": 0, "b": 1, "ab": 2}', b"a b\\n", table)
    >>> tokens, ids.tolist(), blob.tobytes(), offsets.tolist()
    ([b'a', b'b', b'ab'], [0, 1, 2], b'ab', [0, 1, 2])
    """
    cdef ModelScan found
    cdef bint ok = False
    cdef const uint8_t* mp = &merges[0] if merges.shape[0] else NULL
    if vocab.shape[0] == 0 or byte_of.shape[0] == 0:
        return None
    with nogil:
        ok = scan_gpt2_pair(&vocab[0], vocab.shape[0], mp, merges.shape[0], &byte_of[0], <size_t>byte_of.shape[0],
                            found)
    return _scanned(found) if ok else None


def scan_native_json(const uint8_t[::1] data, const int16_t[::1] byte_of):
    """The ``vocab`` and ``merges`` of a fastbpe file of byte-level tokens, read from the file's
    bytes (see bpe_json.h), or None when it is not one this reader takes. Returns ``(spans,
    tokens, merges)``: the byte ranges ``(vocab_begin, vocab_end, merges_begin, merges_end)``
    of the two values in ``data``, every vocab entry's token bytes, and the merges as an int64
    array of two or three columns.

    >>> table = np.full(300, -1, np.int16); table[ord("a")] = 97; table[ord("b")] = 98
    >>> spans, tokens, merges = scan_native_json(b'{"vocab": ["a", "b", "ab"], "merges": [[0, 1]]}', table)
    >>> tokens, merges.tolist()
    ([b'a', b'b', b'ab'], [[0, 1]])
    """
    cdef ModelScan found
    if not _scan_json(data, byte_of, True, found):
        return None
    merges = _int64_array(found.merge_ids, 0).reshape(-1, found.merge_width if found.merge_width else 2)
    return _spans(found), _split_blob(found.vocab_blob, found.vocab_ends), merges


cdef int _scan_json(const uint8_t[::1] data, const int16_t[::1] byte_of, bint native, ModelScan& found) except -1:
    """bpe_json.h's scan of a ``tokenizer.json`` model (``native``: of a fastbpe file) into
    ``found``, the GIL released: 1 when the scanner takes the file, 0 when it does not (or
    there is nothing to scan)."""
    cdef size_t n = data.shape[0]
    cdef bint ok
    cdef const int16_t* table = NULL  # (none: characters, kept as their UTF-8)
    cdef size_t table_size = 0
    if byte_of is not None:
        if byte_of.shape[0] == 0:
            return 0
        table, table_size = &byte_of[0], byte_of.shape[0]
    if n == 0:
        return 0
    with nogil:
        if native:
            ok = scan_native_file(&data[0], n, table, table_size, found)
        else:
            ok = scan_bpe_model(&data[0], n, table, table_size, found)
    return ok


cdef tuple _spans(const ModelScan& found):
    """The byte ranges ``(vocab_begin, vocab_end, merges_begin, merges_end)`` a scan found."""
    return (found.vocab_begin, found.vocab_end, found.merges_begin, found.merges_end)


cdef object _int64_array(const vector[int64_t]& values, Py_ssize_t zeros):
    """An int64 array of ``zeros`` zeros, then ``values``."""
    out = np.zeros(values.size() + zeros, dtype=np.int64)
    cdef int64_t[::1] ov = out
    if values.size():
        memcpy(&ov[zeros], values.data(), values.size() * sizeof(int64_t))
    return out


cdef tuple _scanned(const ModelScan& found):
    """A scan's ``(tokens, ids, merge_blob, merge_offsets)`` (see scan_bpe_json)."""
    blob = np.empty(found.merge_blob.size(), dtype=np.uint8)
    cdef uint8_t[::1] bv = blob
    if found.merge_blob.size():
        memcpy(&bv[0], found.merge_blob.data(), found.merge_blob.size())
    return (_split_blob(found.vocab_blob, found.vocab_ends), _int64_array(found.ids, 0), blob,
            _int64_array(found.merge_ends, 1))  # (offsets: a 0 before the ends)


cdef extern from "rank_file.h" namespace "fbpt" nogil:
    int64_t parse_rank_lines(const uint8_t* p, size_t n, vector[uint8_t]& blob, vector[int64_t]& ends,
                             vector[int64_t]& ranks) except +


def read_rank_lines(const uint8_t[::1] data):
    """Tokens (a list of bytes) and int64 ranks of a well-formed ``.tiktoken`` file's bytes, or
    None when it is not one (see rank_file.h).

    >>> read_rank_lines(b"YQ== 0\\nYmM= 1\\n")
    ([b'a', b'bc'], array([0, 1]))
    """
    cdef vector[uint8_t] blob
    cdef vector[int64_t] ends, ranks
    cdef int64_t count = 0
    cdef size_t n = data.shape[0]
    if n == 0:
        return None
    with nogil:
        count = parse_rank_lines(&data[0], n, blob, ends, ranks)
    if count < 0:
        return None
    tokens = _split_blob(blob, ends)
    out = np.empty(count, dtype=np.int64)
    cdef int64_t[::1] ov = out
    if count:
        memcpy(&ov[0], ranks.data(), count * sizeof(int64_t))
    return tokens, out


cdef extern from "model_proto.h" namespace "fbpt" nogil:
    cdef cppclass ModelPieces:
        vector[uint8_t] blob
        vector[int64_t] ends, specs
        vector[double] scores
        vector[uint64_t] kinds
    int64_t parse_model_pieces(const uint8_t* p, size_t n, ModelPieces& out) except +


def read_model_pieces(const uint8_t[::1] data):
    """The pieces of a SentencePiece ``.model`` file's bytes, read in one compiled pass (see
    model_proto.h): ``(texts, scores, kinds, specs)``, each piece's UTF-8 text (a list of bytes),
    float64 score and uint64 type in id order, and the ``(field number, begin, end)`` of each
    trainer or normalizer spec in ``data``; or None where the protobuf is damaged (the Python
    reader then says how).

    >>> read_model_pieces(b"\\x0a\\x08\\x0a\\x01a\\x15\\x00\\x00\\x80\\xbf\\x12\\x02\\x18\\x02")
    ([b'a'], array([-1.]), array([1], dtype=uint64), [(2, 12, 14)])
    """
    cdef ModelPieces found
    cdef int64_t count = 0
    cdef size_t n = data.shape[0]
    if n:
        with nogil:
            count = parse_model_pieces(&data[0], n, found)
    if count < 0:
        return None
    scores = np.empty(count, dtype=np.float64)
    kinds = np.empty(count, dtype=np.uint64)
    cdef double[::1] sv = scores
    cdef uint64_t[::1] kv = kinds
    if count:
        memcpy(&sv[0], found.scores.data(), count * sizeof(double))
        memcpy(&kv[0], found.kinds.data(), count * sizeof(uint64_t))
    specs = [(found.specs[k], found.specs[k + 1], found.specs[k + 2]) for k in range(0, found.specs.size(), 3)]
    return _split_blob(found.blob, found.ends), scores, kinds, specs


# What a ByteTable knows of a slot beyond its bytes (``kinds``: one uint8 of these flags a slot).
cdef enum:
    KIND_EMPTY = 1    # stands for no bytes (a control piece), where an empty slot is otherwise no token
    KIND_BYTE = 2     # a byte-fallback token: a run of them is decoded apart from the tokens around it
    KIND_MARKED = 4   # its text begins with a space that stands for the space marker
    KIND_ALONE = 8    # its text is that space alone
SLOT_KINDS = {"empty": KIND_EMPTY, "byte": KIND_BYTE, "marked": KIND_MARKED, "alone": KIND_ALONE}

# What a ByteTable drops from the start of the bytes it gathers (``leading``), by the values of
# ``Markers.dummy_prefix``: the space marker put before the text, taken back.
cdef enum:
    LEAD_NONE = 0     # nothing
    LEAD_STRIP = 1    # the first byte, when a space (tokenizers' Strip decoder, on the whole text)
    LEAD_PIECE = 2    # the space of the first piece with text, when it is a marked one (SentencePiece)
    LEAD_PIECES = 3   # that, and the space of each piece of the marker alone before it
    LEAD_TOKEN = 4    # every marker of the first token (tokenizers' Metaspace decoder): its slot in ``first``
LEADING_RULES = {False: LEAD_NONE, True: LEAD_STRIP, "piece": LEAD_PIECE, "pieces": LEAD_PIECES,
                 "token": LEAD_TOKEN}


cdef inline int64_t _gather_size(const int64_t* offsets, const uint8_t* kinds, int64_t slots,
                                 int64_t v) noexcept nogil:
    """The byte length of id ``v``'s slot, or -1 when ``v`` has none (outside, or empty and
    not KIND_EMPTY; ``kinds`` may be NULL)."""
    if v < 0 or v >= slots:
        return -1
    cdef int64_t size = offsets[v + 1] - offsets[v]
    if size > 0:
        return size
    return 0 if kinds != NULL and kinds[v] & KIND_EMPTY else -1


cdef Py_ssize_t _check_array(const int64_t* offsets, const uint8_t* kinds, int64_t slots, const int64_t* ids,
                             Py_ssize_t n, int32_t* checked, int64_t* total, int* empties) noexcept nogil:
    """An array's ids into ``checked``, their bytes added up in ``total`` and their empty
    slots counted in ``empties``: -1, or the index of the first id with no slot."""
    cdef Py_ssize_t i
    cdef int64_t size
    for i in range(n):
        size = _gather_size(offsets, kinds, slots, ids[i])
        if size < 0:
            return i
        empties[0] += size == 0
        total[0] += size
        checked[i] = <int32_t>ids[i]
    return -1


cdef int64_t _leading(const uint8_t* flat, const int64_t* offsets, const uint8_t* kinds, const int32_t* ids,
                      Py_ssize_t n, int rule) noexcept nogil:
    """How many bytes ``rule`` (LEAD_*) drops from the start of the gathered bytes of ``ids``:
    LEAD_STRIP the first when it is a space; the piece rules one (the space that stands for
    the marker) for each piece counted. They pass over pieces with no text (KIND_EMPTY), stop
    at a piece that is not KIND_MARKED, and after the first marked one, except that
    LEAD_PIECES goes on after one that is the marker alone (KIND_ALONE). Those dropped bytes
    are the first ones: every piece before the last counted one is empty or one space."""
    cdef Py_ssize_t i
    cdef int64_t count = 0, size
    cdef uint8_t kind
    for i in range(n):
        size = offsets[ids[i] + 1] - offsets[ids[i]]
        if rule == LEAD_STRIP:
            if size:
                return flat[offsets[ids[i]]] == 32
            continue
        kind = kinds[ids[i]]
        if kind & KIND_EMPTY:
            continue
        if not kind & KIND_MARKED:
            break
        count += 1
        if rule == LEAD_PIECE or not kind & KIND_ALONE:
            break
    return count


cdef bint _byte_runs_joined(const uint8_t* kinds, const int32_t* ids, Py_ssize_t n) noexcept nogil:
    """Whether two KIND_BYTE slots of ``ids`` have only KIND_EMPTY ones between them: their
    bytes meet in the gathered bytes, where SentencePiece decodes each run on its own."""
    cdef Py_ssize_t i
    cdef bint after_byte = False, gap = False
    cdef uint8_t kind
    for i in range(n):
        kind = kinds[ids[i]]
        if kind & KIND_BYTE:
            if gap:
                return True
            after_byte = True
        elif kind & KIND_EMPTY:
            gap = after_byte
        else:
            after_byte = gap = False
    return False


cdef _checked_offsets(const uint8_t[::1] flat, offsets):
    """``offsets`` checked against ``flat``, as a read-only copy of its own, which no caller
    can change afterwards (the caller's array, changed, sent gather past the bytes)."""
    kept = np.array(offsets, dtype=np.int64, copy=True, order="C")
    kept.flags.writeable = False
    cdef const int64_t[::1] ov = kept
    cdef Py_ssize_t i, slots = ov.shape[0] - 1
    if slots < 0 or (slots > 0 and (ov[0] < 0 or ov[slots] > flat.shape[0])):
        raise ValueError("offsets must hold one more entry than the table and lie inside flat")
    for i in range(slots):
        if ov[i + 1] < ov[i]:
            raise ValueError("offsets must not decrease")
    return kept


# Lists of ids up to this long are checked into a stack array and gathered holding the GIL
# (releasing it costs more than copying their bytes).
cdef enum:
    SHORT_GATHER = 64


cdef class ByteTable:
    """Every id's bytes in one flat buffer: id ``i`` stands for ``flat[offsets[i]:offsets[i + 1]]``
    (an empty slot: no bytes known for it, unless its ``kinds`` flags say KIND_EMPTY, standing
    for none). ``kinds`` (``SLOT_KINDS``, one uint8 a slot, or None) and ``leading``
    (``LEADING_RULES``) are what decoding needs beyond the bytes: the space markers to drop at
    the start, and the runs of byte-fallback tokens; ``first``, ``(flat, offsets)`` of a second
    table, the one the first id is gathered from under LEAD_TOKEN. The buffers are taken once,
    here: taking them at each call (typed memoryviews) cost more than gathering a few ids (a
    streaming decoder decodes a handful of ids per call).

    >>> ByteTable(np.frombuffer(b"abc", dtype=np.uint8), np.array([0, 1, 3, 3])).gather([1, 0, 1])
    b'bcabc'
    >>> table = ByteTable(np.frombuffer(b"abc", dtype=np.uint8), np.array([0, 1, 3, 3]), np.array([0, 0, 1], np.uint8))
    >>> table.gather([2, 0, 2]), table.gather([0, 3])
    (b'a', 1)
    >>> spaced = ByteTable(np.frombuffer(b" a b", dtype=np.uint8), np.array([0, 1, 2, 4]),
    ...                    np.array([4 | 8, 0, 4], np.uint8), LEADING_RULES["pieces"])
    >>> spaced.gather([0, 0, 2, 0]), spaced.gather([1, 0, 2])
    (b'b ', b'a  b')
    """
    cdef const uint8_t[::1] flat, first_flat
    cdef const int64_t[::1] offsets, first_offsets
    cdef const uint8_t[::1] kinds
    cdef const uint8_t* fp
    cdef const int64_t* op
    cdef const uint8_t* kp
    cdef const uint8_t* ffp
    cdef const int64_t* fop
    cdef Py_ssize_t slots
    cdef int leading
    cdef bint byte_runs   # (KIND_BYTE and KIND_EMPTY slots both: byte runs can meet)

    def __cinit__(self, const uint8_t[::1] flat, offsets, kinds=None, int leading=LEAD_NONE, first=None):
        cdef const int64_t[::1] ov = _checked_offsets(flat, offsets)
        self.slots = ov.shape[0] - 1
        if leading not in (LEAD_NONE, LEAD_STRIP, LEAD_PIECE, LEAD_PIECES, LEAD_TOKEN):
            raise ValueError(f"leading must be one of LEADING_RULES' values, got {leading}")
        if kinds is None and leading in (LEAD_PIECE, LEAD_PIECES):
            raise ValueError("the piece rules read the slots' kinds")
        if (first is not None) != (leading == LEAD_TOKEN):
            raise ValueError("the first token's table goes with the leading rule LEAD_TOKEN, and only with it")
        self.flat, self.offsets, self.leading = flat, ov, leading
        self.fp = &flat[0] if flat.shape[0] > 0 else NULL
        self.op = &ov[0]
        if first is not None:
            first_flat, first_offsets = first  # (a tuple unpacked checks its length; an index would not)
            if first_flat is None:
                raise TypeError("first must be (flat, offsets), two arrays")
            self.first_flat = first_flat
            self.first_offsets = _checked_offsets(self.first_flat, first_offsets)
            if self.first_offsets.shape[0] != ov.shape[0]:
                raise ValueError("the first token's table must have as many slots as the table")
            self.ffp = &self.first_flat[0] if self.first_flat.shape[0] > 0 else NULL
            self.fop = &self.first_offsets[0]
        self.kp = NULL
        if kinds is not None:
            flags = np.array(kinds, dtype=np.uint8, copy=True, order="C")
            if flags.shape != (self.slots,):
                raise ValueError("kinds must hold one flag a slot")
            flags.flags.writeable = False
            self.kinds = flags
            self.kp = &self.kinds[0] if self.slots > 0 else NULL
            self.byte_runs = bool((flags & KIND_BYTE).any() and (flags & KIND_EMPTY).any())

    def gather(self, ids):
        """The concatenated bytes of ``ids``, a list (of exact ints) or an int64 array, less
        what the ``leading`` rule drops from their start. Returns the bytes; or, when some id
        cannot be gathered (not an exact int, outside the table, or an empty slot not
        KIND_EMPTY), the index of the first such id as an int, so that the caller can explain
        it or handle it (the table leaves out what it does not hold); or None when two runs of
        KIND_BYTE slots have only KIND_EMPTY ones between them, whose bytes would meet (the
        caller decodes the runs apart). Under LEAD_TOKEN the first id's bytes are its slot of
        ``first``. Every id is checked before any byte is copied."""
        cdef Py_ssize_t n, i, after = 0
        cdef int64_t total = 0, size, v, drop = 0, head = 0
        cdef int overflow = 0, empties = 0
        cdef PyObject* item
        cdef int32_t small[SHORT_GATHER]   # a short list's checked ids: no allocation
        cdef vector[int32_t] many
        cdef int32_t* checked = small
        cdef const int64_t[::1] arr
        cdef const int64_t* ap
        cdef uint8_t* dst
        if isinstance(ids, list):
            n = len(<list>ids)
            if n > SHORT_GATHER:
                many.resize(n)
                checked = many.data()
            for i in range(n):
                item = PyList_GET_ITEM(<list>ids, i)
                if not PyLong_CheckExact(item):
                    return i
                v = PyLong_AsLongLongAndOverflow(item, &overflow)
                size = -1 if overflow else _gather_size(self.op, self.kp, self.slots, v)
                if size < 0:
                    return i
                empties += size == 0
                checked[i] = <int32_t>v
                total += size
        else:
            arr = ids
            n = arr.shape[0]
            if n > SHORT_GATHER:
                many.resize(n)
                checked = many.data()
            ap = &arr[0] if n > 0 else NULL
            with nogil:
                i = _check_array(self.op, self.kp, self.slots, ap, n, checked, &total, &empties)
            if i >= 0:
                return i
        if empties and self.byte_runs and _byte_runs_joined(self.kp, checked, n):
            return None
        if self.leading == LEAD_TOKEN and n > 0:  # (the first id from the other table, the rest from this)
            v = checked[0]
            head = self.fop[v + 1] - self.fop[v]
            total += head - (self.op[v + 1] - self.op[v])
            after = 1
        elif self.leading != LEAD_NONE:
            drop = _leading(self.fp, self.op, self.kp, checked, n, self.leading)
        out = PyBytes_FromStringAndSize(NULL, total - drop)
        dst = <uint8_t*>PyBytes_AS_STRING(out)
        if head:
            memcpy(dst, self.ffp + self.fop[checked[0]], head)
        if n > SHORT_GATHER:
            with nogil:
                _gather(self.fp, self.op, checked + after, n - after, drop, dst + head)
        else:
            _gather(self.fp, self.op, checked + after, n - after, drop, dst + head)
        return out


def decode_single_token_bytes(self, token_id):
    """The bytes of one id (KeyError for an id that is no token, as tiktoken).

    ``Tokenizer.decode_single_token_bytes`` itself, compiled: a streaming decoder calls it once
    per id, and a Python method's own frame and checks cost more than tiktoken's whole call.
    An exact int whose slot in the tokenizer's decode table (``self._decode_table.pieces``,
    ``fastbpe.encode.vocab.DecodeTable``) is not empty gets that slot's bytes object; anything
    else (no table built yet, a special token beyond the table, a NumPy int, a bool, an id that
    is no token, no int at all) goes to ``self._single_token_bytes``, which builds the table or
    gives the error.
    """
    cdef long long i
    cdef int overflow = 0
    cdef list pieces
    table = getattr(self, "_decode_table", None)
    if table is not None and PyLong_CheckExact(<PyObject*>token_id):  # (a bool is no exact int)
        pieces = table.pieces
        i = PyLong_AsLongLongAndOverflow(<PyObject*>token_id, &overflow)
        if not overflow and 0 <= i < len(pieces):
            piece = <object>PyList_GET_ITEM(pieces, <Py_ssize_t>i)
            if piece:  # (an empty slot: an unused id, or a special token beyond the table)
                return piece
    return self._single_token_bytes(token_id)

cdef void _gather(const uint8_t* flat, const int64_t* offsets, const int32_t* ids, Py_ssize_t n,
                  int64_t skip, uint8_t* dst) noexcept nogil:
    """The bytes of ``ids`` into ``dst``, the first ``skip`` of them left out."""
    cdef Py_ssize_t i
    cdef int64_t start, size
    for i in range(n):
        start = offsets[ids[i]]
        size = offsets[ids[i] + 1] - start
        if skip:
            if skip >= size:
                skip -= size
                continue
            start += skip
            size -= skip
            skip = 0
        memcpy(dst, flat + start, size)
        dst += size
