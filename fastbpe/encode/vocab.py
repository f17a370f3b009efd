"""The vocabulary seen from outside: id <-> token lookups, decoding, and character offsets.

Decoding gathers token bytes from one flat buffer (``DecodeTable``: every token's bytes, special
tokens' UTF-8 in their slots, and int64 offsets) in the compiled core (``ByteTable``): the
ids are checked, the result allocated once and filled (with the GIL released for long ones).
``decode`` gathers from a second table (``TextTable``) where a vocabulary's space marker is
already the space it stands for, which also drops the marker put before the text.

Character offsets (``encode_with_offsets``) are those of Hugging Face's ``Encoding.offsets``
for byte-level tokenizers: token ``k`` spans the characters its bytes belong to, so a token
holding part of a multi-byte character spans that whole character (and so does the token
holding the rest). tiktoken's ``decode_with_offsets`` gives the start of the same span; its
starts are ``offsets[:, 0]``. Computed with array operations: the cumulative byte lengths of the
tokens, then a byte -> character map of the text.
"""
import codecs
import unicodedata
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from .._core.encode import LEADING_RULES, SLOT_KINDS, ByteTable, byte_lengths
from ..formats.bytelevel import as_token_text, text_to_token
from . import surrogates
from .normalizers import UNICODE_FORMS
from .special import ALWAYS, USER_DEFINED, check_disallowed

__all__ = ["UnknownTokenIdError", "DecodeTable", "decode_bytes", "token_to_id", "id_to_token", "decode_single_token_bytes",
           "decode_tokens_bytes", "decode_with_offsets", "encode_single_token", "n_vocab", "eot_token",
           "vocab_len", "encode_with_offsets", "char_offsets", "lengths_and_first_bytes", "FALLBACK_REPLACEMENTS",
           "TextTable", "text_table", "decode_text", "with_leading_rule",
           "without_special_tokens"]

# Special tokens whose ids lie this far beyond the vocabulary are left out of the flat table
# (decoded by the slow path), so an id of 2**31 - 1 costs no 16 GB of offsets.
TABLE_SLACK = 65536
# What a decode table's slot is beyond its bytes (ByteTable's kinds), and the rules that drop
# the space marker put before the text (by Markers.dummy_prefix)
KIND_EMPTY, KIND_BYTE, KIND_MARKED, KIND_ALONE = (SLOT_KINDS[k] for k in ("empty", "byte", "marked", "alone"))
LEAD_NONE, LEAD_STRIP, LEAD_PIECE, LEAD_PIECES, LEAD_TOKEN = (LEADING_RULES[k] for k in (False, True, "piece",
                                                                                         "pieces", "token"))
# Names of the end-of-text token, by family: tiktoken's, Llama 3's, SentencePiece's.
EOT_NAMES = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>")


class UnknownTokenIdError(ValueError, KeyError):
    """An id given to decode that is no token of the vocabulary. Both a ValueError, as
    fastbpe's other bad arguments are, and a KeyError, as tiktoken's decoders raise, so that
    a caller used to either catches it.

    >>> issubclass(UnknownTokenIdError, KeyError) and issubclass(UnknownTokenIdError, ValueError)
    True
    >>> str(UnknownTokenIdError("token id 7 is not in the vocabulary"))
    'token id 7 is not in the vocabulary'
    """

    __str__ = Exception.__str__  # (KeyError's would show the message in quotes)


def token_list_lengths(tokens) -> np.ndarray:
    """The int64 length of each token (bytes, or any sized item): compiled for a list of
    bytes, a Python step an item otherwise.

    >>> token_list_lengths([b"ab", b"", b"c"]).tolist()
    [2, 0, 1]
    >>> token_list_lengths((b"ab", bytearray(b"c"))).tolist()
    [2, 1]
    """
    lengths = byte_lengths(tokens) if type(tokens) is list else None
    if lengths is None:
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    return lengths


def lengths_and_first_bytes(tokens) -> Tuple[np.ndarray, np.ndarray]:
    """The int64 length and the first byte (0 for an empty token) of each token, in bulk: one
    join, no Python step a token.

    >>> [a.tolist() for a in lengths_and_first_bytes([b"ab", b"", b"c"])]
    [[2, 0, 1], [97, 0, 99]]
    """
    lengths = token_list_lengths(tokens)
    blob = np.frombuffer(b"".join(tokens) + b"\0", dtype=np.uint8)  # (an empty last token's start: the 0)
    return lengths, np.where(lengths > 0, blob[np.cumsum(lengths) - lengths], 0).astype(np.uint8)


class DecodeTable:
    """``flat`` (uint8) and ``offsets`` (int64, one more than ids): id ``i`` decodes to
    ``flat[offsets[i]:offsets[i + 1]]``; an empty slot is an id that decodes to nothing
    known (an unused id, or a special token beyond the table), unless it is a special token
    whose text is empty (a control piece: ``kinds`` says KIND_EMPTY, and the gathering takes
    it). ``pieces``: the same as one bytes per id; ``gather``: the compiled gathering over
    them (``ByteTable.gather``). ``specials``: the text each special token decodes to, by id."""

    def __init__(self, token_bytes, specials):
        size = len(token_bytes)
        near = {i: s for i, s in specials.items() if i < size + TABLE_SLACK}
        size = max([size, *(i + 1 for i in near)])
        pieces = list(token_bytes) + [b""] * (size - len(token_bytes))
        kinds = np.zeros(size, dtype=np.uint8)
        for i, text in near.items():
            if not pieces[i]:
                pieces[i] = text.encode("utf-8", "surrogatepass")  # as tokens are stored
                kinds[i] = 0 if text else KIND_EMPTY
        self.pieces, self.kinds, self.specials = pieces, kinds, specials
        self.flat = np.frombuffer(b"".join(pieces), dtype=np.uint8)
        self.offsets = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=size), out=self.offsets[1:])
        self.lengths = np.diff(self.offsets)
        self.gather = ByteTable(self.flat, self.offsets, kinds if kinds.any() else None).gather


class TextTable:
    """What ``decode`` gathers: a ``DecodeTable``'s bytes, but each space marker in a token
    that is no byte-fallback token written as the space it stands for (a ``▁`` that byte
    tokens spell stays ``▁``, as in SentencePiece's and tokenizers' decoding), with one flag
    set a slot (``kinds``: SLOT_KINDS) and the rule that drops the marker put before the text
    (``rule``: LEADING_RULES by ``Markers.dummy_prefix``; for ``"token"``, ``first`` is a
    second such table with the markers left out). ``gather`` applies the rule and hands back
    (None) ids whose byte runs meet across control pieces; ``gather_inner`` gathers the same
    bytes as they are: no rule, runs joined. A tokenizer with neither a space marker nor byte
    tokens shares its ``DecodeTable``'s gathering. ``skipped``: the ids ``skip_special_tokens``
    leaves out."""

    def __init__(self, tok, table: DecodeTable):
        texts = tok._special_texts()  # (a normalized added token as its text normalised)
        if texts != table.specials:
            table = DecodeTable(tok._decoded_token_bytes(), texts)
        self.specials = table.specials
        # tokenizers' skip_special_tokens leaves out an id whose text (as it decodes it) is the
        # name of a special token (not of an added token that is not special): a normalized one
        # whose normalising changes it is kept
        options = tok.specials.options
        special = {name for name in tok.special_tokens if not {ALWAYS, USER_DEFINED} & set(options.get(name, ()))}
        self.skipped = frozenset(i for name, i in tok.special_tokens.items()
                                 if (name if name in tok.special_surfaces else self.specials[i]) in special)
        kinds = table.kinds.copy()
        if tok.byte_fallback:
            byte_ids = tok._byte_token_ids()
            kinds[byte_ids[byte_ids < len(kinds)]] |= KIND_BYTE
        self.marker = tok.markers.space_marker_utf8
        self.flat, self.offsets = table.flat, table.offsets
        self.rule = LEADING_RULES[tok.markers.dummy_prefix] if self.marker else LEAD_NONE
        self.first = None
        if self.marker:
            if self.rule == LEAD_TOKEN:
                self.first = _markers_as_spaces(self.flat, self.offsets, kinds, self.marker, b"")[:2]
            self.flat, self.offsets, kinds = _markers_as_spaces(self.flat, self.offsets, kinds, self.marker)
        self.kinds = kinds
        if not self.marker and not tok.byte_fallback:
            self.gather = self.gather_inner = table.gather
            return
        self.gather = ByteTable(self.flat, self.offsets, kinds, self.rule, self.first).gather
        empty = kinds & KIND_EMPTY
        self.gather_inner = ByteTable(self.flat, self.offsets, empty if empty.any() else None).gather

    def kind(self, tok, i: int) -> int:
        """The flags of id ``i``, a special token far beyond the table included."""
        if 0 <= i < len(self.kinds):
            return int(self.kinds[i])
        raw = self._far_special(tok, i)
        if not raw:
            return KIND_EMPTY
        return (KIND_MARKED if self.marker and raw.startswith(self.marker) else 0) | \
            (KIND_ALONE if self.marker and raw == self.marker else 0)

    def text_bytes(self, tok, i: int, first: bool = False) -> bytes:
        """The text bytes of id ``i``, a special token far beyond the table included (``first``:
        as the first token, from ``self.first``)."""
        _id_bytes(tok, i)  # (the error an id that is no token deserves)
        i = int(i)
        flat, offsets = self.first if first else (self.flat, self.offsets)
        if i < len(self.kinds):
            return flat[offsets[i]:offsets[i + 1]].tobytes()
        raw = self._far_special(tok, i)
        return raw.replace(self.marker, b"" if first else b" ") if self.marker else raw

    def _far_special(self, tok, i: int) -> bytes:
        """The text of a special token beyond the table, its markers as they are."""
        return self.specials[int(i)].encode("utf-8", "surrogatepass")


def _markers_as_spaces(flat: np.ndarray, offsets: np.ndarray, kinds: np.ndarray, marker: bytes, space=b" "):
    """``(flat, offsets, kinds)`` with each ``marker`` inside a slot that is not KIND_BYTE
    written as one space (or left out: ``space=b""``), and KIND_MARKED / KIND_ALONE set for
    the slots that begin with one / are one. In bulk: a marker is one character, whose UTF-8
    never overlaps itself.

    >>> m = "▁".encode()  # (the last two slots: a byte token, and the rest of a ▁ across slots)
    >>> flat = np.frombuffer(m + b"a" + b"b" + m + m + m[:1] + m[1:], np.uint8)
    >>> f, o, k = _markers_as_spaces(flat, np.array([0, 4, 8, 11, 12, 14]), np.array([0, 0, 0, 2, 0], np.uint8), m)
    >>> f.tobytes(), o.tolist(), k.tolist()
    (b' ab  \xe2\x96\x81', [0, 2, 4, 5, 6, 8], [4, 0, 12, 2, 0])
    """
    width = len(marker)
    if len(flat) < width:
        return flat, offsets, kinds
    ends = len(flat) - width + 1
    at = flat[:ends] == marker[0]
    for k in range(1, width):
        at &= flat[k:ends + k] == marker[k]
    found = np.flatnonzero(at)
    slot = np.searchsorted(offsets, found, side="right") - 1
    keep = (found + width <= offsets[slot + 1]) & (kinds[slot] & KIND_BYTE == 0)
    found, slot = found[keep], slot[keep]
    spaced = flat.copy()
    spaced[found] = space[0] if space else 0
    kept = np.ones(len(flat), dtype=bool)
    for k in range(len(space), width):
        kept[found + k] = False
    spaced_offsets = offsets.copy()
    spaced_offsets[1:] -= np.cumsum(np.bincount(slot, minlength=len(kinds)) * (width - len(space)))
    kinds = kinds.copy()
    first = slot[found == offsets[slot]]
    kinds[first] |= KIND_MARKED
    kinds[first[offsets[first + 1] - offsets[first] == width]] |= KIND_ALONE
    return spaced[kept], spaced_offsets, kinds


def _table(tok) -> DecodeTable:
    table = getattr(tok, "_decode_table", None)
    if table is None:  # built once; two threads building it at once build equal tables
        table = tok._decode_table = DecodeTable(tok._decoded_token_bytes(), tok._decoded_specials())
    return table


def text_table(tok) -> TextTable:
    table = tok.__dict__.get("_text_table")
    if table is None:  # (as _table)
        table = tok._text_table = TextTable(tok, _table(tok))
    return table


def _check_ids(ids):
    """ids as a list of ints or an int64 array; TypeError for anything else (a str, bytes,
    floats: ``decode("12")`` and ``decode(b"\\x01")`` are mistakes, not ids)."""
    if type(ids) is list:  # (first: the common case, and a short decode is mostly such checks)
        return ids
    if isinstance(ids, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"token ids must be a sequence of ints or an int array, not {type(ids).__name__}")
    if isinstance(ids, np.ndarray):
        if ids.dtype.kind not in "iu":
            raise TypeError(f"token ids must be ints, got an array of {ids.dtype}")
        if ids.ndim != 1:
            raise ValueError(f"token ids must be one-dimensional, got shape {ids.shape}")
        if ids.dtype == np.uint64 and len(ids) and ids.max() >= 2**63:
            raise UnknownTokenIdError(f"token id {int(ids.max())} is not in the vocabulary")
        return np.ascontiguousarray(ids, dtype=np.int64)
    return ids if type(ids) is list else list(ids)


def _id_bytes(tok, i) -> bytes:
    """One id's bytes, with the error an id that is not one deserves."""
    if not _is_id(i):
        raise TypeError(f"token ids must be ints, got {type(i).__name__} {i!r:.40}")  # 97.5 is not 97
    i = int(i)
    table = _table(tok)
    if 0 <= i < len(table.pieces) and table.pieces[i]:
        return table.pieces[i]
    text = table.specials.get(i)  # (one far beyond the table)
    if text is not None:
        return text.encode("utf-8", "surrogatepass")
    raise UnknownTokenIdError(f"token id {i} is not in the vocabulary")


def decode_bytes(tok, ids) -> bytes:
    """The bytes the ids stand for (special tokens as their UTF-8 text)."""
    return _gathered(_table(tok).gather, _check_ids(ids), lambda i: _id_bytes(tok, i))


def _gathered(gather, ids, one) -> bytes:
    """``gather(ids)`` (checked ids); past an id the table cannot gather, ``one(id)`` for each
    (its bytes, or the error it deserves)."""
    out = gather(ids)
    if type(out) is bytes:
        return out
    ids = ids.tolist() if isinstance(ids, np.ndarray) else ids
    head = gather(ids[:out]) if out else b""
    return head + b"".join(map(one, ids[out:]))


# How decode (errors="replace") spells the bytes of a run of byte-fallback tokens that are not
# UTF-8: "token", one U+FFFD for each token of the run (tokenizers' ByteFallback decoder),
# or "byte", one for each byte that begins no character, the run's characters kept
# (SentencePiece's DecodeIds).
FALLBACK_REPLACEMENTS = ("token", "byte")


def _one_replacement_a_byte(error: UnicodeDecodeError) -> Tuple[str, int]:
    return "\ufffd", error.start + 1  # (the next byte decoded afresh: it may begin a character)


codecs.register_error("fastbpe.byte", _one_replacement_a_byte)


def without_special_tokens(tok, ids):
    """``ids`` without the special tokens' (tokenizers' ``skip_special_tokens``): not the
    added tokens a ``tokenizer.json`` marks ``"special": false``, nor SentencePiece's
    user-defined pieces (``TextTable.skipped`` says which). What is no int stays, for decoding
    to refuse.

    >>> from fastbpe import Tokenizer
    >>> tok = Tokenizer([b"a", b"b"], [], special_tokens={"<s>": 2, "<t>": 3},
    ...                 special_token_options={"<t>": {"always": True}})
    >>> without_special_tokens(tok, [2, 0, 3, 2, 1]), tok.decode([2, 0, 3, 1], skip_special_tokens=True)
    ([0, 3, 1], 'a<t>b')
    """
    skipped = text_table(tok).skipped
    ids = _check_ids(ids)
    if isinstance(ids, np.ndarray):
        return ids[~np.isin(ids, np.fromiter(skipped, dtype=np.int64, count=len(skipped)))]
    return [i for i in ids if not (i in skipped if type(i) is int else _is_id(i) and i in skipped)]


def _is_id(i) -> bool:
    """An int that may be an id (an int subclass, a NumPy int), not a bool."""
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def decode_text(tok, ids, errors: str) -> str:
    """``decode``'s text of ``ids`` (any ints) where the compiled gathering does not give it at
    once: ids it has not been given as a list, the first call (which builds the table), a
    special token far beyond the table, an id that is no token (the error), and the byte
    tokens of a ``byte_fallback`` tokenizer that spell no character, or whose runs meet
    across control pieces (``_text_by_runs``). Word markers are the caller's."""
    ids = _check_ids(ids)
    table = text_table(tok)
    data = table.gather(ids)
    if type(data) is int:  # (an id the table does not hold: a special token far beyond it, or the error it deserves)
        data = _gathered(table.gather_inner, ids, lambda i: table.text_bytes(tok, i))
        if not tok.byte_fallback:
            return with_leading_rule(tok, table, ids, data.decode("utf-8", errors))
        data = None  # (the ids checked: their byte runs are decoded apart)
    by_runs = tok.byte_fallback and errors == "replace"
    if data is not None:
        try:
            return data.decode("utf-8", "strict" if by_runs else errors)
        except UnicodeDecodeError:
            if not by_runs:
                raise
    return _text_by_runs(tok, table, ids, errors)


def named_with_markers(tok) -> frozenset:
    """The ids of the special tokens whose names hold a word marker (``<|im_start|>`` under
    ``word_start="_"``); worked out once per tokenizer (its special tokens never change)."""
    found = tok.__dict__.get("_named_with_markers")
    if found is None:
        markers = [m for m in (tok.markers.word_start, tok.markers.word_end) if m]
        found = frozenset(i for name, i in tok.special_tokens.items() if any(m in name for m in markers))
        tok.__dict__["_named_with_markers"] = found
    return found


def decode_parts(tok, ids, errors: str) -> List[str]:
    """``decode_text`` of ``ids`` for a tokenizer with word markers (``Markers.decode`` turns
    them into spaces): in parts, each special token whose name holds a word marker a part of
    its own, at an odd place (so ``<|im_start|>`` is not read as ``<|im``, a space, ``start|>``).
    Without such a name, one part.

    >>> from fastbpe import Tokenizer
    >>> tok = Tokenizer([b"_", b"a"], [], unit="chars", word_start="_", special_tokens={"<a_b>": 2})
    >>> decode_parts(tok, [0, 1, 2, 0, 1], "strict")
    ['_a', '<a_b>', '_a']
    """
    ids = _check_ids(ids)
    named = named_with_markers(tok)
    found = np.asarray(ids) if named and len(ids) else None
    if found is None or found.dtype.kind not in "iu":  # (what is no int is decode_text's to refuse)
        return [decode_text(tok, ids, errors)]
    cuts = np.flatnonzero(np.isin(found, np.fromiter(named, dtype=np.int64, count=len(named)))).tolist()
    parts, start = [], 0
    for cut in cuts:  # (ids are sliced where they came: a list's items are checked as given)
        parts += [decode_text(tok, ids[start:cut], errors), decode_text(tok, ids[cut:cut + 1], errors)]
        start = cut + 1
    return parts + [decode_text(tok, ids[start:], errors)]


def _text_by_runs(tok, table: TextTable, ids, errors: str) -> str:
    """The text of ``ids`` (checked), each run of byte tokens decoded on its own (a run ends
    at any other token, a control piece included, as in SentencePiece's decoding) and its
    bytes that are not UTF-8 replaced (``errors="replace"``) as ``tok.fallback_replacement``
    says (``FALLBACK_REPLACEMENTS``); every other token as ``decode`` gives it, then the
    leading rule. A loop over the runs, not the tokens.

    >>> from fastbpe import Tokenizer
    >>> tok = Tokenizer([bytes([b]) for b in b"A "] + [f"<0x{b:02X}>".encode() for b in range(256)], [],
    ...                 unit="chars", byte_fallback=True)
    >>> e2, x96, a = 2 + 0xE2, 2 + 0x96, 2 + 0x41
    >>> per_byte = Tokenizer(tok.token_bytes, [], unit="chars", byte_fallback=True, fallback_replacement="byte")
    >>> tok.decode([0, e2, x96, a, 1, e2]), per_byte.decode([0, e2, x96, a, 1, e2])
    ('A\ufffd\ufffd\ufffd \ufffd', 'A\ufffd\ufffdA \ufffd')
    """
    ids = np.asarray(ids, dtype=np.int64)
    if not len(ids):
        return ""
    runs = np.isin(ids, tok._byte_token_ids()) if tok.byte_fallback else np.zeros(len(ids), dtype=bool)
    cuts = [0, *(np.flatnonzero(runs[1:] != runs[:-1]) + 1).tolist(), len(ids)]
    parts = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        data = _gathered(table.gather_inner, ids[a:b], lambda i: table.text_bytes(tok, i))
        if not runs[a] or errors != "replace":
            parts.append(data.decode("utf-8", errors))
        elif tok.fallback_replacement == "byte":
            parts.append(data.decode("utf-8", "fastbpe.byte"))
        else:
            try:
                parts.append(data.decode("utf-8"))
            except UnicodeDecodeError:
                parts.append("\ufffd" * (b - a))
    return with_leading_rule(tok, table, ids, "".join(parts))


def with_leading_rule(tok, table: TextTable, ids, text: str) -> str:
    """``text``, the text of ``ids`` gathered without it, under the table's leading rule: the
    compiled gathering's rule (``_leading`` in encode.pyx), over ids it does not hold as well.
    ``LEAD_STRIP``: the first character dropped, when a space (tokenizers' Strip decoder, on the
    whole text). ``LEAD_TOKEN``: every marker of the first token dropped (tokenizers'
    Metaspace decoder; a byte token has none). The piece rules (SentencePiece's decoding): the
    space of the first piece with text dropped when it begins with the marker, and for
    ``LEAD_PIECES`` that of each piece of the marker alone before it; pieces without text
    (control pieces) are passed over, and a piece that does not begin with the marker (a byte
    piece, the unknown piece's surface) ends the count."""
    if table.rule == LEAD_NONE:
        return text
    if table.rule == LEAD_STRIP:
        return text[1:] if text.startswith(" ") else text
    ids = ids.tolist() if isinstance(ids, np.ndarray) else ids
    if table.rule == LEAD_TOKEN:
        if not ids or table.kind(tok, ids[0]) & KIND_BYTE:
            return text
        spaced = table.text_bytes(tok, ids[0]).decode("utf-8", "replace")
        return table.text_bytes(tok, ids[0], first=True).decode("utf-8", "replace") + text[len(spaced):]
    count = 0
    for i in ids:
        kind = table.kind(tok, i)
        if kind & KIND_EMPTY:
            continue
        if not kind & KIND_MARKED:
            break
        count += 1
        if table.rule == LEAD_PIECE or not kind & KIND_ALONE:
            break
    return text[count:]


def token_lengths(tok, ids: np.ndarray) -> np.ndarray:
    """Byte length of every id's token (int64); of a token list's items, see
    :func:`token_list_lengths`."""
    table = _table(tok)
    inside = (ids >= 0) & (ids < len(table.lengths))
    lengths = np.zeros(len(ids), dtype=np.int64)
    lengths[inside] = table.lengths[ids[inside]]
    for k in np.flatnonzero(lengths == 0).tolist():  # far-off special tokens (rare)
        lengths[k] = len(_id_bytes(tok, int(ids[k])))
    return lengths


def token_to_id(tok, token: Union[str, bytes]) -> Optional[int]:
    """The id of a token given as its bytes, or as text, read as Hugging Face's
    ``token_to_id`` reads it: a special token's name, else the token so spelled in its files
    (byte-level: ``"Ġworld"`` is `` world``, ``"é"`` the byte 0xE9; character-level: the
    token's text); text that spells no byte-level token is read as its UTF-8 (``"世"``,
    ``"ção"``: answers where Hugging Face has none). None when there is none.
    (:meth:`fastbpe.Tokenizer.encode_single_token` reads text as its UTF-8, as tiktoken does.)

    >>> from fastbpe import Tokenizer
    >>> tok = Tokenizer([bytes([b]) for b in range(256)] + [b" a"], [(32, 97)])
    >>> token_to_id(tok, "Ġa"), token_to_id(tok, b" a"), token_to_id(tok, "é"), token_to_id(tok, "é".encode())
    (256, 256, 233, None)
    """
    if isinstance(token, str):
        if token in tok.special_tokens:
            return tok.special_tokens[token]
        if tok.unit == "bytes":
            try:
                found = tok._ids.get(text_to_token(token))
            except ValueError:  # (a character that spells no byte: the text's UTF-8)
                found = None
            if found is not None:
                return found
        token = token.encode("utf-8", "surrogatepass")
    if not isinstance(token, (bytes, bytearray)):
        raise TypeError(f"token must be str or bytes, got {type(token).__name__}")
    return tok._ids.get(bytes(token))


def get_vocab(tok, with_added_tokens: bool = True) -> Dict[str, int]:
    """``{token: id}`` as Hugging Face's ``get_vocab`` gives it: byte-level tokens in its
    byte-to-unicode text (``"Ġworld"``), character-level ones as their text, and the special
    tokens by name (unless ``with_added_tokens=False``).

    >>> from fastbpe import Tokenizer
    >>> vocab = get_vocab(Tokenizer([bytes([b]) for b in range(256)] + [b" a"], [(32, 97)], special_tokens=["<s>"]))
    >>> vocab["Ġa"], vocab["<s>"], " a" in vocab
    (256, 257, False)
    """
    as_text = as_token_text(tok.unit == "chars")
    found = {as_text(t): i for i, t in enumerate(tok.token_bytes) if t}
    if with_added_tokens:
        found.update(tok.special_tokens)
    return found


def decode_single_token_bytes(tok, token_id: int) -> bytes:
    """The bytes of one id; KeyError for an id that is no token (as tiktoken)."""
    try:
        return _id_bytes(tok, token_id)
    except UnknownTokenIdError:
        raise KeyError(token_id) from None


def decode_tokens_bytes(tok, ids) -> List[bytes]:
    """The bytes of each id, one ``bytes`` an id; KeyError for an id that is no token (as
    tiktoken's ``decode_tokens_bytes``)."""
    try:
        ids = _check_ids(ids)
    except UnknownTokenIdError as exc:  # (an array of uint64 ids past int64's: no token's)
        raise KeyError(int(ids.max())) from exc
    ids = ids.tolist() if isinstance(ids, np.ndarray) else ids
    table = _table(tok)
    # (the ids checked by a compiled gather, then looked up by one map: no Python loop an id)
    if type(table.gather(ids)) is bytes:
        return list(map(table.pieces.__getitem__, ids))
    return [decode_single_token_bytes(tok, i) for i in ids]  # (names the first bad id)


def decode_with_offsets(tok, ids) -> Tuple[str, List[int]]:
    """``(text, starts)``: the text of ``ids`` (strict UTF-8) and the character where each
    id's token starts in it, tiktoken's ``decode_with_offsets``: a token that begins inside a
    character (a continuation byte) starts at that character. Tokenizers without word
    markers or a space marker (their decode is not the bytes' text)."""
    if tok.markers:
        raise ValueError("decode_with_offsets needs a tokenizer without word or space markers (its decode "
                         "changes the bytes' text)")
    pieces = decode_tokens_bytes(tok, ids)
    data = b"".join(pieces)
    text = data.decode("utf-8", "strict")
    lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    if not len(lengths):
        return text, []
    byte = np.frombuffer(data, dtype=np.uint8)
    continuation = (byte & 0xC0) == 0x80
    before = np.concatenate([[0], np.cumsum(~continuation, dtype=np.int64)])  # characters begun before each byte
    begins = np.cumsum(lengths) - lengths
    return text, np.maximum(before[begins] - continuation[begins], 0).tolist()


def encode_single_token(tok, token: Union[str, bytes]) -> int:
    """The id of a token given as its bytes or text (UTF-8), a special token's name
    included; KeyError when it is no single token (as tiktoken's ``encode_single_token``)."""
    if not isinstance(token, (str, bytes, bytearray)):
        raise TypeError(f"token must be str or bytes, got {type(token).__name__}")
    data = token.encode("utf-8") if isinstance(token, str) else bytes(token)
    found = tok._ids.get(data)
    if found is None:
        found = next((i for name, i in tok.special_tokens.items() if name.encode("utf-8", "surrogatepass") == data),
                     None)
    if found is None:
        raise KeyError(token)
    return found


def id_to_token(tok, token_id: int) -> Optional[Union[str, bytes]]:
    """A special token's name, a token's bytes, or for ``unit="chars"`` its text as
    :func:`get_vocab` spells it (a SentencePiece byte piece as ``"<0xC5>"``, as SentencePiece's
    ``id_to_piece``: not the byte it stands for); None for an id that is no token (as Hugging
    Face's ``id_to_token``)."""
    for text, sid in tok.special_tokens.items():
        if sid == token_id:
            return text
    try:
        token = _id_bytes(tok, token_id)
    except UnknownTokenIdError:
        return None
    if tok.unit != "chars":
        return token
    i = int(token_id)
    return as_token_text(True)(tok.token_bytes[i] if i < len(tok.token_bytes) and tok.token_bytes[i] else token)


def n_vocab(tok) -> int:
    """One more than the largest id, special tokens included (tiktoken's ``n_vocab``)."""
    return max(len(tok.token_bytes) - 1, tok.specials.max_id) + 1


def vocab_len(tok) -> int:
    """The number of ids that are tokens, special tokens included (Hugging Face's
    ``get_vocab_size(with_added_tokens=True)``; gaps in the ids are not counted). A special
    token's id is counted once: most sit in an empty slot (a gap, or where ``extend`` keeps
    one), but a ``tokenizer.json`` may list one in its model's vocabulary too, whose text is
    then that slot's token as well."""
    tokens = tok.token_bytes
    shared = sum(1 for i in tok.special_tokens.values() if i < len(tokens) and tokens[i])
    return len(tokens) - tok.model.unused_ids + len(tok.special_tokens) - shared


def eot_token(tok) -> Optional[int]:
    """The end-of-text special token's id (``<|endoftext|>``, ``<|end_of_text|>``, ``</s>`` or
    ``<eos>``, the first one present), or None."""
    return next((tok.special_tokens[name] for name in EOT_NAMES if name in tok.special_tokens), None)


def char_offsets(text: str, byte_lengths: np.ndarray) -> np.ndarray:
    """``[n, 2]`` int64 character spans of consecutive pieces of ``text``'s UTF-8 of the given
    byte lengths (which must add up to its length): a piece spans the characters its bytes
    belong to."""
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    ends = np.cumsum(byte_lengths, dtype=np.int64)
    if len(ends) and ends[-1] != len(data):
        raise ValueError("the tokens' bytes are not the text's: a normaliser changed it, or the split pattern "
                         "leaves some of it out (text no match covers)")
    # character of every byte: the number of character starts (non-continuation bytes) so far - 1
    char_of_byte = np.cumsum((data & 0xC0) != 0x80, dtype=np.int64) - 1
    out = np.empty((len(ends), 2), dtype=np.int64)
    if len(ends):
        starts = ends - byte_lengths
        nonempty = byte_lengths > 0
        out[:, 0] = np.where(nonempty, char_of_byte[np.minimum(starts, len(data) - 1)], 0)
        out[:, 1] = np.where(nonempty, char_of_byte[np.maximum(ends - 1, 0)] + 1, 0)
    return out


def encode_with_offsets(tok, text: str, **special) -> Tuple[List[int], np.ndarray]:
    """``(ids, offsets)``: the ids of ``tok.encode(text, **special)`` and the ``[n, 2]``
    character span of each in ``text`` (module docstring; a text with surrogates is spanned as
    it is encoded, lone ones as U+FFFD, pairs joined). Byte-level tokenizers; through a
    normaliser of one Unicode form (NFC...) offsets are mapped back to ``text`` as Hugging
    Face's are (:func:`normalised_spans`); other normalisers need a text they leave as it is."""
    if tok.unit != "bytes" or tok.word_start or tok.word_end or tok.markers.has_subword_markers():
        raise ValueError("encode_with_offsets needs a byte-level tokenizer without word markers, "
                         "end_of_word_suffix or continuing_subword_prefix")
    if tok.prefix_space:
        raise ValueError("encode_with_offsets: this tokenizer puts a space before the text (ByteLevel's "
                         "add_prefix_space), which spans no character of it; offsets are not mapped for it")
    spanned = surrogates.as_tiktoken(text)  # (the text the offsets count in)
    if tok._added_splitter is not None and tok._special_sets(*_special_args(special))[0]:
        ids, offsets = _offsets_by_piece(tok, text, *_special_args(special))
    else:
        array = tok._encode_array(text, *_special_args(special))
        ids, offsets = tok._id_list(array), _plain_offsets(tok, spanned, array)
    trimmed = offsets_trimmed_by(tok.post_processor)
    if trimmed is not None and len(ids):
        offsets = _trimmed_offsets(tok, spanned, np.asarray(ids, dtype=np.int64), offsets, trimmed)
    return ids, offsets


def offsets_trimmed_by(post_processor) -> Optional[bool]:
    """Whether a ``tokenizer.json``'s post-processor trims offsets (``ByteLevel`` or
    ``RobertaProcessing`` with ``trim_offsets``, their default; in a ``Sequence`` too), which
    ``tokenizers`` does to every encoding, special tokens added or not: the ``add_prefix_space``
    it says, or None when it does not trim.

    >>> offsets_trimmed_by({"type": "RobertaProcessing", "add_prefix_space": False}), offsets_trimmed_by(None)
    (False, None)
    """
    if not isinstance(post_processor, dict):
        return None
    if post_processor.get("type") == "Sequence":
        steps = post_processor.get("processors")
        found = [offsets_trimmed_by(step) for step in steps] if isinstance(steps, list) else []
        return next((one for one in found if one is not None), None)
    if post_processor.get("type") in ("ByteLevel", "RobertaProcessing") and post_processor.get("trim_offsets", True):
        return bool(post_processor.get("add_prefix_space", True))
    return None


def _trimmed_offsets(tok, text: str, ids: np.ndarray, offsets: np.ndarray, add_prefix_space: bool) -> np.ndarray:
    """``tokenizers``' offset trimming (its ByteLevel processor): a token's span leaves out the
    spaces its text begins and ends with (a byte-level token's space bytes; for a special
    token, the whitespace characters of the text it spans, which its ``lstrip``/``rstrip`` took
    in), never past its other end; the one leading space of the first token is kept when the
    processor says ``add_prefix_space`` (it counts it as the one it put there)."""
    leading, trailing = _space_runs(tok)
    lead, trail = leading[ids], trailing[ids]
    for k in np.flatnonzero(np.isin(ids, list(tok.special_tokens.values()))).tolist():
        spanned = text[offsets[k, 0]:offsets[k, 1]]
        lead[k], trail[k] = len(spanned) - len(spanned.lstrip()), len(spanned) - len(spanned.rstrip())
    first = (np.arange(len(ids)) == 0) | (offsets[:, 0] == 0)
    lead = np.where(first & add_prefix_space & (lead == 1), 0, lead)
    starts = np.minimum(offsets[:, 0] + lead, offsets[:, 1])
    ends = np.where((trail > 0) & (offsets[:, 1] >= trail), np.maximum(offsets[:, 1] - trail, starts), offsets[:, 1])
    return np.stack([starts, ends], axis=1)


def _space_runs(tok) -> Tuple[np.ndarray, np.ndarray]:
    """By id: how many space bytes begin and end its token (counted once a tokenizer, kept;
    0 for a special token's id, whose spans :func:`_trimmed_offsets` reads)."""
    runs = tok.__dict__.get("_space_runs")
    if runs is None:
        tokens = tok.token_bytes
        size = max(len(tokens), max(tok.special_tokens.values(), default=-1) + 1)
        leading, trailing = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64)
        for i, token in enumerate(tokens):
            if token[:1] == b" " or token[-1:] == b" ":
                leading[i] = len(token) - len(token.lstrip(b" "))
                trailing[i] = len(token) - len(token.rstrip(b" "))
        runs = tok.__dict__["_space_runs"] = (leading, trailing)
    return runs


def _offsets_by_piece(tok, text: str, allowed_special, disallowed_special) -> Tuple[List[int], np.ndarray]:
    """:func:`encode_with_offsets` of a tokenizer whose special tokens have matching options:
    piece by piece, a special token spanning the whitespace its ``lstrip``/``rstrip`` took in
    (as Hugging Face's offsets do)."""
    tok._check_text(text)
    allowed, disallowed = tok._special_sets(allowed_special, disallowed_special)
    text = surrogates.as_tiktoken(text)
    check_disallowed(text, disallowed, tok.specials.always, tok.special_tokens.keys())
    all_ids, spans = [], []
    for ids, start, end, piece in tok._added_parts(text, allowed):
        all_ids.append(ids)
        if start is None:  # (cut out of a stretch the normaliser changed: :data:`.special.Piece`)
            _normaliser_changes(tok)
        if piece is None:
            spans.append(np.array([[start, end]], dtype=np.int64))
        else:
            if text[start:end] != piece and tok.normalize(text[start:end]) != piece:
                _normaliser_changes(tok)
            spans.append(_plain_offsets(tok, text[start:end], ids) + start)
    ids = np.concatenate(all_ids)
    return tok._id_list(ids), np.concatenate(spans)


def _plain_offsets(tok, text: str, ids: np.ndarray) -> np.ndarray:
    """Offsets in ``text`` of the ids of an ordinary piece: through the normaliser's alignment
    where it changes the text (:func:`normalised_spans`)."""
    lengths = token_lengths(tok, ids.astype(np.int64))
    if not tok.normalize:
        return char_offsets(text, lengths)
    normalised = tok.normalize(text)
    if normalised == text:
        return char_offsets(text, lengths)
    spans = normalised_spans(tok.normalize.steps, text)
    if spans is None:
        _normaliser_changes(tok)
    offsets = char_offsets(normalised, lengths)
    if not len(spans):
        return np.zeros_like(offsets)
    # a token spans its first character's start to its last one's end (an empty one: a point)
    last = np.maximum(offsets[:, 1] - 1, offsets[:, 0])
    starts = np.append(spans[:, 0], len(text))[offsets[:, 0]]
    ends = np.where(offsets[:, 1] > offsets[:, 0], spans[np.minimum(last, len(spans) - 1), 1], starts)
    return np.stack([starts, ends], axis=1)


def normalised_spans(steps, text: str) -> Optional[np.ndarray]:
    """For a normaliser of one Unicode form (Qwen's NFC, say), the ``[start, end)`` span in
    ``text`` of each character of the normalised text, as Hugging Face's alignments give it.

    The form's steps run on the characters, each with the change it makes to their count (as
    ``tokenizers`` tracks them): a decomposed character's pieces after the first add one
    each (+1); marks put in the order of their combining classes carry their changes along;
    a composition takes its two characters' changes less one. Read in order, a character of
    change 0 stands for the next original character, one of change -k for the next k + 1
    (spanning the first of them), one of +1 for none (spanning the one before it). The result
    is checked against ``unicodedata``; None for any other normaliser.

    >>> normalised_spans([{"type": "NFC"}], "cafe\\u0301!").tolist()  # (é spans its e)
    [[0, 1], [1, 2], [2, 3], [3, 4], [5, 6]]
    >>> normalised_spans([{"type": "NFKD"}], "\\ufb01a").tolist()  # (f and i span the ligature)
    [[0, 1], [0, 1], [1, 2]]
    """
    if len(steps) != 1 or set(steps[0]) != {"type"} or steps[0]["type"] not in UNICODE_FORMS:
        return None
    form = steps[0]["type"]
    decompose = "NFKD" if form.startswith("NFK") else "NFD"
    chars: List[str] = []
    changes: List[int] = []
    for ch in text:  # 1. decomposed: the first piece replaces the character, the others are added
        pieces = unicodedata.normalize(decompose, ch)
        chars.extend(pieces)
        changes.extend([0] + [1] * (len(pieces) - 1))
    k = 0
    while k < len(chars):  # 2. each run of marks in the order of their combining classes (stable)
        if not unicodedata.combining(chars[k]):
            k += 1
            continue
        end = k
        while end < len(chars) and unicodedata.combining(chars[end]):
            end += 1
        run = sorted(zip(chars[k:end], changes[k:end]), key=lambda pair: unicodedata.combining(pair[0]))
        chars[k:end], changes[k:end] = [c for c, _ in run], [n for _, n in run]
        k = end
    if form in ("NFC", "NFKC"):  # 3. composed onto the last base where not blocked
        out: List[str] = []
        out_changes: List[int] = []
        base = None  # index in out of the last base character
        last_class = None  # combining class of the last character kept after it (None: none yet)
        for ch, change in zip(chars, changes):
            cls = unicodedata.combining(ch)
            if base is not None and (last_class is None or last_class < cls):
                joined = unicodedata.normalize("NFC", out[base] + ch)
                if len(joined) == 1:
                    out[base] = joined
                    out_changes[base] += change - 1
                    continue
            if cls == 0:
                base, last_class = len(out), None
            else:
                last_class = cls
            out.append(ch)
            out_changes.append(change)
        chars, changes = out, out_changes
    if "".join(chars) != unicodedata.normalize(form, text):
        return None
    spans = np.zeros((len(chars), 2), dtype=np.int64)
    at = 0  # original characters read so far
    for k, change in enumerate(changes):  # 4. read in order
        if change > 0:
            spans[k] = (at - 1, at) if at else (0, 0)
        else:
            spans[k] = (at, at + 1)
            at += 1 - change
    return spans if at == len(text) else None


def _normaliser_changes(tok) -> None:
    raise ValueError(f"encode_with_offsets: the normaliser ({tok.normalize!r}) changes the text in a way its "
                     "offsets are not mapped back through (normalise the text first)")


def _special_args(special) -> tuple:
    unknown = set(special) - {"allowed_special", "disallowed_special"}
    if unknown:
        raise TypeError(f"unexpected keyword argument {sorted(unknown)[0]!r}")
    return special.get("allowed_special", frozenset()), special.get("disallowed_special", "all")
