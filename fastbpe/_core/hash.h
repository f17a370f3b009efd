// Hashing for every table of the core: one 64-bit mixer, one byte-string hash, the slot of an
// integer key, and the linear probe. None of them decides a result: tables only use them to
// find slots.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace fbpt {

// The 64-bit mixer (MurmurHash3's finaliser): every output bit depends on every input bit. The
// chunk table folds the two words of a short chunk into one slot index with it.
static inline uint64_t mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

// p[0:n] (n <= 8, and no byte past them readable) in the low bytes of a word, zero above,
// little-endian: read by loads that end within p[0:n], overlapping where n is no power of two
// (the bytes they share are the same). A copy of n bytes into the word went through memory,
// byte stores that the word's load then waited for: 10% of the tiled loop over English lines,
// each line's last chunks coming here. (hash_bytes' tail, copied, was a loop of byte stores.)
//   load_upto8("abcde", 5): "abcd" | "bcde" << 8 == "abcde"
static inline uint64_t load_upto8(const uint8_t* p, size_t n) {
    if (n >= 4) {
        uint32_t lo, hi;
        std::memcpy(&lo, p, 4);
        std::memcpy(&hi, p + n - 4, 4);
        return (uint64_t)lo | ((uint64_t)hi << (8 * (n - 4)));
    }
    if (n == 0) return 0;
    return (uint64_t)p[0] | ((uint64_t)p[n / 2] << (8 * (n / 2))) | ((uint64_t)p[n - 1] << (8 * (n - 1)));
}

// The byte-string hash: of the bytes p[0:n], one multiply-xorshift round per 8-byte word and
// one for the zero-padded tail. The length enters the seed, so zero padding cannot collide two
// lengths. Chunks are short (most under 8 bytes) and the encoder hashes every chunk, so this is
// two multiplies per chunk; finishing with mix64 instead measured ~3% slower encoding.
static inline uint64_t hash_bytes(const uint8_t* p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)n * 0xFF51AFD7ED558CCDULL);
    while (n >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    h = (h ^ load_upto8(p, n)) * 0x94D049BB133111EBULL;
    return h ^ (h >> 29);
}

// What keeps the first `len` bytes of two little-endian 8-byte loads, by len <= 16 (the chunk
// table's short keys, the encoder's short-chunk cache and short tokens): the masks of the two
// words and the length in the top byte, where the keys carry it. Each an array indexed by the
// length, so that each is one load with the length as a scaled index, folded into the and or
// the or (an array of 16-byte {m0, m1} entries needs the index shifted and added first, and the
// length its own shift: 3.7% more instructions counting 20 MB of English).
struct KeyMasks {
    uint64_t m0[17], m1[17], top[17];
};
static constexpr KeyMasks key_masks() {
    KeyMasks t{};
    for (uint32_t len = 0; len <= 16; ++len) {
        t.m0[len] = len >= 8 ? ~0ULL : (1ULL << (8 * len)) - 1;
        t.m1[len] = len >= 16 ? ~0ULL : len <= 8 ? 0 : (1ULL << (8 * (len - 8))) - 1;
        t.top[len] = (uint64_t)len << 56;
    }
    return t;
}
static constexpr KeyMasks KEY_MASKS = key_masks();

// Slot of an integer key in a table of 2^(64 - shift) slots (Fibonacci hashing: the top bits
// of key * 2^64/phi depend on every bit of the key). The pair tables use it instead of mix64:
// their keys are two token ids, already spread, and the lookup is the innermost step of
// learning and encoding, where one multiply is what it costs.
static inline size_t fib_slot(uint64_t key, int shift) {
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> shift);
}

// Linear probing shared by the open-addressing tables: from slot i, the first slot for which
// stop(slot) holds (the key's slot, or the empty one where it would go). Capacity is a power
// of two (mask = capacity - 1) and the table is never full, so the loop ends.
template <class Slot, class Stop>
static inline size_t probe(const Slot* slots, size_t mask, size_t i, Stop stop) {
    while (!stop(slots[i])) i = (i + 1) & mask;
    return i;
}

}  // namespace fbpt
