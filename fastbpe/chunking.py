"""Chunk bounds as UTF-8 byte offsets: what the compiled encoder consumes.

``chunk_bounds(text, pattern)`` returns the text's UTF-8 bytes and int64 ``starts``/``ends`` of
every chunk the split pattern finds. This version runs the ``regex`` module (with
``concurrent=True``, so the GIL is released while matching) and converts character offsets to
byte offsets with NumPy; the compiled pre-tokenizer gives byte offsets directly and replaces it
behind the same signature.
"""
import functools
from typing import Tuple

import numpy as np
import regex

from ._encode import SCANNER_IDS, utf8_positions
from .pretokenize import PATTERNS

__all__ = ["chunk_bounds", "fused_pattern_id", "staged_chunk_bounds", "utf8_offsets", "pattern_source", "check_pattern"]


def pattern_source(pattern: str) -> str:
    """The regex of a named pattern (``fastbpe.pretokenize.PATTERNS``), or ``pattern`` itself.

    >>> pattern_source(r"\\S+")
    '\\\\S+'
    """
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, got {type(pattern).__name__}")
    return PATTERNS.get(pattern, pattern)


@functools.lru_cache(maxsize=64)
def _compiled(pattern: str) -> "regex.Pattern":
    try:
        return regex.compile(pattern_source(pattern))
    except regex.error as exc:
        raise ValueError(f"invalid split pattern {pattern!r}: {exc}") from None


def check_pattern(pattern: str) -> None:
    """Raise ValueError (TypeError) now for a pattern that would fail at the first encode."""
    _compiled(pattern)


def utf8_offsets(text: str) -> np.ndarray:
    """Byte offset in ``text``'s UTF-8 of every character position (``len(text) + 1`` values).

    >>> utf8_offsets("aé€😀").tolist()
    [0, 1, 3, 6, 10]
    """
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    widths = 1 + (cps >= 0x80).astype(np.int64) + (cps >= 0x800) + (cps >= 0x10000)
    out = np.zeros(len(cps) + 1, dtype=np.int64)
    np.cumsum(widths, out=out[1:])
    return out


def _split_ends_from_list(split_bytes):
    def ends(data: bytes, pattern_id: int) -> np.ndarray:
        pieces = split_bytes(data, pattern_id)
        return np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)))
    return ends


def _compiled_scanner(pattern: str):
    """``(chunk_ends, pattern id)`` of the compiled pre-tokenizer (``fastbpe._pretok``) for a
    named pattern, or None when that module or pattern is not there (then: the regex path).

    ``chunk_ends(data, pattern_id)`` (int64 end offset of every chunk) is used when the module
    has it; otherwise the offsets are summed from ``split_bytes``' list of chunks.
    """
    try:
        from . import _pretok  # the compiled scanner (its own issue); optional here
    except ImportError:
        return None
    ids = getattr(_pretok, "PATTERN_IDS", {})
    name = pattern if pattern in ids else next(
        (n for n, source in PATTERNS.items() if source == pattern and n in ids), None)  # e.g. r50k's text
    if name is None:
        return None
    ends = getattr(_pretok, "chunk_ends", None) or _split_ends_from_list(_pretok.split_bytes)
    return ends, ids[name]


@functools.lru_cache(maxsize=64)
def fused_pattern_id(pattern: str):
    """The id (``_encode.SCANNER_IDS``) of the compiled scanner for ``pattern`` (a name or a
    named pattern's regex), for ``BPECore.encode_text``, which splits and encodes in one pass;
    None when there is none (then: :func:`chunk_bounds`).

    >>> fused_pattern_id("cl100k") == fused_pattern_id(PATTERNS["cl100k"]) != None
    True
    >>> fused_pattern_id("whitespace") is None, fused_pattern_id(r"\\S+") is None
    (True, True)
    """
    if pattern in SCANNER_IDS:
        return SCANNER_IDS[pattern]
    return next((SCANNER_IDS[n] for n, source in PATTERNS.items() if source == pattern and n in SCANNER_IDS), None)


def splitter_name(pattern: str) -> str:
    """Which splitter :func:`chunk_bounds` uses for ``pattern``: "compiled" or "regex"."""
    return "regex" if _compiled_scanner(pattern) is None else "compiled"


def chunk_bounds(text: str, pattern: str, keep_gaps: bool = False) -> Tuple[bytes, np.ndarray, np.ndarray]:
    """``(utf8, starts, ends)`` of the chunks of ``text``.

    Text between matches is dropped (tiktoken's and fastbpe's rule) unless ``keep_gaps``, which
    makes each gap a chunk of its own (Hugging Face's ``Split`` with ``behavior="Isolated"``).

    >>> data, s, e = chunk_bounds("héllo wörld", "gpt2")
    >>> [data[a:b].decode() for a, b in zip(s, e)]
    ['héllo', ' wörld']
    >>> data, s, e = chunk_bounds("ab  cd", r"\\S+", keep_gaps=True)
    >>> [data[a:b].decode() for a, b in zip(s, e)]
    ['ab', '  ', 'cd']
    """
    data = text.encode("utf-8", "surrogatepass")
    scanner = _compiled_scanner(pattern)
    if scanner is not None:
        chunk_ends, pattern_id = scanner
        try:
            ends = np.asarray(chunk_ends(data, pattern_id), dtype=np.int64)
        except ValueError:
            ends = None  # lone surrogates are not UTF-8: the regex path handles them
        if ends is not None and (len(ends) == 0 and not data or len(ends) and ends[-1] == len(data)):
            # the chunks tile the text: each starts where the previous ended
            starts = np.empty_like(ends)
            starts[:1] = 0
            starts[1:] = ends[:-1]
            return data, starts, ends
        # a pattern that drops text (whitespace) needs match positions: the regex path
    rx = _compiled(pattern)
    pieces = rx.findall(text, concurrent=True)
    if pieces and not isinstance(pieces[0], str):
        raise ValueError(f"split pattern {pattern!r} has capture groups; use (?:...) groups")
    lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    ascii_only = len(data) == len(text)
    if int(lengths.sum()) == len(text):
        # The matches tile the text (true of every covering pattern): bounds are a cumsum.
        bounds = np.zeros(len(pieces) + 1, dtype=np.int64)
        np.cumsum(lengths, out=bounds[1:])
        if not ascii_only:
            bounds = utf8_positions(text, bounds)
        return data, bounds[:-1], bounds[1:]
    spans = np.array([m.span() for m in rx.finditer(text, concurrent=True)], dtype=np.int64).reshape(-1, 2)
    if keep_gaps:
        cuts = np.unique(np.concatenate([[0, len(text)], spans.reshape(-1)]))
        spans = np.stack([cuts[:-1], cuts[1:]], axis=1)
    spans = np.ascontiguousarray(spans[spans[:, 1] > spans[:, 0]])
    if not ascii_only:
        # Non-overlapping spans in order: the flattened (start, end, start, ...) ascends.
        spans = utf8_positions(text, spans.reshape(-1)).reshape(-1, 2)
    return data, np.ascontiguousarray(spans[:, 0]), np.ascontiguousarray(spans[:, 1])


def _char_spans(text: str, pattern: str, keep_gaps: bool):
    """Character spans of the chunks of ``text`` (same rules as :func:`chunk_bounds`)."""
    spans = [m.span() for m in _compiled(pattern).finditer(text)]
    if keep_gaps:
        cuts = sorted({0, len(text), *[p for span in spans for p in span]})
        spans = list(zip(cuts[:-1], cuts[1:]))
    return [(a, b) for a, b in spans if b > a]


def staged_chunk_bounds(text: str, stages) -> Tuple[bytes, np.ndarray, np.ndarray]:
    """Chunk bounds of successive splits (Hugging Face's ``Sequence`` of ``Split`` steps):
    ``stages`` is a list of ``(pattern, keep_gaps)``; each stage splits every chunk of the
    previous one on its own. Pure Python per chunk: used only by files with several stages.

    >>> data, s, e = staged_chunk_bounds("ab12 cd", [(r"\\S+|\\s+", True), (r"\\d+", True)])
    >>> [data[a:b].decode() for a, b in zip(s, e)]
    ['ab', '12', ' ', 'cd']
    """
    spans = [(0, len(text))] if text else []
    for pattern, keep_gaps in stages:
        spans = [(start + a, start + b) for start, end in spans
                 for a, b in _char_spans(text[start:end], pattern, keep_gaps)]
    data = text.encode("utf-8", "surrogatepass")
    flat = np.array(spans, dtype=np.int64).reshape(-1)
    if len(data) != len(text) and len(flat):
        flat = utf8_positions(text, np.ascontiguousarray(flat))
    flat = flat.reshape(-1, 2)
    return data, np.ascontiguousarray(flat[:, 0]), np.ascontiguousarray(flat[:, 1])
