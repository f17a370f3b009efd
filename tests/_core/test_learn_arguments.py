"""The compiled learner refuses a word table it cannot learn from, with a clear exception:
words outside the symbols, ids that name no token, counts that are not positive, a second
build, a progress step of zero (the loops read and write by all of them)."""
import numpy as np
import pytest

from fastbpe._core.learn import MergeLearner

BYTES = [bytes([i]) for i in range(256)]


def learner(symbols, starts, counts, tokens=BYTES, **kw):
    return MergeLearner(np.asarray(symbols), np.array(starts, dtype=np.int64), np.array(counts, dtype=np.int64),
                        tokens, **kw)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
@pytest.mark.parametrize("starts", [[0, 10**6], [-10**6, 2], [0, 4, 1, 4], [1, 0, 4]])
def test_words_outside_the_symbols(dtype, starts):
    symbols = np.array([1, 2, 3, 4], dtype=dtype)
    for long_chunk in (None, 2):
        with pytest.raises(ValueError, match="word_starts"):
            learner(symbols, starts, [1] * (len(starts) - 1), long_chunk=long_chunk)


@pytest.mark.parametrize("symbols, tokens", [
    (np.array([1000000, 2000000], np.int32), BYTES),
    (np.array([-5, -7, -5, -7], np.int32), BYTES),
    (np.array([-1, 3], np.int32), BYTES),
    (np.array([200, 201], np.uint8), [b"a"]),
    (np.array([5, 6], np.int32), [b"a", b"b"]),
])
def test_ids_that_name_no_token(symbols, tokens):
    with pytest.raises(ValueError, match="ids of token_bytes"):
        learner(symbols, [0, len(symbols)], [3], tokens)


@pytest.mark.parametrize("count", [0, -4])
def test_counts_must_be_positive(count):
    with pytest.raises(ValueError, match="positive"):
        learner(np.array([1, 2, 1, 2], np.int32), [0, 2, 4], [5, count])


def test_built_once_and_run_in_steps_of_one_or_more():
    made = learner(np.array([5, 6, 5, 6], np.int32), [0, 4], [3])
    with pytest.raises(RuntimeError, match="built once"):
        made.__init__(np.array([1, 2], np.int32), np.array([0, 2], dtype=np.int64), np.array([1], dtype=np.int64),
                      BYTES)
    for step in (0, -1):
        with pytest.raises(ValueError, match="progress_every"):
            made.run(2, progress_every=step)
    merges, counts, tokens = made.run(2)
    assert [tokens[i] for i in merges[:, 2]] == [b"\x05\x06", b"\x05\x06\x05\x06"]
    assert counts.tolist() == [6, 3]
