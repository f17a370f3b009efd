# Declarations of scan.h: pre-tokenizing a document into a list of chunks.
from libc.stdint cimport int64_t, uint8_t
from libcpp.string cimport string
from libcpp.vector cimport vector

from fastbpe._core.poll cimport Poll

cdef extern from "scan.h" namespace "fbpt" nogil:
    cdef cppclass ChunkList:
        vector[uint8_t] data
        vector[int64_t] ends
        Poll poll

    int64_t scan_document_to_list "fbpt::scan_document<fbpt::ChunkList>"(
        const uint8_t* s, size_t n, int pattern, int errors, ChunkList& sink, string& scratch) except +
