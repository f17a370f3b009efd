// A hash table of chunk bytes -> 64-bit count that remembers first-appearance order.
//
// Chunks are stored once, back to back, in `data` in the order they are first inserted, with
// `offsets` (n+1 entries) beside: with the counts (export_counts) exactly the arrays of a
// fastbpe.WordTable, so exporting is a copy.
//
// Speed comes from memory behaviour and from doing little per chunk, not from arithmetic: a
// corpus has ~10^5-10^6 unique chunks and ~4 bytes per chunk occurrence, so a lookup is the
// step that repeats. So
//  * a slot is one self-contained 32-byte record: short chunks (<= 15 bytes, ~99.7% of English
//    occurrences) inline as two zero-padded words with the length in the top byte (Key), the
//    first-appearance index and the count. A lookup touches one cache line and nothing else (no
//    separate counts array, no key arena, no front cache): the frequent chunks' lines stay in
//    L1/L2 by themselves, and a hit is one 16-byte compare;
//  * a chunk's key and hash are computed and its slot prefetched when the scanner hands it
//    over, and it is looked up later, in order, so that the misses of the rare chunks (a
//    random DRAM access once the table outgrows L3) overlap. The patterns whose chunks tile
//    the text are scanned and counted in one loop, each chunk looked up LAG chunks after it
//    was hashed: the scanner is one serial chain (a chunk starts where the last one ended,
//    its end found through loads and branches on its bytes), and the lookups of earlier
//    chunks, independent of it, run beside it. Scanning a batch of chunks, then counting the
//    batch, ran the two one after the other: fewer instructions (320M against 364M for 10 MB
//    of English), no faster; with the loop below at 292M, 331M. The loop runs at 3-4
//    instructions a cycle on its own, so what it executes per chunk is what it costs: half
//    the machine's issue slots when the core's other hardware thread is busy. The other
//    patterns queue their chunks and count a batch when full;
//  * the slot array is 2 MiB aligned and advised for transparent huge pages (fewer TLB misses).
// Open addressing, linear probing, capacity a power of two kept at most 70% full; the slot is
// taken from the top bits of a multiplicative hash (hash.h's fib_slot idea: the top bits of a
// product depend on every bit of the key). Collisions never change a result: a slot matches
// only on equal bytes. The probing is hash.h's, as for every table; the slot layout is this
// table's own, because the inline short keys and counts are what make it fast.
#pragma once
#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "hash.h"
#include "patterns.h"
#include "scan.h"

namespace fbpt {

// A chunk as the table sees it. A short chunk (<= 15 bytes) is its bytes and its length: the
// bytes zero-padded in k0 (bytes 0-7) and the low 7 bytes of k1 (bytes 8-14), its length in
// k1's top byte, so that the two words alone tell short chunks apart (a hit compares 16 bytes).
// A long chunk is its hash_bytes in k0 and its length in k1 (top byte 0); its bytes are
// compared in `data`. Either way k1 != 0: a slot with k1 == 0 is empty.
struct Key {
    uint64_t k0, k1;
    uint32_t len;
};

static constexpr uint32_t SHORT_CHUNK = 15;

// The key words of short chunk p[0:len] (len <= SHORT_CHUNK) when 16 bytes at p are readable:
// two whole 8-byte loads, masked without a branch on the length.
static inline void short_key_words(const uint8_t* p, size_t len, uint64_t* k0, uint64_t* k1) {
    uint64_t w0, w1;
    std::memcpy(&w0, p, 8);
    std::memcpy(&w1, p + 8, 8);
    *k0 = w0 & KEY_MASKS.m0[len];
    *k1 = (w1 & KEY_MASKS.m1[len]) | KEY_MASKS.top[len];
}

// Key of chunk p[0:len]; `limit` is the end of the buffer holding it.
static inline Key make_key(const uint8_t* p, size_t len, const uint8_t* limit) {
    Key k{0, 0, (uint32_t)len};
    if (__builtin_expect(len > SHORT_CHUNK, 0)) {
        k.k0 = hash_bytes(p, len);
        k.k1 = len;
    } else if (__builtin_expect(p + 16 <= limit, 1)) {
        short_key_words(p, len, &k.k0, &k.k1);
    } else {
        std::memcpy(&k.k0, p, len < 8 ? len : 8);
        if (len > 8) std::memcpy(&k.k1, p + 8, len - 8);
        k.k1 |= (uint64_t)len << 56;
    }
    return k;
}

// The 64-bit hash whose top bits pick a key's slot. Short keys: two multiplies (the top bits
// of a product depend on every bit of its operands); long keys: their hash_bytes, already mixed.
static inline uint64_t short_key_hash(uint64_t k0, uint64_t k1) {
    return ((k0 * 0x9E3779B97F4A7C15ULL) ^ k1) * 0xC2B2AE3D27D4EB4FULL;
}
static inline uint64_t key_hash(const Key& k) {
    return k.len > SHORT_CHUNK ? k.k0 : short_key_hash(k.k0, k.k1);
}

class ChunkTable {
  public:
    std::vector<uint8_t> data;
    std::vector<int64_t> offsets{0};
    std::vector<int64_t> counts;  // merging: the merged counts (finish_tasks, merge_partition)

    ChunkTable() { rehash(1 << 12); }
    ~ChunkTable() { std::free(slots_); }
    ChunkTable(const ChunkTable&) = delete;
    ChunkTable& operator=(const ChunkTable&) = delete;

    size_t size() const { return offsets.size() - 1; }
    // The most chunks a table holds (their indices are 32-bit).
    static constexpr uint32_t MAX_CHUNKS = 0xFFFFFFF0u;

    // The scanners' sink: one occurrence of chunk p[0:len], `limit` the end of the buffer
    // holding it. Its key and hash are computed and its slot prefetched now; it is counted
    // with its batch. drain() before the buffer holding the queued chunks goes away.
    __attribute__((always_inline)) inline void operator()(const uint8_t* p, size_t len, const uint8_t* limit) {
        enqueue(p, len, limit);
        if (queued_ == BATCH) drain();
    }

    // scan_document's step for a stretch of valid text s[0:n] (in a buffer ending at `limit`):
    // the patterns whose chunks tile the text through count_tiled, the others one chunk at a
    // time through operator().
    void text(const uint8_t* s, size_t n, const uint8_t* limit, int pattern) {
        drain();  // chunks queued before this text (invalid bytes under ERR_BYTES) come first
        switch (pattern) {
            case PAT_GPT2: return count_tiled<PAT_GPT2>(s, n, limit);
            case PAT_CL100K: return count_tiled<PAT_CL100K>(s, n, limit);
            case PAT_LLAMA3: return count_tiled<PAT_LLAMA3>(s, n, limit);
            case PAT_QWEN: return count_tiled<PAT_QWEN>(s, n, limit);
            case PAT_O200K: return count_tiled<PAT_O200K>(s, n, limit);
            case PAT_TEKKEN: return count_tiled<PAT_TEKKEN>(s, n, limit);
            default: return scan_chunks(s, n, limit, pattern, *this);
        }
    }

    // Count the queued chunks, in order.
    __attribute__((noinline)) void drain() {
        for (size_t j = 0; j < queued_; ++j) count_key(queue_[j].key, queue_[j].hash, queue_[j].p, 1);
        queued_ = 0;
    }

    // The counts in first-appearance order into out[0:size()] (counts live in the slots while
    // counting; each chunk is in one slot, so every entry is written once).
    void export_counts(int64_t* out) const {
        for (size_t k = 0; k < capacity_; ++k)
            if (!slots_[k].empty()) out[slots_[k].index] = slots_[k].count;
    }

    // Pre-tokenize and count documents: buf[ends[k-1]:ends[k]] is document k (ends[-1] = 0).
    // Returns -1, or (ERR_STRICT) the index of the first document with invalid UTF-8 with the
    // offset inside it in *bad_offset (chunks counted before it stay counted).
    int64_t add_documents(const uint8_t* buf, const int64_t* ends, size_t ndocs, int pattern, int errors,
                          int64_t* bad_offset) {
        int64_t start = 0;
        for (size_t k = 0; k < ndocs; ++k) {
            int64_t r = scan_document(buf + start, (size_t)(ends[k] - start), pattern, errors, *this, scratch_);
            drain();  // queued chunks point into this document (or into scratch_, reused next)
            if (r >= 0) {
                *bad_offset = r;
                return (int64_t)k;
            }
            start = ends[k];
        }
        return -1;
    }

    // Add another table's chunks in its order (counting consecutive parts of a corpus).
    // Returns false when a chunk's count passed 2^63 - 1 (the table is then not to be used).
    bool add_table(const uint8_t* d, const int64_t* offs, const int64_t* cnts, size_t n) {
        count_overflowed_ = false;
        const uint8_t* end = d + offs[n];
        // An empty table takes every chunk: room for all of them now (one rehash at most,
        // instead of one per doubling). A table that holds chunks already (consecutive parts
        // of one corpus share most of theirs) grows as it goes, only as far as it needs.
        if (size() == 0) reserve(n);
        data.reserve(data.size() + (size_t)offs[n]);
        offsets.reserve(offsets.size() + n);
        for (size_t k = 0; k < n; k += BATCH) {
            size_t m = n - k < BATCH ? n - k : BATCH;
            for (size_t j = 0; j < m; ++j) enqueue(d + offs[k + j], (size_t)(offs[k + j + 1] - offs[k + j]), end);
            for (size_t j = 0; j < m; ++j) count_key(queue_[j].key, queue_[j].hash, queue_[j].p, cnts[k + j]);
            queued_ = 0;
        }
        return !count_overflowed_;
    }

    // Room for `n` chunks in all without a rehash (a hint: the table grows past it as needed),
    // and for their offsets and about their bytes (English under GPT-2's pattern: 8.2-8.4
    // bytes a unique chunk), so that the arrays are not moved to fresh pages as they double:
    // the pages taken and the bytes copied were a tenth of counting's page clearing (reserved
    // pages are taken only as they are written).
    void reserve(size_t n) {
        if (n > MAX_CHUNKS) throw std::length_error("more than 2^32 - 16 unique chunks");
        size_t capacity = capacity_;
        while (n * 10 > capacity * 7) capacity *= 2;
        if (capacity != capacity_) rehash(capacity);
        offsets.reserve(n + 1);
        data.reserve(n * 9);
    }

    // ---- Counting on several threads. Tasks (consecutive parts of the corpus, numbered in
    // corpus order) are handed out in order to the threads, each counting its tasks into a table
    // of its own and calling begin_task(t) before task t; so a table's chunks from task t are the
    // ones inserted while it counted t, in first-appearance order within t. A chunk's place in
    // the whole corpus is (the first task holding it, its place in that task): the table that
    // counted that task holds it first among them and is its *owner*. merge_partition finds
    // each chunk's owner and total count (read-only on the slot positions, so the partitions
    // of the key space run at the same time without locks), and merged_write reads the owners'
    // chunks out task by task (runs of tasks at the same time): the table one thread would have
    // counted.

    void begin_task(int64_t task) {
        if (task < 0 || task >= (int64_t)NO_TASK) throw std::length_error("tasks are numbered from 0 below 2^32 - 1");
        runs_.push_back(TaskRun{task, (int64_t)size()});
        task_ = (uint32_t)task;
    }
    int64_t last_task() const { return runs_.empty() ? -1 : runs_.back().task; }
    // Whether merge_partition may take this table: every chunk counted in a task (begin_task
    // came before the first chunk) and finish_tasks called after the last.
    bool ready_to_merge() const {
        return counts.size() == size() && (size() == 0 || (!runs_.empty() && runs_[0].begin == 0));
    }

    // After the last task, before merge_partition: room for the merged counts.
    void finish_tasks() { counts.assign(size(), 0); }

    // Settle the chunks of hash partition `part` of `parts` in tables[self], looking each one
    // up in the later tables (the earlier ones have settled it already): afterwards counts[i]
    // of every chunk of the partition, in every table, is its total in its owner and 0 in the
    // others. One thread per partition; two partitions never touch the same chunk's slots.
    // Adds the partition's unique chunks and their bytes to task_chunks[t] and task_bytes[t]
    // of the task t where each first appears (where merged_write puts it).
    void merge_partition(ChunkTable* const* tables, size_t ntables, size_t self, size_t part, size_t parts,
                         int64_t* task_chunks, int64_t* task_bytes) {
        if (size() == 0) return;
        // the chunks still to settle, looked up a batch at a time: their slots in the later
        // tables are prefetched first, so that the misses overlap
        struct Unsettled {
            Slot* slot;
            uint64_t hash;
        };
        Unsettled batch[BATCH];
        size_t queued = 0;
        auto settle_batch = [&]() {
            for (size_t v = self + 1; v < ntables; ++v) {
                const ChunkTable& t = *tables[v];
                if (t.size() == 0) continue;
                for (size_t j = 0; j < queued; ++j) __builtin_prefetch(&t.slots_[batch[j].hash >> t.shift_]);
            }
            for (size_t j = 0; j < queued; ++j) {
                int64_t task = settle(tables, ntables, self, *batch[j].slot, batch[j].hash);
                task_chunks[task] += 1;
                task_bytes[task] += batch[j].slot->len();
            }
            queued = 0;
        };
        // the keys of the partition have their home slot in [lo, hi] (hash_part: top bits of
        // the hash, like the home slot); linear probing keeps each at or after its home, with
        // no empty slot between, so they lie in [lo, hi] or in the probe run that follows hi
        size_t lo = part * capacity_ / parts, hi = (part + 1) * capacity_ / parts;
        for (size_t step = 0; step < capacity_; ++step) {
            size_t k = (lo + step) & mask_;
            Slot& s = slots_[k];
            if (s.empty()) {
                if (lo + step >= hi) break;
                continue;
            }
            uint64_t h = key_hash(s.key());
            if (hash_part(h, parts) != part) continue;
            if (s.count <= 0) {  // settled from an earlier table: -total in the owner, 0 elsewhere
                counts[s.index] = -s.count;
                continue;
            }
            batch[queued++] = Unsettled{&s, h};
            if (queued == BATCH) settle_batch();
        }
        settle_batch();
    }

    // The tasks (task, table, first and end index in that table) in corpus order.
    struct TaskSpan {
        int64_t task;
        size_t table;
        int64_t begin, end;
    };
    static std::vector<TaskSpan> task_spans(ChunkTable* const* tables, size_t ntables) {
        std::vector<TaskSpan> spans;
        for (size_t w = 0; w < ntables; ++w) {
            const std::vector<TaskRun>& runs = tables[w]->runs_;
            for (size_t r = 0; r < runs.size(); ++r)
                spans.push_back(TaskSpan{runs[r].task, w, runs[r].begin,
                                         r + 1 < runs.size() ? runs[r + 1].begin : (int64_t)tables[w]->size()});
        }
        std::sort(spans.begin(), spans.end(), [](const TaskSpan& a, const TaskSpan& b) { return a.task < b.task; });
        return spans;
    }

    // The merged table's chunks first seen in tasks [task_lo, task_hi), in corpus
    // first-appearance order, into data_out[byte_at:byte_end], counts_out[chunk_at:chunk_end]
    // and offsets_out[chunk_at + 1:chunk_end + 1] (where merge_partition's task totals put them;
    // runs of tasks are written at the same time). Returns false, having written nothing beyond
    // those ends, when the chunks do not fill them exactly.
    static bool merged_write(ChunkTable* const* tables, size_t ntables, int64_t task_lo, int64_t task_hi,
                             uint8_t* data_out, int64_t* offsets_out, int64_t* counts_out, int64_t chunk_at,
                             int64_t chunk_end, int64_t byte_at, int64_t byte_end) {
        int64_t n = chunk_at, at = byte_at;
        for (const TaskSpan& span : task_spans(tables, ntables)) {
            if (span.task < task_lo || span.task >= task_hi) continue;
            const ChunkTable& t = *tables[span.table];
            const int64_t source_end = t.offsets[t.size()];
            for (int64_t i = span.begin; i < span.end; ++i) {
                if (t.counts[i] <= 0) continue;  // owned by a table that counted an earlier task
                int64_t from = t.offsets[i], len = t.offsets[i + 1] - from;
                if (n >= chunk_end || at + len > byte_end) return false;
                if (len <= 16 && from + 16 <= source_end && at + 16 <= byte_end) {
                    // a short chunk as two 8-byte moves; the bytes past it are written over next
                    std::memcpy(data_out + at, t.data.data() + from, 16);
                } else {
                    std::memcpy(data_out + at, t.data.data() + from, (size_t)len);
                }
                at += len;
                counts_out[n] = t.counts[i];
                offsets_out[++n] = at;
            }
        }
        return n == chunk_end && at == byte_end;
    }

  private:
    struct Queued {
        Key key;
        uint64_t hash;
        const uint8_t* p;
    };
    // Chunks per batch: enough for the slot prefetches to land before the chunks are counted,
    // few enough that the queue stays in L1.
    static constexpr size_t BATCH = 64;
    Queued queue_[BATCH];
    size_t queued_ = 0;
    bool count_overflowed_ = false;  // add_table summed a count past 2^63 - 1 (count_key)

    // Scan and count the chunks of s[0:n] (see the top of the file): the chunk ending at e is
    // hashed, its slot prefetched, and counted when the scan is LAG chunks further on.
    // This loop is what counting costs (it runs at a few instructions per cycle, so each
    // instruction in it counts): the starts of a block the scanner found, the slot array and
    // its mask are held in locals (reloaded only after an insert, which may rehash), a chunk
    // waits with its home slot's address (not its hash, which would need the shift again, nor
    // its index, which would need a shift and an add; a probe past the home takes the index
    // back), and a short chunk is matched against a slot with one branch (its two key words,
    // the length in them, compared at once). The first LAG chunks (nothing to count yet) and the chunks
    // of the last 15 bytes of the buffer (fewer than 16 bytes readable) have loops of their
    // own, so that the main loop tests neither.
    template <int PATTERN>
    void count_tiled(const uint8_t* s, size_t n, const uint8_t* limit) {
        // A chunk on its way: a short one's key words; a long one's length in k0 and 0 in k1
        // (a key no slot holds, so that count_short leaves it to count_key). 32 bytes: an
        // entry is found with a shift, and the key words are 16-byte aligned.
        struct alignas(32) Hashed {
            uint64_t k0, k1;
            Slot* home;  // the home slot, slots_ + (hash >> shift_) (moved by a rehash: rehome)
            const uint8_t* p;
        };
        // enough chunks in flight for a prefetch to land, few enough that the ring stays in L1
        // (2-core AMD EPYC: 16 faster than 8, no slower than 32; 2-core Intel Xeon, 100 MB of
        // English, one worker, GPT-2 pattern, steady calls: 16 0.20-0.21 s, 32 0.18-0.195 s,
        // 64 0.18-0.19 s)
        constexpr size_t LAG = 32;
        Hashed ring[LAG];
        // a chunk starting before offset `whole` has 16 readable bytes
        const size_t whole = limit - s >= 16 ? (size_t)(limit - s) - 15 : 0;
        ChunkStarts<PATTERN> scanner(s, n);
        ChunkCursor<PATTERN> cursor{scanner};
        Slot* slots = slots_;
        size_t mask = mask_;
        // any chunk: its key words (as above) and home slot into r
        auto hash_any = [&](Hashed& r, size_t q, size_t len) {
            const Key key = make_key(s + q, len, limit);
            r.p = s + q;
            r.k0 = key.len > SHORT_CHUNK ? key.len : key.k0;
            r.k1 = key.len > SHORT_CHUNK ? 0 : key.k1;
            r.home = slots + (key_hash(key) >> shift_);
            __builtin_prefetch(r.home);
        };
        // count the chunk waiting in r (its lookup in count_short: the hot path, inline);
        // chunks [first, end) are still waiting after it. Whether the table was rehashed.
        auto count = [&](Hashed& r, size_t first, size_t end) {
            if (__builtin_expect(count_short(slots, mask, &r.k0, r.home), 1)) return false;
            const int shift = shift_;
            count_ring(r.k0, r.k1, r.p, limit);
            slots = slots_;
            mask = mask_;
            if (shift_ == shift) return false;
            // a rehash moved every home slot: those of the chunks still waiting again
            for (size_t i = first; i < end; ++i) rehome(ring[i % LAG], limit);
            return true;
        };
        size_t q = 0;  // the next chunk's start
        size_t j = 0;  // chunks hashed so far
        for (; q < n && j < LAG; ++j) {
            const size_t e = cursor.next(q);
            hash_any(ring[j], q, e - q);
            q = e;
        }
        const size_t fast_end = whole < n ? whole : n;
        while (q < fast_end) {
            const int shift = shift_;  // a constant of the loop below, which a rehash ends
            while (q < fast_end) {
                const size_t e = cursor.next(q);
                Hashed& r = ring[j % LAG];
                if (__builtin_expect(count(r, j - LAG + 1, j), 0)) {  // the chunk LAG before
                    hash_any(r, q, e - q);  // (a rehash: with the new shift)
                    q = e;
                    ++j;
                    break;
                }
                const size_t len = e - q;
                if (__builtin_expect(len <= SHORT_CHUNK, 1)) {
                    r.p = s + q;
                    short_key_words(r.p, len, &r.k0, &r.k1);
                    r.home = slots + (short_key_hash(r.k0, r.k1) >> shift);
                    __builtin_prefetch(r.home);
                } else {
                    hash_any(r, q, len);
                }
                q = e;
                ++j;
            }
        }
        for (; q < n; ++j) {
            const size_t e = cursor.next(q);
            Hashed& r = ring[j % LAG];
            count(r, j - LAG + 1, j);
            hash_any(r, q, e - q);
            q = e;
        }
        for (size_t i = j > LAG ? j - LAG : 0; i < j; ++i) count(ring[i % LAG], i + 1, j);
    }

    // The Key of a count_tiled ring entry (k0, k1 as there: a long chunk's is made again).
    static inline Key ring_key(uint64_t k0, uint64_t k1, const uint8_t* p, const uint8_t* limit) {
        return k1 ? Key{k0, k1, (uint32_t)(k1 >> 56)} : make_key(p, (size_t)k0, limit);
    }

    // count_key for a count_tiled ring entry.
    __attribute__((noinline)) void count_ring(uint64_t k0, uint64_t k1, const uint8_t* p, const uint8_t* limit) {
        const Key key = ring_key(k0, k1, p, limit);
        count_key(key, key_hash(key), p, 1);
    }

    // A count_tiled ring entry's home slot after a rehash.
    template <class Hashed>
    __attribute__((noinline)) void rehome(Hashed& r, const uint8_t* limit) const {
        r.home = slots_ + (key_hash(ring_key(r.k0, r.k1, r.p, limit)) >> shift_);
    }

    // Queue a chunk with its key and hash, and prefetch its slot.
    __attribute__((always_inline)) inline void enqueue(const uint8_t* p, size_t len, const uint8_t* limit) {
        Queued& q = queue_[queued_++];
        q.hash = key_and_hash(p, len, limit, q.key);
        q.p = p;
        __builtin_prefetch(&slots_[q.hash >> shift_]);
    }

    // The key of chunk p[0:len] into `key`, and its hash. The common case (a short chunk with
    // 16 readable bytes) is written out here so that the key stays in registers.
    __attribute__((always_inline)) static inline uint64_t key_and_hash(const uint8_t* p, size_t len,
                                                                       const uint8_t* limit, Key& key) {
        if (__builtin_expect(len <= SHORT_CHUNK && p + 16 <= limit, 1)) {
            key.len = (uint32_t)len;
            short_key_words(p, len, &key.k0, &key.k1);
            return short_key_hash(key.k0, key.k1);
        }
        key = make_key(p, len, limit);
        return key_hash(key);
    }

    struct alignas(32) Slot {
        uint64_t k0, k1;   // as Key
        uint32_t task;     // the task the chunk was first counted in (begin_task), or NO_TASK
        uint32_t index;    // first-appearance index
        int64_t count;
        // An empty slot is all zero; what marks it is k1 == 0, which no key has (Key).
        bool empty() const { return k1 == 0; }
        // The chunk's length, which its key words hold: a short chunk's in k1's top byte
        // (1..15), a long one's in k1 (whose top byte is then 0).
        uint32_t len() const { return (uint32_t)(k1 >> 56 ? k1 >> 56 : k1); }
        Key key() const { return Key{k0, k1, len()}; }
    };
    static_assert(sizeof(Slot) == 32, "two slots per cache line");

    // count_tiled's step: one more occurrence of a short chunk already in the table, its key
    // words at key[0:2] (16-byte aligned), found by probing from its home slot `home` (mask:
    // the capacity - 1); false, nothing changed, when the chunk is new, or long (k1 = 0: no
    // slot matches) (count_key's part: an insert, or bytes compared in `data`).
    __attribute__((always_inline)) static inline bool count_short(Slot* slots, size_t mask, const uint64_t* key,
                                                                  Slot* home) {
#ifdef __SSE2__
        const __m128i k = _mm_load_si128((const __m128i*)key);
#endif
        Slot* x = home;
        while (true) {
#ifdef __SSE2__
            // the slot's k0 and k1 against the key's at once
            const __m128i eq = _mm_cmpeq_epi8(_mm_load_si128((const __m128i*)x), k);
            const bool hit = _mm_movemask_epi8(eq) == 0xFFFF;
#else
            const bool hit = ((x->k0 ^ key[0]) | (x->k1 ^ key[1])) == 0;
#endif
            if (__builtin_expect(hit, 1)) {
                x->count += 1;
                return true;
            }
            if (x->empty()) return false;
            x = slots + (((size_t)(x - slots) + 1) & mask);  // (a probe past the home: rare)
        }
    }

    Slot* slots_ = nullptr;
    size_t capacity_ = 0, mask_ = 0;
    int shift_ = 64;
    std::string scratch_;

    struct TaskRun {
        int64_t task;   // begin_task's task
        int64_t begin;  // the index of the first chunk inserted while counting it
    };
    std::vector<TaskRun> runs_;  // increasing in both fields
    // The task being counted, which a new chunk's slot records: merge_partition compares the
    // tasks of a chunk's slots in two tables without a search of either's runs (a search per
    // table was a third of the merge).
    static constexpr uint32_t NO_TASK = 0xFFFFFFFFu;
    uint32_t task_ = NO_TASK;

    // The partition of a key among `parts`, from the top bits of its hash.
    static size_t hash_part(uint64_t h, size_t parts) { return (size_t)(((h >> 32) * parts) >> 32); }

    // merge_partition's step for a chunk not settled yet (its slot's count > 0), so this is the
    // first table holding it. Returns the task where it first appears.
    int64_t settle(ChunkTable* const* tables, size_t ntables, size_t self, Slot& s, uint64_t h) {
        const Key key = s.key();
        // a long chunk's bytes, to compare (a short one's key is its bytes: no load from a
        // random place in offsets)
        const uint8_t* p = key.len > SHORT_CHUNK ? data.data() + offsets[s.index] : nullptr;
        int64_t total = s.count;
        Slot* owner = &s;
        int64_t owner_task = s.task;
        for (size_t v = self + 1; v < ntables; ++v) {
            ChunkTable& t = *tables[v];
            if (t.size() == 0) continue;
            size_t j = probe(t.slots_, t.mask_, (size_t)(h >> t.shift_),
                             [&](const Slot& x) { return x.empty() || t.same(x, key, p); });
            Slot& x = t.slots_[j];
            if (x.empty()) continue;
            total += x.count;
            int64_t task = x.task;
            if (task < owner_task) {
                owner->count = 0;
                owner = &x;
                owner_task = task;
            } else {
                x.count = 0;
            }
        }
        counts[s.index] = owner == &s ? total : 0;
        owner->count = owner == &s ? total : -total;
        return owner_task;
    }

    inline bool same(const Slot& s, const Key& k, const uint8_t* p) const {
        if (s.k0 != k.k0 || s.k1 != k.k1) return false;  // (k1 holds the length)
        return __builtin_expect(k.len <= SHORT_CHUNK, 1) || same_long(s, p);
    }
    // The bytes of a long chunk (its key is its hash) against the slot's chunk in `data`; out
    // of line, so that the short keys' hot path saves no registers for the call.
    __attribute__((noinline)) bool same_long(const Slot& s, const uint8_t* p) const {
        return std::memcmp(data.data() + offsets[s.index], p, s.len()) == 0;
    }

    // Add `count` occurrences of the chunk; a new chunk gets the next index (first-appearance
    // order).
    __attribute__((always_inline)) inline void count_key(const Key& k, uint64_t h, const uint8_t* p, int64_t count) {
        size_t i = probe(slots_, mask_, (size_t)(h >> shift_),
                         [&](const Slot& s) { return s.empty() || same(s, k, p); });
        if (__builtin_expect(!slots_[i].empty(), 1)) {
            // (counts that come from tables, add_table's, can be anything up to 2^63 - 1: a sum
            // past it is noted, for add_table to report, and held at the largest count)
            if (__builtin_expect(__builtin_add_overflow(slots_[i].count, count, &slots_[i].count), 0)) {
                slots_[i].count = INT64_MAX;
                count_overflowed_ = true;
            }
            return;
        }
        insert(i, k, h, p, count);
    }

    __attribute__((noinline)) void insert(size_t i, const Key& k, uint64_t h, const uint8_t* p, int64_t count) {
        if ((size() + 1) * 10 > capacity_ * 7) {  // load <= 0.7
            if (size() + 1 >= MAX_CHUNKS) throw std::length_error("more than 2^32 - 16 unique chunks");
            rehash(capacity_ * 2);
            i = probe(slots_, mask_, (size_t)(h >> shift_), [](const Slot& s) { return s.empty(); });
        }
        slots_[i] = Slot{k.k0, k.k1, task_, (uint32_t)size(), count};
        data.insert(data.end(), p, p + k.len);
        offsets.push_back((int64_t)data.size());
    }

    static Slot* allocate(size_t capacity) {
        size_t bytes = capacity * sizeof(Slot);
        size_t align = bytes >= (2u << 20) ? (2u << 20) : 64;
        void* mem = nullptr;
        if (posix_memalign(&mem, align, bytes) != 0) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
        if (align == (2u << 20)) madvise(mem, bytes, MADV_HUGEPAGE);  // a hint; failure is fine
#endif
        std::memset(mem, 0, bytes);
        return (Slot*)mem;
    }

    void rehash(size_t capacity) {
        Slot* fresh = allocate(capacity);
        size_t m = capacity - 1;
        int shift = 64 - __builtin_ctzll(capacity);
        for (size_t k = 0; k < capacity_; ++k) {
            const Slot& s = slots_[k];
            if (s.empty()) continue;
            uint64_t h = key_hash(s.key());
            fresh[probe(fresh, m, (size_t)(h >> shift), [](const Slot& t) { return t.empty(); })] = s;
        }
        std::free(slots_);
        slots_ = fresh;
        capacity_ = capacity;
        mask_ = m;
        shift_ = shift;
    }
};

}  // namespace fbpt
