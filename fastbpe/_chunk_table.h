// A hash table of chunk bytes -> 64-bit count that remembers first-appearance order.
//
// Chunks are stored once, back to back, in `data` in the order they are first inserted, with
// `offsets` (n+1 entries) and `counts` beside: exactly the arrays of a fastbpe.WordTable, so
// exporting is a copy. Open addressing, linear probing, power-of-two capacity kept at most half
// full; a slot holds 32 bits of the hash (to skip most byte comparisons) and the chunk's index.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "_pretok_scan.h"

namespace fbpt {

static inline uint64_t mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static inline uint64_t hash_bytes(const uint8_t* p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)n * 0x2545F4914F6CDD1DULL);
    while (n >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        h = (h ^ w) * 0x100000001B3ULL;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    std::memcpy(&w, p, n);  // n < 8: the tail, zero padded (the length is already in h)
    h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
    return mix64(h);
}

class ChunkTable {
  public:
    std::vector<uint8_t> data;
    std::vector<int64_t> offsets{0};
    std::vector<int64_t> counts;

    ChunkTable() { rehash(1 << 12); }

    size_t size() const { return counts.size(); }

    inline void add(const uint8_t* p, size_t len, int64_t count) {
        uint64_t h = hash_bytes(p, len);
        uint32_t tag = (uint32_t)(h >> 32);
        size_t i = (size_t)h & mask_;
        while (true) {
            Slot& s = slots_[i];
            if (s.index == EMPTY) {
                if ((counts.size() + 1) * 2 > slots_.size()) {
                    rehash(slots_.size() * 2);
                    add(p, len, count);
                    return;
                }
                s.tag = tag;
                s.index = (uint32_t)counts.size();
                data.insert(data.end(), p, p + len);
                offsets.push_back((int64_t)data.size());
                counts.push_back(count);
                return;
            }
            if (s.tag == tag) {
                int64_t a = offsets[s.index], b = offsets[s.index + 1];
                if ((size_t)(b - a) == len && std::memcmp(data.data() + a, p, len) == 0) {
                    counts[s.index] += count;
                    return;
                }
            }
            i = (i + 1) & mask_;
        }
    }

    inline void operator()(const uint8_t* p, size_t len) { add(p, len, 1); }

    // Pre-tokenize and count documents: buf[ends[k-1]:ends[k]] is document k (ends[-1] = 0).
    // Returns -1, or (ERR_STRICT) the index of the first document with invalid UTF-8 with the
    // offset inside it in *bad_offset (chunks counted before it stay counted).
    int64_t add_documents(const uint8_t* buf, const int64_t* ends, size_t ndocs, int pattern, int errors,
                          int64_t* bad_offset) {
        int64_t start = 0;
        for (size_t k = 0; k < ndocs; ++k) {
            int64_t r = scan_document(buf + start, (size_t)(ends[k] - start), pattern, errors, *this, scratch_);
            if (r >= 0) {
                *bad_offset = r;
                return (int64_t)k;
            }
            start = ends[k];
        }
        return -1;
    }

    // Add another table's chunks in its order (counting consecutive parts of a corpus).
    void add_table(const uint8_t* d, const int64_t* offs, const int64_t* cnts, size_t n) {
        for (size_t k = 0; k < n; ++k) add(d + offs[k], (size_t)(offs[k + 1] - offs[k]), cnts[k]);
    }

  private:
    struct Slot {
        uint32_t tag;
        uint32_t index;
    };
    static const uint32_t EMPTY = 0xFFFFFFFFu;
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    std::string scratch_;

    void rehash(size_t capacity) {
        std::vector<Slot> fresh(capacity, Slot{0, EMPTY});
        size_t m = capacity - 1;
        for (uint32_t k = 0; k < (uint32_t)counts.size(); ++k) {
            const uint8_t* p = data.data() + offsets[k];
            uint64_t h = hash_bytes(p, (size_t)(offsets[k + 1] - offsets[k]));
            size_t i = (size_t)h & m;
            while (fresh[i].index != EMPTY) i = (i + 1) & m;
            fresh[i] = Slot{(uint32_t)(h >> 32), k};
        }
        slots_.swap(fresh);
        mask_ = m;
    }
};

// Collects chunks in order (for the pretokenize entry points).
struct ChunkList {
    std::vector<uint8_t> data;
    std::vector<int64_t> ends;
    inline void operator()(const uint8_t* p, size_t len) {
        data.insert(data.end(), p, p + len);
        ends.push_back((int64_t)data.size());
    }
};

}  // namespace fbpt
