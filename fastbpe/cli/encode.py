"""``fastbpe encode``: stream text files through a tokenizer into token shards.

Files, folders and globs are read as ``fastbpe train`` reads them (plain, .gz, .xz, .bz2, .zst,
recognised by content); see :func:`fastbpe.shards.encode_files`.
"""
import argparse
import sys

from ..encode.loading import load
from ..shards import DOCUMENTS, FORMATS, encode_files

__all__ = ["add_encode_subcommand"]


def _cmd_encode(args: argparse.Namespace) -> int:
    try:
        tokenizer = load(args.tokenizer)
    except (ValueError, OSError) as exc:
        print(f"fastbpe encode: {exc}", file=sys.stderr)
        return 2
    try:
        manifest = encode_files(tokenizer, args.files, args.out, shard_size=args.shard_size, fmt=args.format,
                                workers=args.workers, progress=False if args.quiet else None,
                                documents=args.documents,
                                separator=None if args.no_separator else args.separator,
                                resume=not args.no_resume)
    except (ValueError, OSError, ImportError) as exc:  # bad input, a missing file, .zst without zstandard
        print(f"fastbpe encode: {exc}", file=sys.stderr)
        return 2
    print(f"fastbpe encode: {manifest['tokens']:,} tokens in {len(manifest['shards'])} shards in {args.out}",
          file=sys.stderr)
    return 0


def add_encode_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``fastbpe encode FILES --tokenizer T --out DIR`` on an argparse subparsers object."""
    p = subparsers.add_parser("encode", help="encode text files into token shards (.npy or .bin)",
                              description="Stream text files (plain, .gz, .xz, .bz2 or .zst) through a "
                                          "tokenizer into fixed-size token shards; rerunning resumes.")
    p.add_argument("files", nargs="+", help="text files, folders or globs")
    p.add_argument("--tokenizer", "-t", required=True,
                   help="a fastbpe tokenizer file, a Hugging Face tokenizer.json, or an OpenAI {name}.tiktoken")
    p.add_argument("--out", "-o", required=True, help="output folder")
    p.add_argument("--shard-size", type=int, default=100_000_000, help="ids per shard (default 1e8)")
    p.add_argument("--format", choices=FORMATS, default="npy")
    p.add_argument("--documents", choices=DOCUMENTS, default="file", help="what one document is")
    p.add_argument("--separator", default="<|endoftext|>", help="special token between documents")
    p.add_argument("--no-separator", action="store_true", help="put nothing between documents")
    p.add_argument("--workers", type=int, default=None, help="encoding threads (default: all cores)")
    p.add_argument("--no-resume", action="store_true", help="fail instead of resuming a previous run")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.set_defaults(run=_cmd_encode)
    return p
