"""``fastbpe train``: count a corpus, learn merges, write the tokenizer and a summary.

With no files it trains on a corpus every machine has: the source files of the running Python's
standard library.
"""
import argparse
import glob
import os
import sys
import sysconfig
import time
from pathlib import Path
from typing import List

from ..corpus.files import expand_paths
from ..learn.train import train

__all__ = ["default_corpus", "add_train_subcommand"]


def default_corpus() -> List[Path]:
    """The ``.py`` files of this Python's standard library (site-packages excluded), sorted so
    that every run sees the same corpus in the same order."""
    stdlib = sysconfig.get_paths()["stdlib"]
    files = glob.glob(os.path.join(stdlib, "**", "*.py"), recursive=True)
    skip = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
    return sorted(Path(f) for f in files if not any(s in f for s in skip))


def _printable(token) -> str:
    if isinstance(token, bytes):
        text = token.decode("utf-8", "backslashreplace")
    else:
        text = token
    return repr(text)


def _cmd_train(args: argparse.Namespace) -> int:
    files = expand_paths(args.files) if args.files else default_corpus()
    if not files:
        raise SystemExit("fastbpe: no input files")
    source = f"{len(files)} files" if args.files else f"the standard library ({len(files)} files)"
    print(f"fastbpe train: {source}, vocab size {args.vocab_size}, pattern {args.pattern}",
          file=sys.stderr)
    started = time.perf_counter()
    tokenizer = train(
        files,
        args.vocab_size,
        unit=args.unit,
        pattern=args.pattern,
        min_frequency=args.min_frequency,
        special_tokens=args.special_tokens,
        progress=False if args.quiet else None,
        workers=args.workers,
        errors=args.errors,
    )
    trained = time.perf_counter()
    tokenizer.save(args.out)
    saved = time.perf_counter()
    stats = tokenizer.training_stats
    mb = stats["input_bytes"] / 1e6
    total = saved - started
    lines = [
        f"input           {mb:,.1f} MB in {len(files)} files, {stats['input_chunks']:,} chunks",
        f"unique chunks   {stats['unique_chunks']:,}",
        f"merges          {stats['merges']:,} (vocab size {tokenizer.vocab_size:,})",
        f"count           {stats['seconds_count']:8.2f} s   {mb / max(stats['seconds_count'], 1e-9):8.1f} MB/s",
        f"prepare         {stats['seconds_prepare']:8.2f} s",
        f"merge           {stats['seconds_merge']:8.2f} s   "
        f"{stats['merges'] / max(stats['seconds_merge'], 1e-9):8.0f} merges/s",
        f"save            {saved - trained:8.2f} s",
        f"total           {total:8.2f} s   {mb / max(total, 1e-9):8.1f} MB/s end to end",
        f"compression     {stats['input_bytes'] / max(stats['corpus_tokens'], 1):.3f} bytes/token "
        f"({stats['corpus_tokens']:,} tokens on the training corpus)",
        "first merges    " + ", ".join(
            f"{_printable(a)}+{_printable(b)}" for a, b in tokenizer.merges[:10]),
        f"wrote           {args.out}",
    ]
    print("\n".join(lines))
    return 0


def add_train_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``fastbpe train [FILES] --vocab-size N --out PATH``."""
    t = subparsers.add_parser("train", help="learn a BPE tokenizer from text files")
    t.add_argument("files", nargs="*", help="files, directories or globs (default: the stdlib sources)")
    t.add_argument("--vocab-size", type=int, default=8192, help="target vocabulary size (default 8192)")
    t.add_argument("--out", default="tokenizer.json", help="where to write the tokenizer (default tokenizer.json)")
    t.add_argument("--unit", choices=("bytes", "chars"), default="bytes")
    t.add_argument("--pattern", "--pretokenizer", dest="pattern", default="gpt2",
                   help="the split pattern: a name (gpt2, cl100k, o200k, llama3, whitespace) or a regex (default gpt2)")
    t.add_argument("--min-frequency", type=int, default=2)
    t.add_argument("--special-tokens", nargs="*", default=[], metavar="TOKEN")
    t.add_argument("--workers", type=int, default=None, help="counting processes (default: all cores)")
    t.add_argument("--errors", choices=("strict", "replace"), default="replace",
                   help="invalid UTF-8 in the input: fail, or replace with U+FFFD (default)")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    t.set_defaults(run=_cmd_train)
    return t
