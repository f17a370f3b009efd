// Documents of a file that runs of newlines separate (lines; paragraphs between blank lines):
// where the separators are, and the spans of the documents between them.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace fbpt {

// The start of the first run of at least `newlines` newline bytes that lies whole in
// s[from:to], or -1: bytes.find(b"\n" * newlines, from, to). For two or more, 16 positions at
// a time: a position where two newlines start is a candidate (the first run of `newlines`
// starts at the first candidate that many newlines follow). bytes.find stops at every single
// newline of the text to compare the next byte: a paragraph of 31 MB of lines took 23 ms.
static inline int64_t find_newline_run(const uint8_t* s, int64_t from, int64_t to, int newlines) {
    if (from >= to) return -1;
    if (newlines <= 1) {
        const void* p = std::memchr(s + from, '\n', (size_t)(to - from));
        return p == nullptr ? -1 : (int64_t)((const uint8_t*)p - s);
    }
    int64_t i = from;
#if defined(__SSE2__)
    const __m128i nl = _mm_set1_epi8('\n');
    for (; i + 17 <= to; i += 16) {  // (pairs starting at i..i+15: bytes i..i+16)
        __m128i here = _mm_loadu_si128((const __m128i*)(s + i));
        __m128i next = _mm_loadu_si128((const __m128i*)(s + i + 1));
        unsigned pairs = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(here, nl), _mm_cmpeq_epi8(next, nl)));
        for (; pairs != 0; pairs &= pairs - 1) {
            int64_t p = i + __builtin_ctz(pairs), q = p + 2;
            while (q - p < newlines && q < to && s[q] == '\n') ++q;
            if (q - p >= newlines) return p;
        }
    }
#endif
    for (; i + newlines <= to; ++i) {
        int k = 0;
        while (k < newlines && s[i + k] == '\n') ++k;
        if (k == newlines) return i;
    }
    return -1;
}

// The documents of s[0:n] that runs of `newlines` (>= 1) or more newlines separate, empty ones
// left out, appended to begins and ends as byte offsets (a run is read whole: its newlines
// belong to no document).
static inline void document_spans(const uint8_t* s, int64_t n, int newlines, std::vector<int64_t>& begins,
                                  std::vector<int64_t>& ends) {
    int64_t start = 0;  // the current document's first byte
    // the current document ends at `end` (kept unless empty); the next one starts at `next`
    auto separated = [&](int64_t end, int64_t next) {
        if (end > start) {
            begins.push_back(start);
            ends.push_back(end);
        }
        start = next;
    };
    if (newlines == 1) {  // lines: every newline ends one (empty ones left out), 16 bytes at a time
        // (room for lines of 32 bytes on average, shorter than most text's: the vectors then
        // never grow, copying what they hold; 100 MB of English in pieces of 4 MB, 34 -> 29 ms)
        begins.reserve(begins.size() + (size_t)n / 32 + 1);
        ends.reserve(ends.size() + (size_t)n / 32 + 1);
        int64_t i = 0;
#if defined(__SSE2__)
        const __m128i nl = _mm_set1_epi8('\n');
        for (; i + 16 <= n; i += 16) {
            unsigned found = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i*)(s + i)), nl));
            for (; found != 0; found &= found - 1) {
                int64_t newline = i + __builtin_ctz(found);
                separated(newline, newline + 1);
            }
        }
#endif
        for (; i < n; ++i)
            if (s[i] == '\n') separated(i, i + 1);
    } else {
        for (int64_t run; (run = find_newline_run(s, start, n, newlines)) >= 0;) {
            int64_t after = run + newlines;  // (the run is read whole)
            while (after < n && s[after] == '\n') ++after;
            separated(run, after);
        }
    }
    separated(n, n);  // the last document, with no separator after it
}

}  // namespace fbpt
