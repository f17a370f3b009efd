// The learner's pair records and its pair -> pair id index (learn.pyx): 8 bytes a slot, half those of a PairTable
// slot, because the key is not stored. A slot holds the pair's id and a 32-bit hash of its key
// (its tag); a matching tag is confirmed against the pair's record (`left`, `right`), which the
// learner reads next anyway (every lookup updates the pair's count), so the check costs no extra
// cache miss, while a different tag skips a slot without touching the records. The index is
// exact: a tag only filters, the record decides. A slot is 7 bytes, unaligned: the tag's 24 bits
// and the id's 32 (an 8-byte slot with a 32-bit tag was 5 MB more of the training's peak on one
// 50 MB chunk; the tag filters as well at 24 bits: a false match is one slot in 16M).
//
// A pair that occurs once, in a long chunk (long_chunks.h), below the merge floor, has no
// record: its slot's id is SINGLE - position, and its key is read from the store at that
// position (the token there and the next one). On one long chunk most live pairs are such
// pairs (~70%): a slot instead of a record, a list and a slot. The learner keeps each such
// slot's position a live occurrence of its pair (it erases the slot before the occurrence
// goes) and turns it into a record (set_id) when a second occurrence comes.
//
// Open addressing with linear probing. The home slot is the tag scaled to the capacity
// (tag * capacity >> 24), so any capacity works and moving a slot (growth, erasure) never needs
// its key: single pairs' keys are reads at random places of the long-chunk store, and growing
// or erasing by them cost a cache miss per single pair. (Past 2**24 slots, 13M pairs, homes
// are every other slot or sparser: probing as into buckets of two or more, still exact.)
// The index grows by half when over half full; once large (set_dense_from) it fills to 13/16
// and grows by an eighth: on one 50 MB chunk it holds 3.7M pairs, and doubling at half full had
// left it 8.4M slots (67 MB, a quarter of the training's peak); growing by half at 13/16, it
// had 5.1M slots, just grown (load 0.54), where the lists peak before a compaction. A slot's id
// is EMPTY (-1) when it is empty. Erasing shifts the entries after the hole back, so that no
// probe ever stops early (the index is never full, so every probe ends).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hash.h"
#include "long_chunks.h"
#include "mapped_array.h"
#include "pair_table.h"
#ifdef __linux__
#include <sys/mman.h>
#endif

namespace fbpt {

// Everything a merge step reads or writes about a pair, in one place (one cache miss).
struct PairRecord {
    int64_t count;    // exact weighted count of its live occurrences
    int32_t left;
    int32_t right;
    int64_t first;    // lower bound on its first live position; exact after _true_first
    // 24 bytes: the learner's touched marks are a byte array of their own (on one long chunk
    // a 4-byte field here padded the record to 32 bytes, 10 MB more at the peak). A count's
    // decrement reads the first 16 (its lookup confirms left and right), which straddle two
    // cache lines for one record in 8; with `first` second, for 2 in 8.
};

class PairIds {
  public:
    static constexpr int32_t EMPTY = -1;
    static constexpr int32_t SINGLE = -2;  // id SINGLE - p: the pair's one occurrence is at p
    // Grow past half full while the index holds fewer than dense_from pairs (default 2**20),
    // past 13/16 full after that. Linear probing's probes stay short up to ~0.8 full (about 3
    // slots, most in the same cache line, for a pair that is there), but the longer probes
    // still cost: on 100 MB of English (0.4M pairs) the merge phase took ~10% longer at 13/16.
    // Below 2**20 pairs the index is at most 16 MB; above, it is a large part of the peak.
    void set_dense_from(size_t pairs) { dense_from_ = pairs; }

    PairIds() { reset(16); }
    ~PairIds() { unmap(); }
    PairIds(const PairIds&) = delete;
    PairIds& operator=(const PairIds&) = delete;

    // The long-chunk store single pairs' keys are read from (kept by the caller).
    void attach(const LongChunks* longs) { longs_ = longs; }

    // Empty the index, with `capacity` slots (at least 2).
    void reset(size_t capacity) {
        unmap();
        remap(capacity);
        used_ = 0;
        singles_ = 0;
    }
    size_t capacity() const { return cap_; }
    size_t bytes() const { return bytes_for(cap_); }
    size_t size() const { return used_; }
    size_t singles() const { return singles_; }  // slots of single pairs (in size())

    // The slot holding the id of pair (left, right), or the empty slot where it would go.
    // The probe (record_index) stops at the first slot that is not a record (the lookup of a
    // table without single pairs, as fast as one that cannot hold them); only a single pair
    // there sends it on.
    size_t index(int32_t left, int32_t right, const PairRecord* records) const {
        size_t i = record_index(left, right, records);
        if (__builtin_expect(id(i) < EMPTY, 0)) {
            uint64_t key = pair_key(left, right);
            return index_from(i, key, tag(key), records);
        }
        return i;
    }
    // The probe of index(): the pair's record slot, or the first empty or single-pair slot on
    // its way. In an index that holds no single pair (a learner without long chunks) that is
    // index()'s answer, with no look at a single pair's key.
    size_t record_index(int32_t left, int32_t right, const PairRecord* records) const {
        uint32_t t = tag(pair_key(left, right));
        size_t n = cap_, i = home(t);
        for (;; i = next(i, n)) {
            Slot s = load(i);
            if (s.id < 0 || (s.tag == t && records[s.id].left == left && records[s.id].right == right)) return i;
        }
    }
    bool occupied(size_t i) const { return id(i) != EMPTY; }
    // The record of the pair in slot i, or (negative) SINGLE - its one position.
    int32_t id(size_t i) const {
        int32_t v;
        std::memcpy(&v, slots_ + i * SLOT_BYTES + 3, 4);
        return v;
    }
    // Give the pair in occupied slot i another id (a single pair its record).
    void set_id(size_t i, int32_t id) {
        singles_ -= this->id(i) < EMPTY;
        singles_ += id < EMPTY;
        std::memcpy(slots_ + i * SLOT_BYTES + 3, &id, 4);
    }

    // Store id for pair (left, right) in the empty slot index() returned. Returns whether the
    // index is now past its load (set_dense_from): the caller then grows it (grow), after
    // which earlier slot numbers are stale.
    bool insert_at(size_t i, int32_t left, int32_t right, int32_t id) {
        store(i, Slot{tag(pair_key(left, right)), id});
        singles_ += id < EMPTY;
        ++used_;
        return used_ < dense_from_ ? 2 * used_ > cap_ : 16 * used_ > 13 * cap_;
    }

    // Half again the slots (an eighth once dense), in place: the slots are remapped (mremap on Linux: no moment of
    // two copies) and every entry moves to its place for the new capacity. Rebuilt apart (the
    // old slots freed first, the single pairs, found only there, copied out), growth had held
    // the new slots and a copy of the single pairs at once: 12 MB more on one 50 MB chunk,
    // where the index grows from 26 to 39 MB late in the run. The moves use the tags alone (no
    // key is read). `records`, `n`: unused (the records' pairs are the index's).
    //
    // An entry still at its old place is *pending* (a bit each). Each is taken out in turn and
    // carried along its new probe: past settled entries, into an empty slot, or swapped with a
    // pending entry, which is carried on. Settled entries never move and only pending slots are
    // emptied, so every slot between a settled entry's home and its place stays occupied: each
    // probe run is one linear probing would make. The entries are taken from the last slot
    // down: a new home is the old one scaled up, mostly above the slot being emptied, where
    // every slot is settled or empty, so the carried entry settles with no swap. Taken from the
    // first slot up, an entry mostly swapped with a pending one, carried on to a slot further
    // up (chains of about 1 / ln(growth) slots, a cache miss each): growing by an eighth, on one
    // 50 MB chunk the growths took about 2 s of 20.
    void grow(const PairRecord* records, size_t n) {
        (void)records;
        (void)n;
        const size_t old = cap_;
        std::vector<uint64_t> pending((old + 63) >> 6, 0);
        for (size_t i = 0; i < old; ++i)
            if (id(i) != EMPTY) pending[i >> 6] |= 1ULL << (i & 63);
        remap(old + (used_ < dense_from_ ? old / 2 : old / 8));
        const size_t cap = cap_;
        for (size_t i = old; i-- > 0;) {
            if (!((pending[i >> 6] >> (i & 63)) & 1)) continue;
            Slot carried = load(i);
            store(i, Slot{0, EMPTY});
            pending[i >> 6] &= ~(1ULL << (i & 63));
            size_t j = home(carried.tag);
            for (;;) {
                if (id(j) == EMPTY) {
                    store(j, carried);
                    break;
                }
                if (j < old && ((pending[j >> 6] >> (j & 63)) & 1)) {
                    Slot next_carried = load(j);
                    store(j, carried);
                    pending[j >> 6] &= ~(1ULL << (j & 63));
                    carried = next_carried;
                    j = home(carried.tag);
                    continue;
                }
                j = next(j, cap);
            }
        }
    }

    // Empty the occupied slot i. Backward-shift deletion: every later entry of the probe run
    // whose home slot is at or before the hole moves into it, so lookups need no tombstones.
    // Out of line: the learner's _remove, which erases a single pair as its occurrence goes,
    // stays small enough to inline.
    __attribute__((noinline)) void erase(size_t i) {
        const size_t n = cap_;
        singles_ -= id(i) < EMPTY;
        for (size_t j = next(i, n);; j = next(j, n)) {
            Slot s = load(j);
            if (s.id == EMPTY) break;
            size_t h = home(s.tag);
            if (distance(h, j, n) >= distance(i, j, n)) {  // the hole i lies in [home, j]
                store(i, s);
                i = j;
            }
        }
        store(i, Slot{0, EMPTY});
        --used_;
    }

    void prefetch(int32_t left, int32_t right) const {
        __builtin_prefetch(slots_ + home(tag(pair_key(left, right))) * SLOT_BYTES);
    }

  private:
    struct Slot {
        uint32_t tag;  // 24 bits
        int32_t id;    // a record, EMPTY, or SINGLE - position
    };
    // Slot i is the 7 bytes from slots_ + 7 i: its tag (3 bytes), then its id (4), little-endian.
    static constexpr size_t SLOT_BYTES = 7;
    uint8_t* slots_ = nullptr;  // cap_ slots and a byte (slot loads read 8 bytes), mapped pages of their own (remap)
    size_t cap_ = 0;
    size_t used_ = 0, singles_ = 0;
    size_t dense_from_ = 1 << 20;
    const LongChunks* longs_ = nullptr;

    size_t home(uint32_t t) const { return (size_t)(((uint64_t)t * cap_) >> 24); }

    Slot load(size_t i) const {
        uint64_t v;
        std::memcpy(&v, slots_ + i * SLOT_BYTES, 8);  // (the last slot's 8th byte is the padding byte)
        return Slot{(uint32_t)v & 0xFFFFFF, (int32_t)(uint32_t)(v >> 24)};
    }
    void store(size_t i, Slot s) {
        std::memcpy(slots_ + i * SLOT_BYTES, &s.tag, 3);  // (little-endian: its low 3 bytes)
        std::memcpy(slots_ + i * SLOT_BYTES + 3, &s.id, 4);
    }
    static size_t bytes_for(size_t capacity) { return capacity * SLOT_BYTES + 1; }

    // Resize the slots to `capacity` (at least 2), keeping the first min(capacity, old) and
    // emptying the new ones.
    void remap(size_t capacity) {
        size_t bytes = bytes_for(capacity);
#ifdef __linux__
        void* p = slots_ ? mremap(slots_, bytes_for(cap_), bytes, MREMAP_MAYMOVE)
                         : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
#else
        void* p = std::realloc(slots_, bytes);
        if (!p) throw std::bad_alloc();
#endif
        slots_ = (uint8_t*)p;
        for (size_t i = cap_; i < capacity; ++i) store(i, Slot{0, EMPTY});
        cap_ = capacity;
    }
    void unmap() {
        if (!slots_) return;
#ifdef __linux__
        munmap(slots_, bytes_for(cap_));
#else
        std::free(slots_);
#endif
        slots_ = nullptr;
        cap_ = 0;
    }
    static size_t next(size_t i, size_t n) { return i + 1 == n ? 0 : i + 1; }
    static size_t distance(size_t from, size_t to, size_t n) { return to >= from ? to - from : to + n - from; }

    // The key of a single pair: the token at its position and the next one. Out of line: it
    // is never reached without long chunks, and the probe loops stay small.
    __attribute__((noinline)) uint64_t single_key(int32_t id) const {
        int64_t p = SINGLE - (int64_t)id;
        int64_t end = longs_->chunk_of_block(longs_->block_of(p)).end;
        int64_t q = longs_->next(p, end), r = longs_->next(q, end);
        return pair_key(longs_->get(p, q - p), longs_->get(q, r - q));
    }
    // The probe of index() went on from slot i, a single pair's: records and single pairs
    // are compared alike, up to the first empty slot.
    __attribute__((noinline)) size_t index_from(size_t i, uint64_t key, uint32_t t,
                                                const PairRecord* records) const {
        const size_t n = cap_;
        for (;; i = next(i, n)) {
            Slot s = load(i);
            if (s.id == EMPTY || (s.tag == t && key_of(s, records) == key)) return i;
        }
    }
    uint64_t key_of(const Slot& s, const PairRecord* records) const {
        if (s.id < 0) return single_key(s.id);
        return pair_key(records[s.id].left, records[s.id].right);
    }

    // The key's hash: its top bits pick the home slot, all 24 filter the probe.
    static uint32_t tag(uint64_t key) { return (uint32_t)((key * 0xD6E8FEB86659FD93ULL) >> 40); }
};

}  // namespace fbpt
