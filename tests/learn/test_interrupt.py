"""Ctrl-C while the learner prepares one huge chunk (step 0, before the merge loop, which
looks between batches of merges): the learner stops there and raises what the SIGINT handler
raised, from inside the compiled call (it used to come once step 0 ended, seconds later).
The workload would take seconds; the test asserts where the exception came from."""
import random

import numpy as np

import fastbpe
from fastbpe._core.learn import MergeLearner
from tests.interrupts import stopped_inside


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
