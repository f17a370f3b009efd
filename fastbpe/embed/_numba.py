"""Jitted bodies of the embedding kernels (Numba). Callers validate; these trust their inputs.

Every body here is plain Python over NumPy arrays and is compiled twice by :func:`serial_and_parallel`:
once with ``parallel=False`` (``prange`` is then an ordinary ``range``) and once with
``parallel=True``. Both compiles share one source, so they compute the same thing; the public layer
in :mod:`fastbpe.embed.kernels` picks one by problem size and thread count.

Determinism invariant: no body lets two threads write the same output element, and no body's
arithmetic depends on how iterations are split between threads. Each output row is produced by
exactly one iteration, which sums its sources in increasing position order. Results are therefore
bit-identical for any thread count and equal to the serial compile.

Preconditions the callers guarantee (a kernel that is handed anything else may read or write out
of bounds): arrays are C-contiguous with the dtypes of the signatures, every id is in range, and
output arrays have the documented shapes and do not overlap the inputs.
"""
import os
import types

import numba
import numpy as np
from llvmlite import ir
from numba import prange
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["serial_and_parallel", "parallel_lost_in_fork"]

_CACHE = True  # a second process loads machine code from __pycache__ instead of recompiling

# GNU OpenMP does not survive fork(): a child forked after its parent ran a parallel compile on
# Numba's "omp" threading layer is ended by Numba, with a message and no exception, when it
# runs one (as a multiprocessing or DataLoader worker would). Such a child runs the serial
# compiles (kernels._use_parallel asks). The "workqueue" and "tbb" layers survive a fork.
_parallel_ran = False
_lost_in_fork = False


def _after_fork_in_child() -> None:
    global _lost_in_fork
    if _parallel_ran and numba.threading_layer() == "omp":
        _lost_in_fork = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def parallel_lost_in_fork() -> bool:
    """Whether this process was forked from one that ran parallel compiles on the OpenMP
    threading layer, so that running one here would end it."""
    return _lost_in_fork


class KernelPair:
    """One Python body, jitted lazily as a serial and as a parallel Numba dispatcher.

    Compilation happens on first use of each variant (explicit signatures, so a variant
    compiles all its signatures at once and never again in this process; ``cache=True`` so the
    next process loads them from disk).

    Numba's on-disk cache is keyed by the function's qualified name, not by its compile flags, so
    the two variants are jitted from *clones* of the body with distinct qualified names;
    otherwise the parallel build could be loaded from the cache as the serial one or vice versa.
    """

    def __init__(self, pyfunc, signatures):
        self.py_func = pyfunc
        self.signatures = signatures
        self._dispatchers = {}

    def _clone(self, suffix):
        f = self.py_func
        clone = types.FunctionType(f.__code__, f.__globals__, f.__name__ + suffix,
                                   f.__defaults__, f.__closure__)
        clone.__qualname__ = f.__qualname__ + suffix
        clone.__module__ = f.__module__
        clone.__doc__ = f.__doc__
        return clone

    def variant(self, parallel: bool):
        """The dispatcher compiled with ``parallel=parallel`` (compiled on first request)."""
        dispatcher = self._dispatchers.get(parallel)
        if dispatcher is None:
            suffix = "__parallel" if parallel else "__serial"
            dispatcher = numba.njit(self.signatures, parallel=parallel, cache=_CACHE,
                                    nogil=True)(self._clone(suffix))
            self._dispatchers[parallel] = dispatcher
        return dispatcher

    def __call__(self, *args, parallel: bool):
        global _parallel_ran
        if parallel:
            _parallel_ran = True
        return self.variant(parallel)(*args)


def serial_and_parallel(signatures):
    """Decorator: turn a body using ``prange`` into a :class:`KernelPair`."""
    def wrap(pyfunc):
        return KernelPair(pyfunc, signatures)
    return wrap


_F = (numba.float32, numba.float64)


def _sigs(build):
    return [build(f) for f in _F]


def _in(array_type):
    """``array_type`` as a read-only input: the compiled body takes read-only arrays
    (``np.load(..., mmap_mode="r")``, ``setflags(write=False)``) and, since a writeable array
    converts to a read-only one, writeable arrays too, from the same single compile."""
    return array_type.copy(readonly=True)


# --- streaming (non-temporal) row stores ------------------------------------------------------
#
# A gathered or summed row is written once and not read back soon, and the outputs here are far
# larger than the caches. An ordinary store first reads the destination cache line from memory
# (read-for-ownership); a non-temporal store writes it straight out, saving a third of the
# memory traffic of a row copy. Stores of 64 aligned bytes carry LLVM's !nontemporal hint (x86:
# MOVNT*; other targets lower it as they can); the unaligned head and tail of a row use ordinary
# stores. Non-temporal stores are weakly ordered, so every writer issues a fence
# (:func:`_store_fence`) before its parallel iteration ends.

@intrinsic
def _address(typingctx, arr):
    """The address of ``arr``'s first element, as an integer (for alignment arithmetic)."""
    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.ptrtoint(ary.data, ir.IntType(64))
    return numba.types.int64(arr), codegen  # user-space addresses fit in int64


@intrinsic
def _stream_64_bytes(typingctx, dst, j, src, i):
    """Copy the 64 bytes at ``src[i:]`` to ``dst[j:]`` (which must be 64-byte aligned) with one
    non-temporal vector store. ``dst`` and ``src`` are 1-D arrays of the same float dtype."""
    def codegen(context, builder, signature, args):
        dty, _, sty, _ = signature.args
        dptr = cgutils.get_item_pointer(context, builder, dty,
                                        context.make_array(dty)(context, builder, args[0]),
                                        [args[1]])
        sptr = cgutils.get_item_pointer(context, builder, sty,
                                        context.make_array(sty)(context, builder, args[2]),
                                        [args[3]])
        elt = context.get_data_type(dty.dtype)
        vec = ir.VectorType(elt, 64 // context.get_abi_sizeof(elt))
        value = builder.load(builder.bitcast(sptr, vec.as_pointer()), align=1)
        store = builder.store(value, builder.bitcast(dptr, vec.as_pointer()), align=64)
        store.set_metadata("nontemporal", builder.module.add_metadata([ir.IntType(32)(1)]))
        return context.get_dummy_value()
    return numba.types.void(dst, j, src, i), codegen


@intrinsic
def _store_fence(typingctx):
    """A full memory fence: orders this thread's non-temporal stores before later accesses."""
    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()
    return numba.types.void(), codegen


@intrinsic
def _memcpy(typingctx, dst, src):
    """``dst[:] = src[:]`` for 1-D contiguous arrays of one dtype and length, through the C
    library's ``memcpy`` (which copies large blocks with ``rep movsb`` on x86: no
    read-for-ownership either, and the right choice for freshly mapped pages)."""
    def codegen(context, builder, signature, args):
        dty, sty = signature.args
        dst_ary = context.make_array(dty)(context, builder, args[0])
        src_ary = context.make_array(sty)(context, builder, args[1])
        count = builder.extract_value(dst_ary.shape, 0)
        itemsize = context.get_abi_sizeof(context.get_data_type(dty.dtype))
        cgutils.raw_memcpy(builder, dst_ary.data, src_ary.data, count, itemsize)
        return context.get_dummy_value()
    return numba.types.void(dst, src), codegen


@numba.njit(inline="always")
def _copy_row(dst, src, stream):
    """``dst[:] = src[:]``: with ``stream``, aligned 64-byte blocks go non-temporal (plain
    stores for the unaligned head and tail); otherwise one ``memcpy``."""
    if not stream:
        _memcpy(dst, src)
        return
    d = dst.shape[0]
    per = 64 // dst.itemsize
    head = min(((64 - _address(dst) % 64) % 64) // dst.itemsize, d)
    for q in range(head):
        dst[q] = src[q]
    j = head
    while j + per <= d:
        _stream_64_bytes(dst, j, src, j)
        j += per
    for q in range(j, d):
        dst[q] = src[q]


# --- gather --------------------------------------------------------------------------------------

_GATHER_BLOCK = 256  # rows per parallel iteration (one store fence each)


@serial_and_parallel(_sigs(lambda f: numba.void(_in(f[:, ::1]), _in(numba.int64[::1]), f[:, ::1],
                                                 numba.boolean)))
def gather_rows(table, ids, out, stream):
    """``out[i] = table[ids[i]]``; each output row is written by one iteration.

    ``stream``: write ``out`` with non-temporal stores, else copy rows with ``memcpy``.
    Measured on the benchmark shapes (65,536 rows of 3 KB): streaming into a reused output is
    about 2x faster than a plain store loop and than ``memcpy``, but slower into freshly
    allocated memory (the page-fault path has just zeroed those lines into the cache), where
    ``memcpy`` beats the plain loop; so the caller streams only into an ``out`` it was given.
    """
    n = ids.shape[0]
    for blk in prange((n + _GATHER_BLOCK - 1) // _GATHER_BLOCK):
        for i in range(blk * _GATHER_BLOCK, min(n, (blk + 1) * _GATHER_BLOCK)):
            _copy_row(out[i], table[ids[i]], stream)
        if stream:
            _store_fence()


# --- scatter-add: bucket positions by destination row, then one owner per row -----------------

@numba.njit(numba.types.Tuple((numba.int64[::1], numba.int64[::1]))(_in(numba.int64[::1]), numba.int64),
            cache=_CACHE, nogil=True)
def bucket_by_row(ids, num_rows):
    """Stable counting sort of positions by id.

    Returns ``(starts, order)``: the positions holding id ``r`` are
    ``order[starts[r]:starts[r + 1]]``, in increasing position order (the order in which
    ``np.add.at`` would add them).
    """
    n = ids.shape[0]
    starts = np.zeros(num_rows + 1, dtype=np.int64)
    for p in range(n):
        starts[ids[p] + 1] += 1
    for r in range(num_rows):
        starts[r + 1] += starts[r]
    fill = starts[:num_rows].copy()
    order = np.empty(n, dtype=np.int64)
    for p in range(n):
        r = ids[p]
        order[fill[r]] = p
        fill[r] += 1
    return starts, order


@serial_and_parallel(_sigs(lambda f: numba.void(_in(f[:, ::1]), numba.int64[::1], numba.int64[::1],
                                                 numba.int64[::1], f[:, ::1])))
def sum_buckets(grad, order, starts, chunk_bounds, out):
    """``out[b] = sum(grad[order[p]] for p in starts[b]..starts[b+1]-1)``, summed left to right.

    Work is split into chunks of whole buckets (``chunk_bounds``), so every output row has one
    owner; a row with an empty bucket is written as zeros. Each row starts at 0 and adds its
    sources in position order, exactly as ``np.add.at`` on a zeroed array does, so the result is
    bit-identical to it whatever the chunking or thread count.

    (Streaming stores were measured here and did not help: this loop is bound by the latency of
    reading source rows in bucket order, not by the writes.)
    """
    d = grad.shape[1]
    for c in prange(chunk_bounds.shape[0] - 1):
        for b in range(chunk_bounds[c], chunk_bounds[c + 1]):
            dst = out[b]
            for j in range(d):
                dst[j] = 0
            p = starts[b]
            end = starts[b + 1]
            # Four source rows per pass: four independent memory streams in flight and one
            # pass over dst; the parentheses keep the order of single left-to-right additions.
            while p + 4 <= end:
                s0 = grad[order[p]]
                s1 = grad[order[p + 1]]
                s2 = grad[order[p + 2]]
                s3 = grad[order[p + 3]]
                for j in range(d):
                    dst[j] = (((dst[j] + s0[j]) + s1[j]) + s2[j]) + s3[j]
                p += 4
            while p < end:
                src = grad[order[p]]
                for j in range(d):
                    dst[j] += src[j]
                p += 1


# --- cosine: row normalisation and blocked top-k selection ---------------------------------------

@serial_and_parallel(_sigs(lambda f: numba.void(_in(f[:, ::1]), f[:, ::1])))
def normalize_rows(a, out):
    """``out[i] = a[i] / ||a[i]||``; a zero row stays zero (so its cosines are 0, never NaN).

    The sum of squares is accumulated in float64 for every input dtype; the scaled row is stored
    in the input dtype. Non-finite entries give a non-finite norm and a NaN/0 row, as in NumPy.
    A float64 row whose squares leave float64's range (entries past about 1e154, or all under
    about 1e-154: the sum overflows to inf or underflows to 0) is divided by its largest
    magnitude first (float32 rows never are: their squares fit).
    """
    d = a.shape[1]
    for i in prange(a.shape[0]):
        row = a[i]
        ss = 0.0
        for j in range(d):
            x = np.float64(row[j])
            ss += x * x
        dst = out[i]
        scale = 1.0
        if ss == np.inf or ss < _SMALLEST_NORMAL:
            scale = _largest_magnitude(row)
            if scale == 0.0 or scale == np.inf:  # (a zero row; or an infinite entry: as NumPy)
                scale = 1.0
            else:
                ss = 0.0
                for j in range(d):
                    x = np.float64(row[j]) / scale
                    ss += x * x
        if ss == 0.0:
            for j in range(d):
                dst[j] = 0
        elif scale == 1.0:  # (every row but the rescued ones: no division per entry)
            inv = 1.0 / np.sqrt(ss)
            for j in range(d):
                dst[j] = row[j] * inv
        else:
            inv = 1.0 / np.sqrt(ss)
            for j in range(d):
                dst[j] = (row[j] / scale) * inv


_SMALLEST_NORMAL = np.finfo(np.float64).tiny  # (a sum of squares below it lost digits or is 0)


@numba.njit(inline="always")
def _largest_magnitude(row):
    """``max(|row|)`` in float64 (NaN entries skipped)."""
    m = 0.0
    for j in range(row.shape[0]):
        x = abs(np.float64(row[j]))
        if x > m:
            m = x
    return m


@numba.njit(inline="always")
def _ranks_below(s1, i1, s2, i2):
    """Whether candidate (s1, i1) ranks below (s2, i2): lower score, NaN lowest, ties -> larger id."""
    if s1 != s1:
        if s2 != s2:
            return i1 > i2
        return True
    if s2 != s2:
        return False
    if s1 < s2:
        return True
    if s1 > s2:
        return False
    return i1 > i2


@numba.njit(inline="always")
def _sift_down(hs, hi, start, size):
    """Restore the heap (worst candidate at the root) below ``start`` in ``hs/hi[:size]``."""
    pos = start
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        right = child + 1
        if right < size and _ranks_below(hs[right], hi[right], hs[child], hi[child]):
            child = right
        if _ranks_below(hs[child], hi[child], hs[pos], hi[pos]):
            ts = hs[pos]
            hs[pos] = hs[child]
            hs[child] = ts
            ti = hi[pos]
            hi[pos] = hi[child]
            hi[child] = ti
            pos = child
        else:
            break


@numba.njit(inline="always")
def _admits(hs, hi, g, size, k, s):
    """Whether row ``g``'s heap (``size`` entries of ``k``) would take score ``s`` from a column
    larger than any it holds. Once full: ``s`` must beat the worst entry, where NaN ranks lowest
    and an equal score loses (the newcomer's column is larger)."""
    if size < k:
        return True
    top = hs[g, 0]
    return s > top or (top != top and s == s)


@numba.njit(inline="always")
def _swap_entries(hs, hi, g, a, b):
    """Swap entries ``a`` and ``b`` (score and column) of row ``g``'s heap."""
    ts = hs[g, a]
    hs[g, a] = hs[g, b]
    hs[g, b] = ts
    ti = hi[g, a]
    hi[g, a] = hi[g, b]
    hi[g, b] = ti


@numba.njit(inline="always")
def _insert(hs, hi, g, size, k, s, col, exclude):
    """Put ``(s, col)``, which :func:`_admits` accepted, into row ``g``'s heap; return its size.

    Row ``g``'s heap is ``hs/hi[g, :size]`` (best ``k`` so far, worst at index 0). Columns
    listed in ``exclude[g]`` (padded with -1) are dropped here, so excluded columns cost nothing
    unless they would have made the top k. The 2-D arrays are indexed directly (no row views)
    to keep reference counting out of the hot loop.
    """
    for e in range(exclude.shape[1]):
        if exclude[g, e] == col:
            return size
    if size < k:
        pos = size
        hs[g, pos] = s
        hi[g, pos] = col
        while pos > 0:  # sift up towards the root (the root is the worst entry)
            parent = (pos - 1) // 2
            if _ranks_below(hs[g, pos], hi[g, pos], hs[g, parent], hi[g, parent]):
                _swap_entries(hs, hi, g, pos, parent)
                pos = parent
            else:
                break
        return size + 1
    hs[g, 0] = s
    hi[g, 0] = col
    pos = 0
    while True:  # sift down from the root
        child = 2 * pos + 1
        if child >= k:
            break
        right = child + 1
        if right < k and _ranks_below(hs[g, right], hi[g, right], hs[g, child], hi[g, child]):
            child = right
        if _ranks_below(hs[g, child], hi[g, child], hs[g, pos], hi[g, pos]):
            _swap_entries(hs, hi, g, pos, child)
            pos = child
        else:
            break
    return size


_CHUNK = 16  # scores screened together against a heap threshold (one or two SIMD compares)


@serial_and_parallel(_sigs(lambda f: numba.void(
    f[:, ::1], numba.int64, numba.int64, numba.int64[:, ::1],
    f[:, ::1], numba.int64[:, ::1], numba.int64[::1])))
def topk_update(tile, row0, col0, exclude, heap_scores, heap_ids, heap_size):
    """Offer every score of ``tile`` to the running top-k heaps of rows ``row0..``.

    ``tile[r, c]`` is the score of global row ``row0 + r`` against column ``col0 + c``;
    ``exclude[row0 + r]`` lists columns (padded with -1) that row must never select. Each row's
    heap lives in ``heap_scores/heap_ids[row0 + r, :heap_size[row0 + r]]``. Once a heap is full,
    a chunk of scores none of which beats its worst entry is skipped after one vector compare.

    Precondition: each row is offered its columns in increasing order across calls (ties are
    then settled by arrival). Rows are independent and each is updated by one iteration:
    deterministic.
    """
    k = heap_scores.shape[1]
    m = tile.shape[1]
    for r in prange(tile.shape[0]):
        g = row0 + r
        size = heap_size[g]
        c = 0
        while c < m:
            stop = min(m, c + _CHUNK)
            if size == k:
                # With a NaN k-th best every compare is false, so offer the chunk in full.
                top = heap_scores[g, 0]
                hit = top != top
                for j in range(c, stop):
                    hit |= tile[r, j] > top
                if not hit:
                    c = stop
                    continue
            for j in range(c, stop):
                s = tile[r, j]
                if _admits(heap_scores, heap_ids, g, size, k, s):
                    size = _insert(heap_scores, heap_ids, g, size, k, s, col0 + j, exclude)
            c = stop
        heap_size[g] = size


@serial_and_parallel(_sigs(lambda f: numba.void(
    f[:, ::1], numba.int64, numba.int64, numba.int64[:, ::1],
    f[:, ::1], numba.int64[:, ::1], numba.int64[::1])))
def topk_update_columns(tile, row0, col0, exclude, heap_scores, heap_ids, heap_size):
    """Like :func:`topk_update` for the transposed tile: column ``c`` of ``tile`` holds the
    scores of global row ``row0 + c`` against columns ``col0 + r`` (r = tile row).

    Used when a symmetric matrix is computed one triangle of tiles at a time. Each parallel
    iteration owns ``_CHUNK`` consecutive tile columns (so distinct heaps: deterministic) and
    walks the tile rows in order, reading ``_CHUNK`` contiguous scores per tile row and
    comparing them with the ``_CHUNK`` heap thresholds at once.
    """
    k = heap_scores.shape[1]
    n_rows = tile.shape[0]
    n_cols = tile.shape[1]
    n_groups = (n_cols + _CHUNK - 1) // _CHUNK
    for grp in prange(n_groups):
        c_lo = grp * _CHUNK
        c_hi = min(n_cols, c_lo + _CHUNK)
        width = c_hi - c_lo
        thr = np.empty(_CHUNK, dtype=tile.dtype)
        screen = True  # every heap of the group is full with a non-NaN threshold
        for c in range(width):
            g = row0 + c_lo + c
            thr[c] = heap_scores[g, 0]
            if heap_size[g] < k or thr[c] != thr[c]:
                screen = False
        for r in range(n_rows):
            if screen:
                hit = False
                for c in range(width):
                    hit |= tile[r, c_lo + c] > thr[c]
                if not hit:
                    continue
            screen = True
            for c in range(width):
                g = row0 + c_lo + c
                s = tile[r, c_lo + c]
                size = heap_size[g]
                if _admits(heap_scores, heap_ids, g, size, k, s):
                    size = _insert(heap_scores, heap_ids, g, size, k, s, col0 + r, exclude)
                    heap_size[g] = size
                    thr[c] = heap_scores[g, 0]
                if size < k or thr[c] != thr[c]:
                    screen = False


@serial_and_parallel(_sigs(lambda f: numba.void(f[:, ::1], numba.int64[:, ::1], numba.int64[::1])))
def topk_finish(heap_scores, heap_ids, heap_size):
    """Heap-sort each row's heap in place into best-first order (score desc, then id asc)."""
    for g in prange(heap_scores.shape[0]):
        hs = heap_scores[g]
        hi = heap_ids[g]
        size = heap_size[g]
        while size > 1:
            last = size - 1
            ts = hs[0]
            hs[0] = hs[last]
            hs[last] = ts
            ti = hi[0]
            hi[0] = hi[last]
            hi[last] = ti
            size = last
            _sift_down(hs, hi, 0, size)


# --- optimiser steps on touched rows -------------------------------------------------------------

@serial_and_parallel(_sigs(lambda f: numba.void(f[:, ::1], _in(numba.int64[::1]), _in(f[:, ::1]), f)))
def sgd_rows(table, ids, rows, lr):
    """``table[ids[i]] -= lr * rows[i]`` for distinct ``ids`` (one owner per row)."""
    d = table.shape[1]
    for i in prange(ids.shape[0]):
        dst = table[ids[i]]
        src = rows[i]
        for j in range(d):
            dst[j] -= lr * src[j]


@serial_and_parallel(_sigs(lambda f: numba.void(f[:, ::1], f[:, ::1], f[:, ::1], _in(numba.int64[::1]),
                                                 _in(f[:, ::1]), f, f, f, f, f, f, f, f)))
def adam_rows(table, m, v, ids, rows, lr, beta1, beta2, eps, bias1, bias2, one_m_beta1,
              one_m_beta2):
    """Adam on rows ``ids`` (distinct) only: moments and weights of other rows are untouched.

    All arithmetic is in the table's dtype (the scalars arrive already converted; a Python int
    literal here would promote float32 to float64), in the order of the NumPy reference
    (:func:`fastbpe.kernels.adam_rows_reference`).
    """
    d = table.shape[1]
    for i in prange(ids.shape[0]):
        r = ids[i]
        w = table[r]
        mr = m[r]
        vr = v[r]
        g = rows[i]
        for j in range(d):
            mr[j] = beta1 * mr[j] + one_m_beta1 * g[j]
            vr[j] = beta2 * vr[j] + one_m_beta2 * (g[j] * g[j])
            w[j] -= lr * (mr[j] / bias1) / (np.sqrt(vr[j] / bias2) + eps)
