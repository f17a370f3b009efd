// UTF-8: validation (the rules of Python's decoder), decoding of valid text together with the
// character classes of unicode_tables.h, and encoding the code units of a CPython str.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "unicode_tables.h"

namespace fbpt {

static const size_t NPOS = (size_t)-1;

struct Ch {
    uint32_t cp;   // code point; 0xFFFFFFFF past the end of the text
    uint16_t fl;   // FB_* flags; 0 past the end
    uint8_t len;   // bytes; 0 past the end
};

// Decode the character at p of VALID UTF-8 (p < n).
__attribute__((always_inline)) static inline Ch decode_valid(const uint8_t* s, size_t p) {
    uint8_t b = s[p];
    if (b < 0x80) return Ch{b, FB_STAGE2[b], 1};  // block 0 of stage 2 is code points 0..255
    uint32_t cp;
    uint8_t len;
    if (b < 0xE0) {
        cp = ((uint32_t)(b & 0x1F) << 6) | (s[p + 1] & 0x3F);
        len = 2;
    } else if (b < 0xF0) {
        cp = ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[p + 1] & 0x3F) << 6) | (s[p + 2] & 0x3F);
        len = 3;
    } else {
        cp = ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[p + 1] & 0x3F) << 12) |
             ((uint32_t)(s[p + 2] & 0x3F) << 6) | (s[p + 3] & 0x3F);
        len = 4;
    }
    return Ch{cp, fb_flags(cp), len};
}

// Position of the first invalid byte at or after p (n if none) and, in *bad_len, the length of
// the "maximal subpart" there: the bytes Python's UTF-8 decoder replaces by one U+FFFD.
// Rejects what Python rejects: overlongs, surrogates (ED A0..BF), > U+10FFFF, truncation.
static inline size_t utf8_first_error(const uint8_t* s, size_t n, size_t p, size_t* bad_len) {
    while (p < n) {
#ifdef __SSE2__
        // ASCII fast path, 32 bytes a step (most text is mostly ASCII): the high bits of two
        // loads OR-ed; at a step with a high byte, straight to the first one
        while (p + 32 <= n) {
            const __m128i a = _mm_loadu_si128((const __m128i*)(s + p));
            const __m128i b = _mm_loadu_si128((const __m128i*)(s + p + 16));
            if (_mm_movemask_epi8(_mm_or_si128(a, b))) {
                const unsigned high = (unsigned)_mm_movemask_epi8(a) | (unsigned)_mm_movemask_epi8(b) << 16;
                p += (size_t)__builtin_ctz(high);
                break;
            }
            p += 32;
        }
#endif
        while (p + 8 <= n) {  // ASCII, 8 bytes at a time (the tail, or without SSE2)
            uint64_t w;
            std::memcpy(&w, s + p, 8);
            if (w & 0x8080808080808080ULL) break;
            p += 8;
        }
        if (p >= n) break;
        uint8_t b = s[p];
        if (b < 0x80) { ++p; continue; }
        size_t need;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b >= 0xC2 && b <= 0xDF) need = 1;
        else if (b >= 0xE0 && b <= 0xEF) { need = 2; if (b == 0xE0) lo = 0xA0; else if (b == 0xED) hi = 0x9F; }
        else if (b >= 0xF0 && b <= 0xF4) { need = 3; if (b == 0xF0) lo = 0x90; else if (b == 0xF4) hi = 0x8F; }
        else { *bad_len = 1; return p; }
        if (p + 1 >= n || s[p + 1] < lo || s[p + 1] > hi) { *bad_len = 1; return p; }
        for (size_t k = 2; k <= need; ++k) {
            if (p + k >= n || (s[p + k] & 0xC0) != 0x80) { *bad_len = k; return p; }
        }
        p += need + 1;
    }
    *bad_len = 0;
    return n;
}

static inline bool utf8_valid(const uint8_t* s, size_t n) {
    size_t bad_len;
    return utf8_first_error(s, n, 0, &bad_len) == n;
}

// Flags of the complete character ending exactly at i (0 < i), decoding backwards; returns
// false if the bytes before i do not end with a valid character.
static inline bool flags_before(const uint8_t* s, size_t i, uint16_t* fl) {
    size_t start = i - 1;
    while (start > 0 && i - start < 4 && (s[start] & 0xC0) == 0x80) --start;
    size_t bad;
    if (utf8_first_error(s, i, start, &bad) != i) return false;
    // the last character decoded from `start` must end at i: walk forward
    size_t p = start;
    Ch c{0, 0, 0};
    while (p < i) { c = decode_valid(s, p); p += c.len; }
    if (p != i) return false;
    *fl = c.fl;
    return true;
}

// Whether the 16 code units at s are all ASCII, and if so their bytes into out. SSE2 (baseline
// on x86-64): the OR of the units has no bit above 0x7F, then they are packed down to bytes
// (the saturating packs keep values below 0x80 as they are). Elsewhere a loop.
template <class T>
static inline bool ascii_units16(const T* s, uint8_t* out) {
#ifdef __SSE2__
    // the bits of a unit above 0x7F
    const __m128i high = sizeof(T) == 2 ? _mm_set1_epi16((short)0xFF80) : _mm_set1_epi32((int)0xFFFFFF80);
    if (sizeof(T) == 1) {
        __m128i a = _mm_loadu_si128((const __m128i*)s);
        if (_mm_movemask_epi8(a) != 0) return false;
        _mm_storeu_si128((__m128i*)out, a);
        return true;
    }
    if (sizeof(T) == 2) {
        __m128i a = _mm_loadu_si128((const __m128i*)s), b = _mm_loadu_si128((const __m128i*)s + 1);
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(_mm_or_si128(a, b), high), _mm_setzero_si128())) != 0xFFFF)
            return false;
        _mm_storeu_si128((__m128i*)out, _mm_packus_epi16(a, b));
        return true;
    }
    __m128i a = _mm_loadu_si128((const __m128i*)s), b = _mm_loadu_si128((const __m128i*)s + 1);
    __m128i c = _mm_loadu_si128((const __m128i*)s + 2), d = _mm_loadu_si128((const __m128i*)s + 3);
    __m128i any = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(any, high), _mm_setzero_si128())) != 0xFFFF) return false;
    _mm_storeu_si128((__m128i*)out, _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d)));
    return true;
#else
    T any = 0;
    for (size_t k = 0; k < 16; ++k) any |= s[k];
    if (any >= 0x80) return false;
    for (size_t k = 0; k < 16; ++k) out[k] = (uint8_t)s[k];
    return true;
#endif
}

// UTF-8 of n code units of a str (1, 2 or 4 bytes each) into out (room for 4 per unit, fewer
// for narrow kinds): the byte count, or -1 at a lone surrogate (not encodable as UTF-8), unless
// `surrogatepass`: then a surrogate is written as its 3 bytes, as str.encode("utf-8",
// "surrogatepass") does (invalid UTF-8, for the reader to report or replace).
// ASCII runs go 16 units at a time (ascii_units16): most text is mostly ASCII even when the
// str is not.
template <class T>
static inline int64_t utf8_from_units(const T* s, size_t n, uint8_t* out, bool surrogatepass) {
    const size_t RUN = 16;
    size_t o = 0;
    for (size_t i = 0; i < n; ++i) {
        while (i + RUN <= n && ascii_units16(s + i, out + o)) {
            i += RUN;
            o += RUN;
        }
        if (i >= n) break;
        uint32_t c = s[i];
        if (c < 0x80) {
            out[o++] = (uint8_t)c;
        } else if (c < 0x800) {
            out[o++] = (uint8_t)(0xC0 | (c >> 6));
            out[o++] = (uint8_t)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            if ((c & 0xF800) == 0xD800 && !surrogatepass) return -1;
            out[o++] = (uint8_t)(0xE0 | (c >> 12));
            out[o++] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
            out[o++] = (uint8_t)(0x80 | (c & 0x3F));
        } else {
            out[o++] = (uint8_t)(0xF0 | (c >> 18));
            out[o++] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
            out[o++] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
            out[o++] = (uint8_t)(0x80 | (c & 0x3F));
        }
    }
    return (int64_t)o;
}

// The same for a str's data as CPython stores it: `kind` bytes per code unit (1, 2 or 4).
static inline int64_t utf8_from_str_data(int kind, const void* data, size_t n, uint8_t* out,
                                         bool surrogatepass = false) {
    if (kind == 1) return utf8_from_units((const uint8_t*)data, n, out, surrogatepass);
    if (kind == 2) return utf8_from_units((const uint16_t*)data, n, out, surrogatepass);
    return utf8_from_units((const uint32_t*)data, n, out, surrogatepass);
}

}  // namespace fbpt
