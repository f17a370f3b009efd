// Documents of a file that runs of line ends separate (lines; paragraphs between blank lines):
// where the separators are, and the spans of the documents between them.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace fbpt {

// A line ends at "\n" or at "\r\n" (a Windows file's line end: its "\r" is not the line's);
// any other "\r" is text. Runs of line ends separate documents.

// The length of the line end at s[at] within s[0:to]: 1 ("\n"), 2 ("\r\n") or 0 (none).
static inline int64_t line_end_at(const uint8_t* s, int64_t at, int64_t to) {
    if (at >= to) return 0;
    if (s[at] == '\n') return 1;
    return s[at] == '\r' && at + 1 < to && s[at + 1] == '\n' ? 2 : 0;
}

// Where the run of line ends at s[at] (a line end starts there) ends, within s[0:to].
static inline int64_t line_ends_end(const uint8_t* s, int64_t at, int64_t to) {
    while (at + 1 < to && s[at] == '\n' && s[at + 1] == '\n') at += 2;  // (runs of "\n"s: most)
    for (int64_t length; (length = line_end_at(s, at, to)) > 0;) at += length;
    return at;
}

// Where the run of line ends whose first "\n" is s[p] starts: at a "\r" just before it, if
// that lies at or after `from`.
static inline int64_t with_carriage_return(const uint8_t* s, int64_t from, int64_t p) {
    return p > from && s[p - 1] == '\r' ? p - 1 : p;
}

// Whether at least `newlines` line ends follow one another from the "\n" at s[p], within s[0:to].
static inline bool line_ends_from(const uint8_t* s, int64_t p, int64_t to, int newlines) {
    if (newlines == 2 && p + 1 < to && s[p + 1] == '\n') return true;  // (a blank line of "\n"s: most)
    int k = 1;
    for (int64_t q = p + 1, length; k < newlines && (length = line_end_at(s, q, to)) > 0; ++k) q += length;
    return k >= newlines;
}

// The start of the first run of at least `newlines` line ends that lies whole in s[from:to],
// or -1: the start of re.search(b"(?:\r?\n){newlines}", s[:to], from). For two or more, 16
// positions at a time: a "\n" that a "\n" or "\r" follows is a candidate (the first run of
// `newlines` holds the first candidate that many line ends follow). bytes.find stopped
// at every single newline of the text to compare the next byte: a paragraph of 31 MB of
// lines took 23 ms.
static inline int64_t find_newline_run(const uint8_t* s, int64_t from, int64_t to, int newlines) {
    if (from >= to) return -1;
    if (newlines <= 1) {
        const void* p = std::memchr(s + from, '\n', (size_t)(to - from));
        return p == nullptr ? -1 : with_carriage_return(s, from, (int64_t)((const uint8_t*)p - s));
    }
    int64_t i = from;
#if defined(__SSE2__)
    const __m128i nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
    for (; i + 17 <= to; i += 16) {  // (candidates i..i+15: "\n" there, then "\n" or "\r": bytes i..i+16)
        __m128i here = _mm_loadu_si128((const __m128i*)(s + i));
        __m128i next = _mm_loadu_si128((const __m128i*)(s + i + 1));
        __m128i line_end_next = _mm_or_si128(_mm_cmpeq_epi8(next, nl), _mm_cmpeq_epi8(next, cr));
        unsigned candidates = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(here, nl), line_end_next));
        for (; candidates != 0; candidates &= candidates - 1) {
            int64_t p = i + __builtin_ctz(candidates);
            if (line_ends_from(s, p, to, newlines)) return with_carriage_return(s, from, p);
        }
    }
#endif
    // (a candidate before i failed, and so does every later "\n" of its run: a shorter run)
    for (; i < to; ++i)
        if (s[i] == '\n' && line_ends_from(s, i, to, newlines)) return with_carriage_return(s, from, i);
    return -1;
}

// The documents of s[0:n] that runs of `newlines` (>= 1) or more line ends separate, empty
// ones left out, appended to begins and ends as byte offsets (a run is read whole: its line
// ends belong to no document).
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
                separated(with_carriage_return(s, start, newline), newline + 1);
            }
        }
#endif
        for (; i < n; ++i)
            if (s[i] == '\n') separated(with_carriage_return(s, start, i), i + 1);
    } else {
        for (int64_t run; (run = find_newline_run(s, start, n, newlines)) >= 0;)
            separated(run, line_ends_end(s, run, n));  // (the run is read whole)
    }
    separated(n, n);  // the last document, with no separator after it
}

}  // namespace fbpt
