// The learner's heap of candidate merges (learn.pyx): an entry and the order entries pop in.
// Kept in C++ so that the heap of heap.h can hold it; the invariants that make the lazy heap
// exact are in learn.pyx's module docstring.
#pragma once
#include <cstdint>

#include "heap.h"

namespace fbpt {

struct MergeCandidate {
    int64_t count;  // the pair's count when pushed (an upper bound on its count now)
    int64_t first;  // tie key: a lower bound on its first position, or its fixed rank key
    int32_t pair;   // index of the pair in the learner's table
};

// The merge order: higher count first; among equal counts, the smaller tie key.
struct MergesBefore {
    bool operator()(const MergeCandidate& x, const MergeCandidate& y) const {
        return x.count > y.count || (x.count == y.count && x.first < y.first);
    }
};

typedef Heap<MergeCandidate, MergesBefore> MergeHeap;

}  // namespace fbpt
