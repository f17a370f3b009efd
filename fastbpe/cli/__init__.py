"""The ``fastbpe`` command: one argparse tree, one subcommand module each (``train``, ``encode``)."""
import argparse
import sys
from typing import Optional, Sequence

from .encode import add_encode_subcommand
from .train import add_train_subcommand, default_corpus

__all__ = ["main", "build_parser", "default_corpus"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fastbpe", description="Train and use byte-pair-encoding tokenizers.")
    sub = parser.add_subparsers(dest="command", required=True)
    add_train_subcommand(sub)
    add_encode_subcommand(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, OSError) as exc:
        print(f"fastbpe: error: {exc}", file=sys.stderr)
        return 2
