# Declarations of long_chunks.h: the learner's store for long chunks (a byte and a bit per symbol).
from libc.stdint cimport int32_t, int64_t, uint8_t
from libcpp.vector cimport vector

cdef extern from "long_chunks.h" namespace "fbpt" nogil:
    cdef cppclass LongChunks:
        cppclass Chunk:
            int64_t begin, end, count, key_base
        LongChunks()
        LongChunks(int block_bits)
        LongChunks(int block_bits, int page_bits)
        int block_bits()
        int64_t block_begin(int64_t block)
        int64_t block_of(int64_t p)
        const Chunk& chunk_of_block(int64_t block)
        size_t chunks()
        int64_t blocks()
        const Chunk& chunk(size_t i)
        void add_chunk[Id](const Id* ids, int64_t n, int64_t count, int64_t key_base) except +
        int64_t next(int64_t p, int64_t end)
        int64_t prev(int64_t p, int64_t begin)
        int32_t get(int64_t p, int64_t length)
        void set(int64_t p, int64_t length, int32_t id) except +
        void kill(int64_t q)
        bint starts(int64_t p)
        void prefetch(int64_t p)
        void find_base_pair(int64_t begin, int64_t stop, int64_t end, int32_t a, int32_t b,
                            vector[int32_t]& found) except +
        int64_t live(int64_t begin, int64_t end)
        size_t bytes()
