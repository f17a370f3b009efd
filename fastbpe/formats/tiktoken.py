"""tiktoken's ``.tiktoken`` rank files (lines ``base64(token) rank``) and OpenAI's presets.

A loaded file encodes as tiktoken does: ``merge_rule="token"`` (the adjacent pair whose
concatenation has the lowest rank) with the whole-chunk lookup; ids are the ranks. The merges the
model derives its merges from the ranks only when asked for them (tiktoken's rule needs none).
"""
import base64
import binascii
import os
import zlib
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple, Union

import numpy as np

from .._core.encode import read_rank_lines
from ..fileio import json_bytes, read_json, write_atomic_files
from ..split.patterns import GPT2_PATTERN, check_user_pattern
from .bytelevel import check_byte_level, check_plain_steps
from .ids import check_special_ids, table_size

__all__ = ["read_tiktoken_ranks", "read", "read_openai", "read_with_sidecar", "write", "to_tiktoken_encoding",
           "check_special_tokens", "spec_from_table", "OPENAI_ENCODINGS"]

PathLike = Union[str, os.PathLike]

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX = "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

# tiktoken's published split patterns and special tokens (tiktoken_ext/openai_public.py).
OPENAI_ENCODINGS: Dict[str, Tuple[str, Dict[str, int]]] = {
    "r50k_base": (GPT2_PATTERN, {ENDOFTEXT: 50256}),
    "p50k_base": (GPT2_PATTERN, {ENDOFTEXT: 50256}),
    "p50k_edit": (GPT2_PATTERN, {ENDOFTEXT: 50256, FIM_PREFIX: 50281, FIM_MIDDLE: 50282, FIM_SUFFIX: 50283}),
    "cl100k_base": ("cl100k", {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259,
                               FIM_SUFFIX: 100260, ENDOFPROMPT: 100276}),
    "o200k_base": ("o200k", {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}),
}
_TIKTOKEN_FILE = {"p50k_edit": "p50k_base"}
# How many ranks each published file holds: a file of another encoding is refused, not mixed
# with this one's pattern and special tokens into a tokenizer nobody published.
OPENAI_RANK_COUNTS = {"r50k_base": 50256, "p50k_base": 50280, "p50k_edit": 50280, "cl100k_base": 100256,
                      "o200k_base": 199998}


def read_tiktoken_ranks(path: PathLike) -> Dict[bytes, int]:
    """``{token bytes: rank}`` of a ``.tiktoken`` file (lines ``base64(token) rank``); an empty
    token (``=``, which tiktoken keeps as ``b""``) is left out, its rank a gap."""
    tokens, ranks = read_rank_table(path)
    table = dict(zip(tokens, ranks.tolist()))
    if len(table) != len(tokens):
        with open(path, "rb") as f:
            _read_lines(path, f.read())  # says which line repeats a token
    return table


def read_rank_table(path: PathLike) -> Tuple[List[bytes], np.ndarray]:
    """The tokens of a ``.tiktoken`` file in file order and their ranks (int64), checked.

    A well-formed file is read in one compiled pass (``fastbpe/_core/rank_file.h``); anything else goes
    through the line reader :func:`_read_lines`, which says what is wrong on which line. Both
    give the same result or the same error (tested). Tokens that appear twice are left to the
    tokenizer, which refuses them; an empty token (``=``) is left out, its rank a gap."""
    with open(path, "rb") as f:
        data = f.read()
    table = read_rank_lines(data)
    if table is None:
        return _read_lines(path, data)
    tokens, ranks = table
    in_order = ranks[0] == 0 and (np.diff(ranks) == 1).all()  # distinct, then
    if int(ranks.max()) >= 2**31 - 1 or not in_order and (np.diff(np.sort(ranks)) == 0).any():
        return _read_lines(path, data)  # for its message
    if not all(tokens):  # an empty token: its rank is a gap (see _read_lines)
        kept = [k for k, token in enumerate(tokens) if token]
        if len(tokens) - len(kept) > 1 or not kept:
            return _read_lines(path, data)  # (which says that it appears twice, or that no token is left)
        tokens, ranks = [tokens[k] for k in kept], ranks[kept]
    return tokens, ranks


def _read_lines(path: PathLike, data: bytes) -> Tuple[List[bytes], np.ndarray]:
    """:func:`read_rank_table` one line at a time: the reference, and the reader of errors."""
    ranks: Dict[bytes, int] = {}
    seen_ranks: Dict[int, int] = {}
    empty = False  # an empty token read
    for number, line in enumerate(data.splitlines(keepends=True), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 2:
            raise ValueError(f"{os.fspath(path)}, line {number}: expected 'base64-token rank', got {line[:60]!r}")
        try:
            token = base64.b64decode(fields[0], validate=True) if fields[0].strip(b"=") else b""
            rank = int(fields[1])
        except (binascii.Error, ValueError):
            raise ValueError(f"{os.fspath(path)}, line {number}: bad token or rank {line[:60]!r}") from None
        if rank < 0 or rank >= 2**31 - 1:
            raise ValueError(f"{os.fspath(path)}, line {number}: rank {rank} out of range")
        if token in ranks or not token and empty:
            raise ValueError(f"{os.fspath(path)}, line {number}: token {token!r} appears twice")
        if rank in seen_ranks:
            raise ValueError(f"{os.fspath(path)}, line {number}: rank {rank} appears twice "
                             f"(also on line {seen_ranks[rank]})")
        seen_ranks[rank] = number
        if token:
            ranks[token] = rank
        else:
            # tiktoken reads "=" as a token of no bytes, which no text encodes to (Whisper's
            # multilingual.tiktoken has one, rank 50256). fastbpe's tokens hold a byte at least:
            # the rank is left a gap, an id that encoding never gives and decoding refuses
            # (tiktoken decodes it as '')
            empty = True
    if not ranks:
        raise ValueError(f"{os.fspath(path)}: no tokens (empty or truncated .tiktoken file)")
    return list(ranks), np.array(list(ranks.values()), dtype=np.int64)


def spec_from_ranks(ranks: Mapping[bytes, int], pattern: str, special_tokens: Mapping[str, int],
                    source: str) -> dict:
    """The tokenizer that encodes like tiktoken with these ranks (ids = ranks)."""
    check_user_pattern(pattern)
    if not ranks:
        raise ValueError(f"{source}: no ranks (the 256 bytes at least)")
    return spec_from_table(list(ranks), np.array(list(ranks.values()), dtype=np.int64), pattern,
                           special_tokens, source)


def spec_from_table(tokens: List[bytes], ranks: np.ndarray, pattern: str, special_tokens: Mapping[str, int],
                    source: str) -> dict:
    """The tokenizer that encodes as tiktoken with the token ``tokens[k]`` of rank ``ranks[k]``
    (int64, a few gaps at most), the split ``pattern`` and ``special_tokens``; checked."""
    special_tokens = check_special_ids(special_tokens, source)
    if len(np.unique(ranks)) != len(ranks):  # (tiktoken refuses them too: two tokens, one id)
        seen: Dict[int, bytes] = {}
        for token, rank in zip(tokens, ranks.tolist()):
            if rank in seen:
                raise ValueError(f"{source}: rank {rank} is given to two tokens, {seen[rank]!r} and {token!r}")
            seen[rank] = token
    # ranks index a table: refuse far-off ranks before allocating it (fastbpe.formats.ids)
    size = table_size(int(ranks.max()), len(tokens), len(special_tokens), source)
    if size == len(tokens) and (ranks == np.arange(size)).all():
        table = tokens  # ranks 0..n-1 in file order: every published file
    else:
        table = [b""] * size
        for token, rank in zip(tokens, ranks.tolist()):
            table[rank] = token
    one_byte = np.flatnonzero(np.fromiter(map(len, table), dtype=np.int64, count=len(table)) == 1)
    singles = {table[i][0] for i in one_byte.tolist()}  # (a few hundred: no Python loop over all)
    missing = [b for b in range(256) if b not in singles]
    if missing:
        raise ValueError(f"{source}: byte 0x{missing[0]:02x} has no token, so some text could not be encoded")
    for text, sid in special_tokens.items():
        if sid < size and table[sid]:
            raise ValueError(f"{source}: special token {text!r} has id {sid}, which a ranked token uses")
    # merges=None: tiktoken's rule needs none; the model derives them if they are asked for
    return dict(tokens=table, merges=None, pattern=pattern,
                special_tokens=dict(special_tokens), merge_rule="token", whole_token_lookup=True)


def read(path: PathLike, pattern: str, special_tokens: Optional[Mapping[str, int]] = None) -> dict:
    """A ``.tiktoken`` rank file; ``pattern`` is the split regex (or a fastbpe pattern name),
    ``special_tokens`` maps their text to ids. See :func:`read_openai` for the presets.

    Ranks may leave gaps, but only a few (:mod:`fastbpe.formats.ids`): a file naming a rank
    far beyond its number of lines is refused before anything is allocated for it."""
    check_user_pattern(pattern)
    tokens, ranks = read_rank_table(path)
    return spec_from_table(tokens, ranks, pattern, special_tokens or {}, os.fspath(path))


def read_openai(name: str, path: PathLike) -> dict:
    """One of OpenAI's encodings (``r50k_base``, ``p50k_base``, ``p50k_edit``, ``cl100k_base``,
    ``o200k_base``) from its ``.tiktoken`` file, or from a folder holding ``{name}.tiktoken``,
    with its published pattern and special tokens (and ``"name"``, the tokenizer's ``name``).
    Nothing is downloaded."""
    if name not in OPENAI_ENCODINGS:
        raise ValueError(f"unknown OpenAI encoding {name!r}; known: {sorted(OPENAI_ENCODINGS)}")
    path = Path(path)
    if path.is_dir():
        path = path / f"{_TIKTOKEN_FILE.get(name, name)}.tiktoken"
    pattern, specials = OPENAI_ENCODINGS[name]
    check_user_pattern(pattern)
    tokens, ranks = read_rank_table(path)  # (a token named twice: the tokenizer refuses it)
    if len(tokens) != OPENAI_RANK_COUNTS[name]:
        fits = [n for n, count in OPENAI_RANK_COUNTS.items() if count == len(tokens)]
        raise ValueError(f"{os.fspath(path)} holds {len(tokens)} ranks, {name} has {OPENAI_RANK_COUNTS[name]}"
                         + (f": it looks like {fits[0]}.tiktoken" if fits else
                            ": use Tokenizer.from_tiktoken with its own pattern for other rank files"))
    return {**spec_from_table(tokens, ranks, pattern, specials, os.fspath(path)), "name": name}


def read_with_sidecar(path: PathLike, sidecar: Optional[PathLike] = None) -> dict:
    """A ``.tiktoken`` file written by :func:`write`, with the pattern and special tokens of its
    sidecar (``path + ".json"`` unless given)."""
    sidecar = os.fspath(path) + ".json" if sidecar is None else sidecar
    data = read_json(sidecar, "tiktoken sidecar (pat_str and special_tokens)")
    specials = data.get("special_tokens", {}) if isinstance(data, Mapping) else None
    if not isinstance(data, Mapping) or not isinstance(data.get("pat_str"), str) or not isinstance(specials, Mapping) \
            or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                       for k, v in specials.items()):
        raise ValueError(f"{os.fspath(sidecar)}: expected {{\"pat_str\": str, \"special_tokens\": {{str: int}}}}")
    spec = read(path, data["pat_str"], specials)
    if "tokens_crc32" in data and data["tokens_crc32"] != _tokens_crc32(spec["tokens"]):
        raise ValueError(f"{os.fspath(sidecar)} was written with other ranks than {os.path.basename(path)}'s (a save "
                         "interrupted between the two files, or one of them replaced?); write both again")
    return spec


def _tokens_crc32(tokens: List[bytes]) -> int:
    """A checksum of a rank table's tokens in rank order, which the sidecar records: it tells a
    sidecar from another run's whatever the ranks file's line endings (0.2 ms for 100k tokens).

    >>> _tokens_crc32([b"a", b"", b"bc"]) == _tokens_crc32([b"a", b"bc"])
    True
    """
    return zlib.crc32(b"".join(tokens), len(tokens) - tokens.count(b""))


def check_special_tokens(names) -> None:
    """Refuse special tokens of which one begins another (``<a>`` and ``<a><b>``): tiktoken
    finds special tokens by an alternation whose order changes from one ``Encoding`` to the
    next (measured: each of three such tokens taken in some), so where both match it may take
    the shorter one, and encode ``<a><b>`` as ``<a>`` and text, where
    fastbpe and Hugging Face take the longest. Tokens that merely overlap are matched alike
    (the leftmost start wins in both).

    >>> check_special_tokens(["<|endoftext|>", "<|pad|>"])
    >>> check_special_tokens(["<a>", "<a><b>"])
    Traceback (most recent call last):
    ...
    ValueError: special tokens '<a>' and '<a><b>': one begins the other, and tiktoken matches special tokens in no fixed order (it may take '<a>' inside '<a><b>'); rename one, or write a Hugging Face tokenizer.json
    """
    ordered = sorted(names)
    for shorter, longer in zip(ordered, ordered[1:]):  # (a prefix sorts right before what it begins, or before one it also begins)
        if longer.startswith(shorter):
            raise ValueError(f"special tokens {shorter!r} and {longer!r}: one begins the other, and tiktoken matches "
                             f"special tokens in no fixed order (it may take {shorter!r} inside {longer!r}); rename "
                             "one, or write a Hugging Face tokenizer.json")


def check_encoding(tok) -> None:
    """Refuse what a tiktoken encoding cannot hold: a tokenizer that is not byte-level, or has a
    step tiktoken lacks (:func:`.bytelevel.check_plain_steps`), or special tokens of which one
    begins another."""
    check_byte_level(tok)
    check_plain_steps(tok, "a tiktoken encoding")
    check_special_tokens(tok.special_tokens)


def mergeable_ranks(tok) -> Dict[bytes, int]:
    """``{token bytes: rank}`` as a tiktoken encoding ranks them (rank = id): every token but the
    special tokens, which a ``tokenizer.json`` may list in its vocabulary too and tiktoken keeps
    apart (one of them ranked would collide with itself as a special token)."""
    specials = set(tok.special_tokens.values())
    return {token: i for i, token in enumerate(tok.token_bytes) if token and i not in specials}


def write(tok, path: PathLike) -> None:
    """Write ``path`` (the ``.tiktoken`` ranks: id = rank) and ``path + ".json"`` (the split
    pattern as ``pat_str`` and the special tokens), both atomically.

    tiktoken encodes by its own rule (lowest rank of a concatenation, whole chunks first). For
    tokenizers read from tiktoken or GPT-2 files that is their rule; for tokenizers trained by
    fastbpe the ids agree with fastbpe's on real text (tested), since merged tokens are numbered
    in merge order; for imported Hugging Face vocabularies check on your text. ``path`` ends in
    ``.tiktoken`` (any case): by that name :func:`fastbpe.load` and the command line know it."""
    if not os.fspath(path).lower().endswith(".tiktoken"):  # (before anything is written)
        raise ValueError(f"{os.fspath(path)!r}: name the ranks file NAME.tiktoken (its pattern and special "
                         "tokens go beside it, in NAME.tiktoken.json): fastbpe.load knows a ranks file by that "
                         "name")
    check_encoding(tok)
    pat_str = tok.splitter.to_tiktoken()  # before anything is written
    ranked = mergeable_ranks(tok)
    ranks = b"\n".join(base64.b64encode(t) + b" " + str(i).encode() for t, i in ranked.items()) + b"\n"
    # the sidecar names its ranks by a checksum, so that a pair mixed by a save that died between
    # the two renames is refused when read
    sidecar = json_bytes({"pat_str": pat_str, "special_tokens": tok.special_tokens,
                          "tokens_crc32": _tokens_crc32(list(ranked))}, indent=1)
    write_atomic_files([(path, ranks), (os.fspath(path) + ".json", sidecar)])  # (both in full before either)


def to_tiktoken_encoding(tok, name: str = "fastbpe"):
    """A ``tiktoken.Encoding`` with this tokenizer's ranks, pattern and special tokens."""
    import tiktoken

    check_encoding(tok)
    return tiktoken.Encoding(name=name, pat_str=tok.splitter.to_tiktoken(), mergeable_ranks=mergeable_ranks(tok),
                             special_tokens=dict(tok.special_tokens))
