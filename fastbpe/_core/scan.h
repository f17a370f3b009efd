// Compiled pre-tokenizers: the split patterns of GPT-2, cl100k, o200k (and Llama 3, whitespace),
// hand-translated into scanners over UTF-8 bytes that yield exactly the chunks the `regex` module
// yields for the same pattern (tests/test_pretokenize.py checks this differentially).
//
// Each scanner is a function next_*(p) -> end of the chunk starting at byte p. Alternatives are
// tried in the pattern's order and backtracking is resolved by hand; the comment above each
// function gives the pattern and the reasoning. The character classes come from
// unicode_tables.h, generated from the `regex` module itself.
//
// Input to the scanners is valid UTF-8 (the callers validate first; see fb_scan_document).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "unicode_tables.h"

namespace fbpt {

enum Pattern { PAT_WHITESPACE = 0, PAT_GPT2 = 1, PAT_CL100K = 2, PAT_O200K = 3, PAT_LLAMA3 = 4, PAT_CUSTOM = 5 };
enum Errors { ERR_STRICT = 0, ERR_REPLACE = 1, ERR_BYTES = 2 };

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
        while (p + 8 <= n) {  // ASCII fast path, 8 bytes at a time
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
    // Runs of a class. ASCII bytes (most of most corpora) are classified by one table lookup
    // in a tight loop; other characters are decoded.
    inline size_t run_flags(size_t p, uint16_t mask) const {
        while (true) {
            while (p < n_ && s_[p] < 0x80 && (FB_STAGE2[s_[p]] & mask)) ++p;
            if (p >= n_ || s_[p] < 0x80) return p;
            Ch c = decode_valid(s_, p);
            if (!(c.fl & mask)) return p;
            p += c.len;
        }
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
        Ch c = at(p);
        while (c.fl & FB_WS) {
            r.last = p;
            p += c.len;
            if (c.cp == '\r' || c.cp == '\n') r.after_nl = p;
            c = at(p);
        }
        r.end = p;
        return r;
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
    inline size_t next_gpt2(size_t p) const {
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
        if (d.fl & FB_L) return run_flags(q, FB_L);
        if (d.fl & FB_N) return run_flags(q, FB_N);
        if (is_other(d)) return run_other(q);
        // c is whitespace here (a non-space c would have been L, N or other)
        WsRun w = ws_run(p);
        if (w.end >= n_) return n_;    // \s+ to the end of the text (\s++$)
        if (w.last > p) return w.last; // \s+(?!\S): the run minus its last character
        return w.end;                  // \s: a single whitespace character before a non-space
    }

    // (?i:x) contraction letters
    inline size_t contraction_ci(size_t p) const {  // '(?i:[sdmt]|ll|ve|re) at p, or NPOS
        Ch c = at(p);
        if (c.cp != '\'') return NPOS;
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
    // \s*[\r\n] and \s*[\r\n]+ both end right after the run's last newline (\s* backtracks).
    inline size_t next_cl100k(size_t p, bool ws_to_end_whole) const {
        size_t r = contraction_ci(p);
        if (r != NPOS) return r;
        Ch c = at(p);
        if (c.fl & FB_L) return run_flags(p, FB_L);
        if (c.len && !(c.fl & FB_N) && c.cp != '\r' && c.cp != '\n') {
            // optional prefix then letters; without the prefix the letter run cannot start
            // here (c is not a letter), so only the with-prefix attempt can succeed
            Ch d = at(p + c.len);
            if (d.fl & FB_L) return run_flags(p + c.len, FB_L);
        }
        if (c.fl & FB_N) return digits_upto3(p, c);
        size_t q = other_then_newlines(p, c, false);
        if (q != NPOS) return q;
        WsRun w = ws_run(p);
        if (ws_to_end_whole && w.end >= n_) return n_;  // \s++$
        if (w.after_nl != NPOS) return w.after_nl;      // \s*[\r\n]
        if (w.end >= n_) return n_;                     // \s+(?!\S) at the end of the text
        if (w.last > p) return w.last;                  // \s+(?!\S)
        return w.end;                                   // \s
    }

    // o200k word cores, at q:
    //   A1: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+  then the contraction
    //   A2: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*  then the contraction
    // A1: the greedy * takes the maximal UPPERISH run U; if the next character is LOWERISH the +
    // takes the maximal LOWERISH run from there. Otherwise * gives back characters one at a time
    // until the next one is LOWERISH, i.e. the + starts at the last LOWERISH character inside U
    // (an Lm/Lo/M); the characters after it in U are Lu/Lt, so the + takes just that one.
    inline size_t o200k_a1(size_t q) const {
        size_t u = q, last_lower = NPOS;
        Ch d = at(u);
        while (d.fl & FB_UPPERISH) {
            if (d.fl & FB_LOWERISH) last_lower = u;
            u += d.len;
            d = at(u);
        }
        size_t r;
        if (d.fl & FB_LOWERISH) r = run_flags(u, FB_LOWERISH);
        else if (last_lower != NPOS) r = last_lower + at(last_lower).len;
        else return NPOS;
        return o200k_suffix(r);
    }
    inline size_t o200k_a2(size_t q) const {
        size_t u = run_flags(q, FB_UPPERISH);
        if (u == q) return NPOS;
        return o200k_suffix(run_flags(u, FB_LOWERISH));
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
    inline size_t next_o200k(size_t p) const {
        Ch c = at(p);
        bool prefix = c.len && !(c.fl & (FB_L | FB_N)) && c.cp != '\r' && c.cp != '\n';
        size_t r;
        if (prefix && (r = o200k_a1(p + c.len)) != NPOS) return r;
        if ((r = o200k_a1(p)) != NPOS) return r;
        if (prefix && (r = o200k_a2(p + c.len)) != NPOS) return r;
        if ((r = o200k_a2(p)) != NPOS) return r;
        if (c.fl & FB_N) return digits_upto3(p, c);
        if ((r = other_then_newlines(p, c, true)) != NPOS) return r;
        WsRun w = ws_run(p);
        if (w.after_nl != NPOS) return w.after_nl;  // \s*[\r\n]+
        if (w.end >= n_) return n_;                 // \s+(?!\S) at the end of the text
        if (w.last > p) return w.last;              // \s+(?!\S)
        return w.end;                               // \s+ (a single character here)
    }

    // Scan the whole text, calling sink(start, end) for each chunk.
    template <class Sink>
    void scan(int pattern, Sink& sink) const {
        size_t p = 0;
        switch (pattern) {
            case PAT_WHITESPACE: {
                size_t start;
                while (true) {
                    size_t e = next_whitespace(p, &start);
                    if (e == NPOS) break;
                    sink(start, e);
                    p = e;
                }
                break;
            }
            case PAT_GPT2:
                while (p < n_) { size_t e = next_gpt2(p); sink(p, e); p = e; }
                break;
            case PAT_CL100K:
                while (p < n_) { size_t e = next_cl100k(p, true); sink(p, e); p = e; }
                break;
            case PAT_LLAMA3:
                while (p < n_) { size_t e = next_cl100k(p, false); sink(p, e); p = e; }
                break;
            case PAT_O200K:
                while (p < n_) { size_t e = next_o200k(p); sink(p, e); p = e; }
                break;
            default:
                break;
        }
    }

  private:
    const uint8_t* s_;
    size_t n_;
};

// Adapts a sink taking (pointer, length) to the Scanner's (start, end) offsets.
// The byte sink also gets the end of the buffer holding the chunk (it may read up to there).
template <class ByteSink>
struct OffsetSink {
    const uint8_t* base;
    const uint8_t* limit;
    ByteSink* out;
    inline void operator()(size_t a, size_t b) { (*out)(base + a, b - a, limit); }
};

// Pre-tokenize one document (an independent text) and hand every chunk's bytes to sink.
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
        OffsetSink<ByteSink> os{s, s + n, &sink};
        Scanner(s, n).scan(pattern, os);
        return -1;
    }
    if (errors == ERR_STRICT) return (int64_t)bad;
    if (errors == ERR_BYTES) {
        size_t p = 0;
        while (true) {
            OffsetSink<ByteSink> os{s + p, s + n, &sink};
            Scanner(s + p, bad - p).scan(pattern, os);
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
    OffsetSink<ByteSink> os{t, t + scratch.size(), &sink};
    Scanner(t, scratch.size()).scan(pattern, os);
    return -1;
}

// ---------------------------------------------------------------------------------------------
// Safe block boundaries: the rules find_cut applies, and why each is safe.
//
// A cut at i splits text T into A = T[:i] and B = T[i:]; it is safe for a pattern when
// chunks(T) == chunks(A) + chunks(B). All named patterns are leftmost-first alternations with no
// look-behind, so a match starting at p depends on T[p:] only; a cut is safe when (1) some chunk
// of T ends exactly at i and (2) no match attempt starting before i reads T[i] differently from
// reading the end of the text. x = the character before i, y = the character at i; every
// deciding character is ASCII or fully decoded, so a cut is never inside a UTF-8 sequence.
//
//   R1 (all patterns): y is ' ' or '\t' and x is not whitespace. No alternative of any named
//      pattern takes a space or tab *after* a non-space (the only optional space is a leading
//      ' ?'; the trailing classes [\r\n]* / [\r\n/]* exclude it), and every alternative that
//      reads y after x stops there, exactly as at the end of the text; the whitespace
//      alternatives (\s+(?!\S), \s++$) cannot start before i and reach i: x is not whitespace.
//   R2 (all patterns): y is '\n' or '\r' and x is a letter or digit (\p{L} / \p{N}). Letter
//      and digit runs stop at a newline as at the end; a newline only ever joins a chunk that
//      ends in punctuation (cl100k/o200k [\r\n]*) or whitespace, which x is not.
//   R3 (cl100k, o200k, llama3): x is '\n' and y is not whitespace and not '/'. Let W be the
//      whitespace run that ends at i (it ends with the newline). In T the next character y is
//      not whitespace; at the end of A there is none. cl100k: a punctuation chunk before W takes
//      W's leading newlines in both; the rest of W is taken whole by \s*[\r\n] in T (it ends at
//      W's last newline = i) and by \s++$ in A. o200k/llama3: \s*[\r\n]+ takes the rest of W
//      up to its last newline = i in both. '/' is excluded: o200k's [\r\n/]* would join it.
//      NOT safe for gpt2: T = "a\n\nb" chunks the run as "\n", "\n" while A = "a\n\n" ends
//      in the single chunk "\n\n".
//   R4 (gpt2): R1 and R2 widened: y is any of ' \t\n\r' and x is not whitespace (gpt2's
//      non-space chunks never take trailing whitespace).
//   R5 (whitespace, \S+): y is any ASCII whitespace character.
//   R6 (gpt2, cl100k, o200k, llama3): x is a letter or digit and y is none of letter, digit,
//      whitespace, mark (\p{M}) or '\''. Letter and digit runs end at y as at the end of the
//      text; no alternative puts a letter or digit and a following punctuation character in one
//      chunk (contractions, the one exception, start with '\''; marks are excluded because
//      o200k's words take them). This gives Chinese or Thai text, with few spaces and newlines,
//      its cuts (e.g. before U+3002).
//   PAT_CUSTOM (user regexes): R1 and R2, which hold for patterns whose matches never join a
//      non-space character to a following space/tab, nor a letter/digit to a following newline,
//      and which use no look-behind (\w+|[^\w\s]+ and \S+ qualify); callers that are unsure
//      read each text whole (count_words(block_size=None)). It is also the rule of whitespace
//      (\S+) when the text between matches is kept as chunks (a tokenizer's split_gaps): R5 would
//      cut inside a whitespace run, one chunk then; R1 and R2 cut where a \S+ match ends.
//      split/patterns.py cut_rule picks the rule, and gives Qwen's pattern (llama3's with \p{N}
//      for \p{N}{1,3}, no scanner) llama3's rule: no argument above counts digits.
// tests/corpus/test_count.py checks the whole claim by counting with block sizes of 1, 2, 3, 5 and
// 7 bytes (a cut at nearly every safe place) against the reference on the whole text, over
// generated text (hypothesis) and real text in nine scripts.
//
// The cuts are NOT safe before normalisation: they are decided on the characters as they are,
// and normalising can change their class. NFC ends the letter U+0958 with a mark (U+0915
// U+093C), NFD does so for every precomposed letter, NFKC makes U+2475 "(2)" and U+FF0F "/";
// then a letter-then-punctuation cut (R6), a letter-then-newline cut (R2) or a cut after a
// newline (R3) can split a chunk of the normalised text. A normalising tokenizer's text is
// therefore normalised first and cut afterwards (normalize_stream in fastbpe/corpus/cut.py).
// tests/test_shards.py encodes text with such characters under each form in blocks of 1 to 64 bytes.
// Invalid bytes count as "not whitespace, not a letter or digit" (what U+FFFD is under
// errors="replace"; under errors="bytes" they are hard boundaries already).
static inline uint16_t flags_before_or_other(const uint8_t* s, size_t i) {
    uint16_t fl;
    if (!flags_before(s, i, &fl)) return 0;
    return fl;
}

// R6: a letter or digit before i, and at i a valid character that is not a letter, digit,
// whitespace, mark or apostrophe.
static inline bool letter_then_punct(const uint8_t* s, size_t n, size_t i) {
    uint8_t b = s[i];
    uint16_t fl;
    if (b < 0x80) {
        if (b == '\'') return false;
        fl = FB_STAGE2[b];
    } else {
        if ((b & 0xC0) == 0x80) return false;  // not a character start
        size_t bad;
        size_t end = i + 4 < n ? i + 4 : n;
        if (utf8_first_error(s, end, i, &bad) == i) return false;  // invalid or cut off
        fl = decode_valid(s, i).fl;
    }
    if (fl & (FB_L | FB_N | FB_WS | FB_M)) return false;
    return (flags_before_or_other(s, i) & (FB_L | FB_N)) != 0;
}

// First safe cut i with from <= i < n (and i >= 1), or NPOS. Only positions whose deciding
// characters lie wholly inside [0, n) are considered, so the answer never depends on bytes
// beyond n.
static inline size_t find_cut(const uint8_t* s, size_t n, size_t from, int pattern) {
    if (from < 1) from = 1;
    for (size_t i = from; i < n; ++i) {
        uint8_t b = s[i];
        bool space_tab = (b == ' ' || b == '\t');
        bool newline = (b == '\n' || b == '\r');
        switch (pattern) {
            case PAT_WHITESPACE:
                if (space_tab || newline) return i;
                break;
            case PAT_GPT2:
                if ((space_tab || newline) && !(flags_before_or_other(s, i) & FB_WS)) return i;
                if (letter_then_punct(s, n, i)) return i;
                break;
            case PAT_CL100K:
            case PAT_O200K:
            case PAT_LLAMA3: {
                if (space_tab && !(flags_before_or_other(s, i) & FB_WS)) return i;
                if (newline && (flags_before_or_other(s, i) & (FB_L | FB_N))) return i;
                if (letter_then_punct(s, n, i)) return i;
                if (s[i - 1] == '\n' && b != '/') {
                    if (b < 0x80) {
                        if (!(FB_STAGE2[b] & FB_WS)) return i;
                    } else if ((b & 0xC0) != 0x80) {
                        size_t bad;
                        size_t end = i + 4 < n ? i + 4 : n;
                        size_t e = utf8_first_error(s, end, i, &bad);
                        if (e == i) {
                            if (bad && end - i >= 4) return i;  // invalid: "other" under replace/bytes
                        } else if (!(decode_valid(s, i).fl & FB_WS)) {
                            return i;
                        }
                    }
                }
                break;
            }
            default:  // custom regex: R1 and R2 (documented assumption)
                if (space_tab && !(flags_before_or_other(s, i) & FB_WS)) return i;
                if (newline && (flags_before_or_other(s, i) & (FB_L | FB_N))) return i;
                break;
        }
    }
    return NPOS;
}

}  // namespace fbpt
