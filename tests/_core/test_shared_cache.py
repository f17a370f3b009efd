"""The chunk cache that a pool's threads share (SharedCache): threads encoding at once through
one cache give exactly the ids each text gets alone, with a fresh cache of its own; so do they
once the cache is full (the threads keep their own caches for the rest), and a tokenizer whose
pools share one cache, called from several threads with different worker counts."""
import threading

import numpy as np
import pytest

import fastbpe
from fastbpe._core.encode import EncodeState, SharedCache
from fastbpe.split.patterns import TABLE

PATTERN = TABLE["cl100k"].scanner


@pytest.fixture(scope="module")
def tok(shared_data):
    text = shared_data.text("english.txt.gz", 200_000)
    tok = fastbpe.train(text, vocab_size=1000, progress=False)
    return fastbpe.Tokenizer(tok.token_bytes, tok.merge_ids.tolist(), pattern="cl100k"), text


def _texts(text):
    """Real text, non-ASCII text, and long chunks (rules of "=" and box drawing, runs of
    spaces: keys of hundreds of bytes, up to past the longest the cache keeps)."""
    pieces = [text[i:i + 3000] for i in range(0, 60_000, 3000)]
    pieces += ["naïve café — ünïcödé 😀 中文。 " * 40, "=" * 700 + " x " + "\u2500" * 400 + " " * 1030 + "y"]
    pieces += [("-" * n + " ") * 3 for n in (2, 15, 16, 255, 256, 1023, 1024, 1025)]
    return [p.encode("utf-8") for p in pieces]


def _alone(core, texts):
    return [core.encode_text(t, PATTERN, EncodeState()).tolist() for t in texts]


def _at_once(core, states, orders, rounds=2):
    """Thread k encodes the texts in orders[k] with states[k], all threads started together;
    returns each thread's ids by text index."""
    start = threading.Barrier(len(states))
    got = [dict() for _ in states]
    errors = []

    def run(k):
        try:
            start.wait()
            for _ in range(rounds):
                for i, data in orders[k]:
                    ids = core.encode_text(data, PATTERN, states[k]).tolist()
                    assert got[k].setdefault(i, ids) == ids
        except Exception as exc:  # (a thread's exception would be lost otherwise)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(states))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return got


def test_threads_sharing_a_cache_give_each_text_its_ids_alone(tok):
    tok, text = tok
    core = tok._core()
    texts = _texts(text)
    want = _alone(core, texts)
    shared = SharedCache()
    states = [EncodeState(shared=shared) for _ in range(4)]
    indexed = list(enumerate(texts))
    # two threads on the same texts in the same order, one backwards, one on every other text
    orders = [indexed, indexed, indexed[::-1], indexed[1::2]]
    for k, got in enumerate(_at_once(core, states, orders)):
        assert got == {i: want[i] for i, _ in orders[k]}
    assert 0 < shared.size < shared.capacity and not shared.full
    assert all(s.size == 0 for s in states)  # (the shared cache took every chunk)
    assert core.encode_text(texts[0], PATTERN, states[0]).tolist() == want[0]


def test_a_full_shared_cache_leaves_the_rest_to_each_thread(tok):
    tok, text = tok
    core = tok._core()
    texts = _texts(text)
    want = _alone(core, texts)
    shared = SharedCache(max_ids=2000)  # 1024 slots: a few hundred chunks
    states = [EncodeState(shared=shared) for _ in range(3)]
    indexed = list(enumerate(texts))
    for k, got in enumerate(_at_once(core, states, [indexed, indexed[::-1], indexed[::3]])):
        assert got == {i: want[i] for i, _ in [indexed, indexed[::-1], indexed[::3]][k]}
    assert shared.full and shared.size <= shared.capacity
    assert all(s.size > 0 for s in states)
    shared.clear()  # (no thread encodes now)
    assert shared.size == 0 and not shared.full
    assert _at_once(core, states[:2], [indexed, indexed])[1] == dict(enumerate(want))
    assert shared.size > 0


def test_long_keys_fill_the_shared_cache_by_their_bytes(tok):
    """Chunks of 600..800 bytes: the 6 words per id of max_ids (12,000 words here) are spent
    after a few dozen of them, far below the slots' room."""
    core = tok[0]._core()
    chunks = [b"=" * (600 + k) for k in range(200)]
    text = b" ".join(chunks)
    want = core.encode_text(text, PATTERN, EncodeState()).tolist()
    shared = SharedCache(max_ids=2000)
    state = EncodeState(shared=shared)
    assert core.encode_text(text, PATTERN, state).tolist() == want
    assert shared.full and shared.size < 100 < shared.capacity
    assert core.encode_text(text, PATTERN, state).tolist() == want


def test_threads_past_the_arenas_keep_their_own_cache(tok):
    """64 states may write into one shared cache at once; the 65th keeps its own cache, and a
    state let go gives its arena to the next one."""
    tok, text = tok
    core = tok._core()
    data = text[:5000].encode()
    want = core.encode_text(data, PATTERN, EncodeState()).tolist()
    shared = SharedCache()
    states = [EncodeState(shared=shared) for _ in range(64)]
    extra = EncodeState(shared=shared)
    assert core.encode_text(data, PATTERN, extra).tolist() == want
    assert shared.size == 0 and extra.size > 0
    del states[0]
    late = EncodeState(shared=shared)
    assert core.encode_text(data, PATTERN, late).tolist() == want
    assert shared.size > 0 and late.size == 0
    assert core.encode_text(data, PATTERN, states[-1]).tolist() == want


def test_a_tokenizer_called_from_threads_with_a_cache_that_fills(tok):
    """A tokenizer whose pools share a small cache: calls at once from several threads with 1..4
    workers (the cache fills, the threads' own caches take the rest), then a call that finds it
    full while no other runs empties it."""
    base, text = tok
    tok = fastbpe.Tokenizer(base.token_bytes, base.merge_ids.tolist(), pattern="cl100k")
    tok._pools.shared = SharedCache(max_ids=2000)
    texts = [text[i:i + 700] for i in range(0, 70_000, 700)] + ["", "ünï 😀"]
    want = [tok.encode(t) for t in texts]
    errors, done = [], []

    def run(workers):
        try:
            for _ in range(4):
                assert tok.encode_batch(texts, workers=workers) == want
                got = tok.encode_batch(texts[::-1], workers=workers, as_numpy=True)
                assert [a.tolist() for a in got] == want[::-1]
            done.append(workers)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(1 + i % 4,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(done) == 6
    # (a call that found it full while none other ran may have emptied it meanwhile; text the
    # threads' short-chunk caches have not seen fills it again)
    more = [text[i:i + 700] for i in range(70_000, 140_000, 700)]
    assert tok.encode_batch(more, workers=2) == [tok.encode(t) for t in more]
    assert tok._pools.shared.full
    with tok._pools.borrow(2):
        assert tok._pools.shared.size == 0  # emptied: no other call was running
    assert tok.encode_batch(texts, workers=2) == want
    assert np.array_equal(np.concatenate([np.asarray(w, dtype=np.int64) for w in want]),
                          np.concatenate([np.asarray(w, dtype=np.int64) for w in tok.encode_batch(texts, workers=3)]))


def test_the_table_under_thread_sanitizer(tmp_path):
    """shared_cache.h alone, hammered by threads (native/shared_cache_threads.cpp) in a build
    with ThreadSanitizer: no data race reported, every lookup right."""
    import subprocess

    from tests.native import build, program_env

    # (not the sanitizer lane's AddressSanitizer runtime, preloaded for this process: a
    # ThreadSanitizer program cannot run beside it)
    env = program_env()
    program = str(tmp_path / "threads")
    built = build("shared_cache_threads.cpp", program, ["-O1", "-g", "-fsanitize=thread", "-pthread"])
    if built.returncode != 0 and "tsan" in built.stderr.lower():
        pytest.skip("the compiler has no ThreadSanitizer runtime")
    assert built.returncode == 0, built.stderr
    run = subprocess.run([program], capture_output=True, text=True, timeout=600,
                         env={**env, "TSAN_OPTIONS": "halt_on_error=1:exitcode=66"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "WARNING: ThreadSanitizer" not in run.stderr
    assert run.stdout.count(", 0 wrong") == 2
