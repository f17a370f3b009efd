// The scanner's block classifiers against classify_bytes, one byte at a time: classify_block
// (SSE2) and, where the CPU has them, classify_block_avx2 and classify_block_avx512 give the
// same masks of every class for each pattern's rules, on blocks of every byte value at every
// position and on random blocks drawn from ASCII's classes' edges; the AVX2 and AVX-512 ones
// also tell a byte >= 0x80.
// Built and run by test_scan_blocks.py; prints what it checked and exits 1 on the first
// difference.
#include <cstdio>
#include <cstring>
#include <random>

#include "scan.h"

using fbpt::ByteClasses;

static long checks = 0;

static bool same_masks(const char* what, int pattern, const uint8_t* q, const ByteClasses& a, const ByteClasses& b,
                       bool with_nl, bool with_o200k) {
    const uint64_t x[] = {a.L, a.N, a.O, a.ws, a.sp, a.ap, with_nl ? a.nl : 0, with_o200k ? a.up : 0,
                          with_o200k ? a.sl : 0};
    const uint64_t y[] = {b.L, b.N, b.O, b.ws, b.sp, b.ap, with_nl ? b.nl : 0, with_o200k ? b.up : 0,
                          with_o200k ? b.sl : 0};
    ++checks;
    if (std::memcmp(x, y, sizeof x) == 0) return true;
    std::printf("%s differs from classify_bytes, pattern %d; block:", what, pattern);
    for (int i = 0; i < 64; ++i) std::printf(" %02x", q[i]);
    std::printf("\n");
    return false;
}

// A vector classifier's answer: whether the block has a byte >= 0x80 and, where it has none, its masks.
static bool same_answer(const char* what, int pattern, const uint8_t* q, const ByteClasses& got, bool got_high,
                        const ByteClasses& want, bool high, bool with_nl, bool with_o200k) {
    ++checks;
    if (got_high != high) {
        std::printf("%s says high %d, want %d\n", what, (int)got_high, (int)high);
        return false;
    }
    return high || same_masks(what, pattern, q, got, want, with_nl, with_o200k);
}

static bool avx2 = false;

template <int PATTERN>
static bool check(const uint8_t* q, bool avx512) {
    ByteClasses want{};
    fbpt::classify_bytes(q, 64, 0, want);
    bool high = false;
    for (int i = 0; i < 64; ++i) high |= q[i] >= 0x80;
    const bool nl = PATTERN != fbpt::PAT_GPT2, o200k = PATTERN == fbpt::PAT_O200K;
    // (the vector classifiers are only asked about blocks without a byte >= 0x80)
    if (!high && !same_masks("classify_block", PATTERN, q, fbpt::classify_block<PATTERN>(q), want, nl, o200k))
        return false;
#ifdef FBPT_X86_TARGETS
    if (avx2) {
        bool got_high = !high;
        const ByteClasses got = fbpt::classify_block_avx2<PATTERN>(q, &got_high);
        if (!same_answer("classify_block_avx2", PATTERN, q, got, got_high, want, high, nl, o200k)) return false;
    }
    if (avx512) {
        bool got_high = !high;
        const ByteClasses got = fbpt::classify_block_avx512<PATTERN>(q, &got_high);
        if (!same_answer("classify_block_avx512", PATTERN, q, got, got_high, want, high, nl, o200k)) return false;
    }
#endif
    return true;
}

static bool check_all(const uint8_t* q, bool avx512) {
    return check<fbpt::PAT_GPT2>(q, avx512) && check<fbpt::PAT_CL100K>(q, avx512) &&
           check<fbpt::PAT_LLAMA3>(q, avx512) && check<fbpt::PAT_QWEN>(q, avx512) && check<fbpt::PAT_O200K>(q, avx512) &&
           check<fbpt::PAT_TEKKEN>(q, avx512);
}

int main() {
#ifdef FBPT_X86_TARGETS
    const bool avx512 = fbpt::cpu_has_avx512bw();
    avx2 = fbpt::cpu_has_avx2_bmi2();
#else
    const bool avx512 = false;
#endif
    std::printf("avx2 %d avx512bw %d\n", (int)avx2, (int)avx512);
    uint8_t q[64];
    // every byte value at every position of a block of letters, and of a block of spaces
    for (uint8_t fill : {(uint8_t)'a', (uint8_t)' '})
        for (int at = 0; at < 64; ++at)
            for (int v = 0; v < 256; ++v) {
                std::memset(q, fill, sizeof q);
                q[at] = (uint8_t)v;
                if (!check_all(q, avx512)) return 1;
            }
    // random blocks of the classes' edge bytes (and, in one block in eight, a byte >= 0x80)
    const uint8_t edge[] = {0x00, '\t', '\n', '\v', '\f', '\r', 0x08, 0x0E, ' ', '!', '\'', '/', '0', '9', ':',
                            '@',  'A',  'Z',  '[',  '`',  'a',  'z',  '{', 0x7F, 'm', 'M', '5', 0x1F};
    std::mt19937_64 rng(20261203);
    for (int round = 0; round < 200000; ++round) {
        for (int i = 0; i < 64; ++i) q[i] = edge[rng() % sizeof edge];
        if (round % 8 == 0) q[rng() % 64] = (uint8_t)(0x80 | rng());
        if (!check_all(q, avx512)) return 1;
    }
    std::printf("checked %ld comparisons\n", checks);
    return 0;
}
