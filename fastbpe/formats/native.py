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
import os
from typing import Mapping, Optional, Union

from ..fileio import json_bytes, json_field, read_json, write_atomic
from ..encode.markers import Markers
from ..encode.special import SpecialTokens
from ..split.splitter import Splitter
from .bytelevel import text_to_token, token_to_text
from .ids import check_id

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "to_dict", "read_dict", "read", "write"]

FORMAT_NAME = "fastbpe"
FORMAT_VERSION = 1


def to_dict(tok) -> dict:
    """The file's JSON object for a tokenizer."""
    as_text = (lambda t: t.decode("utf-8", "surrogatepass")) if tok.unit == "chars" else token_to_text
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
        **tok.markers.to_native(),  # step 5
    }



def _int_list(values, key: str) -> list:
    if not all(type(v) is int for v in values):
        bad = next(v for v in values if type(v) is not int)
        raise ValueError(f"fastbpe tokenizer file: {key!r} holds {bad!r:.60}, not an integer")
    return list(values)


def read_dict(data: Mapping, source: Optional[str] = None) -> dict:
    """The Tokenizer keyword arguments of a file's JSON object; ValueError if it is not one
    (a field of the wrong type included: ``"word_start": 5`` is not a marker, and an id of
    ``1000.7`` is not id 1000), naming ``source`` (the file) when given."""
    try:
        return _keywords(data)
    except ValueError as exc:
        if source is None:
            raise
        raise ValueError(f"{source}: {exc}") from None


def _keywords(data: Mapping) -> dict:
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
    if not all(isinstance(s, str) for s in vocab):
        raise ValueError("fastbpe tokenizer file: every vocab entry must be a str")
    from_text = (lambda s: s.encode("utf-8", "surrogatepass")) if unit == "chars" else text_to_token
    merges = []
    for m in json_field(data, "merges", (list,)):
        if not isinstance(m, list) or len(m) not in (2, 3):
            raise ValueError(f"fastbpe tokenizer file: every merge must be a pair of token ids, got {m!r:.60}")
        merges.append(tuple(check_id(i, "a merge") for i in _int_list(m, "merges")))
    merge_counts = json_field(data, "merge_counts", (list, type(None)))
    if merge_counts is not None:
        merge_counts = _int_list(merge_counts, "merge_counts")
    try:
        tokens = [from_text(s) for s in vocab]
    except UnicodeEncodeError as exc:
        raise ValueError(f"fastbpe tokenizer file: a vocab entry is not text ({exc})") from None
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
        training_stats=data.get("training_stats") if isinstance(data.get("training_stats"), Mapping) else None,
    )


def read(path: Union[str, os.PathLike]) -> dict:
    """The Tokenizer keyword arguments of a fastbpe tokenizer file; its errors name the file."""
    return read_dict(read_json(path, "fastbpe tokenizer file"), os.fspath(path))


def write(tok, path: Union[str, os.PathLike]) -> None:
    """Write a tokenizer's file atomically, with ``training_stats`` when it has them."""
    data = to_dict(tok)
    if tok.training_stats:
        data["training_stats"] = tok.training_stats
    write_atomic(path, json_bytes(data, indent=1))
