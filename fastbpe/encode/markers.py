"""Step 5 of encoding, the markers of character-level BPE, and what decoding makes of them.

* ``word_start`` / ``word_end``: a symbol put before / after every chunk before BPE (the
  end-of-word marker of Sennrich et al. 2016, ``</w>``); they decode to single spaces.
* ``space_marker``: the character SentencePiece-style vocabularies write for a space (``▁``,
  Kudo and Richardson 2018); it decodes to a space, and the one put before the text is dropped.

:class:`Markers` serialises itself: its fields of fastbpe's own file, and the ``decoder`` of a
``tokenizer.json`` (which has no word markers: writing them there is a ValueError).

>>> m = Markers(word_end="</w>")
>>> m.word("low"), m.decode("low</w>er</w>")
('low</w>', 'low er')
>>> Markers.from_native(m.to_native()) == m
True
"""
from typing import Mapping, Optional

from ..arguments import check_word_markers
from ..fileio import json_field

__all__ = ["Markers"]


class Markers:
    """Word markers and the space marker of a tokenizer (none: ``bool(markers)`` is False)."""

    def __init__(self, word_start: Optional[str] = None, word_end: Optional[str] = None,
                 space_marker: Optional[str] = None):
        check_word_markers(word_start, word_end)
        if space_marker not in (None, "") and not (isinstance(space_marker, str) and len(space_marker) == 1):
            raise ValueError(f"space_marker must be one character, got {space_marker!r:.40}")
        self.word_start = word_start or ""
        self.word_end = word_end or ""
        self.space_marker = space_marker or ""

    def has_word_markers(self) -> bool:
        return bool(self.word_start or self.word_end)

    def __bool__(self) -> bool:
        return bool(self.word_start or self.word_end or self.space_marker)

    def word(self, chunk: str) -> str:
        """A chunk with its word markers, as BPE sees it."""
        return self.word_start + chunk + self.word_end

    def decode(self, text: str) -> str:
        """Decoded text with the markers turned back into spaces: each marker a space, and the
        one put before (``word_start``, ``space_marker``) or after (``word_end``) the text dropped
        (as the decoders of Hugging Face's SentencePiece-style files, Replace + Strip or
        Metaspace, do)."""
        for marker, leading in ((self.space_marker, True), (self.word_start, True), (self.word_end, False)):
            if marker:
                text = text.replace(marker, " ")
                if leading:
                    text = text[1:] if text.startswith(" ") else text
                else:
                    text = text[:-1] if text.endswith(" ") else text
        return text

    def keywords(self) -> dict:
        """The :class:`fastbpe.Tokenizer` arguments that make these markers."""
        return dict(word_start=self.word_start or None, word_end=self.word_end or None,
                    space_marker=self.space_marker or None)

    # ---- fastbpe's own file ---------------------------------------------------------------------

    def to_native(self) -> dict:
        """Its fields of fastbpe's file (the word markers always, as version 1 files have them)."""
        return {"word_start": self.word_start, "word_end": self.word_end,
                **({"space_marker": self.space_marker} if self.space_marker else {})}

    @classmethod
    def from_native(cls, data: Mapping) -> "Markers":
        """The markers of a fastbpe file's JSON object; ValueError for a field of the wrong type."""
        return cls(json_field(data, "word_start", (str, type(None)), what="a str (the word-start marker) or null"),
                   json_field(data, "word_end", (str, type(None)), what="a str (the word-end marker) or null"),
                   json_field(data, "space_marker", (str, type(None)), what="a str (the space marker) or null"))

    # ---- Hugging Face's tokenizer.json ------------------------------------------------------------

    def to_huggingface(self, byte_fallback: bool) -> dict:
        """The ``decoder`` object: GPT-2's byte-level decoder, or for a ``byte_fallback``
        vocabulary ``ByteFallback`` + ``Fuse`` inside the space marker's ``Replace`` and
        ``Strip``. Word markers have no place in the file: ValueError."""
        if self.has_word_markers():
            raise ValueError("only byte-level tokenizers without word markers can be exported to this format")
        if not byte_fallback:
            return {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
        steps = [{"type": "ByteFallback"}, {"type": "Fuse"}]
        if self.space_marker:
            steps = [{"type": "Replace", "pattern": {"String": self.space_marker}, "content": " "}, *steps,
                     {"type": "Strip", "content": " ", "start": 1, "stop": 0}]
        return {"type": "Sequence", "decoders": steps}

    @classmethod
    def from_huggingface(cls, decoder) -> "Markers":
        """The space marker of a ``decoder``: the character it turns back into a space, dropping
        the first (Llama 2's ``Replace(▁, " ")`` ... ``Strip(" ", 1, 0)``, or ``Metaspace``)."""
        return cls(space_marker=_space_marker(decoder))

    def __eq__(self, other) -> bool:
        return isinstance(other, Markers) and self.keywords() == other.keywords()

    def __repr__(self) -> str:
        return f"Markers({self.word_start!r}, {self.word_end!r}, space_marker={self.space_marker!r})"


def _space_marker(decoder) -> Optional[str]:
    if not isinstance(decoder, Mapping):
        return None
    if decoder.get("type") == "Metaspace" and isinstance(decoder.get("replacement"), str):
        return decoder["replacement"] if decoder.get("prepend_scheme", "always") != "never" else None
    steps = decoder.get("decoders") if decoder.get("type") == "Sequence" else None
    if not isinstance(steps, list) or not steps or not all(isinstance(x, Mapping) for x in steps):
        return None
    first, last = steps[0], steps[-1]
    if (first.get("type") == "Replace" and first.get("content") == " "
            and isinstance(first.get("pattern"), Mapping) and isinstance(first["pattern"].get("String"), str)
            and len(first["pattern"]["String"]) == 1
            and last.get("type") == "Strip" and last.get("content") == " " and last.get("start") == 1
            and last.get("stop") == 0):
        return first["pattern"]["String"]
    return None
