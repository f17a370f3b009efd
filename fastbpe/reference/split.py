"""The specification of splitting: ``regex.findall`` of the pattern's text, per text.

The named patterns are defined here by their published regex texts; the compiled scanners
(:mod:`fastbpe.split`) must give exactly these chunks for each. A pattern is a name of
:data:`NAMED` or any regex text.
"""
import functools
import re
from typing import TYPE_CHECKING, List, Tuple

from .._core.split import InvalidUTF8  # the one error type both paths raise

if TYPE_CHECKING:  # (imported where a pattern is compiled: the compiled paths never need it)
    import regex

__all__ = ["NAMED", "compiled", "document_spans", "pretokenize", "pretokenize_bytes"]

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
# Qwen2 and Qwen3's pattern (their tokenizer.json and .tiktoken files): llama3's with one digit a
# chunk, \p{N} for \p{N}{1,3}.
QWEN_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")
# Mistral's pattern (tekken.json, Mistral NeMo's and later models): o200k's without the
# contractions and with one digit a chunk.
TEKKEN_PATTERN = O200K_PATTERN.replace(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?", "").replace(r"\p{N}{1,3}", r"\p{N}")
# GPT-2's original spelling (its encoder.py; also Hugging Face's ByteLevel pre-tokenizer with
# use_regex): the same chunks as GPT2_PATTERN on every text (tests/split check it differentially).
GPT2_ORIGINAL_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
WHITESPACE_PATTERN = r"\S+"

NAMED = {
    "whitespace": WHITESPACE_PATTERN,
    "gpt2": GPT2_PATTERN,
    "cl100k": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
    "llama3": LLAMA3_PATTERN,
    "qwen": QWEN_PATTERN,
    "tekken": TEKKEN_PATTERN,
}


@functools.lru_cache(maxsize=64)
def compiled(pattern: str) -> "regex.Pattern":
    """The ``regex`` compilation of a pattern name or text (cached); ValueError for a bad one."""
    import regex  # here, not at the top: importing it costs 18 ms, which the compiled paths never need

    try:
        return regex.compile(NAMED.get(pattern, pattern))
    except regex.error as exc:
        raise ValueError(f"invalid split pattern {pattern!r:.80}: not a pattern name {sorted(NAMED)} "
                         f"nor a valid regex ({exc})") from None


def pretokenize(text: str, pattern: str) -> List[str]:
    """``regex.findall`` of the pattern.

    >>> pretokenize("Hello  world", "gpt2")
    ['Hello', ' ', ' world']
    """
    return compiled(pattern).findall(text)


def pretokenize_bytes(data: bytes, pattern: str, errors: str = "strict") -> List[str]:
    """Chunks of UTF-8 bytes as str pieces (invalid bytes as surrogate escapes), under the
    ``errors`` rules of :func:`fastbpe.pretokenize_bytes`.

    >>> pretokenize_bytes(b"a \\xffb", r"\\S+", "bytes")
    ['a', '\\udcff', 'b']
    """
    if errors == "strict":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidUTF8(exc.start) from None
        return pretokenize(text, pattern)
    if errors == "replace":
        return pretokenize(data.decode("utf-8", "replace"), pattern)
    text = data.decode("utf-8", "surrogateescape")
    out: List[str] = []
    import regex

    for piece in regex.split(r"([\udc80-\udcff])", text):
        if len(piece) == 1 and "\udc80" <= piece <= "\udcff":
            out.append(piece)
        elif piece:
            out.extend(pretokenize(piece, pattern))
    return out


def document_spans(data: bytes, newlines: int) -> List[Tuple[int, int]]:
    """The documents of ``data`` that runs of ``newlines`` or more line ends separate (1: the
    lines of ``documents="line"``, 2: the paragraphs of ``"blank-line"``), empty ones left out,
    as ``(start, stop)`` byte offsets. A line ends at ``\\n`` or at ``\\r\\n`` (a Windows file's
    line end, whose ``\\r`` is not the line's); any other ``\\r`` is text.

    >>> document_spans(b"ab\\n\\ncd\\ne", 1)
    [(0, 2), (4, 6), (7, 8)]
    >>> document_spans(b"ab\\n\\ncd\\ne", 2)
    [(0, 2), (4, 8)]
    >>> document_spans(b"ab\\r\\n\\r\\ncd\\r\\ne\\r", 2)
    [(0, 2), (6, 12)]
    """
    spans, start = [], 0
    for separator in re.finditer(b"(?:\\r?\\n){%d,}" % newlines, data):
        if separator.start() > start:
            spans.append((start, separator.start()))
        start = separator.end()
    if len(data) > start:
        spans.append((start, len(data)))
    return spans
