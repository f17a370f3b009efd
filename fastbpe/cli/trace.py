"""``fastbpe trace``: a training run merge by merge, and the order a word's merges fire in."""
import argparse

from ..analysis.common import format_table, json_text
from ..analysis.trace import plot_curve, segmentation_text, trace, trace_word
from ..corpus.files import input_files
from .options import (add_learning_options, add_report_options, add_tokenizer_option, check_plot_file, int_at_least,
                      nonempty, shown_label, size_arg, tokenizer_specs)

__all__ = ["add_trace_subcommand"]


def _word_lines(word: str, chunks) -> list:
    lines = []
    for chunk in chunks:
        lines.append(f"{shown_label(chunk['chunk'])}: {' '.join(chunk['symbols'])}")
        for step in chunk["steps"]:
            how = "whole-chunk lookup" if step["left"] is None else \
                f"{shown_label(step['left'])} + {shown_label(step['right'])}"
            lines.append(f"  merge {step['rank']:>7,}  {how:<24} -> {shown_label(step['new']):<14} "
                         f"{' '.join(step['pieces'])}")
        ids = ", ".join("none" if i is None else str(i) for i in chunk["ids"])
        lines.append(f"  = {' '.join(chunk['pieces'])}  ids [{ids}]"
                     + ("  (none: not in the vocabulary; encode refuses it)" if None in chunk["ids"] else ""))
    return lines


def _cmd_trace(args: argparse.Namespace) -> int:
    check_plot_file(args.plot)
    if args.tokenizer is not None:
        if args.corpus:
            raise ValueError("give a corpus to trace a training run, or --tokenizer to trace --word through it, "
                             "not both")
        if not args.word:
            raise ValueError("--tokenizer traces words: give --word WORD")
        if args.num_merges is not None:
            raise ValueError("--num-merges is the length of a training run on a corpus: with --tokenizer, trace "
                             "follows --word through its merges; drop --num-merges")
        if args.plot:
            raise ValueError("--plot draws the compression curve of a training run: give a corpus, not --tokenizer")
        (label, spec), = tokenizer_specs(args.tokenizer)
        words = {w: trace_word(spec, w) for w in args.word}
        if args.json:
            print(json_text({"command": "trace", "tokenizer": label, "words": words}))
        else:
            for word, chunks in words.items():
                print("\n".join(_word_lines(word, chunks)))
        return 0
    if not args.corpus:
        raise ValueError("give the corpus to train on (files), or --tokenizer with --word")
    if args.num_merges is None:
        raise ValueError("give --num-merges")
    files = input_files(args.corpus)
    result = trace(files, args.num_merges, unit=args.unit, pattern=args.pattern, word_start=args.word_start,
                   word_end=args.word_end, min_frequency=args.min_frequency, words=args.words,
                   workers=args.workers, errors=args.errors)
    tokenizer = result.pop("tokenizer")
    words = {w: trace_word(tokenizer, w) for w in args.word or ()}
    if args.plot:
        plot_curve(result, args.plot)
    if args.json:
        print(json_text({"command": "trace", **result, "traced_words": words}))
        return 0
    rows = [{"merge": m["rank"], "pair": f"{shown_label(m['left'])} + {shown_label(m['right'])}",
             "new": shown_label(m["new"]), "count": m["count"],
             "symbols": m["symbols"], **({"segmentation": segmentation_text(result["words"], m["segmentation"])}
                                         if result["words"] else {})}
            for m in result["merges"]]
    print(f"start: {result['symbols_before']:,} symbols in {result['unique_chunks']:,} distinct chunks "
          f"({result['base_symbols']:,} base symbols)"
          + (f"; {segmentation_text(result['words'], [w['symbols'] for w in result['words']])}" if result["words"] else ""))
    if rows:
        print(format_table(rows))
    print(f"{len(result['merges']):,} merges: {result['symbols_before']:,} -> {result['symbols_after']:,} symbols")
    for word, chunks in words.items():
        print()
        print("\n".join(_word_lines(word, chunks)))
    return 0


def add_trace_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``fastbpe trace``."""
    t = subparsers.add_parser(
        "trace", help="a training run merge by merge; the order a word's merges fire in",
        description="Train on CORPUS for --num-merges merges and print every merge as the learner made it "
                    "(left + right -> new, its count), the corpus's total symbols after it and how the most "
                    "frequent chunks are segmented; --plot draws the compression curve. --word traces a word "
                    "through the trained tokenizer, or through --tokenizer without a corpus. Sennrich et "
                    "al. (2016)'s example: --unit chars --pretokenizer whitespace --word-end _.")
    t.add_argument("corpus", nargs="*", help="files, folders or globs to train on (default: none, with --tokenizer)")
    t.add_argument("--num-merges", type=size_arg, default=None, help="how many merges to learn (default: none; "
                                                                      "required with a corpus)")
    add_learning_options(t)
    t.add_argument("--words", type=int_at_least(0), default=5,
                   help="how many of the most frequent chunks to show segmented")
    t.add_argument("--word", action="append", default=None, metavar="WORD", type=nonempty,
                   help="trace the merges that fire while WORD is encoded (repeatable) (default: none)")
    add_tokenizer_option(t, repeatable=False, required=False)
    t.add_argument("--workers", type=int_at_least(1), default=None, help="counting workers (default: all cores)")
    t.add_argument("--errors", choices=("strict", "replace", "bytes"), default="strict",
                   help="invalid UTF-8 in the corpus: fail, replace it with U+FFFD, or count the raw bytes")
    add_report_options(t, plot="the compression curve (symbols against merges)")
    t.set_defaults(run=_cmd_trace)
    return t
