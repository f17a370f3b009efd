// find_cut: where a text may be cut into blocks that are pre-tokenized (and counted) apart, with
// the proof of every rule it applies kept beside the code. A cut rule is a pattern id of
// patterns.h (that pattern's own rules) or RULE_CUSTOM.
#pragma once
#include <cstddef>
#include <cstdint>

#include "patterns.h"
#include "utf8.h"

namespace fbpt {

// The rule for user regexes, which have no scanner: the cuts that hold for every such pattern.
static const int RULE_CUSTOM = PAT_COUNT;

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
//   R3 (cl100k, o200k, llama3, qwen, tekken): x is '\n' and y is not whitespace and not '/'.
//      Let W be the whitespace run that ends at i (it ends with the newline). In T the next
//      character y is not whitespace; at the end of A there is none. cl100k: a punctuation
//      chunk before W takes W's leading newlines in both; the rest of W is taken whole by
//      \s*[\r\n] in T (it ends at W's last newline = i) and by \s++$ in A. The others:
//      \s*[\r\n]+ takes the rest of W up to its last newline = i in both. '/' is excluded:
//      o200k's [\r\n/]* would join it.
//      NOT safe for gpt2: T = "a\n\nb" chunks the run as "\n", "\n" while A = "a\n\n" ends
//      in the single chunk "\n\n".
//   R4 (gpt2): R1 and R2 widened: y is any of ' \t\n\r' and x is not whitespace (gpt2's
//      non-space chunks never take trailing whitespace).
//   R5 (whitespace, \S+): y is any ASCII whitespace character.
//   R6 (all but whitespace): x is a letter or digit and y is none of letter, digit,
//      whitespace, mark (\p{M}) or '\''. Letter and digit runs end at y as at the end of the
//      text; no alternative puts a letter or digit and a following punctuation character in one
//      chunk (contractions, the one exception, start with '\''; marks are excluded because
//      o200k's words take them). This gives Chinese or Thai text, with few spaces and newlines,
//      its cuts (e.g. before U+3002).
//   RULE_CUSTOM (user regexes): R1 and R2, which hold for patterns whose matches never join a
//      non-space character to a following space/tab, nor a letter/digit to a following newline,
//      and which use no look-behind (\w+|[^\w\s]+ and \S+ qualify); callers that are unsure
//      read each text whole (count_words(block_size=None)). It is also the rule of whitespace
//      (\S+) when the text between matches is kept as chunks (a tokenizer's split_gaps): R5 would
//      cut inside a whitespace run, one chunk then; R1 and R2 cut where a \S+ match ends.
//      split/patterns.py cut_rule picks the rule. qwen (llama3's with one digit a chunk) and
//      tekken (o200k's without contractions, one digit a chunk) take their parents' rules: no
//      argument above counts digits or needs a contraction.
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
static inline size_t find_cut(const uint8_t* s, size_t n, size_t from, int rule) {
    if (from < 1) from = 1;
    for (size_t i = from; i < n; ++i) {
        uint8_t b = s[i];
        bool space_tab = (b == ' ' || b == '\t');
        bool newline = (b == '\n' || b == '\r');
        switch (rule) {
            case PAT_WHITESPACE:
                if (space_tab || newline) return i;
                break;
            case PAT_GPT2:
                if ((space_tab || newline) && !(flags_before_or_other(s, i) & FB_WS)) return i;
                if (letter_then_punct(s, n, i)) return i;
                break;
            case PAT_CL100K:
            case PAT_O200K:
            case PAT_LLAMA3:
            case PAT_QWEN:
            case PAT_TEKKEN: {  // (no argument of this rule counts digits or needs a contraction)
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
            default:  // RULE_CUSTOM: R1 and R2 (documented assumption)
                if (space_tab && !(flags_before_or_other(s, i) & FB_WS)) return i;
                if (newline && (flags_before_or_other(s, i) & (FB_L | FB_N))) return i;
                break;
        }
    }
    return NPOS;
}

}  // namespace fbpt

