# Declarations of pair_ids.h: the learner's pair records and pair -> id index.
from libc.stdint cimport int32_t, int64_t

from fastbpe._core.long_chunks cimport LongChunks

cdef extern from "pair_ids.h" namespace "fbpt" nogil:
    cdef struct PairRecord:
        int64_t count
        int32_t left
        int32_t right
        int64_t first
    cdef cppclass MappedArray[T]:
        T& operator[](size_t i)
        T* data()
        size_t size()
        size_t capacity()
        void push_back(const T& value) except +
    cdef cppclass PairIds:
        void attach(const LongChunks* longs)
        void reset(size_t capacity) except +
        void set_dense_from(size_t pairs)
        size_t capacity()
        size_t bytes()
        size_t size()
        size_t singles()
        size_t index(int32_t left, int32_t right, const PairRecord* records)
        size_t record_index(int32_t left, int32_t right, const PairRecord* records)
        bint occupied(size_t i)
        int32_t id(size_t i)
        void set_id(size_t i, int32_t id)
        bint insert_at(size_t i, int32_t left, int32_t right, int32_t id)
        void grow(const PairRecord* records, size_t n) except +
        void erase(size_t i)
        void prefetch(int32_t left, int32_t right)
