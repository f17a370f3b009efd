"""Corpus-scale word counting: pre-tokenize a corpus and count its unique chunks.

``count_words(corpus, pattern="gpt2")`` streams files (plain, ``.gz``, ``.xz``, ``.bz2``,
``.zst`` when the ``zstandard`` module is importable), directories (recursively, sorted), glob
patterns, or an iterable of str / bytes documents, in bounded memory, and returns a
:class:`~fastbpe.corpus.wordtable.WordTable`: unique chunks in first-appearance order with 64-bit counts.
Training on that table gives the merges the reference gives on the same text.

What is one text. Each file is one text and each item of an iterable is one text: chunks never
span two files or two items (the pattern sees the end of the text at the end of each). A file is
*not* split into lines: ``"a\\n\\nb"`` chunks as a whole, unless ``lines=True`` asks for every
line (with its ``\\n``) to be a text, as Hugging Face's training on files reads them: the line
ends are added to each block's document ends, so the compiled scanner does the rest.

Blocks. Text is read in blocks of about ``block_size`` bytes that end only at safe cuts
(:mod:`fastbpe.corpus.cut`), so counting block by block gives exactly the table of the whole.

Invalid UTF-8: ``errors="strict"`` (default) raises :class:`CorpusDecodeError` naming the file
(or item) and the byte offset (in the decompressed stream); ``"replace"`` counts the text
``bytes.decode("utf-8", "replace")`` gives; ``"bytes"`` chunks each valid stretch between invalid
bytes as its own text and counts every invalid byte as a one-byte chunk.

Parallelism: ``workers=N`` count partitions independently (byte ranges of plain files and, when
there are at least 2N of them, whole compressed files, all read by the workers; otherwise blocks
read in turn: a few compressed files, iterables); their tables are combined in partition order,
so the result is identical to ``workers=1``, order included. With a compiled scanner the workers
are threads of this process that take small partitions from one queue as they go, each into a
table of its own; the tables are merged by the same threads, one hash partition of the chunks
each, and read out in corpus order (counting, reading plain files, decompressing and merging run
without the GIL). A user regex, which holds the GIL, is counted in worker processes.
``cluster=`` does the same on a Dask cluster (see :func:`count_words`).
"""
import io
import itertools
import os
import sys
import threading
from collections import deque
from contextlib import contextmanager
from typing import Any, Iterator, List, NamedTuple, Optional, Tuple, Union

import numpy as np

from .._core.count import ChunkCounter, Utf8Reader, fix_malloc_thresholds, merge_partition, write_merged
from .._core.split import find_cut
from ..cluster import OrderedReduction, connect, worker_threads
from ..arguments import check_block_size, check_workers
from ..progress import byte_bar, check_progress
from ..reference import split as split_reference
from ..split.patterns import check_user_pattern, cut_rule, renamed_pattern, resolve, scanner_id, source
from ..split.pretokenize import InvalidUTF8, check_errors
from .cut import cut_stream, file_cut_at_or_after
from .files import (CorpusDecodeError, decode_error, expand_paths, is_compressed, open_bytes, read_pieces,
                    warn_of_repeats)
from .wordtable import WordTable

__all__ = ["count_words", "CorpusDecodeError"]

DEFAULT_BLOCK_SIZE = 8 << 20


# ------------------------------------------------------------------------------ blocks


class Block(NamedTuple):
    """Documents packed into one buffer (bytes, or a uint8 array or a view of one read into):
    ``data[ends[k-1]:ends[k]]`` is document k.

    ``names[k]`` / ``starts[k]`` say where document k came from (file path or item index, and
    the byte offset of its first byte there) for error messages; ``raw`` is the input bytes it
    stands for (for progress: compressed bytes for compressed files). ``text_size``: in a block
    of a long item of an iterable, the item's length, for a counter that could not size its
    table up front (an iterable's size is not known) to size it at once (:func:`_reserve_for`).
    """

    data: Union[bytes, np.ndarray, memoryview]
    ends: np.ndarray
    names: Tuple[Union[str, int], ...]
    starts: Tuple[int, ...]
    raw: int
    text_size: int = 0


class _BlockBuilder:
    """Packs consecutive documents into blocks of about ``block_size`` bytes."""

    def __init__(self, block_size: int):
        self.block_size = block_size
        self._reset()

    def _reset(self):
        self.parts: List[bytes] = []
        self.ends: List[int] = []
        self.names: List[Union[str, int]] = []
        self.starts: List[int] = []
        self.size = 0
        self.raw = 0

    def add(self, data: bytes, name: Union[str, int], start: int, raw: int) -> Optional[Block]:
        self.parts.append(data)
        size = self.size = self.size + len(data)
        self.ends.append(size)
        self.names.append(name)
        self.starts.append(start)
        self.raw += raw
        return self.take() if size >= self.block_size else None

    def add_many(self, datas: List[bytes], first_index: int) -> Iterator[Block]:
        """Add consecutive items first_index, first_index + 1, ... (each a whole text)."""
        if not datas:
            return
        before = self.size
        self.parts.extend(datas)
        self.ends.extend(itertools.islice(itertools.accumulate(map(len, datas), initial=before), 1, None))
        self.size = self.ends[-1]
        self.names.extend(range(first_index, first_index + len(datas)))
        self.starts.extend(itertools.repeat(0, len(datas)))
        self.raw += self.size - before
        if self.size >= self.block_size:
            yield self.take()

    def take(self) -> Optional[Block]:
        if not self.parts:
            return None
        # one part (a long text cut into a block of its own) is taken as it is, not copied
        data = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
        block = Block(data, np.array(self.ends, dtype=np.int64), tuple(self.names),
                      tuple(self.starts), self.raw)
        self._reset()
        return block


class _Range(NamedTuple):
    """Task: the bytes of a plain file between the first safe cuts at or after start and end."""

    path: str
    start: int
    end: int


def _range_blocks(task: _Range, rule: int, block_size: Optional[int],
                  scratch: Optional[List[np.ndarray]] = None) -> Iterator[Block]:
    size = os.path.getsize(task.path)
    with open(task.path, "rb", buffering=0) as f:
        # a range inside a stretch without a cut (one long word) is empty: the range whose
        # start precedes the stretch reads all of it
        lo = file_cut_at_or_after(f, task.start, size, rule, task.end)
        if lo >= task.end:
            return
        hi = file_cut_at_or_after(f, task.end, size, rule)
        f.seek(lo)
        yield from _read_blocks(f, hi - lo, lo, task.path, rule, block_size, scratch)


def _read_blocks(f, length: int, start: int, name: Union[str, int], rule: int, block_size: Optional[int],
                 scratch: Optional[List[np.ndarray]] = None, fresh: bool = False) -> Iterator[Block]:
    """The next ``length`` bytes of ``f`` (``start`` bytes into its text; or fewer, when ``f``
    ends first) as Blocks cut at safe cuts, read into one buffer that every block reuses.

    Each Block's data is a view of that buffer, valid until the next block is asked for: the
    consumer counts a block before it takes the next. Reading into the same (already faulted-in)
    memory costs one copy from the page cache per byte, where a fresh bytes object per block
    costs a page fault per 4 KiB and a second copy to join the pieces at the cut. ``scratch``
    (a one-item list, or empty) carries that buffer from one range to the next: a counting
    thread reads all its ranges into the same memory. ``fresh``: each block has a buffer of
    its own instead (the bytes after the cut move to the next one), for blocks that are held
    after the next is read: counted by other threads, or pickled to other processes.
    """
    if block_size is None:
        data = f.read(length)
        yield Block(data, np.array([len(data)], dtype=np.int64), (name,), (start,), len(data))
        return
    capacity = min(length, block_size + min(block_size, 1 << 16))  # a cut is searched for past block_size
    if scratch and len(scratch[0]) >= capacity:
        buf = scratch[0][:capacity]
    else:
        buf = np.empty(capacity, dtype=np.uint8)
        if scratch is not None:
            scratch[:] = [buf]
    filled = 0  # buf[:filled] holds the text from `start` on
    searched = 0  # no cut at or after block_size before this position
    while True:
        want = min(len(buf) - filled, length)
        got = f.readinto(memoryview(buf)[filled:filled + want]) if want else 0
        filled += got
        length -= got
        if length == 0 or got == 0:  # the end of the range (or the file shrank meanwhile)
            if filled:
                yield Block(buf[:filled], np.array([filled], dtype=np.int64), (name,), (start,), filled)
            return
        if filled < len(buf):
            continue
        cut = find_cut(buf, max(block_size, searched), rule)
        if cut < 0:  # a stretch without a cut: the buffer doubles (to at most what is left
            # of the range: one long word is held once, not in a buffer up to twice its size),
            # the search goes on after it
            searched = max(block_size, filled - 4)
            grown = np.empty(min(2 * len(buf), filled + length), dtype=np.uint8)
            grown[:filled] = buf[:filled]
            buf = grown
            if scratch is not None:
                scratch[:] = [buf]
            continue
        yield Block(buf[:cut], np.array([cut], dtype=np.int64), (name,), (start,), cut)
        if fresh:
            buf, held = np.empty(len(buf), dtype=np.uint8), buf
            buf[:filled - cut] = held[cut:filled]
        else:
            buf[:filled - cut] = buf[cut:filled]
        filled -= cut
        start += cut
        searched = 0


class _File(NamedTuple):
    """Task: a whole (compressed) file, read and decompressed by the worker."""

    path: str


class _Files(NamedTuple):
    """Task: several small plain files, whole (each a _Range), read by the worker in order."""

    ranges: Tuple[_Range, ...]


def _range_bounds(size: int, split: int, taper: bool) -> List[Tuple[int, int]]:
    """(start, end) of the byte ranges of a file of ``size`` bytes, ``split`` bytes each (the
    last two cut into eighths when ``taper``).

    >>> _range_bounds(10, 4, False), _range_bounds(64, 16, True)[:4]
    ([(0, 4), (4, 8), (8, 10)], [(0, 16), (16, 32), (32, 34), (34, 36)])
    """
    starts = list(range(0, size, split))
    if taper and len(starts) > 2:
        tail = starts[-2]
        del starts[-2:]
        starts.extend(range(tail, size, max(1, split // 8)))
    return list(zip(starts, starts[1:] + [size]))


def _file_blocks(task: _File, rule: int, block_size: Optional[int]) -> Iterator[Block]:
    reader, raw = open_bytes(task.path)
    with reader, raw:
        last_raw = 0
        for segment, offset in cut_stream(read_pieces(reader, block_size or (1 << 24)), rule, block_size):
            now = raw.tell()
            yield Block(segment, np.array([len(segment)], dtype=np.int64), (task.path,), (offset,), now - last_raw)
            last_raw = now


def _source_tasks(corpus, rule: int, block_size: Optional[int], split_plain: Optional[int],
                  compressed_to_workers: bool = False, files: Optional[List[str]] = None,
                  plain_to_workers: bool = False, taper: bool = False,
                  ranges_above: Optional[int] = None, in_turn: bool = False) -> Iterator[Any]:
    """The corpus as an ordered stream of tasks: Block (data in hand), _Range, _Files or _File
    (a worker reads the file itself).

    Plain files of more than ``split_plain`` bytes become _Range tasks of about that size, and
    with ``plain_to_workers`` (a cluster: no text through this process) smaller ones become
    _Files tasks of consecutive files up to about that size; compressed files become _File tasks
    when ``compressed_to_workers``; everything else is read here and packed into Blocks.
    ``files``: the corpus's files if already expanded. ``taper``: the last two partitions of the
    corpus's last file are cut into eighths (threads taking tasks as they go then finish
    within a small task of each other). ``ranges_above``: plain files of more than this many
    bytes (default ``split_plain``) become _Range tasks too (one counter reading them in turn
    reads each into one reused buffer instead of fresh pieces joined at every cut).

    An item of an iterable longer than a quarter block (in characters or bytes: its UTF-8 may
    pass a block) is read block by block on its own (_long_item_blocks): each byte of its UTF-8
    is written once, into the block (the str is never encoded whole, no segment is joined at
    its cut). ``in_turn``: each block is counted before the next is made (one counter in this
    process), so they are all read into one reused buffer.
    """
    if ranges_above is None:
        ranges_above = split_plain
    builder = _BlockBuilder(block_size or (1 << 62))
    small: List[_Range] = []  # consecutive small plain files for one _Files task
    small_size = 0

    def pending():
        """What was gathered before the next task: the small files, or a Block in hand."""
        nonlocal small, small_size
        if small:
            yield _Files(tuple(small))
            small, small_size = [], 0
        block = builder.take()
        if block is not None:
            yield block

    if files is None:
        files = _corpus_files_or_none(corpus)
    if files is not None:
        for path in files:
            compressed = is_compressed(path)
            size = os.path.getsize(path)
            if not compressed and split_plain is not None and size > ranges_above:
                yield from pending()
                for start, end in _range_bounds(size, split_plain, taper and path == files[-1]):
                    yield _Range(path, start, end)
                continue
            if not compressed and split_plain is not None and plain_to_workers:
                small.append(_Range(path, 0, size))
                small_size += size
                if small_size >= split_plain:
                    yield from pending()
                continue
            if compressed and compressed_to_workers:
                yield from pending()
                yield _File(path)
                continue
            reader, raw = open_bytes(path)
            with reader, raw:
                last_raw = 0
                # grow: a stretch without a cut (one long word) is held once, not as pieces
                # and their join
                for segment, offset in cut_stream(read_pieces(reader, block_size or (1 << 24)), rule, block_size,
                                                  grow=True):
                    now = raw.tell()
                    block = builder.add(segment, path, offset, now - last_raw)
                    last_raw = now
                    if block is not None:
                        yield block
    else:
        if isinstance(corpus, (bytes, bytearray)):
            raise TypeError("corpus is bytes: pass an iterable of documents, e.g. [data]")
        # the per-item path is the hot loop for corpora of many short texts: items are taken in
        # batches and added to the block builder a batch at a time (an item's name is its
        # index, formatted only for an error message)
        long = (block_size if block_size is not None else 1 << 62) // 4
        scratch: List[np.ndarray] = []  # (in_turn) the buffer of long items, reused
        items = iter(corpus)
        first = 0
        while True:
            batch = list(itertools.islice(items, 1024))
            if not batch:
                break
            kinds = set(map(type, batch))
            if not kinds <= {bytes, str}:
                batch = [_item_text(item, first + k) for k, item in enumerate(batch)]
            if max(map(len, batch)) <= long:  # the common case: no long item
                yield from builder.add_many(batch if kinds == {bytes} else _utf8(batch), first)
                first += len(batch)
                continue
            lo = 0
            for k, item in enumerate(batch):
                if len(item) > long:
                    yield from builder.add_many(_utf8(batch[lo:k]), first + lo)
                    yield from pending()  # the items before it, in order
                    yield from _long_item_blocks(item, first + k, rule, block_size,
                                                 scratch if in_turn else None, fresh=not in_turn)
                    lo = k + 1
            yield from builder.add_many(_utf8(batch[lo:]), first + lo)
            first += len(batch)
    yield from pending()


def _item_text(item, index: int) -> Union[str, bytes]:
    """An item as a str or bytes (another bytes-like item copied to bytes)."""
    if isinstance(item, str) or type(item) is bytes:
        return item
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    raise TypeError(f"corpus item #{index} is {type(item).__name__}, expected str or bytes")


def _utf8(texts: List[Union[str, bytes]]) -> List[bytes]:
    """The texts as UTF-8 (a lone surrogate in a str is its ``surrogatepass`` bytes: invalid
    UTF-8, reported, replaced or counted as bytes as ``errors`` says)."""
    return [t if type(t) is bytes else t.encode("utf-8", "surrogatepass") for t in texts]


def _long_item_blocks(text: Union[str, bytes], index: int, rule: int, block_size: int,
                      scratch: Optional[List[np.ndarray]], fresh: bool) -> Iterator[Block]:
    """The blocks of one long item, read as a file is (_read_blocks): a str is transcoded a
    block at a time (Utf8Reader: the same bytes as ``_utf8``), bytes are copied a block at a
    time. ``scratch`` and ``fresh`` as there."""
    reader = Utf8Reader(text) if isinstance(text, str) else io.BytesIO(text)
    length = reader.bound if isinstance(text, str) else len(text)
    for block in _read_blocks(reader, length, 0, index, rule, block_size, scratch, fresh):
        yield block._replace(text_size=len(text))


# ------------------------------------------------------------------------------ counting one task


def _decode_error(block: Block, doc: int, offset: int) -> CorpusDecodeError:
    start = 0 if doc == 0 else int(block.ends[doc - 1])
    return decode_error(block.names[doc], block.starts[doc] + offset,
                        bytes(block.data[start + offset : start + offset + 1]),
                        "pass errors='replace' to replace invalid bytes by U+FFFD, or errors='bytes' to count "
                        "them as bytes")


def _count_block_regex(counter: ChunkCounter, block: Block, pattern: str, errors: str) -> None:
    """The user-regex path (pure Python): count with regex.findall semantics per document."""
    counts = {}
    start = 0
    for doc, end in enumerate(block.ends.tolist()):
        data = bytes(block.data[start:end])
        try:
            chunks = split_reference.pretokenize_bytes(data, source(pattern), errors)
        except InvalidUTF8 as exc:
            raise _decode_error(block, doc, exc.offset) from None
        for chunk in chunks:
            key = chunk.encode("utf-8", "surrogateescape")
            if key:
                counts[key] = counts.get(key, 0) + 1
        start = end
    if counts:
        table = WordTable.from_counts(counts)
        counter.add_table(table.data, table.offsets, table.counts)


def _reserve_for(counter: ChunkCounter, block: Block, share: int = 1) -> None:
    """Size the table for the long text ``block`` belongs to (``1 / share`` of it: the part one
    of ``share`` threads counts), at its first block rather than by rehashing as it grows
    (a table grown from small rehashes 8 times counting 100 MB: 10% of the time)."""
    if block.text_size:
        counter.reserve(_expected_chunks(block.text_size // share))


def _count_block(counter: ChunkCounter, block: Block, pattern: str, scanner: int, errors: str,
                 lines: bool = False) -> None:
    if scanner < 0:
        _count_block_regex(counter, block, pattern, errors)
        return
    ends = block.ends
    if lines:  # every line (with its "\n") a document of its own; cuts stay safe inside a line
        newlines = np.flatnonzero(np.frombuffer(block.data, dtype=np.uint8) == 0x0A) + 1
        ends = np.union1d(newlines, block.ends).astype(np.int64)
    doc = counter.add_documents(block.data, ends, scanner, check_errors(errors))
    if doc >= 0:
        at = (int(ends[doc - 1]) if doc else 0) + counter.bad_offset  # in the block
        doc = int(np.searchsorted(block.ends, at, side="right"))
        raise _decode_error(block, doc, at - (int(block.ends[doc - 1]) if doc else 0))


def _task_blocks(task, rule: int, block_size: Optional[int],
                 scratch: Optional[List[np.ndarray]] = None) -> Iterator[Block]:
    if isinstance(task, _Range):
        return _range_blocks(task, rule, block_size, scratch)
    if isinstance(task, _File):
        return _file_blocks(task, rule, block_size)
    if isinstance(task, _Files):
        return itertools.chain.from_iterable(_range_blocks(r, rule, block_size, scratch) for r in task.ranges)
    return iter([task])


def count_task(task, pattern: str, errors: str, block_size: Optional[int], lines: bool = False):
    """Count one task (a Block, _Range, _Files or _File) into a fresh table; returns its three arrays.

    This is what runs in worker processes and on Dask workers.
    """
    return _count_task_table(task, pattern, errors, block_size, lines).arrays()


def _count_task_table(task, pattern: str, errors: str, block_size: Optional[int], lines: bool = False) -> ChunkCounter:
    """Count one task into a fresh ChunkCounter."""
    scanner, rule = scanner_id(pattern), cut_rule(pattern)
    counter = ChunkCounter()
    counter.reserve(_expected_chunks(_task_raw(task)))
    for block in _task_blocks(task, rule, block_size):
        _count_block(counter, block, pattern, scanner, errors, lines)
    return counter


def _expected_chunks(nbytes: Optional[int]) -> int:
    """About the unique chunks of ``nbytes`` of text, for sizing a table up front (one that
    grows from small rehashes 8 times, ~7% of counting 100 MB). Heaps' law fitted to
    English under gpt2 (100 MB: 465 k, 50 MB: 319 k, 20 KB: 1.7 k), at most 1 M (a 64 MiB
    table, however repetitive the text; the table grows past its size as needed)."""
    if not nbytes:
        return 0
    return min(1 << 20, int(7.4 * nbytes ** 0.6))


def _task_raw(task) -> int:
    if isinstance(task, _Range):
        return task.end - task.start
    if isinstance(task, _File):
        return os.path.getsize(task.path)
    if isinstance(task, _Files):
        return sum(r.end - r.start for r in task.ranges)
    return task.raw


# ------------------------------------------------------------------------------ public API


def _default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def count_words(
    corpus,
    pattern: str = "gpt2",
    workers: Optional[int] = None,
    errors: str = "strict",
    progress: Optional[bool] = None,
    cluster=None,
    block_size: Optional[int] = DEFAULT_BLOCK_SIZE,
    partition_size: Optional[int] = None,
    *,
    lines: bool = False,
    pretokenizer: Optional[str] = None,
) -> WordTable:
    """Pre-tokenize a corpus and count its unique chunks, in bounded memory.

    corpus
        A path (file, directory, glob) or a list/tuple of them; files may be plain, ``.gz``,
        ``.xz``/``.lzma``, ``.bz2`` or ``.zst`` (with ``zstandard``). Or any other iterable (an
        iterator, generator, or a list of bytes) of str / bytes documents; to count a list of str
        texts pass ``iter(texts)`` (a list of str means paths). A str item holding lone
        surrogates is taken as its ``surrogatepass`` UTF-8, i.e. as invalid UTF-8 (see errors).
    pattern
        The split pattern: a name of :data:`fastbpe.PATTERNS`, an OpenAI encoding name, or the
        exact text of a named pattern all run the compiled scanner; any other regex string runs
        the ``regex`` module (pure Python: slow). See :mod:`fastbpe.split.patterns`.
    workers
        Workers on this machine (default: all cores available). The table is identical for
        any number of workers. With a compiled scanner they are threads of this process; a user
        regex is counted in processes, forked (Linux, single-threaded caller) or started by
        the forkserver method, which re-imports the main module: in a script, call count_words
        under ``if __name__ == "__main__":``.
    errors
        ``"strict"``, ``"replace"`` or ``"bytes"``: see the module docstring.
    progress
        tqdm bar with bytes read, MB/s and ETA. Default: only when stderr is a terminal.
    cluster
        A ``dask.distributed.Client``, or a scheduler address (``"tcp://host:8786"``) to connect
        to. Partitions are counted on the Dask workers and their tables combined there, in
        partition order, by a tree reduction (:mod:`fastbpe.cluster`): only the whole table comes
        back, the same table as one local worker gives. Every worker must run this fastbpe
        version (checked first: :class:`~fastbpe.cluster.WorkerVersionError`). Files are
        opened *by the workers*: the paths (made absolute here) must be readable on every worker
        under the same path (a shared filesystem, or the same copy everywhere), and fastbpe (the
        same version) must be installed there. Plain files are split into byte ranges, each
        compressed file is one task; iterables are read here and shipped block by block. A
        client you pass stays open; an address is connected to and closed again.
    block_size
        Bytes per block (default 8 MiB); ``None`` reads each text whole (no cutting).
    pretokenizer
        The name earlier versions gave ``pattern`` (still accepted, with a DeprecationWarning).
    partition_size
        Bytes per partition of a plain file handed to a worker (default: the corpus size over
        the number of workers, between 16 MiB and 256 MiB; for threads, which take partitions
        from one queue as they go, about 16 per thread, between 1 and 8 MiB, and blocks no
        larger). A plain file larger than that is read as byte ranges (also by one worker);
        smaller ones are packed into blocks.
    lines
        Every line, with its ``\n``, is a text of its own (no chunk spans a line end), as
        Hugging Face's ``Tokenizer.train(files)`` reads files. Needs a pattern with a
        compiled scanner.

    Returns a :class:`WordTable` (chunks as UTF-8 bytes, first-appearance order, int64 counts)
    whose ``pattern`` is ``pattern``: ``train`` on it splits with that pattern. Raises ValueError
    when the corpus holds no chunk at all.

    With glibc, the first call fixes malloc's thresholds for the rest of the process (large
    blocks mapped and given back when freed; ``fastbpe._core.count.fix_malloc_thresholds``
    says why): the counting threads' freed memory would otherwise stay resident while training.

    >>> table = count_words(iter(["the cat", "the dog"]), workers=1)
    >>> list(table.items())
    [(b'the', 2), (b' cat', 1), (b' dog', 1)]
    """
    check_errors(errors)
    check_progress(progress)
    if not isinstance(corpus, (str, bytes, os.PathLike)) and not hasattr(corpus, "__iter__"):
        raise TypeError(f"the corpus must be paths or an iterable of str or bytes texts, got {type(corpus).__name__}")
    pattern = renamed_pattern(pattern, pretokenizer)
    check_user_pattern(pattern)  # a typo or a bad regex fails now, not in a worker
    fix_malloc_thresholds()  # before any counting thread allocates (why: in its docstring)
    rule = cut_rule(pattern)
    if lines and scanner_id(pattern) < 0:
        raise ValueError("count_words(lines=True) needs a named pattern (one with a compiled scanner)")
    if block_size is not None:
        check_block_size(block_size)
    workers = _default_workers() if workers is None else check_workers(workers)

    client, own_client = connect(cluster) if cluster is not None else (None, False)
    try:
        parallelism = workers if client is None else worker_threads(client)
        files = _corpus_files_or_none(corpus)
        total = sum(os.path.getsize(f) for f in files) if files is not None else None
        if files is not None and client is None:
            # a worker past the tasks the files can make only waits, with a table of its own:
            # workers=1_000_000 (a typo) started as many threads and ran out of memory
            workers = parallelism = min(workers, _most_tasks(len(files), total, block_size))
        threads = client is None and workers > 1 and scanner_id(pattern) >= 0
        if threads and block_size is not None:
            # counting threads take small tasks in turn from one queue (see _count_threads)
            block_size = min(block_size, _thread_task_size(total, workers))
            if partition_size is None:
                partition_size = block_size
        if partition_size is None:
            # one partition per worker when the corpus allows: every partition builds its own
            # table, so more partitions cost more duplicated work than they gain in balance
            partition_size = min(256 << 20, max(16 << 20, -(-(total or 0) // parallelism)))
        # plain files of more than a partition are read as byte ranges (by the workers, into
        # one reused buffer each), also by a single worker
        split_plain = partition_size if block_size is not None else None
        # compressed files are read by the workers on a cluster (spreading the decompression);
        # locally too when there are enough of them to keep every worker busy
        many_compressed = files is not None and sum(map(is_compressed, files)) >= 2 * parallelism
        to_workers = client is not None or (parallelism > 1 and many_compressed)
        # one counter in this process reads every plain file of more than a block as ranges
        # itself (into one buffer, see _read_blocks): a file through pieces costs a page fault
        # per 4 KiB of every fresh piece and a copy to join the pieces at each cut (0.1 s of
        # 0.5 s counting 100 MB)
        sequential = client is None and workers == 1
        tasks = _source_tasks(corpus, rule, block_size, split_plain, to_workers, files,
                              plain_to_workers=client is not None, taper=threads,
                              ranges_above=block_size if sequential else None, in_turn=sequential)
        return _count_tasks(tasks, client, workers, pattern, errors, block_size, progress, total, lines)
    finally:
        if own_client:
            client.close()


def _most_tasks(files: int, total: int, block_size: Optional[int]) -> int:
    """How many tasks ``files`` files of ``total`` bytes can make at most: each holds a whole
    file or a range of at least a block (at least 1 MiB: :func:`_thread_task_size`).

    >>> _most_tasks(2, 3 << 20, None), _most_tasks(1, 0, None), _most_tasks(1, 3 << 20, 1 << 16)
    (6, 2, 50)
    """
    return files + total // min(1 << 20, block_size or 1 << 20) + 1


def _thread_task_size(total: Optional[int], workers: int) -> int:
    """Bytes per task of the counting threads: about 16 per thread (the last tasks to finish
    leave the other threads idle for at most a task), between 1 and 8 MiB."""
    if total is None:
        return 4 << 20
    return min(8 << 20, max(1 << 20, total // (16 * workers)))


def _corpus_files_or_none(corpus) -> Optional[List[str]]:
    if isinstance(corpus, (str, os.PathLike)) or (
        isinstance(corpus, (list, tuple)) and all(isinstance(p, (str, os.PathLike)) for p in corpus)
    ):
        try:
            files = expand_paths(corpus)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{exc} (to count texts rather than files, pass an iterator of "
                                    "str/bytes, e.g. iter(texts))") from None
        warn_of_repeats(files)
        return files
    return None


def _count_tasks(tasks, client, workers, pattern, errors, block_size, progress, total, lines=False) -> WordTable:
    # worker processes (a user regex) start before tqdm's thread
    context = _pool_context() if client is None and workers > 1 and scanner_id(pattern) < 0 else None
    bar = byte_bar(progress, total, "counting")
    try:
        if client is not None:
            counter = _count_dask(tasks, client, pattern, errors, block_size, bar, lines)
        elif workers > 1 and scanner_id(pattern) >= 0:
            counter = _count_threads(tasks, workers, pattern, errors, block_size, bar, lines, total)
        elif workers > 1:
            counter = _count_local_parallel(tasks, workers, pattern, errors, block_size, bar, context, lines)
        else:
            scanner, rule = scanner_id(pattern), cut_rule(pattern)
            counter = ChunkCounter()
            counter.reserve(_expected_chunks(total))
            scratch: List[np.ndarray] = []  # the read buffer, reused from range to range
            for task in tasks:
                for block in _task_blocks(task, rule, block_size, scratch):
                    _reserve_for(counter, block)
                    _count_block(counter, block, pattern, scanner, errors, lines)
                    if bar is not None:
                        bar.update(block.raw)
            task = block = scratch = None  # one long chunk can make a block as large as the input
    finally:
        if bar is not None:
            bar.close()
    # the table's bytes are handed over, not copied: with a long chunk, a copy is the input's size
    arrays = counter.take_arrays() if isinstance(counter, ChunkCounter) else counter
    del counter
    if len(arrays[2]) == 0:
        known = resolve(pattern)
        raise ValueError("the corpus is empty: it holds no chunk to count" + (
            "" if known is not None and known.tiles else  # (a pattern whose chunks tile the text finds some in any)
            f" (or the pattern {pattern!r:.80} matches none of its text)"))
    table = WordTable._of_counter(*arrays)
    table.pattern = pattern
    return table


def _merge_in_order(results: Iterator[Tuple[Any, int]], bar) -> ChunkCounter:
    counter = ChunkCounter()
    for arrays, raw in results:
        counter.add_table(*arrays)
        if bar is not None:
            bar.update(raw)
    return counter


class _TaskQueue:
    """The tasks, handed out in corpus order (numbered) to the counting threads.

    The task generator runs under a lock, on whichever thread asks: reading the blocks of an
    iterable or of a compressed file (decompression releases the GIL) happens one block at a time
    while the other threads count. A failure stops the handing out; the error of the first
    failing task (in corpus order) is the one raised, as one worker would raise it: every task
    before it was handed out already and runs to its end.
    """

    def __init__(self, tasks: Iterator[Any], bar):
        self._tasks = tasks
        self._bar = bar
        self._lock = threading.Lock()
        self._taken = 0
        self._stopped = False
        self.errors: dict = {}  # task number -> exception

    def take(self) -> Optional[Tuple[int, Any]]:
        with self._lock:
            if self._stopped:
                return None
            try:
                task = next(self._tasks, None)
            except BaseException as exc:  # reading the corpus failed (a damaged file, a bad item)
                self.errors[self._taken] = exc
                self._stopped = True
                return None
            if task is None:
                self._stopped = True
                return None
            self._taken += 1
            return self._taken - 1, task

    def done(self, task: Any) -> None:
        if self._bar is not None:
            with self._lock:
                self._bar.update(_task_raw(task))

    def fail(self, number: int, exc: BaseException) -> None:
        with self._lock:
            self.errors[number] = exc
            self._stopped = True

    def stop(self) -> None:
        with self._lock:
            self._stopped = True

    @property
    def taken(self) -> int:
        """How many tasks were handed out."""
        return self._taken

    def raise_first_error(self) -> None:
        if self.errors:
            raise self.errors[min(self.errors)]


def _count_worker(queue: _TaskQueue, pattern, errors, block_size, lines, expected: int, workers: int) -> ChunkCounter:
    """One counting thread (of ``workers``): tasks from the queue until it is empty, into one
    table of its own."""
    scanner, rule = scanner_id(pattern), cut_rule(pattern)
    counter = ChunkCounter()
    reserved = False
    scratch: List[np.ndarray] = []  # the read buffer, reused from task to task
    while True:
        taken = queue.take()
        if taken is None:
            break
        number, task = taken
        counter.begin_task(number)
        try:
            for block in _task_blocks(task, rule, block_size, scratch):
                if not reserved:
                    # sized at the first block, not up front: a thread whose ranges are all
                    # empty (they lie inside a long word) holds no table of that size
                    counter.reserve(expected)
                    reserved = True
                _reserve_for(counter, block, workers)
                _count_block(counter, block, pattern, scanner, errors, lines)
        except BaseException as exc:
            queue.fail(number, exc)
            break
        queue.done(task)
    counter.finish_tasks()
    return counter


def _count_threads(tasks, workers, pattern, errors, block_size, bar, lines=False, total=None):
    """Count the tasks on ``workers`` threads of this process; returns the merged table's arrays
    (or a ChunkCounter, when there was a single task).

    Each thread takes the next task from one queue (_TaskQueue) whenever it is free, so the
    threads stay busy to the end whatever each task costs, and counts it into a table of its
    own, noting where each task starts (begin_task). The tables are merged on the same threads,
    each settling one hash partition of the chunks (merge_partition: every chunk's total and
    the table that counted its first appearance), and written out task by task
    (_merged_arrays): the table one worker gives, order included. Counting and merging run
    without the GIL; each thread holds one task's block at a time, which bounds the memory.
    """
    first = next(tasks, None)
    if first is None:
        return ChunkCounter()
    second = next(tasks, None)
    if second is None:  # a single task: no thread to start
        counter = _count_task_table(first, pattern, errors, block_size, lines)
        if bar is not None:
            bar.update(_task_raw(first))
        return counter
    queue = _TaskQueue(itertools.chain([first, second], tasks), bar)
    # each thread sees about its share of the corpus, spread over all of it
    expected = _expected_chunks(total // workers if total else 0)
    counters = _in_threads(_count_worker, [(queue, pattern, errors, block_size, lines, expected, workers)] * workers,
                           stop=queue.stop)
    queue.raise_first_error()
    counters = [c for c in counters if len(c)]
    if len(counters) <= 1:
        return counters[0] if counters else ChunkCounter()
    return _merged_arrays(counters, queue.taken, len(counters), _in_threads)


def _in_threads(function, calls: List[tuple], stop=None) -> list:
    """``[function(*call) for call in calls]``, each call on a thread of its own, all at once.

    The first call (in order) that raised has its exception raised once every thread ended. On
    an interrupt while waiting, ``stop()`` (when given) asks the threads to end early, and they
    are waited for before the interrupt goes on. Plain threads: a thread pool's module and its
    imports cost a fresh process about 4 ms before the first thread started.
    """
    results: list = [None] * len(calls)
    failures: list = [None] * len(calls)
    # (each thread's end is an event: Python 3.11's Thread.join, interrupted, takes the thread it
    # waited for as ended, and is_alive() then says False while it runs)
    ended = [threading.Event() for _ in calls]

    def run(k: int) -> None:
        try:
            results[k] = function(*calls[k])
        except BaseException as exc:
            failures[k] = exc
        finally:
            ended[k].set()

    threads = [threading.Thread(target=run, args=(k,), name=f"fastbpe-count-{k}") for k in range(len(calls))]
    started = 0
    finished = False
    try:
        for thread in threads:
            thread.start()
            started += 1
        for event in ended:
            event.wait()
        finished = True
    finally:
        if not finished:  # interrupted (or a thread failed to start)
            if stop is not None:
                stop()
            for event in ended[:started]:
                event.wait()
    for failure in failures:
        if failure is not None:
            raise failure
    return results


def _merged_arrays(counters: List[ChunkCounter], tasks: int, parts: int, run) -> Tuple[np.ndarray, ...]:
    """The table of counters that counted interleaved tasks (numbered below ``tasks``), in
    corpus order: ``parts`` hash partitions settled at once (merge_partition), then written out
    in ``parts`` runs of tasks holding about as many chunks each. ``run(function, calls)`` calls
    ``function(*call)`` for every call, at the same time (threads), and returns the results."""
    task_chunks = [np.zeros(tasks, dtype=np.int64) for _ in range(parts)]
    task_bytes = [np.zeros(tasks, dtype=np.int64) for _ in range(parts)]
    run(merge_partition, [(counters, p, parts, task_chunks[p], task_bytes[p]) for p in range(parts)])
    chunks_before = np.concatenate([[0], np.cumsum(np.sum(task_chunks, axis=0))])  # chunks of tasks < t
    bytes_before = np.concatenate([[0], np.cumsum(np.sum(task_bytes, axis=0))])
    n, nbytes = int(chunks_before[-1]), int(bytes_before[-1])
    data = np.empty(nbytes, dtype=np.uint8)
    offsets = np.empty(n + 1, dtype=np.int64)
    counts = np.empty(n, dtype=np.int64)
    offsets[0] = 0
    # run g takes the tasks whose chunks start in the g-th share of the table
    bounds = [0] + [int(np.searchsorted(chunks_before, g * n // parts, side="right")) - 1 for g in range(1, parts)]
    bounds = sorted(set(bounds)) + [tasks]
    run(write_merged, [(counters, lo, hi, data, offsets, counts, int(chunks_before[lo]), int(chunks_before[hi]),
                        int(bytes_before[lo]), int(bytes_before[hi])) for lo, hi in zip(bounds, bounds[1:])])
    return data, offsets, counts


def _pool_context():
    """How worker processes start.

    fork (Linux) when this process runs a single Python thread: instant, and nothing is
    re-imported. Otherwise forkserver (fork is unsafe with threads): the server imports
    fastbpe once and every worker is forked from it, but the server costs a few tenths of a
    second to start and workers re-import the main module (hence the __main__ guard); spawn where
    neither exists.
    """
    import multiprocessing as mp
    import threading

    methods = mp.get_all_start_methods()
    if "fork" in methods and sys.platform.startswith("linux") and threading.active_count() == 1:
        return mp.get_context("fork")
    if "forkserver" in methods:
        context = mp.get_context("forkserver")
        context.set_forkserver_preload(["fastbpe.corpus.count"])
        return context
    return mp.get_context("spawn")


# Signals a terminal or a service manager sends to the whole process group. The parent handles
# them (it stops the pool and reports once); a worker ignores Ctrl-C and dies quietly on SIGTERM.
_PARENT_SIGNALS = {"SIGINT": "SIG_IGN", "SIGTERM": "SIG_DFL"}


@contextmanager
def _parent_signals_held():
    """Hold back Ctrl-C and SIGTERM from this thread while a worker may be forked: the child
    inherits them held, so one that arrives before the child's :func:`_init_worker` has
    disposed of them waits (then is ignored or ends the worker) instead of raising
    KeyboardInterrupt in the middle of its start-up. This process still gets them, through
    another thread or at the latest when they are released here."""
    import signal

    held = [getattr(signal, name) for name in _PARENT_SIGNALS]
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    # The mask is read before it changes: pthread_sigmask runs the handlers of signals already
    # received when it returns, so the call that blocks may raise KeyboardInterrupt after
    # blocking, and the finally below must still restore the mask then.
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, held)
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _init_worker(parent: Optional[int]) -> None:
    """Worker initializer: signals to the group are the parent's to handle, and the worker
    never outlives its parent."""
    import signal

    for name, action in _PARENT_SIGNALS.items():
        signal.signal(getattr(signal, name), getattr(signal, action))
    if hasattr(signal, "pthread_sigmask"):  # held since the fork (_parent_signals_held)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [getattr(signal, name) for name in _PARENT_SIGNALS])
    _exit_with_parent(parent)


def _exit_with_parent(parent: Optional[int]) -> None:
    """A counting worker never outlives the process that started it
    (``parent``; None: whichever process is the parent now, the forkserver).

    Killed parents (SIGKILL, a crash) run no clean-up, and their workers would go on counting
    under PID 1. On Linux the kernel kills the worker when its parent dies (PR_SET_PDEATHSIG;
    a forkserver exits with the parent, and takes its workers with it); elsewhere, and as a
    second guard, a daemon thread ends the worker once it has been reparented.
    """
    import signal
    import threading
    import time

    parent = os.getppid() if parent is None else parent
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the guard was set
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="fastbpe-parent-watch", daemon=True).start()


def _count_local_parallel(tasks, workers, pattern, errors, block_size, bar, context=None,
                          lines=False) -> ChunkCounter:
    import concurrent.futures as cf

    first = next(tasks, None)
    second = next(tasks, None)
    if first is None:
        return ChunkCounter()
    if second is None:  # a single task: no pool to start
        return _merge_in_order(iter([(count_task(first, pattern, errors, block_size, lines), _task_raw(first))]), bar)

    def all_tasks():
        yield first
        yield second
        yield from tasks

    context = context or _pool_context()
    # a worker's parent is this process (fork, spawn) or the forkserver
    parent = os.getpid() if context.get_start_method() != "forkserver" else None
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker,
                                initargs=(parent,)) as pool:
        def results():
            pending = deque()
            for task in all_tasks():
                with _parent_signals_held():  # submit may fork a worker
                    future = pool.submit(count_task, task, pattern, errors, block_size, lines)
                pending.append((future, _task_raw(task)))
                while len(pending) >= 2 * workers:  # bound the blocks in flight
                    future, raw = pending.popleft()
                    yield future.result(), raw
            while pending:
                future, raw = pending.popleft()
                yield future.result(), raw

        try:
            return _merge_in_order(results(), bar)
        except cf.process.BrokenProcessPool as exc:
            pool.shutdown(wait=False, cancel_futures=True)
            raise ChildProcessError(
                "a worker process of count_words died: killed (out of memory?), or, in a script whose "
                "workers start by re-importing the main module (spawn, forkserver), count_words(workers>1) "
                "runs at its top level: put that code under `if __name__ == '__main__':`, or pass workers=1"
            ) from exc
        except BaseException:
            # (an interrupt: the workers ignore SIGINT, and the pool's exit, or the interpreter's,
            # waited for them to count their partitions, up to 256 MB each, to the end; they are
            # stopped instead. The pool forgets its processes as it shuts down: taken first.)
            processes = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.terminate()
            raise


def concat_arrays(left, right):
    """The arrays of two tables counted on consecutive parts of a corpus, combined in that
    order (runs on Dask workers; associative, so any tree of them gives the whole's table)."""
    counter = ChunkCounter()
    counter.add_table(*left)
    counter.add_table(*right)
    return counter.arrays()


def _count_dask(tasks, client, pattern, errors, block_size, bar, lines=False) -> ChunkCounter:
    """Count the tasks on the Dask workers and combine their tables there, in task order, by an
    ordered tree reduction: only the finished table comes back to this process. A bounded
    window of count tasks is in flight, so the workers hold few tables at a time."""
    from distributed import wait

    inflight = 2 * worker_threads(client)
    reduction = OrderedReduction(client, concat_arrays)
    pending = deque()

    def settle(future, raw):
        wait(future)
        if future.status == "error":
            future.result()  # raises the task's error here
        if bar is not None:
            bar.update(raw)

    for task in tasks:
        future = client.submit(count_task, task, pattern, errors, block_size, lines, pure=False)
        reduction.add(future)
        pending.append((future, _task_raw(task)))
        while len(pending) >= inflight:
            settle(*pending.popleft())
    while pending:
        settle(*pending.popleft())
    whole = reduction.result()
    counter = ChunkCounter()
    if whole is not None:
        counter.add_table(*whole.result())
        whole.release()
    return counter
