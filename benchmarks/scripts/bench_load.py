"""Loading real tokenizer files: fastbpe against each file's own library, in fresh processes.

For each file (cl100k and o200k ``.tiktoken``, llama3's and qwen3's ``tokenizer.json``) and each library,
a fresh Python process imports the library (and the modules its loader needs), then times (CPU
time, ``time.process_time``) the load and the first encode of a short text; the last column adds
the import, what a fresh process pays in all; runs alternate between the libraries so that both see the
same machine load, and the median of ``--runs`` is reported with the ratio and the load average.
Take it under ``flock /tmp/fastbpe-bench.lock`` on a shared machine:

    flock /tmp/fastbpe-bench.lock python -m benchmarks.scripts.bench_load --runs 5
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks import data as shared_data  # noqa: E402

CHILD = r"""
import json, sys, time
impl, kind, path = sys.argv[1:4]
start = time.process_time()
if impl == "fastbpe":
    sys.path.insert(0, sys.argv[4])
    import fastbpe
    if kind == "tiktoken":
        fastbpe.openai  # (fastbpe imports its modules on first use: here, outside the load's timer)
        load = lambda: fastbpe.openai(path.rsplit("/", 1)[-1][:-len(".tiktoken")], path)
    else:
        fastbpe.Tokenizer.from_huggingface
        load = lambda: fastbpe.Tokenizer.from_huggingface(path)
    encode = lambda tok, text: tok.encode_ordinary(text)
elif impl == "tiktoken":
    sys.path.insert(0, sys.argv[4])
    import tiktoken, tiktoken.load, tiktoken_ext.openai_public
    from benchmarks.suites.common import tiktoken_encoding  # tiktoken's own spec, ranks from the file
    load = lambda: tiktoken_encoding(path.rsplit("/", 1)[-1][:-len(".tiktoken")])
    encode = lambda tok, text: tok.encode_ordinary(text)
else:
    import tokenizers
    load = lambda: tokenizers.Tokenizer.from_file(path)
    encode = lambda tok, text: tok.encode(text, add_special_tokens=False).ids
imported = time.process_time()
tok = load()
loaded = time.process_time()
encode(tok, "hello world, 12345 numbers")
done = time.process_time()
print(json.dumps({"load": loaded - imported, "first": done - imported, "all": done - start}))
"""


def run_once(impl: str, kind: str, path: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, impl, kind, path, str(REPO)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per library and file")
    args = parser.parse_args()
    files = [("cl100k_base", "tiktoken", "tokenizers/tiktoken/cl100k_base.tiktoken", "tiktoken"),
             ("o200k_base", "tiktoken", "tokenizers/tiktoken/o200k_base.tiktoken", "tiktoken"),
             ("llama3", "hf", "tokenizers/llama3/tokenizer.json", "tokenizers"),
             ("qwen3", "hf", "tokenizers/qwen3/tokenizer.json", "tokenizers")]
    print(f"load average before: {os.getloadavg()}")
    print(f"{'file':12} {'peer':10} {'fastbpe load':>13} {'peer load':>10} {'ratio':>6} "
          f"{'fastbpe +1st':>13} {'peer +1st':>10} {'ratio':>6} {'with import':>13} {'peer':>9} {'ratio':>6}")
    for name, kind, relative, peer in files:
        try:
            path = str(shared_data.data_path(*relative.split("/")))
        except shared_data.MissingData as exc:
            print(f"{name}: skipped ({exc})")
            continue
        times = {"fastbpe": [], peer: []}
        for _ in range(args.runs):
            for impl in ("fastbpe", peer):  # alternated: both see the same machine load
                times[impl].append(run_once(impl, kind, path))
        med = {impl: {key: statistics.median(t[key] for t in runs) for key in ("load", "first", "all")}
               for impl, runs in times.items()}
        f, p = med["fastbpe"], med[peer]
        print(f"{name:12} {peer:10} {f['load']:12.3f}s {p['load']:9.3f}s {p['load'] / f['load']:5.2f}x "
              f"{f['first']:12.3f}s {p['first']:9.3f}s {p['first'] / f['first']:5.2f}x "
              f"{f['all']:12.3f}s {p['all']:9.3f}s {p['all'] / f['all']:5.2f}x")
    print(f"load average after: {os.getloadavg()}")
    print("ratio = peer CPU time / fastbpe CPU time (above 1: fastbpe is faster); medians of", args.runs)


if __name__ == "__main__":
    main()
