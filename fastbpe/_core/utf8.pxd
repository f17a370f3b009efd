# Declarations of utf8.h used by the shells: validation and the UTF-8 of a str's code units.
from libc.stdint cimport int64_t, uint8_t

cdef extern from "utf8.h" namespace "fbpt" nogil:
    size_t NPOS
    bint utf8_valid(const uint8_t* s, size_t n)
    bint utf8_valid_in_order(const uint8_t* const* texts, const size_t* sizes, size_t n)
    size_t utf8_max_per_unit(int kind)
    int64_t utf8_from_str_data(int kind, const void* data, size_t n, uint8_t* out)
    int64_t utf8_from_str_data(int kind, const void* data, size_t n, uint8_t* out, bint surrogatepass)
