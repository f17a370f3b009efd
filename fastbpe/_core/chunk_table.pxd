# Declarations of chunk_table.h: the chunk counter's table.
from libc.stdint cimport int64_t, uint8_t
from libcpp.vector cimport vector

cdef extern from "chunk_table.h" namespace "fbpt" nogil:
    const size_t MAX_CHUNKS "fbpt::ChunkTable::MAX_CHUNKS"
    cdef cppclass ChunkTable:
        vector[uint8_t] data
        vector[int64_t] offsets
        vector[int64_t] counts
        size_t size()
        void export_counts(int64_t* out)
        int64_t add_documents(const uint8_t* buf, const int64_t* ends, size_t ndocs, int pattern,
                              int errors, int64_t* bad_offset) except +
        bint add_table(const uint8_t* d, const int64_t* offs, const int64_t* cnts, size_t n) except +
        void reserve(size_t n) except +
        void begin_task(int64_t task) except +
        int64_t last_task()
        bint ready_to_merge()
        void finish_tasks() except +
        void merge_partition(ChunkTable** tables, size_t ntables, size_t self, size_t part, size_t parts,
                             int64_t* task_chunks, int64_t* task_bytes)
        @staticmethod
        bint merged_write(ChunkTable** tables, size_t ntables, int64_t task_lo, int64_t task_hi,
                          uint8_t* data_out, int64_t* offsets_out, int64_t* counts_out, int64_t chunk_at,
                          int64_t chunk_end, int64_t byte_at, int64_t byte_end) except +
