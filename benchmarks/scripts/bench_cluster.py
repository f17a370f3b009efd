"""Scale-out benchmark: counting, training and shard encoding on a Dask cluster against local runs.

    python benchmarks/scripts/bench_cluster.py                  # 1 GB, local vs a LocalCluster of 2 worker processes
    python benchmarks/scripts/bench_cluster.py --mb 200 --workers 2 --phases count encode

The corpus is written to a temporary folder first (not timed, removed at the end): the shared
English and code corpora (``english.txt.gz``, ``code.txt.gz``) copied until it holds ``--mb`` MB,
each copy a file of its own that starts with a marker line naming the copy, so no two documents
are equal. Every measurement runs in a fresh process (``--one`` below): a local run with
``--workers`` processes (counting) or threads (encoding), or a process-based ``LocalCluster`` of
``--workers`` single-threaded workers on loopback TCP started before the clock starts.

Printed per phase and mode: wall seconds; MB/s and MB/s per worker; CPU seconds of the client
and of the workers (or local child processes) and CPU/wall; the peak RSS of the client (VmHWM)
and of each worker (sampled every 20 ms); the bytes that came back to the client (the table for
count and train, the manifest for encode), the cluster's time over the local one, and a digest
of the result (the table, the merges, the token stream read back in manifest order), which must
be equal for both modes.
"""
import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)  # this checkout: its fastbpe, benchmarks.data

from benchmarks.data import data_path  # noqa: E402

PHASES = ("count", "train", "encode")


def make_corpus(folder: str, mb: int) -> list:
    """Copies of the shared English and code corpora until ``mb`` MB, a marker line first in each."""
    sources = [gzip.open(data_path(name), "rb").read() for name in ("english.txt.gz", "code.txt.gz")]
    files, total, copy = [], 0, 0
    while total < mb * 1_000_000:
        for kind, data in zip(("english", "code"), sources):
            room = mb * 1_000_000 - total
            if room <= 0:
                break
            body = f"corpus copy {copy} of the {kind} text\n".encode() + data[:room]
            path = os.path.join(folder, f"{kind}-{copy:03d}.txt")
            with open(path, "wb") as f:
                f.write(body)
            files.append(path)
            total += len(body)
        copy += 1
    return files


def peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


# Runs in a process of its own (a sampling thread here would make count_words fork its workers
# through a forkserver: it forks directly only from a single-threaded process). Samples every
# 20 ms the RSS and CPU time of the given pids, or of all descendants of the root pid; prints
# the peaks, the last CPU times and its own CPU time when stdin closes.
SAMPLER = r"""
import json, sys, select, psutil
root, me = psutil.Process(int(sys.argv[1])), psutil.Process()
fixed = [int(p) for p in sys.argv[2:]]
peaks, cpu = {}, {}
def sample():
    procs = [psutil.Process(p) for p in fixed] if fixed else root.children(recursive=True)
    for proc in procs:
        if proc.pid == me.pid:
            continue
        try:
            rss, t = proc.memory_info().rss, proc.cpu_times()
        except psutil.Error:
            continue
        peaks[proc.pid] = max(peaks.get(proc.pid, 0), rss)
        cpu[proc.pid] = t.user + t.system
sample()
first = dict(cpu)
sys.stdout.write("ready\n"); sys.stdout.flush()
while not select.select([sys.stdin], [], [], 0.02)[0]:
    sample()
sample()
own = me.cpu_times()
print(json.dumps({"peaks": peaks, "cpu": {p: c - first.get(p, 0.0) for p, c in cpu.items()},
                  "own_cpu": own.user + own.system}))
"""


def start_sampler(pids=()):
    proc = subprocess.Popen([sys.executable, "-c", SAMPLER, str(os.getpid()), *map(str, pids)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()  # "ready": the first sample is taken
    return proc


def stop_sampler(proc) -> dict:
    out, _ = proc.communicate("")
    return json.loads(out)


def table_digest(table) -> str:
    h = hashlib.sha256()
    for array in (table.data, table.offsets, table.counts):
        h.update(array.tobytes())
    return h.hexdigest()[:16]


def stream_digest(out_dir: str) -> str:
    from fastbpe.shards import MANIFEST, read_shard

    manifest = json.load(open(os.path.join(out_dir, MANIFEST)))
    h = hashlib.sha256()
    for shard in manifest["shards"]:
        h.update(read_shard(os.path.join(out_dir, shard["file"])).astype("<u4").tobytes())
    return h.hexdigest()[:16]


def one(args) -> dict:
    """One measurement in this (fresh) process; prints its JSON record."""
    import resource

    import fastbpe

    files = json.load(open(args.files))
    client = cluster = None
    if args.mode == "cluster":
        import distributed

        cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None, host="127.0.0.1")
        client = distributed.Client(cluster)
        client.wait_for_workers(args.workers)
        worker_pids = list(client.run(os.getpid).values())
    else:
        worker_pids = []
    tok = fastbpe.openai("cl100k_base", data_path("tokenizers", "tiktoken")) if args.phase == "encode" else None
    sampler = start_sampler(worker_pids)
    usage, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    self_cpu, kids_cpu = usage.ru_utime + usage.ru_stime, kids.ru_utime + kids.ru_stime
    target = {"cluster": client} if client is not None else {"workers": args.workers}
    out_dir = os.path.join(args.tmp, f"shards-{args.mode}")
    started = time.perf_counter()
    if args.phase == "count":
        table = fastbpe.count_words(files, "gpt2", progress=False, **target)
        back = table.data.nbytes + table.offsets.nbytes + table.counts.nbytes
        digest = table_digest(table)
    elif args.phase == "train":
        trained = fastbpe.train(files, args.vocab_size, progress=False, **target)
        back = None
        digest = hashlib.sha256(repr(trained.merges).encode()).hexdigest()[:16]
    else:
        if args.mode == "cluster":
            manifest = fastbpe.encode_files(tok, files, out_dir, fmt="raw", progress=False, cluster=client)
        else:
            manifest = fastbpe.encode_files(tok, files, out_dir, fmt="raw", progress=False, workers=args.workers)
        back = len(json.dumps(manifest))
        digest = None
    wall = time.perf_counter() - started
    usage, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    self_cpu = usage.ru_utime + usage.ru_stime - self_cpu
    sampled = stop_sampler(sampler)
    if client is not None:  # the workers live on: the change of their CPU time
        others_cpu = sum(sampled["cpu"].values())
    else:  # local worker processes have ended and been waited for (the sampler too: not counted)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        others_cpu = kids.ru_utime + kids.ru_stime - kids_cpu - sampled["own_cpu"]
    if args.phase == "encode":
        digest = stream_digest(out_dir)
        shutil.rmtree(out_dir)
    record = {"phase": args.phase, "mode": args.mode, "workers": args.workers, "wall": wall,
              "client_cpu": self_cpu, "worker_cpu": others_cpu, "client_peak_mb": peak_rss_mb(),
              "worker_peak_mb": sorted(round(v / 2**20) for v in sampled["peaks"].values()),
              "bytes_to_client": back, "digest": digest, "loadavg": os.getloadavg()}
    if client is not None:
        client.close()
        cluster.close()
    print(json.dumps(record))
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=1000, help="corpus size in MB (1000 = 1 GB)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (cluster) / processes or threads (local)")
    parser.add_argument("--phases", nargs="+", choices=PHASES, default=list(PHASES))
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--json", help="also write the records to this file")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--files", help=argparse.SUPPRESS)
    parser.add_argument("--tmp", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args)
        return
    tmp = tempfile.mkdtemp(prefix="fastbpe-cluster-bench-")
    try:
        files = make_corpus(tmp, args.mb)
        mb = sum(map(os.path.getsize, files)) / 1e6
        listing = os.path.join(tmp, "files.json")
        json.dump(files, open(listing, "w"))
        print(f"corpus: {mb:,.0f} MB in {len(files)} files; {args.workers} workers; load {os.getloadavg()}",
              flush=True)
        records = []
        for phase in args.phases:
            for mode in ("local", "cluster"):
                done = subprocess.run([sys.executable, __file__, "--one", "--phase", phase, "--mode", mode,
                                       "--workers", str(args.workers), "--files", listing, "--tmp", tmp,
                                       "--vocab-size", str(args.vocab_size)],
                                      capture_output=True, text=True)
                if done.returncode:
                    sys.exit(f"{phase} {mode} failed:\n{done.stderr[-3000:]}")
                record = json.loads(done.stdout.strip().splitlines()[-1])
                record["mb"] = mb
                records.append(record)
                print(json.dumps(record), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(f"{'phase':7} {'mode':8} {'wall s':>7} {'MB/s':>6} {'/worker':>7} {'cpu s':>7} {'cpu/wall':>8} "
          f"{'client MB':>9} {'worker MB':>12} {'to client':>10} {'vs local':>8}  digest")
    for r in records:
        local = next(x for x in records if x["phase"] == r["phase"] and x["mode"] == "local")
        cpu = r["client_cpu"] + r["worker_cpu"]
        back = "-" if r["bytes_to_client"] is None else f"{r['bytes_to_client'] / 1e6:.1f} MB"
        print(f"{r['phase']:7} {r['mode']:8} {r['wall']:7.1f} {r['mb'] / r['wall']:6.1f} "
              f"{r['mb'] / r['wall'] / r['workers']:7.1f} {cpu:7.1f} {cpu / r['wall']:8.2f} "
              f"{r['client_peak_mb']:9.0f} {'/'.join(map(str, r['worker_peak_mb'])) or '-':>12} {back:>10} "
              f"{r['wall'] / local['wall']:8.2f}  {r['digest']}")
    same = all(len({r["digest"] for r in records if r["phase"] == p}) == 1 for p in args.phases)
    print(f"identical results local vs cluster: {same}; load average now {os.getloadavg()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
