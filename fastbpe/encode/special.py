"""Special tokens: which ones a call may encode, and where they stand in a text (tiktoken's rules).

A special token is a string with an id of its own outside the mergeable vocabulary
(``<|endoftext|>``). Its text in user input is an error unless the call allows it
(``allowed_special``, a set or ``"all"``), in which case it becomes its id; ``disallowed_special=()``
instead encodes it as ordinary text.
"""
import functools
from typing import AbstractSet, Collection, Dict, Iterable, Iterator, Mapping, Sequence, Tuple, Union

import regex

from ..formats.ids import check_id

__all__ = ["special_ids", "allowed_and_disallowed", "check_disallowed", "split_on_specials"]

Allowed = Union[str, AbstractSet[str]]
Disallowed = Union[str, Collection[str]]


def special_ids(special_tokens: Union[Mapping[str, int], Sequence[str]], num_tokens: int,
                token_bytes: Sequence[bytes]) -> Dict[str, int]:
    """The name -> id map of a tokenizer's special tokens, checked. A sequence of names gets the
    ids after the vocabulary, in order.

    >>> special_ids(["<a>", "<b>"], 5, [b"x"] * 5)
    {'<a>': 5, '<b>': 6}
    """
    if isinstance(special_tokens, (str, bytes, bytearray)):
        raise TypeError(f"special_tokens must be a list of names or a name -> id mapping, not one "
                        f"{type(special_tokens).__name__} (write [{special_tokens!r:.40}])")
    if not isinstance(special_tokens, (Mapping, Iterable)):
        raise TypeError(f"special_tokens must be a list of names or a name -> id mapping, got "
                        f"{type(special_tokens).__name__}")
    if not isinstance(special_tokens, Mapping):
        names = list(special_tokens)
        if len(set(names)) != len(names):
            raise ValueError("special_tokens lists a name twice")
        special_tokens = {s: num_tokens + i for i, s in enumerate(names)}
    ids = {}
    for text, sid in special_tokens.items():
        if not isinstance(text, str) or not text:
            raise ValueError(f"special token {text!r} must be a non-empty str")
        # an int (not a bool, not a float: 1000.7 is not id 1000) that fits the int32 ids
        sid = check_id(sid, f"special token {text!r}")
        if sid < len(token_bytes) and token_bytes[sid]:
            raise ValueError(f"special token {text!r} has id {sid}, which a mergeable token uses")
        ids[text] = sid
    if len(set(ids.values())) != len(ids):
        raise ValueError("two special tokens share an id")
    return ids


@functools.lru_cache(maxsize=128)
def _alternation(specials: frozenset) -> "regex.Pattern":
    """Alternation of the special tokens, longest first (leftmost-longest match)."""
    return regex.compile("|".join(regex.escape(s) for s in sorted(specials, key=lambda s: (-len(s), s))))


def allowed_and_disallowed(names: AbstractSet[str], allowed_special: Allowed,
                           disallowed_special: Disallowed) -> Tuple[frozenset, frozenset]:
    """tiktoken's rule: ``"all"`` means every special token; by default none is allowed and
    all are disallowed (a literal one in the text is an error).

    >>> allowed_and_disallowed({"<a>", "<b>"}, {"<a>"}, "all")
    (frozenset({'<a>'}), frozenset({'<b>'}))
    """
    for what, value in (("allowed_special", allowed_special), ("disallowed_special", disallowed_special)):
        # a str other than "all" would be read as a set of one-character names
        if (isinstance(value, str) and value != "all") or not isinstance(value, (str, Iterable)):
            raise TypeError(f'{what} must be "all" or a collection of special token names, got {value!r:.60}'
                            + (f" (write {{{value!r:.40}}})" if isinstance(value, str) else ""))
    names = frozenset(names)
    allowed = names if allowed_special == "all" else frozenset(allowed_special)
    unknown = allowed - names
    if unknown:
        raise ValueError(f"allowed_special names tokens that are not special tokens: {sorted(unknown)}")
    disallowed = (names - allowed) if disallowed_special == "all" else frozenset(disallowed_special)
    unknown = disallowed - names
    if unknown:
        raise ValueError(f"disallowed_special names tokens that are not special tokens: {sorted(unknown)}")
    return allowed, disallowed


def check_disallowed(text: str, disallowed: frozenset) -> None:
    """ValueError when ``text`` holds a disallowed special token (the search releases the GIL,
    so batch-encoding threads do not serialise on it)."""
    if not disallowed:
        return
    found = _alternation(disallowed).search(text, concurrent=True)
    if found:
        raise ValueError(
            f"the text contains the special token {found.group()!r}, which is disallowed: "
            f"pass allowed_special={{{found.group()!r}}} (or \"all\") to encode it as a special "
            f"token, or disallowed_special=() to encode it as ordinary text")


def split_on_specials(text: str, allowed: frozenset) -> Iterator[Tuple[str, bool]]:
    """``(piece, is a special token)`` in order; ordinary pieces may be empty.

    >>> list(split_on_specials("a<s>b", frozenset({"<s>"})))
    [('a', False), ('<s>', True), ('b', False)]
    """
    position = 0
    if allowed:
        for match in _alternation(allowed).finditer(text):
            yield text[position:match.start()], False
            yield match.group(), True
            position = match.end()
    yield text[position:], False
