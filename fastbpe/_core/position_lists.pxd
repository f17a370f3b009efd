# Declarations of position_lists.h: many growable int32 lists in one pool.
from libc.stdint cimport int32_t, uint64_t

cdef extern from "position_lists.h" namespace "fbpt" nogil:
    cdef cppclass PositionLists:
        size_t add_list() except +
        size_t lists()
        size_t size(size_t lst)
        int32_t* data(size_t lst)
        void push(size_t lst, int32_t value) except +
        int32_t* extend(size_t lst, size_t n) except +
        void truncate(size_t lst, size_t n)
        void release(size_t lst)
        void compact() except +
        uint64_t used()
        size_t bytes()
