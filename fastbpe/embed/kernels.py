"""Embedding kernels: row gather, scatter-add backward, cosine similarity, nearest neighbours.

The token ids a tokenizer produces index the rows of an embedding table ``E`` of shape
``(V, d)``. The forward pass is a row gather (:func:`gather`), the backward pass sums the
gradients of all positions that used a row into that row (:func:`scatter_add`, or the
touched-rows form :func:`scatter_add_sparse`), and embeddings are compared by cosine similarity
(:func:`cosine_similarity`, :func:`topk_cosine`, :func:`analogy`).

Each fast function (Numba, :mod:`fastbpe.embed._numba`) has a plain NumPy reference beside it
(``*_reference``); the tests compare them.

Conventions shared by every function here:

* **Dtypes.** Float data must be ``float32`` or ``float64``; the result has the input's dtype
  (no silent up- or down-casting; mixing the two raises ``TypeError``). Ids may have any integer
  dtype (not bool, not float) and any shape; they are converted to a C-contiguous ``int64`` copy
  when they are not one already (cheap: 8 bytes per id).
* **Layout.** Float inputs that are not C-contiguous are copied once with
  ``np.ascontiguousarray`` (correct, but the copy costs time and memory: pass C-contiguous
  arrays on hot paths). An ``out`` array is never copied: it must be a C-contiguous ndarray of
  exactly the result's shape and dtype and must not overlap an input, else ``ValueError`` /
  ``TypeError``.
* **Read-only inputs** (``np.load(..., mmap_mode="r")``, ``setflags(write=False)``) are taken
  as they are, without a copy; results are new writeable arrays, and an ``out`` must be writeable.
* **Bad input** raises before any memory is touched: ``IndexError`` naming the first offending
  id for negative or out-of-range ids (negative ids are *not* wrapped as in NumPy), ``ValueError``
  for shape mismatches, ``TypeError`` for wrong dtypes.
* **Non-finite data** is not checked: NaN and inf are copied and summed under IEEE rules
  (a NaN gradient makes its row NaN). A row with a non-finite entry has non-finite cosines;
  the neighbour search ranks NaN scores below every number.
* **Memory traffic.** :func:`gather` into a caller's ``out`` of 8 MB or more writes it with
  streaming (non-temporal) stores, which skip reading the destination into the cache first;
  into a freshly allocated result it copies rows with ``memcpy`` (measured faster there).
* **Determinism.** Results are bit-identical whatever the thread count, and equal to the serial
  compile: work is partitioned by destination row (each output row has one owner thread, which
  sums its sources in position order); there are no atomics and no cross-thread reductions.
  The one exception is the matrix product inside the cosine functions, which is BLAS's (its
  threads, its summation order); the Numba selection on top of it is deterministic.
  ``parallel=None`` (the default) picks the parallel compile for large inputs when Numba has
  more than one thread; ``True``/``False`` force it.
"""
import operator
from typing import Optional, Tuple

import numba
import numpy as np

from . import _numba as _nb

__all__ = [
    "gather", "scatter_add", "scatter_add_sparse", "normalize_rows", "cosine_similarity",
    "topk_cosine", "analogy",
    "gather_reference", "scatter_add_reference", "scatter_add_sparse_reference",
    "normalize_rows_reference", "cosine_similarity_reference", "topk_cosine_reference",
    "analogy_reference", "sgd_rows", "sgd_rows_reference", "adam_rows", "adam_rows_reference",
]

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_PARALLEL_MIN_ELEMENTS = 1 << 15   # below this much work, thread start-up costs more than it saves
_TILE_ELEMENTS = 1 << 22           # top-k score tile: 16 MB of float32 (32 MB float64)
_TILE_COLS = 4096
_TILE_SQUARE = 2048                # symmetric top-k: square tiles of the upper triangle
_COUNTING_SORT_SLACK = 1 << 20     # counting sort when max id < 4 * len(ids) + this
_STREAM_MIN_BYTES = 8 << 20        # gather into a caller's out this big uses streaming stores


# --- validation helpers --------------------------------------------------------------------------

def _use_parallel(parallel: Optional[bool], work: int) -> bool:
    """Auto rule: parallel when Numba has threads to spare and the work is worth it; never in
    a child forked after its parent ran parallel kernels on Numba's OpenMP layer (where it
    would end the process: an explicit ``parallel=True`` is refused)."""
    if _nb.parallel_lost_in_fork():
        if parallel:
            raise RuntimeError("parallel=True: this process was forked after its parent ran parallel kernels on "
                               "Numba's OpenMP threading layer, which a forked child cannot run (Numba would end "
                               "it); pass parallel=False (or None), start workers with 'spawn' or 'forkserver', or "
                               "set NUMBA_THREADING_LAYER=workqueue")
        return False
    if parallel is None:
        return numba.get_num_threads() > 1 and work >= _PARALLEL_MIN_ELEMENTS
    return bool(parallel)


def _float_matrix(a, name: str) -> np.ndarray:
    """A C-contiguous float32/float64 2-D view of ``a`` (a copy only when not C-contiguous)."""
    if not isinstance(a, np.ndarray):
        a = np.asarray(a)
    if a.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be a float32 or float64 array, got dtype {a.dtype}")
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows x dim), got shape {a.shape}")
    return np.ascontiguousarray(a)


def _float_array(a, name: str) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        a = np.asarray(a)
    if a.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be a float32 or float64 array, got dtype {a.dtype}")
    return np.ascontiguousarray(a)


def _id_array(ids, name: str = "ids") -> np.ndarray:
    """``ids`` as an integer ndarray (any shape); rejects bool, float and object input.

    An empty Python sequence (which NumPy would make float64) is taken as empty int64 ids.
    """
    arr = np.asarray(ids)
    if arr.size == 0 and not isinstance(ids, np.ndarray):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":  # (not np.integer: NumPy counts timedelta64 as one, and its NaT passed every bound)
        if not isinstance(ids, np.ndarray) and arr.dtype.kind in "fO" and all(
                isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in np.asarray(ids, object).ravel()):
            # (Python ints no one integer dtype holds: NumPy made floats or objects of them)
            raise IndexError(f"{name} hold integers no 64-bit integer dtype holds (2**64 or more, or 2**63 or more "
                             "beside a negative id): ids are row numbers, from 0 below the row count")
        raise TypeError(f"{name} must have an integer dtype, got {arr.dtype}")
    return arr


def _check_id_range(ids: np.ndarray, num_rows: Optional[int], name: str = "ids") -> None:
    """Raise ``IndexError`` naming the first id outside ``[0, num_rows)`` (``None``: below the
    largest int64, 2**63 - 1, the bound an id's row count must stay under)."""
    if ids.size == 0:
        return
    limit = np.iinfo(np.int64).max if num_rows is None else num_rows
    lo, hi = ids.min(), ids.max()
    if lo < 0 or hi >= limit:
        flat = ids.reshape(-1)
        bad_pos = int(np.flatnonzero((flat < 0) | (flat >= limit))[0])
        valid = "ids must be >= 0 and below 2**63 - 1, the largest int64" if num_rows is None else \
            f"out of range for {num_rows} rows (valid: 0..{num_rows - 1})"
        raise IndexError(f"{name} contains {int(flat[bad_pos])} at flat position {bad_pos}, "
                         f"{valid}; negative ids are not wrapped")


def _flat_int64(ids: np.ndarray) -> np.ndarray:
    """Range-checked ids as a flat C-contiguous int64 array (a view when already one)."""
    return np.ascontiguousarray(ids.reshape(-1), dtype=np.int64)


def _check_out(out, shape, dtype, inputs=()) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy ndarray, got {type(out).__name__}")
    if out.dtype != dtype:
        raise TypeError(f"out has dtype {out.dtype}, expected {np.dtype(dtype)}")
    if out.shape != tuple(shape):
        raise ValueError(f"out has shape {out.shape}, expected {tuple(shape)}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be a writeable C-contiguous array")
    for a in inputs:
        if np.may_share_memory(out, a):
            raise ValueError("out must not overlap the inputs")
    return out


def _num_rows(num_rows) -> int:
    try:
        if isinstance(num_rows, (bool, np.bool_)):
            raise TypeError
        n = operator.index(num_rows)
    except TypeError:
        raise TypeError(f"num_rows must be an integer, got {type(num_rows).__name__}") from None
    if n < 0:
        raise ValueError(f"num_rows must be >= 0, got {n}")
    return n


# --- gather --------------------------------------------------------------------------------------

def gather(E, ids, out: Optional[np.ndarray] = None, *, parallel: Optional[bool] = None) -> np.ndarray:
    """Row gather: ``E[ids]``, shape ``ids.shape + (d,)``, dtype ``E.dtype``.

    ``ids`` may have any integer dtype and any shape; every id must be in ``[0, V)``
    (``IndexError`` otherwise, raised before anything is written). Bit-identical to
    ``E[ids]`` for every thread count.

    >>> E = np.arange(6, dtype=np.float32).reshape(3, 2)
    >>> gather(E, np.array([[2, 0]], dtype=np.uint8))
    array([[[4., 5.],
            [0., 1.]]], dtype=float32)
    """
    E = _float_matrix(E, "E")
    ids = _id_array(ids)
    V, d = E.shape
    _check_id_range(ids, V)
    shape = ids.shape + (d,)
    if out is None:
        out = np.empty(shape, dtype=E.dtype)
        stream = False  # fresh pages: streaming stores are slower there (see gather_rows)
    else:
        _check_out(out, shape, E.dtype, (E, ids))  # (the kernel reads ids while it writes out)
        # (streaming stores need each row to start on a whole element: an `out` viewed from an
        # odd byte of a buffer takes memcpy)
        stream = out.nbytes >= _STREAM_MIN_BYTES and out.ctypes.data % out.itemsize == 0
    flat = _flat_int64(ids)
    if flat.size and d:
        _nb.gather_rows(E, flat, out.reshape(flat.size, d), stream,
                        parallel=_use_parallel(parallel, flat.size * d))
    return out


def gather_reference(E: np.ndarray, ids) -> np.ndarray:
    """NumPy oracle of :func:`gather`."""
    return np.asarray(E)[np.asarray(ids)]


# --- scatter-add ---------------------------------------------------------------------------------

def _grad_and_ids(grad, ids) -> Tuple[np.ndarray, np.ndarray]:
    """Validate ``grad`` (shape ``ids.shape + (d,)``) and return it as a C-contiguous 2-D view."""
    ids = _id_array(ids)
    grad = _float_array(grad, "grad")
    if grad.ndim != ids.ndim + 1 or grad.shape[:-1] != ids.shape:
        raise ValueError(f"grad must have shape ids.shape + (d,) = {ids.shape} + (d,), "
                         f"got {grad.shape}")
    return grad, ids


def _chunk_bounds(starts: np.ndarray, num_chunks: int) -> np.ndarray:
    """Split buckets into contiguous chunks of about equal cost (sources + 1 per row).

    >>> _chunk_bounds(np.array([0, 6, 6, 7, 8]), 2).tolist()
    [0, 1, 4]
    """
    nb = starts.size - 1
    cost = starts + np.arange(nb + 1, dtype=np.int64)  # cumulative work before bucket b
    targets = cost[-1] * np.arange(1, num_chunks, dtype=np.int64) // num_chunks
    inner = np.searchsorted(cost, targets, side="right")
    return np.concatenate(([0], np.clip(inner, 0, nb), [nb])).astype(np.int64)


def _sum_buckets(grad2, order, starts, out2, parallel):
    use_par = _use_parallel(parallel, grad2.size + out2.size)
    chunks = 4 * numba.get_num_threads() if use_par else 1
    bounds = _chunk_bounds(starts, chunks)
    _nb.sum_buckets(grad2, order, starts, bounds, out2, parallel=use_par)


def scatter_add(grad, ids, num_rows: int, out: Optional[np.ndarray] = None, *,
                parallel: Optional[bool] = None) -> np.ndarray:
    """Dense backward of :func:`gather`: a ``(num_rows, d)`` array whose row ``i`` is the sum of
    ``grad[p]`` over the positions ``p`` where ``ids[p] == i`` (exactly zero for absent ids).

    ``grad`` has shape ``ids.shape + (d,)``. If ``out`` is given it is overwritten (not added to).

    Deterministic: positions are bucketed by destination row (a stable counting sort), then each
    row is owned by one thread and summed from 0 in increasing position order. The result is
    bit-identical to ``np.add.at(zeros, ids, grad)`` for any thread count.

    >>> g = np.ones((3, 2), dtype=np.float32)
    >>> scatter_add(g, [2, 0, 2], num_rows=4)
    array([[1., 1.],
           [0., 0.],
           [2., 2.],
           [0., 0.]], dtype=float32)
    """
    grad, ids = _grad_and_ids(grad, ids)
    num_rows = _num_rows(num_rows)
    _check_id_range(ids, num_rows)
    d = grad.shape[-1]
    if out is None:
        out = np.empty((num_rows, d), dtype=grad.dtype)
    else:
        _check_out(out, (num_rows, d), grad.dtype, (grad, ids))
    flat = _flat_int64(ids)
    if num_rows == 0:
        return out
    if d == 0:
        return out
    starts, order = _nb.bucket_by_row(flat, num_rows)
    _sum_buckets(grad.reshape(flat.size, d), order, starts, out, parallel)
    return out


def _bucket_present(flat: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(unique_ids, starts, order)``: positions of ``unique_ids[b]`` are
    ``order[starts[b]:starts[b+1]]``, in increasing position order.

    >>> [a.tolist() for a in _bucket_present(np.array([5, 1, 5, 3]))]
    [[1, 3, 5], [0, 1, 2, 4], [1, 3, 0, 2]]
    """
    n = flat.size
    hi = int(flat.max()) if n else -1
    if hi + 1 <= 4 * n + _COUNTING_SORT_SLACK:
        all_starts, order = _nb.bucket_by_row(flat, hi + 1)
        present = np.flatnonzero(all_starts[1:] != all_starts[:-1])
        starts = np.append(all_starts[present], n).astype(np.int64)
        return present.astype(np.int64), starts, order
    # Ids too sparse for a counting table: a stable sort gives the same grouping and order.
    order = np.argsort(flat, kind="stable").astype(np.int64)
    keys = flat[order]
    first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    return keys[first].astype(np.int64), np.append(first, n).astype(np.int64), order


def scatter_add_sparse(grad, ids, *, parallel: Optional[bool] = None
                       ) -> Tuple[np.ndarray, np.ndarray]:
    """Touched-rows backward of :func:`gather`: ``(unique_ids, rows)``.

    ``unique_ids`` (int64, sorted ascending) are the distinct ids; ``rows[b]`` is the sum of
    ``grad`` over the positions holding ``unique_ids[b]``, summed in position order (so
    ``scatter_add(grad, ids, V)[unique_ids] == rows`` bit for bit). Ids must be ``>= 0``; there is
    no upper bound. Deterministic for any thread count, like :func:`scatter_add`.

    >>> u, rows = scatter_add_sparse(np.ones((3, 1)), [7, 2, 7])
    >>> u.tolist(), rows.tolist()
    ([2, 7], [[1.0], [2.0]])
    """
    grad, ids = _grad_and_ids(grad, ids)
    d = grad.shape[-1]
    _check_id_range(ids, None)
    flat = _flat_int64(ids)
    unique_ids, starts, order = _bucket_present(flat)
    rows = np.empty((unique_ids.size, d), dtype=grad.dtype)
    if unique_ids.size and d:
        _sum_buckets(grad.reshape(flat.size, d), order, starts, rows, parallel)
    return unique_ids, rows


def scatter_add_reference(grad, ids, num_rows: int) -> np.ndarray:
    """NumPy oracle of :func:`scatter_add` (``np.add.at`` on zeros)."""
    grad = np.asarray(grad)
    ids = np.asarray(ids)
    d = grad.shape[-1]
    out = np.zeros((num_rows, d), dtype=grad.dtype)
    np.add.at(out, ids.reshape(-1), grad.reshape(ids.size, d))
    return out


def scatter_add_sparse_reference(grad, ids) -> Tuple[np.ndarray, np.ndarray]:
    """NumPy oracle of :func:`scatter_add_sparse`."""
    grad = np.asarray(grad)
    ids = np.asarray(ids).reshape(-1).astype(np.int64)
    unique_ids, inverse = np.unique(ids, return_inverse=True)
    d = grad.shape[-1]
    rows = np.zeros((unique_ids.size, d), dtype=grad.dtype)
    np.add.at(rows, inverse.reshape(-1), grad.reshape(ids.size, d))
    return unique_ids, rows


# --- cosine similarity ---------------------------------------------------------------------------

def normalize_rows(A, *, parallel: Optional[bool] = None) -> np.ndarray:
    """Rows scaled to unit L2 norm (a new array, dtype of ``A``); zero rows stay zero.

    The norm is accumulated in float64 and the scaled row stored in ``A.dtype``.

    >>> normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    array([[0.6, 0.8],
           [0. , 0. ]])
    """
    A = _float_matrix(A, "A")
    out = np.empty_like(A)
    if A.size:
        _nb.normalize_rows(A, out, parallel=_use_parallel(parallel, A.size))
    return out


def normalize_rows_reference(A) -> np.ndarray:
    """NumPy oracle of :func:`normalize_rows`."""
    A = np.asarray(A)
    wide = A.astype(np.float64)
    squares = np.einsum("ij,ij->i", wide, wide)
    # rows whose squares leave float64's range: divided by their largest magnitude first
    scale = np.ones(len(A))
    rescue = (squares == np.inf) | (squares < np.finfo(np.float64).tiny)
    if rescue.any():
        largest = np.abs(np.nan_to_num(wide[rescue], nan=0.0)).max(axis=1, initial=0.0)
        scale[rescue] = np.where((largest == 0) | (largest == np.inf), 1.0, largest)
        wide = wide / scale[:, None]
        squares[rescue] = np.einsum("ij,ij->i", wide[rescue], wide[rescue])
    norms = np.sqrt(squares)
    inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms != 0)
    return ((A / scale[:, None]) * inv[:, None]).astype(A.dtype)


def _pair(A, B):
    A = _float_matrix(A, "A")
    if B is None:
        return A, None
    B = _float_matrix(B, "B")
    if A.dtype != B.dtype:
        raise TypeError(f"A and B must have the same dtype, got {A.dtype} and {B.dtype}")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"A and B must have the same number of columns, got {A.shape[1]} "
                         f"and {B.shape[1]}")
    return A, B


def cosine_similarity(A, B=None, *, parallel: Optional[bool] = None) -> np.ndarray:
    """``(n, m)`` cosine similarities of the rows of ``A`` and ``B`` (``B=None``: ``A`` with itself).

    Rows are normalised by a Numba kernel, then multiplied by BLAS (``An @ Bn.T``). A zero row
    has cosine 0 with everything (never NaN). Values are not clipped, so rounding can give
    ``1 + eps``. The matmul's thread count is BLAS's own, and BLAS, not this package, fixes its
    summation order.

    >>> cosine_similarity(np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[2.0, 0.0], [1.0, 1.0]])).round(4)
    array([[1.    , 0.7071],
           [0.    , 0.    ]])
    """
    A, B = _pair(A, B)
    An = normalize_rows(A, parallel=parallel)
    if B is None:
        return An @ An.T
    return An @ normalize_rows(B, parallel=parallel).T


def cosine_similarity_reference(A, B=None) -> np.ndarray:
    """NumPy oracle of :func:`cosine_similarity` (normalise, then matmul)."""
    An = normalize_rows_reference(A)
    Bn = An if B is None else normalize_rows_reference(B)
    return An @ Bn.T


def _topk_normalized(An, Bn, k, exclude, parallel, symmetric=False):
    """Top-k of ``An @ Bn.T`` per row, never holding more than one score tile.

    Memory: the ``(n, k)`` results plus one score tile (at most ``_TILE_ELEMENTS`` scores). Each
    tile is a BLAS matmul into a reused buffer; a Numba pass offers its scores to per-row heaps.
    With ``symmetric`` (``Bn is An``), only tiles on and above the diagonal are computed and
    each off-diagonal tile feeds both its rows and, transposed, its columns: half the matmul.
    Tiles are visited so that every row sees its candidates in increasing column order (the
    precondition of the heap update). Tile sizes depend only on the shapes, never on the thread
    count.
    """
    n, m = An.shape[0], Bn.shape[0]
    dtype = An.dtype
    scores = np.empty((n, k), dtype=dtype)
    ids = np.empty((n, k), dtype=np.int64)
    if n == 0 or k == 0:
        return ids, scores
    sizes = np.zeros(n, dtype=np.int64)
    if symmetric:
        tile_rows = tile_cols = min(n, _TILE_SQUARE)
    else:
        tile_cols = min(m, _TILE_COLS)
        tile_rows = max(1, min(n, _TILE_ELEMENTS // tile_cols))
    buf = np.empty(tile_rows * tile_cols, dtype=dtype)
    use_par = _use_parallel(parallel, tile_rows * tile_cols)
    for r0 in range(0, n, tile_rows):
        r1 = min(n, r0 + tile_rows)
        a_blk = An[r0:r1]
        # Row block r0 meets columns r0.. (symmetric: earlier columns came transposed).
        for c0 in range(r0 if symmetric else 0, m, tile_cols):
            c1 = min(m, c0 + tile_cols)
            tile = buf[:(r1 - r0) * (c1 - c0)].reshape(r1 - r0, c1 - c0)
            np.matmul(a_blk, Bn[c0:c1].T, out=tile)
            _nb.topk_update(tile, r0, c0, exclude, scores, ids, sizes, parallel=use_par)
            if symmetric and c0 != r0:
                _nb.topk_update_columns(tile, c0, r0, exclude, scores, ids, sizes,
                                        parallel=use_par)
    _nb.topk_finish(scores, ids, sizes, parallel=_use_parallel(parallel, n * k))
    return ids, scores


def _check_k(k, available: int) -> int:
    try:
        if isinstance(k, (bool, np.bool_)):
            raise TypeError  # an int to Python, but never a count the caller meant
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"k must be an integer, got {type(k).__name__}") from None
    if k < 0 or k > available:
        raise ValueError(f"k must be in 0..{available} (candidates per row), got {k}")
    return k


def topk_cosine(A, B=None, k: int = 10, *, exclude_self: Optional[bool] = None,
                parallel: Optional[bool] = None) -> Tuple[np.ndarray, np.ndarray]:
    """The ``k`` rows of ``B`` (default ``A``) most cosine-similar to each row of ``A``.

    Returns ``(indices, scores)``, both ``(n, k)``: int64 column ids and scores in ``A.dtype``,
    best first; equal scores go to the smaller id and NaN scores rank below all numbers. (Equal
    as computed: BLAS may round the products of two identical rows 1 ulp apart where they fall
    in different tiles, so duplicate rows of a large table need not come out in id order.)
    ``exclude_self`` (default: ``B is None``) drops column ``i`` from row ``i``'s candidates.

    Computed in tiles: memory is O(n*k + tile), the full ``n x m`` matrix is never built. Scores
    equal :func:`cosine_similarity` up to BLAS rounding (the tiling changes the matmul blocking,
    so an exact tie in one can be a near tie in the other). The selection is deterministic for
    any Numba thread count.

    >>> idx, s = topk_cosine(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]]), k=1)
    >>> idx.ravel().tolist()
    [1, 0, 1]
    """
    A, B = _pair(A, B)
    if exclude_self is None:
        exclude_self = B is None
    An = normalize_rows(A, parallel=parallel)
    Bn = An if B is None else normalize_rows(B, parallel=parallel)
    n, m = An.shape[0], Bn.shape[0]
    k = _check_k(k, m - 1 if (exclude_self and n and m) else m)
    if exclude_self:
        exclude = np.arange(n, dtype=np.int64).reshape(n, 1)
    else:
        exclude = np.empty((n, 0), dtype=np.int64)
    return _topk_normalized(An, Bn, k, exclude, parallel, symmetric=B is None)


def _rank_reference(S: np.ndarray, k: int, exclude) -> Tuple[np.ndarray, np.ndarray]:
    n = S.shape[0]
    ids = np.empty((n, k), dtype=np.int64)
    scores = np.empty((n, k), dtype=S.dtype)
    for i in range(n):
        candidates = np.array([j for j in range(S.shape[1]) if j not in exclude[i]], dtype=np.int64)
        row = S[i, candidates]
        order = np.argsort(-row, kind="stable")[:k]  # NaN sorts last; ties keep smaller ids first
        ids[i] = candidates[order]
        scores[i] = row[order]
    return ids, scores


def topk_cosine_reference(A, B=None, k: int = 10, *, exclude_self: Optional[bool] = None):
    """NumPy oracle of :func:`topk_cosine`: full matrix, then a stable argsort per row."""
    if exclude_self is None:
        exclude_self = B is None
    S = cosine_similarity_reference(A, B)
    exclude = [{i} if exclude_self else set() for i in range(S.shape[0])]
    return _rank_reference(S, k, exclude)


def _analogy_queries(E, a, b, c):
    """Validated ``(E, a, b, c, query_matrix)`` for :func:`analogy`; ``a, b, c`` as 1-D int64."""
    E = _float_matrix(E, "E")
    V = E.shape[0]
    parts = []
    for name, x in (("a", a), ("b", b), ("c", c)):
        x = _id_array(x, name)
        if x.ndim > 1:
            raise ValueError(f"{name} must be an id or a 1-D array of ids, got shape {x.shape}")
        _check_id_range(x, V, name)
        parts.append(_flat_int64(x))
    a, b, c = parts
    if not (a.size == b.size == c.size):
        raise ValueError(f"a, b, c must have the same length, got {a.size}, {b.size}, {c.size}")
    return E, a, b, c


def analogy(E, a, b, c, k: int = 10, *, parallel: Optional[bool] = None
            ) -> Tuple[np.ndarray, np.ndarray]:
    """Answer "a is to b as c is to ?" (Madrid - Spain + France -> Paris with a=Spain,
    b=Madrid, c=France): the ``k`` rows nearest in cosine to ``n(b) - n(a) + n(c)``, where ``n``
    normalises a row, excluding the rows ``a``, ``b`` and ``c`` themselves (3CosAdd).

    ``a``, ``b``, ``c`` are ids or equal-length 1-D id arrays (a batch of queries). Returns
    ``(indices, scores)`` shaped ``(k,)`` for scalar ids, else ``(q, k)``; ``k <= V - 3``.

    >>> E = np.array([[1.0, 0, 0], [1.0, 1, 0], [0, 0, 1.0], [0, 1, 1.0], [0.1, 0.1, 1.0]])
    >>> analogy(E, 0, 1, 2, k=1)[0].tolist()
    [3]
    """
    scalar = all(np.ndim(x) == 0 for x in (a, b, c))
    E, a, b, c = _analogy_queries(E, a, b, c)
    k = _check_k(k, max(E.shape[0] - 3, 0))
    En = normalize_rows(E, parallel=parallel)
    queries = En[b] - En[a] + En[c]
    Qn = normalize_rows(queries, parallel=parallel)
    exclude = np.stack([a, b, c], axis=1) if a.size else np.empty((0, 3), dtype=np.int64)
    ids, scores = _topk_normalized(Qn, En, k, np.ascontiguousarray(exclude), parallel)
    if scalar:
        return ids[0], scores[0]
    return ids, scores


def analogy_reference(E, a, b, c, k: int = 10):
    """NumPy oracle of :func:`analogy`."""
    scalar = all(np.ndim(x) == 0 for x in (a, b, c))
    a, b, c = (np.atleast_1d(np.asarray(x)).astype(np.int64) for x in (a, b, c))
    En = normalize_rows_reference(E)
    Q = En[b] - En[a] + En[c]
    S = cosine_similarity_reference(Q, En)
    exclude = [{int(a[i]), int(b[i]), int(c[i])} for i in range(a.size)]
    ids, scores = _rank_reference(S, k, exclude)
    if scalar:
        return ids[0], scores[0]
    return ids, scores


# --- optimiser row updates (used by fastbpe.embedding) -------------------------------------------

def _checked_row_update(table, ids, rows, moments=()) -> Tuple[np.ndarray, np.ndarray]:
    """Validate an in-place update of rows ``ids`` of ``table`` by ``rows`` (and of the same
    rows of the ``moments`` tables) against the very arrays the kernel will write; return
    ``(ids, rows)`` as the kernel takes them.

    The kernels index ``table`` (and each moment table) with every id unchecked, so a table
    swapped for a smaller one since the ids were computed must be refused here: ``IndexError``
    for an id outside the table, ``ValueError`` for shapes, layout, repeated ids or aliasing,
    ``TypeError`` for dtypes.
    """
    if not isinstance(table, np.ndarray):
        raise TypeError(f"table must be a numpy ndarray, got {type(table).__name__}")
    if table.dtype not in FLOAT_DTYPES:
        raise TypeError(f"table must be a float32 or float64 array, got dtype {table.dtype}")
    if table.ndim != 2:
        raise ValueError(f"table must be 2-D (rows x dim), got shape {table.shape}")
    if not table.flags.c_contiguous or not table.flags.writeable:
        raise ValueError("table is updated in place: it must be a writeable C-contiguous array")
    ids = _id_array(ids)
    if ids.ndim != 1:
        raise ValueError(f"ids must be 1-D, got shape {ids.shape}")
    _check_id_range(ids, table.shape[0])
    ids = _flat_int64(ids)
    if ids.size > 1 and not (ids[1:] > ids[:-1]).all() and np.unique(ids).size != ids.size:
        raise ValueError("ids must be distinct (each row is updated once)")
    if not isinstance(rows, np.ndarray):
        rows = np.asarray(rows)
    if rows.dtype != table.dtype:
        raise TypeError(f"rows has dtype {rows.dtype}, the table is {table.dtype}")
    if rows.shape != (ids.size, table.shape[1]):
        raise ValueError(f"rows must have shape (len(ids), dim) = {(ids.size, table.shape[1])}, "
                         f"got {rows.shape}")
    rows = np.ascontiguousarray(rows)
    written = [table]
    for name, moment in moments:
        if not isinstance(moment, np.ndarray) or moment.dtype != table.dtype:
            raise TypeError(f"{name} must be a {table.dtype} ndarray like the table")
        if moment.shape != table.shape:
            raise ValueError(f"{name} has shape {moment.shape}, the table {table.shape}")
        if not moment.flags.c_contiguous or not moment.flags.writeable:
            raise ValueError(f"{name} is updated in place: it must be a writeable C-contiguous array")
        written.append(moment)
    for i, a in enumerate(written):
        for b in written[i + 1:]:
            if np.may_share_memory(a, b):
                raise ValueError("the table and its moment tables must not overlap")
    if any(np.may_share_memory(rows, a) for a in written):
        rows = rows.copy()  # read while the table is written: take the values as they were
    if any(np.may_share_memory(ids, a) for a in written):
        ids = ids.copy()  # (ids in the table's own memory would change as it is written: the
        # kernel would then index with whatever the update wrote, past the table)
    return ids, rows


def _check_optimizer_settings(lr, beta1=0.0, beta2=0.0, eps=1.0, step=1, dtype=np.float64) -> None:
    """Settings an update can run with: a finite learning rate; Adam's betas in [0, 1), eps
    above 0 and a step from 1 (else its bias corrections or its denominator are 0, and a row
    of zeros, a NaN table). ``lr`` and ``eps`` as the kernels take them, in the table's
    ``dtype`` (1e39 is inf in float32, 1e-50 is 0). Checked before anything is written."""
    t = np.dtype(dtype).type
    with np.errstate(over="ignore", under="ignore"):
        if not np.isfinite(lr) or not np.isfinite(t(lr)):
            raise ValueError(f"lr must be finite (in {np.dtype(dtype)}), got {lr}")
        if not (0 <= beta1 < 1 and 0 <= beta2 < 1):
            raise ValueError(f"Adam's betas must be in [0, 1), got ({beta1}, {beta2})")
        if not eps > 0 or not t(eps) > 0:
            raise ValueError(f"eps must be > 0 (in {np.dtype(dtype)}), got {eps}")
    if isinstance(step, (bool, np.bool_)) or operator.index(step) < 1:
        raise ValueError(f"step must be an integer >= 1, got {step!r}")


def sgd_rows(table: np.ndarray, ids, rows, lr: float, *,
             parallel: Optional[bool] = None) -> None:
    """In place: ``table[ids] -= lr * rows`` for distinct ids in ``[0, len(table))``.

    Checked against ``table`` itself before anything is written (see
    :func:`_checked_row_update`).
    """
    ids, rows = _checked_row_update(table, ids, rows)
    _check_optimizer_settings(lr, dtype=table.dtype)
    if ids.size and table.shape[1]:
        _nb.sgd_rows(table, ids, rows, table.dtype.type(lr),
                     parallel=_use_parallel(parallel, rows.size))


def sgd_rows_reference(table, ids, rows, lr) -> None:
    """NumPy oracle of :func:`sgd_rows` (arithmetic in the table's dtype)."""
    lr = table.dtype.type(lr)
    table[ids] -= lr * rows


def adam_rows(table, m, v, ids, rows, lr, beta1, beta2, eps, step, *,
              parallel: Optional[bool] = None) -> None:
    """In place: one Adam step (bias-corrected with the global ``step``) on rows ``ids`` only.

    ``m`` and ``v`` (the moments) must have the table's shape and dtype; everything is checked
    against the arrays written before anything is written.
    """
    ids, rows = _checked_row_update(table, ids, rows, (("m", m), ("v", v)))
    _check_optimizer_settings(lr, beta1, beta2, eps, step, table.dtype)
    t = table.dtype.type
    bias1 = t(1.0 - beta1 ** step)
    bias2 = t(1.0 - beta2 ** step)
    if ids.size and table.shape[1]:
        _nb.adam_rows(table, m, v, ids, rows, t(lr), t(beta1), t(beta2), t(eps), bias1, bias2,
                      t(1) - t(beta1), t(1) - t(beta2), parallel=_use_parallel(parallel, rows.size))


def adam_rows_reference(table, m, v, ids, rows, lr, beta1, beta2, eps, step) -> None:
    """NumPy oracle of :func:`adam_rows`, same operation order, arithmetic in the table's dtype."""
    t = table.dtype.type
    bias1 = t(1.0 - beta1 ** step)
    bias2 = t(1.0 - beta2 ** step)
    lr, beta1, beta2, eps = t(lr), t(beta1), t(beta2), t(eps)
    one = t(1)
    m[ids] = beta1 * m[ids] + (one - beta1) * rows
    v[ids] = beta2 * v[ids] + (one - beta2) * (rows * rows)
    table[ids] -= lr * (m[ids] / bias1) / (np.sqrt(v[ids] / bias2) + eps)
