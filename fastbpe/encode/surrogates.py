"""Lone surrogates in text, handled as tiktoken handles them.

A Python str may hold surrogate code points (U+D800..U+DFFF), which have no UTF-8. tiktoken
encodes such a text as ``text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")``:
a well-formed high+low pair becomes the character it stands for, and every lone surrogate
becomes U+FFFD. fastbpe does the same, so the ids agree with tiktoken's.
"""
import re

__all__ = ["as_tiktoken"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def as_tiktoken(text: str) -> str:
    """``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD (unchanged,
    and not copied, when it has none).

    >>> as_tiktoken("a\\ud800b") == "a\\ufffdb"
    True
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
