"""File helpers shared by every reader and writer: JSON files read with one error style, and
writes that no reader ever sees half done."""
import contextlib
import gc
import json
import os
import re
import stat
import tempfile
import threading
from typing import Any, Optional, Union

__all__ = ["write_atomic", "read_json", "json_bytes"]

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


def write_atomic(path: PathLike, payload: bytes) -> None:
    """Write ``payload`` to ``path`` so that readers see the old file or the whole new one.

    The file ends up with the permissions a plain ``open(path, "w")`` would give it (the
    temporary file ``mkstemp`` makes is private until then).
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fchmod(f.fileno(), _mode_for(path))
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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


def read_json(path: PathLike, what: str) -> Any:
    """The parsed JSON of a file; ValueError naming the file and ``what`` it should have been
    (arrays nested deeper than the JSON reader's stack included)."""
    try:
        with open(path, "rb") as f, _cyclic_gc_paused():
            return json.loads(f.read().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{os.fspath(path)}: not a valid {what} (bad JSON: {exc})") from None
    except RecursionError:
        raise ValueError(f"{os.fspath(path)}: not a valid {what} (JSON nested too deeply)") from None


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
