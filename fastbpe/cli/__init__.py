"""The ``fastbpe`` command: one argparse tree, one subcommand module each (``train``, ``encode``,
``extend``, ``skipgram``).

Every user error (a bad option, a missing file, invalid input) is reported the same way,
``fastbpe: error: ...`` on stderr, with exit code 2.
"""
import sys
from typing import Optional, Sequence

from .encode import add_encode_subcommand
from .extend import add_extend_subcommand
from .options import Parser, fail, parse_size
from .skipgram import add_skipgram_subcommand
from .train import add_train_subcommand, default_corpus

__all__ = ["main", "build_parser", "default_corpus", "parse_size"]


def _version() -> str:
    from .. import __version__

    return __version__


def build_parser() -> Parser:
    parser = Parser(prog="fastbpe", description="Train and use byte-pair-encoding tokenizers.")
    parser.add_argument("--version", action="version", version=f"fastbpe {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{train,encode,extend,skipgram}", parser_class=Parser)
    add_train_subcommand(sub)
    add_encode_subcommand(sub)
    add_extend_subcommand(sub)
    add_skipgram_subcommand(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; returns its exit code (0, or 2 for a user error)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) or a usage error (2, already reported)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return args.run(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    except (ValueError, OSError, ImportError) as exc:  # bad input, missing files, .zst without zstandard
        try:
            fail(str(exc))
        except SystemExit as stop:
            return stop.code
    except KeyboardInterrupt:
        print("fastbpe: interrupted", file=sys.stderr)
        return 130
