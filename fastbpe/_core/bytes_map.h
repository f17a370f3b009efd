// Byte string -> span of int32 ids: the encoder's chunk cache and its whole-token lookup.
//
// Open addressing with linear probing (hash.h), at most half full. Keys and values live in two
// arenas, so a lookup touches one slot and one key, and an insert allocates nothing per entry.
// The slot keeps the key's full hash, so a probe compares bytes only on a hash match. Not
// thread-safe for writes; concurrent find() on an unchanging map is fine.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include <utility>

// Whether big tables take their pages straight from mmap (ZeroedBlock): on Linux, but not
// under AddressSanitizer, which watches malloc's blocks only.
#if defined(__SANITIZE_ADDRESS__)
#define FBPT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FBPT_ASAN 1
#endif
#endif
#if defined(__linux__) && !defined(FBPT_ASAN)
#define FBPT_MAP_PAGES 1
#else
#define FBPT_MAP_PAGES 0
#endif

#include "hash.h"

namespace fbpt {

// The hash a BytesMap is given for key p[0:n]: never 0, which marks an empty slot. The caller
// computes it once per chunk and hands it to every map it asks.
static inline uint64_t bytes_map_hash(const uint8_t* p, size_t n) { return hash_bytes(p, n) | 1; }

// a[0:n] == b[0:n] for the short keys of the chunk cache, without a call to memcmp:
// 8-byte words, the last one overlapping the one before it.
static inline bool bytes_equal(const uint8_t* a, const uint8_t* b, size_t n) {
    uint64_t x, y;
    if (n >= 8) {
        for (size_t i = 0; i + 8 < n; i += 8) {
            std::memcpy(&x, a + i, 8);
            std::memcpy(&y, b + i, 8);
            if (x != y) return false;
        }
        std::memcpy(&x, a + n - 8, 8);
        std::memcpy(&y, b + n - 8, 8);
        return x == y;
    }
    if (n >= 4) {
        uint32_t u, v, w, z;
        std::memcpy(&u, a, 4);
        std::memcpy(&v, b, 4);
        std::memcpy(&w, a + n - 4, 4);
        std::memcpy(&z, b + n - 4, 4);
        return u == v && w == z;
    }
    for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return false;
    return true;
}

static const size_t HUGE_PAGE_BYTES = (size_t)1 << 21;

// `bytes` of fresh anonymous pages (zero, and taken only where first written), 2 MB-aligned
// with huge pages asked for from 2 MB up; nullptr where they do not come from mmap
// (FBPT_MAP_PAGES), the caller then using malloc. Throws bad_alloc when the mapping fails.
static inline void* map_fresh_pages(size_t bytes) {
#if FBPT_MAP_PAGES
    const size_t page = 4096;
    size_t align = bytes >= HUGE_PAGE_BYTES ? HUGE_PAGE_BYTES : page;
    size_t mapped = (bytes + page - 1) / page * page, span = mapped + align - page;
    void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    uintptr_t start = ((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1), end = (uintptr_t)raw + span;
    if (start > (uintptr_t)raw) munmap(raw, start - (uintptr_t)raw);  // (the unaligned head
    if (end > start + mapped) munmap((void*)(start + mapped), end - start - mapped);  // and tail)
#if defined(MADV_HUGEPAGE)
    if (align == HUGE_PAGE_BYTES) madvise((void*)start, mapped, MADV_HUGEPAGE);  // advice only
#endif
    return (void*)start;
#else
    (void)bytes;
    return nullptr;
#endif
}
// Give back map_fresh_pages(bytes).
static inline void unmap_fresh_pages(void* p, size_t bytes) {
#if FBPT_MAP_PAGES
    munmap(p, (bytes + 4095) / 4096 * 4096);
#else
    (void)p, (void)bytes;
#endif
}

// Zero-filled memory for the encoder's big tables (its chunk caches and their slot arrays).
// A big one comes from the kernel: fresh anonymous pages read as zero and are taken only where
// first written, so it needs no memset (on this 2-core VM, first-touching a page is the dear
// part: a memset over a fresh table touched all of it once more, and took even the pages the
// table never uses). 2 MB-aligned, with huge pages asked for, from 2 MB up, so that the
// encoder's prefetches into a big table do not miss the TLB. `room` bytes of address space are
// mapped (nothing more is taken) so that the block can grow in place up to them (extend). A
// small block (under MAP_MIN_BYTES), and every block under AddressSanitizer (which watches
// malloc's blocks only) or off Linux, comes from malloc, zeroed by hand; extend then moves it.
class ZeroedBlock {
  public:
    ZeroedBlock() = default;
    ~ZeroedBlock() { release(); }
    ZeroedBlock(const ZeroedBlock&) = delete;
    ZeroedBlock& operator=(const ZeroedBlock&) = delete;

    void* data() const { return p_; }
    size_t size() const { return bytes_; }
    void swap(ZeroedBlock& o) noexcept {
        std::swap(p_, o.p_);
        std::swap(bytes_, o.bytes_);
        std::swap(mapped_, o.mapped_);
    }

    // `bytes` zero bytes (the block's old ones freed), able to grow in place to `room` bytes.
    void open(size_t bytes, size_t room) {
        release();
        room = room < bytes ? bytes : room;
        if (room >= MAP_MIN_BYTES && (p_ = map_fresh_pages(room)) != nullptr) {
            mapped_ = room;
        } else {
            p_ = heap_zeroed(bytes);
        }
        bytes_ = bytes;
    }
    // The block grown to `bytes` (at most open's room), its first size() bytes kept, the rest
    // zero: in place when mapped.
    void extend(size_t bytes) {
        if (bytes <= bytes_) return;
        if (mapped_ == 0) {
            void* q = heap_zeroed(bytes);
            std::memcpy(q, p_, bytes_);
            std::free(p_);
            p_ = q;
        }
        bytes_ = bytes;
    }
    void release() {
        if (p_ == nullptr) return;
        if (mapped_ != 0)
            unmap_fresh_pages(p_, mapped_);
        else
            std::free(p_);
        p_ = nullptr;
        bytes_ = mapped_ = 0;
    }

    static const size_t MAP_MIN_BYTES = (size_t)1 << 18;  // (below: malloc, whose reused pages are warm)

  private:
    void* p_ = nullptr;
    size_t bytes_ = 0;
    size_t mapped_ = 0;  // bytes mapped from p_ (0: from malloc)

    static void* heap_zeroed(size_t bytes) {
        void* q = std::aligned_alloc(64, bytes == 0 ? 64 : (bytes + 63) / 64 * 64);  // (a multiple of 64)
        if (q == nullptr) throw std::bad_alloc();
        std::memset(q, 0, bytes);
        return q;
    }
};

// A table of n zero-filled T (all-zero: an empty slot) in a ZeroedBlock: BytesMap's slots.
template <typename T>
class ZeroedArray {
  public:
    void swap(ZeroedArray& o) noexcept {
        block_.swap(o.block_);
        std::swap(n_, o.n_);
    }
    // n zero items, the old ones freed.
    void assign_zero(size_t n) {
        block_.open(n * sizeof(T), n * sizeof(T));
        n_ = n;
    }
    size_t size() const { return n_; }
    T* data() { return (T*)block_.data(); }
    const T* data() const { return (const T*)block_.data(); }
    T& operator[](size_t i) { return data()[i]; }
    const T& operator[](size_t i) const { return data()[i]; }

  private:
    ZeroedBlock block_;
    size_t n_ = 0;
};

class BytesMap {
  public:
    BytesMap() { clear(); }
    void clear() {
        slots_.assign_zero(INITIAL_SLOTS);
        keys_.clear();
        vals_.clear();
        used_ = 0;
    }
    size_t size() const { return used_; }
    // Room for n keys without growing (an empty map only).
    void reserve(size_t n) {
        size_t slots = INITIAL_SLOTS;
        while (slots < 2 * n + 2) slots *= 2;
        if (used_ == 0 && slots > slots_.size()) slots_.assign_zero(slots);
    }
    size_t num_vals() const { return vals_.size(); }
    size_t num_key_bytes() const { return keys_.size(); }

    // Pointer to the ids of key p[0:n] with hash h (count in *count), or nullptr.
    const int32_t* find(const uint8_t* p, size_t n, uint64_t h, int64_t* count) const {
        const uint8_t* keys = keys_.data();
        size_t i = probe(slots_.data(), slots_.size() - 1, h & (slots_.size() - 1), [&](const Slot& s) {
            return s.hash == 0 || (s.hash == h && s.key_len == n && bytes_equal(keys + s.key_off, p, n));
        });
        const Slot& s = slots_[i];
        if (s.hash == 0) return nullptr;
        *count = s.val_len;
        return vals_.data() + s.val_off;
    }

    // Prefetch hints for a pipelined caller: first the home slot of a hash, later (once that
    // slot is in cache) the key and ids it points at.
    void prefetch_slot(uint64_t h) const { __builtin_prefetch(&slots_[h & (slots_.size() - 1)]); }
    void prefetch_entry(uint64_t h) const {
        const Slot& s = slots_[h & (slots_.size() - 1)];
        if (s.hash == h) {
            __builtin_prefetch(keys_.data() + s.key_off);
            __builtin_prefetch(vals_.data() + s.val_off);
        }
    }

    // Add key p[0:n] (hash h) with ids[0:count]; a key already present keeps its ids.
    void insert(const uint8_t* p, size_t n, uint64_t h, const int32_t* ids, int64_t count) {
        if (2 * (used_ + 1) > slots_.size()) grow();
        const uint8_t* keys = keys_.data();
        size_t i = probe(slots_.data(), slots_.size() - 1, h & (slots_.size() - 1), [&](const Slot& s) {
            return s.hash == 0 || (s.hash == h && s.key_len == n && std::memcmp(keys + s.key_off, p, n) == 0);
        });
        if (slots_[i].hash) return;
        slots_[i] = Slot{h, (uint32_t)keys_.size(), (uint32_t)n, (uint32_t)vals_.size(), (uint32_t)count};
        keys_.insert(keys_.end(), p, p + n);
        vals_.insert(vals_.end(), ids, ids + count);
        used_++;
    }

  private:
    struct Slot {
        uint64_t hash;  // 0: empty
        uint32_t key_off, key_len, val_off, val_len;
    };
    static constexpr size_t INITIAL_SLOTS = 1024;
    ZeroedArray<Slot> slots_;  // (all zero: empty; fresh pages, see ZeroedBlock)
    std::vector<uint8_t> keys_;
    std::vector<int32_t> vals_;
    size_t used_ = 0;

    void grow() {
        ZeroedArray<Slot> old;
        old.swap(slots_);
        slots_.assign_zero(old.size() * 2);
        size_t mask = slots_.size() - 1;
        for (size_t i = 0; i < old.size(); ++i) {
            const Slot& s = old[i];
            if (!s.hash) continue;
            slots_[probe(slots_.data(), mask, s.hash & mask, [](const Slot& t) { return t.hash == 0; })] = s;
        }
    }
};

// The chunk cache's first level: the ids of chunks of 1..SHORT_KEY_MAX bytes (and of the longer
// ones pack_pairs and pack_repeat take), for the chunks that come back again and again (a few
// thousand chunks make most of a text: "the", " of", ...).
// BytesMap is too big for the CPU caches and costs three dependent memory accesses per lookup
// (slot, key, ids); here one small entry holds the chunk's bytes and length packed in two words
// and up to SHORT_IDS ids (up to SHORT_IDS_MAX in two entries), in a table that starts at the
// size of the L2 cache. A lookup is one
// probe and two word compares per way (both ways compared, no branch on which one holds it).
// Only a cache: every entry holds a result the encoder computed, and a miss falls back to
// BytesMap. (At most 15 bytes, so that the length fits the key's 16th byte.)
static const size_t SHORT_KEY_MAX = 15;
static const int SHORT_IDS = 4;
// A way's count of ids sits in the top bits of its second key word, above the 16th byte's
// length (at most 15: four bits), so that four ids fit beside the key in 32 bytes; lookups
// compare the key words with these bits masked off.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
static const int SHORT_COUNT_SHIFT = 4;   // (the 16th byte is the lowest there)
#else
static const int SHORT_COUNT_SHIFT = 60;
#endif
static const uint64_t SHORT_KEY_BITS = ~(0xFULL << SHORT_COUNT_SHIFT);
// A chunk of SHORT_IDS + 1 .. SHORT_IDS_MAX ids (Arabic words under cl100k: a sixth of the
// chunks have five to eight) takes both ways of its set: its key and first SHORT_IDS ids in
// the first, the rest in the second, whose key words are a mark that no key equals (its length
// nibble is 0) and that no empty way has.
static const int SHORT_IDS_MAX = 2 * SHORT_IDS;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
static const uint64_t SHORT_LENGTH_BITS = 0xFULL;
#else
static const uint64_t SHORT_LENGTH_BITS = 0xFULL << 56;
#endif
static const uint64_t SHORT_SPILL_MARK = SHORT_KEY_BITS & ~SHORT_LENGTH_BITS;
static const int SHORT_CACHE_BITS = 16;
static const int SHORT_CACHE_MAX_BITS = 20;  // how far it grows by default (32 MB a thread)
// It grows only while more than one lookup in this many has evicted a chunk (see grow_if_thrashing).
static const size_t LOOKUPS_PER_EVICTION = 256;

// p[0:n] (1 <= n <= 15) packed into two words, zero beyond n, and n in the 16th byte: an
// injective key that is never all zero (an empty entry). `room`: bytes readable from p; with
// 16 of them the words are read whole and masked, else read within p[0:n].
static inline void pack_short(const uint8_t* p, size_t n, size_t room, uint64_t* w0, uint64_t* w1) {
    uint64_t a = 0, b = 0;
    if (room >= 16) {
        std::memcpy(&a, p, 8);
        std::memcpy(&b, p + 8, 8);
        // keep the first n bytes: those at the low addresses (low bits on a little-endian CPU)
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        if (n < 8) a &= ~(~0ULL >> (8 * n));
        b = n <= 8 ? 0 : (n < 16 ? b & ~(~0ULL >> (8 * (n - 8))) : b);
#else
        a &= KEY_MASKS.m0[n];  // (a table, not shifts: no branch on the length)
        b &= KEY_MASKS.m1[n];
#endif
    } else {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        std::memcpy(&a, p, n < 8 ? n : 8);
        if (n > 8) std::memcpy(&b, p + 8, n - 8);
#else
        if (n > 8) {
            std::memcpy(&a, p, 8);
            b = load_upto8(p + 8, n - 8);
        } else if (room >= 8) {
            std::memcpy(&a, p, 8);
            a &= KEY_MASKS.m0[n];
        } else {
            a = load_upto8(p, n);
        }
#endif
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    b |= (uint64_t)n;  // (the 16th byte: the lowest bits of the second word here)
#else
    b |= (uint64_t)n << 56;
#endif
    *w0 = a;
    *w1 = b;
}

// A chunk of 16..PAIRS_KEY_MAX bytes that is an optional ASCII byte and then up to 13 two-byte
// characters whose lead bytes are one even byte or the next (D0 D1: Cyrillic's U+0400..U+047F;
// D8 D9: most Arabic letters; CE CF: Greek), packed as a short-cache key of a second form, in
// (w0, w1): 7 bits a character (the lead's low bit and the continuation byte's six), the even
// lead, the ASCII byte. A fifth of the chunks of Russian text have this shape and more than 15
// bytes. The key's first byte, 0x80 | 0x10 * (the ASCII byte is there) | the characters, is a
// continuation byte, which no key of pack_short the cache is asked for starts with (the text
// path's chunks start at characters, and encode_block does not look up chunks that start with
// one), and its length nibble is 15: the two forms never meet. Gives {0, 0} (no key) for a
// chunk of another shape (and on a big-endian CPU, which keeps the one form).
static const size_t PAIRS_KEY_MAX = 27;
struct PackedKey {
    uint64_t w0, w1;
};
static inline PackedKey pack_pairs(const uint8_t* p, size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    (void)p, (void)n;
    return PackedKey{0, 0};
#else
    const size_t head = p[0] < 0x80;  // the ASCII byte before the characters
    const size_t chars = (n - head) / 2;
    if (n < 16 || n > PAIRS_KEY_MAX || ((n - head) & 1)) return PackedKey{0, 0};
    // Four characters a word, in 16-bit lanes (lead byte low): each lane checked against
    // (continuation byte, even lead) under the mask 0xC0FE, its 7 bits made in place, and the
    // four 7-bit lanes drawn together into 28 bits by two shifts (a loop of a character at a
    // time was 9% of a warm pass over Russian).
    const uint8_t* q = p + head;
    const uint8_t even = q[0] & 0xFE;
    const uint64_t lanes = 0x0001000100010001ULL;
    const uint64_t want = (0x8000ULL | even) * lanes;
    const size_t bytes = 2 * chars;  // (16..26)
    uint64_t group[4] = {0, 0, 0, 0};  // characters 4g..4g + 3, 7 bits each
    for (size_t g = 0; 8 * g < bytes; ++g) {
        uint64_t w;
        size_t have = bytes - 8 * g < 8 ? bytes - 8 * g : 8;  // (even: whole lanes)
        std::memcpy(&w, q + 8 * g + have - 8, 8);  // (the last word ends at the chunk's end)
        w >>= 8 * (8 - have);
        const uint64_t keep = have == 8 ? ~0ULL : (1ULL << (8 * have)) - 1;
        if ((w & 0xC0FEC0FEC0FEC0FEULL & keep) != (want & keep)) return PackedKey{0, 0};
        uint64_t x = (w & lanes) << 6 | (w >> 8 & 0x3F * lanes);  // lane k: (lead & 1) << 6 | (cont & 0x3F)
        x = (x | x >> 9) & 0x00003FFF00003FFFULL;                // lanes 0 1 at bits 0, 7; 2 3 at 32, 39
        group[g] = (x | x >> 18) & 0x0FFFFFFFULL;                 // and 2 3 at 14, 21
    }
    // character j at bit 7j of 91 bits: 0..62 in lo (characters 0..8), the rest in hi
    const uint64_t lo = group[0] | group[1] << 28 | (group[2] & 0x7F) << 56;
    const uint64_t hi = group[2] >> 7 | group[3] << 21;
    const uint64_t first = 0x80 | (uint64_t)head << 4 | (uint64_t)chars;
    return PackedKey{first | (uint64_t)even << 8 | (uint64_t)(head ? p[0] : 0) << 16 | lo << 24,
                     lo >> 40 | hi << 23 | SHORT_LENGTH_BITS};  // (length nibble 15)
#endif
}

// A chunk of more than SHORT_KEY_MAX bytes that is one ASCII byte repeated (code's indentation:
// two thirds of the long chunks of code.txt are runs of 16 to 40 spaces; rules of '-' or '=')
// packed as a short-cache key of a third form: first byte 0xBF (a continuation byte, which
// starts no key of pack_short the cache is asked for (see pack_pairs), and above pack_pairs's
// first bytes, 0x80..0x9D), then the byte, then the length; the length nibble 15. Gives {0, 0}
// (no key) for a chunk of another shape.
static inline PackedKey pack_repeat(const uint8_t* p, size_t n) {
    const uint8_t b = p[0];
    if (n <= SHORT_KEY_MAX || b >= 0x80 || n >= ((size_t)1 << 40)) return PackedKey{0, 0};
    const uint64_t all = 0x0101010101010101ULL * b;
    uint64_t w;
    for (size_t i = 0; i + 8 <= n; i += 8) {  // (n >= 16: the last eight bytes overlap at worst)
        std::memcpy(&w, p + i, 8);
        if (w != all) return PackedKey{0, 0};
    }
    std::memcpy(&w, p + n - 8, 8);
    if (w != all) return PackedKey{0, 0};
    return PackedKey{0xBF | (uint64_t)b << 8 | (uint64_t)n << 16, SHORT_LENGTH_BITS};
}

class ShortChunkCache {
  public:
    // 2^bits entries of 32 bytes (2 MB: the distinct short chunks of megabytes of text fit),
    // allocated at the first put (an unused cache costs nothing), quadrupled while it thrashes
    // (grow_if_thrashing). Two-way: the two entries a chunk may sit in share one cache line,
    // the newer first (a put moves the older out to the second way), so one rare chunk does
    // not evict a frequent one. Bigger than the L2 cache, which costs little: the encoder
    // prefetches the lines of a block of chunks before reading them; and it asks for huge
    // pages, so those prefetches do not miss the TLB.
    explicit ShortChunkCache(int bits = SHORT_CACHE_BITS, int max_bits = SHORT_CACHE_MAX_BITS)
        : bits_(bits), max_bits_(max_bits < bits ? bits : max_bits), set_mask_(num_sets() - 1) {}

    // The set of the chunk packed as (w0, w1) (its length in w1), for prefetch(), find() and
    // get(): a caller of many lookups computes them all, prefetches every set, then reads them, so that
    // the misses overlap. While the cache is empty: a static empty set (all zero: no key of
    // pack_short; none_set() gives it to a chunk not to look up, with NO_KEY as its key), so
    // that a lookup needs no test for it.
    inline const void* entry(uint64_t w0, uint64_t w1) const {
        return sets_ ? &sets_[set_of(w0, w1)] : none_set();
    }
    // entry() for a run of lookups between which no put grows the table: the table's address
    // and mask held in registers (the empty table is none_set() with mask 0), no test.
    struct Sets {
        const void* base;
        size_t mask;
        inline const void* entry(uint64_t w0, uint64_t w1) const {
            return (const Set*)base + (set_hash(w0, w1) & mask);
        }
    };
    inline Sets sets() const { return sets_ ? Sets{sets_, set_mask_} : Sets{none_set(), 0}; }
    static inline const void* none_set() { return &EMPTY_SET; }
    // A key of no chunk (its 16th byte, the length, is 255), thus in no set.
    static const uint64_t NO_KEY = ~0ULL;
    static inline void prefetch(const void* e) { __builtin_prefetch(e); }
    // The way of the set e (entry()) that holds the chunk (w0, w1), or nullptr. Without a
    // branch: which of the two ways holds a chunk is as good as random, and a branch on it
    // mispredicts about every other lookup.
    static inline const void* find(const void* e, uint64_t w0, uint64_t w1) {
        const Set& set = *(const Set*)e;
        uint64_t in0 = set.way[0].holds(w0, w1), in1 = set.way[1].holds(w0, w1);
        uintptr_t way = (uintptr_t)&set.way[0] + (uintptr_t)in1 * sizeof(Entry);
        return (const void*)(way & ((uintptr_t)0 - (uintptr_t)(in0 | in1)));  // (0 when neither)
    }
    // The ids of the way x (find(), not nullptr) into ids; returns their count. ids has room
    // for SHORT_IDS_MAX ids: SHORT_IDS are copied whatever the count, in one move without a
    // branch, and SHORT_IDS more from the second way for a chunk of more (so a chunk that
    // starts fewer than SHORT_IDS_MAX bytes before the end of its buffer must not be answered
    // here). (A chunk of more than SHORT_IDS ids is only ever in a set's first way.)
    static inline int copy_ids(const void* x, int32_t* ids) {
        const Entry& e = *(const Entry*)x;
        std::memcpy(ids, e.ids, sizeof(e.ids));
        int count = e.count();
        if (__builtin_expect(count > SHORT_IDS, 0)) std::memcpy(ids + SHORT_IDS, (&e)[1].ids, sizeof(e.ids));
        return count;
    }
    // The ids of the chunk (w0, w1) whose entry() is e into ids (room for SHORT_IDS_MAX);
    // returns their count, or 0 when the chunk is not here.
    static inline int get(const void* e, uint64_t w0, uint64_t w1, int32_t* ids) {
        const void* x = find(e, w0, w1);
        return x == nullptr ? 0 : copy_ids(x, ids);
    }

    // Remember the chunk's ids[0:count]; a chunk with more than SHORT_IDS_MAX ids is left
    // out. One of at most SHORT_IDS ids goes to the first way and the chunk there moves to the
    // second (unless it holds more than SHORT_IDS ids: it has no room there and is dropped);
    // one of more takes the whole set. (Never moves the table: see grow_if_thrashing.)
    inline void put(uint64_t w0, uint64_t w1, const int32_t* ids, int64_t count) {
        if (count < 1 || count > SHORT_IDS_MAX) return;
        if (!sets_) allocate();
        Set& set = sets_[set_of(w0, w1)];
        Entry& first = set.way[0];
        if (!first.holds(w0, w1)) {
            // the chunks this put loses (w1 == 0: an empty way): the second way's, unless it is
            // the first's second half; and the first way's when it cannot move to the second
            // (it or the new chunk takes both ways)
            const bool first_takes_both = first.count() > SHORT_IDS;
            const bool move_first = !first_takes_both && count <= SHORT_IDS;
            evictions_ += (!first_takes_both && set.way[1].w1 != 0) + (!move_first && first.w1 != 0);
            set.way[1] = move_first ? first : Entry{};
        }
        first.w0 = w0;
        first.w1 = w1 | ((uint64_t)count << SHORT_COUNT_SHIFT);
        for (int i = 0; i < SHORT_IDS; ++i) first.ids[i] = i < count ? ids[i] : 0;
        if (count > SHORT_IDS) {
            Entry& rest = set.way[1];
            rest.w0 = 0;
            rest.w1 = SHORT_SPILL_MARK;
            for (int i = 0; i < SHORT_IDS; ++i) rest.ids[i] = SHORT_IDS + i < count ? ids[SHORT_IDS + i] : 0;
        }
    }

    // Quadruple the table (keeping its chunks) when puts evicted more chunks than 1/128 of its
    // entries since it last grew, and more than one in LOOKUPS_PER_EVICTION of the `lookups`
    // made since (the caller's count of the chunks it looked up), up to 2^max_bits entries: a
    // text with more distinct short chunks than the table holds would otherwise miss on every
    // pass. Early and by two steps, because two ways lose chunks to collisions long before the
    // table is full, and each lost chunk costs a lookup in the big cache on every later pass.
    // (10 MB of English, 136,000 distinct short chunks: doubling at a quarter, the table was
    // 2^18 entries after the first pass and the next pass missed 63,000 chunks; now it is 2^20
    // after the first pass and the next misses 15,000, most of them chunks of more than
    // three ids, which the entries held then.) The rate keeps a table whose few colliding chunks evict each other pass
    // after pass from growing for them: 10 MB of code, 53,000 distinct short chunks, sat at
    // 2^18 entries after the first pass and grew in the second, which then ran at 106-253 MB/s
    // against 182-318 for the passes after it; the misses it saved cost far less than the
    // 32 MB it allocated and filled. The share of the entries: 4 MB of Arabic under o200k (long
    // chunks of few ids) made 3,300 evictions in its first pass at 2^18 entries, under 1/64 of
    // them, and the table grew at the start of the second pass, which ran at 179-183 MB/s; at
    // 1/128 it grows in the first pass (59-60 MB/s against 63-66) and the second runs at
    // 224-237. Grows in place (the table's address space is mapped for
    // its largest size at the first put: see ZeroedBlock), but may move the table: the caller
    // calls it between lookups, never while it holds sets of entry().
    void grow_if_thrashing(size_t lookups) {
        lookups_ += lookups;
        if (bits_ >= max_bits_ || evictions_ <= ((size_t)1 << bits_) / 128 ||
            evictions_ * LOOKUPS_PER_EVICTION < lookups_)
            return;
        size_t old_sets = num_sets();
        bits_ = std::min(bits_ + 2, max_bits_);
        set_mask_ = num_sets() - 1;
        evictions_ = lookups_ = 0;
        table_.extend(num_sets() * sizeof(Set));  // (the sets past old_sets: zero)
        sets_ = (Set*)table_.data();
        // The bigger mask only adds high bits: a chunk of set i goes to a set i + k * old_sets,
        // and a set takes chunks from one old set only. So each old set is emptied and its
        // chunks put back where they go, no set being written before it was read.
        for (size_t i = 0; i < old_sets; ++i) {
            const Set here = sets_[i];
            sets_[i] = Set{};
            if (here.way[0].count() > SHORT_IDS) {  // one chunk in both ways: moved whole
                sets_[set_of(here.way[0].w0, here.way[0].w1 & SHORT_KEY_BITS)] = here;
                continue;
            }
            for (int w = 1; w >= 0; --w) {  // the older way first: the newer stays first
                const Entry& e = here.way[w];
                if (e.w1 == 0) continue;
                Set& set = sets_[set_of(e.w0, e.w1 & SHORT_KEY_BITS)];
                set.way[1] = set.way[0];
                set.way[0] = e;
            }
        }
    }

    void clear() {
        table_.release();
        sets_ = nullptr;
        evictions_ = lookups_ = 0;
    }
    // Use 2^bits entries from now on (emptied), growing up to 2^max_bits (tests make it tiny
    // and fixed, max_bits == bits, to force collisions).
    void set_bits(int bits, int max_bits) {
        clear();
        bits_ = bits;
        max_bits_ = max_bits < bits ? bits : max_bits;
        set_mask_ = num_sets() - 1;
    }
    int bits() const { return bits_; }

  private:
    struct Entry {
        uint64_t w0, w1;  // the key; w1 with the count in its SHORT_COUNT_SHIFT bits
        int32_t ids[SHORT_IDS];
        // (an empty entry is all zero: no key of pack_short, whose length is never 0)
        inline bool holds(uint64_t a, uint64_t b) const { return ((w0 ^ a) | ((w1 ^ b) & SHORT_KEY_BITS)) == 0; }
        inline int count() const { return (int)((w1 >> SHORT_COUNT_SHIFT) & 0xF); }
    };
    struct alignas(64) Set {
        Entry way[2];
    };
    static_assert(sizeof(Set) == 64, "a set is one cache line");
    static_assert(sizeof(Entry) == 32, "two ways in a set");
    static inline const Set EMPTY_SET{};  // entry() of an empty cache: all zero, no key of pack_short
    int bits_, max_bits_;
    size_t set_mask_;  // num_sets() - 1
    size_t evictions_ = 0;  // chunks put out of the table since it last grew
    size_t lookups_ = 0;    // chunks looked up since it last grew
    ZeroedBlock table_;     // sets_'s memory, mapped for 2^max_bits entries (ZeroedBlock)
    Set* sets_ = nullptr;   // nullptr until the first put

    size_t num_sets() const { return (size_t)1 << (bits_ - 1); }
    static inline size_t set_hash(uint64_t w0, uint64_t w1) {
        // One product, whose top bits depend on every bit of the word multiplied; the second
        // word goes in rotated half-way round, so that its bytes (the length among them) meet
        // the first word's in different places.
        uint64_t x = (w0 ^ ((w1 << 32) | (w1 >> 32))) * 0x9E3779B97F4A7C15ULL;
        return (size_t)(x >> 40);  // (bits <= 24: the top bits, well mixed)
    }
    inline size_t set_of(uint64_t w0, uint64_t w1) const {
        return set_hash(w0, w1) & set_mask_;
    }
    // The table, all zero, with address space for its largest size: it grows in place.
    void allocate() {
        table_.open(num_sets() * sizeof(Set), ((size_t)1 << (max_bits_ - 1)) * sizeof(Set));
        sets_ = (Set*)table_.data();
    }
};

// The ids of the tokens of 2..SHORT_KEY_MAX bytes, keyed by their bytes packed as pack_short
// packs them (w0, w1: injective, the length in the 16th byte), key and id in one slot: a lookup
// is one probe that compares two words, with no second access to a key arena. The encoder asks
// it for every substring of a short chunk at once (BpeEncoder::merge_spans), so all its misses
// overlap. Open addressing with linear probing, at most half full; read-only once built.
class ShortTokenTable {
  public:
    ShortTokenTable() { reset(0); }
    // Empty, with room for n tokens.
    void reset(size_t n) {
        size_t slots = 16;
        while (slots < 2 * n + 2) slots *= 2;
        slots_.assign(slots, Slot{0, 0, -1, 0});
        shift_ = 64;
        for (size_t s = slots; s > 1; s >>= 1) --shift_;
        used_ = 0;
    }
    size_t size() const { return used_; }
    size_t memory() const { return slots_.size() * sizeof(Slot); }

    // Add the key (w0, w1) with `id` (at most reset's n keys); a key already present keeps its id.
    void insert(uint64_t w0, uint64_t w1, int32_t id) {
        Slot* s = &slots_[probe(slots_.data(), slots_.size() - 1, home(w0, w1), [&](const Slot& t) {
            return t.w1 == 0 || (t.w0 == w0 && t.w1 == w1);
        })];
        if (s->w1 != 0) return;
        *s = Slot{w0, w1, id, 0};
        ++used_;
    }
    // The first slot to look at for key (w0, w1): prefetch() it, later find() from it.
    inline size_t home(uint64_t w0, uint64_t w1) const {
        // (the top bits of two products: each depends on every bit of its word)
        return (size_t)((w0 * 0x9E3779B97F4A7C15ULL + w1 * 0xBF58476D1CE4E5B9ULL) >> shift_);
    }
    inline void prefetch(size_t i) const { __builtin_prefetch(&slots_[i]); }
    // The id of key (w0, w1) whose home() is i, or -1.
    inline int32_t find(size_t i, uint64_t w0, uint64_t w1) const {
        const Slot* slots = slots_.data();
        size_t mask = slots_.size() - 1;
        while (true) {
            const Slot& s = slots[i];
            if (s.w0 == w0 && s.w1 == w1) return s.id;
            if (s.w1 == 0) return -1;  // (an empty slot: a key's 16th byte, its length, is never 0)
            i = (i + 1) & mask;
        }
    }

  private:
    struct Slot {
        uint64_t w0, w1;  // w1 == 0: empty
        int32_t id, unused;
    };
    std::vector<Slot> slots_;
    int shift_ = 64;
    size_t used_ = 0;
};

}  // namespace fbpt
