"""The trained tokenizer: vocabulary, merges, pre-tokenizer, special tokens, and its file.

Token ids index ``Tokenizer.token_bytes``; merges are pairs of ids in priority (learned) order,
and the token a merge produces is the one whose bytes are the concatenation. Every token is
stored as bytes: raw bytes for ``unit="bytes"``, the UTF-8 of the text for ``unit="chars"``.
"""
import json
import os
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .fileio import write_atomic
from .pretokenize import compiled_regex, pretokenize

__all__ = ["Tokenizer", "FORMAT_NAME", "FORMAT_VERSION", "bytes_to_unicode"]

FORMAT_NAME = "fastbpe"
FORMAT_VERSION = 1
UNITS = ("bytes", "chars")


def bytes_to_unicode() -> Dict[int, str]:
    """GPT-2's reversible map of the 256 byte values to printable characters.

    Printable Latin-1 bytes map to themselves; the others (controls, space, ...) to the code
    points from U+0100 on, in byte order. It makes byte tokens readable in a JSON file.

    >>> m = bytes_to_unicode()
    >>> m[ord("a")], m[ord(" ")], m[ord("\\n")], len(set(m.values()))
    ('a', 'Ġ', 'Ċ', 256)
    """
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


_BYTE_TO_CHAR = bytes_to_unicode()
_CHAR_TO_BYTE = {c: b for b, c in _BYTE_TO_CHAR.items()}


def _bytes_to_text(token: bytes) -> str:
    return "".join(_BYTE_TO_CHAR[b] for b in token)


def _text_to_bytes(text: str) -> bytes:
    try:
        return bytes(_CHAR_TO_BYTE[c] for c in text)
    except KeyError as exc:
        raise ValueError(f"{text!r} is not a byte token in GPT-2's byte-to-unicode form") from exc


class Tokenizer:
    """A BPE tokenizer: what :func:`fastbpe.train` returns and :meth:`load` reads.

    >>> tok = Tokenizer([b"a", b"b", b"ab"], [(0, 1)], pattern="whitespace")
    >>> tok.encode("abab b")
    [2, 2, 1]
    >>> tok.decode([2, 2])
    'abab'
    """

    def __init__(
        self,
        tokens: Sequence[bytes],
        merges: Iterable[Tuple[int, int]],
        *,
        unit: str = "bytes",
        pattern: str = "gpt2",
        word_start: Optional[str] = None,
        word_end: Optional[str] = None,
        special_tokens: Union[Mapping[str, int], Sequence[str]] = (),
        merge_counts: Optional[Sequence[int]] = None,
    ):
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
        self.unit = unit
        compiled_regex(pattern)  # a bad pattern fails here, not at the first encode
        self.pattern = pattern
        self.word_start = word_start or ""
        self.word_end = word_end or ""
        self.token_bytes: List[bytes] = [bytes(t) for t in tokens]
        self._ids: Dict[bytes, int] = {}
        for i, token in enumerate(self.token_bytes):
            if not token:
                raise ValueError(f"token {i} is empty")
            if token in self._ids:
                raise ValueError(f"token {i} ({token!r}) duplicates token {self._ids[token]}")
            self._ids[token] = i
        merge_array = np.asarray(list(merges), dtype=np.int64).reshape(-1, 2)
        self._merge_rank: Dict[Tuple[int, int], Tuple[int, int]] = {}
        for rank, (left, right) in enumerate(merge_array.tolist()):
            for side in (left, right):
                if not 0 <= side < len(self.token_bytes):
                    raise ValueError(f"merge {rank} refers to unknown token id {side}")
            new = self._ids.get(self.token_bytes[left] + self.token_bytes[right])
            if new is None:
                raise ValueError(f"merge {rank}: the concatenation of tokens {left} and {right} is not a token")
            # The first merge of a pair wins; a repeated pair can never fire again.
            self._merge_rank.setdefault((left, right), (rank, new))
        self.merge_ids = merge_array
        self.merge_counts = None if merge_counts is None else [int(c) for c in merge_counts]
        if not isinstance(special_tokens, Mapping):
            special_tokens = {s: len(self.token_bytes) + i for i, s in enumerate(special_tokens)}
        self.special_tokens: Dict[str, int] = dict(special_tokens)
        for text, sid in self.special_tokens.items():
            if 0 <= sid < len(self.token_bytes):
                raise ValueError(f"special token {text!r} has id {sid}, which a mergeable token uses")
        if len(set(self.special_tokens.values())) != len(self.special_tokens):
            raise ValueError("two special tokens share an id")
        self._cache: Dict[str, Tuple[int, ...]] = {}

    def _special_by_id(self) -> Dict[int, str]:
        return {i: s for s, i in getattr(self, "special_tokens", {}).items()}

    # ---- views ------------------------------------------------------------------------------

    def _as_unit(self, token: bytes) -> Union[str, bytes]:
        return token.decode("utf-8", "surrogatepass") if self.unit == "chars" else token

    @property
    def vocab(self) -> Dict[int, Union[str, bytes]]:
        """Id -> token (``bytes`` for byte-level, ``str`` for chars; special tokens as ``str``)."""
        vocab: Dict[int, Union[str, bytes]] = {i: self._as_unit(t) for i, t in enumerate(self.token_bytes)}
        vocab.update({i: s for s, i in self.special_tokens.items()})
        return vocab

    @property
    def vocab_size(self) -> int:
        return len(self.token_bytes) + len(self.special_tokens)

    @property
    def merges(self) -> List[Tuple[Union[str, bytes], Union[str, bytes]]]:
        """The merges in learned order, as pairs of tokens."""
        t = self.token_bytes
        return [(self._as_unit(t[a]), self._as_unit(t[b])) for a, b in self.merge_ids.tolist()]

    def __repr__(self) -> str:
        return (f"Tokenizer(vocab_size={self.vocab_size}, merges={len(self.merge_ids)}, "
                f"unit={self.unit!r}, pattern={self.pattern!r})")

    # ---- encoding ---------------------------------------------------------------------------

    def _base_ids(self, chunk: str) -> List[int]:
        """Base ids of a chunk. A piece missing from the vocabulary (a character never seen in
        training) gets the negative id ``-1 - ord(piece)``: no merge involves it, ``tokens``
        shows it as itself, and ``encode`` refuses it."""
        text = self.word_start + chunk + self.word_end
        if self.unit == "bytes":
            ids = self._ids
            return [ids.get(bytes([b]), -1 - b) for b in text.encode("utf-8")]
        return [self._ids.get(c.encode("utf-8", "surrogatepass"), -1 - ord(c)) for c in text]

    def _encode_chunk(self, chunk: str) -> Tuple[int, ...]:
        """Merge the adjacent pair of lowest rank, never going back to a rank below the last
        one applied: exactly replaying the merges in learned order (the reference's rule)."""
        cached = self._cache.get(chunk)
        if cached is not None:
            return cached
        ids = self._base_ids(chunk)
        floor = -1
        ranks = self._merge_rank
        while len(ids) > 1:
            best = None
            for i in range(len(ids) - 1):
                found = ranks.get((ids[i], ids[i + 1]))
                if found is not None and found[0] >= floor and (best is None or found[0] < best[0]):
                    best = (found[0], found[1], i)
            if best is None:
                break
            floor, new, i = best
            ids[i : i + 2] = [new]
        result = tuple(ids)
        if len(self._cache) < 100_000:
            self._cache[chunk] = result
        return result

    def _encode_with_unknowns(self, text: str) -> List[int]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        out: List[int] = []
        for chunk in pretokenize(text, self.pattern):
            out.extend(self._encode_chunk(chunk))
        return out

    def encode(self, text: str) -> List[int]:
        """Token ids of ``text``. A character (or byte) outside the vocabulary is a ValueError."""
        ids = self._encode_with_unknowns(text)
        unknown = next((i for i in ids if i < 0), None)
        if unknown is not None:
            raise ValueError(f"{self._piece(unknown)!r} is not in the vocabulary")
        return ids

    def _piece(self, i: int) -> Union[str, bytes]:
        if i >= 0:
            return self._as_unit(self.token_bytes[i])
        return chr(-1 - i) if self.unit == "chars" else bytes([-1 - i])

    def tokens(self, text: str) -> List[Union[str, bytes]]:
        """The pieces of ``text`` (``bytes`` for byte-level, ``str`` for chars). Unlike
        ``encode``, a piece outside the vocabulary is shown as itself."""
        return [self._piece(i) for i in self._encode_with_unknowns(text)]

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes the ids stand for (special tokens as their UTF-8 text)."""
        specials = self._special_by_id()
        parts = []
        for i in ids:
            i = int(i)
            if 0 <= i < len(self.token_bytes):
                parts.append(self.token_bytes[i])
            elif i in specials:
                parts.append(specials[i].encode("utf-8"))
            else:
                raise ValueError(f"token id {i} is not in the vocabulary")
        return b"".join(parts)

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """Text of ``ids``. Word markers (``word_start``/``word_end``) become single spaces."""
        text = self.decode_bytes(ids).decode("utf-8", errors)
        if self.word_start:
            text = text.replace(self.word_start, " ")
            text = text[1:] if text.startswith(" ") else text
        if self.word_end:
            text = text.replace(self.word_end, " ")
            text = text[:-1] if text.endswith(" ") else text
        return text

    # ---- file -------------------------------------------------------------------------------

    def to_dict(self) -> dict:
        as_text = (lambda t: t.decode("utf-8", "surrogatepass")) if self.unit == "chars" else _bytes_to_text
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "unit": self.unit,
            "token_text": "utf-8" if self.unit == "chars" else "gpt2-bytes-to-unicode",
            "pattern": self.pattern,
            "word_start": self.word_start,
            "word_end": self.word_end,
            "special_tokens": self.special_tokens,
            "vocab": [as_text(t) for t in self.token_bytes],
            "merges": self.merge_ids.tolist(),
            "merge_counts": self.merge_counts,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> "Tokenizer":
        if not isinstance(data, Mapping) or data.get("format") != FORMAT_NAME:
            raise ValueError("not a fastbpe tokenizer file (no \"format\": \"fastbpe\")")
        version = data.get("version")
        if version != FORMAT_VERSION:
            raise ValueError(f"unsupported fastbpe file version {version!r} (this build reads {FORMAT_VERSION})")
        try:
            unit = data["unit"]
            from_text = (lambda s: s.encode("utf-8", "surrogatepass")) if unit == "chars" else _text_to_bytes
            tokens = [from_text(s) for s in data["vocab"]]
            merges = [tuple(m) for m in data["merges"]]
            if any(len(m) != 2 for m in merges):
                raise ValueError("every merge must be a pair of token ids")
            return cls(
                tokens,
                merges,
                unit=unit,
                pattern=data["pattern"],
                word_start=data.get("word_start") or None,
                word_end=data.get("word_end") or None,
                special_tokens={str(k): int(v) for k, v in data.get("special_tokens", {}).items()},
                merge_counts=data.get("merge_counts"),
            )
        except KeyError as exc:
            raise ValueError(f"fastbpe tokenizer file is missing the field {exc.args[0]!r}") from None
        except (TypeError, AttributeError) as exc:
            raise ValueError(f"malformed fastbpe tokenizer file: {exc}") from None

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Write the tokenizer as versioned JSON, atomically (temp file, then rename)."""
        write_atomic(path, json.dumps(self.to_dict(), ensure_ascii=False, indent=1).encode("utf-8"))

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "Tokenizer":
        try:
            with open(path, "rb") as f:
                data = json.loads(f.read().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{os.fspath(path)}: not a valid JSON tokenizer file ({exc})") from None
        return cls.from_dict(data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self.to_dict() == other.to_dict()

