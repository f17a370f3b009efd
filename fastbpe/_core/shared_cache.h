// A chunk cache that the threads of one tokenizer's pools share: chunk bytes -> ids, filled by
// whichever thread merged the chunk first, so that two workers do not each pay BPE for the
// same chunks (10 MB of English holds about 138,000 distinct chunks, each about 1 us to merge
// and remember; two workers with caches of their own merged most of them twice).
//
// Insert-only open addressing over a fixed table, so that readers never lock:
//  * A slot is one word, read and set atomically: 0 (empty) or tag (the hash's top 24 bits) |
//    arena (8 bits) | offset (32 bits) of the entry. An entry is written first, then its slot
//    is set by a compare-and-swap with release order; a reader loads a slot with acquire
//    order, so the entry it then reads is complete. A slot, once set, never changes until
//    clear().
//  * Entries live in arenas, one per attached thread (take_arena), written by that thread
//    only and never moved: an arena is a row of fixed blocks, and an entry never straddles
//    two. A thread whose insert loses the race for a slot to an equal key leaves its arena's
//    fill level as it was (nobody saw the entry it wrote past it).
//  * The table stops taking entries when half its slots are used or the arenas hold the
//    word budget (insert returns false: the caller keeps the chunk in its own cache), so a
//    probe always meets an empty slot. An insert reserves its entry (an atomic add) before
//    writing it and gives back a reservation it does not use, so that threads inserting at
//    once never take more than capacity() together. clear() empties it, and only runs while
//    no thread reads or writes it (the caller's promise: between calls, when no call is
//    running).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "bytes_map.h"

namespace fbpt {

class SharedChunkCache {
  public:
    static const int MAX_ARENAS = 64;           // threads attached at once (others keep their own cache)
    static const int BLOCK_BITS = 18;           // an arena block: 2^18 words (1 MB)
    static const uint32_t BLOCK_WORDS = 1u << BLOCK_BITS;
    static const int MAX_BLOCKS = 1024;         // 1 GB per arena at most

    // A table for about max_ids ids: max_ids / 2 slots (a power of two, 2^10..2^22), at most
    // half of them used, and at most 6 words (24 bytes: ids, key, header) per id of max_ids.
    explicit SharedChunkCache(size_t max_ids) {
        size_t slots = (size_t)1 << 10;
        while (slots < max_ids / 2 && slots < ((size_t)1 << 22)) slots *= 2;
        mask_ = slots - 1;
        max_entries_ = slots / 2;
        max_words_ = 6 * (uint64_t)max_ids;
        // Fresh pages (ZeroedBlock): huge ones from 2 MB up. The threads read slots before
        // any is set; on 4 KB pages each first read mapped the zero page and each first set
        // then replaced it, flushing the other cores' TLBs by interrupt (100 MB of English,
        // cl100k, two workers' first pass: 8,200 of the faults and 8% of the CPU time).
        block_.open(slots * sizeof(uint64_t), slots * sizeof(uint64_t));
        slots_ = (uint64_t*)block_.data();
        for (int a = 0; a < MAX_ARENAS; ++a) {
            arenas_[a].taken = false;
            arenas_[a].used = 1;  // (offset 0 is never an entry's: a set slot is never 0)
            for (int b = 0; b < MAX_BLOCKS; ++b) arenas_[a].blocks[b].store(nullptr, std::memory_order_relaxed);
        }
    }
    ~SharedChunkCache() {
        for (int a = 0; a < MAX_ARENAS; ++a)
            for (int b = 0; b < MAX_BLOCKS; ++b) std::free(arenas_[a].blocks[b].load(std::memory_order_relaxed));
    }
    SharedChunkCache(const SharedChunkCache&) = delete;
    SharedChunkCache& operator=(const SharedChunkCache&) = delete;

    // An arena for the calling thread to insert into, or -1 when all are taken.
    int take_arena() {
        std::lock_guard<std::mutex> hold(lock_);
        for (int a = 0; a < MAX_ARENAS; ++a) {
            if (!arenas_[a].taken) {
                arenas_[a].taken = true;
                return a;
            }
        }
        return -1;
    }
    // The arena back, its entries kept (the mutex hands its fill level to the next taker).
    void give_back(int arena) {
        if (arena < 0) return;
        std::lock_guard<std::mutex> hold(lock_);
        arenas_[arena].taken = false;
    }

    size_t size() const {  // (a reservation about to be given back may pass capacity() for a moment)
        int64_t n = entries_.load(std::memory_order_relaxed);
        return (size_t)(n < max_entries_ ? n : max_entries_);
    }
    size_t capacity() const { return (size_t)max_entries_; }
    // Whether inserts are refused now (a full table, or the word budget spent).
    bool full() const {
        return entries_.load(std::memory_order_relaxed) >= max_entries_ ||
               words_.load(std::memory_order_relaxed) >= max_words_;
    }

    // Empty the table. Only while no thread uses it.
    void clear() {
        std::memset(slots_, 0, (mask_ + 1) * sizeof(uint64_t));
        for (int a = 0; a < MAX_ARENAS; ++a) arenas_[a].used = 1;
        entries_.store(0, std::memory_order_relaxed);
        words_.store(0, std::memory_order_relaxed);
    }

    void prefetch_slot(uint64_t h) const { __builtin_prefetch(&slots_[h & mask_]); }
    void prefetch_entry(uint64_t h) const {
        uint64_t v = __atomic_load_n(&slots_[h & mask_], __ATOMIC_ACQUIRE);
        if (v != 0 && (v & TAG_BITS) == (h & TAG_BITS)) __builtin_prefetch(entry_of(v));
    }

    // The ids of key p[0:n] (hash h; n >= 2), their count in *count, or nullptr.
    // Safe while other threads insert.
    const int32_t* find(const uint8_t* p, size_t n, uint64_t h, int64_t* count) const {
        for (size_t i = h & mask_;; i = (i + 1) & mask_) {
            uint64_t v = __atomic_load_n(&slots_[i], __ATOMIC_ACQUIRE);
            if (v == 0) return nullptr;
            if ((v & TAG_BITS) != (h & TAG_BITS)) continue;
            const uint32_t* e = entry_of(v);
            if (key_length(e) == n && bytes_equal((const uint8_t*)(e + 1), p, n)) {
                *count = id_count(e);
                return (const int32_t*)(e + 1 + key_words(n));
            }
        }
    }

    // Remember key p[0:n] (hash h; n >= 2) with ids[0:count] in the calling thread's arena.
    // False when the table takes no more entries (or arena is -1); true when it holds the key
    // now (put here or by another thread).
    bool insert(int arena, const uint8_t* p, size_t n, uint64_t h, const int32_t* ids, int64_t count) {
        if (arena < 0 || n > 0xFFFF || count > 0xFFFF) return false;  // (the header's 16-bit fields)
        if (words_.load(std::memory_order_relaxed) >= max_words_) return false;
        if (entries_.fetch_add(1, std::memory_order_relaxed) >= max_entries_) {  // (the reservation)
            entries_.fetch_sub(1, std::memory_order_relaxed);
            return false;
        }
        Arena& mine = arenas_[arena];
        uint32_t words = 1 + key_words(n) + (uint32_t)count;
        uint32_t used = mine.used, at = used;
        if ((at & (BLOCK_WORDS - 1)) + words > BLOCK_WORDS) at = (at | (BLOCK_WORDS - 1)) + 1;  // next block
        uint32_t block = at >> BLOCK_BITS;
        if (block >= (uint32_t)MAX_BLOCKS) return unreserve(false);
        uint32_t* base = mine.blocks[block].load(std::memory_order_relaxed);
        if (base == nullptr) {  // (published by the release of the slot that first points into it)
            base = (uint32_t*)std::malloc(BLOCK_WORDS * sizeof(uint32_t));
            if (base == nullptr) return unreserve(false);
            mine.blocks[block].store(base, std::memory_order_relaxed);
        }
        uint32_t* e = base + (at & (BLOCK_WORDS - 1));
        e[0] = (uint32_t)n | ((uint32_t)count << 16);
        e[key_words(n)] = 0;  // (the key's last word zero-padded: the entry is fully written)
        std::memcpy(e + 1, p, n);
        std::memcpy(e + 1 + key_words(n), ids, (size_t)count * sizeof(int32_t));
        uint64_t mine_v = (h & TAG_BITS) | ((uint64_t)arena << 32) | at;
        for (size_t i = h & mask_;; i = (i + 1) & mask_) {
            uint64_t v = __atomic_load_n(&slots_[i], __ATOMIC_ACQUIRE);
            if (v == 0) {
                if (__atomic_compare_exchange_n(&slots_[i], &v, mine_v, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                    mine.used = at + words;  // (its entry was counted by the reservation)
                    words_.fetch_add(at + words - used, std::memory_order_relaxed);  // (a block's skipped tail too)
                    return true;
                }
                // another thread took the slot first: v is its entry, looked at below
            }
            if ((v & TAG_BITS) != (h & TAG_BITS)) continue;
            const uint32_t* other = entry_of(v);
            if (key_length(other) == n && bytes_equal((const uint8_t*)(other + 1), p, n)) return unreserve(true);
        }
    }

  private:
    // Give back an insert's reservation of an entry it did not write; returns `result`.
    bool unreserve(bool result) {
        entries_.fetch_sub(1, std::memory_order_relaxed);
        return result;
    }

    static const uint64_t TAG_BITS = 0xFFFFFF0000000000ULL;
    struct Arena {
        std::atomic<uint32_t*> blocks[MAX_BLOCKS];
        uint32_t used;  // words written; its owner's only (take_arena hands it over)
        bool taken;
    };

    ZeroedBlock block_;  // slots_'s memory
    uint64_t* slots_;    // read and set with the __atomic builtins (a plain array of zeroed pages)
    size_t mask_;
    int64_t max_entries_;
    uint64_t max_words_;
    std::atomic<int64_t> entries_{0};
    std::atomic<uint64_t> words_{0};
    std::mutex lock_;
    Arena arenas_[MAX_ARENAS];

    static inline uint32_t key_words(size_t n) { return (uint32_t)((n + 3) / 4); }
    static inline size_t key_length(const uint32_t* e) { return e[0] & 0xFFFF; }
    static inline int64_t id_count(const uint32_t* e) { return e[0] >> 16; }
    inline const uint32_t* entry_of(uint64_t v) const {
        const uint32_t* base = arenas_[(v >> 32) & 0xFF].blocks[(uint32_t)v >> BLOCK_BITS].load(std::memory_order_relaxed);
        return base + ((uint32_t)v & (BLOCK_WORDS - 1));
    }
};

}  // namespace fbpt
