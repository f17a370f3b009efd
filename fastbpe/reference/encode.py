"""The specification of encoding one chunk: the three merge rules the compiled encoder implements.

* ``replay`` (:func:`encode_word`): a trained tokenizer's merges replayed in learned order;
* ``pair`` (:func:`encode_by_pair_rank`): Hugging Face ``tokenizers``' lowest merge rank first;
* ``token`` (:func:`encode_by_token_rank`): tiktoken's lowest rank of the concatenated bytes.

Quadratic and plain on purpose; tests compare ``fastbpe/_core/encode.pyx`` against them.
"""
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .learning import Pair, Word, merge_word

# One merge as it fires while encoding: its rank, the pair, and the pieces after it.
Step = Tuple[int, Pair, Tuple]

__all__ = ["encode_word", "encode_by_pair_rank", "encode_by_token_rank", "derive_merges", "decode_bytes",
           "char_spans"]


def encode_word(word: Word, merges: Iterable[Pair], steps: Optional[List[Step]] = None) -> Word:
    """Encode one word by replaying ``merges`` in learned order. ``steps``, a list, receives
    ``(rank, pair, word after)`` for every merge that changes the word, in the order they fire.

    >>> encode_word(tuple("_lower"), [("_", "l"), ("_l", "o"), ("e", "r")])
    ('_lo', 'w', 'er')
    """
    for rank, pair in enumerate(merges):
        merged = merge_word(word, pair)
        if steps is not None and merged != word:
            steps.append((rank, pair, merged))
        word = merged
    return word


def encode_by_pair_rank(word: Union[bytes, Sequence[str]], merges: Sequence[Tuple[Any, Any]],
                        steps: Optional[List[Step]] = None, subword_prefix: Any = b"") -> list:
    """Hugging Face ``tokenizers``' rule: repeatedly merge the adjacent pair that comes first in
    the merge list (leftmost among equals), no memory of earlier merges. A pair listed twice
    keeps its last rank, as ``tokenizers`` does. ``word``: bytes, or its base units (the
    characters of a character-level vocabulary, with merges of str). ``steps`` as for
    :func:`encode_word`. ``subword_prefix``: a Hugging Face BPE's ``continuing_subword_prefix``
    (``word``'s units then carry it but the first), which a merge drops from its right part.

    >>> encode_by_pair_rank(b"abc", [(b"b", b"c"), (b"a", b"b"), (b"a", b"bc")])
    [b'abc']
    >>> encode_by_pair_rank(("a", "b", "c"), [("b", "c")])
    ['a', 'bc']
    >>> encode_by_pair_rank((b"a", b"##b"), [(b"a", b"##b")], subword_prefix=b"##")
    [b'ab']
    """
    rank: Dict[Tuple[Any, Any], int] = {}
    for i, pair in enumerate(merges):
        rank[pair] = i
    parts = [bytes([b]) for b in word] if isinstance(word, bytes) else list(word)
    while len(parts) > 1:
        best = min(range(len(parts) - 1), key=lambda i: (rank.get((parts[i], parts[i + 1]), float("inf")), i))
        pair = (parts[best], parts[best + 1])
        if pair not in rank:
            break
        right = parts[best + 1]
        parts[best:best + 2] = [parts[best] + (right[len(subword_prefix):] if subword_prefix else right)]
        if steps is not None:
            steps.append((rank[pair], pair, tuple(parts)))
    return parts


def encode_by_token_rank(word: bytes, ranks: Mapping[bytes, int], whole: bool = True,
                         steps: Optional[List[Step]] = None) -> List[bytes]:
    """tiktoken's rule: a chunk that is a token is that token (with ``whole``); otherwise
    repeatedly merge the adjacent pair whose concatenation has the lowest rank (leftmost
    among equals). ``steps`` as for :func:`encode_word`, the rank being the new token's (a
    whole-chunk lookup records nothing).

    >>> encode_by_token_rank(b"abc", {b"a": 0, b"b": 1, b"c": 2, b"bc": 3, b"ab": 4})
    [b'a', b'bc']
    """
    if whole and word in ranks:
        return [word]
    parts = [bytes([b]) for b in word]
    while len(parts) > 1:
        best = min(range(len(parts) - 1),
                   key=lambda i: (ranks.get(parts[i] + parts[i + 1], float("inf")), i))
        pair = (parts[best], parts[best + 1])
        if pair[0] + pair[1] not in ranks:
            break
        parts[best:best + 2] = [pair[0] + pair[1]]
        if steps is not None:
            steps.append((ranks[pair[0] + pair[1]], pair, tuple(parts)))
    return parts


def derive_merges(token_bytes: Sequence[bytes]) -> List[Tuple[int, int, int]]:
    """The merges of a rank-only vocabulary (a tiktoken file, where id = rank): for each token
    of two bytes or more, :func:`encode_by_token_rank` of its bytes with only the tokens of
    lower rank to join; when that ends in two parts that are both tokens, they are its merge
    ``(left, right, token)``. A token it cannot reach gets none (tiktoken still produces it by
    its whole-chunk lookup). Empty bytes mark unused ids.

    >>> derive_merges([b"a", b"b", b"ab", b"abb", b"ba", b"xab", b"x"])
    [(0, 1, 2), (2, 1, 3), (1, 0, 4), (6, 2, 5)]
    """
    every: Dict[bytes, int] = {}  # (a token listed twice keeps its first rank)
    for rank, token in enumerate(token_bytes):
        if token:
            every.setdefault(token, rank)
    lower: Dict[bytes, int] = {}
    found = []
    for rank, token in enumerate(token_bytes):
        if len(token) >= 2:
            parts = encode_by_token_rank(token, lower, whole=False)
            # (a part never joined is a single byte: a token of any rank, or none)
            if len(parts) == 2 and all(part in every for part in parts):
                found.append((every[parts[0]], every[parts[1]], rank))
        if token:
            lower.setdefault(token, rank)
    return found


def two_piece_splits(pieces: Sequence[bytes], joinable: Sequence[bool]) -> List[Tuple[int, int, int]]:
    """Every way a piece is two pieces ``(piece, left, right)``: for each piece (UTF-8) whose
    ``joinable`` is true, each cut between two characters (before a byte that is not a UTF-8
    continuation byte) whose sides are joinable pieces, in id order and cuts left to right. A SentencePiece BPE model merges the adjacent pair whose
    concatenation is the piece of the highest score, so these, ranked by score, are its merges
    (what the ``tokenizers`` conversion of such a model does).

    >>> two_piece_splits([b"a", b"b", b"ab", b"abb", "é".encode()], [True] * 5)
    [(2, 0, 1), (3, 2, 1)]
    """
    ids: Dict[bytes, int] = {}
    for i, piece in enumerate(pieces):
        if joinable[i] and ids.setdefault(piece, i) != i:
            raise ValueError(f"piece {i} ({piece!r}) repeats an earlier piece")
    found = []
    for i, piece in enumerate(pieces):
        if not joinable[i]:
            continue
        for cut in range(1, len(piece)):
            if piece[cut] & 0xC0 == 0x80:  # (inside a character)
                continue
            left, right = ids.get(piece[:cut]), ids.get(piece[cut:])
            if left is not None and right is not None:
                found.append((i, left, right))
    return found


def first_repeat(texts: Sequence[bytes]) -> Tuple[int, int]:
    """``(i, j)``: ``texts[i]`` is the first text that repeats an earlier one, ``texts[j]`` the
    first of those; ``(-1, -1)`` when none does (a SentencePiece model's pieces: no text twice).

    >>> first_repeat([b"a", b"b", b"a", b"b"]), first_repeat([b"a", b""])
    ((2, 0), (-1, -1))
    """
    seen: Dict[bytes, int] = {}
    for i, text in enumerate(texts):
        if seen.setdefault(text, i) != i:
            return i, seen[text]
    return -1, -1


def byte_lengths(items: Sequence[object]) -> Optional[List[int]]:
    """The length of each item when every one is a bytes object (not a subclass), else None.

    >>> byte_lengths([b"ab", b"", b"c"]), byte_lengths([b"a", bytearray(b"b")])
    ([2, 0, 1], None)
    """
    if any(type(item) is not bytes for item in items):
        return None
    return [len(item) for item in items]


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
