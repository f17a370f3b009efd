"""File helpers shared by every reader and writer: JSON files read with one error style, and
writes that no reader ever sees half done."""
import json
import os
import tempfile
from typing import Any, Union

__all__ = ["write_atomic", "read_json"]

PathLike = Union[str, os.PathLike]


def write_atomic(path: PathLike, payload: bytes) -> None:
    """Write ``payload`` to ``path`` so that readers see the old file or the whole new one."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_json(path: PathLike, what: str) -> Any:
    """The parsed JSON of a file; ValueError naming the file and ``what`` it should have been."""
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{os.fspath(path)}: not a valid {what} (bad JSON: {exc})") from None
