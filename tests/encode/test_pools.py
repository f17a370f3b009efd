"""The worker pools of a tokenizer: lanes of a call's width on the largest pool, no pool shut
down under a caller, closing joins the idle ones."""
import os
import threading

import pytest

import fastbpe
from fastbpe.encode.pools import PoolRegistry


@pytest.fixture
def registry():
    pools = PoolRegistry(threading.local())
    yield pools
    pools.close()


def test_calls_of_fewer_workers_run_on_the_largest_pool_and_a_borrowed_pool_survives(registry):
    with registry.borrow(2) as two:
        with registry.borrow(3) as three:  # a larger pool beside the one in use
            with registry.borrow(2):
                assert sorted(registry._pools) == [2, 3]  # (on the pool of 3: no third pool)
            assert three.submit(sum, [1, 2]).result() == 3
        assert two.submit(sum, [1, 2]).result() == 3  # the pool of 2, borrowed, still runs
    larger = registry._pools[3]
    for workers in (1, 2, 3, 2):
        with registry.borrow(workers) as lane:
            assert lane.submit(threading.current_thread).result() in larger._threads
    assert sorted(registry._pools) == [3]  # the smaller pool, once idle, let go


def test_a_lane_runs_at_most_its_width_of_tasks_at_once(registry):
    with registry.borrow(4):
        pass  # (a pool of four threads)
    lock, running, most = threading.Lock(), [0], [0]
    together = threading.Barrier(2, timeout=30)  # (broken unless two tasks run at once)

    def task(k):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        if k < 2:
            together.wait()
        with lock:
            running[0] -= 1
        return k

    with registry.borrow(2) as lane:
        futures = [lane.submit(task, k) for k in range(40)]
        assert [future.result() for future in futures] == list(range(40))
    assert most[0] == 2


def test_a_lane_skips_a_cancelled_task_and_passes_on_errors(registry):
    release, ran = threading.Event(), []
    with registry.borrow(1) as lane:
        first = lane.submit(release.wait, 30)
        second = lane.submit(ran.append, "second")
        failing = lane.submit(int, "x")
        third = lane.submit(ran.append, "third")
        assert second.cancel()
        release.set()
        assert first.result() is True and third.result() is None and ran == ["third"]
        with pytest.raises(ValueError):
            failing.result()


def test_closing_the_pools_joins_their_threads_and_spares_a_pool_in_use(registry):
    with registry.borrow(2) as busy:
        with registry.borrow(3) as idle:
            idle.submit(sum, [1, 2]).result()
        pools = dict(registry._pools)
        registry.close()
        assert busy.submit(sum, [1, 2]).result() == 3  # still usable: it was borrowed
        assert sorted(registry._pools) == [2]
    assert registry.shared is not None
    registry.close()
    assert registry._pools == {} and registry.shared is None
    assert not [t for pool in pools.values() for t in pool._threads if t.is_alive()]


def test_a_tokenizer_gets_its_pools_back_after_closing():
    tok = fastbpe.train(iter(["a b c a b"] * 20), vocab_size=270, progress=False)
    texts = ["a b"] * 300 + ["c"] * 300
    want = [tok.encode(text) for text in texts]
    assert tok.encode_batch(texts, workers=2) == want
    tok._pools.close()
    assert tok.encode_batch(texts, workers=3) == want and tok.encode_batch(texts, workers=2) == want
    assert sorted(tok._pools._pools) == [3]
    tok._pools.close()


# the parent's tokenizer, as a forked child inherits it (an argument would be pickled: a copy)
_INHERITED = {}


def _encode_in_child(texts):
    return len(_INHERITED["tok"].encode_batch(texts, workers=2))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork: POSIX only")
def test_a_forked_child_encodes_on_threads_of_its_own():
    """A child forked after the parent encoded on threads (a DataLoader or multiprocessing
    worker) copies the pool without its threads: its calls waited for them forever."""
    import multiprocessing

    tok = _INHERITED["tok"] = fastbpe.train(text="the cat sat on the mat " * 50, vocab_size=280, progress=False)
    texts = ["the cat sat"] * 200
    expected = len(tok.encode_batch(texts, workers=2))  # (the parent's pool of two threads)
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            assert pool.apply_async(_encode_in_child, (texts,)).get(timeout=60) == expected
            assert pool.apply_async(_encode_in_child, (texts,)).get(timeout=60) == expected  # (again, warm)
    finally:
        del _INHERITED["tok"]
    assert len(tok.encode_batch(texts, workers=2)) == expected  # the parent's pool still runs
