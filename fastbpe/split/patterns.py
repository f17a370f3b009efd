"""The one table of split patterns: every name and spelling fastbpe knows, and what runs for it.

A split pattern cuts text into chunks (pre-tokens) that no merge crosses. Each named pattern has
its published regex text, the id of the compiled scanner that yields exactly the chunks the
``regex`` module yields for that text (``fastbpe/_core/scan.h``, tested differentially), and so
the rule that says where a stream of that text may be cut into blocks (``find_cut`` in
``fastbpe/_core/cut.h``).

A pattern is accepted by its name (``"cl100k"``), by an OpenAI encoding name that uses it
(``"cl100k_base"``), or by the exact text of any spelling listed here (what a Hugging Face or
tiktoken user passes): all three select the compiled scanner. Any other text is a user regex,
run by the ``regex`` module (pure Python, about 40x slower), with the cut rule for user regexes.

>>> resolve("cl100k_base") is resolve(PATTERNS["cl100k"]) is TABLE["cl100k"]
True
>>> resolve(r"\\w+") is None
True
"""
import re
import warnings
from typing import TYPE_CHECKING, Dict, NamedTuple, Optional

from .._core.split import CUSTOM_CUT_RULE, PATTERN_IDS
from ..reference.split import (CL100K_PATTERN, GPT2_ORIGINAL_PATTERN, GPT2_PATTERN, LLAMA3_PATTERN, O200K_PATTERN,
                               QWEN_PATTERN, TEKKEN_PATTERN, WHITESPACE_PATTERN, compiled)

if TYPE_CHECKING:  # (run only for a user regex: imported there)
    import regex

__all__ = ["PATTERNS", "TABLE", "GPT2_PATTERN", "GPT2_ORIGINAL_PATTERN", "SplitPattern", "resolve", "same_split",
           "source", "check_user_pattern", "renamed_pattern", "compiled_regex", "scanner_id",
           "cut_rule", "fused_scanner_id", "QWEN_PATTERN"]

class SplitPattern(NamedTuple):
    """A named pattern: its published text, its compiled scanner, and whether its chunks tile
    the text (every byte in some chunk; ``whitespace`` drops the spaces, the others keep them)."""

    name: str
    source: str
    scanner: int
    tiles: bool


TABLE: Dict[str, SplitPattern] = {
    "whitespace": SplitPattern("whitespace", WHITESPACE_PATTERN, PATTERN_IDS["whitespace"], False),
    "gpt2": SplitPattern("gpt2", GPT2_PATTERN, PATTERN_IDS["gpt2"], True),
    "cl100k": SplitPattern("cl100k", CL100K_PATTERN, PATTERN_IDS["cl100k"], True),
    "o200k": SplitPattern("o200k", O200K_PATTERN, PATTERN_IDS["o200k"], True),
    "llama3": SplitPattern("llama3", LLAMA3_PATTERN, PATTERN_IDS["llama3"], True),
    "qwen": SplitPattern("qwen", QWEN_PATTERN, PATTERN_IDS["qwen"], True),
    "tekken": SplitPattern("tekken", TEKKEN_PATTERN, PATTERN_IDS["tekken"], True),
}

# Every other way of naming a table entry: OpenAI's encoding names and the other exact texts.
_ALIASES: Dict[str, str] = {
    "r50k_base": "gpt2",
    "p50k_base": "gpt2",
    "p50k_edit": "gpt2",
    "cl100k_base": "cl100k",
    "o200k_base": "o200k",
    GPT2_ORIGINAL_PATTERN: "gpt2",
}
_LOOKUP: Dict[str, SplitPattern] = {
    **TABLE,
    **{entry.source: entry for entry in TABLE.values()},
    **{alias: TABLE[name] for alias, name in _ALIASES.items()},
}

# The public view: name -> regex text.
PATTERNS: Dict[str, str] = {name: entry.source for name, entry in TABLE.items()}

# What a user who types a pattern name writes: a pattern like this that names nothing is a typo
# far more often than a regex meant to match that literal word (see check_user_pattern).
# (the standard ``re``: the ``regex`` module is imported only where a user regex is run)
NAME_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*")


def resolve(pattern: str) -> Optional[SplitPattern]:
    """The table entry for a name, an OpenAI encoding name or an exact pattern text; None for
    any other regex.

    >>> resolve("gpt2").name, resolve("r50k_base").name, resolve(GPT2_ORIGINAL_PATTERN).name
    ('gpt2', 'gpt2', 'gpt2')
    """
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a name or a regex str, got {type(pattern).__name__}")
    return _LOOKUP.get(pattern)


def same_split(a: str, b: str) -> bool:
    """Whether two patterns (names, OpenAI encoding names or regex texts) split alike.

    >>> same_split("gpt2", "r50k_base"), same_split("gpt2", "cl100k_base"), same_split(r"\\S+", r"\\S+")
    (True, False, True)
    """
    known = resolve(a)
    return known is resolve(b) if known is not None else a == b


def check_user_pattern(pattern: str) -> None:
    """Refuse, where a user names the split (``count_words``, ``train``, the CLI), a name that is
    not known (``"gpt5"``), a regex that does not compile and an empty one (it matches nothing
    but empty text, so every text would be dropped), before any work starts.

    >>> check_user_pattern("gpt5")
    Traceback (most recent call last):
    ...
    ValueError: unknown split pattern 'gpt5': the names are cl100k, gpt2, llama3, o200k, qwen, tekken, whitespace (or an OpenAI encoding name such as cl100k_base); a regex that reads as a name is taken for a misspelt one: write it as a group, '(?:gpt5)'
    """
    if resolve(pattern) is None:
        if not pattern:
            raise ValueError(f"the split pattern is empty: give a pattern name ({', '.join(sorted(TABLE))}) "
                             "or a regex whose matches are the chunks")
        if NAME_LIKE.fullmatch(pattern):
            raise ValueError(f"unknown split pattern {pattern!r}: the names are {', '.join(sorted(TABLE))} "
                             "(or an OpenAI encoding name such as cl100k_base); a regex that reads as a name is "
                             f"taken for a misspelt one: write it as a group, '(?:{pattern})'")
        compiled_regex(pattern)


def source(pattern: str) -> str:
    """The regex text of a pattern.

    >>> source("whitespace"), source(r"\\d+")
    ('\\\\S+', '\\\\d+')
    """
    entry = resolve(pattern)
    return pattern if entry is None else entry.source


def scanner_id(pattern: str) -> int:
    """The compiled scanner's id for a pattern, or -1 for a user regex (no scanner)."""
    entry = resolve(pattern)
    return -1 if entry is None else entry.scanner


def fused_scanner_id(pattern: str) -> Optional[int]:
    """The scanner the encoder runs in its own one-pass split (patterns whose chunks tile the
    text), or None.

    >>> fused_scanner_id("cl100k") == fused_scanner_id(PATTERNS["cl100k"]) is not None
    True
    >>> fused_scanner_id("whitespace") is None
    True
    """
    entry = resolve(pattern)
    return entry.scanner if entry is not None and entry.tiles else None


def cut_rule(pattern: str, keep_gaps: bool = False) -> int:
    """The id of the block-cut rule for a pattern (``find_cut`` in ``_core/cut.h``): the
    scanner's own rule, or the conservative rule for user regexes.

    ``keep_gaps``: the text between matches is a chunk too (a tokenizer's ``split_gaps``). The
    patterns of the table but ``whitespace`` tile the text (no gaps), so their rule stands. For
    ``whitespace`` (``\\S+``) its own rule would cut inside a run of whitespace, which is one
    gap chunk; the user-regex rule cuts only just after a non-space character, where a match
    ends, so it holds. A user regex with gaps kept is assumed, beyond the user-regex rule's
    assumption, to match every non-space character (as ``\\w+|[^\\w\\s]+`` does).

    >>> cut_rule("whitespace") != cut_rule("whitespace", keep_gaps=True) == cut_rule(r"\\w+")
    True
    """
    entry = resolve(pattern)
    if entry is None:
        return CUSTOM_CUT_RULE
    if keep_gaps and not entry.tiles:
        return CUSTOM_CUT_RULE
    return entry.scanner


def renamed_pattern(pattern: Optional[str], pretokenizer: Optional[str]) -> Optional[str]:
    """The split pattern of a call that may still use the keyword earlier versions had for it
    (``pretokenizer=``); the two are one option, so giving both differently is an error."""
    if pretokenizer is None:
        return pattern
    warnings.warn("the pretokenizer= keyword is now pattern=", DeprecationWarning, stacklevel=3)
    if pattern not in (None, "gpt2", pretokenizer):
        raise TypeError(f"pattern={pattern!r} and pretokenizer={pretokenizer!r} are the same option; give one")
    return pretokenizer


def compiled_regex(pattern: str) -> "regex.Pattern":
    """The ``regex`` compilation of a pattern (cached); ValueError for a bad regex."""
    return compiled(source(pattern))
