"""Pre-tokenizers: the split of text into chunks that BPE merges never cross.

Named patterns, each exactly as its owners publish it, with a compiled scanner that yields the
same chunks as the ``regex`` module applying the pattern (tested differentially):

``"whitespace"``
    Maximal runs of non-whitespace, whitespace dropped: ``regex.findall(r"\\S+", text)``. Like
    ``str.split()`` except that the ``regex`` module's ``\\s`` (Unicode White_Space) decides what is
    whitespace, so U+001C..U+001F are not separators (``str.split()`` treats them as such).
``"gpt2"``
    GPT-2, r50k_base, p50k_base (tiktoken's spelling of the original GPT-2 pattern).
``"cl100k"``
    cl100k_base (GPT-4, GPT-3.5), tiktoken's current spelling.
``"o200k"``
    o200k_base (GPT-4o).
``"llama3"``
    Llama 3's pattern (Hugging Face ``tokenizer.json``): the earlier spelling of cl100k, which
    differs only on whitespace that ends the text and holds a newline.

Any other string is compiled as a ``regex`` pattern and applied with ``regex.findall`` semantics
(every match is a chunk, text between matches is dropped); that path is pure Python.
"""
from typing import Dict, List, Union

import regex

from . import _pretok

__all__ = ["pretokenize", "pretokenize_bytes", "PATTERNS", "InvalidUTF8"]

InvalidUTF8 = _pretok.InvalidUTF8

# Exactly as tiktoken_ext/openai_public.py (tiktoken 0.14) and Llama 3's tokenizer.json publish them.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
# The original GPT-2 release's spelling (encoder.py), the same chunks as GPT2_PATTERN.
GPT2_ORIGINAL_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
WHITESPACE_PATTERN = r"\S+"

PATTERNS: Dict[str, str] = {
    "whitespace": WHITESPACE_PATTERN,
    "gpt2": GPT2_PATTERN,
    "cl100k": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
    "llama3": LLAMA3_PATTERN,
}

_compiled: Dict[str, "regex.Pattern"] = {}


def compiled_regex(pattern: str) -> "regex.Pattern":
    """The ``regex`` compilation of a pattern name or pattern string (cached)."""
    source = PATTERNS.get(pattern, pattern)
    if source not in _compiled:
        try:
            _compiled[source] = regex.compile(source)
        except regex.error as exc:
            raise ValueError(f"not a pattern name {sorted(PATTERNS)} nor a valid regex: {exc}") from None
    return _compiled[source]


def pattern_id(pattern: str) -> int:
    """The compiled scanner's id for a pattern name, or -1 for a regex string (no scanner).

    >>> pattern_id("gpt2") >= 0, pattern_id(r"\\w+")
    (True, -1)
    """
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a name or a regex string, got {type(pattern).__name__}")
    return _pretok.PATTERN_IDS.get(pattern, -1)


def regex_pretokenize(text: str, pattern: str = "gpt2") -> List[str]:
    """The reference: ``regex.findall`` of the pattern.

    >>> regex_pretokenize("Hello  world", "gpt2")
    ['Hello', ' ', ' world']
    """
    return compiled_regex(pattern).findall(text)


def pretokenize(text: str, pattern: str = "gpt2") -> List[str]:
    """Split ``text`` into chunks with a named pattern (compiled) or any regex (``regex`` module).

    >>> pretokenize("I'm  here: 12345!\\n\\n", "cl100k")
    ['I', "'m", ' ', ' here', ':', ' ', '123', '45', '!\\n\\n']
    >>> pretokenize("a\\u3000b c", "whitespace")
    ['a', 'b', 'c']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__} (use pretokenize_bytes for bytes)")
    pid = pattern_id(pattern)
    if pid < 0:
        return regex_pretokenize(text, pattern)
    try:
        return _pretok.split_text(text, pid)
    except UnicodeEncodeError:
        # lone surrogates cannot be UTF-8 encoded; the regex module handles them as characters
        return regex_pretokenize(text, pattern)


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
    if errors not in _pretok.ERRORS_IDS:
        raise ValueError(f"errors must be one of {sorted(_pretok.ERRORS_IDS)}, got {errors!r}")
    data = bytes(data) if not isinstance(data, bytes) else data
    pid = pattern_id(pattern)
    if pid >= 0:
        return _pretok.split_bytes(data, pid, _pretok.ERRORS_IDS[errors])
    return [c.encode("utf-8", "surrogateescape") for c in regex_pretokenize_bytes(data, pattern, errors)]


def regex_pretokenize_bytes(data: bytes, pattern: str, errors: str = "strict") -> List[str]:
    """Reference for :func:`pretokenize_bytes`, as str pieces (invalid bytes as surrogate escapes).

    >>> regex_pretokenize_bytes(b"a \\xffb", "gpt2", "bytes")
    ['a', ' ', '\\udcff', 'b']
    """
    if errors == "strict":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidUTF8(exc.start) from None
        return regex_pretokenize(text, pattern)
    if errors == "replace":
        return regex_pretokenize(data.decode("utf-8", "replace"), pattern)
    text = data.decode("utf-8", "surrogateescape")
    out: List[str] = []
    for piece in regex.split(r"([\udc80-\udcff])", text):
        if len(piece) == 1 and "\udc80" <= piece <= "\udcff":
            out.append(piece)
        elif piece:
            out.extend(regex_pretokenize(piece, pattern))
    return out
