"""Readable references of the two peer encoding rules the compiled encoder also implements.

The trained-tokenizer rule (replaying merges in order) is :func:`fastbpe.reference.encode_word`.
These two are quadratic and plain on purpose; tests compare ``fastbpe._encode`` against them.
"""
from typing import Dict, List, Mapping, Sequence, Tuple

__all__ = ["encode_by_pair_rank", "encode_by_token_rank"]


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
