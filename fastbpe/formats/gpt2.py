"""GPT-2's own files: ``encoder.json`` (token text -> id) and ``vocab.bpe`` (the merges).

They load to the same tokenizer as tiktoken's ``r50k_base`` and encode the same way
(``merge_rule="token"``): the merges' results and the 256 bytes are the mergeable tokens; any
other entry of ``encoder.json`` (``<|endoftext|>``) is a special token.
"""
import os
from pathlib import Path
from typing import Dict, List, Tuple, Union

from ..fileio import json_bytes, read_json, write_atomic
from ..split.patterns import GPT2_PATTERN
from .bytelevel import check_byte_level, text_to_token, token_to_text
from .ids import check_id, table_size

__all__ = ["read", "write"]

PathLike = Union[str, os.PathLike]


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


def read(encoder_json: PathLike, vocab_bpe: PathLike, pattern: str = GPT2_PATTERN) -> dict:
    """GPT-2's ``encoder.json`` + ``vocab.bpe``, encoding like tiktoken's ``r50k_base``.

    The mergeable tokens are the 256 bytes and the merges' results; any other entry of
    ``encoder.json`` (``<|endoftext|>``) is a special token. Ids are ``encoder.json``'s.
    """
    encoder = read_json(encoder_json, "GPT-2 encoder.json")
    if not isinstance(encoder, dict) or not encoder:
        raise ValueError(f"{os.fspath(encoder_json)}: expected a non-empty JSON object of token -> id")
    merges = _read_vocab_bpe(vocab_bpe)
    source = os.fspath(encoder_json)
    tokens_by_text: Dict[str, int] = {text: check_id(i, f"{source}: token {text!r}") for text, i in encoder.items()}
    byte_chars = [token_to_text(bytes([b])) for b in range(256)]
    mergeable = set(byte_chars) | {a + b for a, b in merges}
    missing = [t for t in byte_chars if t not in tokens_by_text]
    if missing:
        raise ValueError(f"{source}: the byte token {missing[0]!r} is missing")
    mergeable_ids = [tokens_by_text[t] for t in mergeable if t in tokens_by_text]
    # ids index a table: refuse far-off ids before allocating it (fastbpe.formats.ids)
    size = table_size(max(mergeable_ids), len(mergeable_ids), len(tokens_by_text) - len(mergeable_ids), source)
    tokens: List[bytes] = [b""] * size
    specials: Dict[str, int] = {}
    for text, i in tokens_by_text.items():
        if text in mergeable:
            if tokens[i]:
                raise ValueError(f"{os.fspath(encoder_json)}: id {i} is used twice")
            tokens[i] = text_to_token(text)
        else:
            specials[text] = i
    merge_ids = []
    for number, (a, b) in enumerate(merges):
        if a not in tokens_by_text or b not in tokens_by_text or a + b not in tokens_by_text:
            raise ValueError(f"{os.fspath(vocab_bpe)}: merge {number} ({a!r} {b!r}) uses a token "
                             f"missing from {os.fspath(encoder_json)}")
        merge_ids.append((tokens_by_text[a], tokens_by_text[b]))
    return dict(tokens=tokens, merges=merge_ids, pattern=pattern, special_tokens=specials,
                merge_rule="token", whole_token_lookup=True)


def write(tok, directory: PathLike) -> None:
    """Write ``encoder.json`` and ``vocab.bpe`` into ``directory`` (created if needed)."""
    check_byte_level(tok)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    encoder = {token_to_text(t): i for i, t in enumerate(tok.token_bytes) if t}
    for text, i in tok.special_tokens.items():
        encoder[text] = i
    lines = ["#version: 0.2"] + [f"{token_to_text(tok.token_bytes[a])} {token_to_text(tok.token_bytes[b])}"
                                 for a, b in tok.merge_ids.tolist()]
    write_atomic(directory / "encoder.json", json_bytes(encoder))
    write_atomic(directory / "vocab.bpe", ("\n".join(lines) + "\n").encode("utf-8"))
