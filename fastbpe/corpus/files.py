"""Corpus files: expanding paths into files, and opening any of them as a stream of bytes.

One rule for every command and API that reads a corpus: a directory contributes its files
recursively in sorted order, hidden files and folders (names starting with ``.``) skipped, and
so are pipes, sockets and devices (opening a pipe waits for a writer: a folder holding one would
hang the run); a linked folder is read as a folder is, once (a link back to a folder above it
adds nothing), and a folder that cannot be read is an error (PermissionError), not a silent
gap in the corpus; a glob (``**`` allowed) its matches in sorted order; a folder or a glob gives
each file once, by the first path that leads to it (a link to a file beside it adds nothing); a
file itself, hidden or not, which must be a regular file (a pipe or a device named directly is
refused: corpora are read in ranges, at offsets). Compressed files (``.gz``, ``.xz``/``.lzma``,
``.bz2``, ``.zst`` with ``zstandard``) are recognised by their first bytes, whatever their name,
and read decompressed.
"""
import bz2
import glob
import gzip
import lzma
import os
import warnings
from collections import Counter
from typing import BinaryIO, Dict, Iterator, List, Sequence, Tuple, Union

from ..fileio import check_regular_file
from ..stacklevel import caller_stacklevel

__all__ = ["CorpusDecodeError", "decode_error", "expand_paths", "warn_of_repeats", "input_files", "open_bytes",
           "is_compressed", "read_pieces", "corpus_or_text", "str_corpus"]

PathLike = Union[str, os.PathLike]

# Magic bytes of each compression format, and how to open it.
_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bz2"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
_SUFFIXES = {".gz": "gzip", ".xz": "xz", ".lzma": "xz", ".bz2": "bz2", ".zst": "zstd"}


class CorpusDecodeError(ValueError):
    """The corpus cannot be read as text: invalid UTF-8 under errors="strict", or compressed data
    that is corrupt or truncated. The message names the file (or item) and the byte offset."""


def decode_error(source: Union[str, int], offset: int, bad: bytes, advice: str = "") -> CorpusDecodeError:
    """The error every reader raises for invalid UTF-8 at byte ``offset`` of ``source`` (a file
    path, or the index of an item of an iterable); ``bad`` is the byte found there. For a
    compressed file the offset is in the decompressed stream, and the message says so. A file
    that begins with a UTF-16 byte-order mark (what Windows tools write) is named as one, its
    conversion advised rather than ``advice`` (replacing its bytes would train on garbage).

    >>> str(decode_error(3, 1, b"\\xff", "pass errors='replace'"))
    "item #3: invalid UTF-8 at byte offset 1 (byte 0xff); pass errors='replace'"
    """
    if isinstance(source, int):
        where, kind = f"item #{source}", ""
    else:
        where = source
        kind = " (offset in the decompressed stream)" if is_compressed(source) else ""
        if offset == 0 and bad in (b"\xff", b"\xfe") and _begins_with_utf16_mark(source):
            advice = ("it begins with a UTF-16 byte-order mark, and fastbpe reads UTF-8: convert it first "
                      "(iconv -f UTF-16 -t UTF-8)")
    advice = f"; {advice}" if advice else ""
    return CorpusDecodeError(f"{where}: invalid UTF-8 at byte offset {offset}{kind} (byte 0x{bad.hex()}){advice}")


def _begins_with_utf16_mark(path: str) -> bool:
    try:
        reader, raw = open_bytes(path)
        try:
            return reader.read(2) in (b"\xff\xfe", b"\xfe\xff")
        finally:
            reader.close()
            raw.close()
    except (OSError, ValueError, EOFError):  # (the error being reported matters more)
        return False


def expand_paths(paths: Union[PathLike, Sequence[PathLike]]) -> List[str]:
    """Files, directories and globs in order, as absolute file paths (rule: module docstring).

    >>> expand_paths([]) == []
    True
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: List[str] = []
    for entry in paths:
        path = os.fspath(entry)
        if os.path.isdir(path):
            files.extend(_once_each(_folder_files(path)))
        elif os.path.exists(path):
            check_regular_file(path)
            files.append(path)
        elif glob.has_magic(path):
            matched = sorted(_glob(path))
            if not matched:
                # (a text given where paths go: its start)
                raise FileNotFoundError(f"no file matches the glob {path[:200]!r}")
            # (``**`` follows a link back to a folder above it until the path is too long to
            # open: such paths are left out, and each file is read once, by its first path)
            files.extend(_once_each(expand_paths([m for m in matched if os.path.exists(m)])))
        else:
            try:
                os.stat(path)  # (exists() is False for a file under a folder this user cannot enter too)
            except PermissionError:
                raise
            except OSError:
                pass
            raise FileNotFoundError(f"no such file or directory: {path[:200]!r}")
    return [os.path.abspath(f) for f in files]


def _identity(path: str):
    """What tells two paths of one file apart from two files: its device and inode."""
    try:
        status = os.stat(path)
    except OSError:
        return path
    return status.st_dev, status.st_ino


def _once_each(files: List[str]) -> List[str]:
    """The files, each once, by the first path that names it (a folder's or a glob's files
    reached again through a link)."""
    first: Dict[object, str] = {}
    for path in files:
        first.setdefault(_identity(path), path)
    return list(first.values())


def warn_of_repeats(files: Sequence[str]) -> None:
    """Warn of a file the expanded inputs name more than once (``corpus/ corpus/a.txt``, a glob
    and a file it matches, a path through a link): it is read, counted or encoded, each time,
    which is seldom meant."""
    first: Dict[object, str] = {}
    times: Counter = Counter()
    for path in files:
        times[first.setdefault(_identity(path), path)] += 1
    repeated = [(path, n) for path, n in times.items() if n > 1]
    if repeated:
        shown = ", ".join(f"{path} ({times} times)" for path, times in repeated[:3])
        more = f" and {len(repeated) - 3} more" if len(repeated) > 3 else ""
        warnings.warn(f"the inputs name {shown}{more}: each is read every time it is named",
                      stacklevel=caller_stacklevel())


def input_files(paths: Union[PathLike, Sequence[PathLike]]) -> List[str]:
    """:func:`expand_paths`, refusing inputs that name no file (an empty folder, a glob of an
    empty folder): a command or job run over nothing is a mistake, not an empty result.

    >>> input_files([])
    Traceback (most recent call last):
    ...
    ValueError: the inputs name no files (empty folders?)
    """
    files = expand_paths(paths)
    if not files:
        raise ValueError("the inputs name no files (empty folders?)")
    return files


def _glob(pattern: str) -> List[str]:
    """The matches of a glob; none for a pattern no file could match (longer than a path can
    be, or with a longer name than a file can have), or one too deep to search: glob.glob
    recurses once per folder level after the first wildcard, so a text given where paths go
    (``"*/" * 1200``) raised RecursionError.

    >>> _glob("*/" * 1200), _glob("x" * 300 + "*")
    ([], [])
    """
    name_max = os.pathconf("/", "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
    path_max = os.pathconf("/", "PC_PATH_MAX") if hasattr(os, "pathconf") else 4096
    data = os.fsencode(pattern)
    if len(data) >= path_max or any(len(part) > name_max for part in data.split(os.sep.encode())):
        return []
    try:
        return glob.glob(pattern, recursive=True)
    except RecursionError:
        return []


def _folder_files(path: str) -> List[str]:
    """The files of a folder (the module's rule), linked folders followed once each."""
    def refuse(error: OSError):
        raise error  # (os.walk would skip the folder it cannot list)

    seen = set()  # (device, inode) of the folders walked
    files = []
    for root, dirs, names in os.walk(path, onerror=refuse, followlinks=True):
        status = os.stat(root)
        if (status.st_dev, status.st_ino) in seen:  # (a link to a folder walked already)
            dirs[:] = []
            continue
        seen.add((status.st_dev, status.st_ino))
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        files.extend(os.path.join(root, n) for n in sorted(names)
                     if not n.startswith(".") and os.path.isfile(os.path.join(root, n)))
    return files


def _compression(path: str, raw: BinaryIO) -> str:
    """The compression of an open file, from its first bytes ("" for none)."""
    head = raw.read(6)
    raw.seek(0)
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    # A file too short for its magic (an empty .gz) is judged by its name.
    suffix = os.path.splitext(path.lower())[1]
    return _SUFFIXES.get(suffix, "") if len(head) < 6 and head else ""


def is_compressed(path: str) -> bool:
    """Whether a file is read through a decompressor (by its first bytes)."""
    with open(path, "rb") as raw:
        return bool(_compression(path, raw))


def open_bytes(path: str) -> Tuple[BinaryIO, BinaryIO]:
    """``(reader of the decompressed bytes, the raw file)``; the raw file's position tells how
    much input has been consumed (for progress). Close both."""
    raw = open(path, "rb")
    try:
        kind = _compression(path, raw)
        if kind == "gzip":
            return _Decompressed(gzip.GzipFile(fileobj=raw, mode="rb"), path, kind), raw
        if kind == "xz":
            return _Decompressed(lzma.LZMAFile(raw), path, kind), raw
        if kind == "bz2":
            return _Decompressed(bz2.BZ2File(raw), path, kind), raw
        if kind == "zstd":
            try:
                import zstandard
            except ImportError:
                raise ImportError(f"{path}: reading .zst needs the 'zstandard' module (pip install zstandard)") from None
            return _Decompressed(_ZstdFrames(raw, zstandard.ZstdDecompressor()), path, kind), raw
    except BaseException:
        raw.close()
        raise
    return raw, raw


class _ZstdFrames:
    """The frames of a zstd file one after another. zstandard's stream reader ends quietly at a
    truncated frame (a half-written file would read as shorter text, or as none); here the end
    of the file inside a frame is an EOFError, like the other decompressors raise."""

    def __init__(self, raw: BinaryIO, decompressor):
        self._raw, self._decompressor = raw, decompressor
        self._frame = None  # the decompressor of the frame being read, None between frames
        self._pending = bytearray()
        self._done = False

    def read(self, size: int = -1) -> bytes:
        while not self._done and (size < 0 or len(self._pending) < size):
            data = self._raw.read(1 << 16)
            if not data:
                if self._frame is not None:
                    raise EOFError("the file ends inside a zstd frame")
                self._done = True
            while data:
                if self._frame is None:
                    self._frame = self._decompressor.decompressobj()
                self._pending += self._frame.decompress(data)
                data = b""
                if self._frame.eof:  # the frame is complete; what follows starts the next one
                    data, self._frame = self._frame.unused_data, None
        size = len(self._pending) if size < 0 else size
        piece = bytes(self._pending[:size])
        del self._pending[:size]
        return piece

    def close(self) -> None:
        pass  # the raw file is the caller's


class _Decompressed:
    """A decompressing reader whose failures (a truncated or damaged file: EOFError, zlib.error,
    lzma.LZMAError, BadGzipFile, zstandard.ZstdError, ...) become one CorpusDecodeError naming the
    file and how far it decompressed, instead of a bare library error that names nothing."""

    # Bytes decompressed per call of the reader: a failure loses what its call had decompressed,
    # so the offset it reports is off by at most this (a truncated file read in 8 MiB pieces
    # said "after 0 bytes" of a 330 KB text)
    STEP = 1 << 16

    def __init__(self, reader, path: str, kind: str):
        self._reader, self._path, self._kind = reader, path, kind
        self._offset = 0  # decompressed bytes read so far

    def read(self, size: int = -1) -> bytes:
        parts, got = [], 0
        while size < 0 or got < size:
            want = self.STEP if size < 0 else min(self.STEP, size - got)
            try:
                piece = self._reader.read(want)
            except Exception as exc:  # every decompressor has its own error types
                raise CorpusDecodeError(
                    f"{self._path}: the {self._kind} data is corrupt or truncated after about {self._offset:,} "
                    f"bytes of decompressed text ({type(exc).__name__}: {exc})") from None
            if not piece:
                break
            self._offset += len(piece)
            got += len(piece)
            parts.append(piece)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def close(self) -> None:
        self._reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def read_pieces(reader: BinaryIO, size: int) -> Iterator[bytes]:
    """The stream in pieces of exactly ``size`` bytes (the last one shorter).

    A decompressor may return less than asked (zstandard stops at a frame's end); the pieces are
    filled up all the same, so that they depend on the bytes alone: blocks cut from them are the
    same for a plain file and any compressed copy of it.
    """
    while True:
        piece = reader.read(size)
        if not piece:
            return
        if len(piece) < size:
            parts = [piece]
            missing = size - len(piece)
            while missing:
                more = reader.read(missing)
                if not more:
                    break
                parts.append(more)
                missing -= len(more)
            piece = b"".join(parts)
        yield piece


def _names_a_path(text: str) -> bool:
    """Whether a ``str`` corpus names files: an existing path, or a glob that matches.

    >>> _names_a_path("the cat sat on the mat")
    False
    """
    if "\n" in text:
        return False
    return os.path.exists(text) or (glob.has_magic(text) and bool(_glob(text)))


def corpus_or_text(corpus, text):
    """What to count: ``corpus`` (paths, an iterator of texts, a WordTable) or ``text=`` (one
    str), exactly one of them; the text as a one-item iterator, since ``count_words`` reads a
    str as a path.

    >>> list(corpus_or_text(None, "the cat"))
    ['the cat']
    """
    if (corpus is None) == (text is None):
        raise ValueError("give the corpus (paths, an iterator of texts, a WordTable) or text=..., not both"
                         if text is not None else "give a corpus (paths, an iterator of texts, a WordTable) or text=...")
    if text is not None:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        corpus = iter([text])
    return corpus


def str_corpus(corpus: str):
    """What a ``str`` passed as the corpus means: the files it names, else text if it cannot be
    a path; a ValueError for a string that looks like a path to nothing (a typo).

    >>> list(str_corpus("the cat sat on the mat"))
    ['the cat sat on the mat']
    >>> str_corpus("corpus/a.txtt")
    Traceback (most recent call last):
    ...
    ValueError: 'corpus/a.txtt' names no file, directory or matching glob; to train on a string as text, pass text='corpus/a.txtt' (or an iterator of strings)
    """
    if _names_a_path(corpus):
        return corpus
    if not corpus:
        return iter([corpus])  # empty text: count_words says the corpus is empty
    stripped = corpus.strip()
    if stripped != corpus and len(corpus) <= 4096 and _names_a_path(stripped):  # (a line of a list of files)
        raise ValueError(f"{corpus[:200]!r} has whitespace around the path {stripped!r}: strip it; to train on "
                         f"a string as text, pass text={corpus[:200]!r}")
    single_line = "\n" not in corpus and len(corpus) <= 4096
    # No whitespace (a word, a path) or a path whose folder exists: a missing file, not text.
    folder = os.path.dirname(corpus) if single_line else ""
    if not any(c.isspace() for c in corpus) or (folder and os.path.isdir(folder)):
        raise ValueError(f"{corpus[:200]!r} names no file, directory or matching glob; to train on a string as "
                         f"text, pass text={corpus[:200]!r} (or an iterator of strings)")
    return iter([corpus])  # text (count_words reads a str as a path, an iterator as texts)
