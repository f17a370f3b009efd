"""count_words equals the reference (regex on each whole text), for any blocks and workers."""
import bz2
import gzip
import lzma
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe import PATTERNS, CorpusDecodeError, WordTable, count_words
from fastbpe.corpus.cut import cut_stream
from fastbpe.corpus.files import expand_paths as iter_corpus_files
from fastbpe.reference.count import count_words as reference_counts
from fastbpe.split.patterns import cut_rule
from tests.processes import alive, children


def count_words_reference(texts, pattern, errors="strict"):
    """The reference's counts as a WordTable (same chunks, counts and order as count_words)."""
    counts = reference_counts(texts, pattern, errors)
    if not counts:
        raise ValueError("the corpus is empty")
    return WordTable.from_counts(counts)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = sorted(PATTERNS)
USER_REGEX = r"\w+|[^\w\s]+"

SPECIAL = list(" \t\n\r\x0b\xa0\u3000'sStTLl\u017faZ\u00e9\u4e2d\u0939\u0301\u093f09\u0663!./\U0001F600\u200d")
texts = st.lists(
    st.one_of(
        st.lists(st.one_of(st.sampled_from(SPECIAL), st.sampled_from(["'s", "\r\n", "  ", "\n\n", "ab"])),
                 max_size=60).map("".join),
        st.text(max_size=40),
    ),
    min_size=1,
    max_size=5,
)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _lines(data: bytes, n: int) -> bytes:
    """The whole lines within the first n bytes (never half a UTF-8 character)."""
    return data[: data.rindex(b"\n", 0, n) + 1]


@pytest.fixture(scope="module")
def multi_bytes(shared_data):
    """The first 3,000 rows of parallel_multi.tsv.gz (9 scripts), as raw bytes."""
    with gzip.open(shared_data.path("parallel_multi.tsv.gz"), "rb") as f:
        lines = [f.readline() for _ in range(3001)]
    return b"".join(lines)


@pytest.fixture(scope="module")
def english_bytes(shared_data):
    with gzip.open(shared_data.path("english.txt.gz"), "rb") as f:
        data = f.read(300_000)
    return data[: data.rindex(b"\n") + 1]


@pytest.mark.parametrize("name", NAMES + [USER_REGEX])
@SETTINGS
@given(docs=texts, block_size=st.sampled_from([1, 2, 7, 64, None]))
def test_equals_reference_any_block_size(name, docs, block_size):
    try:
        expected = count_words_reference(docs, name)
    except ValueError:
        with pytest.raises(ValueError, match="empty"):
            count_words(iter(docs), name, workers=1, block_size=block_size, progress=False)
        return
    assert count_words(iter(docs), name, workers=1, block_size=block_size, progress=False) == expected


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("block_size", [1, 5, 4096])
def test_block_size_independence_on_real_text(name, block_size, multi_bytes, english_bytes):
    for data in (_lines(multi_bytes, 120_000), _lines(english_bytes, 120_000)):
        expected = count_words_reference([data], name)
        got = count_words(iter([data]), name, workers=1, block_size=block_size, progress=False)
        assert got == expected


@pytest.mark.parametrize("name", NAMES)
def test_cuts_are_chunk_boundaries(name, multi_bytes):
    """Every segment cut_stream makes is chunked as in the whole text (the cut rules hold)."""
    from fastbpe.split.pretokenize import pretokenize_bytes

    data = _lines(multi_bytes, 60_000)
    segments = list(cut_stream([data], cut_rule(name), 1))
    assert b"".join(s for s, _ in segments) == data
    assert len(segments) > 100
    pieces = [c for s, _ in segments for c in pretokenize_bytes(s, name)]
    assert pieces == pretokenize_bytes(data, name)


def _write(path, data: bytes):
    opener = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}.get(os.path.splitext(path)[1], open)
    with opener(path, "wb") as f:
        f.write(data)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
def test_a_pipe_in_a_folder_is_skipped_and_one_named_is_refused(tmp_path):
    """Opening a pipe waits for a writer: one in a corpus folder hung the run."""
    (tmp_path / "a.txt").write_text("hello world\n", encoding="utf-8")
    os.mkfifo(tmp_path / "pipe")
    os.symlink(tmp_path / "a.txt", tmp_path / "link.txt")
    assert iter_corpus_files(tmp_path) == [str(tmp_path / "a.txt")]  # (the link leads to a file read already)
    with pytest.warns(UserWarning, match=r"a\.txt \(2 times\)"):  # (named twice, by a link too: read twice)
        twice = count_words([tmp_path / "a.txt", tmp_path / "link.txt"], "gpt2", workers=1, progress=False)
    once = count_words(tmp_path, "gpt2", workers=1, progress=False)
    assert twice.to_dict() == {chunk: 2 * n for chunk, n in once.to_dict().items()}
    with pytest.raises(ValueError, match=r"pipe: not a regular file"):
        count_words(tmp_path / "pipe", "gpt2", progress=False)


def test_a_file_in_a_folder_that_cannot_be_entered_is_no_missing_file(tmp_path, monkeypatch):
    """A file under a folder without search permission exists: its PermissionError is said,
    not 'no such file or directory' (os.path.exists is False for it)."""
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "x.txt").write_text("text\n", encoding="utf-8")
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if "locked" + os.sep in os.fspath(path):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)  # (as a folder without search permission; tests may run as root)
    with pytest.raises(PermissionError, match="Permission denied"):
        iter_corpus_files(str(tmp_path / "locked" / "x.txt"))
    with pytest.raises(FileNotFoundError, match="no such file"):
        iter_corpus_files(str(tmp_path / "missing.txt"))


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="folder links need symlink")
def test_linked_folders_are_read_once_and_an_unreadable_folder_is_an_error(tmp_path, monkeypatch):
    """A linked folder is read as a folder is (a linked file was, a linked folder was skipped),
    a link back up adds nothing, and a folder that cannot be listed is an error naming it, not a
    silent gap in the corpus."""
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    for name in ("d/a.txt", "d/sub/b.txt", "other/o.txt"):
        (tmp_path / name).write_text(f"text of {name}\n", encoding="utf-8")
    os.symlink(tmp_path / "other", tmp_path / "d" / "link")
    os.symlink(tmp_path / "d", tmp_path / "d" / "sub" / "up")  # (a loop)
    want = [tmp_path / "d" / "a.txt", tmp_path / "d" / "link" / "o.txt", tmp_path / "d" / "sub" / "b.txt"]
    assert iter_corpus_files(tmp_path / "d") == [str(p) for p in want]
    # a glob follows the loop until its paths are too long to open: each file once all the same
    for pattern in ("d/**/*.txt", "d/**", "d/*"):
        assert sorted(iter_corpus_files(str(tmp_path / pattern))) == sorted(map(str, want))
    assert iter_corpus_files(str(tmp_path / "d" / "sub" / "*")) == [str(tmp_path / "d" / "sub" / "b.txt"),
                                                                  str(tmp_path / "d" / "sub" / "up" / "a.txt"),
                                                                  str(tmp_path / "d" / "sub" / "up" / "link" / "o.txt")]
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("sub"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)  # (as a folder without read permission; tests may run as root)
    with pytest.raises(PermissionError, match="sub"):
        iter_corpus_files(tmp_path / "d")
    with pytest.raises(PermissionError, match="sub"):
        count_words(tmp_path / "d", "gpt2", workers=1, progress=False)


def test_files_dirs_globs_and_compression(tmp_path, multi_bytes, english_bytes):
    docs = [_lines(english_bytes, 50_000), _lines(multi_bytes, 40_000), b"tiny file\n", _lines(english_bytes, 90_000)]
    (tmp_path / "d" / "sub").mkdir(parents=True)
    paths = [tmp_path / "d" / "a.txt", tmp_path / "d" / "sub" / "b.txt.gz", tmp_path / "d" / "sub" / "c.txt.xz",
             tmp_path / "e.bz2"]
    for path, doc in zip(paths, docs):
        _write(str(path), doc)
    expected = count_words_reference(docs, "cl100k")
    # a directory (recursive, sorted) then a glob
    got = count_words([str(tmp_path / "d"), str(tmp_path / "*.bz2")], "cl100k", workers=1, block_size=1000,
                      progress=False)
    assert got == expected
    assert iter_corpus_files(tmp_path / "d") == [str(p) for p in paths[:3]]
    try:
        import zstandard
    except ImportError:
        return
    zpath = tmp_path / "z.zst"
    zpath.write_bytes(zstandard.ZstdCompressor().compress(docs[1]))
    assert count_words(str(zpath), "o200k", workers=1, progress=False) == count_words_reference([docs[1]], "o200k")


@pytest.mark.parametrize("text", ["*/" * 1200, "the * cat / " * 1000, "x" * 300 + "*", "[a]" * 2000])
def test_a_text_given_as_a_path_is_a_clear_error(text):
    """A text given where paths go (a list of strs is a list of paths) is a FileNotFoundError
    with the way to pass texts, even when its wildcards and slashes make a glob too deep to
    search (glob.glob recursed once a folder level: RecursionError)."""
    with pytest.raises(FileNotFoundError, match="no file matches the glob.*pass an iterator"):
        count_words([text], progress=False)
    with pytest.raises(ValueError, match="names no file|pass an iterator"):
        fastbpe.train(text.replace(" ", ""), vocab_size=270, progress=False)


def test_one_vs_two_workers_identical(tmp_path, english_bytes, multi_bytes):
    plain = tmp_path / "plain.txt"
    plain.write_bytes(english_bytes + _lines(multi_bytes, 100_000))
    packed = tmp_path / "packed.txt.gz"
    _write(str(packed), _lines(english_bytes, 100_000))
    corpus = [str(plain), str(packed)]
    one = count_words(corpus, "gpt2", workers=1, block_size=20_000, progress=False)
    # small partitions and blocks: plain-file byte ranges and parent-read blocks, in 2 processes
    two = count_words(corpus, "gpt2", workers=2, block_size=20_000, partition_size=50_000, progress=False)
    assert two == one  # arrays equal, so order included
    assert one == count_words_reference([plain.read_bytes(), _lines(english_bytes, 100_000)], "gpt2")
    items = [english_bytes[i : i + 30_000] for i in range(0, 150_000, 30_000)]
    assert count_words(iter(items), "o200k", workers=2, block_size=40_000, progress=False) == \
        count_words_reference(items, "o200k")
    # many compressed shards: each worker reads and decompresses whole files
    shards = []
    for k in range(5):
        shard = tmp_path / f"shard{k}.txt.gz"
        _write(str(shard), items[k])
        shards.append(str(shard))
    assert count_words(shards, "cl100k", workers=2, block_size=7_000, progress=False) == \
        count_words(shards, "cl100k", workers=1, progress=False) == count_words_reference(items, "cl100k")


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_counting_threads_equal_one_worker_on_files(tmp_path, english_bytes, multi_bytes, workers):
    """Threads taking small tasks in turn (byte ranges of plain files, blocks of a compressed
    file read by whichever thread asks, whole small files) give one worker's table, order
    included: plain and .gz, empty files, files smaller than a block, many files."""
    multi = _lines(multi_bytes, 120_000)
    docs = [english_bytes, b"", multi, b"tiny file\n", b"", _lines(english_bytes, 30_000), _lines(multi, 5_000), b"x"]
    corpus = []
    for k, doc in enumerate(docs):
        for suffix in (".txt", ".txt.gz"):
            path = tmp_path / f"f{k}{suffix}"
            _write(str(path), doc)
            corpus.append(str(path))
    one = count_words(corpus, "cl100k", workers=1, progress=False)
    assert one == count_words_reference([d for d in docs for _ in (0, 1)], "cl100k")
    for block_size, partition_size in ((3_000, 7_000), (20_000, None), (1 << 20, None)):
        assert count_words(corpus, "cl100k", workers=workers, block_size=block_size, partition_size=partition_size,
                           progress=False) == one
    # one compressed file, its blocks read by the threads in turn
    assert count_words(corpus[1], "gpt2", workers=workers, block_size=4_000, progress=False) == \
        count_words_reference([english_bytes], "gpt2")


def test_no_more_threads_than_the_files_can_give_tasks(tmp_path, english_bytes, monkeypatch):
    """A worker count past the tasks of the files (at least 1 MiB of a file, or a whole file,
    each) starts no thread for them: each had its own table (workers=1_000_000, a typo, ran
    the machine out of memory)."""
    import fastbpe.corpus.count as count

    path = tmp_path / "corpus.txt"
    path.write_bytes((english_bytes * (1 + (5 << 19) // max(len(english_bytes), 1)))[:5 << 19])  # 2.5 MiB
    started = []
    in_threads = count._in_threads
    monkeypatch.setattr(count, "_in_threads", lambda function, calls, stop=None: (
        started.append(len(calls)), in_threads(function, calls, stop))[1])
    assert count_words(str(path), workers=64, progress=False) == count_words(str(path), workers=1, progress=False)
    assert started and max(started) <= 4  # (one file + 2 MiB ranges + 1)


@pytest.mark.parametrize("workers", [2, 3])
def test_counting_threads_raise_the_first_error_in_corpus_order(tmp_path, workers):
    """Two invalid bytes in different tasks: the one earlier in the corpus is reported,
    whichever thread meets its own first, and no counting thread is left running."""
    import threading

    path = tmp_path / "two_bad.txt"
    path.write_bytes(b"word " * 2_000 + b"\xff" + b" word" * 20_000 + b"\xfe" + b" word" * 100)
    for _ in range(3):
        with pytest.raises(CorpusDecodeError, match=r"two_bad\.txt: invalid UTF-8 at byte offset 10000 \(byte 0xff\)"):
            count_words(str(path), "gpt2", workers=workers, block_size=1_000, partition_size=2_000, progress=False)
        assert not [t for t in threading.enumerate() if t.name.startswith("fastbpe-count")]


@SETTINGS
@given(docs=st.lists(st.one_of(texts, st.integers(17, 40).map(lambda n: [" " + "y" * n, "\u4e2d" * n])),
                     min_size=1, max_size=8), owners=st.lists(st.integers(0, 2), min_size=8, max_size=8),
       parts=st.integers(1, 4))
def test_merging_the_tables_of_interleaved_tasks(docs, owners, parts):
    """Tasks (each a few texts) counted by three counters in any interleaving, merged in any
    number of hash partitions: the table one counter gives counting every task in order (short
    and long chunks, a chunk first seen in a later counter's task, counters with no task)."""
    from fastbpe._core.count import ChunkCounter
    from fastbpe.corpus.count import _merged_arrays
    from fastbpe.split.patterns import scanner_id
    from fastbpe.split.pretokenize import check_errors

    scanner, BYTES = scanner_id("gpt2"), check_errors("bytes")
    whole = ChunkCounter()
    counters = [ChunkCounter() for _ in range(3)]
    for number, task in enumerate(docs):
        data = [t.encode("utf-8", "surrogatepass") for t in task]
        buf = b"".join(data)
        ends = np.cumsum([len(d) for d in data], dtype=np.int64)
        whole.add_documents(buf, ends, scanner, BYTES)  # any text counts
        counter = counters[owners[number]]
        counter.begin_task(number)
        counter.add_documents(buf, ends, scanner, BYTES)
    for counter in counters:
        counter.finish_tasks()
    got = _merged_arrays(counters, len(docs), parts, lambda function, calls: [function(*c) for c in calls])
    for a, b in zip(got, whole.arrays()):
        assert a.tolist() == b.tolist()


@pytest.mark.parametrize("tasks", [64, 65, 300])
@pytest.mark.parametrize("parts", [1, 3])
def test_merging_counters_of_many_tasks(tasks, parts):
    """Counters that each counted many tasks (task numbers past a byte), many tasks adding no
    new chunk: the table one counter gives."""
    import random

    from fastbpe._core.count import ChunkCounter
    from fastbpe.corpus.count import _merged_arrays
    from fastbpe.split.patterns import scanner_id

    rng = random.Random(tasks)
    scanner = scanner_id("gpt2")
    whole = ChunkCounter()
    counters = [ChunkCounter(), ChunkCounter()]
    for number in range(tasks):
        # words seen before, and now and then new ones (short and long)
        words = [f" w{rng.randrange(number + 1)}" + "q" * rng.choice([0, 1, 12, 20]) for _ in range(rng.randrange(4))]
        buf = "".join(words).encode()
        ends = np.array([len(buf)], dtype=np.int64)
        whole.add_documents(buf, ends, scanner, 0)
        # runs of three tasks each, in turn; the last two to the first counter
        counter = counters[(number // 3) % 2 if number < tasks - 2 else 0]
        counter.begin_task(number)
        counter.add_documents(buf, ends, scanner, 0)
    for counter in counters:
        counter.finish_tasks()
    got = _merged_arrays(counters, tasks, parts, lambda function, calls: [function(*c) for c in calls])
    for a, b in zip(got, whole.arrays()):
        assert a.tolist() == b.tolist()


def test_merging_checks_its_arguments():
    from fastbpe._core.count import ChunkCounter, merge_partition, write_merged
    from fastbpe.split.patterns import scanner_id

    counters = [ChunkCounter(), ChunkCounter()]
    with pytest.raises(ValueError, match="increasing"):
        counters[0].begin_task(-1)
    for number, text in enumerate([b"the cat", b"the dog"]):
        counters[number].begin_task(number)
        counters[number].add_documents(text, np.array([len(text)], dtype=np.int64), scanner_id("gpt2"), 0)
        counters[number].finish_tasks()
    with pytest.raises(ValueError, match="increasing"):
        counters[1].begin_task(1)
    with pytest.raises(ValueError, match="an entry per task"):
        merge_partition(counters, 0, 1, np.zeros(1, np.int64), np.zeros(1, np.int64))
    chunks, nbytes = np.zeros(2, np.int64), np.zeros(2, np.int64)
    with pytest.raises(ValueError, match="twice"):
        merge_partition([counters[0], counters[0]], 0, 1, chunks, nbytes)
    # a counter whose chunks were not counted in a task, or not finished: nothing to merge by
    untasked, unfinished = ChunkCounter(), ChunkCounter()
    untasked.add_documents(b"the eel", np.array([7], dtype=np.int64), scanner_id("gpt2"), 0)
    untasked.finish_tasks()
    unfinished.begin_task(0)
    unfinished.add_documents(b"the eel", np.array([7], dtype=np.int64), scanner_id("gpt2"), 0)
    for bad in untasked, unfinished:
        with pytest.raises(ValueError, match="begin_task"):
            merge_partition([counters[0], bad], 0, 1, chunks, nbytes)
    assert chunks.tolist() == [0, 0]
    merge_partition(counters, 0, 1, chunks, nbytes)
    assert chunks.tolist() == [2, 1] and nbytes.tolist() == [7, 4]
    data, offsets, counts = np.empty(11, np.uint8), np.empty(4, np.int64), np.empty(3, np.int64)
    with pytest.raises(ValueError, match="do not fill"):
        write_merged(counters, 0, 2, data, offsets, counts, 0, 2, 0, 11)
    with pytest.raises(ValueError, match="outside"):
        write_merged(counters, 0, 2, data, offsets, counts, 0, 4, 0, 11)
    offsets[0] = 0
    write_merged(counters, 0, 2, data, offsets, counts, 0, 3, 0, 11)
    assert (data.tobytes(), offsets.tolist(), counts.tolist()) == (b"the cat dog", [0, 3, 7, 11], [2, 1, 1])


def test_calls_on_threads_of_their_own():
    """The counting threads' runner: results in call order, every thread ended before the
    first failing call's error (in call order) is raised."""
    import threading
    import time

    from fastbpe.corpus.count import _in_threads

    assert _in_threads(lambda a, b: (a * b, threading.current_thread().name), [(2, 3), (4, 5)]) == [
        (6, "fastbpe-count-0"), (20, "fastbpe-count-1")]
    ended = []

    def work(k):
        time.sleep(0.05 * (3 - k))
        ended.append(k)
        if k:
            raise ValueError(f"call {k}")

    with pytest.raises(ValueError, match="call 1"):
        _in_threads(work, [(0,), (1,), (2,)])
    assert sorted(ended) == [0, 1, 2]


@pytest.mark.parametrize("threads", [1, 2])
def test_an_interrupt_stops_the_counting_threads(threads):
    """Ctrl-C while the threads run: they are asked to stop, and waited for, before it goes on
    (Python 3.11's Thread.join, interrupted, took the last thread for ended: it ran on,
    never told to stop)."""
    import threading

    from fastbpe.corpus.count import _in_threads
    from tests.interrupts import Interrupted, sigint_soon

    stopped = threading.Event()
    with pytest.raises(Interrupted):
        with sigint_soon(0.3):
            _in_threads(lambda: stopped.wait(30) or pytest.fail("not stopped"), [()] * threads, stop=stopped.set)
    assert stopped.is_set()
    assert not [t for t in threading.enumerate() if t.name.startswith("fastbpe-count-")]


_INTERRUPTED_COUNT = """
import signal, sys, time
import fastbpe.corpus.count as count

def counts_for_ten_minutes(*args):  # (the workers are forked from here: they run this)
    time.sleep(600)

def interrupt(*args):
    raise KeyboardInterrupt

count.count_task = counts_for_ten_minutes
signal.signal(signal.SIGALRM, interrupt)
signal.alarm(1)  # (no thread of its own: the workers are forked)
try:
    count.count_words(sys.argv[1:], pattern=r"\\S+|\\s+", workers=2, block_size=64, partition_size=256,
                      progress=False)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers")
def test_an_interrupt_stops_the_counting_processes(tmp_path):
    """A user regex is counted in worker processes, which ignore SIGINT: interrupted,
    count_words waited for each to count its partition to the end (one of 256 MB: minutes),
    since the pool forgets its processes as it shuts down. They are stopped now."""
    import subprocess

    files = [tmp_path / f"c{k}.txt" for k in range(4)]  # (partitions of 256 bytes: tasks for both workers)
    for path in files:
        path.write_text("a b c\n" * 100)
    (tmp_path / "interrupted.py").write_text(_INTERRUPTED_COUNT)
    tree = str(Path(fastbpe.__file__).resolve().parents[1])  # (this fastbpe, installed or not)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(tmp_path / "interrupted.py"), *map(str, files)],
                          capture_output=True, text=True, timeout=60, env=env)  # (it waited out the 600 s)
    assert done.returncode == 0 and done.stdout == "interrupted\n", done.stderr


def test_two_workers_with_a_thread_running(tmp_path, english_bytes):
    """With another thread alive, worker processes (a user regex) start by forkserver instead
    of fork: same table."""
    import threading

    plain = tmp_path / "plain.txt"
    plain.write_bytes(english_bytes)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    try:
        two = count_words(str(plain), USER_REGEX, workers=2, block_size=20_000, partition_size=60_000,
                          progress=False)
    finally:
        stop.set()
        thread.join()
    assert two == count_words_reference([english_bytes], USER_REGEX)


@SETTINGS
@given(words=st.lists(st.one_of(st.sampled_from(SPECIAL), st.sampled_from(["ab", "\u4e2d\u4e2d", "\n\n"]),
                                st.integers(1, 300).map(lambda n: "x" * n)), max_size=120).map("".join),
       block_size=st.sampled_from([1, 5, 64, 1000]), partition_size=st.sampled_from([7, 200, 3000]),
       workers=st.sampled_from([1, 2, 3]))
def test_byte_ranges_of_a_file_equal_the_reference(tmp_path_factory, words, block_size, partition_size, workers):
    """A plain file read as byte ranges (cut inside characters, ranges without a cut, so
    empty, and blocks longer than block_size where no cut comes) counts as the whole text."""
    path = tmp_path_factory.mktemp("ranges") / "text.txt"
    data = words.encode("utf-8")
    path.write_bytes(data)
    if not data.strip():
        return  # no chunk, or only whitespace: the empty-corpus error is tested elsewhere
    assert count_words(str(path), "gpt2", workers=workers, block_size=block_size, partition_size=partition_size,
                       progress=False) == count_words_reference([data], "gpt2")


def test_invalid_utf8(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"good text here\nand then \xff\xfe bad \xe2\x82\n")
    with pytest.raises(CorpusDecodeError, match=r"bad\.txt: invalid UTF-8 at byte offset 24 \(byte 0xff\)"):
        count_words(str(path), workers=1, progress=False)
    with pytest.raises(CorpusDecodeError, match=r"bad\.txt: invalid UTF-8 at byte offset 24"):
        count_words(str(path), workers=1, block_size=3, progress=False)  # the offset is in the file
    data = path.read_bytes()
    for errors in ("replace", "bytes"):
        for name in NAMES + [USER_REGEX]:
            assert count_words(str(path), name, workers=1, errors=errors, progress=False) == \
                count_words_reference([data], name, errors=errors)
    # raised in a worker (a thread; a process for a user regex), for a byte range far into the
    # file: same message and offset, and no worker left running
    big = tmp_path / "big_bad.txt"
    big.write_bytes(b"word " * 40_000 + b"x\xc3(" + b" word" * 1000)
    import threading

    for name in ("gpt2", USER_REGEX):
        with pytest.raises(CorpusDecodeError, match=r"big_bad\.txt: invalid UTF-8 at byte offset 200001 \(byte 0xc3\)"):
            count_words(str(big), name, workers=2, block_size=10_000, partition_size=50_000, progress=False)
        assert not [t for t in threading.enumerate() if t.name.startswith("fastbpe-count")]
    gz = tmp_path / "bad.txt.gz"
    _write(str(gz), data)
    with pytest.raises(CorpusDecodeError, match=r"bad\.txt\.gz: invalid UTF-8 at byte offset 24 \(offset in the decompressed"):
        count_words(str(gz), workers=1, progress=False)
    table = count_words(str(path), workers=1, errors="bytes", progress=False).to_dict()
    assert table[b"\xff"] == 1 and table[b"\xe2"] == 1 and table[b"\x82"] == 1
    with pytest.raises(CorpusDecodeError, match=r"item #1: invalid UTF-8 at byte offset 1"):
        count_words(iter(["fine", "x\ud800"]), workers=1, progress=False)  # lone surrogate in str


@SETTINGS
@given(parts=st.lists(st.one_of(st.text(alphabet=SPECIAL, max_size=20).map(str.encode), st.binary(max_size=4)),
                      max_size=8),
       errors=st.sampled_from(["replace", "bytes"]), block_size=st.sampled_from([1, 3, None]))
def test_invalid_utf8_any_blocks(parts, errors, block_size):
    data = b"".join(parts)
    for name in ("gpt2", "o200k"):
        try:
            expected = count_words_reference([data], name, errors=errors)
        except ValueError:
            continue
        assert count_words(iter([data]), name, workers=1, errors=errors, block_size=block_size,
                           progress=False) == expected


def test_empty_inputs(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        count_words(str(empty), workers=1, progress=False)
    with pytest.raises(ValueError, match="empty"):
        count_words(iter([]), workers=1, progress=False)
    with pytest.raises(ValueError, match="empty"):
        count_words(iter([" \n\t "]), "whitespace", workers=1, progress=False)
    # a pattern that matches none of the text: said, as the cause it may be
    with pytest.raises(ValueError, match=r"no chunk to count \(or the pattern '\\\\d\+' matches none of its text\)"):
        count_words(iter(["no digits here"]), r"\d+", workers=1, progress=False)
    with pytest.raises(ValueError, match="no chunk to count$"):  # (a pattern whose chunks tile any text)
        count_words(iter([""]), "cl100k", workers=1, progress=False)
    (tmp_path / "emptydir").mkdir()
    with pytest.raises(ValueError, match="empty"):
        count_words(str(tmp_path / "emptydir"), workers=1, progress=False)


def test_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError, match="iter"):
        count_words(["no such file"], progress=False)
    with pytest.raises(FileNotFoundError, match="glob"):
        count_words(str(tmp_path / "*.none"), progress=False)
    # a long text given where paths go: its start named, not all of it
    with pytest.raises(FileNotFoundError, match="iter") as raised:
        count_words(["what? " * 10_000], progress=False)
    assert len(str(raised.value)) < 400
    with pytest.raises(TypeError, match="item #1"):
        count_words(iter(["a", 3]), workers=1, progress=False)
    with pytest.raises(TypeError, match="bytes"):
        count_words(b"raw bytes", progress=False)
    with pytest.raises(ValueError, match="errors"):
        count_words(iter(["a"]), errors="ignore", progress=False)
    with pytest.raises(ValueError, match="regex"):
        count_words(iter(["a"]), "(bad", progress=False)
    with pytest.raises(ValueError, match="workers"):
        count_words(iter(["a"]), workers=0, progress=False)


def test_no_space_megabytes_stay_linear(tmp_path):
    """A 4 MB 'word' (no cut anywhere) with 64 KB blocks: finishes, one chunk (no timing assert)."""
    path = tmp_path / "nospace.txt"
    path.write_bytes(b"ab" * (2 << 20))
    table = count_words(str(path), "gpt2", workers=1, block_size=64 << 10, progress=False)
    assert len(table) == 1 and table.chunk(0) == b"ab" * (2 << 20) and table.counts[0] == 1


def test_counts_are_int64_and_progress_runs(tmp_path, capsys):
    path = tmp_path / "p.txt"
    path.write_bytes(b"the cat the dog\n" * 1000)
    table = count_words(str(path), workers=1, progress=True, block_size=1000)
    assert table.counts.dtype == np.int64 and isinstance(table, WordTable)
    assert table.to_dict() == {b"the": 1000, b" cat": 1000, b" the": 1000, b" dog": 1000, b"\n": 1000}
    assert "counting" in capsys.readouterr().err


def test_dask_cluster_matches_local(tmp_path, english_bytes, multi_bytes):
    distributed = pytest.importorskip("distributed", reason="dask.distributed not installed")
    plain = tmp_path / "plain.txt"
    plain.write_bytes(_lines(english_bytes, 200_000))
    packed = tmp_path / "multi.txt.gz"
    _write(str(packed), _lines(multi_bytes, 100_000))
    corpus = [str(plain), str(packed)]
    local = count_words(corpus, "o200k", workers=1, progress=False)
    # worker processes on loopback TCP: tasks and tables really go through serialization
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
        remote = count_words(corpus, "o200k", cluster=client, block_size=30_000, partition_size=60_000,
                             progress=False)
        assert remote == local
        items = [english_bytes[i : i + 20_000] for i in range(0, 100_000, 20_000)]
        assert count_words(iter(items), "gpt2", cluster=client, block_size=25_000, progress=False) == \
            count_words_reference(items, "gpt2")


@pytest.mark.parametrize("offsets, counts, message", [
    ([0, 3, 3, 5], [1, 1, 1], "non-empty"),       # an empty chunk
    ([0, 3, 2, 5], [1, 1, 1], "non-empty"),       # offsets going back
    ([0, 3, 5], [1, 0], "positive"),
    ([0, 3, 5], [1], "one entry more"),
    ([1, 3, 5], [1, 1], "start at 0"),
    ([0, 3, 4], [1, 1], "end at len"),
    ([0, 1.5, 5], [1, 1], "offsets must be integers"),  # (not cut to 1)
    ([0, 3, 5], [1.9, 2.5], "counts must be integers"),
    ([0, 3, 5], np.array([2**63 + 1, 1], dtype=np.uint64), "counts must lie in"),
    ([0, 3, 5], [[1, 1]], "one-dimensional"),
])
def test_wordtable_rejects_inconsistent_arrays(offsets, counts, message):
    data = np.frombuffer(b"thecat", dtype=np.uint8)[:5]
    with pytest.raises((ValueError, TypeError), match=message):
        WordTable(data, np.array(offsets), np.array(counts))
    assert len(WordTable(data, np.array([0, 3, 5]), np.array([2, 1]))) == 2


def test_wordtable_values_are_checked_not_converted_and_totals_are_exact():
    """Values a table cannot hold are refused rather than cut or wrapped, a chunk listed twice
    is refused (concat sums them), a sum past 2**63 - 1 is an OverflowError, and the totals are
    exact past the int64 range."""
    with pytest.raises(ValueError, match="data must lie in 0..255"):
        WordTable(np.array([300, 98, 99]), [0, 1, 3], [1, 2])
    with pytest.raises(ValueError, match="distinct"):
        WordTable(np.frombuffer(b"aa", np.uint8), [0, 1, 2], [1, 1])
    assert WordTable(b"abc", [0, 1, 3], [1, 2]).to_dict() == {b"a": 1, b"bc": 2}
    for value, error in ((2.7, TypeError), ("3", TypeError), (True, TypeError), (0, ValueError), (2**63, ValueError)):
        with pytest.raises(error, match="count"):
            WordTable.from_counts({b"a": value})
    with pytest.raises(OverflowError, match=r"count passes 2\*\*63 - 1"):
        WordTable.concat([WordTable.from_counts({b"ab": 2**62})] * 2)
    with pytest.raises(TypeError, match="WordTables"):
        WordTable.concat([{b"a": 1}])
    big = WordTable.from_counts({b"a": 2**62, b"bcdefghi": 2**62 + 1})
    assert big.total_count == 2**63 + 1 and big.total_bytes == 2**62 + 8 * (2**62 + 1)
    table = WordTable.from_counts({b"a": 1, b"b": 2})
    assert table.chunk(-1) == b"b"
    with pytest.raises(IndexError, match="chunk 2 of a table of 2"):
        table.chunk(2)


@SETTINGS
@given(parts=st.lists(st.dictionaries(st.binary(min_size=1, max_size=20), st.integers(1, 2**40), max_size=30),
                      max_size=4))
def test_wordtable_concat_compiled_equals_dict_merge(parts):
    tables = [WordTable.from_counts(p) for p in parts]
    merged = {}
    for p in parts:
        for chunk, count in p.items():
            merged[chunk] = merged.get(chunk, 0) + count
    got = WordTable.concat(tables)
    assert got.to_dict() == merged and list(got.to_dict()) == list(merged)


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k", "llama3", "qwen", "tekken"])
def test_cjk_without_spaces_or_newlines_is_cut(name, multi_bytes):
    """Chinese with no space and no newline still gets block boundaries (rule R6), exactly."""

    rows = multi_bytes.decode("utf-8").split("\n")[1:400]
    zh = "".join(r.split("\t")[6] for r in rows if r.count("\t") >= 10)
    zh = "".join(c for c in zh if not c.isspace() and c != "\\").encode("utf-8")
    segments = list(cut_stream([zh], cut_rule(name), 64))
    assert len(segments) > 20
    assert count_words(iter([zh]), name, workers=1, block_size=64, progress=False) == \
        count_words_reference([zh], name)


ENDLESS_COUNT = """
import sys, fastbpe

def texts():
    while True:
        yield "the cat sat on the mat and counted every chunk again " * 2000

if __name__ == "__main__":  # a user regex: counted in worker processes
    fastbpe.count_words(texts(), sys.argv[1], workers=2, block_size=1 << 16, progress=False)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the workers")
@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_workers_do_not_outlive_a_killed_parent(tmp_path, signal_name):
    """Killing the parent of count_words(workers=2) with a user regex (counted in worker
    processes) leaves no worker running."""
    import signal
    import subprocess
    import time

    script = tmp_path / "endless.py"
    script.write_text(ENDLESS_COUNT)
    parent = subprocess.Popen([sys.executable, str(script), USER_REGEX], cwd=str(tmp_path),
                              env={**os.environ, "PYTHONPATH": ROOT})  # this tree's fastbpe
    try:
        deadline = time.monotonic() + 60
        workers = []
        while len(workers) < 2 and time.monotonic() < deadline and parent.poll() is None:
            time.sleep(0.2)
            workers = children(parent.pid)
        assert len(workers) >= 2, "the workers never started"
        parent.send_signal(getattr(signal, signal_name))
        parent.wait(timeout=30)
        deadline = time.monotonic() + 20
        while any(map(alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(map(alive, workers)), f"workers {workers} outlived their parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        for pid in children(parent.pid):
            os.kill(pid, 9)


@pytest.mark.skipif(not hasattr(__import__("signal"), "pthread_sigmask"), reason="no pthread_sigmask here")
def test_a_ctrl_c_raised_while_the_signals_are_held_leaves_the_mask_as_it_was(monkeypatch):
    """Python runs the handlers of signals already received when pthread_sigmask returns, so
    the call that holds Ctrl-C back (around the fork of a worker) may raise KeyboardInterrupt
    after the mask has changed; the mask must still be restored, or Ctrl-C would stay blocked
    in this thread for good."""
    import signal
    from fastbpe.corpus import count as count_module

    real = signal.pthread_sigmask
    before = real(signal.SIG_BLOCK, [])

    def interrupted_after_blocking(how, mask):
        previous = real(how, mask)
        if how == signal.SIG_BLOCK and signal.SIGINT in set(mask):
            raise KeyboardInterrupt
        return previous

    monkeypatch.setattr(signal, "pthread_sigmask", interrupted_after_blocking)
    with pytest.raises(KeyboardInterrupt):
        with count_module._parent_signals_held():
            pytest.fail("the body ran although the hold was interrupted")
    monkeypatch.undo()
    after = real(signal.SIG_SETMASK, before)  # (and restored for the tests that follow)
    assert after == before


def test_on_a_cluster_no_file_is_read_by_the_client(tmp_path, english_bytes):
    """The tasks a cluster gets name files (byte ranges, groups of small files, whole compressed
    files): no text passes through the client, and counting the tasks gives the local table."""
    from fastbpe.corpus import count as count_module

    paths = []
    for k in range(7):
        paths.append(tmp_path / f"{k}.txt")
        paths[-1].write_bytes(_lines(english_bytes, 3_000 + 9_000 * k))
    _write(str(tmp_path / "z.txt.gz"), _lines(english_bytes, 20_000))
    files = iter_corpus_files(str(tmp_path))
    rule = cut_rule("gpt2")
    tasks = list(count_module._source_tasks(files, rule, 4096, 25_000, True, files, plain_to_workers=True))
    assert not any(isinstance(t, count_module.Block) for t in tasks)
    kinds = {type(t).__name__ for t in tasks}
    assert kinds == {"_Files", "_Range", "_File"}, kinds
    assert sum(count_module._task_raw(t) for t in tasks) == sum(os.path.getsize(f) for f in files)
    table = WordTable.concat(WordTable(*count_module.count_task(t, "gpt2", "strict", 4096)) for t in tasks)
    assert table == count_words(str(tmp_path), "gpt2", workers=1, progress=False)


@pytest.mark.parametrize("workers,error", [(True, TypeError), (2.5, TypeError), ("2", TypeError),
                                           (0, ValueError), (-3, ValueError)])
def test_worker_counts_are_ints_of_at_least_one(workers, error):
    # True counted as one worker, 2.5 as a float that range() later refused
    with pytest.raises(error, match="workers"):
        count_words(iter(["the cat"]), workers=workers, progress=False)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab é中 \t\r\n\n.'"), max_size=80), st.sampled_from([1, 3, 7, None]))
def test_lines_count_every_line_as_its_own_text(tmp_path_factory, text, block_size):
    path = tmp_path_factory.mktemp("lines") / "t.txt"
    path.write_bytes(text.encode("utf-8"))
    # each line with its "\n" (not bytes.splitlines: a lone \r ends no line here, nor in Hugging Face)
    lines = re.findall(rb"[^\n]*\n|[^\n]+", text.encode("utf-8"))
    if not lines:
        return
    expected = count_words(iter(lines), workers=1, block_size=None)
    assert count_words(path, workers=1, block_size=block_size, lines=True) == expected


def test_lines_keep_decode_errors_where_they_are(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"first line\nsecond \xff line\n")
    with pytest.raises(CorpusDecodeError, match="offset 18"):
        count_words(path, workers=1, lines=True)
    with pytest.raises(ValueError, match="named pattern"):
        count_words(path, workers=1, lines=True, pattern=r"\w+")


@SETTINGS
@given(docs=texts.flatmap(lambda t: st.lists(st.sampled_from(t + ["q" * 3000, " q"]), max_size=6)))
def test_taking_the_arrays_hands_over_the_chunk_bytes(docs):
    """``take_arrays`` gives what ``arrays`` copies (the table's own bytes, lent to NumPy: a
    writable array that outlives the counter) and leaves the counter empty, ready to count."""
    from fastbpe._core.count import ChunkCounter
    from fastbpe.split.patterns import scanner_id
    from fastbpe.split.pretokenize import check_errors

    counter = ChunkCounter()
    data = [t.encode("utf-8", "surrogatepass") for t in docs]
    counter.add_documents(b"".join(data), np.cumsum([len(d) for d in data], dtype=np.int64),
                          scanner_id("gpt2"), check_errors("bytes"))
    copied = [a.tolist() for a in counter.arrays()]
    taken = counter.take_arrays()
    del counter
    assert [a.tolist() for a in taken] == copied
    assert taken[0].flags.writeable and taken[0].dtype == np.uint8
    again = ChunkCounter()
    again.take_arrays()
    assert len(again) == 0 and [a.tolist() for a in again.arrays()] == [[], [0], []]


def test_a_file_that_is_one_long_word(tmp_path):
    """A file with no safe cut (one word far longer than a block) is one chunk, counted whole."""
    path = tmp_path / "word.txt"
    path.write_bytes(b"ab" * 40_000 + b" cd" * 3)
    table = count_words(str(path), workers=1, block_size=1_000, progress=False)
    assert table.to_dict() == {b"ab" * 40_000: 1, b" cd": 3}


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_long_word_across_every_byte_range(tmp_path, workers):
    """One chunk far longer than a byte range (every range after the first starts inside it,
    so is empty, and the first reads all of it) between ordinary text: the table the reference
    gives, at any number of workers."""
    data = b"one two " * 500 + "\u4e2d".encode() * 50_000 + b"x" * 150_000 + b" one three\nfour" * 300
    path = tmp_path / "word.txt"
    path.write_bytes(data)
    table = count_words(str(path), "gpt2", workers=workers, block_size=2_000, partition_size=5_000,
                        progress=False)
    assert table == count_words_reference([data], "gpt2")
    assert table.to_dict()[b" " + "\u4e2d".encode() * 50_000 + b"x" * 150_000] == 1


# Items of an iterable longer than a quarter block are read block by block on their own: a str
# transcoded a block at a time (Utf8Reader), bytes copied a block at a time; into one reused
# buffer by one worker, into a buffer per block for threads and worker processes (which
# unpickle the blocks). Every way gives the table of the items' surrogatepass UTF-8, whole.
LONG_ITEMS = {
    "non-ASCII str": ["the caf\u00e9 \u4e2d\u6587\u4e2d \U0001F600\u200d don't  stop\n" * 40],
    "ASCII str": ["the cat sat, the dog's bone.\n\n  " * 60],
    "lone surrogates": ["ab \ud800 cd\udfff \ud83d\ude00 x\u00e9" * 30 + "\ud800"],
    "bytes": [("caf\u00e9 \u4e2d " * 80).encode() + b"\xff tail"],
    "multiple items": ["one two " * 50, b"three " * 70, "\u4e2d\u6587 " * 90, "x" * 500, "short"],
    "empty items": ["", "a b c " * 60, "", b"", "d e" * 40, ""],
    "shorter than a block": ["a b", b"c d", "\u00e9\u4e2d", "x"],
}


def _utf8_items(items):
    return [i if isinstance(i, bytes) else i.encode("utf-8", "surrogatepass") for i in items]


@pytest.mark.parametrize("case", sorted(LONG_ITEMS))
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("block_size", [1, 7, 64, 300, 4096, None])
def test_long_items_equal_their_utf8_whole(case, workers, block_size):
    items = LONG_ITEMS[case]
    data = _utf8_items(items)
    for errors in ("replace", "bytes"):
        assert count_words(iter(items), "gpt2", workers=workers, errors=errors, block_size=block_size,
                           progress=False) == count_words_reference(data, "gpt2", errors=errors)
    try:
        expected = count_words_reference(data, "gpt2")
    except ValueError:  # invalid UTF-8: the error of the items read whole (block_size=None)
        with pytest.raises(CorpusDecodeError) as whole:
            count_words(iter(items), "gpt2", workers=1, block_size=None, progress=False)
        with pytest.raises(CorpusDecodeError, match=re.escape(str(whole.value))):
            count_words(iter(items), "gpt2", workers=workers, block_size=block_size, progress=False)
        return
    assert count_words(iter(items), "gpt2", workers=workers, block_size=block_size, progress=False) == expected


def test_a_lone_surrogate_deep_in_a_long_str_is_found_where_it_is():
    text = "word " * 1000 + "x\ud800 more"
    for workers in (1, 2):
        with pytest.raises(CorpusDecodeError, match=r"item #1: invalid UTF-8 at byte offset 5001 \(byte 0xed\)"):
            count_words(iter(["fine", text]), workers=workers, block_size=64, progress=False)


@pytest.mark.parametrize("case", ["non-ASCII str", "lone surrogates", "multiple items"])
def test_long_items_in_worker_processes(case):
    """A user regex counts in worker processes: the blocks of long items are pickled to them."""
    items = LONG_ITEMS[case]
    assert count_words(iter(items), USER_REGEX, workers=2, errors="replace", block_size=64, progress=False) == \
        count_words_reference(_utf8_items(items), USER_REGEX, errors="replace")


@SETTINGS
@given(items=st.lists(st.one_of(texts.map("".join),
                                st.text(alphabet=st.characters(blacklist_categories=()), max_size=60),
                                texts.map(lambda t: "".join(t).encode()),
                                st.binary(max_size=20)), max_size=6),
       block_size=st.sampled_from([1, 2, 3, 7, 64, None]), workers=st.sampled_from([1, 2]),
       errors=st.sampled_from(["replace", "bytes"]))
def test_str_and_bytes_items_equal_their_utf8_any_blocks(items, block_size, workers, errors):
    data = _utf8_items(items)
    try:
        expected = count_words_reference(data, "o200k", errors=errors)
    except ValueError:
        with pytest.raises(ValueError, match="empty"):
            count_words(iter(items), "o200k", workers=workers, errors=errors, block_size=block_size, progress=False)
        return
    assert count_words(iter(items), "o200k", workers=workers, errors=errors, block_size=block_size,
                       progress=False) == expected


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("block_size", [3, 40])
def test_lines_of_long_items(workers, block_size):
    items = ["one two\n\nthree \u4e2d\n" * 20 + "tail", b"x y\r\n" * 30, "\n" * 50]
    lines = [line for d in _utf8_items(items) for line in d.splitlines(keepends=True)]
    assert count_words(iter(items), "gpt2", workers=workers, block_size=block_size, lines=True,
                       progress=False) == count_words_reference(lines, "gpt2")
