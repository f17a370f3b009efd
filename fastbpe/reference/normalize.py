"""The specification of SentencePiece's normaliser and its compiled character map (its
``precompiled_charsmap``, Kudo and Richardson 2018), which
``fastbpe._core.normalize.SentencePieceNormalizer`` runs compiled.

The blob is a little-endian uint32 (the trie's size in bytes), the trie (a darts-clone double
array of uint32 units), then the replacements (NUL-terminated UTF-8). The text is read as the
UTF-8 of the str (``surrogatepass``); at each position the longest key that begins there is
replaced by its replacement, and where none begins, one character is copied as it is
(``normalizer.cc``'s ``NormalizePrefix``).
"""
from typing import List, Optional, Sequence, Tuple

__all__ = ["longest_rule", "normalize_prefix", "parse_charsmap", "sentencepiece_normalize"]


def parse_charsmap(blob: bytes) -> Tuple[List[int], bytes]:
    """``(units, replacements)`` of a blob; ValueError when its parts do not fit.

    >>> parse_charsmap(b"\\x04\\x00\\x00\\x00\\x00\\x00\\x00\\x00x\\x00")
    ([0], b'x\\x00')
    """
    if len(blob) < 4:
        raise ValueError("a precompiled charsmap needs at least 4 bytes (its trie's size)")
    size = int.from_bytes(blob[:4], "little")
    if size % 4 or 4 + size > len(blob):
        raise ValueError(f"a precompiled charsmap's trie of {size} bytes does not fit its {len(blob)} bytes")
    units = [int.from_bytes(blob[at:at + 4], "little") for at in range(4, 4 + size, 4)]
    return units, blob[4 + size:]


def _offset(unit: int) -> int:
    """Where a node's children are (as darts-clone lays a unit out: the offset in bits 10-31,
    shifted left 8 more when bit 9 is set)."""
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)


def longest_rule(units: List[int], data: bytes, at: int) -> Optional[Tuple[int, int]]:
    """``(length, value)`` of the longest key that begins ``data[at:]``, None for none: each
    byte moves from a node to its child (which must carry that byte as its label); a child
    with bit 8 set ends a key, whose value is in the unit below it."""
    if not units:
        return None
    node, found = _offset(units[0]), None
    for i in range(at, len(data)):
        node ^= data[i]
        if node >= len(units) or units[node] & ((1 << 31) | 0xFF) != data[i]:
            break
        unit = units[node]
        node ^= _offset(unit)
        if (unit >> 8) & 1:
            if node >= len(units):
                break
            found = (i + 1 - at, units[node] & 0x7FFFFFFF)
    return found


def normalize_prefix(units: List[int], pool: bytes, data: bytes, at: int,
                     kept: Sequence[bytes] = ()) -> Tuple[bytes, int]:
    """``(what data[at:] begins with becomes, the bytes it takes)``: the longest of ``kept``
    (a model's user-defined pieces) that begins there, as it is; else the longest rule's
    replacement, else one character as it is. ValueError where the rule names no replacement.

    With no rules, a character is itself; a kept piece is itself, whatever the rules:

    >>> normalize_prefix([], b"", "é!".encode(), 0), normalize_prefix([], b"", b"<m>!", 0, [b"<", b"<m>"])
    ((b'\\xc3\\xa9', 2), (b'<m>', 3))
    """
    matched = max((len(piece) for piece in kept if data.startswith(piece, at)), default=0)
    if matched:
        return data[at:at + matched], matched
    rule = longest_rule(units, data, at)
    if rule is None:
        lead = data[at]
        width = 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        return data[at:at + width], min(width, len(data) - at)
    length, value = rule
    end = pool.find(b"\0", value)
    if value >= len(pool) or end < 0:
        raise ValueError("the precompiled charsmap is damaged: a rule names no replacement")
    return pool[value:end], length


def sentencepiece_normalize(blob: bytes, text: str, add_dummy_prefix: bool, remove_extra_whitespaces: bool,
                            kept: Sequence[str] = ()) -> str:
    """SentencePiece's normaliser (``normalizer.cc``'s ``Normalize``, spaces escaped as ``▁``)
    of ``text``: the map of ``blob`` (empty: no rules) applied a prefix at a time, the pieces
    ``kept`` (a model's user-defined pieces) left as they are where a prefix begins. With
    ``remove_extra_whitespaces``, the prefixes that become one space at the start are dropped,
    the spaces a prefix begins with after a prefix that ended with one, and the ``▁``s at the
    end; with ``add_dummy_prefix``, a ``▁`` goes before the rest of a text that was not empty.

    >>> sentencepiece_normalize(b"", "  two  words ", True, True)
    '▁two▁words'
    >>> sentencepiece_normalize(b"", "  two  words ", False, False)
    '▁▁two▁▁words▁'
    >>> sentencepiece_normalize(b"", "two  words", True, True, ["  "])
    '▁two▁▁words'
    """
    units, pool = parse_charsmap(blob) if blob else ([], b"")
    kept_bytes = [piece.encode("utf-8", "surrogatepass") for piece in kept]
    data = text.encode("utf-8", "surrogatepass")
    if not data:
        return ""
    at = 0
    if remove_extra_whitespaces:
        while at < len(data):
            piece, taken = normalize_prefix(units, pool, data, at, kept_bytes)
            if piece != b" ":
                break
            at += taken
        if at == len(data):
            return ""
    out = bytearray("▁".encode() if add_dummy_prefix else b"")
    after_space = remove_extra_whitespaces
    while at < len(data):
        piece, taken = normalize_prefix(units, pool, data, at, kept_bytes)
        if after_space:
            piece = piece.lstrip(b" ")
        if piece:
            out += piece.replace(b" ", "▁".encode())
            after_space = piece.endswith(b" ")
        if not remove_extra_whitespaces:
            after_space = False
        at += taken
    if remove_extra_whitespaces:
        while out.endswith("▁".encode()):
            del out[-3:]
    try:
        return out.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise ValueError("the precompiled charsmap is damaged: a replacement is not UTF-8") from None
