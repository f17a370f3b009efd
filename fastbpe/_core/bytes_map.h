// Byte string -> span of int32 ids: the encoder's chunk cache and its whole-token lookup.
//
// Open addressing with linear probing (hash.h), at most half full. Keys and values live in two
// arenas, so a lookup touches one slot and one key, and an insert allocates nothing per entry.
// The slot keeps the key's full hash, so a probe compares bytes only on a hash match. Not
// thread-safe for writes; concurrent find() on an unchanging map is fine.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hash.h"

namespace fbpt {

// The hash a BytesMap is given for key p[0:n]: never 0, which marks an empty slot. The caller
// computes it once per chunk and hands it to every map it asks.
static inline uint64_t bytes_map_hash(const uint8_t* p, size_t n) { return hash_bytes(p, n) | 1; }

// a[0:n] == b[0:n] for the short keys of the chunk cache, without a call to memcmp:
// 8-byte words, the last one overlapping the one before it.
static inline bool bytes_equal(const uint8_t* a, const uint8_t* b, size_t n) {
    uint64_t x, y;
    if (n >= 8) {
        for (size_t i = 0; i + 8 < n; i += 8) {
            std::memcpy(&x, a + i, 8);
            std::memcpy(&y, b + i, 8);
            if (x != y) return false;
        }
        std::memcpy(&x, a + n - 8, 8);
        std::memcpy(&y, b + n - 8, 8);
        return x == y;
    }
    if (n >= 4) {
        uint32_t u, v, w, z;
        std::memcpy(&u, a, 4);
        std::memcpy(&v, b, 4);
        std::memcpy(&w, a + n - 4, 4);
        std::memcpy(&z, b + n - 4, 4);
        return u == v && w == z;
    }
    for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return false;
    return true;
}

class BytesMap {
  public:
    BytesMap() { clear(); }
    void clear() {
        slots_.assign(INITIAL_SLOTS, Slot{0, 0, 0, 0, 0});
        keys_.clear();
        vals_.clear();
        used_ = 0;
    }
    size_t size() const { return used_; }
    // Room for n keys without growing (an empty map only).
    void reserve(size_t n) {
        size_t slots = INITIAL_SLOTS;
        while (slots < 2 * n + 2) slots *= 2;
        if (used_ == 0 && slots > slots_.size()) slots_.assign(slots, Slot{0, 0, 0, 0, 0});
    }
    size_t num_vals() const { return vals_.size(); }

    // Pointer to the ids of key p[0:n] with hash h (count in *count), or nullptr.
    const int32_t* find(const uint8_t* p, size_t n, uint64_t h, int64_t* count) const {
        const uint8_t* keys = keys_.data();
        size_t i = probe(slots_.data(), slots_.size() - 1, h & (slots_.size() - 1), [&](const Slot& s) {
            return s.hash == 0 || (s.hash == h && s.key_len == n && bytes_equal(keys + s.key_off, p, n));
        });
        const Slot& s = slots_[i];
        if (s.hash == 0) return nullptr;
        *count = s.val_len;
        return vals_.data() + s.val_off;
    }

    // Prefetch hints for a pipelined caller: first the home slot of a hash, later (once that
    // slot is in cache) the key and ids it points at.
    void prefetch_slot(uint64_t h) const { __builtin_prefetch(&slots_[h & (slots_.size() - 1)]); }
    void prefetch_entry(uint64_t h) const {
        const Slot& s = slots_[h & (slots_.size() - 1)];
        if (s.hash == h) {
            __builtin_prefetch(keys_.data() + s.key_off);
            __builtin_prefetch(vals_.data() + s.val_off);
        }
    }

    // Add key p[0:n] (hash h) with ids[0:count]; a key already present keeps its ids.
    void insert(const uint8_t* p, size_t n, uint64_t h, const int32_t* ids, int64_t count) {
        if (2 * (used_ + 1) > slots_.size()) grow();
        const uint8_t* keys = keys_.data();
        size_t i = probe(slots_.data(), slots_.size() - 1, h & (slots_.size() - 1), [&](const Slot& s) {
            return s.hash == 0 || (s.hash == h && s.key_len == n && std::memcmp(keys + s.key_off, p, n) == 0);
        });
        if (slots_[i].hash) return;
        slots_[i] = Slot{h, (uint32_t)keys_.size(), (uint32_t)n, (uint32_t)vals_.size(), (uint32_t)count};
        keys_.insert(keys_.end(), p, p + n);
        vals_.insert(vals_.end(), ids, ids + count);
        used_++;
    }

  private:
    struct Slot {
        uint64_t hash;  // 0: empty
        uint32_t key_off, key_len, val_off, val_len;
    };
    static const size_t INITIAL_SLOTS = 1024;
    std::vector<Slot> slots_;
    std::vector<uint8_t> keys_;
    std::vector<int32_t> vals_;
    size_t used_ = 0;

    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(old.size() * 2, Slot{0, 0, 0, 0, 0});
        size_t mask = slots_.size() - 1;
        for (const Slot& s : old) {
            if (!s.hash) continue;
            slots_[probe(slots_.data(), mask, s.hash & mask, [](const Slot& t) { return t.hash == 0; })] = s;
        }
    }
};

}  // namespace fbpt
