// Compiled pre-tokenizers: the split patterns of GPT-2, cl100k, o200k, Llama 3, Qwen, Mistral's
// tekken and whitespace (patterns.h),
// hand-translated into scanners over UTF-8 bytes that yield exactly the chunks the `regex` module
// yields for the same pattern (tests/split/test_pretokenize.py checks this differentially).
//
// Each scanner is a function next_*(p) -> end of the chunk starting at byte p. Alternatives are
// tried in the pattern's order and backtracking is resolved by hand; the comment above each
// function gives the pattern and the reasoning. The character classes come from
// unicode_tables.h, generated from the `regex` module itself; decoding is utf8.h's.
//
// Input to the scanners is valid UTF-8 (the callers validate first; see scan_document).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "cpu.h"
#include "cut.h"
#include "patterns.h"
#include "poll.h"
#include "utf8.h"

namespace fbpt {

// End of the run of ASCII bytes b with ((b | FOLD) - LO) mod 256 < COUNT from q (the first
// byte at or after q that is not one, or n): the ASCII part of a run of letters (FOLD 0x20,
// 'a', 26: A-Z a-z), digits, upper- or lower-case letters. These ranges are exactly the ASCII
// members of \p{L}, \p{N}, the upper-ish and the lower-ish classes of unicode_tables.h (the
// differential tests against `regex` hold them to it). SSE2 (baseline on x86-64) classifies 16
// bytes per step: a run ends at the first clear bit of the movemask; elsewhere a byte loop.
template <uint8_t FOLD, uint8_t LO, uint8_t COUNT>
__attribute__((always_inline)) static inline size_t ascii_run_end(const uint8_t* s, size_t q, size_t n) {
#ifdef __SSE2__
    // (b | FOLD) + (0x80 - LO) moves the range to -128 .. -128 + COUNT - 1 (signed)
    const __m128i fold = _mm_set1_epi8((char)FOLD);
    const __m128i shift = _mm_set1_epi8((char)(uint8_t)(0x80 - LO));
    const __m128i bound = _mm_set1_epi8((char)(-128 + COUNT));
    while (q + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i*)(s + q));
        __m128i x = _mm_add_epi8(_mm_or_si128(v, fold), shift);
        unsigned in_run = (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(x, bound));
        if (in_run != 0xFFFFu) return q + (size_t)__builtin_ctz(~in_run);
        q += 16;
    }
#endif
    while (q < n && (uint8_t)((s[q] | FOLD) - LO) < COUNT) ++q;
    return q;
}

class Scanner {
  public:
    Scanner(const uint8_t* s, size_t n) : s_(s), n_(n) {}

    __attribute__((always_inline)) inline Ch at(size_t p) const {
        if (p >= n_) return Ch{0xFFFFFFFFu, 0, 0};
        return decode_valid(s_, p);
    }
    static inline bool is_other(const Ch& c) {  // [^\s\p{L}\p{N}], and not past the end
        return c.len && !(c.fl & (FB_L | FB_N | FB_WS));
    }
    // Byte tests for the ASCII fast paths (the ranges of ascii_class_run).
    static inline bool ascii_letter(uint8_t b) { return (uint8_t)((b | 0x20) - 'a') < 26; }
    static inline bool ascii_digit(uint8_t b) { return (uint8_t)(b - '0') < 10; }
    static inline bool ascii_other(uint8_t b) { return b < 0x80 && !(FB_STAGE2[b] & (FB_L | FB_N | FB_WS)); }
    // The end of `[^\s\p{L}\p{N}]+[\r\n]*` whose first character ends at p.
    inline size_t other_run_newlines(size_t p) const {
        p = run_other(p);
        while (p < n_ && (s_[p] == '\r' || s_[p] == '\n')) ++p;
        return p;
    }
    // Runs of a class: FB_L, FB_N, FB_UPPERISH or FB_LOWERISH. ASCII stretches (most of most
    // corpora) go through ascii_run_end; other characters are decoded.
    template <uint16_t MASK>
    __attribute__((always_inline)) inline size_t ascii_class_run(size_t p) const {
        static_assert(MASK == FB_L || MASK == FB_N || MASK == FB_UPPERISH || MASK == FB_LOWERISH,
                      "a class with an ASCII range");
        if (MASK == FB_L) return ascii_run_end<0x20, 'a', 26>(s_, p, n_);
        if (MASK == FB_N) return ascii_run_end<0, '0', 10>(s_, p, n_);
        if (MASK == FB_UPPERISH) return ascii_run_end<0, 'A', 26>(s_, p, n_);
        return ascii_run_end<0, 'a', 26>(s_, p, n_);
    }
    template <uint16_t MASK>
    __attribute__((always_inline)) inline size_t run_flags(size_t p) const {
#ifdef __SSE2__
        if (MASK == FB_L && __builtin_expect(p + 16 <= n_, 1)) {
            // a letter run (most chunks) ending inside these 16 bytes at an ASCII byte: its end
            // and the stopping byte's high bit from one load, without reading that byte again
            const __m128i v = _mm_loadu_si128((const __m128i*)(s_ + p));
            const __m128i x = _mm_add_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8((char)(0x80 - 'a')));
            const unsigned in_run = (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(x, _mm_set1_epi8((char)(-128 + 26))));
            const unsigned high = (unsigned)_mm_movemask_epi8(v);
            const unsigned k = (unsigned)__builtin_ctz(~in_run);  // 16: the run fills the window
            if (__builtin_expect(k < 16 && !((high >> k) & 1u), 1)) return p + k;
        }
#endif
        p = ascii_class_run<MASK>(p);
        if (__builtin_expect(p < n_ && s_[p] >= 0x80, 0)) return run_flags_unicode<MASK>(p);
        return p;
    }
    template <uint16_t MASK>
    __attribute__((noinline)) size_t run_flags_unicode(size_t p) const {
        // (called at a byte >= 0x80: the non-ASCII loops come first, the ASCII run after them)
        while (true) {
            // two-byte characters (U+0080..U+07FF: Latin supplements, Greek, Cyrillic, Hebrew,
            // Arabic...) one after another, without the ASCII test between them (a Russian
            // word went through it at every letter)
            while (p + 1 < n_ && (uint8_t)(s_[p] - 0xC2) < 0x1E) {
                const uint32_t cp = ((uint32_t)(s_[p] & 0x1F) << 6) | (s_[p + 1] & 0x3F);
                if (!(fb_flags(cp) & MASK)) return p;
                p += 2;
            }
            // and three-byte ones (U+0800..U+FFFF: Indic scripts, Thai, CJK, Hangul...)
            while (p + 2 < n_ && (uint8_t)(s_[p] - 0xE0) < 0x10) {
                const uint32_t cp = ((uint32_t)(s_[p] & 0x0F) << 12) | ((uint32_t)(s_[p + 1] & 0x3F) << 6) |
                                    (s_[p + 2] & 0x3F);
                if (!(fb_flags(cp) & MASK)) return p;
                p += 3;
            }
            if (p >= n_) return p;
            if (s_[p] < 0x80) {  // an ASCII byte: its run, then the characters after it
                p = ascii_class_run<MASK>(p);
                if (p >= n_ || s_[p] < 0x80) return p;
                continue;
            }
            const uint8_t b = s_[p];
            if (((uint8_t)(b - 0xC2) < 0x1E && p + 1 < n_) || ((uint8_t)(b - 0xE0) < 0x10 && p + 2 < n_))
                continue;  // (the other loop above takes it)
            Ch c = decode_valid(s_, p);  // four bytes (or a character cut by the text's end)
            if (!(c.fl & MASK)) return p;
            p += c.len;
        }
    }
    // The end of the letter run whose first letter, c, is at p. One past the ASCII goes
    // straight to the loops that decode such characters (run_flags would first test the bytes
    // there for ASCII letters).
    inline size_t letter_run(size_t p, const Ch& c) const {
        return c.len > 1 ? run_flags_unicode<FB_L>(p + c.len) : run_flags<FB_L>(p);
    }
    inline size_t run_other(size_t p) const {
        const uint16_t not_other = FB_L | FB_N | FB_WS;
        while (true) {
            while (p < n_ && s_[p] < 0x80 && !(FB_STAGE2[s_[p]] & not_other)) ++p;
            if (p >= n_ || s_[p] < 0x80) return p;
            Ch c = decode_valid(s_, p);
            if (!is_other(c)) return p;
            p += c.len;
        }
    }

    // A whitespace run starting at p (the character at p is whitespace).
    struct WsRun {
        size_t end;          // first byte after the run
        size_t last;         // start of the run's last character
        size_t after_nl;     // end of the run's last \r or \n, or NPOS
    };
    inline WsRun ws_run(size_t p) const {
        WsRun r{p, p, NPOS};
        while (true) {
            p = ascii_ws_run(p, r);
            if (p >= n_ || s_[p] < 0x80) break;
            Ch c = decode_valid(s_, p);
            if (!(c.fl & FB_WS)) break;
            r.last = p;
            p += c.len;
        }
        r.end = p;
        return r;
    }
    // The ASCII whitespace from p (\t \n \v \f \r and ' ': regex's \s below 0x80), recording
    // its last character and the end of its last \r or \n in r; returns the first byte after.
    inline size_t ascii_ws_run(size_t p, WsRun& r) const {
#ifdef __SSE2__
        const __m128i tab_shift = _mm_set1_epi8((char)(0x80 - '\t'));
        const __m128i tab_bound = _mm_set1_epi8((char)(-128 + 5));  // \t \n \v \f \r
        const __m128i space = _mm_set1_epi8(' ');
        const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
        while (p + 16 <= n_) {
            __m128i v = _mm_loadu_si128((const __m128i*)(s_ + p));
            __m128i ws = _mm_or_si128(_mm_cmplt_epi8(_mm_add_epi8(v, tab_shift), tab_bound), _mm_cmpeq_epi8(v, space));
            unsigned in_run = (unsigned)_mm_movemask_epi8(ws);
            unsigned nl = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, cr)));
            unsigned k = in_run == 0xFFFFu ? 16 : (unsigned)__builtin_ctz(~in_run);  // whitespace bytes here
            nl &= (1u << k) - 1;
            if (nl) r.after_nl = p + 32 - (size_t)__builtin_clz(nl);  // after the highest newline
            if (k) r.last = p + k - 1;
            p += k;
            if (k < 16) return p;
        }
#endif
        while (p < n_ && s_[p] < 0x80 && (FB_STAGE2[s_[p]] & FB_WS)) {
            r.last = p;
            if (s_[p] == '\r' || s_[p] == '\n') r.after_nl = p + 1;
            ++p;
        }
        return p;
    }

    // `\S+` (regex module's \s): runs of non-whitespace; whitespace is dropped.
    // Returns the start of the next chunk in *start, NPOS at the end.
    inline size_t next_whitespace(size_t p, size_t* start) const {
        Ch c = at(p);
        while (c.fl & FB_WS) { p += c.len; c = at(p); }
        if (p >= n_) { *start = NPOS; return NPOS; }
        *start = p;
        while (c.len && !(c.fl & FB_WS)) { p += c.len; c = at(p); }
        return p;
    }

    // GPT-2 (r50k, p50k):
    //   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    // (tiktoken writes it '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s,
    // the same chunks.) Whitespace run W followed by a non-space: \s+(?!\S) backtracks to W minus
    // its last character; that character, if it is ' ', is then the optional prefix of the next
    // chunk (` ?\p{L}+` ...), otherwise it is a chunk of its own (the final `\s`).
    //
    // The fast path takes the chunks that start with ASCII and are decided by their first one
    // or two bytes (a letter, digit or other run, with or without the leading space) exactly
    // as the full code below would; everything else (contractions, whitespace runs, non-ASCII
    // starts) goes the full way.
    __attribute__((always_inline)) inline size_t next_gpt2(size_t p) const {
        uint8_t b = s_[p];
        if (ascii_letter(b)) return run_flags<FB_L>(p + 1);
        if (b == ' ') {
            if (p + 1 < n_) {
                uint8_t b1 = s_[p + 1];
                if (ascii_letter(b1)) return run_flags<FB_L>(p + 2);
                if (ascii_digit(b1)) return run_flags<FB_N>(p + 2);
                if (ascii_other(b1)) return run_other(p + 2);
            }
        } else if (ascii_digit(b)) {
            return run_flags<FB_N>(p + 1);
        } else if (b != '\'' && ascii_other(b)) {
            return run_other(p + 1);
        }
        // ASCII whitespace before ASCII that none of the above took: only the whitespace
        // alternatives can match (a space before a letter, digit or other run went above)
        if (b < 0x80 && (FB_STAGE2[b] & FB_WS) && p + 1 < n_ && s_[p + 1] < 0x80) return ws_chunk_gpt2(p);
        return next_gpt2_full(p);
    }
    // The chunk at p when it is GPT-2's whitespace: \s+$ | \s+(?!\S) | \s.
    inline size_t ws_chunk_gpt2(size_t p) const {
        WsRun w = ws_run(p);
        if (w.end >= n_) return n_;    // \s+ to the end of the text (\s++$)
        if (w.last > p) return w.last; // \s+(?!\S): the run minus its last character
        return w.end;                  // \s: a single whitespace character before a non-space
    }
    __attribute__((noinline)) size_t next_gpt2_full(size_t p) const {
        Ch c = at(p);
        if (c.cp == '\'') {
            Ch c1 = at(p + 1);
            if (c1.cp == 's' || c1.cp == 't' || c1.cp == 'm' || c1.cp == 'd') return p + 2;
            Ch c2 = c1.len == 1 ? at(p + 2) : Ch{0xFFFFFFFFu, 0, 0};
            if ((c1.cp == 'r' && c2.cp == 'e') || (c1.cp == 'v' && c2.cp == 'e') || (c1.cp == 'l' && c2.cp == 'l'))
                return p + 3;
        }
        size_t q = p;
        Ch d = c;
        if (c.cp == ' ') { q = p + 1; d = at(q); }
        if (d.fl & FB_L) return run_flags<FB_L>(q);
        if (d.fl & FB_N) return run_flags<FB_N>(q);
        if (is_other(d)) return run_other(q);
        return ws_chunk_gpt2(p);  // c is whitespace here (a non-space c would have been L, N or other)
    }

    // (?i:x) contraction letters
    // '(?i:[sdmt]|ll|ve|re) at p, or NPOS: the test for the apostrophe inline (most chunks
    // have none), the rest in a call
    __attribute__((always_inline)) inline size_t contraction_ci(size_t p) const {
        return p < n_ && s_[p] == '\'' ? contraction_after_apostrophe(p) : NPOS;
    }
    __attribute__((noinline)) size_t contraction_after_apostrophe(size_t p) const {
        Ch c1 = at(p + 1);
        if (!c1.len) return NPOS;
        if (fb_ci_letter('s', c1.cp) || fb_ci_letter('d', c1.cp) || fb_ci_letter('m', c1.cp) ||
            fb_ci_letter('t', c1.cp))
            return p + 1 + c1.len;
        Ch c2 = at(p + 1 + c1.len);
        if (!c2.len) return NPOS;
        if ((fb_ci_letter('l', c1.cp) && fb_ci_letter('l', c2.cp)) ||
            (fb_ci_letter('v', c1.cp) && fb_ci_letter('e', c2.cp)) ||
            (fb_ci_letter('r', c1.cp) && fb_ci_letter('e', c2.cp)))
            return p + 1 + c1.len + c2.len;
        return NPOS;
    }

    // \p{N}{1,3} at p, whose first character c is a digit (cl100k, o200k, llama3).
    inline size_t digits_upto3(size_t p, Ch c) const {
        size_t q = p + c.len;
        for (int k = 1; k < 3; ++k) {
            Ch d = at(q);
            if (!(d.fl & FB_N)) break;
            q += d.len;
        }
        return q;
    }

    // ` ?[^\s\p{L}\p{N}]+[\r\n]*` at p (c = the character at p), with '/' in the trailing
    // class when `slash` (o200k's `[\r\n/]*`); NPOS when it does not match.
    inline size_t other_then_newlines(size_t p, Ch c, bool slash) const {
        size_t q = p;
        Ch d = c;
        if (c.cp == ' ') { q = p + 1; d = at(q); }
        if (!is_other(d)) return NPOS;
        q = run_other(q);
        Ch e = at(q);
        while (e.cp == '\r' || e.cp == '\n' || (slash && e.cp == '/')) { q += 1; e = at(q); }
        return q;
    }

    // cl100k (GPT-4), as tiktoken publishes it:
    //   '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
    //   |\s++$|\s*[\r\n]|\s+(?!\S)|\s
    // llama3 = the older spelling (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
    //   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ : the same except that whitespace
    //   ending the text is not taken whole by \s++$ (it splits after its last newline).
    // qwen (Qwen2, Qwen3) = llama3's with \p{N} for \p{N}{1,3}: each digit a chunk (one_digit).
    // \s*[\r\n] and \s*[\r\n]+ both end right after the run's last newline (\s* backtracks).
    //
    // The fast path takes the chunks that start with ASCII (not an apostrophe) followed by an
    // ASCII byte and are decided by these two exactly as the full code below would.
    __attribute__((always_inline)) inline size_t next_cl100k(size_t p, bool ws_to_end_whole,
                                                             bool one_digit = false) const {
        uint8_t b = s_[p];
        if (ascii_letter(b)) return run_flags<FB_L>(p + 1);
        if (ascii_digit(b)) return one_digit ? p + 1 : digits_upto3(p, Ch{b, FB_STAGE2[b], 1});
        if (b < 0x80 && b != '\'' && p + 1 < n_ && s_[p + 1] < 0x80) {
            uint8_t b1 = s_[p + 1];
            if (b != '\r' && b != '\n' && ascii_letter(b1)) return run_flags<FB_L>(p + 2);  // prefix + letters
            if (ascii_other(b)) return other_run_newlines(p + 1);
            if (b == ' ' && ascii_other(b1)) return other_run_newlines(p + 2);
            // ASCII whitespace before ASCII that the lines above did not take: no contraction,
            // letter, digit or other run can start here, only the whitespace alternatives
            if (FB_STAGE2[b] & FB_WS) return ws_chunk_cl100k(p, ws_to_end_whole);
        }
        return next_cl100k_full(p, ws_to_end_whole, one_digit);
    }
    // The chunk at p when it is cl100k's / llama3's whitespace alternatives.
    inline size_t ws_chunk_cl100k(size_t p, bool ws_to_end_whole) const {
        WsRun w = ws_run(p);
        if (ws_to_end_whole && w.end >= n_) return n_;  // \s++$
        if (w.after_nl != NPOS) return w.after_nl;      // \s*[\r\n]
        if (w.end >= n_) return n_;                     // \s+(?!\S) at the end of the text
        if (w.last > p) return w.last;                  // \s+(?!\S)
        return w.end;                                   // \s
    }
    __attribute__((noinline)) size_t next_cl100k_full(size_t p, bool ws_to_end_whole, bool one_digit) const {
        size_t r = contraction_ci(p);
        if (r != NPOS) return r;
        Ch c = at(p);
        if (c.fl & FB_L) return letter_run(p, c);
        if (c.len && !(c.fl & FB_N) && c.cp != '\r' && c.cp != '\n') {
            // optional prefix then letters; without the prefix the letter run cannot start
            // here (c is not a letter), so only the with-prefix attempt can succeed
            Ch d = at(p + c.len);
            if (d.fl & FB_L) return letter_run(p + c.len, d);
        }
        if (c.fl & FB_N) return one_digit ? p + c.len : digits_upto3(p, c);
        size_t q = other_then_newlines(p, c, false);
        if (q != NPOS) return q;
        return ws_chunk_cl100k(p, ws_to_end_whole);
    }

    // o200k word cores, at q:
    //   A1: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+  then the contraction
    //   A2: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*  then the contraction
    // A1: the greedy * takes the maximal UPPERISH run U; if the next character is LOWERISH the +
    // takes the maximal LOWERISH run from there. Otherwise * gives back characters one at a time
    // until the next one is LOWERISH, i.e. the + starts at the last LOWERISH character inside U
    // (an Lm/Lo/M); the characters after it in U are Lu/Lt, so the + takes just that one.
    // (contractions: false for tekken's words, which take none)
    inline size_t o200k_a1(size_t q, bool contractions = true) const { return o200k_a1(q, at(q), contractions); }
    // (d: the character at q, decoded)
    inline size_t o200k_a1(size_t q, Ch d, bool contractions = true) const {
        size_t u = q, lower_end = NPOS;  // the end of the last lower-ish character so far
        while (d.fl & FB_UPPERISH) {
            if (d.fl & FB_LOWERISH) {
                u += d.len;
                lower_end = u;
                // then the three-byte characters of both classes (\p{Lo} and \p{M}: CJK, kana,
                // Thai, Devanagari...), each the last lower-ish one so far, decoded in place
                // (a Chinese run went through at() and two flag tests a character)
                while (u + 2 < n_ && (uint8_t)(s_[u] - 0xE0) < 0x10) {
                    const uint32_t cp = ((uint32_t)(s_[u] & 0x0F) << 12) | ((uint32_t)(s_[u + 1] & 0x3F) << 6) |
                                        (s_[u + 2] & 0x3F);
                    if ((~fb_flags(cp) & (FB_UPPERISH | FB_LOWERISH)) != 0) break;
                    u += 3;
                    lower_end = u;
                }
            } else {
                u += d.len;
            }
            d = at(u);
        }
        size_t r;
        if (d.fl & FB_LOWERISH) r = run_flags<FB_LOWERISH>(u);
        else if (lower_end != NPOS) r = lower_end;
        else return NPOS;
        return contractions ? o200k_suffix(r) : r;
    }
    inline size_t o200k_a2(size_t q, bool contractions = true) const {
        size_t u = run_flags<FB_UPPERISH>(q);
        if (u == q) return NPOS;
        const size_t r = run_flags<FB_LOWERISH>(u);
        return contractions ? o200k_suffix(r) : r;
    }
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)? : greedy optional, nothing after it can fail
    inline size_t o200k_suffix(size_t r) const {
        size_t e = contraction_ci(r);
        return e == NPOS ? r : e;
    }

    // o200k (GPT-4o), tiktoken's alternatives in order:
    //   A1 [^\r\n\p{L}\p{N}]?<A1 core> | A2 [^\r\n\p{L}\p{N}]?<A2 core> | \p{N}{1,3}
    //   | ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
    // The optional prefix is greedy but not possessive: when the core fails after it, the core
    // is retried at p itself (which can succeed only when the prefix character is a mark \p{M}).
    //
    // The fast path takes the chunks that start with ASCII followed by ASCII and are decided by
    // these two exactly as the full code below would: a letter with an optional non-letter,
    // non-digit, non-newline prefix (the A1 core, else the A2 core, from the first letter: A1
    // fails only at an upper-case letter, where A2 succeeds, and neither core can start at
    // the ASCII prefix) and an ASCII run of [^\s\p{L}\p{N}] with an optional leading space.
    // tekken (Mistral) = o200k's alternatives without the contractions and with \p{N} for
    // \p{N}{1,3}: next_tekken below.
    __attribute__((always_inline)) inline size_t next_o200k(size_t p, bool contractions = true,
                                                            bool one_digit = false) const {
        uint8_t b = s_[p];
        if (b < 0x80 && p + 1 < n_ && s_[p + 1] < 0x80) {
            uint8_t b1 = s_[p + 1];
            size_t q = NPOS;
            if (ascii_letter(b)) q = p;
            else if (ascii_letter(b1) && !ascii_digit(b) && b != '\r' && b != '\n') q = p + 1;
            if (q != NPOS) {
                size_t r = o200k_a1(q, contractions);
                return r != NPOS ? r : o200k_a2(q, contractions);
            }
            size_t e = NPOS;
            if (ascii_other(b)) e = run_other(p + 1);
            else if (b == ' ' && ascii_other(b1)) e = run_other(p + 2);
            if (e != NPOS) {
                while (e < n_ && (s_[e] == '\r' || s_[e] == '\n' || s_[e] == '/')) ++e;
                return e;
            }
            // ASCII whitespace before ASCII that the lines above did not take: no word core
            // (a space or tab prefix before a letter went above; a newline is no prefix),
            // digit or other run can start here, only the whitespace alternatives
            if (FB_STAGE2[b] & FB_WS) return ws_chunk_o200k(p);
        }
        return next_o200k_full(p, contractions, one_digit);
    }
    __attribute__((always_inline)) inline size_t next_tekken(size_t p) const {
        return next_o200k(p, /*contractions=*/false, /*one_digit=*/true);
    }
    // The chunk at p when it is o200k's whitespace alternatives.
    inline size_t ws_chunk_o200k(size_t p) const {
        WsRun w = ws_run(p);
        if (w.after_nl != NPOS) return w.after_nl;  // \s*[\r\n]+
        if (w.end >= n_) return n_;                 // \s+(?!\S) at the end of the text
        if (w.last > p) return w.last;              // \s+(?!\S)
        return w.end;                               // \s+ (a single character here)
    }
    __attribute__((noinline)) size_t next_o200k_full(size_t p, bool contractions, bool one_digit) const {
        Ch c = at(p);
        bool prefix = c.len && !(c.fl & (FB_L | FB_N)) && c.cp != '\r' && c.cp != '\n';
        size_t r;
        // (each core tried where it can start: the A2 core only at an upper-ish character; the
        // characters at p and after the prefix decoded once)
        const Ch d = prefix ? at(p + c.len) : Ch{};
        if (prefix && (r = o200k_a1(p + c.len, d, contractions)) != NPOS) return r;
        if ((r = o200k_a1(p, c, contractions)) != NPOS) return r;
        if (prefix && (d.fl & FB_UPPERISH) && (r = o200k_a2(p + c.len, contractions)) != NPOS) return r;
        if ((c.fl & FB_UPPERISH) && (r = o200k_a2(p, contractions)) != NPOS) return r;
        if (c.fl & FB_N) return one_digit ? p + c.len : digits_upto3(p, c);
        if ((r = other_then_newlines(p, c, true)) != NPOS) return r;
        return ws_chunk_o200k(p);
    }

    // The end of the chunk at p for a pattern whose chunks tile the text (pattern_tiles),
    // chosen at compile time (the encoder's loop is compiled per pattern).
    template <int PATTERN>
    __attribute__((always_inline)) inline size_t next_chunk(size_t p) const {
        static_assert(PATTERN == PAT_GPT2 || PATTERN == PAT_CL100K || PATTERN == PAT_LLAMA3 || PATTERN == PAT_QWEN ||
                          PATTERN == PAT_O200K || PATTERN == PAT_TEKKEN,
                      "a pattern whose chunks tile the text");
        if (PATTERN == PAT_GPT2) return next_gpt2(p);
        if (PATTERN == PAT_CL100K) return next_cl100k(p, true);
        if (PATTERN == PAT_LLAMA3) return next_cl100k(p, false);
        if (PATTERN == PAT_QWEN) return next_cl100k(p, false, true);
        if (PATTERN == PAT_TEKKEN) return next_tekken(p);
        return next_o200k(p);
    }

    // Scan the text for `\S+` (PAT_WHITESPACE), calling sink(start, end) for each chunk.
    template <class Sink>
    void scan_whitespace(Sink& sink) const {
        size_t p = 0, start;
        while (true) {
            size_t e = next_whitespace(p, &start);
            if (e == NPOS) break;
            sink(start, e);
            p = e;
        }
    }

  private:
    const uint8_t* s_;
    size_t n_;
};

// ASCII byte classes of a block of text, one bit per byte (bit j: byte j).
struct ByteClasses {
    uint64_t hi;        // bytes >= 0x80 (the other masks leave them out)
    uint64_t L, N, O;   // letters, digits, [^\s\p{L}\p{N}]
    uint64_t ws, nl;    // \s (\t \n \v \f \r ' '), and its \r \n
    uint64_t sp, ap;    // ' ' and '\''
    uint64_t up, sl;    // A-Z (of L), '/' (of O)
};

// Classes of q[0:k] into bits shift .. shift + k - 1 of c (whose other bits are left as they are).
// The ranges are those of Scanner's ASCII fast paths (FB_STAGE2's ASCII rows).
static inline void classify_bytes(const uint8_t* q, int k, int shift, ByteClasses& c) {
    for (int i = 0; i < k; ++i) {
        const uint8_t b = q[i];
        const uint64_t bit = 1ull << (shift + i);
        if (b >= 0x80) c.hi |= bit;
        else if ((uint8_t)((b | 0x20) - 'a') < 26) {
            c.L |= bit;
            if (b < 'a') c.up |= bit;
        }
        else if ((uint8_t)(b - '0') < 10) c.N |= bit;
        else if (b == ' ' || (uint8_t)(b - '\t') < 5) {
            c.ws |= bit;
            if (b == '\n' || b == '\r') c.nl |= bit;
            if (b == ' ') c.sp |= bit;
        } else {
            c.O |= bit;
            if (b == '\'') c.ap |= bit;
            if (b == '/') c.sl |= bit;
        }
    }
}

// Whether any of the 64 bytes q[0:64] is >= 0x80 (a block Scanner goes through: told before
// the classes are worked out, for text with many such blocks).
static inline bool any_high_byte(const uint8_t* q) {
#ifdef __SSE2__
    const __m128i a = _mm_or_si128(_mm_loadu_si128((const __m128i*)q), _mm_loadu_si128((const __m128i*)(q + 16)));
    const __m128i b = _mm_or_si128(_mm_loadu_si128((const __m128i*)(q + 32)), _mm_loadu_si128((const __m128i*)(q + 48)));
    return _mm_movemask_epi8(_mm_or_si128(a, b)) != 0;
#else
    uint64_t x = 0;
    for (int i = 0; i < 8; ++i) {
        uint64_t w;
        std::memcpy(&w, q + 8 * i, 8);
        x |= w;
    }
    return (x & 0x8080808080808080ull) != 0;
#endif
}

// Classes of the 64 bytes q[0:64], none of them >= 0x80 (load checks that first: hi is left
// 0), for PATTERN's rules: nl not for GPT-2 (its rules do not tell newlines apart), up and sl
// only for o200k's words (o200k, tekken). A mask left out saves its compares, movemasks, shifts and ors on every
// block (load, which this dominates, is about a fifth of the instructions of counting English).
template <int PATTERN>
static inline ByteClasses classify_block(const uint8_t* q) {
    ByteClasses c{};
#ifdef __SSE2__
    // the range tests of ascii_run_end: (b | FOLD) + (0x80 - LO) < -128 + COUNT (signed)
    const __m128i fold = _mm_set1_epi8(0x20);
    for (int k = 0; k < 4; ++k) {
        const __m128i v = _mm_loadu_si128((const __m128i*)(q + 16 * k));
        const __m128i letter = _mm_cmplt_epi8(_mm_add_epi8(_mm_or_si128(v, fold), _mm_set1_epi8((char)(0x80 - 'a'))),
                                              _mm_set1_epi8((char)(-128 + 26)));
        const __m128i digit =
            _mm_cmplt_epi8(_mm_add_epi8(v, _mm_set1_epi8((char)(0x80 - '0'))), _mm_set1_epi8((char)(-128 + 10)));
        const __m128i space = _mm_cmpeq_epi8(v, _mm_set1_epi8(' '));
        const __m128i ctrl_ws =  // \t \n \v \f \r
            _mm_cmplt_epi8(_mm_add_epi8(v, _mm_set1_epi8((char)(0x80 - '\t'))), _mm_set1_epi8((char)(-128 + 5)));
        const __m128i apos = _mm_cmpeq_epi8(v, _mm_set1_epi8('\''));
        const int at = 16 * k;
        c.L |= (uint64_t)(unsigned)_mm_movemask_epi8(letter) << at;
        c.N |= (uint64_t)(unsigned)_mm_movemask_epi8(digit) << at;
        c.ws |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_or_si128(space, ctrl_ws)) << at;
        c.sp |= (uint64_t)(unsigned)_mm_movemask_epi8(space) << at;
        c.ap |= (uint64_t)(unsigned)_mm_movemask_epi8(apos) << at;
        if (PATTERN != PAT_GPT2) {
            const __m128i nl =
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
            c.nl |= (uint64_t)(unsigned)_mm_movemask_epi8(nl) << at;
        }
        if (o200k_words(PATTERN)) {
            const __m128i upper =
                _mm_cmplt_epi8(_mm_add_epi8(v, _mm_set1_epi8((char)(0x80 - 'A'))), _mm_set1_epi8((char)(-128 + 26)));
            c.up |= (uint64_t)(unsigned)_mm_movemask_epi8(upper) << at;
            c.sl |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('/'))) << at;
        }
    }
    c.O = ~(c.L | c.N | c.ws);
#else
    classify_bytes(q, 64, 0, c);
#endif
    return c;
}

#ifdef FBPT_X86_TARGETS
// The bytes of v in lo .. lo + count - 1 ((b - lo) < count, unsigned), and those equal to b.
__attribute__((target("avx512bw"), always_inline)) static inline uint64_t bytes_in_range(__m512i v, char lo,
                                                                                         char count) {
    return _mm512_cmplt_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8(lo)), _mm512_set1_epi8(count));
}
__attribute__((target("avx512bw"), always_inline)) static inline uint64_t bytes_equal(__m512i v, char b) {
    return _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b));
}

// classify_block under AVX-512BW: one 64-byte load, and each class one or two compares that
// give its mask straight into a mask register (where SSE2 takes four 16-byte compares, four
// movemasks and their shifts and ors a class). Also tells whether a byte is >= 0x80 (*high;
// then the classes are not to be used). Chosen at run time (cpu_has_avx512bw).
template <int PATTERN>
__attribute__((target("avx512bw"))) static inline ByteClasses classify_block_avx512(const uint8_t* q, bool* high) {
    ByteClasses c{};
    const __m512i v = _mm512_loadu_si512((const void*)q);
    *high = _mm512_movepi8_mask(v) != 0;
    if (*high) return c;  // (Scanner goes through it: most blocks of non-Latin text)
    c.L = bytes_in_range(_mm512_or_si512(v, _mm512_set1_epi8(0x20)), 'a', 26);
    c.N = bytes_in_range(v, '0', 10);
    c.sp = bytes_equal(v, ' ');
    c.ws = c.sp | bytes_in_range(v, '\t', 5);  // (\t \n \v \f \r)
    c.ap = bytes_equal(v, '\'');
    if (PATTERN != PAT_GPT2) c.nl = bytes_equal(v, '\n') | bytes_equal(v, '\r');
    if (o200k_words(PATTERN)) {
        c.up = bytes_in_range(v, 'A', 26);
        c.sl = bytes_equal(v, '/');
    }
    c.O = ~(c.L | c.N | c.ws);
    return c;
}
#endif

#ifdef FBPT_X86_TARGETS
// The 64-bit mask of a test on the block's two 32-byte halves.
__attribute__((target("avx2"), always_inline)) static inline uint64_t avx2_mask(__m256i lo, __m256i hi) {
    return (uint64_t)(uint32_t)_mm256_movemask_epi8(lo) | ((uint64_t)(uint32_t)_mm256_movemask_epi8(hi) << 32);
}

// The bytes of x in lo .. lo + count - 1, as classify_block tests them:
// x + (0x80 - lo) < -128 + count (signed).
__attribute__((target("avx2"), always_inline)) static inline __m256i avx2_in_range(__m256i x, char lo, char count) {
    return _mm256_cmpgt_epi8(_mm256_set1_epi8((char)(-128 + count)),
                             _mm256_add_epi8(x, _mm256_set1_epi8((char)(0x80 - lo))));
}
__attribute__((target("avx2"), always_inline)) static inline __m256i avx2_equal(__m256i x, char v) {
    return _mm256_cmpeq_epi8(x, _mm256_set1_epi8(v));
}

// classify_block under AVX2, for a CPU without AVX-512BW: each class's compares on two 32-byte
// halves and two movemasks, where SSE2 takes four of each and their shifts and ors. Also tells
// whether a byte is >= 0x80 (*high; then the classes are not to be used), as
// classify_block_avx512 does. Chosen at run time (cpu_has_avx2_bmi2).
template <int PATTERN>
__attribute__((target("avx2"))) static inline ByteClasses classify_block_avx2(const uint8_t* q, bool* high) {
    ByteClasses c{};
    const __m256i a = _mm256_loadu_si256((const __m256i*)q), b = _mm256_loadu_si256((const __m256i*)(q + 32));
    *high = _mm256_movemask_epi8(_mm256_or_si256(a, b)) != 0;
    if (*high) return c;
    const __m256i fold = _mm256_set1_epi8(0x20);
    c.L = avx2_mask(avx2_in_range(_mm256_or_si256(a, fold), 'a', 26), avx2_in_range(_mm256_or_si256(b, fold), 'a', 26));
    c.N = avx2_mask(avx2_in_range(a, '0', 10), avx2_in_range(b, '0', 10));
    c.sp = avx2_mask(avx2_equal(a, ' '), avx2_equal(b, ' '));
    c.ws = c.sp | avx2_mask(avx2_in_range(a, '\t', 5), avx2_in_range(b, '\t', 5));  // (\t \n \v \f \r)
    c.ap = avx2_mask(avx2_equal(a, '\''), avx2_equal(b, '\''));
    if (PATTERN != PAT_GPT2)
        c.nl = avx2_mask(_mm256_or_si256(avx2_equal(a, '\n'), avx2_equal(a, '\r')),
                         _mm256_or_si256(avx2_equal(b, '\n'), avx2_equal(b, '\r')));
    if (o200k_words(PATTERN)) {
        c.up = avx2_mask(avx2_in_range(a, 'A', 26), avx2_in_range(b, 'A', 26));
        c.sl = avx2_mask(avx2_equal(a, '/'), avx2_equal(b, '/'));
    }
    c.O = ~(c.L | c.N | c.ws);
    return c;
}
#endif

// The chunks of a tiling pattern, found from their starts, which are computed a 64-byte block
// at a time. next_chunk(p) gives the end of the chunk at p, as Scanner::next_chunk does, for
// the p of consecutive chunks from 0.
//
// In ASCII text whether a chunk starts at a byte depends on the few bytes around it (up to 6
// before, 2 after), but for three things that need a run: digit groups count from the head of
// their digit run (a carry from block to block), the newlines (o200k: and slashes) after an O
// run are its chunk's however many (an add carries that through them), and whether the spaces
// after a newline start a chunk depends on what ends their run (followed to its end). So one
// block's starts come from its class masks with shifts and adds. h below is the head of a run
// of letters L, digits N or others O (its first byte); H is whitespace but \r \n.
//   GPT-2: the head of a \s run; the last of a \s run of two or more before a non-space
//     (\s+(?!\S) gives it back); h, unless a space precedes it (then the chunk is ` ?h...`, and
//     that space starts it); after a contraction (at an apostrophe that starts a chunk) the next
//     byte, its letter being no head.
//   cl100k, Llama 3, Qwen, o200k, tekken: the newlines right after an O run are its chunk's
//     ([\r\n]*+; o200k, tekken [\r\n/]*), the rest of \s is W and the rest of O is O'. The head of a W run; the last of an
//     H run of two or more before a non-space; the start of an H run after a newline when a
//     non-space follows the run (\s*[\r\n] ends at the last newline); an O' head unless a space
//     precedes it; an L head unless an H, or an O' alone (its run's only byte) whose own chunk
//     starts there, precedes it (the prefix in [^\r\n\p{L}\p{N}]?+\p{L}++); a digit head and
//     every third digit after it (Qwen, tekken: every digit). cl100k, Llama 3, Qwen: after a
//     contraction (at an apostrophe that starts a chunk) the next byte if a letter. o200k,
//     tekken: an upper-case letter after a lower-case one (their words are [A-Z]*[a-z]+ or
//     [A-Z]+[a-z]*). o200k: a contraction right after a word is the word's (but not after
//     another contraction), and after it the next byte if a letter; tekken has none.
// The text is taken as s[0:m] followed by spaces, m the end of its last non-space, so that no
// rule needs the end of the text; the chunks from the last start before m on come from Scanner,
// and so do those of a block with a byte >= 0x80 in it or within 4 bytes before or 1 after.
// ChunkStarts::load prefetches the text this many bytes past the block it classifies. Warm
// passes over 10 MB (bench_warm_ab, one process, 9 alternated pairs, 2-core Intel Xeon): English
// cl100k 1.047x, Llama 3 1.043x, code 0.99x; 1024 bytes: 1.025x and 1.003x; 4096: 1.044x, 0.986x.
static const size_t TEXT_PREFETCH_BYTES = 2048;

template <int PATTERN>
class ChunkStarts {
  public:
    ChunkStarts(const uint8_t* s, size_t n) : scanner_(s, n), s_(s), m_(n) {
        while (m_ > 0 && s[m_ - 1] < 0x80 && (FB_STAGE2[s[m_ - 1]] & FB_WS)) --m_;
    }

    __attribute__((always_inline)) inline size_t next_chunk(size_t p) {
        // the common case: p is the start the last call gave, and the block has one more
        if (__builtin_expect(p == last_ && rest_ != 0, 1)) {
            last_ = base_ + (size_t)__builtin_ctzll(rest_);
            rest_ &= rest_ - 1;
            return last_;
        }
        // inside a block Scanner goes through (text with few ASCII blocks: most of its chunks)
        if (p < scanner_until_) return scanner_.next_chunk<PATTERN>(p);
        return next_chunk_from(p);
    }

    // next_chunk for a caller that takes the starts of a block itself, in registers, where
    // this object's fields would be stored and loaded again for every chunk (they live in
    // memory: the calls below take its address). The end of the chunk at p, any p of the
    // chunks from 0 on (it never takes the fast path above: the fields may be behind p);
    // *rest: the starts after it in its block, from *base on (bit j: *base + j), for the
    // caller to give out lowest first before it calls again; 0 when none or when the chunk
    // came from Scanner.
    __attribute__((always_inline)) inline size_t next_chunk_and_rest(size_t p, size_t* base, uint64_t* rest) {
        size_t e = p < scanner_until_ ? scanner_.next_chunk<PATTERN>(p) : next_chunk_from(p);
        *base = base_;
        *rest = e == last_ ? rest_ : 0;
        return e;
    }

  private:
    // next_chunk for any p: from the block's starts (loading blocks as needed) or Scanner.
    __attribute__((noinline)) size_t next_chunk_from(size_t p) {
        last_ = NPOS;
        if (p >= m_) return scanner_.next_chunk<PATTERN>(p);
        const size_t b = p & ~(size_t)63;
        if (b != base_) load(b, false, p);
        if (!valid_) return scanner_.next_chunk<PATTERN>(p);
        uint64_t rest = starts_ & (~1ull << (p - b));  // the starts after p
        while (rest == 0) {
            if (base_ + 64 >= m_) return scanner_.next_chunk<PATTERN>(p);
            load(base_ + 64, true, p);
            if (!valid_) return scanner_.next_chunk<PATTERN>(p);
            rest = starts_;
        }
        last_ = base_ + (size_t)__builtin_ctzll(rest);
        rest_ = rest & (rest - 1);
        return last_;
    }

    // The length of the contraction at the apostrophe at o, 0 if none.
    inline size_t contraction(size_t o) const {
        if (PATTERN != PAT_GPT2) {
            const size_t e = scanner_.contraction_ci(o);
            return e == NPOS ? 0 : e - o;
        }
        const uint8_t c1 = o + 1 < m_ ? s_[o + 1] : 0, c2 = o + 2 < m_ ? s_[o + 2] : 0;
        if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
        if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
        return 0;
    }

    // The starts of block b (a multiple of 64 below m_) into starts_, or valid_ = false.
    // sequential: block b - 64 is the one loaded, and valid; otherwise p (a chunk start in
    // block b) is where the text is taken up, and only the starts after it are right (the
    // carries from before are not known; p starts a digit group if it is a digit).
    // (Compiled twice, chosen per call: a wrapper that only chose would spill the registers of
    // the version inlined in it before every block.)
    __attribute__((always_inline)) inline void load(size_t b, bool sequential, size_t p) {
#ifdef FBPT_X86_TARGETS
        if (cpu_has_avx512bw()) return load_avx512(b, sequential, p);
        if (cpu_has_avx2_bmi2()) return load_avx2(b, sequential, p);
#endif
        load_sse2(b, sequential, p);
    }
    __attribute__((noinline)) void load_sse2(size_t b, bool sequential, size_t p) {
        load_block<ISA_SSE2>(b, sequential, p);
    }
#ifdef FBPT_X86_TARGETS
    // load compiled for AVX-512BW (and the bit instructions of the CPUs that have it): its
    // classes from classify_block_avx512, inlined
    __attribute__((target("avx512bw,bmi,bmi2,lzcnt"), noinline)) void load_avx512(size_t b, bool sequential,
                                                                                size_t p) {
        load_block<ISA_AVX512>(b, sequential, p);
    }
    // load compiled for AVX2 and the bit instructions of BMI1/2 (andn, blsr, tzcnt, shlx: the
    // rules' shifts and masks take fewer instructions): its classes from classify_block_avx2,
    // inlined
    __attribute__((target("avx2,bmi,bmi2"), noinline)) void load_avx2(size_t b, bool sequential, size_t p) {
        load_block<ISA_AVX2>(b, sequential, p);
    }
#endif

    enum { ISA_SSE2, ISA_AVX2, ISA_AVX512 };
    template <int ISA>
    __attribute__((always_inline)) inline void load_block(size_t b, bool sequential, size_t p) {
        base_ = b;
        if (!sequential) from_ = p;
        uint8_t pad[64];
        const uint8_t* q = s_ + b;
        // The text a few blocks on, asked for now: the encoder's and the counter's lookups
        // between two blocks keep the hardware's own prefetcher from running far enough ahead
        // (a third of this function's samples waited on the block's first load). A prefetch
        // past the text's end is harmless: it never faults (the address is made as an
        // integer, not by pointer arithmetic past the text).
        __builtin_prefetch((const void*)((uintptr_t)s_ + b + TEXT_PREFETCH_BYTES));
        if (b + 64 > m_) {
            std::memset(pad, ' ', sizeof pad);
            std::memcpy(pad, s_ + b, m_ - b);
            q = pad;
        }
        // the rules read 4 bytes back (after a valid block, known to be ASCII) and 1 ahead
        const uint8_t ahead = b + 64 < m_ ? s_[b + 64] : ' ';
        uint32_t back = 0;
        if (!sequential && b > 0) std::memcpy(&back, s_ + b - 4, 4);
        ByteClasses classes;  // (only read when the block is valid)
        bool high;
#ifdef FBPT_X86_TARGETS
        if constexpr (ISA == ISA_AVX512) {
            classes = classify_block_avx512<PATTERN>(q, &high);
        } else if constexpr (ISA == ISA_AVX2) {
            classes = classify_block_avx2<PATTERN>(q, &high);
        } else
#endif
        {
            high = any_high_byte(q);
            if (!high) classes = classify_block<PATTERN>(q);
        }
        valid_ = !high && !(back & 0x80808080u) && ahead < 0x80;
        scanner_until_ = valid_ ? 0 : b + 64;
        if (!valid_) return;
        // the classes of the bytes before the block: the last block's (read where they are: a
        // copy was stored as one vector and read back a word at a time, which stalled the
        // loads behind it) or those of its last 8 bytes
        ByteClasses tail_classes{};
        const ByteClasses* before = &tail_classes;
        uint64_t prev_absorbed = 0, carry_groups = 0;
        if (sequential) {
            before = &cur_;
            prev_absorbed = absorbed_;
            carry_groups = groups_ >> 61;  // a group starting in the last 3 bytes, 3 bytes on
        } else if (b > 0) {
            classify_bytes(s_ + b - 8, 8, 56, tail_classes);
        }
        const ByteClasses &prev = *before, &c = classes;
        // x shifted up by k bytes, prev's last bytes coming in: bit j tells of byte j - k
        auto before1 = [](uint64_t x, uint64_t px) { return (x << 1) | (px >> 63); };
        auto before2 = [](uint64_t x, uint64_t px) { return (x << 2) | (px >> 62); };
        const bool ahead_ws = ahead == ' ' || (uint8_t)(ahead - '\t') < 5;
        const uint64_t solid = c.L | c.N | c.O;
        const uint64_t solid_next = (solid >> 1) | ((uint64_t)!ahead_ws << 63);  // bit j: byte j + 1
        const uint64_t space_before = before1(c.sp, prev.sp);
        const uint64_t l_heads = c.L & ~before1(c.L, prev.L), n_heads = c.N & ~before1(c.N, prev.N);
        uint64_t starts;
        if (PATTERN == PAT_GPT2) {
            const uint64_t ws_before = before1(c.ws, prev.ws);
            const uint64_t o_heads = c.O & ~before1(c.O, prev.O);
            starts = (c.ws & ~ws_before) | (c.ws & ws_before & solid_next) |
                     ((l_heads | n_heads | o_heads) & ~space_before);
        } else {
            // what an O run's chunk takes after it: the newlines ([\r\n]*+), for o200k newlines
            // and slashes ([\r\n/]*). A newline after an O (a seed) is taken, and so is the rest
            // of its run of those: the add carries a run's lowest seed through it (a later seed
            // in the run, o200k's newline after a taken slash, stops the carry there: or-ed in)
            const uint64_t tail = o200k_words(PATTERN) ? c.nl | c.sl : c.nl;
            const uint64_t carry_absorbed = prev_absorbed >> 63;
            const uint64_t seed = (c.nl & before1(c.O, prev.O)) | (tail & carry_absorbed);
            const uint64_t absorbed = (((tail + seed) ^ tail) & tail) | seed;
            const uint64_t w = c.ws & ~absorbed, prev_w = prev.ws & ~prev_absorbed;
            const uint64_t o = c.O & ~absorbed, prev_o = prev.O & ~prev_absorbed;
            const uint64_t h = c.ws & ~c.nl, h_before = before1(h, prev.ws & ~prev.nl);
            const uint64_t o_heads = o & ~before1(o, prev_o);
            // (whether the O starts its chunk needs the two bytes before it; from_ starts one)
            const uint64_t known = known_from(b), prev_known = b ? known_from(b - 64) : 0;
            const uint64_t lone_o_before = before1(o, prev_o) & ~before2(o & known, prev_o & prev_known) &
                                           ~before2(c.sp & known, prev.sp & prev_known);
            starts = (w & ~before1(w, prev_w)) | (h & h_before & solid_next) | (o_heads & ~space_before) |
                     (l_heads & ~h_before & ~lone_o_before) | n_heads;
            // o200k's words end where an upper-case letter follows a lower-case one
            if (o200k_words(PATTERN)) starts |= c.up & before1(c.L & ~c.up, prev.L & ~prev.up);
            // an H run after a newline starts a chunk when a non-space follows it
            uint64_t after_nl = h & before1(c.nl & ~absorbed, prev.nl & ~prev_absorbed);
            while (after_nl) {
                const int j = __builtin_ctzll(after_nl);
                const uint64_t past = ~(h >> j);  // (0 when the run fills the block from j = 0 on)
                const int k = past ? j + __builtin_ctzll(past) : 64;  // the end of the run
                bool solid_follows;
                if (k < 64) {
                    solid_follows = (solid >> k) & 1;
                } else {  // the run goes on into the next block
                    size_t q = b + 64;
                    while (q < m_ && (s_[q] == ' ' || s_[q] == '\t' || s_[q] == '\v' || s_[q] == '\f')) ++q;
                    if (q < m_ && s_[q] >= 0x80) {
                        valid_ = false;
                        scanner_until_ = b + 64;
                        return;
                    }
                    solid_follows = q < m_ && !(s_[q] == '\n' || s_[q] == '\r');
                }
                if (solid_follows) starts |= 1ull << j;
                after_nl &= after_nl - 1;
            }
            // digit groups of three from each run's head (qwen, tekken: every digit its own chunk)
            uint64_t groups;
            if (PATTERN == PAT_QWEN || PATTERN == PAT_TEKKEN) {
                groups = c.N;
            } else {
                const uint64_t three = c.N & before1(c.N, prev.N) & before2(c.N, prev.N);
                groups = n_heads | (sequential ? 0 : c.N & (1ull << (p - b)));
                uint64_t g = ((groups << 3) | carry_groups) & three;
                while (g) {
                    groups |= g;
                    g = (g << 3) & three;
                }
            }
            starts |= groups;
            absorbed_ = absorbed;
            groups_ = groups;
        }
        // contractions at apostrophes from byte b - 3 on (those before end before the block).
        // GPT-2, cl100k: at an apostrophe that starts a chunk; o200k: right after a word (a
        // letter that is not a contraction's own), whose chunk then takes it; tekken has none.
        uint64_t ap_cur, ap_prev;
        if (PATTERN == PAT_TEKKEN) {
            ap_cur = ap_prev = 0;
        } else if (PATTERN == PAT_O200K) {
            ap_cur = c.ap & before1(c.L, prev.L);
            ap_prev = prev.ap & (prev.L << 1);
            // an apostrophe at b - 6 .. b - 4 could be a contraction whose letter is the one
            // before a candidate at b - 3 .. b - 1: not known here (rare), so Scanner decides
            if ((ap_prev & (7ull << 61)) && ((prev.ap >> 58) & 7)) {
                valid_ = false;
                scanner_until_ = b + 64;
                return;
            }
        } else {
            const uint64_t o_before = before1(c.O, prev.O);
            ap_cur = c.ap & ~o_before & ~space_before;
            ap_prev = prev.ap & ~(prev.O << 1) & ~(prev.sp << 1);
        }
        ap_prev &= 7ull << 61;
        size_t suffix_end = NPOS;  // o200k: the end of the last contraction a word took
        for (int part = 0; part < 2; ++part) {
            uint64_t ap = part ? ap_cur : ap_prev;
            while (ap) {
                const size_t o = part ? b + __builtin_ctzll(ap) : b - 64 + __builtin_ctzll(ap);
                ap &= ap - 1;
                if (PATTERN == PAT_O200K && o == suffix_end) continue;  // after a contraction: no word
                const size_t k = contraction(o);
                if (!k) continue;
                if (PATTERN == PAT_O200K) {
                    // the word's chunk goes on to o + k: no start at o and inside
                    suffix_end = o + k;
                    for (size_t i = o; i < o + k; ++i)
                        if (i >= b && i < b + 64) starts &= ~(1ull << (i - b));
                }
                // GPT-2 counts the letter after the apostrophe a head; cl100k's rules left it out
                if (PATTERN == PAT_GPT2 && o + 1 >= b && o + 1 < b + 64) starts &= ~(1ull << (o + 1 - b));
                const size_t e = o + k;
                if (e >= b && e < b + 64 && ((c.L >> (e - b)) & 1)) starts |= 1ull << (e - b);
            }
        }
        if (b + 64 > m_) starts &= (1ull << (m_ - b)) - 1;
        starts_ = starts;
        cur_ = classes;  // (after the last read of prev; a block left to Scanner above needs none)
    }

    // The bytes of block b from from_ on (the masks of the bytes before it are not to be used).
    inline uint64_t known_from(size_t b) const {
        return from_ <= b ? ~0ull : from_ >= b + 64 ? 0 : ~0ull << (from_ - b);
    }

    Scanner scanner_;
    const uint8_t* s_;
    size_t m_;               // the text is s_[0:m_] followed by spaces
    size_t base_ = NPOS;     // the loaded block
    bool valid_ = false;     // starts_ are its starts (else Scanner goes through it)
    uint64_t starts_ = 0;
    size_t last_ = NPOS;     // the start next_chunk gave last from starts_ (NPOS: from Scanner)
    uint64_t rest_ = 0;      // the starts after it in the block
    size_t scanner_until_ = 0;  // the end of the loaded block when Scanner goes through it
    ByteClasses cur_{};      // its classes
    uint64_t absorbed_ = 0;  // its newlines an O run takes (cl100k, Llama 3)
    uint64_t groups_ = 0;    // its digit groups' starts (cl100k, Llama 3)
    size_t from_ = 0;        // where the text was last taken up from Scanner (a chunk start)
};

// The chunk ends of a ChunkStarts for a loop that gives out a block's starts itself: a local
// object, whose fields the compiler keeps in registers (the scanner's own live in memory, as
// its out-of-line calls take its address). next(p): the end of the chunk starting at p, the
// end the previous call gave (0 at first).
template <int PATTERN>
struct ChunkCursor {
    ChunkStarts<PATTERN>& scanner;
    size_t base = 0;    // bit j of rest stands for base + j
    uint64_t rest = 0;  // the starts left in the scanner's current block, lowest first

    __attribute__((always_inline)) inline size_t next(size_t p) {
        if (__builtin_expect(rest != 0, 1)) {
            const size_t e = base + (unsigned)__builtin_ctzll(rest);  // (unsigned: no sign extension)
            rest &= rest - 1;
            return e;
        }
        return scanner.next_chunk_and_rest(p, &base, &rest);
    }
};

// End of the chunk that starts at byte p of valid UTF-8 s[0:n], for a pattern whose chunks
// tile the text (pattern_tiles); n for any other id. The encoder's one-pass split calls it.
static inline size_t chunk_end(const uint8_t* s, size_t n, int pattern, size_t p) {
    Scanner scanner(s, n);
    switch (pattern) {  // (each pattern's flags are said once, in Scanner::next_chunk)
        case PAT_GPT2: return scanner.next_chunk<PAT_GPT2>(p);
        case PAT_CL100K: return scanner.next_chunk<PAT_CL100K>(p);
        case PAT_LLAMA3: return scanner.next_chunk<PAT_LLAMA3>(p);
        case PAT_QWEN: return scanner.next_chunk<PAT_QWEN>(p);
        case PAT_O200K: return scanner.next_chunk<PAT_O200K>(p);
        case PAT_TEKKEN: return scanner.next_chunk<PAT_TEKKEN>(p);
        default: return n;
    }
}

// Adapts a sink taking (pointer, length) to the Scanner's (start, end) offsets.
// The byte sink also gets the end of the buffer holding the chunk (it may read up to there).
template <class ByteSink>
struct OffsetSink {
    const uint8_t* base;
    const uint8_t* limit;
    ByteSink* out;
    inline void operator()(size_t a, size_t b) { (*out)(base + a, b - a, limit); }
};

// Pre-tokenize valid text s[0:n] (inside a buffer ending at `limit`), handing every chunk to
// sink(pointer, length, limit) in order.
template <int PATTERN, class Sink>
static void scan_tiled(const uint8_t* s, size_t n, Sink& sink) {
    ChunkStarts<PATTERN> chunks(s, n);
    for (size_t p = 0; p < n;) {
        const size_t e = chunks.next_chunk(p);
        sink(p, e);
        p = e;
    }
}

template <class ByteSink>
void scan_chunks(const uint8_t* s, size_t n, const uint8_t* limit, int pattern, ByteSink& sink) {
    OffsetSink<ByteSink> os{s, limit, &sink};
    switch (pattern) {
        case PAT_WHITESPACE: return Scanner(s, n).scan_whitespace(os);
        case PAT_GPT2: return scan_tiled<PAT_GPT2>(s, n, os);
        case PAT_CL100K: return scan_tiled<PAT_CL100K>(s, n, os);
        case PAT_LLAMA3: return scan_tiled<PAT_LLAMA3>(s, n, os);
        case PAT_QWEN: return scan_tiled<PAT_QWEN>(s, n, os);
        case PAT_O200K: return scan_tiled<PAT_O200K>(s, n, os);
        case PAT_TEKKEN: return scan_tiled<PAT_TEKKEN>(s, n, os);
        default: return;
    }
}

// A sink for scan_document that collects the chunks in order (split.pyx's entry points).
// A huge text's scan takes seconds (160 MB of English: 2.7 s): with a check set, `poll` looks
// between pieces of about SCAN_PIECE_BYTES, each cut where the pattern's chunks are sure to end
// (cut.h: the chunks of a text are those of its two sides), which costs the scan nothing a
// chunk (a tick a chunk cost 7 instructions: 2% of 4 MB's pretokenize). A stretch with no safe
// cut (one huge word) is one piece. What the list collected is freed with it, so an
// interrupted scan leaves nothing behind.
static const size_t SCAN_PIECE_BYTES = 1 << 20;

struct ChunkList {
    std::vector<uint8_t> data;
    std::vector<int64_t> ends;
    Poll poll;
    inline void operator()(const uint8_t* p, size_t len, const uint8_t*) {
        data.insert(data.end(), p, p + len);
        ends.push_back((int64_t)data.size());
    }
    void text(const uint8_t* s, size_t n, const uint8_t* limit, int pattern) {
        size_t p = 0;
        while (poll.check != nullptr && n - p > 2 * SCAN_PIECE_BYTES) {
            const size_t q = find_cut(s, n, p + SCAN_PIECE_BYTES, pattern);
            if (q == NPOS) break;
            scan_chunks(s + p, q - p, limit, pattern, *this);
            p = q;
            poll.tick(POLL_UNITS);  // (a look now)
        }
        scan_chunks(s + p, n - p, limit, pattern, *this);
    }
};

// Pre-tokenize one document (an independent text) and hand every chunk's bytes to sink: each
// stretch of valid text to sink.text(s, n, limit, pattern) (which scans it, as scan_chunks does
// or faster), each chunk of its own (an invalid byte under ERR_BYTES) to sink(p, len, limit).
// errors: ERR_STRICT returns the offset of the first invalid byte before emitting anything;
// ERR_REPLACE chunks the text Python's decode(errors="replace") gives (U+FFFD per maximal
// invalid subpart, re-encoded as EF BF BD); ERR_BYTES chunks each valid stretch as its own text
// and emits every invalid byte as a one-byte chunk.
// Returns -1 on success, or the offset of the first invalid byte (ERR_STRICT only).
template <class ByteSink>
int64_t scan_document(const uint8_t* s, size_t n, int pattern, int errors, ByteSink& sink,
                      std::string& scratch) {
    size_t bad_len;
    size_t bad = utf8_first_error(s, n, 0, &bad_len);
    if (bad == n) {
        sink.text(s, n, s + n, pattern);
        return -1;
    }
    if (errors == ERR_STRICT) return (int64_t)bad;
    if (errors == ERR_BYTES) {
        size_t p = 0;
        while (true) {
            sink.text(s + p, bad - p, s + n, pattern);
            if (bad >= n) break;
            for (size_t k = 0; k < bad_len; ++k) sink(s + bad + k, 1, s + n);
            p = bad + bad_len;
            bad = utf8_first_error(s, n, p, &bad_len);
        }
        return -1;
    }
    // ERR_REPLACE
    scratch.clear();
    size_t p = 0;
    while (true) {
        scratch.append((const char*)s + p, bad - p);
        if (bad >= n) break;
        scratch.append("\xEF\xBF\xBD");
        p = bad + bad_len;
        bad = utf8_first_error(s, n, p, &bad_len);
    }
    const uint8_t* t = (const uint8_t*)scratch.data();
    sink.text(t, scratch.size(), t + scratch.size(), pattern);
    return -1;
}

}  // namespace fbpt
