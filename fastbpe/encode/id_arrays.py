"""The compiled encoder's int32 ids as the tokenizer's id dtype (uint16 or uint32) without a
second copy of a large array: what bounds the memory of encoding one huge text.

Ids are never negative, so int32 read as uint32 is the same array (a view). For uint16, a
large array is narrowed inside its own buffer, front to back, then the buffer is cut to half
its size (realloc shrinks in place): the ids are held once at 4 bytes each, never at 4 + 2.
"""
import numpy as np

__all__ = ["as_id_dtype"]

# Below this many ids a plain copy is as cheap and keeps the caller's array intact.
NARROW_IN_PLACE_MIN = 1 << 16
# Ids narrowed per step (bounds the temporary numpy makes for the first, overlapping, step).
_STEP = 1 << 20


def as_id_dtype(ids: np.ndarray, dtype) -> np.ndarray:
    """``ids`` (int32, never negative) as ``dtype``. A large int32 array that owns its buffer is
    consumed: the result lives in that buffer, which is shrunk, so the caller must not use
    ``ids`` afterwards.

    >>> as_id_dtype(np.array([1, 70000], np.int32), np.uint32).tolist()
    [1, 70000]
    >>> big = np.arange(1 << 17, dtype=np.int32) % 50000
    >>> as_id_dtype(big.copy(), np.uint16).tolist() == big.tolist()
    True
    """
    dtype = np.dtype(dtype)
    if ids.dtype == dtype:
        return ids
    if ids.dtype == np.int32 and dtype.itemsize == 4:
        return ids.view(dtype)
    n = len(ids)
    if not (ids.dtype == np.int32 and dtype.itemsize == 2 and n >= NARROW_IN_PLACE_MIN
            and ids.flags.owndata and ids.flags.c_contiguous and ids.flags.writeable):
        return ids.astype(dtype)
    narrow = ids.view(dtype)  # (2n slots; the first n receive the ids)
    # Step k writes bytes [2k, 2k + 2c) and reads [4k, 4k + 4c): disjoint once c <= k, so each
    # id is read before anything overwrites it. The first step overlaps: numpy buffers it.
    first = min(n, 4096)
    narrow[:first] = ids[:first]
    k = first
    while k < n:
        c = min(k, n - k, _STEP)
        narrow[k:k + c] = ids[k:k + c]
        k += c
    del narrow
    ids.resize((n + 1) // 2, refcheck=False)  # realloc to the 2n bytes the ids now take
    return ids.view(dtype)[:n]
