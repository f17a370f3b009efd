"""Split regexes in Hugging Face's dialect (Oniguruma, Ruby syntax) and in the ``regex`` module's.

``tokenizers`` runs its ``Split`` and ``Replace`` patterns with Oniguruma, which reads some
text otherwise than the ``regex`` module does:

* ``X{n,m}+`` is one or more runs of ``X{n,m}``; the ``regex`` module reads a possessive interval;
* ``\\h`` is a hexadecimal digit (``[0-9a-fA-F]``) and ``\\H`` any other character; the
  ``regex`` module reads horizontal whitespace (``[\\t\\p{Zs}]``);
* ``\\w`` is ``[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}]`` and, outside a class, ``¹²³¼½¾`` too (so
  for ``\\b``), where the ``regex`` module follows Unicode's UTS #18 and takes the zero-width
  joiners in (``\\p{Join_Control}``); ``\\W``, ``\\b`` and ``\\B`` with it (measured against
  ``tokenizers`` on every assigned character);
* a character class may hold classes (``[[a-c]x]``, their union) and intersections
  (``[a-z&&[^aeiou]]``, the consonants), which the ``regex`` module reads only in its version 1
  mode (``(?V1)`` in front); in its default mode ``[`` and ``&&`` in a class are characters.

(Not converted: without case, Oniguruma matches a character's full case folding, ``(?i)ss``
matching ``ß``, where the ``regex`` module folds one character to one. The published patterns
turn case off only for English contractions, which no such folding reaches; ``(?f)`` in front
would make them other texts than the patterns the compiled scanners stand for.)

These functions convert a pattern between the dialects, keeping its meaning.
"""
import re
from typing import Iterator, Tuple

__all__ = ["oniguruma_pattern", "from_oniguruma_pattern", "check_tiktoken_pattern"]

# (the standard ``re`` reads these patterns, on pattern texts, as ``regex`` does; importing
# ``regex`` costs 18 ms that a tokenizer with a named pattern never needs)
_POSSESSIVE_INTERVAL = re.compile(r"(\\[pP]\{[^}]*\}|\[(?:\\.|[^\]\\])*\]|\\.|[^\\()|])(\{\d+(?:,\d*)?\})\+")
_POSIX_CLASS = re.compile(r"\[:\^?[A-Za-z]+:\]")  # [:alpha:] inside a class: both engines read it

# \h of each dialect, as the other spells it (inside a class: its members)
_HEX_DIGITS = "0-9a-fA-F"
_HORIZONTAL_SPACE = "\\t\\p{Zs}"
# \w of each dialect, as the other spells it (members of a class): Oniguruma's outside a class
# and inside one, the regex module's (UTS #18)
_ONIGURUMA_WORD = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}¹²³¼½¾"
_ONIGURUMA_CLASS_WORD = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}"
_UTS18_WORD = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}"


def _word_escape(escape: str, depth: int, word: str, class_word: str) -> str:
    """``\\w``, ``\\W``, ``\\b`` or ``\\B`` (outside a class) spelled with the other dialect's word
    characters: ``word`` outside a class, ``class_word`` inside one; any other escape as it is."""
    if escape == "\\w":
        return class_word if depth else f"[{word}]"
    if escape == "\\W":
        return f"[^{class_word if depth else word}]"
    if escape in ("\\b", "\\B") and not depth:  # (in a class: a backspace in both)
        inside, outside = f"(?<=[{word}])", f"(?<![{word}])"
        ahead, not_ahead = f"(?=[{word}])", f"(?![{word}])"
        if escape == "\\b":
            return f"(?:{inside}{not_ahead}|{outside}{ahead})"
        return f"(?:{inside}{ahead}|{outside}{not_ahead})"
    return escape


# What from_oniguruma_pattern puts in front of a pattern with nested classes or intersections.
_VERSION1 = "(?V1)"


def _parts(text: str, nested: bool) -> Iterator[Tuple[str, str, int]]:
    """The pattern's text in parts, each with what it is and the classes open around it:
    ``("escape", "\\x", depth)``, ``("open", "[" or "[^", depth before)`` (a ``]`` right after
    it is its first member: ``("char", "]", ...)``), ``("close", "]", depth after)``,
    ``("posix", "[:alpha:]", depth)``, ``("and", "&&", depth)`` and ``("char", c, depth)``.
    ``nested``: a ``[`` inside a class opens a class (Oniguruma, the regex module's version 1),
    else it is a character there (``("char", "[", depth)``: the regex module's default)."""
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            yield "escape", text[i:i + 2], depth
            i += 2
            continue
        if c == "[":
            posix = _POSIX_CLASS.match(text, i) if depth else None
            if posix:
                yield "posix", posix.group(), depth
                i = posix.end()
                continue
            if depth and not nested:
                yield "char", c, depth
                i += 1
                continue
            opened = "[^" if text.startswith("[^", i) else "["
            yield "open", opened, depth
            depth += 1
            i += len(opened)
            if text.startswith("]", i):  # (first in its class: the character itself)
                yield "char", "]", depth
                i += 1
            continue
        if c == "]" and depth:
            depth -= 1
            yield "close", c, depth
        elif c == "&" and depth and text.startswith("&&", i):
            yield "and", "&&", depth
            i += 1
        else:
            yield "char", c, depth
        i += 1


def oniguruma_pattern(pattern: str) -> str:
    r"""``pattern`` as Hugging Face's regex engine (Oniguruma, Ruby syntax) reads it the same.

    Oniguruma takes ``X{n,m}+`` as ``(X{n,m})+`` rather than a possessive interval, so such
    intervals become atomic groups (same meaning in both engines). ``?+ *+ ++`` are possessive
    in both and stay. ``\h`` (horizontal whitespace) is spelled as a class, and so are a
    ``[`` and an ``&&`` inside a class (characters, unless the pattern starts with the version 1
    mark :func:`from_oniguruma_pattern` puts in front, which is dropped).

    >>> print(oniguruma_pattern(r"\p{N}{1,3}+|[ab]{2}+|x"))
    (?>\p{N}{1,3})|(?>[ab]{2})|x
    >>> print(oniguruma_pattern(r"\h+|[a&&b]"))
    [\t\p{Zs}]+|[a\&\&b]
    >>> print(oniguruma_pattern(r"\w|[a\W]"))
    [\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]|[a[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]]
    """
    version1 = pattern.startswith(_VERSION1)
    if version1:
        pattern = pattern[len(_VERSION1):]
    out = []
    for kind, text, depth in _parts(pattern, nested=version1):
        if kind == "escape" and text == "\\X":
            raise ValueError(f"\\X in {pattern!r:.60}: Hugging Face's regex engine (Oniguruma) cuts grapheme "
                             "clusters otherwise than the regex module; spell the pattern without it")
        if kind == "escape" and text == "\\h":  # (the regex module has no \H)
            text = _HORIZONTAL_SPACE if depth else f"[{_HORIZONTAL_SPACE}]"
        elif kind == "escape":  # (\W in a class: a class inside it, which Oniguruma reads)
            text = _word_escape(text, depth, _UTS18_WORD, _UTS18_WORD)
        elif not version1 and depth and (kind == "and" or text == "["):
            text = "\\" + text if text == "[" else "\\&\\&"  # (characters to the regex module)
        out.append(text)
    converted = _POSSESSIVE_INTERVAL.sub(lambda m: f"(?>{m.group(1)}{m.group(2)})", "".join(out))
    if re.search(r"\)\{\d+(?:,\d*)?\}\+", converted):
        raise ValueError(f"cannot express the possessive interval of a group in {pattern!r} for Hugging Face")
    return converted


def check_tiktoken_pattern(pattern: str) -> None:
    r"""Refuse a user regex that tiktoken's engine (the Rust fancy-regex) reads otherwise than the
    regex module: a POSIX class (``[[:alpha:]]``: ASCII letters there, every letter here), or
    ``\X``, which it does not know.

    >>> check_tiktoken_pattern(r"\p{L}+|\s+")
    >>> check_tiktoken_pattern(r"[[:alpha:]]+")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: [:alpha:] in '[[:alpha:]]+': tiktoken's regex engine reads POSIX classes as ASCII alone; ...
    """
    for kind, text, depth in _parts(pattern, nested=False):
        if kind == "posix":
            raise ValueError(f"{text} in {pattern!r:.60}: tiktoken's regex engine reads POSIX classes as ASCII "
                             "alone; spell it with \\p{...} (\\p{L} for [:alpha:])")
        if kind == "escape" and text == "\\X":
            raise ValueError(f"\\X in {pattern!r:.60}: tiktoken's regex engine has no grapheme clusters; spell "
                             "the pattern without it")


def from_oniguruma_pattern(pattern: str) -> str:
    r"""The reverse of :func:`oniguruma_pattern`: an Oniguruma pattern spelled for the ``regex``
    module with the same meaning (see the module's text): ``X{n,m}+`` as ``(?:X{n,m})+``,
    ``\h`` and ``\H`` as classes, and a pattern with nested classes or intersections marked for
    the ``regex`` module's version 1 mode.

    >>> print(from_oniguruma_pattern(r"\p{N}{1,3}+|a"))
    (?:\p{N}{1,3})+|a
    >>> print(from_oniguruma_pattern(r"\h+|[\h_]"))
    [0-9a-fA-F]+|[0-9a-fA-F_]
    >>> print(from_oniguruma_pattern(r"[a-z&&[^aeiou]]+"))
    (?V1)[a-z&&[^aeiou]]+
    """
    text = _POSSESSIVE_INTERVAL.sub(lambda m: f"(?:{m.group(1)}{m.group(2)})+", pattern)
    out = []
    version1 = False  # a class inside a class, or an intersection: the regex module's version 1
    for kind, part, depth in _parts(text, nested=True):
        if kind == "escape" and part == "\\X":  # (as oniguruma_pattern: no such pattern is run exactly)
            raise ValueError(f"\\X in {pattern!r:.60}: Oniguruma cuts grapheme clusters otherwise than the regex "
                             "module, so fastbpe cannot split as tokenizers does")
        if kind == "escape" and part == "\\h":
            part = _HEX_DIGITS if depth else f"[{_HEX_DIGITS}]"
        elif kind == "escape" and part in ("\\H", "\\W"):
            part = f"[^{_HEX_DIGITS}]" if part == "\\H" else _word_escape(part, depth, _ONIGURUMA_WORD,
                                                                          _ONIGURUMA_CLASS_WORD)
            version1 |= depth > 0  # (a class in a class)
        elif kind == "escape":
            part = _word_escape(part, depth, _ONIGURUMA_WORD, _ONIGURUMA_CLASS_WORD)
        elif kind == "and" or (kind == "open" and depth):
            version1 = True
        out.append(part)
    converted = "".join(out)
    return _VERSION1 + converted if version1 else converted
