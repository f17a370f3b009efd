"""The peers' tokenizer files: Hugging Face ``tokenizer.json``, tiktoken ``.tiktoken`` rank
files and GPT-2's ``encoder.json`` + ``vocab.bpe``; reading and writing each.

Each import keeps the peer's own encoding rule (see :mod:`fastbpe.tokenizer`), so a loaded file
encodes exactly as the peer library does:

* tiktoken and GPT-2 files: ``merge_rule="token"`` (the pair whose concatenation has the lowest
  rank) with the whole-chunk lookup; ids are the ranks. Merges are derived for export.
* Hugging Face BPE: ``merge_rule="pair"`` (lowest merge rank), whole-chunk lookup when the file
  says ``ignore_merges``; its added tokens become special tokens.

Malformed files raise ``ValueError`` naming the file and the problem.
"""
import base64
import binascii
import json
import os
import warnings
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
import regex

from ._encode import derive_merges
from .fileio import write_atomic
from .chunking import check_pattern, pattern_source
from .tokenizer import Tokenizer, _bytes_to_text, _text_to_bytes

PathLike = Union[str, os.PathLike]

__all__ = [
    "read_tiktoken_ranks", "from_tiktoken", "to_tiktoken", "to_tiktoken_encoding", "openai",
    "OPENAI_ENCODINGS", "from_huggingface", "to_huggingface", "from_gpt2", "to_gpt2", "load_tokenizer",
]

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX = "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

# tiktoken's published split patterns and special tokens (tiktoken_ext/openai_public.py).
R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
OPENAI_ENCODINGS: Dict[str, Tuple[str, Dict[str, int]]] = {
    "r50k_base": (R50K_PATTERN, {ENDOFTEXT: 50256}),
    "p50k_base": (R50K_PATTERN, {ENDOFTEXT: 50256}),
    "p50k_edit": (R50K_PATTERN, {ENDOFTEXT: 50256, FIM_PREFIX: 50281, FIM_MIDDLE: 50282, FIM_SUFFIX: 50283}),
    "cl100k_base": ("cl100k", {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259,
                               FIM_SUFFIX: 100260, ENDOFPROMPT: 100276}),
    "o200k_base": ("o200k", {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}),
}
_TIKTOKEN_FILE = {"p50k_edit": "p50k_base"}

# Hugging Face's ByteLevel pre-tokenizer with use_regex=true splits with GPT-2's pattern.
HF_BYTELEVEL_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def _load_json(path: PathLike, what: str):
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{os.fspath(path)}: not a valid {what} (bad JSON: {exc})") from None


# ---- tiktoken -------------------------------------------------------------------------------


def read_tiktoken_ranks(path: PathLike) -> Dict[bytes, int]:
    """``{token bytes: rank}`` of a ``.tiktoken`` file (lines ``base64(token) rank``)."""
    ranks: Dict[bytes, int] = {}
    seen_ranks: Dict[int, int] = {}
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            fields = line.split()
            if len(fields) != 2:
                raise ValueError(f"{os.fspath(path)}, line {number}: expected 'base64-token rank', got {line[:60]!r}")
            try:
                token = base64.b64decode(fields[0], validate=True)
                rank = int(fields[1])
            except (binascii.Error, ValueError):
                raise ValueError(f"{os.fspath(path)}, line {number}: bad token or rank {line[:60]!r}") from None
            if not token:
                raise ValueError(f"{os.fspath(path)}, line {number}: empty token")
            if rank < 0 or rank >= 2**31 - 1:
                raise ValueError(f"{os.fspath(path)}, line {number}: rank {rank} out of range")
            if token in ranks:
                raise ValueError(f"{os.fspath(path)}, line {number}: token {token!r} appears twice")
            if rank in seen_ranks:
                raise ValueError(f"{os.fspath(path)}, line {number}: rank {rank} appears twice "
                                 f"(also on line {seen_ranks[rank]})")
            ranks[token] = rank
            seen_ranks[rank] = number
    if not ranks:
        raise ValueError(f"{os.fspath(path)}: no tokens (empty or truncated .tiktoken file)")
    return ranks


def _from_ranks(ranks: Mapping[bytes, int], pattern: str, special_tokens: Mapping[str, int],
                source: str) -> Tokenizer:
    """A tokenizer that encodes like tiktoken with these ranks (ids = ranks)."""
    size = max(ranks.values()) + 1
    tokens: List[bytes] = [b""] * size
    for token, rank in ranks.items():
        tokens[rank] = token
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise ValueError(f"{source}: byte 0x{missing[0]:02x} has no token, so some text could not be encoded")
    left, right, _ = derive_merges(tokens)
    for text, sid in special_tokens.items():
        if sid < size and tokens[sid]:
            raise ValueError(f"{source}: special token {text!r} has id {sid}, which a ranked token uses")
    return Tokenizer(tokens, np.stack([left, right], axis=1), pattern=pattern,
                     special_tokens=dict(special_tokens), merge_rule="token", whole_token_lookup=True)


def from_tiktoken(path: PathLike, pattern: str, special_tokens: Optional[Mapping[str, int]] = None) -> Tokenizer:
    """Load a ``.tiktoken`` rank file; ``pattern`` is the split regex (or a fastbpe pattern
    name), ``special_tokens`` maps their text to ids. See :func:`openai` for the presets."""
    check_pattern(pattern)
    ranks = read_tiktoken_ranks(path)
    return _from_ranks(ranks, pattern, dict(special_tokens or {}), os.fspath(path))


def openai(name: str, path: PathLike) -> Tokenizer:
    """One of OpenAI's encodings (``r50k_base``, ``p50k_base``, ``p50k_edit``, ``cl100k_base``,
    ``o200k_base``) from its ``.tiktoken`` file, or from a folder holding ``{name}.tiktoken``,
    with its published pattern and special tokens. Nothing is downloaded."""
    if name not in OPENAI_ENCODINGS:
        raise ValueError(f"unknown OpenAI encoding {name!r}; known: {sorted(OPENAI_ENCODINGS)}")
    path = Path(path)
    if path.is_dir():
        path = path / f"{_TIKTOKEN_FILE.get(name, name)}.tiktoken"
    pattern, specials = OPENAI_ENCODINGS[name]
    return from_tiktoken(path, pattern, specials)


def _tiktoken_ready(tok: Tokenizer, one_split: bool = True) -> None:
    if tok.unit != "bytes" or tok.word_start or tok.word_end:
        raise ValueError("only byte-level tokenizers without word markers can be exported to this format")
    if one_split and tok.split_stages:
        raise ValueError("this format has a single split pattern; the tokenizer splits in several stages")


def to_tiktoken(tok: Tokenizer, path: PathLike) -> None:
    """Write ``path`` (the ``.tiktoken`` ranks: id = rank) and ``path + ".json"`` (the split
    pattern as ``pat_str`` and the special tokens), both atomically.

    tiktoken encodes by its own rule (lowest rank of a concatenation, whole chunks first). For
    tokenizers read from tiktoken or GPT-2 files that is their rule; for tokenizers trained by
    fastbpe the ids agree with fastbpe's on real text (tested), since merged tokens are numbered
    in merge order; for imported Hugging Face vocabularies check on your text."""
    _tiktoken_ready(tok)
    lines = [base64.b64encode(t) + b" " + str(i).encode() for i, t in enumerate(tok.token_bytes) if t]
    write_atomic(path, b"\n".join(lines) + b"\n")
    sidecar = {"pat_str": pattern_source(tok.pattern), "special_tokens": tok.special_tokens}
    write_atomic(os.fspath(path) + ".json", json.dumps(sidecar, ensure_ascii=False, indent=1).encode())


def to_tiktoken_encoding(tok: Tokenizer, name: str = "fastbpe"):
    """A ``tiktoken.Encoding`` with this tokenizer's ranks, pattern and special tokens."""
    import tiktoken

    _tiktoken_ready(tok)
    ranks = {t: i for i, t in enumerate(tok.token_bytes) if t}
    return tiktoken.Encoding(name=name, pat_str=pattern_source(tok.pattern), mergeable_ranks=ranks,
                             special_tokens=dict(tok.special_tokens))


# ---- GPT-2 ------------------------------------------------------------------------------------


def _read_vocab_bpe(path: PathLike) -> List[Tuple[str, str]]:
    with open(path, "rb") as f:
        try:
            lines = f.read().decode("utf-8").split("\n")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{os.fspath(path)}: not UTF-8 ({exc})") from None
    if not lines or not lines[0].startswith("#version"):
        raise ValueError(f"{os.fspath(path)}: not a GPT-2 vocab.bpe (first line must be '#version: ...')")
    merges = []
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise ValueError(f"{os.fspath(path)}, line {number}: expected two tokens separated by a space, got {line[:60]!r}")
        merges.append((parts[0], parts[1]))
    return merges


def from_gpt2(encoder_json: PathLike, vocab_bpe: PathLike, pattern: str = R50K_PATTERN) -> Tokenizer:
    """GPT-2's ``encoder.json`` + ``vocab.bpe``, encoding like tiktoken's ``r50k_base``.

    The mergeable tokens are the 256 bytes and the merges' results; any other entry of
    ``encoder.json`` (``<|endoftext|>``) is a special token. Ids are ``encoder.json``'s.
    """
    encoder = _load_json(encoder_json, "GPT-2 encoder.json")
    if not isinstance(encoder, dict) or not encoder:
        raise ValueError(f"{os.fspath(encoder_json)}: expected a non-empty JSON object of token -> id")
    merges = _read_vocab_bpe(vocab_bpe)
    tokens_by_text: Dict[str, int] = {}
    for text, i in encoder.items():
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise ValueError(f"{os.fspath(encoder_json)}: token {text!r} has an invalid id {i!r}")
        tokens_by_text[text] = i
    byte_chars = [_bytes_to_text(bytes([b])) for b in range(256)]
    mergeable = set(byte_chars) | {a + b for a, b in merges}
    missing = [t for t in byte_chars if t not in tokens_by_text]
    if missing:
        raise ValueError(f"{os.fspath(encoder_json)}: the byte token {missing[0]!r} is missing")
    size = 1 + max(tokens_by_text[t] for t in mergeable if t in tokens_by_text)
    tokens: List[bytes] = [b""] * size
    specials: Dict[str, int] = {}
    for text, i in tokens_by_text.items():
        if text in mergeable:
            if tokens[i]:
                raise ValueError(f"{os.fspath(encoder_json)}: id {i} is used twice")
            tokens[i] = _text_to_bytes(text)
        else:
            specials[text] = i
    merge_ids = []
    for number, (a, b) in enumerate(merges):
        if a not in tokens_by_text or b not in tokens_by_text or a + b not in tokens_by_text:
            raise ValueError(f"{os.fspath(vocab_bpe)}: merge {number} ({a!r} {b!r}) uses a token "
                             f"missing from {os.fspath(encoder_json)}")
        merge_ids.append((tokens_by_text[a], tokens_by_text[b]))
    return Tokenizer(tokens, merge_ids, pattern=pattern, special_tokens=specials,
                     merge_rule="token", whole_token_lookup=True)


def to_gpt2(tok: Tokenizer, directory: PathLike) -> None:
    """Write ``encoder.json`` and ``vocab.bpe`` into ``directory`` (created if needed)."""
    _tiktoken_ready(tok)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    encoder = {_bytes_to_text(t): i for i, t in enumerate(tok.token_bytes) if t}
    for text, i in tok.special_tokens.items():
        encoder[text] = i
    lines = ["#version: 0.2"] + [f"{_bytes_to_text(tok.token_bytes[a])} {_bytes_to_text(tok.token_bytes[b])}"
                                 for a, b in tok.merge_ids.tolist()]
    write_atomic(directory / "encoder.json", json.dumps(encoder, ensure_ascii=False).encode("utf-8"))
    write_atomic(directory / "vocab.bpe", ("\n".join(lines) + "\n").encode("utf-8"))


# ---- Hugging Face ------------------------------------------------------------------------------


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
    stages: List[Tuple[str, bool]] = []
    for step in splits:
        if not isinstance(step, Mapping) or step.get("type") != "Split":
            raise ValueError(f"{source}: unsupported pre-tokenizer step {step!r:.80}")
        pattern = step.get("pattern")
        if not isinstance(pattern, Mapping) or not ("Regex" in pattern or "String" in pattern):
            raise ValueError(f"{source}: Split pattern must be {{'Regex': ...}} or {{'String': ...}}")
        behavior, invert = step.get("behavior"), bool(step.get("invert", False))
        if (behavior, invert) == ("Isolated", False):
            keep_gaps = True
        elif (behavior, invert) == ("Removed", True):
            keep_gaps = False
        else:
            raise ValueError(f"{source}: Split behavior {behavior!r} (invert={invert}) is not supported; "
                             "Isolated, or Removed with invert, is")
        stages.append((from_oniguruma_pattern(pattern["Regex"]) if "Regex" in pattern
                       else regex.escape(pattern["String"]), keep_gaps))
    if last.get("use_regex", True):
        stages.append((HF_BYTELEVEL_PATTERN, True))  # ByteLevel's own split (Isolated)
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


def from_huggingface(path: PathLike) -> Tokenizer:
    """A byte-level BPE ``tokenizer.json`` (a folder holding one works too), encoding exactly as
    ``tokenizers`` does: lowest merge rank first, the file's split pattern and normaliser, and
    its added tokens as special tokens (pass ``allowed_special="all"`` to match
    ``tokenizers``, which always splits them out)."""
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer.json"
    source = os.fspath(path)
    data = _load_json(path, "Hugging Face tokenizer.json")
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
    ids: Dict[str, int] = {}
    for text, i in vocab.items():
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise ValueError(f"{source}: vocab entry {text!r} has an invalid id {i!r}")
        ids[text] = i
    size = max(ids.values(), default=-1) + 1
    tokens: List[bytes] = [b""] * size
    for text, i in ids.items():
        if tokens[i]:
            raise ValueError(f"{source}: id {i} is used by two vocab entries")
        try:
            tokens[i] = _text_to_bytes(text)
        except ValueError:
            raise ValueError(f"{source}: vocab entry {text!r} is not a byte-level token") from None
        if not tokens[i]:
            raise ValueError(f"{source}: vocab entry {i} is empty")
    specials: Dict[str, int] = {}
    added = data.get("added_tokens") or []
    if not isinstance(added, list):
        raise ValueError(f"{source}: added_tokens must be a list")
    for entry in added:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("content"), str) \
                or not isinstance(entry.get("id"), int):
            raise ValueError(f"{source}: malformed added token {entry!r:.80}")
        content, i = entry["content"], entry["id"]
        if i < size and tokens[i]:
            if tokens[i] != content.encode("utf-8"):
                raise ValueError(f"{source}: added token {content!r} has id {i}, which the vocab uses for another token")
            tokens[i] = b""  # the added token takes the id; tokenizers splits it out before BPE
        specials[content] = i
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
    try:
        return Tokenizer(tokens, merge_ids, pattern=pattern, special_tokens=specials, merge_rule="pair",
                         whole_token_lookup=bool(model.get("ignore_merges", False)),
                         normalizer=normalizer, split_gaps=keep_gaps, split_stages=more_stages)
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None


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


def to_huggingface(tok: Tokenizer, path: PathLike) -> None:
    """Write a ``tokenizer.json`` that ``tokenizers.Tokenizer.from_file`` encodes identically
    (with ``add_special_tokens=False``; special tokens become added tokens)."""
    _tiktoken_ready(tok, one_split=False)
    merges = tok.merge_ids.tolist()
    if tok.merge_rule == "replay":
        produced = [tok._ids[tok.token_bytes[a] + tok.token_bytes[b]] for a, b in merges]
        if len(set(produced)) != len(produced):
            warnings.warn("some merges produce the same token twice; Hugging Face's encoder (lowest "
                          "rank first, no replay floor) can then differ from fastbpe's on rare words",
                          stacklevel=2)
    # A chunk that is a whole token maps to it in tiktoken's rule: HF's ignore_merges does that.
    ignore_merges = tok.whole_token_lookup or tok.merge_rule == "token"
    splits = [{"type": "Split", "pattern": {"Regex": oniguruma_pattern(pattern_source(pattern))},
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
            "vocab": {_bytes_to_text(t): i for i, t in enumerate(tok.token_bytes) if t},
            "merges": [[_bytes_to_text(tok.token_bytes[a]), _bytes_to_text(tok.token_bytes[b])] for a, b in merges],
        },
    }
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8"))


def load_tokenizer(path: PathLike) -> Tokenizer:
    """Any tokenizer file fastbpe reads, by its content: a fastbpe file, a Hugging Face
    ``tokenizer.json`` (or a folder holding one), or an OpenAI ``{name}.tiktoken`` file (its
    name picks the published pattern and special tokens)."""
    path = Path(path)
    if path.is_dir():
        return from_huggingface(path)
    stem = path.name[: -len(".tiktoken")] if path.name.endswith(".tiktoken") else None
    if stem is not None:
        if stem not in OPENAI_ENCODINGS:
            raise ValueError(f"{path}: a .tiktoken file needs its pattern; name it after one of "
                             f"{sorted(OPENAI_ENCODINGS)} or use Tokenizer.from_tiktoken")
        return openai(stem, path)
    data = _load_json(path, "tokenizer file")
    if isinstance(data, Mapping) and data.get("format") == "fastbpe":
        return Tokenizer.from_dict(data)
    if isinstance(data, Mapping) and "model" in data:
        return from_huggingface(path)
    raise ValueError(f"{path}: neither a fastbpe tokenizer file nor a Hugging Face tokenizer.json")
