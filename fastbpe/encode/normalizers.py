"""Step 2 of encoding, the normaliser: what the text becomes before it is split.

A :class:`Normalizer` is a sequence of steps applied in order, each a small JSON object, the
ones Hugging Face ``tokenizers`` files use:

* ``{"type": "NFC"}`` (also ``NFD``, ``NFKC``, ``NFKD``): Unicode normal forms;
* ``{"type": "Lowercase"}``;
* ``{"type": "Replace", "pattern": {"String": s} or {"Regex": r}, "content": c}`` (``r`` in
  Hugging Face's dialect, Oniguruma's Ruby syntax: :func:`ruby_regex`);
* ``{"type": "Prepend", "prepend": s}``: ``s`` before a non-empty text;
* ``{"type": "Strip", "strip_left": bool, "strip_right": bool}``: whitespace at the ends;
* ``{"type": "SentencePiece", "precompiled_charsmap": base64, "add_dummy_prefix": bool,
  "remove_extra_whitespaces": bool, "user_defined_symbols": [str, ...]}``: a SentencePiece
  model's normaliser, as SentencePiece runs it (compiled): its character map (``nmt_nfkc``,
  its default, or a rule file; ``""``: none) with the longest rule at each position, spaces
  as ``▁``, its two options, and the model's user-defined pieces (optional) left as they are
  where one begins.
  (Hugging Face's ``Precompiled`` holds the same map but applies it a grapheme at a time,
  which differs on some sequences.)

>>> Normalizer([{"type": "NFKC"}, {"type": "Lowercase"}])("Ｈello")
'hello'
>>> Normalizer.from_spec("NFC").to_spec()
'NFC'
"""
import base64
import re
import unicodedata
from typing import Callable, List, Mapping, Optional, Sequence, Union

from ..split.oniguruma import from_oniguruma_pattern

__all__ = ["Normalizer", "UNICODE_FORMS", "check_huggingface_steps", "ruby_regex", "sentencepiece_steps"]

UNICODE_FORMS = ("NFC", "NFD", "NFKC", "NFKD")
Spec = Union[None, str, Sequence[Mapping]]


def _step(step: Mapping) -> Callable[[str], str]:
    """The function of one step; ValueError naming a step fastbpe does not know."""
    if not isinstance(step, Mapping):
        raise ValueError(f"a normalizer step must be an object, got {step!r:.80}")
    if step.get("type") == "SentencePiece":
        return _sentencepiece(step)
    import regex  # (here, not at the top: its import costs 18 ms, and most tokenizers have no normalizer)

    kind = step.get("type")
    if kind in UNICODE_FORMS:
        return lambda text: unicodedata.normalize(kind, text)
    if kind == "Lowercase":
        return str.lower
    if kind == "Replace":
        pattern, content = step.get("pattern"), step.get("content")
        if not isinstance(content, str) or not isinstance(pattern, Mapping) or len(pattern) != 1:
            raise ValueError(f"normalizer Replace needs a pattern {{'String': s}} or {{'Regex': r}} and a content str, "
                             f"got {step!r:.80}")
        if isinstance(pattern.get("String"), str):
            old = pattern["String"]
            if not old:
                raise ValueError("normalizer Replace with an empty String pattern is not supported")
            return lambda text: text.replace(old, content)
        if isinstance(pattern.get("Regex"), str):
            try:
                ruby = ruby_regex(from_oniguruma_pattern(pattern["Regex"]))
                compiled = regex.compile(ruby, regex.MULTILINE)
            except regex.error as exc:
                raise ValueError(f"normalizer Replace: regex {pattern['Regex']!r:.80} does not compile: {exc}") from None
            literal = content.replace("\\", "\\\\")  # the content is text, not a template
            # tokenizers never matches in an empty text (an empty match would insert the content)
            return lambda text: compiled.sub(literal, text) if text else text
        raise ValueError(f"normalizer Replace: unsupported pattern {pattern!r:.80}")
    if kind == "Prepend":
        prefix = step.get("prepend")
        if not isinstance(prefix, str):
            raise ValueError(f"normalizer Prepend needs a 'prepend' str, got {step!r:.80}")
        return lambda text: prefix + text if text else text
    if kind == "Strip":
        left, right = step.get("strip_left", True), step.get("strip_right", True)
        if not isinstance(left, bool) or not isinstance(right, bool):
            raise ValueError(f"normalizer Strip: strip_left and strip_right must be true or false, got {step!r:.80}")
        # Rust's char::is_whitespace is Unicode's White_Space, as \s is in the regex module
        pattern = regex.compile("|".join(p for p, on in ((r"^\s+", left), (r"\s+$", right)) if on) or "(?!)")
        return lambda text: pattern.sub("", text)
    raise ValueError(f"unsupported normalizer {kind!r} (supported: {', '.join(UNICODE_FORMS)}, Lowercase, Replace, "
                     "Prepend, Strip, SentencePiece and Sequences of them)")


def _sentencepiece(step: Mapping) -> Callable[[str], str]:
    """The compiled normaliser of a ``SentencePiece`` step (fastbpe.reference.normalize
    specifies it)."""
    from .._core.normalize import SentencePieceNormalizer

    options = [step.get(name, True) for name in ("add_dummy_prefix", "remove_extra_whitespaces")]
    if not all(isinstance(option, bool) for option in options):
        raise ValueError(f"normalizer SentencePiece: add_dummy_prefix and remove_extra_whitespaces must be true or "
                         f"false, got {step!r:.80}")
    add_dummy_prefix, remove_extra_whitespaces = options
    kept = step.get("user_defined_symbols", [])
    if not isinstance(kept, list) or not all(isinstance(piece, str) and piece for piece in kept):
        raise ValueError(f"normalizer SentencePiece: 'user_defined_symbols' must be a list of non-empty strs, "
                         f"got {kept!r:.80}")
    try:
        blob = base64.b64decode(step.get("precompiled_charsmap", ""), validate=True)
        if not blob and not remove_extra_whitespaces:
            # (Llama 2's: no map and no whitespace rule, two str operations, 0.35 us a line
            # against the compiled walk's 0.57 with its UTF-8 round trip; a piece kept as it is
            # changes nothing then: its spaces are escaped all the same)
            prefix = "\u2581" if add_dummy_prefix else ""
            return lambda text: prefix + text.replace(" ", "\u2581") if text else text
        return SentencePieceNormalizer(blob, *options, kept)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"normalizer SentencePiece: 'precompiled_charsmap' must be a charsmap in base64: {exc}") \
            from None


def sentencepiece_steps(add_dummy_prefix: bool, remove_extra_whitespaces: bool) -> List[dict]:
    """Hugging Face steps that normalise as a ``SentencePiece`` step without a character map:
    spaces at the start and runs of them go first (ASCII spaces only), a ``▁`` before a text
    that is left, spaces as ``▁``, then the ``▁``s at the end, the text's own too."""
    return [
        *([{"type": "Replace", "pattern": {"Regex": r"\A +"}, "content": ""},
           {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}] if remove_extra_whitespaces else []),
        *([{"type": "Prepend", "prepend": "\u2581"}] if add_dummy_prefix else []),
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
        *([{"type": "Replace", "pattern": {"Regex": "\u2581+\\z"}, "content": ""}] if remove_extra_whitespaces
          else [])]


# The parts of a Ruby (Oniguruma) pattern whose meaning differs in the regex module: an escape,
# a character class (copied as it is), an inline option group, or a bare ^ (found in the
# pattern's text by the standard ``re``, which reads this pattern as ``regex`` does)
_RUBY_PART = re.compile(r"\\.|\[(?:\\.|\[(?:\\.|[^\]\\])*\]|[^\]\\])*\]|\(\?[imx-]+[:)]|\^", re.DOTALL)


def ruby_regex(pattern: str) -> str:
    r"""A ``Replace`` regex as ``tokenizers`` runs it (Oniguruma, Ruby syntax), spelled for the
    ``regex`` module compiled with MULTILINE. In Ruby ``^`` and ``$`` always match at line
    starts and ends, but ``^`` not after a newline that ends the text; ``\Z`` is the end or
    before a final newline, ``\z`` the very end; the ``m`` option is the regex module's ``s``
    (``.`` matches a newline).

    >>> import regex
    >>> regex.sub(ruby_regex("^"), "#", "a\nb\n", flags=regex.MULTILINE)
    '#a\n#b\n'
    """
    def part(match) -> str:
        text = match.group()
        if text == "^":
            return r"(?:^(?!\Z))"
        if text == r"\Z":
            return r"(?=\n?\Z)"
        if text == r"\z":
            return r"\Z"
        if text.startswith("(?"):
            return text.replace("m", "s")
        return text
    return _RUBY_PART.sub(part, pattern)


def _flatten(spec, into: List[Mapping]) -> None:
    """Hugging Face's nested ``Sequence`` steps, in order."""
    if isinstance(spec, Mapping) and spec.get("type") == "Sequence":
        inner = spec.get("normalizers")
        if not isinstance(inner, list):
            raise ValueError(f"normalizer Sequence needs a 'normalizers' list, got {spec!r:.80}")
        for step in inner:
            _flatten(step, into)
    elif spec is not None:
        into.append(dict(spec) if isinstance(spec, Mapping) else spec)


def check_huggingface_steps(spec, source: str) -> None:
    """ValueError for a ``tokenizer.json`` normaliser with a ``SentencePiece`` step: fastbpe's
    own (its files and SentencePiece's ``.model`` files have it), which ``tokenizers`` refuses."""
    steps: List[Mapping] = []
    _flatten(spec, steps)
    if any(isinstance(step, Mapping) and step.get("type") == "SentencePiece" for step in steps):
        raise ValueError(f"{source}: normalizer 'SentencePiece' is fastbpe's own step, not one of tokenizers' "
                         "(fastbpe's own file or the .model file holds it)")


class Normalizer:
    """The steps a text goes through before splitting (none: the text as it is)."""

    def __init__(self, steps: Sequence[Mapping] = ()):
        if isinstance(steps, (str, bytes, Mapping)):
            raise TypeError("steps must be a list of normalizer steps")
        flat: List[Mapping] = []
        for step in steps:
            _flatten(step, flat)
        self.steps: List[Mapping] = flat
        self._functions = [_step(step) for step in flat]

    @classmethod
    def from_spec(cls, spec: Spec) -> "Normalizer":
        """From what a tokenizer file holds: None, a Unicode form's name, or a list of steps; or
        a Normalizer, which is returned as it is (its steps never change once made)."""
        if spec is None:
            return cls()
        if isinstance(spec, str):
            if spec not in UNICODE_FORMS:
                raise ValueError(f"normalizer must be one of {(None, *UNICODE_FORMS)} or a list of steps, got {spec!r}")
            return cls([{"type": spec}])
        if isinstance(spec, Mapping):
            return cls([spec])
        if isinstance(spec, Normalizer):
            return spec
        if isinstance(spec, (list, tuple)):
            return cls(spec)
        raise ValueError(f"normalizer must be None, a name or a list of steps, got {spec!r:.80}")

    def to_spec(self) -> Spec:
        """What :meth:`from_spec` reads back: None, a Unicode form's name, or the list of steps."""
        if not self.steps:
            return None
        if len(self.steps) == 1 and set(self.steps[0]) == {"type"} and self.steps[0]["type"] in UNICODE_FORMS:
            return self.steps[0]["type"]
        return [dict(step) for step in self.steps]

    def to_huggingface(self) -> Optional[dict]:
        """The ``normalizer`` object of a ``tokenizer.json``; ValueError for a SentencePiece
        charsmap, which no ``tokenizers`` normaliser applies as SentencePiece does."""
        if not self.steps:
            return None
        steps: List[dict] = []
        for step in self.steps:
            if step.get("type") != "SentencePiece":
                steps.append(dict(step))
            elif step.get("precompiled_charsmap"):
                raise ValueError("a SentencePiece normaliser with a character map cannot be written to tokenizer.json: "
                                 "tokenizers' Precompiled applies the map a grapheme at a time, which differs from "
                                 "SentencePiece on some sequences; save the tokenizer in fastbpe's format instead")
            elif step.get("user_defined_symbols"):
                raise ValueError("a SentencePiece normaliser that keeps user-defined pieces as they are cannot be "
                                 "written to tokenizer.json: tokenizers finds added tokens before normalising, "
                                 "SentencePiece after; save the tokenizer in fastbpe's format instead")
            else:
                steps += sentencepiece_steps(step.get("add_dummy_prefix", True),
                                             step.get("remove_extra_whitespaces", True))
        return steps[0] if len(steps) == 1 else {"type": "Sequence", "normalizers": steps}

    def __call__(self, text: str) -> str:
        for function in self._functions:
            text = function(text)
        return text

    def __bool__(self) -> bool:
        return bool(self.steps)

    def __eq__(self, other) -> bool:
        return isinstance(other, Normalizer) and self.steps == other.steps

    def __repr__(self) -> str:
        return f"Normalizer({self.steps!r})"

    def names(self) -> str:
        """Its steps by type, for a message (a SentencePiece step's character map is hundreds
        of kilobytes of base64).

        >>> Normalizer([{"type": "NFC"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]).names()
        'NFC + Replace'
        """
        return " + ".join(str(step.get("type", "?")) for step in self.steps)

    def __getstate__(self) -> dict:
        return {"steps": self.steps}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["steps"])
