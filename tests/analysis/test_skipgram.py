"""Skip-gram with negative sampling on token ids: the kernel path's gradients equal the NumPy
reference and the numeric gradient of the loss, absent tokens keep exactly their initial rows,
training lowers the loss and is deterministic."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe.analysis import skipgram, skipgram_ids
from fastbpe.analysis.skipgram import sgns_gradients, sgns_gradients_reference, sgns_loss_reference


def dense(sparse, like):
    ids, rows = sparse
    out = np.zeros_like(like)
    out[ids] = rows
    return out


def batch(rng, V, P, K):
    return rng.integers(0, V, P), rng.integers(0, V, P), rng.integers(0, V, (P, K))


@settings(max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), V=st.integers(1, 6), P=st.integers(1, 8), K=st.integers(1, 3))
def test_gradients_equal_reference(seed, V, P, K):
    """Repeated ids (a row used as center, context and negative in one batch) included."""
    rng = np.random.default_rng(seed)
    W_in, W_out = rng.standard_normal((V, 3)), rng.standard_normal((V, 3))
    c, o, n = batch(rng, V, P, K)
    loss, g_in, g_out = sgns_gradients(W_in, W_out, c, o, n)
    ref_in, ref_out = sgns_gradients_reference(W_in, W_out, c, o, n)
    assert loss == pytest.approx(sgns_loss_reference(W_in, W_out, c, o, n), rel=1e-12)
    np.testing.assert_allclose(dense(g_in, W_in), ref_in, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dense(g_out, W_out), ref_out, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 30.0, 1e3])
def test_gradients_equal_reference_at_scores_past_what_exp_holds(scale):
    """Scores of +-900 and +-1e6 (math.exp overflows past 709): the reference's loss and
    gradients are the training's, not OverflowError."""
    W_in, W_out = np.array([[scale], [-scale]]), np.array([[-scale], [scale]])
    c, o, n = np.array([0, 1]), np.array([0, 0]), np.array([[1], [0]])
    loss, g_in, g_out = sgns_gradients(W_in, W_out, c, o, n)
    ref_in, ref_out = sgns_gradients_reference(W_in, W_out, c, o, n)
    assert loss == pytest.approx(sgns_loss_reference(W_in, W_out, c, o, n), rel=1e-12)
    np.testing.assert_allclose(dense(g_in, W_in), ref_in, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dense(g_out, W_out), ref_out, rtol=1e-10, atol=1e-12)


def test_numeric_gradient():
    rng = np.random.default_rng(3)
    V, d = 5, 4
    W_in, W_out = rng.standard_normal((V, d)), rng.standard_normal((V, d))
    c, o, n = np.array([0, 1, 0, 3]), np.array([1, 2, 2, 0]), np.array([[2, 3], [4, 0], [1, 1], [0, 2]])
    _, g_in, g_out = sgns_gradients(W_in, W_out, c, o, n)
    eps = 1e-6
    for table, grad in ((W_in, dense(g_in, W_in)), (W_out, dense(g_out, W_out))):
        numeric = np.zeros_like(table)
        for i in range(V):
            for j in range(d):
                saved = table[i, j]
                table[i, j] = saved + eps
                up = sgns_loss_reference(W_in, W_out, c, o, n)
                table[i, j] = saved - eps
                down = sgns_loss_reference(W_in, W_out, c, o, n)
                table[i, j] = saved
                numeric[i, j] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


def structured_corpus(seed=0, docs=40, length=60):
    """Two topics that never mix: ids 0-4 follow each other in one kind of document, 5-9 in
    the other; ids 10-11 never occur."""
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, 5, length) + 5 * (i % 2)) for i in range(docs)]


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_loss_falls_and_absent_rows_stay_exactly(optimizer):
    emb = skipgram_ids(structured_corpus(), 12, dim=8, window=2, epochs=3, batch_size=64,
                       optimizer=optimizer, seed=1, log_every=1)
    assert emb.losses[-1][1] < 0.8 * emb.losses[0][1]
    assert emb.frequency[10:].tolist() == [0, 0]
    assert np.array_equal(emb.input[10:], emb.initial[10:])       # bit for bit
    assert not emb.output[10:].any()                              # never a context nor a negative
    assert (emb.drift[:10] > 0).all() and emb.drift[10:].tolist() == [0.0, 0.0]
    assert emb.candidates(5).tolist() == [10, 11]
    # the topics separate: each id's nearest neighbour is from its own topic
    idx, _ = emb.neighbours(np.arange(10), k=1)
    assert ((idx[:, 0] < 5) == (np.arange(10) < 5)).all()


def test_neighbours_check_ids_and_k():
    emb = skipgram_ids(structured_corpus(), 12, dim=8, epochs=1, seed=1)
    for ids, error in (([-1], IndexError), ([12], IndexError), ([3.9], TypeError), ([True], TypeError),
                       (np.array([2**64 - 1], np.uint64), IndexError), ([[1, 2], [3, 4]], ValueError)):
        with pytest.raises(error):
            emb.neighbours(ids, k=2)
    for k in (-1, 12, 2.0):
        with pytest.raises((ValueError, TypeError), match="k must"):
            emb.neighbours([3], k=k)
    idx, scores = emb.neighbours([3, 4], k=11)
    assert idx.shape == scores.shape == (2, 11) and 3 not in idx[0] and 4 not in idx[1]
    assert emb.neighbours([], k=2)[0].shape == (0, 2)
    with pytest.raises(ValueError, match="k must be >= 0"):
        emb.candidates(-1)  # (sliced all but the last ids)
    assert emb.candidates(0).tolist() == []
    with pytest.raises(ValueError, match="rank must hold one value per token"):
        emb.candidates(3, rank=[1, 2])  # (a bare NumPy IndexError)


def test_deterministic():
    a = skipgram_ids(structured_corpus(), 12, dim=8, epochs=1, seed=7)
    b = skipgram_ids(structured_corpus(), 12, dim=8, epochs=1, seed=7, threads=1)
    c = skipgram_ids(structured_corpus(), 12, dim=8, epochs=1, seed=8)
    assert np.array_equal(a.input, b.input) and np.array_equal(a.output, b.output) and a.losses == b.losses
    assert not np.array_equal(a.input, c.input)


def test_a_thread_count_numba_cannot_run_names_the_argument():
    import numba

    before = numba.get_num_threads()
    for bad, error in ((0, ValueError), (numba.config.NUMBA_NUM_THREADS + 1, ValueError), (1.5, TypeError)):
        with pytest.raises(error, match="threads must be"):
            skipgram_ids(structured_corpus(), 12, dim=8, epochs=1, threads=bad)
    assert numba.get_num_threads() == before  # (left as it was)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_learning_rate_that_diverges_is_an_error_not_nan_rows(optimizer):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no overflow warnings on the way)
        with pytest.raises(ValueError, match="training diverged at step .* lower lr"):
            skipgram_ids(structured_corpus(), 12, dim=8, epochs=3, optimizer=optimizer, lr=1e30)
    emb = skipgram_ids(structured_corpus(), 12, dim=8, epochs=1, optimizer=optimizer)
    assert np.isfinite(emb.input).all() and all(np.isfinite(loss) for _, loss in emb.losses)


def test_sgd_at_its_defaults_trains_where_tokens_are_frequent():
    """Zipf-distributed ids, as a tokenizer's are: the most frequent rows occur hundreds of
    times in a batch of 1,024 centers (as contexts and negatives); summed, their gradients
    moved them hundreds of steps at once and the training diverged."""
    import warnings

    rng = np.random.default_rng(0)
    p = 1.0 / np.arange(1, 2001)
    docs = [rng.choice(2000, size=200, p=p / p.sum()) for _ in range(300)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        emb = skipgram_ids(docs, 2000, optimizer="sgd", threads=1)
    assert emb.options["lr"] == 0.025 and emb.options["batch_size"] == 1024
    assert emb.losses[-1][1] < emb.losses[0][1] - 0.03 and np.isfinite(emb.input).all()


def test_windows_stay_inside_documents():
    """Two documents of one token each: no pair at all, so nothing moves."""
    emb = skipgram_ids([np.array([0]), np.array([1])], 3, dim=4)
    assert emb.pairs == 0 and np.array_equal(emb.input, emb.initial)


def test_tokenizer_of_another_corpus():
    """A tokenizer trained on code, embeddings on prose: tokens of code never seen in the prose
    keep their initial rows exactly; the summary bands agree."""
    code = "def f(self, x):\n    return self.value + x\n" * 40
    tok = fastbpe.train(text=code, vocab_size=300, progress=False)
    prose = ["the value of the cat is the value of the mat", "a cat sat on a mat"] * 10
    emb = skipgram(tok, prose, dim=8, epochs=2, seed=0)
    assert emb.input.shape[0] == len(tok.vocab)
    absent = [i for i in tok.encode(" self") + tok.encode("    return") if emb.frequency[i] == 0]
    assert absent and np.array_equal(emb.input[absent], emb.initial[absent])
    bands = emb.by_frequency()
    assert bands[0]["max_frequency"] == 0 and bands[0]["max_drift"] == 0.0
    assert sum(b["tokens"] for b in bands) == emb.input.shape[0]
    ids, scores = emb.neighbours(tok.encode(" value")[:1], k=3)
    assert ids.shape == (1, 3) and tok.encode(" value")[0] not in ids[0]


def test_one_str_is_refused_not_read_as_documents_of_one_character():
    tok = fastbpe.train(text="hello world " * 20, vocab_size=260, progress=False)
    with pytest.raises(TypeError, match=r"not one str: pass \[text\]"):
        skipgram(tok, "hello world hello world", dim=4)
    assert skipgram(tok, ["hello world hello world"], dim=4).pairs > 0


def test_bad_input():
    with pytest.raises(ValueError, match="at least 2"):
        skipgram_ids([np.array([1])], 3)
    with pytest.raises(IndexError):
        skipgram_ids([np.array([0, 5])], 3)
    with pytest.raises(ValueError, match="window"):
        skipgram_ids([np.array([0, 1])], 3, window=0)
    with pytest.raises(ValueError, match="optimizer"):
        skipgram_ids([np.array([0, 1])], 3, optimizer="lbfgs")
    with pytest.raises(ValueError, match="log_every must be an int >= 1"):  # (was a ZeroDivisionError)
        skipgram_ids([np.array([0, 1])], 3, log_every=0)
    with pytest.raises(TypeError):
        skipgram_ids([np.array([0.5, 1.0])], 3)
    with pytest.raises(ValueError, match="seed must be None or an int >= 0"):
        skipgram_ids([np.array([0, 1])], 3, seed=-1)
    with pytest.raises(ValueError, match="window 1,000,000,000 with batch_size 1,024 lays out"):
        skipgram_ids([np.array([0, 1])], 3, window=10**9)  # (it was NumPy's MemoryError)
    # an id of 2**63 or more, unsigned, is shown as it is, not wrapped by the int64 copy
    with pytest.raises(IndexError, match=r"documents\[1\] contains 9223372036854775815 at flat position 1"):
        skipgram_ids([np.array([0, 1]), np.array([1, 2**63 + 7], dtype=np.uint64)], 3)
