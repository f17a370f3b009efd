"""Splitting text into chunks (pre-tokens) with a named pattern's compiled scanner, or a regex.

Which patterns are named, and how a pattern selects its scanner, is :mod:`fastbpe.split.patterns`;
the ``regex`` reference these functions must agree with is :mod:`fastbpe.reference.split`.
"""
from typing import List, Union

from .._core import split as _split
from ..reference import split as _reference
from .patterns import scanner_id, source

__all__ = ["pretokenize", "pretokenize_bytes", "InvalidUTF8", "ERRORS"]

InvalidUTF8 = _split.InvalidUTF8
ERRORS = tuple(_split.ERRORS_IDS)


def check_errors(errors: str) -> int:
    """The compiled id of an ``errors`` mode; ValueError for an unknown one."""
    if errors not in _split.ERRORS_IDS:
        raise ValueError(f"errors must be one of {sorted(_split.ERRORS_IDS)}, got {errors!r}")
    return _split.ERRORS_IDS[errors]


def pretokenize(text: str, pattern: str = "gpt2") -> List[str]:
    """Split ``text`` into chunks with a named pattern (compiled) or any regex (``regex`` module).

    >>> pretokenize("I'm  here: 12345!\\n\\n", "cl100k")
    ['I', "'m", ' ', ' here', ':', ' ', '123', '45', '!\\n\\n']
    >>> pretokenize("a\\u3000b c", "whitespace")
    ['a', 'b', 'c']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__} (use pretokenize_bytes for bytes)")
    if type(text) is not str:
        text = str(text)  # (a subclass, numpy's str_: the compiled scanner takes exact str)
    scanner = scanner_id(pattern)
    if scanner >= 0:
        try:
            return _split.split_text(text, scanner)
        except UnicodeEncodeError:
            pass  # lone surrogates cannot be UTF-8 encoded; the regex module takes them as characters
    return _reference.pretokenize(text, source(pattern))


def pretokenize_bytes(data: Union[bytes, bytearray, memoryview], pattern: str = "gpt2",
                      errors: str = "strict") -> List[bytes]:
    """Split UTF-8 bytes into chunks (bytes), the entry the counting path uses.

    ``errors``: ``"strict"`` raises :class:`InvalidUTF8` (a ValueError with ``.offset``);
    ``"replace"`` chunks the text ``data.decode("utf-8", "replace")`` gives (U+FFFD per invalid
    sequence, as Python); ``"bytes"`` chunks each stretch of valid UTF-8 between invalid bytes as a
    separate text and makes every invalid byte a one-byte chunk of its own.

    >>> pretokenize_bytes(b"caf\\xc3\\xa9 \\xff!", "gpt2", errors="bytes")
    [b'caf\\xc3\\xa9', b' ', b'\\xff', b'!']
    """
    errors_id = check_errors(errors)
    data = bytes(data) if not isinstance(data, bytes) else data
    scanner = scanner_id(pattern)
    if scanner >= 0:
        return _split.split_bytes(data, scanner, errors_id)
    return [c.encode("utf-8", "surrogateescape")
            for c in _reference.pretokenize_bytes(data, source(pattern), errors)]
