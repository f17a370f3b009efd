"""The interface every library adapter has, and the helpers they share."""
import os
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

# An encoder: documents in, one id sequence per document (or per line, for line-based libraries).
Encoder = Callable[[List[str]], List[Sequence[int]]]
# Merges as the hex of the two tokens' bytes, in merge order: how trainers' merges are compared.
HexMerges = List[List[str]]


class Adapter:
    """One library, as the harness drives it.

    ``name`` is the prefix of its names (``hf`` in ``hf``, ``hf-count``, ``hf:gpt2``); ``module``
    what must import for it to run (None: always there); ``rows`` the table label and settings of
    each row it contributes (its trainers, then rows derived from them); ``trainers`` the rows
    ``--libs`` may ask for.
    """

    name: str = ""
    module: Optional[str] = None
    rows: Dict[str, Tuple[str, str]] = {}
    trainers: Tuple[str, ...] = ()

    def available(self) -> Optional[str]:
        """None when the library can run, else why not."""
        if self.module is None:
            return None
        try:
            __import__(self.module)
        except ImportError:
            return f"{self.module} is not installed"
        return None

    def train(self, trainer: str, corpus: str, vocab: int, min_frequency: int, threads: int,
              out_dir: str) -> Tuple[dict, Optional[HexMerges]]:
        """Train ``trainer`` on the corpus file, timed; save the model in ``out_dir`` for
        :meth:`encoder`. Returns the result (``seconds``, ``vocab``, ...; or ``skipped``) and the
        merges when the library's merges are comparable with fastbpe's (byte-level), else None."""
        raise ValueError(f"unknown trainer {trainer!r}")

    def encoder(self, spec: str, out_dir: str, threads: int) -> Encoder:
        """The encoder named ``spec``: the model trained in ``out_dir`` (``spec`` is the library's
        name) or a published vocabulary (``<name>:<vocabulary>``), on ``threads`` threads."""
        raise ValueError(f"unknown encoder {spec!r}")

    def derive(self, rows: Dict[str, dict]) -> None:
        """Add the rows computed from this library's summarised training runs (``rows``: one
        corpus size, row name -> summary), if it has any."""


class Timer:
    """Wall-clock and CPU seconds of a ``with`` block. CPU time counts every thread of this
    process and the child processes it waited for (a worker pool); on a busy machine it moves
    less than wall time, and CPU ÷ wall shows how many cores a run kept busy.

    >>> with Timer() as t:
    ...     _ = sum(range(1000))
    >>> t.seconds >= 0 and t.cpu_seconds >= 0
    True
    """

    @staticmethod
    def cpu() -> float:
        kids = os.times()
        return time.process_time() + kids.children_user + kids.children_system

    def __enter__(self) -> "Timer":
        self.start, self._cpu = time.perf_counter(), self.cpu()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self.start
        self.cpu_seconds = self.cpu() - self._cpu


def lines_of(docs: List[str]) -> List[str]:
    """The documents' lines without their newlines: what line-based libraries are given."""
    return [line for doc in docs for line in doc.split("\n")]
