"""The ``fastbpe`` command: one argparse tree, one subcommand module each (``train``, ``encode``,
``extend``, and the analyses ``tax``, ``cost``, ``trace``, ``audit``, ``skipgram``).

Every user error (a bad option, a missing file, invalid input) is reported the same way,
``fastbpe: error: ...`` on stderr, with exit code 2. Ctrl-C (SIGINT) and SIGTERM stop the command
the same way: what it was writing is removed (files are written whole or not at all), one line
says so, and the exit code is 130 or 143 (128 + the signal's number, as shells report).
"""
import os
import queue
import signal
import sys
import threading
import time
import warnings
from importlib import import_module
from typing import Optional, Sequence

from .options import Parser, check_not_an_input, fail, in_option_words, parse_size, say_warning

__all__ = ["main", "build_parser", "default_corpus", "parse_size"]

# The commands, each with the line ``fastbpe --help`` shows for it. A command's module (and
# what it imports: the trainer, the analyses) loads only when that command is parsed or its
# help shown, so that ``fastbpe encode`` starts without the others. Each module's add_parser
# call repeats the line (checked when it loads).
COMMANDS = {
    "train": "learn a BPE tokenizer from text files",
    "encode": "encode text files into token shards (npy, raw or llm.c)",
    "extend": "append merges learned on new text to an existing tokenizer",
    "tax": "the token premium of each language on a parallel corpus",
    "cost": "what a vocabulary costs a model: tables, bytes, lm_head FLOPs, logits",
    "trace": "a training run merge by merge; the order a word's merges fire in",
    "audit": "unreachable, non-UTF-8 and never-produced tokens; how digit runs split",
    "skipgram": "skip-gram embeddings of token ids; find the rows training never moved",
}


class _CommandParser(Parser):
    """A command's parser, registered by name and help line; its module adds its arguments
    (``add_NAME_subcommand``) the first time it parses, prints help or is asked a default."""

    _command: Optional[str] = None  # the command whose arguments are still to be added

    def _filled(self) -> "_CommandParser":
        command, self._command = self._command, None
        if command is not None:
            add = getattr(import_module(f".{command}", __name__), f"add_{command}_subcommand")
            add(_Filling(self, command))
        return self

    def parse_known_args(self, args=None, namespace=None):
        return Parser.parse_known_args(self._filled(), args, namespace)

    def format_usage(self):
        return Parser.format_usage(self._filled())

    def format_help(self):
        return Parser.format_help(self._filled())

    def get_default(self, dest):
        return Parser.get_default(self._filled(), dest)


class _Filling:
    """What a command's module is handed in place of the subparsers: its ``add_parser`` gives
    back the parser already registered, with the description (and any other settings) put in."""

    def __init__(self, parser: _CommandParser, command: str):
        self.parser, self.command = parser, command

    def add_parser(self, name: str, help: str, **settings) -> _CommandParser:
        if (name, help) != (self.command, COMMANDS[self.command]):
            raise RuntimeError(f"the {name!r} command's help line differs from fastbpe.cli.COMMANDS")
        for key, value in settings.items():
            setattr(self.parser, key, value)
        return self.parser


def default_corpus():
    """The Python standard library's sources, what ``fastbpe train`` trains on without files
    (:func:`fastbpe.cli.train.default_corpus`)."""
    from .train import default_corpus as files

    return files()


def _version() -> str:
    from .. import __version__

    return __version__


def build_parser() -> Parser:
    parser = Parser(prog="fastbpe", description="Train and use byte-pair-encoding tokenizers.")
    parser.add_argument("--version", action="version", version=f"fastbpe {_version()}")
    commands = "{train,encode,extend,tax,cost,trace,audit,skipgram}"
    sub = parser.add_subparsers(dest="command", required=True, metavar=commands, parser_class=_CommandParser)
    for name, line in COMMANDS.items():
        sub.add_parser(name, help=line)._command = name
    return parser


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM while the command runs, so that it unwinds (and
    cleans up) as after Ctrl-C."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


def _signal_again(unraisable, previous_hook) -> None:
    """``sys.unraisablehook`` while a command runs. A SIGTERM or Ctrl-C whose exception Python
    raised inside code it cannot propagate from (a weakref callback, a ``__del__``, the cycle
    collector's) would be printed as "Exception ignored" and lost, the command then running on
    to its end: the signal is sent again, by the resender thread (:func:`_resend_signals`), to
    be raised where the command unwinds (again, should it land in such code again). Any other
    exception goes to ``previous_hook``."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        # Only a put, in C: nothing here waits, where a signal would be raised inside this hook
        # and lost (a Timer started here waited for its thread, and on a loaded machine the
        # signal it sent a millisecond later landed in that wait: exit code 0).
        _RESEND.put(signal.SIGTERM if isinstance(unraisable.exc_value, Terminated) else signal.SIGINT)
        return
    previous_hook(unraisable)


_COMMAND_RUNS = threading.Event()  # set while main() runs a command with its own signal handling
_RESEND: "queue.SimpleQueue[int]" = queue.SimpleQueue()  # signals to send again (_signal_again)
RESEND_DELAY = 0.05  # seconds: time for the main thread to leave the hook before the signal comes
_resender: Optional[threading.Thread] = None


def _resend_signals() -> None:
    """The resender thread: each signal queued, sent again after RESEND_DELAY, while a command
    runs (not once main() is done: its caller's handlers are back)."""
    while True:
        signum = _RESEND.get()
        time.sleep(RESEND_DELAY)
        if _COMMAND_RUNS.is_set():
            os.kill(os.getpid(), signum)


def _start_resender() -> None:
    global _resender
    if _resender is None:
        _resender = threading.Thread(target=_resend_signals, name="fastbpe-resend-signal", daemon=True)
        _resender.start()


# The commands that do no large linear algebra: numpy's BLAS thread pool is of no use to them.
WITHOUT_BLAS = frozenset({"train", "encode", "extend", "tax", "cost", "trace", "audit"})
BLAS_THREAD_SETTINGS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_NUM_THREADS")


def _one_blas_thread(argv: Sequence[str]) -> None:
    """Ask numpy's OpenBLAS for one thread, when this process is the command (numpy not loaded
    yet), the command is one of WITHOUT_BLAS and no thread count is set: starting its pool
    costs about 0.07 s of CPU time (half of numpy's import here) and its threads spin on the
    cores the encoder's workers want, for nothing these commands use."""
    command = next((a for a in argv if not a.startswith("-")), None)
    preset = any(name in os.environ for name in BLAS_THREAD_SETTINGS)
    if command in WITHOUT_BLAS and "numpy" not in sys.modules and not preset:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; returns its exit code (0, 2 for a user error, 130 after Ctrl-C, 143
    after SIGTERM). Without ``argv`` (run as the ``fastbpe`` program) it reads ``sys.argv``."""
    if argv is None:
        _one_blas_thread(sys.argv[1:])
    # only the main thread may set handlers; a caller's own SIGTERM handler is left alone
    own_sigterm = (threading.current_thread() is threading.main_thread()
                   and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
    if own_sigterm:
        signal.signal(signal.SIGTERM, _raise_terminated)
        previous_hook = sys.unraisablehook
        sys.unraisablehook = lambda unraisable: _signal_again(unraisable, previous_hook)
        _start_resender()
        _COMMAND_RUNS.set()
    try:
        try:
            # (parsing loads the command's module and what it imports, numpy among them: a
            # Ctrl-C then is reported as one during the command, not as a traceback)
            args = build_parser().parse_args(argv)
            _check_outputs_are_not_inputs(args)
            with warnings.catch_warnings():  # (as the command's own words, not a Python source line)
                warnings.showwarning = _show_warning
                return args.run(args)
        finally:  # (inside the handlers below: a Ctrl-C that lands here is reported as any other)
            if own_sigterm:
                _COMMAND_RUNS.clear()
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                sys.unraisablehook = previous_hook
    except SystemExit as exc:  # --help, --version (0), a usage error (2, already reported)
        return exc.code if isinstance(exc.code, int) else 2
    except BrokenPipeError:
        # the reader went away (fastbpe tax ... | head): stop quietly, as a program SIGPIPE
        # ends does; stdout goes to /dev/null, so that flushing it at exit raises nothing more
        if argv is None:
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError):  # (no stdout file descriptor)
                pass
        return 128 + signal.SIGPIPE
    # bad input, missing files, .zst without zstandard; out of memory (std::bad_alloc, NumPy's)
    except (ValueError, OSError, ImportError, OverflowError, MemoryError) as exc:
        message = in_option_words(str(exc)) if not isinstance(exc, MemoryError) else (
            f"out of memory{f' ({exc})' if str(exc) else ''}: the input is too large for the memory this "
            "process may use")
        try:
            fail(message)
        except SystemExit as stop:
            return stop.code
    except Terminated:
        _exiting_after_a_signal(argv)
        print("fastbpe: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        _exiting_after_a_signal(argv)
        print("fastbpe: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning to the user (fastbpe's are UserWarnings) as the command's words; any other kind
    (NumPy's RuntimeWarning, a DeprecationWarning) as Python shows it, with where it came from."""
    if not issubclass(category, UserWarning):
        return _PYTHON_SHOW_WARNING(message, category, filename, lineno, file, line)
    say_warning(str(message))


_PYTHON_SHOW_WARNING = warnings.showwarning


# The options that name what a command writes; every other path it is given is read (but the
# tokenizer that extend rewrites in place, which it has read whole by then).
_OUTPUTS = ("out", "plot")
_REWRITTEN_IN_PLACE = {("extend", "out"): ("tokenizer",)}


def _check_outputs_are_not_inputs(args) -> None:
    """Refuse a command whose output file is one of the files it names to read."""
    values = vars(args)
    for output in _OUTPUTS:
        path = values.get(output)
        if not isinstance(path, str):
            continue
        spared = _REWRITTEN_IN_PLACE.get((values.get("command"), output), ())
        inputs = []
        for name, value in values.items():
            if name in _OUTPUTS or name in spared:
                continue
            for item in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(item, str):
                    inputs += [item, item.partition("=")[2]]  # (and the path of a LABEL=PATH)
        check_not_an_input(path, f"--{output}", inputs)


def _exiting_after_a_signal(argv: Optional[Sequence[str]]) -> None:
    """The command has stopped and cleaned up after Ctrl-C or SIGTERM: make sure the process
    ends with the exit code ``main`` returns (130 or 143), not killed by SIGINT at exit.

    Two things would do that. CPython notes a KeyboardInterrupt that escapes code run by
    ``eval`` or ``exec`` of a string (as ``namedtuple`` and ``dataclasses`` do while a module
    loads, so a Ctrl-C early in a command often lands there) as unhandled, even when it is
    caught later, and at the exit of a program run as ``python -m`` kills the process with
    SIGINT; evaluating any string clears the note. And when this process is the ``fastbpe``
    program, a second Ctrl-C or SIGTERM that lands while the interpreter shuts down (its
    handlers reset) would kill it: from here on they are ignored. A caller of ``main(argv)``
    keeps its own handlers."""
    eval("None")  # clears CPython's note of an unhandled KeyboardInterrupt (see above)
    if argv is None and threading.current_thread() is threading.main_thread():
        for name in ("SIGINT", "SIGTERM"):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
