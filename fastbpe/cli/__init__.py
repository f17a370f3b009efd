"""The ``fastbpe`` command: one argparse tree, one subcommand module each (``train``, ``encode``,
``extend``, and the analyses ``tax``, ``cost``, ``trace``, ``audit``, ``skipgram``).

Every user error (a bad option, a missing file, invalid input) is reported the same way,
``fastbpe: error: ...`` on stderr, with exit code 2. Ctrl-C (SIGINT) and SIGTERM stop the command
the same way: what it was writing is removed (files are written whole or not at all), one line
says so, and the exit code is 130 or 143 (128 + the signal's number, as shells report).
"""
import signal
import sys
import threading
from typing import Optional, Sequence

from .audit import add_audit_subcommand
from .cost import add_cost_subcommand
from .encode import add_encode_subcommand
from .extend import add_extend_subcommand
from .options import Parser, fail, parse_size
from .skipgram import add_skipgram_subcommand
from .tax import add_tax_subcommand
from .trace import add_trace_subcommand
from .train import add_train_subcommand, default_corpus

__all__ = ["main", "build_parser", "default_corpus", "parse_size"]


def _version() -> str:
    from .. import __version__

    return __version__


def build_parser() -> Parser:
    parser = Parser(prog="fastbpe", description="Train and use byte-pair-encoding tokenizers.")
    parser.add_argument("--version", action="version", version=f"fastbpe {_version()}")
    commands = "{train,encode,extend,tax,cost,trace,audit,skipgram}"
    sub = parser.add_subparsers(dest="command", required=True, metavar=commands, parser_class=Parser)
    add_train_subcommand(sub)
    add_encode_subcommand(sub)
    add_extend_subcommand(sub)
    add_tax_subcommand(sub)
    add_cost_subcommand(sub)
    add_trace_subcommand(sub)
    add_audit_subcommand(sub)
    add_skipgram_subcommand(sub)
    return parser


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM while the command runs, so that it unwinds (and
    cleans up) as after Ctrl-C."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; returns its exit code (0, 2 for a user error, 130 after Ctrl-C, 143
    after SIGTERM)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) or a usage error (2, already reported)
        return exc.code if isinstance(exc.code, int) else 2
    # only the main thread may set handlers; a caller's own SIGTERM handler is left alone
    own_sigterm = (threading.current_thread() is threading.main_thread()
                   and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
    if own_sigterm:
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        try:
            return args.run(args)
        finally:  # (inside the handlers below: a Ctrl-C that lands here is reported as any other)
            if own_sigterm:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    except (ValueError, OSError, ImportError) as exc:  # bad input, missing files, .zst without zstandard
        try:
            fail(str(exc))
        except SystemExit as stop:
            return stop.code
    except Terminated:
        print("fastbpe: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("fastbpe: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
