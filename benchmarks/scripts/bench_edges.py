"""Decode and encode_batch of fastbpe against tiktoken (loading: ``bench_load.py``).

    flock /tmp/fastbpe-bench.lock python benchmarks/scripts/bench_edges.py [--repeat 3] [--lines 20000]

Every measurement runs in a fresh process (nothing warm from an earlier one: a file read by
one library is in the page cache for all, as the first, untimed, read puts it there); the
libraries are alternated, their order flipped each round, and the best of ``--repeat`` rounds
is kept. Printed, with the load average:

* decode: the ids of 2 MB of English (cl100k) back to text, a list of ints, CPU seconds;
* batch: 20,000 short lines (the first lines of the multilingual table, each at most 200
  characters): a loop of ``encode_ordinary``, ``encode_batch`` at 1 and 2 workers, and tiktoken's
  ``encode_ordinary_batch`` at 2 threads; wall and CPU seconds;
* large inputs (``--mb`` MB of English, 0 to skip): ``encode_batch`` of its lines (lists of
  ids, and arrays: ``as_numpy=True``, whose results are built with less of the GIL), and
  ``encode_files`` (what ``fastbpe encode`` runs) of it as one plain file, at 1 and 2 workers
  (cold: the first call of a fresh process), with the 2-worker speed-up of wall time and the
  CPU/wall ratio (2.0: both cores busy all along; lower: a worker waited, or the machine was
  shared), the CPU ratio (1 worker / 2 workers: the work parallelism adds), and the CPU of the
  calling thread and of the busiest thread (whose ratio is the speed-up an idle machine allows);
  and on one thread against the peers, the first call of a fresh process and the second call
  (cold, warm; MB/s of CPU time, ids compared): fastbpe's ``encode_batch`` (lists, and arrays)
  and, when installed, gigatoken's ``encode_batch`` (tiktoken's ``encode_ordinary_batch`` ran
  at about 1 MB/s there: 20 s a call).

Needs the shared data (FASTBPE_DATA, default ../shared/data) and tiktoken.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout: its fastbpe, benchmarks.data

from benchmarks.data import data_path, first_lines, text_slice  # noqa: E402
from benchmarks.suites.common import tiktoken_encoding  # noqa: E402


def _fastbpe_openai(name):
    import fastbpe

    return fastbpe.openai(name, data_path("tokenizers", "tiktoken", f"{name}.tiktoken"))


def _short_lines(count):
    return [line[:200] for line in first_lines("parallel_multi.tsv.gz", count)]


def _english_file(mb: int) -> str:
    """The first ``mb`` MB of english.txt.gz (whole lines) in a temporary file, made once."""
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"fastbpe_bench_english_lines_{mb}.txt")
    if not os.path.exists(path):
        data = text_slice("english.txt.gz", mb * 1_000_000).encode("utf-8")
        data = data[: data.rindex(b"\n") + 1]
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
    return path


_ended_threads = {}  # thread id -> its CPU seconds when it ended (threads of the run that are gone)


def _record_thread_cpu(run):
    def recorded(self):
        try:
            run(self)
        finally:
            _ended_threads[threading.get_ident()] = time.thread_time()
    return recorded


def _thread_cpu() -> dict:
    """CPU seconds of every thread of this process: the live ones (the calling thread, the
    pools') and those that ended (their CPU as they ended: ``threading.Thread.run`` is wrapped)."""
    if not getattr(threading.Thread.run, "records_cpu", False):
        threading.Thread.run = _record_thread_cpu(threading.Thread.run)
        threading.Thread.run.records_cpu = True
    return {**_ended_threads,
            **{t.ident: time.clock_gettime(time.pthread_getcpuclockid(t.ident)) for t in threading.enumerate()}}


def child(task: str, lib: str, lines: int, mb: int = 0) -> dict:
    """One measurement in this (fresh) process: CPU and wall seconds of the timed part."""
    kind, _, name = task.partition(":")
    if kind == "peer":  # large inputs' lines on one thread, `lib`'s batch call: first and second call
        return _peer_lines(lib, mb)
    if kind in ("lines", "arrays", "files"):  # large inputs, fastbpe at `name` workers
        import shutil
        import tempfile

        path = _english_file(mb)
        tok = _fastbpe_openai("cl100k_base")
        if kind in ("lines", "arrays"):
            with open(path, encoding="utf-8") as f:
                texts = f.readlines()
            fn = lambda: tok.encode_batch(texts, workers=int(name), disallowed_special=(),  # noqa: E731
                                          as_numpy=kind == "arrays")
        else:
            import fastbpe

            out = tempfile.mkdtemp(prefix="fastbpe-bench-shards-")
            fn = lambda: fastbpe.encode_files(tok, [path], out, workers=int(name), fmt="raw",  # noqa: E731
                                              progress=False, resume=False)
        before = _thread_cpu()
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            result = fn()  # (held until the clocks stop: freeing it is no part of encoding)
        finally:
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if kind == "files":
                shutil.rmtree(out, ignore_errors=True)
        spent = {ident: t - before.get(ident, 0.0) for ident, t in _thread_cpu().items()}
        del result
        caller = spent.pop(threading.main_thread().ident)
        return {"cpu": cpu, "wall": wall, "caller": caller, "busiest": max([caller, *spent.values()])}
    if kind == "decode":
        text = text_slice("english.txt.gz", 2_000_000)
        enc = tiktoken_encoding("cl100k_base")
        ids = enc.encode_ordinary(text)
        if lib == "fastbpe":
            tok = _fastbpe_openai("cl100k_base")
            tok.decode(ids[:1000])
            fn = lambda: tok.decode(ids)  # noqa: E731
        else:
            fn = lambda: enc.decode(ids)  # noqa: E731
    else:  # batch:loop | batch:1 | batch:2
        texts = _short_lines(lines)
        if lib == "tiktoken":
            enc = tiktoken_encoding("cl100k_base")
            enc.encode_ordinary_batch(texts[:100], num_threads=2)
            fn = lambda: enc.encode_ordinary_batch(texts, num_threads=int(name))  # noqa: E731
        else:
            tok = _fastbpe_openai("cl100k_base")
            tok.encode_batch(texts[:100], workers=2)
            if name == "loop":
                fn = lambda: [tok.encode_ordinary(t) for t in texts]  # noqa: E731
            else:
                fn = lambda: tok.encode_batch(texts, workers=int(name), disallowed_special=())  # noqa: E731
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return {"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall}


def _peer_lines(lib: str, mb: int) -> dict:
    """CPU seconds of the first and the second call of ``lib``'s batch encoder on the lines of
    ``mb`` MB of English (cl100k, one thread), and a hash of its ids."""
    import hashlib

    with open(_english_file(mb), encoding="utf-8") as f:
        texts = f.readlines()
    if lib == "gigatoken":
        import gigatoken

        tok = gigatoken.Tokenizer.from_tiktoken(data_path("tokenizers", "tiktoken", "cl100k_base.tiktoken"))
        fn = lambda: tok.encode_batch(texts, parallel=False)  # noqa: E731
    else:  # fastbpe (lists) | fastbpe-arrays
        tok = _fastbpe_openai("cl100k_base")
        fn = lambda: tok.encode_batch(texts, workers=1, disallowed_special=(),  # noqa: E731
                                      as_numpy=lib == "fastbpe-arrays")
    times = []
    for _ in range(2):
        result = None  # (the first call's ids freed before the second call)
        cpu = time.process_time()
        result = fn()
        times.append(time.process_time() - cpu)
    digest = hashlib.sha1()  # (of the second call's ids, which the report compares across libraries)
    for ids in result:
        digest.update(repr([int(i) for i in ids]).encode())
    return {"cpu": times[0], "warm": times[1], "ids": digest.hexdigest()}


PEERS = ["fastbpe", "fastbpe-arrays", "gigatoken"]


ROWS = [
    ("decode:cl100k_base", ["fastbpe", "tiktoken"]),
    ("batch:loop", ["fastbpe"]),
    ("batch:1", ["fastbpe", "tiktoken"]),
    ("batch:2", ["fastbpe", "tiktoken"]),
]
LARGE_ROWS = [("lines:1", ["fastbpe"]), ("lines:2", ["fastbpe"]), ("arrays:1", ["fastbpe"]), ("arrays:2", ["fastbpe"]),
              ("files:1", ["fastbpe"]), ("files:2", ["fastbpe"])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--mb", type=int, default=20, help="MB of English for the large inputs (0: skip them)")
    parser.add_argument("--only-large", action="store_true", help="only the large inputs")
    parser.add_argument("--checkout", help="measure the fastbpe of this checkout (built in place), e.g. a baseline")
    parser.add_argument("--child", nargs=2, metavar=("TASK", "LIB"))
    args = parser.parse_args()
    if args.child:
        if args.checkout:
            sys.path.insert(0, str(Path(args.checkout).resolve()))
        print(json.dumps(child(*args.child, args.lines, args.mb)))
        return
    peers = [lib for lib in PEERS if lib != "gigatoken" or importlib.util.find_spec("gigatoken")]
    rows = ([] if args.only_large else ROWS) + (LARGE_ROWS + [("peer:lines", peers)] if args.mb else [])
    if args.mb:
        _english_file(args.mb)  # made (and in the page cache) before any timing
    best = {}
    for round_ in range(args.repeat):
        for task, libs in rows:
            for lib in (libs if round_ % 2 == 0 else libs[::-1]):
                out = subprocess.run([sys.executable, __file__, "--child", task, lib, "--lines", str(args.lines),
                                      "--mb", str(args.mb)] + (["--checkout", args.checkout] if args.checkout else []),
                                     check=True, capture_output=True, text=True).stdout
                got = json.loads(out.strip().splitlines()[-1])
                key = (task, lib)
                digest = got.pop("ids", None)
                best[key] = {k: min(v, best.get(key, {}).get(k, float("inf"))) for k, v in got.items()}
                if digest is not None:
                    best[key]["ids"] = digest
    print(f"load average {os.getloadavg()}; best of {args.repeat} fresh processes per cell"
          + (f"; fastbpe of {args.checkout}" if args.checkout else ""))
    print(f"{'task':22s} {'library':9s} {'cpu s':>8s} {'wall s':>8s} {'caller s':>9s} {'busiest s':>9s}")
    for task, libs in rows:
        for lib in libs:
            if task.startswith("peer"):
                continue
            b = best[(task, lib)]
            print(f"{task:22s} {lib:9s} {b['cpu']:8.4f} {b['wall']:8.4f}" +
                  (f" {b['caller']:9.4f} {b['busiest']:9.4f}" if "caller" in b else ""))
    if not args.only_large:
        print("ratios (other / fastbpe, > 1: fastbpe faster), CPU unless wall is said:")
        for task, libs in ROWS:
            if len(libs) == 2:
                print(f"  {task:22s} {best[(task, libs[1])]['cpu'] / best[(task, libs[0])]['cpu']:.2f}")
        loop = best[("batch:loop", "fastbpe")]["wall"]
        for workers in ("1", "2"):
            print(f"  loop of encode / encode_batch(workers={workers}), wall: "
                  f"{loop / best[(f'batch:{workers}', 'fastbpe')]['wall']:.2f}")
    if args.mb:
        print(f"large inputs ({args.mb} MB of English): 2 workers vs 1, wall; CPU/wall of 2 workers")
        for kind, what in (("lines", "encode_batch of its lines"), ("arrays", "the same, as_numpy=True"),
                           ("files", "encode_files of it")):
            one, two = best[(f"{kind}:1", "fastbpe")], best[(f"{kind}:2", "fastbpe")]
            print(f"  {what:28s} {one['wall'] / two['wall']:.2f}x   {args.mb / one['wall']:.1f} -> "
                  f"{args.mb / two['wall']:.1f} MB/s   CPU/wall {two['cpu'] / two['wall']:.2f}   "
                  f"CPU 1 worker / 2 workers {one['cpu'] / two['cpu']:.2f}   "
                  f"busiest thread's CPU 1 / 2 workers {one['busiest'] / two['busiest']:.2f}")
        print("  (caller: CPU of the calling thread; busiest: of the thread that ran longest, a bound on the wall "
              "time of an idle machine that another process's load does not change)")
        print("its lines on one thread, MB/s of CPU: first call of a fresh process / second call"
              + ("" if "gigatoken" in peers else " (gigatoken is not installed)"))
        want = best[("peer:lines", "fastbpe")]["ids"]
        for lib in peers:
            b = best[("peer:lines", lib)]
            same = "" if lib == "fastbpe" else ("ids identical" if b["ids"] == want else "ids DIFFER")
            print(f"  {lib:16s} {args.mb / b['cpu']:7.1f} / {args.mb / b['warm']:7.1f}   {same}")


if __name__ == "__main__":
    main()
