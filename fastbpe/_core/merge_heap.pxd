# Declarations of merge_heap.h: the learner's heap of candidate merges.
from libc.stdint cimport int32_t, int64_t

cdef extern from "merge_heap.h" namespace "fbpt" nogil:
    cdef struct MergeCandidate:
        int64_t count
        int64_t first
        int32_t pair
    cdef cppclass MergeHeap:
        size_t size()
        bint empty()
        const MergeCandidate& top()
        void push(const MergeCandidate& e) except +
        MergeCandidate pop()
        size_t capacity()
        void clear()
        void release()
        void reserve(size_t n) except +
        void add(const MergeCandidate& e) except +
        void make()
