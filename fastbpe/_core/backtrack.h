// Long pieces in linear time: BPE by backtracking over the vocabulary, for bpe.h.
//
// The idea is the one of the `bpe` crate of GitHub's rust-gems (behind bpe-openai and rs-bpe;
// its README explains it): when every merge has a higher rank than the merges that made its two
// parts ("monotone", checked below), a token sequence is the BPE encoding of its bytes iff every
// token is the encoding of its own bytes ("reachable") and every adjacent pair is "compatible":
// BPE of the two tokens' bytes gives exactly that pair again. Compatibility is decided from the
// merge tree alone (compatible()). So a piece is encoded left to right by trying the longest
// vocabulary prefix first, then its next shorter prefix token, ..., and backtracking over the
// previous token when none is compatible; a position from which no encoding continues is marked
// dead in a bit field and never tried again. The encoding is unique, so the first complete
// sequence found is it. Memory: the ids and one bit per byte; time: about linear (each position
// is tried with at most the tokens that start there).
//
// Why the merge tree decides a pair (a, b) (the rule is bpe.h's: lowest rank first, leftmost
// among equal ranks; monotone, so the ranks merged only go up): run BPE on a's and b's bytes
// together. Until something merges across the boundary, each side merges as it would alone, so
// the symbols meeting at the boundary run through a's right edge and b's left edge of their
// merge trees, backwards: from (a, b), undo the later of the two (the higher rank; on a tie the
// right one, which came second), and so on down to two bytes. The pair (x, y) at the boundary
// lives from the later of their merges until the merge just undone, of rank L; it is merged
// across, breaking the pair, iff its own rank is below L, or equal to L when the undone merge
// was on the right (the leftmost of equal ranks goes first). (a, b) itself must not merge at all.
//
// Tables (built once the encoder's long chunks reach a budget, not at load, see
// BpeEncoder::backtracker_for): every
// token's merge tree (left, right, rank of its last merge), from BPE of its own bytes; a trie
// over the reachable tokens' bytes for the longest prefix; each token's next shorter prefix
// token. A model found not monotone gets neither the trie nor the pair table.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "pair_table.h"

namespace fbpt {

// The byte trie of the reachable tokens. The first two levels are plain arrays: the node of a
// one-byte prefix b is 1 + b, of a two-byte prefix 257 + (b0 << 8 | b1), each with its token
// (-1: none, ABSENT: no token starts so). Deeper edges sit in one open-addressing table whose
// slot holds the edge's key ((node << 8 | byte) + 1; 0 empty), the child and the child's token,
// so each byte of a walk costs one probe. Most tokens are short: most walks stay in the arrays.
class TokenTrie {
  public:
    // Nodes are numbered below 2^24, so that a key fits 32 bits.
    static constexpr uint32_t MAX_NODES = 1u << 24;
    static constexpr int32_t ABSENT = -2;

    void reset() {
        slots_.assign(1024, Slot{0, 0, -1});
        mask_ = slots_.size() - 1;
        used_ = 0;
        next_node_ = FIRST_DEEP;
        for (int b = 0; b < 256; ++b) level1_[b] = ABSENT;
        level2_.assign(1 << 16, ABSENT);
    }

    // Room for `deep` more nodes below the two array levels without growing the table.
    void reserve(size_t deep) {
        size_t cap = slots_.size();
        while (4 * (used_ + deep) > 3 * cap) cap *= 2;
        if (cap != slots_.size()) rehash(cap);
    }

    // The last deep walk of add(): the bytes of the token it added (n >= 3 bytes, kept alive by
    // the caller) and, for each depth i >= 2, the node reached after byte i and the longest token
    // among the prefixes of p[0:i + 1]. A walk for bytes that start like the last one resumes
    // where the two part, so a vocabulary added in prefix order costs one probe per new node
    // rather than one per byte of every token.
    struct Walk {
        const uint8_t* bytes = nullptr;
        size_t n = 0;
        std::vector<uint32_t> node;
        std::vector<int32_t> best;
    };

    // Add token `id` with bytes p[0:n] (n >= 1); `*prefix` receives the longest token already
    // in the trie that is a proper prefix of it, or -1 (so, when tokens are added shortest
    // first, its longest proper prefix token). `walk`: the previous add's (empty at first);
    // resuming it assumes every token comes after its proper prefixes (build's order).
    // False when the trie would outgrow MAX_NODES.
    bool add(const uint8_t* p, size_t n, int32_t id, int32_t* prefix, Walk& walk) {
        *prefix = -1;
        int32_t& t1 = level1_[p[0]];
        if (t1 == ABSENT) t1 = -1;
        if (n == 1) {
            t1 = id;
            return true;
        }
        *prefix = t1;
        uint32_t two = ((uint32_t)p[0] << 8) | p[1];
        int32_t& t2 = level2_[two];
        if (t2 == ABSENT) t2 = -1;
        if (n == 2) {
            t2 = id;
            return true;
        }
        if (t2 >= 0) *prefix = t2;
        // resume at the first byte where p leaves the last walk (depths before it are shared;
        // the last byte is always walked, to mark the token)
        size_t same = 0, limit = std::min(n - 1, walk.n);
        while (same < limit && p[same] == walk.bytes[same]) ++same;
        size_t i = 2;
        uint32_t node = 257 + two;
        if (same > 2) {
            i = same;
            node = walk.node[i - 1];
            *prefix = walk.best[i - 1];
        }
        if (walk.node.size() < n) {
            walk.node.resize(n);
            walk.best.resize(n);
        }
        for (; i < n; ++i) {
            Slot* s = find(node, p[i]);
            if (s == nullptr) {
                if (next_node_ >= MAX_NODES) return false;
                s = insert(node, p[i], next_node_++);
            } else if (i + 1 < n && s->token >= 0) {
                *prefix = s->token;
            }
            if (i + 1 == n) s->token = id;
            node = s->child;
            walk.node[i] = node;
            walk.best[i] = i + 1 == n ? id : *prefix;
        }
        walk.bytes = p;
        walk.n = n;
        return true;
    }

    // The longest token that is a prefix of p[0:n], or -1.
    inline int32_t longest(const uint8_t* p, size_t n) const {
        if (n == 0) return -1;
        int32_t best = level1_[p[0]];
        if (best == ABSENT || n == 1) return best < 0 ? -1 : best;
        uint32_t two = ((uint32_t)p[0] << 8) | p[1];
        int32_t t = level2_[two];
        if (t == ABSENT) return best;
        if (t >= 0) best = t;
        uint32_t node = 257 + two;
        for (size_t i = 2; i < n; ++i) {
            const Slot* s = find(node, p[i]);
            if (s == nullptr) break;
            if (s->token >= 0) best = s->token;
            node = s->child;
        }
        return best;
    }

    size_t nodes() const { return 257 + 65536 + (next_node_ - FIRST_DEEP); }
    size_t memory() const { return slots_.capacity() * sizeof(Slot) + level2_.capacity() * 4 + sizeof(level1_); }

  private:
    struct Slot {
        uint32_t key, child;
        int32_t token;
    };
    static constexpr uint32_t FIRST_DEEP = 257 + 65536;
    std::vector<Slot> slots_;
    std::vector<int32_t> level2_;
    int32_t level1_[256];
    size_t mask_ = 0, used_ = 0;
    uint32_t next_node_ = FIRST_DEEP;

    static inline size_t slot_of(uint32_t key) { return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ULL) >> 32); }

    inline const Slot* find(uint32_t node, uint8_t b) const {
        uint32_t key = ((node << 8) | b) + 1;
        for (size_t i = slot_of(key) & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.key == key) return &s;
            if (s.key == 0) return nullptr;
        }
    }
    Slot* find(uint32_t node, uint8_t b) { return const_cast<Slot*>(static_cast<const TokenTrie*>(this)->find(node, b)); }
    Slot* insert(uint32_t node, uint8_t b, uint32_t child) {
        if (4 * (used_ + 1) > 3 * slots_.size()) rehash(2 * slots_.size());  // at most 3/4 full
        ++used_;
        return place(Slot{((node << 8) | b) + 1, child, -1});
    }
    void rehash(size_t capacity) {
        std::vector<Slot> old(capacity, Slot{0, 0, -1});
        old.swap(slots_);
        mask_ = slots_.size() - 1;
        for (const Slot& s : old)
            if (s.key != 0) place(s);
    }
    Slot* place(const Slot& slot) {
        size_t i = slot_of(slot.key) & mask_;
        while (slots_[i].key != 0) i = (i + 1) & mask_;
        slots_[i] = slot;
        return &slots_[i];
    }
};

// The backtracking encoder's tables for one BpeEncoder (read-only once built). `pairs` is the
// encoder's pair table (pair_key -> (rank << 32) | new id), which must outlive this.
class Backtracker {
  public:
    // Why a model cannot use it (usable() false): its rule replays merges with a floor and
    // repeats a pair, or a merge is not monotone.
    // reachable tokens whose last merge does not rank above the last merges of its parts
    int64_t non_monotone = 0;
    bool repeats = false;      // MERGE_REPLAY with a repeated pair
    bool too_big = false;      // the trie would have more than TokenTrie::MAX_NODES nodes
    double build_seconds = 0;

    bool usable() const { return !repeats && !too_big && non_monotone == 0; }
    size_t memory() const {
        return trie_.memory() + info_.capacity() * sizeof(TokenInfo) + live_.capacity() * 16;
    }
    size_t trie_nodes() const { return trie_.nodes(); }

    // tokens: id i's bytes are blob[ends[i - 1]:ends[i]] (ends[-1] = 0; empty: unused id).
    // byte_id: the encoder's id of each byte.
    void build(const PairTable<uint64_t>* pairs, const std::string& blob, const std::vector<uint32_t>& ends,
               const int32_t* byte_id, bool replay_repeats) {
        pairs_ = pairs;
        repeats = replay_repeats;
        size_t count = ends.size();
        const uint8_t* base = (const uint8_t*)blob.data();
        auto start = [&](size_t i) { return i ? ends[i - 1] : 0u; };
        info_.assign(count, TokenInfo{-1, -1, -1, -1, 0});
        // 0. the tokens in the order of their first eight bytes (then length): tokens that
        // share a prefix come together, so the pairs their BPE runs look up and the trie nodes
        // they walk were mostly just touched (in cache), and a token comes after each of its
        // proper prefixes, which step 3 relies on
        struct Order {
            uint64_t head;  // the first eight bytes, big-endian, zero-padded
            uint32_t start, length, token;  // (its bytes: base[start:start + length])
        };
        std::vector<Order> order(count);
        for (size_t t = 0; t < count; ++t) {
            const uint8_t* p = base + start(t);
            uint32_t n = ends[t] - start(t);
            uint64_t head = 0;
            for (uint32_t i = 0; i < 8; ++i) head = (head << 8) | (i < n ? p[i] : 0);
            order[t] = Order{head, start(t), n, (uint32_t)t};
            info_[t].length = n;
        }
        // (by the first two bytes in one counting pass, then each group by comparisons: a third
        // of the time of comparisons alone)
        std::vector<uint32_t> group(65537, 0);
        for (const Order& o : order) ++group[(o.head >> 48) + 1];
        for (size_t g = 1; g <= 65536; ++g) group[g] += group[g - 1];
        std::vector<Order> sorted(count);
        for (const Order& o : order) sorted[group[o.head >> 48]++] = o;
        order.swap(sorted);
        for (size_t g = 0, from = 0; g < 65536; from = group[g++])  // (group[g]: the end of group g now)
            std::sort(order.begin() + from, order.begin() + group[g], [](const Order& x, const Order& y) {
                return x.head != y.head ? x.head < y.head : x.length < y.length;
            });
        // 1. every token's merge tree from BPE of its own bytes (reachable iff that gives it back)
        std::vector<int32_t> sym;
        std::vector<uint64_t> val, memo(2 * PAIR_MEMO_SLOTS, ~0ULL);
        std::vector<uint8_t> reachable(count, 0);
        size_t deep = 0;  // trie nodes below the two array levels, at most
        for (size_t k = 0; k < order.size(); ++k) {
            if (k + AHEAD < order.size()) {  // (the tokens' bytes and infos lie in id order)
                __builtin_prefetch(base + order[k + AHEAD].start);
                __builtin_prefetch(&info_[order[k + AHEAD].token]);
            }
            const Order& o = order[k];
            const uint8_t* p = base + o.start;
            size_t n = o.length;
            if (n == 1) reachable[o.token] = byte_id[p[0]] == (int32_t)o.token;
            if (n < 2) continue;
            int32_t left = -1, right = -1, rank = -1;
            if (last_merge(p, n, byte_id, sym, val, memo, &left, &right, &rank) == (int32_t)o.token) {
                reachable[o.token] = 1;
                info_[o.token].left = left;
                info_[o.token].right = right;
                info_[o.token].rank = rank;
                deep += n - 2;
            }
        }
        // 2. monotone: every merge that ever fires has a rank above the merges that made its
        // parts. The merges that fire are the last merges of reachable tokens: the symbols of
        // any BPE run were each made as BPE of their own bytes alone would make them (the
        // merges inside a symbol's bytes were each the lowest pair there when taken), so a pair
        // (a, b) that joins into c fires only as c's own last merge. The other pairs of the
        // table (tiktoken's holds every split of every token) never fire; live_rank skips them.
        size_t live = 0;
        for (size_t t = 0; t < count; ++t) {
            const TokenInfo& x = info_[t];
            if (x.left < 0) continue;
            if (x.rank <= info_[x.left].rank || x.rank <= info_[x.right].rank) ++non_monotone;
            ++live;
        }
        if (!usable()) {  // the model is merged by bpe.h's loops: no trie, no pair table
            std::vector<TokenInfo>().swap(info_);
            return;
        }
        // 3. the trie of the reachable tokens in that order, so that adding a token finds its
        // next shorter prefix token on the way. Tokens share prefixes: a little under half the bound
        // `deep` are distinct nodes in the vocabularies seen, so the table starts at that size.
        trie_.reset();
        trie_.reserve(std::min(deep / 2, (size_t)TokenTrie::MAX_NODES));
        TokenTrie::Walk walk;
        for (size_t k = 0; k < order.size(); ++k) {
            const Order& o = order[k];
            if (k + AHEAD < order.size()) __builtin_prefetch(base + order[k + AHEAD].start);
            if (!reachable[o.token]) continue;
            if (!trie_.add(base + o.start, o.length, (int32_t)o.token, &info_[o.token].prefix, walk)) {
                too_big = true;
                return;
            }
        }
        // 4. the pairs that fire, in a table of their own: a fraction of tiktoken's (which holds
        // every split), so the lookups of compatible() mostly hit the CPU caches
        size_t cap = 16;
        while (cap < 2 * live + 16) cap *= 2;
        live_.reset(cap);
        for (size_t t = 0; t < count; ++t) {
            const TokenInfo& x = info_[t];
            if (x.left < 0) continue;
            uint64_t key = pair_key(x.left, x.right);
            size_t i = live_.index(key);
            if (!live_.occupied(i)) live_.insert_at(i, key, (int64_t)x.rank);
        }
    }

    // Ids of p[0:n] into out (room for cap ids) by backtracking; `dead` is scratch space. The
    // caller checked that every byte has an id. Returns the id count, or -1 when the search
    // finds nothing (impossible for a usable model; the caller then takes its other path).
    // Id: int32_t, or uint16_t when every id is below 2^16 (the caller's promise): the ids are
    // the search's stack, so a huge piece's ids are held once, at the width they are kept.
    template <class Id>
    int64_t encode(const uint8_t* p, int64_t n, std::vector<uint64_t>& dead_bits, std::vector<uint64_t>& memo,
                   Id* out, int64_t cap) const {
        // A huge piece's bits come from calloc, whose fresh pages are zero without being
        // written: only the pages where a dead end is marked (few: backtracking is rare) are
        // ever taken, instead of one bit per byte of the piece.
        size_t words = (size_t)(n >> 6) + 1;
        std::unique_ptr<uint64_t, void (*)(void*)> huge(nullptr, std::free);
        uint64_t* dead;
        if (words > HUGE_DEAD_WORDS) {
            huge.reset((uint64_t*)std::calloc(words, sizeof(uint64_t)));
            if (!huge) throw std::bad_alloc();
            dead = huge.get();
        } else {
            dead_bits.assign(words, 0);
            dead = dead_bits.data();
        }
        if (memo.size() != MEMO_SLOTS) memo.assign(MEMO_SLOTS, ~0ULL);
        int64_t count = 0, pos = 0;
        int32_t token = trie_.longest(p, (size_t)n);
        while (pos < n) {
            int32_t last = count ? (int32_t)out[count - 1] : -1;
            for (;;) {
                if (token < 0) {  // nothing fits after `last`: pos is a dead end
                    if (count == 0) return -1;
                    dead[(size_t)pos >> 6] |= 1ULL << (pos & 63);
                    token = (int32_t)out[--count];
                    pos -= info_[token].length;
                    break;  // `token` is retried and fails on its now dead end
                }
                int64_t end = pos + info_[token].length;
                if (!((dead[(size_t)end >> 6] >> (end & 63)) & 1) && (last < 0 || compatible_memo(last, token, memo))) {
                    if (count >= cap) return -1;
                    out[count++] = (Id)token;
                    pos = end;
                    token = trie_.longest(p + pos, (size_t)(n - pos));
                    break;
                }
                token = info_[token].prefix;
            }
        }
        return count;
    }

    // compatible() through the caller's memo: a direct-mapped table of recent answers, slot
    // pair_key(a, b) with bit 31 the answer (ids are below 2^31), ~0 empty. Text repeats its
    // pairs (most of a piece's tokens are frequent ones), and a walk costs several lookups.
    static constexpr size_t MEMO_SLOTS = 1 << 14;
    static constexpr size_t HUGE_DEAD_WORDS = 1 << 15;  // (256 KiB of bits: a 2 MiB piece)
    inline bool compatible_memo(int32_t a, int32_t b, std::vector<uint64_t>& memo) const {
        uint64_t key = pair_key(a, b);
        uint64_t& slot = memo[(size_t)((key * 0x9E3779B97F4A7C15ULL) >> 50)];
        if ((slot & ~(1ULL << 31)) == key) return (slot >> 31) & 1;
        bool ok = compatible(a, b);
        slot = key | ((uint64_t)ok << 31);
        return ok;
    }

    // Whether BPE of a's bytes followed by b's gives exactly (a, b) (reachable tokens).
    inline bool compatible(int32_t a, int32_t b) const {
        if (live_rank(a, b) != NO_RANK) return false;
        for (;;) {
            const TokenInfo& x = info_[a];
            const TokenInfo& y = info_[b];
            if (x.left >= 0 && (y.left < 0 || x.rank > y.rank)) {  // a was made last: undo it
                a = x.right;
                if (live_rank(a, b) < x.rank) return false;
            } else if (y.left >= 0) {  // b was (a tie: b is right of a's merge, so it came second)
                b = y.left;
                if (live_rank(a, b) <= y.rank) return false;
            } else {
                return true;  // two bytes
            }
        }
    }

  private:
    static constexpr uint64_t NO_PAIR = ~0ULL;
    struct TokenInfo {
        int32_t left, right;  // the two tokens its last merge joined (-1: a byte)
        int32_t rank;         // that merge's rank
        int32_t prefix;       // the longest reachable token that is a proper prefix, -1 if none
        uint32_t length;      // bytes
    };
    const PairTable<uint64_t>* pairs_ = nullptr;
    PairTable<int64_t> live_;  // the pairs that fire (each token's last merge) -> rank
    std::vector<TokenInfo> info_;
    TokenTrie trie_;

    // The pair table's value for (a, b), or NO_PAIR, through `memo`: a direct-mapped table
    // of recent answers, (key, value) in two words per slot, key ~0 empty. Step 1 looks up
    // about nine times as many pairs as there are distinct ones (tokens that share a prefix
    // repeat the pairs of their BPE runs, and step 0 brings them together), while the table
    // itself is 8-16 MB for the OpenAI vocabularies: most lookups then stay in L2.
    static constexpr size_t PAIR_MEMO_SLOTS = 1 << 15;  // 512 KiB
    static constexpr size_t LAST_MERGE_STACK = 64;     // bytes of a token merged on the stack
    inline uint64_t lookup(int32_t a, int32_t b, std::vector<uint64_t>& memo) const {
        uint64_t key = pair_key(a, b);
        size_t i = 2 * (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 49);
        if (memo[i] != key) {
            const uint64_t* v = pairs_->find(key);
            memo[i] = key;
            memo[i + 1] = v ? *v : NO_PAIR;
        }
        return memo[i + 1];
    }

    // The rank of pair (a, b) if it ever fires (it is the last merge of the token it makes,
    // see build), else NO_RANK (above every rank).
    static constexpr int64_t NO_RANK = INT64_MAX;
    inline int64_t live_rank(int32_t a, int32_t b) const {
        const int64_t* r = live_.find(pair_key(a, b));
        return r ? *r : NO_RANK;
    }

    // How far ahead (in tokens) build's loops ask for a token's bytes and info: they lie in id
    // order, the loops go in byte order (1.5 MB of bytes, 2 MB of infos for o200k).
    static constexpr size_t AHEAD = 16;

    // BPE of p[0:n] (n >= 2) by bpe.h's rule without a floor (lowest rank, leftmost first):
    // the id it ends in when that is one symbol (else -1), and the last merge's parts and rank.
    int32_t last_merge(const uint8_t* p, size_t n, const int32_t* byte_id, std::vector<int32_t>& sym_long,
                       std::vector<uint64_t>& val_long, std::vector<uint64_t>& memo, int32_t* left, int32_t* right,
                       int32_t* rank) const {
        // (nearly every token fits the stack arrays; a merge shifts the few symbols after it by
        // hand, which for a token's handful of symbols beats a call to memmove)
        int32_t sym_short[LAST_MERGE_STACK];
        uint64_t val_short[LAST_MERGE_STACK];
        int32_t* sym = sym_short;
        uint64_t* val = val_short;
        if (n > LAST_MERGE_STACK) {
            sym_long.resize(n);
            val_long.resize(n);
            sym = sym_long.data();
            val = val_long.data();
        }
        for (size_t i = 0; i < n; ++i) {
            sym[i] = byte_id[p[i]];
            if (sym[i] < 0) return -1;
        }
        for (size_t i = 0; i + 1 < n; ++i) val[i] = lookup(sym[i], sym[i + 1], memo);
        size_t m = n;  // symbols left; val[0:m - 1] their pairs' values
        while (m > 1) {
            size_t best = 0;
            for (size_t i = 1; i + 1 < m; ++i)
                if (val[i] < val[best]) best = i;
            if (val[best] == NO_PAIR) return -1;
            *left = sym[best];
            *right = sym[best + 1];
            *rank = (int32_t)(val[best] >> 32);
            sym[best] = (int32_t)(val[best] & 0xFFFFFFFFULL);
            for (size_t i = best + 1; i + 1 < m; ++i) sym[i] = sym[i + 1];
            for (size_t i = best; i + 2 < m; ++i) val[i] = val[i + 1];
            --m;
            if (best + 1 < m) val[best] = lookup(sym[best], sym[best + 1], memo);
            if (best > 0) val[best - 1] = lookup(sym[best - 1], sym[best], memo);
        }
        return sym[0];
    }
};

}  // namespace fbpt
