"""What every ``fastbpe`` subcommand shares: the parser class (one error format, exit code 2),
the help formatter (every default shown), and the parsers of sizes and special-token lists."""
import argparse
import re
import sys
from typing import List, NoReturn, Sequence

__all__ = ["Parser", "HelpFormatter", "parse_size", "size_arg", "special_token_list", "split_token_list",
           "fail", "add_scheduler_option"]

PROG = "fastbpe"

_SIZE = re.compile(r"(?P<number>[0-9][0-9_]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*(?P<unit>[a-zA-Z]*)")
_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
          "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}


def parse_size(text: str) -> int:
    """A positive whole number written the way people write sizes: ``100000``, ``100_000``,
    ``1e8``, ``100M`` / ``100MB`` (powers of 1000), ``4Mi`` / ``4MiB`` (powers of 1024).
    ValueError for anything else (zero, a fraction, an unknown unit).

    >>> [parse_size(s) for s in ("1e8", "100M", "4MiB", "2k", "1_000", "1.5K", "7")]
    [100000000, 100000000, 4194304, 2000, 1000, 1500, 7]
    """
    match = _SIZE.fullmatch(text.strip())
    unit = match.group("unit").lower() if match else ""
    if unit.endswith("b"):
        unit = unit[:-1]
    if match is None or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size (examples: 100000, 1e8, 100M, 4MiB)")
    number = match.group("number").replace("_", "")
    if "." in number or "e" in number.lower():
        value = float(number) * _UNITS[unit]
        if value != int(value):
            raise ValueError(f"{text!r} is not a whole number")
        value = int(value)
    else:
        value = int(number) * _UNITS[unit]
    if value < 1:
        raise ValueError(f"{text!r}: the size must be at least 1")
    return value


def size_arg(text: str) -> int:
    """:func:`parse_size` for argparse (its errors become argparse's usage errors)."""
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def split_token_list(text: str) -> List[str]:
    r"""The tokens of one ``--special-token`` value: a comma-separated list (``\,`` is a literal
    comma inside a token); empty items are an error.

    >>> split_token_list("<|endoftext|>,<|pad|>")
    ['<|endoftext|>', '<|pad|>']
    >>> split_token_list(r"<a\,b>")
    ['<a,b>']
    """
    items = [item.replace("\0", ",") for item in text.replace("\\,", "\0").split(",")]
    if any(not item for item in items):
        raise ValueError(f"{text!r}: empty special token (separate tokens with one comma)")
    return items


def special_token_list(text: str) -> List[str]:
    try:
        return split_token_list(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's default in its help (``(default: ...)``), except where there is none."""

    def _get_help_string(self, action):
        if action.default in (None, False, [], argparse.SUPPRESS) or "%(default)" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """argparse with the one error format of the command: ``fastbpe: error: ...``, exit code 2."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        kwargs.setdefault("allow_abbrev", False)  # --vocab is not silently --vocab-size
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        fail(message)


def fail(message: str) -> NoReturn:
    """Print ``fastbpe: error: message`` and exit with code 2 (a user error)."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def flatten(lists: Sequence[Sequence[str]]) -> List[str]:
    return [item for items in lists or () for item in items]


def add_scheduler_option(parser: argparse.ArgumentParser, work: str) -> None:
    """``--scheduler ADDRESS``: run ``work`` on the workers of a Dask cluster."""
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help=f"a Dask scheduler's address (tcp://host:8786): {work} on its workers, which "
                             "must read the input files under the same paths and run the same fastbpe "
                             "version (default: this machine only)")
