"""fastbpe's own tokenizer file: versioned JSON holding every field a Tokenizer has.

Byte-level tokens are written as GPT-2 byte-level text (``"token_text": "gpt2-bytes-to-unicode"``),
character-level ones as their UTF-8 text. Encoding options are written only when they differ
from a trained tokenizer's, so a trained tokenizer's file reads in every version 1 reader.
"""
from typing import Mapping

import json
import os
from typing import Union

from ..fileio import read_json, write_atomic
from .bytelevel import text_to_token, token_to_text

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
        "pattern": tok.pattern,
        "word_start": tok.word_start,
        "word_end": tok.word_end,
        "special_tokens": tok.special_tokens,
        "vocab": [as_text(t) for t in tok.token_bytes],
        "merges": tok.merge_ids.tolist(),
        "merge_counts": tok.merge_counts,
        **({"merge_rule": tok.merge_rule} if tok.merge_rule != "replay" else {}),
        **({"whole_token_lookup": True} if tok.whole_token_lookup else {}),
        **({"normalizer": tok.normalizer} if tok.normalizer else {}),
        **({"split_gaps": True} if tok.split_gaps else {}),
        **({"split_stages": [list(x) for x in tok.split_stages]} if tok.split_stages else {}),
    }


def read_dict(data: Mapping) -> dict:
    """The Tokenizer keyword arguments of a file's JSON object; ValueError if it is not one."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT_NAME:
        raise ValueError("not a fastbpe tokenizer file (no \"format\": \"fastbpe\")")
    version = data.get("version")
    if version != FORMAT_VERSION:
        raise ValueError(f"unsupported fastbpe file version {version!r} (this build reads {FORMAT_VERSION})")
    try:
        unit = data["unit"]
        from_text = (lambda s: s.encode("utf-8", "surrogatepass")) if unit == "chars" else text_to_token
        merges = [tuple(m) for m in data["merges"]]
        if any(len(m) != 2 for m in merges):
            raise ValueError("every merge must be a pair of token ids")
        return dict(
            tokens=[from_text(s) for s in data["vocab"]],
            merges=merges,
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
            training_stats=data.get("training_stats") if isinstance(data.get("training_stats"), Mapping) else None,
        )
    except KeyError as exc:
        raise ValueError(f"fastbpe tokenizer file is missing the field {exc.args[0]!r}") from None
    except (TypeError, AttributeError) as exc:
        raise ValueError(f"malformed fastbpe tokenizer file: {exc}") from None


def read(path: Union[str, os.PathLike]) -> dict:
    """The Tokenizer keyword arguments of a fastbpe tokenizer file."""
    return read_dict(read_json(path, "fastbpe tokenizer file"))


def write(tok, path: Union[str, os.PathLike]) -> None:
    """Write a tokenizer's file atomically, with ``training_stats`` when it has them."""
    data = to_dict(tok)
    if tok.training_stats:
        data["training_stats"] = tok.training_stats
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8"))
