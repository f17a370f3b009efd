# Declarations of str_utf8.h: a str's UTF-8, kept inside it (made by utf8.h's encoder).
cdef extern from "str_utf8.h" namespace "fbpt":
    # NULL with the exception set (a lone surrogate, no memory), as PyUnicode_AsUTF8AndSize
    const char* str_utf8(object s, Py_ssize_t* size)
    bint str_utf8_filled_here()
