// The merges of a rank-only vocabulary (a tiktoken file), for encode.pyx's derive_merges;
// specified by derive_merges in fastbpe/reference/encode.py. And the candidates of a scored
// vocabulary's (a SentencePiece model's), two_piece_splits below.
//
// For every token of two or more bytes, run tiktoken's rule on its bytes with only tokens of
// lower rank to join (repeatedly join the adjacent parts whose concatenation has the lowest
// rank, leftmost among equals): when that ends in exactly two parts that are tokens, they are
// the token's merge. A token it cannot reach gets no merge; tiktoken still produces it through
// its whole-chunk lookup.
//
// Cost: the joinable pairs wait in a heap ordered by (rank, start), which is the order the rule
// takes them in, so a token of n bytes costs O(n log n) lookups; a lookup is skipped when its
// bytes are longer than every token of lower rank. (Rescanning every pair after every join cost
// O(n^2) lookups: a 1 MB token ran for over an hour.)
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bytes_map.h"

namespace fbpt {

// A pair of adjacent parts that a token of lower rank joins: content[start:end].
struct JoinablePair {
    int32_t rank;
    uint32_t start, end;
    // std::push_heap keeps the largest on top: "larger" here is the pair the rule takes later
    bool operator<(const JoinablePair& other) const {
        return rank != other.rank ? rank > other.rank : start > other.start;
    }
};

// tokens[i] is the bytes of id i ("" for an unused id). Appends (left, right, new) per merge,
// in rank order. Returns the id of a token that repeats an earlier one (whose merges would be
// ambiguous), with nothing appended, or -1.
static inline int64_t derive_merges(const std::vector<std::string>& tokens, std::vector<int32_t>& left,
                                    std::vector<int32_t>& right, std::vector<int32_t>& made) {
    std::unordered_map<std::string_view, int32_t> ids(tokens.size() * 2);
    for (size_t i = 0; i < tokens.size(); ++i)
        if (!tokens[i].empty() && !ids.emplace(std::string_view(tokens[i]), (int32_t)i).second) return (int64_t)i;
    // Parts of the token being derived: the part starting at byte j ends at part_end[j] and the
    // one before it starts at part_start_before[j]; part_end[j] == 0 marks a j inside a part.
    std::vector<uint32_t> part_end, part_start_before;
    std::vector<JoinablePair> heap;
    size_t longest_lower = 0;  // the longest token of rank below the current one
    for (size_t i = 0; i < tokens.size(); ++i) {
        const std::string_view content(tokens[i]);
        const size_t n = content.size();
        if (n >= 2 && n < UINT32_MAX) {  // (positions are 32-bit: a 4 GB token gets no merge)
            // the rank of content[start:end] when a token of lower rank, else -1
            auto rank_of = [&](uint32_t start, uint32_t end) -> int32_t {
                if (end - start > longest_lower) return -1;
                auto it = ids.find(content.substr(start, end - start));
                return it != ids.end() && it->second < (int32_t)i ? it->second : -1;
            };
            auto offer = [&](uint32_t start, uint32_t end) {
                int32_t r = rank_of(start, end);
                if (r < 0) return;
                heap.push_back({r, start, end});
                std::push_heap(heap.begin(), heap.end());
            };
            part_end.resize(n);
            part_start_before.resize(n + 1);
            heap.clear();
            for (uint32_t j = 0; j < n; ++j) {
                part_end[j] = j + 1;
                part_start_before[j + 1] = j;
            }
            for (uint32_t j = 0; j + 1 < n; ++j) offer(j, j + 2);
            size_t parts = n;
            while (!heap.empty() && parts > 2) {
                std::pop_heap(heap.begin(), heap.end());
                const JoinablePair pair = heap.back();
                heap.pop_back();
                // Still two parts? (Earlier joins may have moved either side.)
                const uint32_t middle = part_end[pair.start];
                if (middle == 0 || middle >= n || part_end[middle] != pair.end) continue;
                part_end[pair.start] = pair.end;
                part_end[middle] = 0;
                if (pair.end < n) part_start_before[pair.end] = pair.start;
                --parts;
                if (pair.start > 0) offer(part_start_before[pair.start], pair.end);
                if (pair.end < n) offer(pair.start, part_end[pair.end]);
            }
            if (parts == 2) {
                // (two parts, but a byte never joined is a part too, and it may be no token: a
                // vocabulary without some single bytes; then the token has no merge either)
                auto l = ids.find(content.substr(0, part_end[0])), r = ids.find(content.substr(part_end[0]));
                if (l != ids.end() && r != ids.end()) {
                    left.push_back(l->second);
                    right.push_back(r->second);
                    made.push_back((int32_t)i);
                }
            }
        }
        longest_lower = std::max(longest_lower, n);
    }
    return -1;
}

// Every way a piece is two pieces, for encode.pyx's two_piece_splits (specified by
// two_piece_splits in fastbpe/reference/encode.py): for each piece i of two characters or more
// with joinable[i], each cut at a character boundary of its UTF-8 whose two sides are pieces j
// and k with joinable set gives (i, j, k), pieces in id order and cuts left to right. (A
// SentencePiece BPE model merges the adjacent pair whose concatenation is the piece of highest
// score: these are its merges, to be ranked by score.) Returns -1, or the id of a joinable piece
// whose text an earlier joinable piece has.
//
// Cost: a cut is looked up only where both sides have lengths some joinable piece has; a side of
// at most SHORT_KEY_MAX bytes (nearly all) is its packed words in a ShortTokenTable, a longer
// one its bytes in a BytesMap; and the lookups of a batch of pieces have their slots prefetched
// before any is probed. (A node-based map of the texts, one lookup waiting for the next, took
// 16 ms of a 32k model's load; a BytesMap of them, 8.)
static inline int64_t two_piece_splits(const std::vector<std::string_view>& pieces,
                                       const std::vector<uint8_t>& joinable, std::vector<int32_t>& made,
                                       std::vector<int32_t>& left, std::vector<int32_t>& right) {
    ShortTokenTable short_ids;
    BytesMap long_ids;
    size_t longest = 0, short_count = 0;
    for (size_t i = 0; i < pieces.size(); ++i) {
        if (!joinable[i]) continue;
        longest = std::max(longest, pieces[i].size());
        short_count += !pieces[i].empty() && pieces[i].size() <= SHORT_KEY_MAX;
    }
    short_ids.reset(short_count);
    // a side's key: packed words and home slot (short), or hash (long; w1 == 0)
    struct Side {
        uint64_t w0, w1, at;
    };
    auto side = [&](const uint8_t* p, size_t n) {
        Side x{0, 0, 0};
        if (n >= 1 && n <= SHORT_KEY_MAX) {
            pack_short(p, n, n, &x.w0, &x.w1);
            x.at = short_ids.home(x.w0, x.w1);
        } else {
            x.at = bytes_map_hash(p, n);
        }
        return x;
    };
    auto id_of = [&](const uint8_t* p, size_t n, const Side& x) -> int32_t {
        if (x.w1 != 0) return short_ids.find((size_t)x.at, x.w0, x.w1);
        int64_t count = 0;
        const int32_t* found = long_ids.find(p, n, x.at, &count);
        return found ? *found : -1;
    };
    std::vector<uint8_t> is_length(longest + 1, 0);
    for (size_t i = 0; i < pieces.size(); ++i) {
        if (!joinable[i]) continue;
        const uint8_t* p = (const uint8_t*)pieces[i].data();
        const size_t n = pieces[i].size();
        const Side x = side(p, n);
        if (id_of(p, n, x) >= 0) return (int64_t)i;
        const int32_t id = (int32_t)i;
        if (x.w1 != 0)
            short_ids.insert(x.w0, x.w1, id);
        else
            long_ids.insert(p, n, x.at, &id, 1);
        is_length[n] = 1;
    }
    // f(i, t, n, k) for each cut k of each joinable piece i in [begin, end), its bytes t[0:n]: a
    // cut inside the piece, at a character's first byte, both sides of joinable lengths
    auto each_cut = [&](size_t begin, size_t end, auto f) {
        for (size_t i = begin; i < end; ++i) {
            if (!joinable[i]) continue;
            const uint8_t* t = (const uint8_t*)pieces[i].data();
            const size_t n = pieces[i].size();
            for (size_t k = 1; k < n; ++k)
                if (is_length[k] && is_length[n - k] && (t[k] & 0xC0) != 0x80) f(i, t, n, k);
        }
    };
    const size_t BATCH = 32;
    std::vector<Side> sides;
    for (size_t begin = 0; begin < pieces.size(); begin += BATCH) {
        const size_t end = std::min(pieces.size(), begin + BATCH);
        sides.clear();
        each_cut(begin, end, [&](size_t, const uint8_t* t, size_t n, size_t k) {
            for (const Side& x : {side(t, k), side(t + k, n - k)}) {
                sides.push_back(x);
                if (x.w1 != 0)
                    short_ids.prefetch((size_t)x.at);
                else
                    long_ids.prefetch_slot(x.at);
            }
        });
        const Side* x = sides.data();  // (the cuts again, in the same order: two sides each)
        each_cut(begin, end, [&](size_t i, const uint8_t* t, size_t n, size_t k) {
            const Side* cut = x;
            x += 2;
            const int32_t j = id_of(t, k, cut[0]);
            if (j < 0) return;
            const int32_t r = id_of(t + k, n - k, cut[1]);
            if (r < 0) return;
            made.push_back((int32_t)i);
            left.push_back(j);
            right.push_back(r);
        });
    }
    return -1;
}

// The first of texts that an earlier one repeats: its index, and the earlier one's in *first;
// or -1 (specified by first_repeat in fastbpe/reference/encode.py). A SentencePiece model's
// check that no piece is there twice: a Python set of a 32k model's texts took 1.5-2 ms of its
// load, hashing each bytes object with SipHash. Here each text is hashed once into a table of
// (hash, index) in plain vectors, the texts compared only where hashes match. (A BytesMap,
// which copies its keys into fresh zeroed pages, faulted them in on every load: 2.5 ms.)
static inline int64_t first_repeat(const std::vector<std::string_view>& texts, int64_t* first) {
    int shift = 64 - 4;
    size_t slots = 16;
    while (slots < 2 * texts.size() + 2) slots *= 2, --shift;  // (at most half full)
    std::vector<uint64_t> hashes(slots, 0);  // 0: an empty slot (bytes_map_hash is never 0)
    std::vector<int32_t> index(slots, -1);
    int64_t empty = -1;  // (the first empty text's index: the table holds the others)
    for (size_t i = 0; i < texts.size(); ++i) {
        const std::string_view t = texts[i];
        if (t.empty()) {
            if (empty >= 0) {
                *first = empty;
                return (int64_t)i;
            }
            empty = (int64_t)i;
            continue;
        }
        const uint64_t h = bytes_map_hash((const uint8_t*)t.data(), t.size());
        size_t j = (size_t)(h >> shift);  // (the top bits: the low bit is always set)
        for (; hashes[j] != 0; j = (j + 1) & (slots - 1)) {
            if (hashes[j] == h && texts[(size_t)index[j]] == t) {
                *first = index[j];
                return (int64_t)i;
            }
        }
        hashes[j] = h;
        index[j] = (int32_t)i;
    }
    return -1;
}

}  // namespace fbpt
