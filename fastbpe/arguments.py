"""Checks of the arguments several stages take alike (counting, learning, encoding), so that
each is refused with the same clear error wherever it is given."""
import numpy as np

__all__ = ["check_block_size", "check_byte_offsets", "check_count", "check_error_handler", "check_workers",
           "check_word_markers", "MAX_BLOCK_SIZE"]


def check_count(value, name: str, minimum: int, maximum: int = 2**63 - 1) -> None:
    """``value`` is an int (not a bool, not a float) from ``minimum`` to ``maximum`` (by default
    what the compiled layer's int64 arguments hold).

    >>> check_count(3, "num_merges", 0)
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}" if value < minimum else
                         f"{name} must be at most {maximum:,}, got {value:,}")


def check_seed(seed) -> None:
    """A random seed a caller gives: None or an int >= 0 (NumPy's generators refuse a negative
    one in words that name no argument); other seeds NumPy takes, a ``SeedSequence`` say, pass.

    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    ValueError: seed must be None or an int >= 0, got -1
    """
    if isinstance(seed, (int, np.integer)) and seed < 0:
        raise ValueError(f"seed must be None or an int >= 0, got {seed}")


# A block is read into memory whole (one per worker, and its chunks beside it); past a few MB a
# larger one is no faster, and one of terabytes could only end in a MemoryError
MAX_BLOCK_SIZE = 1 << 31


def check_block_size(block_size) -> None:
    """A block size in bytes a caller gives: an int from 1 to ``MAX_BLOCK_SIZE`` (2 GiB).

    >>> check_block_size(4 << 20)
    """
    check_count(block_size, "block_size", 1, MAX_BLOCK_SIZE)


def check_workers(workers, name: str = "workers") -> int:
    """A thread or process count given by a caller (as ``name``): an int >= 1 (not a bool, not
    a float).

    >>> check_workers(2)
    2
    """
    check_count(workers, name, 1)
    return int(workers)


def check_word_markers(word_start, word_end) -> None:
    """The word markers a caller gives: each a str or None."""
    for name, marker in (("word_start", word_start), ("word_end", word_end)):
        if marker is not None and not isinstance(marker, str):
            raise TypeError(f"{name} must be a str or None, got {type(marker).__name__}")


def check_error_handler(errors) -> None:
    """``errors`` names a decoding error handler (``"replace"``, ``"strict"``, ``"ignore"``...):
    ``bytes.decode`` looks it up only when the bytes hold an error, so a misspelt one would go
    unnoticed until then.

    >>> check_error_handler("ignore")
    """
    import codecs

    if not isinstance(errors, str):
        raise TypeError(f"errors must be a str, got {type(errors).__name__}")
    try:
        codecs.lookup_error(errors)
    except LookupError:
        raise ValueError(f"errors={errors!r} is no error handler: use 'replace', 'strict', 'ignore', "
                         "'backslashreplace' or 'surrogateescape'") from None


def check_byte_offsets(values, name: str) -> np.ndarray:
    """Byte offsets a caller gives, as contiguous int64: integers only (a float offset would
    be cut to an integer without a word).

    >>> check_byte_offsets([0, 3], "starts").tolist()
    [0, 3]
    """
    array = np.asarray(values)
    if array.size and array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers (byte offsets), got {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.int64)
