// The learner's pair records and its pair -> pair id index (learn.pyx): 8 bytes a slot, half those of a PairTable
// slot, because the key is not stored. A slot holds the pair's id and a 32-bit tag of its key;
// a matching tag is confirmed against the pair's record (`left`, `right`), which the learner
// reads next anyway (every lookup updates the pair's count), so the check costs no extra cache
// miss, while a different tag skips a slot without touching the records. The index is exact:
// a tag only filters, the record decides.
//
// Open addressing with linear probing (hash.h), slots indexed by Fibonacci hashing, at most
// half full. A slot's id is -1 when it is empty. Growing rebuilds the index from the records
// (a record whose `left` is negative is a free id, not indexed); erasing shifts the entries
// after the hole back, so that no probe ever stops early.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hash.h"
#include "pair_table.h"

namespace fbpt {

// Everything a merge step reads or writes about a pair, in one place (one cache miss).
struct PairRecord {
    int64_t count;    // exact weighted count of its live occurrences
    int64_t first;    // lower bound on its first live position; exact after _true_first
    int32_t left;
    int32_t right;
    int32_t touched;  // 1 while listed in the learner's ``touched``
};

class PairIds {
  public:
    PairIds() { reset(16); }

    // Empty the index, with `capacity` slots (a power of two, at least 2).
    void reset(size_t capacity) {
        slots_.assign(capacity, Slot{0, -1});
        shift_ = 64;
        while (capacity > 1) {
            capacity >>= 1;
            --shift_;
        }
        used_ = 0;
    }
    size_t capacity() const { return slots_.size(); }
    size_t size() const { return used_; }

    // The slot holding the id of pair (left, right), or the empty slot where it would go.
    size_t index(int32_t left, int32_t right, const PairRecord* records) const {
        uint64_t key = pair_key(left, right);
        uint32_t t = tag(key);
        return probe(slots_.data(), slots_.size() - 1, fib_slot(key, shift_), [&](const Slot& s) {
            return s.id < 0 || (s.tag == t && records[s.id].left == left && records[s.id].right == right);
        });
    }
    bool occupied(size_t i) const { return slots_[i].id >= 0; }
    int32_t id(size_t i) const { return slots_[i].id; }

    // Store id for pair (left, right) in the empty slot index() returned. Returns whether the
    // index is now past half full: the caller then grows it (grow), after which earlier slot
    // numbers are stale.
    bool insert_at(size_t i, int32_t left, int32_t right, int32_t id) {
        slots_[i] = Slot{tag(pair_key(left, right)), id};
        return 2 * ++used_ > slots_.size();
    }

    // Twice the slots, refilled with the ids [0, n) of `records` whose `left` is not negative.
    void grow(const PairRecord* records, size_t n) {
        reset(2 * slots_.size());
        for (size_t id = 0; id < n; ++id) {
            if (records[id].left < 0) continue;
            uint64_t key = pair_key(records[id].left, records[id].right);
            size_t i = probe(slots_.data(), slots_.size() - 1, fib_slot(key, shift_),
                             [](const Slot& s) { return s.id < 0; });
            slots_[i] = Slot{tag(key), (int32_t)id};
            ++used_;
        }
    }

    // Empty the occupied slot i (the records of the other indexed ids are read to find their
    // home slots). Backward-shift deletion: every later entry of the probe run whose home slot
    // is at or before the hole moves into it, so lookups need no tombstones.
    void erase(size_t i, const PairRecord* records) {
        const size_t mask = slots_.size() - 1;
        for (size_t j = (i + 1) & mask; slots_[j].id >= 0; j = (j + 1) & mask) {
            const PairRecord& r = records[slots_[j].id];
            size_t home = fib_slot(pair_key(r.left, r.right), shift_);
            if (((j - home) & mask) >= ((j - i) & mask)) {  // the hole i lies in [home, j]
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i] = Slot{0, -1};
        --used_;
    }

    void prefetch(int32_t left, int32_t right) const {
        __builtin_prefetch(&slots_[fib_slot(pair_key(left, right), shift_)]);
    }

  private:
    struct Slot {
        uint32_t tag;
        int32_t id;  // -1: empty
    };
    std::vector<Slot> slots_;
    size_t used_ = 0;
    int shift_ = 64;

    // Bits of the key independent of the slot (which takes the top bits of another product).
    static uint32_t tag(uint64_t key) { return (uint32_t)((key * 0xD6E8FEB86659FD93ULL) >> 32); }
};

}  // namespace fbpt
