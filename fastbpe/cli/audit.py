"""``fastbpe audit``: unreachable tokens, tokens that are not UTF-8, tokens a corpus never
produces, and how digit runs split."""
import argparse

from ..analysis.audit import DIGITS_UP_TO, MAX_DIGITS_UP_TO, audit, summary_row
from ..analysis.common import format_table, json_text, pyplot, save_figure
from .options import (add_report_options, add_tokenizer_option, check_plot_file, count_of, int_at_least,
                      loaded_tokenizers, shown_label, say_warning, size_arg)

__all__ = ["add_audit_subcommand"]


def _plot_digits(results, path) -> None:
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6, 3.6))
    for r in results:
        digits = r["digits"]
        axis.plot([d["digits"] for d in digits], [d["mean_tokens"] for d in digits], marker="o", label=r["tokenizer"])
    axis.set_xlabel("digits in the number")
    axis.set_ylabel("tokens (mean)")
    axis.set_title("how numbers split")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    save_figure(figure, path)


def _examples(items) -> str:
    return ", ".join(f"{e['id']} {shown_label(e['token'])}" for e in items) or "-"


def _cmd_audit(args: argparse.Namespace) -> int:
    if args.no_digits and args.digits_up_to is not None:
        raise ValueError("--no-digits skips the digit splits that --digits-up-to sizes: give one of them")
    digits = None if args.no_digits else DIGITS_UP_TO if args.digits_up_to is None else args.digits_up_to
    if digits is not None and digits > MAX_DIGITS_UP_TO:  # (before the tokenizers and the corpus are read)
        raise ValueError(f"--digits-up-to must be at most {MAX_DIGITS_UP_TO:,}, got {digits:,} (every number is "
                         "encoded: the default, 10**7, takes seconds)")
    check_plot_file(args.plot)
    if args.plot and digits is None:  # (refused before the work, not after it)
        raise ValueError("--plot draws the digit splits: drop --no-digits")
    results = [audit(tokenizer, corpus=args.corpus, corpus_limit=args.corpus_bytes, digits_up_to=digits, label=label,
                     examples=args.examples, workers=args.workers)
               for label, tokenizer in loaded_tokenizers(args.tokenizer)]
    if any(r.get("corpus_tokens") == 0 for r in results):
        say_warning("--corpus holds no text: every token counts as never produced")
    if args.plot:
        _plot_digits(results, args.plot)
    if args.json:
        print(json_text({"command": "audit", "results": results}))
        return 0
    print(format_table([summary_row(r) for r in results]))
    for r in results:
        print()
        if "unreachable_examples" in r:
            print(f"{r['tokenizer']}: unreachable {_examples(r['unreachable_examples'])}")
        print(f"{r['tokenizer']}: not UTF-8 {_examples(r['not_utf8_examples'])}")
        if "never_produced_examples" in r:
            # (where tokens carry markers reachability is not checked: the list holds every merged token)
            kind = "merged and reachable" if "unreachable" in r else \
                "merged (reachability not checked: the tokens carry markers)"
            print(f"{r['tokenizer']}: never produced on the corpus ({count_of(r['corpus_tokens'], 'token')}), "
                  f"{kind}: {_examples(r['never_produced_examples'])}")
        if "digits" in r:
            print(format_table(r["digits"]))
        if "digits_not_measured" in r:
            print(f"{r['tokenizer']}: digit splits not measured: {r['digits_not_measured']}")
    return 0


def add_audit_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``fastbpe audit``."""
    a = subparsers.add_parser(
        "audit", help="unreachable, non-UTF-8 and never-produced tokens; how digit runs split",
        description="For each --tokenizer: tokens whose own text does not encode back to them (unreachable), "
                    "tokens that are not valid UTF-8 on their own, tokens never produced on --corpus "
                    "(under-trained candidates, Land and Bartolo 2024), and how the numbers 1 .. "
                    "--digits-up-to split into tokens.")
    add_tokenizer_option(a, repeatable=True)
    a.add_argument("--corpus", nargs="+", default=None, metavar="FILE",
                   help="files to encode for the never-produced tokens (default: none, that check is skipped)")
    a.add_argument("--corpus-bytes", type=size_arg, default=None,
                   help="read at most this many bytes of --corpus (the last line cut at a character boundary) "
                        "(default: all of it)")
    a.add_argument("--digits-up-to", type=size_arg, default=None,
                   help=f"encode the numbers 1 .. this (default: {DIGITS_UP_TO:.0e})")
    a.add_argument("--no-digits", action="store_true", help="skip the digit splits")
    a.add_argument("--examples", type=int_at_least(0), default=10, help="token texts shown per list")
    a.add_argument("--workers", type=int_at_least(1), default=None, help="encoding threads (default: all cores)")
    add_report_options(a, plot="the mean tokens of a number against its digits, one line per tokenizer")
    a.set_defaults(run=_cmd_audit)
    return a
