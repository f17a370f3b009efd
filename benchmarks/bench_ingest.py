"""Benchmark corpus ingestion: pre-tokenize + count (fastbpe.count_words), printing MB/s.

    python benchmarks/bench_ingest.py                       # 100 MB of english.txt.gz, gpt2/cl100k/o200k
    python benchmarks/bench_ingest.py --mb 0 --workers 1 2  # the whole file
    python benchmarks/bench_ingest.py --file my.txt --patterns gpt2

The text is decompressed to a temporary file first (not timed). Each measurement runs in a fresh
process so that its peak RSS (VmHWM of the process; the workers' summed RSS sampled every 20 ms)
is its own.
MB/s = uncompressed input bytes / wall-clock seconds; "cpu MB/s" divides by the CPU seconds of
the process and its children instead (robust to other load on the machine).
The `regex`-module baseline (regex.findall + a dict, the pure-Python way) runs on a slice.
"""
import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.environ.get("FASTBPE_DATA", os.path.join(ROOT, "..", "shared", "data"))


def prepare(source: str, mb: int) -> str:
    """Decompress the first `mb` MB (0: all) of a .gz into a temp file; return its path."""
    if not source.endswith(".gz"):
        return source
    limit = mb * 1_000_000 if mb else None
    out = os.path.join(tempfile.gettempdir(), f"fastbpe_bench_{os.path.basename(source)[:-3]}_{mb or 'all'}.txt")
    if os.path.exists(out) and (limit is None or os.path.getsize(out) == limit):
        return out
    with gzip.open(source, "rb") as f:
        data = f.read(limit) if limit else f.read()
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, out)
    return out


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM; ru_maxrss would carry the parent's peak across exec)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class TreeSampler:
    """Samples the RSS of every descendant process (worker pools are grandchildren via the
    forkserver, invisible to RUSAGE_CHILDREN) and remembers their last CPU times."""

    def __init__(self, interval: float = 0.02):
        import threading

        import psutil

        self.psutil = psutil
        self.me = psutil.Process()
        self.peak_kids_rss = 0
        self.kid_cpu = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, args=(interval,), daemon=True)

    def run(self, interval):
        while not self.stop.is_set():
            total = 0
            for kid in self.me.children(recursive=True):
                try:
                    total += kid.memory_info().rss
                    t = kid.cpu_times()
                    self.kid_cpu[kid.pid] = t.user + t.system
                except self.psutil.Error:
                    pass
            self.peak_kids_rss = max(self.peak_kids_rss, total)
            self.stop.wait(interval)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def measure_one(path: str, pattern: str, workers: int, mode: str, slice_mb: int) -> dict:
    sys.path.insert(0, ROOT)
    size = os.path.getsize(path)
    if mode == "regex":
        import regex

        from fastbpe.pretokenize import PATTERNS

        with open(path, "rb") as f:
            data = f.read(slice_mb * 1_000_000)
        data = data[: data.rindex(b"\n") + 1]
        size = len(data)
        compiled = regex.compile(PATTERNS[pattern])
        t0, c0 = time.perf_counter(), cpu_seconds()
        counts = {}
        for chunk in compiled.findall(data.decode("utf-8")):
            counts[chunk] = counts.get(chunk, 0) + 1
        unique = len(counts)
    else:
        import fastbpe

        with TreeSampler() as sampler:
            t0, c0 = time.perf_counter(), cpu_seconds()
            table = fastbpe.count_words(path, pattern, workers=workers, progress=False)
            wall = time.perf_counter() - t0
        unique = len(table)
    if mode == "regex":
        wall = time.perf_counter() - t0
    cpu = cpu_seconds() - c0
    rss_kids = 0.0
    if mode != "regex":
        # the sampler misses a worker's last few ms: CPU figures for workers>1 are a lower bound
        cpu = max(cpu, resource.getrusage(resource.RUSAGE_SELF).ru_utime + resource.getrusage(
            resource.RUSAGE_SELF).ru_stime - c0 + sum(sampler.kid_cpu.values()))
        rss_kids = sampler.peak_kids_rss / 2**20
    rss_self = peak_rss_mb()
    return {"mode": mode, "pattern": pattern, "workers": workers, "mb": size / 1e6, "wall_s": wall,
            "cpu_s": cpu, "mb_s": size / 1e6 / wall, "cpu_mb_s": size / 1e6 / cpu, "unique": unique,
            "peak_rss_mb": rss_self, "peak_rss_worker_mb": rss_kids}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default=os.path.join(DATA, "english.txt.gz"))
    parser.add_argument("--mb", type=int, default=100, help="MB to decompress from a .gz (0 = all)")
    parser.add_argument("--patterns", nargs="+", default=["gpt2", "cl100k", "o200k"])
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--regex-mb", type=int, default=10, help="slice for the regex baseline (0 = skip)")
    parser.add_argument("--one", nargs=4, metavar=("PATH", "PATTERN", "WORKERS", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        path, pattern, workers, mode = args.one
        print(json.dumps(measure_one(path, pattern, int(workers), mode, args.regex_mb)))
        return
    path = prepare(args.file, args.mb)
    print(f"input: {path} ({os.path.getsize(path) / 1e6:.1f} MB), python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}")
    header = f"{'what':<22}{'pattern':<8}{'MB':>7}{'wall s':>8}{'MB/s':>8}{'cpu MB/s':>10}{'unique':>10}{'peak RSS MB':>13}{'workers RSS':>12}"
    print(header)
    runs = [(p, w, "fastbpe") for p in args.patterns for w in args.workers]
    if args.regex_mb:
        runs += [(p, 1, "regex") for p in args.patterns]
    for pattern, workers, mode in runs:
        out = subprocess.run([sys.executable, __file__, "--regex-mb", str(args.regex_mb), "--one", path, pattern,
                              str(workers), mode], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{mode} {pattern} workers={workers} FAILED:\n{out.stderr}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        what = f"count_words w={workers}" if mode == "fastbpe" else "regex.findall+dict"
        print(f"{what:<22}{pattern:<8}{r['mb']:>7.1f}{r['wall_s']:>8.2f}{r['mb_s']:>8.1f}{r['cpu_mb_s']:>10.1f}"
              f"{r['unique']:>10}{r['peak_rss_mb']:>13.0f}{r['peak_rss_worker_mb']:>12.0f}", flush=True)


if __name__ == "__main__":
    main()
