"""Split regexes in Hugging Face's dialect (Oniguruma, Ruby syntax) and in the ``regex`` module's.

``tokenizers`` runs its ``Split`` and ``Replace`` patterns with Oniguruma, which reads some
text otherwise than the ``regex`` module does:

* ``X{n,m}+`` is one or more runs of ``X{n,m}``; the ``regex`` module reads a possessive interval;
* ``\\h`` is a hexadecimal digit (``[0-9a-fA-F]``) and ``\\H`` any other character; the
  ``regex`` module reads horizontal whitespace;
* a character class may hold classes (``[[a-c]x]``, their union) and intersections
  (``[a-z&&[^aeiou]]``, the consonants), which the ``regex`` module reads only in its version 1
  mode: a pattern that uses them is compiled in that mode (``(?V1)`` in front).

(Not converted: without case, Oniguruma matches a character's full case folding, ``(?i)ss``
matching ``ß``, where the ``regex`` module folds one character to one. The published patterns
turn case off only for English contractions, which no such folding reaches; ``(?f)`` in front
would make them other texts than the patterns the compiled scanners stand for.)

These functions convert a pattern between the dialects, keeping its meaning.
"""
import re

__all__ = ["oniguruma_pattern", "from_oniguruma_pattern"]

# (the standard ``re`` reads these two patterns, on pattern texts, as ``regex`` does; importing
# ``regex`` costs 18 ms that a tokenizer with a named pattern never needs)
_POSSESSIVE_INTERVAL = re.compile(r"(\\[pP]\{[^}]*\}|\[(?:\\.|[^\]\\])*\]|\\.|[^\\()|])(\{\d+(?:,\d*)?\})\+")

# Oniguruma's \h, as a class (or inside one)
_HEX_DIGITS = "0-9a-fA-F"
# What from_oniguruma_pattern puts in front of a pattern with nested classes or intersections.
_VERSION1 = "(?V1)"


def oniguruma_pattern(pattern: str) -> str:
    r"""``pattern`` as Hugging Face's regex engine (Oniguruma, Ruby syntax) reads it the same.

    Oniguruma takes ``X{n,m}+`` as ``(X{n,m})+`` rather than a possessive interval, so such
    intervals become atomic groups (same meaning in both engines). ``?+ *+ ++`` are possessive
    in both and stay. The version 1 mark that :func:`from_oniguruma_pattern` puts in front is
    dropped (Oniguruma reads nested classes and intersections as they are).

    >>> print(oniguruma_pattern(r"\p{N}{1,3}+|[ab]{2}+|x"))
    (?>\p{N}{1,3})|(?>[ab]{2})|x
    """
    if pattern.startswith(_VERSION1):
        pattern = pattern[len(_VERSION1):]
    converted = _POSSESSIVE_INTERVAL.sub(lambda m: f"(?>{m.group(1)}{m.group(2)})", pattern)
    if re.search(r"\)\{\d+(?:,\d*)?\}\+", converted):
        raise ValueError(f"cannot express the possessive interval of a group in {pattern!r} for Hugging Face")
    return converted


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
    depth = 0  # the character classes open at i
    version1 = False  # a class inside a class, or an intersection: the regex module's version 1
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            escaped = text[i + 1]
            if escaped == "h":
                out.append(_HEX_DIGITS if depth else f"[{_HEX_DIGITS}]")
            elif escaped == "H":
                out.append(f"[^{_HEX_DIGITS}]")
                version1 |= depth > 0  # (a class in a class)
            else:
                out.append(text[i:i + 2])
            i += 2
            continue
        if c == "[":
            if depth:
                posix = re.match(r"\[:\^?[A-Za-z]+:\]", text[i:])  # [:alpha:], which both engines read
                if posix:
                    out.append(posix.group())
                    i += posix.end()
                    continue
                version1 = True
            depth += 1
            out.append(c)
            i += 1
            if text.startswith("^", i):
                out.append("^")
                i += 1
            if text.startswith("]", i):  # (first in its class: the character itself)
                out.append("\\]")
                i += 1
            continue
        if c == "]" and depth:
            depth -= 1
        elif c == "&" and depth and text.startswith("&&", i):
            version1 = True
        out.append(c)
        i += 1
    converted = "".join(out)
    return _VERSION1 + converted if version1 else converted
