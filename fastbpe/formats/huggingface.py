"""Hugging Face ``tokenizer.json`` files of byte-level BPE models: reading and writing.

A loaded file encodes exactly as ``tokenizers`` does: ``merge_rule="pair"`` (lowest merge rank
first), whole-chunk lookup when the file says ``ignore_merges``, the file's split stages and
normaliser; its added tokens become special tokens. The regex dialect differs (``tokenizers``
runs Oniguruma): :func:`oniguruma_pattern` and :func:`from_oniguruma_pattern` convert.
"""
import os
import warnings
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple, Union

import regex

from ..fileio import json_bytes, read_json, write_atomic
from ..split.patterns import GPT2_ORIGINAL_PATTERN, source
from .bytelevel import check_byte_level, text_to_token, token_to_text
from .ids import check_id, check_special_ids, table_size

__all__ = ["read", "write", "oniguruma_pattern", "from_oniguruma_pattern"]

PathLike = Union[str, os.PathLike]

# A split regex spelled like a name ("abc") would select fastbpe's pattern of that name, or be
# refused as an unknown one; the file means the regex.
_NAME_LIKE = regex.compile(r"[A-Za-z][A-Za-z0-9_\-]*")


def _hf_pattern(pre: Mapping, source: str) -> List[Tuple[str, bool]]:
    """The ``(split regex, keep_gaps)`` stages of a byte-level pre-tokenizer, in order."""
    if not isinstance(pre, Mapping):
        raise ValueError(f"{source}: no pre_tokenizer; only byte-level BPE files are supported")
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]
    if not isinstance(steps, list) or not steps:
        raise ValueError(f"{source}: malformed pre_tokenizer Sequence")
    *splits, last = steps
    if not isinstance(last, Mapping) or last.get("type") != "ByteLevel":
        raise ValueError(f"{source}: the pre_tokenizer must end with ByteLevel (byte-level BPE)")
    if last.get("add_prefix_space"):
        raise ValueError(f"{source}: ByteLevel with add_prefix_space=true is not supported")
    for key in ("add_prefix_space", "use_regex"):
        if not isinstance(last.get(key, False), bool):
            raise ValueError(f"{source}: ByteLevel {key} must be true or false")
    stages: List[Tuple[str, bool]] = []
    for step in splits:
        if not isinstance(step, Mapping) or step.get("type") != "Split":
            raise ValueError(f"{source}: unsupported pre-tokenizer step {step!r:.80}")
        pattern = step.get("pattern")
        if not isinstance(pattern, Mapping) or not ("Regex" in pattern or "String" in pattern) \
                or not isinstance(pattern.get("Regex", pattern.get("String")), str):
            raise ValueError(f"{source}: Split pattern must be {{'Regex': str}} or {{'String': str}}")
        behavior, invert = step.get("behavior"), bool(step.get("invert", False))
        if (behavior, invert) == ("Isolated", False):
            keep_gaps = True
        elif (behavior, invert) == ("Removed", True):
            keep_gaps = False
        else:
            raise ValueError(f"{source}: Split behavior {behavior!r} (invert={invert}) is not supported; "
                             "Isolated, or Removed with invert, is")
        text = from_oniguruma_pattern(pattern["Regex"]) if "Regex" in pattern else regex.escape(pattern["String"])
        if _NAME_LIKE.fullmatch(text):
            text = f"(?:{text})"  # a regex, not the name of one of fastbpe's patterns
        stages.append((text, keep_gaps))
    if last.get("use_regex", True):
        stages.append((GPT2_ORIGINAL_PATTERN, True))  # ByteLevel's own split (Isolated)
    if not stages:
        raise ValueError(f"{source}: no split at all (ByteLevel without use_regex and no Split)")
    for pattern_text, _ in stages:
        try:
            regex.compile(pattern_text)
        except regex.error as exc:
            raise ValueError(f"{source}: split pattern {pattern_text!r:.80} does not compile: {exc}") from None
    return stages


def _hf_normalizer(norm, source: str) -> Optional[str]:
    if norm is None:
        return None
    if isinstance(norm, Mapping) and norm.get("type") == "Sequence":
        inner = norm.get("normalizers")
        if isinstance(inner, list) and len(inner) == 0:
            return None
        if isinstance(inner, list) and len(inner) == 1:
            return _hf_normalizer(inner[0], source)
    if isinstance(norm, Mapping) and norm.get("type") in ("NFC", "NFD", "NFKC", "NFKD"):
        return norm["type"]
    raise ValueError(f"{source}: unsupported normalizer {norm!r:.80} (supported: none, NFC, NFD, NFKC, NFKD)")


def read(path: PathLike) -> dict:
    """A byte-level BPE ``tokenizer.json`` (a folder holding one works too), encoding exactly as
    ``tokenizers`` does: lowest merge rank first, the file's split pattern and normaliser, and
    its added tokens as special tokens (pass ``allowed_special="all"`` to match
    ``tokenizers``, which always splits them out)."""
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer.json"
    source = os.fspath(path)
    data = read_json(path, "Hugging Face tokenizer.json")
    if not isinstance(data, Mapping):
        raise ValueError(f"{source}: expected a JSON object")
    model = data.get("model")
    if not isinstance(model, Mapping) or model.get("type", "BPE") != "BPE":
        raise ValueError(f"{source}: the model must be BPE")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise ValueError(f"{source}: {key}={model[key]!r} is not supported (byte-level BPE only)")
    if model.get("byte_fallback") or model.get("dropout"):
        raise ValueError(f"{source}: byte_fallback and dropout are not supported")
    vocab, merges = model.get("vocab"), model.get("merges")
    if not isinstance(vocab, Mapping) or not isinstance(merges, list):
        raise ValueError(f"{source}: the model needs a 'vocab' object and a 'merges' list")
    (pattern, keep_gaps), *more_stages = _hf_pattern(data.get("pre_tokenizer"), source)
    normalizer = _hf_normalizer(data.get("normalizer"), source)
    if not isinstance(model.get("ignore_merges", False), bool):
        raise ValueError(f"{source}: ignore_merges must be true or false")
    ids: Dict[str, int] = {text: check_id(i, f"{source}: vocab entry {text!r}") for text, i in vocab.items()}
    added = data.get("added_tokens") or []
    if not isinstance(added, list):
        raise ValueError(f"{source}: added_tokens must be a list")
    specials: Dict[str, int] = {}
    for entry in added:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("content"), str) or not entry["content"]:
            raise ValueError(f"{source}: malformed added token {entry!r:.80}")
        content = entry["content"]
        if content in specials:
            raise ValueError(f"{source}: the added token {content!r} is listed twice")
        specials[content] = check_id(entry.get("id"), f"{source}: added token {content!r}")
    check_special_ids(specials, source)
    # ids index a table: refuse far-off ids before allocating it (fastbpe.formats.ids)
    size = table_size(max(ids.values(), default=-1), len(ids), len(specials), source)
    tokens: List[bytes] = [b""] * size
    for text, i in ids.items():
        if tokens[i]:
            raise ValueError(f"{source}: id {i} is used by two vocab entries")
        try:
            tokens[i] = text_to_token(text)
        except ValueError:
            raise ValueError(f"{source}: vocab entry {text!r} is not a byte-level token") from None
        if not tokens[i]:
            raise ValueError(f"{source}: vocab entry {i} is empty")
    for content, i in specials.items():
        if i < size and tokens[i]:
            if tokens[i] != content.encode("utf-8"):
                raise ValueError(f"{source}: added token {content!r} has id {i}, which the vocab uses for another token")
            tokens[i] = b""  # the added token takes the id; tokenizers splits it out before BPE
    merge_ids = []
    for number, merge in enumerate(merges):
        if isinstance(merge, str):
            parts = merge.split(" ")
        elif isinstance(merge, list):
            parts = merge
        else:
            parts = []
        if len(parts) != 2 or not all(isinstance(p, str) for p in parts):
            raise ValueError(f"{source}: merge {number} is not a pair of tokens: {merge!r:.80}")
        a, b = parts
        if a not in ids or b not in ids or a + b not in ids:
            raise ValueError(f"{source}: merge {number} ({a!r}, {b!r}) uses a token missing from the vocab")
        merge_ids.append((ids[a], ids[b]))
    missing = [b for b in range(256) if bytes([b]) not in set(t for t in tokens if len(t) == 1)]
    if missing:
        raise ValueError(f"{source}: byte 0x{missing[0]:02x} has no token, which byte-level BPE needs")
    return dict(tokens=tokens, merges=merge_ids, pattern=pattern, special_tokens=specials, merge_rule="pair",
                whole_token_lookup=bool(model.get("ignore_merges", False)),
                normalizer=normalizer, split_gaps=keep_gaps, split_stages=more_stages)


_POSSESSIVE_INTERVAL = regex.compile(r"(\\[pP]\{[^}]*\}|\[(?:\\.|[^\]\\])*\]|\\.|[^\\()|])(\{\d+(?:,\d*)?\})\+")


def oniguruma_pattern(pattern: str) -> str:
    r"""``pattern`` as Hugging Face's regex engine (Oniguruma, Ruby syntax) reads it the same.

    Oniguruma takes ``X{n,m}+`` as ``(X{n,m})+`` rather than a possessive interval, so such
    intervals become atomic groups (same meaning in both engines). ``?+ *+ ++`` are possessive
    in both and stay.

    >>> print(oniguruma_pattern(r"\p{N}{1,3}+|[ab]{2}+|x"))
    (?>\p{N}{1,3})|(?>[ab]{2})|x
    """
    converted = _POSSESSIVE_INTERVAL.sub(lambda m: f"(?>{m.group(1)}{m.group(2)})", pattern)
    if regex.search(r"\)\{\d+(?:,\d*)?\}\+", converted):
        raise ValueError(f"cannot express the possessive interval of a group in {pattern!r} for Hugging Face")
    return converted


def from_oniguruma_pattern(pattern: str) -> str:
    r"""The reverse of :func:`oniguruma_pattern`: Oniguruma's ``X{n,m}+`` (one or more runs of
    ``X{n,m}``) spelled for the ``regex`` module, where it would mean a possessive interval.

    >>> print(from_oniguruma_pattern(r"\p{N}{1,3}+|a"))
    (?:\p{N}{1,3})+|a
    """
    return _POSSESSIVE_INTERVAL.sub(lambda m: f"(?:{m.group(1)}{m.group(2)})+", pattern)


def write(tok, path: PathLike) -> None:
    """Write a ``tokenizer.json`` that ``tokenizers.Tokenizer.from_file`` encodes identically
    (with ``add_special_tokens=False``; special tokens become added tokens)."""
    check_byte_level(tok, one_split=False)
    merges = tok.merge_ids.tolist()
    if tok.merge_rule == "replay":
        ids = {t: i for i, t in enumerate(tok.token_bytes) if t}
        produced = [ids[tok.token_bytes[a] + tok.token_bytes[b]] for a, b in merges]
        if len(set(produced)) != len(produced):
            warnings.warn("some merges produce the same token twice; Hugging Face's encoder (lowest "
                          "rank first, no replay floor) can then differ from fastbpe's on rare words",
                          stacklevel=2)
    # A chunk that is a whole token maps to it in tiktoken's rule: HF's ignore_merges does that.
    ignore_merges = tok.whole_token_lookup or tok.merge_rule == "token"
    splits = [{"type": "Split", "pattern": {"Regex": oniguruma_pattern(source(pattern))},
               "behavior": "Isolated" if keep_gaps else "Removed", "invert": not keep_gaps}
              for pattern, keep_gaps in [(tok.pattern, tok.split_gaps), *tok.split_stages]]
    data = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for s, i in sorted(tok.special_tokens.items(), key=lambda kv: kv[1])
        ],
        "normalizer": {"type": tok.normalizer} if tok.normalizer else None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            *splits, {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            "ignore_merges": ignore_merges,
            "vocab": {token_to_text(t): i for i, t in enumerate(tok.token_bytes) if t},
            "merges": [[token_to_text(tok.token_bytes[a]), token_to_text(tok.token_bytes[b])] for a, b in merges],
        },
    }
    write_atomic(path, json_bytes(data, indent=1))
