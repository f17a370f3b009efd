// A hash table of chunk bytes -> 64-bit count that remembers first-appearance order.
//
// Chunks are stored once, back to back, in `data` in the order they are first inserted, with
// `offsets` (n+1 entries) and `counts` beside: exactly the arrays of a fastbpe.WordTable, so
// exporting is a copy.
//
// Speed comes from memory behaviour, not arithmetic: a corpus has ~10^5-10^6 unique chunks, and
// a lookup that chases slot -> offsets -> data costs three cache/TLB misses. So
//  * a slot holds short chunks (<= 16 bytes, ~99.7% of English occurrences) inline: one miss;
//  * the slot array is 2 MiB aligned and advised for transparent huge pages (fewer TLB misses);
//  * in front sits a small direct-mapped cache (L2-sized) of recent short chunks with their
//    not-yet-added occurrences, so the frequent chunks never touch the big table at all.
// Open addressing, linear probing, capacity a power of two kept at most 70% full. The hash and
// the probing are hash.h's, as for every table; the slot layout is this table's own, because
// the inline short keys are what make it fast (a slot pointing into a key arena, as
// bytes_map.h's do, costs a second cache miss per lookup).
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "hash.h"
#include "patterns.h"
#include "scan.h"

namespace fbpt {

// A chunk as the table sees it: short chunks as two zero-padded words, long ones by hash.
struct Key {
    uint64_t k0, k1;  // short: the bytes; long: k0 = hash, k1 = 0
    uint64_t hash;
    uint32_t len;
};

// Hash of a short chunk from its two zero-padded words (cheaper than hash_bytes, which would
// load the bytes again).
static inline uint64_t short_hash(uint64_t k0, uint64_t k1, size_t len) {
    return mix64(k0 * 0x9E3779B97F4A7C15ULL ^ (k1 + len) * 0xC2B2AE3D27D4EB4FULL);
}

// Build the key of chunk p[0:len]; `limit` is the end of the buffer holding it (whole 8-byte
// loads are used when they stay inside it).
static inline Key make_key(const uint8_t* p, size_t len, const uint8_t* limit) {
    Key k;
    k.len = (uint32_t)len;
    if (len > 16) {
        k.k0 = k.hash = hash_bytes(p, len);
        k.k1 = 0;
        return k;
    }
    uint64_t k0 = 0, k1 = 0;
    if (p + 16 <= limit) {
        std::memcpy(&k0, p, 8);
        std::memcpy(&k1, p + 8, 8);
        if (len < 8) { k0 &= (~0ULL) >> (64 - 8 * len); k1 = 0; }
        else if (len == 8) k1 = 0;
        else if (len < 16) k1 &= (~0ULL) >> (64 - 8 * (len - 8));
    } else {
        std::memcpy(&k0, p, len < 8 ? len : 8);
        if (len > 8) std::memcpy(&k1, p + 8, len - 8);
    }
    k.k0 = k0;
    k.k1 = k1;
    k.hash = short_hash(k0, k1, len);
    return k;
}

class ChunkTable {
  public:
    std::vector<uint8_t> data;
    std::vector<int64_t> offsets{0};
    std::vector<int64_t> counts;

    ChunkTable() : cache_(CACHE_SIZE, CacheEntry{0, 0, 0, 0, 0}) { rehash(1 << 12); }
    ~ChunkTable() { std::free(slots_); }
    ChunkTable(const ChunkTable&) = delete;
    ChunkTable& operator=(const ChunkTable&) = delete;

    size_t size() const { return counts.size(); }

    // Add `count` occurrences of a chunk, now (not through the queue of the hot path).
    inline void add(const uint8_t* p, size_t len, int64_t count) {
        flush();
        if (len == 0) return;
        Key k = make_key(p, len, p + len);
        counts[find_or_insert(k, p)] += count;
    }

    // The hot path: one occurrence of a chunk, `limit` the end of the buffer holding it.
    inline void operator()(const uint8_t* p, size_t len, const uint8_t* limit) { push(p, len, limit, 1); }

    // `count` occurrences of a chunk. A chunk found in the front cache is counted at once.
    // Otherwise it joins a short FIFO: its table slot (and the count the cache eviction will
    // update) are prefetched now and it is counted PIPE chunks later, so its memory latency
    // overlaps the scanning of the next chunks. Only FIFO chunks can be new, and the FIFO keeps
    // their order, so first-appearance order holds. `drain()` before the buffer holding the
    // queued chunks goes away.
    inline void push(const uint8_t* p, size_t len, const uint8_t* limit, int64_t count) {
        if (len == 0) return;  // never produced by the scanners; len 0 marks an empty slot
        Key k = make_key(p, len, limit);
        if (len <= 16) {
            CacheEntry& e = cache_[k.hash & (CACHE_SIZE - 1)];
            if (e.len == k.len && e.k0 == k.k0 && e.k1 == k.k1) {
                if (e.pending == 0) dirty_.push_back((uint32_t)(&e - cache_.data()));
                e.pending += count;
                return;
            }
            if (e.len) __builtin_prefetch(&counts[e.index]);
        }
        __builtin_prefetch(&slots_[k.hash & mask_]);
        Pending& slot = pipe_[(head_ + queued_) & (PIPE - 1)];
        if (queued_ == PIPE) {
            count_one(slot.key, slot.p, slot.count);  // the oldest (slot == pipe_[head_] when full)
            slot = Pending{k, p, count};
            head_ = (head_ + 1) & (PIPE - 1);
        } else {
            slot = Pending{k, p, count};
            ++queued_;
        }
    }

    void drain() {
        while (queued_) {
            count_one(pipe_[head_].key, pipe_[head_].p, pipe_[head_].count);
            head_ = (head_ + 1) & (PIPE - 1);
            --queued_;
        }
    }

    inline void count_one(const Key& k, const uint8_t* p, int64_t count) {
        if (k.len > 16) {
            counts[find_or_insert(k, p)] += count;
            return;
        }
        CacheEntry& e = cache_[k.hash & (CACHE_SIZE - 1)];
        if (e.len == k.len && e.k0 == k.k0 && e.k1 == k.k1) {
            if (e.pending == 0) dirty_.push_back((uint32_t)(&e - cache_.data()));
            e.pending += count;
            return;
        }
        if (e.len) counts[e.index] += e.pending;  // evict: hand its occurrences to the table
        e.index = (uint32_t)find_or_insert(k, p);
        e.k0 = k.k0;
        e.k1 = k.k1;
        e.len = k.len;
        e.pending = count;
        dirty_.push_back((uint32_t)(&e - cache_.data()));
    }

    // Hand the cache's pending occurrences to `counts`; done before `counts` is read.
    void flush() {
        drain();
        for (uint32_t i : dirty_) {
            CacheEntry& e = cache_[i];
            counts[e.index] += e.pending;
            e.pending = 0;
        }
        dirty_.clear();
    }

    // Pre-tokenize and count documents: buf[ends[k-1]:ends[k]] is document k (ends[-1] = 0).
    // Returns -1, or (ERR_STRICT) the index of the first document with invalid UTF-8 with the
    // offset inside it in *bad_offset (chunks counted before it stay counted).
    int64_t add_documents(const uint8_t* buf, const int64_t* ends, size_t ndocs, int pattern, int errors,
                          int64_t* bad_offset) {
        int64_t start = 0;
        for (size_t k = 0; k < ndocs; ++k) {
            int64_t r = scan_document(buf + start, (size_t)(ends[k] - start), pattern, errors, *this, scratch_);
            if (errors == ERR_REPLACE) drain();  // queued chunks may point into scratch_, reused next
            if (r >= 0) {
                flush();
                *bad_offset = r;
                return (int64_t)k;
            }
            start = ends[k];
        }
        flush();
        return -1;
    }

    // Add another table's chunks in its order (counting consecutive parts of a corpus).
    void add_table(const uint8_t* d, const int64_t* offs, const int64_t* cnts, size_t n) {
        const uint8_t* end = d + offs[n];
        for (size_t k = 0; k < n; ++k) push(d + offs[k], (size_t)(offs[k + 1] - offs[k]), end, cnts[k]);
        flush();
    }

  private:
    struct CacheEntry {
        uint64_t k0, k1;   // the chunk's bytes, zero padded
        uint32_t len;      // 0: empty entry
        uint32_t index;    // its index in the table
        int64_t pending;   // occurrences not yet in counts[index]
    };
    static const size_t CACHE_SIZE = 1 << 15;  // 32K x 32 B = 1 MiB
    std::vector<CacheEntry> cache_;
    std::vector<uint32_t> dirty_;  // cache entries whose pending may be non-zero

    struct Pending {
        Key key;
        const uint8_t* p;
        int64_t count;
    };
    static const size_t PIPE = 16;
    Pending pipe_[PIPE];
    size_t head_ = 0, queued_ = 0;

    struct Slot {
        uint64_t k0, k1;   // as Key
        uint32_t len;      // 0: empty slot
        uint32_t index;
    };
    static const uint32_t MAX_CHUNKS = 0xFFFFFFF0u;
    Slot* slots_ = nullptr;
    size_t capacity_ = 0, mask_ = 0;
    std::string scratch_;

    inline bool same(const Slot& s, const Key& k, const uint8_t* p) const {
        if (s.len != k.len || s.k0 != k.k0 || s.k1 != k.k1) return false;
        if (k.len <= 16) return true;
        return std::memcmp(data.data() + offsets[s.index], p, k.len) == 0;
    }

    // Index of the chunk, inserted with count 0 if new (so in first-appearance order).
    inline size_t find_or_insert(const Key& k, const uint8_t* p) {
        size_t i = probe(slots_, mask_, (size_t)k.hash & mask_,
                         [&](const Slot& s) { return s.len == 0 || same(s, k, p); });
        if (slots_[i].len != 0) return slots_[i].index;
        if ((counts.size() + 1) * 10 > capacity_ * 7) {  // load <= 0.7
            if (counts.size() + 1 >= MAX_CHUNKS) throw std::length_error("more than 2^32 - 16 unique chunks");
            rehash(capacity_ * 2);
            return find_or_insert(k, p);
        }
        slots_[i] = Slot{k.k0, k.k1, k.len, (uint32_t)counts.size()};
        data.insert(data.end(), p, p + k.len);
        offsets.push_back((int64_t)data.size());
        counts.push_back(0);
        return slots_[i].index;
    }

    static Slot* allocate(size_t capacity) {
        size_t bytes = capacity * sizeof(Slot);
        size_t align = bytes >= (2u << 20) ? (2u << 20) : 64;
        void* mem = nullptr;
        if (posix_memalign(&mem, align, bytes) != 0) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
        if (align == (2u << 20)) madvise(mem, bytes, MADV_HUGEPAGE);  // a hint; failure is fine
#endif
        std::memset(mem, 0, bytes);
        return (Slot*)mem;
    }

    void rehash(size_t capacity) {
        Slot* fresh = allocate(capacity);
        size_t m = capacity - 1;
        for (size_t k = 0; k < capacity_; ++k) {
            const Slot& s = slots_[k];
            if (s.len == 0) continue;
            uint64_t h = s.len > 16 ? s.k0 : short_hash(s.k0, s.k1, s.len);
            fresh[probe(fresh, m, (size_t)h & m, [](const Slot& t) { return t.len == 0; })] = s;
        }
        std::free(slots_);
        slots_ = fresh;
        capacity_ = capacity;
        mask_ = m;
    }
};

}  // namespace fbpt
