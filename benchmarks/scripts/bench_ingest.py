"""Benchmark corpus ingestion: pre-tokenize + count (fastbpe.count_words), printing MB/s.

    python benchmarks/scripts/bench_ingest.py                       # 100 MB of english.txt.gz, gpt2/cl100k/o200k
    python benchmarks/scripts/bench_ingest.py --mb 0 --workers 1 2  # the whole file
    python benchmarks/scripts/bench_ingest.py --file my.txt --patterns gpt2

The text is decompressed to a temporary file first (not timed). Each measurement runs in a fresh
process so that its peak RSS (VmHWM of the process; the workers' summed RSS sampled every 20 ms)
is its own.
MB/s = uncompressed input bytes / wall-clock seconds; "cpu MB/s" divides by the CPU seconds of
the process and its workers instead (robust to other load on the machine). Modules are imported
before the timer starts.
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)  # this checkout: its fastbpe, benchmarks.data

from benchmarks.data import data_dir  # noqa: E402


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


def self_cpu_seconds() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have been waited for."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return self_cpu_seconds() + kids.ru_utime + kids.ru_stime


SAMPLER = r"""
import json, sys, psutil, select
root, me = psutil.Process(int(sys.argv[1])), psutil.Process()
peak, cpu = 0, {}
while not select.select([sys.stdin], [], [], 0.02)[0]:
    total = 0
    for kid in root.children(recursive=True):
        if kid.pid == me.pid:
            continue
        try:
            total += kid.memory_info().rss
            t = kid.cpu_times()
            cpu[kid.pid] = t.user + t.system
        except psutil.Error:
            pass
    peak = max(peak, total)
print(json.dumps({"peak": peak, "cpu": sum(cpu.values())}))
"""


class TreeSampler:
    """Samples the summed RSS of every descendant process (worker pools, the forkserver) every
    20 ms and remembers their last CPU times. It runs as a separate process, not a thread: a
    thread in this process would change how count_words starts its workers (fork needs a
    single-threaded caller)."""

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", SAMPLER, str(os.getpid())], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        time.sleep(0.1)  # let it start (import psutil) before the measured work
        return self

    def __exit__(self, *exc):
        out, _ = self.proc.communicate("stop\n")
        result = json.loads(out)
        self.peak_kids_rss, self.kids_cpu = result["peak"], result["cpu"]


def measure_one(path: str, pattern: str, workers: int, mode: str, slice_mb: int) -> dict:
    size = os.path.getsize(path)
    if mode == "regex":
        import regex

        from fastbpe.split.patterns import PATTERNS

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
        import fastbpe.corpus.count  # noqa: F401  (the modules count_words imports on first use: not timed)

        with TreeSampler() as sampler:
            t0, c0, s0 = time.perf_counter(), cpu_seconds(), self_cpu_seconds()
            table = fastbpe.count_words(path, pattern, workers=workers, progress=False)
            wall = time.perf_counter() - t0
            # read before the sampler ends: once it is waited for, its own CPU (importing
            # psutil, polling) would count among this process's children's
            cpu, self_cpu = cpu_seconds() - c0, self_cpu_seconds() - s0
        unique = len(table)
        # worker processes under a forkserver are not this process's children: the sampler's
        # CPU times of them (missing a worker's last few ms: a lower bound for workers > 1)
        cpu = max(cpu, self_cpu + sampler.kids_cpu)
        rss_kids = sampler.peak_kids_rss / 2**20
    if mode == "regex":
        wall = time.perf_counter() - t0
        cpu = cpu_seconds() - c0
        rss_kids = 0.0
    rss_self = peak_rss_mb()
    return {"mode": mode, "pattern": pattern, "workers": workers, "mb": size / 1e6, "wall_s": wall,
            "cpu_s": cpu, "mb_s": size / 1e6 / wall, "cpu_mb_s": size / 1e6 / cpu, "unique": unique,
            "peak_rss_mb": rss_self, "peak_rss_worker_mb": rss_kids}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default=str(data_dir() / "english.txt.gz"))
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
