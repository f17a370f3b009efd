"""``fastbpe encode``: stream text files through a tokenizer into token shards.

Files, folders and globs are read as ``fastbpe train`` reads them (plain, .gz, .xz, .bz2, .zst,
recognised by content); see :func:`fastbpe.shards.encode_files` for the shard formats.
"""
import argparse
import json
import sys

from ..corpus.files import input_files
from ..encode.registry import resolve_tokenizer
from ..shards import DEFAULT_BLOCK_SIZE, DOCUMENTS, FORMATS, encode_files, output_folder, separator_id
from .options import add_scheduler_option, count_of, int_at_least, size_arg

DEFAULT_SEPARATOR = "<|endoftext|>"

__all__ = ["add_encode_subcommand"]


def _summary(args: argparse.Namespace, manifest: dict) -> dict:
    run = manifest.get("run") or {"seconds": 0.0, "file_bytes": 0, "text_bytes": 0, "tokens": 0}
    seconds = max(run["seconds"], 1e-9)
    return {
        "command": "encode",
        "out": args.out,
        "format": manifest.get("format", args.format),
        "dtype": manifest.get("dtype"),
        "shards": len(manifest["shards"]),
        "tokens": manifest["tokens"],
        "complete": manifest["complete"],
        "run": {**run, "mb_per_second": run["text_bytes"] / 1e6 / seconds,
                "tokens_per_second": run["tokens"] / seconds,
                "resumed": "run" not in manifest or run["tokens"] != manifest["tokens"]},
    }


def _cmd_encode(args: argparse.Namespace) -> int:
    if args.partition_size is not None and args.scheduler is None:
        raise ValueError("--partition-size needs --scheduler")
    output_folder(args.out, args.files, "--out")  # (before the tokenizer loads: said with the option's name)
    tokenizer = resolve_tokenizer(args.tokenizer)
    separator = None if args.no_separator else DEFAULT_SEPARATOR if args.separator is None else args.separator
    if args.separator is None and separator not in tokenizer.special_tokens and args.documents == "file" \
            and len(input_files(args.files)) == 1:
        separator = None  # (one document: nothing to separate, so the default the tokenizer lacks is no matter)
    if separator is not None:  # (checked before encode_files makes the output folder)
        separator_id(tokenizer, separator, str(args.tokenizer), "--no-separator, or --separator with")
    if args.format == "llmc" and tokenizer.id_dtype.itemsize > 2:  # (said with the options' names)
        raise ValueError(f"llm.c token files hold uint16 ids; {args.tokenizer} has ids up to {tokenizer.n_vocab - 1} "
                         "(use --format raw or npy, which store uint32)")
    try:
        manifest = encode_files(tokenizer, args.files, args.out, shard_size=args.shard_size, fmt=args.format,
                                workers=args.workers, progress=False if args.quiet or args.json else None,
                                documents=args.documents,
                                separator=separator,
                                block_size=args.block_size, resume=not args.no_resume, cluster=args.scheduler,
                                partition_size=args.partition_size, errors=args.errors)
    finally:
        tokenizer._pools.close()  # (while Ctrl-C is still this command's to report)
    summary = _summary(args, manifest)
    if args.json:
        print(json.dumps(summary))
        return 0
    run = summary["run"]
    if "run" not in manifest:
        print(f"fastbpe encode: {args.out} already holds this job, complete; nothing to do", file=sys.stderr)
    print(f"fastbpe encode: {count_of(manifest['tokens'], 'token')} ({summary['dtype']}) in "
          f"{count_of(summary['shards'], summary['format'] + ' shard')} in {args.out}", file=sys.stderr)
    if "run" in manifest:
        print(f"fastbpe encode: {run['text_bytes'] / 1e6:,.1f} MB of text ({run['file_bytes'] / 1e6:,.1f} MB "
              f"of files) in {run['seconds']:.2f} s: {run['mb_per_second']:,.1f} MB/s, "
              f"{run['tokens_per_second']:,.0f} tokens/s", file=sys.stderr)
    return 0


def add_encode_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``fastbpe encode FILES --tokenizer T --out DIR`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "encode", help="encode text files into token shards (npy, raw or llm.c)",
        description="Stream text files (plain, .gz, .xz, .bz2 or .zst) through a tokenizer into "
                    "fixed-size token shards and a manifest.json; rerunning resumes. Formats: npy "
                    "(np.load), raw (bare little-endian uint16/uint32 ids in .bin files: np.memmap, "
                    "nanoGPT), llmc (llm.c's .bin token files: a 1024-byte header, uint16 ids).")
    p.add_argument("files", nargs="+", help="text files, folders or globs")
    p.add_argument("--tokenizer", "-t", required=True,
                   help="a tokenizer file: Hugging Face tokenizer.json, fastbpe's .fastbpe.json, a "
                        "NAME.tiktoken with its NAME.tiktoken.json, an OpenAI {name}.tiktoken, GPT-2's "
                        "encoder.json/vocab.bpe or their folder; or an OpenAI encoding name (cl100k_base...) "
                        "found in the folder $FASTBPE_ENCODINGS")
    p.add_argument("--out", "-o", required=True,
                   help="output folder (made if missing; not an input folder or inside one)")
    p.add_argument("--shard-size", type=size_arg, default=100_000_000,
                   help="token ids per shard (1e8, 100M and 100000000 are the same)")
    p.add_argument("--format", choices=FORMATS, default="npy", help="the shard file format")
    p.add_argument("--documents", choices=DOCUMENTS, default="file",
                   help="what one document is: a whole file, a blank-line-separated block, or a line "
                        "(lines end at \\n or \\r\\n)")
    between = p.add_mutually_exclusive_group()
    between.add_argument("--separator", default=None,
                         help=f"special token put between documents (default {DEFAULT_SEPARATOR}; a job of one "
                              "document, one file with --documents file, needs none)")
    between.add_argument("--no-separator", action="store_true", help="put nothing between documents")
    p.add_argument("--block-size", type=size_arg, default=DEFAULT_BLOCK_SIZE,
                   help="bytes of text per block, the unit of resuming (4MiB, 1e6, ...); the workers take tasks of "
                        "about 1 MiB: pieces of a block, or many short documents")
    p.add_argument("--workers", type=int_at_least(1), default=None,
                   help="encoding threads on this machine (default: all cores; not used with --scheduler)")
    add_scheduler_option(p, "partitions of the input are encoded and written")
    p.add_argument("--partition-size", type=size_arg, default=None,
                   help="with --scheduler: bytes of input per partition, the unit of work and of resuming "
                        "(default: 64MiB)")
    p.add_argument("--errors", choices=("strict", "replace", "bytes"), default="strict",
                   help="invalid UTF-8 in the input: fail naming the file and offset, replace it with U+FFFD, "
                        "or (byte-level vocabularies) encode each invalid byte as its byte's token, as "
                        "train --errors counts them")
    p.add_argument("--no-resume", action="store_true", help="fail instead of resuming a previous run")
    p.add_argument("--json", action="store_true",
                   help="print the summary as one JSON object on stdout (and no progress bar)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.set_defaults(run=_cmd_encode)
    return p
