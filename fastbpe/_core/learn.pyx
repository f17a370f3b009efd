# distutils: language = c++
"""Incremental BPE merge learning: the compiled twin of ``fastbpe.reference.learn``.

Data layout (ids, never Python objects, in the loop):

* The word table is one flat array of symbol ids, ``sym``, words laid out in table order. Each
  position is linked to its live neighbours inside its word by ``prev``/``nxt`` (-1 at a word's
  edge). Merging ``(a, b)`` at position ``p`` writes the new id at ``p`` and kills ``nxt[p]``
  (``sym == DEAD``); a symbol therefore always lives at the position of its first base symbol.
* Pairs get dense ids through the open-addressing index of pair_ids.h. Per pair:
  its exact weighted count, a lower bound on its first position, and the positions where it was
  created (entries go stale when a neighbour merges; they are re-checked when read), kept in
  one pool for all pairs (position_lists.h).
* A binary heap (heap.h) of (count, first position, pair) entries (merge_heap.h) with lazy
  revalidation picks the next merge.
* Chunks of at least ``LONG_CHUNK_SYMBOLS`` symbols (one line without whitespace can be the whole
  input) skip the 16-byte nodes: they live in the long-chunk store of long_chunks.h, about one
  byte and one bit per symbol (a bitset of token starts; the next token is the next set bit).
  A pair's list holds their positions as ``~position`` (nodes' are >= 0), except for step 0,
  which creates every pair of the chunk at once: it lists ``~(COARSE | block)`` once per coarse
  block of ``2**COARSE_BITS`` positions, whose surviving occurrences (two one-symbol base
  tokens side by side) a byte search finds again. Both kinds of chunk share the pair table,
  counts and heap; long positions are merged in ascending order, checked as they are read.
  A pair created in a long chunk below the floor (see below) and not seen elsewhere is a
  *single pair*: an index slot naming its one position, no record, list or heap entry (most
  pairs of one long chunk occur once); a second occurrence gives it its record (_promote), and
  a record left with one occurrence, in a long chunk, below the floor, is a single pair again
  (_demote_lowered).

The tie rule, as the reference states it: highest count, then the pair seen first when scanning
the words in table order, left to right. Positions are compared as 64-bit tie keys in scan
order: node ``p`` has key ``p << 32``, and a long chunk placed after ``k`` nodes has keys
``((k - 1) << 32) + 1 + position`` (store positions are below 2**31), between those of the nodes
around it. The key is (count descending, first live tie key ascending). Invariant kept for every
pair counted at least ``heap_cut`` (at least the run's ``min_frequency``, ``heap_floor``: a pair
below the cut cannot be merged while one above it is left, and an added occurrence that lifts it
queues it): the heap holds an entry whose key is at least as good as the pair's true key. When the
heap runs empty the cut is lowered and the pairs between the two cuts are queued (_refill_heap):
the heap holds the pairs about to be merged, not every pair of the corpus.
Keys only improve through a count increase (or a new, earlier occurrence, which comes with one),
and every increase pushes a fresh entry at the end of the merge step; decreases push nothing. A
popped entry is accepted only when its count and first position are the pair's true current ones;
otherwise it is re-pushed with the true (worse) key. The accepted entry is then the true best.

Optional tie rule ``tie_ranks`` (Hugging Face's ``BpeTrainer``): among equal counts, the pair
with the smaller ``(rank[left], rank[right])``, where ``rank`` is given for the base ids and a
merged token's rank is its id (merged ids come after every base id, in creation order, as in
Hugging Face). That key is fixed per pair, so the heap entry's ``first`` field holds it and no
position check is needed. Without ``tie_ranks`` nothing above changes.

Tokens are deduplicated by content, as in the reference where a symbol is its string: when a
merge produces bytes that an existing token already has, the existing id is reused.
"""
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, uint8_t
from libcpp.string cimport string
from libcpp.unordered_map cimport unordered_map
from libcpp.utility cimport pair as cpp_pair
from cython.operator cimport dereference as deref
from libcpp.vector cimport vector
from libcpp.algorithm cimport sort, unique
from cpython.exc cimport PyErr_CheckSignals

from fastbpe._core.poll cimport POLL_UNITS

import numpy as np

from fastbpe._core.long_chunks cimport LongChunks
from fastbpe._core.merge_heap cimport MergeCandidate, MergeHeap
from fastbpe._core.pair_ids cimport MappedArray, PairIds, PairRecord
from fastbpe._core.position_lists cimport PositionLists

cdef extern from "node_array.h" namespace "fbpt" nogil:
    cdef cppclass UninitHugeAllocator[T]:
        pass

cdef extern from *:
    # a hint that the node at p is about to be written (read-write, little reuse)
    void prefetch_node "__builtin_prefetch"(const void* p, int rw, int locality) noexcept nogil

cdef extern from *:
    """
    #include <chrono>
    static inline double fbpt_steady_seconds() {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    }
    """
    double steady_seconds "fbpt_steady_seconds"() noexcept nogil

# A batch of merges between two looks at Ctrl-C (and two progress reports) ends after this many
# seconds even short of its merges: a merge of one huge chunk can take tens of milliseconds
# (a 20 MB word: 300 merges/s), where 512 of them made Ctrl-C wait seconds. A module attribute,
# read when a run starts, for tests to lower.
BATCH_SECONDS = 0.1
# How many occurrences ahead to prefetch: merging is bound by cache misses on random positions.
cdef size_t PREFETCH_AHEAD = 16
# ... and the pair-table slots of its neighbours' pairs, once its node is (likely) in cache.
cdef size_t PREFETCH_PAIRS_AHEAD = 6

# Step 0 looks at Ctrl-C every POLL_MASK + 1 pairs of a long chunk (about 50 ms): one chunk of
# 100 MB took 5 s there.
cdef Py_ssize_t POLL_MASK = (1 << 20) - 1
# A merge step looks every POLL_UNITS units of its work (poll.h's count: positions merged or
# checked, list entries filtered, 16 bytes of a coarse block searched; a few ms): one step of
# one 48 MB chunk took up to 3.5 s (the coarse blocks' searches, a compaction).
cdef int32_t DEAD = -1
cdef int64_t NO_POSITION = 0x7FFFFFFFFFFFFFFF
cdef int32_t COARSE = 1 << 30   # marks a coarse block number in a pair's list (learner field coarse_bits)
cdef size_t SCRATCH_KEEP = 1 << 18  # values a merge step's scratch list keeps between steps (_release_scratch)
cdef int32_t SINGLE = -2        # PairIds::SINGLE: an index slot's id SINGLE - p is a single pair at p
cdef int64_t HALVED_SLACK = 4096  # entries a list may hold past 3/2 of its count (_drop_stale_halved)
cdef int64_t HALVED_FROM = 1024   # counts below this are left to compaction (_drop_stale_halved)

# Chunks of at least this many symbols go to the long-chunk store (long_chunks.h) instead of
# nodes; step 0 lists their pairs per coarse block of 2**COARSE_BITS symbols. Module
# attributes, read when a learner is made, so that tests can lower them.
LONG_CHUNK_SYMBOLS = 65536
COARSE_BITS = 16
# From this many pairs on, the pair index fills to 13/16 instead of 1/2 (pair_ids.h): memory
# over probe length. A module attribute, read when a learner is made, for tests to lower.
DENSE_INDEX_PAIRS = 1 << 20


# The per-occurrence methods are compiled twice, for two layouts (a fused type, passed as a null
# pointer: the branch is chosen once per merge step and the checks below it at compile time).
# A table without long chunks (ordinary text) has no single pair, no pair to demote and no
# long-chunk entry, so its merge loop skips every test for them (and the tests no longer keep
# the per-occurrence methods from being inlined): on 10 MB of English the learner's instructions
# fell from 530M to 470M.
cdef struct NodesOnly:
    char unused
cdef struct WithLongChunks:
    char unused
ctypedef fused Layout:
    NodesOnly
    WithLongChunks

cdef struct Node:
    # One symbol position; the four fields share a cache line, read together when merging.
    int32_t sym     # token id, or DEAD once merged into its left neighbour
    int32_t prev    # previous live position in the word, -1 at the word's start
    int32_t nxt     # next live position in the word, -1 at the word's end
    # The word's count when every count is below 2**31 (``counts_in_nodes``), else the word's
    # index in ``word_count``. In the node, the count costs no cache miss of its own: an array
    # of counts (3.7 MB for 100 MB of English) missed on most merged occurrences.
    int32_t weight


cdef inline void set_node(Node* node, int32_t q, int32_t sym, int32_t weight, bint first, bint last) noexcept nogil:
    """Node ``q`` of a word: symbol ``sym``, linked to nodes q - 1 and q + 1 unless it is the
    word's ``first`` or ``last``."""
    node.sym = sym
    node.weight = weight
    node.prev = -1 if first else q - 1
    node.nxt = -1 if last else q + 1


cdef union WeightOrDest:
    int64_t weight        # pass 1: summed word counts of the key's occurrences in the run
    int32_t* dest         # pass 2: where its list takes the next position


cdef struct KeyTally:
    # Step 0 of a byte-level table: one per 16-bit pair key (left << 8 | right), read and
    # written together on every occurrence (one cache line); 16 bytes, 1 MB for all keys.
    WeightOrDest w
    int32_t occurrences   # 0: not seen in the run
    int32_t first         # node of its first occurrence


cdef class MergeLearner:
    """Learns merges over a flat word table; one instance per training run.

    ``symbols``: int32 ids of every base symbol, words concatenated in table order (or uint8:
    byte-level ids, read without an int32 copy of the table).
    ``word_starts``: int64, ``len(words) + 1`` offsets into ``symbols``.
    ``word_counts``: int64 count of each word (positive).
    ``token_bytes``: the content of each base id as bytes (UTF-8 for ``str`` symbols), used only
    to recognise when a merge recreates an existing token.
    ``long_chunk``, ``coarse_bits``: the long-chunk store's settings (default: the module's
    ``LONG_CHUNK_SYMBOLS`` and ``COARSE_BITS``); they change memory and time, never the merges.
    """

    cdef vector[Node, UninitHugeAllocator[Node]] node   # uninitialised until step 0 sets it (node_array.h)
    cdef bint counts_in_nodes                 # every word count < 2**31: nodes hold them (Node.weight)
    cdef vector[int64_t] word_count           # by word, unless counts_in_nodes
    cdef PairIds pair_index                   # (left, right) -> index in ``pairs`` (pair_ids.h)
    cdef MappedArray[PairRecord] pairs       # by pair id (pair_ids.h)
    cdef PositionLists pair_where             # positions where each pair was created (list = pair id)
    cdef vector[int32_t] merging              # the positions of the pair being merged
    # Long chunks (at least ``long_chunk`` symbols): a byte and a bit per symbol (long_chunks.h).
    # A pair's list holds, besides node positions (>= 0), ``~block`` for each block of the store
    # where it was created (an occurrence belongs to the block of its left token's start).
    cdef LongChunks longs
    cdef vector[int32_t] merging_long       # the blocks of the pair being merged
    cdef vector[uint32_t] long_keys           # scratch: a list's long-chunk entries (_long_entries)
    # Step 0 lists coarse blocks of 2**coarse_bits positions (``~(COARSE | number)``): with
    # every pair of a chunk created at once, fine blocks would be nearly one entry per symbol.
    cdef int coarse_bits
    cdef int64_t long_total, long_kept      # block entries in the lists; after the last compaction
    cdef int64_t live_long                  # live tokens of the long chunks
    # live pairs of the long chunks made of two one-symbol (base) tokens: step 0 lists them
    # coarse, and no merge creates one, so they never have a position entry
    cdef int64_t base_long
    # coarse entries in the lists: step 0's, then as many as the last compaction kept (no merge
    # makes one, so their number only falls: a bound from above between compactions). Left at
    # step 0's number, the bound (_merge's compaction trigger) counted 1.09M entries where 0.42M
    # were left late in the run on one 50 MB word of English letters, and no compaction came
    # in the second half of the merges.
    cdef int64_t coarse_listed
    cdef int64_t coarse_kept                # coarse entries _drop_stale kept (counted by _compact_where)
    # Entries in pair_where and live symbols: stale entries are dropped from every list once
    # they outnumber the live ones (_compact_where), which bounds the lists' memory.
    cdef int64_t where_total, live_symbols
    cdef int64_t long_dropped               # long-chunk entries _drop_stale_halved dropped since the last compaction
    # stale entries tolerated beyond the live ones (tests set it very negative: compact
    # after every merge)
    cdef public int64_t compact_slack
    # occurrences replaced by merges so far (each updates up to four pair counts): the work a
    # merge phase cannot avoid, against which its time is judged
    cdef readonly int64_t merged_occurrences
    cdef readonly int64_t compactions        # of the position lists so far (_compact_where)
    cdef vector[int32_t] touched              # pairs whose count rose in this step, each once
    cdef vector[uint8_t] is_touched           # by pair id: 1 while listed in ``touched`` (0 when freed)
    cdef vector[int32_t] zeroed               # pairs whose count fell to 0 in this step
    cdef vector[int32_t] lowered              # pairs whose count fell below the floor in this step
    cdef vector[int32_t] halved               # pairs whose count fell below a power of two in this step
    cdef vector[int32_t] free_pairs           # ids of freed pairs, reused by new pairs
    cdef MergeHeap heap
    # Pairs counted below the floor (the run's min_frequency) need no heap entry: only an
    # added occurrence can lift them to it, and that queues them. Most pairs of a large corpus
    # occur once: this keeps the heap a fraction of the pair table.
    cdef int64_t heap_floor
    # Only pairs counted at least this (>= heap_floor) are queued: a quarter of the best count
    # when the heap was last refilled (_refill_heap). Most pairs never come near the top.
    cdef int64_t heap_cut
    # optional Hugging Face tie rule: rank of each base id (empty = the first-seen rule)
    cdef vector[int64_t] tie_rank
    # tokens
    cdef vector[string] token
    cdef unordered_map[string, int32_t] token_id
    # results
    cdef vector[int32_t] out_left, out_right, out_new
    cdef vector[int64_t] out_count
    cdef bint initialised                     # __init__ ran (its state is built once)
    cdef int64_t poll_left                    # units of a merge step's work until its next look (_tick)
    # a Ctrl-C stopped a merge step half-way: the tables are torn and the learner refuses to run
    cdef bint torn

    def __init__(self, symbols, const int64_t[::1] word_starts,
                 const int64_t[::1] word_counts, list token_bytes, tie_ranks=None,
                 long_chunk=None, coarse_bits=None):
        cdef const int32_t[::1] ids32
        cdef const uint8_t[::1] ids8
        cdef bint bytes_only = isinstance(symbols, np.ndarray) and symbols.dtype == np.uint8
        if bytes_only:
            ids8 = symbols
        else:
            ids32 = symbols
        cdef Py_ssize_t n = ids8.shape[0] if bytes_only else ids32.shape[0]
        cdef Py_ssize_t num_words = word_counts.shape[0]
        cdef Py_ssize_t w, p, start, end, i
        cdef int64_t nodes = 0, long_from, key_base, lstart
        cdef int page_bits
        cdef bytes content
        if self.initialised:
            raise RuntimeError("a MergeLearner is built once: make a new one for another table")
        if word_starts.shape[0] != num_words + 1:
            raise ValueError("word_starts must have len(word_counts) + 1 entries")
        if n >= 0x7FFFFFFF:
            raise OverflowError("the word table holds more than 2**31 - 1 symbols")
        # what the loops below read and write by: words inside the symbols, ids of tokens
        starts = np.asarray(word_starts)
        if starts[0] < 0 or starts[num_words] > n or (starts[1:] < starts[:num_words]).any():
            raise ValueError("word_starts must rise from 0 or more to at most len(symbols)")
        if num_words and np.asarray(word_counts).min() <= 0:
            raise ValueError("word_counts must be positive")
        if n and (bytes_only and np.asarray(symbols).max() >= len(token_bytes) or not bytes_only and (
                np.asarray(ids32).min() < 0 or np.asarray(ids32).max() >= len(token_bytes))):
            raise ValueError(f"symbols must be ids of token_bytes (0 to {len(token_bytes) - 1})")
        long_from = LONG_CHUNK_SYMBOLS if long_chunk is None else long_chunk
        if long_from < 2:
            raise ValueError("long_chunk must be at least 2 symbols")
        self.coarse_bits = COARSE_BITS if coarse_bits is None else coarse_bits
        if not 6 <= self.coarse_bits <= 24:
            raise ValueError("coarse_bits must be between 6 and 24")
        for content in token_bytes:
            self.token_id[content] = <int32_t>self.token.size()
            self.token.push_back(content)
        for w in range(num_words):
            if word_starts[w + 1] - word_starts[w] < long_from:
                nodes += word_starts[w + 1] - word_starts[w]
        self.node.resize(nodes)
        self.counts_in_nodes = True
        for w in range(num_words):
            if word_counts[w] > 0x7FFFFFFF:
                self.counts_in_nodes = False
                break
        if not self.counts_in_nodes:
            self.word_count.resize(num_words)
        # Chunks start on a 64-bit word of the bitset; a page for the chunk lookup is at most
        # the shortest chunk (one step a lookup), at most 2**16 positions (a 4-byte entry each).
        page_bits = 6
        while page_bits < 16 and (<int64_t>1 << (page_bits + 1)) <= long_from:
            page_bits += 1
        self.longs = LongChunks(6, page_bits)
        self.pair_index.attach(&self.longs)  # single pairs' keys are read there
        self.pair_index.reset(1024)
        self.pair_index.set_dense_from(max(1, DENSE_INDEX_PAIRS))
        if tie_ranks is not None:
            if len(tie_ranks) != len(token_bytes):
                raise ValueError("tie_ranks needs one rank per base token")
            if sorted(int(r) for r in tie_ranks) != list(range(len(token_bytes))):
                raise ValueError("tie_ranks must be a permutation of the base token ids")
            for r in tie_ranks:
                self.tie_rank.push_back(<int64_t>r)
        self.where_total = 0
        self.long_total = 0
        self.long_dropped = 0
        self.live_symbols = nodes
        self.live_long = 0
        self.base_long = 0
        self.compact_slack = 1_000_000
        self.merged_occurrences = 0
        self.heap_floor = 1
        self.heap_cut = 1
        self.initialised = True
        cdef int32_t q = 0   # the next free node
        cdef WithLongChunks* with_long = NULL  # (the general layout: step 0 is no hot loop)
        # Byte-level step 0 tallies each run of ordinary words by pair key (_tally_bytes).
        cdef vector[KeyTally] tally
        cdef vector[int32_t] seen
        cdef Py_ssize_t run_from = 0   # the first word of the run not yet tallied
        cdef bint tallied = bytes_only and n > 0   # (an empty table has no &ids8[0])
        if tallied:
            tally.resize(65536)
        with nogil:
            # Words in table order; step 0 counts every adjacent pair once, in scan order, so
            # that each pair's first recorded position is exact and the heap starts with one
            # true entry per pair.
            for w in range(num_words):
                if not self.counts_in_nodes:
                    self.word_count[w] = word_counts[w]
                start = word_starts[w]
                end = word_starts[w + 1]
                if end - start >= long_from:
                    if tallied and run_from < w:
                        q = self._tally_bytes(&ids8[0], &word_starts[0], &word_counts[0], run_from, w,
                                              q, tally.data(), seen)
                    run_from = w + 1
                    # Tie keys of this chunk fall between the nodes before and after it:
                    # (q - 1) << 32 < key_base + position < q << 32 (positions < 2**31).
                    key_base = (<int64_t>q << 32) - (<int64_t>1 << 32) + 1
                    if bytes_only:
                        self.longs.add_chunk[uint8_t](&ids8[start], end - start, word_counts[w], key_base)
                    else:
                        self.longs.add_chunk[int32_t](&ids32[start], end - start, word_counts[w], key_base)
                    lstart = self.longs.chunk(self.longs.chunks() - 1).begin
                    self.live_long += end - start
                    self.base_long += end - start - 1
                    if lstart + (end - start) >= COARSE:
                        with gil:
                            raise OverflowError("the long chunks hold more than 2**30 symbols")
                    for i in range(end - start - 1):
                        if i & POLL_MASK == POLL_MASK:
                            with gil:
                                # (the learner is dropped with its __init__'s exception: a
                                # half-built one is never used)
                                PyErr_CheckSignals()
                        if bytes_only:
                            self._add_long(ids8[start + i], ids8[start + i + 1], word_counts[w],
                                           lstart + i, key_base, True)
                        else:
                            self._add_long(ids32[start + i], ids32[start + i + 1], word_counts[w],
                                           lstart + i, key_base, True)
                    continue
                if bytes_only:
                    continue  # tallied with its run (below, or before the next long chunk)
                for p in range(start, end):
                    set_node(&self.node[q], q, ids32[p], self._weight(w, word_counts[w]), p == start, p + 1 == end)
                    if p > start:
                        self._add(with_long, self.node[q - 1].sym, self.node[q].sym, word_counts[w], q - 1)
                        self.where_total += 1
                    q += 1
            if tallied and run_from < num_words:
                q = self._tally_bytes(&ids8[0], &word_starts[0], &word_counts[0], run_from, num_words,
                                      q, tally.data(), seen)
            self.long_kept = self.long_total
            self.coarse_listed = self.long_total
            self._push_touched()

    cdef int32_t _tally_bytes(self, const uint8_t* ids8, const int64_t* word_starts,
                              const int64_t* word_counts, Py_ssize_t w_from, Py_ssize_t w_to,
                              int32_t q, KeyTally* tally, vector[int32_t]& seen) except -1 nogil:
        """Step 0 of the ordinary words [w_from, w_to) of a byte-level table, their nodes from
        ``q`` on; returns the next free node. The same state as one ``_add`` per adjacent pair
        in scan order, without a pair lookup per occurrence: a pair of bytes is a 16-bit key,
        so pass 1 tallies each key's occurrences, weight and first node in a dense table; then
        each key seen gets its record, in order of first occurrence (the ids, ``touched`` order
        and index as ``_add`` leaves them), and its list room for all its occurrences at once
        (PositionLists.extend); pass 2 writes the positions in scan order (ascending). The
        tallies of the keys seen are zeroed again for the next run."""
        cdef Py_ssize_t w, p, start, end
        cdef int32_t q0 = q, pair, weight
        cdef uint32_t key
        cdef int64_t count
        cdef Node* nodes = self.node.data()
        cdef KeyTally* t
        cdef WithLongChunks* with_long = NULL  # (the general layout: step 0 is no hot loop)
        cdef int32_t* out
        for w in range(w_from, w_to):
            start = word_starts[w]
            end = word_starts[w + 1]
            count = word_counts[w]
            weight = self._weight(w, count)
            for p in range(start, end):
                set_node(&nodes[q], q, ids8[p], weight, p == start, p + 1 == end)
                if p > start:
                    key = (<uint32_t>ids8[p - 1] << 8) | ids8[p]
                    t = &tally[key]
                    if t.occurrences == 0:
                        t.first = q - 1
                        seen.push_back(key)
                    t.occurrences += 1
                    t.w.weight += count
                q += 1
        for key in seen:
            t = &tally[key]
            pair = self._pair_id(with_long, <int32_t>(key >> 8), <int32_t>(key & 255))
            self._credit(pair, t.w.weight, <int64_t>t.first << 32)
            self.where_total += t.occurrences
            t.w.dest = self.pair_where.extend(pair, t.occurrences)
            t.occurrences = 0
        # Pass 2: the run's nodes are consecutive, symbol p of it at node q0 + p - its start.
        q = q0 - <int32_t>word_starts[w_from]
        for w in range(w_from, w_to):
            for p in range(word_starts[w], word_starts[w + 1] - 1):
                key = (<uint32_t>ids8[p] << 8) | ids8[p + 1]
                out = tally[key].w.dest
                out[0] = <int32_t>(q + p)
                tally[key].w.dest = out + 1
        for key in seen:
            tally[key].w.weight = 0
        seen.clear()
        return q0 + <int32_t>(word_starts[w_to] - word_starts[w_from])

    cdef inline int32_t _weight(self, Py_ssize_t w, int64_t count) noexcept nogil:
        """Node.weight for the nodes of word ``w``, counted ``count``."""
        return <int32_t>count if self.counts_in_nodes else <int32_t>w

    cdef inline int64_t _count_at(self, int32_t p) noexcept nogil:
        """The count of the word of node ``p``."""
        if self.counts_in_nodes:
            return self.node[p].weight
        return self.word_count[self.node[p].weight]

    # ---- pairs ------------------------------------------------------------------------------

    cdef inline int32_t _pair_id(self, Layout* layout, int32_t left, int32_t right) except -1 nogil:
        """The id of pair (left, right), created with count 0 if new (a single pair gets its
        record, with its one occurrence)."""
        cdef size_t i
        cdef int32_t pair
        if Layout is NodesOnly:
            i = self.pair_index.record_index(left, right, self.pairs.data())
            pair = self.pair_index.id(i)
            if pair >= 0:
                return pair
        else:
            i = self.pair_index.index(left, right, self.pairs.data())
            if self.pair_index.occupied(i):
                pair = self.pair_index.id(i)
                if pair >= 0:
                    return pair
                return self._promote(i, left, right)
        return self._new_pair(left, right, i)

    cdef int32_t _new_pair(self, int32_t left, int32_t right, size_t i) except -1 nogil:
        """Create pair (left, right) in the empty slot ``i`` of the index, under a free id if
        there is one. Kept out of ``_pair_id`` so that the common path (the pair exists) stays
        small enough to inline."""
        cdef int32_t pair = self._new_record(left, right)
        if self.pair_index.insert_at(i, left, right, pair):
            self.pair_index.grow(self.pairs.data(), self.pairs.size())
        return pair

    cdef int32_t _promote(self, size_t i, int32_t left, int32_t right) except -1 nogil:
        """Give the single pair (left, right) of index slot ``i`` a record: its one occurrence
        (in a long chunk) becomes its count, first position and list."""
        cdef int64_t p = <int64_t>SINGLE - self.pair_index.id(i)
        cdef const LongChunks.Chunk* chunk = &self.longs.chunk_of_block(self.longs.block_of(p))
        cdef int32_t pair = self._new_record(left, right)
        self.pair_index.set_id(i, pair)
        self.pairs[pair].count = chunk.count
        self.pairs[pair].first = chunk.key_base + p
        self.pair_where.push(pair, ~<int32_t>p)
        self.where_total += 1
        self.long_total += 1
        return pair

    cdef int32_t _new_record(self, int32_t left, int32_t right) except -1 nogil:
        """A record and an empty list for pair (left, right) with count 0, under a free id if
        there is one (the caller indexes it)."""
        cdef int32_t pair
        cdef PairRecord fresh
        fresh.count = 0
        fresh.first = NO_POSITION
        fresh.left = left
        fresh.right = right
        if not self.free_pairs.empty():
            pair = self.free_pairs.back()  # its list was released with it, its mark is 0
            self.free_pairs.pop_back()
            self.pairs[pair] = fresh
        else:
            pair = <int32_t>self.pairs.size()
            self.pairs.push_back(fresh)
            self.pair_where.add_list()
            self.is_touched.push_back(0)
        return pair

    cdef inline int _add(self, Layout* layout, int32_t left, int32_t right, int64_t count,
                         int32_t pos) except -1 nogil:
        """A new occurrence of (left, right) at node ``pos``: the pair's key may improve. (A
        node's tie key is ``pos << 32``, which leaves room for long chunks between nodes.)"""
        cdef int32_t pair = self._pair_id(layout, left, right)
        self.pair_where.push(pair, pos)
        return self._credit(pair, count, <int64_t>pos << 32)

    cdef inline int _credit(self, int32_t pair, int64_t count, int64_t key) except -1 nogil:
        """Occurrences of ``pair`` of total weight ``count`` were added, the first at tie key
        ``key``: its count and first key, and its place in ``touched`` (queued at the end of
        the step)."""
        self.pairs[pair].count += count
        if key < self.pairs[pair].first:
            self.pairs[pair].first = key
        if not self.is_touched[pair]:
            self.is_touched[pair] = 1
            self.touched.push_back(pair)
        return 0

    cdef inline int _add_long(self, int32_t left, int32_t right, int64_t count, int64_t pos,
                              int64_t key_base, bint coarse=False) except -1 nogil:
        """A new occurrence of (left, right) at position ``pos`` of the long-chunk store: the
        position is listed (or its ``coarse`` block, once if the pair's last entry is that).
        A new pair counted below the floor is a single pair: an index slot, no record."""
        cdef size_t i = self.pair_index.index(left, right, self.pairs.data())
        cdef int32_t pair
        if self.pair_index.occupied(i):
            pair = self.pair_index.id(i)
            if pair < 0:
                pair = self._promote(i, left, right)
        elif count < self.heap_floor and not coarse:
            if self.pair_index.insert_at(i, left, right, SINGLE - <int32_t>pos):
                self.pair_index.grow(self.pairs.data(), self.pairs.size())
            return 0
        else:
            pair = self._new_pair(left, right, i)
        cdef int32_t entry = ~(COARSE | <int32_t>(pos >> self.coarse_bits)) if coarse else ~<int32_t>pos
        cdef size_t n = self.pair_where.size(pair)
        if n == 0 or self.pair_where.data(pair)[n - 1] != entry:
            self.pair_where.push(pair, entry)
            self.where_total += 1
            self.long_total += 1
        return self._credit(pair, count, key_base + pos)

    cdef inline int _remove(self, Layout* layout, int32_t left, int32_t right, int64_t count) except -1 nogil:
        """An occurrence of (left, right) disappeared: its key only worsens, nothing to push.
        Its entry in ``pair_where`` goes stale and is dropped when next read; a pair left with
        no occurrence is freed at the end of the step (_free_zeroed); a single pair's slot now."""
        cdef size_t i
        cdef int32_t pair
        cdef int64_t left_count
        if Layout is NodesOnly:
            i = self.pair_index.record_index(left, right, self.pairs.data())
        else:
            i = self.pair_index.index(left, right, self.pairs.data())
        pair = self.pair_index.id(i)
        if Layout is WithLongChunks:
            if pair < 0:
                # its one occurrence: erased before the store changes there, so that the other
                # single pairs' keys, read from the store, stay true
                self.pair_index.erase(i)
                return 0
        left_count = self.pairs[pair].count - count
        self.pairs[pair].count = left_count
        if left_count == 0:
            self.zeroed.push_back(pair)
        elif Layout is WithLongChunks:
            # (without long chunks no pair is demoted, and stale entries are left to compaction)
            if self._may_be_single(left_count):
                self.lowered.push_back(pair)  # may be left with one long-chunk occurrence
            if left_count >= HALVED_FROM and ((left_count + count) ^ left_count) > left_count:
                self.halved.push_back(pair)  # its highest bit went
        return 0

    cdef int _free_zeroed(self) except -1 nogil:
        """Free the pairs whose count fell to 0 in this step and stayed there (after
        _push_touched): their index slot, list and id, which the next new pair reuses. Without
        this, every pair ever created would keep its record, slot and list header to the end:
        on one long chunk, a quarter of them are dead by the last merge. A heap entry of a freed
        id is judged by the id's current pair, as every entry is (_pop_best). A pair whose
        count came back below the floor is one _demote_lowered looks at."""
        cdef int32_t pair
        for pair in self.zeroed:
            if self.pairs[pair].left < 0:
                continue  # listed twice and already freed
            if self.pairs[pair].count != 0:  # an occurrence came back: below the floor, maybe one
                if self._may_be_single(self.pairs[pair].count):
                    self.lowered.push_back(pair)
                continue
            self.pair_index.erase(self.pair_index.index(self.pairs[pair].left, self.pairs[pair].right,
                                                        self.pairs.data()))
            self._free_record(pair)
        self.zeroed.clear()
        return 0

    cdef int _free_record(self, int32_t pair) except -1 nogil:
        """Give back the record, list and id of a pair the index no longer names by it."""
        cdef const int32_t* where = self.pair_where.data(pair)
        cdef size_t i, n = self.pair_where.size(pair)
        for i in range(n):
            if where[i] < 0:
                self.long_total -= 1
        self.where_total -= <int64_t>n
        self.pair_where.release(pair)
        self.pairs[pair].count = 0
        self.pairs[pair].left = -1  # a free id, not indexed
        self.pairs[pair].right = -1
        self.pairs[pair].first = NO_POSITION
        self.free_pairs.push_back(pair)
        return 0

    cdef inline bint _may_be_single(self, int64_t count) noexcept nogil:
        """Whether a pair left counted ``count`` (above 0) is one _demote_lowered looks at:
        below the floor, while long chunks hold symbols (only there is a single pair kept)."""
        return count < self.heap_floor and self.live_long > 0

    cdef int _demote_lowered(self) except -1 nogil:
        """The pairs whose count fell below the floor in this step and whose one live
        occurrence left is in a long chunk (counted as that chunk's count) become single pairs
        again: the index slot names the position, the record, list and id are freed. Without
        this a pair promoted once kept its record to the end: on one 50 MB chunk, 230K records
        of count 1 (a record, a list header and its entries each) late in the run, where the
        training peaked (210 MB; 202 MB there with them demoted). The heap needs no change: a
        pair below the floor has no place there."""
        cdef int32_t pair
        cdef int64_t p
        # A pair is listed each time its count fell below the floor: one whose count went up
        # and down across it at every occurrence of a long run was listed thousands of times,
        # its list (as long) read at each (a 140,000-symbol chunk at min_frequency=5: 4 s for
        # its first merge). Each is looked at once, marked in is_touched (all 0 after
        # _push_touched, and again below).
        for pair in self.lowered:
            if self.is_touched[pair]:
                continue
            self.is_touched[pair] = 1
            if self.pairs[pair].left < 0 or not 0 < self.pairs[pair].count < self.heap_floor:
                continue  # freed (a count of 0), or counted up again
            p = self._sole_long_occurrence(pair)
            if p < 0:
                continue
            self.pair_index.set_id(self.pair_index.index(self.pairs[pair].left, self.pairs[pair].right,
                                                         self.pairs.data()),
                                   SINGLE - <int32_t>p)
            self._free_record(pair)
        for pair in self.lowered:
            self.is_touched[pair] = 0
        self.lowered.clear()
        if self.lowered.capacity() > SCRATCH_KEEP:
            vector[int32_t]().swap(self.lowered)
        return 0

    cdef int64_t _sole_long_occurrence(self, int32_t pair) except -2 nogil:
        """The position of the pair's one live occurrence when it has one, in a long chunk,
        and the chunk's count is the pair's; else -1. A coarse entry answers -1 unsearched
        (searching its block costs a byte search of 2**coarse_bits positions; such entries
        are step 0's, of pairs of two base tokens, few once the first merges are done)."""
        cdef const int32_t* where = self.pair_where.data(pair)
        cdef size_t i, n = self.pair_where.size(pair)
        cdef int32_t x
        cdef int64_t found = -1
        for i in range(n):
            x = where[i]
            if x >= 0:
                if self._occurs_at(pair, x):
                    return -1
            elif ~x & COARSE:
                return -1
            elif ~x != found and self._occurs_long(pair, ~x):
                if found >= 0:
                    return -1
                found = ~x
        if found < 0 or self.longs.chunk_of_block(self.longs.block_of(found)).count != self.pairs[pair].count:
            return -1
        return found

    cdef int _push_touched(self) except -1 nogil:
        cdef int32_t pair
        cdef MergeCandidate e
        for pair in self.touched:
            self.is_touched[pair] = 0
            if self.pairs[pair].count >= self.heap_cut:
                e.count = self.pairs[pair].count
                e.first = self._tie_key(pair)
                e.pair = pair
                self.heap.push(e)
        self.touched.clear()
        return 0

    # ---- merging ----------------------------------------------------------------------------

    cdef inline bint _occurs_at(self, int32_t pair, int32_t p) noexcept nogil:
        cdef int32_t q
        if self.node[p].sym != self.pairs[pair].left:
            return False
        q = self.node[p].nxt
        return q >= 0 and self.node[q].sym == self.pairs[pair].right

    cdef inline bint _occurs_long(self, int32_t pair, int64_t p) noexcept nogil:
        """Whether (left, right) of ``pair`` starts at position ``p`` of the long-chunk store."""
        cdef const LongChunks.Chunk* chunk = &self.longs.chunk_of_block(self.longs.block_of(p))
        cdef int64_t q, r
        if not self.longs.starts(p):
            return False
        q = self.longs.next(p, chunk.end)
        if q >= chunk.end or self.longs.get(p, q - p) != self.pairs[pair].left:
            return False
        r = self.longs.next(q, chunk.end)
        return self.longs.get(q, r - q) == self.pairs[pair].right

    cdef inline int64_t _long_key(self, int64_t p) noexcept nogil:
        return self.longs.chunk_of_block(self.longs.block_of(p)).key_base + p

    cdef size_t _long_entries(self, int32_t* where, size_t n) except? 0 nogil:
        """Move the node positions of ``where[:n]`` to its front (returns how many there are)
        and its long-chunk entries to ``long_keys``, sorted by the position they start at, each
        once, as ``start << 1 | coarse`` (32 bits: store positions are below 2**31)."""
        cdef size_t i, kept = 0
        cdef int32_t x
        cdef vector[uint32_t]* keys = &self.long_keys
        keys.clear()
        keys.reserve(n)  # at once: grown by doubling, the old and new arrays of a list of
                         # millions were a moment of the training's peak on one long chunk
        for i in range(n):
            if where[i] >= 0:
                where[kept] = where[i]
                kept += 1
            else:
                x = ~where[i]
                if x & COARSE:
                    keys.push_back((<uint32_t>((x ^ COARSE) << self.coarse_bits) << 1) | 1)
                else:
                    keys.push_back(<uint32_t>x << 1)
        if not keys.empty():
            sort(keys.begin(), keys.end())
            keys.erase(unique(keys.begin(), keys.end()), keys.end())
        return kept

    cdef inline int32_t _entry_of(self, int64_t key) noexcept nogil:
        """The list entry of a key of ``long_keys``."""
        if key & 1:
            return ~(COARSE | <int32_t>((key >> 1) >> self.coarse_bits))
        return ~<int32_t>(key >> 1)

    cdef int64_t _first_in_entry(self, int32_t pair, int64_t key) except? -2 nogil:
        """The tie key of the pair's first live occurrence an entry of ``long_keys`` covers, or
        NO_POSITION."""
        cdef size_t i
        if not key & 1:
            return self._long_key(key >> 1) if self._occurs_long(pair, key >> 1) else NO_POSITION
        self.merging_long.clear()
        self._coarse_positions(pair, key)
        for i in range(self.merging_long.size()):
            if self._occurs_long(pair, self.merging_long[i]):
                return self._long_key(self.merging_long[i])
        return NO_POSITION

    cdef int64_t _true_first(self, int32_t pair) except -1 nogil:
        """Drop stale positions of ``pair`` and return its first live tie key (exact)."""
        cdef int32_t* where = self.pair_where.data(pair)
        cdef size_t i, j, kept = 0, nodes
        cdef int32_t p
        cdef int64_t first = NO_POSITION, found
        cdef size_t n = self.pair_where.size(pair)
        if self.longs.chunks() == 0:
            nodes = n  # every entry a node position (no sorting pass)
            self.long_keys.clear()
        else:
            nodes = self._long_entries(where, n)
        for i in range(nodes):
            if i + PREFETCH_AHEAD < nodes:
                prefetch_node(&self.node[where[i + PREFETCH_AHEAD]], 1, 1)
            p = where[i]
            if self._occurs_at(pair, p):
                where[kept] = p
                kept += 1
                if (<int64_t>p << 32) < first:
                    first = <int64_t>p << 32
        # Long entries in order until the first with a live occurrence; those before are stale.
        # A coarse entry's first occurrence may lie past entries sorted after it: positions in
        # its block where a merge made the pair (a merge whose token is a base symbol: its pair
        # with a neighbour is a base pair too), each checked while it starts before the first
        # occurrence found (tie keys rise with store positions).
        cdef size_t listed = self.long_keys.size(), keep_from = listed
        for j in range(listed):
            found = self._first_in_entry(pair, self.long_keys[j])
            if found != NO_POSITION:
                keep_from = j
                j += 1
                while j < listed and self._long_key(self.long_keys[j] >> 1) < found:
                    found = min(found, self._first_in_entry(pair, self.long_keys[j]))
                    j += 1
                if found < first:
                    first = found
                break
        self.long_total -= <int64_t>(n - nodes)
        for j in range(keep_from, listed):
            where[kept] = self._entry_of(self.long_keys[j])
            kept += 1
            self.long_total += 1
        self.where_total -= <int64_t>(n - kept)
        self.pair_where.truncate(pair, kept)
        self.pairs[pair].first = first
        return first

    cdef int _compact_where(self) except -1 nogil:
        """Drop the stale positions of every pair and free the room they took. Positions are
        only ever a superset of a pair's live occurrences; dropping the stale ones changes no
        count, no first position and no merge.

        Each list is filtered where it lies, its entries left in their order: every reader
        sorts a list's long-chunk entries itself (_long_entries). A position entry is in its
        list once (a pair occurs at a position over one stretch of merges, listed when it
        appears). A coarse entry can be there twice: step 0 pushes them in ascending order,
        skipping one equal to the list's last entry, but two long chunks in one coarse block
        with ordinary words between them (whose nodes the pair's list took in between) list
        the block twice. Coarse entries stay in ascending order (only step 0 makes them, and
        every list rewrite keeps or sorts them), so a repeat follows the last one kept and is
        dropped here. Sorting each list
        here, through a copy of its long-chunk entries (as large as the largest list), made one
        50 MB chunk's training 21.9 s instead of 17.6 s with compactions at 6/5 (_merge)."""
        cdef size_t pair
        cdef int64_t long_listed
        self.where_total = 0
        self.long_total = 0
        self.long_dropped = 0
        self.coarse_kept = 0
        self.compactions += 1
        for pair in range(self.pair_where.lists()):
            self.long_total += self._drop_stale(<int32_t>pair, &long_listed)
            self.where_total += <int64_t>self.pair_where.size(pair)
        self.long_kept = self.long_total
        self.coarse_listed = self.coarse_kept
        self._release_scratch(0)
        self.pair_where.compact()
        return 0

    cdef int64_t _drop_stale(self, int32_t pair, int64_t* long_listed) except -1 nogil:
        """Filter the pair's list where it lies (_compact_where): its live entries stay, in
        their order, a coarse entry once. Returns the long-chunk entries kept; ``long_listed``
        gets those it had."""
        cdef int32_t* where = self.pair_where.data(pair)
        cdef size_t i, kept = 0, n = self.pair_where.size(pair)
        cdef int32_t x, ahead, last_coarse = 0  # (a node position, never a coarse entry)
        cdef int64_t long_kept = 0, listed = 0
        for i in range(n):
            if i + PREFETCH_AHEAD < n:
                ahead = where[i + PREFETCH_AHEAD]
                if ahead >= 0:
                    prefetch_node(&self.node[ahead], 0, 1)
                elif not (~ahead & COARSE):
                    self.longs.prefetch(~ahead)
            x = where[i]
            if x >= 0:
                if self._occurs_at(pair, x):
                    where[kept] = x
                    kept += 1
                continue
            listed += 1
            # coarse blocks (step 0's) are kept as they are (checking one searches it), once each
            if ~x & COARSE:
                if x != last_coarse:
                    last_coarse = x
                    self.coarse_kept += 1
                    where[kept] = x
                    kept += 1
                    long_kept += 1
            elif self._occurs_long(pair, ~x):
                where[kept] = x
                kept += 1
                long_kept += 1
        self.pair_where.truncate(pair, kept)
        long_listed[0] = listed
        self._tick(n)
        return long_kept

    cdef int _drop_stale_halved(self) except -1 nogil:
        """Filter the lists of the pairs whose count fell below a power of two in this step
        and that hold over 3/2 of their count and HALVED_SLACK entries: a live occurrence
        counts at least 1, so over a third of such a list is stale, and each filtering drops at
        least a third of what it reads. Stale entries gather in the lists of the pairs beside
        those merged; on one 50 MB chunk the opening merges' lists (24M entries, a sixth of them
        stale before each compaction) were the training's peak (202 MB; 198.8 MB with these
        filtered, the entries read by filtering and compaction together 3% more)."""
        cdef int32_t pair
        cdef size_t listed
        cdef int64_t long_before, long_kept
        for pair in self.halved:
            if self.pairs[pair].left < 0:
                continue  # freed
            listed = self.pair_where.size(pair)
            if <int64_t>listed <= self.pairs[pair].count + self.pairs[pair].count // 2 + HALVED_SLACK:
                continue
            long_kept = self._drop_stale(pair, &long_before)
            self.where_total -= <int64_t>(listed - self.pair_where.size(pair))
            self.long_total -= long_before - long_kept
            self.long_dropped += long_before - long_kept
        self.halved.clear()
        if self.halved.capacity() > SCRATCH_KEEP:
            vector[int32_t]().swap(self.halved)
        return 0

    cdef inline int64_t _tie_key(self, int32_t pair) noexcept nogil:
        """The heap's second key: the first position (default), or the pair's rank key."""
        cdef int64_t a, b
        if self.tie_rank.empty():
            return self.pairs[pair].first
        a = self.pairs[pair].left
        b = self.pairs[pair].right
        if a < <int64_t>self.tie_rank.size():
            a = self.tie_rank[a]
        if b < <int64_t>self.tie_rank.size():
            b = self.tie_rank[b]
        return (a << 32) | b

    cdef int _set_heap_floor(self, int64_t floor) except -1 nogil:
        """Queue the pairs of the first cut over ``floor`` (_refill_heap); single pairs counted
        at least ``floor`` (a floor lowered by a later run) get records first."""
        cdef size_t i
        cdef int64_t p, q, r
        cdef const LongChunks.Chunk* chunk
        self.heap_floor = floor
        for i in range(self.pair_index.capacity()):
            if self.pair_index.occupied(i) and self.pair_index.id(i) < 0:
                p = <int64_t>SINGLE - self.pair_index.id(i)
                chunk = &self.longs.chunk_of_block(self.longs.block_of(p))
                if chunk.count >= floor:
                    q = self.longs.next(p, chunk.end)
                    r = self.longs.next(q, chunk.end)
                    self._promote(i, self.longs.get(p, q - p), self.longs.get(q, r - q))
        self._refill_heap()  # (which empties the heap first)
        return 0

    cdef int _refill_heap(self) except -1 nogil:
        """The heap is empty (no pair counted at least ``heap_cut`` is left): lower the cut to
        a quarter of the best count left (at least the floor) and queue the pairs counted at
        least that (their keys as known, lower bounds as the invariant asks). Three passes over
        the records each time the best count falls fourfold: the second counts the pairs to
        queue, and the heap takes room for them and an eighth more (later steps push a few
        pairs each) at once. Grown by doubling as they were added, the heap had held two
        arrays for a moment, one half empty after: on one 50 MB chunk the last refill (143K
        pairs) was 3 MB over the merging's peak before it."""
        cdef size_t pair, queued = 0
        cdef MergeCandidate e
        cdef int64_t best = 0
        for pair in range(self.pairs.size()):
            if self.pairs[pair].count > best:
                best = self.pairs[pair].count
        self.heap.release()
        self.heap_cut = max(self.heap_floor, best >> 2)
        for pair in range(self.pairs.size()):
            queued += self.pairs[pair].count >= self.heap_cut
        self.heap.reserve(queued + queued // 8 + 64)
        for pair in range(self.pairs.size()):
            if self.pairs[pair].count >= self.heap_cut:
                e.count = self.pairs[pair].count
                e.first = self._tie_key(<int32_t>pair)
                e.pair = <int32_t>pair
                self.heap.add(e)
        self.heap.make()
        return 0

    cdef int32_t _pop_best(self) except -2 nogil:
        """The pair to merge next, or -1 when no pair is left."""
        cdef MergeCandidate e
        cdef int64_t first
        while True:
            if self.heap.empty():
                if self.heap_cut <= self.heap_floor:
                    return -1
                self._refill_heap()
                continue
            e = self.heap.pop()
            if self.pairs[e.pair].count < self.heap_cut:
                continue  # queued again if an occurrence lifts it to the cut, or by a refill
            if self.pairs[e.pair].count != e.count:
                # The count fell since this entry was pushed; queue the true (worse) key.
                e.count = self.pairs[e.pair].count
                e.first = self._tie_key(e.pair)
                self.heap.push(e)
                continue
            if self.heap.empty() or self.heap.top().count < e.count:
                # Every other entry's count bounds its pair's count from above, so this pair
                # is strictly the most frequent: its first position cannot matter.
                return e.pair
            if not self.tie_rank.empty():
                # The tie key is fixed per pair, but the entry may be of a freed id's earlier pair.
                first = self._tie_key(e.pair)
                if first == e.first:
                    return e.pair
                e.first = first
                self.heap.push(e)
                continue
            first = self._true_first(e.pair)
            if first != e.first:
                e.first = first
                self.heap.push(e)
                continue
            return e.pair
        return -1

    cdef int32_t _token_for(self, int32_t left, int32_t right) except -1 nogil:
        """The id of the concatenation of two tokens, reusing an existing id for equal bytes."""
        cdef string content = self.token[left] + self.token[right]
        cdef int32_t tid = <int32_t>self.token.size()
        # one hash lookup: insert returns the existing entry when the bytes are already a token
        cdef cpp_pair[unordered_map[string, int32_t].iterator, bint] found = self.token_id.insert(
            cpp_pair[string, int32_t](content, tid))
        if not found.second:
            return deref(found.first).second
        self.token.push_back(content)
        return tid

    cdef inline void _prefetch_neighbour_pairs(self, int32_t p, int32_t a, int32_t b) noexcept nogil:
        """Start loading the table slots of the pairs a merge at ``p`` will decrement, and its
        word's count when nodes do not hold it (its node was prefetched earlier; a stale ``p``
        only wastes the hint)."""
        cdef int32_t left = self.node[p].prev, q = self.node[p].nxt
        if not self.counts_in_nodes:
            prefetch_node(&self.word_count[self.node[p].weight], 0, 1)
        if left >= 0:
            self.pair_index.prefetch(self.node[left].sym, a)
        if q >= 0 and self.node[q].nxt >= 0:
            self.pair_index.prefetch(b, self.node[self.node[q].nxt].sym)

    cdef inline int _tick(self, int64_t units) except -1 nogil:
        """``units`` of a merge step's work done: every POLL_UNITS, a look at Ctrl-C (_look)."""
        self.poll_left -= units
        if self.poll_left <= 0:
            self._look()
        return 0

    cdef int _look(self) except -1 nogil:
        """Raise what a pending signal's handler raises (KeyboardInterrupt), half-way through a
        merge step: the learner is then torn (run refuses), as the step's tables are."""
        self.poll_left = POLL_UNITS
        with gil:
            self.torn = True
            PyErr_CheckSignals()
            self.torn = False
        return 0

    cdef int _merge(self, Layout* layout, int32_t pair, int32_t new_id) except -1 nogil:
        """Replace every occurrence of pair ``pair`` by ``new_id``, left to right within each
        word, never overlapping, adjusting the counts of the neighbouring pairs. ``layout``:
        NodesOnly when the table has no long chunk (its lists hold node positions only)."""
        cdef int32_t a = self.pairs[pair].left, b = self.pairs[pair].right
        cdef vector[int32_t]* where = &self.merging
        cdef int32_t p, q, left, right
        cdef int64_t count
        cdef int64_t merged = 0, added = 0   # kept in registers; the totals are updated once
        cdef const int32_t* listed = self.pair_where.data(pair)
        # A copy: the merge pushes to other lists, which may move the pool.
        where.assign(listed, listed + self.pair_where.size(pair))
        self.pair_where.release(pair)
        self.where_total -= <int64_t>where.size()
        cdef size_t listed_size = where.size()
        if Layout is WithLongChunks:
            where.resize(self._long_entries(where.data(), where.size()))
            self.long_total -= <int64_t>(listed_size - where.size())
            self._long_to_merge(pair)
        if a == b:
            # Only (a, a) can overlap; ascending positions give the reference's left-to-right
            # scan (``aaa`` -> ``aa a``). For a != b, occurrences never share a symbol.
            sort(where.begin(), where.end())
        cdef size_t i, n = where.size()
        for i in range(n):
            if i + PREFETCH_AHEAD < n:
                # nodes p - 1 to p + 2 (64 bytes: one or two lines), where its neighbours
                # mostly are; into the first-level cache (locality 3): they are read 16
                # occurrences later, a few kilobytes of other lines in between
                prefetch_node(<const char*>&self.node[where[0][i + PREFETCH_AHEAD]] - 16, 1, 3)
                prefetch_node(<const char*>&self.node[where[0][i + PREFETCH_AHEAD]] + 32, 1, 3)
            if i + PREFETCH_PAIRS_AHEAD < n:
                self._prefetch_neighbour_pairs(where[0][i + PREFETCH_PAIRS_AHEAD], a, b)
            p = where[0][i]
            if not self._occurs_at(pair, p):
                continue  # consumed by an overlapping occurrence just merged
            q = self.node[p].nxt
            count = self._count_at(p)
            left = self.node[p].prev
            right = self.node[q].nxt
            self.pairs[pair].count -= count
            if left >= 0:
                self._remove(layout, self.node[left].sym, a, count)
            if right >= 0:
                self._remove(layout, b, self.node[right].sym, count)
            self.node[p].sym = new_id
            self.node[q].sym = DEAD
            merged += 1
            self.node[p].nxt = right
            if right >= 0:
                self.node[right].prev = p
            if left >= 0:
                self._add(layout, self.node[left].sym, new_id, count, left)
                added += 1
            if right >= 0:
                self._add(layout, new_id, self.node[right].sym, count, p)
                added += 1
        self.live_symbols -= merged
        self.merged_occurrences += merged
        self.where_total += added
        self._tick(n)  # (after the loop: it takes a few ms even in a large corpus's first steps)
        if Layout is WithLongChunks:
            if not self.merging_long.empty():
                self._merge_long(pair, new_id)
        if self.pairs[pair].count == 0:
            self.zeroed.push_back(pair)
        self._push_touched()
        self._free_zeroed()
        if Layout is WithLongChunks:
            self._demote_lowered()
            self._drop_stale_halved()
        self._release_scratch(listed_size)
        # (long-chunk entries _drop_stale_halved dropped still count here: compaction also lays
        # the pool out afresh, and put off, the pool's free room outgrew what the lists gave back)
        cdef int64_t long_entries = self.long_total + self.long_dropped
        if (self.where_total - self.long_total > 2 * self.live_symbols + self.compact_slack
                or <int64_t>self.pair_where.used() > 2 * self.where_total + self.compact_slack
                or long_entries > 2 * self.long_kept + self.compact_slack
                or 5 * long_entries > 6 * (self.live_long - self.base_long
                                          - <int64_t>self.pair_index.singles()
                                          + self.coarse_listed) + self.compact_slack):
            # amortised: at least half the node entries go, or half the pool (compaction
            # lays it out in exact blocks: what the pool holds past its entries is room left
            # by lists that moved, or free blocks), or the block entries doubled since the last
            # compaction (which keeps each (pair, block) once), or they are over 6/5 of what
            # the long chunks can list (a live occurrence is listed in its pair's list once; a
            # single pair's in none, a base pair's in step 0's coarse entries, which stay), so
            # at least a sixth of them go: merging shrinks the live tokens several times over,
            # which the doubling alone would leave in the lists. On one 50 MB chunk stale
            # entries had reached 55% of the lists (22.5M entries, 140 MB) before the first
            # compaction after the opening merges; singles are three in five of the live pairs
            # by the end. With base pairs counted in the bound, the lists of the opening merges
            # grew to 1.5x their live entries plus the base pairs left (the training's peak
            # then, 248 MB). At 3/2 the lists still made the peak: 224 MB at the last of 8
            # compactions, the others reached at 205-222 MB. At 6/5 there are 16, those of the
            # opening merges at 205 MB at most, and the peak (213 MB) is late in the run, where
            # the pair index (41 MB) and records (30 MB) have grown; with compaction filtering
            # lists where they lie (_compact_where) the run takes the time it took at 3/2. At
            # 9/8 (23 compactions, 22.3 s against 17.6 s) the peak was no lower; 4/3 and 5/4
            # left it at 222 and 220 MB (the lists grow again after the last compaction).
            self._compact_where()
        return 0

    cdef int _release_scratch(self, size_t listed) except -1 nogil:
        """Give back a merge step's lists once they hold over SCRATCH_KEEP values and four
        times what this step used: the first merges of a long chunk list millions of positions,
        and kept to the end of the run that room (about 28 MB on one 50 MB chunk) sat beside the
        learner's largest tables. While steps stay that large the room is kept (made afresh
        each step, its pages would be faulted in again each time). ``listed``: the entries
        ``merging`` held this step (it keeps only the node positions)."""
        if self.merging.capacity() > max(SCRATCH_KEEP, 4 * listed):
            vector[int32_t]().swap(self.merging)
        if self.merging_long.capacity() > max(SCRATCH_KEEP, 4 * self.merging_long.size()):
            vector[int32_t]().swap(self.merging_long)
        if self.long_keys.capacity() > max(SCRATCH_KEEP, 4 * self.long_keys.size()):
            vector[uint32_t]().swap(self.long_keys)
        return 0

    cdef int _coarse_positions(self, int32_t pair, int64_t key) except -1 nogil:
        """Append to ``merging_long`` the positions of a coarse key of ``long_keys`` where the
        pair may occur. Coarse entries come from step 0, so their live occurrences are two
        one-symbol base tokens side by side: a byte search finds them."""
        cdef int32_t a = self.pairs[pair].left, b = self.pairs[pair].right
        cdef int64_t begin = key >> 1
        cdef int64_t stop = min(begin + (<int64_t>1 << self.coarse_bits), self.longs.block_begin(self.longs.blocks()))
        cdef const LongChunks.Chunk* chunk
        while begin < stop:  # one chunk (or its padding) at a time
            chunk = &self.longs.chunk_of_block(self.longs.block_of(begin))
            self.longs.find_base_pair(begin, min(stop, chunk.end), chunk.end, a, b, self.merging_long)
            self._tick((min(stop, chunk.end) - begin) >> 4)
            begin = self.longs.block_begin(self.longs.block_of(chunk.end + 63))
            if begin <= chunk.begin:
                break
        return 0

    cdef int _long_to_merge(self, int32_t pair) except -1 nogil:
        """The positions ``long_keys`` covers, ascending, each once, in ``merging_long``."""
        cdef int64_t key
        cdef size_t i
        self.merging_long.clear()
        for i in range(self.long_keys.size()):
            key = self.long_keys[i]
            if key & 1:
                self._coarse_positions(pair, key)
            else:
                self.merging_long.push_back(<int32_t>(key >> 1))
        if self.merging_long.size() > 1:
            sort(self.merging_long.begin(), self.merging_long.end())
            self.merging_long.erase(unique(self.merging_long.begin(), self.merging_long.end()),
                                    self.merging_long.end())
        return 0

    cdef int _merge_long(self, int32_t pair, int32_t new_id) except -1 nogil:
        """``_merge`` in the long-chunk store, at the listed positions (``merging_long``) in
        ascending order, which is the reference's left to right (``aaa`` -> ``aa a``); each is
        checked first (an entry goes stale when a neighbour merges)."""
        cdef int32_t a = self.pairs[pair].left, b = self.pairs[pair].right
        cdef int32_t left_id = 0, right_id = 0
        cdef int64_t p, q, r, left, after, count, merged = 0, base_pairs = 0
        cdef const LongChunks.Chunk* chunk
        cdef size_t j
        cdef WithLongChunks* with_long = NULL
        # _add_long pushes to the lists, never to merging_long: no copy is needed.
        cdef size_t n = self.merging_long.size()
        for j in range(n):
            if j + PREFETCH_AHEAD < n:
                self.longs.prefetch(self.merging_long[j + PREFETCH_AHEAD])
            self._tick(1)  # (before the position: a look between two leaves both whole)
            p = self.merging_long[j]
            if not self.longs.starts(p):
                continue
            chunk = &self.longs.chunk_of_block(self.longs.block_of(p))
            q = self.longs.next(p, chunk.end)
            if q >= chunk.end or self.longs.get(p, q - p) != a:
                continue
            r = self.longs.next(q, chunk.end)
            if self.longs.get(q, r - q) != b:
                continue
            # (a, b) at p: merge it into one token over [p, r); the three pairs it ends
            # (left, a), (a, b), (b, right) may be base pairs (base_long)
            count = chunk.count
            left = self.longs.prev(p, chunk.begin)
            self.pairs[pair].count -= count
            base_pairs += q - p == 1 and r - q == 1
            if left >= 0:
                left_id = self.longs.get(left, p - left)
                self._remove(with_long, left_id, a, count)
                base_pairs += p - left == 1 and q - p == 1
            if r < chunk.end:
                after = self.longs.next(r, chunk.end)
                right_id = self.longs.get(r, after - r)
                self._remove(with_long, b, right_id, count)
                base_pairs += r - q == 1 and after - r == 1
            self.longs.kill(q)
            self.longs.set(p, r - p, new_id)
            merged += 1
            if left >= 0:
                self._add_long(left_id, new_id, count, left, chunk.key_base)
            if r < chunk.end:
                self._add_long(new_id, right_id, count, p, chunk.key_base)
        self.merged_occurrences += merged
        self.live_long -= merged
        self.base_long -= base_pairs
        return 0

    def memory_use(self):
        """Bytes held by each structure (capacities, not sizes): where the learner's memory is."""
        return {
            "nodes": self.node.capacity() * sizeof(Node),
            "word_counts": self.word_count.capacity() * sizeof(int64_t),
            "pairs": self.pairs.capacity() * sizeof(PairRecord) + self.is_touched.capacity(),
            "pair_index": self.pair_index.bytes(),
            "pair_positions": self.pair_where.bytes(),
            "long_chunks": self.longs.bytes(),
            "heap": self.heap.capacity() * sizeof(MergeCandidate),
            # a merge step's lists (the pair's positions, its long-chunk entries and positions)
            "scratch": (self.merging.capacity() + self.merging_long.capacity()) * sizeof(int32_t)
                       + self.long_keys.capacity() * sizeof(uint32_t),
            "heap_entries": self.heap.size(),
            "pairs_count": self.pairs.size() - self.free_pairs.size() + self.pair_index.singles(),
            "single_pairs": self.pair_index.singles(),  # pairs with no record (pair_ids.h)
            "positions_listed": self.where_total,     # entries in the lists, stale ones included
            "positions_room": self.pair_where.used(),  # values the small lists' blocks hold
            "base_pairs_long": self.base_long,  # live pairs of two one-symbol tokens in long chunks
        }

    def corpus_tokens(self):
        """Tokens of the whole corpus as currently merged: each word's live symbols times its
        count. After ``run`` this is the corpus's encoded length, with no encoding pass."""
        cdef int64_t total = 0
        cdef size_t p
        cdef const Node* nodes = self.node.data()
        with nogil:
            # Without a branch on DEAD: after the merges, live and dead nodes alternate at random
            # and a branch mispredicts on most of them.
            if self.counts_in_nodes:
                for p in range(self.node.size()):
                    total += <int64_t>(nodes[p].sym != DEAD) * nodes[p].weight
            else:
                for p in range(self.node.size()):
                    total += <int64_t>(nodes[p].sym != DEAD) * self.word_count[nodes[p].weight]
            for p in range(self.longs.chunks()):
                total += self.longs.live(self.longs.chunk(p).begin, self.longs.chunk(p).end) * self.longs.chunk(p).count
        return total

    def run(self, int64_t num_merges, int64_t min_frequency=1, int64_t max_tokens=-1,
            progress=None, int64_t progress_every=512):
        """Learn up to ``num_merges`` merges, stopping early when the vocabulary reaches
        ``max_tokens`` tokens (if >= 0; a merge that recreates an existing token adds none).
        Returns ``(merges, counts, tokens)``: an int32 array of rows (left id, right id,
        new id), the count of each merge when chosen, and the bytes of every token id."""
        cdef int64_t done = 0, batch_end
        cdef int32_t pair, new_id
        cdef bint exhausted = False
        cdef double batch_began, batch_seconds = BATCH_SECONDS
        cdef bint nodes_only = self.longs.chunks() == 0  # (the merge loop's layout)
        cdef NodesOnly* no_long = NULL
        cdef WithLongChunks* with_long = NULL
        if progress_every < 1:
            raise ValueError("progress_every must be at least 1")
        if self.torn:
            raise RuntimeError("a merge step of this learner was interrupted half-way: its tables are torn; "
                               "make a new learner")
        self.poll_left = POLL_UNITS
        with nogil:  # the heap from the first cut over this run's floor (_refill_heap)
            self._set_heap_floor(max(min_frequency, 1))
        while done < num_merges and not exhausted:
            batch_end = min(num_merges, done + progress_every)
            with nogil:
                batch_began = steady_seconds()
                while done < batch_end:
                    if max_tokens >= 0 and <int64_t>self.token.size() >= max_tokens:
                        exhausted = True
                        break
                    # 1. the best pair under the tie rule (lazy revalidation, see module doc)
                    pair = self._pop_best()
                    if pair < 0 or self.pairs[pair].count < min_frequency:
                        exhausted = True
                        break
                    # 2. its token: the concatenation, an existing id when the bytes exist
                    new_id = self._token_for(self.pairs[pair].left, self.pairs[pair].right)
                    # 3. record, then 4. merge every occurrence and update neighbour counts
                    self.out_left.push_back(self.pairs[pair].left)
                    self.out_right.push_back(self.pairs[pair].right)
                    self.out_new.push_back(new_id)
                    self.out_count.push_back(self.pairs[pair].count)
                    if nodes_only:
                        self._merge(no_long, pair, new_id)
                    else:
                        self._merge(with_long, pair, new_id)
                    done += 1
                    if steady_seconds() - batch_began > batch_seconds:
                        break
            PyErr_CheckSignals()  # Ctrl-C lands between batches, with the state consistent
            if progress is not None:
                progress(done, self.out_count.back() if done else 0)
        k = self.out_left.size()
        merges = np.empty((k, 3), dtype=np.int32)
        counts = np.empty(k, dtype=np.int64)
        cdef int32_t[:, ::1] mv = merges
        cdef int64_t[::1] cv = counts
        cdef size_t i
        for i in range(k):
            mv[i, 0] = self.out_left[i]
            mv[i, 1] = self.out_right[i]
            mv[i, 2] = self.out_new[i]
            cv[i] = self.out_count[i]
        tokens = [self.token[i] for i in range(self.token.size())]
        return merges, counts, tokens
