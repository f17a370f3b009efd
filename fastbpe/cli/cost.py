"""``fastbpe cost``: what a vocabulary costs a model, and on a given text."""
import argparse

from ..analysis.common import format_table, json_text, read_texts
from ..analysis.cost import DTYPE_BYTES, PRESETS, cost, cost_lines, shape_dict, text_cost
from .options import add_report_options, add_tokenizer_option, count_of, loaded_tokenizers, size_arg

__all__ = ["add_cost_subcommand"]


def _presets_table() -> str:
    rows = []
    for name, shape in PRESETS.items():
        c = cost(preset=name)
        rows.append({"preset": name, "vocab": shape.vocab, "d_model": shape.d_model, "tied": shape.tied,
                     "params": shape.parameters(), "vocab_share": c["vocab_share"], "config": shape.source})
    return format_table(rows)


def _cmd_cost(args: argparse.Namespace) -> int:
    if args.list_presets:
        if args.json:
            print(json_text({"presets": [shape_dict(name) for name in PRESETS]}))
        else:
            print(_presets_table())
        return 0
    specs = loaded_tokenizers(args.tokenizer)
    if args.text is not None:
        if not specs:
            raise ValueError("--text needs at least one --tokenizer (whose tokens are counted)")
        d_model = args.d_model or (PRESETS[args.preset].d_model if args.preset else None)
        if d_model is None:
            raise ValueError("--text needs --d-model or --preset (the width of the model's tables)")
        tied = bool(args.tied) if args.tied is not None else (PRESETS[args.preset].tied if args.preset else False)
        text = "".join(read_texts(args.text))
        rows = text_cost([spec for _, spec in specs], text, d_model, tied=tied, dtype=args.dtype,
                         labels=[label for label, _ in specs])
        if args.json:
            print(json_text({"command": "cost", "d_model": d_model, "tied": tied, "dtype": args.dtype,
                             "text_chars": len(text), "rows": rows}))
        else:
            print(f"{count_of(len(text), 'character')}, d_model {d_model:,}, {'tied' if tied else 'untied'}, "
                  f"{args.dtype}")
            print(format_table(rows))
        return 0
    vocab = args.vocab
    if vocab is None and specs:
        if len(specs) > 1:
            raise ValueError("without --text, give one --tokenizer (its vocabulary size is used)")
        vocab = specs[0][1].n_vocab  # (the rows a table needs for every id)
    result = cost(vocab, args.d_model, tied=args.tied, params=args.params, dtype=args.dtype, preset=args.preset,
                  tokens=args.tokens)
    if args.json:
        print(json_text({"command": "cost", **result}))
    else:
        print(format_table(cost_lines(result)))
    return 0


def add_cost_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``fastbpe cost``."""
    c = subparsers.add_parser(
        "cost", help="what a vocabulary costs a model: tables, bytes, lm_head FLOPs, logits",
        description="The price of a [V, d] vocabulary table: parameters per table (one when tied, two "
                    "otherwise), bytes, share of the model, lm_head FLOPs per token (2Vd), fp32 logits "
                    "bytes per position (4V). With --text, the tokens each --tokenizer takes on that text "
                    "and the lm_head cost over them: fewer tokens against bigger tables.")
    c.add_argument("--preset", choices=sorted(PRESETS), default=None,
                   help="a model's published shape (--vocab, --d-model, --tied, --params override it) "
                        "(default: none)")
    c.add_argument("--vocab", type=size_arg, default=None,
                   help="vocabulary size V (default: the preset's, or the --tokenizer's)")
    c.add_argument("--d-model", type=size_arg, default=None, help="model width d (default: the preset's)")
    c.add_argument("--tied", action=argparse.BooleanOptionalAction, default=None,
                   help="one table for input and output (default: the preset's, else untied)")
    c.add_argument("--params", type=size_arg, default=None,
                   help="the whole model's parameters, for the shares (default: the preset's, else none)")
    c.add_argument("--dtype", choices=sorted(DTYPE_BYTES), default="bf16", help="the tables' element type")
    c.add_argument("--tokens", type=size_arg, default=None,
                   help="a token count, for the lm_head FLOPs and logits bytes of that many positions "
                        "(default: none)")
    add_tokenizer_option(c, repeatable=True, required=False)
    c.add_argument("--text", nargs="+", default=None, metavar="FILE",
                   help="files whose tokens each --tokenizer counts (default: none)")
    c.add_argument("--list-presets", action="store_true", help="list the presets and their sources")
    add_report_options(c)
    c.set_defaults(run=_cmd_cost)
    return c
