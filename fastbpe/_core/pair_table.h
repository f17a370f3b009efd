// Pair of token ids -> value: the learner's pair ids and the encoder's merge ranks.
//
// Open addressing with linear probing (hash.h), keyed on pair_key(left, right), slots indexed
// by Fibonacci hashing, at most half full. Key and value share a slot, so a lookup is one cache
// miss. The key ~0 (the pair (-1, -1), which no table holds) marks an empty slot; looking it up
// finds nothing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hash.h"

namespace fbpt {

static inline uint64_t pair_key(int32_t left, int32_t right) {
    return ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
}

template <class V>
class PairTable {
  public:
    static constexpr uint64_t EMPTY = ~0ULL;

    PairTable() { reset(16); }

    // Empty the table, with `capacity` slots (a power of two, at least 2).
    void reset(size_t capacity) {
        slots_.assign(capacity, Slot{EMPTY, V()});
        mask_ = capacity - 1;
        shift_ = 64;
        while (capacity > 1) {
            capacity >>= 1;
            --shift_;
        }
        used_ = 0;
    }
    size_t capacity() const { return slots_.size(); }
    size_t size() const { return used_; }

    // The slot holding `key`, or the empty slot where it would go.
    size_t index(uint64_t key) const {
        return probe(slots_.data(), mask_, fib_slot(key, shift_),
                     [key](const Slot& s) { return s.key == key || s.key == EMPTY; });
    }
    bool occupied(size_t i) const { return slots_[i].key != EMPTY; }
    V& value(size_t i) { return slots_[i].val; }
    const V& value(size_t i) const { return slots_[i].val; }

    // Store key and value in the empty slot index(key) returned; grows past half full (after
    // which earlier indices are stale).
    void insert_at(size_t i, uint64_t key, const V& val) {
        slots_[i] = Slot{key, val};
        if (2 * ++used_ > slots_.size()) grow();
    }

    // Pointer to the value of `key`, or nullptr.
    const V* find(uint64_t key) const {
        size_t i = index(key);
        return occupied(i) ? &slots_[i].val : nullptr;
    }

    void prefetch(uint64_t key) const { __builtin_prefetch(&slots_[fib_slot(key, shift_)]); }

  private:
    struct Slot {
        uint64_t key;
        V val;
    };
    std::vector<Slot> slots_;
    size_t mask_ = 0, used_ = 0;
    int shift_ = 64;

    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        size_t used = used_;
        reset(2 * old.size());
        for (const Slot& s : old)
            if (s.key != EMPTY) slots_[index(s.key)] = s;
        used_ = used;
    }
};

// One bit per hash of each key of a set, eight bits a key: "not in the set" for seven in eight
// of the keys that are not, from an array of a few hundred KB (in L2) where the set's table
// is megabytes, so that a lookup that would find nothing mostly skips the probe that would
// miss the cache. (Its own hash, not the table's: a key it lets through costs one probe.)
class KeyFilter {
  public:
    // Empty, with room for `count` keys.
    void reset(size_t count) {
        shift_ = 64 - 6;
        while (((size_t)1 << (64 - shift_)) < 8 * count) --shift_;
        bits_.assign((size_t)1 << (64 - shift_ - 6), 0);
    }
    void add(uint64_t key) {
        uint64_t b = bit(key);
        bits_[b >> 6] |= 1ULL << (b & 63);
    }
    // False: the key was never added. True: it may have been.
    bool maybe(uint64_t key) const {
        uint64_t b = bit(key);
        return (bits_[b >> 6] >> (b & 63)) & 1;
    }
    size_t memory() const { return bits_.capacity() * sizeof(uint64_t); }

  private:
    std::vector<uint64_t> bits_ = std::vector<uint64_t>(1, 0);
    int shift_ = 58;  // (64 bits)
    uint64_t bit(uint64_t key) const { return (key * 0xD6E8FEB86659FD93ULL) >> shift_; }
};

}  // namespace fbpt
