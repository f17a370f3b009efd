"""Skip-gram on token ids: fastbpe.analysis.skipgram against gensim's word2vec on the same ids.

    python benchmarks/scripts/bench_skipgram.py [--mb 2] [--rounds 2] [--tokenizer code.fastbpe.json]

A tokenizer trained on the first 10 MB of code.txt.gz (vocabulary 8,192; or ``--tokenizer``)
encodes the first ``--mb`` MB of english.txt.gz (blank-line-separated documents); both
libraries train one epoch of skip-gram with 5 negatives, window 5, width 64, one thread, no
subsampling of frequent tokens, on those ids (gensim sees each id as a word). Each run is a
fresh process, libraries alternated; the CPU time of the training call alone is measured.
Prints tokens per second, the final loss where the library reports one, and the nearest
neighbours of a few tokens in each. gensim is optional (``pip install gensim``); without it only
fastbpe's row is printed.
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout: its fastbpe, benchmarks.data

import numpy as np  # noqa: E402

import fastbpe  # noqa: E402

from benchmarks.data import data_path  # noqa: E402

PROBES = [" function", " the", " file", " value"]


def tokenizer(path):
    if path:
        return fastbpe.load(path)
    with gzip.open(data_path("code.txt.gz"), "rb") as f:
        code = f.read(10_000_000)
    return fastbpe.train(text=code[: code.rindex(b"\n") + 1].decode("utf-8"), vocab_size=8192, progress=False)


def documents(tok, mb):
    with gzip.open(data_path("english.txt.gz"), "rb") as f:
        data = f.read(int(mb * 1e6))
    text = data[: data.rindex(b"\n") + 1].decode("utf-8")
    return tok.encode_batch([b for b in text.split("\n\n") if b.strip()], workers=1, as_numpy=True)


def run_one(lib, args):
    tok = tokenizer(args.tokenizer)
    docs = documents(tok, args.mb)
    tokens = sum(map(len, docs))
    probes = [tok.encode(p)[0] for p in PROBES if len(tok.encode(p)) == 1]
    label = lambda i: tok.token_bytes[i].decode("utf-8", "backslashreplace")
    if lib == "fastbpe":
        from fastbpe.analysis import skipgram_ids

        skipgram_ids(docs[:3], len(tok.token_bytes) + len(tok.special_tokens), dim=8)  # compile or load the kernels
        started = time.process_time()
        emb = skipgram_ids(docs, len(tok.token_bytes) + len(tok.special_tokens), dim=64, window=5, negatives=5,
                           epochs=1, seed=0, threads=1)
        seconds = time.process_time() - started
        idx, _ = emb.neighbours(probes, k=5)
        neighbours = {label(p): [label(j) for j in row] for p, row in zip(probes, idx.tolist())}
        return {"lib": "fastbpe", "tokens": tokens, "seconds": seconds, "loss_end": emb.losses[-1][1],
                "neighbours": neighbours}
    import gensim
    from gensim.models import Word2Vec

    sentences = [[str(i) for i in d.tolist()] for d in docs]
    model = Word2Vec(vector_size=64, window=5, sg=1, hs=0, negative=5, min_count=1, sample=0, workers=1, seed=0)
    model.build_vocab(sentences)
    started = time.process_time()
    model.train(sentences, total_examples=len(sentences), epochs=1)
    seconds = time.process_time() - started
    neighbours = {}
    for p in probes:
        if str(p) in model.wv:
            neighbours[label(p)] = [label(int(w)) for w, _ in model.wv.most_similar(str(p), topn=5)]
    return {"lib": f"gensim {gensim.__version__}", "tokens": tokens, "seconds": seconds, "loss_end": None,
            "neighbours": neighbours}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokenizer", default=None)
    parser.add_argument("--only", choices=("fastbpe", "gensim"), default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        print(json.dumps(run_one(args.only, args)))
        return 0
    try:
        import gensim  # noqa: F401
        libs = ["fastbpe", "gensim"]
    except ImportError:
        print("gensim is not installed: fastbpe only", file=sys.stderr)
        libs = ["fastbpe"]
    print(f"load average {os.getloadavg()}")
    results = {lib: [] for lib in libs}
    for _ in range(args.rounds):
        for lib in libs:
            cmd = [sys.executable, __file__, "--only", lib, "--mb", str(args.mb)]
            if args.tokenizer:
                cmd += ["--tokenizer", args.tokenizer]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            results[lib].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print("| library | tokens | CPU s (best) | tokens/s |")
    print("|---|---|---|---|")
    best = {}
    for lib, runs in results.items():
        r = min(runs, key=lambda r: r["seconds"])
        best[lib] = r
        print(f"| {r['lib']} | {r['tokens']:,} | {r['seconds']:.2f} | {r['tokens'] / r['seconds']:,.0f} |")
    if len(best) == 2:
        print(f"\ngensim's speed / fastbpe's: {best['fastbpe']['seconds'] / best['gensim']['seconds']:.2f}")
    for lib, r in best.items():
        print(f"\n{r['lib']} nearest neighbours:")
        for token, row in r["neighbours"].items():
            print(f"  {token!r}: {row}")
    print(f"\nload average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
