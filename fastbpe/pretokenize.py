"""Pre-tokenizers: the split of text into chunks that merges never cross.

(Minimal version: the named patterns through the ``regex`` module. The compiled scanner
replaces the implementation, keeping this API.)
"""
from typing import List

import regex

__all__ = ["PATTERNS", "pretokenize", "resolve_pattern"]

PATTERNS = {
    "whitespace": r"\S+",
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    # tiktoken's published patterns (tiktoken_ext/openai_public.py), verbatim.
    "cl100k": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k": "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]),
}


def resolve_pattern(pattern: str) -> str:
    """A named pattern's regex, or ``pattern`` itself when it is not a name."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, got {type(pattern).__name__}")
    return PATTERNS.get(pattern, pattern)


def pretokenize(text: str, pattern: str = "gpt2") -> List[str]:
    """Split ``text`` into chunks with a named pattern or a regex.

    >>> pretokenize("Hello world's end", "gpt2")
    ['Hello', ' world', "'s", ' end']
    """
    return regex.findall(resolve_pattern(pattern), text)
