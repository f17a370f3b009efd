# Declarations of documents.h: the separators of line and paragraph documents.
from libc.stdint cimport int64_t, uint8_t
from libcpp.vector cimport vector

cdef extern from "documents.h" namespace "fbpt" nogil:
    int64_t find_newline_run(const uint8_t* s, int64_t start, int64_t stop, int newlines)
    void document_spans(const uint8_t* s, int64_t n, int newlines, vector[int64_t]& begins, vector[int64_t]& ends)
