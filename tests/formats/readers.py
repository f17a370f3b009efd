"""What the tests of the compiled file readers share: a read's outcome, to compare with the
reference reader's, and generated damage to a file's bytes."""
from typing import Callable, List

import numpy as np
from hypothesis import strategies as st

__all__ = ["outcome", "damaged"]


def outcome(read: Callable[[], dict]) -> tuple:
    """What a read gave: ``("ok", result)`` with arrays as lists (merges as rows of ints, as
    either reader gives them), or ``("error", the ValueError's text)``."""
    try:
        result = read()
    except ValueError as exc:
        return ("error", str(exc))
    plain = {}
    for key, value in result.items():
        if key == "merges":
            value = [list(map(int, row)) for row in (value.tolist() if isinstance(value, np.ndarray) else value)]
        plain[key] = value.tolist() if isinstance(value, np.ndarray) else value
    return ("ok", plain)


def damaged(data, files: List[bytes], alphabet: bytes) -> List[bytes]:
    """``files`` after one to three changes drawn from ``data`` (hypothesis's ``st.data()``):
    a byte of one of them replaced, removed, or inserted before, the new byte from ``alphabet``."""
    out = [bytearray(raw) for raw in files]
    for _ in range(data.draw(st.integers(1, 3))):
        raw = out[data.draw(st.integers(0, len(out) - 1))]
        at = data.draw(st.integers(0, len(raw) - 1))
        byte = data.draw(st.sampled_from(alphabet))
        how = data.draw(st.sampled_from(["replace", "remove", "insert"]))
        if how == "replace":
            raw[at] = byte
        elif how == "remove":
            del raw[at]
        else:
            raw.insert(at, byte)
    return [bytes(raw) for raw in out]
