// BPE encoding: chunk bytes in, token ids out. encode.pyx is the Python shell around it.
//
// One rule covers the three encoders fastbpe speaks, because each is "repeatedly merge the
// adjacent pair with the lowest key, leftmost among equal keys", with a pair table
// (left id, right id) -> (rank, new id):
//  * MERGE_REPLAY (trained tokenizers, the reference's encode_word): rank = merge index, and a
//    pair whose rank is below the last applied one never fires ("floor"). That is exactly
//    replaying the merges in learned order, even when two merges produce the same token.
//  * MERGE_PAIR (Hugging Face tokenizers' BPE): rank = merge index, no floor.
//  * MERGE_TOKEN (tiktoken): rank = the rank (id) of the concatenated token. The table then
//    holds every split of every token into two tokens, so looking a pair up is looking its
//    bytes up.
//
// Per chunk, in order: the caller's chunk cache; then a whole-chunk lookup in the vocabulary
// (always valid for tokens that BPE re-creates from their own bytes; tiktoken and HF with
// ignore_merges use it for every token, which is their semantics); then BPE over a linked list
// of symbols, by one of three loops that all pick the lowest (rank, position) each step, so
// they agree: a plain scan for short chunks (O(n^2), cheapest there); a heap of candidate
// pairs (stale entries re-checked when popped) for middling ones; and for long chunks (a
// megabyte without a split) a queue of ranks, each rank with the positions of its candidate
// pairs, taken in ascending order (merge_by_rank). Long chunks cost O(n log n) at worst.
// Before the loops, chunks of BACKTRACK_MIN bytes or more are encoded by backtracking over the
// vocabulary (backtrack.h: about linear time, memory the ids and one bit per byte), once the
// long chunks this encoder has merged so far (across calls and threads) have earned its tables
// (BACKTRACK_BUDGET_PER_TOKEN_BYTE), when the model allows it (monotone merges; not the replay
// rule with a repeated pair), which the tiktoken files and Hugging Face byte-level files
// mostly do. Under MERGE_TOKEN, a chunk of up
// to 15 bytes that misses the cache takes none of these: its whole-chunk lookup and its merges
// come from the ids of all its substrings, looked up at once (merge_spans), which spares the
// scan's chain of dependent pair-table lookups; so does one under MERGE_PAIR whose merges are
// the token rule's (use_spans_for_pairs: Llama 3's), except where the two rules could differ.
//
// Invariant of the symbol list: a live symbol sits at the byte position where its bytes start;
// a merged-away symbol has sid == -1. Symbols tile the chunk, so one array of boundary tags
// links them (SymbolList): span[i] at a live symbol's first and last position holds its length.
//
// Return codes of the encoding functions: the id count, -1 - b when byte b is not in the
// vocabulary, or TOO_MANY_IDS when more ids than the room given come out.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <type_traits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backtrack.h"
#include "bytes_map.h"
#include "heap.h"
#include "pair_table.h"
#include "poll.h"
#include "scan.h"
#include "shared_cache.h"

namespace fbpt {

enum MergeRule { MERGE_REPLAY = 0, MERGE_PAIR = 1, MERGE_TOKEN = 2, MERGE_RULE_COUNT = 3 };

static const uint64_t NO_MERGE = ~0ULL;      // lookup result of a pair that never merges
static const int64_t TOO_MANY_IDS = -1000;
static const int64_t BACKTRACK_UNUSABLE = -1001;  // (internal: take the merge loops instead)
static const int64_t SPANS_DECLINED = -1002;  // (internal: merge_spans leaves the chunk to the merge loops)
// Chunks longer than this are not cached: they are rare, and their keys would take much of the
// cache's memory. Shorter long ones are worth it: a text's repeated long chunks (rules and
// borders of box-drawing or '=' characters, runs of spaces in code) cost far more to merge
// again on every pass than to look up (10 MB of English: 168 chunks of 129..219 bytes took
// 2.2 ms of each 60 ms pass while this was 128).
static const int64_t CACHE_MAX_CHUNK = 1024;
// The chunk cache is also cleared when its keys would pass this many bytes per id of max_ids
// (English text: about 3 bytes per id), so long keys cannot make it grow past what max_ids
// implies; and never holds 4 GB of keys (a key's offset is 32 bits).
static const size_t CACHE_KEY_BYTES_PER_ID = 16;
static const size_t KEY_ROOM = (UINT32_MAX - CACHE_MAX_CHUNK) / CACHE_KEY_BYTES_PER_ID;
// Chunks up to this length are merged by the scan instead of the heap.
static const int SCAN_MAX_CHUNK = 32;
// Chunks of at least this many symbols are merged by the rank queue instead of the heap.
static const int64_t RANK_QUEUE_MIN = 256;
// Chunks of at least this many bytes are encoded by backtracking (backtrack.h) where the model
// allows it, once its tables are built (see BACKTRACK_BUDGET_PER_TOKEN_BYTE).
static const int64_t BACKTRACK_MIN = 256;
// The backtracking tables are built once the long chunks the merge loops took (this encoder's,
// over all calls and threads), the current one included, reach this many bytes per byte of the
// vocabulary: about what building them costs
// (cl100k_base, 640 KB of tokens: 60-80 ms to build; the rank queue takes 20-40 ns per byte of
// a run of one letter, 100-150 on random letters), so that a text with a few long chunks never
// pays for tables it would not earn back, and one with many pays at most twice what the better
// choice in hindsight would have.
// (Building first saves little on most long chunks: on random letters backtracking and the rank
// queue run alike; on one letter repeated, backtracking runs about three times faster.)
static const int64_t BACKTRACK_BUDGET_PER_TOKEN_BYTE = 2;
// The chunk-cache prefetch pipeline: ring size and distance (chunks) between its stages.
static const int PIPELINE = 32;
static const int PIPELINE_DISTANCE = 8;
// encode_utf8: chunks split ahead of the encoder at a time (two int64 arrays on the stack).
static const int FUSED_BLOCK = 256;
// encode_utf8_many asks for the bytes of the text this many texts ahead as it starts a text.
static const size_t TEXTS_AHEAD = 4;
// encode_utf8_u16: chunks of at least this many bytes are backtracked straight into the
// 16-bit output; shorter ones go in runs of at most this many bytes through the 32-bit buffer.
static const int64_t U16_DIRECT_MIN = 1 << 16;

static const uint64_t RANK_BITS = 0xFFFFFFFF00000000ULL;
static const uint64_t LOW_BITS = 0xFFFFFFFFULL;

// Candidate pairs of the heap: (rank << 32) | position, the lowest first.
struct LowestFirst {
    bool operator()(uint64_t x, uint64_t y) const { return x < y; }
};

// merge_by_rank's positions of the candidate pairs of one rank. pos[cursor:] are pending;
// `sorted` says whether they are ascending (appends usually are: merges run left to right).
// (pos is a bare growable array: std::vector's push_back was not inlined in the hot loop.)
struct RankBucket {
    int32_t* pos = nullptr;
    size_t size = 0, cap = 0;
    size_t cursor = 0;
    bool sorted = true;
    bool queued = false;  // its rank sits in the rank queue

    RankBucket() = default;
    RankBucket(const RankBucket&) = delete;
    RankBucket& operator=(const RankBucket&) = delete;
    RankBucket(RankBucket&& o) noexcept
        : pos(o.pos), size(o.size), cap(o.cap), cursor(o.cursor), sorted(o.sorted), queued(o.queued) {
        o.pos = nullptr;
        o.size = o.cap = 0;
    }
    ~RankBucket() { std::free(pos); }

    void reset() {
        size = cursor = 0;
        sorted = true;
        queued = false;
    }
    void release_if_big() {  // (drained) free a big array; a small one is kept for reuse
        if (cap <= 4096) return;
        std::free(pos);
        pos = nullptr;
        size = cursor = cap = 0;
    }
    inline void append(int32_t i) {
        if (size == cap) grow();
        pos[size++] = i;
    }
    void grow() {
        size_t want = cap ? 2 * cap : 64;
        int32_t* p = (int32_t*)std::realloc(pos, want * sizeof(int32_t));
        if (p == nullptr) throw std::bad_alloc();
        pos = p;
        cap = want;
    }
};

// An allocator whose resize leaves ints uninitialised: a buffer sized for the worst case (one
// id per byte) only takes memory where ids are written. From 2 MB up, on fresh huge pages
// (map_fresh_pages): the first call's ids fault once per 2 MB, not once per 4 KB.
template <class T>
struct UninitAlloc {
    typedef T value_type;
    UninitAlloc() = default;
    template <class U>
    UninitAlloc(const UninitAlloc<U>&) {}
    T* allocate(size_t n) {
        if (n >= HUGE_PAGE_BYTES / sizeof(T)) {
            if (n > (size_t)PTRDIFF_MAX / sizeof(T)) throw std::bad_alloc();
            void* p = map_fresh_pages(n * sizeof(T));
            if (p != nullptr) return (T*)p;
        }
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, size_t n) {
        if (n >= HUGE_PAGE_BYTES / sizeof(T) && FBPT_MAP_PAGES)  // (as allocate decided)
            unmap_fresh_pages(p, n * sizeof(T));
        else
            std::allocator<T>().deallocate(p, n);
    }
    template <class U>
    void construct(U*) noexcept {}
    template <class U, class A0, class... A>
    void construct(U* p, A0&& a0, A&&... a) {
        ::new ((void*)p) U(std::forward<A0>(a0), std::forward<A>(a)...);
    }
};
template <class T, class U>
bool operator==(const UninitAlloc<T>&, const UninitAlloc<U>&) { return true; }
template <class T, class U>
bool operator!=(const UninitAlloc<T>&, const UninitAlloc<U>&) { return false; }
typedef std::vector<int32_t, UninitAlloc<int32_t>> IdBuffer;

// The symbols of a chunk being merged: sid[i] the id of the live symbol starting at position i
// (-1 inside a symbol), span[] boundary tags: at the first and the last position of every live
// symbol, its length. The next symbol starts where this one ends; the previous one ends just
// before this one starts, and its tag there says where it starts. One int32 per position links
// the list both ways.
struct SymbolList {
    int32_t* sid;
    int32_t* span;
    int64_t n;

    inline int64_t next(int64_t i) const {  // -1 at the end
        int64_t k = i + span[i];
        return k < n ? k : -1;
    }
    inline int64_t prev(int64_t i) const { return i > 0 ? i - span[i - 1] : -1; }  // -1 at the start
    // Merge symbol i with the next one, j, into the id of v (lookup's value); returns the symbol
    // after the merged one (-1 at the end).
    inline int64_t merge(int64_t i, int64_t j, uint64_t v) {
        sid[i] = (int32_t)(v & 0xFFFFFFFFULL);
        sid[j] = -1;
        int64_t end = j + span[j];
        int32_t length = (int32_t)(end - i);
        span[i] = length;
        span[end - 1] = length;
        return end < n ? end : -1;
    }
};

// What one thread needs while encoding: the chunk cache (chunk bytes -> ids, cleared when it
// holds more than max_ids ids or CACHE_KEY_BYTES_PER_ID * max_ids key bytes, which bounds its
// memory) and reusable buffers.
//
// A thread of a pool may also be attached to a SharedChunkCache (shared, its arena there):
// chunks missing from the short cache are then looked up there, and remembered there, so that
// the pool's threads merge each chunk once; the thread's own cache only takes what the shared
// one refuses once full (and is looked up only when it holds anything).
struct EncodeScratch {
    BytesMap cache;
    ShortChunkCache short_cache;  // the cache's first level, for chunks of up to SHORT_KEY_MAX bytes
    SharedChunkCache* shared = nullptr;  // (not owned: the Python object holding it outlives this)
    int arena = -1;
    size_t max_ids = 4000000;
    IdBuffer sid, span;           // the symbol list of a long chunk (SymbolList)
    std::vector<uint64_t> dead;   // the backtracking encoder's dead ends (Backtracker::encode)
    std::vector<uint64_t> memo;   // and its memo of compatible pairs
    IdBuffer out;                 // ids of a call, before the caller copies them out (out_room)
    std::vector<uint8_t> utf8;    // UTF-8 of a str
    Heap<uint64_t, LowestFirst> heap;
    // merge_by_rank: its buckets (buckets[0:used_buckets] in use), rank -> bucket, and the
    // queue of ranks with pending positions as (rank << 32) | bucket
    std::vector<RankBucket> buckets;
    size_t used_buckets = 0;
    PairTable<int32_t> bucket_of;
    Heap<uint64_t, LowestFirst> ranks;
    // The caller's look at Ctrl-C, ticked by the loops that can run for seconds on one call: a
    // huge text's blocks of chunks, a huge chunk's merges and backtracking (poll.h)
    Poll poll;

    void clear_cache() {
        cache.clear();
        short_cache.clear();
    }
    size_t cache_size() const { return cache.size(); }

    // At the start of a call of `bytes` bytes of text, on an empty cache of its own: room for
    // the chunks such a text leaves in the cache, so that it does not grow (rehash, and take
    // fresh pages for a table twice the last) eight times or more through the call. A guess by
    // bytes, a little under what English needs, as distinct chunks grow slower than the text:
    // cl100k cached 14,830 chunks for 1 MB of English, 97,120 for 10 MB, 452,867 for 100 MB
    // (about 87,000 * (bytes / 10 MB)^0.75 with a tenth to spare; fewer for code). A guess too
    // small costs a growth or two at the end; one too big, a table up to twice the size needed.
    void expect_text(size_t bytes) {
        if (shared != nullptr || cache.size() > 0 || bytes < ((size_t)1 << 16)) return;
        double chunks = 87000.0 * std::pow((double)bytes / 1e7, 0.75);
        cache.reserve((size_t)std::min(chunks, (double)max_ids));
    }

    // The chunk cache's prefetch hints (BytesMap's), for the shared cache when attached.
    inline void prefetch_slot(uint64_t h) const {
        if (shared != nullptr)
            shared->prefetch_slot(h);
        else
            cache.prefetch_slot(h);
    }
    inline void prefetch_entry(uint64_t h) const {
        if (shared != nullptr)
            shared->prefetch_entry(h);
        else
            cache.prefetch_entry(h);
    }

    // A call's ids of many bytes become its result: out is moved into it, and a later call
    // takes a new buffer. Fresh pages cost the kernel a clearing each (10 MB of English, cl100k:
    // 4.5% of a warm pass's CPU), so a result gives its buffer back when it dies
    // (give_back_out), and a later call whose out is too small writes into one of those
    // instead (out_room): its pages are mapped already. They are kept while the ids they held
    // (`used_bytes` each: the pages written) come to at most `keep_bytes` together, the
    // caller's bound on what it keeps (a batch's groups give back one buffer each). Locked: a
    // result may die on any thread, while this state's thread takes a spare.
    void give_back_out(IdBuffer& ids, size_t used_bytes, size_t keep_bytes) {
        std::lock_guard<std::mutex> hold(spare_lock_);
        if (spare_used_ + used_bytes > keep_bytes) return;  // (the caller frees it)
        try {
            spares_.emplace_back();
        } catch (const std::bad_alloc&) {
            return;
        }
        spares_.back().ids.swap(ids);
        spares_.back().used = used_bytes;
        spare_used_ += used_bytes;
    }
    // out resized to at least `room` ids (their values unset), into a spare when out has less
    // room and a spare enough (the last given back first: its pages are the likeliest cached).
    void out_room(size_t room) {
        if (out.size() >= room) return;
        if (out.capacity() < room) {
            std::lock_guard<std::mutex> hold(spare_lock_);
            for (size_t i = spares_.size(); i-- > 0;) {
                if (spares_[i].ids.capacity() < room) continue;
                out.swap(spares_[i].ids);  // (out's smaller buffer, if any, is freed with the spare)
                spare_used_ -= spares_[i].used;
                spares_.erase(spares_.begin() + (std::ptrdiff_t)i);
                break;
            }
        }
        out.resize(room);
    }

    // After a call: free the UTF-8 and id buffers, and the merge buffers, that a huge call grew
    // past `keep` bytes (the caller's settling, and a call's that ends by an exception).
    void settle(size_t keep) {
        if (utf8.size() > keep) {
            utf8.clear();
            utf8.shrink_to_fit();
        }
        if (out.size() * sizeof(int32_t) > keep) {
            out.clear();
            out.shrink_to_fit();
        }
        trim(keep);
    }

    // Bytes the merge buffers hold (their capacities).
    size_t merge_buffer_bytes() const {
        size_t held = (sid.capacity() + span.capacity()) * sizeof(int32_t) +
                      (heap.capacity() + ranks.capacity() + dead.capacity()) * sizeof(uint64_t);
        for (const RankBucket& b : buckets) held += b.cap * sizeof(int32_t);
        return held;
    }
    // ... and every buffer settle bounds.
    size_t buffer_bytes() const { return utf8.capacity() + out.capacity() * sizeof(int32_t) + merge_buffer_bytes(); }

    // Free the merge buffers when they hold more than `keep` bytes (after a huge chunk).
    void trim(size_t keep) {
        if (merge_buffer_bytes() <= keep) return;
        IdBuffer().swap(sid);
        IdBuffer().swap(span);
        std::vector<uint64_t>().swap(dead);
        heap.release();
        std::vector<RankBucket>().swap(buckets);
        used_buckets = 0;
        ranks.release();
    }

  private:
    struct Spare {
        IdBuffer ids;
        size_t used;  // bytes of ids its result held
    };
    std::vector<Spare> spares_;  // buffers of ids given back (give_back_out), for out_room
    size_t spare_used_ = 0;      // their used bytes, summed
    std::mutex spare_lock_;
};

// The encoding tables. Built once, then read-only: many threads may encode at once, each with
// its own EncodeScratch.

// Buffers of a state bigger than this are freed after a call instead of kept for the next one.
static const size_t KEEP_BUFFER_BYTES = (size_t)64 << 20;

// Settles a state's scratch (settle(KEEP_BUFFER_BYTES)) when the call it guards ends by an
// exception (Ctrl-C: poll.h's Interrupted; bad_alloc), as the caller does after a call that
// returns: an interrupted call leaves held what a finished one would, not a huge call's
// buffers until the next call.
struct SettleOnThrow {
    EncodeScratch& st;
    const int pending = std::uncaught_exceptions();
    ~SettleOnThrow() {
        if (std::uncaught_exceptions() > pending) st.settle(KEEP_BUFFER_BYTES);
    }
};

class BpeEncoder {
  public:
    int merge_rule = MERGE_REPLAY;
    int scan_max = SCAN_MAX_CHUNK;   // 0..SCAN_MAX_CHUNK; 0 = always the heap (tests use it)
    int64_t rank_queue_min = RANK_QUEUE_MIN;  // longer chunks use the rank queue (tests vary it)
    // merge_by_rank hands over to the heap once it sorted more than this many times the
    // positions pushed (0: at its first sort; tests use it)
    int64_t rank_sort_budget = 4;
    int64_t backtrack_min = BACKTRACK_MIN;  // longer chunks are backtracked (tests vary it)
    // bytes of long chunks merged before the backtracking tables are built (-1: the default,
    // BACKTRACK_BUDGET_PER_TOKEN_BYTE per byte of the vocabulary; 0: on the first; tests vary it)
    int64_t backtrack_budget = -1;
    // MERGE_TOKEN: chunks of up to this many bytes are merged by merge_spans (0: never; tests
    // vary it; at most SHORT_KEY_MAX)
    int short_token_max = (int)SHORT_KEY_MAX;
    int32_t byte_id[256];            // id of each single byte, -1 if none

    BpeEncoder() {
        for (int b = 0; b < 256; ++b) byte_id[b] = -1;
    }

    // Index the vocabulary: tokens[i] is id i's bytes ("" for an unused id). Fills byte_id and
    // the bytes -> id map every later step looks up (no per-token allocation). Returns -1, or
    // the id of the first token that repeats an earlier one (its earlier id in *first).
    // The tokens here and in the other building steps are views of the caller's bytes (the
    // Python bytes objects, no copy), valid only while the tables are built: what the tables
    // keep, they copy (token_blob_, the maps' keys).
    int64_t set_tokens(const std::vector<std::string_view>& tokens, int64_t* first) {
        ids_.clear();
        ids_.reserve(tokens.size());
        token_blob_.clear();
        token_ends_.clear();
        for (const std::string_view t : tokens) {
            token_blob_ += t;
            token_ends_.push_back((uint32_t)token_blob_.size());
        }
        std::vector<uint64_t> hashes(tokens.size());
        for (size_t i = 0; i < tokens.size(); ++i)
            hashes[i] = bytes_map_hash((const uint8_t*)tokens[i].data(), tokens[i].size());
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (i + PIPELINE_DISTANCE < tokens.size()) ids_.prefetch_slot(hashes[i + PIPELINE_DISTANCE]);
            const uint8_t* p = (const uint8_t*)tokens[i].data();
            size_t n = tokens[i].size();
            if (n == 0) continue;
            int64_t count = 0;
            const int32_t* seen = ids_.find(p, n, hashes[i], &count);
            if (seen != nullptr) {
                *first = seen[0];
                return (int64_t)i;
            }
            int32_t id = (int32_t)i;
            ids_.insert(p, n, hashes[i], &id, 1);
            if (n == 1) byte_id[p[0]] = id;
        }
        if (merge_rule == MERGE_TOKEN && tokens.size() < ((size_t)1 << 27)) index_short_tokens(tokens);
        return -1;
    }

    // MERGE_TOKEN's table of the tokens of 2..SHORT_KEY_MAX bytes (merge_spans; for fewer than
    // 2^27 tokens, whose ids fit its packed ranks). After the duplicate check: one id per key.
    void index_short_tokens(const std::vector<std::string_view>& tokens) {
        size_t count = 0;
        for (const std::string_view t : tokens) count += t.size() >= 2 && t.size() <= SHORT_KEY_MAX;
        short_tokens_.reset(count);
        two_byte_id_.assign(1 << 16, -1);
        longest3_.assign(1 << 16, 0);
        all_bytes_ = std::all_of(byte_id, byte_id + 256, [](int32_t id) { return id >= 0; });
        for (size_t i = 0; i < tokens.size(); ++i) {
            size_t n = tokens[i].size();
            if (n < 2 || n > SHORT_KEY_MAX) continue;
            const uint8_t* t = (const uint8_t*)tokens[i].data();
            if (n == 2) two_byte_id_[(size_t)t[0] << 8 | t[1]] = (int32_t)i;
            if (n >= 3) {
                uint8_t& longest = longest3_[three_bytes_slot(t)];
                if (n > longest) longest = (uint8_t)n;
            }
            uint64_t w0, w1;
            pack_short((const uint8_t*)tokens[i].data(), n, n, &w0, &w1);
            short_tokens_.insert(w0, w1, (int32_t)i);
        }
    }

    // The id of the token with bytes p[0:n], or -1. After set_tokens.
    int32_t token_id(const uint8_t* p, size_t n) const {
        int64_t count = 0;
        const int32_t* found = n ? ids_.find(p, n, bytes_map_hash(p, n), &count) : nullptr;
        return found ? found[0] : -1;
    }

    // token_id of the m byte strings p[offsets[i]:offsets[i + 1]] into out, the slots of
    // PIPELINE_DISTANCE strings ahead prefetched (random accesses into a big table).
    void token_ids(const uint8_t* p, const int64_t* offsets, int64_t m, int32_t* out) const {
        uint64_t ring[PIPELINE];
        auto hash_of = [&](int64_t i) { return bytes_map_hash(p + offsets[i], (size_t)(offsets[i + 1] - offsets[i])); };
        for (int64_t i = 0; i < m && i < PIPELINE_DISTANCE; ++i) {
            ring[i % PIPELINE] = hash_of(i);
            ids_.prefetch_slot(ring[i % PIPELINE]);
        }
        for (int64_t i = 0; i < m; ++i) {
            int64_t ahead = i + PIPELINE_DISTANCE;
            if (ahead < m) {
                ring[ahead % PIPELINE] = hash_of(ahead);
                ids_.prefetch_slot(ring[ahead % PIPELINE]);
            }
            size_t n = (size_t)(offsets[i + 1] - offsets[i]);
            int64_t count = 0;
            const int32_t* found = n ? ids_.find(p + offsets[i], n, ring[i % PIPELINE], &count) : nullptr;
            out[i] = found ? found[0] : -1;
        }
    }

    // The pairs of MERGE_TOKEN: every split of every token into two tokens, keyed by the
    // whole token's id as rank and new id. After set_tokens. The lookups of one token's
    // splits are random accesses into a table bigger than the CPU caches: their slots are
    // all prefetched first, then probed, so the misses overlap.
    void token_pairs(const std::vector<std::string_view>& tokens, std::vector<uint64_t>& keys,
                     std::vector<uint64_t>& vals) const {
        // Only splits whose two sides have lengths some token has can be two tokens: hashing
        // every split of an n-byte token costs n^2 (a 10 MB line in a rank file took minutes).
        size_t longest = 0;
        for (const std::string_view t : tokens) longest = std::max(longest, t.size());
        std::vector<uint8_t> is_length(longest + 1, 0);
        for (const std::string_view t : tokens) is_length[t.size()] = 1;
        auto splits = [&](size_t k, size_t n) { return is_length[k] && is_length[n - k]; };
        // a batch of tokens at a time: hashes of those t[0:k] and t[k:n] of the batch, their
        // slots prefetched, then probed in order
        const size_t BATCH = 16;
        std::vector<uint64_t> head, tail;
        for (size_t begin = 0; begin < tokens.size(); begin += BATCH) {
            size_t end = std::min(tokens.size(), begin + BATCH);
            head.clear();
            tail.clear();
            for (size_t i = begin; i < end; ++i) {
                const uint8_t* t = (const uint8_t*)tokens[i].data();
                size_t n = tokens[i].size();
                for (size_t k = 1; k < n; ++k) {
                    if (!splits(k, n)) continue;
                    head.push_back(bytes_map_hash(t, k));
                    tail.push_back(bytes_map_hash(t + k, n - k));
                    ids_.prefetch_slot(head.back());
                    ids_.prefetch_slot(tail.back());
                }
            }
            size_t h = 0;
            for (size_t i = begin; i < end; ++i) {
                const uint8_t* t = (const uint8_t*)tokens[i].data();
                size_t n = tokens[i].size();
                for (size_t k = 1; k < n; ++k) {
                    if (!splits(k, n)) continue;
                    const size_t at = h++;
                    int64_t count = 0;
                    const int32_t* l = ids_.find(t, k, head[at], &count);
                    if (l == nullptr) continue;
                    const int32_t* r = ids_.find(t + k, n - k, tail[at], &count);
                    if (r == nullptr) continue;
                    keys.push_back(pair_key(*l, *r));
                    vals.push_back(((uint64_t)i << 32) | (uint32_t)i);
                }
            }
        }
    }

    // The pairs of MERGE_REPLAY and MERGE_PAIR: merge i joins left[i] and right[i] (rank i)
    // into the token of their concatenation, whose id goes to made[i]. After set_tokens.
    // made_given: made[0:n] holds the ids already (a reader's or the learner's), each checked
    // against its two parts' bytes instead of looked up (for a 32k SentencePiece model's
    // 71,000 merges, 3.5 ms of lookups into a table bigger than the caches).
    // Returns -1, or the index of the first merge naming an unknown token (*why = 1), whose
    // concatenation is not a token (*why = 2), or whose given id is not its concatenation
    // (*why = 3).
    int64_t merge_pairs(const std::vector<std::string_view>& tokens, const int32_t* left, const int32_t* right,
                        int64_t n, int32_t* made, std::vector<uint64_t>& keys, std::vector<uint64_t>& vals,
                        int* why, bool made_given = false) const {
        const int64_t size = (int64_t)tokens.size();
        int64_t known = 0;  // the merges before the first that names an unknown token
        while (known < n) {
            const int32_t a = left[known], b = right[known];
            if (a < 0 || b < 0 || a >= size || b >= size || tokens[a].empty() || tokens[b].empty()) break;
            ++known;
        }
        if (made_given) {
            // (bytes_equal: inline word compares, where compare() called memcmp twice a merge)
            for (int64_t i = 0; i < known; ++i) {
                const std::string_view a = tokens[left[i]], b = tokens[right[i]];
                const int32_t c = made[i];
                if (c < 0 || c >= size || tokens[c].size() != a.size() + b.size() ||
                    !bytes_equal((const uint8_t*)tokens[c].data(), (const uint8_t*)a.data(), a.size()) ||
                    !bytes_equal((const uint8_t*)tokens[c].data() + a.size(), (const uint8_t*)b.data(), b.size())) {
                    *why = 3;
                    return i;
                }
            }
        }
        // their concatenations, looked up together a batch at a time (token_ids prefetches the
        // slots ahead: one lookup after another waited for each miss, 25-30 ms of o200k's
        // 200,000 merges); a batch of at most MERGE_BATCH merges and about MERGE_BATCH_BYTES
        // bytes, so that a bad merge early in a file of long tokens is found before the rest
        // are joined (memory as the check of one merge at a time took)
        const int64_t MERGE_BATCH = 4096;
        const size_t MERGE_BATCH_BYTES = (size_t)1 << 20;
        std::string joined;
        std::vector<int64_t> offsets((size_t)MERGE_BATCH + 1, 0);
        for (int64_t from = 0, count = 0; !made_given && from < known; from += count) {
            joined.clear();
            for (count = 0; from + count < known && count < MERGE_BATCH && joined.size() < MERGE_BATCH_BYTES; ++count) {
                joined += tokens[left[from + count]];
                joined += tokens[right[from + count]];
                offsets[(size_t)count + 1] = (int64_t)joined.size();
            }
            token_ids((const uint8_t*)joined.data(), offsets.data(), count, made + from);
            for (int64_t k = 0; k < count; ++k) {
                if (made[from + k] < 0) {
                    *why = 2;
                    return from + k;
                }
            }
        }
        if (known < n) {
            *why = 1;
            return known;
        }
        keys.reserve(keys.size() + (size_t)n);
        vals.reserve(vals.size() + (size_t)n);
        for (int64_t i = 0; i < n; ++i) {
            keys.push_back(pair_key(left[i], right[i]));
            vals.push_back(((uint64_t)i << 32) | (uint32_t)made[i]);
        }
        return -1;
    }

    // Fill the pair table: keys[i] = pair_key(left, right), vals[i] = (rank << 32) | new id,
    // in rank order. A repeated pair: MERGE_PAIR keeps the last rank (as tokenizers does),
    // MERGE_REPLAY keeps every rank, MERGE_TOKEN the first.
    static constexpr size_t PAIRS_AHEAD = 16;  // build_pairs asks for the slot of the pair this far ahead
    void build_pairs(const std::vector<uint64_t>& keys, const std::vector<uint64_t>& vals) {
        size_t cap = 16;
        while (cap < 2 * keys.size() + 16) cap *= 2;
        pairs_.reset(cap);  // never grows below: at most half full
        pair_filter_.reset(keys.size());
        repeats_.clear();
        for (size_t i = 0; i < keys.size(); ++i) {
            if (i + PAIRS_AHEAD < keys.size()) pairs_.prefetch(keys[i + PAIRS_AHEAD]);  // (random slots, 8-16 MB)
            pair_filter_.add(keys[i]);
            size_t j = pairs_.index(keys[i]);
            if (!pairs_.occupied(j))
                pairs_.insert_at(j, keys[i], vals[i]);
            else if (merge_rule == MERGE_PAIR)
                pairs_.value(j) = vals[i];
            else if (merge_rule == MERGE_REPLAY)
                repeats_[keys[i]].push_back(vals[i]);
        }
    }

    // MERGE_PAIR: whether the merges are the token rule's, so that chunks of up to
    // SHORT_KEY_MAX bytes may take merge_spans; if so, it indexes the short tokens and turns
    // that path on. After build_pairs. Holds when, over the tokens t of 2..SHORT_KEY_MAX bytes,
    //  (1) every split of t into two tokens is a merge (each merge's concatenation is a token
    //      already: merge_pairs), so two adjacent symbols merge under either rule exactly when
    //      their bytes together are a token; and
    //  (2) every merge that makes t ranks below every merge that makes a token of a higher id,
    //      so the lowest-ranked pair is always one whose token has the lowest id.
    // The two rules then choose alike at every step where a single pair has the lowest token
    // id; merge_spans declines a chunk at any step where two pairs share it (their ranks may
    // order them otherwise than leftmost first: Llama 3's merges, from tiktoken's ranks, rank
    // the splits of one token by the ids of their parts). Hugging Face files converted from
    // tiktoken's ranks (Llama 3's) pass the test; trained merge lists, in general, do not.
    // A list that names a pair twice is declined: its first rank would not count (the pair
    // rule keeps the last), and no converted list has one.
    // left[0:m], made[0:m]: each merge's left token and the token it makes (merge_pairs).
    bool use_spans_for_pairs(const std::vector<std::string_view>& tokens, const int32_t* left, const int32_t* made,
                             int64_t m) {
        // (ids below 2^27 - 1: merge_spans's packed ranks, and no id whose rank is NONE's)
        if (merge_rule != MERGE_PAIR || tokens.size() >= ((size_t)1 << 27) - 1) return false;
        if ((int64_t)pairs_.size() != m) return false;  // (a pair listed twice)
        // (2): with each merge ranked by its index, the merges that make short tokens come in
        // the order of those tokens' ids. This pass rules out most merge lists (a trained one).
        // And for (1), the splits of each short token that a merge makes (bit k: the token of
        // t[0:k] and the one of t[k:n]), which need no lookup; each other split must have a
        // side that is no token (Llama 3: 280,000 of the 670,000 splits of its short tokens
        // are merges). (Lengths from token_ends_, 4 bytes a token: tokens[i].size() read 32.)
        auto length = [&](int32_t i) { return token_ends_[i] - (i > 0 ? token_ends_[i - 1] : 0); };
        std::vector<uint16_t> merged_at(tokens.size(), 0);
        int32_t last = -1;
        for (int64_t i = 0; i < m; ++i) {
            if (length(made[i]) > SHORT_KEY_MAX) continue;
            if (made[i] < last) return false;
            last = made[i];
            merged_at[made[i]] |= (uint16_t)(1u << length(left[i]));
        }
        index_short_tokens(tokens);  // (its tables answer the check's lookups too)
        // A batch of tokens at a time, so that the random accesses into the big table overlap:
        // the slots of every such split's two parts prefetched, then their ids found.
        const size_t BATCH = 64;
        struct Part {
            uint64_t w0, w1;
            uint32_t home, n;
        };
        std::vector<Part> parts;
        auto part = [&](const uint8_t* p, size_t n) {
            Part x{0, 0, 0, (uint32_t)n};
            if (n >= 3) {
                pack_short(p, n, n, &x.w0, &x.w1);
                x.home = (uint32_t)short_tokens_.home(x.w0, x.w1);
                short_tokens_.prefetch(x.home);
            }
            parts.push_back(x);
        };
        auto id_of = [&](const uint8_t* p, const Part& x) -> int32_t {
            if (x.n == 1) return byte_id[p[0]];
            if (x.n == 2) return two_byte_id_[(size_t)p[0] << 8 | p[1]];
            return short_tokens_.find(x.home, x.w0, x.w1);
        };
        // f(t, n, k) for each split k of each short token i in [begin, end) that no merge makes
        auto each_other_split = [&](size_t begin, size_t end, auto f) {
            for (size_t i = begin; i < end; ++i) {
                const uint8_t* t = (const uint8_t*)tokens[i].data();
                size_t n = tokens[i].size();
                if (n < 2 || n > SHORT_KEY_MAX) continue;
                for (size_t k = 1; k < n; ++k)
                    if (!(merged_at[i] >> k & 1)) f(t, n, k);
            }
        };
        bool holds = true;
        for (size_t begin = 0; begin < tokens.size() && holds; begin += BATCH) {
            size_t end = std::min(tokens.size(), begin + BATCH);
            parts.clear();
            each_other_split(begin, end, [&](const uint8_t* t, size_t n, size_t k) {
                part(t, k);
                part(t + k, n - k);
            });
            const Part* x = parts.data();  // (the same splits again, in the same order: two parts each)
            each_other_split(begin, end, [&](const uint8_t* t, size_t n, size_t k) {
                (void)n;
                if (holds && id_of(t, x[0]) >= 0 && id_of(t + k, x[1]) >= 0) holds = false;  // (1)
                x += 2;
            });
        }
        if (!holds) {  // (the tables back to empty: no memory held for nothing)
            short_tokens_ = ShortTokenTable();
            std::vector<int32_t>().swap(two_byte_id_);
            std::vector<uint8_t>().swap(longest3_);
            return false;
        }
        spans_for_pairs_ = true;
        return true;
    }
    bool spans_for_pairs() const { return spans_for_pairs_; }

    // The whole-chunk lookup: every token, or (consistent) only the tokens BPE rebuilds from
    // their own bytes, so that the lookup is a pure shortcut. After build_pairs. "Every
    // token" is the map set_tokens made: no second copy.
    void add_whole_tokens(const std::vector<std::string_view>& tokens, bool consistent) {
        whole_all_ = !consistent;
        use_whole_ = true;
        whole_id_.clear();
        if (!consistent) return;
        EncodeScratch st;
        int32_t out[1];
        // (a token of backtrack_min bytes or more counts toward the backtracking budget here,
        // as any long chunk: a vocabulary of such tokens is one whose long chunks are common)
        for (size_t i = 0; i < tokens.size(); ++i) {
            const uint8_t* p = (const uint8_t*)tokens[i].data();
            int64_t n = (int64_t)tokens[i].size();
            if (n == 0) continue;
            if (n > 1 && !(bpe(p, n, st, out, 1) == 1 && out[0] == (int32_t)i)) continue;
            int32_t id = (int32_t)i;
            whole_id_.insert(p, (size_t)n, bytes_map_hash(p, (size_t)n), &id, 1);
        }
    }
    size_t whole_lookup_size() const { return !use_whole_ ? 0 : whole_all_ ? ids_.size() : whole_id_.size(); }

    // Ids of the m chunks dp[starts[c]:ends[c]] into op (room for their total length); the
    // chunks lie inside dp[0:len]. Counts chunks that missed the cache in *misses.
    int64_t encode_run(const uint8_t* dp, size_t len, const int64_t* starts, const int64_t* ends, int64_t m,
                       EncodeScratch& st, int32_t* op, int64_t* misses) const {
        SettleOnThrow settle_on_throw{st};
        int64_t count = 0;
        for (int64_t b = 0; b < m; b += FUSED_BLOCK) {
            int64_t got = encode_block(dp, len, starts + b, ends + b, std::min<int64_t>(FUSED_BLOCK, m - b), st,
                                       op + count, misses);
            if (got < 0) return got;
            count += got;
            st.poll.tick(std::min<int64_t>(FUSED_BLOCK, m - b));  // (a block's ids are out, its puts done)
        }
        return count;
    }

    // encode_run of at most FUSED_BLOCK chunks, in three loops, so that the memory accesses of
    // many chunks overlap instead of waiting one after the other. The first packs every chunk
    // of 2..SHORT_KEY_MAX bytes and prefetches its entry of the short-chunk cache (where most
    // chunks of a text end). The second copies out what that cache holds (a copy: the third
    // loop's inserts may replace an entry) and, for the other chunks, hashes them and
    // prefetches their slot of the big cache. The third writes the ids in order, encoding the
    // others (encode_chunk) while the key and ids of those a few steps ahead are prefetched,
    // and remembers them in the short-chunk cache.
    int64_t encode_block(const uint8_t* dp, size_t len, const int64_t* starts, const int64_t* ends, int64_t m,
                         EncodeScratch& st, int32_t* op, int64_t* misses) const {
        int32_t found[FUSED_BLOCK * SHORT_IDS_MAX];  // the ids of chunk c at found[SHORT_IDS_MAX * c]
        int32_t got[FUSED_BLOCK];                // their count; -1: chunk c is left to encode_chunk
        uint64_t hash[FUSED_BLOCK];
        uint64_t word0[FUSED_BLOCK], word1[FUSED_BLOCK];  // a short chunk's packed bytes
        const void* entry[FUSED_BLOCK];          // and its short-cache entry (nullptr: no lookup)
        int32_t todo[FUSED_BLOCK];               // the chunks left, in order
        int64_t left = 0;
        for (int64_t c = 0; c < m; ++c) {  // every short chunk's entry prefetched first
            int64_t s = starts[c], n = ends[c] - s;
            entry[c] = nullptr;
            // (a chunk that starts with a continuation byte, as any bytes may, would look like a
            // key of pack_pairs: not looked up)
            if (n < 2 || n > (int64_t)SHORT_KEY_MAX || (dp[s] & 0xC0) == 0x80) continue;
            pack_short(dp + s, (size_t)n, len - (size_t)s, &word0[c], &word1[c]);
            entry[c] = st.short_cache.entry(word0[c], word1[c]);
            ShortChunkCache::prefetch(entry[c]);
        }
        for (int64_t c = 0; c < m; ++c) {
            int64_t s = starts[c], n = ends[c] - s;
            int32_t* f = found + SHORT_IDS_MAX * c;
            got[c] = -1;
            if (n == 1) {
                f[0] = byte_id[dp[s]];
                if (f[0] >= 0) {
                    got[c] = 1;
                    continue;
                }
            } else if (n == 0) {
                got[c] = 0;
                continue;
            } else if (entry[c] != nullptr) {
                int k = ShortChunkCache::get(entry[c], word0[c], word1[c], f);
                if (k > 0) {
                    got[c] = k;
                    continue;
                }
            }
            hash[c] = hash_ahead(dp, s, ends[c], st);
            todo[left++] = (int32_t)c;
        }
        for (int64_t k = 0; k < left && k < PIPELINE_DISTANCE; ++k)
            if (hash[todo[k]] != 0) st.prefetch_entry(hash[todo[k]]);
        int64_t count = 0, next = 0;
        for (int64_t c = 0; c < m; ++c) {
            int32_t g = got[c];
            if (g > 0) {
                const int32_t* f = found + SHORT_IDS_MAX * c;
                for (int32_t i = 0; i < g; ++i) op[count + i] = f[i];
                count += g;
                continue;
            }
            if (g == 0) continue;
            int64_t ahead = next + PIPELINE_DISTANCE;
            if (ahead < left && hash[todo[ahead]] != 0) st.prefetch_entry(hash[todo[ahead]]);
            ++next;
            int64_t s = starts[c], n = ends[c] - s;
            bool packed = entry[c] != nullptr;  // (a short chunk: its key words are made)
            int64_t k = encode_chunk(dp + s, n, st, op + count, misses, hash[c], packed ? word0[c] : 0,
                                     packed ? word1[c] : 0);
            if (k < 0) return k;
            if (packed) st.short_cache.put(word0[c], word1[c], op + count, k);
            count += k;
        }
        st.short_cache.grow_if_thrashing((size_t)m);
        return count;
    }

    // Split valid UTF-8 dp[0:n] (n > 0) with a pattern whose chunks tile the text and encode it
    // into op, or st.out when op is null (room for n ids). Counts chunks in *chunks and cache
    // misses in *misses.
    int64_t encode_utf8(const uint8_t* dp, size_t n, int pattern, EncodeScratch& st, int64_t* chunks,
                        int64_t* misses, int32_t* op = nullptr) const {
        SettleOnThrow settle_on_throw{st};
        if (op == nullptr) op = st.out.data();
        if (n > UINT32_MAX) return encode_utf8_wide(dp, n, pattern, st, chunks, misses, op);
        size_t done;
        return encode_tiled_by<false>(TextList{&dp, &n, 1, nullptr}, pattern, st, chunks, misses, op, &done);
    }

    // The texts of one encode_tiled call, encoded one after another: text k is
    // texts[k][0:lengths[k]] (valid UTF-8, under 4 GB), its ids right after text k - 1's.
    struct TextList {
        const uint8_t* const* texts;
        const size_t* lengths;
        size_t count;
        int64_t* ends;  // (many texts) ends[k]: the ids written up to the end of text k
    };

    // encode_utf8 of every text texts[k][0:lengths[k]] (k < count; valid UTF-8, each under
    // 4 GB, empty ones too) in one pass of encode_tiled, each text's ids right after the one
    // before's in op, which has room for their bytes plus SHORT_IDS_MAX ids; ends[k]: the ids
    // written up to the end of text k. The chunks of many short texts (lines, sentences) share
    // its blocks, so that their lookups overlap as a long text's do (20 MB of English lines,
    // 586,000 texts, cl100k, one text per call: the first lookup of each text waited for its
    // set; 20% of the loop's time). The total ids; or, when a text fails (a byte outside the
    // vocabulary), a negative number, the texts before *done encoded (their ends set) and the
    // failing one among the FUSED_BLOCK + 1 from it (a block's: at most FUSED_BLOCK end in it),
    // for the caller to encode one by one.
    int64_t encode_utf8_many(const uint8_t* const* texts, const size_t* lengths, size_t count, int pattern,
                             EncodeScratch& st, int64_t* chunks, int64_t* misses, int32_t* op, int64_t* ends,
                             size_t* done) const {
        SettleOnThrow settle_on_throw{st};
        *done = 0;
        if (count == 0) return 0;
        return encode_tiled_by<true>(TextList{texts, lengths, count, ends}, pattern, st, chunks, misses, op, done);
    }

    // encode_tiled with the scanner of `pattern`, chosen once here: the loop is compiled per
    // scanner.
    template <bool MANY>
    int64_t encode_tiled_by(const TextList& in, int pattern, EncodeScratch& st, int64_t* chunks, int64_t* misses,
                            int32_t* op, size_t* done) const {
        switch (pattern) {
            case PAT_GPT2: return encode_tiled<PAT_GPT2, MANY>(in, st, chunks, misses, op, done);
            case PAT_CL100K: return encode_tiled<PAT_CL100K, MANY>(in, st, chunks, misses, op, done);
            case PAT_LLAMA3: return encode_tiled<PAT_LLAMA3, MANY>(in, st, chunks, misses, op, done);
            case PAT_QWEN: return encode_tiled<PAT_QWEN, MANY>(in, st, chunks, misses, op, done);
            case PAT_O200K: return encode_tiled<PAT_O200K, MANY>(in, st, chunks, misses, op, done);
            case PAT_TEKKEN: return encode_tiled<PAT_TEKKEN, MANY>(in, st, chunks, misses, op, done);
            default: return 0;  // (callers pass a tiling pattern: pattern_tiles)
        }
    }

    // encode_utf8 with the scanner of PATTERN, one pass over the bytes per block of
    // FUSED_BLOCK chunks, in three loops, so that the memory accesses of many chunks overlap
    // instead of waiting one after the other. The first scans the chunks and, while a chunk's
    // bytes are at hand, packs a short one (1..SHORT_KEY_MAX bytes, or a longer one of two-byte
    // letters or of one repeated byte: pack_pairs, pack_repeat) into its short-cache key,
    // computes the set it maps to and prefetches that set. The second writes the ids of the
    // hits before the block's first miss as it finds them; from that miss on, it looks each
    // chunk up in its set without a branch (the way that holds it, or none), and lists it if it
    // missed; a miss's hash is computed then and its slot of the chunk cache prefetched (on a
    // big text the short cache keeps only the commoner chunks).
    // The third writes the ids in order straight to op: a hit's from its way, anything else by
    // encode_chunk (chunk cache, whole lookup, BPE) while the chunk cache entries of the misses
    // a few steps ahead are prefetched; it remembers them in the short cache after the block
    // (so that every way the second loop found still holds its chunk in the third; a chunk that
    // comes again in its block is found in the chunk cache).
    // MANY: the texts of `in` one after another, a block's chunks running on from one text
    // into the next (encode_utf8_many); else in's one text.
    template <int PATTERN, bool MANY>
    int64_t encode_tiled(const TextList& in, EncodeScratch& st, int64_t* chunks, int64_t* misses, int32_t* op,
                         size_t* done) const {
        // chunk c is dp[start[c]:start[c + 1]] of the one text (n < 4 GB); MANY: at[c][0:length[c]]
        uint32_t start[FUSED_BLOCK + 1];
        const uint8_t* at[MANY ? FUSED_BLOCK : 1];
        uint32_t length[MANY ? FUSED_BLOCK : 1];
        // a chunk's short-cache key and lookup, side by side (the three loops read and write
        // them together: one line holds two chunks')
        struct Lookup {
            uint64_t w0, w1;    // a chunk's short-cache key (pack_short, pack_pairs, pack_repeat), or NO_KEY
            const void* entry;  // and its short-cache set (none_set(): no lookup)
            const void* way;    // the way holding the chunk, nullptr: a miss
        } look[FUSED_BLOCK];
        uint64_t hash[FUSED_BLOCK];              // a miss's hash_ahead
        int32_t todo[FUSED_BLOCK];               // the misses, in order; then those to put
        int64_t out_at[FUSED_BLOCK];             // where a miss's ids went in op (MANY: every chunk's)
        uint32_t got_ids[FUSED_BLOCK];           // how many
        uint32_t text_end[FUSED_BLOCK];          // MANY: the block's texts end before these chunks
        size_t k = 0;                            // the text being scanned
        const uint8_t* dp = in.texts[0];
        size_t n = in.lengths[0];
        ChunkStarts<PATTERN> scanner(dp, n);
        static_assert(std::is_trivially_destructible<ChunkStarts<PATTERN>>::value, "a scanner is built over another");
        ChunkCursor<PATTERN> cursor{scanner};
        size_t p = 0;
        int64_t count = 0;
        int64_t left;  // misses listed in todo so far
        // (one text: an offset a chunk, the store the scan makes; many: a pointer and a length,
        // one store more, which one text's warm passes measured 1-2% slower)
        auto chunk_at = [&](int64_t c) -> const uint8_t* { return MANY ? at[c] : dp + start[c]; };
        auto chunk_length = [&](int64_t c) -> uint32_t { return MANY ? length[c] : start[c + 1] - start[c]; };
        // chunk c in its set, without a branch: its way, or listed as a miss
        auto find = [&](int64_t c) {
            const void* x = ShortChunkCache::find(look[c].entry, look[c].w0, look[c].w1);
            look[c].way = x;
            todo[left] = (int32_t)c;
            left += x == nullptr;
        };
        while (MANY ? k < in.count : p < n) {
            const ShortChunkCache::Sets sets = st.short_cache.sets();  // (no put until the block's end)
            const size_t first_text = k;
            int64_t m = 0, ended = 0;
            left = 0;
            while (m < FUSED_BLOCK) {
                if (p == n) {
                    if (!MANY) break;
                    text_end[ended++] = (uint32_t)m;  // text k ends here (an empty one too)
                    if (++k == in.count) break;
                    dp = in.texts[k];
                    n = in.lengths[k];
                    p = 0;
                    if (k + TEXTS_AHEAD < in.count) {  // (each text's bytes: a miss where it starts and ends)
                        const uint8_t* later = in.texts[k + TEXTS_AHEAD];
                        __builtin_prefetch(later);
                        __builtin_prefetch(later + (in.lengths[k + TEXTS_AHEAD] - (in.lengths[k + TEXTS_AHEAD] != 0)));
                    }
                    // (built in place: a copy of a new one went through the stack, its stores
                    // waited for by its loads, 12% of the loop over English lines)
                    new (&scanner) ChunkStarts<PATTERN>(dp, n);
                    cursor.base = 0, cursor.rest = 0;
                    if (ended == FUSED_BLOCK) break;
                    continue;
                }
                size_t e = cursor.next(p);
                if constexpr (MANY) {
                    at[m] = dp + p;
                    length[m] = (uint32_t)(e - p);
                } else {
                    start[m] = (uint32_t)p;
                }
                size_t bytes = e - p;
                if (bytes - 1 <= SHORT_KEY_MAX - 1) {  // (unsigned)
                    pack_short(dp + p, bytes, n - p, &look[m].w0, &look[m].w1);
                    look[m].entry = sets.entry(look[m].w0, look[m].w1);
                    // asked for as soon as it is known: the rest of the block's scan covers the
                    // wait. (Prefetching from the lookup loop instead, 64 chunks ahead, left
                    // the first 64 of every block waiting: warm passes over 10 MB on a 2-core
                    // Intel Xeon, bench_warm_ab: cl100k 1.097x, o200k 1.095x, Llama 3 1.112x,
                    // code 1.046x. On a 2-core AMD EPYC an earlier build measured the two alike.)
                    ShortChunkCache::prefetch(look[m].entry);
                } else if ((bytes <= PAIRS_KEY_MAX && (dp[p + (dp[p] < 0x80)] & 0xE0) == 0xC0) || dp[p] == dp[p + 1]) {
                    // (a two-byte letter first, after an ASCII byte or not; or a repeated byte)
                    look[m].entry = long_chunk_key(dp, p, e, sets, st, &look[m].w0, &look[m].w1, &hash[m]);
                } else {  // (a key that no set holds: find() in none_set() gives nullptr)
                    look[m].entry = ShortChunkCache::none_set();
                    look[m].w0 = look[m].w1 = ShortChunkCache::NO_KEY;
                    // a sure miss: its chunk cache slot asked for now, a block ahead of its
                    // lookup (asked for after the second loop, the first PIPELINE_DISTANCE
                    // misses of a block waited for their slots: Russian, a quarter of whose
                    // chunks are longer than SHORT_KEY_MAX)
                    hash[m] = hash_ahead(dp, (int64_t)p, (int64_t)e, st);
                }
                p = e;
                ++m;
            }
            start[m] = (uint32_t)p;
            *chunks += m;
            // a hit writes SHORT_IDS or SHORT_IDS_MAX ids whatever its count. op has room for n
            // ids, and no more ids than bytes come before a chunk, so that fits but for the
            // chunks that start within SHORT_IDS_MAX - 1 bytes of the text's end: those are not
            // looked up (MANY: op has SHORT_IDS_MAX ids more, and a text's extra ids are
            // written over by the next's)
            if (!MANY && p == n)
                for (int64_t c = m - 1; c >= 0 && start[c] + SHORT_IDS_MAX > n; --c)
                    look[c].entry = ShortChunkCache::none_set();
            const bool short_whole = whole_in_short();
            // the hits before the block's first miss, found and written in one loop (the
            // second warm pass over 10 MB of English misses one chunk in 150, later ones fewer:
            // half a block's chunks or more come before it); the loops below start at that miss
            int64_t first = 0;
            for (; first < m; ++first) {
                const void* x = ShortChunkCache::find(look[first].entry, look[first].w0, look[first].w1);
                if (x == nullptr) break;
                if (MANY) out_at[first] = count;
                count += ShortChunkCache::copy_ids(x, op + count);
            }
            for (int64_t c = first; c < m; ++c) {
                find(c);
                if (look[c].way != nullptr) continue;
                const uint32_t bytes = chunk_length(c);
                if (bytes > SHORT_KEY_MAX && look[c].w1 == ShortChunkCache::NO_KEY) continue;  // (hashed in the scan)
                // a miss: its slot of the chunk cache is prefetched now, so that it has arrived
                // by the time the fourth loop prefetches the key and ids it points at
                hash[c] = hash_ahead(chunk_at(c), 0, (int64_t)bytes, st);
                if (short_whole && bytes >= 2 && bytes <= SHORT_KEY_MAX)
                    prefetch_short_token(chunk_at(c), (int64_t)bytes, look[c].w0, look[c].w1);
            }
            for (int64_t j = 0; j < left && j < PIPELINE_DISTANCE; ++j)
                if (hash[todo[j]] != 0) st.prefetch_entry(hash[todo[j]]);
            int64_t next = 0, puts = 0;
            for (int64_t c = first; c < m; ++c) {
                const void* x = look[c].way;
                if (MANY) out_at[c] = count;
                if (__builtin_expect(x != nullptr, 1)) {
                    count += ShortChunkCache::copy_ids(x, op + count);
                    continue;
                }
                int64_t ahead = ++next + PIPELINE_DISTANCE - 1;  // (todo[next - 1] == c)
                if (ahead < left && hash[todo[ahead]] != 0) st.prefetch_entry(hash[todo[ahead]]);
                // (a short chunk's packed words: its slot among the short tokens was prefetched)
                int64_t got = encode_chunk(chunk_at(c), (int64_t)chunk_length(c), st, op + count, misses, hash[c],
                                           look[c].w0, look[c].w1);
                if (got < 0) {
                    *done = first_text;  // (the texts of this block: the caller's, one by one)
                    return got;
                }
                if (look[c].w1 != ShortChunkCache::NO_KEY) {  // (a key of either form: every short chunk has one)
                    todo[puts++] = (int32_t)c;  // (todo[0:next] are done with)
                    out_at[c] = count;
                    got_ids[c] = (uint32_t)got;
                }
                count += got;
            }
            for (int64_t j = 0; j < puts; ++j) {
                int64_t c = todo[j];
                st.short_cache.put(look[c].w0, look[c].w1, op + out_at[c], got_ids[c]);
            }
            st.short_cache.grow_if_thrashing((size_t)m);
            if (MANY)
                for (int64_t j = 0; j < ended; ++j)
                    in.ends[first_text + j] = text_end[j] < m ? out_at[text_end[j]] : count;
            st.poll.tick(m);  // (between blocks: the block's ids are out and its puts done)
        }
        *done = MANY ? in.count : 1;
        return count;
    }

    // encode_tiled's scan, for a chunk dp[p:e] of more than SHORT_KEY_MAX bytes that starts
    // with a two-byte letter (after an ASCII byte or not) or with a byte twice: its key of
    // pack_pairs or pack_repeat into (*w0, *w1) and its set, prefetched; or, when it has none,
    // what the scan loop does for a sure miss (its three lines again: shared through a helper
    // given look's fields, they cost the loop 0.6% more instructions on English). Out of the
    // scan loop (cold, not inlined): there its registers made the loop's own keys go through
    // memory, 5 instructions a chunk more on English.
    __attribute__((noinline, cold)) const void* long_chunk_key(const uint8_t* dp, size_t p, size_t e,
                                                               const ShortChunkCache::Sets& sets, EncodeScratch& st,
                                                               uint64_t* w0, uint64_t* w1, uint64_t* hash) const {
        PackedKey key = pack_pairs(dp + p, e - p);
        if (key.w1 == 0) key = pack_repeat(dp + p, e - p);
        if (key.w1 != 0) {
            *w0 = key.w0;
            *w1 = key.w1;
            const void* entry = sets.entry(key.w0, key.w1);
            ShortChunkCache::prefetch(entry);
            return entry;
        }
        *w0 = *w1 = ShortChunkCache::NO_KEY;
        *hash = hash_ahead(dp, (int64_t)p, (int64_t)e, st);
        return ShortChunkCache::none_set();
    }

    // encode_utf8 for a text of 4 GB or more (offsets past 32 bits): chunk by chunk.
    __attribute__((noinline)) int64_t encode_utf8_wide(const uint8_t* dp, size_t n, int pattern, EncodeScratch& st,
                                                       int64_t* chunks, int64_t* misses, int32_t* op) const {
        int64_t count = 0;
        for (size_t p = 0; p < n;) {
            size_t e = chunk_end(dp, n, pattern, p);
            int64_t got = encode_chunk(dp + p, (int64_t)(e - p), st, op + count, misses, 0);
            if (got < 0) return got;
            count += got;
            ++*chunks;
            p = e;
            st.poll.tick();
        }
        return count;
    }

    // encode_utf8 into 16-bit ids (the caller's promise: every id is below 2^16), for a huge
    // text whose ids are held once at the width they are kept: a chunk of at least
    // U16_DIRECT_MIN bytes is backtracked straight into out (the ids are the search's stack, see
    // Backtracker::encode); the other chunks are encoded in runs of at most FUSED_BLOCK chunks
    // and U16_DIRECT_MIN bytes by encode_block into st.out, then copied down. (A chunk the
    // backtracker does not take goes through st.out alone, at 4 bytes per id.)
    int64_t encode_utf8_u16(const uint8_t* dp, size_t n, int pattern, EncodeScratch& st, int64_t* chunks,
                            int64_t* misses, uint16_t* out) const {
        SettleOnThrow settle_on_throw{st};
        int64_t starts[FUSED_BLOCK];
        int64_t ends[FUSED_BLOCK];
        int64_t m = 0, run_bytes = 0, count = 0;
        auto flush = [&]() -> int64_t {  // the run of chunks so far, through st.out
            if (m == 0) return 0;
            st.out_room((size_t)run_bytes);
            int64_t got = encode_block(dp, n, starts, ends, m, st, st.out.data(), misses);
            if (got < 0) return got;
            for (int64_t i = 0; i < got; ++i) out[count + i] = (uint16_t)st.out[i];
            count += got;
            m = run_bytes = 0;
            return 0;
        };
        size_t p = 0;
        while (p < n) {
            size_t s = p;
            p = chunk_end(dp, n, pattern, p);
            int64_t len = (int64_t)(p - s);
            ++*chunks;
            st.poll.tick();
            if (m == FUSED_BLOCK || run_bytes + len > U16_DIRECT_MIN) {
                int64_t bad = flush();
                if (bad < 0) return bad;
            }
            if (len >= U16_DIRECT_MIN) {
                // (a chunk not backtracked here is counted toward the budget where it is merged)
                const Backtracker* bt =
                    len >= backtrack_min && len > scan_max && backtrack_due(len) ? backtracker_for(len) : nullptr;
                if (bt != nullptr) {
                    for (size_t i = s; i < p; ++i)
                        if (byte_id[dp[i]] < 0) return -1 - (int64_t)dp[i];
                    int64_t got = bt->encode(dp + s, len, st.dead, st.memo, out + count, len, st.poll);
                    ++*misses;
                    if (got >= 0) {
                        count += got;
                        continue;
                    }
                    backtrack_fallbacks_.fetch_add(1, std::memory_order_relaxed);
                }
            }
            starts[m] = (int64_t)s;
            ends[m] = (int64_t)p;
            ++m;
            run_bytes += len;
        }
        int64_t bad = flush();
        return bad < 0 ? bad : count;
    }

    // Ids of words given as base symbol ids (word k is symbols[ends[k-1]:ends[k]], ends
    // checked by the caller) into out (room for ends[words-1] ids): the same merge loop as
    // encode_run, started from the caller's symbols. A negative symbol never merges.
    // out_ends (may be null): out_ends[k] = the ids of words 0..k.
    int64_t encode_symbols(const int32_t* symbols, const int64_t* ends, int64_t words, EncodeScratch& st,
                           int32_t* out, int64_t* out_ends = nullptr) const {
        SettleOnThrow settle_on_throw{st};
        int64_t start = 0, total = 0;
        for (int64_t w = 0; w < words; ++w) {
            int64_t length = ends[w] - start;
            if (length > 0) {
                if ((int64_t)st.sid.size() < length) st.sid.resize(length);
                int32_t* sid = st.sid.data();
                std::memcpy(sid, symbols + start, length * sizeof(int32_t));
                if (length <= scan_max)
                    total += merge_scan(sid, length, out + total, length);
                else
                    total += merge_long(length, st, out + total, length);
                start = ends[w];
            }
            if (out_ends != nullptr) out_ends[w] = total;
            st.poll.tick();
        }
        return total;
    }

    // The backtracking tables (built now if no long chunk built them yet): usable or not, why,
    // their size.
    const Backtracker& backtrack_tables() const {
        backtracker();
        return *backtrack_;
    }
    // Whether the backtracking tables are built (by a long chunk or backtrack_tables()).
    bool backtrack_built() const { return backtrack_built_.load(std::memory_order_acquire); }
    // Long chunks the backtracker gave up on (the merge loops took them): 0 for a usable model,
    // whose search always finds the encoding; tests check it, since the ids alone would not
    // show a broken table (the loops give the same ids).
    int64_t backtrack_fallbacks() const { return backtrack_fallbacks_.load(std::memory_order_relaxed); }
    // The budget in effect (backtrack_budget, or the default for this vocabulary).
    int64_t backtrack_budget_bytes() const {
        return backtrack_budget >= 0 ? backtrack_budget
                                     : BACKTRACK_BUDGET_PER_TOKEN_BYTE * (int64_t)token_blob_.size();
    }

  private:
    PairTable<uint64_t> pairs_;  // pair_key -> (rank << 32) | new id
    KeyFilter pair_filter_;      // pairs_'s keys (lookup)
    // MERGE_REPLAY only: the later ranks of a pair the merge list repeats (rare; a pair merged
    // again after a duplicate merge re-created one of its tokens), ascending
    std::unordered_map<uint64_t, std::vector<uint64_t>> repeats_;
    BytesMap ids_;        // every token's bytes -> its id (set_tokens)
    BytesMap whole_id_;   // the consistent tokens, when the whole-chunk lookup is not all of ids_
    ShortTokenTable short_tokens_;  // MERGE_TOKEN: the tokens of 2..SHORT_KEY_MAX bytes (merge_spans)
    std::vector<int32_t> two_byte_id_;  // and of 2 bytes by (b0 << 8 | b1), -1: none (256 KB: L2)
    // and the length of the longest of 3 bytes or more that starts with the 3 bytes hashed to
    // each slot (the longest of those colliding there; 0: none; 64 KB)
    std::vector<uint8_t> longest3_;
    bool all_bytes_ = false;  // every byte has a token: merge_spans checks no byte
    bool spans_for_pairs_ = false;  // MERGE_PAIR whose short chunks take merge_spans (use_spans_for_pairs)
    bool use_whole_ = false, whole_all_ = false;
    std::string token_blob_;             // every token's bytes, id order (set_tokens)
    std::vector<uint32_t> token_ends_;   // token i ends at token_ends_[i] in token_blob_
    mutable std::once_flag backtrack_once_;
    mutable std::unique_ptr<Backtracker> backtrack_;
    mutable std::atomic<bool> backtrack_built_{false};
    mutable std::atomic<int64_t> long_bytes_{0};  // bytes of long chunks merged while not built
    mutable std::atomic<int64_t> backtrack_fallbacks_{0};  // see backtrack_fallbacks()

    // (rank << 32) | new id of pair (a, b), or NO_MERGE when the pair never merges.
    // (Most pairs a first pass looks up are no merge, e.g. two Chinese characters' tokens:
    // the filter answers those without the probe, a cache miss in a table of 8-16 MB.)
    inline uint64_t lookup(int32_t a, int32_t b) const {
        uint64_t key = pair_key(a, b);
        if (!pair_filter_.maybe(key)) return NO_MERGE;
        const uint64_t* v = pairs_.find(key);
        return v ? *v : NO_MERGE;
    }
    inline void prefetch_pair(int32_t a, int32_t b) const {
        uint64_t key = pair_key(a, b);
        if (pair_filter_.maybe(key)) pairs_.prefetch(key);
    }

    // Like lookup, but the lowest rank of the pair that is at least `floor`.
    inline uint64_t lookup_from(int32_t a, int32_t b, uint32_t floor) const {
        uint64_t v = lookup(a, b);
        if (v == NO_MERGE || (uint32_t)(v >> 32) >= floor) return v;
        if (repeats_.empty()) return NO_MERGE;
        auto it = repeats_.find(pair_key(a, b));
        if (it == repeats_.end()) return NO_MERGE;
        for (uint64_t r : it->second)
            if ((uint32_t)(r >> 32) >= floor) return r;
        return NO_MERGE;
    }

    // Hash of a cacheable chunk with its cache slot prefetched; 0 for the others.
    inline uint64_t hash_ahead(const uint8_t* dp, int64_t s, int64_t e, EncodeScratch& st) const {
        if (e - s < 2 || e - s > CACHE_MAX_CHUNK) return 0;
        uint64_t h = bytes_map_hash(dp + s, (size_t)(e - s));
        st.prefetch_slot(h);
        return h;
    }

    // Whether a chunk of 2..SHORT_KEY_MAX bytes takes the whole-chunk lookup in short_tokens_
    // before the cache (every token of those lengths is there, one id per key as in ids_).
    inline bool whole_in_short() const { return use_whole_ && whole_all_ && short_tokens_.size() > 0; }
    // The id of the token p[0:n] (2 <= n <= SHORT_KEY_MAX), packed by pack_short as (w0, w1),
    // or -1 (whole_in_short()). Two bytes: the dense table. More: short_tokens_, unless no
    // token of n bytes starts with p[0:3] (longest3_, in the L2 cache: a chunk of many tokens
    // costs no probe of the big table).
    inline int32_t short_token(const uint8_t* p, int64_t n, uint64_t w0, uint64_t w1) const {
        if (n == 2) return two_byte_id_[(size_t)p[0] << 8 | p[1]];
        if (longest_from3(p) < n) return -1;
        return short_tokens_.find(short_tokens_.home(w0, w1), w0, w1);
    }
    inline void prefetch_short_token(const uint8_t* p, int64_t n, uint64_t w0, uint64_t w1) const {
        if (n > 2 && longest_from3(p) >= n) short_tokens_.prefetch(short_tokens_.home(w0, w1));
    }

    // Ids of one chunk into out (room for n ids): cache, whole lookup, BPE. h: the chunk's
    // hash if the caller computed it already, else 0. A chunk of 2..SHORT_KEY_MAX bytes that
    // is a token, under the whole-chunk rule (whole_in_short()), is looked up first in
    // short_tokens_ (one slot where the cache costs a slot, a key and its ids) and is not
    // remembered in the cache: on a first pass over a text about a third of the chunks that
    // miss the short-chunk cache are tokens, and the cache then grows a step less.
    // (w0, w1): the chunk packed by pack_short when the caller has it (w1 == 0: not packed; a
    // packed key's length byte is never 0).
    inline int64_t encode_chunk(const uint8_t* data, int64_t n, EncodeScratch& st, int32_t* out,
                                int64_t* misses, uint64_t h, uint64_t w0 = 0, uint64_t w1 = 0) const {
        int64_t count = 0;
        if (n == 0) return 0;
        if (n == 1) {
            out[0] = byte_id[data[0]];
            return out[0] >= 0 ? 1 : -1 - (int64_t)data[0];
        }
        bool short_whole = n <= (int64_t)SHORT_KEY_MAX && whole_in_short();
        if (short_whole) {
            if (w1 == 0) pack_short(data, (size_t)n, (size_t)n, &w0, &w1);
            int32_t id = short_token(data, n, w0, w1);
            if (id >= 0) {
                out[0] = id;
                ++*misses;  // (it missed the caches: hits and misses still add up to the chunks)
                return 1;
            }
        }
        if (h == 0) h = bytes_map_hash(data, (size_t)n);
        if (n <= CACHE_MAX_CHUNK) {
            const int32_t* found = nullptr;
            if (st.shared != nullptr) found = st.shared->find(data, (size_t)n, h, &count);
            if (found == nullptr && (st.shared == nullptr || st.cache.size() > 0))
                found = st.cache.find(data, (size_t)n, h, &count);
            if (found != nullptr) {
                if (count == 1)  // most chunks are one token: no call to memcpy
                    out[0] = found[0];
                else
                    std::memcpy(out, found, count * sizeof(int32_t));
                return count;
            }
            ++*misses;  // the caller's local counter: per-chunk writes to shared state would false-share
        }
        count = SPANS_DECLINED;
        if ((merge_rule == MERGE_TOKEN || spans_for_pairs_) && n <= short_token_max && short_tokens_.size() > 0) {
            // (the consistent whole lookup is a pure shortcut: merge_spans finds the same; the
            // whole one was made above)
            count = merge_spans(data, n, out, use_whole_ && whole_all_ && !short_whole);
            if (count < 0 && count != SPANS_DECLINED) return count;
        }
        if (count == SPANS_DECLINED) {
            const int32_t* whole = !use_whole_ || short_whole ? nullptr
                                   : (whole_all_ ? ids_ : whole_id_).find(data, (size_t)n, h, &count);
            if (whole != nullptr) {
                out[0] = whole[0];
                count = 1;
            } else {
                count = bpe(data, n, st, out, n);
                if (count < 0) return count;
            }
        }
        if (n <= CACHE_MAX_CHUNK) {
            if (st.shared != nullptr && st.shared->insert(st.arena, data, (size_t)n, h, out, count)) return count;
            if (st.cache.num_vals() + count > st.max_ids ||
                st.cache.num_key_bytes() + n > CACHE_KEY_BYTES_PER_ID * std::min<size_t>(st.max_ids, KEY_ROOM))
                st.cache.clear();
            st.cache.insert(data, (size_t)n, h, out, count);
        }
        return count;
    }

    // MERGE_TOKEN's BPE of a chunk of n bytes (2 <= n <= SHORT_KEY_MAX) into out (room for n
    // ids); `whole`: a chunk that is a token is that token (tiktoken's rule). Under this rule
    // the pair of two adjacent symbols merges iff their bytes together are a token, into that
    // token, whose id is the rank: the pair's value depends on where it starts and ends in the
    // chunk, not on how its two symbols were made. So the table slot of every substring of 3
    // bytes or more is prefetched first, all independent (their cache misses overlap), and the
    // merge loop then finds them in the cache (2 bytes: a dense table). merge_scan instead
    // waits for each merge's two lookups before it can choose the next merge: a chain of
    // dependent misses into the pair table. The loop picks as merge_scan does (lowest rank,
    // leftmost among equal ones); a symbol of bytes [a, c) is token span_id(a, c) (one byte:
    // byte_id). Under MERGE_PAIR (use_spans_for_pairs) it returns SPANS_DECLINED, having written
    // nothing that counts, at a step where two pairs make the token of the lowest id.
    int64_t merge_spans(const uint8_t* data, int64_t n, int32_t* out, bool whole) const {
        static_assert(SHORT_KEY_MAX == 15, "a position fits 4 bits; the ranks fill 16 lanes");
        const int K = (int)SHORT_KEY_MAX;
        // substring data[a:c] (c - a >= 3): its table slot, prefetched first, all together; each
        // looked up (span_id, its key made again) when the loop needs it
        // (only those that may be tokens: data[a:c] with c <= reach[a], from the longest token
        // that starts with data[a:a+3])
        uint32_t home[K][K + 1];
        int reach[K];
        for (int a = 0; a + 2 < n; ++a) reach[a] = std::min((int)n, a + longest_from3(data + a));
        uint64_t w0, w1;
        pack_short(data, (size_t)n, (size_t)n, &w0, &w1);
#if defined(__SIZEOF_INT128__) && !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
        // the substrings' keys from the chunk's: shift the bytes down, mask, set the length
        unsigned __int128 bytes = ((unsigned __int128)(w1 & ~(0xFFULL << 56)) << 64) | w0;
        uint64_t from0[K], from1[K];  // the bytes from a on
        auto key = [&](int a, int c, uint64_t* k0, uint64_t* k1) {
            int len = c - a;
            *k0 = from0[a] & KEY_MASKS.m0[len];
            *k1 = (from1[a] & KEY_MASKS.m1[len]) | ((uint64_t)len << 56);
        };
        for (int a = 0; a + 2 < n; ++a) {
            unsigned __int128 from = bytes >> (8 * a);
            uint64_t lo = from0[a] = (uint64_t)from, hi = from1[a] = (uint64_t)(from >> 64);
            int c = a + 3;  // (two bytes: two_byte_id_)
            for (; c <= reach[a] && c - a <= 8; ++c) {  // (keys of up to 8 bytes: the second word is the length)
                home[a][c] = (uint32_t)short_tokens_.home(lo & KEY_MASKS.m0[c - a], (uint64_t)(c - a) << 56);
                short_tokens_.prefetch(home[a][c]);
            }
            for (; c <= reach[a]; ++c) {
                home[a][c] = (uint32_t)short_tokens_.home(lo, (hi & KEY_MASKS.m1[c - a]) | ((uint64_t)(c - a) << 56));
                short_tokens_.prefetch(home[a][c]);
            }
        }
#else
        auto key = [&](int a, int c, uint64_t* k0, uint64_t* k1) {
            pack_short(data + a, (size_t)(c - a), (size_t)(n - a), k0, k1);
        };
        for (int a = 0; a + 2 < n; ++a) {
            for (int c = a + 3; c <= reach[a]; ++c) {
                uint64_t k0, k1;
                key(a, c, &k0, &k1);
                home[a][c] = (uint32_t)short_tokens_.home(k0, k1);
                short_tokens_.prefetch(home[a][c]);
            }
        }
#endif
        auto span_id = [&](int a, int c) {
            if (c - a == 2) return two_byte_id_[(size_t)data[a] << 8 | data[a + 1]];
            if (c > reach[a]) return -1;
            uint64_t k0, k1;
            key(a, c, &k0, &k1);
            return short_tokens_.find(home[a][c], k0, k1);
        };
        if (whole) {
            int32_t id = span_id(0, (int)n);
            if (id >= 0) {
                out[0] = id;
                return 1;
            }
        }
        for (int64_t i = 0; i < n && !all_bytes_; ++i)
            if (byte_id[data[i]] < 0) return -1 - (int64_t)data[i];
        // The live symbols by where they start: the one at a is data[a:next[a]], and its pair
        // with the next one is rank[a] = (id << 4) | a (~0: none, or a merged-away position), so
        // that the lowest value is the lowest rank, leftmost among equal ones (index_short_tokens
        // keeps ids below 2^27), and a merge moves nothing.
        uint8_t next[K + 1];
        int8_t prev[K + 1];
        alignas(16) int32_t rank[K + 1];
        for (int a = 0; a < n; ++a) {
            next[a] = (uint8_t)(a + 1);
            prev[a] = (int8_t)(a - 1);
        }
        const int32_t NONE = INT32_MAX;
        auto pair_rank = [&](int a, int c) {
            int32_t id = span_id(a, c);
            return id < 0 ? NONE : (int32_t)(((uint32_t)id << 4) | (uint32_t)a);
        };
        for (int a = 0; a <= K; ++a) rank[a] = a + 1 < n ? pair_rank(a, a + 2) : NONE;
        int m = (int)n;
        while (m > 1) {
            int32_t low = lowest16(rank);
            if (low == NONE) break;
            if (spans_for_pairs_ && count_below16(rank, (low | 15) + 1) > 1 && !one_split(rank, low, next))
                return SPANS_DECLINED;
            int best = (int)(low & 15);
            int j = next[best], end = next[j];  // symbols best and j become one: data[best:end]
            rank[j] = NONE;
            next[best] = (uint8_t)end;
            --m;
            if (end < n) {
                prev[end] = (int8_t)best;
                rank[best] = pair_rank(best, next[end]);
            } else {
                rank[best] = NONE;
            }
            int p = prev[best];
            if (p >= 0) rank[p] = pair_rank(p, end);
        }
        int count = 0;
        for (int a = 0; a < n; a = next[a])
            out[count++] = next[a] - a == 1 ? byte_id[data[a]] : span_id(a, next[a]);
        return count;
    }

    // longest3_'s slot of the 3 bytes p[0:3].
    static inline size_t three_bytes_slot(const uint8_t* p) {
        uint32_t x = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
        return (size_t)((x * 0x9E3779B1u) >> 16);
    }
    // The length of the longest token of 3 bytes or more that may start with p[0:3] (0: none).
    inline int longest_from3(const uint8_t* p) const { return longest3_[three_bytes_slot(p)]; }

    // The lowest of v[0:16] (16-byte aligned): four lanes at a time, without a branch.
    static inline int32_t lowest16(const int32_t* v) {
#if defined(__GNUC__)
        typedef int32_t Lanes __attribute__((vector_size(16)));
        Lanes a, b, c, d;
        std::memcpy(&a, v, 16);
        std::memcpy(&b, v + 4, 16);
        std::memcpy(&c, v + 8, 16);
        std::memcpy(&d, v + 12, 16);
        a = a < b ? a : b;
        c = c < d ? c : d;
        a = a < c ? a : c;
        int32_t x = a[0] < a[1] ? a[0] : a[1], y = a[2] < a[3] ? a[2] : a[3];
        return x < y ? x : y;
#else
        int32_t low = v[0];
        for (int i = 1; i < 16; ++i) low = v[i] < low ? v[i] : low;
        return low;
#endif
    }

    // How many of v[0:16] are below x.
    static inline int count_below16(const int32_t* v, int32_t x) {
        int count = 0;
        for (int i = 0; i < 16; ++i) count += v[i] < x;
        return count;
    }
    // merge_spans: whether the pairs that make the token of `low` (the lowest of rank) all split
    // it at the same place, so are one pair (whose rank is one: leftmost first under either rule).
    static inline bool one_split(const int32_t* rank, int32_t low, const uint8_t* next) {
        int best = low & 15, left = next[best] - best;
        for (int a = 0; a < 16; ++a)
            if ((rank[a] >> 4) == (low >> 4) && next[a] - a != left) return false;
        return true;
    }

    // BPE of one chunk's bytes into out (room for cap ids): the scan for short chunks (cheaper
    // than a heap there), the heap otherwise.
    int64_t bpe(const uint8_t* data, int64_t n, EncodeScratch& st, int32_t* out, int64_t cap) const {
        if (n <= scan_max) {
            int32_t sid[SCAN_MAX_CHUNK];
            for (int64_t i = 0; i < n; ++i) {
                sid[i] = byte_id[data[i]];
                if (sid[i] < 0) return -1 - (int64_t)data[i];
            }
            return merge_scan(sid, n, out, cap);
        }
        if (n >= backtrack_min) {
            int64_t got = encode_backtrack(data, n, st, out, cap);
            if (got != BACKTRACK_UNUSABLE) return got;
        }
        if ((int64_t)st.sid.size() < n) st.sid.resize(n);
        int32_t* sid = st.sid.data();
        for (int64_t i = 0; i < n; ++i) {
            sid[i] = byte_id[data[i]];
            if (sid[i] < 0) return -1 - (int64_t)data[i];
        }
        return merge_long(n, st, out, cap);
    }

    // BPE of data[0:n] by backtracking (backtrack.h), or BACKTRACK_UNUSABLE when the model
    // does not allow it or its tables are not worth building yet.
    int64_t encode_backtrack(const uint8_t* data, int64_t n, EncodeScratch& st, int32_t* out, int64_t cap) const {
        const Backtracker* bt = backtracker_for(n);
        if (bt == nullptr) return BACKTRACK_UNUSABLE;
        for (int64_t i = 0; i < n; ++i)
            if (byte_id[data[i]] < 0) return -1 - (int64_t)data[i];
        int64_t got = bt->encode(data, n, st.dead, st.memo, out, cap, st.poll);
        if (got >= 0) return got;
        backtrack_fallbacks_.fetch_add(1, std::memory_order_relaxed);  // (never, for a usable model)
        return BACKTRACK_UNUSABLE;
    }

    // The backtracking tables for a long chunk of n bytes, or nullptr when the model does not
    // allow backtracking or the long chunks so far have not reached the budget
    // (backtrack_budget_bytes(); the chunk is then merged by the loops, and counted).
    const Backtracker* backtracker_for(int64_t n) const {
        // (the count is a hint shared by threads: relaxed, and a race only moves the build a
        // chunk earlier or later)
        if (!backtrack_built()) {
            int64_t before = long_bytes_.fetch_add(n, std::memory_order_relaxed);
            if (before + n < backtrack_budget_bytes()) return nullptr;
        }
        return backtracker();
    }

    // Whether backtracker_for(n) would build or use the tables (without counting n).
    bool backtrack_due(int64_t n) const {
        return backtrack_built() || long_bytes_.load(std::memory_order_relaxed) + n >= backtrack_budget_bytes();
    }

    // The backtracking tables, built on the first call (thread-safe), or nullptr when the
    // model does not allow backtracking.
    const Backtracker* backtracker() const {
        std::call_once(backtrack_once_, [this]() {
            std::unique_ptr<Backtracker> bt(new Backtracker());
            auto t0 = std::chrono::steady_clock::now();
            bt->build(&pairs_, token_blob_, token_ends_, byte_id, merge_rule == MERGE_REPLAY && !repeats_.empty());
            bt->build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            backtrack_ = std::move(bt);
            backtrack_built_.store(true, std::memory_order_release);
        });
        return backtrack_->usable() ? backtrack_.get() : nullptr;
    }

    int64_t merge_long(int64_t n, EncodeScratch& st, int32_t* out, int64_t cap) const {
        SymbolList list = link_symbols(n, st);
        if (n >= rank_queue_min) return merge_by_rank(list, st, out, cap);
        return merge_heap(list, st, 0, out, cap);
    }

    // The symbol list over st.sid[0:n]: every symbol live, one position long.
    static SymbolList link_symbols(int64_t n, EncodeScratch& st) {
        if ((int64_t)st.span.size() < n) st.span.resize(n);
        int32_t* span = st.span.data();
        for (int64_t i = 0; i < n; ++i) span[i] = 1;
        return SymbolList{st.sid.data(), span, n};
    }

    // The live symbols from position 0 (always live: a symbol sits at its first position) into
    // out (room for cap ids).
    static int64_t list_out(const SymbolList& list, int32_t* out, int64_t cap) {
        int64_t count = 0;
        for (int64_t i = 0; i < list.n; i += list.span[i]) {
            if (count >= cap) return TOO_MANY_IDS;
            out[count++] = list.sid[i];
        }
        return count;
    }

    // Long-chunk BPE over the symbol list (from link_symbols): the same choice
    // as the heap, lowest rank then leftmost, organised by rank. Every candidate pair's position
    // is appended to the bucket of its rank; a queue holds the ranks with pending positions.
    // The lowest rank's positions are taken in ascending order, each re-checked (its pair may
    // have changed since) and merged. A merge of rank r never creates a pair of rank r (the new
    // token is longer than the one of rank r, and a pair's bytes determine its rank), so the
    // bucket being drained gets no new position; the new pairs are pushed as they appear, in
    // ascending position order, which keeps the buckets sorted in the usual case. Should a
    // merge create a pair of a rank at or below the current one (a merge table that is not
    // monotone), draining stops at once and the queue decides again, sorting a bucket's pending
    // positions first when appends came out of order.
    //
    // The positions of one pass over a chunk are appended and read in order, so this runs at
    // memory speed where a heap of a million entries misses the cache on every pop. Sorting is
    // what could cost more than O(n log n) (a rank interrupted again and again); past a budget
    // the heap takes over from the current list, which is exact: the state of the merge is the
    // list and the floor, nothing else.
    struct Memo {
        uint64_t key = ~0ULL;  // (the pair (-1, -1): never a live one)
        uint64_t v = NO_MERGE;
    };
    int64_t merge_by_rank(SymbolList list, EncodeScratch& st, int32_t* out, int64_t cap) const {
        const int32_t* sid = list.sid;
        int64_t n = list.n;
        for (size_t b = 0; b < st.used_buckets; ++b) st.buckets[b].reset();
        st.used_buckets = 0;
        st.bucket_of.reset(64);
        st.ranks.clear();
        uint32_t current = 0;     // the rank being drained
        bool interrupt = false;   // a push needs the queue to decide again
        int64_t pushes = 0;
        uint32_t memo_rank = ~0U;  // the last rank pushed and its bucket: pushes come in runs
        int32_t memo_bucket = -1;
        // Append position i to the bucket of rank `rank`.
        auto push = [&](uint32_t rank, int64_t i) __attribute__((always_inline)) {
            int32_t b = memo_bucket;
            if (rank != memo_rank) {
                size_t slot = st.bucket_of.index(rank);
                if (st.bucket_of.occupied(slot)) {
                    b = st.bucket_of.value(slot);
                } else {
                    b = (int32_t)st.used_buckets++;
                    if (st.buckets.size() < st.used_buckets) st.buckets.emplace_back();
                    st.bucket_of.insert_at(slot, rank, b);
                }
                memo_rank = rank;
                memo_bucket = b;
            }
            RankBucket& bucket = st.buckets[b];
            if (bucket.cursor == bucket.size) {  // drained: reuse from the start
                bucket.size = bucket.cursor = 0;
                bucket.sorted = true;
            } else if ((int32_t)i < bucket.pos[bucket.size - 1]) {
                bucket.sorted = false;
            }
            bucket.append((int32_t)i);
            if (!bucket.queued) {
                bucket.queued = true;
                st.ranks.push(((uint64_t)rank << 32) | (uint32_t)b);
            }
            if (rank <= current) interrupt = true;
            ++pushes;
        };
        // (in strips of POLL_UNITS pairs, each strip's lookups prefetched first: a chunk of
        // 100 MB takes seconds here)
        for (int64_t from = 0; from + 1 < n; from += POLL_UNITS) {
            int64_t to = std::min(from + POLL_UNITS, n - 1);
            for (int64_t i = from; i < to; ++i) prefetch_pair(sid[i], sid[i + 1]);
            for (int64_t i = from; i < to; ++i) {
                uint64_t v = lookup(sid[i], sid[i + 1]);
                if (v != NO_MERGE) push((uint32_t)(v >> 32), i);
            }
            st.poll.tick(to - from);
        }
        int64_t budget = POLL_UNITS;  // positions popped until the next tick (a local: no store a pop)
        uint32_t floor = 0;
        int64_t sorted = 0;
        while (!st.ranks.empty()) {
            uint64_t top = st.ranks.top();
            uint32_t rank = (uint32_t)(top >> 32);
            size_t b = (size_t)(top & LOW_BITS);
            if (st.buckets[b].cursor == st.buckets[b].size) {
                st.ranks.pop();
                st.buckets[b].queued = false;
                st.buckets[b].release_if_big();  // drained: its memory goes back at once
                continue;
            }
            if (!st.buckets[b].sorted) {
                RankBucket& bucket = st.buckets[b];
                sorted += (int64_t)(bucket.size - bucket.cursor);
                if (sorted > rank_sort_budget * (pushes + n)) return heap_from_list(list, st, floor, out, cap);
                std::sort(bucket.pos + bucket.cursor, bucket.pos + bucket.size);
                bucket.sorted = true;
            }
            current = rank;
            interrupt = false;
            // The bucket's pending positions in locals: no push reaches this bucket without
            // interrupting (only a push of this rank would), and draining then stops before
            // reading them again. (A push may move st.buckets, not a bucket's array.)
            const int32_t* pos = st.buckets[b].pos;
            size_t size = st.buckets[b].size, cursor = st.buckets[b].cursor;
            int64_t known = -1;    // the next position to pop when its pair was just looked up
            uint64_t known_v = 0;  // (and found of this rank): that lookup
            // The last pair each of the three lookups below took and its value: runs of one
            // repeated unit look the same few pairs up again and again. (Anew for each rank:
            // the replay rule's floor changes with it.)
            Memo left_memo, right_memo, next_memo;
            auto memo_lookup = [&](Memo& m, int32_t a, int32_t c) {
                uint64_t key = pair_key(a, c);
                if (key != m.key) {
                    m.key = key;
                    m.v = lookup_from(a, c, floor);
                }
                return m.v;
            };
            while (!interrupt && cursor < size) {
                if (--budget == 0) {  // (between two positions: the list is whole, out not written yet)
                    st.poll.tick(POLL_UNITS);
                    budget = POLL_UNITS;
                }
                int64_t i = pos[cursor++];
                int64_t k = i == known ? list.merge(i, list.next(i), known_v) : merge_if_current(list, i, rank, floor);
                if (k == STALE) continue;
                // The positions inside the merged symbol are stale now, and next in the bucket
                // when it holds overlapping pairs (runs of one letter): step past them.
                int64_t end = k < 0 ? n : k;
                while (cursor < size && pos[cursor] < end) ++cursor;
                uint64_t v;
                int64_t p = list.prev(i);
                if (p >= 0) {
                    v = memo_lookup(left_memo, sid[p], sid[i]);
                    if (v != NO_MERGE) push((uint32_t)(v >> 32), p);
                }
                if (k < 0) continue;
                v = memo_lookup(right_memo, sid[i], sid[k]);
                if (v == NO_MERGE) continue;
                // A pair (i, k) of a higher rank is stale before it is read when k's own pair
                // is the next to merge: the bucket's next position is k and its pair still has
                // this rank. k's merge then pushes the pair (i, k's new symbol) as its left
                // pair, and takes the lookup made here. (Runs of one letter halve their pushes
                // so.)
                if ((uint32_t)(v >> 32) > rank && !interrupt && cursor < size && pos[cursor] == k) {
                    int64_t l = list.next(k);
                    uint64_t w = l >= 0 ? memo_lookup(next_memo, sid[k], sid[l]) : NO_MERGE;
                    if (w != NO_MERGE && (uint32_t)(w >> 32) == rank) {
                        known = k;
                        known_v = w;
                        continue;
                    }
                }
                push((uint32_t)(v >> 32), i);
            }
            st.buckets[b].cursor = cursor;
        }
        return list_out(list, out, cap);
    }

    // The step merge_by_rank and merge_heap share: the candidate pair at position i, taken with
    // rank `rank`, merges if it is still there with that rank; else a neighbour merged since it
    // was pushed and it is stale. Returns the position after the merged symbol (-1 at the end)
    // or STALE.
    static constexpr int64_t STALE = -2;
    inline int64_t merge_if_current(SymbolList& list, int64_t i, uint32_t rank, uint32_t& floor) const {
        if (list.sid[i] < 0) return STALE;
        int64_t j = list.next(i);
        if (j < 0) return STALE;
        uint64_t v = lookup_from(list.sid[i], list.sid[j], floor);
        if (v == NO_MERGE || (uint32_t)(v >> 32) != rank) return STALE;
        if (merge_rule == MERGE_REPLAY) floor = rank;
        return list.merge(i, j, v);
    }

    // The heap's loop started from the current list (merge_by_rank's way out): every live pair
    // becomes a candidate again.
    int64_t heap_from_list(SymbolList list, EncodeScratch& st, uint32_t floor, int32_t* out, int64_t cap) const {
        st.heap.clear();
        for (int64_t i = 0, j; (j = list.next(i)) >= 0; i = j) {
            uint64_t v = lookup_from(list.sid[i], list.sid[j], floor);
            if (v != NO_MERGE) st.heap.add((v & RANK_BITS) | (uint64_t)i);
        }
        st.heap.make();
        return merge_heap(list, st, floor, out, cap, false);
    }

    // Short-chunk BPE over the symbol ids sid[0:n] (changed in place, n <= SCAN_MAX_CHUNK): the
    // (rank << 32 | new id) of each adjacent pair sits beside them; each step scans for the
    // lowest rank (leftmost among equals), merges, and re-looks-up only the two pairs that
    // changed. O(n^2).
    int64_t merge_scan(int32_t* sid, int64_t n, int32_t* out, int64_t cap) const {
        uint64_t pair[SCAN_MAX_CHUNK];
        int64_t m = n;
        uint32_t floor = 0;
        for (int64_t i = 0; i < n - 1; ++i) prefetch_pair(sid[i], sid[i + 1]);  // all misses at once
        for (int64_t i = 0; i < n - 1; ++i) pair[i] = lookup(sid[i], sid[i + 1]);
        while (m > 1) {
            int64_t best = -1;
            uint64_t best_v = NO_MERGE;
            for (int64_t i = 0; i < m - 1; ++i) {
                if (pair[i] < best_v) {  // NO_MERGE is the largest value; ranks sit in the high bits
                    best_v = pair[i];
                    best = i;
                }
            }
            if (best < 0) break;
            if (merge_rule == MERGE_REPLAY) floor = (uint32_t)(best_v >> 32);
            sid[best] = (int32_t)(best_v & LOW_BITS);
            for (int64_t i = best + 1; i < m - 1; ++i) {
                sid[i] = sid[i + 1];
                pair[i] = pair[i + 1];
            }
            --m;
            if (best + 1 < m) pair[best] = lookup_from(sid[best], sid[best + 1], floor);
            if (best > 0) pair[best - 1] = lookup_from(sid[best - 1], sid[best], floor);
        }
        if (m > cap) return TOO_MANY_IDS;
        for (int64_t i = 0; i < m; ++i) out[i] = sid[i];
        return m;
    }

    // BPE over the symbol list (from link_symbols): a heap of candidate pairs
    // keyed (rank << 32) | position, stale entries re-checked when popped. O(n log n). `fill`:
    // the heap starts with the list's pairs (else the caller filled it).
    int64_t merge_heap(SymbolList list, EncodeScratch& st, uint32_t floor, int32_t* out, int64_t cap,
                       bool fill = true) const {
        const int32_t* sid = list.sid;
        if (fill) {
            st.heap.clear();
            for (int64_t i = 0; i + 1 < list.n; ++i) {
                uint64_t v = lookup(sid[i], sid[i + 1]);
                if (v != NO_MERGE) st.heap.add((v & RANK_BITS) | (uint64_t)i);
            }
            st.heap.make();  // O(n), at once
        }
        int64_t budget = POLL_UNITS;  // pops until the next tick (a local: no store a pop)
        while (!st.heap.empty()) {
            if (--budget == 0) {  // (between two pops: the list is whole, out not written yet)
                st.poll.tick(POLL_UNITS);
                budget = POLL_UNITS;
            }
            uint64_t top = st.heap.pop();
            uint32_t rank = (uint32_t)(top >> 32);
            int64_t i = (int64_t)(top & LOW_BITS);
            int64_t k = merge_if_current(list, i, rank, floor);
            if (k == STALE) continue;
            uint64_t v;
            if (k >= 0) {
                v = lookup_from(sid[i], sid[k], floor);
                if (v != NO_MERGE) st.heap.push((v & RANK_BITS) | (uint64_t)i);
            }
            int64_t p = list.prev(i);
            if (p >= 0) {
                v = lookup_from(sid[p], sid[i], floor);
                if (v != NO_MERGE) st.heap.push((v & RANK_BITS) | (uint64_t)p);
            }
        }
        return list_out(list, out, cap);
    }
};

}  // namespace fbpt
