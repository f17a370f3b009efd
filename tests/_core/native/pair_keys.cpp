// pack_pairs (bytes_map.h: the short-cache key of an ASCII byte or none and then 8..13 two-byte
// letters, made four letters a word) against a letter at a time, written here: the same key,
// or the same refusal, for
//  1. words of every length from 14 to 29 bytes, with and without the ASCII byte, of the leads
//     of Cyrillic, Arabic, Greek and others, each byte in turn replaced by every byte value;
//  2. random chunks of those shapes with random bytes among them.
// Each chunk sits in a heap block of its own size, so that AddressSanitizer sees a read past it.
// Built and run by test_encode.py; prints what it checked and exits 1 on the first difference.
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bytes_map.h"

using fbpt::PackedKey;

// The key as the layout states it: character j's 7 bits ((lead & 1) << 6 | (continuation &
// 0x3F)) at bit 7j of 91, the first 63 in lo; first byte 0x80 | 0x10 * head | characters.
static PackedKey one_at_a_time(const uint8_t* p, size_t n) {
    const size_t head = p[0] < 0x80;
    if (n < 16 || n > fbpt::PAIRS_KEY_MAX || ((n - head) & 1)) return PackedKey{0, 0};
    const size_t chars = (n - head) / 2;
    const uint8_t even = p[head] & 0xFE;
    uint64_t lo = 0, hi = 0;
    for (size_t j = 0; j < chars; ++j) {
        const uint8_t a = p[head + 2 * j], b = p[head + 2 * j + 1];
        if ((a & 0xFE) != even || (b & 0xC0) != 0x80) return PackedKey{0, 0};
        const uint64_t bits = (uint64_t)(a & 1) << 6 | (b & 0x3F);
        if (j < 9)
            lo |= bits << (7 * j);
        else
            hi |= bits << (7 * (j - 9));
    }
    const uint64_t first = 0x80 | (uint64_t)head << 4 | (uint64_t)chars;
    return PackedKey{first | (uint64_t)even << 8 | (uint64_t)(head ? p[0] : 0) << 16 | lo << 24,
                     lo >> 40 | hi << 23 | fbpt::SHORT_LENGTH_BITS};
}

static long checks = 0, keys = 0;

static bool same(const std::vector<uint8_t>& chunk) {
    std::vector<uint8_t> block(chunk);  // (its own size: a read past it is a heap overflow)
    block.shrink_to_fit();
    PackedKey fast = fbpt::pack_pairs(block.data(), block.size());
    PackedKey slow = one_at_a_time(block.data(), block.size());
    ++checks;
    keys += slow.w1 != 0;
    if (fast.w0 == slow.w0 && fast.w1 == slow.w1) return true;
    std::printf("differ:");
    for (uint8_t c : chunk) std::printf(" %02x", c);
    std::printf("\n  four at a time %016llx %016llx, one at a time %016llx %016llx\n", (unsigned long long)fast.w0,
                (unsigned long long)fast.w1, (unsigned long long)slow.w0, (unsigned long long)slow.w1);
    return false;
}

int main() {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    std::printf("big-endian: pack_pairs makes no key here\n");
    return 0;
#endif
    const uint8_t leads[] = {0xD0, 0xD1, 0xD8, 0xD9, 0xCE, 0xCF, 0xC2, 0xDE};
    std::mt19937_64 rng(7);
    // 1. every length, every lead pair, every byte of the chunk replaced by every value
    for (size_t n = 14; n <= 29; ++n)
        for (int head = 0; head < 2; ++head)
            for (uint8_t lead : leads) {
                std::vector<uint8_t> word(n);
                if (head) word[0] = (uint8_t)(' ' + n);
                for (size_t i = head; i < n; i += 2) {
                    word[i] = (uint8_t)(lead | (rng() & 1));
                    if (i + 1 < n) word[i + 1] = (uint8_t)(0x80 | (rng() & 0x3F));
                }
                if (!same(word)) return 1;
                for (size_t at = 0; at < n; ++at)
                    for (int value = 0; value < 256; ++value) {
                        std::vector<uint8_t> changed(word);
                        changed[at] = (uint8_t)value;
                        if (!same(changed)) return 1;
                    }
            }
    // 2. random chunks of the shape, a random byte here and there
    for (long it = 0; it < 500000; ++it) {
        size_t n = 14 + rng() % 16;
        std::vector<uint8_t> chunk(n);
        size_t head = rng() % 3 == 0;
        if (head) chunk[0] = (uint8_t)(rng() % 0x80);
        uint8_t lead = leads[rng() % 8];
        for (size_t i = head; i < n; i += 2) {
            uint64_t r = rng();
            chunk[i] = r % 60 == 0 ? (uint8_t)rng() : (uint8_t)(lead | (r >> 8 & 1));
            if (i + 1 < n) chunk[i + 1] = r % 61 == 1 ? (uint8_t)rng() : (uint8_t)(0x80 | (r >> 16 & 0x3F));
        }
        if (!same(chunk)) return 1;
    }
    std::printf("checked %ld chunks, %ld keys\n", checks, keys);
    return 0;
}
