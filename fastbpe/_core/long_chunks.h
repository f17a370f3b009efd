// The learner's store for long chunks (learn.pyx): about one byte and one bit per symbol
// instead of a 16-byte node, so that one chunk as long as the input fits in a few times its size.
//
// Every long chunk's base symbols are laid out in one position space, each chunk starting on a
// block boundary (a block is 2**block_bits positions, a multiple of 64, so a block belongs to
// one chunk and a chunk's bits start on a fresh 64-bit word). A bitset marks the position where
// each live token starts; the next and previous tokens are the next and previous set bits. A
// token of length L (in base symbols) keeps its id in the first min(L, 4) bytes at its start,
// little-endian; an id too large for L < 4 bytes (a base id >= 255, a 2-symbol token's id >=
// 0xFFFF, ...) stores the all-ones marker there and lives in a side map keyed by position.
#pragma once
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace fbpt {

class LongChunks {
  public:
    struct Chunk {
        int64_t begin, end;  // its positions [begin, end)
        int64_t count;       // the chunk's weight (its count in the table)
        int64_t key_base;    // the tie key of position p is key_base + p (learn.pyx)
    };

    // `page_bits`: the chunk of a position is looked up per page of 2**page_bits positions
    // (any value is exact; at most the length of the shortest chunk, a lookup is one step).
    explicit LongChunks(int block_bits = 12, int page_bits = 12) : block_bits_(block_bits), page_bits_(page_bits) {}

    int block_bits() const { return block_bits_; }
    int64_t block_begin(int64_t block) const { return block << block_bits_; }
    int64_t block_of(int64_t p) const { return p >> block_bits_; }
    // The chunk holding the block: the page's first chunk, or one after it that starts at or
    // before the block (chunks lie in order, each from where the one before ends).
    const Chunk& chunk_of_block(int64_t block) const {
        int64_t p = block << block_bits_;
        size_t i = (size_t)page_chunk_[(size_t)(p >> page_bits_)];
        while (i + 1 < chunks_.size() && chunks_[i + 1].begin <= p) ++i;
        return chunks_[i];
    }
    size_t chunks() const { return chunks_.size(); }
    int64_t blocks() const { return (int64_t)bytes_.size() >> block_bits_; }
    const Chunk& chunk(size_t i) const { return chunks_[i]; }

    // Append a chunk of n base ids; `key_base` as in Chunk.
    template <class Id>
    void add_chunk(const Id* ids, int64_t n, int64_t count, int64_t key_base) {
        int64_t begin = (int64_t)bytes_.size();
        int64_t padded = ((n + (1LL << block_bits_) - 1) >> block_bits_) << block_bits_;
        bytes_.resize(begin + padded, 0);
        bits_.resize((begin + padded) >> 6, 0);
        for (int64_t i = 0; i < n; ++i) {
            bits_[(begin + i) >> 6] |= 1ULL << ((begin + i) & 63);
            set(begin + i, 1, (int32_t)ids[i]);
        }
        size_t index = chunks_.size();
        chunks_.push_back(Chunk{begin, begin + n, count, key_base});
        // the pages that start in this chunk's positions (or its padding)
        int64_t page = 1LL << page_bits_;
        page_chunk_.resize((size_t)((begin + padded + page - 1) >> page_bits_), (int32_t)index);
    }

    // The first token start > p and < end, or end.
    int64_t next(int64_t p, int64_t end) const {
        int64_t i = p + 1;
        if (i >= end) return end;
        size_t w = (size_t)i >> 6;
        uint64_t word = bits_[w] & (~0ULL << (i & 63));
        while (!word) {
            ++w;
            if ((int64_t)(w << 6) >= end) return end;
            word = bits_[w];
        }
        int64_t r = (int64_t)(w << 6) + __builtin_ctzll(word);
        return r < end ? r : end;
    }

    // The last token start < p and >= begin, or -1.
    int64_t prev(int64_t p, int64_t begin) const {
        if (p <= begin) return -1;
        int64_t i = p - 1;
        size_t w = (size_t)i >> 6;
        uint64_t word = bits_[w] & (~0ULL >> (63 - (i & 63)));
        while (!word) {
            if ((int64_t)(w << 6) <= begin) return -1;
            --w;
            word = bits_[w];
        }
        int64_t r = (int64_t)(w << 6) + 63 - __builtin_clzll(word);
        return r >= begin ? r : -1;
    }

    // The id of the token starting at p, `len` symbols long.
    int32_t get(int64_t p, int64_t len) const {
        const uint8_t* at = &bytes_[p];
        uint32_t v;
        switch (len) {
            case 1:
                v = at[0];
                if (v == 0xFF) return escaped_id(p);
                return (int32_t)v;
            case 2:
                v = (uint32_t)at[0] | ((uint32_t)at[1] << 8);
                if (v == 0xFFFF) return escaped_id(p);
                return (int32_t)v;
            case 3:
                v = (uint32_t)at[0] | ((uint32_t)at[1] << 8) | ((uint32_t)at[2] << 16);
                if (v == 0xFFFFFF) return escaped_id(p);
                return (int32_t)v;
            default:
                std::memcpy(&v, at, 4);
                return (int32_t)v;
        }
    }

    // Write the id of the token starting at p, `len` symbols long (the bit at p is set).
    void set(int64_t p, int64_t len, int32_t id) {
        if (!escaped_.empty()) escaped_.erase(p);
        uint8_t* at = &bytes_[p];
        uint32_t v = (uint32_t)id;
        int width = len < 4 ? (int)len : 4;
        if (width < 4 && v >= (1U << (8 * width)) - 1) {
            escaped_[p] = id;
            v = (1U << (8 * width)) - 1;
        }
        for (int i = 0; i < width; ++i) at[i] = (uint8_t)(v >> (8 * i));
    }

    // Every p in [begin, stop) where tokens of one symbol with ids a and b start at p and
    // p + 1, appended to `found`; `end` is the chunk's end. A byte search (an id >= 255 is
    // searched as its marker byte, then checked in the side map): the surviving occurrences of
    // a base pair, found without walking every token.
    void find_base_pair(int64_t begin, int64_t stop, int64_t end, int32_t a, int32_t b,
                        std::vector<int32_t>& found) const {
        const uint8_t* base = bytes_.data();
        const uint8_t byte_a = a < 0xFF ? (uint8_t)a : 0xFF, byte_b = b < 0xFF ? (uint8_t)b : 0xFF;
        bool marked = byte_a == 0xFF || byte_b == 0xFF;
        int64_t p = begin;
        if (stop > end - 1) stop = end - 1;
        while (p < stop) {
            const void* hit = std::memchr(base + p, byte_a, (size_t)(stop - p));
            if (!hit) break;
            p = (const uint8_t*)hit - base;
            if (base[p + 1] == byte_b && starts(p) && starts(p + 1) && (p + 2 >= end || starts(p + 2)) &&
                (!marked || (get(p, 1) == a && get(p + 1, 1) == b)))
                found.push_back((int32_t)p);
            ++p;
        }
    }

    // A hint that position p's bit and bytes are about to be read and written.
    void prefetch(int64_t p) const {
        __builtin_prefetch(&bits_[(size_t)p >> 6], 1, 1);
        __builtin_prefetch(&bytes_[p], 1, 1);
    }

    bool starts(int64_t p) const { return (bits_[(size_t)p >> 6] >> (p & 63)) & 1; }

    // The token starting at q was merged into its left neighbour.
    void kill(int64_t q) {
        bits_[(size_t)q >> 6] &= ~(1ULL << (q & 63));
        if (!escaped_.empty()) escaped_.erase(q);
    }

    // Live tokens in [begin, end) (begin a multiple of 64).
    int64_t live(int64_t begin, int64_t end) const {
        int64_t total = 0;
        for (int64_t w = begin >> 6; (w << 6) < end; ++w) {
            uint64_t word = bits_[w];
            if ((w << 6) + 64 > end) word &= (1ULL << (end - (w << 6))) - 1;
            total += __builtin_popcountll(word);
        }
        return total;
    }

    size_t bytes() const {
        return bytes_.capacity() + bits_.capacity() * 8 + page_chunk_.capacity() * 4 +
               escaped_.size() * 32 + chunks_.capacity() * sizeof(Chunk);
    }

  private:
    int32_t escaped_id(int64_t p) const {
        auto it = escaped_.find(p);
        return it == escaped_.end() ? -1 : it->second;  // -1: never (every marker has an entry)
    }

    int block_bits_, page_bits_;
    std::vector<uint8_t> bytes_;
    std::vector<uint64_t> bits_;
    // The chunk holding each page's first position. One entry per block (64 positions) was
    // 3 MB on one 50 MB chunk, and its random reads a cache miss of their own.
    std::vector<int32_t> page_chunk_;
    std::vector<Chunk> chunks_;
    std::unordered_map<int64_t, int32_t> escaped_;
};

}  // namespace fbpt
