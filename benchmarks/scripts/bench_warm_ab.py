"""Time the warm encode pass of this checkout's compiled encoder against another built
checkout's, both loaded into one process.

    python benchmarks/scripts/bench_warm_ab.py ../main                          # cl100k, 10 MB of english.txt.gz
    python benchmarks/scripts/bench_warm_ab.py ../main --model llama3 --reps 9
    python benchmarks/scripts/bench_warm_ab.py ../main --text code.txt.gz --mb 5
    python benchmarks/scripts/bench_warm_ab.py ../main --lines                  # each line a text

A is the other checkout (its fastbpe/_core/encode extension, built in place, loaded under
another module name), B this one. Both encode the same text with the same vocabulary through
``BPECore.encode_text`` (the split-and-encode loop, single thread), or with ``--lines`` its
lines as strs through ``BPECore.encode_str_many`` (what ``encode_batch`` of many short texts
runs), each with its own chunk cache: a first (cold) pass and one more to let the short-chunk cache settle, then --reps warm
passes each, alternated A, B, A, B. Prints each pass's MB/s of CPU time and the median of the
B/A ratios of neighbouring passes. On a shared machine separate processes with the same code
differ by up to 1.5x (the machine's state flips within seconds), while in one process A
against an identical B gives a median within about 1% (0.94-1.11 per pair). Checks that A and
B give the same ids. Both builds must share the Python layer's interface to BPECore (the
arguments of its constructor).
"""
import argparse
import gzip
import importlib.machinery
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)  # this checkout: fastbpe and benchmarks.data

import numpy as np  # noqa: E402

import fastbpe  # noqa: E402
import fastbpe.encode.model as model_module  # noqa: E402
from benchmarks.data import data_path  # noqa: E402
from fastbpe._core.encode import EncodeState  # noqa: E402
from fastbpe.split.patterns import TABLE  # noqa: E402

MODELS = {"cl100k_base": "cl100k", "o200k_base": "o200k", "llama3": "llama3"}  # model -> its pattern


def load_other_encoder(checkout: str):
    """The other checkout's compiled encode module, under a name of its own."""
    found = sorted(Path(checkout, "fastbpe", "_core").glob("encode.*.so")) + sorted(
        Path(checkout, "fastbpe", "_core").glob("encode.*.pyd"))
    if not found:
        raise SystemExit(f"no built encode extension in {checkout}/fastbpe/_core (build it in place first)")
    name = "other_checkout.encode"  # (the last part must be the module's own: its init function)
    loader = importlib.machinery.ExtensionFileLoader(name, str(found[0]))
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, found[0], loader=loader))
    loader.exec_module(module)
    return module


def tokenizer(model: str):
    if model == "llama3":
        return fastbpe.Tokenizer.from_huggingface(str(data_path("tokenizers", "llama3", "tokenizer.json")))
    return fastbpe.openai(model, str(data_path("tokenizers", "tiktoken", f"{model}.tiktoken")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("other", help="a checkout whose extensions are built in place (A)")
    ap.add_argument("--model", choices=sorted(MODELS), default="cl100k_base")
    ap.add_argument("--text", default="english.txt.gz", help="gzipped text of the shared data (default english.txt.gz)")
    ap.add_argument("--file", help="a plain UTF-8 file to encode instead of --text")
    ap.add_argument("--mb", type=float, default=10.0, help="MB of the text to encode (default 10)")
    ap.add_argument("--reps", type=int, default=6, help="warm passes of each (default 6)")
    ap.add_argument("--lines", action="store_true", help="encode each line as a text of its own")
    args = ap.parse_args()

    limit = int(args.mb * 1e6)
    if args.file:
        data = Path(args.file).read_bytes()[:limit]
    else:
        with gzip.open(data_path(args.text), "rb") as f:
            data = f.read(limit)
    data = data[:data.rfind(b"\n") + 1] or data  # (whole lines: no character cut in two)

    tok = tokenizer(args.model)
    other = load_other_encoder(args.other)
    core_b = tok._core()
    with mock.patch.object(model_module, "BPECore", other.BPECore):  # the same tables, A's code
        core_a = tok.model._build_core()
    pattern = TABLE[MODELS[args.model]].scanner
    state_a, state_b = other.EncodeState(), EncodeState()

    lines = data.decode("utf-8").splitlines(keepends=True) if args.lines else None

    def timed(core, state):
        t = time.process_time()
        if lines is None:
            ids = core.encode_text(data, pattern, state)
        else:
            ids, ends, _ = core.encode_str_many(lines, pattern, state)
            ids = np.concatenate([ids, ends])  # (each text's ids compared too)
        return len(data) / 1e6 / (time.process_time() - t), ids

    for _ in range(2):  # cold, then one pass for the short-chunk cache to settle
        _, ids_a = timed(core_a, state_a)
        _, ids_b = timed(core_b, state_b)
        if not np.array_equal(ids_a, ids_b):
            raise SystemExit("A and B give different ids")
    speed_a, speed_b = [], []
    for _ in range(args.reps):
        speed_a.append(timed(core_a, state_a)[0])
        speed_b.append(timed(core_b, state_b)[0])
    ratios = [b / a for a, b in zip(speed_a, speed_b)]
    what = f"{len(lines):,} lines as texts" if args.lines else "one text"
    print(f"{args.model}, {len(data) / 1e6:.1f} MB of {args.file or args.text} ({what}), warm passes, MB/s of CPU time")
    print("A (" + args.other + "): " + " ".join(f"{x:.0f}" for x in speed_a))
    print("B (this checkout): " + " ".join(f"{x:.0f}" for x in speed_b))
    print(f"B/A: median {statistics.median(ratios):.3f} (from {min(ratios):.3f} to {max(ratios):.3f}); "
          f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
