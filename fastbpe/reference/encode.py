"""The specification of encoding one chunk: the three merge rules the compiled encoder implements.

* ``replay`` (:func:`encode_word`): a trained tokenizer's merges replayed in learned order;
* ``pair`` (:func:`encode_by_pair_rank`): Hugging Face ``tokenizers``' lowest merge rank first;
* ``token`` (:func:`encode_by_token_rank`): tiktoken's lowest rank of the concatenated bytes.

Quadratic and plain on purpose; tests compare ``fastbpe/_core/encode.pyx`` against them.
"""
from typing import Dict, Iterable, List, Mapping, Sequence, Tuple

from .learning import Pair, Word, merge_word

__all__ = ["encode_word", "encode_by_pair_rank", "encode_by_token_rank", "decode_bytes", "char_spans"]


def encode_word(word: Word, merges: Iterable[Pair]) -> Word:
    """Encode one word by replaying ``merges`` in learned order.

    >>> encode_word(tuple("_lower"), [("_", "l"), ("_l", "o"), ("e", "r")])
    ('_lo', 'w', 'er')
    """
    for pair in merges:
        word = merge_word(word, pair)
    return word


def encode_by_pair_rank(word: bytes, merges: Sequence[Tuple[bytes, bytes]]) -> List[bytes]:
    """Hugging Face ``tokenizers``' rule: repeatedly merge the adjacent pair that comes first in
    the merge list (leftmost among equals), no memory of earlier merges. A pair listed twice
    keeps its last rank, as ``tokenizers`` does.

    >>> encode_by_pair_rank(b"abc", [(b"b", b"c"), (b"a", b"b"), (b"a", b"bc")])
    [b'abc']
    """
    rank: Dict[Tuple[bytes, bytes], int] = {}
    for i, pair in enumerate(merges):
        rank[pair] = i
    parts = [bytes([b]) for b in word]
    while len(parts) > 1:
        best = min(range(len(parts) - 1), key=lambda i: (rank.get((parts[i], parts[i + 1]), float("inf")), i))
        if (parts[best], parts[best + 1]) not in rank:
            break
        parts[best:best + 2] = [parts[best] + parts[best + 1]]
    return parts


def encode_by_token_rank(word: bytes, ranks: Mapping[bytes, int], whole: bool = True) -> List[bytes]:
    """tiktoken's rule: a chunk that is a token is that token (with ``whole``); otherwise
    repeatedly merge the adjacent pair whose concatenation has the lowest rank (leftmost
    among equals).

    >>> encode_by_token_rank(b"abc", {b"a": 0, b"b": 1, b"c": 2, b"bc": 3, b"ab": 4})
    [b'a', b'bc']
    """
    if whole and word in ranks:
        return [word]
    parts = [bytes([b]) for b in word]
    while len(parts) > 1:
        best = min(range(len(parts) - 1),
                   key=lambda i: (ranks.get(parts[i] + parts[i + 1], float("inf")), i))
        if parts[best] + parts[best + 1] not in ranks:
            break
        parts[best:best + 2] = [parts[best] + parts[best + 1]]
    return parts


def decode_bytes(token_of: Mapping[int, bytes], ids: Iterable[int]) -> bytes:
    """The bytes of ``ids``: each id's bytes (``token_of``: tokens and special tokens' UTF-8),
    concatenated. The spec of ``Tokenizer.decode_bytes`` (compiled: ``gather_bytes``)."""
    return b"".join(token_of[i] for i in ids)


def char_spans(text: str, tokens: Sequence[bytes]) -> List[Tuple[int, int]]:
    """The ``(start, end)`` characters of ``text`` that each token's bytes belong to, the
    tokens being ``text``'s UTF-8 cut in order (Hugging Face's ``offsets`` for byte-level
    tokenizers). The spec of ``Tokenizer.encode_with_offsets`` (vectorised: ``vocab.char_offsets``)."""
    char_of_byte = [k for k, c in enumerate(text) for _ in c.encode("utf-8", "surrogatepass")]
    spans, at = [], 0
    for token in tokens:
        spans.append((char_of_byte[at], char_of_byte[at + len(token) - 1] + 1) if token else (0, 0))
        at += len(token)
    return spans
