"""The trained tokenizer: vocabulary, merges, pre-tokenizer, special tokens, and its file.

Token ids index ``Tokenizer.token_bytes``; merges are pairs of ids in priority (learned) order,
and the token a merge produces is the one whose bytes are the concatenation. Every token is
stored as bytes: raw bytes for ``unit="bytes"``, the UTF-8 of the text for ``unit="chars"``.

Encoding rules (``merge_rule``), each exact for the tokenizers it serves:

* ``"replay"`` (trained tokenizers): the merges replayed in learned order, as
  :func:`fastbpe.reference.encode_word` does;
* ``"pair"`` (imported Hugging Face files): the adjacent pair of lowest merge rank, no floor,
  as ``tokenizers``' BPE model does;
* ``"token"`` (imported tiktoken and GPT-2 files): the adjacent pair whose concatenation has
  the lowest rank (= id), as ``tiktoken`` does.

``whole_token_lookup=True`` (tiktoken; Hugging Face's ``ignore_merges``) maps a chunk that is a
token straight to its id. Without it the encoder still takes that shortcut, but only for tokens
the merges rebuild from their own bytes, where it cannot change the result.
"""
import functools
import json
import os
import threading
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from typing import AbstractSet, Collection, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import regex

from ._encode import BPECore, EncodeState
from .chunking import check_pattern, chunk_bounds, fused_pattern_id, staged_chunk_bounds
from .fileio import write_atomic
from .pretokenize import pretokenize

__all__ = ["Tokenizer", "FORMAT_NAME", "FORMAT_VERSION", "bytes_to_unicode", "MERGE_RULES"]

FORMAT_NAME = "fastbpe"
FORMAT_VERSION = 1
UNITS = ("bytes", "chars")
MERGE_RULES = ("replay", "pair", "token")
NORMALIZERS = (None, "NFC", "NFD", "NFKC", "NFKD")


@functools.lru_cache(maxsize=128)
def _special_regex(specials: frozenset) -> "regex.Pattern":
    """Alternation of the special tokens, longest first (leftmost-longest match)."""
    return regex.compile("|".join(regex.escape(s) for s in sorted(specials, key=lambda s: (-len(s), s))))


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

    ``tokens``: the bytes of every id (``b""`` marks an unused id); ``merges``: pairs of ids
    in priority order. ``special_tokens``: names (given the ids after the vocabulary) or a
    name -> id mapping. Encoding options, for the imported formats (:mod:`fastbpe.formats`):
    ``merge_rule`` (module docstring), ``whole_token_lookup``, ``normalizer`` (``"NFC"``...,
    applied before splitting) and ``split_gaps`` (text between pattern matches becomes chunks
    too, as Hugging Face's ``Split(behavior="Isolated")``; by default it is dropped, as
    ``regex.findall`` and tiktoken do); ``split_stages``: further ``(pattern, keep_gaps)``
    splits applied to every chunk in turn (Hugging Face files with several ``Split`` steps).

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
        merge_rule: str = "replay",
        whole_token_lookup: bool = False,
        normalizer: Optional[str] = None,
        split_gaps: bool = False,
        split_stages: Sequence[Tuple[str, bool]] = (),
    ):
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
        if merge_rule not in MERGE_RULES:
            raise ValueError(f"merge_rule must be one of {MERGE_RULES}, got {merge_rule!r}")
        if (merge_rule != "replay" or split_gaps or split_stages) and (unit != "bytes" or word_start or word_end):
            raise ValueError("merge_rule other than 'replay', split_gaps and split_stages need unit='bytes' "
                             "and no word markers")
        self.split_stages: List[Tuple[str, bool]] = []
        for stage in split_stages:
            if not (isinstance(stage, (tuple, list)) and len(stage) == 2 and isinstance(stage[0], str)):
                raise ValueError(f"split_stages entries must be (pattern, keep_gaps) pairs, got {stage!r:.80}")
            check_pattern(stage[0])
            self.split_stages.append((stage[0], bool(stage[1])))
        if normalizer not in NORMALIZERS:
            raise ValueError(f"normalizer must be one of {NORMALIZERS}, got {normalizer!r}")
        self.merge_rule = merge_rule
        self.whole_token_lookup = bool(whole_token_lookup)
        self.normalizer = normalizer
        self.split_gaps = bool(split_gaps)
        self.unit = unit
        self.pattern = pattern
        check_pattern(pattern)  # a bad pattern fails here, not at the first encode
        self.word_start = word_start or ""
        self.word_end = word_end or ""
        self.token_bytes: List[bytes] = [bytes(t) for t in tokens]
        self._ids: Dict[bytes, int] = {}
        for i, token in enumerate(self.token_bytes):
            if not token:
                continue  # an unused id: a rank gap of a tiktoken file, or a special token's slot
            if token in self._ids:
                raise ValueError(f"token {i} ({token!r}) duplicates token {self._ids[token]}")
            self._ids[token] = i
        merge_array = np.asarray(list(merges), dtype=np.int64).reshape(-1, 2)
        self._merge_rank: Dict[Tuple[int, int], Tuple[int, int]] = {}
        self._merge_repeats: Dict[Tuple[int, int], List[Tuple[int, int]]] = {}
        for rank, (left, right) in enumerate(merge_array.tolist()):
            for side in (left, right):
                if not 0 <= side < len(self.token_bytes) or not self.token_bytes[side]:
                    raise ValueError(f"merge {rank} refers to unknown token id {side}")
            new = self._ids.get(self.token_bytes[left] + self.token_bytes[right])
            if new is None:
                raise ValueError(f"merge {rank}: the concatenation of tokens {left} and {right} is not a token")
            # A repeated pair (possible once a duplicate merge re-creates one of its tokens)
            # fires again at its later rank when replaying: keep those ranks aside.
            if (left, right) in self._merge_rank:
                self._merge_repeats.setdefault((left, right), []).append((rank, new))
            else:
                self._merge_rank[(left, right)] = (rank, new)
        self.merge_ids = merge_array
        self.merge_counts = None if merge_counts is None else [int(c) for c in merge_counts]
        # What each phase of training took (fastbpe.train fills it in; None otherwise).
        self.training_stats: Optional[dict] = None
        if not isinstance(special_tokens, Mapping):
            special_tokens = {s: len(self.token_bytes) + i for i, s in enumerate(special_tokens)}
        self.special_tokens: Dict[str, int] = dict(special_tokens)
        for text, sid in self.special_tokens.items():
            if not isinstance(text, str) or not text:
                raise ValueError(f"special token {text!r} must be a non-empty str")
            if isinstance(sid, bool) or not isinstance(sid, (int, np.integer)) or sid < 0:
                raise ValueError(f"special token {text!r} has an invalid id {sid!r}")
            if sid < len(self.token_bytes) and self.token_bytes[sid]:
                raise ValueError(f"special token {text!r} has id {sid}, which a mergeable token uses")
        if len(set(self.special_tokens.values())) != len(self.special_tokens):
            raise ValueError("two special tokens share an id")
        self._cache: Dict[str, Tuple[int, ...]] = {}
        self._core_obj: Optional[BPECore] = None
        self._core_lock = threading.Lock()
        self._local = threading.local()
        self._pool: Optional[ThreadPoolExecutor] = None

    def __getstate__(self) -> dict:
        # The compiled tables, the lock and the per-thread caches are rebuilt on demand.
        state = dict(self.__dict__)
        for key in ("_core_obj", "_core_lock", "_local", "_cache", "_pool"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._core_obj = None
        self._core_lock = threading.Lock()
        self._local = threading.local()
        self._cache = {}
        self._pool = None

    def _special_by_id(self) -> Dict[int, str]:
        return {i: s for s, i in getattr(self, "special_tokens", {}).items()}

    # ---- views ------------------------------------------------------------------------------

    def _as_unit(self, token: bytes) -> Union[str, bytes]:
        return token.decode("utf-8", "surrogatepass") if self.unit == "chars" else token

    @property
    def vocab(self) -> Dict[int, Union[str, bytes]]:
        """Id -> token (``bytes`` for byte-level, ``str`` for chars; special tokens as ``str``)."""
        vocab: Dict[int, Union[str, bytes]] = {i: self._as_unit(t) for i, t in enumerate(self.token_bytes) if t}
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
                if found is not None and found[0] < floor:
                    later = self._merge_repeats.get((ids[i], ids[i + 1]), ())
                    found = next((f for f in later if f[0] >= floor), None)
                if found is not None and (best is None or found[0] < best[0]):
                    best = (found[0], found[1], i)
            if best is None:
                break
            floor, new, i = best
            ids[i : i + 2] = [new]
        result = tuple(ids)
        if len(self._cache) < 100_000:
            self._cache[chunk] = result
        return result

    # The compiled path: byte-level tokenizers without word markers (every real one).

    @property
    def _uses_core(self) -> bool:
        return self.unit == "bytes" and not self.word_start and not self.word_end

    def _core(self) -> BPECore:
        """The compiled encoding tables, built on first use (once, under a lock)."""
        if self._core_obj is None:
            with self._core_lock:
                if self._core_obj is None:
                    merges = self.merge_ids.astype(np.int32)
                    self._core_obj = BPECore(
                        self.token_bytes,
                        np.ascontiguousarray(merges[:, 0]),
                        np.ascontiguousarray(merges[:, 1]),
                        self.merge_rule,
                        "all" if self.whole_token_lookup else "consistent",
                    )
        return self._core_obj

    def _state(self) -> EncodeState:
        """This thread's chunk cache and scratch space."""
        state = getattr(self._local, "state", None)
        if state is None:
            state = self._local.state = EncodeState()
        return state

    def _ordinary_ids(self, text: str) -> np.ndarray:
        """int32 ids of text without special tokens (the compiled path)."""
        if self.normalizer:
            text = unicodedata.normalize(self.normalizer, text)
        if not self.split_stages:
            pattern_id = fused_pattern_id(self.pattern)
            if pattern_id is not None:
                # UTF-8, split and BPE in one compiled pass; None: a lone surrogate (no UTF-8)
                ids = self._core().encode_str(text, pattern_id, self._state())
                if ids is not None:
                    return ids
        if self.split_stages:
            data, starts, ends = staged_chunk_bounds(
                text, [(self.pattern, self.split_gaps), *self.split_stages])
        else:
            data, starts, ends = chunk_bounds(text, self.pattern, self.split_gaps)
        return self._core().encode_chunks(data, starts, ends, self._state())

    def _id_list(self, ids: np.ndarray) -> List[int]:
        """``ids.tolist()``; the compiled path's int32 ids through ``BPECore.id_list``, which
        shares one int object per id (per thread) instead of allocating one per token."""
        if ids.dtype == np.int32 and self._uses_core:
            return self._core().id_list(ids, self._state())
        return ids.tolist()

    def encode_chunk_bounds(self, data: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """int32 ids of pre-split UTF-8: the BPE core alone, for callers (and benchmarks) that
        already have chunk bounds as byte offsets (``starts``/``ends`` int64)."""
        if not self._uses_core:
            raise ValueError("encode_chunk_bounds needs a byte-level tokenizer without word markers")
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        return self._core().encode_chunks(data, starts, ends, self._state())

    def encode_utf8_chunks(self, data: bytes, offsets: np.ndarray) -> np.ndarray:
        """int32 ids of UTF-8 ``data`` already split into contiguous chunks at the int64 byte
        ``offsets`` (``len(chunks) + 1`` of them, from 0 to ``len(data)``): the BPE core alone,
        for a pre-tokenizer that hands over offsets."""
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        if len(offsets) and (offsets[0] != 0 or offsets[-1] != len(data)):
            raise ValueError("offsets must run from 0 to len(data)")
        return self.encode_chunk_bounds(data, offsets[:-1], offsets[1:])

    def _check_text(self, text) -> None:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")

    def _special_sets(self, allowed_special, disallowed_special) -> Tuple[frozenset, frozenset]:
        """tiktoken's rule: ``"all"`` means every special token; by default none is allowed and
        all are disallowed (a literal one in the text is an error)."""
        names = frozenset(self.special_tokens)
        allowed = names if allowed_special == "all" else frozenset(allowed_special)
        unknown = allowed - names
        if unknown:
            raise ValueError(f"allowed_special names tokens that are not special tokens: {sorted(unknown)}")
        disallowed = (names - allowed) if disallowed_special == "all" else frozenset(disallowed_special)
        unknown = disallowed - names
        if unknown:
            raise ValueError(f"disallowed_special names tokens that are not special tokens: {sorted(unknown)}")
        return allowed, disallowed

    def _encode_array(self, text: str, allowed_special="all", disallowed_special=()) -> np.ndarray:
        self._check_text(text)
        allowed, disallowed = self._special_sets(allowed_special, disallowed_special)
        if disallowed:
            found = _special_regex(disallowed).search(text, concurrent=True)  # GIL released: batch workers
            if found:
                raise ValueError(
                    f"the text contains the special token {found.group()!r}, which is disallowed: "
                    f"pass allowed_special={{{found.group()!r}}} (or \"all\") to encode it as a special "
                    f"token, or disallowed_special=() to encode it as ordinary text")
        if not self._uses_core:
            return np.asarray(self._encode_python(text, allowed), dtype=np.int64)
        if not allowed:
            return self._ordinary_ids(text)
        parts = []
        position = 0
        for match in _special_regex(allowed).finditer(text):
            if match.start() > position:
                parts.append(self._ordinary_ids(text[position:match.start()]))
            parts.append(np.array([self.special_tokens[match.group()]], dtype=np.int32))
            position = match.end()
        if position < len(text) or not parts:
            parts.append(self._ordinary_ids(text[position:]))
        return np.concatenate(parts)

    def encode(self, text: str, *, allowed_special: Union[str, AbstractSet[str]] = frozenset(),
               disallowed_special: Union[str, Collection[str]] = "all") -> List[int]:
        """Token ids of ``text``.

        Special tokens follow tiktoken: a literal special token in the text is a ValueError
        unless ``allowed_special`` (a set, or ``"all"``) names it, which encodes it as its id,
        or ``disallowed_special`` leaves it out (``()``), which encodes it as ordinary text.
        A character (or byte) outside the vocabulary is a ValueError.
        """
        return self._id_list(self._encode_array(text, allowed_special, disallowed_special))

    def encode_ordinary(self, text: str) -> List[int]:
        """Token ids of ``text``, special-token strings encoded as ordinary text."""
        return self._id_list(self._encode_array(text, frozenset(), ()))

    def encode_to_numpy(self, text: str, *, allowed_special: Union[str, AbstractSet[str]] = frozenset(),
                        disallowed_special: Union[str, Collection[str]] = "all") -> np.ndarray:
        """Token ids as a NumPy array: uint16 when every id fits, else uint32."""
        return self._encode_array(text, allowed_special, disallowed_special).astype(self.id_dtype)

    @property
    def id_dtype(self) -> np.dtype:
        """The smallest unsigned dtype holding every token id (uint16 or uint32)."""
        top = max([len(self.token_bytes) - 1, *self.special_tokens.values()])
        return np.dtype(np.uint16 if top < 2**16 else np.uint32)

    def encode_batch(self, texts: Sequence[str], *, workers: Optional[int] = None,
                     allowed_special: Union[str, AbstractSet[str]] = frozenset(),
                     disallowed_special: Union[str, Collection[str]] = "all",
                     as_numpy: bool = False) -> List:
        """Encode many texts on ``workers`` threads (default: all cores); the compiled core and
        the regex matching release the GIL. Returns lists of ids (arrays with ``as_numpy``)."""
        texts = list(texts)
        for text in texts:
            self._check_text(text)
        self._special_sets(allowed_special, disallowed_special)
        if self._uses_core:
            self._core()
        workers = (os.cpu_count() or 1) if workers is None else int(workers)
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")

        def one(text: str):
            ids = self._encode_array(text, allowed_special, disallowed_special)
            return ids.astype(self.id_dtype) if as_numpy else self._id_list(ids)

        if workers == 1 or len(texts) <= 1:
            return [one(t) for t in texts]
        return list(self._executor(workers).map(one, texts))

    def _executor(self, workers: int) -> ThreadPoolExecutor:
        """A thread pool kept between calls, so each worker keeps its warm chunk cache."""
        with self._core_lock:
            pool = getattr(self, "_pool", None)
            if pool is None or pool._max_workers != workers:
                if pool is not None:
                    pool.shutdown(wait=False)
                pool = self._pool = ThreadPoolExecutor(workers, thread_name_prefix="fastbpe-encode")
            return pool

    # The pure-Python path: character-level tokenizers and word markers.

    def _encode_with_unknowns(self, text: str) -> List[int]:
        self._check_text(text)
        if self._uses_core:
            try:
                return self._id_list(self._encode_array(text, frozenset(), ()))
            except ValueError:
                pass  # a byte outside the vocabulary: the slow path shows it as itself
        out: List[int] = []
        for chunk in pretokenize(text, self.pattern):
            out.extend(self._encode_chunk(chunk))
        return out

    def _encode_python(self, text: str, allowed: frozenset) -> List[int]:
        pieces: List[Tuple[str, bool]] = [(text, False)]  # (text, is an allowed special token)
        if allowed:
            pieces, position = [], 0
            for match in _special_regex(allowed).finditer(text):
                pieces.extend([(text[position:match.start()], False), (match.group(), True)])
                position = match.end()
            pieces.append((text[position:], False))
        out: List[int] = []
        for piece, special in pieces:
            if special:
                out.append(self.special_tokens[piece])
                continue
            if self.normalizer:
                piece = unicodedata.normalize(self.normalizer, piece)
            for chunk in pretokenize(piece, self.pattern):
                out.extend(self._encode_chunk(chunk))
        unknown = next((i for i in out if i < 0), None)
        if unknown is not None:
            raise ValueError(f"{self._piece(unknown)!r} is not in the vocabulary")
        return out

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
        table = self.token_bytes
        ids = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
        if ids and all(type(i) is int for i in ids) and 0 <= min(ids) and max(ids) < len(table):
            parts = list(map(table.__getitem__, ids))
            if all(parts):  # every id a mergeable token: the common case
                return b"".join(parts)
        elif not ids:
            return b""
        specials = self._special_by_id()
        parts = []
        for i in ids:
            i = int(i)
            if i in specials:
                parts.append(specials[i].encode("utf-8"))
            elif 0 <= i < len(table) and table[i]:
                parts.append(table[i])
            else:
                raise ValueError(f"token id {i} is not in the vocabulary")
        return b"".join(parts)

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """Text of ``ids`` (``errors`` as in ``bytes.decode``: ``"replace"`` or ``"strict"``).
        Word markers (``word_start``/``word_end``) become single spaces."""
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
            # Encoding options, written only when they differ from a trained tokenizer's, so a
            # trained tokenizer's file is unchanged (and readable by older builds).
            **({"merge_rule": self.merge_rule} if self.merge_rule != "replay" else {}),
            **({"whole_token_lookup": True} if self.whole_token_lookup else {}),
            **({"normalizer": self.normalizer} if self.normalizer else {}),
            **({"split_gaps": True} if self.split_gaps else {}),
            **({"split_stages": [list(x) for x in self.split_stages]} if self.split_stages else {}),
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
                merge_rule=data.get("merge_rule", "replay"),
                whole_token_lookup=bool(data.get("whole_token_lookup", False)),
                normalizer=data.get("normalizer"),
                split_gaps=bool(data.get("split_gaps", False)),
                split_stages=[tuple(x) for x in data.get("split_stages", [])],
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

    # ---- the peers' formats (fastbpe.formats does the work) ----------------------------------

    @classmethod
    def from_huggingface(cls, path: Union[str, os.PathLike]) -> "Tokenizer":
        """A byte-level BPE ``tokenizer.json``; encodes as ``tokenizers`` does."""
        from .formats import from_huggingface
        return from_huggingface(path)

    def to_huggingface(self, path: Union[str, os.PathLike]) -> None:
        """Write a ``tokenizer.json`` that ``tokenizers`` encodes identically."""
        from .formats import to_huggingface
        to_huggingface(self, path)

    @classmethod
    def from_tiktoken(cls, path: Union[str, os.PathLike], pattern: str,
                      special_tokens: Optional[Mapping[str, int]] = None) -> "Tokenizer":
        """A ``.tiktoken`` rank file with its split pattern and special tokens."""
        from .formats import from_tiktoken
        return from_tiktoken(path, pattern, special_tokens)

    def to_tiktoken(self, path: Union[str, os.PathLike]) -> None:
        """Write ``path`` (ranks) and ``path.json`` (``pat_str``, ``special_tokens``)."""
        from .formats import to_tiktoken
        to_tiktoken(self, path)

    def to_tiktoken_encoding(self, name: str = "fastbpe"):
        """This tokenizer as a ``tiktoken.Encoding`` (needs tiktoken)."""
        from .formats import to_tiktoken_encoding
        return to_tiktoken_encoding(self, name)

    @classmethod
    def from_gpt2(cls, encoder_json: Union[str, os.PathLike], vocab_bpe: Union[str, os.PathLike]) -> "Tokenizer":
        """GPT-2's ``encoder.json`` + ``vocab.bpe``; encodes as tiktoken's ``r50k_base``."""
        from .formats import from_gpt2
        return from_gpt2(encoder_json, vocab_bpe)

    def to_gpt2(self, directory: Union[str, os.PathLike]) -> None:
        """Write ``encoder.json`` and ``vocab.bpe`` into ``directory``."""
        from .formats import to_gpt2
        to_gpt2(self, directory)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self.to_dict() == other.to_dict()

