"""``fastbpe train``: count a corpus, learn merges, write the tokenizer and a summary.

With no files it trains on a corpus every machine has, the source files of the running Python's
standard library, and says so on the first line it prints.

The output format follows ``--out``'s name unless ``--format`` says otherwise: a name ending in
``.tiktoken`` gets tiktoken's rank file (and ``NAME.tiktoken.json`` beside it: the split pattern
and special tokens), ``.fastbpe.json`` fastbpe's own file (with the training statistics),
anything else a Hugging Face ``tokenizer.json``. :func:`fastbpe.load` reads all three back.
"""
import argparse
import glob
import json
import os
import sys
import sysconfig
import time
import warnings
from pathlib import Path
from typing import List

from ..analysis.trace import show_piece
from ..corpus.files import input_files
from ..formats.bytelevel import bytes_to_unicode, check_specials_apart
from ..formats.tiktoken import check_special_tokens
from ..learn.train import train
from ..split.splitter import Splitter
from .options import (add_learning_options, add_scheduler_option, check_not_an_input, check_out_file, count_of, flatten,
                      int_at_least, report_stream, say_warning, shown_label, size_arg, special_token_list)

__all__ = ["default_corpus", "add_train_subcommand", "OUT_FORMATS", "out_format", "written_files",
           "check_not_written_over"]

OUT_FORMATS = ("auto", "huggingface", "fastbpe", "tiktoken")


def _is_utf8(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            f.read().decode("utf-8")
        return True
    except (OSError, UnicodeDecodeError):
        return False


def default_corpus() -> List[Path]:
    """The ``.py`` files of this Python's standard library (site-packages excluded, and the few
    test files deliberately written in other encodings), sorted so that every run sees the same
    corpus in the same order."""
    stdlib = sysconfig.get_paths()["stdlib"]
    files = glob.glob(os.path.join(stdlib, "**", "*.py"), recursive=True)
    skip = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
    return sorted(Path(f) for f in files if not any(s in f for s in skip) and _is_utf8(f))


def out_format(path: str, fmt: str = "auto") -> str:
    """The format ``--format fmt`` writes to ``path``: ``fmt`` itself, or for ``"auto"`` the
    one its name asks for. A tiktoken rank file is recognised by its name alone (``load``, and
    tiktoken's users, read ``NAME.tiktoken`` with ``NAME.tiktoken.json`` beside it), so the
    two must agree: a ValueError where they do not (the JSON formats are told apart by their
    content, whatever the name).

    >>> [out_format(p) for p in ("tokenizer.json", "t.fastbpe.json", "t.tiktoken", "t")]
    ['huggingface', 'fastbpe', 'tiktoken', 'huggingface']

    A name of a format fastbpe reads but does not write here (SentencePiece's ``.model``), which
    ``load`` would then take for that format, is refused.
    """
    name = os.path.basename(os.fspath(path)).lower()
    if name.endswith((".model", ".vocab", ".bpe", "merges.txt")):  # (what load would read as another format)
        raise ValueError(f"--out {os.fspath(path)!r}: fastbpe reads SentencePiece's .model and GPT-2's files but "
                         "writes neither from the command line; give a .json name (Hugging Face's tokenizer.json), "
                         ".fastbpe.json or .tiktoken (Python: Tokenizer.to_gpt2 writes GPT-2's pair)")
    if fmt == "auto":
        if name.endswith(".fastbpe.json"):
            return "fastbpe"
        return "tiktoken" if name.endswith(".tiktoken") else "huggingface"
    if (fmt == "tiktoken") != name.endswith(".tiktoken"):
        raise ValueError(f"--format {fmt} with --out {os.fspath(path)!r}: a tiktoken rank file is read by its name, "
                         + ("give --out a name ending in .tiktoken" if fmt == "tiktoken" else
                            "so a name ending in .tiktoken is for --format tiktoken alone"))
    return fmt


def written_files(path: str, fmt: str) -> List[str]:
    """The files that writing a tokenizer to ``path`` as ``fmt`` writes.

    >>> written_files("t.tiktoken", "tiktoken"), written_files("t.json", "huggingface")
    (['t.tiktoken', 't.tiktoken.json'], ['t.json'])
    """
    return [path, path + ".json"] if fmt == "tiktoken" else [path]


def check_not_written_over(path: str, fmt: str, inputs) -> None:
    """Refuse an ``--out`` whose writing would replace one of the input files, the tiktoken
    sidecar included (``NAME.tiktoken.json``)."""
    for k, written in enumerate(written_files(path, fmt)):
        check_not_an_input(written, "--out" if k == 0 else "the file beside --out", inputs)


def _printable(token) -> str:
    r"""A merge's part as the summary shows it (bytes that are no UTF-8 as ``\xNN``).

    >>> print(_printable(b" the"), _printable("€".encode()[:2]))
    ' the' '\xe2\x82'
    """
    return shown_label(show_piece(token))


def _write(tokenizer, path: str, fmt: str) -> List[str]:
    """Write the tokenizer; the files written."""
    if fmt == "fastbpe":
        tokenizer.save(path)
        return [path]
    if fmt == "tiktoken":
        tokenizer.to_tiktoken(path)
    else:
        tokenizer.to_huggingface(path)
    return written_files(path, fmt)


def _check_before_training(args: argparse.Namespace, fmt: str) -> None:
    """Refuse what would only fail after the training: an output file that cannot be written, a
    format that cannot hold the tokenizer."""
    check_out_file(args.out)
    if fmt != "fastbpe" and args.unit != "bytes":
        raise ValueError(f"--unit {args.unit} tokenizers cannot be written as {fmt} files (byte-level only); "
                         "use --format fastbpe or an --out name ending in .fastbpe.json")
    if fmt != "fastbpe" and (args.word_start or args.word_end):
        raise ValueError(f"tokenizers with word markers cannot be written as {fmt} files; "
                         "use --format fastbpe or an --out name ending in .fastbpe.json")
    if args.compat == "hf" and args.unit != "bytes":
        raise ValueError("--compat hf needs --unit bytes")
    if fmt in ("tiktoken", "huggingface"):  # (a pattern the file's own regex engine reads otherwise)
        splitter = Splitter(args.pattern)
        if fmt == "tiktoken":
            splitter.to_tiktoken()
        else:
            splitter.to_huggingface()
    if fmt == "tiktoken":
        check_special_tokens(flatten(args.special_token))
    if fmt == "huggingface":  # (a learned token's text is met after the training; a byte's is known now)
        byte_texts = {text: byte for byte, text in bytes_to_unicode().items()}
        check_specials_apart({name: None for name in flatten(args.special_token)}, byte_texts, "tokenizer.json")


def _train(args: argparse.Namespace, files: List[Path], special_tokens: List[str]):
    return train(
        files,
        args.vocab_size,
        num_merges=args.num_merges,
        unit=args.unit,
        pattern=args.pattern,
        min_frequency=args.min_frequency,
        word_start=args.word_start,
        word_end=args.word_end,
        special_tokens=special_tokens,
        progress=False if args.quiet or args.json else None,
        workers=args.workers,
        errors=args.errors,
        compat=args.compat,
        cluster=args.scheduler,
    )


def _short_of_asked(args: argparse.Namespace, tokenizer) -> List[str]:
    """A note when training stopped before the vocabulary size or merge count asked for: no pair
    was left that occurs ``--min-frequency`` times (or none at all)."""
    merges = tokenizer.training_stats["merges"]
    if args.num_merges is not None and merges < args.num_merges:
        asked = f"--num-merges {args.num_merges:,}"
    elif args.num_merges is None and args.vocab_size is not None and tokenizer.vocab_size < args.vocab_size:
        asked = f"--vocab-size {args.vocab_size:,}"
    else:
        return []
    why = ("every chunk of the corpus is one token" if args.min_frequency <= 1 else
           f"no pair of the corpus occurs {args.min_frequency:,} times or more any longer (--min-frequency)")
    return [f"training stopped at {count_of(merges, 'merge')} (vocab size {tokenizer.vocab_size:,}), short of "
            f"{asked}: {why}"]


def _cmd_train(args: argparse.Namespace) -> int:
    fmt = out_format(args.out, args.format)
    special_tokens = flatten(args.special_token)
    _check_before_training(args, fmt)
    if args.files:
        files = input_files(args.files)
        check_not_written_over(args.out, fmt, files)  # (a file of an input folder, too)
        source = count_of(len(files), "file")
    else:
        files = default_corpus()
        source = "the standard library"
        # The first line says what is trained on, whatever else follows.
        print(f"fastbpe train: no input files given, so training on the Python standard library's "
              f"sources ({count_of(len(files), 'file')} in {sysconfig.get_paths()['stdlib']})", file=sys.stderr)
    if not args.json:
        print(f"fastbpe train: {count_of(len(files), 'file')}, vocab size {args.vocab_size}, pattern {args.pattern}"
              + (f", {args.num_merges} merges at most" if args.num_merges is not None else ""), file=sys.stderr)
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:  # (said as the command's own, below)
        warnings.simplefilter("always")
        tokenizer = _train(args, files, special_tokens)  # (its errors' advice said in options: cli.main)
        trained = time.perf_counter()
        written = _write(tokenizer, args.out, fmt)
    notes = [str(w.message) for w in caught] + _short_of_asked(args, tokenizer)
    for note in notes:
        say_warning(note)
    saved = time.perf_counter()
    stats = tokenizer.training_stats
    mb = stats["input_bytes"] / 1e6  # of text: decompressed, invalid bytes replaced or kept as --errors says
    file_bytes = sum(os.path.getsize(f) for f in files)
    total = saved - started
    if args.json:
        summary = {
            "command": "train",
            "input": {"source": "files" if args.files else "stdlib", "files": len(files),
                      "bytes": stats["input_bytes"], "file_bytes": file_bytes, "chunks": stats["input_chunks"],
                      "unique_chunks": stats["unique_chunks"]},
            "vocab_size": tokenizer.vocab_size,
            "merges": stats["merges"],
            "special_tokens": tokenizer.special_tokens,
            "pattern": args.pattern,
            "unit": args.unit,
            "compat": args.compat,
            "seconds": {"count": stats["seconds_count"], "prepare": stats["seconds_prepare"],
                        "merge": stats["seconds_merge"], "save": saved - trained, "total": total},
            "mb_per_second": mb / max(total, 1e-9),
            "corpus_tokens": stats["corpus_tokens"],
            "bytes_per_token": stats["input_bytes"] / max(stats["corpus_tokens"], 1),
            "format": fmt,
            "out": written,
            "warnings": notes,
        }
        print(json.dumps(summary), file=report_stream(args.out))
        return 0
    lines = [
        f"input           {mb:,.1f} MB of text ({file_bytes / 1e6:,.1f} MB of files) in {count_of(len(files), 'file')}"
        f"{'' if args.files else ' (' + source + ')'}, {stats['input_chunks']:,} chunks",
        f"unique chunks   {stats['unique_chunks']:,}",
        f"merges          {stats['merges']:,} (vocab size {tokenizer.vocab_size:,})",
        f"count           {stats['seconds_count']:8.2f} s   {mb / max(stats['seconds_count'], 1e-9):8.1f} MB/s",
        f"prepare         {stats['seconds_prepare']:8.2f} s",
        f"merge           {stats['seconds_merge']:8.2f} s   "
        f"{stats['merges'] / max(stats['seconds_merge'], 1e-9):8.0f} merges/s",
        f"save            {saved - trained:8.2f} s",
        f"total           {total:8.2f} s   {mb / max(total, 1e-9):8.1f} MB/s end to end",
        f"compression     {stats['input_bytes'] / max(stats['corpus_tokens'], 1):.3f} bytes/token "
        f"({count_of(stats['corpus_tokens'], 'token')} on the training corpus)",
        "first merges    " + ", ".join(
            f"{_printable(a)}+{_printable(b)}" for a, b in tokenizer.merges[:10]),
        f"wrote           {' and '.join(written)} ({fmt} format)",
    ]
    print("\n".join(lines), file=report_stream(args.out))
    return 0


def add_train_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``fastbpe train [FILES] --vocab-size N --out PATH``."""
    t = subparsers.add_parser(
        "train", help="learn a BPE tokenizer from text files",
        description="Learn a byte-pair-encoding tokenizer from text files (plain, .gz, .xz, .bz2 or .zst; "
                    "folders and globs too) and write it: --out NAME.json writes a Hugging Face "
                    "tokenizer.json, NAME.tiktoken tiktoken's rank file (with NAME.tiktoken.json), "
                    "NAME.fastbpe.json fastbpe's own file with the training statistics. With no "
                    "files it trains on the Python standard library's sources.")
    t.add_argument("files", nargs="*",
                   help="files, folders or globs to train on (none: the Python standard library's sources)")
    t.add_argument("--vocab-size", type=size_arg, default=8192,
                   help="target vocabulary size: base symbols, merged tokens and special tokens")
    t.add_argument("--num-merges", type=size_arg, default=None,
                   help="stop after this many merges (default: as many as --vocab-size allows)")
    t.add_argument("--out", "-o", default="tokenizer.json", help="the tokenizer file to write")
    t.add_argument("--format", choices=OUT_FORMATS, default="auto",
                   help="the file format; auto: .tiktoken -> tiktoken, .fastbpe.json -> fastbpe, "
                        "anything else -> huggingface")
    add_learning_options(t)
    t.add_argument("--special-token", "--special-tokens", dest="special_token", action="append",
                   type=special_token_list, default=[], metavar="TOKEN",
                   help="a special token (repeat the flag for more, or give a comma-separated list; "
                        "\\, is a literal comma); they take the last ids (default: none)")
    t.add_argument("--compat", choices=("hf",), default=None,
                   help="hf: learn exactly the merges of Hugging Face's BpeTrainer trained on these files "
                        "(byte-level, gpt2 split; each line with its line ending a text of its own, as "
                        "Tokenizer.train(files) reads them) (default: fastbpe's own tie rule)")
    t.add_argument("--workers", type=int_at_least(1), default=None, help="counting workers (default: all cores)")
    add_scheduler_option(t, "the corpus is counted (the tables combined there too)")
    t.add_argument("--errors", choices=("strict", "replace", "bytes"), default="strict",
                   help="invalid UTF-8 in the input: fail naming the file and offset, replace it with "
                        "U+FFFD, or count the raw bytes")
    t.add_argument("--json", action="store_true",
                   help="print the summary as one JSON object on stdout (and no progress bars)")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    t.set_defaults(run=_cmd_train)
    return t
