"""Step 5 of encoding, the markers of character-level BPE and of Hugging Face's BPE model, and
what decoding makes of them.

* ``word_start`` / ``word_end``: a symbol put before / after every chunk before BPE (the
  end-of-word marker of Sennrich et al. 2016, ``</w>``); they decode to single spaces.
* ``space_marker``: the character SentencePiece-style vocabularies write for a space (``▁``,
  Kudo and Richardson 2018); it decodes to a space, and the one put before the text is dropped.
* ``end_of_word_suffix`` / ``continuing_subword_prefix``: Hugging Face's BPE model options (the
  ``</w>`` of CLIP's and openai-gpt's files, BERT-style ``##``). They mark bytes, not chunks:
  each chunk's last byte starts as its token with the suffix after it, every other byte as its
  token with the prefix before it. The suffix decodes to a space (the last one dropped), the
  prefix to nothing.

:class:`Markers` serialises itself: its fields of fastbpe's own file, and the ``decoder`` and
the model's marker fields of a ``tokenizer.json`` (which has no word markers: writing them
there is a ValueError).

>>> m = Markers(word_end="</w>")
>>> m.word("low"), m.decode("low</w>er</w>")
('low</w>', 'low er')
>>> Markers.from_native(m.to_native()) == m
True
"""
from typing import List, Mapping, Optional, Sequence, Tuple, Union

from ..arguments import check_word_markers
from ..fileio import json_field
from ..formats.bytelevel import texts_to_tokens, token_to_text

__all__ = ["Markers", "ID_RULES"]

# The dummy_prefix values read from the ids: SentencePiece's decoding, by pieces, and
# tokenizers' Metaspace decoder, by the first token
ID_RULES = ("piece", "pieces", "token")
_RULES_SAID = "True, False, 'piece', 'pieces' or 'token'"


class Markers:
    """Word markers and the space marker of a tokenizer (none: ``bool(markers)`` is False).
    ``dummy_prefix``: a space marker was put before the text (SentencePiece's
    ``add_dummy_prefix``), which decoding drops: True, the space the decoded text begins with
    (Hugging Face's ``Strip`` decoder); ``"piece"``, the marker that begins the first piece
    with text (SentencePiece's own decoding: an unknown piece's `` ⁇ `` keeps its space);
    ``"pieces"``, that and the pieces of a marker alone before it (SentencePiece's with
    ``remove_extra_whitespaces``); ``"token"``, every marker of the first token
    (tokenizers' ``Metaspace`` decoder); the last three read from the ids
    (:meth:`fastbpe.Tokenizer.decode`). False for vocabularies that put none there (Gemma's),
    whose every marker decodes to a space."""

    dummy_prefix = True  # (what pickles of versions before the option hold)

    def __init__(self, word_start: Optional[str] = None, word_end: Optional[str] = None,
                 space_marker: Optional[str] = None, end_of_word_suffix: Optional[str] = None,
                 continuing_subword_prefix: Optional[str] = None, dummy_prefix: Union[bool, str] = True):
        check_word_markers(word_start, word_end)
        if space_marker not in (None, "") and not (isinstance(space_marker, str) and len(space_marker) == 1):
            raise ValueError(f"space_marker must be one character, got {space_marker!r:.40}")
        if not isinstance(dummy_prefix, (bool, str)):
            raise TypeError(f"dummy_prefix must be {_RULES_SAID}, got {dummy_prefix!r:.40}")
        if isinstance(dummy_prefix, str) and dummy_prefix not in ID_RULES:
            raise ValueError(f"dummy_prefix must be {_RULES_SAID}, got {dummy_prefix!r:.40}")
        if dummy_prefix is not True and not space_marker:
            raise ValueError(f"dummy_prefix={dummy_prefix!r} needs a space_marker (it says whether one goes before "
                             "the text)")
        self.dummy_prefix = dummy_prefix
        for name, marker in (("end_of_word_suffix", end_of_word_suffix),
                             ("continuing_subword_prefix", continuing_subword_prefix)):
            if marker is not None and not (isinstance(marker, str) and marker):
                raise ValueError(f"{name} must be a non-empty str or None, got {marker!r:.40}")
        self.word_start = word_start or ""
        self.word_end = word_end or ""
        self.space_marker = space_marker or ""
        self.end_of_word_suffix = end_of_word_suffix or ""
        self.continuing_subword_prefix = continuing_subword_prefix or ""
        self._derive()

    def _derive(self) -> None:
        """What decode reads on every call, kept as attributes (pickles of earlier versions
        lack them): a ``__bool__`` method cost a one-id decode 40% of its time (164 of 348 ns)."""
        self.in_text = self._markers_in_text()
        self.present = bool(self.space_marker or self.in_text or self.continuing_subword_prefix)  # (bool(self))
        self.space_marker_utf8 = self.space_marker.encode("utf-8", "surrogatepass")

    def _markers_in_text(self) -> tuple:
        """(marker, whether the one before the text (True) or after it (False) is dropped) for
        :meth:`decode`, in its order; empty when there are none, so that decoding without
        them costs no loop. The space marker is not one: the decode table writes it as a
        space, token by token, and drops the one before the text (``fastbpe.encode.vocab.TextTable``)."""
        return tuple((marker, leading) for marker, leading in (
            (self.word_start, True), (self.word_end, False), (self.end_of_word_suffix, False)) if marker)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._derive()

    def has_word_markers(self) -> bool:
        return bool(self.word_start or self.word_end)

    def has_subword_markers(self) -> bool:
        """An ``end_of_word_suffix`` or a ``continuing_subword_prefix`` (markers of bytes)."""
        return bool(self.end_of_word_suffix or self.continuing_subword_prefix)

    def __bool__(self) -> bool:
        return self.present

    def word(self, chunk: str) -> str:
        """A chunk with its word markers, as BPE sees it."""
        return self.word_start + chunk + self.word_end

    def decoded_tokens(self, token_bytes: Sequence[bytes]) -> List[bytes]:
        """The bytes each token decodes to: a token with the ``continuing_subword_prefix``
        stands for what follows it."""
        if not self.continuing_subword_prefix:
            return list(token_bytes)
        prefix = self.continuing_subword_prefix.encode("utf-8", "surrogatepass")
        return [t[len(prefix):] if t.startswith(prefix) else t for t in token_bytes]

    def decode(self, text: Union[str, Sequence[str]], chunks_tile: bool = False) -> str:
        """Decoded text with the word markers turned back into spaces: each marker a space, and
        the one put before (``word_start``) or after (``word_end``, ``end_of_word_suffix``, as
        Hugging Face's BPEDecoder) the text dropped. ``chunks_tile``: the split's chunks are
        the whole text, spaces included (GPT-2's pattern): the word markers stand for no space
        then and are dropped. (The space marker is the decode table's: ``_markers_in_text``.)
        ``text`` may come in parts, the odd ones kept as they are (special tokens' names: a
        ``word_start="_"`` leaves ``<|im_start|>`` whole).

        >>> Markers(word_start="_").decode(["_hi_there", "<|im_start|>", "_you"])
        'hi there<|im_start|> you'
        """
        parts = [text] if isinstance(text, str) else list(text)
        dropped = (self.word_start, self.word_end) if chunks_tile else ()
        for marker, leading in self.in_text:
            space = "" if marker in dropped else " "
            parts[::2] = [part.replace(marker, space) for part in parts[::2]]
            if not space:
                continue
            # (the end that is a kept part keeps its space: it was no marker)
            if leading and parts[0].startswith(" "):
                parts[0] = parts[0][1:]
            elif not leading and len(parts) % 2 and parts[-1].endswith(" "):
                parts[-1] = parts[-1][:-1]
        return parts[0] if len(parts) == 1 else "".join(parts)

    def keywords(self) -> dict:
        """The :class:`fastbpe.Tokenizer` arguments that make these markers."""
        return dict(word_start=self.word_start or None, word_end=self.word_end or None,
                    space_marker=self.space_marker or None, end_of_word_suffix=self.end_of_word_suffix or None,
                    continuing_subword_prefix=self.continuing_subword_prefix or None, dummy_prefix=self.dummy_prefix)

    # ---- fastbpe's own file ---------------------------------------------------------------------

    def to_native(self) -> dict:
        """Its fields of fastbpe's file (the word markers always, as version 1 files have them)."""
        return {"word_start": self.word_start, "word_end": self.word_end,
                **({"space_marker": self.space_marker} if self.space_marker else {}),
                **({"dummy_prefix": self.dummy_prefix} if self.dummy_prefix is not True else {}),
                **({"end_of_word_suffix": self.end_of_word_suffix} if self.end_of_word_suffix else {}),
                **({"continuing_subword_prefix": self.continuing_subword_prefix}
                   if self.continuing_subword_prefix else {})}

    @classmethod
    def from_native(cls, data: Mapping) -> "Markers":
        """The markers of a fastbpe file's JSON object; ValueError for a field of the wrong type."""
        return cls(json_field(data, "word_start", (str, type(None)), what="a str (the word-start marker) or null"),
                   json_field(data, "word_end", (str, type(None)), what="a str (the word-end marker) or null"),
                   json_field(data, "space_marker", (str, type(None)), what="a str (the space marker) or null"),
                   json_field(data, "end_of_word_suffix", (str, type(None)),
                              what="a str (the end-of-word suffix) or null"),
                   json_field(data, "continuing_subword_prefix", (str, type(None)),
                              what="a str (the continuing-subword prefix) or null"),
                   json_field(data, "dummy_prefix", (bool, str), True,
                              what="true, false, \"piece\", \"pieces\" or \"token\""))

    # ---- Hugging Face's tokenizer.json ------------------------------------------------------------

    def to_huggingface(self, character_level: bool, byte_fallback: bool) -> dict:
        """The ``decoder`` object: GPT-2's byte-level decoder, or for a character-level
        vocabulary ``Fuse`` (after ``ByteFallback`` with ``byte_fallback``) inside the space
        marker's ``Replace`` and ``Strip``; for ``dummy_prefix="token"``, the ``Metaspace``
        decoder it was read from (before ``ByteFallback`` and ``Fuse`` with ``byte_fallback``).
        Word markers have no place in the file: ValueError."""
        if self.has_word_markers():
            raise ValueError("only byte-level tokenizers without word markers can be exported to this format")
        if not character_level:
            return {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
        if self.dummy_prefix == "token":  # (the Metaspace decoder it was read from; alone, it leaves byte tokens)
            metaspace = {"type": "Metaspace", "replacement": self.space_marker, "prepend_scheme": "always",
                         "split": True}
            if not byte_fallback:
                return metaspace
            return {"type": "Sequence", "decoders": [metaspace, {"type": "ByteFallback"}, {"type": "Fuse"}]}
        steps = [*([{"type": "ByteFallback"}] if byte_fallback else []), {"type": "Fuse"}]
        if self.space_marker:
            steps = [{"type": "Replace", "pattern": {"String": self.space_marker}, "content": " "}, *steps,
                     *([{"type": "Strip", "content": " ", "start": 1, "stop": 0}] if self.dummy_prefix else [])]
        return {"type": "Sequence", "decoders": steps}

    def to_huggingface_model(self) -> dict:
        """Its fields of the ``model`` object: ``continuing_subword_prefix`` and
        ``end_of_word_suffix`` as byte-level text, or null."""
        return {"continuing_subword_prefix": token_to_text(self.continuing_subword_prefix.encode("utf-8")) or None,
                "end_of_word_suffix": token_to_text(self.end_of_word_suffix.encode("utf-8")) or None}

    @classmethod
    def from_huggingface(cls, decoder=None, model: Optional[Mapping] = None,
                         source: str = "tokenizer.json") -> "Markers":
        """The space marker of a ``decoder``: the character it turns back into a space, dropping
        the first (Llama 2's ``Replace(▁, " ")`` ... ``Strip(" ", 1, 0)``), or those of the first
        token (``Metaspace``);
        the ``model``'s ``continuing_subword_prefix`` and ``end_of_word_suffix``, each byte-level
        text of UTF-8 (``"</w>"``). A malformed marker is a ValueError naming ``source``."""
        marker, dummy_prefix = _space_marker(decoder)
        return cls(space_marker=marker, dummy_prefix=dummy_prefix, **_model_markers(model or {}, source))

    def __eq__(self, other) -> bool:
        return isinstance(other, Markers) and self.keywords() == other.keywords()

    def __repr__(self) -> str:
        subword = "".join(f", {k}={v!r}" for k, v in (("end_of_word_suffix", self.end_of_word_suffix),
                                                       ("continuing_subword_prefix", self.continuing_subword_prefix))
                          if v)
        prefix = "" if self.dummy_prefix is True else f", dummy_prefix={self.dummy_prefix!r}"
        return f"Markers({self.word_start!r}, {self.word_end!r}, space_marker={self.space_marker!r}{subword}{prefix})"


def _model_markers(model: Mapping, source: str) -> dict:
    markers = {}
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        marker = model.get(key)
        if not marker:
            continue
        if not isinstance(marker, str):
            raise ValueError(f"{source}: model {key} must be a str, got {marker!r:.20}")
        token = texts_to_tokens([marker])[0]
        try:
            markers[key] = token.decode("utf-8")
        except (AttributeError, UnicodeDecodeError):
            raise ValueError(f"{source}: model {key} {marker!r:.20} is not byte-level text of UTF-8") from None
    return markers


def _decoder_steps(decoder) -> Optional[List[Mapping]]:
    """A decoder's steps: a ``Sequence``'s decoders, or the decoder alone; None when it is not
    an object, or is a ``Sequence`` whose decoders are not a list of objects.

    >>> _decoder_steps({"type": "Sequence", "decoders": [{"type": "Fuse"}]}), _decoder_steps({"type": "Fuse"})
    ([{'type': 'Fuse'}], [{'type': 'Fuse'}])
    """
    if not isinstance(decoder, Mapping):
        return None
    steps = decoder.get("decoders") if decoder.get("type") == "Sequence" else [decoder]
    if not isinstance(steps, list) or not all(isinstance(step, Mapping) for step in steps):
        return None
    return steps


def decoder_difference(decoder, character_level: bool, byte_fallback: bool) -> Optional[str]:
    """None when ``tokenizers`` decodes by this ``decoder`` as fastbpe decodes the file's tokens;
    else the decoder's steps, for a warning. fastbpe decodes a token's bytes as text (a byte
    piece ``<0xNN>`` as its byte), its space marker as a space (:func:`_space_marker`). The
    decoders that do the same: ``ByteLevel`` for a byte-level file; for a character-level one
    Llama's ``Replace(marker, " ")``, ``ByteFallback``, ``Fuse`` and ``Strip(" ", 1, 0)`` (or without
    the first or the last; ``ByteFallback`` may be missing in a file without byte pieces), a
    ``Metaspace`` before ``ByteFallback`` and ``Fuse``, or a ``Metaspace`` alone without byte
    pieces to decode. A file without a decoder says nothing
    of decoding (``tokenizers`` then joins the tokens' vocabulary text with spaces): None.

    >>> decoder_difference({"type": "ByteLevel"}, False, False) is None
    True
    >>> decoder_difference({"type": "Sequence", "decoders": [{"type": "ByteLevel"}, {"type": "Strip"}]}, False, False)
    'Sequence[ByteLevel, Strip]'
    """
    if decoder is None:
        return None
    steps = _decoder_steps(decoder)
    if steps is None:
        return repr(decoder)[:60]
    kinds = tuple(step.get("type") for step in steps)
    if not character_level:
        same = kinds == ("ByteLevel",)
    elif kinds == ("Metaspace",):
        same = not byte_fallback
    else:
        marker, strip = _space_marker(decoder)
        head = kinds[:1] if kinds[:1] in (("Replace",), ("Metaspace",)) and marker is not None else ()
        tail = ("Strip",) if strip is True and head == ("Replace",) else ()
        # (Strip acts on each piece: after Fuse, on the text's first; ByteFallback does nothing
        # in a file without byte pieces)
        middles = {("ByteFallback", "Fuse")} if tail else {("ByteFallback", "Fuse"), ("ByteFallback",)}
        if not byte_fallback:
            middles |= {("Fuse",)} if tail else {("Fuse",), ()}
        same = kinds[len(head):len(kinds) - len(tail)] in middles
    if same:
        return None
    shown = ", ".join(str(kind) for kind in kinds)
    return f"Sequence[{shown}]" if isinstance(decoder, Mapping) and decoder.get("type") == "Sequence" else shown


def _space_marker(decoder) -> Tuple[Optional[str], Union[bool, str]]:
    """``(marker, dummy_prefix)`` of a ``decoder``: the character it turns back into a space
    (None for none), and whether it drops the first (``Strip(" ", 1, 0)`` last), or
    ``"token"`` for a ``Metaspace`` whose ``prepend_scheme`` is not ``"never"`` (older files:
    ``add_prefix_space``), which drops every marker of the first token."""
    steps = _decoder_steps(decoder)
    if not steps:
        return None, True
    # a Metaspace, alone or with the byte-fallback steps beside it (which fastbpe's decoding does anyway)
    kinds = [step.get("type") for step in steps]
    if kinds.count("Metaspace") == 1 and set(kinds) <= {"Metaspace", "ByteFallback", "Fuse"}:
        metaspace = steps[kinds.index("Metaspace")]
        if not isinstance(metaspace.get("replacement"), str):
            return None, True
        scheme = metaspace.get("prepend_scheme", "always" if metaspace.get("add_prefix_space", True) else "never")
        return metaspace["replacement"], "token" if scheme != "never" else False
    first, last = steps[0], steps[-1]
    if not (first.get("type") == "Replace" and first.get("content") == " "
            and isinstance(first.get("pattern"), Mapping) and isinstance(first["pattern"].get("String"), str)
            and len(first["pattern"]["String"]) == 1):
        return None, True
    strip = (last.get("type") == "Strip" and last.get("content") == " " and last.get("start") == 1
             and last.get("stop") == 0)
    return first["pattern"]["String"], strip
