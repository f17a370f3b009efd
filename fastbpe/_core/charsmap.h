// SentencePiece's normaliser (Kudo and Richardson 2018): its compiled character map (the
// "precompiled_charsmap": rewrite rules from byte strings to replacements; nmt_nfkc, its
// default, is NFKC with whitespace and control characters made spaces), and the whitespace
// rules applied as the map's output is made.
//
// The blob is <uint32 LE: trie size in bytes><the trie: a darts-clone double array of uint32
// units><the replacements: NUL-terminated UTF-8 strings>. A key's value is the offset of its
// replacement. At each position the longest key that begins there is rewritten; where none
// does, one character is copied (normalizer.cc's NormalizePrefix). A model's user-defined
// pieces come first: where one begins, the longest is copied as it is (KeptPieces).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace fbpt {

struct CharsMap {
    const uint32_t* units;  // the double array (little-endian in the blob; in the host's order here)
    size_t n_units;
    const uint8_t* pool;  // the replacements
    size_t n_pool;
};

// darts-clone's unit layout: a node's label is its low byte (bit 31 set marks a value unit, so
// it never equals a byte), bit 8 says a key ends below it, and its children sit at
// (node ^ offset) ^ byte.
static inline size_t darts_offset(uint32_t unit) { return (size_t)(unit >> 10) << ((unit & (1u << 9)) >> 6); }
static inline uint32_t darts_label(uint32_t unit) { return unit & ((1u << 31) | 0xFFu); }
static inline bool darts_has_leaf(uint32_t unit) { return (unit >> 8) & 1; }

// The length of the longest key that begins s[0:n) (0: none) and its value in *value. Every
// index is checked against the array: a damaged blob ends the walk, it never reads past it.
static inline size_t charsmap_longest(const CharsMap& m, const uint8_t* s, size_t n, uint32_t* value) {
    if (m.n_units == 0) return 0;
    size_t node = darts_offset(m.units[0]), longest = 0;
    for (size_t i = 0; i < n; ++i) {
        node ^= s[i];
        if (node >= m.n_units) break;
        const uint32_t unit = m.units[node];
        if (darts_label(unit) != s[i]) break;
        node ^= darts_offset(unit);
        if (darts_has_leaf(unit)) {
            if (node >= m.n_units) break;
            *value = m.units[node] & 0x7FFFFFFFu;
            longest = i + 1;
        }
    }
    return longest;
}

// The bytes of the character whose lead byte is b (a stray continuation byte: 1).
static inline size_t utf8_char_width(uint8_t b) { return b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

// NormalizePrefix: what the text at s[0:n) (n > 0) begins with becomes, in *text/*length, and
// the bytes it takes (0 for a value that names no replacement: outside the pool, or no NUL
// after it). Where no rule begins, one character is itself (UTF-8 as a str's surrogatepass
// spelling: a lone surrogate is a character no rule names).
static inline size_t charsmap_prefix(const CharsMap& m, const uint8_t* s, size_t n, const uint8_t** text,
                                     size_t* length) {
    uint32_t value = 0;
    const size_t taken = charsmap_longest(m, s, n, &value);
    if (taken == 0) {
        const size_t width = utf8_char_width(s[0]);
        *text = s;
        *length = width < n ? width : n;
        return *length;
    }
    if (value >= m.n_pool) return 0;
    const void* nul = std::memchr(m.pool + value, 0, m.n_pool - value);
    if (nul == nullptr) return 0;
    *text = m.pool + value;
    *length = (size_t)((const uint8_t*)nul - *text);
    return taken;
}

// The pieces the normaliser copies as they are (a model's user-defined pieces), by first byte,
// the longest first: where several begin at a position, the longest is taken.
struct KeptPieces {
    std::vector<std::string> by_first[256];
    bool any = false;

    void add(const std::string& piece) {
        if (piece.empty()) return;
        std::vector<std::string>& row = by_first[(uint8_t)piece[0]];
        auto at = row.begin();
        while (at != row.end() && at->size() >= piece.size()) ++at;
        row.insert(at, piece);
        any = true;
    }

    // The length of the longest kept piece that s[0:n) (n > 0) begins with, 0 for none.
    size_t longest(const uint8_t* s, size_t n) const {
        for (const std::string& piece : by_first[s[0]])
            if (piece.size() <= n && std::memcmp(piece.data(), s, piece.size()) == 0) return piece.size();
        return 0;
    }
};

// NormalizePrefix with the kept pieces first (normalizer.cc's PrefixMatcher, checked before the
// map's rules): what s[0:n) begins with becomes, and the bytes it takes (charsmap_prefix's 0 for
// a damaged map).
static inline size_t normalize_prefix(const CharsMap& m, const KeptPieces& kept, const uint8_t* s, size_t n,
                                      const uint8_t** text, size_t* length) {
    if (kept.any) {
        const size_t taken = kept.longest(s, n);
        if (taken) {
            *text = s;
            *length = taken;
            return taken;
        }
    }
    return charsmap_prefix(m, s, n, text, length);
}

// SentencePiece's Normalize (normalizer.cc), with whitespace escaped as U+2581 ("▁") and not as
// a suffix: the map applied a prefix at a time; with remove_extra_whitespaces, the prefixes
// that become one space at the start are dropped, a space that follows a space is dropped, and
// so are the ▁s at the end (the text's own too); with add_dummy_prefix, a ▁ before the rest
// of a text that was not empty; a kept piece is copied as it is (its spaces escaped, those it
// begins with dropped after a space, as any prefix's). Appends to out; false for a damaged map
// (charsmap_prefix).
static inline bool sentencepiece_normalize(const CharsMap& m, const KeptPieces& kept, const uint8_t* s, size_t n,
                                           bool add_dummy_prefix, bool remove_extra_whitespaces, std::string& out) {
    static const char SPACE_SYMBOL[] = "\xE2\x96\x81";
    const size_t start = out.size();
    const uint8_t* text;
    size_t length, at = 0;
    if (n == 0) return true;
    if (remove_extra_whitespaces) {
        while (at < n) {
            const size_t taken = normalize_prefix(m, kept, s + at, n - at, &text, &length);
            if (taken == 0) return false;
            if (length != 1 || text[0] != ' ') break;
            at += taken;
        }
        if (at == n) return true;  // (only spaces)
    }
    out.reserve(start + 3 * (n - at) + 3);
    if (add_dummy_prefix) out.append(SPACE_SYMBOL, 3);
    bool after_space = remove_extra_whitespaces;
    while (at < n) {
        const size_t taken = normalize_prefix(m, kept, s + at, n - at, &text, &length);
        if (taken == 0) return false;
        if (after_space)
            while (length && text[0] == ' ') ++text, --length;
        if (length) {
            for (size_t i = 0; i < length; ++i) {
                if (text[i] == ' ')
                    out.append(SPACE_SYMBOL, 3);
                else
                    out.push_back((char)text[i]);
            }
            after_space = text[length - 1] == ' ';
        }
        if (!remove_extra_whitespaces) after_space = false;
        at += taken;
    }
    if (remove_extra_whitespaces)
        while (out.size() >= start + 3 && out.compare(out.size() - 3, 3, SPACE_SYMBOL) == 0) out.resize(out.size() - 3);
    return true;
}

}  // namespace fbpt
