"""Token shards: corpora streamed through a tokenizer into fixed-size files of token ids.

``encode_files`` reads files as the corpus readers do (:mod:`fastbpe.corpus.files`: directories,
globs, every compression by content), splits them into documents, cuts long documents into blocks
at the safe cuts of the tokenizer's split (:mod:`fastbpe.corpus.cut`, so the ids equal those of
each document encoded whole), encodes them on worker threads in tasks of about 1 MiB (a long
block cut again at safe cuts, many short documents in one task) with the separator token between
documents, and writes shards of exactly ``shard_size`` ids (the last one shorter), in one of
three formats (ids little-endian, uint16 when the vocabulary fits, else uint32):

- ``npy``: NumPy's ``.npy`` (``np.load(path, mmap_mode="r")``);
- ``raw``: the bare ids in a ``.bin`` file, no header: what ``np.memmap(path, dtype=np.uint16,
  mode="r")`` and nanoGPT-style training scripts read;
- ``llmc``: llm.c's ``.bin`` token files: 256 little-endian int32 (magic 20240520, version 1,
  token count, the rest zero), then the ids as uint16 (vocabularies up to 65,536 ids).

Each shard is written under a temporary name and renamed, then ``manifest.json`` records it
(file name and token count) with the input position reached, so a rerun resumes (the manifest is
rewritten at most about once a second while the run goes on, and whenever it ends, an
interrupt included: a run killed outright redoes at most its last second of shards); it
also records the shard format, dtype, byte order and header size. :func:`read_shard` reads
every format, and the ``FBPETOK`` ``.bin`` shards of earlier versions (8-byte magic
``b"FBPETOK\\0"``, uint32 version 1, uint32 bytes per id, uint64 id count, 16 zero bytes, ids).
"""
import codecs
import contextlib
import hashlib
import json
import os
import pickle
import re
import struct
import threading
import time
import warnings
from collections import deque
from concurrent.futures import wait as wait_for
from itertools import chain
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ._core.split import document_spans, find_newlines
from .arguments import check_block_size, check_workers
from .corpus.cut import (CheckedRule, CutOutsideTokens, cut_segments, file_cut_at_or_after, find_checked_cut,
                         normalize_stream)
from .corpus.files import (decode_error, expand_paths, input_files, is_compressed, open_bytes, read_pieces,
                           warn_of_repeats)
from ._core.encode import is_utf8
from .encode.batch import _fused_pattern, insert_separators, utf8_batch_encoder, utf8_encoder
from .encode.id_arrays import as_id_dtype
from .encode.special import ALWAYS
from .encode.tokenizer import Tokenizer
from .fileio import AtomicWriter, file_above, folder_made_for, write_atomic
from .progress import byte_bar, check_progress
from .split.patterns import cut_rule
from .split.pretokenize import InvalidUTF8, check_errors

__all__ = ["encode_files", "read_shard", "input_blocks", "Block", "BIN_MAGIC", "LLMC_MAGIC", "MANIFEST",
           "FORMATS", "DOCUMENTS"]

# The shard files of earlier versions (read, no longer written).
BIN_MAGIC = b"FBPETOK\0"
BIN_VERSION = 1
BIN_HEADER = struct.Struct("<8sIIQ16x")  # magic, version, bytes per id, count, reserved
# llm.c's token files: a header of 256 int32, of which the first three are used.
LLMC_MAGIC = 20240520
LLMC_MAX_TOKENS = 2**31 - 1  # (the header's count is an int32)
LLMC_VERSION = 1
LLMC_HEADER_INTS = 256
LLMC_HEADER_BYTES = 4 * LLMC_HEADER_INTS
MANIFEST = "manifest.json"
MANIFEST_VERSION = 2
# The manifest is rewritten whole, its shards listed: after every shard, a run of many small
# shards spent its time rewriting it (1,036 shards of 250 ids: 2.4 s, 77% of it in the
# manifest's JSON). So it is rewritten at most this often during a run, and no more often
# than MANIFEST_COST_SHARE of the time goes to it; always at the end, and when the run stops
# on an exception (Ctrl-C included). A run killed outright redoes the shards of its last
# second.
MANIFEST_EVERY_SECONDS = 1.0
MANIFEST_COST_SHARE = 0.05
FORMATS = ("npy", "raw", "llmc")
SUFFIX = {"npy": ".npy", "raw": ".bin", "llmc": ".bin"}
DOCUMENTS = ("file", "blank-line", "line")
DEFAULT_BLOCK_SIZE = 4 << 20
DEFAULT_PARTITION_SIZE = 64 << 20
PathLike = Union[str, os.PathLike]


# ------------------------------------------------------------------------------ reading


class Block(NamedTuple):
    """A piece of the input encoded on its own.

    ``data``: UTF-8 bytes (normalised already when the tokenizer normalises; a bytearray when
    long, see :func:`~fastbpe.corpus.cut.cut_stream`'s ``grow``); ``ends_document``:
    the last block of a document; ``path`` and ``offset``: where ``data`` starts (byte offset in
    the decompressed file; -1 for normalised data); ``raw``: file bytes read since the previous
    block (for progress).
    """

    data: bytes
    ends_document: bool
    path: str
    offset: int
    raw: int


class PieceDocuments(NamedTuple):
    """The whole line or paragraph documents of one piece read from a file, each the one block
    :class:`Block` would hold (a document of at most the block size): document ``k`` is
    ``data[starts[k]:stops[k]]`` (``data``: the piece's bytes, separators and empty documents
    left in place, read there by the encoder), and ``data`` starts at byte ``offset`` of
    ``path``; ``raw``: file bytes read since the previous block. Read as one item rather than a
    Block a document: 437,000 lines of English spent 2 s in the Blocks alone."""

    data: bytes
    starts: np.ndarray
    stops: np.ndarray
    offset: int
    path: str
    raw: int

    def text_bytes(self) -> int:
        """The bytes of the documents (their separators left out)."""
        return int(self.stops.sum() - self.starts.sum())

    def blocks(self) -> Iterator[Block]:
        """The Block of each document (the raw bytes with the first)."""
        for k, (start, stop) in enumerate(zip(self.starts.tolist(), self.stops.tolist())):
            yield Block(self.data[start:stop], True, self.path, self.offset + start, self.raw if k == 0 else 0)


# How many line ends in a row separate two documents, for the kinds of documents that have
# separators. A line ends at "\n" or "\r\n" (a Windows file's: its "\r" is not the line's).
_SEPARATOR_NEWLINES = {"line": 1, "blank-line": 2}


def _line_ends_tail(data: bytes) -> int:
    """Where the line ends that ``data`` ends with start (``len(data)`` if none), a ``"\\r"`` at
    its very end counted among them (the next piece may begin with its ``"\\n"``).

    >>> _line_ends_tail(b"ab\\n\\r\\n"), _line_ends_tail(b"ab\\r\\r"), _line_ends_tail(b"\\n")
    (2, 3, 0)
    """
    end = len(data)
    if end and data[end - 1] == 13:
        end -= 1
    while end and data[end - 1] == 10:
        end -= 2 if end > 1 and data[end - 2] == 13 else 1
    return end


def _searched_end(data: bytes, newlines: int) -> int:
    """Where the search for separators of ``newlines`` line ends in ``data`` stops: before a
    ``"\\r"`` it ends with, or for separators of two or more, before the line ends it ends with
    (the next piece may go on with them).

    >>> _searched_end(b"ab\\n\\n", 2), _searched_end(b"ab\\n\\n", 1), _searched_end(b"ab\\r", 1)
    (2, 4, 2)
    """
    if newlines > 1:
        return _line_ends_tail(data)
    return len(data) - 1 if data[-1:] == b"\r" else len(data)


_LINE_ENDS = re.compile(b"(?:\r?\n)+")


def _separator_end(data: bytes, run: int, newlines: int) -> int:
    """The end of the separator that starts at ``run`` (one line end for lines, the whole run of
    them for paragraphs)."""
    if newlines == 1:
        return run + 2 if data[run] == 13 else run + 1
    return _LINE_ENDS.match(data, run).end()


def _held_line_ends(tail: bytes, newlines: int) -> bytes:
    """What stands for the line ends ``tail`` (a piece's end, as _line_ends_tail finds it) in
    front of the next piece: themselves, or for a separator already whole, ``newlines`` of them
    (and the ``"\\r"`` after them), whatever its length.

    >>> _held_line_ends(b"\\r\\n", 2), _held_line_ends(b"\\r\\n\\n\\r\\n\\r", 2)
    (b'\\r\\n', b'\\n\\n\\r')
    """
    if tail.count(b"\n") < newlines:
        return tail
    return b"\n" * newlines + (b"\r" if tail[-1:] == b"\r" else b"")


def _document_pieces(pieces: Iterable[bytes], documents: str, offset: int = 0) -> Iterator[Tuple[bytes, int, bool]]:
    """The byte stream of one file (from byte ``offset`` on) as ``(piece, its offset, ends a
    document)``: the pieces of each document in order, its last piece flagged (possibly empty).
    Separators are left out."""
    if documents == "file":
        for piece in pieces:
            yield piece, offset, False
            offset += len(piece)
        yield b"", offset, True
        return
    newlines = _SEPARATOR_NEWLINES[documents]
    held = b""
    for piece in pieces:
        data = held + piece if held else piece
        # a blank line may straddle two pieces, or a line end: trailing line ends wait for the next piece
        end = _searched_end(data, newlines)
        start = 0
        while (run := find_newlines(data, newlines, start, end)) >= 0:
            yield data[start:run], offset + start, True
            start = _separator_end(data, run, newlines)
        if start < end:
            yield data[start:end], offset + start, False
        held = _held_line_ends(data[end:], newlines)
        offset += len(data) - len(held)
    if held.count(b"\n") >= newlines:  # a separator at the end of the file, perhaps a "\r" after it
        yield b"", offset, True
        if held[-1:] == b"\r":
            yield b"\r", offset + len(held) - 1, True
    else:  # (a single line end of a paragraph, or a "\r" at the end of a line, is the document's)
        yield held, offset, True


# A document starts after these (and at a file's start): a line end; a run of two or more line
# ends, whole (no line end goes on after it).
_DOCUMENT_START = {"line": re.compile(b"\n"), "blank-line": re.compile(b"(?:\r?\n){2}(?!\r?\n)")}


def document_start_at_or_after(f: BinaryIO, pos: int, size: int, documents: str) -> int:
    """The first byte offset at or after ``pos`` of a plain file where a document starts
    (``size`` if none): after a line end for ``"line"``, after a run of two or more line ends
    for ``"blank-line"``. Partitions of a file start and end there, so each holds whole
    documents and neighbouring partitions meet at the same offset."""
    if pos <= 0:
        return 0
    if pos >= size:
        return size
    base = max(0, pos - 4)  # (a separator ending at pos or later starts at most 4 bytes before it)
    f.seek(base)
    buf, search = b"", 0
    while True:
        piece = f.read(1 << 16)
        buf += piece
        match = _DOCUMENT_START[documents].search(buf, search)
        while match is not None and base + match.end() < pos:
            match = _DOCUMENT_START[documents].search(buf, match.end())
        # whether a run goes on needs the two bytes after it: read on, unless the file ends
        if match is not None and (not piece or match.end() + 2 <= len(buf)):
            return base + match.end()
        if not piece:
            return size
        keep = min(len(buf), 8)  # (the bytes a match not yet decided may start at)
        base += len(buf) - keep
        search = 0
        buf = buf[-keep:]


def _rest_of_document(first: bytes, ends: bool, events: Iterator[Tuple[bytes, int, bool]]) -> Iterator[bytes]:
    yield first
    if not ends:
        for piece, _, ends in events:
            yield piece
            if ends:
                return


def _document_cuts(tokenizer) -> Tuple[Union[None, int, CheckedRule], Union[None, str, list]]:
    """``(rule, normalizer)``: how the reader cuts a document (:mod:`.corpus.cut`: the rule of
    the tokenizer's split, or None for no cut: each document is encoded whole) and the
    normaliser it applies before cutting (``Tokenizer.normalizer``, or None: the encoder
    normalises each block).
    - A normaliser of steps (``Prepend``, SentencePiece's spaces...) runs on whole documents.
    - With tokens matched always (Hugging Face's added tokens that are not special), a cut
      must not straddle one (:class:`.corpus.cut.CutOutsideTokens`); and since they are
      matched in the text as given, a Unicode form is applied block by block, after the
      cuts. Where one of them has matching options (a ``normalized`` or ``lstrip`` match moves
      with its neighbours), each document is encoded whole."""
    rule = cut_rule(tokenizer.pattern, keep_gaps=tokenizer.split_gaps)
    normalizer = tokenizer.normalizer
    always = tokenizer.specials.always
    if normalizer is not None and not isinstance(normalizer, str):
        return None, normalizer
    if not always:
        return rule, normalizer
    if any(set(tokenizer.special_token_options[name]) != {ALWAYS} for name in always):
        return None, normalizer
    return CheckedRule(rule, CutOutsideTokens(always, normalizer)), None


def _file_blocks(path: str, pieces: Iterable[bytes], documents: str, rule: Union[None, int, CheckedRule],
                 block_size: int,
                 normalizer: Union[None, str, list], offset: int = 0) -> Iterator[Tuple[bytes, bool, int]]:
    """``(data, ends a document, offset)`` for the byte stream of file ``path`` (from byte
    ``offset`` on). Documents are split off on the bytes first, so a cut never meets a
    separator; then each is cut. ``normalizer``: a Unicode form applied here, a piece at a time,
    before the cuts (:func:`_document_cuts` says which). Without a ``rule`` each document is
    one block (no cut of it is safe: a normaliser of steps, ``Prepend``, ``Replace``...
    SentencePiece's spaces, is the encoder's to run on each whole document)."""
    whole = rule is None
    events = _document_pieces(pieces, documents, offset)
    for first, start, ends in events:  # each turn takes one whole document from ``events``
        short = ends and len(first) <= block_size  # a document in one piece (most lines)
        if whole or (short and normalizer is None):
            data = first if ends else b"".join(_rest_of_document(first, ends, events))
            if data:
                yield data, True, start
            continue
        text = [first] if short else _rest_of_document(first, ends, events)
        if normalizer is not None:
            text = normalize_stream(text, normalizer)
        try:
            # A block ends the document when no other follows it: one whose cut lies inside a
            # piece is handed on at once (text follows it); only one cut at a piece's end waits
            # for the next block, or the document's end, to tell.
            held = None
            for data, offset, more in cut_segments(text, rule, block_size, grow=True):
                if held is not None:
                    yield held[0], False, held[1]
                    held = None
                if more:
                    yield data, False, -1 if normalizer else start + offset
                else:
                    held = (data, -1 if normalizer else start + offset)
            if held is not None:
                yield held[0], True, held[1]
        except InvalidUTF8 as exc:  # from normalize_stream: the offset is in the document
            raise decode_error(path, start + exc.offset, exc.bad) from None


def _through_separator(data: bytes, pieces: Iterator[bytes], newlines: int, after: list) -> Iterator[bytes]:
    """The document at the start of ``data`` (going on into the next ``pieces`` as long as no
    separator ends it), piece by piece, up to the end of the separator after it (a run of
    ``newlines`` or more line ends, whole); ``after`` then receives the bytes read past that run
    and how many bytes came before them. At the end of the file the document is the rest of
    it, and ``after`` stays empty.

    >>> after = []
    >>> list(_through_separator(b"ab\\ncd", iter([b"\\n\\n\\nef"]), 2, after)), after
    ([b'ab\\ncd', b'\\n\\n\\n'], [(b'ef', 8)])
    """
    through = 0
    while True:
        body = _searched_end(data, newlines)  # (the line ends after it are held back)
        end = find_newlines(data, newlines, 0, body)
        if end >= 0:  # (a run that starts before body ends before it)
            end = _separator_end(data, end, newlines)
            yield data[:end]
            after.append((data[end:], through + end))
            return
        piece = next(pieces, None)
        if piece is None:
            yield data
            return
        if body:
            yield data[:body]
        through += body
        data = data[body:] + piece


def _document_runs(path: str, pieces: Iterable[bytes], documents: str, rule: int, block_size: int,
                   offset: int = 0) -> Iterator[Union[PieceDocuments, tuple]]:
    """What _file_blocks gives for line or blank-line documents without a normaliser, a piece
    at a time: the whole documents of each piece (the one begun in the piece before first) as
    a :class:`PieceDocuments` (its path and raw left for the caller), each document the block
    _file_blocks makes of it. A document longer than ``block_size`` (or one that no separator
    ends within its piece) goes through _file_blocks alone, up to the separator after it; the
    pieces go on from there. ``offset``: where the pieces start in the file."""
    newlines = _SEPARATOR_NEWLINES[documents]
    held, at = b"", offset  # the document begun in the pieces so far, and its byte offset in the file
    pieces = iter(pieces)
    while True:
        piece = next(pieces, None)
        if piece is None:
            break
        data = held + piece if held else piece
        body = _searched_end(data, newlines)  # (held, a document's start, is never a line end)
        first = find_newlines(data, newlines, 0, body)
        if first < 0 or first > block_size:
            # (before, the rest of the file went to _file_blocks too: 100 MB of English with a 31 MB
            # paragraph at 51 MB read as blank-line documents in 163-175 ms, 107-123 ms this way)
            after: list = []
            yield from _file_blocks(path, _through_separator(data, pieces, newlines, after), documents, rule,
                                    block_size, None, at)
            if not after:  # (the end of the file)
                return
            rest, through = after[0]
            held, at = b"", at + through
            if rest:
                pieces = chain([rest], pieces)
            continue
        if newlines == 1:
            cut = data.rfind(b"\n", 0, body) + 1  # (after the last line end)
            starts, stops = document_spans(memoryview(data)[:cut], newlines)
        else:
            # data[body - 1] is text, so the last paragraph found goes on in the next piece; the ones
            # before it are whole (a separator follows each)
            starts, stops = document_spans(memoryview(data)[:body], newlines)
            cut, starts, stops = int(starts[-1]), starts[:-1], stops[:-1]
        if len(starts):
            yield PieceDocuments(data, starts, stops, at, path, 0)
        held, at = data[cut:], at + cut
    # the last documents (a separator at the end of the file separates nothing)
    starts, stops = document_spans(held, newlines)
    if len(starts):
        yield PieceDocuments(held, starts, stops, at, path, 0)


def _document_items(path: str, pieces: Iterable[bytes], documents: str, rule: int, block_size: int,
                    normalizer: Union[None, str, list], offset: int = 0) -> Iterator[Union[PieceDocuments, tuple]]:
    """_file_blocks' ``(data, ends a document, offset)``, or for line and blank-line documents
    without a normaliser _document_runs' items (:class:`PieceDocuments` among them)."""
    if documents in _SEPARATOR_NEWLINES and normalizer is None:
        return _document_runs(path, pieces, documents, rule, block_size, offset)
    return _file_blocks(path, pieces, documents, rule, block_size, normalizer, offset)


def _document_tasks(stops: np.ndarray) -> Iterator[Tuple[int, int]]:
    """The documents ``[a, b)`` of each encoding task of a :class:`PieceDocuments` whose
    document ``k`` ends at byte ``stops[k]`` of its data: about TASK_BYTES bytes of the data
    and at most TASK_PIECES documents each.

    >>> list(_document_tasks(np.array([5, 10, 15])))
    [(0, 3)]
    """
    count, a = len(stops), 0
    while a < count:
        begin = int(stops[a - 1]) if a else 0
        b = int(np.searchsorted(stops, begin + TASK_BYTES, side="left"))
        b = min(max(b, a + 1), a + TASK_PIECES, count)
        yield a, b
        a = b


def _replaced(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """A byte stream's pieces with its invalid UTF-8 replaced (``errors="replace"``): the UTF-8
    of ``stream.decode("utf-8", "replace")``, a piece at a time (a character cut between two
    pieces is decoded whole).

    >>> b"".join(_replaced([b"caf\\xc3", b"\\xa9 \\xff", b"\\xe2\\x82"])).decode()
    'café \ufffd\ufffd'
    """
    held = b""  # a character begun at the end of the last piece
    for piece in pieces:
        data = held + bytes(piece) if held else piece
        whole = _whole_characters(data)
        held = bytes(data[whole:])
        body = data[:whole] if whole < len(data) else data
        if body:  # valid text (nearly every piece) passes as it is: no str is made of it
            yield body if is_utf8(body) else bytes(body).decode("utf-8", "replace").encode("utf-8")
    if held:
        yield held.decode("utf-8", "replace").encode("utf-8")


def _whole_characters(data) -> int:
    """The length of ``data`` without a character begun at its end and not finished (what a
    UTF-8 decoder keeps for the next piece: a valid beginning of 1 to 3 bytes).

    >>> _whole_characters(b"ab\\xe2\\x82"), _whole_characters(b"ab\\xe2\\x82\\xac"), _whole_characters(b"a\\xff")
    (2, 5, 2)
    """
    n = len(data)
    for back in range(1, min(3, n) + 1):
        byte = data[n - back]
        if byte & 0xC0 == 0x80:  # a continuation byte: its lead lies further back
            continue
        if byte < 0xC0:
            return n
        try:
            begun = codecs.getincrementaldecoder("utf-8")().decode(bytes(data[n - back:])) == ""
        except UnicodeDecodeError:  # (no valid beginning: the decoder replaces it now)
            begun = False
        return n - back if begun else n
    return n


def input_blocks(tokenizer, files: Sequence[PathLike], documents: str = "file",
                 block_size: int = DEFAULT_BLOCK_SIZE) -> Iterator[Block]:
    """The blocks :func:`encode_files` encodes, in order: each file (expanded as every corpus
    reader does) opened whatever its compression, split into documents, and each document cut
    at the safe cuts of the tokenizer's split (and normalised first when the tokenizer
    normalises with a Unicode form and matches no token always: :func:`_document_cuts`). A
    block is at least ``block_size`` bytes unless it ends a document, and longer only by the
    stretch up to the next safe cut. Invalid UTF-8 raises CorpusDecodeError where encode_files
    decodes the block, or here already for a tokenizer whose text is normalised here.
    """
    held = None  # a file's last block takes the file's bytes read after it (``_blocks``' ints)
    for item in _blocks(tokenizer, files, documents, block_size):
        if isinstance(item, int):
            held = held._replace(raw=held.raw + item)
            continue
        for block in item.blocks() if isinstance(item, PieceDocuments) else (item,):
            if held is not None:
                yield held
            held = block
    if held is not None:
        yield held


def _blocks(tokenizer, files: Sequence[PathLike], documents: str,
            block_size: int, errors: str = "strict") -> Iterator[Union[Block, PieceDocuments, int]]:
    """The blocks of :func:`input_blocks`, each yielded as soon as it is cut (encode_files
    hands the first to a worker before the second is read), those of short line and blank-line
    documents a piece's at a time (:class:`PieceDocuments`), and after a file's last block an
    int: the file's bytes read after it, which input_blocks adds to that block's ``raw``."""
    if documents not in DOCUMENTS:
        raise ValueError(f"documents must be one of {DOCUMENTS}, got {documents!r}")
    # The split's first stage decides the cuts: later stages split within its chunks, and gaps
    # kept as chunks are accounted for by cut_rule.
    rule, normalizer = _document_cuts(tokenizer)
    for path in expand_paths(files):
        reader, raw = open_bytes(path)
        with reader, raw:
            read = 0  # file bytes accounted to blocks so far
            any_block = False
            pieces_read, told, now = 0, -1, 0

            def counted(pieces):
                nonlocal pieces_read
                for piece in pieces:
                    pieces_read += 1
                    yield piece

            pieces = read_pieces(reader, block_size)
            for item in _document_items(path, counted(_replaced(pieces) if errors == "replace" else pieces),
                                        documents, rule, block_size, normalizer):
                if pieces_read != told:  # (the file moves on only as pieces are read: not a tell() a block,
                    now, told = raw.tell(), pieces_read  # a system call each, 0.3 s for 586,000 lines)
                if isinstance(item, PieceDocuments):
                    yield item._replace(raw=now - read)
                else:
                    data, ends, offset = item
                    yield Block(data, ends, path, offset, now - read)
                any_block = True
                read = now
            rest = os.fstat(raw.fileno()).st_size - read
            if not any_block:  # no text at all: still one (empty) block, so the file's bytes show in the progress
                yield Block(b"", True, path, 0, 0)
            yield rest


# Bytes of text per encoding task of a local run: small enough that the last tasks leave no
# worker idle for long, large enough that a task's overhead (a few microseconds) is nothing.
TASK_BYTES = 1 << 20
# and at most this many pieces (documents, most often) per task: a bound on a task's arrays,
# far above what a megabyte of lines holds (at 4,096 a task held 140 KB of English lines, and the
# workers waited on the calling thread to hand out and write 700 tasks per 100 MB: 100 MB as line
# documents, cl100k, encoded in 391 ms on one worker and 301 on two; in 338 and 233-243 with
# tasks of 1 MB)
TASK_PIECES = 1 << 16


def _task_pieces(block: Block, rule: Union[None, int, CheckedRule]) -> Iterator[Tuple[memoryview, str, int]]:
    """``(piece, path, offset)`` of a block for the encoding tasks: the block whole, or, given
    the cut ``rule`` of the tokenizer's split, cut at its safe cuts into pieces of about
    TASK_BYTES (their ids one after the other are the block's: see :mod:`.corpus.cut`), so
    that the workers share even a single long document."""
    data = memoryview(block.data)
    start = 0
    while rule is not None and len(data) - start > TASK_BYTES:
        cut = find_checked_cut(data, start + TASK_BYTES, rule)
        if cut < 0:
            break
        yield data[start:cut], block.path, block.offset + start if block.offset >= 0 else -1
        start = cut
    if start < len(data):
        yield data[start:], block.path, block.offset + start if block.offset >= 0 else -1


class _Run(NamedTuple):
    """The ids of a task of whole blocks: block ``k`` of the task ends at ``ends[k]``."""

    ids: np.ndarray
    ends: np.ndarray


def _encode_texts(encode_many, encode_piece, dtype: np.dtype, sep_id: Optional[int], data, starts: np.ndarray,
                  stops: np.ndarray, where, seps: np.ndarray) -> _Run:
    """The ids of the whole blocks ``data[starts[k]:stops[k]]``, one after the other, a
    separator (``sep_id``) before each of ``seps``, as one array of ``dtype``. One compiled call
    (``encode_many``, utf8_batch_encoder's) encodes them all when the tokenizer has the one-call
    path; else, or when one fails, block by block (``encode_piece``, _piece_encoder's), the first
    that fails raising its error, named (``where(k)``: block ``k``'s path and offset)."""
    failed = True
    if encode_many is not None:  # (the separators put in by the compiled call)
        ids, ends, failed = encode_many(data, starts, stops, -1 if sep_id is None else sep_id, seps.view(np.uint8))
    if failed:
        parts = [encode_piece(data[start:stop], *where(k))
                 for k, (start, stop) in enumerate(zip(starts.tolist(), stops.tolist()))]
        ends = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(ids) for ids in parts], out=ends[1:])
        ids = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
        if seps.any():
            ids, ends = insert_separators(ids, ends, seps, sep_id)
    return _Run(as_id_dtype(ids, dtype), ends[1:])


def _encode_documents(encode_many, encode_piece, dtype: np.dtype, sep_id: Optional[int], docs: PieceDocuments, a: int,
                      b: int, sep_first: bool) -> _Run:
    """_encode_texts of documents ``a`` to ``b - 1`` of a :class:`PieceDocuments`, each after a
    separator (the first: ``sep_first``)."""
    seps = np.full(b - a, sep_id is not None)
    seps[0] = sep_first
    return _encode_texts(encode_many, encode_piece, dtype, sep_id, docs.data, docs.starts[a:b], docs.stops[a:b],
                         lambda k: (docs.path, docs.offset + int(docs.starts[a + k])), seps)


def _decode(block: Block) -> str:
    try:
        return block.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise decode_error(block.path, block.offset + exc.start, block.data[exc.start:exc.start + 1],
                           "pass errors='replace' to replace invalid bytes by U+FFFD, or errors='bytes' to encode "
                           "each as its byte's token") from None


def _refused_at(encode_utf8, piece) -> int:
    """Where in ``piece`` (UTF-8 bytes) the first character that ``encode_utf8`` refuses alone
    starts, or -1: the byte offset an error names. Each distinct character is tried once, in
    order (an error path: the encoder says which character, not where).

    >>> def encode(data):
    ...     if b"z" in data:
    ...         raise ValueError("'z' is not in the vocabulary")
    >>> _refused_at(encode, "é, z".encode()), _refused_at(encode, b"abc")
    (4, -1)
    """
    text = bytes(piece).decode("utf-8", "surrogateescape")
    tried = set()
    for i, ch in enumerate(text):
        if ch not in tried:
            tried.add(ch)
            try:
                encode_utf8(ch.encode("utf-8", "surrogateescape"))
            except ValueError:
                return len(text[:i].encode("utf-8", "surrogateescape"))
    return -1


def _byte_ids(tokenizer) -> np.ndarray:
    """The id of the one-byte token of each byte value (``errors="bytes"``); ValueError for a
    tokenizer that lacks one (it is no byte-level vocabulary)."""
    try:
        return np.array([tokenizer.encode_single_token(bytes([b])) for b in range(256)], dtype=np.int64)
    except KeyError:
        raise ValueError("errors='bytes' encodes each invalid byte as its one-byte token, which this tokenizer "
                         "lacks for some bytes (it is no byte-level vocabulary): use errors='replace'") from None


def _piece_encoder(tokenizer, errors: str = "strict"):
    """``(encode, cuts)``: ``cuts`` as :func:`.encode.batch.utf8_encoder` gives it, and
    ``encode(piece, path, offset)``: the ids, in the tokenizer's id dtype, of the UTF-8 bytes
    ``piece`` (bytes or a memoryview: the text at byte ``offset`` of file ``path``, -1 when
    normalised), as ``encode_ordinary`` gives them for its text; an error names the file and
    the offset. Invalid UTF-8 is that error (``errors="strict"``), or (``"bytes"``) each invalid
    byte its one-byte token, the valid stretches between them encoded as texts of their own (as
    ``count_words(errors="bytes")`` counts them); ``"replace"`` is done as the input is read. A
    tokenizer with the one-call path reads the bytes in place (no str is made). A piece longer
    than a task (a stretch without a safe cut: a huge chunk, as a multi-megabyte word) gets
    uint16 ids straight from the encoder where the ids are uint16, so that they are held once,
    at 2 bytes each."""
    dtype = tokenizer.id_dtype
    encode_utf8, cuts = utf8_encoder(tokenizer)
    pattern = None if tokenizer.specials.always else _fused_pattern(tokenizer)  # (it splits out none)
    encode_u16 = None if pattern is None or dtype.itemsize != 2 else \
        (lambda data: tokenizer._core().encode_text_u16(data, pattern, tokenizer._state()))

    byte_ids = _byte_ids(tokenizer) if errors == "bytes" else None

    def encode(piece, path: str, offset: int) -> np.ndarray:
        try:
            long_u16 = encode_u16 is not None and len(piece) > TASK_BYTES
            ids = encode_u16(piece) if long_u16 else encode_utf8(piece)
        except ValueError as exc:  # (a character or byte the vocabulary lacks): where in which file
            at = -1 if offset < 0 else _refused_at(encode_utf8, piece)
            where = f"{path}" if offset < 0 else \
                f"{path}, byte offset {offset + at}" if at >= 0 else f"{path}, the text at byte offset {offset}"
            raise ValueError(f"{where}: {exc}") from None
        if ids is None:  # not UTF-8: the error names the file and the first bad byte
            if byte_ids is None:
                _decode(Block(bytes(piece), True, path, offset, 0))
            ids = _with_invalid_bytes(bytes(piece), byte_ids, lambda part, at: encode(part, path, offset + at))
        return as_id_dtype(ids, dtype)

    return encode, cuts


# ------------------------------------------------------------------------------ writing


def _with_invalid_bytes(data: bytes, byte_ids: np.ndarray, encode) -> np.ndarray:
    """The ids of ``data`` that holds invalid UTF-8, as ``errors="bytes"`` encodes it: each valid
    stretch by ``encode(stretch, its offset)``, each invalid byte as ``byte_ids[byte]``.

    >>> _with_invalid_bytes(b"ab\\xffc", np.arange(256) + 1000, lambda part, at: np.frombuffer(part, np.uint8)).tolist()
    [97, 98, 1255, 99]
    """
    text = data.decode("utf-8", "surrogateescape")  # (an invalid byte b: the lone surrogate U+DC00 + b)
    parts, at = [], 0
    for stretch in re.split("([\udc80-\udcff])", text):
        if len(stretch) == 1 and "\udc80" <= stretch <= "\udcff":
            parts.append(byte_ids[ord(stretch) - 0xDC00: ord(stretch) - 0xDC00 + 1])
            at += 1
        elif stretch:
            raw = stretch.encode("utf-8")
            parts.append(np.asarray(encode(raw, at), dtype=np.int64))
            at += len(raw)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _tokenizer_digest(tokenizer) -> str:
    """SHA-256 of what decides a tokenizer's ids: the fields of its file except the vocabulary
    and the merges, then every token's bytes (length-prefixed), then the merges as int64 pairs
    unless the merge rule is tiktoken's (``"token"``: ranks decide, the merges are never read).

    Hashing the file's JSON instead formats every token as text and, for a rank-only
    vocabulary, derives its merges first: 0.4 s for cl100k, paid by every run before any text.
    """
    from .formats.native import to_dict

    class WithoutTables:  # the tokenizer, with its two large fields left empty
        token_bytes = ()
        merge_ids = np.zeros((0, 2), dtype=np.int64)

        def __getattr__(self, name):
            return getattr(tokenizer, name)

    fields = to_dict(WithoutTables())
    fields.pop("merge_counts", None)  # a record of the training, not of the encoding
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode())
    tokens = tokenizer.token_bytes
    digest.update(np.fromiter(map(len, tokens), dtype="<i8", count=len(tokens)).tobytes())
    digest.update(b"".join(tokens))
    if tokenizer.merge_rule != "token":
        digest.update(np.ascontiguousarray(tokenizer.merge_ids, dtype="<i8").tobytes())
    return digest.hexdigest()


def _fingerprint(tokenizer, files: Sequence[Path], options: dict, earlier: bool = False, digest: bool = True) -> dict:
    """What names a job; ``earlier``: as versions before the tokenizer digest named it (the
    SHA-256 of the tokenizer file's JSON), to resume their runs. ``digest=False``: the
    tokenizer digest left None, for the caller to fill in later."""
    if earlier:
        tokenizer_key = {"tokenizer_sha256":
                         hashlib.sha256(json.dumps(tokenizer.to_dict(), sort_keys=True).encode()).hexdigest()}
    else:
        tokenizer_key = {"tokenizer_digest": _tokenizer_digest(tokenizer) if digest else None}
    return {
        **tokenizer_key,
        "files": [{"path": str(p.resolve()), "size": p.stat().st_size, "mtime_ns": p.stat().st_mtime_ns}
                  for p in files],
        **options,
    }


def _check_inputs_unchanged(job: dict) -> None:
    """Refuse to call a run complete whose input files changed while they were read (their size
    or modification time is no longer the job's): the shards would hold parts of two versions
    of a file, or a file cut short, silently."""
    for entry in job.get("files", ()):
        try:
            now = os.stat(entry["path"])
            changed = (now.st_size, now.st_mtime_ns) != (entry["size"], entry["mtime_ns"])
        except OSError:
            changed = True
        if changed:
            raise ValueError(f"{entry['path']} changed while it was encoded (its size or modification time): the "
                             "shards may hold parts of two versions of it; encode it again into a new folder")


# What ends a line of line and blank-line documents, named in their jobs: versions whose lines
# ended at "\n" alone (a "\r" before it the line's) named none.
LINE_ENDS = "\\n or \\r\\n"


def _holds_crlf(path: Path) -> bool:
    """Whether the file (decompressed) holds a ``"\\r\\n"``, read a megabyte at a time."""
    reader, raw = open_bytes(str(path))
    try:
        last = b""
        while piece := reader.read(1 << 20):
            if b"\r\n" in last + piece[:1] or b"\r\n" in piece:
                return True
            last = piece[-1:]
        return False
    finally:
        reader.close()
        raw.close()


def _job_of_lf_lines(earlier: dict, job: dict, files: Sequence[Path], out_dir: Path) -> dict:
    """``job`` as a version whose lines ended at ``"\\n"`` alone named it, to compare with the
    manifest's ``earlier`` job of such a version: when they are equal, an error if an input file
    has a ``"\\r\\n"``, rather than shards of the two rules in one stream (the rules agree on
    every other file)."""
    lf_job = {k: v for k, v in job.items() if k != "line_ends"}
    if earlier != lf_job:
        return lf_job  # (another job in other ways, which the caller names)
    crlf = next((path for path in files if _holds_crlf(path)), None)
    if crlf is not None:
        raise ValueError(f"{out_dir} holds shards of an earlier fastbpe version, whose {job['documents']} "
                         f"documents kept the \\r of \\r\\n line ends, which {crlf} has; use a new directory "
                         "or delete it")
    return lf_job


def _job_difference(earlier, job: dict) -> str:
    """What makes ``job`` another job than the manifest's ``earlier`` one, in a few words.

    >>> print(_job_difference({"files": [{"path": "/a", "size": 3}], "format": "raw"},
    ...                       {"files": [{"path": "/a", "size": 4}], "format": "npy"}))
    /a changed since (its size or time); other format
    """
    if not isinstance(earlier, dict):
        return "its manifest names no job"
    said = []
    listed = earlier.get("files")
    before = {f["path"]: f for f in (listed if isinstance(listed, list) else ())
              if isinstance(f, dict) and isinstance(f.get("path"), str)}
    now = {f["path"]: f for f in job["files"]}
    if list(before) != list(now):
        said.append("other input files" if set(before) != set(now) else "the input files in another order")
    else:
        changed = [path for path in now if before[path] != now[path]]
        if changed:
            said.append(f"{changed[0]} changed since (its size or time)" + (f", and {len(changed) - 1} more"
                                                                          if len(changed) > 1 else ""))
    tokenizer_keys = ("tokenizer_digest", "tokenizer_sha256")
    if any(earlier.get(k) != job.get(k) for k in tokenizer_keys if k in job):
        said.append("another tokenizer")
    options = sorted(k for k in set(earlier) | set(job)
                     if k != "files" and k not in tokenizer_keys and earlier.get(k) != job.get(k))
    if options:
        said.append(f"other {', '.join(options)}")
    return "; ".join(said) or "its manifest's job differs"


def _llmc_header(count: int) -> bytes:
    header = np.zeros(LLMC_HEADER_INTS, dtype="<i4")
    header[:3] = (LLMC_MAGIC, LLMC_VERSION, count)
    return header.tobytes()


def _npy_header(dtype: np.dtype, count: int) -> bytes:
    import io

    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                "fortran_order": False, "shape": (count,)})
    return head.getvalue()


def _header(fmt: str, wide: np.dtype, count: int) -> bytes:
    """The header of a shard of ``count`` ids stored as ``wide``."""
    if fmt == "npy":
        return _npy_header(wide, count)
    if fmt == "llmc":
        return _llmc_header(count)
    if fmt == "raw":
        return b""
    raise ValueError(f"unknown shard format {fmt!r}")


def _open_shard(path: Path, fmt: str, wide: np.dtype, room: int) -> AtomicWriter:
    """A shard file written as its ids come: its header for ``room`` ids first (the one of the
    real count replaces it in _finish_shard), then the ids appended."""
    file = AtomicWriter(path)
    try:
        file.write(_header(fmt, wide, room))
    except BaseException:
        file.abort()
        raise
    return file


def _finish_shard(file: AtomicWriter, fmt: str, wide: np.dtype, room: int, count: int) -> None:
    """Put the header of ``count`` ids in place of _open_shard's for ``room`` ids and rename the
    shard into place (fsynced)."""
    header, room_bytes = _header(fmt, wide, count), len(_header(fmt, wide, room))
    if len(header) != room_bytes:
        # (NumPy pads its header for counts of up to 21 digits, then to 64 bytes: only a
        # shard size of about 50 digits gets here) the ids move behind this header
        file.flush()  # (every id in the file before it is read back)
        with open(file.temporary, "rb") as written:
            written.seek(room_bytes)
            moved = AtomicWriter(file.path)
            try:
                moved.write(header)
                while True:
                    piece = written.read(1 << 24)
                    if not piece:
                        break
                    moved.write(piece)
                moved.commit()
            except BaseException:
                moved.abort()
                raise
        file.abort()
        return
    if header:
        file.write_at(0, header)
    file.commit()


def _manifest_entry(path: Path) -> Tuple[Optional[str], Optional[str]]:
    """``(format, dtype)`` of a shard as the ``manifest.json`` beside it records them, or Nones."""
    try:
        manifest = json.loads((path.parent / MANIFEST).read_text())
        listed = list(manifest.get("shards", ()))
        for part in manifest.get("partitions", ()):
            listed.extend(part.get("shards", ()))
        if not any(shard.get("file") == path.name for shard in listed):
            return None, None
        if manifest.get("version", 1) >= 2:
            return manifest.get("format"), manifest.get("dtype")
        job = manifest.get("job", {})  # version 1 kept both in the job's options
        return job.get("format"), job.get("dtype")
    except (OSError, ValueError, AttributeError, TypeError):
        return None, None


def _mapped(path: Path, dtype, offset: int, count: int, mmap: bool) -> np.ndarray:
    if count == 0:
        return np.zeros(0, dtype=dtype)
    if mmap:
        return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(count,))
    return np.fromfile(path, dtype=dtype, offset=offset, count=count)


def _read_npy(path: Path, mmap: bool) -> np.ndarray:
    try:
        ids = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"{path}: not a readable .npy shard ({exc})") from None
    if ids.ndim != 1 or ids.dtype not in (np.uint16, np.uint32):
        raise ValueError(f"{path}: expected a 1-D uint16/uint32 array, got {ids.dtype} {ids.shape}")
    return ids


def _read_old_bin(path: Path, head: bytes, mmap: bool) -> np.ndarray:
    if len(head) < BIN_HEADER.size:
        raise ValueError(f"{path}: truncated .bin shard (header is {len(head)} bytes)")
    magic, version, width, count = BIN_HEADER.unpack(head[:BIN_HEADER.size])
    if version != BIN_VERSION:
        raise ValueError(f"{path}: unsupported FBPETOK shard version {version}")
    if width not in (2, 4):
        raise ValueError(f"{path}: bad id width {width}")
    expected = BIN_HEADER.size + count * width
    if path.stat().st_size != expected:
        raise ValueError(f"{path}: size {path.stat().st_size} does not match its header ({expected} bytes)")
    return _mapped(path, np.dtype("<u2" if width == 2 else "<u4"), BIN_HEADER.size, count, mmap)


def _read_llmc(path: Path, head: bytes, mmap: bool) -> np.ndarray:
    if len(head) < LLMC_HEADER_BYTES:
        raise ValueError(f"{path}: truncated llm.c shard (header is {len(head)} of {LLMC_HEADER_BYTES} bytes)")
    magic, version, count = np.frombuffer(head[:12], dtype="<i4").tolist()
    if magic != LLMC_MAGIC:
        raise ValueError(f"{path}: not an llm.c token file (magic {magic}, expected {LLMC_MAGIC})")
    if version != LLMC_VERSION:
        raise ValueError(f"{path}: llm.c token file version {version}; this reader knows {LLMC_VERSION} (uint16)")
    expected = LLMC_HEADER_BYTES + 2 * count
    if count < 0 or path.stat().st_size != expected:
        raise ValueError(f"{path}: size {path.stat().st_size} does not match its header ({expected} bytes)")
    return _mapped(path, np.dtype("<u2"), LLMC_HEADER_BYTES, count, mmap)


def _is_llmc(head: bytes) -> bool:
    return len(head) >= 8 and np.frombuffer(head[:8], dtype="<i4").tolist() == [LLMC_MAGIC, LLMC_VERSION]


def read_shard(path: PathLike, mmap: bool = True, *, fmt: Optional[str] = None,
               dtype: Optional[Union[str, np.dtype]] = None) -> np.ndarray:
    """The ids of a shard (memory-mapped unless ``mmap=False``); ValueError for a damaged or
    foreign file.

    ``fmt`` (``"npy"``, ``"raw"``, ``"llmc"``, or ``"bin"`` for the ``FBPETOK`` shards of
    earlier versions) and, for ``raw``, ``dtype`` default to what the ``manifest.json`` beside
    the shard records; without a manifest the format is recognised by its header (``.npy``,
    llm.c's magic, ``FBPETOK``), and a headerless shard needs ``dtype``.
    """
    path = Path(path)
    known_fmt, known_dtype = (None, None) if fmt is not None and (dtype is not None or fmt != "raw") \
        else _manifest_entry(path)
    fmt = fmt or known_fmt
    dtype = dtype or known_dtype
    if fmt is not None and fmt not in FORMATS + ("bin",):
        raise ValueError(f"fmt must be one of {FORMATS + ('bin',)}, got {fmt!r}")
    if fmt == "npy" or (fmt is None and path.suffix == ".npy"):
        return _read_npy(path, mmap)
    with open(path, "rb") as f:
        head = f.read(LLMC_HEADER_BYTES)
    if fmt == "bin" or (fmt is None and head.startswith(BIN_MAGIC)):
        if not head.startswith(BIN_MAGIC):
            raise ValueError(f"{path}: not an FBPETOK .bin shard (bad magic {head[:8]!r})")
        return _read_old_bin(path, head, mmap)
    if fmt == "llmc" or (fmt is None and _is_llmc(head)):
        return _read_llmc(path, head, mmap)
    if dtype is None:
        raise ValueError(f"{path}: a headerless (raw) shard; pass dtype= (uint16 or uint32) or keep the "
                         f"{MANIFEST} that lists it beside it")
    dtype = np.dtype(dtype).newbyteorder("<")
    if dtype.name not in ("uint16", "uint32"):
        raise ValueError(f"dtype must be uint16 or uint32, got {dtype.name}")
    size = path.stat().st_size
    if size % dtype.itemsize:
        raise ValueError(f"{path}: {size} bytes is not a whole number of {dtype.name} ids")
    return _mapped(path, dtype, 0, size // dtype.itemsize, mmap)


class _ShardWriter:
    """Cuts the id stream into shards of ``shard_size`` ids, named ``name.format(k)`` (k counts
    the shards of ``shards``, to which each finished one is appended), then
    ``checkpoint(resume_at, final)`` (if given) records the input position after its last id.

    A shard is written as its ids come, into a temporary file renamed into place once whole
    (:class:`~fastbpe.fileio.AtomicWriter`): no shard is held in memory, the writing overlaps
    the encoding, and every SYNC_BYTES the ids written are handed to the disk, so that the
    fsync that ends a shard has little left to wait for. That hand-over runs on a thread of its
    own, one at a time, while the caller writes on: it waits for the disk (13 of them took 0.26 s
    in all, up to 50 ms each, on a busy disk, for 100 MB of English at two workers), and the
    thread that writes the ids is the one that hands the encoding threads their next tasks. Its
    error, if any, is raised by the next sync or by the end of the shard, which waits for it.
    :meth:`abort` removes a shard not finished (its owner calls it on any exception)."""

    SYNC_BYTES = 8 << 20

    def __init__(self, out_dir: Path, shards: list, shard_size: int, fmt: str, dtype: np.dtype, name: str,
                 total: int = 0, checkpoint=None):
        self.out_dir, self.shards, self.shard_size, self.fmt = out_dir, shards, shard_size, fmt
        self.name, self.checkpoint = name, checkpoint
        self.wide = np.dtype("<u2") if fmt == "llmc" else np.dtype(dtype).newbyteorder("<")
        self.file: Optional[AtomicWriter] = None  # the shard being written
        self.filled = 0  # ids in the shard so far
        self.unsynced = 0  # bytes of it written since the last sync
        self.total = total  # ids in finished shards
        # set while no hand-over to the disk runs (an event, not the thread's join: Python 3.11's
        # Thread.join, interrupted by Ctrl-C, takes a running thread for ended)
        self._synced = threading.Event()
        self._synced.set()
        self._sync_error: Optional[BaseException] = None  # what the last one raised

    def add(self, ids: Union[np.ndarray, list], segment: int, skip: int) -> None:
        """Append the ids of segment ``segment`` (an array, or a list of arrays that follow one
        another), of which ``skip`` were already written."""
        parts = ids if isinstance(ids, list) else [ids]
        length = sum(map(len, parts))
        base = 0  # where the part starts in the segment
        for part in parts:
            position = max(skip - base, 0)
            while position < len(part):
                take = min(self.shard_size - self.filled, len(part) - position)
                self._append(part[position:position + take])
                position += take
                if self.filled == self.shard_size:
                    self.flush((segment + 1, 0) if base + position == length else (segment, base + position))
            base += len(part)

    def add_run(self, ids: np.ndarray, first: int, ends: np.ndarray) -> None:
        """Append the ids of the whole segments ``first``, ``first + 1``... one after the other:
        segment ``first + k`` is ``ids[ends[k - 1]:ends[k]]`` (from 0 for ``k == 0``; so
        ``ends[-1] == len(ids)``)."""
        position = 0
        while position < len(ids):
            take = min(self.shard_size - self.filled, len(ids) - position)
            self._append(ids[position:position + take])
            position += take
            if self.filled == self.shard_size:
                k = int(np.searchsorted(ends, position - 1, side="right"))  # the segment of the last id
                start = int(ends[k - 1]) if k else 0
                self.flush((first + k + 1, 0) if position == ends[k] else (first + k, position - start))

    def _append(self, ids: np.ndarray) -> None:
        if not len(ids):
            return
        if self.file is None:
            name = self.name.format(len(self.shards)) + SUFFIX[self.fmt]
            # (the folder made by the first write: a job that fails before any leaves none behind)
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.file = _open_shard(self.out_dir / name, self.fmt, self.wide, self.shard_size)
        data = memoryview(np.ascontiguousarray(ids.astype(self.wide, copy=False))).cast("B")
        self.file.write(data)
        self.filled += len(ids)
        self.unsynced += data.nbytes
        if self.unsynced >= self.SYNC_BYTES:
            if self._synced.is_set():  # (else the next one follows it)
                self._wait_for_sync()
                self._synced.clear()
                threading.Thread(target=self._sync, args=(self.file,), daemon=True, name="fastbpe-shard-sync").start()
            self.unsynced = 0

    def _sync(self, file: AtomicWriter) -> None:
        try:
            file.sync()
        except BaseException as exc:  # (raised in the writing thread by _wait_for_sync)
            self._sync_error = exc
        finally:
            self._synced.set()

    def _wait_for_sync(self) -> None:
        """Wait for the hand-over running, if any; raise its error."""
        self._synced.wait()
        error, self._sync_error = self._sync_error, None
        if error is not None:
            raise error

    def flush(self, resume_at: Tuple[int, int], final: bool = False) -> None:
        if self.filled == 0 and not final:
            return
        if self.filled:
            file, self.file = self.file, None
            try:
                self._wait_for_sync()
                _finish_shard(file, self.fmt, self.wide, self.shard_size, self.filled)
            except BaseException:
                file.abort()
                raise
            self.shards.append({"file": os.path.basename(file.path), "tokens": int(self.filled)})
            self.total += self.filled
            self.filled = self.unsynced = 0
        if self.checkpoint is not None:
            self.checkpoint(resume_at, final)

    def abort(self) -> None:
        """Remove the shard being written, if any (nothing once every shard is finished)."""
        try:
            self._wait_for_sync()  # (before its file is closed)
        except Exception:  # (the error of a shard that is removed anyway)
            pass
        finally:
            if self.file is not None:
                self.file.abort()
                self.file = None


# Words in the names of special tokens, the likeliest document separators first: a text's end
# (<|endoftext|>, <|end_of_text|>, </s>, <eos>), a turn's (<|eot_id|>, <|im_end|>), any end.
_SEPARATOR_WORDS = (("endoftext", "end_of_text", "</s>", "eos"), ("eot", "im_end", "end_of_turn"), ("end", "sep"))


def separator_choices(tokenizer, shown: int = 5) -> str:
    """The special tokens a document separator can be, for an error message: at most ``shown``
    names, the likeliest first (_SEPARATOR_WORDS), and how many there are.

    >>> class Tok: special_tokens = {"<|begin_of_text|>": 0, "<|end_header_id|>": 1, "<|end_of_text|>": 2}
    >>> separator_choices(Tok(), shown=2)
    "one of its 3 special tokens: '<|end_of_text|>', '<|end_header_id|>', ... and 1 more"
    """
    def rank(name: str) -> tuple:
        low = name.lower()
        group = next((g for g, words in enumerate(_SEPARATOR_WORDS) if any(w in low for w in words)),
                     len(_SEPARATOR_WORDS))
        return group, name

    names = sorted(tokenizer.special_tokens, key=rank)
    if not names:
        return "a special token added to the tokenizer (it has none)"
    listed = ", ".join(repr(n) for n in names[:shown])
    more = f", ... and {len(names) - shown} more" if len(names) > shown else ""
    return f"one of its {len(names)} special tokens: {listed}{more}"


def separator_id(tokenizer, separator: str, owner: str, skip: str) -> int:
    """The id of the special token ``separator``; else ValueError naming the tokenizer (``owner``),
    the way to do without a separator (``skip``) and the special tokens it has."""
    if separator not in tokenizer.special_tokens:
        raise ValueError(f"{owner} has no special token {separator!r} to separate documents; "
                         f"pass {skip} {separator_choices(tokenizer)}")
    return tokenizer.special_tokens[separator]


def output_folder(out_dir: PathLike, inputs: Union[PathLike, Sequence[PathLike]], name: str) -> Path:
    """``out_dir`` as the folder to write shards in, refused (a ValueError naming it ``name``)
    where the job could only go wrong: empty (``Path("")`` is the current folder), a file or
    under one, or an input folder or inside one (the shards would be read as text by the next
    job over that folder, and this job's rerun would see other inputs).

    >>> output_folder("shards", ["corpus.txt"], "--out")
    PosixPath('shards')
    """
    if not os.fspath(out_dir):
        raise ValueError(f"{name} is empty; give the folder to write the shards in")
    out_dir = Path(out_dir)
    # (a device such as /dev/null is in the way too: a folder cannot be made there)
    in_the_way = os.fspath(out_dir) if out_dir.exists() and not out_dir.is_dir() else file_above(out_dir)
    if in_the_way is not None:
        raise ValueError(f"{name} {os.fspath(out_dir)!r}: {in_the_way!r} is a file, not a folder")
    inside = out_dir.resolve()
    for given in [inputs] if isinstance(inputs, (str, os.PathLike)) else inputs:
        if isinstance(given, (str, os.PathLike)) and os.path.isdir(given):
            folder = Path(given).resolve()
            if inside == folder or folder in inside.parents:
                raise ValueError(f"{name} {os.fspath(out_dir)!r} is inside the input folder {os.fspath(given)!r}; "
                                 "its shards would be read as text: give a folder outside it")
    return out_dir


@contextlib.contextmanager
def _locked_output_folder(out_dir: Path) -> Iterator[None]:
    """``out_dir``, made if need be and held locked for the block (``flock`` on the folder
    itself, no file added): two runs writing the same folder at once wrote one another's shards
    under one manifest that said complete. ValueError when another run holds it. A folder made
    here that the block leaves empty (a job that wrote nothing) goes again."""
    try:
        import fcntl
    except ImportError:  # (no flock: Windows)
        fcntl = None
    with folder_made_for(out_dir):
        descriptor = None
        try:
            if fcntl is not None:
                descriptor = os.open(out_dir, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise ValueError(f"{out_dir}: another run of encode is writing into this folder; wait for it "
                                     "to end, or write into another folder") from None
            yield
        finally:
            if descriptor is not None:
                os.close(descriptor)  # (which releases its lock)


def encode_files(
    tokenizer,
    files: Union[PathLike, Sequence[PathLike]],
    out_dir: PathLike,
    shard_size: int = 100_000_000,
    fmt: str = "npy",
    workers: Optional[int] = None,
    progress=None,
    *,
    documents: str = "file",
    separator: Optional[str] = "<|endoftext|>",
    block_size: Optional[int] = None,
    resume: bool = True,
    block_chars: Optional[int] = None,
    cluster=None,
    partition_size: Optional[int] = None,
    errors: str = "strict",
) -> dict:
    """Encode ``files`` into token shards in ``out_dir``; returns the manifest.

    ``files``: files, directories and globs, plain or compressed (:mod:`fastbpe.corpus.files`).
    ``documents``: what a document is: a ``"file"``, a ``"blank-line"``-separated block, or a
    ``"line"`` (a line ends at ``\\n`` or ``\\r\\n``, which is no part of it). ``separator``: the special token put between documents (``None`` for none; a
    token the tokenizer lacks is a ValueError). Literal special-token text inside documents is
    encoded as ordinary text (``encode_ordinary``: a token matched always gets its id).
    ``block_size``: bytes per block (default 4 MiB; ``block_chars`` is its former name). ``resume``: continue a previous run with the same inputs and options
    (otherwise a non-empty ``out_dir`` with a manifest is an error). Invalid UTF-8 raises
    :class:`~fastbpe.corpus.files.CorpusDecodeError` naming the file and the byte offset
    (``errors="strict"``), is replaced by U+FFFD (``"replace"``: the ids of
    ``text.decode("utf-8", "replace")``), or with a byte-level vocabulary each invalid byte is
    its one-byte token and the text between them is encoded a stretch at a time (``"bytes"``):
    as :func:`~fastbpe.count_words` counts such a corpus with the same ``errors``.

    ``cluster``: a ``dask.distributed.Client`` or a scheduler address: the input is cut into
    partitions of about ``partition_size`` bytes (default 64 MiB): byte ranges of plain files
    (ending at a safe cut of the split for ``documents="file"``, at a document start otherwise)
    and whole compressed files. Each partition is encoded on a worker, which writes its own
    shards, ``part_NNNNNN_KKKK`` (the partition's ids in shards of ``shard_size``, its last one
    shorter). The manifest lists the partitions, their shards and token counts; its
    ``shards``, read in order, hold the very ids of a local run (same separators, same
    document boundaries), cut into other files. A rerun after a failure (a worker lost, the
    client stopped) encodes only the partitions not yet recorded as done. Workers open the
    files themselves (the same paths on every machine: a shared filesystem, which also
    receives the shards) and must run this fastbpe version (checked first). The tokenizer is
    sent once (one task unpickles it; each worker fetches that result once). ``workers`` does not apply: each worker runs one partition per
    thread.
    """
    check_progress(progress)
    if block_chars is not None:
        if block_size is not None:
            raise ValueError("pass block_size or block_chars (its former name), not both")
        warnings.warn("block_chars is now block_size, in bytes", DeprecationWarning, stacklevel=2)
        block_size = block_chars
    if block_size is None:
        block_size = DEFAULT_BLOCK_SIZE
    check_block_size(block_size)
    if fmt == "bin":
        raise ValueError("the FBPETOK .bin shard format is no longer written (read_shard still reads it); "
                         "use fmt='raw' for headerless ids (np.memmap, nanoGPT) or 'llmc' for llm.c")
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    if documents not in DOCUMENTS:
        raise ValueError(f"documents must be one of {DOCUMENTS}, got {documents!r}")
    if isinstance(shard_size, (bool, np.bool_)) or not isinstance(shard_size, (int, np.integer)) or shard_size < 1:
        raise ValueError(f"shard_size must be a positive int, got {shard_size!r}")
    shard_size = int(shard_size)
    if fmt == "llmc" and shard_size > LLMC_MAX_TOKENS:  # (before the output folder is made)
        raise ValueError(f"llm.c's token files count their tokens in an int32: shard_size must be at most "
                         f"{LLMC_MAX_TOKENS:,} in that format, got {shard_size:,}")
    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer must be a fastbpe.Tokenizer, got {type(tokenizer).__name__} (a file: "
                        "fastbpe.load(path) reads it)")
    out_dir = output_folder(out_dir, files, "out_dir")
    files = input_files(files)
    warn_of_repeats(files)
    files = [Path(f) for f in files]
    sep_id = None
    if separator is not None:
        sep_id = separator_id(tokenizer, separator, "the tokenizer", "separator=None (nothing between documents) or")
    workers = check_workers(workers) if workers is not None else os.cpu_count() or 1
    dtype = tokenizer.id_dtype
    if fmt == "llmc" and dtype.itemsize > 2:  # (before the output folder is made)
        raise ValueError(f"llm.c token files hold uint16 ids; this tokenizer has ids up to "
                         f"{tokenizer.n_vocab - 1} (use fmt='raw' or 'npy', which store uint32)")
    check_errors(errors)
    if errors == "bytes":  # (before the output folder is made)
        rule, normalizer = _document_cuts(tokenizer)
        if rule is None or normalizer is not None or not utf8_encoder(tokenizer)[1]:
            # (the stretches between invalid bytes are encoded apart: a normaliser or a prefix
            # space would act on each as on a whole text)
            raise ValueError("errors='bytes' encodes the text between invalid bytes a stretch at a time, which "
                             "this tokenizer's normaliser (or prefix space) does not allow: use errors='replace'")
        _byte_ids(tokenizer)
    options = {"shard_size": shard_size, "format": fmt, "documents": documents, "separator": separator,
               "block_size": block_size, "dtype": dtype.name}
    if errors != "strict":  # (a job of strict decoding, the default, is fingerprinted as before)
        options["errors"] = errors
    if documents in _SEPARATOR_NEWLINES:
        options["line_ends"] = LINE_ENDS
    if cluster is not None:
        # the partition plan is part of the job: a rerun resumes partition by partition
        partition_size = DEFAULT_PARTITION_SIZE if partition_size is None else partition_size
        if isinstance(partition_size, bool) or not isinstance(partition_size, int) or partition_size < 1:
            raise ValueError(f"partition_size must be a positive number of bytes, got {partition_size!r}")
        options["partition_size"] = partition_size
    elif partition_size is not None:
        raise ValueError("partition_size applies to cluster runs only (cluster=...)")
    with _locked_output_folder(out_dir):  # (before the manifest is read: a run that finds none is the only one)
        manifest = _job_manifest(tokenizer, files, out_dir, options, resume, cluster)
        if manifest.get("complete"):
            return manifest
        if cluster is not None:
            _settle_digest(manifest, tokenizer)
            return _encode_on_cluster(tokenizer, files, out_dir, manifest, cluster, options, sep_id, progress)
        return _encode_locally(tokenizer, files, out_dir, manifest, options, workers, progress, sep_id)


def _settle_digest(manifest: dict, tokenizer) -> None:
    """The tokenizer digest of a new job's manifest, left None until now (_fingerprint)."""
    if manifest["job"].get("tokenizer_digest", "") is None:
        manifest["job"]["tokenizer_digest"] = _tokenizer_digest(tokenizer)


def _job_manifest(tokenizer, files: Sequence[Path], out_dir: Path, options: dict, resume: bool, cluster) -> dict:
    """The manifest of the job in ``out_dir``: the one there, checked against this job and its
    shards (a ValueError where it is another job's, or does not match them), or a new one; its
    header as this version writes it."""
    fmt, dtype, documents = options["format"], np.dtype(options["dtype"]), options["documents"]
    manifest_path = out_dir / MANIFEST
    manifest = None
    # A new job's tokenizer digest (10 ms for cl100k) is computed once every worker has a task
    # and this thread would wait for one (_settle_digest), not before; resuming compares it first.
    job = _fingerprint(tokenizer, files, options, digest=manifest_path.exists())
    if manifest_path.exists():
        try:
            manifest = json.loads(manifest_path.read_text())
        except (ValueError, OSError) as exc:
            raise ValueError(f"{manifest_path}: unreadable manifest ({exc}); remove it to start over") from None
        if not isinstance(manifest, dict):  # (another tool's file, or none of ours)
            held = {type(None): "null", list: "an array", str: "a string", bool: "true or false"}.get(type(manifest),
                                                                                                 "a number")
            raise ValueError(f"{manifest_path}: not a fastbpe manifest (it holds {held}, not an object); use a new "
                             "directory, or remove it to start over")
        earlier = manifest.get("job")
        if resume and isinstance(earlier, dict) and "tokenizer_sha256" in earlier:
            job = _fingerprint(tokenizer, files, options, earlier=True)  # a run of an earlier version
        if resume and isinstance(earlier, dict) and "line_ends" in job and "line_ends" not in earlier:
            job = _job_of_lf_lines(earlier, job, files, out_dir)
        if not resume:
            raise ValueError(f"{out_dir} already holds shards (resume=False); use a new directory or delete it")
        if earlier != job:
            raise ValueError(f"{out_dir} already holds shards of another job ({_job_difference(earlier, job)}); "
                             "use a new directory or delete it")
        try:
            listed = list(manifest["shards"])
            for part in manifest.get("partitions", ()):
                listed.extend(part["shards"] if part["done"] else ())
            for shard in listed:
                if len(read_shard(out_dir / shard["file"], fmt=fmt, dtype=dtype)) != shard["tokens"]:
                    raise ValueError(f"{out_dir / shard['file']}: does not match the manifest")
            # the stream's count and where to go on: what a resumed run trusts, so checked too
            tokens = manifest["tokens"]
            if not _count(tokens) or tokens != sum(shard["tokens"] for shard in manifest["shards"]):
                raise ValueError(f"{manifest_path}: its token count {tokens!r:.20} is not its shards' "
                                 "sum; remove the folder to start over")
            if cluster is None and not (isinstance(manifest["resume_at"], list) and len(manifest["resume_at"]) == 2
                                        and all(map(_count, manifest["resume_at"]))):
                raise ValueError(f"{manifest_path}: resume_at {manifest['resume_at']!r:.40} is not two counts; "
                                 "remove the folder to start over")
        except OSError as exc:
            raise ValueError(f"{manifest_path}: a shard it lists cannot be read ({exc}); remove the folder "
                             "to start over") from None
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{manifest_path}: malformed manifest ({exc!r}); remove the folder to start over") from None
        if manifest.get("complete"):
            return manifest
    if manifest is None:
        manifest = {"manifest": "fastbpe-shards", "job": job, "shards": [], "tokens": 0,
                    "resume_at": [0, 0], "complete": False}
        if cluster is not None:
            del manifest["resume_at"]
            cuts, normalizer = _document_cuts(tokenizer)  # (a worker's range ends at a cut of the plain rule)
            manifest["partitions"] = _plan_partitions(files, options["partition_size"], documents,
                                                      normalizer is not None or not isinstance(cuts, int))
    # What a reader needs to know, first in the file (a resumed version 1 manifest gains it too).
    header = {"manifest": "fastbpe-shards", "version": MANIFEST_VERSION, "format": fmt, "dtype": dtype.name,
              "byte_order": "little", "header_bytes": {"npy": None, "raw": 0, "llmc": LLMC_HEADER_BYTES}[fmt]}
    return {**header, **{k: v for k, v in manifest.items() if k not in header}}


def _encode_locally(tokenizer, files: Sequence[Path], out_dir: Path, manifest: dict, options: dict, workers: int,
                    progress, sep_id: Optional[int]) -> dict:
    """encode_files on this machine's threads, from where ``manifest`` says to resume; returns
    it, complete."""
    shard_size, fmt, dtype = options["shard_size"], options["format"], np.dtype(options["dtype"])
    documents, block_size, errors = options["documents"], options["block_size"], options.get("errors", "strict")
    resume_segment, resume_offset = manifest["resume_at"]
    tokens_before = int(manifest["tokens"])

    saved = {"at": time.perf_counter(), "cost": 0.0, "behind": False}  # the manifest file's last rewrite
    shards = list(manifest["shards"])  # the writer's list; the manifest lists the committed ones
    # (shards listed, their tokens, where to resume, complete), replaced whole by each checkpoint:
    # a Ctrl-C lands before or after the one assignment, never between the three. Kept in the
    # manifest itself, a Ctrl-C just after a shard was listed saved it with the tokens and the
    # place to resume of the shard before (a folder refused, or a resume that wrote ids twice).
    committed = [(len(shards), tokens_before, list(manifest["resume_at"]), False)]

    def save_manifest() -> None:
        count, tokens, resume_at, complete = committed[0]
        manifest.update(shards=shards[:count], tokens=tokens, resume_at=resume_at, complete=complete)
        began = time.perf_counter()
        write_atomic(out_dir / MANIFEST, json.dumps(manifest, indent=1).encode())
        saved["at"] = time.perf_counter()
        saved["cost"], saved["behind"] = saved["at"] - began, False

    def checkpoint(resume_at: Tuple[int, int], final: bool) -> None:
        _settle_digest(manifest, tokenizer)
        committed[0] = (len(shards), int(writer.total), list(resume_at), final)
        since = time.perf_counter() - saved["at"]
        if final or since >= max(MANIFEST_EVERY_SECONDS, saved["cost"] / MANIFEST_COST_SHARE):
            save_manifest()
        else:
            saved["behind"] = True  # (saved by the next checkpoint that is due, or on the way out)

    writer = _ShardWriter(out_dir, shards, shard_size, fmt, dtype, "shard_{:06d}", total=tokens_before,
                          checkpoint=checkpoint)
    started = time.perf_counter()
    file_bytes = sum(f.stat().st_size for f in files)
    bar = byte_bar(progress, file_bytes, "encoding")
    text_bytes = 0  # input encoded by this run
    rule, _ = _document_cuts(tokenizer)
    encode_piece, cuts = _piece_encoder(tokenizer, errors)
    encode_many = utf8_batch_encoder(tokenizer)
    sep = None if sep_id is None else np.array([sep_id], dtype=dtype)
    last_index = resume_segment - 1
    # what is written next, in order: (block index, needs a separator, file bytes, its pieces),
    # or for a task of whole blocks (first index, last index, file bytes, None)
    segments: deque = deque()
    done: deque = deque()  # the ids of the pieces (or _Run of the tasks) encoded, not yet written
    running: deque = deque()  # the tasks submitted, in order

    def encode_pieces(task: list) -> list:
        """The ids (as the shards store them) of each piece of a task; runs on a worker thread."""
        return [encode_piece(piece, path, offset) for piece, path, offset, _ in task]

    def encode_run(task: list) -> _Run:
        """_encode_texts of a task of whole blocks ``(data, path, offset, needs_sep)``."""
        bounds = np.zeros(len(task) + 1, dtype=np.int64)
        np.cumsum([len(piece) for piece, _, _, _ in task], out=bounds[1:])
        return _encode_texts(encode_many, encode_piece, dtype, sep_id, b"".join([piece for piece, _, _, _ in task]),
                             bounds[:-1], bounds[1:], lambda k: task[k][1:3],
                             np.array([needs_sep for _, _, _, needs_sep in task], dtype=bool))

    def encode_documents(docs: PieceDocuments, a: int, b: int, sep_first: bool) -> _Run:
        return _encode_documents(encode_many, encode_piece, dtype, sep_id, docs, a, b, sep_first)

    def write_finished(keep: int) -> None:
        """Wait for the oldest tasks until at most ``keep`` run, and write every block whose
        pieces are all encoded, in order."""
        nonlocal last_index
        while True:
            raw = 0
            while segments:
                index, needs_sep, block_raw, count = segments[0]
                if count is None:  # a run of whole blocks: index to needs_sep
                    if not done:
                        break
                    run = done.popleft()
                    writer.add_run(run.ids, index, run.ends)
                    last_index = needs_sep
                else:
                    if len(done) < count:
                        break
                    parts = [done.popleft() for _ in range(count)]
                    writer.add([sep] + parts if needs_sep else parts, index,
                               resume_offset if index == resume_segment else 0)
                    last_index = index
                segments.popleft()
                raw += block_raw
            if bar is not None and raw:
                bar.update(raw)
                bar.set_postfix(tokens=f"{writer.total + writer.filled:,}", refresh=False)
            if len(running) <= keep:
                return
            # the digest, while this thread would wait anyway: by now every worker has a task
            # (computed right after the first task went out, it kept the second worker idle)
            _settle_digest(manifest, tokenizer)
            result = running.popleft().result()
            if isinstance(result, _Run):
                done.append(result)
            else:
                done.extend(result)

    # A pipeline: this thread reads and cuts the input into tasks of about TASK_BYTES (runs of
    # whole blocks, or pieces of a long block cut at safe cuts), the pool's threads encode them
    # (the GIL released, sharing one chunk cache), and this thread writes the ids in
    # input order as tasks finish, up to ``ahead`` tasks behind the reading.
    ahead = 2 * workers + 2
    with tokenizer._pools.borrow(workers) as pool:
        try:
            run, run_bytes, run_raw = [], 0, 0  # whole blocks for the next task

            def submit_run():
                nonlocal run, run_bytes, run_raw
                if run:
                    segments.append((last_queued - len(run) + 1, last_queued, run_raw, None))
                    running.append(pool.submit(encode_run, run))
                    run, run_bytes, run_raw = [], 0, 0
                    write_finished(ahead)

            emitted_any = False
            in_doc = False  # the current document already has text
            last_queued = resume_segment - 1
            index = -1
            for item in _blocks(tokenizer, files, documents, block_size, errors):
                if isinstance(item, int):  # a file's bytes read after its last block: progress only
                    if bar is not None and item:
                        bar.update(item)
                    continue
                if isinstance(item, PieceDocuments) and (index + 1 > resume_segment or
                                                (index + 1 == resume_segment and resume_offset == 0)):
                    # whole documents, none of them written yet (the run starts before them or with them)
                    submit_run()  # (the blocks gathered before them go first)
                    first = index + 1
                    index += len(item.starts)
                    sep_first = emitted_any and sep_id is not None  # (a PieceDocuments starts a document)
                    in_doc, emitted_any = False, True
                    text_bytes += item.text_bytes()
                    for a, b in _document_tasks(item.stops):
                        segments.append((first + a, first + b - 1, item.raw if a == 0 else 0, None))
                        after_sep = sep_first if a == 0 else sep_id is not None
                        running.append(pool.submit(encode_documents, item, a, b, after_sep))
                        write_finished(ahead)
                    last_queued = index
                    continue
                if isinstance(item, PieceDocuments) and index + len(item.starts) < resume_segment:
                    # every document of it written by an earlier run: passed over at once, as the
                    # loop below would leave its state (a document at a time, a resumed run of
                    # lines took 0.5 s per 40 MB it had written)
                    index += len(item.starts)
                    in_doc, emitted_any = False, emitted_any or bool(np.any(item.stops > item.starts))
                    if bar is not None:
                        bar.update(item.raw)
                    continue
                for block in item.blocks() if isinstance(item, PieceDocuments) else (item,):
                    index += 1
                    needs_sep = bool(block.data) and not in_doc and emitted_any and sep_id is not None
                    if block.data:
                        in_doc = emitted_any = True
                    if block.ends_document:
                        in_doc = False
                    if index < resume_segment:  # written by an earlier run
                        if bar is not None:
                            bar.update(block.raw)
                        continue
                    text_bytes += len(block.data)
                    if index != resume_segment and (len(block.data) <= TASK_BYTES or not cuts):
                        run.append((block.data, block.path, block.offset, needs_sep))
                        run_bytes += len(block.data)
                        run_raw += block.raw
                        last_queued = index
                        if run_bytes >= TASK_BYTES or len(run) >= TASK_PIECES:
                            submit_run()
                        continue
                    submit_run()  # a long block (or the one a resumed run starts inside): task by piece
                    pieces = list(_task_pieces(block, rule if cuts else None))
                    segments.append((index, needs_sep, block.raw, len(pieces)))
                    last_queued = index
                    for piece in pieces:
                        running.append(pool.submit(encode_pieces, [piece + (False,)]))
                        write_finished(ahead)
            submit_run()
            write_finished(0)
            _check_inputs_unchanged(manifest["job"])  # (before the last shard and the word "complete")
            writer.flush((last_index + 1, 0), final=True)
        finally:
            for future in running:
                future.cancel()
            wait_for(running)  # (a task already running ends within one piece)
            writer.abort()  # (a shard begun and not finished: an exception, a Ctrl-C)
            if saved["behind"]:  # stopped by an exception: the shards finished are listed
                try:
                    save_manifest()
                except OSError:  # (the exception on its way out says more; the old manifest holds)
                    pass
            if bar is not None:
                bar.close()
    seconds = time.perf_counter() - started
    manifest["seconds"] = round(seconds, 3)
    # This run alone (a resumed run skips what earlier runs wrote); not saved in the manifest file.
    manifest["run"] = {"seconds": seconds, "file_bytes": file_bytes, "text_bytes": text_bytes,
                       "tokens": int(manifest["tokens"]) - tokens_before}
    return manifest


# ------------------------------------------------------------------------------ on a Dask cluster


def _plan_partitions(files: Sequence[Path], partition_size: int, documents: str, uncut: bool) -> list:
    """The partitions of a cluster run, in stream order: byte ranges ``[start, end)`` of plain
    files (the worker moves both ends to the next cut, so neighbours meet), whole compressed
    files (``end`` None). With ``documents="file"``, the plain files stay whole too when
    ``uncut``: the tokenizer's text cannot be cut by a byte range's plain rule (it cuts the
    normalised text, or checks each cut, or cuts nowhere: :func:`_document_cuts`)."""
    parts = []
    for path in files:
        size = path.stat().st_size
        if is_compressed(str(path)):
            ranges = [(0, None)]
        elif documents == "file" and uncut:
            ranges = [(0, size)]
        else:
            ranges = [(start, min(start + partition_size, size)) for start in range(0, max(size, 1), partition_size)]
        parts.extend({"path": str(path), "start": start, "end": end, "done": False} for start, end in ranges)
    return parts


def _partition_pieces(f: BinaryIO, lo: int, hi: int, size: int) -> Iterator[bytes]:
    f.seek(lo)
    remaining = hi - lo
    while remaining > 0:
        piece = f.read(min(remaining, size))
        if not piece:
            return
        remaining -= len(piece)
        yield piece


def encode_partition(tokenizer, part: dict, number: int, out_dir: str, options: dict, text_before: bool) -> dict:
    """Encode one partition of a cluster run into its shards ``part_{number:06d}_KKKK`` in
    ``out_dir``; runs on a Dask worker. ``text_before``: whether text precedes the partition in
    the corpus (its first document then gets a separator). Returns the partition's record."""
    out = Path(out_dir)
    documents, block_size, sep_id = options["documents"], options["block_size"], options["separator_id"]
    fmt, dtype = options["format"], tokenizer.id_dtype
    rule, normalizer = _document_cuts(tokenizer)
    encode_piece, _ = _piece_encoder(tokenizer, options.get("errors", "strict"))
    encode_many = utf8_batch_encoder(tokenizer)
    path = part["path"]
    shards: list = []
    prefix = f"part_{number:06d}_"
    writer = _ShardWriter(out, shards, options["shard_size"], fmt, dtype, prefix + "{:04d}")
    try:
        reader, raw = open_bytes(path)
        with reader, raw:
            if part["end"] is None:  # a whole (compressed) file
                lo, hi = 0, None
                pieces = read_pieces(reader, block_size)
            else:
                size = os.fstat(raw.fileno()).st_size
                if documents == "file":
                    lo, hi = (file_cut_at_or_after(raw, pos, size, rule) for pos in (part["start"], part["end"]))
                else:
                    lo, hi = (document_start_at_or_after(raw, pos, size, documents) for pos in (part["start"], part["end"]))
                pieces = _partition_pieces(raw, lo, hi, block_size)
            if options.get("errors") == "replace":
                pieces = _replaced(pieces)
            # a "file" partition that starts after byte 0 continues the file's document
            in_doc = documents == "file" and lo > 0
            emitted = text_before or in_doc
            has_text = in_doc
            text_bytes = 0
            for item in _document_items(path, pieces, documents, rule, block_size, normalizer, lo):
                if isinstance(item, PieceDocuments):  # whole documents (the first starts a document)
                    run = _encode_documents(encode_many, encode_piece, dtype, sep_id, item, 0, len(item.starts),
                                        emitted and sep_id is not None)
                    writer.add(run.ids, 0, 0)
                    in_doc, emitted, has_text = False, True, True
                    text_bytes += item.text_bytes()
                    continue
                data, ends, offset = item
                needs_sep = bool(data) and not in_doc and emitted and sep_id is not None
                if data:
                    in_doc = emitted = has_text = True
                    text_bytes += len(data)
                    ids = encode_piece(data, path, offset)
                    del data  # (a long block's input is let go before its ids are written)
                    writer.add([np.array([sep_id], dtype=dtype), ids] if needs_sep else ids, 0, 0)
                if ends:
                    in_doc = False
            writer.flush((0, 0), final=True)
    except BaseException:
        writer.abort()
        raise
    # files of an earlier attempt at this partition that this one did not rewrite
    written = {shard["file"] for shard in shards}
    for name in os.listdir(out):
        if name.startswith(prefix) and name not in written:
            os.unlink(out / name)
    return {"shards": shards, "tokens": int(writer.total), "text": has_text, "text_before": text_before,
            "range": [lo, hi], "text_bytes": text_bytes}


def _count(value) -> bool:
    """Whether a manifest's value is a count: an int >= 0 (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _stream_prefix(parts: list) -> Tuple[list, int]:
    """The shards of the partitions done from the first one on, and their ids: the part of the
    token stream that is final."""
    shards, tokens = [], 0
    for part in parts:
        if not part["done"]:
            break
        shards.extend(part["shards"])
        tokens += part["tokens"]
    return shards, tokens


def _text_before(parts: list, index: int) -> bool:
    """Whether text precedes partition ``index``, as far as the partitions done tell: yes when
    one before it has text; no when all before it are done without text; otherwise assumed
    (checked once they are done)."""
    before = parts[:index]
    return any(p.get("text") for p in before if p["done"]) or not all(p["done"] for p in before)


# A temporary file its writer has not touched for this long is a lost worker's (a live writer
# writes its shard in one go, from a buffer already full).
STALE_TEMPORARY_SECONDS = 60.0


def _remove_temporaries(out_dir: Path, idle_for: float = 0.0) -> None:
    """Remove the temporary files of workers lost in the middle of writing a shard: those not
    modified for ``idle_for`` seconds. At the start of a run, a task of an interrupted earlier
    run may still be writing one on a worker (cancelling a task does not stop it), so only idle
    ones go; at the end, none of this run's tasks is writing, and every one goes."""
    now = time.time()
    for name in os.listdir(out_dir):
        if name.startswith(".tmp-"):
            try:
                if now - os.stat(out_dir / name).st_mtime >= idle_for:
                    os.unlink(out_dir / name)
            except FileNotFoundError:  # renamed into place (or removed) by its writer meanwhile
                pass


def _encode_on_cluster(tokenizer, files, out_dir: Path, manifest: dict, cluster, options: dict,
                       sep_id: Optional[int], progress) -> dict:
    import uuid

    from distributed import as_completed

    from .cluster import connect

    client, own_client = connect(cluster)
    parts = manifest["partitions"]
    tokens_before = sum(p["tokens"] for p in parts if p["done"])
    _remove_temporaries(out_dir, idle_for=STALE_TEMPORARY_SECONDS)
    started = time.perf_counter()
    file_bytes = sum(f.stat().st_size for f in files)
    bar = byte_bar(progress, file_bytes, "encoding")
    task_options = {**options, "separator_id": sep_id}
    run = {"text_bytes": 0, "tokens": 0}

    def part_bytes(part) -> int:
        if part["end"] is None:
            return os.path.getsize(part["path"])
        return part["end"] - part["start"]

    def save(complete: bool) -> None:
        manifest["shards"], manifest["tokens"] = _stream_prefix(parts)
        manifest["complete"] = complete
        write_atomic(out_dir / MANIFEST, json.dumps(manifest, indent=1).encode())

    def pending() -> list:
        """The partitions to encode: those not done; once all are, the one whose separator
        guess turned out wrong (told "text before" while every partition before it turned out
        empty: only the first partition with text can be)."""
        todo = [i for i, p in enumerate(parts) if not p["done"]]
        if todo:
            return todo
        seen_text = False
        for i, part in enumerate(parts):
            if part["text"] and part["text_before"] != seen_text:
                part["done"] = False  # its shards are rewritten: not final until then
                save(complete=False)
                return [i]
            seen_text = seen_text or part["text"]
        return []

    futures = []
    counted = {i for i, p in enumerate(parts) if p["done"]}  # partitions the bar has seen
    try:
        if bar is not None:
            bar.update(sum(part_bytes(parts[i]) for i in counted))
        # The tokenizer travels once, inside one task that unpickles it; each worker fetches that
        # result once and every partition refers to it. Unlike scattered data (client.scatter),
        # a task's result is recomputed when the workers holding it die, so losing workers
        # never loses the tokenizer.
        payload = pickle.dumps(tokenizer, protocol=pickle.HIGHEST_PROTOCOL)
        tok_future = client.submit(pickle.loads, payload, pure=False,
                                   key=f"fastbpe-tokenizer-{uuid.uuid4().hex}")
        todo = pending()
        while todo:
            submitted = {}
            for i in todo:
                future = client.submit(encode_partition, tok_future, parts[i], i, str(out_dir), task_options,
                                       _text_before(parts, i), pure=False)
                submitted[future] = i
            futures = list(submitted)
            for future in as_completed(futures):
                i = submitted[future]
                record = future.result()
                future.release()
                run["text_bytes"] += record.pop("text_bytes")
                parts[i].update(record, done=True)
                if bar is not None and i not in counted:
                    bar.update(part_bytes(parts[i]))
                counted.add(i)
                save(complete=False)
            todo = pending()
        _remove_temporaries(out_dir)
        _check_inputs_unchanged(manifest["job"])
        save(complete=True)
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        if bar is not None:
            bar.close()
        if own_client:
            client.close()
    seconds = time.perf_counter() - started
    manifest["seconds"] = round(seconds, 3)
    manifest["run"] = {"seconds": seconds, "file_bytes": file_bytes, "text_bytes": run["text_bytes"],
                       "tokens": int(manifest["tokens"]) - tokens_before}
    return manifest
