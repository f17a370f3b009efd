"""Cutting one text into blocks at *safe cuts*, where splitting the text changes no chunk.

A cut at i is safe for a pattern when the chunks of text T equal the chunks of T[:i] followed by
the chunks of T[i:]. Each named pattern has its own rule, and user regexes a conservative one;
the rules and their proof live beside the code that applies them, ``find_cut`` in
``fastbpe/_core/cut.h``, and :func:`fastbpe.split.patterns.cut_rule` picks the rule of a pattern.
Every rule is decided by the characters at i-1 and i alone, so the search is one linear scan.

Counting (:func:`fastbpe.count_words`) and shard encoding (:func:`fastbpe.encode_files`) both
cut here, so both read any file in bounded memory and linear time: a stretch with no safe cut
(a multi-megabyte "word") makes one block longer than ``block_size``, never a re-scan.
"""
from typing import BinaryIO, Iterable, Iterator, List, Optional, Tuple

from .._core.split import find_cut

__all__ = ["cut_stream", "file_cut_at_or_after"]


def cut_stream(pieces: Iterable[bytes], rule: int, block_size: Optional[int]) -> Iterator[Tuple[bytes, int]]:
    """Re-cut a stream of byte pieces (one text) at safe cuts into segments of >= block_size
    bytes (the last may be shorter). Yields (segment, offset of its first byte in the text).

    Pieces are held as views, not concatenated, until a segment is cut: each segment costs one
    copy. The cut search looks at each byte once (a cut within 4 bytes after a piece boundary
    is not considered: its deciding bytes straddle two pieces; skipping a cut is always safe),
    so time stays linear however long a stretch without a cut is. ``block_size=None`` yields
    the text whole.

    >>> from fastbpe.split.patterns import cut_rule
    >>> list(cut_stream([b"aaa bbb ", b"ccc"], cut_rule("gpt2"), 2))
    [(b'aaa', 0), (b' bbb', 3), (b' ccc', 7)]
    """
    pending: List[memoryview] = []  # views of the text after the last cut
    pending_len = 0
    offset = 0  # offset in the text of the first pending byte
    for piece in pieces:
        view = memoryview(piece)
        start = 0  # bytes of this piece before `start` are already handed out
        while block_size is not None and pending_len + len(view) - start > block_size:
            # the segment must reach block_size; positions near the piece start need bytes of
            # the previous piece to decide, so they are skipped when there is one
            lo = max(start + block_size - pending_len, start + (4 if pending else 1))
            i = find_cut(view, lo, rule) if lo < len(view) else -1
            if i < 0:
                break
            segment = b"".join(pending + [view[start:i]])
            yield segment, offset
            offset += len(segment)
            pending, pending_len, start = [], 0, i
        if start < len(view):
            pending.append(view[start:])
            pending_len += len(view) - start
    if pending:
        yield b"".join(pending), offset


def file_cut_at_or_after(f: BinaryIO, pos: int, file_size: int, rule: int) -> int:
    """First safe cut at or after ``pos`` in a seekable plain file (``file_size`` if none): where
    a worker's byte range starts, so that neighbouring ranges meet at the same cut."""
    if pos <= 0:
        return 0
    if pos >= file_size:
        return file_size
    base = max(0, pos - 4)
    f.seek(base)
    buf = bytearray()
    search = pos - base
    while True:
        piece = f.read(1 << 16)
        if not piece:
            return file_size
        buf += piece
        i = find_cut(buf, search, rule)
        if i >= 0:
            return base + i
        search = max(search, len(buf) - 4)
