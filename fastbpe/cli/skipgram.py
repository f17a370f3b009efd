"""``fastbpe skipgram``: skip-gram embeddings of a tokenizer's ids on a corpus, and the rows
training barely moved (glitch-token candidates: tokens the tokenizer made from its own corpus
that are rare in this one). See :mod:`fastbpe.analysis.skipgram`.
"""
import argparse
import json
import os
import re
from typing import List

import numpy as np

from ..corpus.files import decode_error, input_files, open_bytes
from .options import (add_report_options, add_tokenizer_option, check_not_an_input, check_out_file, count_of,
                      check_plot_format, flatten, int_at_least, positive_float, shown_label, size_arg, token_list,
                      tokenizer_specs)
from ..analysis.common import utf8_cut
from ..analysis.trace import show_piece
from ..encode.registry import resolve_tokenizer

__all__ = ["add_skipgram_subcommand", "read_documents", "save_plot", "loss_text"]


def read_documents(files: List[str], max_bytes: int, documents: str) -> List[str]:
    """At most ``max_bytes`` of the files, in order, as documents: blank-line-separated blocks,
    lines, or whole files. The file that crosses the limit is cut after its last whole line
    before it (at a character boundary when the limit falls in its first line), and no file
    after it is read. Each document keeps its line ends and blank lines, so the documents
    together are exactly the text read."""
    out: List[str] = []
    left = max_bytes
    for path in files:
        if left <= 0:
            break
        reader, raw = open_bytes(path)
        try:
            data = reader.read(left + 1)
        finally:
            reader.close()
            raw.close()
        if len(data) > left:
            # (a cut inside a character is no invalid UTF-8 of the file's)
            data = data[: data.rfind(b"\n", 0, left) + 1] or utf8_cut(data, left)
            left = 0  # (the rest of this file comes before any later file)
        else:
            left -= len(data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise decode_error(path, exc.start, data[exc.start:exc.start + 1]) from None
        if documents == "file":
            out.append(text)
        elif documents == "line":
            out.extend(text.splitlines(keepends=True))
        else:
            # (after a run of two or more line ends, each "\n" or "\r\n")
            out.extend(block for block in re.split(r"(?:(?<=\n\n)|(?<=\n\r\n))(?!\r?\n)", text) if block)
    return out


def _label(tokenizer, i: int) -> str:
    specials = {v: k for k, v in tokenizer.special_tokens.items()}
    if i in specials:
        return specials[i]
    return show_piece(tokenizer.token_bytes[i])


def _token_ids(tokenizer, texts: List[str]) -> List[int]:
    """One id per text: the text must be a single token."""
    ids = []
    for text in texts:
        encoded = tokenizer.encode(text, disallowed_special=())
        if len(encoded) != 1:
            raise ValueError(f"{text!r} is {len(encoded)} tokens for this tokenizer, not one: "
                             f"{[_label(tokenizer, i) for i in encoded]}")
        ids.append(encoded[0])
    return ids


def loss_text(losses) -> str:
    """The loss line's value: first -> last mean loss per pair, or the one value when training
    was measured once (``a -> a`` would read as no training at all).

    >>> loss_text([(10, 4.5), (20, 3.25)]), loss_text([(10, 4.5)]), loss_text([])
    ('4.5000 -> 3.2500', '4.5000 (measured once)', '-')
    """
    if not losses:
        return "-"
    if len(losses) == 1:
        return f"{losses[0][1]:.4f} (measured once)"
    return f"{losses[0][1]:.4f} -> {losses[-1][1]:.4f}"


def save_plot(emb, path: str, title: str = "") -> None:
    """Drift and norm of every input row against its frequency, and the loss curve, as a PNG
    (written atomically). Needs matplotlib."""
    from ..analysis.common import pyplot, save_figure

    plt = pyplot()
    x = emb.frequency + 1
    absent = emb.frequency == 0
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, values, name in ((axes[0], emb.drift, "drift from the initial row (L2)"),
                             (axes[1], emb.norm, "row norm (L2)")):
        ax.scatter(x[~absent], values[~absent], s=3, alpha=0.4, label="seen in the embedding corpus")
        ax.scatter(x[absent], values[absent], s=6, color="crimson", label=f"never seen ({int(absent.sum())})")
        ax.set_xscale("log")
        ax.set_xlabel("frequency in the embedding corpus + 1")
        ax.set_ylabel(name)
        ax.legend(loc="upper left", fontsize=8)
    pairs, losses = zip(*emb.losses) if emb.losses else ((), ())
    axes[2].plot(pairs, losses)
    axes[2].set_xlabel("(center, context) pairs seen")
    axes[2].set_ylabel("mean loss per pair")
    axes[2].set_title(f"{emb.tokens_per_second:,.0f} tokens/s")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path, bbox_inches=None)


def _cmd_skipgram(args: argparse.Namespace) -> int:
    from ..analysis.skipgram import skipgram  # Numba loads here, not when the CLI starts

    if args.plot is not None:  # (where it goes first; its name's format once it is known to be no input)
        check_out_file(args.plot, "--plot", "the image file")
    files = input_files(args.files)
    check_not_an_input(args.plot, "--plot", files)
    check_plot_format(args.plot)
    tokenizer = resolve_tokenizer(tokenizer_specs(args.tokenizer)[0][1])
    neighbour_ids = _token_ids(tokenizer, flatten(args.neighbours))
    analogies = []
    for parts in args.analogy:
        if len(parts) != 3:
            raise ValueError(f"--analogy {','.join(parts)!r}: give three tokens a,b,c (a is to b as c is to ?)")
        analogies.append(_token_ids(tokenizer, parts))
    texts = read_documents(files, args.max_bytes, args.documents)
    emb = skipgram(tokenizer, texts, dim=args.dim, window=args.window, negatives=args.negatives,
                   epochs=args.epochs, batch_size=args.batch_size, optimizer=args.optimizer, lr=args.lr,
                   seed=args.seed, threads=args.threads)
    rank = None
    if tokenizer.merge_counts is not None:  # each token's count in the tokenizer's own corpus
        rank = np.zeros(emb.input.shape[0], dtype=np.int64)
        made = tokenizer.merge_ids.tolist()
        for (a, b), count in zip(made, tokenizer.merge_counts):
            new = tokenizer._ids[tokenizer.token_bytes[a] + tokenizer.token_bytes[b]]
            rank[new] = max(rank[new], count)
    # (no more than there are tokens: a number past 2**63, which --candidates takes, is no k the API takes)
    candidates = emb.candidates(min(args.candidates, emb.input.shape[0]), max_frequency=args.rare, rank=rank)
    drift, norm = emb.drift, emb.norm
    result = {
        "command": "skipgram",
        "tokenizer": args.tokenizer,
        "documents": len(texts),
        "tokens": emb.tokens,
        "pairs": emb.pairs,
        "vocab_rows": int(emb.input.shape[0]),
        "cpu_seconds": emb.seconds,
        "tokens_per_second": emb.tokens_per_second,
        "loss_start": emb.losses[0][1] if emb.losses else None,
        "loss_end": emb.losses[-1][1] if emb.losses else None,
        "loss_curve": [[p, l] for p, l in emb.losses],
        "options": emb.options,
        "by_frequency": emb.by_frequency(),
        "never_seen": int((emb.frequency == 0).sum()),
        "candidates": [{"id": int(i), "token": _label(tokenizer, int(i)), "frequency": int(emb.frequency[i]),
                        "tokenizer_count": None if rank is None else int(rank[i]),
                        "drift": float(drift[i]), "norm": float(norm[i])} for i in candidates.tolist()],
        "neighbours": {},
        "analogies": [],
    }
    # (-k past the rows there are lists them all: the neighbours of another row, and the
    # answers but the analogy's own three rows)
    rows = len(emb.input)
    if neighbour_ids:
        idx, score = emb.neighbours(neighbour_ids, k=min(args.k, max(rows - 1, 0)))
        for i, row, srow in zip(neighbour_ids, idx.tolist(), score.tolist()):
            result["neighbours"][_label(tokenizer, i)] = [[_label(tokenizer, j), s] for j, s in zip(row, srow)]
    for a, b, c in analogies:
        idx, score = emb.analogy(a, b, c, k=min(args.k, max(rows - 3, 0)))
        result["analogies"].append({"query": [_label(tokenizer, t) for t in (a, b, c)],
                                    "answers": [[_label(tokenizer, j), float(s)]
                                                for j, s in zip(idx.tolist(), score.tolist())]})
    if args.plot:
        save_plot(emb, args.plot, f"skip-gram rows of {os.path.basename(args.tokenizer)} on "
                                  f"{', '.join(os.path.basename(f) for f in files)}")
        result["plot"] = args.plot
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"tokens          {emb.tokens:,} ({count_of(len(texts), 'document')}, "
          f"{count_of(emb.options['epochs'], 'epoch')}), {emb.pairs:,} pairs")
    print(f"speed           {emb.tokens_per_second:,.0f} tokens/s ({emb.seconds:.2f} s CPU)")
    print(f"loss per pair   {loss_text(emb.losses)}")
    print(f"never seen      {result['never_seen']:,} of {emb.input.shape[0]:,} rows (exactly at their initial values)")
    print("\nfrequency band      tokens  median drift  max drift  median norm")
    for band in result["by_frequency"]:
        hi = "+" if band["max_frequency"] is None else f"-{band['max_frequency']}"
        name = f"{band['min_frequency']}{hi}" if band["min_frequency"] != band["max_frequency"] else str(band["min_frequency"])
        print(f"{name:<18} {band['tokens']:>7}  {band['median_drift']:12.4f}  {band['max_drift']:9.4f}  "
              f"{band['median_norm']:11.4f}")
    print(f"\nglitch candidates (seen at most {args.rare} times"
          + (", by count in the tokenizer's corpus)" if rank is not None else ", least drift first)"))
    for c in result["candidates"]:
        extra = "" if c["tokenizer_count"] is None else f"  tokenizer count {c['tokenizer_count']:,}"
        print(f"  {c['id']:>7}  {shown_label(c['token']):<24} frequency {c['frequency']:<4} "
              f"drift {c['drift']:.4f}{extra}")
    for token, row in result["neighbours"].items():
        print(f"\nnearest to {shown_label(token)}: " + ", ".join(f"{shown_label(t)} {s:.3f}" for t, s in row))
    for a in result["analogies"]:
        q = a["query"]
        print(f"\n{shown_label(q[0])} : {shown_label(q[1])} :: {shown_label(q[2])} : "
              + ", ".join(f"{shown_label(t)} {s:.3f}" for t, s in a["answers"]))
    if args.plot:
        print(f"\nwrote {args.plot}")
    return 0


def add_skipgram_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``fastbpe skipgram FILES --tokenizer T``."""
    p = subparsers.add_parser(
        "skipgram", help="skip-gram embeddings of token ids; find the rows training never moved",
        description="Train skip-gram embeddings with negative sampling (Mikolov et al. 2013) on the token ids "
                    "of a corpus, then report how far each row moved from its initialisation against the "
                    "token's frequency: tokens of the tokenizer that the corpus rarely or never uses keep "
                    "near-initial rows (glitch-token candidates). Nearest neighbours and analogies by cosine.")
    p.add_argument("files", nargs="+", help="the embedding corpus: text files, folders or globs")
    add_tokenizer_option(p, repeatable=False)
    p.add_argument("--max-bytes", type=size_arg, default=2_000_000, help="read at most this many bytes of the files, in order (the file that crosses the "
                        "limit ends at its last whole line before it, or at a character boundary)")
    p.add_argument("--documents", choices=("block", "line", "file"), default="block",
                   help="what one document is (windows never cross documents)")
    p.add_argument("--dim", type=int_at_least(1), default=64, help="embedding width")
    p.add_argument("--window", type=int_at_least(1), default=5, help="largest distance of a context token")
    p.add_argument("--negatives", type=int_at_least(1), default=5, help="negative samples per pair")
    p.add_argument("--epochs", type=int_at_least(1), default=1, help="passes over the corpus")
    p.add_argument("--batch-size", type=int_at_least(1), default=1024, help="center tokens per step")
    p.add_argument("--optimizer", choices=("adam", "sgd"), default="adam", help="update rule for the touched rows")
    p.add_argument("--lr", type=positive_float, default=None, help="learning rate (default: 0.01 adam, 0.025 sgd)")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="seed of the initialisation and of every sample")
    p.add_argument("--threads", type=int_at_least(1), default=None, help="Numba threads (default: Numba's setting)")
    p.add_argument("--rare", type=int_at_least(0), default=0,
                   help="glitch candidates: tokens seen at most this many times")
    p.add_argument("--candidates", type=int_at_least(0), default=20, help="how many glitch candidates to list")
    p.add_argument("--neighbours", action="append", type=token_list, default=[], metavar="TOKEN",
                   help="tokens (each one token of the tokenizer) to list nearest neighbours of: repeat the flag, "
                        "or give a comma-separated list; \\, is a literal comma (--neighbours '\\,' asks for the "
                        "comma) (default: none)")
    p.add_argument("--analogy", action="append", type=token_list, default=[], metavar="A,B,C",
                   help="a is to b as c is to ? (repeatable; \\, is a literal comma) (default: none)")
    p.add_argument("-k", type=int_at_least(1), default=5, help="neighbours and analogy answers to list")
    add_report_options(p, plot="a scatter of drift and norm against frequency, and the loss curve")
    p.set_defaults(run=_cmd_skipgram)
    return p
