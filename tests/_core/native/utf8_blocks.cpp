// utf8_first_error (AVX2 blocks, then the scalar validator) against utf8_first_error_scalar
// alone: the same first error and the same length of its invalid subpart, for
//  1. every string of one to three bytes from a set of boundary bytes (each lead byte's
//     limits, continuation limits, ASCII, never-valid bytes), set into texts of ASCII, two-,
//     three- and four-byte characters at every offset around the blocks' seams;
//  2. every string of four such bytes at the first seam;
//  3. random texts of characters of every length, some with random bytes in them,
//     validated from random starting points;
//  4. the strings of 1. in long ASCII text (the four-block path) near every seam.
// Built and run by test_utf8.py; prints what it checked and exits 1 on the first difference.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "utf8.h"

using fbpt::utf8_first_error;
using fbpt::utf8_first_error_scalar;

static long checks = 0;

static bool same(const std::string& t, size_t from) {
    const uint8_t* s = (const uint8_t*)t.data();
    size_t len_fast = 99, len_slow = 99;
    size_t fast = utf8_first_error(s, t.size(), from, &len_fast);
    size_t slow = utf8_first_error_scalar(s, t.size(), from, &len_slow);
    ++checks;
    if (fast == slow && len_fast == len_slow) return true;
    std::printf("differ from %zu: blocks %zu (+%zu), scalar %zu (+%zu); text:", from, fast, len_fast, slow, len_slow);
    for (unsigned char c : t) std::printf(" %02x", c);
    std::printf("\n");
    return false;
}

int main() {
#ifdef FBPT_X86_TARGETS
    std::printf("avx2 %d\n", (int)fbpt::cpu_has_avx2());
#else
    std::printf("avx2 0\n");
#endif
    const std::vector<uint8_t> edge = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2,
                                       0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF};
    const std::vector<std::string> fillers = {"a", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};
    std::vector<std::string> pieces;
    for (uint8_t a : edge) {
        pieces.push_back(std::string(1, (char)a));
        for (uint8_t b : edge) {
            pieces.push_back(std::string{(char)a, (char)b});
            for (uint8_t c : edge) pieces.push_back(std::string{(char)a, (char)b, (char)c});
        }
    }
    for (const std::string& fill : fillers) {
        std::string text;
        while (text.size() < 140) text += fill;
        for (size_t at = 0; at + 4 < 140; at += fill.size()) {
            bool near_seam = (at % 32 >= 26 || at % 32 <= 4) && at < 100;
            if (!near_seam) continue;
            for (const std::string& piece : pieces) {
                std::string t = text.substr(0, at) + piece + text.substr(at);
                for (size_t cut : {t.size(), at + piece.size() + 40, (size_t)96, (size_t)65})
                    if (cut <= t.size() && !same(t.substr(0, cut), 0)) return 1;
            }
        }
    }
    std::string base(100, 'a');
    for (uint8_t a : edge)
        for (uint8_t b : edge)
            for (uint8_t c : edge)
                for (uint8_t d : edge)
                    for (size_t at : {29, 30, 31, 32})
                        if (!same(base.substr(0, at) + std::string{(char)a, (char)b, (char)c, (char)d} + base.substr(at), 0))
                            return 1;
    // 4. the same strings in long ASCII text (checked four blocks at a time, 128 bytes, up to
    // a block that is not ASCII or after one that left a character unfinished), at every offset
    // near the seams of the first 400 bytes
    std::string ascii(520, 'a');
    for (size_t at = 0; at < 400; ++at) {
        if (at % 32 < 29 && at % 32 > 1) continue;
        for (const std::string& piece : pieces)
            if (!same(ascii.substr(0, at) + piece + ascii.substr(at), 0)) return 1;
    }
    std::mt19937_64 rng(20211);
    for (int round = 0; round < 200000; ++round) {
        std::string t;
        size_t length = 60 + rng() % 300;
        bool noisy = rng() % 3 == 0;
        while (t.size() < length) {
            if (noisy && rng() % 40 == 0) {
                t += (char)(rng() % 256);
                continue;
            }
            t += fillers[rng() % 4];
        }
        if (!same(t, 0) || !same(t, rng() % t.size())) return 1;
    }
    std::printf("%ld checks\n", checks);
    return 0;
}
