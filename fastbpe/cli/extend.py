"""``fastbpe extend``: append merges learned on new text to an existing tokenizer.

Every existing id, merge and special token is kept; the new tokens take the ids after the
largest one (:func:`fastbpe.learn.extend.extend`). The output is written as ``fastbpe train``
writes its tokenizer (format from ``--out``'s name or ``--format``).
"""
import argparse
import json
import time

from ..corpus.files import input_files
from ..learn.extend import check_extendable, extend
from .options import (add_tokenizer_option, check_out_file, count_of, int_at_least, report_stream, size_arg,
                      tokenizer_specs)
from ..encode.registry import resolve_tokenizer
from ..formats.tiktoken import check_special_tokens
from .train import OUT_FORMATS, _printable, _write, check_not_written_over, out_format

__all__ = ["add_extend_subcommand"]


def _cmd_extend(args: argparse.Namespace) -> int:
    fmt = out_format(args.out, args.format)
    check_out_file(args.out)
    files = input_files(args.files)
    check_not_written_over(args.out, fmt, files)
    started = time.perf_counter()
    base = resolve_tokenizer(tokenizer_specs(args.tokenizer)[0][1])
    check_extendable(base)  # (what cannot be done at all is said before how it could not be written)
    if fmt != "fastbpe" and base.unit != "bytes":
        raise ValueError(f"a --unit {base.unit} tokenizer cannot be written as {fmt}; use --format fastbpe")
    if fmt == "tiktoken":
        check_special_tokens(base.special_tokens)  # (before the work, not when writing)
    loaded = time.perf_counter()
    extended = extend(base, files, args.num_merges, min_frequency=args.min_frequency, workers=args.workers,
                      errors=args.errors, progress=False if args.quiet or args.json else None)
    written = _write(extended, args.out, fmt)
    done = time.perf_counter()
    stats = extended.training_stats
    before, after = stats["corpus_tokens_before"], stats["corpus_tokens"]
    new = extended.merges[stats["base_merges"]:]
    summary = {
        "command": "extend",
        "tokenizer": args.tokenizer,
        "files": len(files),
        "input_bytes": stats["input_bytes"],
        "unique_chunks": stats["unique_chunks"],
        "base_vocab_size": len(base.vocab),  # distinct ids
        "base_merges": stats["base_merges"],
        "new_merges": stats["merges"],
        "new_tokens": stats["new_tokens"],
        "vocab_size": len(extended.vocab),
        "first_new_id": None if not stats["new_tokens"] else  # (none: no id is new)
        next(i for i in range(len(base.token_bytes), len(extended.token_bytes)) if extended.token_bytes[i]),
        "corpus_tokens_before": before,
        "corpus_tokens_after": after,
        "bytes_per_token_before": stats["input_bytes"] / max(before, 1),
        "bytes_per_token_after": stats["input_bytes"] / max(after, 1),
        "first_new_merges": [[_printable(a), _printable(b)] for a, b in new[:10]],
        "seconds": {"load": loaded - started, "count": stats["seconds_count"],
                    "encode": stats["seconds_encode"], "merge": stats["seconds_merge"], "total": done - started},
        "format": fmt,
        "out": written,
    }
    if args.json:
        print(json.dumps(summary), file=report_stream(args.out))
        return 0
    rows = [
        ("input", f"{stats['input_bytes'] / 1e6:,.2f} MB in {count_of(len(files), 'file')}, "
                  f"{stats['unique_chunks']:,} unique chunks"),
        ("base", f"{args.tokenizer}: vocab size {summary['base_vocab_size']:,}, {stats['base_merges']:,} merges"),
        ("new merges", f"{stats['merges']:,} ("
                       + (f"{stats['new_tokens']:,} new tokens from id {summary['first_new_id']:,}" if stats["new_tokens"]
                          else "no new token: no pair of tokens occurs --min-frequency times")
                       + f"); vocab size {summary['vocab_size']:,}"),
        ("corpus tokens", f"{before:,} -> {after:,} ({after / max(before, 1) - 1:+.1%}); bytes/token "
                          f"{summary['bytes_per_token_before']:.3f} -> {summary['bytes_per_token_after']:.3f}"),
        ("time", f"{done - started:.2f} s (count {stats['seconds_count']:.2f}, encode chunks "
                 f"{stats['seconds_encode']:.2f}, merge {stats['seconds_merge']:.2f})"),
        ("first new", ", ".join(f"{a}+{b}" for a, b in summary["first_new_merges"])),
        ("wrote", f"{' and '.join(written)} ({fmt} format)"),
    ]
    print("\n".join(f"{name:<15} {value}" for name, value in rows), file=report_stream(args.out))
    return 0


def add_extend_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``fastbpe extend FILES --tokenizer T --num-merges N --out PATH``."""
    p = subparsers.add_parser(
        "extend", help="append merges learned on new text to an existing tokenizer",
        description="Continue training an existing tokenizer (a fastbpe, Hugging Face, tiktoken or GPT-2 file, "
                    "or an OpenAI encoding name) on new text: every chunk is encoded by the tokenizer, then "
                    "merge learning continues from there. Every existing id, merge and special token is kept; "
                    "new tokens take the ids after the largest one.")
    p.add_argument("files", nargs="+", help="text files, folders or globs to learn the new merges from")
    add_tokenizer_option(p, repeatable=False)
    p.add_argument("--num-merges", type=size_arg, required=True, help="merges to append (at most)")
    p.add_argument("--out", "-o", required=True, help="the tokenizer file to write")
    p.add_argument("--format", choices=OUT_FORMATS, default="auto",
                   help="the file format; auto: .tiktoken -> tiktoken, .fastbpe.json -> fastbpe, "
                        "anything else -> huggingface")
    p.add_argument("--min-frequency", type=int_at_least(1), default=2,
                   help="stop when the most frequent pair occurs fewer times than this")
    p.add_argument("--workers", type=int_at_least(1), default=None, help="counting workers (default: all cores)")
    p.add_argument("--errors", choices=("strict", "replace", "bytes"), default="strict",
                   help="invalid UTF-8 in the input: fail, replace it with U+FFFD, or count the raw bytes")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(run=_cmd_extend)
    return p
