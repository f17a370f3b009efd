# Declarations of derive_merges.h: the merges of a rank-only vocabulary.
from libc.stdint cimport int32_t, int64_t
from libcpp.string cimport string
from libcpp.vector cimport vector

cdef extern from "derive_merges.h" namespace "fbpt" nogil:
    int64_t derive_merges(const vector[string]& tokens, vector[int32_t]& left, vector[int32_t]& right,
                          vector[int32_t]& made) except +
