"""``fastbpe tax``: the token premium of each language on a parallel corpus, and ``--sweep``."""
import argparse

from ..analysis.common import format_table, json_text
from ..analysis.tax import DEFAULT_SHARES, plot_premiums, plot_sweep, premium_table, tax, tax_sweep
from .options import (add_report_options, add_tokenizer_option, check_input_file, check_plot_file, count_of,
                      int_at_least, loaded_tokenizers, size_arg)

__all__ = ["add_tax_subcommand"]

DETAIL_COLUMNS = ("tokenizer", "language", "rows", "tokens", "tokens_per_row", "bytes_per_token",
                  "chars_per_token", "premium")


def _shares(text: str):
    """``0,1,5,20,50`` (percent) as fractions."""
    try:
        values = [float(v) / 100 for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give percentages separated by commas, e.g. 0,1,5,20,50") from None
    if not values or any(not 0 <= v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: percentages from 0 to below 100")
    return values


def _cmd_sweep(args: argparse.Namespace) -> int:
    if args.tokenizer:
        raise ValueError("--sweep trains its own tokenizers on --english and --other: drop --tokenizer")
    if not args.english or not args.other:
        raise ValueError("--sweep needs --english FILE and --other FILE (the training texts)")
    for path, option in ((args.english, "--english"), (args.other, "--other"), (args.corpus, "--corpus")):
        check_input_file(path, option)
    result = tax_sweep(args.english, args.other, args.corpus, language=args.language, reference=args.reference,
                       vocab_size=args.vocab_size, train_bytes=args.train_bytes, shares=args.shares,
                       rows=args.rows, pattern=args.pattern, workers=args.workers)
    if args.plot:
        plot_sweep(result, args.plot)
    if args.json:
        print(json_text({"command": "tax", "sweep": True, **result}))
        return 0
    print(f"premium of {args.language} over {args.reference} for tokenizers of vocab size {args.vocab_size:,} "
          f"trained on {args.train_bytes:,} bytes ({result['held_out_lines']:,} lines of the evaluated rows "
          f"held out of training)")
    rows = [{"share": f"{100 * p['share']:g}%", f"{args.language}_bytes": p["other_bytes"],
             "english_bytes": p["english_bytes"], "rows": p["rows"],
             f"{args.reference}_tokens_per_row": p["reference_tokens_per_row"],
             f"{args.language}_tokens_per_row": p["tokens_per_row"], "premium": p["premium"]}
            for p in result["points"]]
    print(format_table(rows))
    short = [p for p in result["points"] if p["other_bytes"] < int(args.train_bytes * p["share"])]
    if short:  # (its text ran out: the share reached is smaller than the one asked)
        reached = ", ".join(f"{100 * p['share']:g}% is {100 * p['other_bytes'] / args.train_bytes:.0f}%" for p in short)
        print(f"note: {args.other} holds {short[0]['other_bytes']:,} bytes of {args.language} text besides the "
              f"evaluated rows: {reached} of the training text")
    return 0


def _cmd_tax(args: argparse.Namespace) -> int:
    check_plot_file(args.plot)
    if args.sweep:
        return _cmd_sweep(args)
    if not args.tokenizer:
        raise ValueError("give at least one --tokenizer (or --sweep)")
    check_input_file(args.corpus, "--corpus")
    specs = loaded_tokenizers(args.tokenizer)
    languages = [lang for lang in args.languages.split(",") if lang] if args.languages else None
    result = tax([spec for _, spec in specs], args.corpus, reference=args.reference, languages=languages,
                 rows=args.rows, labels=[label for label, _ in specs], complete=args.complete_rows,
                 workers=args.workers)
    if args.plot:
        plot_premiums(result, args.plot)
    if args.json:
        print(json_text({"command": "tax", **result}))
        return 0
    print(f"premium: tokens of each language / tokens of {args.reference} on the same rows "
          f"({count_of(result['rows'], 'row')}{', each with every language' if args.complete_rows else ' read'})")
    print(format_table(premium_table(result)))
    print()
    print(format_table(result["results"], DETAIL_COLUMNS))
    return 0


def add_tax_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``fastbpe tax``."""
    t = subparsers.add_parser(
        "tax", help="the token premium of each language on a parallel corpus",
        description="What the same content costs in tokens, language by language: for each --tokenizer, "
                    "the tokens per row, bytes and characters per token, and the premium of each language "
                    "(its tokens / the reference's tokens on the same rows, Petrov et al. 2023) on a TSV "
                    "with one language per column and a header row. --sweep trains tokenizers of one size on "
                    "English mixed with a share of another language and reports that language's premium "
                    "against the share.")
    t.add_argument("--corpus", required=True, metavar="FILE.tsv",
                   help="the parallel corpus: a TSV (plain or compressed), a header row naming the columns")
    add_tokenizer_option(t, repeatable=True, required=False)
    t.add_argument("--reference", default="en", help="the column every language is compared with")
    t.add_argument("--languages", default=None,
                   help="the columns to measure, comma-separated (default: every column named like a language code)")
    t.add_argument("--complete-rows", action="store_true",
                   help="only the rows where every measured language has text (every premium on the same content)")
    t.add_argument("--rows", type=size_arg, default=None, help="read only the first ROWS rows (default: all)")
    t.add_argument("--workers", type=int_at_least(1), default=None, help="encoding threads (default: all cores)")
    sweep = t.add_argument_group("--sweep: the premium against the training mix")
    sweep.add_argument("--sweep", action="store_true",
                       help="train one tokenizer per share of --other in the training text and measure it")
    sweep.add_argument("--english", default=None, metavar="FILE", help="the English training text (default: none)")
    sweep.add_argument("--other", default=None, metavar="FILE",
                       help="the other language's training text (default: none)")
    sweep.add_argument("--language", default="ms", help="the --corpus column of the other language")
    sweep.add_argument("--vocab-size", type=size_arg, default=8192, help="the vocabulary size of every tokenizer")
    sweep.add_argument("--train-bytes", type=size_arg, default=2_000_000, help="training text per tokenizer")
    sweep.add_argument("--shares", type=_shares, default=",".join(f"{100 * s:g}" for s in DEFAULT_SHARES),
                       metavar="PERCENTS", help="the shares of --other, in percent, comma-separated")
    sweep.add_argument("--pattern", default="gpt2", help="the split pattern of the trained tokenizers")
    add_report_options(t, plot="a grouped bar chart of the premiums (with --sweep: the premium against the share)")
    t.set_defaults(run=_cmd_tax)
    return t
