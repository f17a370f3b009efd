// UTF-8: validation (the rules of Python's decoder), decoding of valid text together with the
// character classes of unicode_tables.h, and encoding the code units of a CPython str.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "cpu.h"
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

// utf8_first_error one character at a time (ASCII runs a vector at a time): the specification
// the vector validator is tested against, and what pins an error down once it has found one.
static inline size_t utf8_first_error_scalar(const uint8_t* s, size_t n, size_t p, size_t* bad_len) {
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

#ifdef FBPT_X86_TARGETS
// The length of the longest prefix of s[0:n], in whole blocks of 32 bytes and short of the
// last byte, in which no byte breaks a rule of UTF-8 given the bytes before it (a character
// may still be cut off at the prefix's end): the block-at-a-time method of Keiser and Lemire,
// "Validating UTF-8 in less than one instruction per byte" (2021). Every rule of UTF-8 that
// two neighbouring bytes can break is one bit of an error byte, and which bits a pair (a, b)
// breaks is the AND of three 16-entry tables, looked up by a's high nibble, a's low nibble
// and b's high nibble (each rule below is a product of such nibble sets). The one rule two
// bytes cannot see, that the second and third continuation bytes of a three- or four-byte
// character come where one is due and nowhere else, is the TWO_CONTS bit XOR "a lead byte
// of three or more bytes two or three bytes back". s[0] is read as a character's start.
__attribute__((target("avx2"))) static size_t utf8_valid_blocks_avx2(const uint8_t* s, size_t n) {
    // the rule bits (a: the byte before, b: this byte)
    enum : uint8_t {
        TOO_SHORT = 0x01,   // a lead byte, then no continuation byte
        TOO_LONG = 0x02,    // an ASCII byte, then a continuation byte
        OVERLONG_3 = 0x04,  // E0 80..9F
        TOO_LARGE = 0x08,   // F4 90..BF, F5..FF 90..BF
        SURROGATE = 0x10,   // ED A0..BF
        OVERLONG_2 = 0x20,  // C0..C1 80..BF
        OVER_4 = 0x40,      // F0 80..8F (overlong), F5..FF 80..8F (too large)
        TWO_CONTS = 0x80,   // a continuation byte, then another (an error unless due)
    };
    const uint8_t ANY = TOO_SHORT | TOO_LONG | TWO_CONTS;  // (the rules whatever a's low nibble)
    const uint8_t FROM_4 = ANY | TOO_LARGE, FROM_5 = FROM_4 | OVER_4;
    const __m256i by_a_high = _mm256_setr_epi8(
        TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG,  // 0_: ASCII
        TWO_CONTS, TWO_CONTS, TWO_CONTS, TWO_CONTS,                                     // 8_..B_
        TOO_SHORT | OVERLONG_2, TOO_SHORT, TOO_SHORT | OVERLONG_3 | SURROGATE,           // C_, D_, E_
        TOO_SHORT | TOO_LARGE | OVER_4,                                                  // F_
        TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG,
        TWO_CONTS, TWO_CONTS, TWO_CONTS, TWO_CONTS,
        TOO_SHORT | OVERLONG_2, TOO_SHORT, TOO_SHORT | OVERLONG_3 | SURROGATE,
        TOO_SHORT | TOO_LARGE | OVER_4);
    const __m256i by_a_low = _mm256_setr_epi8(
        ANY | OVERLONG_2 | OVERLONG_3 | OVER_4, ANY | OVERLONG_2, ANY, ANY,  // _0.._3
        FROM_4, FROM_5, FROM_5, FROM_5, FROM_5, FROM_5, FROM_5, FROM_5,      // _4.._B
        FROM_5, FROM_5 | SURROGATE, FROM_5, FROM_5,                          // _C.._F
        ANY | OVERLONG_2 | OVERLONG_3 | OVER_4, ANY | OVERLONG_2, ANY, ANY,
        FROM_4, FROM_5, FROM_5, FROM_5, FROM_5, FROM_5, FROM_5, FROM_5,
        FROM_5, FROM_5 | SURROGATE, FROM_5, FROM_5);
    const uint8_t CONT = TOO_LONG | TWO_CONTS | OVERLONG_2;  // (every continuation byte)
    const __m256i by_b_high = _mm256_setr_epi8(
        TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,  // 0_..7_
        CONT | OVERLONG_3 | OVER_4, CONT | OVERLONG_3 | TOO_LARGE,                               // 8_, 9_
        CONT | SURROGATE | TOO_LARGE, CONT | SURROGATE | TOO_LARGE,                              // A_, B_
        TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,                                              // C_..F_
        TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
        CONT | OVERLONG_3 | OVER_4, CONT | OVERLONG_3 | TOO_LARGE,
        CONT | SURROGATE | TOO_LARGE, CONT | SURROGATE | TOO_LARGE,
        TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT);
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    // a block's last three bytes, when a character that starts there does not end there:
    // above these (saturating subtraction: nonzero) at offsets 29, 30, 31
    const __m256i cut_off = _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                             -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, (char)0xEF, (char)0xDF,
                                             (char)0xBF);
    __m256i before = _mm256_setzero_si256();  // the previous block (none: as if ASCII)
    __m256i cut = _mm256_setzero_si256();     // its character cut off at its end, if any
    size_t at = 0;
    for (; at + 32 < n; at += 32) {
        // ASCII text: four blocks at a time, while the block before left nothing unfinished
        while (at + 4 * 32 < n && _mm256_testz_si256(cut, cut)) {
            const __m256i b3 = _mm256_loadu_si256((const __m256i*)(s + at + 96));
            const __m256i any = _mm256_or_si256(
                _mm256_or_si256(_mm256_loadu_si256((const __m256i*)(s + at)),
                                _mm256_loadu_si256((const __m256i*)(s + at + 32))),
                _mm256_or_si256(_mm256_loadu_si256((const __m256i*)(s + at + 64)), b3));
            if (_mm256_movemask_epi8(any) != 0) break;
            before = b3;
            at += 4 * 32;
        }
        if (at + 32 >= n) break;
        const __m256i b = _mm256_loadu_si256((const __m256i*)(s + at));
        __m256i error;
        if (_mm256_movemask_epi8(b) == 0) {
            error = cut;  // ASCII: wrong only where the block before left a character unfinished
        } else {
            // the bytes one, two and three places back: the block's bytes shifted across its
            // two 16-byte lanes, the previous block's last bytes shifted in
            const __m256i seam = _mm256_permute2x128_si256(before, b, 0x21);
            const __m256i a = _mm256_alignr_epi8(b, seam, 15);
            const __m256i a2 = _mm256_alignr_epi8(b, seam, 14);
            const __m256i a3 = _mm256_alignr_epi8(b, seam, 13);
            const __m256i rules = _mm256_and_si256(
                _mm256_and_si256(_mm256_shuffle_epi8(by_a_high, _mm256_and_si256(_mm256_srli_epi16(a, 4), nibble)),
                                 _mm256_shuffle_epi8(by_a_low, _mm256_and_si256(a, nibble))),
                _mm256_shuffle_epi8(by_b_high, _mm256_and_si256(_mm256_srli_epi16(b, 4), nibble)));
            // 0x80 where a continuation byte is due: E0..FF two back, or F0..FF three back
            const __m256i due = _mm256_and_si256(
                _mm256_or_si256(_mm256_subs_epu8(a2, _mm256_set1_epi8(0xE0 - 0x80)),
                                _mm256_subs_epu8(a3, _mm256_set1_epi8(0xF0 - 0x80))),
                _mm256_set1_epi8((char)0x80));
            error = _mm256_xor_si256(rules, due);
        }
        if (!_mm256_testz_si256(error, error)) return at;
        before = b;
        cut = _mm256_subs_epu8(b, cut_off);
    }
    return at;
}

#endif

// Position of the first invalid byte at or after p (n if none) and, in *bad_len, the length of
// the "maximal subpart" there: the bytes Python's UTF-8 decoder replaces by one U+FFFD.
// Rejects what Python rejects: overlongs, surrogates (ED A0..BF), > U+10FFFF, truncation.
// s[p] is read as a character's start. With AVX2, the blocks of 32 bytes up to the first that
// breaks a rule are checked a block at a time (utf8_valid_blocks_avx2), then the scalar
// validator goes on from the last character that starts at least 3 bytes before the end of
// those blocks (a character cut off there starts no earlier).
static inline size_t utf8_first_error(const uint8_t* s, size_t n, size_t p, size_t* bad_len) {
#ifdef FBPT_X86_TARGETS
    if (p + 64 <= n && cpu_has_avx2()) {
        size_t clean = p + utf8_valid_blocks_avx2(s + p, n - p);
        if (clean >= p + 3) {
            size_t q = clean - 3;
            // (the bytes before clean are valid: a continuation byte's lead is at most 3 back)
            for (int k = 0; k < 3 && q > p && (s[q] & 0xC0) == 0x80; ++k) --q;
            p = q;
        }
    }
#endif
    return utf8_first_error_scalar(s, n, p, bad_len);
}

static inline bool utf8_valid(const uint8_t* s, size_t n) {
    size_t bad_len;
    return utf8_first_error(s, n, 0, &bad_len) == n;
}

// Whether the n texts texts[k][0:sizes[k]] are all UTF-8, told from one validation of the
// bytes from the first's start to the last's end, when they lie in that order in one buffer
// with less between them than in them (the lines of a file): a text inside valid UTF-8 is
// whole characters, hence valid, when neither its first byte nor the byte after it continues
// a character. (utf8_valid text by text ran its scalar loop on every short line: a tenth of
// encoding a file line by line.) false when that cannot tell: texts out of order or far
// apart, an invalid byte anywhere in the span (between the texts too), or a text cut
// mid-character; the caller then checks them one by one.
static inline bool utf8_valid_in_order(const uint8_t* const* texts, const size_t* sizes, size_t n) {
    if (n == 0) return true;
    size_t inside = 0;
    const uint8_t* end = texts[0];
    for (size_t k = 0; k < n; ++k) {
        if (texts[k] < end) return false;
        end = texts[k] + sizes[k];
        inside += sizes[k];
    }
    const uint8_t* first = texts[0];
    size_t span = (size_t)(end - first);
    if (span > 2 * inside + 64 || !utf8_valid(first, span)) return false;
    uint8_t cut = 0;  // (1 once a text starts, or the byte after one is, inside a character)
    for (size_t k = 0; k < n; ++k) {
        if (sizes[k] == 0) continue;
        cut |= (uint8_t)((texts[k][0] & 0xC0) == 0x80);
        if (texts[k] + sizes[k] < end) cut |= (uint8_t)((texts[k][sizes[k]] & 0xC0) == 0x80);
    }
    return cut == 0;
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

// The most bytes of UTF-8 one code unit of a str of `kind` (1, 2 or 4 bytes a unit) makes: 2
// (U+0080..U+00FF), 3 (the rest of the BMP, a lone surrogate too under surrogatepass), 4.
static inline size_t utf8_max_per_unit(int kind) { return kind == 4 ? 4 : (size_t)kind + 1; }

// The same for a str's data as CPython stores it: `kind` bytes per code unit (1, 2 or 4).
static inline int64_t utf8_from_str_data(int kind, const void* data, size_t n, uint8_t* out,
                                         bool surrogatepass = false) {
    if (kind == 1) return utf8_from_units((const uint8_t*)data, n, out, surrogatepass);
    if (kind == 2) return utf8_from_units((const uint16_t*)data, n, out, surrogatepass);
    return utf8_from_units((const uint32_t*)data, n, out, surrogatepass);
}

}  // namespace fbpt
