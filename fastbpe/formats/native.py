"""fastbpe's own tokenizer file: versioned JSON holding every field a Tokenizer has.

Byte-level tokens are written as GPT-2 byte-level text (``"token_text": "gpt2-bytes-to-unicode"``),
character-level ones as their UTF-8 text. Encoding options are written only when they differ
from a trained tokenizer's, so a trained tokenizer's file reads in every version 1 reader.

The file is written component by component, in the order the text flows through them
(:mod:`fastbpe.encode.tokenizer`): the special tokens
(:class:`~fastbpe.encode.special.SpecialTokens`), the normaliser, the splitter
(:class:`~fastbpe.split.splitter.Splitter`), the BPE model, the markers
(:class:`~fastbpe.encode.markers.Markers`); the special tokens, the splitter and the markers
read and write their own fields.
"""
import itertools
import os
import re
from typing import Mapping, Optional, Union

import numpy as np

from ..fileio import file_bytes, json_bytes, json_field, json_without, read_json, write_atomic
from ..encode.markers import Markers
from ..encode.special import SpecialTokens
from ..split.splitter import Splitter
from .._core.encode import scan_native_json
from .bytelevel import as_token_text, code_point_bytes, text_to_token, texts_to_tokens
from .ids import ID_LIMIT, check_id

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "to_dict", "read_dict", "read", "read_plain", "starts_as_native", "write"]

FORMAT_NAME = "fastbpe"
FORMAT_VERSION = 1


def to_dict(tok) -> dict:
    """The file's JSON object for a tokenizer."""
    as_text = as_token_text(tok.unit == "chars")
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "unit": tok.unit,
        "token_text": "utf-8" if tok.unit == "chars" else "gpt2-bytes-to-unicode",
        **tok.specials.to_native(),  # step 1
        # step 2, the normaliser
        **({"normalizer": tok.normalizer} if tok.normalizer else {}),
        **tok.splitter.to_native(),  # step 3
        # step 4, the BPE model
        "vocab": [as_text(t) for t in tok.token_bytes],
        "merges": tok.merge_ids.tolist(),
        "merge_counts": tok.merge_counts,
        **({"merge_rule": tok.merge_rule} if tok.merge_rule != "replay" else {}),
        **({"whole_token_lookup": True} if tok.whole_token_lookup else {}),
        **({"byte_fallback": True} if tok.byte_fallback else {}),
        **({"unk_token": tok.unk_token, "fuse_unk": tok.fuse_unk} if tok.unk_token is not None else {}),
        **({"special_surfaces": tok.special_surfaces} if tok.special_surfaces else {}),
        **({"fallback_replacement": tok.fallback_replacement} if tok.fallback_replacement != "token" else {}),
        **tok.markers.to_native(),  # step 5
        **({"post_processor": tok.post_processor} if tok.post_processor is not None else {}),  # (a peer's, kept)
    }



def _int_list(values, key: str) -> list:
    if not set(map(type, values)) <= {int}:  # (bool is a type of its own: refused too)
        bad = next(v for v in values if type(v) is not int)
        raise ValueError(f"fastbpe tokenizer file: {key!r} holds {bad!r:.60}, not an integer")
    return list(values)


def _merge_rows(merges: list) -> Union[np.ndarray, list]:
    """The file's merges as an int64 ``(n, 2)`` or ``(n, 3)`` array: checked as a whole where
    every one is a list of two or three valid ids (one pass in C over each check: a loop a
    merge took 0.5 s of o200k's 200,000), else one by one, naming the first bad merge (then
    the rows are tuples, for a file whose merges have both widths)."""
    widths = set(map(len, merges)) if set(map(type, merges)) <= {list} else None
    if widths is not None and len(widths) <= 1:
        flat = list(itertools.chain.from_iterable(merges))
        if set(map(type, flat)) <= {int}:
            try:
                ids = np.array(flat, dtype=np.int64)
            except OverflowError:
                ids = None
            width = widths.pop() if widths else 2
            if ids is not None and width in (2, 3) and (not len(ids) or (ids.min() >= 0 and ids.max() < ID_LIMIT)):
                return ids.reshape(-1, width)
    rows = []
    for m in merges:
        if not isinstance(m, list) or len(m) not in (2, 3):
            raise ValueError(f"fastbpe tokenizer file: every merge must be a pair of token ids, got {m!r:.60}")
        rows.append(tuple(check_id(i, "a merge") for i in _int_list(m, "merges")))
    return rows


def read_dict(data: Mapping, source: Optional[str] = None, scanned: Optional[tuple] = None) -> dict:
    """The Tokenizer keyword arguments of a file's JSON object; ValueError if it is not one
    (a field of the wrong type included: ``"word_start": 5`` is not a marker, and an id of
    ``1000.7`` is not id 1000), naming ``source`` (the file) when given. ``scanned``: the
    tokens and merges :func:`read_plain` read (the object's own vocab and merges are then
    empty stand-ins)."""
    try:
        return _keywords(data, scanned)
    except ValueError as exc:
        if source is None:
            raise
        raise ValueError(f"{source}: {exc}") from None


def _keywords(data: Mapping, scanned: Optional[tuple] = None) -> dict:
    if not isinstance(data, Mapping) or data.get("format") != FORMAT_NAME:
        raise ValueError("not a fastbpe tokenizer file (no \"format\": \"fastbpe\")")
    version = data.get("version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise ValueError(f"unsupported fastbpe file version {version!r} (this build reads {FORMAT_VERSION})")
    for key in ("unit", "pattern", "vocab", "merges"):
        if key not in data:
            raise ValueError(f"fastbpe tokenizer file is missing the field {key!r}")
    unit = json_field(data, "unit", (str,))
    # how the vocab's strings spell tokens follows from the unit; a file that says otherwise
    # (edited, or from a writer this reader does not know) would load as other tokens
    spelling = "utf-8" if unit == "chars" else "gpt2-bytes-to-unicode"
    token_text = json_field(data, "token_text", (str,), spelling)
    if token_text != spelling:
        raise ValueError(f"fastbpe tokenizer file: \"token_text\": {token_text!r:.40} is not how unit {unit!r:.20} "
                         f"tokens are written ({spelling!r})")
    vocab = json_field(data, "vocab", (list,))
    if not set(map(type, vocab)) <= {str} and not all(isinstance(s, str) for s in vocab):
        raise ValueError("fastbpe tokenizer file: every vocab entry must be a str")
    merges = _merge_rows(json_field(data, "merges", (list,))) if scanned is None else scanned[1]
    merge_counts = json_field(data, "merge_counts", (list, type(None)))
    if merge_counts is not None:
        merge_counts = _int_list(merge_counts, "merge_counts")
    if scanned is not None:
        tokens = scanned[0]
    elif unit == "chars":
        try:
            tokens = [s.encode("utf-8", "surrogatepass") for s in vocab]
        except UnicodeEncodeError as exc:
            raise ValueError(f"fastbpe tokenizer file: a vocab entry is not text ({exc})") from None
    else:  # (all at once; a text that is not byte-level: text_to_token says which)
        tokens = texts_to_tokens(vocab)
        if None in tokens:
            tokens = [text_to_token(s) for s in vocab]
    return dict(
        tokens=tokens,
        merges=merges,
        unit=unit,
        **Markers.from_native(data).keywords(),
        **Splitter.from_native(data).keywords(),
        **SpecialTokens.from_native(data).keywords(),
        merge_counts=merge_counts,
        merge_rule=json_field(data, "merge_rule", (str,), "replay"),
        whole_token_lookup=json_field(data, "whole_token_lookup", (bool,), False),
        normalizer=json_field(data, "normalizer", (str, list, type(None))),
        byte_fallback=json_field(data, "byte_fallback", (bool,), False),
        unk_token=json_field(data, "unk_token", (str, type(None))),
        fuse_unk=json_field(data, "fuse_unk", (bool,), False),
        special_surfaces=json_field(data, "special_surfaces", (dict,), {},
                                    what="an object of special token name -> the text it decodes to"),
        fallback_replacement=json_field(data, "fallback_replacement", (str,), "token", what="\"token\" or \"byte\""),
        training_stats=data.get("training_stats") if isinstance(data.get("training_stats"), Mapping) else None,
        post_processor=json_field(data, "post_processor", (dict, type(None)), what="a tokenizer.json post_processor"),
    )


def starts_as_native(path: Union[str, os.PathLike]) -> bool:
    """Whether the file begins as :func:`write` begins one (``{"format": "fastbpe"``), told
    from its first bytes: so that a loader need not look through the whole file for a Hugging
    Face model first (13 ms of o200k's)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    return re.match(rb'\s*\{\s*"format"\s*:\s*"fastbpe"', head) is not None


def read(path: Union[str, os.PathLike]) -> dict:
    """The Tokenizer keyword arguments of a fastbpe tokenizer file; its errors name the file."""
    found = read_plain(path)
    return found if found is not None else read_dict(read_json(path, "fastbpe tokenizer file"), os.fspath(path))


def read_plain(path: Union[str, os.PathLike]) -> Optional[dict]:
    """What :func:`read` gives for a well-formed file, its vocab and merges read by compiled
    code from the file's bytes (``scan_native_json``: no Python str a token, no list a merge;
    a character-level file's texts as their UTF-8) and the rest by the json module; None for
    any other file (:func:`read` then parses it all, and says what is wrong with it)."""
    raw = file_bytes(path)
    if raw is None:
        return None
    for unit in ("bytes", "chars"):
        scanned = scan_native_json(raw, code_point_bytes() if unit == "bytes" else None)
        if scanned is None:
            continue  # (a character-level file's texts are not byte-level text)
        (vocab_begin, vocab_end, merges_begin, merges_end), tokens, merges = scanned
        data = json_without(raw, [(vocab_begin, vocab_end, b"[]"), (merges_begin, merges_end, b"[]")])
        if not isinstance(data, Mapping) or data.get("format") != FORMAT_NAME:
            return None  # (a key twice: json keeps the last)
        if data.get("unit") == unit:
            return read_dict(data, os.fspath(path), (tokens, merges))
        if unit == "chars" or data.get("unit") != "chars":
            return None
    return None


def write(tok, path: Union[str, os.PathLike]) -> None:
    """Write a tokenizer's file atomically, with ``training_stats`` when it has them."""
    data = to_dict(tok)
    if tok.training_stats:
        data["training_stats"] = tok.training_stats
    write_atomic(path, json_bytes(data, indent=1))
