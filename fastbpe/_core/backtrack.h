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
// BpeEncoder::backtracker_for): every token's merge tree (left, right, rank of its last merge), from BPE of its own bytes; a trie
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
#include "poll.h"

namespace fbpt {

// The byte trie of the reachable tokens, built from them in byte order. The first level is an
// array of 256 tokens (-1: none, ABSENT: no token starts with that byte); the node of a two-byte
// prefix b0 b1 is number b0 << 8 | b1; deeper nodes follow, numbered so that the children of a
// node are consecutive (first, first + 1, ...) and in byte order. A node holds its token, its
// first child, its child count and the bytes of up to six children packed in one word, so that a
// step down reads one node (most deep nodes have one child: one compare); a node of more
// children has a row of 256 child indices of its own in `wide_`. The node array is written front
// to back and a walk moves forward through it, siblings side by side: a hash table of edges
// (before) missed the cache at each new node to build and at each byte to walk, which made long
// pieces of letters, DNA or Chinese 1.2-1.6x slower to encode.
class TokenTrie {
  public:
    // Nodes are numbered below 2^24 (a bound on the tables' size).
    static constexpr uint32_t MAX_NODES = 1u << 24;
    static constexpr int32_t ABSENT = -2;

    // The trie of `m` tokens in byte order (each before its extensions): token k has bytes
    // bytes(k) (a pointer), length(k) >= 1 and id id(k). set_prefix(id(k), p) is given p, the
    // longest token among its proper prefixes, or -1. False when it would have MAX_NODES nodes
    // or more.
    // (Depth first: a node's children are numbered when it is taken off the stack, from the
    // runs of one byte at its depth among the tokens that extend it.)
    template <class Bytes, class Length, class Id, class SetPrefix>
    bool build(size_t m, Bytes bytes, Length length, Id id, SetPrefix set_prefix) {
        // the nodes below the two array levels: each token adds those of its prefixes of
        // three bytes or more that it does not share with the token before it
        size_t deep = 0;
        for (size_t k = 0; k < m; ++k) {
            size_t n = length(k), shared = 0;
            if (k > 0) {
                const uint8_t *a = bytes(k - 1), *b = bytes(k);
                size_t limit = std::min(n, (size_t)length(k - 1));
                while (shared < limit && a[shared] == b[shared]) ++shared;
            }
            if (n > std::max(shared, (size_t)2)) deep += n - std::max(shared, (size_t)2);
        }
        if (FIRST_DEEP + deep >= MAX_NODES) return false;
        nodes_.assign(FIRST_DEEP + deep, Node{-1, 0, 0});
        labels_.assign(FIRST_DEEP + deep, 0);
        wide_.clear();
        for (int b = 0; b < 256; ++b) level1_[b] = ABSENT;
        uint32_t next = FIRST_DEEP;
        struct Frame {
            uint32_t node, lo, hi, depth;  // tokens lo..hi - 1 extend the node's depth bytes
            int32_t best;                  // the longest token among those bytes' prefixes
        };
        std::vector<Frame> stack;
        for (size_t k = 0; k < m;) {
            const uint8_t* p = bytes(k);
            int32_t& t1 = level1_[p[0]];
            t1 = -1;
            if (length(k) == 1) {
                t1 = id(k);
                set_prefix(id(k), -1);
                ++k;
            }
            for (; k < m && bytes(k)[0] == p[0];) {  // the two-byte prefixes p[0] b
                uint32_t node = (uint32_t)p[0] << 8 | bytes(k)[1];
                int32_t best = t1;
                if (length(k) == 2) {
                    set_prefix(id(k), best);
                    nodes_[node].token = best = id(k);
                    ++k;
                }
                size_t hi = k;
                while (hi < m && bytes(hi)[0] == p[0] && bytes(hi)[1] == (node & 0xFF)) ++hi;
                if (hi > k) stack.push_back(Frame{node, (uint32_t)k, (uint32_t)hi, 2, best});
                k = hi;
                while (!stack.empty()) {
                    Frame f = stack.back();
                    stack.pop_back();
                    uint32_t first = next;
                    for (uint32_t i = f.lo; i < f.hi;) {  // a child per run of one byte at `depth`
                        uint8_t b = bytes(i)[f.depth];
                        uint32_t child = next++, j = i;
                        labels_[child] = b;
                        if (length(i) == f.depth + 1) {
                            set_prefix(id(i), f.best);
                            nodes_[child].token = id(i);
                            ++j;
                        }
                        uint32_t from = j;
                        while (j < f.hi && bytes(j)[f.depth] == b) ++j;
                        if (j > from)
                            stack.push_back(Frame{child, from, j, f.depth + 1,
                                                  nodes_[child].token >= 0 ? nodes_[child].token : f.best});
                        i = j;
                    }
                    Node& x = nodes_[f.node];
                    x.first = first;
                    uint64_t count = next - first, low = 0;
                    if (count <= SMALL) {
                        for (uint64_t c = 0; c < count; ++c) low |= (uint64_t)labels_[first + c] << (8 * c);
                    } else {  // a row of `wide_` of its own
                        low = wide_.size() >> 8;
                        wide_.resize(wide_.size() + 256, 0);
                        for (uint64_t c = 0; c < count; ++c) wide_[(low << 8) | labels_[first + c]] = (uint8_t)c;
                    }
                    x.packed = count << 48 | low;
                }
            }
        }
        return true;
    }

    // The longest token that is a prefix of p[0:n], or -1; *length receives its length.
    inline int32_t longest(const uint8_t* p, size_t n, int64_t* length) const {
        *length = 1;
        if (n == 0) return -1;
        int32_t best = level1_[p[0]];
        if (best == ABSENT || n == 1) return best < 0 ? -1 : best;
        const Node* x = &nodes_[(uint32_t)p[0] << 8 | p[1]];
        if (x->token >= 0) {
            best = x->token;
            *length = 2;
        }
        for (size_t i = 2; i < n; ++i) {
            int64_t c = child(*x, p[i]);
            if (c < 0) break;
            x = &nodes_[x->first + c];
            if (x->token >= 0) {
                best = x->token;
                *length = (int64_t)i + 1;
            }
        }
        return best;
    }

    size_t nodes() const { return 257 + nodes_.size(); }
    size_t memory() const {
        return nodes_.capacity() * sizeof(Node) + labels_.capacity() + wide_.capacity() + sizeof(level1_);
    }

  private:
    static constexpr uint32_t FIRST_DEEP = 1u << 16;
    static constexpr uint64_t SMALL = 6;  // children whose bytes a node packs
    struct Node {
        int32_t token;    // -1: none
        uint32_t first;   // the first child's number
        uint64_t packed;  // child count << 48 | the bytes of up to SMALL children, the first lowest
    };
    std::vector<Node> nodes_;
    std::vector<uint8_t> labels_;  // the byte leading to each node (from FIRST_DEEP on)
    // for each node of more than SMALL children, a row of 256: the index among them of the
    // child a byte leads to (0 where none does: labels_ then tells)
    std::vector<uint8_t> wide_;
    int32_t level1_[256];

    // The index among x's children of the one reached by byte b, or -1.
    inline int64_t child(const Node& x, uint8_t b) const {
        uint64_t count = x.packed >> 48;
        if (count == 1) return (uint8_t)x.packed == b ? 0 : -1;  // (most nodes deep in the trie)
        if (count <= SMALL) {
            // bytes equal to b become zero bytes; the lowest zero byte is found exactly (a
            // borrow only runs upwards from a zero byte), and the count masks off the rest
            const uint64_t ones = 0x010101010101ULL;
            uint64_t t = (x.packed ^ (b * ones)) & 0xFFFFFFFFFFFFULL;
            uint64_t z = (t - ones) & ~t & (ones << 7) & ((1ULL << (8 * count)) - 1);
            return z ? (int64_t)(__builtin_ctzll(z) >> 3) : -1;
        }
        uint32_t i = wide_[(x.packed & 0xFFFFFFFFULL) << 8 | b];
        return labels_[x.first + i] == b ? (int64_t)i : -1;
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
        return trie_.memory() + info_.capacity() * sizeof(TokenInfo) + live_.capacity() * 16 + live_filter_.memory();
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
        // 0. the tokens in byte order (each before its extensions), which step 3 builds the trie
        // from: tokens that share a prefix come together, so the pairs their BPE runs look up
        // were mostly just looked up (in cache)
        struct Order {
            uint64_t head;  // the first eight bytes, big-endian, zero-padded
            uint32_t start, length, token;  // (its bytes: base[start:start + length])
        };
        std::vector<Order> order(count);
        for (size_t t = 0; t < count; ++t) {
            const uint8_t* p = base + start(t);
            uint32_t n = ends[t] - start(t);
            uint64_t head = __builtin_bswap64(load_upto8(p, n < 8 ? n : 8));  // (hash.h; big-endian)
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
            std::sort(order.begin() + from, order.begin() + group[g], [base](const Order& x, const Order& y) {
                if (x.head != y.head) return x.head < y.head;
                if (x.length > 8 && y.length > 8) {  // (equal heads: equal first eight bytes)
                    int c = std::memcmp(base + x.start + 8, base + y.start + 8, std::min(x.length, y.length) - 8);
                    if (c != 0) return c < 0;
                }
                return x.length < y.length;  // (the shorter one is a prefix of the other)
            });
        // 1. every token's merge tree from BPE of its own bytes (reachable iff that gives it
        // back), RUNS tokens at a time: a run that needs a pair the memo does not hold asks for
        // the pair's slot of the table and gives way to the next run, so that the table's cache
        // misses (one lookup in six, most of the step's time when taken one at a time) overlap
        std::vector<uint64_t> memo(2 * PAIR_MEMO_SLOTS, ~0ULL);
        std::vector<uint8_t> reachable(count, 0);
        std::vector<Run> runs(RUNS + 1);  // (the last one for tokens longer than the others hold)
        std::vector<int32_t> run_sym(RUNS * RUN_SYMBOLS);
        std::vector<uint64_t> run_val(RUNS * RUN_SYMBOLS);
        for (size_t r = 0; r < RUNS; ++r) {
            runs[r].sym = &run_sym[r * RUN_SYMBOLS];
            runs[r].val = &run_val[r * RUN_SYMBOLS];
        }
        std::vector<int32_t> long_sym;
        std::vector<uint64_t> long_val;
        auto finish = [&](Run& r) {
            if (r.m == 1 && r.sym[0] == r.token) {
                reachable[r.token] = 1;
                info_[r.token].left = r.left;
                info_[r.token].right = r.right;
                info_[r.token].rank = r.rank;
            }
            r.token = -1;
        };
        size_t k = 0;  // the next token of `order`
        // Starts r on the next token that needs a run (one byte, and a long token's whole run,
        // done here on the way); false when none is left.
        auto take = [&](Run& r) {
            while (k < order.size()) {
                if (k + AHEAD < order.size()) {  // (the tokens' bytes and infos lie in id order)
                    __builtin_prefetch(base + order[k + AHEAD].start);
                    __builtin_prefetch(&info_[order[k + AHEAD].token]);
                }
                const Order& o = order[k++];
                const uint8_t* p = base + o.start;
                if (o.length == 1) reachable[o.token] = byte_id[p[0]] == (int32_t)o.token;
                if (o.length < 2) continue;
                if (o.length <= RUN_SYMBOLS) {
                    if (start_run(r, (int32_t)o.token, p, o.length, byte_id, memo)) return true;
                    continue;
                }
                Run& whole = runs[RUNS];
                long_sym.resize(o.length);
                long_val.resize(o.length);
                whole.sym = long_sym.data();
                whole.val = long_val.data();
                if (!start_run(whole, (int32_t)o.token, p, o.length, byte_id, memo)) continue;
                while (!advance(whole, memo)) {
                }
                finish(whole);
            }
            return false;
        };
        size_t busy = 0;
        for (size_t r = 0; r < RUNS; ++r) busy += take(runs[r]);
        while (busy > 0) {
            for (size_t r = 0; r < RUNS; ++r) {
                if (runs[r].token < 0 || !advance(runs[r], memo)) continue;
                finish(runs[r]);
                if (!take(runs[r])) --busy;
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
        // 3. the trie of the reachable tokens, in that order, which gives each its next shorter
        // prefix token on the way
        order.erase(std::remove_if(order.begin(), order.end(), [&](const Order& o) { return !reachable[o.token]; }),
                    order.end());
        if (!trie_.build(
                order.size(), [&](size_t k) { return base + order[k].start; }, [&](size_t k) { return order[k].length; },
                [&](size_t k) { return (int32_t)order[k].token; },
                [&](int32_t token, int32_t prefix) { info_[token].prefix = prefix; })) {
            too_big = true;
            return;
        }
        // 4. the pairs that fire, in a table of their own: a fraction of tiktoken's (which holds
        // every split), so the lookups of compatible() mostly hit the CPU caches
        // (and a filter of them: most pairs compatible() asks about do not fire)
        size_t cap = 16;
        while (cap < 2 * live + 16) cap *= 2;
        live_.reset(cap);
        live_filter_.reset(live);
        for (size_t t = 0; t < count; ++t) {
            if (t + AHEAD < count && info_[t + AHEAD].left >= 0)  // (the slots are random: 8 MB for o200k)
                live_.prefetch(pair_key(info_[t + AHEAD].left, info_[t + AHEAD].right));
            const TokenInfo& x = info_[t];
            if (x.left < 0) continue;
            uint64_t key = pair_key(x.left, x.right);
            size_t i = live_.index(key);
            if (!live_.occupied(i)) live_.insert_at(i, key, (int64_t)x.rank);
            live_filter_.add(key);
        }
    }

    // Ids of p[0:n] into out (room for cap ids) by backtracking; `dead` is scratch space. The
    // caller checked that every byte has an id. Returns the id count, or -1 when the search
    // finds nothing (impossible for a usable model; the caller then takes its other path).
    // Id: int32_t, or uint16_t when every id is below 2^16 (the caller's promise): the ids are
    // the search's stack, so a huge piece's ids are held once, at the width they are kept.
    // `poll` is ticked once a token (poll.h: it may throw Interrupted; memo stays valid).
    template <class Id>
    int64_t encode(const uint8_t* p, int64_t n, std::vector<uint64_t>& dead_bits, std::vector<uint64_t>& memo,
                   Id* out, int64_t cap, Poll& poll) const {
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
        int64_t count = 0, pos = 0, length;  // (length: the bytes of `token`, known from the walk)
        int32_t token = trie_.longest(p, (size_t)n, &length);
        int64_t budget = POLL_UNITS;  // tokens until the next tick (a local: no store a token)
        while (pos < n) {
            if (--budget == 0) {
                poll.tick(POLL_UNITS);
                budget = POLL_UNITS;
            }
            int32_t last = count ? (int32_t)out[count - 1] : -1;
            for (;;) {
                if (token < 0) {  // nothing fits after `last`: pos is a dead end
                    if (count == 0) return -1;
                    dead[(size_t)pos >> 6] |= 1ULL << (pos & 63);
                    token = (int32_t)out[--count];
                    length = info_[token].length;
                    pos -= length;
                    break;  // `token` is retried and fails on its now dead end
                }
                int64_t end = pos + length;
                if (!((dead[(size_t)end >> 6] >> (end & 63)) & 1) && (last < 0 || compatible_memo(last, token, memo))) {
                    if (count >= cap) return -1;
                    out[count++] = (Id)token;
                    pos = end;
                    token = trie_.longest(p + pos, (size_t)(n - pos), &length);
                    break;
                }
                token = info_[token].prefix;
                if (token >= 0) length = info_[token].length;
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
    KeyFilter live_filter_;    // live_'s pairs
    std::vector<TokenInfo> info_;
    TokenTrie trie_;

    // The pair table's value for (a, b), or NO_PAIR, through `memo`: a direct-mapped table
    // of recent answers, (key, value) in two words per slot, key ~0 empty. Step 1 looks up
    // about nine times as many pairs as there are distinct ones (tokens that share a prefix
    // repeat the pairs of their BPE runs, and step 0 brings them together), while the table
    // itself is 8-16 MB for the OpenAI vocabularies: most lookups then stay in L2.
    static constexpr size_t PAIR_MEMO_SLOTS = 1 << 15;  // 512 KiB
    inline uint64_t lookup(int32_t a, int32_t b, std::vector<uint64_t>& memo) const {
        uint64_t key = pair_key(a, b);
        size_t i = memo_slot(key);
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
        uint64_t key = pair_key(a, b);
        if (!live_filter_.maybe(key)) return NO_RANK;
        const int64_t* r = live_.find(key);
        return r ? *r : NO_RANK;
    }

    // How far ahead (in tokens) build's loops ask for a token's bytes and info: they lie in id
    // order, the loops go in byte order (1.5 MB of bytes, 2 MB of infos for o200k).
    static constexpr size_t AHEAD = 16;

    // One token's BPE run in step 1 of build, by bpe.h's rule without a floor (lowest rank,
    // leftmost first), advanced a merge at a time.
    struct Run {
        int32_t token = -1;  // -1: idle
        size_t m = 0;        // symbols left: sym[0:m], the values of their pairs val[0:m - 1]
        int32_t left = -1, right = -1, rank = -1;  // the last merge so far: its parts and rank
        int32_t* sym = nullptr;
        uint64_t* val = nullptr;
    };
    static constexpr size_t RUNS = 16;        // runs in flight
    static constexpr size_t RUN_SYMBOLS = 64;  // bytes of a token a run holds in place
    // A pair's value still to be looked up (its slot of the table asked for): above every
    // value (rank << 32 | id, ranks below 2^31) and below NO_PAIR.
    static constexpr uint64_t PENDING = NO_PAIR - 1;

    inline static size_t memo_slot(uint64_t key) { return 2 * (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 49); }

    // The value of pair (a, b) if the memo holds it, else PENDING, its slot of the table asked for.
    inline uint64_t peek(int32_t a, int32_t b, const std::vector<uint64_t>& memo) const {
        uint64_t key = pair_key(a, b);
        size_t i = memo_slot(key);
        if (memo[i] == key) return memo[i + 1];
        pairs_->prefetch(key);
        return PENDING;
    }

    // Starts r on the bytes p[0:n] (n >= 2) of `token`; false when a byte has no id.
    bool start_run(Run& r, int32_t token, const uint8_t* p, size_t n, const int32_t* byte_id,
               const std::vector<uint64_t>& memo) const {
        for (size_t i = 0; i < n; ++i) {
            r.sym[i] = byte_id[p[i]];
            if (r.sym[i] < 0) return false;
        }
        for (size_t i = 0; i + 1 < n; ++i) r.val[i] = peek(r.sym[i], r.sym[i + 1], memo);
        r.token = token;
        r.m = n;
        return true;
    }

    // Merges r's symbols until one is left or no pair merges (true), or until a pair's value
    // is PENDING (false: the next call looks it up, its slot then in cache).
    // (a token's handful of symbols: a merge shifts the few after it by hand, which beats a
    // call to memmove)
    bool advance(Run& r, std::vector<uint64_t>& memo) const {
        int32_t* sym = r.sym;
        uint64_t* val = r.val;
        size_t m = r.m;
        for (size_t i = 0; i + 1 < m; ++i)
            if (val[i] == PENDING) val[i] = lookup(sym[i], sym[i + 1], memo);
        while (m > 1) {
            size_t best = 0;
            for (size_t i = 1; i + 1 < m; ++i)
                if (val[i] < val[best]) best = i;
            if (val[best] == NO_PAIR) break;
            r.left = sym[best];
            r.right = sym[best + 1];
            r.rank = (int32_t)(val[best] >> 32);
            sym[best] = (int32_t)(val[best] & 0xFFFFFFFFULL);
            for (size_t i = best + 1; i + 1 < m; ++i) sym[i] = sym[i + 1];
            for (size_t i = best; i + 2 < m; ++i) val[i] = val[i + 1];
            r.m = --m;
            bool waits = false;
            if (best + 1 < m) waits |= (val[best] = peek(sym[best], sym[best + 1], memo)) == PENDING;
            if (best > 0) waits |= (val[best - 1] = peek(sym[best - 1], sym[best], memo)) == PENDING;
            if (waits) return false;
        }
        return true;
    }
};

}  // namespace fbpt
