"""GPT-2's byte-level codec: every byte value as a printable character, for token files.

Byte-level vocabularies are stored as text (Hugging Face ``tokenizer.json``, GPT-2's
``encoder.json``/``vocab.bpe``, fastbpe's own JSON) by mapping each of the 256 byte values to a
printable character: printable Latin-1 bytes to themselves, the others (controls, space, ...) to
the code points from U+0100 on, in byte order.
"""
from typing import Dict

__all__ = ["bytes_to_unicode", "token_to_text", "text_to_token", "check_byte_level"]


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


def check_byte_level(tok, one_split: bool = True) -> None:
    """Refuse to export a tokenizer the peer formats cannot express: character-level, word
    markers, or (``one_split``) several split stages."""
    if tok.unit != "bytes" or tok.word_start or tok.word_end:
        raise ValueError("only byte-level tokenizers without word markers can be exported to this format")
    if one_split and tok.split_stages:
        raise ValueError("this format has a single split pattern; the tokenizer splits in several stages")
