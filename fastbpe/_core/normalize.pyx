# cython: language_level=3
"""Compiled normalisers: the Python shell around charsmap.h (SentencePiece's normaliser and its
compiled character map). ``fastbpe.encode.normalizers`` is the public face,
``fastbpe.reference.normalize`` the specification it is tested against.
"""
from libc.stdint cimport uint8_t, uint32_t
from libcpp.string cimport string
from cpython.unicode cimport PyUnicode_DecodeUTF8

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    void* PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)

import numpy as np

cdef extern from "charsmap.h" namespace "fbpt" nogil:
    struct CharsMapView "fbpt::CharsMap":
        const uint32_t* units
        size_t n_units
        const uint8_t* pool
        size_t n_pool
    cppclass KeptPieces "fbpt::KeptPieces":
        void add(const string& piece)
    bint sentencepiece_normalize(const CharsMapView& m, const KeptPieces& kept, const uint8_t* s, size_t n,
                                 bint add_dummy_prefix, bint remove_extra_whitespaces, string& out)


cdef class SentencePieceNormalizer:
    """SentencePiece's normaliser of a str: the ``precompiled_charsmap`` blob (empty: no
    rules) applied at each position by the longest rule that begins there, spaces as ``▁``,
    ``add_dummy_prefix`` and ``remove_extra_whitespaces`` as SentencePiece applies them, and
    the ``kept`` pieces (a model's user-defined pieces, strs) left as they are where one
    begins. ValueError for a blob that is not one (its parts do not fit), or, when a rule is
    used, one that names no replacement or a replacement that is not UTF-8."""
    cdef object units_array   # (held: the view points into them)
    cdef bytes pool_bytes
    cdef CharsMapView view
    cdef KeptPieces kept
    cdef bint add_dummy_prefix, remove_extra_whitespaces

    def __init__(self, bytes blob, bint add_dummy_prefix, bint remove_extra_whitespaces, kept=()):
        self.add_dummy_prefix, self.remove_extra_whitespaces = add_dummy_prefix, remove_extra_whitespaces
        for piece in kept:
            if not isinstance(piece, str):
                raise TypeError(f"a kept piece must be a str, got {type(piece).__name__}")
            self.kept.add(piece.encode("utf-8", "surrogatepass"))
        if not blob:
            blob = bytes(4)  # (an empty trie)
        if len(blob) < 4:
            raise ValueError("a precompiled charsmap needs at least 4 bytes (its trie's size)")
        size = int.from_bytes(blob[:4], "little")
        if size % 4 or 4 + size > len(blob):
            raise ValueError(f"a precompiled charsmap's trie of {size} bytes does not fit its {len(blob)} bytes")
        self.units_array = np.frombuffer(blob, dtype="<u4", count=size // 4, offset=4).astype(np.uint32)
        self.pool_bytes = blob[4 + size:]
        cdef const uint32_t[::1] units = self.units_array
        self.view.units = &units[0] if size else NULL
        self.view.n_units = size // 4
        self.view.pool = <const uint8_t*><const char*>self.pool_bytes
        self.view.n_pool = len(self.pool_bytes)

    def __call__(self, text):
        cdef bytes data = None
        if type(text) is not str:  # (a subclass, numpy.str_ say: its plain str; anything else a TypeError)
            if not isinstance(text, str):
                raise TypeError(f"a normalizer takes a str, got {type(text).__name__}")
            text = str(text)
        cdef const uint8_t* s
        cdef size_t n
        if PyUnicode_IS_ASCII(text):  # (an ASCII str's characters are its UTF-8: read in place)
            s, n = <const uint8_t*>PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)
        else:
            data = text.encode("utf-8", "surrogatepass")
            s, n = <const uint8_t*><const char*>data, len(data)
        cdef string out
        cdef bint ok
        with nogil:
            ok = sentencepiece_normalize(self.view, self.kept, s, n, self.add_dummy_prefix,
                                         self.remove_extra_whitespaces, out)
        if not ok:
            raise ValueError("the precompiled charsmap is damaged: a rule names no replacement")
        try:
            return PyUnicode_DecodeUTF8(out.data(), out.size(), "surrogatepass")
        except UnicodeDecodeError:
            raise ValueError("the precompiled charsmap is damaged: a replacement is not UTF-8") from None
