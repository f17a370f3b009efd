"""GPT-2's own files: ``encoder.json`` (token text -> id) and ``vocab.bpe`` (the merges).

They load to the same tokenizer as tiktoken's ``r50k_base`` and encode the same way
(``merge_rule="token"``): the merges' results and the 256 bytes are the mergeable tokens; any
other entry of ``encoder.json`` (``<|endoftext|>``) is a special token.
"""
import itertools
import operator
import os
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from ..fileio import file_bytes, folder_made_for, json_bytes, read_json, write_atomic_files
from ..split.patterns import GPT2_PATTERN, TABLE, resolve
from ..stacklevel import caller_stacklevel
from .._core.encode import scan_gpt2_files
from .bytelevel import (check_byte_level, check_plain_steps, check_specials_apart, code_point_bytes, scanned_tables,
                        text_to_token, texts_to_tokens, token_to_text)
from .ids import ID_LIMIT, check_id, table_size

__all__ = ["read", "write"]

PathLike = Union[str, os.PathLike]

# The 256 bytes as byte-level text; those spelled with another character than the byte's own
# Latin-1 one (Ġ for a space, Ċ for a newline...), which no special token's name holds.
BYTE_CHARS = [token_to_text(bytes([b])) for b in range(256)]
SPELLED_BYTES = frozenset(c for c in BYTE_CHARS if ord(c) > 0xFF)


def _read_vocab_bpe(path: PathLike) -> Tuple[List[str], List[str]]:
    """The merges' left and right parts, in rank order."""
    with open(path, "rb") as f:
        try:
            lines = f.read().decode("utf-8").replace("\r\n", "\n").split("\n")  # (a Windows checkout's too)
        except UnicodeDecodeError as exc:
            raise ValueError(f"{os.fspath(path)}: not UTF-8 ({exc})") from None
    if not lines or not lines[0].startswith("#version"):
        raise ValueError(f"{os.fspath(path)}: not a GPT-2 vocab.bpe (first line must be '#version: ...')")
    # when every non-blank line holds one space between two non-empty parts (GPT-2's file),
    # the parts come from one split of all the lines (no Python object per line but the
    # parts); else the loop below names the first bad line
    filled = list(filter(str.strip, itertools.islice(lines, 1, None)))
    if set(map(str.count, filled, itertools.repeat(" "))) <= {1}:
        parts = "\n".join(filled).replace(" ", "\n").split("\n") if filled else []
        if "" not in parts:
            return parts[0::2], parts[1::2]
    lefts, rights = [], []
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise ValueError(f"{os.fspath(path)}, line {number}: expected two tokens separated by a space, got {line[:60]!r}")
        lefts.append(parts[0])
        rights.append(parts[1])
    return lefts, rights


def read(encoder_json: PathLike, vocab_bpe: PathLike, pattern: str = GPT2_PATTERN) -> dict:
    """GPT-2's ``encoder.json`` + ``vocab.bpe``, encoding like tiktoken's ``r50k_base``.

    The mergeable tokens are the 256 bytes and the merges' results; any other entry of
    ``encoder.json`` (``<|endoftext|>``) is a special token. Ids are ``encoder.json``'s.
    Well-formed files are read by compiled code (:func:`read_plain`); any other by
    :func:`read_parsed`, which says what is wrong with them.
    """
    found = read_plain(encoder_json, vocab_bpe, pattern)
    return found if found is not None else read_parsed(encoder_json, vocab_bpe, pattern)


def read_plain(encoder_json: PathLike, vocab_bpe: PathLike, pattern: str = GPT2_PATTERN) -> Optional[dict]:
    """What :func:`read_parsed` gives for well-formed files, read by compiled code from their
    bytes (no Python str for any of their ~150,000 texts: loading GPT-2's took 157 ms, 69 ms
    now); None for anything else, which :func:`read_parsed` then reads or refuses."""
    vocab, merges = file_bytes(encoder_json), file_bytes(vocab_bpe)
    if vocab is None or merges is None:
        return None  # (read_parsed says why)
    if b"\r" in merges:  # a Windows checkout's line ends (no merge of byte-level text holds a raw \r)
        merges = merges.replace(b"\r\n", b"\n")
    cut = merges.find(b"\n")
    try:
        header = merges[:len(merges) if cut < 0 else cut].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not header.startswith("#version"):
        return None
    scanned = scan_gpt2_files(vocab, merges[len(merges) if cut < 0 else cut + 1:], code_point_bytes())
    if scanned is None:
        return None
    # read_parsed's rules, in its order (tests hold the two to one outcome): every byte a token,
    # every merge two tokens making a third, few entries no merge makes and none spelled as
    # byte-level text, the table's size
    source = os.fspath(encoder_json)
    tables = scanned_tables(scanned, BYTE_CHARS, source, made=True)
    if tables is None:
        return None
    table, pairs, byte_ids, made = tables
    if len(byte_ids) < 256 or (made < 0).any():
        return None
    ids = scanned[1]
    mergeable = np.zeros(len(table), dtype=bool)
    mergeable[list(byte_ids.values())] = True
    mergeable[made] = True
    special_ids = ids[~mergeable[ids]].tolist()  # (in the file's order, as read_parsed lists them)
    if len(special_ids) > max(64, len(ids) // 100):
        return None
    specials = {token_to_text(table[i]): i for i in special_ids}
    if any(not SPELLED_BYTES.isdisjoint(text) for text in specials):
        return None
    mergeable_ids = np.flatnonzero(mergeable)
    try:
        size = table_size(int(mergeable_ids[-1]), len(mergeable_ids), len(specials), source)
    except ValueError:
        return None
    for i in special_ids:
        if i < size:
            table[i] = b""
    return dict(tokens=table[:size], merges=pairs, pattern=pattern, special_tokens=specials, merge_rule="token",
                whole_token_lookup=True)


def read_parsed(encoder_json: PathLike, vocab_bpe: PathLike, pattern: str = GPT2_PATTERN) -> dict:
    """:func:`read` of the files parsed as text (the json module, a split per line): the
    reference, which names the first thing wrong with them."""
    encoder = read_json(encoder_json, "GPT-2 encoder.json")
    if not isinstance(encoder, dict) or not encoder:
        raise ValueError(f"{os.fspath(encoder_json)}: expected a non-empty JSON object of token -> id")
    lefts, rights = _read_vocab_bpe(vocab_bpe)
    source = os.fspath(encoder_json)
    values = list(encoder.values())
    # (three passes in C over the ids: a generator testing each took 6-10 ms for GPT-2's 50,257)
    if set(map(type, values)) == {int} and min(values) >= 0 and max(values) < ID_LIMIT:
        tokens_by_text: Dict[str, int] = encoder  # (what check_id returns for each)
    else:
        tokens_by_text = {text: check_id(i, f"{source}: token {text!r}") for text, i in encoder.items()}
    joined = list(map(operator.add, lefts, rights))
    mergeable = set(BYTE_CHARS)
    mergeable.update(joined)
    missing = [t for t in BYTE_CHARS if t not in tokens_by_text]
    if missing:
        raise ValueError(f"{source}: the byte token {missing[0]!r} is missing")
    texts = list(tokens_by_text)
    ids = values if tokens_by_text is encoder else list(tokens_by_text.values())
    is_mergeable = list(map(mergeable.__contains__, texts))
    mergeable_texts = list(itertools.compress(texts, is_mergeable))
    mergeable_ids = list(itertools.compress(ids, is_mergeable))
    # ids index a table: refuse far-off ids before allocating it (fastbpe.formats.ids)
    size = table_size(max(mergeable_ids), len(mergeable_ids), len(tokens_by_text) - len(mergeable_ids), source)
    tokens: List[bytes] = [b""] * size
    converted = texts_to_tokens(mergeable_texts)
    if np.bincount(mergeable_ids, minlength=size).max() <= 1 and None not in converted:
        # each mergeable text byte-level, with an id of its own (GPT-2's): the table at once
        for i, token in zip(mergeable_ids, converted):
            tokens[i] = token
        specials = {text: i for text, i, m in zip(texts, ids, is_mergeable) if not m}
    else:  # one by one, to name the first bad entry
        specials = {}
        for text, i in tokens_by_text.items():
            if text in mergeable:
                if tokens[i]:
                    raise ValueError(f"{os.fspath(encoder_json)}: id {i} is used twice")
                tokens[i] = text_to_token(text)
            else:
                specials[text] = i
    left_ids, right_ids = list(map(tokens_by_text.get, lefts)), list(map(tokens_by_text.get, rights))
    if None in left_ids or None in right_ids or not all(map(tokens_by_text.__contains__, joined)):
        for number, (a, b) in enumerate(zip(lefts, rights)):
            if a not in tokens_by_text or b not in tokens_by_text or a + b not in tokens_by_text:
                raise ValueError(f"{os.fspath(vocab_bpe)}: merge {number} ({a!r} {b!r}) uses a token "
                                 f"missing from {os.fspath(encoder_json)}")
    # An entry no merge makes is a special token (GPT-2 has one, <|endoftext|>); many of them
    # mean a vocab.bpe cut short or from another vocabulary, whose ids would be wrong
    if len(specials) > max(64, len(tokens_by_text) // 100):
        example = next(iter(specials))
        raise ValueError(f"{os.fspath(vocab_bpe)}: {len(specials)} entries of {os.fspath(encoder_json)} (such as "
                         f"{example!r}) are made by no merge: is vocab.bpe cut short, or from another encoder.json?")
    # and one that spells a space or a control byte as byte-level text does (Ġ, Ċ...) is an
    # ordinary token no merge makes, not the name of a special token: a few merges missing
    unmade = next((text for text in specials if not SPELLED_BYTES.isdisjoint(text)), None)
    if unmade is not None:
        raise ValueError(f"{os.fspath(vocab_bpe)}: the entry {unmade!r} of {os.fspath(encoder_json)} is made by no "
                         "merge, and it is byte-level text, not a special token's name: is vocab.bpe cut short, or "
                         "from another encoder.json?")
    merge_ids = np.array([left_ids, right_ids], dtype=np.int64).T.reshape(-1, 2)
    return dict(tokens=tokens, merges=merge_ids, pattern=pattern, special_tokens=specials,
                merge_rule="token", whole_token_lookup=True)


def write(tok, directory: PathLike) -> None:
    """Write ``encoder.json`` and ``vocab.bpe`` into ``directory`` (created if needed)."""
    check_byte_level(tok)
    check_plain_steps(tok, "GPT-2's encoder.json + vocab.bpe")
    if resolve(tok.splitter.pattern) is not TABLE["gpt2"] or tok.splitter.split_gaps or tok.splitter.prefix_space:
        raise ValueError(f"GPT-2's encoder.json + vocab.bpe hold no split pattern (they are read with GPT-2's), and "
                         f"this tokenizer splits with {tok.splitter.pattern!r:.60}; write a .tiktoken file or a "
                         "Hugging Face tokenizer.json, which hold it")
    directory = Path(directory)
    encoder = {token_to_text(t): i for i, t in enumerate(tok.token_bytes) if t}
    check_specials_apart(tok.special_tokens, encoder, "encoder.json")
    unlisted = [name for name in tok.special_tokens if name != "<|endoftext|>"]
    if unlisted:
        # (fastbpe reads an entry no merge makes as a special token; transformers' GPT2Tokenizer
        # knows <|endoftext|> alone and reads the others' text as ordinary text)
        warnings.warn(f"GPT-2's files list no special tokens: {', '.join(map(repr, unlisted[:3]))}"
                      f"{' and more' if len(unlisted) > 3 else ''} go into encoder.json as entries, which fastbpe "
                      "reads back as special tokens and GPT-2's own readers (transformers' GPT2Tokenizer) as "
                      "text; a tokenizer.json or a .tiktoken file lists them", stacklevel=caller_stacklevel())
    encoder.update(tok.special_tokens)
    lines = ["#version: 0.2"] + [f"{token_to_text(tok.token_bytes[a])} {token_to_text(tok.token_bytes[b])}"
                                 for a, b in tok.merge_ids.tolist()]
    # (both in full before either replaces its old file: a full disk leaves the old pair)
    with folder_made_for(directory):
        write_atomic_files([(directory / "encoder.json", json_bytes(encoder)),
                            (directory / "vocab.bpe", ("\n".join(lines) + "\n").encode("utf-8"))])
