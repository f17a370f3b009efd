// The lines of a well-formed .tiktoken rank file ("base64 rank\n" ...), parsed in one pass:
// formats/tiktoken.py's bulk reader. Anything else (a blank line, a tab, a carriage return,
// unpadded or misplaced base64 padding, a sign, a rank of more than 10 digits) is refused with
// -1, and the Python line reader, the reference, says what is wrong. Accepts exactly what the
// line reader accepts of such files: base64 that Python's b64decode(validate=True) takes
// (alphabet, then at most two "=", length a multiple of 4), decoded the same way.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fbpt {

static inline int base64_value(uint8_t c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

// Appends each line's decoded token to blob (token i is blob[ends[i-1]:ends[i]]) and its rank
// to ranks. Returns the number of lines, or -1 if the data is not well-formed.
static inline int64_t parse_rank_lines(const uint8_t* p, size_t n, std::vector<uint8_t>& blob,
                                       std::vector<int64_t>& ends, std::vector<int64_t>& ranks) {
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        while (i < n && p[i] != ' ') ++i;
        size_t len = i - start;
        if (i == n || len == 0 || len % 4 != 0) return -1;
        size_t pad = 0;
        if (p[i - 1] == '=') pad = (p[i - 2] == '=') ? 2 : 1;
        for (size_t k = start; k < i - pad; ++k)
            if (base64_value(p[k]) < 0) return -1;  // (an "=" before the end lands here)
        for (size_t k = start; k + 4 <= i; k += 4) {
            uint32_t v = 0;
            for (int j = 0; j < 4; ++j) v = (v << 6) | (uint32_t)(p[k + j] == '=' ? 0 : base64_value(p[k + j]));
            blob.push_back((uint8_t)(v >> 16));
            if (k + 4 < i || pad < 2) blob.push_back((uint8_t)(v >> 8));
            if (k + 4 < i || pad < 1) blob.push_back((uint8_t)v);
        }
        ++i;  // the space
        int64_t rank = 0;
        size_t digits = 0;
        while (i < n && p[i] >= '0' && p[i] <= '9' && digits < 11) {
            rank = rank * 10 + (p[i] - '0');
            ++i;
            ++digits;
        }
        if (digits == 0 || digits > 10) return -1;
        if (i < n) {
            if (p[i] != '\n') return -1;
            ++i;
        }
        ends.push_back((int64_t)blob.size());
        ranks.push_back(rank);
    }
    return (int64_t)ranks.size();
}

}  // namespace fbpt
