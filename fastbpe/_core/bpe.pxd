# Declarations of bpe.h: the BPE encoder and its per-thread scratch space.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint64_t
from libcpp cimport bool
from libcpp.string cimport string
from libcpp.string_view cimport string_view
from libcpp.vector cimport vector

from fastbpe._core.poll cimport Poll

cdef extern from "bpe.h" namespace "fbpt" nogil:
    cdef enum MergeRule:
        MERGE_REPLAY
        MERGE_PAIR
        MERGE_TOKEN
        MERGE_RULE_COUNT
    const int SCAN_MAX_CHUNK
    const int FUSED_BLOCK
    const size_t TEXTS_AHEAD
    const int SHORT_IDS_MAX
    const int64_t RANK_QUEUE_MIN
    const int64_t TOO_MANY_IDS
    const size_t KEEP_BUFFER_BYTES

    cdef cppclass ShortChunkCache:
        void set_bits(int bits, int max_bits)
        int bits()

    cdef cppclass SharedChunkCache:
        SharedChunkCache(size_t max_ids) except +
        int take_arena()
        void give_back(int arena)
        size_t size()
        size_t capacity()
        bool full()
        void clear()

    # std::vector<int32_t> whose resize leaves the ids uninitialised (bpe.h: UninitAlloc)
    cdef cppclass IdBuffer:
        int32_t* data()
        size_t size()
        size_t capacity()
        void resize(size_t n) except +
        void clear()
        void shrink_to_fit()
        void swap(IdBuffer& other)

    cdef cppclass EncodeScratch:
        Poll poll
        size_t max_ids
        SharedChunkCache* shared
        int arena
        ShortChunkCache short_cache
        IdBuffer sid
        IdBuffer out
        vector[uint8_t] utf8
        void clear_cache()
        void trim(size_t keep)
        void settle(size_t keep)
        size_t buffer_bytes()
        size_t cache_size()
        void expect_text(size_t bytes) except +
        void give_back_out(IdBuffer& ids, size_t used_bytes, size_t keep_bytes)
        void out_room(size_t room) except +

    cdef cppclass Backtracker:
        int64_t non_monotone
        bool repeats
        bool too_big
        double build_seconds
        bool usable()
        size_t memory()
        size_t trie_nodes()

    cdef cppclass BpeEncoder:
        int merge_rule
        int scan_max
        int short_token_max
        int64_t rank_queue_min
        int64_t rank_sort_budget
        int64_t backtrack_min
        int64_t backtrack_budget
        bint backtrack_built()
        int64_t backtrack_fallbacks()
        int64_t backtrack_budget_bytes()
        const Backtracker& backtrack_tables() except +
        int32_t byte_id[256]
        int64_t set_tokens(const vector[string_view]& tokens, int64_t* first) except +
        int32_t token_id(const uint8_t* p, size_t n)
        void token_ids(const uint8_t* p, const int64_t* offsets, int64_t m, int32_t* out)
        void token_pairs(const vector[string_view]& tokens, vector[uint64_t]& keys,
                         vector[uint64_t]& vals) except +
        int64_t merge_pairs(const vector[string_view]& tokens, const int32_t* left, const int32_t* right,
                            int64_t n, int32_t* made, vector[uint64_t]& keys, vector[uint64_t]& vals,
                            int* why, bint made_given) except +
        void build_pairs(const vector[uint64_t]& keys, const vector[uint64_t]& vals) except +
        void add_whole_tokens(const vector[string_view]& tokens, bool consistent) except +
        bool use_spans_for_pairs(const vector[string_view]& tokens, const int32_t* left, const int32_t* made,
                                 int64_t m) except +
        bool spans_for_pairs()
        size_t whole_lookup_size()
        int64_t encode_run(const uint8_t* dp, size_t len, const int64_t* starts, const int64_t* ends, int64_t m,
                           EncodeScratch& st, int32_t* op, int64_t* misses) except +
        int64_t encode_utf8(const uint8_t* dp, size_t n, int pattern, EncodeScratch& st,
                            int64_t* chunks, int64_t* misses) except +
        int64_t encode_utf8(const uint8_t* dp, size_t n, int pattern, EncodeScratch& st,
                            int64_t* chunks, int64_t* misses, int32_t* op) except +
        int64_t encode_utf8_many(const uint8_t* const* texts, const size_t* lengths, size_t count, int pattern,
                                 EncodeScratch& st, int64_t* chunks, int64_t* misses, int32_t* op, int64_t* ends,
                                 size_t* done) except +
        int64_t encode_utf8_u16(const uint8_t* dp, size_t n, int pattern, EncodeScratch& st,
                                int64_t* chunks, int64_t* misses, uint16_t* out) except +
        int64_t encode_symbols(const int32_t* symbols, const int64_t* ends, int64_t words,
                               EncodeScratch& st, int32_t* out, int64_t* out_ends) except +
