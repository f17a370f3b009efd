# Declarations of the C++ scanner (scan.h) and chunk table (chunk_table.h), shared by
# _pretok.pyx and _count.pyx. Only extern declarations: there is no _scan module.
from libc.stdint cimport int64_t, uint8_t
from libcpp.string cimport string
from libcpp.vector cimport vector


# Named so that cythonize rebuilds when any of the headers changes (it tracks extern headers,
# not the headers they include).
cdef extern from "unicode_tables.h":
    pass
cdef extern from "scan.h":
    pass


cdef extern from "chunk_table.h" namespace "fbpt" nogil:
    cdef enum Pattern:
        PAT_WHITESPACE
        PAT_GPT2
        PAT_CL100K
        PAT_O200K
        PAT_LLAMA3
        PAT_CUSTOM
    cdef enum Errors:
        ERR_STRICT
        ERR_REPLACE
        ERR_BYTES
    size_t NPOS
    size_t find_cut(const uint8_t* s, size_t n, size_t start, int pattern)

    cdef cppclass ChunkList:
        vector[uint8_t] data
        vector[int64_t] ends

    cdef cppclass ChunkTable:
        vector[uint8_t] data
        vector[int64_t] offsets
        vector[int64_t] counts
        size_t size()
        void add(const uint8_t* p, size_t length, int64_t count) except +
        int64_t add_documents(const uint8_t* buf, const int64_t* ends, size_t ndocs, int pattern,
                              int errors, int64_t* bad_offset) except +
        void add_table(const uint8_t* d, const int64_t* offs, const int64_t* cnts, size_t n) except +

    int64_t scan_document_to_list "fbpt::scan_document<fbpt::ChunkList>"(
        const uint8_t* s, size_t n, int pattern, int errors, ChunkList& sink, string& scratch) except +
