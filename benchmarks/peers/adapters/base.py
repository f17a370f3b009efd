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


# The published vocabularies the peers' encoders can load, beside OpenAI's: Llama 3's
# ``tokenizer.json`` (its ids are checked against HF ``tokenizers`` on the same file).
LLAMA3_JSON = "tokenizers/llama3/tokenizer.json"
OPENAI_VOCABULARIES = ("cl100k_base", "o200k_base")


def published_file(vocabulary: str):
    """The shared-data file of a published vocabulary: ``cl100k_base`` / ``o200k_base`` /
    ``r50k_base`` -> its ``.tiktoken`` rank file, ``llama3`` -> its ``tokenizer.json``; skips (the
    run says why) when the file is absent or the vocabulary unknown."""
    from ...suites import common

    if vocabulary == "llama3":
        path = common.data_file(LLAMA3_JSON)
    elif vocabulary.endswith("_base"):
        path = common.tiktoken_file(vocabulary)
    else:
        common.skip(f"no published vocabulary named {vocabulary!r}")
    if path is None:
        common.skip(f"the file of {vocabulary} is not in the shared data")
    return path


def flat_rows(ids: bytes, offsets: bytes) -> List[Sequence[int]]:
    """One id array per document from a flat batch result: ``ids`` the concatenated ids as
    little-endian uint32, ``offsets`` the ``documents + 1`` row starts as uint64 (the layout of
    fastokens' and splintr's ``encode_batch_flat``). Views, not copies: cheap to time.

    >>> import numpy as np
    >>> rows = flat_rows(np.array([1, 2, 3], "<u4").tobytes(), np.array([0, 2, 3], "<u8").tobytes())
    >>> [r.tolist() for r in rows]
    [[1, 2], [3]]
    """
    import numpy as np

    flat, starts = np.frombuffer(ids, "<u4"), np.frombuffer(offsets, "<u8")
    return [flat[starts[i]:starts[i + 1]] for i in range(len(starts) - 1)]


def lines_of(docs: List[str]) -> List[str]:
    """The documents' lines without their newlines: what line-based libraries are given."""
    return [line for doc in docs for line in doc.split("\n")]


class PublishedEncoders(Adapter):
    """A library that only encodes here, with published vocabularies (``<name>:cl100k_base``):
    ``vocabularies`` says which it loads, :meth:`load` builds the encoder of one."""

    vocabularies: Tuple[str, ...] = ()

    @property
    def specs(self) -> List[str]:
        """The encoder specs this library offers, in order."""
        return [f"{self.name}:{v}" for v in self.vocabularies]

    def encoder(self, spec, out_dir, threads):
        kind, _, vocabulary = spec.partition(":")
        if kind != self.name or not vocabulary:
            return super().encoder(spec, out_dir, threads)
        if vocabulary not in self.vocabularies:
            from ...suites import common

            common.skip(f"{self.name} does not load {vocabulary} here")
        return self.load(vocabulary, threads)

    def load(self, vocabulary: str, threads: int) -> Encoder:
        raise NotImplementedError(vocabulary)
