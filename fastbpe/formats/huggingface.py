"""Hugging Face ``tokenizer.json`` files of byte-level BPE models: reading and writing.

A loaded file encodes exactly as ``tokenizers`` does: ``merge_rule="pair"`` (lowest merge rank
first), whole-chunk lookup when the file says ``ignore_merges``, the file's split stages and
normaliser, the model's ``end_of_word_suffix`` and ``continuing_subword_prefix``; its added
tokens become special tokens that keep their matching options. The regex dialect differs
(``tokenizers`` runs Oniguruma): :func:`oniguruma_pattern` and :func:`from_oniguruma_pattern`
convert.
"""
import collections
import itertools
import json
import os
import warnings
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
import regex

from ..fileio import json_bytes, read_json, write_atomic
from ..split.patterns import GPT2_ORIGINAL_PATTERN, source
from .._core.encode import lookup_tokens, scan_bpe_json
from .bytelevel import check_byte_level, code_point_bytes, text_byte_values, texts_to_tokens, token_to_text
from .ids import ID_LIMIT, check_id, check_special_ids, table_size

__all__ = ["read", "write", "oniguruma_pattern", "from_oniguruma_pattern"]

PathLike = Union[str, os.PathLike]

# A split regex spelled like a name ("abc") would select fastbpe's pattern of that name, or be
# refused as an unknown one; the file means the regex.
_NAME_LIKE = regex.compile(r"[A-Za-z][A-Za-z0-9_\-]*")


# What the whole piece as one chunk is, for a ByteLevel without its regex and no Split.
WHOLE_PIECE = r"(?s:.+)"


def _split_stage(step: Mapping, source: str) -> Tuple[str, bool]:
    """A ``Split`` pre-tokenizer as a ``(regex, keep_gaps)`` stage."""
    pattern = step.get("pattern")
    if not isinstance(pattern, Mapping) or not ("Regex" in pattern or "String" in pattern) \
            or not isinstance(pattern.get("Regex", pattern.get("String")), str):
        raise ValueError(f"{source}: pre_tokenizer Split pattern must be {{'Regex': str}} or {{'String': str}}")
    behavior, invert = step.get("behavior"), bool(step.get("invert", False))
    if (behavior, invert) == ("Isolated", False):
        keep_gaps = True
    elif (behavior, invert) == ("Removed", True):
        keep_gaps = False
    else:
        raise ValueError(f"{source}: pre_tokenizer Split behavior {behavior!r} (invert={invert}) is not supported; "
                         "Isolated, or Removed with invert, is")
    text = from_oniguruma_pattern(pattern["Regex"]) if "Regex" in pattern else regex.escape(pattern["String"])
    if _NAME_LIKE.fullmatch(text):
        text = f"(?:{text})"  # a regex, not the name of one of fastbpe's patterns
    return text, keep_gaps


def _hf_splitter(pre: Mapping, source: str) -> Tuple[List[Tuple[str, bool]], bool]:
    """The ``(split regex, keep_gaps)`` stages of a byte-level pre-tokenizer, in order, and
    whether a space goes before each piece (``ByteLevel(add_prefix_space=True)``)."""
    if not isinstance(pre, Mapping):
        raise ValueError(f"{source}: no pre_tokenizer; only byte-level BPE files are supported")
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]
    if not isinstance(steps, list) or not steps:
        raise ValueError(f"{source}: malformed pre_tokenizer Sequence")
    *splits, last = steps
    if not isinstance(last, Mapping) or last.get("type") != "ByteLevel":
        raise ValueError(f"{source}: the pre_tokenizer must end with ByteLevel (byte-level BPE), "
                         f"got {last!r:.80}")
    for key in ("add_prefix_space", "use_regex"):
        if not isinstance(last.get(key, False), bool):
            raise ValueError(f"{source}: pre_tokenizer ByteLevel {key} must be true or false")
    prefix_space = last.get("add_prefix_space", False)
    if prefix_space and splits:
        # ByteLevel would put its space before every chunk of the Splits, not before the text
        raise ValueError(f"{source}: pre_tokenizer ByteLevel with add_prefix_space=true after a Split is not "
                         "supported (only as the whole pre-tokenizer)")
    stages: List[Tuple[str, bool]] = []
    for step in splits:
        if not isinstance(step, Mapping) or step.get("type") != "Split":
            raise ValueError(f"{source}: unsupported pre_tokenizer step {step!r:.80} (supported: Split, then ByteLevel)")
        stages.append(_split_stage(step, source))
    if last.get("use_regex", True):
        stages.append((GPT2_ORIGINAL_PATTERN, True))  # ByteLevel's own split (Isolated)
    if not stages:
        stages.append((WHOLE_PIECE, True))  # ByteLevel alone without its regex: one chunk per piece
    for pattern_text, _ in stages:
        try:
            regex.compile(pattern_text)
        except regex.error as exc:
            raise ValueError(f"{source}: pre_tokenizer split pattern {pattern_text!r:.80} does not compile: "
                             f"{exc}") from None
    return stages, prefix_space


def _has_normalizer(norm) -> bool:
    """Whether a ``normalizer`` object changes anything (an empty Sequence does not). The steps
    themselves are checked where they are run (:mod:`fastbpe.encode.normalizers`)."""
    if isinstance(norm, Mapping) and norm.get("type") == "Sequence" and isinstance(norm.get("normalizers"), list):
        return any(_has_normalizer(step) for step in norm["normalizers"])
    return norm is not None


def _added_tokens(data: Mapping, source: str) -> Tuple[Dict[str, int], Dict[str, Dict[str, bool]]]:
    """``{content: id}`` of the added tokens, which fastbpe encodes as special tokens (split
    out of the text before anything else, as ``tokenizers`` does with every added token), and
    ``{content: options}``: how each is matched (``single_word``, ``lstrip``, ``rstrip``,
    ``normalized``; :class:`fastbpe.encode.special.AddedTokenSplitter`)."""
    added = data.get("added_tokens") or []
    if not isinstance(added, list):
        raise ValueError(f"{source}: added_tokens must be a list")
    specials: Dict[str, int] = {}
    options: Dict[str, Dict[str, bool]] = {}
    for entry in added:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("content"), str) or not entry["content"]:
            raise ValueError(f"{source}: malformed added token {entry!r:.80}")
        content = entry["content"]
        if content in specials:
            raise ValueError(f"{source}: the added token {content!r} is listed twice")
        # tokenizers' default: an added token that is not special is matched in normalised text
        flags = {"normalized": entry.get("normalized", not entry.get("special", False)),
                 **{flag: entry.get(flag, False) for flag in ("single_word", "lstrip", "rstrip")}}
        for flag, value in flags.items():
            if not isinstance(value, bool):
                raise ValueError(f"{source}: added token {content!r} {flag} must be true or false, got {value!r:.20}")
        specials[content] = check_id(entry.get("id"), f"{source}: added token {content!r}")
        options[content] = {flag: True for flag, value in flags.items() if value}
    return check_special_ids(specials, source), {name: flags for name, flags in options.items() if flags}


def _vocab_bytes(vocab: Mapping, specials: Mapping[str, int], source: str) -> List[bytes]:
    """The table of token bytes (index = id) of a byte-level vocabulary, converted in bulk.

    An entry that is not byte-level text is an added token stored in the vocabulary (its slot
    stays empty: it is split out as a special token), or a token byte-level BPE can never
    produce, which is left out."""
    texts = list(vocab)
    ids = list(vocab.values())
    if not all(type(i) is int and 0 <= i < ID_LIMIT for i in ids):
        for text, i in vocab.items():
            check_id(i, f"{source}: vocab entry {text!r}")
    # ids index a table: refuse far-off ids before allocating it (fastbpe.formats.ids)
    size = table_size(max(ids, default=-1), len(ids), len(specials), source)
    tokens = texts_to_tokens(texts)
    table: List[bytes] = [b""] * size
    special_ids = {i: s for s, i in specials.items()}
    uses = np.bincount(np.array(ids, dtype=np.int64), minlength=size)
    if uses.max(initial=0) <= 1 and all(tokens) and not any(i < size and uses[i] for i in special_ids):
        # every entry a byte-level token with an id of its own, no added token among them
        # (llama3's, qwen3's...): the table in one pass, without the checks below
        collections.deque(map(table.__setitem__, ids, tokens), maxlen=0)
        return table
    for text, i, token in zip(texts, ids, tokens):
        if table[i]:
            raise ValueError(f"{source}: id {i} is used by two vocab entries")
        if i in special_ids:
            if token is not None and token != special_ids[i].encode("utf-8") and text != special_ids[i]:
                raise ValueError(f"{source}: added token {special_ids[i]!r} has id {i}, which the vocab uses for "
                                 "another token")
            if token != special_ids[i].encode("utf-8"):
                continue  # the added token takes the id; tokenizers splits it out before BPE
            # its own bytes as byte-level text: BPE can make it too (tokenizers' model keeps it)
        if token is None:
            continue  # not byte-level text: BPE over bytes never makes it
        if not token:
            raise ValueError(f"{source}: vocab entry {i} is empty")
        table[i] = token
    return table


def _merge_pairs(merges: list, vocab: Mapping, table: List[bytes], source: str) -> np.ndarray:
    """The merges as ``(left, right)`` ids, in rank order; merges of entries that are not
    byte-level tokens (they never apply to bytes) are left out."""
    pairs = _merge_pairs_in_bulk(merges, table)
    if pairs is not None:
        return pairs
    try:
        if all(type(m) is str for m in merges):
            flat = [part for m in merges for part in m.split(" ")] if merges else []
            if len(flat) != 2 * len(merges):
                raise ValueError
        else:
            flat = list(itertools.chain.from_iterable(merges))
            if set(map(len, merges)) - {2}:
                raise ValueError
        flat_ids = list(map(vocab.__getitem__, flat))
    except (KeyError, TypeError, ValueError):
        _check_merges_one_by_one(merges, vocab, source)
        raise ValueError(f"{source}: malformed merges") from None
    pairs = np.array(flat_ids, dtype=np.int64).reshape(-1, 2)
    unused = np.fromiter(map(len, table), dtype=np.int64, count=len(table)) == 0
    return pairs[~unused[pairs].any(axis=1)] if unused[pairs].any() else pairs


def _merge_pairs_in_bulk(merges: list, table: List[bytes]) -> Optional[np.ndarray]:
    """:func:`_merge_pairs` of a file whose merges all join byte-level tokens (every published
    file): all the texts joined into one string, turned into bytes by one NumPy lookup and
    into ids by compiled code, with no Python string per merge part. None when any merge is
    not like that (the caller's one-by-one path then decides, or says what is wrong)."""
    if not merges:
        return np.zeros((0, 2), dtype=np.int64)
    if all(type(m) is str for m in merges):
        joined = "\n".join(merges)
        if joined.count("\n") != len(merges) - 1:
            return None  # a newline inside a merge
        joined = joined.replace(" ", "\n")
    elif all(type(m) is list and len(m) == 2 for m in merges):
        try:
            joined = "\n".join(itertools.chain.from_iterable(merges))
        except TypeError:
            return None  # a part that is not a str
    else:
        return None
    if joined.count("\n") != 2 * len(merges) - 1:
        return None  # a part holding a space or a newline, or a merge of other than two parts
    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    values = text_byte_values(points)
    newline = points == 10
    if (values[~newline] < 0).any():
        return None  # a part that is not byte-level text
    cuts = np.flatnonzero(newline)
    offsets = np.concatenate([[0], cuts - np.arange(len(cuts)), [len(points) - len(cuts)]]).astype(np.int64)
    ids = lookup_tokens(table, values[~newline].astype(np.uint8), offsets)
    if (ids < 0).any() or (np.diff(offsets) == 0).any():
        return None  # a part that is no token (or an empty part)
    return ids.astype(np.int64).reshape(-1, 2)


def _check_merges_one_by_one(merges: list, vocab: Mapping, source: str) -> None:
    """The error of the first bad merge (the bulk path's fallback)."""
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
        if a not in vocab or b not in vocab:
            raise ValueError(f"{source}: merge {number} ({a!r}, {b!r}) uses a token missing from the vocab")


def read(path: PathLike, data: Any = None) -> dict:
    """A byte-level BPE ``tokenizer.json`` (a folder holding one works too), encoding exactly as
    ``tokenizers`` does: lowest merge rank first, the file's split stages, normaliser and
    prefix space, its model's ``end_of_word_suffix`` and ``continuing_subword_prefix``, and its
    added tokens (inside
    ``model.vocab`` or not, special or not, with their ``lstrip``/``rstrip``/``single_word``/
    ``normalized`` options) as special tokens (pass ``allowed_special="all"`` to match
    ``tokenizers``, which always splits them out). What fastbpe cannot reproduce exactly is a
    ValueError naming the component.
    ``data``: the file's JSON when the caller has parsed it already (not parsed twice)."""
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer.json"
    if data is None:
        found = read_plain(path)
        if found is not None:
            return found
        data = read_json(path, "Hugging Face tokenizer.json")
    return _read_data(path, data, None)


def read_plain(path: Path) -> Optional[dict]:
    """What :func:`read` gives for a plain byte-level ``tokenizer.json``, read by compiled code
    from the file's bytes; None for any other file (then parse it with the json module)."""
    scanned = _scan_model(path)
    return None if scanned is None else _read_data(path, *scanned)


def _scan_model(path: Path) -> Optional[tuple]:
    """The file's JSON without its model's vocabulary and merges (an empty object and list
    stand in for them), and those two read from the file's bytes by compiled code
    (``scan_bpe_json``): ``(data, scanned)``. None when the file is not a plain byte-level
    one (the json module then reads it all, and says what is wrong with it)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None  # (read_json says why)
    scanned = scan_bpe_json(raw, code_point_bytes())
    if scanned is None:
        return None
    vocab_begin, vocab_end, merges_begin, merges_end = scanned[0]
    rest = b"".join([raw[:vocab_begin], b"{}", raw[vocab_end:merges_begin], b"[]", raw[merges_end:]]) \
        if vocab_begin < merges_begin else \
        b"".join([raw[:merges_begin], b"[]", raw[merges_end:vocab_begin], b"{}", raw[vocab_end:]])
    try:
        data = json.loads(rest.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return data, scanned


def _scanned_tables(scanned: tuple, specials: Mapping[str, int], source: str) -> Optional[Tuple[List[bytes], np.ndarray]]:
    """The token table and merge pairs of a scanned file (:func:`_scan_model`), or None when
    it is not the plain case (every key a byte-level token with an id of its own, no added
    token among them, every merge a pair of tokens): :func:`_vocab_bytes` and
    :func:`_merge_pairs` then read the parsed JSON."""
    _, tokens, ids, blob, offsets = scanned
    if len(ids) and (ids.max() >= ID_LIMIT or not all(tokens)):
        return None
    try:
        size = table_size(int(ids.max(initial=-1)), len(ids), len(specials), source)
    except ValueError:
        return None
    uses = np.bincount(ids, minlength=size)
    if uses.max(initial=0) > 1 or any(i < size and uses[i] for i in specials.values()):
        return None
    table: List[bytes] = [b""] * size
    collections.deque(map(table.__setitem__, ids.tolist(), tokens), maxlen=0)
    if (np.diff(offsets) == 0).any():
        return None
    try:
        pair_ids = lookup_tokens(table, blob, offsets)
    except ValueError:
        return None  # two keys with the same bytes
    if (pair_ids < 0).any():
        return None
    return table, pair_ids.astype(np.int64).reshape(-1, 2)


def _read_data(path: Path, data: Any, scanned: Optional[tuple]) -> Optional[dict]:
    """:func:`read` of the parsed JSON; with ``scanned`` (:func:`_scan_model`), the model's
    vocabulary and merges come from there instead, or None when they are not the plain case."""
    source = os.fspath(path)
    if not isinstance(data, Mapping):
        raise ValueError(f"{source}: expected a JSON object")
    model = data.get("model")
    if not isinstance(model, Mapping) or model.get("type", "BPE") != "BPE":
        raise ValueError(f"{source}: the model must be BPE")
    prefix, suffix = _model_markers(model, source)
    if model.get("dropout"):
        raise ValueError(f"{source}: model dropout is not supported (encoding would be random)")
    vocab, merges = model.get("vocab"), model.get("merges")
    if not isinstance(vocab, Mapping) or not isinstance(merges, list):
        raise ValueError(f"{source}: the model needs a 'vocab' object and a 'merges' list")
    if not isinstance(model.get("byte_fallback", False), bool):
        raise ValueError(f"{source}: model byte_fallback must be true or false")
    if model.get("byte_fallback"):
        if scanned is not None:
            return None  # (its vocabulary is characters, not byte-level text)
        if suffix or prefix:
            raise ValueError(f"{source}: model end_of_word_suffix or continuing_subword_prefix with "
                             "byte_fallback=true is not supported")
        return _read_character_level(data, model, source)
    stages, prefix_space = _hf_splitter(data.get("pre_tokenizer"), source)
    (pattern, keep_gaps), *more_stages = stages
    normalizer = data.get("normalizer")
    if not isinstance(model.get("ignore_merges", False), bool):
        raise ValueError(f"{source}: model ignore_merges must be true or false")
    if (suffix or prefix) and model.get("ignore_merges"):
        # tokenizers looks the chunk up without its markers: fastbpe's marker path has no lookup
        raise ValueError(f"{source}: model end_of_word_suffix or continuing_subword_prefix with ignore_merges=true "
                         "is not supported")
    specials, options = _added_tokens(data, source)
    if scanned is not None:
        # the compiled reader's tables hold the plain case only (no markers, no added token in
        # the vocabulary): anything else is read from the parsed JSON
        tables = None if suffix or prefix else _scanned_tables(scanned, specials, source)
        if tables is None:
            return None
        tokens, pairs = tables
    else:
        tokens = _vocab_bytes(vocab, specials, source)
        pairs = _merge_pairs(merges, vocab, tokens, source)
    singles = {t[0] for t in tokens if len(t) == 1}
    missing = [b for b in range(256) if b not in singles]
    if missing:
        raise ValueError(f"{source}: byte 0x{missing[0]:02x} has no token, which byte-level BPE needs")
    return dict(tokens=tokens, merges=pairs, pattern=pattern, special_tokens=specials,
                special_token_options=options, merge_rule="pair",
                whole_token_lookup=bool(model.get("ignore_merges", False)),
                normalizer=normalizer, split_gaps=keep_gaps, split_stages=more_stages,
                prefix_space=prefix_space, end_of_word_suffix=suffix, continuing_subword_prefix=prefix)


def _model_markers(model: Mapping, source: str) -> Tuple[Optional[str], Optional[str]]:
    """The model's ``continuing_subword_prefix`` and ``end_of_word_suffix``, each as the text
    of its bytes (byte-level text such as ``"</w>"`` turned into bytes), or None."""
    markers = []
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        marker = model.get(key)
        if not marker:
            markers.append(None)
            continue
        if not isinstance(marker, str):
            raise ValueError(f"{source}: model {key} must be a str, got {marker!r:.20}")
        token = texts_to_tokens([marker])[0]
        try:
            markers.append(token.decode("utf-8"))
        except (AttributeError, UnicodeDecodeError):
            raise ValueError(f"{source}: model {key} {marker!r:.20} is not byte-level text of UTF-8") from None
    return markers[0], markers[1]


def _read_character_level(data: Mapping, model: Mapping, source: str) -> dict:
    """A SentencePiece-style file: BPE over Unicode characters with ``byte_fallback`` (a
    character missing from the vocabulary becomes its UTF-8 bytes' ``<0xNN>`` tokens), spaces
    made ``▁`` by the normaliser (Llama 2's ``Prepend`` + ``Replace``, the whole piece one
    chunk) or by a ``Metaspace`` pre-tokenizer (split at each ``▁`` or not)."""
    if model.get("ignore_merges"):
        raise ValueError(f"{source}: model ignore_merges=true with byte_fallback=true is not supported")
    normalizer = data.get("normalizer")
    pattern, metaspace = _character_level_splitter(data.get("pre_tokenizer"), bool(data.get("added_tokens")), source)
    specials, options = _added_tokens(data, source)
    if metaspace and any(flags.get("normalized") for flags in options.values()):
        # fastbpe runs Metaspace as normaliser steps, so the normalised text is not tokenizers'
        raise ValueError(f"{source}: added tokens with normalized=true and a Metaspace pre_tokenizer are not "
                         "supported")
    vocab, merges = model["vocab"], model["merges"]
    ids = list(vocab.values())
    if not all(type(i) is int and 0 <= i < ID_LIMIT for i in ids):
        for text, i in vocab.items():
            check_id(i, f"{source}: vocab entry {text!r}")
    tokens: List[bytes] = [b""] * table_size(max(ids, default=-1), len(ids), len(specials), source)
    special_ids = set(specials.values())
    for text, i in vocab.items():
        if not text:
            raise ValueError(f"{source}: vocab entry {i} is empty")
        if tokens[i]:
            raise ValueError(f"{source}: id {i} is used by two vocab entries")
        if i not in special_ids:  # an added token's slot stays empty: it is split out before BPE
            tokens[i] = text.encode("utf-8", "surrogatepass")
    pairs = []
    for number, merge in enumerate(merges):
        parts = merge.split(" ") if isinstance(merge, str) else merge
        if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) for p in parts):
            raise ValueError(f"{source}: merge {number} is not a pair of tokens: {merge!r:.80}")
        if parts[0] not in vocab or parts[1] not in vocab:
            raise ValueError(f"{source}: merge {number} {tuple(parts)!r} uses a token missing from the vocab")
        pairs.append((vocab[parts[0]], vocab[parts[1]]))
    decoder = data.get("decoder")
    if metaspace:  # the pre-tokenizer's spaces and prefix, run after the file's normaliser
        normalizer = [*([normalizer] if _has_normalizer(normalizer) else []), *metaspace]
    return dict(tokens=tokens, merges=np.array(pairs, dtype=np.int64).reshape(-1, 2), unit="chars",
                pattern=pattern, special_tokens=specials, special_token_options=options, merge_rule="pair",
                normalizer=normalizer,
                byte_fallback=True, space_marker=_space_marker(decoder))


# Metaspace(split=true) cuts before every marker: "▁a▁▁b" -> "▁a", "▁", "▁b" (the pattern tiles the text)
METASPACE_SPLIT = "▁[^▁]*|[^▁]+"


def _character_level_splitter(pre, has_added_tokens: bool, source: str) -> Tuple[str, List[dict]]:
    """The split pattern of a character-level file's pre-tokenizer and the normaliser steps
    that stand for its ``Metaspace`` (spaces become ``▁``; with ``prepend_scheme`` "always", a
    ``▁`` before every piece that does not start with one)."""
    if pre is None:
        return WHOLE_PIECE, []
    if not isinstance(pre, Mapping):
        raise ValueError(f"{source}: malformed pre_tokenizer {pre!r:.80}")
    if pre.get("type") == "Split" and pre.get("pattern") == {"Regex": METASPACE_SPLIT}:
        return _split_stage(pre, source)[0], []  # what write() gives a Metaspace(split=true)
    if pre.get("type") != "Metaspace":
        raise ValueError(f"{source}: pre_tokenizer {pre.get('type')!r:.40} with byte_fallback=true is not supported "
                         "(none, or Metaspace, is)")
    if pre.get("replacement") != "▁" or not isinstance(pre.get("split", True), bool):
        raise ValueError(f"{source}: pre_tokenizer Metaspace with replacement {pre.get('replacement')!r:.20} is not "
                         "supported (only '▁')")
    scheme = pre.get("prepend_scheme", "always" if pre.get("add_prefix_space", True) else "never")
    if scheme == "first" and has_added_tokens:
        # "first" puts the marker before the piece at the start of the text only, not after an
        # added token: a per-piece normaliser cannot tell the two apart
        raise ValueError(f"{source}: pre_tokenizer Metaspace prepend_scheme='first' with added tokens is not "
                         "supported")
    if scheme not in ("always", "first", "never"):
        raise ValueError(f"{source}: pre_tokenizer Metaspace prepend_scheme {scheme!r:.20} is not supported")
    steps = [{"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]
    if scheme != "never":  # \A: Oniguruma's ^ would match after every newline
        steps.append({"type": "Replace", "pattern": {"Regex": "\\A(?!▁)(?=[\\s\\S])"}, "content": "▁"})
    return (METASPACE_SPLIT if pre.get("split", True) else WHOLE_PIECE), steps


def _added_token_entries(tok) -> List[dict]:
    """The special tokens as added tokens, each with its matching options."""
    return [{"id": i, "content": s,
             **{flag: tok.special_token_options.get(s, {}).get(flag, False)
                for flag in ("single_word", "lstrip", "rstrip", "normalized")},
             "special": True} for s, i in sorted(tok.special_tokens.items(), key=lambda kv: kv[1])]


def _character_level_data(tok) -> dict:
    """The ``tokenizer.json`` object of a ``byte_fallback`` tokenizer (the layout
    :func:`_read_character_level` reads); what that layout cannot say is a ValueError."""
    if tok.merge_rule != "pair" or tok.pattern not in (WHOLE_PIECE, METASPACE_SPLIT):
        raise ValueError("a byte_fallback tokenizer is written to tokenizer.json only with merge_rule='pair' and "
                         "the whole piece as one chunk or Metaspace's split")
    texts = [t.decode("utf-8", "surrogatepass") for t in tok.token_bytes]
    steps = [{"type": "ByteFallback"}, {"type": "Fuse"}]
    if tok.space_marker:
        steps = [{"type": "Replace", "pattern": {"String": tok.space_marker}, "content": " "}, *steps,
                 {"type": "Strip", "content": " ", "start": 1, "stop": 0}]
    vocab = {text: i for i, text in enumerate(texts) if text}
    vocab.update({s: i for s, i in tok.special_tokens.items()})
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": _added_token_entries(tok),
        "normalizer": tok.normalize.to_huggingface(),
        "pre_tokenizer": None if tok.pattern == WHOLE_PIECE else {
            "type": "Split", "pattern": {"Regex": METASPACE_SPLIT}, "behavior": "Isolated", "invert": False},
        "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": steps},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": True, "ignore_merges": False,
            "vocab": vocab,
            "merges": [[texts[a], texts[b]] for a, b in tok.merge_ids.tolist()],
        },
    }


def _space_marker(decoder) -> Optional[str]:
    """The character the decoder turns back into a space, dropping the first (Llama 2's
    ``Replace(▁, " ")`` ... ``Strip(" ", 1, 0)``, or ``Metaspace``), else None."""
    if not isinstance(decoder, Mapping):
        return None
    if decoder.get("type") == "Metaspace" and isinstance(decoder.get("replacement"), str):
        return decoder["replacement"] if decoder.get("prepend_scheme", "always") != "never" else None
    steps = decoder.get("decoders") if decoder.get("type") == "Sequence" else None
    if not isinstance(steps, list) or not steps or not all(isinstance(x, Mapping) for x in steps):
        return None
    first, last = steps[0], steps[-1]
    if (first.get("type") == "Replace" and first.get("content") == " "
            and isinstance(first.get("pattern"), Mapping) and isinstance(first["pattern"].get("String"), str)
            and len(first["pattern"]["String"]) == 1
            and last.get("type") == "Strip" and last.get("content") == " " and last.get("start") == 1
            and last.get("stop") == 0):
        return first["pattern"]["String"]
    return None


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
    if tok.byte_fallback:
        write_atomic(path, json_bytes(_character_level_data(tok), indent=1))
        return
    check_byte_level(tok, one_split=False, suffix=True)
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
    stages = [(source(pattern), keep_gaps) for pattern, keep_gaps in [(tok.pattern, tok.split_gaps), *tok.split_stages]]
    use_regex = stages[-1] == (source(GPT2_ORIGINAL_PATTERN), True)  # ByteLevel's own regex does the last split
    if use_regex or stages == [(WHOLE_PIECE, True)]:
        stages = stages[:-1]
    if tok.prefix_space and stages:
        raise ValueError("a tokenizer with prefix_space is written to tokenizer.json only with ByteLevel's own "
                         "split (GPT-2's regex) or none")
    splits = [{"type": "Split", "pattern": {"Regex": oniguruma_pattern(pattern)},
               "behavior": "Isolated" if keep_gaps else "Removed", "invert": not keep_gaps}
              for pattern, keep_gaps in stages]
    byte_level = {"type": "ByteLevel", "add_prefix_space": tok.prefix_space, "trim_offsets": True,
                  "use_regex": use_regex}
    data = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": _added_token_entries(tok),
        "normalizer": tok.normalize.to_huggingface(),
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [*splits, byte_level]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None,
            "continuing_subword_prefix": token_to_text(tok.continuing_subword_prefix.encode("utf-8")) or None,
            "end_of_word_suffix": token_to_text(tok.end_of_word_suffix.encode("utf-8")) or None,
            "fuse_unk": False, "byte_fallback": False,
            "ignore_merges": ignore_merges,
            "vocab": {token_to_text(t): i for i, t in enumerate(tok.token_bytes) if t},
            "merges": [[token_to_text(tok.token_bytes[a]), token_to_text(tok.token_bytes[b])] for a, b in merges],
        },
    }
    write_atomic(path, json_bytes(data, indent=1))
