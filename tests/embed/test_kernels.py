"""The Numba embedding kernels against their NumPy references (fastbpe.kernels.*_reference).

Every fast function runs in both compiles (``parallel`` fixture: serial and parallel) and is
compared with its oracle on explicit edge cases and on hypothesis-generated shapes with
duplicate-heavy (Zipf) ids. Gather and scatter-add must match bit for bit; cosine scores match
to rounding (BLAS blocking differs), and top-k rankings are checked against the oracle's scores.
"""
import doctest
import os
import tracemalloc

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastbpe.embed import kernels as K

FLOATS = [np.float32, np.float64]
ID_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@pytest.fixture(params=[False, True], ids=["serial", "parallel"])
def parallel(request):
    return request.param


@pytest.fixture
def small_tiles(monkeypatch):
    """Force the top-k search through many tiles (and partial edge tiles) on small inputs."""
    monkeypatch.setattr(K, "_TILE_SQUARE", 7)
    monkeypatch.setattr(K, "_TILE_COLS", 5)
    monkeypatch.setattr(K, "_TILE_ELEMENTS", 5 * 3)


def zipf_ids(rng, num_rows, shape, a=1.3):
    """Duplicate-heavy ids: Zipf ranks mapped onto a random permutation of the rows."""
    ranks = (rng.zipf(a, size=shape) - 1) % num_rows
    return rng.permutation(num_rows)[ranks]


def random_matrix(rng, rows, cols, dtype):
    return rng.standard_normal((rows, cols)).astype(dtype)


def test_doctests():
    assert doctest.testmod(K).failed == 0


# --- gather --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("id_dtype", ID_DTYPES)
def test_gather_matches_numpy_for_every_id_dtype(dtype, id_dtype, parallel):
    rng = np.random.default_rng(0)
    E = random_matrix(rng, 100, 5, dtype)
    ids = zipf_ids(rng, 100, (4, 9)).astype(id_dtype)
    got = K.gather(E, ids, parallel=parallel)
    assert got.dtype == dtype and got.shape == (4, 9, 5)
    np.testing.assert_array_equal(got, K.gather_reference(E, ids))


@pytest.mark.parametrize("ids_shape,table_shape", [
    ((0,), (10, 4)),        # no ids
    ((0,), (0, 4)),         # no rows, no ids
    ((3, 0), (5, 2)),       # empty 2-D ids
    ((), (5, 3)),           # a single scalar id
    ((6,), (1, 3)),         # one row, repeated
    ((6,), (5, 0)),         # zero-width rows
])
def test_gather_edge_shapes(ids_shape, table_shape, parallel):
    rng = np.random.default_rng(1)
    E = random_matrix(rng, *table_shape, np.float32)
    ids = rng.integers(0, max(table_shape[0], 1), size=ids_shape) if table_shape[0] else \
        np.zeros(ids_shape, dtype=np.int64)
    got = K.gather(E, ids, parallel=parallel)
    assert got.shape == ids_shape + (table_shape[1],)
    np.testing.assert_array_equal(got, E[ids])


def test_gather_into_out_and_noncontiguous_table(parallel):
    rng = np.random.default_rng(2)
    big = random_matrix(rng, 40, 12, np.float64)
    E = big[::2, ::3]  # not contiguous: copied, same values
    ids = np.array([[0, 19], [3, 3]])
    out = np.full((2, 2, 4), np.nan)
    assert K.gather(E, ids, out=out, parallel=parallel) is out
    np.testing.assert_array_equal(out, E[ids])
    np.testing.assert_array_equal(K.gather(np.asfortranarray(big), ids[0]), big[ids[0]])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", [1, 7, 16, 17, 40, 131])
def test_gather_with_streaming_stores_into_out(dtype, dim, parallel, monkeypatch):
    """Large outs are written with non-temporal stores (aligned 64-byte blocks + plain head and
    tail); force that path on small shapes whose rows start at every alignment."""
    monkeypatch.setattr(K, "_STREAM_MIN_BYTES", 0)
    rng = np.random.default_rng(13)
    E = random_matrix(rng, 30, dim, dtype)
    ids = zipf_ids(rng, 30, (301,))
    backing = np.full(301 * dim + 8, np.nan, dtype=dtype)
    for shift in (0, 1, 3):  # out starting off a 64-byte boundary
        out = backing[shift:shift + 301 * dim].reshape(301, dim)
        K.gather(E, ids, out=out, parallel=parallel)
        np.testing.assert_array_equal(out, E[ids])


def test_gather_copies_non_finite_values_unchanged():
    E = np.array([[np.nan, np.inf], [-np.inf, -0.0]], dtype=np.float32)
    got = K.gather(E, [1, 0])
    np.testing.assert_array_equal(got, E[[1, 0]])
    assert np.signbit(got[0, 1])


@pytest.mark.parametrize("bad", [-1, 10, 2**40])
def test_gather_rejects_out_of_range_ids_naming_them(bad):
    E = np.zeros((10, 3), dtype=np.float32)
    out = np.full((3, 3), 7.0, dtype=np.float32)
    with pytest.raises(IndexError, match=str(bad)):
        K.gather(E, np.array([1, bad, 2], dtype=np.int64), out=out)
    assert (out == 7.0).all()  # nothing written before the check


@pytest.mark.parametrize("ids", [[2**63, -1], [2**70]])
def test_python_ints_no_integer_dtype_holds_are_out_of_range_not_floats(ids):
    # (NumPy makes float64 or objects of them: "an integer dtype, got float64" misled)
    with pytest.raises(IndexError, match="no 64-bit integer dtype holds"):
        K.gather(np.zeros((10, 3), dtype=np.float32), ids)
    with pytest.raises(TypeError, match="integer dtype, got float64"):
        K.gather(np.zeros((10, 3), dtype=np.float32), [1.0])


def test_gather_rejects_ids_when_table_is_empty():
    with pytest.raises(IndexError, match="0 rows"):
        K.gather(np.zeros((0, 3)), [0])


@pytest.mark.parametrize("ids", [np.array([0.0, 1.0]), np.array([True, False]), ["a"],
                                 np.array([1, 2], dtype=object), np.array(["NaT", 1], "m8[s]"),
                                 np.array([7], "m8[s]")])
def test_gather_rejects_non_integer_ids(ids):
    # (NumPy counts timedelta64 as an integer type: its NaT passed the range check and the
    # kernels read, or wrote, at row -2**63)
    with pytest.raises(TypeError, match="integer"):
        K.gather(np.zeros((3, 2)), ids)
    with pytest.raises(TypeError, match="integer"):
        K.scatter_add(np.ones((ids.size if isinstance(ids, np.ndarray) else 1, 2)), ids, 3)


@pytest.mark.parametrize("E,err", [
    (np.zeros((3, 2), dtype=np.int64), TypeError),
    (np.zeros((3, 2), dtype=np.float16), TypeError),
    (np.zeros(6), ValueError),
    (np.zeros((3, 2, 1)), ValueError),
])
def test_gather_rejects_bad_tables(E, err):
    with pytest.raises(err):
        K.gather(E, [0])


@pytest.mark.parametrize("out,err", [
    (np.zeros((2, 3), dtype=np.float64), TypeError),       # wrong dtype
    (np.zeros((3, 3), dtype=np.float32), ValueError),      # wrong shape
    (np.zeros((2, 6), dtype=np.float32)[:, ::2], ValueError),  # not contiguous
    ([[0.0] * 3] * 2, TypeError),                          # not an ndarray
])
def test_gather_rejects_bad_out(out, err):
    with pytest.raises(err):
        K.gather(np.zeros((4, 3), dtype=np.float32), [0, 1], out=out)


def test_gather_rejects_out_aliasing_table():
    E = np.zeros((4, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="overlap"):
        K.gather(E, [0, 1, 2, 3], out=E)


def test_gather_and_scatter_add_reject_out_in_the_ids_memory():
    """An ``out`` in the memory of the ids would be written while the ids are read: the kernel
    would then index the table with float bits (a crash before it was refused)."""
    E = np.random.default_rng(0).random((4, 2))
    buf = np.zeros(32, dtype=np.int64)
    ids = buf[:16]
    ids[:] = np.arange(16) % 4
    out = buf.view(np.float64).reshape(16, 2)
    with pytest.raises(ValueError, match="overlap"):
        K.gather(E, ids, out=out)
    with pytest.raises(ValueError, match="overlap"):
        K.scatter_add(np.ones((16, 2)), ids, 16, out=out)
    assert (ids == np.arange(16) % 4).all()  # nothing was written


# --- scatter-add -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("id_dtype", [np.uint8, np.int32, np.uint64])
def test_scatter_add_is_bit_identical_to_add_at(dtype, id_dtype, parallel):
    rng = np.random.default_rng(3)
    ids = zipf_ids(rng, 60, (7, 31)).astype(id_dtype)
    grad = rng.standard_normal((7, 31, 6)).astype(dtype)
    got = K.scatter_add(grad, ids, 60, parallel=parallel)
    assert got.dtype == dtype and got.shape == (60, 6)
    np.testing.assert_array_equal(got, K.scatter_add_reference(grad, ids, 60))
    absent = np.setdiff1d(np.arange(60), ids)
    assert absent.size and (got[absent] == 0).all() and not np.signbit(got[absent]).any()


@pytest.mark.parametrize("dtype", FLOATS)
def test_scatter_add_sparse_matches_reference_and_dense(dtype, parallel):
    rng = np.random.default_rng(4)
    ids = zipf_ids(rng, 500, (900,))
    grad = rng.standard_normal((900, 3)).astype(dtype)
    u, rows = K.scatter_add_sparse(grad, ids, parallel=parallel)
    ru, rrows = K.scatter_add_sparse_reference(grad, ids)
    np.testing.assert_array_equal(u, ru)
    np.testing.assert_array_equal(rows, rrows)
    assert u.dtype == np.int64 and rows.dtype == dtype
    np.testing.assert_array_equal(K.scatter_add(grad, ids, 500, parallel=parallel)[u], rows)


def test_scatter_add_sparse_with_huge_sparse_ids_uses_the_sorting_path(parallel):
    ids = np.array([10**12, 5, 10**12, 2**62, 5], dtype=np.int64)
    grad = np.arange(10, dtype=np.float64).reshape(5, 2)
    u, rows = K.scatter_add_sparse(grad, ids, parallel=parallel)
    assert u.tolist() == [5, 10**12, 2**62]
    assert rows.tolist() == [[2 + 8, 3 + 9], [0 + 4, 1 + 5], [6, 7]]
    # the bound said as it is: 2**63 - 2 is the largest id taken
    assert K.scatter_add_sparse(grad[:1], np.array([2**63 - 2]), parallel=parallel)[0].tolist() == [2**63 - 2]
    with pytest.raises(IndexError, match=r"9223372036854775807 .* below 2\*\*63 - 1"):
        K.scatter_add_sparse(grad[:1], np.array([2**63 - 1]), parallel=parallel)


@pytest.mark.parametrize("grad_shape,ids_shape,num_rows", [
    ((0, 4), (0,), 5),        # no ids: all-zero gradient
    ((0, 4), (0,), 0),        # no rows at all
    ((3, 0), (3,), 5),        # zero-width rows
    ((4, 2), (4,), 1),        # one row receives everything
    ((2, 0, 3), (2, 0), 3),
])
def test_scatter_add_edge_shapes(grad_shape, ids_shape, num_rows, parallel):
    rng = np.random.default_rng(5)
    grad = rng.standard_normal(grad_shape).astype(np.float32)
    ids = rng.integers(0, max(num_rows, 1), size=ids_shape)
    got = K.scatter_add(grad, ids, num_rows, parallel=parallel)
    np.testing.assert_array_equal(got, K.scatter_add_reference(grad, ids, num_rows))
    u, rows = K.scatter_add_sparse(grad, ids, parallel=parallel)
    ru, rrows = K.scatter_add_sparse_reference(grad, ids)
    np.testing.assert_array_equal(u, ru)
    assert rows.shape == rrows.shape
    np.testing.assert_array_equal(rows, rrows)


def test_scatter_add_overwrites_out():
    out = np.full((3, 2), 5.0)
    got = K.scatter_add(np.ones((2, 2)), [2, 2], 3, out=out)
    assert got is out
    assert out.tolist() == [[0, 0], [0, 0], [2, 2]]


def test_scatter_add_non_finite_and_signed_zero_follow_add_at():
    grad = np.array([[np.nan, 1.0], [1.0, np.inf], [-0.0, -np.inf], [-0.0, 2.0]])
    ids = [0, 0, 1, 2]
    got = K.scatter_add(grad, ids, 3)
    ref = K.scatter_add_reference(grad, ids, 3)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))  # 0.0 + -0.0 == +0.0


def test_scatter_add_errors_before_writing():
    out = np.full((4, 2), 9.0)
    grad = np.ones((3, 2))
    with pytest.raises(IndexError, match="-2"):
        K.scatter_add(grad, [0, -2, 1], 4, out=out)
    with pytest.raises(IndexError, match="4"):
        K.scatter_add(grad, [0, 4, 1], 4, out=out)
    assert (out == 9.0).all()
    with pytest.raises(ValueError, match="shape"):
        K.scatter_add(np.ones((3, 2)), [0, 1], 4)
    with pytest.raises(ValueError, match="shape"):
        K.scatter_add(np.ones(3), [0, 1, 2], 4)
    with pytest.raises(TypeError, match="integer"):
        K.scatter_add(grad, [0.0, 1.0, 2.0], 4)
    with pytest.raises(TypeError):
        K.scatter_add(grad.astype(np.int32), [0, 1, 2], 4)
    with pytest.raises(TypeError):
        K.scatter_add(grad, [0, 1, 2], 4, out=np.zeros((4, 2), dtype=np.float32))
    with pytest.raises(ValueError):
        K.scatter_add(grad, [0, 1, 2], 4, out=np.zeros((5, 2)))
    with pytest.raises(ValueError, match="num_rows"):
        K.scatter_add(grad, [0, 1, 2], -1)
    with pytest.raises(TypeError, match="num_rows"):
        K.scatter_add(grad, [0, 1, 2], 4.0)
    with pytest.raises(IndexError, match="-1"):
        K.scatter_add_sparse(grad, [0, -1, 1])
    with pytest.raises(IndexError, match="int64"):
        K.scatter_add_sparse(grad, np.array([0, 2**63, 1], dtype=np.uint64))


@settings(max_examples=60, deadline=None)
@given(num_rows=st.integers(1, 40), dim=st.integers(0, 9), n_ids=st.integers(0, 300),
       use_f64=st.booleans(), zipf_a=st.floats(1.05, 3.0), seed=st.integers(0, 2**32 - 1),
       parallel=st.booleans())
def test_gather_and_scatter_match_references_on_random_shapes(num_rows, dim, n_ids, use_f64,
                                                              zipf_a, seed, parallel):
    rng = np.random.default_rng(seed)
    dtype = np.float64 if use_f64 else np.float32
    E = random_matrix(rng, num_rows, dim, dtype)
    ids = zipf_ids(rng, num_rows, (n_ids,), zipf_a)
    np.testing.assert_array_equal(K.gather(E, ids, parallel=parallel), E[ids])
    grad = random_matrix(rng, n_ids, dim, dtype)
    np.testing.assert_array_equal(K.scatter_add(grad, ids, num_rows, parallel=parallel),
                                  K.scatter_add_reference(grad, ids, num_rows))
    u, rows = K.scatter_add_sparse(grad, ids, parallel=parallel)
    ru, rrows = K.scatter_add_sparse_reference(grad, ids)
    np.testing.assert_array_equal(u, ru)
    np.testing.assert_array_equal(rows, rrows.reshape(rows.shape))


def test_chunk_bounds_split_work_by_whole_rows():
    starts = np.array([0, 100, 100, 101, 150, 150], dtype=np.int64)
    bounds = K._chunk_bounds(starts, 4)
    assert bounds[0] == 0 and bounds[-1] == 5 and (np.diff(bounds) >= 0).all()
    assert K._chunk_bounds(np.array([0], dtype=np.int64), 3).tolist() == [0, 0, 0, 0]


# --- determinism across thread counts ---------------------------------------------------------------

needs_two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                       reason="Numba was started with fewer than 2 threads")


@pytest.fixture
def restore_threads():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


@needs_two_threads
@pytest.mark.parametrize("dtype", FLOATS)
def test_results_are_bit_identical_for_any_thread_count(dtype, restore_threads, monkeypatch):
    monkeypatch.setattr(K, "_STREAM_MIN_BYTES", 1 << 20)
    rng = np.random.default_rng(6)
    V, d, n = 3000, 33, 40_000
    E = random_matrix(rng, V, d, dtype)
    ids = zipf_ids(rng, V, (n,), 1.1)
    grad = random_matrix(rng, n, d, dtype)
    A = random_matrix(rng, 700, d, dtype)
    A[::50] = 0

    def run(parallel, threads):
        numba.set_num_threads(threads)
        u, rows = K.scatter_add_sparse(grad, ids, parallel=parallel)
        streamed = np.empty((n, d), dtype=dtype)  # >= 5 MB: written with streaming stores
        K.gather(E, ids, out=streamed, parallel=parallel)
        return [K.gather(E, ids, parallel=parallel), streamed,
                K.scatter_add(grad, ids, V, parallel=parallel),
                u, rows, K.normalize_rows(A, parallel=parallel),
                *K.topk_cosine(A, k=7, parallel=parallel),
                *K.topk_cosine(A, E[:900], k=5, parallel=parallel)]

    serial = run(False, 1)
    for threads in (1, 2):
        for got, want in zip(run(True, threads), serial):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(serial[1], serial[0])
    np.testing.assert_array_equal(serial[2], K.scatter_add_reference(grad, ids, V))


# --- cosine similarity -------------------------------------------------------------------------------

TOL = {np.float32: dict(rtol=1e-5, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}


@pytest.mark.parametrize("dtype", FLOATS)
def test_normalize_rows_matches_reference_and_keeps_zero_rows(dtype, parallel):
    rng = np.random.default_rng(7)
    A = random_matrix(rng, 50, 9, dtype) * 1e3
    A[[0, 13]] = 0
    got = K.normalize_rows(A, parallel=parallel)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, K.normalize_rows_reference(A), **TOL[dtype])
    assert (got[[0, 13]] == 0).all()
    np.testing.assert_allclose(np.linalg.norm(got[1:13], axis=1), 1, rtol=1e-5)


@pytest.mark.parametrize("dtype", FLOATS)
def test_cosine_similarity_matches_reference(dtype, parallel):
    rng = np.random.default_rng(8)
    A = random_matrix(rng, 30, 16, dtype)
    B = random_matrix(rng, 20, 16, dtype)
    A[3] = 0
    for got, want in [(K.cosine_similarity(A, B, parallel=parallel),
                       K.cosine_similarity_reference(A, B)),
                      (K.cosine_similarity(A, parallel=parallel),
                       K.cosine_similarity_reference(A))]:
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, **TOL[dtype])
        assert not np.isnan(got).any()
        assert (got[3] == 0).all()  # a zero row has cosine 0 with everything
    assert (K.cosine_similarity(A, parallel=parallel)[:, 3] == 0).all()


def test_cosine_similarity_edge_cases():
    assert K.cosine_similarity(np.zeros((0, 4)), np.ones((3, 4))).shape == (0, 3)
    assert K.cosine_similarity(np.ones((2, 4)), np.zeros((0, 4))).shape == (2, 0)
    assert K.cosine_similarity(np.zeros((5, 0))).tolist() == [[0.0] * 5] * 5  # no dims: all zero
    one = K.cosine_similarity(np.array([[2.0, 0.0]]), np.array([[-3.0, 0.0], [0.0, 0.0]]))
    assert one.tolist() == [[-1.0, 0.0]]
    nan_row = K.cosine_similarity(np.array([[np.nan, 1.0], [1.0, 0.0]]))
    assert np.isnan(nan_row[0]).all() and nan_row[1, 1] == 1.0


def test_cosine_similarity_rejects_mismatches():
    with pytest.raises(TypeError, match="same dtype"):
        K.cosine_similarity(np.ones((2, 3), np.float32), np.ones((2, 3), np.float64))
    with pytest.raises(ValueError, match="columns"):
        K.cosine_similarity(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(TypeError):
        K.cosine_similarity(np.ones((2, 3), dtype=np.int32))


# --- top-k neighbours --------------------------------------------------------------------------------

def assert_topk_agrees(A, B, k, ids, scores, exclude_self, dtype):
    """``ids/scores`` is a valid top-k under the oracle's scores (robust to BLAS near-ties)."""
    want_ids, want_scores = K.topk_cosine_reference(A, B, k, exclude_self=exclude_self)
    S = K.cosine_similarity_reference(A, B)
    assert ids.shape == scores.shape == (A.shape[0], k)
    assert ids.dtype == np.int64 and scores.dtype == dtype
    np.testing.assert_allclose(scores, want_scores, **TOL[dtype])
    rows = np.arange(A.shape[0])[:, None]
    np.testing.assert_allclose(S[rows, ids], scores, **TOL[dtype])
    for i in range(A.shape[0]):
        assert len(set(ids[i])) == k
        if exclude_self:
            assert i not in ids[i]
    return want_ids


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n,m,d,k", [(1, 1, 3, 1), (23, 23, 4, 5), (40, 17, 6, 17),
                                     (19, 60, 5, 12)])
def test_topk_matches_reference(dtype, n, m, d, k, parallel, small_tiles):
    rng = np.random.default_rng(9 + n + m)
    A = random_matrix(rng, n, d, dtype)
    B = random_matrix(rng, m, d, dtype)
    ids, scores = K.topk_cosine(A, B, k, parallel=parallel)
    want_ids = assert_topk_agrees(A, B, k, ids, scores, False, dtype)
    if dtype == np.float64:
        np.testing.assert_array_equal(ids, want_ids)  # no near-ties at this precision
    if n > 1 and k < n:
        ids, scores = K.topk_cosine(A, k=k, parallel=parallel)  # symmetric path, self excluded
        want_ids = assert_topk_agrees(A, None, k, ids, scores, True, dtype)
        if dtype == np.float64:
            np.testing.assert_array_equal(ids, want_ids)


def test_topk_exact_ties_go_to_the_smaller_index(parallel, small_tiles):
    # One-hot rows: every score is exactly 0 or 1, whatever the BLAS blocking.
    axes = np.array([0, 1, 0, 2, 1, 0, 0, 2, 1, 0, 0, 1, 2, 0, 1, 2], dtype=np.int64)
    A = np.eye(3)[axes]
    A[[4, 9]] = 0  # zero rows: cosine 0 with everything
    ids, scores = K.topk_cosine(A, k=6, parallel=parallel)
    want_ids, want_scores = K.topk_cosine_reference(A, k=6)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(scores, want_scores)
    assert ids[0].tolist() == [2, 5, 6, 10, 13, 1]  # the other axis-0 rows, then the first 0
    ids, _ = K.topk_cosine(A, A[:7], k=4, exclude_self=False, parallel=parallel)
    np.testing.assert_array_equal(ids, K.topk_cosine_reference(A, A[:7], 4, exclude_self=False)[0])


def test_topk_ranks_nan_scores_last(parallel, small_tiles):
    A = np.array([[1.0, 0.0], [np.nan, 1.0], [0.5, 0.5], [-1.0, 0.0], [0.0, 1.0], [1.0, 0.1]])
    ids, scores = K.topk_cosine(A, k=5, parallel=parallel)
    want_ids, want_scores = K.topk_cosine_reference(A, k=5)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(scores, want_scores)  # NaN == NaN under assert_array_equal
    assert ids[0, -1] == 1 and np.isnan(scores[0, -1])
    assert np.isnan(scores[1]).all()


def test_topk_edge_cases_and_errors():
    A = np.random.default_rng(10).standard_normal((5, 3))
    ids, scores = K.topk_cosine(A, k=0)
    assert ids.shape == scores.shape == (5, 0)
    ids, scores = K.topk_cosine(np.zeros((0, 3)), A, k=2)
    assert ids.shape == (0, 2)
    ids, _ = K.topk_cosine(A, k=4)
    assert ids.shape == (5, 4)
    with pytest.raises(ValueError, match="0..4"):
        K.topk_cosine(A, k=5)  # only 4 candidates once self is excluded
    with pytest.raises(ValueError):
        K.topk_cosine(A, A[:2], k=3)
    with pytest.raises(ValueError):
        K.topk_cosine(A, k=-1)
    with pytest.raises(TypeError):
        K.topk_cosine(A, k=2.0)
    ids, _ = K.topk_cosine(A, A, k=5, exclude_self=False)
    assert sorted(ids[0]) == [0, 1, 2, 3, 4] and ids[0, 0] == 0
    ids, _ = K.topk_cosine(A, A, k=4, exclude_self=True)
    assert all(i not in ids[i] for i in range(5))


def test_topk_memory_stays_below_the_full_matrix():
    rng = np.random.default_rng(11)
    n, d = 5000, 8
    A = random_matrix(rng, n, d, np.float32)
    K.topk_cosine(A[:50], k=3)  # compile outside the measurement
    tracemalloc.start()
    K.topk_cosine(A, k=3)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    full = n * n * 4
    assert peak < full / 3, f"peak {peak} bytes vs full matrix {full}"


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 30), m=st.integers(1, 30), d=st.integers(1, 6), k=st.integers(0, 30),
       seed=st.integers(0, 2**32 - 1), parallel=st.booleans(), duplicates=st.booleans())
def test_topk_hypothesis(n, m, d, k, seed, parallel, duplicates):
    rng = np.random.default_rng(seed)
    A = rng.integers(-2, 3, size=(n, d)).astype(np.float64)  # small ints: many exact ties, zeros
    B = A[rng.integers(0, n, size=m)] if duplicates else rng.integers(-2, 3, (m, d)).astype(float)
    k_b = min(k, m)
    ids, scores = K.topk_cosine(A, B, k_b, parallel=parallel)
    assert_topk_agrees(A, B, k_b, ids, scores, False, np.float64)
    k_self = min(k, n - 1)
    ids, scores = K.topk_cosine(A, k=k_self, parallel=parallel)
    assert_topk_agrees(A, None, k_self, ids, scores, True, np.float64)


# --- analogy -------------------------------------------------------------------------------------

def test_analogy_capital_of():
    names = ["Spain", "Madrid", "France", "Paris", "Italy", "Rome", "banana"]
    E = np.array([
        [1.0, 0.0, 0.0, 0.1], [1.0, 1.0, 0.0, 0.1],   # Spain, Madrid
        [0.0, 0.0, 1.0, 0.1], [0.0, 1.0, 1.0, 0.1],   # France, Paris
        [0.7, 0.0, 0.7, 0.0], [0.7, 1.0, 0.7, 0.0],   # Italy, Rome
        [0.0, -1.0, 0.0, 1.0],                        # banana
    ], dtype=np.float32)
    ids, scores = K.analogy(E, names.index("Spain"), names.index("Madrid"), names.index("France"),
                            k=2)
    assert ids.shape == (2,) and scores.dtype == np.float32
    assert names[ids[0]] == "Paris"
    batch_ids, _ = K.analogy(E, [0, 2], [1, 3], [2, 4], k=1)
    assert [names[i] for i in batch_ids[:, 0]] == ["Paris", "Rome"]


@pytest.mark.parametrize("dtype", FLOATS)
def test_analogy_matches_reference_and_excludes_queries(dtype, parallel, small_tiles):
    rng = np.random.default_rng(12)
    E = random_matrix(rng, 40, 6, dtype)
    E[7] = 0
    a, b, c = rng.integers(0, 40, (3, 9))
    a[0] = b[0] = c[0] = 7  # a degenerate query: zero vector, nothing excluded twice
    ids, scores = K.analogy(E, a, b, c, k=5, parallel=parallel)
    want_ids, want_scores = K.analogy_reference(E, a, b, c, k=5)
    np.testing.assert_allclose(scores, want_scores, **TOL[dtype])
    if dtype == np.float64:
        np.testing.assert_array_equal(ids, want_ids)
    for i in range(9):
        assert not {a[i], b[i], c[i]} & set(ids[i])


def test_analogy_errors():
    E = np.eye(5)
    with pytest.raises(IndexError, match="5"):
        K.analogy(E, 0, 1, 5)
    with pytest.raises(ValueError, match="same length"):
        K.analogy(E, [0, 1], [1], [2])
    with pytest.raises(ValueError):
        K.analogy(E, 0, 1, 2, k=3)  # only 5 - 3 = 2 candidates
    ids, scores = K.analogy(E, [], [], [], k=2)
    assert ids.shape == (0, 2)


# --- optimiser row updates: checked against the arrays they write ------------------------------

def test_row_updates_check_ids_and_shapes_against_the_table():
    table = np.zeros((10, 4), dtype=np.float32)
    m, v = np.zeros_like(table), np.zeros_like(table)
    rows = np.ones((2, 4), dtype=np.float32)
    adam = lambda t, m, v, ids, rows: K.adam_rows(t, m, v, ids, rows, 0.1, 0.9, 0.999, 1e-8, 1)
    sgd = lambda t, m, v, ids, rows: K.sgd_rows(t, ids, rows, 0.1)
    for update in (sgd, adam):
        with pytest.raises(IndexError, match="999"):
            update(table, m, v, np.array([1, 999]), rows)
        with pytest.raises(IndexError, match="-1"):
            update(table, m, v, np.array([1, -1]), rows)
        with pytest.raises(ValueError, match="shape"):
            update(table, m, v, np.array([1, 2]), np.ones((3, 4), dtype=np.float32))
        with pytest.raises(ValueError, match="shape"):
            update(table, m, v, np.array([1, 2]), np.ones((2, 5), dtype=np.float32))
        with pytest.raises(TypeError, match="dtype"):
            update(table, m, v, np.array([1, 2]), np.ones((2, 4)))
        with pytest.raises(ValueError, match="distinct"):
            update(table, m, v, np.array([2, 2]), rows)
        with pytest.raises(ValueError, match="1-D"):
            update(table, m, v, np.array([[1, 2]]), rows)
        frozen = table.copy()
        frozen.setflags(write=False)
        with pytest.raises(ValueError, match="writeable"):
            update(frozen, m, v, np.array([1, 2]), rows)
        with pytest.raises(ValueError, match="2-D"):
            update(np.zeros(10, dtype=np.float32), m, v, np.array([1, 2]), rows)
    with pytest.raises(ValueError, match="m has shape"):
        adam(table, np.zeros((3, 4), dtype=np.float32), v, np.array([1, 2]), rows)
    with pytest.raises(TypeError, match="v must be"):
        adam(table, m, np.zeros((10, 4)), np.array([1, 2]), rows)
    with pytest.raises(ValueError, match="overlap"):
        adam(table, m, m, np.array([1, 2]), rows)
    assert not table.any() and not m.any() and not v.any()  # nothing was written


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_row_update_with_ids_in_the_memory_it_writes(optimizer):
    """Ids that live in the table's (or a moment table's) own memory are read as they were
    before the update: the update writes those bytes, and the kernel must not index with what
    it wrote there."""
    for where in ("table", "m") if optimizer == "adam" else ("table",):
        arrays = {name: np.zeros(64, dtype=np.float64) for name in ("table", "m", "v")}
        ids = arrays[where].view(np.int64)[:3]
        ids[:] = [5, 1, 30]
        table, m, v = (arrays[name].reshape(32, 2) for name in ("table", "m", "v"))
        rows = np.full((3, 2), 1e150)  # (its bits, written over the ids, are far past the table)
        expected = {name: a.copy() for name, a in zip(("table", "m", "v"), (table, m, v))}
        id_copy = ids.copy()
        if optimizer == "sgd":
            K.sgd_rows_reference(expected["table"], id_copy, rows, 1.0)
            K.sgd_rows(table, ids, rows, 1.0)
        else:
            K.adam_rows_reference(expected["table"], expected["m"], expected["v"], id_copy, rows,
                                  0.1, 0.9, 0.999, 1e-8, 1)
            K.adam_rows(table, m, v, ids, rows, 0.1, 0.9, 0.999, 1e-8, 1)
        np.testing.assert_array_equal(table, expected["table"])
        np.testing.assert_array_equal(m, expected["m"])


def test_row_update_reading_rows_of_its_own_table():
    table = np.arange(12, dtype=np.float64).reshape(6, 2)
    expected = table.copy()
    K.sgd_rows_reference(expected, np.array([0, 1, 2]), expected[1:4].copy(), 1.0)
    K.sgd_rows(table, np.array([0, 1, 2]), table[1:4], 1.0, parallel=True)
    np.testing.assert_array_equal(table, expected)


# --- read-only inputs ----------------------------------------------------------------------------

def read_only(a):
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


@pytest.mark.parametrize("dtype", FLOATS)
def test_read_only_inputs_are_accepted_and_results_are_writeable(dtype, parallel, tmp_path):
    rng = np.random.default_rng(3)
    E = random_matrix(rng, 40, 6, dtype)
    ids = zipf_ids(rng, 40, (5, 3))
    np.save(tmp_path / "E.npy", E)
    np.save(tmp_path / "ids.npy", ids)
    mapped_E = np.load(tmp_path / "E.npy", mmap_mode="r")
    mapped_ids = np.load(tmp_path / "ids.npy", mmap_mode="r")
    grad = random_matrix(rng, 15, 6, dtype).reshape(5, 3, 6)
    for E_in, ids_in, grad_in in ((read_only(E), read_only(ids), read_only(grad)),
                                  (mapped_E, mapped_ids, read_only(grad))):
        assert not E_in.flags.writeable and not ids_in.flags.writeable
        results = [
            (K.gather(E_in, ids_in, parallel=parallel), K.gather_reference(E, ids)),
            (K.scatter_add(grad_in, ids_in, 40, parallel=parallel), K.scatter_add_reference(grad, ids, 40)),
            (K.scatter_add_sparse(grad_in, ids_in, parallel=parallel)[1],
             K.scatter_add_sparse_reference(grad, ids)[1]),
            (K.normalize_rows(E_in, parallel=parallel), K.normalize_rows(E, parallel=parallel)),
            (K.cosine_similarity(E_in, parallel=parallel), K.cosine_similarity(E, parallel=parallel)),
            (K.cosine_similarity(E_in, read_only(E[:4]), parallel=parallel),
             K.cosine_similarity(E, E[:4], parallel=parallel)),
            (K.topk_cosine(E_in, k=3, parallel=parallel)[0], K.topk_cosine(E, k=3, parallel=parallel)[0]),
            (K.analogy(E_in, read_only([0, 1]), read_only([2, 3]), read_only([4, 5]), k=2,
                       parallel=parallel)[0],
             K.analogy(E, [0, 1], [2, 3], [4, 5], k=2, parallel=parallel)[0]),
        ]
        for got, expected in results:
            assert got.flags.writeable
            np.testing.assert_array_equal(got, expected)
        out = np.empty(ids.shape + (6,), dtype=dtype)
        K.gather(E_in, ids_in, out=out, parallel=parallel)
        np.testing.assert_array_equal(out, E[ids])
        with pytest.raises(ValueError, match="writeable"):
            K.gather(E_in, ids_in, out=read_only(out), parallel=parallel)


@pytest.mark.parametrize("dtype", FLOATS)
def test_row_updates_take_read_only_ids_and_rows(dtype, parallel):
    table = np.zeros((6, 3), dtype=dtype)
    m, v = np.zeros_like(table), np.zeros_like(table)
    ids, rows = read_only(np.array([1, 4])), read_only(np.ones((2, 3), dtype=dtype))
    K.sgd_rows(table, ids, rows, 0.5, parallel=parallel)
    assert table[1].tolist() == table[4].tolist() == [-0.5] * 3
    K.adam_rows(table, m, v, ids, rows, 0.1, 0.9, 0.999, 1e-8, 1, parallel=parallel)
    assert m[1].tolist() == m[4].tolist() and m[0].tolist() == [0.0] * 3


@pytest.mark.parametrize("flag", [True, False, np.bool_(True)])
def test_a_bool_is_not_a_count(flag):
    A = np.random.default_rng(12).standard_normal((5, 3))
    with pytest.raises(TypeError, match="k must be an integer"):
        K.topk_cosine(A, k=flag)
    with pytest.raises(TypeError, match="k must be an integer"):
        K.analogy(A, 0, 1, 2, k=flag)
    with pytest.raises(TypeError, match="num_rows must be an integer"):
        K.scatter_add(np.ones((1, 3)), [0], num_rows=flag)


def test_gather_into_an_out_that_starts_inside_an_element():
    """An ``out`` viewed from an odd byte of a buffer, past the size where gather streams its
    stores: copied without streaming (the aligned stores need whole elements), same rows."""
    E = np.arange(128, dtype=np.float32).reshape(2, 64)
    n = 33000  # (8.4 MB of rows)
    ids = np.arange(n) % 2
    buf = np.zeros(n * 64 * 4 + 1, np.uint8)
    out = buf[1:].view(np.float32).reshape(n, 64)
    assert not out.flags.aligned
    for parallel in (False, True):
        out[:] = 0
        K.gather(E, ids, out=out, parallel=parallel)
        assert np.array_equal(out, E[ids])


@pytest.mark.parametrize("parallel", [False, True])
def test_rows_whose_squares_leave_float64s_range(parallel):
    """Entries past 1e154 (the sum of squares overflows) or all under 1e-154 (it underflows to
    0): divided by the row's largest magnitude first, unit rows as for any other row."""
    A = np.array([[1e200, 0.0], [1e-200, 0.0], [3e200, 4e200], [3e-170, 4e-170], [-1e300, 1e300],
                  [0.0, 0.0], [3.0, 4.0]])
    expected = [[1, 0], [1, 0], [0.6, 0.8], [0.6, 0.8], [-2 ** -0.5, 2 ** -0.5], [0, 0], [0.6, 0.8]]
    got = K.normalize_rows(A, parallel=parallel)
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)
    np.testing.assert_allclose(K.normalize_rows_reference(A), expected, rtol=1e-15, atol=0)
    assert K.cosine_similarity(A[:1], parallel=parallel).tolist() == [[1.0]]


def _gather_in_child(E, ids):
    out = {"auto": K.gather(E, ids)}
    try:
        out["forced"] = K.gather(E, ids, parallel=True)
    except RuntimeError as exc:
        out["forced"] = str(exc)
    return out


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork: POSIX only")
def test_a_child_forked_after_parallel_kernels_still_runs_them():
    """GNU OpenMP does not survive fork(): Numba ended a child (a multiprocessing or DataLoader
    worker) that ran a parallel kernel after its parent had, on the "omp" threading layer. The
    child runs the serial compile instead; an explicit parallel=True is refused there."""
    import multiprocessing

    rng = np.random.default_rng(0)
    E = rng.standard_normal((4000, 16)).astype(np.float32)
    ids = rng.integers(0, 4000, 50_000)
    expected = K.gather(E, ids, parallel=True)  # (the parent's threads started)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply_async(_gather_in_child, (E, ids)).get(timeout=120)
    assert np.array_equal(got["auto"], expected)
    if numba.threading_layer() == "omp":
        assert "parallel=True: this process was forked" in got["forced"]
    else:  # (workqueue and tbb survive the fork)
        assert np.array_equal(got["forced"], expected)
