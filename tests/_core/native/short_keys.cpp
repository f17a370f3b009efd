// pack_short (bytes_map.h: the short-cache key of a chunk of 1..15 bytes) against its layout,
// written here byte by byte: the chunk's bytes in order, zero up to the 15th, its length in the
// 16th; the same key whatever the bytes readable past the chunk (`room`), for
//  1. every length, every room from the chunk's length to 20, each byte in turn set to every
//     value (the others random);
//  2. random chunks of every length and room.
// Each chunk ends its heap block of `room` bytes, so that AddressSanitizer sees a read past
// what pack_short was told it may read. Also load_upto8 (0..8 bytes, nothing readable past
// them) against a copy. Built and run by test_encode.py; prints what it checked and exits 1 on
// the first difference.
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bytes_map.h"

static long checks = 0;

// the layout's key of p[0:n] as 16 bytes in memory order (both words as stored)
static void layout_key(const uint8_t* p, size_t n, uint8_t out[16]) {
    std::memset(out, 0, 16);
    std::memcpy(out, p, n);
    out[15] = (uint8_t)n;  // (either byte order: the second word's last byte in memory)
}

static bool same(const std::vector<uint8_t>& chunk, size_t room) {
    ++checks;
    const size_t n = chunk.size();
    uint8_t* block = new uint8_t[room];  // the chunk at the start, room - n readable bytes after it
    std::memcpy(block, chunk.data(), n);
    for (size_t i = n; i < room; ++i) block[i] = (uint8_t)(0xA5 ^ i);
    uint64_t w0, w1;
    fbpt::pack_short(block, n, room, &w0, &w1);
    delete[] block;
    uint8_t got[16], want[16];
    std::memcpy(got, &w0, 8);
    std::memcpy(got + 8, &w1, 8);
    layout_key(chunk.data(), n, want);
    if (std::memcmp(got, want, 16) == 0) return true;
    std::printf("differ: %zu bytes, room %zu:", n, room);
    for (uint8_t c : chunk) std::printf(" %02x", c);
    std::printf("\n");
    return false;
}

int main() {
    std::mt19937_64 rng(7);
    for (size_t n = 0; n <= 8; ++n) {  // load_upto8: exactly n bytes readable
        for (int t = 0; t < 2000; ++t) {
            uint8_t* block = new uint8_t[n == 0 ? 1 : n];
            for (size_t i = 0; i < n; ++i) block[i] = (uint8_t)rng();
            uint64_t want = 0;
            std::memcpy(&want, block, n);
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
            const uint64_t got = fbpt::load_upto8(block, n);
            ++checks;
            if (got != want) {
                std::printf("load_upto8 differs at %zu bytes: %016llx, not %016llx\n", n, (unsigned long long)got,
                            (unsigned long long)want);
                return 1;
            }
#endif
            delete[] block;
        }
    }
    for (size_t n = 1; n <= 15; ++n) {
        for (size_t room = n; room <= 20; ++room) {
            std::vector<uint8_t> chunk(n);
            for (size_t at = 0; at < n; ++at) {
                for (int v = 0; v < 256; ++v) {
                    for (auto& c : chunk) c = (uint8_t)rng();
                    chunk[at] = (uint8_t)v;
                    if (!same(chunk, room)) return 1;
                }
            }
            for (int t = 0; t < 2000; ++t) {
                for (auto& c : chunk) c = (uint8_t)rng();
                if (!same(chunk, room)) return 1;
            }
        }
    }
    std::printf("checked %ld keys\n", checks);
    return 0;
}
