"""File helpers shared by every reader and writer: JSON files read with one error style, and
writes that no reader ever sees half done."""
import contextlib
import errno
import gc
import json
import os
import re
import stat
import sys
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = ["write_atomic", "AtomicWriter", "folder_made_for", "file_above", "read_json", "file_bytes", "json_without",
           "json_field", "json_bytes"]

PathLike = Union[str, os.PathLike]

_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process's current umask, read without changing it where Linux shows it
    (``/proc/self/status``); elsewhere set and restored at once, under a lock."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _mode_for(path: str) -> int:
    """The permission bits ``open(path, "w")`` would leave: an existing file keeps its own, a
    new one gets ``0o666`` less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()


# A temporary file is named ``.tmp-PID-RANDOM-TARGET``: which process writes it and which file it
# becomes, so that a writer killed before its rename (SIGKILL, a crash) leaves a file the next
# write of the same target recognises as its own and removes.
_TEMP_NAME = re.compile(r"\.tmp-(\d+)-[0-9a-f]{16}-(.*)", re.DOTALL)
_NAME_ROOM = 200  # bytes of the target's name a temporary name holds (file names have 255)
_STALE_LOCK = threading.Lock()
# directory -> (its mtime when last looked at, target tag -> temporary files of dead writers)
_STALE: Dict[str, Tuple[int, Dict[str, List[str]]]] = {}


def _tag(name: str) -> str:
    """The target ``name`` as its temporary files end: itself, or a digest when it is long."""
    if len(os.fsencode(name)) <= _NAME_ROOM:
        return name
    import hashlib  # (only for long names: not at the top, where every first call would pay its import)

    return "~" + hashlib.sha256(os.fsencode(name)).hexdigest()[:32]


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM)
        return True
    return True


def _dead_writers_temporaries(directory: str) -> Dict[str, List[str]]:
    """Temporary files of this writer whose process has ended, by target tag."""
    found: Dict[str, List[str]] = {}
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return found
    for entry in entries:
        match = _TEMP_NAME.fullmatch(entry.name)
        if match and int(match.group(1)) != os.getpid() and not _process_exists(int(match.group(1))):
            found.setdefault(match.group(2), []).append(entry.name)
    return found


def _mtime(directory: str) -> int:
    try:
        return os.stat(directory).st_mtime_ns
    except OSError:
        return -1


def _remove_dead_writers_temporaries(directory: str, tag: str) -> None:
    """Remove what writers of ``directory/<target>`` left when they were killed mid-write. The
    folder is listed again only when something else changed it since this process last wrote
    there, so writing many files into one folder stays linear."""
    with _STALE_LOCK:
        mtime = _mtime(directory)
        known = _STALE.get(directory)
        if known is None or known[0] != mtime:
            known = _STALE[directory] = (mtime, _dead_writers_temporaries(directory))
        names = known[1].pop(tag, [])
    for name in names:
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:  # removed meanwhile, or not ours to remove: left alone
            pass


def _note_own_change(directory: str) -> None:
    with _STALE_LOCK:
        if directory in _STALE:
            _STALE[directory] = (_mtime(directory), _STALE[directory][1])


def write_atomic(path: PathLike, payload: Union[bytes, Sequence]) -> None:
    """Write ``payload`` to ``path`` so that readers see the old file or the whole new one.

    ``payload``: bytes, or a sequence of bytes-like pieces written one after the other (a
    header and a NumPy array's memory, say, so that a large array is never copied into one
    ``bytes`` first).

    The payload goes to a temporary file beside ``path`` (``.tmp-PID-RANDOM-NAME``), renamed
    over ``path`` once complete; on an exception (Ctrl-C included) it is removed. A writer
    killed outright leaves it behind: the next write of the same ``path`` removes the ones whose
    process no longer runs. The file ends up with the permissions a plain ``open(path, "w")``
    would give it (the temporary file is private until then). :class:`AtomicWriter` writes
    such a file piece by piece.
    """
    write_atomic_files([(path, payload)])


def write_atomic_files(outputs: Sequence[Tuple[PathLike, Union[bytes, Sequence]]]) -> None:
    """:func:`write_atomic` of files that belong together (a tokenizer's ``encoder.json`` and
    ``vocab.bpe``, its ranks and their sidecar), ``(path, payload)`` each: every one written in
    full and handed to the disk before any replaces its old file, so that a failure (a full
    disk) leaves the old files, all of them."""
    writers: List[AtomicWriter] = []
    try:
        for path, payload in outputs:
            writers.append(AtomicWriter(path))
            for piece in [payload] if isinstance(payload, (bytes, bytearray, memoryview)) else payload:
                writers[-1].write(piece)
        for writer in writers:
            writer.finish()
        for writer in writers:
            writer.commit()
    except BaseException:
        for writer in writers:
            writer.abort()
        raise


# fdatasync skips the metadata fsync waits for; macOS has only fsync.
_datasync = getattr(os, "fdatasync", os.fsync)


def _open_through(path: str, found: os.stat_result):
    """A file object writing into ``path`` (found by ``os.stat`` to be ``found``) where it is:
    this process's stdout or stderr itself when it is that file (a copy of the descriptor, so
    that ``>>`` keeps appending and the summary printed after does not overwrite it), else the
    path opened for writing."""
    for stream in (sys.stdout, sys.stderr):
        try:
            descriptor = stream.fileno()
            if os.path.samestat(found, os.fstat(descriptor)):
                stream.flush()
                return os.fdopen(os.dup(descriptor), "wb")
        except (AttributeError, ValueError, OSError):  # (replaced by an object without a descriptor)
            continue
    return open(path, "wb")


class AtomicWriter:
    """A file that :func:`write_atomic` writes, written piece by piece as the pieces are made
    (so that a large file is never held in memory first): into a temporary file beside
    ``path``, renamed over ``path`` by :meth:`commit`, or removed by :meth:`abort`, which its
    owner calls on any exception. A symbolic link stays: the file it names is replaced. A
    ``path`` that is no file to replace (a device such as ``/dev/null``, a pipe, a socket, or a
    file descriptor's name such as ``/dev/stdout``) is written into directly (``through``), as a
    shell's redirection writes it: nothing then is atomic."""

    def __init__(self, path: PathLike):
        self.path = os.fspath(path)
        self._file = None
        self.temporary = None
        try:
            found = os.stat(self.path)  # (through a symbolic link)
        except OSError:
            found = None
        # a device, a pipe or a socket (-o /dev/null), or a file descriptor's name (/dev/stdout,
        # /proc/self/fd/3, whatever file it is): written into, as a shell's > writes it; a file
        # renamed over it would replace /dev/null itself, or the file stdout was sent to
        self.through = found is not None and not stat.S_ISDIR(found.st_mode) and (
            not stat.S_ISREG(found.st_mode) or os.path.abspath(self.path).startswith(("/dev/", "/proc/")))
        if self.through:
            try:
                self._file = _open_through(self.path, found)
            except OSError as exc:
                raise self._naming_the_output(exc) from None
            return
        # a symbolic link keeps pointing where it did: the file it names is the one replaced
        self._target = os.path.realpath(self.path) if os.path.islink(self.path) else self.path
        self._directory, name = os.path.split(os.path.abspath(self._target))
        tag = _tag(name)
        _remove_dead_writers_temporaries(self._directory, tag)
        # Named before the open, so that the file is removed whatever instruction an exception
        # (a Ctrl-C) interrupts, the open itself included. 64 random bits: two writers of this
        # process never draw the same name.
        self.temporary = os.path.join(self._directory, f".tmp-{os.getpid()}-{os.urandom(8).hex()}-{tag}")
        try:
            if os.path.isdir(self.path):  # found now, not by the rename once everything is written
                raise IsADirectoryError(errno.EISDIR, "is a folder, not a file to write", self.path)
            fd = os.open(self.temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
            self._file = os.fdopen(fd, "wb")
        except OSError as exc:
            self.abort()
            raise self._naming_the_output(exc) from None
        except BaseException:
            self.abort()
            raise

    # Every error of the file's own (a full disk, a file size limit, a device that refuses) is
    # said with the output's name, not the temporary file's or none.
    def write(self, piece) -> None:
        try:
            self._file.write(piece)
        except OSError as exc:
            raise self._naming_the_output(exc) from None

    def flush(self) -> None:
        """Hand the bytes written so far to the system (readable from the temporary file)."""
        try:
            self._file.flush()
        except OSError as exc:
            raise self._naming_the_output(exc) from None

    def write_at(self, offset: int, piece: bytes) -> None:
        """Overwrite the bytes from ``offset`` on (a header whose count is known at the end)."""
        self.flush()
        try:
            os.pwrite(self._file.fileno(), piece, offset)
        except OSError as exc:
            raise self._naming_the_output(exc) from None

    def sync(self) -> None:
        """Hand what is written so far to the disk, so that the fsync of :meth:`commit` has
        little left to wait for."""
        self.flush()
        if not self.through:
            try:
                _datasync(self._file.fileno())
            except OSError as exc:
                raise self._naming_the_output(exc) from None

    def finish(self) -> None:
        """Write everything out and to the disk, the file still under its temporary name (what
        fails for a full disk fails here); :meth:`commit` then only renames it."""
        if self.through or self._file is None or self._file.closed:
            return
        f = self._file
        try:
            f.flush()
            os.fchmod(f.fileno(), _mode_for(self._target))
            os.fsync(f.fileno())
            f.close()
        except OSError as exc:
            raise self._naming_the_output(exc) from None

    def commit(self) -> None:
        f = self._file
        if self.through:
            try:
                f.close()
            except OSError as exc:
                raise self._naming_the_output(exc) from None
            self._file = None
            return
        self.finish()
        try:
            os.replace(self.temporary, self._target)
        except OSError as exc:  # the output became a folder meanwhile, or a read-only place
            raise self._naming_the_output(exc) from None
        self._file = None
        _note_own_change(self._directory)

    def _naming_the_output(self, exc: OSError) -> OSError:
        """``exc`` naming the file asked for, not the temporary one beside it (as it is, when
        it has no errno to build it again from)."""
        return exc if exc.errno is None else type(exc)(exc.errno, exc.strerror, self.path)

    def abort(self) -> None:
        """Close and remove the temporary file (nothing once committed)."""
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None
        if self.temporary is None:  # (written through: nothing of its own to remove)
            return
        try:
            os.unlink(self.temporary)
        except OSError:  # not created, or renamed already
            pass


@contextlib.contextmanager
def _cyclic_gc_paused():
    """Python's cycle collector off for a while: parsing a big JSON file (a tokenizer's
    hundreds of thousands of merges) allocates containers fast enough to trigger it again and
    again, and JSON makes no cycles for it to find."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextlib.contextmanager
def folder_made_for(directory: PathLike) -> Iterator[Path]:
    """``directory`` for the block's files, made (with its parents) if it is missing, and removed
    again if this made it and the block leaves it empty: a write that failed, a job that wrote
    nothing, leaves no folder behind."""
    directory = Path(directory)
    made = not directory.exists()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        yield directory
    finally:
        if made:
            try:
                directory.rmdir()
            except OSError:  # (it holds something)
                pass


def file_above(path: PathLike) -> Optional[str]:
    """The nearest existing folder of ``path`` (as given) when it is a file, not a folder:
    where writing ``path`` would fail with "Not a directory"; else None.

    >>> file_above("no/such/folder/x") is None
    True
    """
    above = os.path.dirname(os.fspath(path))
    while above and not os.path.exists(above):
        above = os.path.dirname(above)
    return above if above and not os.path.isdir(above) else None


def check_regular_file(path: PathLike) -> None:
    """Refuse a path that exists and is no regular file or folder: a pipe (``<(...)``), a socket
    or a device is read once, from its start, where fastbpe reads a file again or at offsets."""
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        raise ValueError(f"{path[:200]}: not a regular file (a pipe, socket or device); save the stream to a "
                         "file first")


def read_json(path: PathLike, what: str) -> Any:
    """The parsed JSON of a file; ValueError naming the file and ``what`` it should have been
    (arrays nested deeper than the JSON reader's stack included)."""
    try:
        with open(path, "rb") as f, _cyclic_gc_paused():
            return json.loads(f.read().decode("utf-8"))
    except ValueError as exc:  # bad UTF-8, bad JSON, an integer of more digits than Python reads
        raise ValueError(f"{os.fspath(path)}: not a valid {what} (bad JSON: {exc})") from None
    except RecursionError:
        raise ValueError(f"{os.fspath(path)}: not a valid {what} (JSON nested too deeply)") from None


def file_bytes(path: PathLike) -> Optional[bytes]:
    """A file's bytes, or None when it cannot be read (for a fast reader that leaves the
    error to its fallback, whose read_json says why)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def json_without(raw: bytes, cuts: Sequence[Tuple[int, int, bytes]]) -> Any:
    """The JSON of ``raw`` with each byte range ``(begin, end, stand_in)`` of ``cuts`` (apart
    from each other) replaced by ``stand_in``: the rest of a file whose big values compiled code
    read. None when that is not JSON (the caller's fallback parses the whole file, and its
    error names what is wrong).

    >>> json_without(b'{"a": [1, 2], "b": {"c": 3}}', [(19, 27, b"{}"), (6, 12, b"[]")])
    {'a': [], 'b': {}}
    """
    pieces, at = [], 0
    for begin, end, stand_in in sorted(cuts):
        pieces += [raw[at:begin], stand_in]
        at = end
    pieces.append(raw[at:])
    try:
        with _cyclic_gc_paused():
            return json.loads(b"".join(pieces).decode("utf-8"))
    except (ValueError, RecursionError):
        return None


def json_field(data: Mapping, key: str, kinds: tuple, default: Any = None, what: str = "",
               source: str = "fastbpe tokenizer file") -> Any:
    """``data[key]`` of a parsed file (``default`` when absent); ValueError naming ``source``
    unless it is one of ``kinds`` (``True`` is not an int here unless ``bool`` is a kind).

    >>> json_field({"n": 3}, "n", (int,))
    3
    """
    value = data.get(key, default)
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise ValueError(f"{source}: {key!r} must be {what or names}, got {value!r:.60}")
    return value


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_bytes(value: Any, indent: Optional[int] = None) -> bytes:
    """``value`` as UTF-8 JSON, non-ASCII text written as itself (readable), except lone
    surrogates (a token of invalid UTF-8 read with ``surrogatepass``), which UTF-8 cannot hold:
    they are written as ``\\udXXX`` escapes, which JSON readers turn back into the same str.

    >>> json_bytes(["é", "\\udcff"])
    b'["\\xc3\\xa9", "\\\\udcff"]'
    """
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")
