"""The merge learner against its reference, and the merge phase at corpus scale.

    python benchmarks/scripts/bench_train.py [--reference-mb 1] [--merges 1000] [--big-mb 100] [--big-merges 32768]

1. fast vs reference: the same word table (the first ``--reference-mb`` MB of english.txt.gz,
   GPT-2 split, byte symbols), ``--merges`` merges with each backend of ``train_words``; prints
   both times, the ratio and whether the merges are identical.
2. merge phase: the word table of the first ``--big-mb`` MB (counted once, not timed), then the
   learner's setup and ``--big-merges`` byte-level merges, CPU time, best of 3, in this process;
   the merge time per merged occurrence (the work any merge phase must do), and the peak RSS.

Needs the shared data (FASTBPE_DATA, default ../shared/data).
"""
import argparse
import gzip
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout: its fastbpe, benchmarks.data

import fastbpe  # noqa: E402
from fastbpe.learn.learner import make_learner, table_symbols  # noqa: E402

from benchmarks.data import MissingData, data_path  # noqa: E402


def english(megabytes: float) -> bytes:
    with gzip.open(data_path("english.txt.gz"), "rb") as f:
        data = f.read(int(megabytes * 1e6))
    return data[: data.rindex(b"\n") + 1]  # whole lines, never half a character


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-mb", type=float, default=1.0)
    parser.add_argument("--merges", type=int, default=1000)
    parser.add_argument("--big-mb", type=float, default=100.0)
    parser.add_argument("--big-merges", type=int, default=32768)
    args = parser.parse_args()
    try:
        data_path("english.txt.gz")
    except MissingData as exc:
        sys.exit(str(exc))
    print(f"load average {os.getloadavg()[0]:.2f}; fastbpe from {Path(fastbpe.__file__).parent}")

    table = fastbpe.count_words(iter([english(args.reference_mb)]), workers=1, progress=False)
    words = {tuple(bytes([b]) for b in chunk): count for chunk, count in table.items()}
    start = time.perf_counter()
    fast = fastbpe.train_words(words, args.merges, backend="fast")
    fast_s = time.perf_counter() - start
    start = time.perf_counter()
    ref = fastbpe.train_words(words, args.merges, backend="reference")
    ref_s = time.perf_counter() - start
    print(f"{args.reference_mb:g} MB ({len(words):,} unique chunks), {args.merges} merges: "
          f"fast {fast_s * 1e3:.1f} ms, reference {ref_s:.1f} s, {ref_s / fast_s:,.0f}x; "
          f"identical merges: {fast == ref}")

    big = fastbpe.count_words(iter([english(args.big_mb)]), workers=1, progress=False)
    before = peak_rss_mb()
    best_setup = best_run = float("inf")
    for _ in range(3):
        start = time.process_time()
        symbols, starts, base_tokens = table_symbols(big, "bytes", "", "")
        learner = make_learner(symbols, starts, big.counts, base_tokens)
        built = time.process_time()
        merges, _, _ = learner.run(args.big_merges)
        best_setup = min(best_setup, built - start)
        best_run = min(best_run, time.process_time() - built)
    # The work no merge phase can skip: every occurrence a merge replaces (each changes the
    # counts of up to four pairs).
    occurrences = learner.merged_occurrences
    print(f"{args.big_mb:g} MB ({len(big):,} unique chunks, {len(big.data):,} bytes of unique text): "
          f"{len(merges):,} merges, CPU best of 3: setup {best_setup:.3f} s, merges {best_run:.3f} s "
          f"for {occurrences:,} merged occurrences = {best_run / max(occurrences, 1) * 1e9:.0f} ns each; "
          f"peak RSS {peak_rss_mb():.0f} MB ({before:.0f} MB before the merge phase)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
