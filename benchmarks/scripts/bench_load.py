"""Loading real tokenizer files: fastbpe against each file's own library, in fresh processes.

For each file (cl100k and o200k ``.tiktoken``, llama3's and qwen3's ``tokenizer.json``) and each library,
a fresh Python process imports the library (and the modules its loader needs), then times (CPU
time, ``time.process_time``) the load and the first encode of a short text; the last column adds
the import, what a fresh process pays in all (from compiled bytecode, as an installed package
imports: a first run of each library, not counted, writes it); runs alternate between the libraries so that both see the
same machine load, and the median of ``--runs`` is reported with the ratio and the load average.
The peers: tiktoken for ``.tiktoken`` files; ``tokenizers`` and gigatoken (when installed) for
``tokenizer.json`` files and GPT-2's ``encoder.json`` + ``vocab.bpe`` (which ``tokenizers``
loads as a BPE model with GPT-2's byte-level steps, fastbpe with :func:`fastbpe.load`).
``--checkouts A B``: fastbpe from each of these project checkouts (built in place), alternated
too, to measure a change before and after. Take it under ``flock /tmp/fastbpe-bench.lock`` on a
shared machine:

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
    elif kind == "gpt2":
        fastbpe.load
        load = lambda: fastbpe.load(path)
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
elif impl == "gigatoken":
    import gigatoken
    load = lambda: gigatoken.Tokenizer(path)
    encode = lambda tok, text: tok.encode(text)
elif kind == "gpt2":
    import tokenizers, tokenizers.models, tokenizers.pre_tokenizers, tokenizers.decoders
    def load():
        tok = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(path + "/encoder.json", path + "/vocab.bpe"))
        tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = tokenizers.decoders.ByteLevel()
        return tok
    encode = lambda tok, text: tok.encode(text, add_special_tokens=False).ids
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


# As an installed package runs: from its compiled bytecode. With PYTHONDONTWRITEBYTECODE set (as
# on some CI machines), a pure-Python package would compile its modules in every fresh process,
# which the import column would count (about 50 ms of fastbpe's; none of a compiled peer's).
CHILD_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def run_once(impl: str, kind: str, path: str, repo: Path = REPO) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, impl, kind, path, str(repo)], check=True,
                         capture_output=True, text=True, env=CHILD_ENV).stdout
    return json.loads(out.strip().splitlines()[-1])


def installed(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per library and file")
    parser.add_argument("--files", nargs="+", help="only these files (names of the first column)")
    parser.add_argument("--checkouts", nargs="+", type=Path, default=[REPO],
                        help="fastbpe from each of these checkouts (the first is the ratios' base)")
    args = parser.parse_args()
    json_peers = ["tokenizers"] + (["gigatoken"] if installed("gigatoken") else [])
    files = [("cl100k_base", "tiktoken", "tokenizers/tiktoken/cl100k_base.tiktoken", ["tiktoken"]),
             ("o200k_base", "tiktoken", "tokenizers/tiktoken/o200k_base.tiktoken", ["tiktoken"]),
             ("gpt2", "gpt2", "tokenizers/encoder.json", ["tokenizers"]),
             ("llama3", "hf", "tokenizers/llama3/tokenizer.json", json_peers),
             ("qwen3", "hf", "tokenizers/qwen3/tokenizer.json", json_peers)]
    print(f"load average before: {os.getloadavg()}")
    print(f"{'file':12} {'library':24} {'load':>8} {'ratio':>6} {'load+1st':>9} {'ratio':>6} "
          f"{'with import':>12} {'ratio':>6}")
    for name, kind, relative, peers in files:
        if args.files and name not in args.files:
            continue
        try:
            path = str(shared_data.data_path(*relative.split("/")))
        except shared_data.MissingData as exc:
            print(f"{name}: skipped ({exc})")
            continue
        if kind == "gpt2":
            path = str(Path(path).parent)  # the folder holding encoder.json and vocab.bpe
        impls = [(f"fastbpe {c.name}" if len(args.checkouts) > 1 else "fastbpe", "fastbpe", c)
                 for c in args.checkouts] + [(peer, peer, REPO) for peer in peers]
        times: dict = {label: [] for label, _, _ in impls}
        for _, impl, repo in impls:  # (a first run, not counted, writes the bytecode)
            run_once(impl, kind, path, repo)
        for _ in range(args.runs):
            for label, impl, repo in impls:  # alternated: all see the same machine load
                times[label].append(run_once(impl, kind, path, repo))
        med = {label: {key: statistics.median(t[key] for t in runs) for key in ("load", "first", "all")}
               for label, runs in times.items()}
        base = med[impls[0][0]]
        for label, m in med.items():
            print(f"{name:12} {label:24} {m['load']:7.3f}s {m['load'] / base['load']:5.2f}x "
                  f"{m['first']:8.3f}s {m['first'] / base['first']:5.2f}x "
                  f"{m['all']:11.3f}s {m['all'] / base['all']:5.2f}x")
    print(f"load average after: {os.getloadavg()}")
    print(f"CPU time, medians of {args.runs} fresh processes; ratio = the row's time / {impls[0][0]}'s "
          "(above 1: slower than it)")


if __name__ == "__main__":
    main()
