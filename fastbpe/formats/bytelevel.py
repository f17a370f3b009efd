"""GPT-2's byte-level codec: every byte value as a printable character, for token files.

Byte-level vocabularies are stored as text (Hugging Face ``tokenizer.json``, GPT-2's
``encoder.json``/``vocab.bpe``, fastbpe's own JSON) by mapping each of the 256 byte values to a
printable character: printable Latin-1 bytes to themselves, the others (controls, space, ...) to
the code points from U+0100 on, in byte order.
"""
import collections
from typing import Callable, Dict, List, Optional

import numpy as np

from .._core.encode import lookup_tokens
from .ids import ID_LIMIT, table_size

__all__ = ["bytes_to_unicode", "token_to_text", "text_to_token", "texts_to_tokens", "text_byte_values",
           "code_point_bytes", "check_byte_level", "check_specials_apart", "scanned_tables"]


def bytes_to_unicode() -> Dict[int, str]:
    """GPT-2's reversible map of the 256 byte values to printable characters.

    >>> m = bytes_to_unicode()
    >>> m[ord("a")], m[ord(" ")], m[ord("\\n")], len(set(m.values()))
    ('a', 'Ġ', 'Ċ', 256)
    """
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


_BYTE_TO_CHAR = bytes_to_unicode()
_CHAR_TO_BYTE = {c: b for b, c in _BYTE_TO_CHAR.items()}


def token_to_text(token: bytes) -> str:
    """A token's bytes as GPT-2 byte-level text.

    >>> token_to_text(b" hi\\n")
    'ĠhiĊ'
    """
    return "".join(_BYTE_TO_CHAR[b] for b in token)


def text_to_token(text: str) -> bytes:
    """The bytes of a GPT-2 byte-level token text; ValueError for a character outside the map.

    >>> text_to_token("ĠhiĊ")
    b' hi\\n'
    """
    try:
        return bytes(_CHAR_TO_BYTE[c] for c in text)
    except KeyError as exc:
        raise ValueError(f"{text!r} is not a byte token in GPT-2's byte-to-unicode form") from exc


# code point -> byte value (-1: not a byte-level character), for texts_to_tokens
_CHAR_TABLE = np.full(max(map(ord, _CHAR_TO_BYTE)) + 2, -1, dtype=np.int16)
for _char, _byte in _CHAR_TO_BYTE.items():
    _CHAR_TABLE[ord(_char)] = _byte


_CHAR_TABLE.flags.writeable = False


def code_point_bytes() -> np.ndarray:
    """int16, read-only: the byte value each code point stands for in GPT-2 byte-level text
    (-1: none; code points past the end stand for none)."""
    return _CHAR_TABLE


def text_byte_values(points: np.ndarray) -> np.ndarray:
    """The byte value of each code point of GPT-2 byte-level text (int16; -1 for a character
    outside the map)."""
    return _CHAR_TABLE.take(points, mode="clip")  # (the table's last entry is -1)


def texts_to_tokens(texts: List[str]) -> List[Optional[bytes]]:
    """:func:`text_to_token` of many texts at once (NumPy over all their characters), None
    for a text that is not byte-level.

    >>> texts_to_tokens(["ĠhiĊ", "", "<｜x｜>"])
    [b' hi\\n', b'', None]
    """
    joined = "".join(texts)
    values = text_byte_values(np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32))
    ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
    starts = ends - np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    bad = np.flatnonzero(values < 0)
    blob = values.astype(np.uint8).tobytes()
    tokens: List[Optional[bytes]] = [blob[a:b] for a, b in zip(starts.tolist(), ends.tolist())]
    if len(bad):
        for k in np.unique(np.searchsorted(ends, bad, side="right")).tolist():
            tokens[k] = None
    return tokens


def as_token_text(characters: bool) -> Callable[[bytes], str]:
    """How a file spells a token's bytes as text: character-level tokens as their UTF-8 text (a
    lone surrogate kept), byte-level ones in GPT-2's byte-to-unicode form (:func:`token_to_text`).

    >>> as_token_text(True)("▁a".encode()), as_token_text(False)(b" a")
    ('▁a', 'Ġa')
    """
    return _utf8_text if characters else token_to_text


def _utf8_text(token: bytes) -> str:
    return token.decode("utf-8", "surrogatepass")


def check_byte_level(tok, one_split: bool = True, suffix: bool = False) -> None:
    """Refuse to export a tokenizer the peer formats cannot express: character-level, word
    markers, an ``end_of_word_suffix`` or ``continuing_subword_prefix`` (unless ``suffix``:
    Hugging Face's BPE has them), or
    (``one_split``) several split stages."""
    if tok.unit != "bytes" or tok.word_start or tok.word_end:
        raise ValueError("only byte-level tokenizers without word markers can be exported to this format")
    if (tok.end_of_word_suffix or tok.continuing_subword_prefix) and not suffix:
        raise ValueError("a tokenizer with an end_of_word_suffix or a continuing_subword_prefix can be exported "
                         "only to tokenizer.json")
    if one_split and tok.split_stages:
        raise ValueError("this format has a single split pattern; the tokenizer splits in several stages")


def check_plain_steps(tok, file_name: str) -> None:
    """Refuse to write a tokenizer to a format of ranks or merges alone (tiktoken's, GPT-2's)
    when it has a step the format cannot hold: a normaliser (Qwen3's NFC), or special tokens
    with matching options (Qwen3's ``<think>``, matched in every text, which tiktoken would
    take for a special token to allow). Read back, it would encode some text otherwise."""
    if tok.normalizer is not None:
        raise ValueError(f"{file_name} cannot hold a normaliser, and this tokenizer normalises text first "
                         f"({tok.normalizer!r:.60}); write a Hugging Face tokenizer.json, which holds it")
    options = tok.special_token_options
    if options:
        name = next(iter(options))
        raise ValueError(f"{file_name} cannot hold options of special tokens, and {name!r} has some "
                         f"({', '.join(sorted(options[name]))}); write a Hugging Face tokenizer.json, which holds them")


def check_specials_apart(special_tokens: Dict[str, Optional[int]], vocab: Dict[str, int], file_name: str) -> None:
    """Refuse to write a special token whose text is the text of another token of ``vocab``
    (text -> id, as the file spells the tokens): ``file_name`` holds one id per text (its
    reader gives the text one id: the token's, in tokenizers and tiktoken's GPT-2 reader).

    >>> check_specials_apart({"user": 9}, {"user": 3}, "encoder.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: special token 'user' (id 9) has the text of token 3 in encoder.json, which gives a text one id: ...
    """
    for name, i in special_tokens.items():
        if vocab.get(name, i) != i:
            given = "" if i is None else f" (id {i})"  # (None: checked before it has an id)
            raise ValueError(f"special token {name!r}{given} has the text of token {vocab[name]} in {file_name}, "
                             "which gives a text one id: rename the special token, or save a fastbpe file")


def scanned_tables(scanned: tuple, added: List[str], source: str, made: bool = False,
                   as_tokens: Callable[[List[str]], List[Optional[bytes]]] = texts_to_tokens) -> Optional[tuple]:
    """The token table and merge pairs of a vocabulary and merges read by compiled code
    (``scan_bpe_json``, ``scan_gpt2_files``: ``(tokens, ids, merge_blob, merge_offsets)``), and
    the vocab id of each of the ``added`` token texts that is a vocab key (looked up with the
    merges' parts); or None when it is not the plain case (every key a byte-level token with an
    id of its own, every merge a pair of tokens): the caller's reader of parsed text then says
    what is wrong, or reads what this does not. ``made``: a fourth item, the id of each merge's
    result (its two parts together; -1 where that is no token), looked up in the same call.
    ``as_tokens``: the token bytes of texts (None: none), byte-level text unless told."""
    tokens, ids, blob, offsets = scanned
    if len(ids) and (ids.max() >= ID_LIMIT or not all(tokens)):
        return None
    try:
        size = table_size(int(ids.max(initial=-1)), len(ids), len(added), source)
    except ValueError:
        return None
    if np.bincount(ids, minlength=size).max(initial=0) > 1:
        return None
    table: List[bytes] = [b""] * size
    collections.deque(map(table.__setitem__, ids.tolist(), tokens), maxlen=0)
    if (np.diff(offsets) == 0).any():
        return None
    # the added texts that are tokens' text are looked up after the merges' parts, in one call
    added_bytes = {content: token for content, token in zip(added, as_tokens(added)) if token}
    extra = list(added_bytes.values())
    parts = len(offsets) - 1
    if made:  # the blob again, cut after every second part: a merge's parts lie side by side
        blob = np.concatenate([blob, blob])
        offsets = np.concatenate([offsets, offsets[-1] + offsets[2::2]])
    if extra:
        blob = np.concatenate([blob, np.frombuffer(b"".join(extra), np.uint8)])
        offsets = np.concatenate([offsets, offsets[-1] + np.cumsum([len(token) for token in extra])])
    try:
        found = lookup_tokens(table, blob, offsets)
    except ValueError:
        return None  # two keys with the same bytes
    pair_ids, added_ids = found[:parts], found[len(found) - len(extra):].tolist()
    if (pair_ids < 0).any():
        return None
    in_vocab = {content: i for content, i in zip(added_bytes, added_ids) if i >= 0}
    tables = table, pair_ids.astype(np.int64).reshape(-1, 2), in_vocab
    return tables + (found[parts:len(found) - len(extra)],) if made else tables
