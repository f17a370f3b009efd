# Declarations of pair_table.h: pair of token ids -> value.
from libc.stdint cimport int32_t, uint64_t

cdef extern from "pair_table.h" namespace "fbpt" nogil:
    uint64_t pair_key(int32_t left, int32_t right)
    cdef cppclass PairTable[V]:
        void reset(size_t capacity) except +
        size_t capacity()
        size_t size()
        size_t index(uint64_t key)
        bint occupied(size_t i)
        V& value(size_t i)
        void insert_at(size_t i, uint64_t key, const V& val) except +
        const V* find(uint64_t key)
        void prefetch(uint64_t key)
