"""tiktoken's ``encode_with_unstable``: the ids of a text whose end may still change as more text
follows it (a prompt completed token by token), and the token sequences that may follow.

The last chunk of the text is unstable: the next characters may join it, or a space before it
may join the chunk after it. So the tokens of the last chunk (and of the whitespace-only tokens
right before it) are held back, their bytes ``unstable``, and every way the text may go on is
listed as the tokens that would cover those bytes:

1. each token that begins with all of ``unstable``;
2. for each cut of ``unstable`` into a head and a tail, each token ``t`` that begins with the
   tail: the encoding of ``head + t`` (as a text when it is UTF-8, else as one chunk of bytes),
   cut after the token that covers ``unstable``;
3. when ``unstable`` ends with a whitespace character after something else, the two encoded
   apart (the space may become the next chunk's).

This is tiktoken's definition (its ``_encode_unstable_native``), written anew; a test holds the
two equal on generated texts. Like tiktoken, it is for tokenizers that encode as tiktoken does:
byte-level, one split pattern, no normaliser.

>>> from fastbpe import Tokenizer
>>> tok = Tokenizer([bytes([b]) for b in range(256)] + [b"ab", b"abc"], [(97, 98), (256, 99)],
...                 merge_rule="token", whole_token_lookup=True, pattern=r"\\S+|\\s+")
>>> stable, completions = encode_with_unstable(tok, "x ab", frozenset(), "all")
>>> stable, sorted(completions)
([120, 32], [[256], [257]])
"""
import bisect
import threading
from typing import List, Tuple

import numpy as np

from ..split.pretokenize import pretokenize
from . import special

__all__ = ["encode_with_unstable"]

# Unicode's White_Space property (Rust's char::is_whitespace, which tiktoken's step 3 asks),
# not str.isspace: that also takes U+001C..U+001F, which are no White_Space
WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                        "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_SORTING = threading.Lock()


def encode_with_unstable(tok, text: str, allowed_special, disallowed_special) -> Tuple[List[int], List[List[int]]]:
    """``(stable ids, completions)`` of ``text`` (module docstring): the ids but those of the
    unstable end, and each token sequence that may stand for that end and what follows it (in
    no order, as tiktoken's)."""
    if tok.unit != "bytes" or tok.markers or tok.normalizer is not None or tok.specials.always:
        raise ValueError("encode_with_unstable is tiktoken's: it needs a byte-level tokenizer without markers, "
                         "normaliser or special tokens matched in every text")
    tok.splitter.to_tiktoken()  # (one split pattern that drops nothing: a ValueError otherwise)
    allowed, disallowed = tok._special_sets(allowed_special, disallowed_special)
    ids = tok._encode_with_sets(text, allowed, disallowed).tolist()
    # the tokens of the last chunk after the last special token (none when the text ends with one)
    tail = list(special.split_on_specials(text, allowed))[-1][0] if allowed else text
    chunks = pretokenize(tail, tok.splitter.pattern) if tail else []
    held = len(tok.encode_ordinary(chunks[-1])) if chunks else 0
    if held == 0:
        return ids, []
    token_bytes = tok.token_bytes

    def all_space(i: int) -> bool:
        piece = token_bytes[i] if i < len(token_bytes) else b""
        return bool(piece) and not piece.strip(b" \n\t")

    if all_space(ids[-held]):  # (the split may put the spaces before the chunk into the next one)
        while held < len(ids) and all_space(ids[-held - 1]):
            held += 1
    unstable = b"".join(token_bytes[i] for i in ids[-held:])
    stable = ids[:-held]
    ordered, ranks = _sorted_tokens(tok)
    completions = set()
    # 1. a token that begins with all of it
    for k in range(bisect.bisect_left(ordered, unstable), len(ordered)):
        if not ordered[k].startswith(unstable):
            break
        completions.add((ranks[k],))
    # 2. a head of it, then a token that begins with the rest
    for cut in range(1, len(unstable)):
        head, rest = unstable[:cut], unstable[cut:]
        for k in range(bisect.bisect_left(ordered, rest), len(ordered)):
            if not ordered[k].startswith(rest):
                break
            covering, covered = [], 0
            for i in _encode_bytes(tok, head + ordered[k]):
                covering.append(i)
                covered += len(token_bytes[i])
                if covered >= len(unstable):
                    break
            completions.add(tuple(covering))
    # 3. a last whitespace character encoded apart from what comes before it
    last = _last_character(unstable)
    if len(unstable) > 1 and last is not None and last[0] in WHITE_SPACE and last[1] < len(unstable):
        width = last[1]
        completions.add(tuple(_bpe(tok, unstable[:-width]) + _bpe(tok, unstable[-width:])))
    return stable, [list(c) for c in completions]


def _sorted_tokens(tok) -> Tuple[List[bytes], List[int]]:
    """The tokens' bytes in byte order, and the id of each (made once per tokenizer)."""
    found = tok.__dict__.get("_sorted_tokens_cache")
    if found is None:
        with _SORTING:
            found = tok.__dict__.get("_sorted_tokens_cache")  # (sorted by a thread this one waited for)
            if found is None:
                pairs = sorted((t, i) for i, t in enumerate(tok.token_bytes) if t)
                found = tok.__dict__["_sorted_tokens_cache"] = ([t for t, _ in pairs], [i for _, i in pairs])
    return found


def _encode_bytes(tok, data: bytes) -> List[int]:
    """``data`` encoded as text where it is UTF-8 (split by the pattern), else as one chunk."""
    try:
        return tok.encode_ordinary(data.decode("utf-8"))
    except UnicodeDecodeError:
        return _bpe(tok, data)


def _bpe(tok, data: bytes) -> List[int]:
    """BPE of ``data`` as one chunk, unsplit."""
    bounds = np.array([0], dtype=np.int64), np.array([len(data)], dtype=np.int64)
    return tok.encode_chunk_bounds(data, *bounds).tolist() if data else []


def _last_character(data: bytes):
    """``(character, its UTF-8 width)`` that ends ``data``, or None where it ends in no character.

    >>> _last_character("a é".encode()), _last_character(b"a\\xc3")
    (('é', 2), None)
    """
    for width in range(1, min(4, len(data)) + 1):
        try:
            return data[-width:].decode("utf-8"), width
        except UnicodeDecodeError:
            continue
    return None
