# Declarations of patterns.h: the ids of the split patterns and of the UTF-8 error modes.
cdef extern from "patterns.h" namespace "fbpt" nogil:
    cdef enum Pattern:
        PAT_WHITESPACE
        PAT_GPT2
        PAT_CL100K
        PAT_O200K
        PAT_LLAMA3
        PAT_QWEN
        PAT_TEKKEN
        PAT_COUNT
    cdef enum Errors:
        ERR_STRICT
        ERR_REPLACE
        ERR_BYTES
        ERR_COUNT
    bint pattern_tiles(int pattern)
