# distutils: language = c++
"""The BPE encoder core: UTF-8 bytes plus chunk bounds in, token ids out, GIL released.

One rule covers all three encoders fastbpe speaks, because each is "repeatedly merge the
adjacent pair with the lowest key, leftmost among equal keys", with a pair table
``(left id, right id) -> (rank, new id)``:

* ``replay`` (trained tokenizers, the reference's ``encode_word``): rank = merge index, and a
  pair whose rank is below the last applied one never fires ("floor"). That is exactly
  replaying the merges in learned order, even when two merges produce the same token.
* ``pair`` (Hugging Face ``tokenizers`` BPE): rank = merge index, no floor.
* ``token`` (tiktoken): rank = the rank (id) of the concatenated token. The table then holds
  every split of every token into two tokens, so looking a pair up is looking its bytes up.

Per chunk, in order: the caller's chunk cache; then a whole-chunk lookup in the vocabulary
(always valid for tokens that BPE re-creates from their own bytes; tiktoken and HF with
``ignore_merges`` use it for every token, which is their semantics); then BPE over a linked
list of symbols with a binary heap of candidate pairs (stale entries are re-checked when
popped), O(n log n) in the chunk length, so a 10 MB chunk without a split stays linear-ish.

Entry points: ``encode_chunks`` (chunk bounds given); ``encode_text``/``encode_str`` (the
split too: the compiled pre-tokenizer's scanner, ``scan.h``, compiled in here, hands
blocks of chunk bounds straight to the encoder, one pass with the GIL released, and
``encode_str`` makes the UTF-8 of a str without the GIL as well); ``id_list`` (a list of ids
from shared int objects: list output costs no allocation per token).

Invariant of the symbol list: a live symbol sits at the byte position where its bytes start;
``nxt``/``prv`` link live symbols; a merged-away symbol has ``sid == -1``.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libcpp.string cimport string
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

import numpy as np

from cython.operator cimport dereference as deref
from cpython.ref cimport PyObject, Py_INCREF


cdef extern from "Python.h":
    int PyUnicode_READY(object o) except -1   # (a no-op from Python 3.12 on)
    int PyUnicode_KIND(object o)
    void* PyUnicode_DATA(object o)
    bint PyUnicode_IS_ASCII(object o)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index) nogil
    list PyList_New(Py_ssize_t n)
    void PyList_SET_ITEM(list lst, Py_ssize_t i, PyObject* item)   # steals the reference
    PyObject* PyTuple_GET_ITEM(tuple t, Py_ssize_t i)                # borrowed
    PyObject* PyLong_FromLong(long v)                                # new reference

cdef extern from *:
    """
    #include <algorithm>
    #include <functional>
    #include <vector>
    #include <cstdint>
    #include <cstring>
    #include "scan.h"
    // End of the chunk that starts at byte p of valid UTF-8 s[0:n], for the compiled split
    // patterns whose chunks tile the text (all but "whitespace", which drops the spaces).
    static inline size_t fastbpe_chunk_end(const uint8_t* s, size_t n, int pattern, size_t p) {
        fbpt::Scanner scanner(s, n);
        switch (pattern) {
            case fbpt::PAT_GPT2: return scanner.next_gpt2(p);
            case fbpt::PAT_CL100K: return scanner.next_cl100k(p, true);
            case fbpt::PAT_LLAMA3: return scanner.next_cl100k(p, false);
            case fbpt::PAT_O200K: return scanner.next_o200k(p);
            default: return n;
        }
    }
    static inline bool fastbpe_valid_utf8(const uint8_t* s, size_t n) {
        size_t bad_len;
        return fbpt::utf8_first_error(s, n, 0, &bad_len) == n;
    }
    // UTF-8 of n code units of a str (1, 2 or 4 bytes each) into out (room for 4 per unit, fewer
    // for narrow kinds): the byte count, or -1 at a lone surrogate (not encodable as UTF-8).
    template <class T>
    static inline int64_t fastbpe_utf8_from(const T* s, size_t n, uint8_t* out) {
        size_t o = 0;
        for (size_t i = 0; i < n; ++i) {
            uint32_t c = s[i];
            if (c < 0x80) {
                out[o++] = (uint8_t)c;
            } else if (c < 0x800) {
                out[o++] = (uint8_t)(0xC0 | (c >> 6));
                out[o++] = (uint8_t)(0x80 | (c & 0x3F));
            } else if (c < 0x10000) {
                if ((c & 0xF800) == 0xD800) return -1;
                out[o++] = (uint8_t)(0xE0 | (c >> 12));
                out[o++] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
                out[o++] = (uint8_t)(0x80 | (c & 0x3F));
            } else {
                out[o++] = (uint8_t)(0xF0 | (c >> 18));
                out[o++] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
                out[o++] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
                out[o++] = (uint8_t)(0x80 | (c & 0x3F));
            }
        }
        return (int64_t)o;
    }
    static inline int64_t fastbpe_utf8_of(int kind, const void* data, size_t n, uint8_t* out) {
        if (kind == 1) return fastbpe_utf8_from((const uint8_t*)data, n, out);
        if (kind == 2) return fastbpe_utf8_from((const uint16_t*)data, n, out);
        return fastbpe_utf8_from((const uint32_t*)data, n, out);
    }
    // A min-heap of (rank << 32) | position keys: the lowest rank, then the leftmost position.
    static inline void fastbpe_heap_make(std::vector<uint64_t>& h) {
        std::make_heap(h.begin(), h.end(), std::greater<uint64_t>());
    }
    static inline void fastbpe_heap_push(std::vector<uint64_t>& h, uint64_t key) {
        h.push_back(key);
        std::push_heap(h.begin(), h.end(), std::greater<uint64_t>());
    }
    static inline uint64_t fastbpe_heap_pop(std::vector<uint64_t>& h) {
        std::pop_heap(h.begin(), h.end(), std::greater<uint64_t>());
        uint64_t top = h.back();
        h.pop_back();
        return top;
    }

    // Byte string -> span of int32 ids, open addressing with linear probing. Keys and values
    // live in two arenas, so a lookup touches one slot and one key; no allocation per entry.
    // Not thread-safe for writes; concurrent find() on an unchanging map is fine.
    static inline uint64_t fastbpe_hash(const uint8_t* p, size_t n) {
        uint64_t h = 0x9E3779B97F4A7C15ULL ^ (n * 0xFF51AFD7ED558CCDULL);
        while (n >= 8) {
            uint64_t w; std::memcpy(&w, p, 8);
            h = (h ^ w) * 0xBF58476D1CE4E5B9ULL; h ^= h >> 31;
            p += 8; n -= 8;
        }
        uint64_t w = 0; std::memcpy(&w, p, n);
        h = (h ^ w) * 0x94D049BB133111EBULL; h ^= h >> 29;
        return h | 1;  // 0 marks an empty slot
    }
    // a[0:n] == b[0:n] for the short keys of the chunk cache, without a call to memcmp:
    // 8-byte words, the last one overlapping the one before it.
    static inline bool fastbpe_equal(const uint8_t* a, const uint8_t* b, size_t n) {
        uint64_t x, y;
        if (n >= 8) {
            for (size_t i = 0; i + 8 < n; i += 8) {
                std::memcpy(&x, a + i, 8); std::memcpy(&y, b + i, 8);
                if (x != y) return false;
            }
            std::memcpy(&x, a + n - 8, 8); std::memcpy(&y, b + n - 8, 8);
            return x == y;
        }
        if (n >= 4) {
            uint32_t u, v, w, z;
            std::memcpy(&u, a, 4); std::memcpy(&v, b, 4);
            std::memcpy(&w, a + n - 4, 4); std::memcpy(&z, b + n - 4, 4);
            return u == v && w == z;
        }
        for (size_t i = 0; i < n; ++i)
            if (a[i] != b[i]) return false;
        return true;
    }
    struct FastbpeSlot { uint64_t hash; uint32_t key_off, key_len, val_off, val_len; };
    struct FastbpeBytesMap {
        std::vector<FastbpeSlot> slots;
        std::vector<uint8_t> keys;
        std::vector<int32_t> vals;
        size_t used = 0;
        FastbpeBytesMap() { slots.assign(1024, FastbpeSlot{0, 0, 0, 0, 0}); }
        void clear() { slots.assign(1024, FastbpeSlot{0, 0, 0, 0, 0}); keys.clear(); vals.clear(); used = 0; }
        size_t size() const { return used; }
        size_t num_vals() const { return vals.size(); }
        // Pointer to the ids of key p[0:n] (count in *count), or nullptr.
        const int32_t* find(const uint8_t* p, size_t n, uint64_t h, int64_t* count) const {
            size_t mask = slots.size() - 1, i = h & mask;
            while (slots[i].hash) {
                const FastbpeSlot& s = slots[i];
                if (s.hash == h && s.key_len == n && fastbpe_equal(keys.data() + s.key_off, p, n)) {
                    *count = s.val_len;
                    return vals.data() + s.val_off;
                }
                i = (i + 1) & mask;
            }
            return nullptr;
        }
        // Prefetch hints for a pipelined caller: first the home slot of a hash, later (once
        // that slot is in cache) the key and ids it points at.
        void prefetch_slot(uint64_t h) const { __builtin_prefetch(&slots[h & (slots.size() - 1)]); }
        void prefetch_entry(uint64_t h) const {
            const FastbpeSlot& s = slots[h & (slots.size() - 1)];
            if (s.hash == h) {
                __builtin_prefetch(keys.data() + s.key_off);
                __builtin_prefetch(vals.data() + s.val_off);
            }
        }
        void insert(const uint8_t* p, size_t n, uint64_t h, const int32_t* ids, int64_t count) {
            if (2 * (used + 1) > slots.size()) grow();
            size_t mask = slots.size() - 1, i = h & mask;
            while (slots[i].hash) {
                if (slots[i].hash == h && slots[i].key_len == n &&
                    std::memcmp(keys.data() + slots[i].key_off, p, n) == 0) return;
                i = (i + 1) & mask;
            }
            slots[i] = FastbpeSlot{h, (uint32_t)keys.size(), (uint32_t)n, (uint32_t)vals.size(), (uint32_t)count};
            keys.insert(keys.end(), p, p + n);
            vals.insert(vals.end(), ids, ids + count);
            used++;
        }
        void grow() {
            std::vector<FastbpeSlot> old;
            old.swap(slots);
            slots.assign(old.size() * 2, FastbpeSlot{0, 0, 0, 0, 0});
            size_t mask = slots.size() - 1;
            for (const FastbpeSlot& s : old) {
                if (!s.hash) continue;
                size_t i = s.hash & mask;
                while (slots[i].hash) i = (i + 1) & mask;
                slots[i] = s;
            }
        }
    };
    """
    void heap_make "fastbpe_heap_make"(vector[uint64_t]& h) noexcept nogil
    void heap_push "fastbpe_heap_push"(vector[uint64_t]& h, uint64_t key) noexcept nogil
    uint64_t heap_pop "fastbpe_heap_pop"(vector[uint64_t]& h) noexcept nogil
    uint64_t bytes_hash "fastbpe_hash"(const uint8_t* p, size_t n) noexcept nogil
    void prefetch_read "__builtin_prefetch"(const void* p) noexcept nogil
    size_t chunk_end "fastbpe_chunk_end"(const uint8_t* s, size_t n, int pattern, size_t p) noexcept nogil
    bint valid_utf8 "fastbpe_valid_utf8"(const uint8_t* s, size_t n) noexcept nogil
    int64_t utf8_of "fastbpe_utf8_of"(int kind, const void* data, size_t n, uint8_t* out) noexcept nogil
    int PAT_GPT2 "fbpt::PAT_GPT2"
    int PAT_CL100K "fbpt::PAT_CL100K"
    int PAT_O200K "fbpt::PAT_O200K"
    int PAT_LLAMA3 "fbpt::PAT_LLAMA3"
    cdef cppclass BytesMap "FastbpeBytesMap":
        BytesMap() except +
        void clear() noexcept nogil
        size_t size() noexcept nogil
        size_t num_vals() noexcept nogil
        const int32_t* find(const uint8_t* p, size_t n, uint64_t h, int64_t* count) noexcept nogil
        void insert(const uint8_t* p, size_t n, uint64_t h, const int32_t* ids, int64_t count) nogil
        void prefetch_slot(uint64_t h) noexcept nogil
        void prefetch_entry(uint64_t h) noexcept nogil

cdef struct PairSlot:
    uint64_t key
    uint64_t val


cdef inline uint64_t pair_key(int32_t a, int32_t b) noexcept nogil:
    return (<uint64_t><uint32_t>a << 32) | <uint32_t>b


cdef uint64_t EMPTY = 0xFFFFFFFFFFFFFFFFULL
cdef uint32_t NO_RANK = 0xFFFFFFFFU
# Chunks longer than this are not cached: they are rare and would crowd the cache out.
cdef Py_ssize_t CACHE_MAX_CHUNK = 128
# The chunk-cache prefetch pipeline: ring size and distance (chunks) between its stages.
DEF PIPELINE = 32
DEF PIPELINE_DISTANCE = 8
# Chunks up to this length are merged by a plain scan instead of the heap.
DEF SCAN_MAX_CHUNK = 32
# encode_text: chunks scanned ahead of the encoder at a time (two int64 arrays on the stack).
DEF FUSED_BLOCK = 256

RULES = ("replay", "pair", "token")
cdef int RULE_REPLAY = 0
cdef int RULE_PAIR = 1
cdef int RULE_TOKEN = 2


cdef class EncodeState:
    """Per-thread scratch space and chunk cache. Never share one between threads.

    The cache maps chunk bytes to their ids; it is cleared when it holds more than ``max_ids``
    ids, which bounds its memory.
    """
    cdef BytesMap cache
    cdef size_t max_ids
    cdef vector[int32_t] sid, nxt, prv, out
    cdef vector[uint64_t] heap
    cdef vector[uint8_t] utf8   # encode_str's UTF-8 of a non-ASCII str
    cdef tuple ints             # id_list's int of every id: this thread's own objects, so two
                                # threads never write to the same refcount (cache-line ping-pong)
    cdef public int64_t hits, misses

    def __init__(self, size_t max_ids=4_000_000):
        self.max_ids = max_ids
        self.hits = 0
        self.misses = 0

    def clear(self):
        self.cache.clear()

    @property
    def size(self):
        """Number of cached chunks."""
        return self.cache.size()


cdef class BPECore:
    """Immutable encoding tables; safe to use from many threads at once (each with its own
    :class:`EncodeState`).

    ``token_bytes``: bytes of every id (``b""`` for an unused id). ``left``, ``right``:
    int32 merge pairs in rank order (rules ``replay`` and ``pair``; ignored for ``token``,
    which derives its pairs from the vocabulary). ``whole_token_lookup``: ``"all"`` (every token is
    looked up before merging), ``"consistent"`` (only tokens that BPE rebuilds from their own
    bytes, so the lookup is a pure shortcut) or ``"none"``.
    """
    cdef int rule                       # index in RULES of the merge rule
    cdef int32_t byte_id[256]
    cdef vector[PairSlot] slots         # key (left << 32 | right) beside its (rank << 32) | new id
    cdef uint64_t slot_mask
    cdef BytesMap whole_id
    # replay rule only: the later ranks of a pair the merge list repeats (rare; a pair merged
    # again after a duplicate merge re-created one of its tokens), ascending
    cdef unordered_map[uint64_t, vector[uint64_t]] repeats
    cdef readonly Py_ssize_t num_tokens
    # chunks up to this length use the scan (at most SCAN_MAX_CHUNK; 0 = always the heap,
    # which tests use to check the heap on short inputs)
    cdef int _scan_max
    cdef readonly Py_ssize_t num_pairs

    def __init__(self, list token_bytes, const int32_t[::1] left, const int32_t[::1] right,
                 str merge_rule="replay", str whole_token_lookup="consistent"):
        cdef unordered_map[string, int32_t] ids
        cdef unordered_map[string, int32_t].iterator found_l, found_r
        cdef vector[string] tokens
        cdef vector[uint64_t] keys, vals
        cdef string content
        cdef Py_ssize_t i, k, n = len(token_bytes)
        cdef int32_t a, b
        cdef bytes tb
        if merge_rule not in RULES:
            raise ValueError(f"merge_rule must be one of {RULES}, got {merge_rule!r}")
        if whole_token_lookup not in ("all", "consistent", "none"):
            raise ValueError(f"whole_token_lookup must be 'all', 'consistent' or 'none', got {whole_token_lookup!r}")
        if left.shape[0] != right.shape[0]:
            raise ValueError("left and right must have the same length")
        if n >= 0x7FFFFFFF or left.shape[0] >= 0x7FFFFFFF:
            raise OverflowError("too many tokens or merges")
        self.rule = RULES.index(merge_rule)
        self.num_tokens = n
        self._scan_max = SCAN_MAX_CHUNK
        for i in range(256):
            self.byte_id[i] = -1
        for i in range(n):
            tb = token_bytes[i]
            tokens.push_back(<string>tb)
            if len(tb) == 0:
                continue                      # an unused id (a rank gap in a tiktoken file)
            ids[<string>tb] = <int32_t>i
            if len(tb) == 1:
                self.byte_id[<uint8_t>tb[0]] = <int32_t>i
        if self.rule == RULE_TOKEN:
            with nogil:
                # Every split of every token into two tokens; the key is the whole token's rank.
                for i in range(n):
                    content = tokens[i]
                    for k in range(1, <Py_ssize_t>content.size()):
                        found_l = ids.find(content.substr(0, k))
                        if found_l == ids.end():
                            continue
                        found_r = ids.find(content.substr(k))
                        if found_r == ids.end():
                            continue
                        keys.push_back(pair_key(deref(found_l).second, deref(found_r).second))
                        vals.push_back((<uint64_t>i << 32) | <uint32_t>i)
        else:
            for i in range(left.shape[0]):
                a = left[i]
                b = right[i]
                if a < 0 or b < 0 or a >= n or b >= n or tokens[a].size() == 0 or tokens[b].size() == 0:
                    raise ValueError(f"merge {i} refers to an unknown token id")
                found_l = ids.find(tokens[a] + tokens[b])
                if found_l == ids.end():
                    raise ValueError(f"merge {i}: the concatenation of tokens {a} and {b} is not a token")
                keys.push_back(pair_key(a, b))
                vals.push_back((<uint64_t>i << 32) | <uint32_t>deref(found_l).second)
        with nogil:
            self._build_table(keys, vals)
        self.num_pairs = keys.size()
        if whole_token_lookup == "all":
            for i in range(n):
                if tokens[i].size() > 0:
                    self._add_whole(tokens[i], <int32_t>i)
        elif whole_token_lookup == "consistent":
            self._keep_consistent(tokens)

    cdef void _build_table(self, vector[uint64_t]& keys, vector[uint64_t]& vals) noexcept nogil:
        cdef size_t cap = 16, i, j
        while cap < 2 * keys.size() + 16:
            cap *= 2
        cdef PairSlot empty
        empty.key = EMPTY
        empty.val = 0
        self.slots.assign(cap, empty)
        self.slot_mask = cap - 1
        for i in range(keys.size()):
            j = self._slot(keys[i])
            if self.slots[j].key == EMPTY:
                self.slots[j].key = keys[i]
                self.slots[j].val = vals[i]
            elif self.rule == RULE_PAIR:
                self.slots[j].val = vals[i]     # tokenizers keeps the last rank of a repeated pair
            elif self.rule == RULE_REPLAY:
                self.repeats[keys[i]].push_back(vals[i])

    cdef inline size_t _slot(self, uint64_t key) noexcept nogil:
        cdef size_t i = <size_t>((key * 0x9E3779B97F4A7C15ULL) >> 24) & self.slot_mask
        while self.slots[i].key != key and self.slots[i].key != EMPTY:
            i = (i + 1) & self.slot_mask
        return i

    cdef inline uint64_t _lookup(self, int32_t a, int32_t b) noexcept nogil:
        """(rank << 32) | new id of pair (a, b), or EMPTY when the pair never merges."""
        cdef uint64_t key = pair_key(a, b)
        cdef size_t i = self._slot(key)
        if self.slots[i].key == EMPTY:
            return EMPTY
        return self.slots[i].val

    cdef inline void _prefetch_pair(self, int32_t a, int32_t b) noexcept nogil:
        cdef uint64_t key = pair_key(a, b)
        prefetch_read(&self.slots[<size_t>((key * 0x9E3779B97F4A7C15ULL) >> 24) & self.slot_mask])

    cdef inline uint64_t _lookup_from(self, int32_t a, int32_t b, uint32_t floor) noexcept nogil:
        """Like ``_lookup``, but the lowest rank of the pair that is at least ``floor``."""
        cdef uint64_t v = self._lookup(a, b)
        cdef size_t k
        cdef unordered_map[uint64_t, vector[uint64_t]].iterator it
        if v == EMPTY or <uint32_t>(v >> 32) >= floor:
            return v
        if self.repeats.empty():
            return EMPTY
        it = self.repeats.find(pair_key(a, b))
        if it == self.repeats.end():
            return EMPTY
        for k in range(deref(it).second.size()):
            if <uint32_t>(deref(it).second[k] >> 32) >= floor:
                return deref(it).second[k]
        return EMPTY

    cdef void _add_whole(self, string& token, int32_t i) noexcept nogil:
        cdef const uint8_t* p = <const uint8_t*>token.data()
        self.whole_id.insert(p, token.size(), bytes_hash(p, token.size()), &i, 1)

    cdef void _keep_consistent(self, vector[string]& tokens):
        """Whole-chunk lookup for the tokens BPE rebuilds from their own bytes only."""
        cdef EncodeState state = EncodeState()
        cdef Py_ssize_t i
        cdef int32_t[1] out
        cdef int64_t produced
        with nogil:
            for i in range(<Py_ssize_t>tokens.size()):
                if tokens[i].size() == 0:
                    continue
                if tokens[i].size() == 1:
                    self._add_whole(tokens[i], <int32_t>i)
                    continue
                produced = self._bpe(<const uint8_t*>tokens[i].data(), tokens[i].size(), state, out, 1)
                if produced == 1 and out[0] == i:
                    self._add_whole(tokens[i], <int32_t>i)

    cdef int64_t _bpe(self, const uint8_t* data, Py_ssize_t n, EncodeState st, int32_t* out,
                      int64_t cap) noexcept nogil:
        """BPE of one chunk: a scan for short chunks (cheaper than a heap there), the heap
        otherwise. Both pick the lowest (rank, position) each step, so they agree exactly."""
        if n <= self._scan_max:
            return self._bpe_scan(data, n, out, cap)
        return self._bpe_heap(data, n, st, out, cap)

    cdef int64_t _bpe_scan(self, const uint8_t* data, Py_ssize_t n, int32_t* out,
                           int64_t cap) noexcept nogil:
        """Short-chunk BPE from the chunk's bytes (see :meth:`_merge_scan`)."""
        cdef int32_t sid[SCAN_MAX_CHUNK]
        cdef Py_ssize_t i
        for i in range(n):
            sid[i] = self.byte_id[data[i]]
            if sid[i] < 0:
                return -1 - <int64_t>data[i]
        return self._merge_scan(sid, n, out, cap)

    cdef int64_t _merge_scan(self, int32_t* sid, Py_ssize_t n, int32_t* out, int64_t cap) noexcept nogil:
        """Short-chunk BPE over the symbol ids ``sid[:n]`` (changed in place): the (rank << 32 |
        new id) of each adjacent pair sits beside them; each step scans for the lowest rank
        (leftmost among equals), merges, and re-looks-up only the two pairs that changed.
        O(n^2), n <= SCAN_MAX_CHUNK."""
        cdef uint64_t pair[SCAN_MAX_CHUNK]
        cdef Py_ssize_t i, best, m = n
        cdef uint64_t best_v
        cdef uint32_t floor = 0
        for i in range(n - 1):   # issue every first lookup's memory access at once
            self._prefetch_pair(sid[i], sid[i + 1])
        for i in range(n - 1):
            pair[i] = self._lookup(sid[i], sid[i + 1])
        while m > 1:
            best = -1
            best_v = EMPTY
            for i in range(m - 1):
                if pair[i] < best_v:   # EMPTY is the largest value; ranks sit in the high bits
                    best_v = pair[i]
                    best = i
            if best < 0:
                break
            if self.rule == RULE_REPLAY:
                floor = <uint32_t>(best_v >> 32)
            sid[best] = <int32_t>(best_v & 0xFFFFFFFFULL)
            for i in range(best + 1, m - 1):
                sid[i] = sid[i + 1]
                pair[i] = pair[i + 1]
            m -= 1
            if best + 1 < m:
                pair[best] = self._lookup_from(sid[best], sid[best + 1], floor)
            if best > 0:
                pair[best - 1] = self._lookup_from(sid[best - 1], sid[best], floor)
        if m > cap:
            return -1000
        for i in range(m):
            out[i] = sid[i]
        return m

    cdef int64_t _bpe_heap(self, const uint8_t* data, Py_ssize_t n, EncodeState st, int32_t* out,
                           int64_t cap) noexcept nogil:
        """BPE of one chunk into ``out`` (room for ``cap`` ids). Returns the id count, -1 - b
        when byte ``b`` is not in the vocabulary, or ``-1000`` when more than ``cap`` ids come
        out (only used by the consistency check, which asks for one)."""
        cdef Py_ssize_t i
        cdef int32_t* sid
        if <Py_ssize_t>st.sid.size() < n:
            st.sid.resize(n)
        sid = st.sid.data()
        for i in range(n):
            sid[i] = self.byte_id[data[i]]
            if sid[i] < 0:
                return -1 - <int64_t>data[i]
        return self._merge_heap(n, st, out, cap)

    cdef int64_t _merge_heap(self, Py_ssize_t n, EncodeState st, int32_t* out, int64_t cap) noexcept nogil:
        """BPE over the symbol ids ``st.sid[:n]``: a linked list of symbols and a binary heap
        of candidate pairs keyed (rank << 32) | position, stale entries re-checked when popped.
        O(n log n). Returns the id count or ``-1000`` when more than ``cap`` ids come out."""
        cdef Py_ssize_t i, j, k, p
        cdef uint64_t v, top
        cdef uint32_t rank, floor = 0
        cdef int64_t count = 0
        cdef int32_t* sid
        cdef int32_t* nxt
        cdef int32_t* prv
        if <Py_ssize_t>st.nxt.size() < n:
            st.nxt.resize(n)
            st.prv.resize(n)
        sid = st.sid.data()
        nxt = st.nxt.data()
        prv = st.prv.data()
        for i in range(n):
            nxt[i] = <int32_t>(i + 1) if i + 1 < n else -1
            prv[i] = <int32_t>(i - 1)
        st.heap.clear()
        for i in range(n - 1):
            v = self._lookup(sid[i], sid[i + 1])
            if v != EMPTY:
                st.heap.push_back((v & 0xFFFFFFFF00000000ULL) | <uint64_t>i)
        # Building the heap at once is O(n); a pushed key is (rank << 32) | position.
        heap_make(st.heap)
        while st.heap.size() > 0:
            top = heap_pop(st.heap)
            rank = <uint32_t>(top >> 32)
            i = <Py_ssize_t>(top & 0xFFFFFFFFULL)
            if sid[i] < 0:
                continue
            j = nxt[i]
            if j < 0:
                continue
            v = self._lookup_from(sid[i], sid[j], floor)
            if v == EMPTY or <uint32_t>(v >> 32) != rank:
                continue          # stale: a neighbour merged since this entry was pushed
            if self.rule == RULE_REPLAY:
                floor = rank
            sid[i] = <int32_t>(v & 0xFFFFFFFFULL)
            sid[j] = -1
            k = nxt[j]
            nxt[i] = <int32_t>k
            if k >= 0:
                prv[k] = <int32_t>i
                v = self._lookup_from(sid[i], sid[k], floor)
                if v != EMPTY:
                    heap_push(st.heap, (v & 0xFFFFFFFF00000000ULL) | <uint64_t>i)
            p = prv[i]
            if p >= 0:
                v = self._lookup_from(sid[p], sid[i], floor)
                if v != EMPTY:
                    heap_push(st.heap, (v & 0xFFFFFFFF00000000ULL) | <uint64_t>p)
        i = 0
        while i >= 0:
            if count >= cap:
                return -1000
            out[count] = sid[i]
            count += 1
            i = nxt[i]
        return count

    cdef int64_t _encode_chunk(self, const uint8_t* data, Py_ssize_t n, EncodeState st,
                               int32_t* out, int64_t* misses, uint64_t h) noexcept nogil:
        """Ids of one chunk into ``out`` (room for ``n`` ids): cache, whole lookup, BPE.
        ``h``: the chunk's hash if the caller computed it already, else 0."""
        cdef int64_t count = 0
        cdef const int32_t* found
        if n == 0:
            return 0
        if n == 1:
            out[0] = self.byte_id[data[0]]
            return 1 if out[0] >= 0 else -1 - <int64_t>data[0]
        if h == 0:
            h = bytes_hash(data, n)
        if n <= CACHE_MAX_CHUNK:
            found = st.cache.find(data, n, h, &count)
            if found != NULL:
                if count == 1:      # most chunks are one token: no call to memcpy
                    out[0] = found[0]
                else:
                    memcpy(out, found, count * sizeof(int32_t))
                return count
            misses[0] += 1   # a local counter: per-chunk writes to the state would false-share
        found = self.whole_id.find(data, n, h, &count)
        if found != NULL:
            out[0] = found[0]
            count = 1
        else:
            count = self._bpe(data, n, st, out, n)
            if count < 0:
                return count
        if n <= CACHE_MAX_CHUNK:
            if st.cache.num_vals() + count > st.max_ids:
                st.cache.clear()
            st.cache.insert(data, n, h, out, count)
        return count

    cdef inline uint64_t _hash_ahead(self, const uint8_t* dp, int64_t s, int64_t e,
                                     EncodeState st) noexcept nogil:
        """Hash of a cacheable chunk with its cache slot prefetched; 0 for the others."""
        cdef uint64_t h
        if e - s < 2 or e - s > CACHE_MAX_CHUNK:
            return 0
        h = bytes_hash(dp + s, e - s)
        st.cache.prefetch_slot(h)
        return h

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
        if state is None:
            raise TypeError("state must be an EncodeState")
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
        # the process's memory map.
        if <int64_t>state.out.size() < total:
            state.out.resize(total)
        cdef const uint8_t* dp = &data[0] if data.shape[0] > 0 else NULL
        if m > 0:
            with nogil:
                got = self._encode_run(dp, &starts[0], &ends[0], m, state, state.out.data(), &misses)
        return self._result(state, got, m, misses)

    cdef object _result(self, EncodeState state, int64_t got, Py_ssize_t chunks, int64_t misses):
        """The first ``got`` ids of ``state.out`` as a fresh int32 array (or the ValueError of
        a negative ``got``), after counting cache hits and misses."""
        state.misses += misses
        state.hits += chunks - misses
        if got < 0:
            raise ValueError(f"byte 0x{-1 - got:02x} is not in the vocabulary")
        out = np.empty(got, dtype=np.int32)
        cdef int32_t[::1] ov = out
        if got > 0:
            with nogil:
                memcpy(&ov[0], state.out.data(), got * sizeof(int32_t))
        if state.out.size() > 64 * 1024 * 1024:
            state.out.clear()
            state.out.shrink_to_fit()   # do not keep a huge buffer after a huge call
        return out

    cdef int64_t _encode_run(self, const uint8_t* dp, const int64_t* starts, const int64_t* ends,
                             Py_ssize_t m, EncodeState state, int32_t* op,
                             int64_t* misses) noexcept nogil:
        """Ids of the ``m`` chunks ``dp[starts[c]:ends[c]]`` into ``op`` (room for their total
        length): the id count, or the negative code of ``_encode_chunk`` for a missing byte.

        A software pipeline over the chunk cache, whose slots are random accesses into a table
        bigger than the CPU caches: hash chunk c + 2D and prefetch its slot; at c + D prefetch
        the key and ids the slot points at; at c use them."""
        cdef uint64_t ring[PIPELINE]
        cdef Py_ssize_t c, ahead
        cdef int64_t count = 0, got
        for c in range(min(m, 2 * PIPELINE_DISTANCE)):
            ring[c % PIPELINE] = self._hash_ahead(dp, starts[c], ends[c], state)
        for c in range(min(m, PIPELINE_DISTANCE)):
            state.cache.prefetch_entry(ring[c % PIPELINE])
        for c in range(m):
            ahead = c + 2 * PIPELINE_DISTANCE
            if ahead < m:
                ring[ahead % PIPELINE] = self._hash_ahead(dp, starts[ahead], ends[ahead], state)
            ahead = c + PIPELINE_DISTANCE
            if ahead < m and ring[ahead % PIPELINE] != 0:
                state.cache.prefetch_entry(ring[ahead % PIPELINE])
            got = self._encode_chunk(dp + starts[c], ends[c] - starts[c], state, op + count, misses,
                                     ring[c % PIPELINE])
            if got < 0:
                return got
            count += got
        return count

    def encode_text(self, const uint8_t[::1] data, int pattern, EncodeState state):
        """int32 ids of UTF-8 ``data`` split by the compiled pre-tokenizer ``pattern`` (a
        ``SCANNER_IDS`` value: gpt2, cl100k, o200k or llama3, whose chunks tile the text), in
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
        if state.out.size() < n:
            state.out.resize(n)
        with nogil:
            valid = valid_utf8(&data[0], n)
            if valid:
                got = self._encode_utf8(&data[0], n, pattern, state, &chunks, &misses)
        return self._result(state, got, chunks, misses) if valid else None

    def encode_str(self, text, int pattern, EncodeState state):
        """``encode_text(text.encode("utf-8"), pattern, state)`` with the UTF-8 made while the
        GIL is released too (an ASCII str is read in place), so only building the result holds
        the GIL. None when ``text`` has a lone surrogate (no UTF-8 exists).
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
        cdef size_t widest = 1 if ascii else (4 if kind == 4 else kind + 1)
        self._check_fused(pattern, state, widest * n)
        if n == 0:
            return np.empty(0, dtype=np.int32)
        if not ascii:
            if state.utf8.size() < widest * n:
                state.utf8.resize(widest * n)
            dp = state.utf8.data()
        # The str is immutable and the caller holds it: its characters stay put without the GIL.
        with nogil:
            if not ascii:
                size = utf8_of(kind, chars, n, state.utf8.data())
            if size >= 0:
                if <int64_t>state.out.size() < size:
                    state.out.resize(size)
                got = self._encode_utf8(dp, size, pattern, state, &chunks, &misses)
        if state.utf8.size() > 64 * 1024 * 1024:
            state.utf8.clear()
            state.utf8.shrink_to_fit()
        return self._result(state, got, chunks, misses) if size >= 0 else None

    cdef _check_fused(self, int pattern, EncodeState state, size_t n):
        if pattern not in (PAT_GPT2, PAT_CL100K, PAT_O200K, PAT_LLAMA3):
            raise ValueError(f"encode_text needs a pattern whose chunks tile the text, got id {pattern}")
        if state is None:
            raise TypeError("state must be an EncodeState")
        if n >= 0xFFFFFFFF:
            raise OverflowError("more than 4 GiB in one call; split the text")

    cdef int64_t _encode_utf8(self, const uint8_t* dp, size_t n, int pattern, EncodeState state,
                              int64_t* chunks, int64_t* misses) noexcept nogil:
        """Split valid UTF-8 ``dp[0:n]`` (n > 0) and encode it into ``state.out`` (room for
        ``n`` ids): the id count, or ``_encode_chunk``'s negative code for a missing byte."""
        cdef int64_t starts[FUSED_BLOCK]
        cdef int64_t ends[FUSED_BLOCK]
        cdef size_t p = 0
        cdef Py_ssize_t m
        cdef int64_t count = 0, got
        cdef int32_t* op = state.out.data()
        while p < n:
            m = 0
            while m < FUSED_BLOCK and p < n:
                starts[m] = <int64_t>p
                p = chunk_end(dp, n, pattern, p)
                ends[m] = <int64_t>p
                m += 1
            chunks[0] += m
            got = self._encode_run(dp, starts, ends, m, state, op + count, misses)
            if got < 0:
                return got
            count += got
        return count

    def id_list(self, const int32_t[::1] ids, EncodeState state):
        """``ids.tolist()``, faster: ``state`` (this thread's) makes the int of every vocabulary
        id once and every list shares them, so building a list allocates no int objects. Ids
        outside the vocabulary (special tokens) get fresh ints.

        >>> core = BPECore([b"a", b"b", b"ab"], np.array([0], np.int32), np.array([1], np.int32))
        >>> core.id_list(np.array([2, 0, 7], np.int32), EncodeState())
        [2, 0, 7]
        """
        cdef Py_ssize_t i, n = ids.shape[0]
        cdef int32_t v
        cdef PyObject* item
        if state is None:
            raise TypeError("state must be an EncodeState")
        if state.ints is None or len(state.ints) < self.num_tokens:
            # range() makes a new object for every int above 256, hence per thread
            state.ints = tuple(range(self.num_tokens))
        cdef tuple ints = state.ints
        cdef list out = PyList_New(n)
        for i in range(n):
            v = ids[i]
            if 0 <= v < self.num_tokens:   # (ints may be longer: a state used by a bigger core)
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

    def encode_symbols(self, const int32_t[::1] symbols, const int64_t[::1] ends, EncodeState state):
        """int32 ids of words given as base symbol ids: word k is ``symbols[ends[k-1]:ends[k]]``.

        The same merge loop as every other entry, started from the caller's symbols instead of
        bytes: the path of character-level tokenizers (a symbol is a character's token) and of
        word markers. A negative symbol (a character outside the vocabulary) never merges and
        comes out as itself.
        """
        cdef Py_ssize_t n = symbols.shape[0], words = ends.shape[0], k, w, length
        cdef int64_t start = 0, got, total = 0
        for k in range(n):
            if symbols[k] >= self.num_tokens:
                raise ValueError(f"symbol {symbols[k]} is not a token id")
        for k in range(words):
            if ends[k] < (ends[k - 1] if k else 0) or ends[k] > n:
                raise ValueError("ends must be non-decreasing and within the symbols")
        if (ends[words - 1] if words else 0) != n:
            raise ValueError("the last end must be len(symbols)")
        out = np.empty(n, dtype=np.int32)
        cdef int32_t[::1] ov = out
        cdef int32_t* sid
        with nogil:
            for w in range(words):
                length = ends[w] - start
                if length <= 0:
                    continue
                if <Py_ssize_t>state.sid.size() < length:
                    state.sid.resize(length)
                sid = state.sid.data()
                memcpy(sid, &symbols[start], length * sizeof(int32_t))
                if length <= self._scan_max:
                    got = self._merge_scan(sid, length, &ov[total], length)
                else:
                    got = self._merge_heap(length, state, &ov[total], length)
                total += got
                start = ends[w]
        return out[:total]

    @property
    def scan_max(self):
        """Chunks up to this many bytes are merged by the scan, longer ones by the heap."""
        return self._scan_max

    @scan_max.setter
    def scan_max(self, int value):
        if not 0 <= value <= SCAN_MAX_CHUNK:
            raise ValueError(f"scan_max must be between 0 and {SCAN_MAX_CHUNK}")
        self._scan_max = value

    def whole_lookup_size(self):
        """How many tokens the whole-chunk lookup knows."""
        return self.whole_id.size()




def derive_merges(list token_bytes):
    """The merges of a rank-only vocabulary (a tiktoken file), in rank order.

    For every token of two or more bytes, run tiktoken's rule on its bytes using only tokens of
    lower rank: when that ends in exactly two parts, they are the token's merge. (A token it
    cannot reach gets no merge; tiktoken still produces it through its whole-chunk lookup.)
    Returns int32 arrays ``(left, right, new)``. Cost: O(sum of squared token lengths).
    """
    cdef unordered_map[string, int32_t] ids
    cdef vector[string] tokens
    cdef vector[int32_t] left, right, new
    cdef vector[Py_ssize_t] cut
    cdef unordered_map[string, int32_t].iterator it
    cdef Py_ssize_t i, j, best_j, n = len(token_bytes)
    cdef int32_t best, r
    cdef string content
    for i in range(n):
        tokens.push_back(<string>token_bytes[i])
        if tokens[i].size() > 0:
            ids[tokens[i]] = <int32_t>i
    with nogil:
        for i in range(n):
            content = tokens[i]
            if content.size() < 2:
                continue
            cut.clear()
            for j in range(<Py_ssize_t>content.size() + 1):
                cut.push_back(j)
            while cut.size() > 2:
                best = -1
                best_j = -1
                for j in range(<Py_ssize_t>cut.size() - 2):
                    it = ids.find(content.substr(cut[j], cut[j + 2] - cut[j]))
                    if it == ids.end():
                        continue
                    r = deref(it).second
                    if r < i and (best < 0 or r < best):
                        best = r
                        best_j = j
                if best < 0:
                    break
                cut.erase(cut.begin() + best_j + 1)
            if cut.size() == 3:
                left.push_back(ids[content.substr(0, cut[1])])
                right.push_back(ids[content.substr(cut[1])])
                new.push_back(<int32_t>i)
    out = np.empty((3, left.size()), dtype=np.int32)
    for j in range(<Py_ssize_t>left.size()):
        out[0, j] = left[j]
        out[1, j] = right[j]
        out[2, j] = new[j]
    return out[0].copy(), out[1].copy(), out[2].copy()


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
