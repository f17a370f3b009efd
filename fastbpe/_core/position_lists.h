// Many growable lists of int32 values (the learner's positions of each pair).
//
// A small list's values sit in one block of a shared pool whose capacity is a power of two (at
// least MIN_CAPACITY); a full list moves to a block twice as large. Blocks given back are kept
// on one free list per capacity (the link stored in the block itself) and reused before the
// pool grows; compact() lays the pool out afresh, each small list in a block of exactly its
// size (an *exact* block: most lists of a long chunk's pairs never grow again, and rounding
// them up to a power of two left the pool twice the values it held). An exact block is full:
// the list's next push moves it to a block of a class, and the exact block's room goes onto the
// free lists cut into blocks of the classes (give_back_exact). The pool is a series of fixed-size
// segments (a block never straddles two), so it grows without copying what it holds. A list
// past BIG_CAPACITY values gets a block of its own, grown with realloc (for big blocks the C
// library remaps pages instead of copying) and freed when released, so the largest lists
// never fragment the pool. On Linux big blocks are mapped pages of their own (mmap, grown by
// mremap, given back by munmap): through malloc, blocks under its (adaptive, up to 32 MB)
// mapping threshold come from its heap, where blocks grown and freed by the thousand leave
// holes that stay resident (on one 50 MB chunk, the training peak fell from 406 to 343 MB with
// mapped blocks).
//
// Compared with one std::vector per list this does no malloc/free per growth of a small list
// and frees everything at once: the learner creates about a million lists on 100 MB of text.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "mapped_array.h"

namespace fbpt {

class PositionLists {
  public:
    static constexpr size_t MIN_CAPACITY = 2;  // room for a free block's 8-byte link
    static constexpr int BIG_CLASS = 11;       // MIN_CAPACITY << 11 = 4096 values: a block of its own
    // Pages a big list's truncate gives back, at least: one. At 64 KB, the tails under that
    // stayed resident: on one 50 MB word of English letters, after ~150 merges, about 2,400 big
    // lists held 95 MB of pages, and the opening merges' peak was 230 MB (219 MB at a page).
    static constexpr size_t RELEASE_BYTES = 1 << 12;

    PositionLists() { free_.assign(BIG_CLASS, NO_BLOCK); }
    ~PositionLists() {
        for (uint64_t slot = 0; slot < big_.size(); ++slot) unmap_big(slot);
        for (int32_t* segment : segments_) std::free(segment);
    }
    PositionLists(const PositionLists&) = delete;
    PositionLists& operator=(const PositionLists&) = delete;

    // A new empty list; returns its index (lists are numbered 0, 1, ... in creation order).
    size_t add_list() {
        spans_.push_back(Span{0, 0, NO_CLASS});
        return spans_.size() - 1;
    }
    size_t lists() const { return spans_.size(); }
    size_t size(size_t list) const { return spans_[list].size; }
    // The list's values; valid until the next push to any list (the pool may move).
    int32_t* data(size_t list) {
        const Span& s = spans_[list];
        return s.cls >= BIG_CLASS ? big_[s.offset] : at(s.offset);
    }

    void push(size_t list, int32_t value) {
        Span& s = spans_[list];
        if (s.size == capacity(s.cls) || s.cls == EXACT) grow(list);
        data(list)[spans_[list].size++] = value;
    }

    // Make room for n more values (n > 0) at the list's end and return where they go; the
    // caller writes all n. A list without the room moves to the class holding its new size
    // (not an exact block: the merges that follow add to most of step 0's lists, and each
    // first push would leave an exact block's room unused until the next compaction, which
    // raised the training's peak). The pointer stays valid while other lists grow (pool
    // segments and big blocks never move for another list's sake), until this list grows.
    int32_t* extend(size_t list, size_t n) {
        Span& s = spans_[list];
        size_t want = (size_t)s.size + n;
        if (s.cls == EXACT || want > capacity(s.cls)) grow_to(list, class_for(want));
        int32_t* out = data(list) + spans_[list].size;
        spans_[list].size = (uint32_t)want;
        return out;
    }

    // Keep only the first n values (n <= size), after the caller filtered them in place. A big
    // list gives back the whole pages past its new end (at least RELEASE_BYTES of them): written
    // once, they stayed resident until the list grew over them again or went, and compaction
    // (which shrinks a big block only to the power of two holding it) left them behind too.
    void truncate(size_t list, size_t n) {
        Span& s = spans_[list];
#ifdef __linux__
        if (s.cls >= BIG_CLASS) {
            static const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
            uintptr_t base = (uintptr_t)big_[s.offset];
            uintptr_t from = (base + n * sizeof(int32_t) + page - 1) & ~(page - 1);
            uintptr_t to = (base + (size_t)s.size * sizeof(int32_t) + page - 1) & ~(page - 1);
            if (to >= from + RELEASE_BYTES) madvise((void*)from, to - from, MADV_DONTNEED);
        }
#endif
        s.size = (uint32_t)n;
    }

    // Empty the list and give its block back.
    void release(size_t list) {
        Span& s = spans_[list];
        if (s.cls >= BIG_CLASS) {
            free_big(s.offset);
        } else {
            give_back_small(s);
        }
        s = Span{0, 0, NO_CLASS};
    }

    // Lay every small list out afresh in a pool just big enough (each in an exact block of its
    // size), dropping the free blocks, and trim each big block to its class: growth by
    // doubling and give-backs fragment the pool, and only this returns the room.
    //
    // In place: the small lists slide down in the order of their blocks, so the pool is never
    // held twice (a second pool, copied into, was the learner's peak on one long chunk). A
    // block moves to an offset at or below its own, never into a later list's block: each
    // list starts at or before its old block and takes at most its old block's room (its
    // size, which the old block held), which lay inside one segment (a block that would
    // straddle a segment boundary starts the next segment, which is at or before the old
    // block's).
    //
    // The order of the blocks is found without a list of them (8 bytes a list, sorted, was
    // ~12 MB on one long chunk, the learner's peak at its compactions): each small list's
    // block start is marked in a bitset of the pool (a bit a value) and its first value is
    // swapped with the list's number, the value kept meanwhile in the list's offset field;
    // walking the marks in order finds each list from its block and puts the value back.
    void compact() {
        std::vector<uint64_t> starts((used_ + 63) >> 6, 0);  // block starts of the small lists
        std::vector<uint32_t> turned_small;  // big lists that now fit a small block
        for (size_t list = 0; list < spans_.size(); ++list) {
            Span& s = spans_[list];
            int cls = class_for(s.size);
            if (s.size == 0) {
                if (s.cls >= BIG_CLASS) free_big(s.offset);
                s = Span{0, 0, NO_CLASS};
            } else if (s.cls >= BIG_CLASS && cls >= BIG_CLASS) {
                if (cls < s.cls) resize_big(s.offset, capacity(cls));
                s.cls = (int8_t)cls;
            } else if (s.cls >= BIG_CLASS) {
                turned_small.push_back((uint32_t)list);
            } else {
                uint64_t offset = s.offset;
                starts[offset >> 6] |= 1ULL << (offset & 63);
                int32_t* first = at(offset);
                s.offset = (uint32_t)*first;  // (a value of the list, until the walk below)
                *first = (int32_t)list;
            }
        }
        uint64_t cursor = 0;
        for (size_t w = 0; w < starts.size(); ++w) {
            for (uint64_t bits = starts[w]; bits; bits &= bits - 1) {
                uint64_t offset = (w << 6) + __builtin_ctzll(bits);
                int32_t* first = at(offset);
                Span& s = spans_[(uint32_t)*first];
                *first = (int32_t)s.offset;
                size_t need = s.size;
                if ((cursor & SEGMENT_MASK) + need > (1ULL << SEGMENT_BITS))
                    cursor = (cursor | SEGMENT_MASK) + 1;  // the next segment
                if (cursor != offset) std::memmove(at(cursor), at(offset), need * sizeof(int32_t));
                s.offset = (uint32_t)cursor;
                s.cls = EXACT;
                cursor += need;
            }
        }
        std::vector<uint64_t>().swap(starts);
        used_ = cursor;
        free_.assign(BIG_CLASS, NO_BLOCK);
        size_t keep = (size_t)((cursor + SEGMENT_MASK) >> SEGMENT_BITS);  // segments in use
        for (size_t k = keep; k < segments_.size(); ++k) std::free(segments_[k]);
        segments_.resize(keep);
        for (uint32_t list : turned_small) {  // after the slid lists, in fresh room
            Span& s = spans_[list];
            int cls = class_for(s.size);
            uint64_t offset = take(cls);
            std::memcpy(at(offset), big_[s.offset], s.size * sizeof(int32_t));
            free_big(s.offset);
            s.offset = (uint32_t)offset;
            s.cls = (int8_t)cls;
        }
#ifdef __GLIBC__
        // The segments are 4 MB: once glibc has freed one it serves blocks of that size from
        // its heap instead of mapping them, and pages freed inside the heap stay resident
        // until trimmed. Compaction frees most of the pool at once: give those pages back.
        malloc_trim(0);
#endif
    }

    // Room taken by the small lists' blocks, free blocks included (in values).
    uint64_t used() const { return used_; }

    size_t bytes() const {
        return (segments_.size() << SEGMENT_BITS) * sizeof(int32_t) + spans_.capacity() * sizeof(Span) +
               big_values_ * sizeof(int32_t);
    }

  private:
    static constexpr int NO_CLASS = -1;
    static constexpr int EXACT = -2;  // an exact block: capacity == size (compact())
    static constexpr uint64_t NO_BLOCK = ~0ULL;

    // 9 bytes, packed: one per list, and the learner makes one list per distinct pair (millions
    // on one long chunk), so the header is a good part of the lists' memory.
    struct __attribute__((packed)) Span {
        uint32_t offset;  // first value in the pool (below MAX_POOL), or for a big list its index in big_
        uint32_t size;    // values in use
        int8_t cls;       // capacity MIN_CAPACITY << cls, NO_CLASS: no block, or EXACT
    };
    static constexpr uint64_t MAX_POOL = 1ULL << 32;  // values the small lists' pool can address
    MappedArray<Span> spans_;  // (remapped as it doubles: no moment of two copies)
    // The pool: value i is segments_[i >> SEGMENT_BITS][i & SEGMENT_MASK]; values before used_
    // are in blocks (or a segment's unused tail), the rest of the last segment is room to grow.
    static constexpr int SEGMENT_BITS = 20;  // 4 MB segments
    static constexpr uint64_t SEGMENT_MASK = (1ULL << SEGMENT_BITS) - 1;
    std::vector<int32_t*> segments_;
    uint64_t used_ = 0;
    std::vector<uint64_t> free_;  // per small class: the first free block, or NO_BLOCK
    std::vector<int32_t*> big_;   // the big lists' own blocks (nullptr: a free slot)
    std::vector<size_t> big_cap_;  // their capacities, in values
    std::vector<uint64_t> big_slots_;  // free slots of big_
    uint64_t big_values_ = 0;     // capacity of the big blocks, in values

    static size_t capacity(int cls) { return cls < 0 ? 0 : MIN_CAPACITY << cls; }  // (EXACT: the size)
    static int class_for(size_t n) {  // the smallest class holding n values
        int cls = 0;
        while ((MIN_CAPACITY << cls) < n) ++cls;
        return cls;
    }

    int32_t* at(uint64_t offset) { return segments_[offset >> SEGMENT_BITS] + (offset & SEGMENT_MASK); }

    uint64_t take(int cls) {
        uint64_t offset = free_[cls];
        if (offset != NO_BLOCK) {
            std::memcpy(&free_[cls], at(offset), sizeof(uint64_t));
            return offset;
        }
        size_t need = capacity(cls);
        if ((used_ & SEGMENT_MASK) + need > (1ULL << SEGMENT_BITS) || used_ == (segments_.size() << SEGMENT_BITS)) {
            // start a new segment; the old one's tail (under a big block's size) stays unused
            int32_t* segment = (int32_t*)std::malloc(sizeof(int32_t) << SEGMENT_BITS);
            if (!segment) throw std::bad_alloc();
            if (((uint64_t)segments_.size() + 1) << SEGMENT_BITS > MAX_POOL) {
                std::free(segment);
                throw std::length_error("the position lists hold more than 2**32 values");
            }
            used_ = (uint64_t)segments_.size() << SEGMENT_BITS;
            segments_.push_back(segment);
        }
        offset = used_;
        used_ += need;
        return offset;
    }

    void give_back(uint64_t offset, int cls) {
        std::memcpy(at(offset), &free_[cls], sizeof(uint64_t));
        free_[cls] = offset;
    }

    // Give back the pool block of a list that is not big (none when it has no block).
    void give_back_small(const Span& s) {
        if (s.cls >= 0) give_back(s.offset, s.cls);
        else if (s.cls == EXACT) give_back_exact(s.offset, s.size);
    }

    // Give back the first n values of an exact block (its room is at least its list's size:
    // a truncated list leaves room behind it, never counted) as blocks of the classes, largest
    // first; an odd value at the end stays unused until compact(). Left to the next compaction,
    // such room was part of what the pool held past its entries (on one long chunk, 16M values
    // of room for 7M listed just before a compaction).
    void give_back_exact(uint64_t offset, size_t n) {
        int cls = BIG_CLASS - 1;
        while (n >= MIN_CAPACITY) {
            while (capacity(cls) > n) --cls;
            give_back(offset, cls);
            offset += capacity(cls);
            n -= capacity(cls);
        }
    }

    uint64_t new_big(size_t values) {
        uint64_t slot;
        if (!big_slots_.empty()) {
            slot = big_slots_.back();
            big_slots_.pop_back();
        } else {
            slot = big_.size();
            big_.push_back(nullptr);
            big_cap_.push_back(0);
        }
        resize_big(slot, values);
        return slot;
    }

    // (Re)allocate big block `slot` to hold `values` values, keeping its contents.
    void resize_big(uint64_t slot, size_t values) {
#ifdef __linux__
        void* mapped = big_[slot] ? mremap(big_[slot], big_cap_[slot] * sizeof(int32_t), values * sizeof(int32_t),
                                           MREMAP_MAYMOVE)
                                  : mmap(nullptr, values * sizeof(int32_t), PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mapped == MAP_FAILED) throw std::bad_alloc();
        int32_t* block = (int32_t*)mapped;
#else
        int32_t* block = (int32_t*)std::realloc(big_[slot], values * sizeof(int32_t));
        if (!block) throw std::bad_alloc();
#endif
        big_values_ += values;
        big_values_ -= big_cap_[slot];
        big_cap_[slot] = values;
        big_[slot] = block;
    }

    void unmap_big(uint64_t slot) {
        if (!big_[slot]) return;
#ifdef __linux__
        munmap(big_[slot], big_cap_[slot] * sizeof(int32_t));
#else
        std::free(big_[slot]);
#endif
    }

    void free_big(uint64_t slot) {
        unmap_big(slot);
        big_[slot] = nullptr;
        big_values_ -= big_cap_[slot];
        big_cap_[slot] = 0;
        big_slots_.push_back(slot);
    }

    void grow(size_t list) {
        Span s = spans_[list];
        grow_to(list, s.cls == NO_CLASS ? 0 : s.cls == EXACT ? class_for(s.size + 1) : s.cls + 1);
    }

    // Move the list to a block of class cls (larger than its block), keeping its values.
    void grow_to(size_t list, int cls) {
        Span s = spans_[list];
        uint64_t offset;
        if (s.cls >= BIG_CLASS) {  // already big: grow in place
            resize_big(s.offset, capacity(cls));
            spans_[list].cls = (int8_t)cls;
            return;
        }
        if (cls >= BIG_CLASS) {
            offset = new_big(capacity(cls));
            if (s.size) std::memcpy(big_[offset], at(s.offset), s.size * sizeof(int32_t));
        } else {
            offset = take(cls);
            if (s.size) std::memcpy(at(offset), at(s.offset), s.size * sizeof(int32_t));
        }
        give_back_small(s);
        spans_[list].offset = (uint32_t)offset;
        spans_[list].cls = (int8_t)cls;
    }
};

}  // namespace fbpt
