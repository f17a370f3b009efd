"""Decode and encode_batch of fastbpe against tiktoken (loading: ``bench_load.py``).

    flock /tmp/fastbpe-bench.lock python benchmarks/scripts/bench_edges.py [--repeat 3] [--lines 20000]

Every measurement runs in a fresh process (nothing warm from an earlier one: a file read by
one library is in the page cache for all, as the first, untimed, read puts it there); the
libraries are alternated, their order flipped each round, and the best of ``--repeat`` rounds
is kept. Printed, with the load average:

* decode: the ids of 2 MB of English (cl100k) back to text, a list of ints, CPU seconds;
* batch: 20,000 short lines (the first lines of the multilingual table, each at most 200
  characters): a loop of ``encode_ordinary``, ``encode_batch`` at 1 and 2 workers, and tiktoken's
  ``encode_ordinary_batch`` at 2 threads; wall and CPU seconds.

Needs the shared data (FASTBPE_DATA, default ../shared/data) and tiktoken.
"""
import argparse
import json
import os
import subprocess
import sys
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


def child(task: str, lib: str, lines: int) -> dict:
    """One measurement in this (fresh) process: CPU and wall seconds of the timed part."""
    kind, _, name = task.partition(":")
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


ROWS = [
    ("decode:cl100k_base", ["fastbpe", "tiktoken"]),
    ("batch:loop", ["fastbpe"]),
    ("batch:1", ["fastbpe", "tiktoken"]),
    ("batch:2", ["fastbpe", "tiktoken"]),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--child", nargs=2, metavar=("TASK", "LIB"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args.lines)))
        return
    best = {}
    for round_ in range(args.repeat):
        for task, libs in ROWS:
            for lib in (libs if round_ % 2 == 0 else libs[::-1]):
                out = subprocess.run([sys.executable, __file__, "--child", task, lib, "--lines", str(args.lines)],
                                     check=True, capture_output=True, text=True).stdout
                got = json.loads(out.strip().splitlines()[-1])
                key = (task, lib)
                best[key] = {k: min(v, best.get(key, {}).get(k, float("inf"))) for k, v in got.items()}
    print(f"load average {os.getloadavg()}; best of {args.repeat} fresh processes per cell")
    print(f"{'task':22s} {'library':9s} {'cpu s':>8s} {'wall s':>8s}")
    for task, libs in ROWS:
        for lib in libs:
            b = best[(task, lib)]
            print(f"{task:22s} {lib:9s} {b['cpu']:8.4f} {b['wall']:8.4f}")
    print("ratios (other / fastbpe, > 1: fastbpe faster), CPU unless wall is said:")
    for task, libs in ROWS:
        if len(libs) == 2:
            print(f"  {task:22s} {best[(task, libs[1])]['cpu'] / best[(task, libs[0])]['cpu']:.2f}")
    loop = best[("batch:loop", "fastbpe")]["wall"]
    for workers in ("1", "2"):
        print(f"  loop of encode / encode_batch(workers={workers}), wall: "
              f"{loop / best[(f'batch:{workers}', 'fastbpe')]['wall']:.2f}")


if __name__ == "__main__":
    main()
