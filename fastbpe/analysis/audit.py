"""What a vocabulary holds that text rarely or never reaches.

* **unreachable** tokens: the token's own text, encoded as ordinary text by the tokenizer
  itself, does not come back as that one token (the split pattern cuts it, or the merges
  build the text another way). Such a token is never produced from text, so a model trained
  on the tokenizer's output never sees it.
* tokens that are **not valid UTF-8** on their own (a piece of a multi-byte character): they
  only ever occur next to their other half, and cannot be encoded as text by themselves.
* tokens **never produced** on a given corpus: the under-trained candidates of Land and
  Bartolo (2024, "Fishing for Magikarp"): a token merged early (frequent in the tokenizer's
  corpus) but absent from the model's has an embedding row that training barely touched (the
  scatter-add backward gives absent tokens exactly zero gradient).
* how **digit runs** split: numbers 1 .. N encoded one by one; the split pattern caps a chunk
  at 1 or 3 digits (cl100k, o200k, Llama 3: ``\\p{N}{1,3}``; Qwen: single digits) or leaves
  digits to the merges (GPT-2).

Everything is computed in batches (``encode_batch``, NumPy), never one Python call per token.
"""
from itertools import chain
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..encode.tokenizer import Tokenizer
from ..split.bounds import chunk_bounds
from .common import cut_texts, read_texts, resolve_tokenizer, tokenizer_label
from .trace import show_piece

__all__ = ["audit", "reachability", "never_produced", "digit_splits"]


def _ordinary_ids(tokenizer: Tokenizer) -> np.ndarray:
    """Ids of the ordinary tokens (not special, not an unused slot)."""
    special = set(tokenizer.special_tokens.values())
    return np.array([i for i, t in enumerate(tokenizer.token_bytes) if t and i not in special], dtype=np.int64)


def _utf8_texts(tokenizer: Tokenizer, ids: np.ndarray):
    """The text of each token that is valid UTF-8, and the ids of those that are not (by what
    a token decodes to: a byte piece ``<0x80>`` of a ``byte_fallback`` vocabulary is the byte
    0x80, no text alone)."""
    decoded = tokenizer._decoded_token_bytes()
    texts, valid, invalid = [], [], []
    for i in ids.tolist():
        try:
            texts.append(decoded[i].decode("utf-8"))
            valid.append(i)
        except UnicodeDecodeError:
            invalid.append(i)
    return texts, np.array(valid, dtype=np.int64), np.array(invalid, dtype=np.int64)


def _base_ids(tokenizer: Tokenizer) -> set:
    """Ids of the base symbols, which no merge makes: one byte (byte-level) or one character
    (character-level), with its continuing-subword prefix or end-of-word suffix if it has one,
    and the ``<0xNN>`` pieces of a ``byte_fallback`` vocabulary."""
    base = set(tokenizer._byte_token_ids().tolist()) if tokenizer.byte_fallback else set()
    prefix = tokenizer.markers.continuing_subword_prefix.encode("utf-8")
    suffix = tokenizer.markers.end_of_word_suffix.encode("utf-8")
    for i, token in enumerate(tokenizer.token_bytes):
        if prefix and token.startswith(prefix) and len(token) > len(prefix):
            token = token[len(prefix):]
        if suffix and token.endswith(suffix) and len(token) > len(suffix):
            token = token[:-len(suffix)]
        if tokenizer.unit == "bytes":
            one = len(token) == 1
        else:
            try:
                one = len(token.decode("utf-8")) == 1
            except UnicodeDecodeError:
                one = False
        if one:
            base.add(i)
    return base


def _flat(lists: List[List[int]]):
    """Many id lists as one flat int64 array and their lengths."""
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum()))
    return flat, lengths


def _tokens_carry_markers(tokenizer: Tokenizer) -> bool:
    """Whether tokens spell markers besides their text (word markers, SentencePiece's ``▁`` for
    a space, an end-of-word suffix such as CLIP's ``</w>``): a token is then not the encoding
    of its own spelling, nor is a word's middle ever one chunk's whole encoding, so which
    tokens "their own text reaches" means nothing there. (A Markers object is true when it has
    any of them.)"""
    return bool(tokenizer.markers)


def reachability(tokenizer, *, workers: Optional[int] = None) -> Dict[str, Any]:
    """Which ordinary tokens their own text reaches (a token of a character-level tokenizer with
    word markers is checked as its text without them). Returns ``unreachable`` (ids, ascending),
    ``split_by_pattern`` (the unreachable ones whose text the pattern cuts into several chunks;
    the rest are built otherwise by the merges), ``not_utf8`` (ids of tokens that are not valid
    UTF-8 on their own, left out of the check) and the counts."""
    tokenizer = resolve_tokenizer(tokenizer)
    if _tokens_carry_markers(tokenizer):
        raise ValueError("reachability needs a tokenizer whose tokens spell their text alone (no word markers, "
                         "space marker or end-of-word suffix)")
    ids = _ordinary_ids(tokenizer)
    texts, valid, invalid = _utf8_texts(tokenizer, ids)
    # one thread by default: the texts are a few bytes each, so threads would only contend;
    # lists, not arrays: on texts this short a NumPy array per text costs more than the encoding
    encoded = tokenizer.encode_batch(texts, workers=workers or 1, disallowed_special=())
    flat, lengths = _flat(encoded)
    first = np.full(len(lengths), -1, dtype=np.int64)
    nonempty = lengths > 0
    first[nonempty] = flat[(np.cumsum(lengths) - lengths)[nonempty]]
    reached = (lengths == 1) & (first == valid)
    unreachable = valid[~reached]
    split = [int(i) for i in unreachable.tolist() if _chunk_count(tokenizer, texts[int(np.searchsorted(valid, i))]) > 1]
    return {
        "tokens": int(len(ids)),
        "special": len(tokenizer.special_tokens),
        "checked": int(len(valid)),
        "unreachable": unreachable.tolist(),
        "split_by_pattern": split,
        "not_utf8": invalid.tolist(),
    }


def _chunk_count(tokenizer: Tokenizer, text: str) -> int:
    _, starts, _ = chunk_bounds(text, tokenizer.pattern, tokenizer.split_gaps)
    return len(starts)


def never_produced(tokenizer, corpus=None, *, texts: Optional[Sequence[str]] = None, limit: Optional[int] = None,
                   workers: Optional[int] = None) -> Dict[str, Any]:
    """The ordinary tokens that encoding ``corpus`` (files, folders or globs; or ``texts``, a
    list of strings) never produces, ascending by id (for a merge-ranked vocabulary, the
    earliest merged first: the strongest under-trained candidates), and how many times each
    token was produced. ``limit``: bytes of the files to read at most (the last line read is cut
    at a character boundary: a limit, not a rough size)."""
    tokenizer = resolve_tokenizer(tokenizer)
    if (corpus is None) == (texts is None):
        raise ValueError("give the corpus as files or as texts=[...], one of the two")
    if texts is None:
        texts = read_texts(corpus, limit)  # (whole lines, the last one past the limit)
        texts = texts if limit is None else cut_texts(texts, limit)
    elif isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a list of str")
    size = max(len(tokenizer.token_bytes), *(v + 1 for v in tokenizer.special_tokens.values())) \
        if tokenizer.special_tokens else len(tokenizer.token_bytes)
    counts = np.zeros(size, dtype=np.int64)
    for ids in tokenizer.encode_batch(texts, workers=workers, disallowed_special=(), as_numpy=True):
        counts += np.bincount(ids.astype(np.int64), minlength=size)[:size]
    ordinary = _ordinary_ids(tokenizer)
    never = ordinary[counts[ordinary] == 0]
    return {
        "corpus_bytes": sum(len(t.encode("utf-8", "surrogatepass")) for t in texts),
        "corpus_tokens": int(counts.sum()),
        "tokens": int(len(ordinary)),
        "never": never.tolist(),
        "counts": counts,
    }


DIGITS_UP_TO = 10**7  # (the default: a few seconds)
MAX_DIGITS_UP_TO = 10**9


def digit_splits(tokenizer, up_to: int = DIGITS_UP_TO, *, block: int = 1_000_000) -> List[Dict[str, Any]]:
    """How the numbers 1 .. ``up_to`` split, by their number of digits: how many tokens they take
    (mean, max, how many are one token) and the commonest split (digits per token, e.g. ``3+3+1``).

    The numbers are encoded in blocks, one per line: a newline is a chunk of its own under every
    pattern fastbpe knows, so each line's tokens are that number's alone.
    """
    tokenizer = resolve_tokenizer(tokenizer)
    for name, value in (("up_to", up_to), ("block", block)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if up_to > MAX_DIGITS_UP_TO:  # (every number is encoded: 10**7 takes seconds, 10**12 would take days)
        raise ValueError(f"up_to must be at most {MAX_DIGITS_UP_TO:,}, got {up_to:,}")
    newline = tokenizer.encode_ordinary("\n")
    if len(newline) != 1:
        raise DigitSplitsUnmeasured(f"digit splits are measured a line a number, which needs a newline that is one "
                                    f"token alone; this tokenizer encodes it as {len(newline)} (SentencePiece's "
                                    "models do: use --no-digits, or digits_up_to=None)")
    newline_id = newline[0]
    length_of = np.array([len(t) for t in tokenizer.token_bytes] + [0] * len(tokenizer.special_tokens), dtype=np.int64)
    stats: Dict[int, Dict[str, Any]] = {}
    start = 1
    while start <= up_to:
        stop = min(up_to, start + block - 1)
        numbers = np.arange(start, stop + 1)
        text = "\n".join(map(str, numbers.tolist())) + "\n"
        ids = tokenizer.encode_to_numpy(text, disallowed_special=()).astype(np.int64)
        ends = np.flatnonzero(ids == newline_id)
        if len(ends) != len(numbers):
            raise RuntimeError("a newline merged with a digit: the per-number split cannot be read")
        begins = np.concatenate([[0], ends[:-1] + 1])
        tokens = ends - begins
        # the split's shape as one integer: digits of each token in base 16, first token highest
        is_digit = np.ones(len(ids), dtype=bool)
        is_digit[ends] = False
        owner = np.repeat(np.arange(len(numbers)), tokens + 1)[is_digit]
        position = np.arange(len(ids))[is_digit] - begins[owner]
        power = (tokens[owner] - 1 - position).astype(np.int64)
        shape = np.zeros(len(numbers), dtype=np.int64)
        np.add.at(shape, owner, length_of[ids[is_digit]] << (4 * power))
        digits = np.floor(np.log10(numbers)).astype(np.int64) + 1
        for d in np.unique(digits).tolist():
            mask = digits == d
            entry = stats.setdefault(d, {"digits": d, "numbers": 0, "tokens": 0, "max_tokens": 0,
                                         "one_token": 0, "longest_token": 0, "shapes": {}})
            pieces = length_of[ids[is_digit]][mask[owner]]
            entry["longest_token"] = max(entry["longest_token"], int(pieces.max()))
            entry["numbers"] += int(mask.sum())
            entry["tokens"] += int(tokens[mask].sum())
            entry["max_tokens"] = max(entry["max_tokens"], int(tokens[mask].max()))
            entry["one_token"] += int((tokens[mask] == 1).sum())
            keys, counts = np.unique(shape[mask], return_counts=True)
            for key, count in zip(keys.tolist(), counts.tolist()):
                entry["shapes"][key] = entry["shapes"].get(key, 0) + count
        start = stop + 1
    rows = []
    for d in sorted(stats):
        entry = stats[d]
        key, count = max(entry["shapes"].items(), key=lambda kv: (kv[1], -kv[0]))
        rows.append({
            "digits": d,
            "numbers": entry["numbers"],
            "mean_tokens": entry["tokens"] / entry["numbers"],
            "max_tokens": entry["max_tokens"],
            "longest_token": entry["longest_token"],
            "one_token": entry["one_token"],
            "commonest_split": _shape_text(key),
            "commonest_share": count / entry["numbers"],
            "splits": len(entry["shapes"]),
        })
    return rows


def _shape_text(key: int) -> str:
    """``0x331`` -> ``3+3+1``: the digits of each token, first token first."""
    parts = []
    while key:
        parts.append(key & 15)
        key >>= 4
    return "+".join(str(p) for p in reversed(parts))


def audit(tokenizer, *, corpus=None, texts: Optional[Sequence[str]] = None, corpus_limit: Optional[int] = None, digits_up_to: Optional[int] = DIGITS_UP_TO,
          label: Optional[str] = None, examples: int = 10, workers: Optional[int] = None) -> Dict[str, Any]:
    """Every check of this module for one tokenizer (a name, a path or a Tokenizer):
    reachability, invalid UTF-8, never produced on ``corpus`` (files) or ``texts`` (when given), digit splits up to
    ``digits_up_to`` (None: skipped; where they cannot be read apart, ``digits_not_measured`` says why).
    ``examples``: how many token texts to show per list."""
    name = label or tokenizer_label(tokenizer)
    tokenizer = resolve_tokenizer(tokenizer)

    def shown(ids: Sequence[int]) -> List[Dict[str, Any]]:
        return [{"id": int(i), "token": show_piece(tokenizer.token_bytes[int(i)])}
                for i in list(ids)[:examples]]

    ordinary = _ordinary_ids(tokenizer)
    _, _, invalid = _utf8_texts(tokenizer, ordinary)
    result: Dict[str, Any] = {
        "tokenizer": name,
        "vocab_size": tokenizer.vocab_size,
        "ordinary_tokens": len(ordinary),
        "special_tokens": len(tokenizer.special_tokens),
        "not_utf8": len(invalid),
        "not_utf8_ids": invalid.tolist(),
        "not_utf8_examples": shown(invalid.tolist()),
    }
    reach = {"unreachable": [], "not_utf8": invalid.tolist()}
    if not _tokens_carry_markers(tokenizer):  # (meaningless where they do)
        reach = reachability(tokenizer, workers=workers)
        result.update({
            "unreachable": len(reach["unreachable"]),
            "unreachable_ids": reach["unreachable"],
            "unreachable_split_by_pattern": len(reach["split_by_pattern"]),
            "unreachable_examples": shown(reach["unreachable"]),
        })
    if corpus is not None or texts is not None:
        seen = never_produced(tokenizer, corpus, texts=texts, limit=corpus_limit, workers=workers)
        # under-trained candidates: merged tokens (no base symbol) that text can produce
        left_out = set(reach["unreachable"]) | set(reach["not_utf8"]) | _base_ids(tokenizer)
        candidates = [i for i in seen["never"] if i not in left_out]
        result.update({
            "corpus_bytes": seen["corpus_bytes"],
            "corpus_tokens": seen["corpus_tokens"],
            "never_produced": len(seen["never"]),
            "never_produced_ids": seen["never"],
            "never_produced_candidates": len(candidates),
            "never_produced_examples": shown(candidates),
        })
    if digits_up_to is not None:
        try:
            result["digits"] = digit_splits(tokenizer, digits_up_to)
        except DigitSplitsUnmeasured as exc:  # (one tokenizer of several: the others are still audited)
            result["digits_not_measured"] = str(exc)
    return result


class DigitSplitsUnmeasured(ValueError):
    """:func:`digit_splits` cannot read one number's tokens apart for this tokenizer."""


def summary_row(result: Dict[str, Any]) -> Dict[str, Any]:
    """One line of the audit table for a tokenizer; its last column, ``tokens_N_digits``, is the
    mean tokens of the N-digit numbers for the longest N whose numbers were all encoded."""
    row = {
        "tokenizer": result["tokenizer"],
        "vocab": result["vocab_size"],
        "special": result["special_tokens"],
        "not_utf8": result["not_utf8"],
        "unreachable": result.get("unreachable"),
        "by_pattern": result.get("unreachable_split_by_pattern"),
    }
    if "never_produced" in result:
        row["never_produced"] = result["never_produced"]
        row["candidates"] = result["never_produced_candidates"]
    if "digits" in result:
        by = {d["digits"]: d for d in result["digits"]}
        row["longest_digit_token"] = max((d["longest_token"] for d in result["digits"]), default=0)
        # the longest length of which every number was encoded (up to 10**7: the 7-digit ones,
        # not 10,000,000 alone), or the longest there is when none is whole
        whole = [d for d, entry in by.items() if entry["numbers"] == 9 * 10 ** (d - 1)]
        if by:
            longest = max(whole or by)
            row[f"tokens_{longest}_digits"] = by[longest]["mean_tokens"]
    return row
