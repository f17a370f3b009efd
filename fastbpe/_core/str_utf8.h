// A str's UTF-8, kept inside the str: made by utf8.h's encoder where CPython would make it with
// its own.
//
// CPython keeps a non-ASCII str's UTF-8 inside the str once PyUnicode_AsUTF8AndSize asks for it,
// which lets the encoder read a str in place on every later pass. The first pass pays for
// making it, and CPython's encoder takes a code unit at a time: 10 MB of English in 64 KB
// documents (each holding some character past U+007F) cost 11 ms there, an eighth of a first
// encoding pass, against 2-4 ms for utf8_from_str_data (ASCII runs 16 units at a time). So
// str_utf8 makes it with the latter and puts it where CPython keeps it (the utf8 and
// utf8_length of PyCompactUnicodeObject, in memory from the allocator CPython frees it with),
// then asks CPython for it as before. CPython reads it from there from then on (str.encode
// too), exactly as if it had made it.
//
// Only where that layout and that allocator are known, and the GIL alone guards the str:
// CPython 3.9 to 3.13 (PyObject_Malloc up to 3.12, PyMem_Malloc in 3.13; a debug allocator,
// PYTHONMALLOC=debug, stops the process at a mismatch, which a test checks), not a free-threaded
// build. Elsewhere, and for a str that is not compact (a subclass's instance), or that holds a
// lone surrogate (no UTF-8: CPython raises), CPython makes it.
#pragma once
#include <Python.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "utf8.h"

#if defined(PY_VERSION_HEX) && PY_VERSION_HEX >= 0x03090000 && PY_VERSION_HEX < 0x030E0000 && \
    !defined(Py_GIL_DISABLED) && !defined(PYPY_VERSION)
#define FBPT_FILLS_STR_UTF8 1
#else
#define FBPT_FILLS_STR_UTF8 0
#endif

namespace fbpt {

// Strs of up to this many bytes of UTF-8 at worst are made in a buffer kept by the thread;
// bigger ones in one of their own.
static const size_t STR_UTF8_SCRATCH = (size_t)1 << 22;

// Whether str_utf8 makes a str's UTF-8 itself (false: CPython always does).
static inline bool str_utf8_filled_here() { return FBPT_FILLS_STR_UTF8; }

// The UTF-8 of the str s, kept inside it, and its byte count in *size; NULL with an exception
// set, as PyUnicode_AsUTF8AndSize (whose contract this is): a lone surrogate, or no memory.
// The GIL must be held, and s ready (PyUnicode_READY, before 3.12).
static inline const char* str_utf8(PyObject* s, Py_ssize_t* size) {
#if FBPT_FILLS_STR_UTF8
    PyCompactUnicodeObject* compact = (PyCompactUnicodeObject*)s;
    if (PyUnicode_Check(s) && PyUnicode_IS_COMPACT(s) && !PyUnicode_IS_ASCII(s) && compact->utf8 == nullptr) {
        const int kind = PyUnicode_KIND(s);
        const size_t n = (size_t)PyUnicode_GET_LENGTH(s);
        const size_t worst = n * utf8_max_per_unit(kind);
        static thread_local std::vector<uint8_t> scratch;
        std::unique_ptr<uint8_t[]> own;
        uint8_t* out = nullptr;
        if (worst <= STR_UTF8_SCRATCH) {
            if (scratch.size() < worst) scratch.resize(worst);
            out = scratch.data();
        } else {
            own.reset(new (std::nothrow) uint8_t[worst]);
            out = own.get();  // (none: CPython makes it, below)
        }
        const int64_t made = out != nullptr ? utf8_from_str_data(kind, PyUnicode_DATA(s), n, out) : -1;
        if (made >= 0) {  // (-1: a lone surrogate, which CPython's own attempt below reports)
#if PY_VERSION_HEX >= 0x030D0000
            char* kept = (char*)PyMem_Malloc((size_t)made + 1);
#else
            char* kept = (char*)PyObject_Malloc((size_t)made + 1);
#endif
            if (kept == nullptr) {
                PyErr_NoMemory();
                return nullptr;
            }
            std::memcpy(kept, out, (size_t)made);
            kept[made] = '\0';
            compact->utf8_length = (Py_ssize_t)made;
            compact->utf8 = kept;
        }
    }
#endif
    return PyUnicode_AsUTF8AndSize(s, size);
}

}  // namespace fbpt
