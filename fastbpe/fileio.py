"""File helpers shared by every writer: no reader ever sees a half-written file."""
import os
import tempfile
from typing import Union

__all__ = ["write_atomic"]


def write_atomic(path: Union[str, os.PathLike], payload: bytes) -> None:
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
