"""Split regexes in Hugging Face's dialect (Oniguruma, Ruby syntax) and in the ``regex`` module's.

``tokenizers`` runs its ``Split`` patterns with Oniguruma, where ``X{n,m}+`` is one or more runs
of ``X{n,m}``; the ``regex`` module reads the same text as a possessive interval. These two
functions convert a pattern between the dialects, keeping its meaning.
"""
import re

__all__ = ["oniguruma_pattern", "from_oniguruma_pattern"]

# (the standard ``re`` reads these two patterns, on pattern texts, as ``regex`` does; importing
# ``regex`` costs 18 ms that a tokenizer with a named pattern never needs)
_POSSESSIVE_INTERVAL = re.compile(r"(\\[pP]\{[^}]*\}|\[(?:\\.|[^\]\\])*\]|\\.|[^\\()|])(\{\d+(?:,\d*)?\})\+")


def oniguruma_pattern(pattern: str) -> str:
    r"""``pattern`` as Hugging Face's regex engine (Oniguruma, Ruby syntax) reads it the same.

    Oniguruma takes ``X{n,m}+`` as ``(X{n,m})+`` rather than a possessive interval, so such
    intervals become atomic groups (same meaning in both engines). ``?+ *+ ++`` are possessive
    in both and stay.

    >>> print(oniguruma_pattern(r"\p{N}{1,3}+|[ab]{2}+|x"))
    (?>\p{N}{1,3})|(?>[ab]{2})|x
    """
    converted = _POSSESSIVE_INTERVAL.sub(lambda m: f"(?>{m.group(1)}{m.group(2)})", pattern)
    if re.search(r"\)\{\d+(?:,\d*)?\}\+", converted):
        raise ValueError(f"cannot express the possessive interval of a group in {pattern!r} for Hugging Face")
    return converted


def from_oniguruma_pattern(pattern: str) -> str:
    r"""The reverse of :func:`oniguruma_pattern`: Oniguruma's ``X{n,m}+`` (one or more runs of
    ``X{n,m}``) spelled for the ``regex`` module, where it would mean a possessive interval.

    >>> print(from_oniguruma_pattern(r"\p{N}{1,3}+|a"))
    (?:\p{N}{1,3})+|a
    """
    return _POSSESSIVE_INTERVAL.sub(lambda m: f"(?:{m.group(1)}{m.group(2)})+", pattern)
