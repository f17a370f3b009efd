# Declarations of derive_merges.h: the merges of a rank-only vocabulary, the splits of a scored one.
from libc.stdint cimport int32_t, int64_t, uint8_t
from libcpp.string cimport string
from libcpp.string_view cimport string_view
from libcpp.vector cimport vector

cdef extern from "derive_merges.h" namespace "fbpt" nogil:
    int64_t derive_merges(const vector[string]& tokens, vector[int32_t]& left, vector[int32_t]& right,
                          vector[int32_t]& made) except +
    int64_t two_piece_splits(const vector[string_view]& pieces, const vector[uint8_t]& joinable, vector[int32_t]& made,
                             vector[int32_t]& left, vector[int32_t]& right) except +
    int64_t first_repeat(const vector[string_view]& texts, int64_t* first) except +
