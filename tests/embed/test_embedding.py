"""fastbpe.Embedding against a plain NumPy simulation of the same training steps."""
import doctest

import numba
import numpy as np
import pytest

from fastbpe import Embedding
from fastbpe.embed import embedding, kernels as K

FLOATS = [np.float32, np.float64]


def zipf_ids(rng, num_rows, shape, a=1.3):
    return rng.permutation(num_rows)[(rng.zipf(a, size=shape) - 1) % num_rows]


def test_doctests():
    assert doctest.testmod(embedding).failed == 0


@pytest.mark.parametrize("dtype", FLOATS)
def test_forward_backward_match_numpy(dtype):
    rng = np.random.default_rng(0)
    emb = Embedding(50, 6, dtype=dtype, seed=1)
    assert emb.weight.dtype == dtype and emb.weight.shape == (50, 6)
    ids = zipf_ids(rng, 50, (4, 11))
    out = emb.forward(ids)
    np.testing.assert_array_equal(out, emb.weight[ids])
    grad = rng.standard_normal(out.shape).astype(dtype)
    u, rows = emb.backward(grad)
    ru, rrows = K.scatter_add_sparse_reference(grad, ids)
    np.testing.assert_array_equal(u, ru)
    np.testing.assert_array_equal(rows, rrows)
    dense = emb.backward(grad, ids, dense=True)
    np.testing.assert_array_equal(dense, K.scatter_add_reference(grad, ids, 50))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_training_steps_match_numpy_simulation_bit_for_bit(dtype, optimizer):
    rng = np.random.default_rng(2)
    V, d = 40, 5
    emb = Embedding(V, d, dtype=dtype, seed=3, optimizer=optimizer, lr=0.05)
    W = emb.weight.copy()
    m, v = np.zeros_like(W), np.zeros_like(W)
    for step in range(1, 5):
        ids = zipf_ids(rng, V, (30,))
        grad = rng.standard_normal((30, d)).astype(dtype)
        emb.forward(ids)
        emb.backward(grad)
        touched = emb.step()
        # NumPy simulation: dense add.at, then the optimiser on the rows that got gradient.
        g = K.scatter_add_reference(grad, ids, V)
        rows_ids = np.unique(ids)
        np.testing.assert_array_equal(touched, rows_ids)
        untouched = np.setdiff1d(np.arange(V), rows_ids)
        before = W[untouched].copy()
        if optimizer == "sgd":
            K.sgd_rows_reference(W, rows_ids, g[rows_ids], 0.05)
        else:
            K.adam_rows_reference(W, m, v, rows_ids, g[rows_ids], 0.05, 0.9, 0.999, 1e-8, step)
        np.testing.assert_array_equal(W[untouched], before)
        np.testing.assert_array_equal(emb.weight, W)
    assert emb.weight.dtype == dtype


def test_untouched_rows_and_moments_stay_exactly_put():
    emb = Embedding(10, 3, optimizer="adam", lr=0.1, seed=4)
    w0 = emb.weight.copy()
    emb.forward([2, 2, 7])
    emb.backward(np.ones((3, 3), dtype=np.float32))
    assert emb.step().tolist() == [2, 7]
    changed = np.flatnonzero((emb.weight != w0).any(axis=1))
    assert changed.tolist() == [2, 7]
    assert np.flatnonzero(emb._m.any(axis=1)).tolist() == [2, 7]
    assert emb.step().size == 0  # no pending gradient: nothing moves
    assert np.flatnonzero((emb.weight != w0).any(axis=1)).tolist() == [2, 7]


def test_gradients_accumulate_until_step():
    rng = np.random.default_rng(5)
    emb = Embedding(20, 4, lr=1.0, seed=6)
    w0 = emb.weight.copy()
    ids1, ids2 = np.array([1, 5, 1]), np.array([5, 19])
    g1 = rng.standard_normal((3, 4)).astype(np.float32)
    g2 = rng.standard_normal((2, 4)).astype(np.float32)
    emb.backward(g1, ids1)
    emb.backward(g2, ids2)
    u, rows = emb.pending_gradient()
    want = K.scatter_add_reference(np.concatenate([g1, g2]), np.concatenate([ids1, ids2]), 20)
    assert u.tolist() == [1, 5, 19]
    np.testing.assert_allclose(rows, want[u], rtol=1e-6)
    emb.step()
    np.testing.assert_allclose(emb.weight, w0 - want, rtol=1e-6)
    emb.backward(g1, ids1)
    emb.zero_grad()
    assert emb.pending_gradient()[0].size == 0


@pytest.mark.parametrize("dtype", FLOATS)
def test_tied_logits_and_their_backward(dtype):
    rng = np.random.default_rng(7)
    V, d = 30, 4
    emb = Embedding(V, d, dtype=dtype, seed=8, lr=0.1)
    W = emb.weight.copy()
    h = rng.standard_normal((2, 3, d)).astype(dtype)
    logits = emb.logits(h)
    assert logits.shape == (2, 3, V) and logits.dtype == dtype
    np.testing.assert_allclose(logits, h @ W.T, rtol=1e-6)
    gl = rng.standard_normal(logits.shape).astype(dtype)
    grad_h = emb.logits_backward(h, gl)
    np.testing.assert_allclose(grad_h, gl @ W, rtol=1e-5)
    ids = np.array([3, 3, 9])
    emb.forward(ids)
    ge = rng.standard_normal((3, d)).astype(dtype)
    emb.backward(ge)
    touched = emb.step()
    assert touched.size == V  # the tied output layer touches every row
    want = gl.reshape(-1, V).T @ h.reshape(-1, d) + K.scatter_add_reference(ge, ids, V)
    np.testing.assert_allclose(emb.weight, W - dtype(0.1) * want, rtol=1e-4, atol=1e-6)


def test_training_reduces_a_simple_loss():
    rng = np.random.default_rng(9)
    V, d = 100, 8
    target = rng.standard_normal((V, d)).astype(np.float32)
    emb = Embedding(V, d, optimizer="adam", lr=0.05, seed=10)
    losses = []
    for _ in range(60):
        ids = zipf_ids(rng, V, (64,), 1.1)
        diff = emb.forward(ids) - target[ids]
        losses.append(float((diff ** 2).mean()))
        emb.backward(2 * diff / diff.size)
        emb.step()
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 Numba threads")
def test_adam_step_is_bit_identical_for_any_thread_count():
    rng = np.random.default_rng(11)
    ids = zipf_ids(rng, 3000, (20_000,), 1.1)
    grad = rng.standard_normal((20_000, 16)).astype(np.float32)
    before = numba.get_num_threads()
    results = []
    try:
        for parallel, threads in [(False, 1), (True, 1), (True, 2)]:
            numba.set_num_threads(threads)
            emb = Embedding(3000, 16, optimizer="adam", seed=12)
            u, rows = K.scatter_add_sparse(grad, ids, parallel=parallel)
            K.adam_rows(emb.weight, emb._m, emb._v, u, rows, 0.01, 0.9, 0.999, 1e-8, 1,
                        parallel=parallel)
            results.append(emb.weight)
    finally:
        numba.set_num_threads(before)
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])


def test_errors():
    with pytest.raises(ValueError, match="optimizer"):
        Embedding(3, 2, optimizer="rmsprop")
    with pytest.raises(TypeError):
        Embedding(3, 2, dtype=np.int32)
    with pytest.raises(TypeError, match="num_embeddings must be an int"):
        Embedding("3", 2)
    with pytest.raises(ValueError, match="dim must be >= 0"):
        Embedding(3, -2)
    with pytest.raises(ValueError, match="seed must be None or an int >= 0, got -1"):
        Embedding(3, 2, seed=-1)
    with pytest.raises(AttributeError):  # chosen with the table: Adam's moments are made then
        Embedding(3, 2).optimizer = "adam"
    with pytest.raises(ValueError, match="shape"):
        Embedding(3, 2, weight=np.zeros((2, 3), dtype=np.float32))
    emb = Embedding(3, 2)
    with pytest.raises(RuntimeError, match="forward"):
        emb.backward(np.zeros((1, 2), dtype=np.float32))
    with pytest.raises(IndexError, match="3"):
        emb.forward([0, 3])
    emb.forward([0, 1])
    with pytest.raises(TypeError, match="dtype"):
        emb.backward(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="shape"):
        emb.backward(np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(IndexError):
        emb.backward(np.zeros((1, 2), dtype=np.float32), [-1])
    with pytest.raises(ValueError):
        emb.logits(np.zeros((4, 3), dtype=np.float32))
    with pytest.raises(ValueError):
        emb.logits_backward(np.zeros((4, 2), dtype=np.float32), np.zeros((4, 2), dtype=np.float32))
    assert emb.pending_gradient()[0].size == 0  # failed calls left no pending gradient


def test_weight_is_copied_and_zero_sized_tables_work():
    w = np.ones((4, 2), dtype=np.float64)
    emb = Embedding(4, 2, weight=w, lr=1.0)
    emb.backward(np.ones((1, 2)), [0])
    emb.step()
    assert w[0].tolist() == [1.0, 1.0] and emb.weight[0].tolist() == [0.0, 0.0]
    empty = Embedding(0, 3)
    assert empty.forward(np.zeros(0, dtype=np.int64)).shape == (0, 3)
    assert empty.step().size == 0
    for rows, dim in ((4, 0), (0, 3), (0, 0)):  # (the backward of tied logits too)
        table = Embedding(rows, dim)
        h = np.ones((3, dim), dtype=np.float32)
        assert table.logits_backward(h, np.ones((3, rows), dtype=np.float32)).shape == (3, dim)
        assert table.pending_gradient()[1].shape == (rows, dim)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_step_refuses_a_weight_replaced_after_backward(optimizer):
    emb = Embedding(1000, 8, optimizer=optimizer)
    emb.forward(np.arange(1000))
    emb.backward(np.ones((1000, 8), dtype=np.float32))
    replacements = [
        (np.zeros((10, 8), dtype=np.float32), ValueError, "row 999"),   # fewer rows
        (np.zeros((1000, 4), dtype=np.float32), ValueError, "width"),  # narrower rows
        (np.zeros((1000, 8), dtype=np.float64), TypeError, "float64"),
        (np.zeros((8, 1000), dtype=np.float32).T, ValueError, "C-contiguous"),
        (np.zeros((1000, 8), dtype=np.int32), TypeError, "float"),
    ]
    original = emb.weight
    for weight, error, message in replacements:
        emb.weight = weight
        with pytest.raises(error, match=message):
            emb.step()
    emb.weight = original
    assert emb.pending_gradient()[0].size == 1000  # refused steps leave the gradient pending
    assert emb.step().size == 1000


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_dense_gradient_stays_pending_when_weight_lost_rows(optimizer):
    # (the tied output layer's gradient touches every row of the table it was made for)
    emb = Embedding(4, 2, weight=np.ones((4, 2), np.float32), lr=1.0, optimizer=optimizer)
    emb.logits_backward(np.ones((1, 2), np.float32), np.ones((1, 4), np.float32))
    emb.weight = np.ones((3, 2), np.float32)
    with pytest.raises(ValueError, match="touches row 3, weight has 3 rows"):
        emb.step()
    assert emb.pending_gradient()[0].tolist() == [0, 1, 2, 3] and emb.step_count == 0
    assert np.array_equal(emb.weight, np.ones((3, 2), np.float32))


def test_adam_step_refuses_a_weight_of_another_shape_than_its_moments():
    emb = Embedding(10, 4, optimizer="adam")
    emb.backward(np.ones((2, 4), dtype=np.float32), [0, 1])
    emb.weight = np.zeros((20, 4), dtype=np.float32)  # larger: ids fit, the moments do not
    with pytest.raises(ValueError, match="moments"):
        emb.step()


@pytest.mark.parametrize("settings, message", [
    (dict(optimizer="adam", eps=0.0), "eps"),
    (dict(optimizer="adam", betas=(1.0, 0.999)), "betas"),
    (dict(optimizer="adam", betas=(0.9, -1.0)), "betas"),
    (dict(optimizer="sgd", lr=float("nan")), "lr"),
    # finite as Python floats, not in the table's float32: inf, and 0 (0 / 0 in the update)
    (dict(optimizer="sgd", lr=1e39), r"lr must be finite \(in float32\)"),
    (dict(optimizer="adam", eps=1e-50), r"eps must be > 0 \(in float32\)"),
    (dict(init_std=float("nan")), "init_std"),
    (dict(init_std=-1.0), "init_std"),
    (dict(optimizer="adam", betas=(0.9,)), "betas must be two numbers"),
])
def test_settings_that_make_nan_weights_are_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        Embedding(20000, 4, **settings)


def test_float32_rounding_of_the_settings_is_checked_before_anything_is_written():
    """lr=1e39 wrote inf and NaN into a float32 table; eps=1e-50 raised ZeroDivisionError half
    way through a row (serial) or wrote NaN (parallel). Refused, nothing written; float64
    tables take them."""
    for parallel in (False, True):
        T, m, v = (np.ones((2, 2), dtype=np.float32) for _ in range(3))
        rows = np.array([[1.0, 0.0]], dtype=np.float32)
        with pytest.raises(ValueError, match="lr"):
            K.sgd_rows(T, [0], rows, 1e39, parallel=parallel)
        with pytest.raises(ValueError, match="eps"):
            K.adam_rows(T, m, v, [0], rows, 0.01, 0.9, 0.999, 1e-50, 1, parallel=parallel)
        assert (T == 1).all() and (m == 1).all() and (v == 1).all()
    T = np.ones((2, 2))
    K.sgd_rows(T, [0], np.array([[1e-300, 0.0]]), 1e39)
    assert np.isfinite(T).all()


def test_settings_changed_after_init_are_checked_before_a_step():
    """An update with settings that make NaN weights (Adam's eps 0 and a zero gradient row,
    bias corrections of 0) is refused, nothing written, the gradient still pending."""
    emb = Embedding(20000, 4, optimizer="adam")
    before = emb.weight.copy()
    emb.backward(np.zeros((3, 4), dtype=np.float32), [0, 1, 2])
    emb.eps = 0.0
    with pytest.raises(ValueError, match="eps"):
        emb.step()
    assert np.array_equal(emb.weight, before) and emb.pending_gradient()[0].tolist() == [0, 1, 2]
    emb.eps = 1e-8
    assert emb.step().tolist() == [0, 1, 2] and np.isfinite(emb.weight).all()
    T, m, v = (np.zeros((2, 2)) for _ in range(3))
    for step in (0, -1, True):
        with pytest.raises(ValueError, match="step"):
            K.adam_rows(T, m, v, [0, 1], np.ones((2, 2)), 0.1, 0.9, 0.999, 1e-8, step, parallel=True)
    assert not (T.any() or m.any() or v.any())


def test_backward_of_an_empty_forward():
    empty = Embedding(0, 3)
    empty.forward([])
    unique, rows = empty.backward(np.ones((0, 3), dtype=np.float32))
    assert unique.size == 0 and rows.shape == (0, 3)
