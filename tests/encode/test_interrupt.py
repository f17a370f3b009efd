"""Ctrl-C during one long encode call: the call stops where it is and raises what the SIGINT
handler raised, from inside the compiled call (it used to come only once the call returned:
seconds to tens of seconds later), and the tokenizer encodes as before afterwards.

Each workload takes seconds uninterrupted; the signal comes well after the Python work before
the compiled call. The tests assert where the exception came from, not how soon."""
import gzip
import random
import time

import pytest

import fastbpe
from tests.interrupts import Interrupted, sigint_soon, stopped_inside

SIGNAL_AFTER = 1.0  # seconds: past the Python work before the compiled call, long before its end
SAMPLE = "Ctrl-C stops a call; the next one encodes as a fresh tokenizer does. 12345 lëtters, 中文 too."


def one_word(megabytes: int) -> str:
    """A text with no split point: random lowercase letters (a 64 KB block, repeated)."""
    rng = random.Random(0)
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(1 << 16)) * (megabytes << 4)


@pytest.fixture(scope="module")
def cl100k_path(shared_data):
    return shared_data.path("tokenizers", "tiktoken", "cl100k_base.tiktoken")


@pytest.fixture(scope="module")
def cl100k(cl100k_path):
    return fastbpe.load(cl100k_path)


def _interrupted(call, after: float = SIGNAL_AFTER) -> bool:
    return stopped_inside(call, "encode.pyx", after)


def test_a_huge_text_of_many_chunks(cl100k, cl100k_path, shared_data):
    """96 MB of English (about 20M chunks, 25M ids): the loop over blocks of chunks looks at
    Ctrl-C as it goes. The caches left behind give the same ids as a fresh tokenizer's."""
    with gzip.open(shared_data.path("english.txt.gz"), "rb") as f:
        english = f.read(96 << 20).decode("ascii", "replace")
    assert _interrupted(lambda: cl100k.encode_ordinary(english), 0.3)  # (about 1 s here)
    assert cl100k.encode_ordinary(SAMPLE) == fastbpe.load(cl100k_path).encode_ordinary(SAMPLE)
    assert cl100k.encode_ordinary(english[:100_000]) == fastbpe.load(cl100k_path).encode_ordinary(english[:100_000])


def test_one_huge_chunk_backtracked(cl100k, cl100k_path):
    """A 48 MB chunk (no split point) goes to the backtracking search, which looks at Ctrl-C
    every so many tokens."""
    word = one_word(48)
    assert _interrupted(lambda: cl100k.encode_ordinary(word))
    assert cl100k.encode_ordinary(SAMPLE + word[:5000]) == fastbpe.load(cl100k_path).encode_ordinary(SAMPLE + word[:5000])


@pytest.fixture(scope="module")
def sentencepiece_model(tmp_path_factory):
    """A SentencePiece BPE model of lowercase letters (its normaliser: nmt_nfkc's map)."""
    import sentencepiece as spm

    where = tmp_path_factory.mktemp("sp")
    block = one_word(1)[:1 << 16]
    (where / "letters.txt").write_text("\n".join(block[k:k + 1000] for k in range(0, len(block), 1000)))
    spm.SentencePieceTrainer.train(input=str(where / "letters.txt"), model_prefix=str(where / "sp"),
                                   vocab_size=600, model_type="bpe", byte_fallback=True, minloglevel=2,
                                   num_threads=1)
    return str(where / "sp.model")


def test_one_huge_chunk_merged_by_rank(sentencepiece_model):
    """A SentencePiece model keeps the text one chunk: 32 MB go to the merge loop by rank,
    which looks at Ctrl-C while it lists the pairs and every so many merges."""
    model = sentencepiece_model
    tok = fastbpe.load(model)
    word = one_word(32)
    # the signal after the normaliser's pass over the text, which comes first and looks at no
    # signal (measured on 1 MB: under the sanitizers it took longer than SIGNAL_AFTER)
    started = time.monotonic()
    tok.normalize(word[:1 << 20])
    after = max(SIGNAL_AFTER, 32 * 1.5 * (time.monotonic() - started) + 0.5)
    assert _interrupted(lambda: tok.encode_ordinary(word), after)
    assert tok.encode_ordinary(SAMPLE + word[:5000]) == fastbpe.load(model).encode_ordinary(SAMPLE + word[:5000])


def test_an_interrupted_call_leaves_its_buffers_as_a_finished_one(cl100k_path, shared_data):
    """A huge call's buffers (here a 32 MB text's UTF-8, 96 MB: 'ε' is up to 3 bytes) are let
    go as the call ends, by Ctrl-C too, as when it returns: not kept until the next call."""
    with gzip.open(shared_data.path("english.txt.gz"), "rb") as f:
        text = f.read(32 << 20).decode("ascii", "replace").replace("e", "ε")
    tok = fastbpe.load(cl100k_path)
    state = tok._state()
    assert _interrupted(lambda: tok.encode_ordinary(text), 0.3)
    assert state.buffer_bytes <= 64 << 20  # (what a state keeps between calls)
    assert tok.encode_ordinary(SAMPLE) == fastbpe.load(cl100k_path).encode_ordinary(SAMPLE)


def test_a_thread_that_is_not_the_main_one_is_not_stopped(cl100k, cl100k_path):
    """Only the main thread runs signal handlers (elsewhere CPython's check does nothing, and
    the compiled loops do not even take the GIL to call it): another thread's encode runs to
    its end while the main thread is interrupted, with the ids an uninterrupted call gives."""
    import threading

    word = one_word(16)
    out, done = [], threading.Event()

    def encode():
        try:
            out.append(cl100k.encode_ordinary(word))
        except BaseException as exc:  # (shown by the assertion below, not lost in the thread)
            out.append(exc)
        done.set()

    thread = threading.Thread(target=encode)
    thread.start()
    # (waiting on an event: Python 3.11's Thread.join, interrupted, may take the thread for ended)
    # Whether the thread was still encoding when the handler ran: its exception may be lost
    # (a handler that runs inside a garbage collector's callback, as hypothesis installs one,
    # raises into nothing), the signal's coming is not.
    came = []
    try:
        with sigint_soon(0.2, first=lambda: came.append(done.is_set())):
            done.wait()  # (interrupted: the handler runs in the main thread, here)
    except Interrupted:
        pass
    if came != [False]:
        pytest.skip("the thread's encode ended before the signal came: nothing ran beside an interrupt")
    done.wait()
    thread.join()
    expected = fastbpe.load(cl100k_path).encode_ordinary(word)
    assert len(out) == 1 and not isinstance(out[0], BaseException), out[0]
    assert out[0] == expected


def test_the_workers_of_an_interrupted_batch_stop_too(cl100k_path, shared_data, monkeypatch):
    """Ctrl-C while ``encode_batch`` waits for its workers: the groups they are encoding stop
    at their encoders' next poll (KeyboardInterrupt from inside the compiled call, left in
    their futures) instead of running to their end; the pool's states encode as before
    afterwards."""
    from fastbpe.encode import pools

    with gzip.open(shared_data.path("english.txt.gz"), "rb") as f:
        english = f.read(64 << 20).decode("ascii", "replace")
    texts = [english[:32 << 20], english[32 << 20:]]  # (two groups: one a worker, seconds each)
    tok = fastbpe.load(cl100k_path)
    futures, submit = [], pools.Lane.submit

    def recorded(lane, fn, *args):
        futures.append(submit(lane, fn, *args))
        return futures[-1]

    monkeypatch.setattr(pools.Lane, "submit", recorded)
    interrupted, ended = False, None
    try:
        with sigint_soon(0.3):
            started = time.monotonic()
            tok.encode_batch(texts, workers=2)
            ended = time.monotonic() - started
    except Interrupted:
        interrupted = True
    if not interrupted:
        pytest.skip(f"the batch ended {ended:.2f} s in, before the signal at 0.3 s: nothing to interrupt")
    assert len(futures) == 2 and all(future.done() for future in futures)  # (waited for)
    stopped = [future.exception() for future in futures if not future.cancelled()]
    assert stopped and all(isinstance(exc, KeyboardInterrupt) for exc in stopped), stopped
    for exc in stopped:
        tb = exc.__traceback__
        while tb is not None and not tb.tb_frame.f_code.co_filename.endswith("encode.pyx"):
            tb = tb.tb_next
        assert tb is not None, "the worker's exception came from outside the compiled call"
    monkeypatch.undo()
    lines = english[:1 << 20].splitlines()[:2000]
    fresh = fastbpe.load(cl100k_path)
    assert tok.encode_batch(lines, workers=2) == [fresh.encode_ordinary(line) for line in lines]
    assert tok.encode_batch(texts[0][:4 << 20].split("\n\n"), workers=2) == \
        fresh.encode_batch(texts[0][:4 << 20].split("\n\n"), workers=1)


def test_a_handler_that_encodes_with_the_interrupted_tokenizer_is_refused(cl100k, cl100k_path):
    """A signal handler runs inside the paused call: encoding there with the same tokenizer
    (the same thread's buffers), or clearing its cache, is a RuntimeError saying so, which stops
    the call; with another Tokenizer object it works, and the call stops with the handler's
    exception."""
    word = one_word(48)

    def stopped_by(first):
        """What the call raised, the handler calling ``first``; skipped if it ended first."""
        ended = []
        with pytest.raises((RuntimeError, Interrupted)) as info:
            with sigint_soon(SIGNAL_AFTER, first=first):
                started = time.monotonic()
                cl100k.encode_ordinary(word)
                ended.append(time.monotonic() - started)
        if ended and ended[0] < SIGNAL_AFTER:
            pytest.skip(f"the call ended {ended[0]:.2f} s in, before the signal at {SIGNAL_AFTER} s")
        return info.value

    refused = stopped_by(lambda: cl100k.encode_ordinary(SAMPLE))
    assert isinstance(refused, RuntimeError), refused
    assert "a signal handler encoded on the thread whose encode call it interrupted" in str(refused)
    cleared = stopped_by(lambda: cl100k._state().clear())  # (the paused call reads that cache)
    assert isinstance(cleared, RuntimeError) and "cannot be cleared from there" in str(cleared), cleared
    other, got = fastbpe.load(cl100k_path), []
    assert isinstance(stopped_by(lambda: got.append(other.encode_ordinary(SAMPLE))), Interrupted)
    assert got == [cl100k.encode_ordinary(SAMPLE)]
