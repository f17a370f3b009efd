"""Step 4 of encoding, the BPE model: token bytes, merges with the ids they make, the merge
rule and the whole-token lookup, and the compiled tables that run them.

Token ids index ``token_bytes`` (``b""`` marks an unused id: a rank gap of a tiktoken file, or
a special token's slot). Merge ``i`` joins ``merges[i, 0]`` and ``merges[i, 1]`` into
``made[i]``, the token of their concatenation. The merge rules (``"replay"``, ``"pair"``,
``"token"``) are those of :mod:`fastbpe.reference.encode`, run by ``fastbpe/_core/bpe.h``.

The compiled tables (``BPECore``) are built when the model is made: that is where the
vocabulary is indexed, the merges are checked and the ids they make are found, in C++, with no
Python dict of tokens or merges. A model read from a rank-only file (tiktoken's rule needs no
merge list) derives its merges only when they are asked for (writing a Hugging Face file).
"""
import threading
from typing import Dict, Iterable, List, Optional, Tuple

import numpy as np

from .._core.encode import MERGE_RULES, BPECore, derive_merges
from .vocab import token_list_lengths

__all__ = ["BPEModel", "MERGE_RULES", "checked_merge_array"]


def checked_merge_array(merges) -> np.ndarray:
    """Merges as an int64 ``(n, 2)`` or ``(n, 3)`` array (a third column: the id each merge
    makes, as the learner returns it); TypeError/ValueError for anything else."""
    if not isinstance(merges, np.ndarray):
        merges = list(merges)
    try:
        rows = np.asarray(merges) if len(merges) else np.zeros((0, 2), dtype=np.int64)
    except ValueError:  # rows of different lengths
        raise ValueError("merges must be (left, right) pairs of token ids") from None
    if rows.ndim != 2 or rows.shape[1] not in (2, 3):
        raise ValueError(f"merges must be (left, right) pairs of token ids, got an array of shape {rows.shape}")
    if rows.dtype == object:
        raise ValueError("merges hold ids that are not 64-bit integers")
    if not np.issubdtype(rows.dtype, np.integer) or (
            not isinstance(merges, np.ndarray) and any(type(v) is bool for row in merges for v in row)):
        # a float, bool or str id was silently truncated, taken as 0/1 or parsed before
        raise TypeError(f"merges must hold integer token ids, got {rows.dtype}")
    return rows.astype(np.int64, copy=False)


class BPEModel:
    """The BPE model of a tokenizer (step 4 of :meth:`fastbpe.Tokenizer.encode`).

    ``token_bytes``: bytes of every id. ``merges``: ``(left, right)`` or ``(left, right,
    made)`` rows in priority order, or None for a rank-only vocabulary (``merge_rule="token"``:
    derived on demand). ``whole_token_lookup``: a chunk that is a token maps straight to its id
    (tiktoken; Hugging Face's ``ignore_merges``). ``symbols``: the model is fed symbol ids
    (character-level tokenizers, word markers) and never looks whole chunks up. ``core_bytes``:
    what the compiled tables index instead of ``token_bytes`` (one entry per id), for a
    vocabulary whose merges do not make the plain concatenation (Hugging Face's
    ``continuing_subword_prefix``: :meth:`fastbpe.Tokenizer._marked_bytes`).

    >>> m = BPEModel([b"a", b"b", b"ab"], [(0, 1)])
    >>> m.made.tolist(), m.token_id(b"ab")
    ([2], 2)
    """

    def __init__(self, token_bytes: List[bytes], merges: Optional[Iterable[Tuple[int, int]]], *,
                 merge_rule: str = "replay", whole_token_lookup: bool = False, symbols: bool = False,
                 core_bytes: Optional[List[bytes]] = None):
        if merge_rule not in MERGE_RULES:
            raise ValueError(f"merge_rule must be one of {MERGE_RULES}, got {merge_rule!r}")
        if merges is None and merge_rule != "token":
            raise ValueError("only merge_rule='token' derives its merges from the vocabulary")
        self.token_bytes = token_bytes
        if core_bytes is not None and len(core_bytes) != len(token_bytes):
            raise ValueError("core_bytes needs one entry per token")
        self.core_bytes = core_bytes
        self.merge_rule = merge_rule
        if not isinstance(whole_token_lookup, (bool, np.bool_)):  # a str such as "none" is truthy
            raise TypeError(f"whole_token_lookup must be True or False, got {whole_token_lookup!r:.40}")
        self.whole_token_lookup = bool(whole_token_lookup)
        self.symbols = bool(symbols)
        self._merges: Optional[np.ndarray] = None
        rows = None if merges is None else checked_merge_array(merges)
        if rows is not None:
            self._merges = np.ascontiguousarray(rows[:, :2])
            # (tiktoken's rule never reads its merges, ranks decide; they are checked all the
            # same: merges that make tokens the vocabulary lacks mean a vocabulary cut short)
            self._check_in_vocabulary(self._merges)
        self._lock = threading.Lock()
        # a third column (the id each merge makes): checked by the core against the merge's bytes
        made = rows[:, 2] if rows is not None and rows.shape[1] == 3 and merge_rule != "token" else None
        if made is not None:
            outside = np.flatnonzero((made < 0) | (made >= len(token_bytes)))
            if len(outside):
                r = outside[0]
                raise ValueError(f"merge {r} says it makes token {made[r]}, which is not a token id")
        self.core = self._build_core(made)

    def _check_in_vocabulary(self, pairs: np.ndarray) -> None:
        """Every merge names two used ids (the core checks that their concatenation is a token)."""
        n = len(self.token_bytes)
        if not len(pairs):
            return
        inside = (pairs >= 0) & (pairs < n)
        if inside.all():
            empty = token_list_lengths(self.token_bytes) == 0
            inside = ~empty[pairs]
        if not inside.all():
            rank, side = np.argwhere(~inside)[0]
            raise ValueError(f"merge {rank} refers to unknown token id {pairs[rank, side]}")

    def _build_core(self, made: Optional[np.ndarray] = None) -> BPECore:
        # Without the lookup's semantics (tiktoken, ignore_merges) there is no whole-chunk table:
        # the "consistent" one (tokens BPE rebuilds from their own bytes) cost a BPE run per
        # token at load (0.15 s for qwen3's 151k tokens) and measured no faster encoding, since
        # the chunk cache memoizes the same chunks
        whole = "all" if self.whole_token_lookup and not self.symbols else "none"
        pairs = self._merges if self._merges is not None else np.zeros((0, 2), dtype=np.int64)
        left = np.ascontiguousarray(pairs[:, 0], dtype=np.int32)
        right = np.ascontiguousarray(pairs[:, 1], dtype=np.int32)
        indexed = self.token_bytes if self.core_bytes is None else self.core_bytes
        return BPECore(indexed, left, right, merge_rule=self.merge_rule, whole_token_lookup=whole,
                       made=None if made is None else made.astype(np.int32))

    @property
    def merges(self) -> np.ndarray:
        """int64 ``(n, 2)``: the merges in priority order (derived once for a rank-only model)."""
        if self._merges is None:
            with self._lock:
                if self._merges is None:
                    left, right, _ = derive_merges(self.token_bytes)
                    self._merges = np.stack([left, right], axis=1).astype(np.int64)
        return self._merges

    @property
    def made(self) -> np.ndarray:
        """int32: the id each merge makes."""
        if self.merge_rule != "token":
            return self.core.made
        pairs = self.merges
        return np.array([self.core.token_id(self.token_bytes[a] + self.token_bytes[b]) for a, b in pairs.tolist()],
                        dtype=np.int32)

    def token_id(self, token: bytes) -> int:
        """The id of the mergeable token with these bytes (as the compiled tables index them:
        ``core_bytes`` when given), or -1."""
        return self.core.token_id(bytes(token))

    @property
    def unused_ids(self) -> int:
        """How many ids have no token (``b""``), counted at the first call: the tokens never
        change, and ``len(tokenizer)`` asks (cl100k: 650 us a count)."""
        count = self.__dict__.get("_unused_ids")
        if count is None:
            count = self.__dict__["_unused_ids"] = self.token_bytes.count(b"")
        return count

    def ids(self) -> Dict[bytes, int]:
        """``{token bytes: id}`` of the mergeable tokens (a fresh dict)."""
        return {t: i for i, t in enumerate(self.token_bytes) if t}

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("core", None)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict) -> None:
        state.setdefault("core_bytes", None)
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self.core = self._build_core()
