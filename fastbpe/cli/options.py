"""What every ``fastbpe`` subcommand shares: the parser class (one error format, exit code 2),
the help formatter (every default shown), and the parsers of sizes, counts, rates and special-token
lists."""
import argparse
import os
import re
import sys
from decimal import Decimal, localcontext
from typing import List, NoReturn, Optional, Sequence

from ..fileio import file_above

__all__ = ["Parser", "HelpFormatter", "parse_size", "size_arg", "int_at_least", "positive_float",
           "special_token_list", "split_token_list", "token_list", "flatten",
           "fail", "add_learning_options", "add_tokenizer_option", "add_report_options", "tokenizer_specs",
           "add_scheduler_option", "check_out_file", "check_plot_file", "check_plot_format", "check_not_an_input",
           "in_option_words",
           "report_stream"]

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
    >>> parse_size("1e23") == 10**23
    True
    """
    match = _SIZE.fullmatch(text.strip())
    unit = match.group("unit").lower() if match else ""
    if unit.endswith("b"):
        unit = unit[:-1]
    if match is None or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size (examples: 100000, 1e8, 100M, 4MiB)")
    number = match.group("number").replace("_", "")
    if "." in number or "e" in number.lower():
        written = Decimal(number)  # (not a float: 1e23 is 10**23, not 99999999999999991611392)
        if written.adjusted() > 60:  # (no size is that large; its integer could take long to make)
            raise ValueError(f"{text!r} is too large a size")
        with localcontext() as context:  # (exact: digits beyond the default 28 are kept)
            context.prec = 120
            exact = written * _UNITS[unit]
        if exact != exact.to_integral_value():
            raise ValueError(f"{text!r} is not a whole number")
        value = int(exact)
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


def nonempty(text: str) -> str:
    """An argparse type: text of at least one character (``--word ''`` traced nothing)."""
    if not text:
        raise argparse.ArgumentTypeError("is empty")
    return text


def int_at_least(minimum: int):
    """An argparse type: a whole number >= ``minimum``, refused while the command line is read
    (before any file is opened), so ``--workers 0`` never starts a run that fails later.

    >>> int_at_least(1)("3")
    3
    """
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r}: must be at least {minimum}")
        return value
    parse.__name__ = f"int >= {minimum}"
    return parse


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0 (``nan``, ``inf`` and ``0`` are refused).

    >>> positive_float("0.01")
    0.01
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: must be a finite number above 0")
    return value


def count_of(n: int, noun: str) -> str:
    """``n`` of a ``noun`` in words.

    >>> count_of(1, "file"), count_of(12000, "file")
    ('1 file', '12,000 files')
    """
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def shown_label(label: str) -> str:
    r"""A token's label (its text, with ``\xNN`` for each byte that is no UTF-8: ``decode(...,
    "backslashreplace")``, as the JSON results hold it) quoted for a table, each character as
    ``repr`` writes it, except that such a byte keeps its one backslash and a character
    ``repr`` would write ``\xNN`` is written ``\u00NN``: the byte 0x85 and the character U+0085,
    a backslash and an ``n`` and a line end all look different.

    >>> print(shown_label(b"\xe2\x82".decode("utf-8", "backslashreplace")), shown_label(" the\n"),
    ...       shown_label("\\n"), shown_label("\x85"), shown_label("it's"))
    '\xe2\x82' ' the\n' '\\n' '\u0085' 'it\'s'
    """
    out = []
    at = 0
    while at < len(label):
        byte = _BYTE_ESCAPE.match(label, at)
        if byte:
            out.append(byte.group())
            at = byte.end()
            continue
        char = label[at]
        written = "\\'" if char == "'" else repr(char)[1:-1]
        out.append("\\u00" + written[2:] if written.startswith("\\x") else written)
        at += 1
    return "'" + "".join(out) + "'"


# a byte that is no UTF-8, as backslashreplace writes it
_BYTE_ESCAPE = re.compile(r"\\x[0-9a-f]{2}")


def check_out_file(out: str, option: str = "--out", what: str = "the tokenizer file") -> None:
    """Refuse an ``--out`` (or another ``option`` naming a file to write, ``what``) that could
    only fail once the work is done: empty, a folder, in a folder that does not exist (or is a
    file), where this user may not write (the folder of a new file or of the file a link
    names; a device such as ``/dev/null`` itself, which is written into), or with a name longer
    than the file system takes."""
    if not out:
        raise ValueError(f"{option} is empty; give {what} to write")
    if os.path.isdir(out):
        raise ValueError(f"{option} {out!r} is a folder; give {what} to write in it")
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        above = file_above(out)
        if above is not None:
            raise ValueError(f"{option} {out!r} is under {above!r}, which is a file, not a folder")
        raise ValueError(f"the folder of {option} {out!r} does not exist")
    if os.path.exists(out) and not os.path.isfile(out):  # (a device, a pipe: written into)
        if not os.access(out, os.W_OK):
            raise ValueError(f"{option} {out!r} is not writable")
        return
    folder = os.path.dirname(os.path.realpath(out))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {out!r}: its folder {folder!r} is not writable")
    name_max = os.pathconf(folder, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
    if len(os.fsencode(os.path.basename(out))) > name_max:
        raise ValueError(f"{option} {out[:60]!r}...: its name is longer than a file's name can be here "
                         f"({name_max} bytes)")


def report_stream(out: str):
    """Where a command prints its summary: stdout, unless ``out`` (the file it writes) is stdout
    itself (``-o /dev/stdout``), whose bytes the summary would follow: then stderr."""
    try:
        same = os.path.samestat(os.stat(out), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):  # (no such file yet, or no stdout descriptor)
        same = False
    return sys.stderr if same else sys.stdout


# What --plot writes, by the file's extension (the formats matplotlib's Agg backend writes alone)
PLOT_FORMATS = (".png", ".pdf", ".svg")


def check_input_file(path: str, option: str) -> None:
    """The file an option names exists: said before any work, not once a command's first
    steps are done (nor is the name read as a text)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"{option} {path[:200]!r}: no such file")


def check_plot_file(plot: Optional[str]) -> None:
    """:func:`check_out_file` for ``--plot`` (when given), whose name says the format
    (``PLOT_FORMATS``): drawing comes last, after the work."""
    if plot is not None:
        check_out_file(plot, "--plot", "the image file")
        check_plot_format(plot)


def check_plot_format(plot: Optional[str]) -> None:
    """Refuse a ``--plot`` (when given) whose name says no format it is written in."""
    if plot is not None and os.path.splitext(plot)[1].lower() not in PLOT_FORMATS:
        raise ValueError(f"--plot {plot!r}: name the file .png, .pdf or .svg, the format it is written in")


def check_not_an_input(path: Optional[str], option: str, inputs: Sequence) -> None:
    """Refuse an output ``path`` that is one of the files the command reads (``inputs``: paths,
    any of them a folder or a glob, which name no file by themselves): writing it would replace
    that file, a corpus with a tokenizer or a picture."""
    if not path or not os.path.isfile(path):
        return
    for given in inputs:
        try:
            same = os.path.isfile(given) and os.path.samefile(path, given)
        except (OSError, TypeError, ValueError):  # (a path the system cannot look at names no file)
            continue
        if same:
            raise ValueError(f"{option} {path!r} is also an input ({os.fspath(given)!r}); writing it would "
                             "replace that file: give another name")


def split_token_list(text: str, what: str = "special token") -> List[str]:
    r"""The tokens of one ``--special-token`` value (or of another option taking tokens, each a
    ``what``): a comma-separated list (``\,`` is a literal comma inside a token); empty items
    are an error.

    >>> split_token_list("<|endoftext|>,<|pad|>")
    ['<|endoftext|>', '<|pad|>']
    >>> split_token_list(r"<a\,b>")
    ['<a,b>']
    """
    items = [item.replace("\0", ",") for item in text.replace("\\,", "\0").split(",")]
    if any(not item for item in items):
        raise ValueError(f"{text!r}: empty {what} (separate tokens with one comma; \\, is a comma in a token)")
    return items


def special_token_list(text: str) -> List[str]:
    try:
        return split_token_list(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def token_list(text: str) -> List[str]:
    """:func:`split_token_list` for argparse, of ordinary tokens (``--neighbours``)."""
    try:
        return split_token_list(text, "token")
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


# The API's words for what the command line calls options, as they appear in the API's
# messages (the error of a command is the API's, so it would name keyword arguments).
_OPTION_WORDS = (
    ("errors='replace'", "--errors replace"), ("errors='bytes'", "--errors bytes"), ("(resume=False)", "(--no-resume)"),
    ("vocab_size=", "--vocab-size "), ("special_tokens names", "--special-token names"),
    ("give vocab and d_model, or a preset", "give --vocab and --d-model, or --preset"), ("params=", "--params "),
    (": lower lr (", ": lower --lr ("),
)
_OPTION_NAMES = re.compile(r"(?<![\w/.-])(shard_size|block_size|partition_size|num_merges|min_frequency|vocab_size)"
                           r"(?![\w/.-])")


def in_option_words(message: str) -> str:
    """An API error message in the command line's words: its keyword arguments named as the
    options that set them.

    >>> in_option_words("x: already holds shards of another job (other block_size, format)")
    'x: already holds shards of another job (other --block-size, format)'
    >>> in_option_words("vocab_size=1 is smaller than the 256 base symbols")
    '--vocab-size 1 is smaller than the 256 base symbols'
    """
    for api, option in _OPTION_WORDS:
        message = message.replace(api, option)
    return _OPTION_NAMES.sub(lambda m: "--" + m.group(1).replace("_", "-"), message)


def say_warning(message: str) -> None:
    """Print ``fastbpe: warning: message`` on stderr (the command goes on)."""
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def fail(message: str) -> NoReturn:
    """Print ``fastbpe: error: message`` and exit with code 2 (a user error)."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def flatten(lists: Sequence[Sequence[str]]) -> List[str]:
    return [item for items in lists or () for item in items]


def add_learning_options(parser: argparse.ArgumentParser) -> None:
    """The options that say how merges are learned, shared by ``train`` and ``trace``."""
    parser.add_argument("--unit", choices=("bytes", "chars"), default="bytes",
                        help="base symbols: the 256 bytes (any text encodes) or the corpus's characters")
    parser.add_argument("--pattern", "--pretokenizer", dest="pattern", default="gpt2",
                        help="the split pattern: a name (gpt2, cl100k, o200k, llama3, qwen, tekken, "
                             "whitespace) or a regex (--pretokenizer is its former name)")
    parser.add_argument("--min-frequency", type=int_at_least(0), default=2,
                        help="stop when the most frequent pair occurs fewer times than this")
    parser.add_argument("--word-start", default=None, metavar="MARK",
                        help="a symbol put before every chunk (Sennrich et al. 2016 mark word ends with one; "
                             "the worked example of BPE by hand marks word starts with _) (default: none)")
    parser.add_argument("--word-end", default=None, metavar="MARK", help="a symbol put after every chunk (default: none)")


def add_tokenizer_option(parser: argparse.ArgumentParser, *, repeatable: bool, required: bool = True) -> None:
    """``--tokenizer [LABEL=]NAME_OR_PATH``: a tokenizer file (any format ``fastbpe.load``
    reads, or GPT-2's encoder.json/vocab.bpe or their folder) or an OpenAI encoding name found
    in the folder $FASTBPE_ENCODINGS; LABEL names it in tables and plots."""
    help_text = ("a tokenizer: a file fastbpe reads (tokenizer.json, NAME.tiktoken, NAME.fastbpe.json, GPT-2's "
                 "encoder.json/vocab.bpe or their folder) or an OpenAI encoding name (cl100k_base, o200k_base, "
                 "r50k_base, gpt2...) found in the folder $FASTBPE_ENCODINGS; LABEL= names it in the output")
    if repeatable:
        help_text += (" (repeat for several; without LABEL=, a tokenizer is named by its file or encoding, with "
                      "the folders above where two names are alike: e1/final and e2/final for "
                      "e1/final/tokenizer.json and e2/final/tokenizer.json; one label for two tokenizers is an "
                      "error)")
    if not required:
        help_text += " (default: none)"
    if repeatable:
        parser.add_argument("--tokenizer", "-t", action="append", required=required, default=None,
                            metavar="[LABEL=]NAME_OR_PATH", help=help_text)
    else:
        parser.add_argument("--tokenizer", "-t", action=_GivenOnce, required=required, default=None,
                            metavar="[LABEL=]NAME_OR_PATH", help=help_text)


class _GivenOnce(argparse.Action):
    """An option of one value that refuses a second (argparse keeps the last, silently: ``-t a
    -t b`` ran on b alone where other commands take both)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest) is not None:
            parser.error(f"{option_string} is given twice ({getattr(namespace, self.dest)!r} and {values!r}): "
                         "this command takes one")
        setattr(namespace, self.dest, values)


def tokenizer_specs(values) -> List:
    """``(label, name_or_path)`` of each ``--tokenizer`` value. ``LABEL=`` is read as a label
    only when what precedes ``=`` names no existing file and holds no path separator. Without
    one, the label is the file's or the encoding's name, with the folders above where two
    coincide (:func:`fastbpe.analysis.common.tokenizer_labels`). A label given to two
    tokenizers is an error: each names a column of the output.

    >>> tokenizer_specs(["cl100k_base", "mine=runs/t.json"])
    [('cl100k_base', 'cl100k_base'), ('mine', 'runs/t.json')]
    >>> tokenizer_specs(["e1/final/tokenizer.json", "e2/final/tokenizer.json"])
    [('e1/final', 'e1/final/tokenizer.json'), ('e2/final', 'e2/final/tokenizer.json')]
    """
    import os

    from ..analysis.common import check_labels, tokenizer_labels

    values = [values] if isinstance(values, str) else list(values or [])
    specs = []
    for value in values:
        label, sep, rest = value.partition("=")
        if sep and label and rest and os.sep not in label and not os.path.exists(value):
            specs.append((label, rest))
        else:
            specs.append((None, value))
    unnamed = [i for i, (label, _) in enumerate(specs) if label is None]
    for i, label in zip(unnamed, tokenizer_labels([specs[i][1] for i in unnamed])):
        specs[i] = (label, specs[i][1])
    check_labels([label for label, _ in specs], values, "name each with its own LABEL= (--tokenizer LABEL=PATH)")
    return specs


def loaded_tokenizers(values) -> List:
    """``(label, Tokenizer)`` of each ``--tokenizer`` value (:func:`tokenizer_specs`), every one
    loaded before a command works with any: a missing file or an unknown name is said at once,
    not after the tokenizers before it were audited or measured."""
    from ..encode.registry import resolve_tokenizer

    return [(label, resolve_tokenizer(spec)) for label, spec in tokenizer_specs(values)]


def add_report_options(parser: argparse.ArgumentParser, *, plot: Optional[str] = None) -> None:
    """``--json`` (the result as one JSON object instead of the table) and, where a picture
    helps, ``--plot FILE.png`` (``plot`` says what it draws; it needs matplotlib)."""
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object instead of a table")
    if plot:
        parser.add_argument("--plot", default=None, metavar="FILE.png",
                            help=f"draw {plot} to FILE.png (or .pdf, .svg; needs matplotlib) (default: no plot)")


def add_scheduler_option(parser: argparse.ArgumentParser, work: str) -> None:
    """``--scheduler ADDRESS``: run ``work`` on the workers of a Dask cluster."""
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help=f"a Dask scheduler's address (tcp://host:8786): {work} on its workers, which "
                             "must read the input files under the same paths and run the same fastbpe "
                             "version (default: this machine only)")
