# Declarations of cut.h: safe block boundaries.
from libc.stdint cimport uint8_t

cdef extern from "cut.h" namespace "fbpt" nogil:
    const int RULE_CUSTOM
    size_t find_cut(const uint8_t* s, size_t n, size_t start, int rule)
