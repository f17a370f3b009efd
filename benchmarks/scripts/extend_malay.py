"""The token tax of Malay and Indonesian when GPT-2 is extended with Malay merges, against a
tokenizer of the same size trained from scratch on English mixed with the same Malay text.

    python benchmarks/scripts/extend_malay.py [--merges 1000,5000,20000] [--english-mb 20] [--json OUT]

For each number of merges k: GPT-2 (encoder.json + vocab.bpe) extended by k merges learned on
malay.txt (``Tokenizer.extend``, min frequency 2), and a tokenizer trained from scratch with the
same vocabulary size (50,257 + k) on the first ``--english-mb`` MB of english.txt.gz plus
malay.txt. The premium of a language is Petrov et al. (2023)'s: its total tokens over the total
tokens of the English cells of the same rows of parallel_multi.tsv.gz (rows where en, ms and id
are all present). malay.txt holds the ms column's strings, so the ms figures are on text the
merges were learned from; Indonesian (id), a close relative never trained on, is the held-out
measure.
"""
import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout: its fastbpe, benchmarks.data

import fastbpe  # noqa: E402

from benchmarks.data import data_path  # noqa: E402

LANGS = ("en", "ms", "id")
_UNESCAPE = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def unescape(cell: str) -> str:
    out, i = [], 0
    while i < len(cell):
        if cell[i] == "\\" and i + 1 < len(cell) and cell[i + 1] in _UNESCAPE:
            out.append(_UNESCAPE[cell[i + 1]])
            i += 2
        else:
            out.append(cell[i])
            i += 1
    return "".join(out)


def parallel_rows():
    """The (en, ms, id) cells of every row where all three are present."""
    with gzip.open(data_path("parallel_multi.tsv.gz"), "rt", encoding="utf-8") as f:
        header = next(f).rstrip("\n").split("\t")
        cols = [header.index(lang) for lang in LANGS]
        rows = []
        for line in f:
            cells = line.rstrip("\n").split("\t")
            picked = [cells[c] if c < len(cells) else "" for c in cols]
            if all(picked):
                rows.append([unescape(c) for c in picked])
    return rows


def token_counts(tok, rows):
    counts = {}
    for j, lang in enumerate(LANGS):
        ids = tok.encode_batch([r[j] for r in rows], workers=1, disallowed_special=())
        counts[lang] = sum(map(len, ids))
    return counts


def premiums(counts):
    return {lang: counts[lang] / counts["en"] for lang in LANGS[1:]}


def ids_in_use(tok) -> int:
    """Distinct ids (ordinary and special); ``vocab_size`` counts a special token twice when
    its id lies inside the token table, as GPT-2's does once merges follow it."""
    return len(tok.vocab)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--merges", default="1000,5000,20000")
    parser.add_argument("--english-mb", type=float, default=20.0)
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args()
    ks = [int(k) for k in args.merges.split(",")]
    d = "tokenizers"
    gpt2 = fastbpe.Tokenizer.from_gpt2(data_path(d, "encoder.json"), data_path(d, "vocab.bpe"))
    malay = data_path("malay.txt")
    with gzip.open(data_path("english.txt.gz"), "rb") as f:
        english = f.read(int(args.english_mb * 1e6))
    english = english[: english.rindex(b"\n") + 1].decode("utf-8")
    malay_text = malay.read_text(encoding="utf-8")
    rows = parallel_rows()
    print(f"rows with en, ms and id: {len(rows):,}; malay.txt {len(malay_text.encode()) / 1e6:.2f} MB; "
          f"English for the mix: {len(english.encode()) / 1e6:.1f} MB; load average {os.getloadavg()}")
    results = []
    base = token_counts(gpt2, rows)
    results.append({"tokenizer": "GPT-2", "merges_added": 0, "vocab_size": ids_in_use(gpt2), "tokens": base,
                    "premium": premiums(base)})
    table = fastbpe.count_words(malay, pattern="gpt2", workers=1, progress=False)
    mix = fastbpe.count_words(iter([english, malay_text]), pattern="gpt2", workers=1, progress=False)
    for k in ks:
        started = time.process_time()
        extended = gpt2.extend(table, k, min_frequency=2, progress=False)
        seconds = time.process_time() - started
        counts = token_counts(extended, rows)
        added = extended.training_stats["merges"]
        results.append({"tokenizer": f"GPT-2 + {added:,} Malay merges", "merges_added": added,
                        "vocab_size": ids_in_use(extended), "tokens": counts, "premium": premiums(counts),
                        "cpu_seconds_extend": seconds})
        scratch = fastbpe.train(mix, vocab_size=ids_in_use(gpt2) + added, special_tokens=["<|endoftext|>"],
                                progress=False)
        counts = token_counts(scratch, rows)
        results.append({"tokenizer": f"from scratch, English+Malay, vocab {ids_in_use(scratch):,}",
                        "merges_added": added, "vocab_size": ids_in_use(scratch), "tokens": counts,
                        "premium": premiums(counts)})
    print()
    print("| tokenizer | vocab | en tokens | ms tokens | id tokens | ms premium | id premium |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        t, p = r["tokens"], r["premium"]
        print(f"| {r['tokenizer']} | {r['vocab_size']:,} | {t['en']:,} | {t['ms']:,} | {t['id']:,} | "
              f"{p['ms']:.3f} | {p['id']:.3f} |")
    print(f"\nload average {os.getloadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": len(rows), "english_mb": args.english_mb,
                                               "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
