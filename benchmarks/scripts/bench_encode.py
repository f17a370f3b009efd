"""Encode throughput of fastbpe against tiktoken, with the same ranks loaded in both.

    python benchmarks/scripts/bench_encode.py [--encoding cl100k_base] [--english-mb 10] [--multi-rows 0]
                                              [--clock wall|cpu] [--splitter auto|regex] [--huge-mb 10]

For each corpus (the first N MB of english.txt.gz; parallel_multi.tsv.gz, all rows by default)
it prints, in one run so the ratios compare like with like:

* tiktoken ``encode_ordinary`` (single thread), MB/s;
* fastbpe end to end (``encode_ordinary``: split + compiled BPE + list of ids), MB/s;
* the one-pass compiled split + BPE (``BPECore.encode_text``, cold cache) and ``id_list``;
* fastbpe BPE core alone, given the chunk bounds (what the compiled pre-tokenizer will feed),
  MB/s, with a cold and a warm chunk cache;
* fastbpe ``encode_batch`` over 0.5 MB pieces with 1 and 2 workers, tiktoken's
  ``encode_ordinary_batch`` with 1 and 2 threads, and the BPE core alone over the same pieces
  (pre-split) on 1 and 2 threads, each after an untimed warm-up pass (steady state), with
  the CPU/wall ratio of the 2-thread runs (2.0: both threads busy; lower: the machine or a
  lock kept one waiting);
* whether every id equals tiktoken's.

Needs the shared data (FASTBPE_DATA, default ../shared/data) and tiktoken.
"""
import argparse
import gzip
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout: its fastbpe, benchmarks.data

import tiktoken  # noqa: E402

from benchmarks.data import MissingData, data_path, first_lines, text_slice  # noqa: E402
from fastbpe import Tokenizer  # noqa: E402
from fastbpe._core.encode import EncodeState  # noqa: E402
from fastbpe.encode.loading import openai  # noqa: E402
from fastbpe.formats.tiktoken import OPENAI_ENCODINGS, read_tiktoken_ranks  # noqa: E402
from fastbpe.split.bounds import chunk_bounds  # noqa: E402
from fastbpe.split.patterns import fused_scanner_id, resolve, source  # noqa: E402


CLOCK = time.perf_counter  # --clock cpu: this thread's CPU time (steadier on a shared machine)


def splitter_name(pattern: str) -> str:
    """What :func:`chunk_bounds` runs for ``pattern``: "compiled" (a table entry whose chunks tile
    the text) or "regex" (any other pattern text: the ``regex`` module)."""
    entry = resolve(pattern)
    return "compiled" if entry is not None and entry.tiles else "regex"


def timed(fn, repeat=1, clock=None):
    clock = clock or CLOCK
    best, result = float("inf"), None
    for _ in range(repeat):
        start = clock()
        result = fn()
        best = min(best, clock() - start)
    return best, result


def pieces_of(text: str, size: int = 1 << 19):
    """Split at line ends near every ``size`` characters (documents for the batch runs)."""
    out, start = [], 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        out.append(text[start:end])
        start = end
    return out


def bench(label: str, text: str, tok, enc, repeat: int) -> None:
    mb = len(text.encode("utf-8")) / 1e6
    print(f"\n== {label}: {mb:.1f} MB UTF-8, {len(text):,} characters")
    t_tik, ref = timed(lambda: enc.encode_ordinary(text), repeat)
    print(f"tiktoken encode_ordinary        {mb / t_tik:8.1f} MB/s")
    tok._state().clear()
    t_ours, ids = timed(lambda: tok.encode_ordinary(text), repeat)
    print(f"fastbpe encode_ordinary (e2e)   {mb / t_ours:8.1f} MB/s   {t_tik / t_ours:5.2f}x tiktoken")
    t_split, (data, starts, ends) = timed(lambda: chunk_bounds(text, tok.pattern, tok.split_gaps), repeat)
    label = f"  of which the split ({splitter_name(tok.pattern)})"
    print(f"{label:<32}{mb / t_split:8.1f} MB/s   ({len(starts):,} chunks)")
    core = tok._core()

    def cold():
        return core.encode_chunks(data, starts, ends, EncodeState())

    state = EncodeState()
    core.encode_chunks(data, starts, ends, state)
    t_cold, core_ids = timed(cold, repeat)
    t_warm, _ = timed(lambda: core.encode_chunks(data, starts, ends, state), repeat)
    print(f"fastbpe BPE core, cold cache    {mb / t_cold:8.1f} MB/s   {t_tik / t_cold:5.2f}x tiktoken")
    pattern_id = fused_scanner_id(tok.pattern)
    if pattern_id is not None:
        utf8 = text.encode("utf-8")
        t_fused, _ = timed(lambda: core.encode_text(utf8, pattern_id, EncodeState()), repeat)
        t_list, _ = timed(lambda: core.id_list(core_ids, state), repeat)
        print(f"  one-pass split + core, cold   {mb / t_fused:8.1f} MB/s   {t_tik / t_fused:5.2f}x tiktoken")
        print(f"  id_list of the ids            {t_list * 1000:8.1f} ms")
    print(f"fastbpe BPE core, warm cache    {mb / t_warm:8.1f} MB/s   {t_tik / t_warm:5.2f}x tiktoken")
    docs = pieces_of(text)
    wall = time.perf_counter  # threads: wall-clock time, whatever --clock says

    def parallel(fn, repeat=3):
        """(best wall seconds of ``repeat`` runs, result, CPU seconds / wall seconds of that
        run): 2.0 means two busy threads."""
        best = None
        for _ in range(repeat):
            cpu0, wall0 = time.process_time(), wall()
            result = fn()
            elapsed = wall() - wall0
            if best is None or elapsed < best[0]:
                best = (elapsed, result, (time.process_time() - cpu0) / elapsed)
        return best

    # Steady state: each worker's chunk cache warm from a first, untimed pass (a corpus-scale
    # run spends nearly all its time so; encode_batch keeps its threads, hence their caches).
    tok.encode_batch(docs, workers=1, disallowed_special=())
    tok.encode_batch(docs, workers=2, disallowed_special=())
    t_b1, b1, _ = parallel(lambda: tok.encode_batch(docs, workers=1, disallowed_special=()))
    t_b2, b2, busy_b2 = parallel(lambda: tok.encode_batch(docs, workers=2, disallowed_special=()))
    t_tb1, tb1, _ = parallel(lambda: enc.encode_ordinary_batch(docs, num_threads=1))
    t_tb2, tb2, busy_tb2 = parallel(lambda: enc.encode_ordinary_batch(docs, num_threads=2))
    print(f"fastbpe encode_batch, 1 worker  {mb / t_b1:8.1f} MB/s   ({len(docs)} pieces, warm caches)")
    print(f"fastbpe encode_batch, 2 workers {mb / t_b2:8.1f} MB/s   {t_b1 / t_b2:5.2f}x 1 worker; CPU/wall {busy_b2:.2f}")
    print(f"tiktoken batch, 1 thread        {mb / t_tb1:8.1f} MB/s")
    print(f"tiktoken batch, 2 threads       {mb / t_tb2:8.1f} MB/s   {t_tb1 / t_tb2:5.2f}x 1 thread; CPU/wall {busy_tb2:.2f}")
    # The core alone on the same pieces: what encode_batch scales like once the split is compiled
    # (the regex module holds the GIL while it builds match lists, so the split does not scale).
    bounds = [chunk_bounds(d, tok.pattern, tok.split_gaps) for d in docs]
    import threading
    from concurrent.futures import ThreadPoolExecutor

    states = {}

    def one(b):
        state = states.setdefault(threading.get_ident(), EncodeState())
        return core.encode_chunks(b[0], b[1], b[2], state)

    pool = ThreadPoolExecutor(2)

    def core_batch(workers):
        return [one(b) for b in bounds] if workers == 1 else list(pool.map(one, bounds))

    for workers in (1, 2):
        core_batch(workers)  # warm this thread's (these threads') cache
    t_c1, c1, _ = parallel(lambda: core_batch(1))
    t_c2, c2, busy_c2 = parallel(lambda: core_batch(2))
    pool.shutdown()
    print(f"BPE core over pieces, 1 thread  {mb / t_c1:8.1f} MB/s   (warm caches)")
    print(f"BPE core over pieces, 2 threads {mb / t_c2:8.1f} MB/s   {t_c1 / t_c2:5.2f}x 1 thread; CPU/wall {busy_c2:.2f}")
    same_core = [a.tolist() for a in c1] == tb2 and [a.tolist() for a in c2] == tb2
    same = ids == ref and core_ids.tolist() == ref and b1 == tb2 and b2 == tb2 and same_core
    print(f"identical ids to tiktoken: {same} ({len(ref):,} tokens)")


def bench_huge_chunk(tok, sizes_mb) -> None:
    """One chunk of random lowercase letters (no split anywhere): the heap encoder's scaling."""
    import random

    rng = random.Random(0)
    core = tok._core()
    print("\n== one chunk without a split (random letters): time should grow ~n log n")
    previous = None
    for size in sizes_mb:
        n = int(size * 1e6)
        data = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=n)).encode()
        t, ids = timed(lambda: core.encode_chunks(data, np.array([0]), np.array([n]), EncodeState()))
        growth = "" if previous is None else f"   x{t / previous[0]:.1f} time for x{n / previous[1]:.0f} size"
        print(f"{size:5g} MB chunk: {t:6.2f} s, {len(ids):,} tokens{growth}")
        previous = (t, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoding", default="cl100k_base", choices=sorted(OPENAI_ENCODINGS))
    parser.add_argument("--english-mb", type=float, default=10.0)
    parser.add_argument("--multi-rows", type=int, default=0, help="rows of parallel_multi (0 = all)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="single-thread timings in wall time or this thread's CPU time")
    parser.add_argument("--splitter", choices=["auto", "regex"], default="auto",
                        help="auto: the compiled scanner of the encoding's pattern; regex: the same "
                             "pattern text wrapped in (?:...), which names no table entry, so the regex "
                             "module splits (same chunks) and no one-pass scanner runs")
    parser.add_argument("--huge-mb", type=float, default=10.0, help="size of the no-split chunk (0 = skip)")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    try:
        path = data_path("tokenizers", "tiktoken", f"{args.encoding}.tiktoken")
        data_path("english.txt.gz")
        data_path("parallel_multi.tsv.gz")
    except MissingData as exc:
        sys.exit(str(exc))
    pattern, specials = OPENAI_ENCODINGS[args.encoding]
    started = time.perf_counter()
    if args.splitter == "regex":
        # A pattern text that names no table entry runs the regex path (same chunks, no compiled
        # scanner, no one-pass split + encode).
        tok = Tokenizer.from_tiktoken(path, "(?:" + source(pattern) + ")", specials)
    else:
        tok = openai(args.encoding, path)
    loaded = time.perf_counter()
    tok._core()  # the compiled tables are built on first use: not part of any timing below
    built = time.perf_counter()
    enc = tiktoken.Encoding(args.encoding, pat_str=source(pattern),
                            mergeable_ranks=read_tiktoken_ranks(path), special_tokens=specials)
    english = text_slice("english.txt.gz", int(args.english_mb * 1e6))
    if args.multi_rows:
        multi = "".join(first_lines("parallel_multi.tsv.gz", args.multi_rows))
    else:
        with gzip.open(data_path("parallel_multi.tsv.gz"), "rt", encoding="utf-8") as f:
            multi = f.read()
    print(f"encoding {args.encoding}; tiktoken {tiktoken.__version__}; {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.2f}; single-thread clock: {args.clock}; batch clock: wall")
    print(f"fastbpe: file read in {loaded - started:.2f} s, encoder tables built in {built - loaded:.2f} s")
    bench(f"english.txt.gz, first {args.english_mb:g} MB", english, tok, enc, args.repeat)
    bench("parallel_multi.tsv.gz" + (f", {args.multi_rows} rows" if args.multi_rows else ""), multi, tok, enc,
          args.repeat)
    if args.huge_mb:
        bench_huge_chunk(tok, [args.huge_mb / 10, args.huge_mb])


if __name__ == "__main__":
    main()
