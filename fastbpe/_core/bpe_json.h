// The model of a byte-level BPE tokenizer.json ("model": {"vocab": {...}, "merges": [...]}),
// read straight from the file's bytes: formats/huggingface.py's fast reader; and likewise
// GPT-2's encoder.json (one such vocab object) and vocab.bpe (lines of merges), formats/gpt2.py's,
// and fastbpe's own file (a vocab array and merges of ids), formats/native.py's. The vocabulary
// and the merges are nearly all of such a file; read here, no Python str is made for any of
// their ~10^5 keys and ~3x10^5 merge parts, and each text becomes its bytes as it is read.
//
// A character-level vocabulary (SentencePiece-style files: byte_of null) is read the same way,
// each text as its UTF-8 (a surrogate JSON escape as Python's json and "surrogatepass" make it:
// a pair one character, a lone one its three bytes).
//
// Only a well-formed, plain byte-level file is accepted; on anything else (a key that is not
// byte-level text, a float or negative id, an unusual layout, a key spelled with escapes where
// the reader looks for "model", "vocab" or "merges", malformed JSON inside the two values...)
// the scan fails and the caller parses the whole file with the json module, the reference,
// which says what is wrong or reads what this reader does not. Everything outside the two
// values is only skipped here (the caller parses it with the json module).
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "utf8.h"

namespace fbpj {

struct ModelScan {
    // byte ranges [begin, end) of the "vocab" and "merges" values of the top-level "model"
    size_t vocab_begin = 0, vocab_end = 0, merges_begin = 0, merges_end = 0;
    // vocabulary: key k's token bytes are vocab_blob[vocab_ends[k-1]:vocab_ends[k]], its id ids[k]
    std::vector<uint8_t> vocab_blob;
    std::vector<int64_t> vocab_ends, ids;
    // merges: part j's token bytes are merge_blob[merge_ends[j-1]:merge_ends[j]], two per merge
    std::vector<uint8_t> merge_blob;
    std::vector<int64_t> merge_ends;
    // fastbpe's own file (scan_native): its merges' ids, merge_width a merge (2 or 3; 0: none)
    std::vector<int64_t> merge_ids;
    int merge_width = 0;
};

class BpeJsonScanner {
  public:
    // byte_of[c]: the byte that code point c stands for in GPT-2's byte-level text, -1 for
    // none (c < table_size; a larger c stands for none). byte_of null: texts are characters,
    // each kept as its UTF-8.
    BpeJsonScanner(const uint8_t* p, size_t n, const int16_t* byte_of, size_t table_size)
        : p_(p), n_(n), byte_of_(byte_of), table_size_(table_size) {}

    // Fills out; false when the file is not one this reader takes (see the top).
    bool scan(ModelScan& out) {
        size_t i = skip_ws(0);
        bool found_model = false;
        const bool read = read_members(i, [&](size_t& j, size_t key_begin, size_t key_end) {
            if (!key_is(key_begin, key_end, "model")) return skip_value(j, 0);
            if (found_model) return false;  // json keeps the last one: leave it to json
            found_model = true;
            return scan_model(j, out);
        });
        return read && found_model && out.vocab_end > 0 && out.merges_end > 0;
    }

    // fastbpe's own file of byte-level tokens: the top-level "vocab" (an array of byte-level
    // texts: vocab_blob and vocab_ends, ids their places) and "merges" (an array of arrays of
    // two or three ids, all alike: merge_ids), their byte ranges in vocab_begin..merges_end.
    // False as scan() is; and for an id past 2^31 - 1 or with a sign (the json module and the
    // reader of parsed files say what is wrong).
    bool scan_native(ModelScan& out) {
        size_t i = skip_ws(0);
        return read_parts(i, out, 0, [&](size_t& j) { return read_text_array(j, out); },
                          [&](size_t& j) { return read_id_rows(j, out); }) &&
               skip_ws(i) == n_;
    }

    // A file that is one vocab object ({"text": id, ...}: GPT-2's encoder.json) into out's
    // vocabulary; false as scan() is.
    bool scan_vocab_file(ModelScan& out) {
        // room for the most the file can hold (an entry takes 5 bytes at least: "":0,), so that
        // no push_back moves what was read (address space only: pages never written are not taken)
        out.vocab_blob.reserve(n_);
        out.vocab_ends.reserve(n_ / 5 + 1);
        out.ids.reserve(n_ / 5 + 1);
        size_t i = skip_ws(0);
        if (!read_vocab(i, out)) return false;
        return skip_ws(i) == n_;
    }

    // Lines of one merge each, "a b" in byte-level text as it is (no JSON quoting: GPT-2's
    // vocab.bpe after its "#version" line), into out's merges; empty lines are passed over.
    // False on any other line: an empty part, a third one, a character that stands for no
    // byte (a space, "\r" and a tab among them), so that the json-free reader says what is wrong.
    bool scan_merge_lines(ModelScan& out) {
        out.merge_blob.reserve(n_);  // (as scan_vocab_file: a merge takes 4 bytes at least)
        out.merge_ends.reserve(n_ / 2 + 2);
        size_t i = 0;
        while (i < n_) {
            if (p_[i] == '\n') {
                ++i;
                continue;
            }
            for (int part = 0; part < 2; ++part) {
                const size_t start = out.merge_blob.size();
                while (i < n_ && p_[i] != ' ' && p_[i] != '\n')
                    if (!read_char(i, out.merge_blob)) return false;
                if (out.merge_blob.size() == start) return false;
                out.merge_ends.push_back((int64_t)out.merge_blob.size());
                if (part == 0 && (i >= n_ || p_[i++] != ' ')) return false;
            }
            if (i < n_ && p_[i] != '\n') return false;  // (a second space: a third part)
        }
        return true;
    }

  private:
    const uint8_t* p_;
    size_t n_;
    const int16_t* byte_of_;
    size_t table_size_;
    static constexpr int MAX_DEPTH = 200;

    static bool is_ws(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
    size_t skip_ws(size_t i) const {
        while (i < n_ && is_ws(p_[i])) ++i;
        return i;
    }
    bool key_is(size_t begin, size_t end, const char* word) const {  // [begin, end): the quoted key
        size_t k = 0;
        for (size_t i = begin + 1; i + 1 < end; ++i, ++k)
            if (word[k] == 0 || (uint8_t)word[k] != p_[i]) return false;
        return word[k] == 0;
    }

    // A string starting at p[i] == '"'; i moves past its closing quote. Its content is only
    // skipped (json checks it): *escaped says whether it holds a backslash.
    bool skip_string(size_t& i, bool* escaped) const {
        if (i >= n_ || p_[i] != '"') return false;
        ++i;
        while (i < n_) {
            uint8_t c = p_[i];
            if (c == '"') {
                ++i;
                return true;
            }
            if (c == '\\') {
                *escaped = true;
                i += 2;
                continue;
            }
            if (c < 0x20) return false;
            ++i;
        }
        return false;
    }

    // Any JSON value starting at p[i]; i moves past it. Strict only about where values end:
    // the json module parses everything skipped here.
    bool skip_value(size_t& i, int depth) const {
        if (i >= n_) return false;
        uint8_t c = p_[i];
        if (c == '"') {
            bool escaped = false;
            return skip_string(i, &escaped);
        }
        if (c == '{' || c == '[') {
            if (depth >= MAX_DEPTH) return false;
            return read_items(i, c, [&](size_t& j) {
                if (c == '{') {  // (a key, escaped or not: only skipped)
                    bool escaped = false;
                    if (!skip_string(j, &escaped)) return false;
                    j = skip_ws(j);
                    if (j >= n_ || p_[j] != ':') return false;
                    j = skip_ws(j + 1);
                }
                return skip_value(j, depth + 1);
            });
        }
        // a number or true/false/null: its characters (json checks their spelling)
        size_t start = i;
        while (i < n_ && ((p_[i] >= '0' && p_[i] <= '9') || (p_[i] >= 'a' && p_[i] <= 'z') || p_[i] == '-' ||
                          p_[i] == '+' || p_[i] == '.' || p_[i] == 'E'))
            ++i;
        return i > start;
    }

    // The items of the array (open '[') or object (open '{') at p[i], each read by item(i) (an
    // object's: its key, colon and value), separated by commas; i moves past the close. Every
    // reader here walks its arrays and objects with it.
    template <class Item>
    bool read_items(size_t& i, uint8_t open, Item item) const {
        const uint8_t close = open + 2;  // ('[' and ']', '{' and '}' are two apart in ASCII)
        if (i >= n_ || p_[i] != open) return false;
        i = skip_ws(i + 1);
        if (i < n_ && p_[i] == close) {
            ++i;
            return true;
        }
        while (true) {
            if (!item(i)) return false;
            i = skip_ws(i);
            if (i >= n_) return false;
            if (p_[i] == close) {
                ++i;
                return true;
            }
            if (p_[i] != ',') return false;
            i = skip_ws(i + 1);
        }
    }

    // The members of the object at p[i]: member(i, key_begin, key_end) reads the value after
    // each key's colon ([key_begin, key_end): the quoted key). A key with an escape fails: json
    // would spell it otherwise than its bytes.
    template <class Member>
    bool read_members(size_t& i, Member member) const {
        return read_items(i, '{', [&](size_t& j) {
            const size_t key_begin = j;
            bool escaped = false;
            if (!skip_string(j, &escaped) || escaped) return false;
            const size_t key_end = j;
            j = skip_ws(j);
            if (j >= n_ || p_[j] != ':') return false;
            j = skip_ws(j + 1);
            return member(j, key_begin, key_end);
        });
    }

    // The "model" object: its "vocab" and "merges" read, every other member skipped.
    bool scan_model(size_t& i, ModelScan& out) {
        return read_parts(i, out, 1, [&](size_t& j) { return read_vocab(j, out); },
                          [&](size_t& j) { return read_merges(j, out); });
    }

    // The object at p[i] (at nesting depth `depth`) whose "vocab" and "merges" members
    // read_vocab(i) and read_merges(i) read, their byte ranges noted in out; every other member
    // skipped. False when either is missing, or given twice (json keeps the last one: left to it).
    template <class ReadVocab, class ReadMerges>
    bool read_parts(size_t& i, ModelScan& out, int depth, ReadVocab read_vocab, ReadMerges read_merges) {
        bool seen_vocab = false, seen_merges = false;
        auto part = [&](size_t& j, bool& seen, size_t& begin, size_t& end, auto read) {
            if (std::exchange(seen, true)) return false;
            begin = j;
            const bool ok = read(j);
            end = j;
            return ok;
        };
        return read_members(i, [&](size_t& j, size_t key_begin, size_t key_end) {
            if (key_is(key_begin, key_end, "vocab"))
                return part(j, seen_vocab, out.vocab_begin, out.vocab_end, read_vocab);
            if (key_is(key_begin, key_end, "merges"))
                return part(j, seen_merges, out.merges_begin, out.merges_end, read_merges);
            return skip_value(j, depth);
        }) && seen_vocab && seen_merges;
    }

    static int hex_value(uint8_t c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }

    // A string of byte-level text starting at p[i] == '"', its bytes appended to blob; i moves
    // past it. False when it is malformed, or holds a character that stands for no byte (every
    // such character is U+0000..U+07FF or a JSON escape, so longer UTF-8 sequences fail too).
    // `stop` (0: none) is a character that ends the part early: the space of an "a b" merge.
    bool read_token(size_t& i, std::vector<uint8_t>& blob, uint8_t stop, bool* stopped) const {
        if (i >= n_ || p_[i] != '"') return false;
        ++i;
        return read_text(i, blob, stop, stopped);
    }
    // read_token of a whole string (no stop).
    bool read_token(size_t& i, std::vector<uint8_t>& blob) const {
        bool stopped = false;
        return read_token(i, blob, 0, &stopped);
    }

    // read_token after the opening quote.
    bool read_text(size_t& i, std::vector<uint8_t>& blob, uint8_t stop, bool* stopped) const {
        while (i < n_) {
            uint8_t c = p_[i];
            uint32_t point;
            if (c == '"') {
                ++i;
                return true;
            }
            if (stop && c == stop) {
                ++i;
                *stopped = true;
                return true;
            }
            if (c == '\\') {
                if (i + 1 >= n_) return false;
                uint8_t e = p_[i + 1];
                i += 2;
                switch (e) {
                    case '"': point = '"'; break;
                    case '\\': point = '\\'; break;
                    case '/': point = '/'; break;
                    case 'b': point = '\b'; break;
                    case 'f': point = '\f'; break;
                    case 'n': point = '\n'; break;
                    case 'r': point = '\r'; break;
                    case 't': point = '\t'; break;
                    case 'u': {
                        if (!escaped_unit(i - 2, &point)) return false;
                        i += 4;
                        // (a surrogate stands for no byte: refused below; in characters, a
                        // high one with a low one after it is one character, as json reads it)
                        uint32_t low;
                        if (!byte_of_ && point >= 0xD800 && point < 0xDC00 && escaped_unit(i, &low) &&
                            low >= 0xDC00 && low < 0xE000) {
                            point = 0x10000 + ((point - 0xD800) << 10) + (low - 0xDC00);
                            i += 6;
                        }
                        break;
                    }
                    default: return false;
                }
            } else {
                if (!read_char(i, blob)) return false;
                continue;
            }
            if (!byte_of_) {
                if (stop && point == stop) return false;  // (json would split an escaped space too)
                put_utf8(point, blob);
                continue;
            }
            if (point >= table_size_ || byte_of_[point] < 0) return false;
            blob.push_back((uint8_t)byte_of_[point]);
        }
        return false;
    }

    // The code unit of a \uXXXX escape at p[i], into *unit; false when there is none.
    bool escaped_unit(size_t i, uint32_t* unit) const {
        if (i + 6 > n_ || p_[i] != '\\' || p_[i + 1] != 'u') return false;
        *unit = 0;
        for (int k = 2; k < 6; ++k) {
            int h = hex_value(p_[i + k]);
            if (h < 0) return false;
            *unit = (*unit << 4) | (uint32_t)h;
        }
        return true;
    }

    // The UTF-8 of code point `point` (a surrogate too, as "surrogatepass" writes it) onto blob.
    static void put_utf8(uint32_t point, std::vector<uint8_t>& blob) {
        uint8_t bytes[4];
        blob.insert(blob.end(), bytes, bytes + fbpt::utf8_from_units(&point, 1, bytes, true));
    }

    // In characters: the UTF-8 character at p[i] (not a control character: json refuses those
    // unescaped), its bytes appended to blob as they are; false where Python's strict decoder
    // would refuse it (utf8.h's rules: an overlong form, a surrogate, past U+10FFFF, cut short).
    bool read_utf8_char(size_t& i, std::vector<uint8_t>& blob) const {
        const uint8_t c = p_[i];
        // (its length by its first byte, 0 for one that begins no character)
        const size_t len = c < 0x80 ? (c >= 0x20) : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
        size_t bad;
        if (len == 0 || len > n_ - i || (len > 1 && fbpt::utf8_first_error_scalar(p_ + i, len, 0, &bad) != len))
            return false;
        blob.insert(blob.end(), p_ + i, p_ + i + len);
        i += len;
        return true;
    }

    // The character at p[i] as it is (not an escape), its byte appended to blob; i moves past
    // it. False when it is not UTF-8 of U+0020..U+07FF, or stands for no byte (every character
    // of byte-level text is one of those).
    bool read_char(size_t& i, std::vector<uint8_t>& blob) const {
        if (!byte_of_) return read_utf8_char(i, blob);
        const uint8_t c = p_[i];
        uint32_t point;
        if (c < 0x80) {
            if (c < 0x20) return false;
            point = c;
            ++i;
        } else if (c >= 0xC2 && c <= 0xDF) {  // two-byte UTF-8 (0xC0, 0xC1: overlong)
            if (i + 1 >= n_ || (p_[i + 1] & 0xC0) != 0x80) return false;
            point = ((uint32_t)(c & 0x1F) << 6) | (p_[i + 1] & 0x3F);
            i += 2;
        } else {
            return false;  // U+0800 and above, or not UTF-8
        }
        if (point >= table_size_ || byte_of_[point] < 0) return false;
        blob.push_back((uint8_t)byte_of_[point]);
        return true;
    }

    // A JSON integer at p[i] without sign, fraction or exponent, below 10^10, into *id; i moves
    // past its digits.
    bool read_id(size_t& i, int64_t* id) const {
        const size_t start = i;
        int64_t value = 0;
        while (i < n_ && p_[i] >= '0' && p_[i] <= '9' && i - start < 11) value = value * 10 + (p_[i++] - '0');
        const size_t digits = i - start;
        *id = value;
        return digits > 0 && digits <= 10 && (digits == 1 || p_[start] != '0');
    }

    // {"text": id, ...}: ids as read_id reads them.
    bool read_vocab(size_t& i, ModelScan& out) {
        return read_items(i, '{', [&](size_t& j) {
            if (!read_token(j, out.vocab_blob)) return false;
            out.vocab_ends.push_back((int64_t)out.vocab_blob.size());
            j = skip_ws(j);
            if (j >= n_ || p_[j] != ':') return false;
            j = skip_ws(j + 1);
            int64_t id;
            if (!read_id(j, &id)) return false;
            out.ids.push_back(id);
            return true;
        });
    }

    // ["text", ...]: byte-level texts into the vocabulary, each id its place.
    bool read_text_array(size_t& i, ModelScan& out) {
        out.vocab_blob.reserve(n_ - i);
        return read_items(i, '[', [&](size_t& j) {
            if (!read_token(j, out.vocab_blob)) return false;
            out.vocab_ends.push_back((int64_t)out.vocab_blob.size());
            out.ids.push_back((int64_t)out.ids.size());
            return true;
        });
    }

    // [[a, b], ...] or [[a, b, c], ...] (all of one width): ids without sign, fraction or
    // exponent, below 2^31.
    bool read_id_rows(size_t& i, ModelScan& out) {
        return read_items(i, '[', [&](size_t& j) {
            int width = 0;
            const bool row = read_items(j, '[', [&](size_t& k) {
                int64_t id;
                if (width == 3 || !read_id(k, &id) || id >= ((int64_t)1 << 31)) return false;
                out.merge_ids.push_back(id);
                ++width;
                return true;
            });
            if (!row || width < 2 || (out.merge_width != 0 && width != out.merge_width)) return false;
            out.merge_width = width;
            return true;
        });
    }

    // ["a b", ...] or [["a", "b"], ...] (not mixed: the first merge's form is every one's).
    bool read_merges(size_t& i, ModelScan& out) {
        int as_lists = -1;
        return read_items(i, '[', [&](size_t& j) {
            const int is_list = j < n_ && p_[j] == '[';
            if (as_lists < 0) as_lists = is_list;
            if (is_list != as_lists) return false;
            if (is_list) {
                int parts = 0;
                const bool pair = read_items(j, '[', [&](size_t& k) {
                    if (parts == 2 || !read_token(k, out.merge_blob)) return false;
                    out.merge_ends.push_back((int64_t)out.merge_blob.size());
                    ++parts;
                    return true;
                });
                return pair && parts == 2;
            }
            // "a b": the part before the space, then the part after it (ending at the quote)
            bool stopped = false, again = false;
            if (!read_token(j, out.merge_blob, ' ', &stopped) || !stopped) return false;
            out.merge_ends.push_back((int64_t)out.merge_blob.size());
            if (!read_text(j, out.merge_blob, ' ', &again) || again) return false;
            out.merge_ends.push_back((int64_t)out.merge_blob.size());
            return true;
        });
    }
};

// BpeJsonScanner(p, n, byte_of, table_size).scan(out)
inline bool scan_bpe_model(const uint8_t* p, size_t n, const int16_t* byte_of, size_t table_size, ModelScan& out) {
    return BpeJsonScanner(p, n, byte_of, table_size).scan(out);
}

// BpeJsonScanner(p, n, byte_of, table_size).scan_native(out)
inline bool scan_native_file(const uint8_t* p, size_t n, const int16_t* byte_of, size_t table_size, ModelScan& out) {
    return BpeJsonScanner(p, n, byte_of, table_size).scan_native(out);
}

// GPT-2's two files: encoder.json's bytes (scan_vocab_file) and vocab.bpe's after its first
// line (scan_merge_lines) into out.
inline bool scan_gpt2_pair(const uint8_t* vocab, size_t vocab_size, const uint8_t* merges, size_t merges_size,
                           const int16_t* byte_of, size_t table_size, ModelScan& out) {
    return BpeJsonScanner(vocab, vocab_size, byte_of, table_size).scan_vocab_file(out) &&
           BpeJsonScanner(merges, merges_size, byte_of, table_size).scan_merge_lines(out);
}

}  // namespace fbpj
