"""Chunk bounds as UTF-8 byte offsets: what the compiled encoder consumes.

``chunk_bounds(text, pattern)`` returns the text's UTF-8 bytes and int64 ``starts``/``ends`` of
every chunk. A named pattern runs its compiled scanner (``chunk_ends``: byte offsets, no object
per chunk); a user regex runs the ``regex`` module with ``concurrent=True`` (the GIL is released
while matching, so encoding threads overlap) and its character offsets are converted to byte
offsets in compiled code.
"""
from typing import List, Sequence, Tuple

import numpy as np

from .._core.encode import utf8_positions
from .._core.split import chunk_ends
from .patterns import compiled_regex, resolve

__all__ = ["chunk_bounds", "staged_chunk_bounds"]

Bounds = Tuple[bytes, np.ndarray, np.ndarray]


def _tiling_bounds(ends: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Starts and ends of chunks that tile the text: each starts where the previous ended."""
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1]
    return starts, ends


def chunk_bounds(text: str, pattern: str, keep_gaps: bool = False) -> Bounds:
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
    entry = resolve(pattern)
    if entry is not None and entry.tiles:
        try:
            return (data, *_tiling_bounds(chunk_ends(data, entry.scanner)))
        except ValueError:
            pass  # lone surrogates are not UTF-8: the regex module takes them as characters
    rx = compiled_regex(pattern)
    pieces = rx.findall(text, concurrent=True)
    if pieces and not isinstance(pieces[0], str):
        raise ValueError(f"split pattern {pattern!r:.80} has capture groups; use (?:...) groups")
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


def _char_spans(text: str, pattern: str, keep_gaps: bool) -> List[Tuple[int, int]]:
    """Character spans of the chunks of ``text`` (same rules as :func:`chunk_bounds`)."""
    spans = [m.span() for m in compiled_regex(pattern).finditer(text)]
    if keep_gaps:
        cuts = sorted({0, len(text), *[p for span in spans for p in span]})
        spans = list(zip(cuts[:-1], cuts[1:]))
    return [(a, b) for a, b in spans if b > a]


def staged_chunk_bounds(text: str, stages: Sequence[Tuple[str, bool]]) -> Bounds:
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
