"""Ctrl-C while the learner prepares one huge chunk (step 0), and during a merge step (a
step of one huge chunk takes up to seconds): the learner stops there and raises what the
SIGINT handler raised, from inside the compiled call (it used to come once step 0 ended, or
once the batch of merges did, seconds later). The workloads would take seconds; the tests
assert where the exception came from."""
import random
import time

import numpy as np
import pytest

import fastbpe
from fastbpe._core import learn
from fastbpe._core.learn import MergeLearner
from tests.interrupts import Interrupted, sigint_soon, stopped_inside


def test_step_0_of_one_huge_chunk():
    rng = random.Random(0)
    block = bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(1 << 16))
    symbols = np.frombuffer(block * (48 << 4), dtype=np.uint8)  # 48 MB, one chunk
    starts = np.array([0, len(symbols)], dtype=np.int64)
    counts = np.array([1], dtype=np.int64)
    assert stopped_inside(lambda: MergeLearner(symbols, starts, counts, [bytes([b]) for b in range(256)]),
                          "learn.pyx", 0.5)
    # (a learner made afterwards learns as ever)
    learned = fastbpe.train(text=block[:4096].decode(), vocab_size=260, progress=False)
    assert len(learned.token_bytes) == 260


def test_a_merge_step_of_one_huge_chunk(monkeypatch):
    """A 16 MB chunk's merges in one batch (no look between batches before the run's end):
    the handler's exception comes from the step's own work, below ``run``, and the learner,
    its tables half-merged, refuses to run on; a new one learns as ever."""
    rng = random.Random(0)
    block = bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(1 << 16))
    symbols = np.frombuffer(block * (16 << 4), dtype=np.uint8)
    learner = MergeLearner(symbols, np.array([0, len(symbols)], dtype=np.int64), np.array([1], dtype=np.int64),
                           [bytes([b]) for b in range(256)])
    monkeypatch.setattr(learn, "BATCH_SECONDS", 1e9)
    ended = None
    try:
        with sigint_soon(0.5):
            started = time.monotonic()
            learner.run(5000, progress_every=5000)
            ended = time.monotonic() - started
    except Interrupted as exc:
        names, tb = [], exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename.endswith("learn.pyx"):
                names.append(tb.tb_frame.f_code.co_name)
            tb = tb.tb_next
        assert names and names[-1].rsplit(".", 1)[-1] != "run", names  # (raised below run: inside a step)
        with pytest.raises(RuntimeError, match="interrupted half-way"):
            learner.run(1)
    else:
        pytest.skip(f"the run ended {ended:.2f} s in, before the signal at 0.5 s: nothing to interrupt")
    learned = fastbpe.train(text=block[:4096].decode(), vocab_size=260, progress=False)
    assert len(learned.token_bytes) == 260
