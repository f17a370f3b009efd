"""Long pieces (megabytes with no split point) against the linear-time BPE of rs-bpe and bpe-openai.

    flock /tmp/fastbpe-bench.lock python benchmarks/scripts/bench_long_pieces.py [--mb 1] [--repeat 3]

Each piece is one pre-token for every built-in pattern: one letter, "ab" repeated, random
letters, random DNA (ACGT), the letters of English text with everything else left out, and the
Han characters of the Chinese column of the multilingual table. Every cell runs in a fresh
process that loads the library, builds its tables (fastbpe's backtracking tables are built
before the timing: rs-bpe and bpe-openai build theirs at load), encodes the piece once untimed
and then ``--passes`` times; the fastest pass counts, in MB/s of CPU time. The libraries are
alternated, their order flipped each round, and the best of ``--repeat`` rounds is kept. The
ids of every library are compared with fastbpe's (a hash of them). Printed with the load average.

Needs the shared data (FASTBPE_DATA, default ../shared/data) for the rank files and the two
pieces cut from text; rs-bpe and bpe-openai are optional (``pip install rs_bpe bpe-openai``) and
left out with a message when absent.
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout: its fastbpe, benchmarks.data

from benchmarks.data import data_path, first_lines, text_slice  # noqa: E402

KINDS = ["one letter", "ab repeated", "random letters", "DNA", "English letters", "Chinese"]
LIBRARIES = {"fastbpe": "fastbpe", "rs-bpe": "rs_bpe", "bpe-openai": "bpe_openai"}


def piece(kind: str, size: int) -> str:
    """``size`` bytes (about, for Chinese: whole characters) of one kind of long piece."""
    import numpy as np

    rng = np.random.default_rng(0)
    if kind == "one letter":
        return "a" * size
    if kind == "ab repeated":
        return "ab" * (size // 2)
    if kind in ("random letters", "DNA"):
        alphabet = b"abcdefghijklmnopqrstuvwxyz" if kind == "random letters" else b"ACGT"
        return rng.choice(np.frombuffer(alphabet, np.uint8), size).tobytes().decode("ascii")
    if kind == "English letters":
        return re.sub(r"[^A-Za-z]+", "", text_slice("english.txt.gz", 2 * size))[:size]
    rows = [line.split("\t") for line in first_lines("parallel_multi.tsv.gz", 20000)]
    column = rows[0].index("zh_CN")
    han = "".join(re.findall(r"[\u4e00-\u9fff]+", "".join(row[column] for row in rows[1:] if len(row) > column)))
    while len(han.encode("utf-8")) < size:
        han += han
    return han[: size // 3]


def encoder(lib: str, encoding: str):
    """The library's encoder of ``encoding`` (a function of str to ids), tables built."""
    if lib == "fastbpe":
        import fastbpe

        tok = fastbpe.openai(encoding, data_path("tokenizers", "tiktoken", f"{encoding}.tiktoken"))
        info = tok._core().backtracking()
        if not info["usable"]:
            raise SystemExit(f"fastbpe cannot backtrack {encoding}: {info}")
        return tok.encode_to_numpy
    if lib == "rs-bpe":
        from rs_bpe.bpe import openai

        return getattr(openai, encoding)().encode
    import bpe_openai

    return bpe_openai.get_encoding(encoding).encode_ordinary


def child(lib: str, encoding: str, kind: str, size: int, passes: int) -> dict:
    text = piece(kind, size)
    encode = encoder(lib, encoding)
    try:
        ids = encode(text)  # (untimed: first touches)
    except Exception as e:  # (bpe-openai refuses long inputs: "Input too long to encode safely")
        return {"error": f"{type(e).__name__}: {e}"}
    best = float("inf")
    for _ in range(passes):
        start = time.process_time()
        encode(text)
        best = min(best, time.process_time() - start)
    digest = hashlib.sha1(bytes(json.dumps([int(i) for i in ids]), "ascii")).hexdigest()[:12]
    return {"mbps": len(text.encode("utf-8")) / best / 1e6, "ids": digest, "count": len(ids)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=1.0, help="MB per piece")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--passes", type=int, default=3, help="timed passes per process (the fastest counts)")
    parser.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    parser.add_argument("--kinds", nargs="+", default=KINDS, choices=KINDS)
    parser.add_argument("--child", nargs=3, metavar=("LIB", "ENCODING", "KIND"))
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    if args.child:
        print(json.dumps(child(*args.child, size, args.passes)))
        return
    libs = []
    for lib, module in LIBRARIES.items():
        try:
            __import__(module)
            libs.append(lib)
        except ImportError:
            print(f"{lib}: not installed ({module}), left out")
    best = {}
    for round_ in range(args.repeat):
        for encoding in args.encodings:
            for kind in args.kinds:
                for lib in libs if round_ % 2 == 0 else libs[::-1]:
                    out = subprocess.run([sys.executable, __file__, "--child", lib, encoding, kind, "--mb", str(args.mb),
                                          "--passes", str(args.passes)], check=True, capture_output=True, text=True)
                    got = json.loads(out.stdout.strip().splitlines()[-1])
                    key = (encoding, kind, lib)
                    if key not in best or got.get("mbps", 0) > best[key].get("mbps", 0):
                        best[key] = got
    print(f"load average {os.getloadavg()}; {args.mb:g} MB per piece; MB/s of CPU time, best of {args.repeat} fresh "
          f"processes x {args.passes} passes; ratio: fastbpe / the library")
    print(f"{'encoding':12s} {'piece':16s} " + " ".join(f"{lib:>22s}" for lib in libs))
    refusals = set()
    for encoding in args.encodings:
        for kind in args.kinds:
            cells = []
            ours = best[(encoding, kind, "fastbpe")]
            for lib in libs:
                got = best[(encoding, kind, lib)]
                if "error" in got:
                    cells.append("refused")
                    refusals.add(f"{lib}: {got['error']}")
                    continue
                same = "" if got["ids"] == ours["ids"] else " ids DIFFER"
                ratio = "" if lib == "fastbpe" else f" ({ours['mbps'] / got['mbps']:.2f}x)"
                cells.append(f"{got['mbps']:.1f}{ratio}{same}")
            print(f"{encoding:12s} {kind:16s} " + " ".join(f"{c:>22s}" for c in cells))
    for refusal in sorted(refusals):
        print(f"refused: {refusal}")


if __name__ == "__main__":
    main()
