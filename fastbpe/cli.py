"""The ``fastbpe`` command.

``fastbpe train`` with no files trains on a corpus every machine has: the source files of the
running Python's standard library.
"""
import argparse
import glob
import os
import sys
import sysconfig
import time
from pathlib import Path
from typing import List, Optional, Sequence

__all__ = ["main", "default_corpus"]


def default_corpus() -> List[Path]:
    """The ``.py`` files of this Python's standard library (site-packages excluded), sorted so
    that every run sees the same corpus in the same order."""
    stdlib = sysconfig.get_paths()["stdlib"]
    files = glob.glob(os.path.join(stdlib, "**", "*.py"), recursive=True)
    skip = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
    return sorted(Path(f) for f in files if not any(s in f for s in skip))


def _expand(paths: Sequence[str]) -> List[Path]:
    out: List[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(q for q in path.rglob("*") if q.is_file()))
        elif path.is_file():
            out.append(path)
        else:
            matches = sorted(glob.glob(p, recursive=True))
            if not matches:
                raise SystemExit(f"fastbpe: {p}: no such file, directory or glob match")
            out.extend(Path(m) for m in matches)
    return out


def _printable(token) -> str:
    if isinstance(token, bytes):
        text = token.decode("utf-8", "backslashreplace")
    else:
        text = token
    return repr(text)


def _cmd_train(args: argparse.Namespace) -> int:
    from .training import train

    files = _expand(args.files) if args.files else default_corpus()
    if not files:
        raise SystemExit("fastbpe: no input files")
    source = f"{len(files)} files" if args.files else f"the standard library ({len(files)} files)"
    print(f"fastbpe train: {source}, vocab size {args.vocab_size}, pretokenizer {args.pretokenizer}",
          file=sys.stderr)
    started = time.perf_counter()
    tokenizer = train(
        files,
        args.vocab_size,
        unit=args.unit,
        pretokenizer=args.pretokenizer,
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fastbpe", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="learn a BPE tokenizer from text files")
    t.add_argument("files", nargs="*", help="files, directories or globs (default: the stdlib sources)")
    t.add_argument("--vocab-size", type=int, default=8192, help="target vocabulary size (default 8192)")
    t.add_argument("--out", default="tokenizer.json", help="where to write the tokenizer (default tokenizer.json)")
    t.add_argument("--unit", choices=("bytes", "chars"), default="bytes")
    t.add_argument("--pretokenizer", default="gpt2", help="a named pattern or a regex (default gpt2)")
    t.add_argument("--min-frequency", type=int, default=2)
    t.add_argument("--special-tokens", nargs="*", default=[], metavar="TOKEN")
    t.add_argument("--workers", type=int, default=None, help="counting processes (default: all cores)")
    t.add_argument("--errors", choices=("strict", "replace"), default="replace",
                   help="invalid UTF-8 in the input: fail, or replace with U+FFFD (default)")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    t.set_defaults(run=_cmd_train)
    from .shards import add_encode_subcommand

    add_encode_subcommand(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, OSError) as exc:
        print(f"fastbpe: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
