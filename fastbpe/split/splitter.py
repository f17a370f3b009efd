"""Step 3 of encoding, the splitter: how an ordinary piece of text is cut into chunks.

A :class:`Splitter` is one split pattern (a name of :mod:`.patterns` or a regex) and whether
the text between its matches is kept as chunks (``split_gaps``), then optional further stages
``(pattern, keep_gaps)`` that split every chunk in turn (Hugging Face files with several
``Split`` steps, DeepSeek's), and ``prefix_space`` (a space before every piece that does not
start with one, Hugging Face's ``ByteLevel(add_prefix_space=True)``).

It serialises itself: :meth:`~Splitter.to_native` / :meth:`~Splitter.from_native` are its
fields of fastbpe's own file, :meth:`~Splitter.to_huggingface` /
:meth:`~Splitter.from_huggingface` its ``pre_tokenizer`` object of a ``tokenizer.json``.

>>> s = Splitter.from_huggingface({"type": "ByteLevel", "add_prefix_space": True}, "t.json")
>>> s.stages == [(GPT2_ORIGINAL_PATTERN, True)], s.prefix_space
(True, True)
>>> Splitter.from_huggingface(s.to_huggingface(), "t.json") == s
True
"""
from typing import List, Mapping, Optional, Sequence, Tuple

from ..fileio import json_field
from .bounds import chunk_bounds, staged_chunk_bounds
from .oniguruma import check_tiktoken_pattern, from_oniguruma_pattern, oniguruma_pattern
from .patterns import (GPT2_ORIGINAL_PATTERN, NAME_LIKE, check_user_pattern, compiled_regex, fused_scanner_id, resolve,
                       source)

__all__ = ["Splitter", "WHOLE_PIECE", "METASPACE_SPLIT", "metaspace_splitter"]

Stage = Tuple[str, bool]

# The whole piece as one chunk: a ByteLevel without its regex and no Split, or a
# character-level file without a pre-tokenizer.
WHOLE_PIECE = r"(?s:.+)"

# Metaspace(split=true) cuts before every marker: "▁a▁▁b" -> "▁a", "▁", "▁b" (the pattern tiles the text)
METASPACE_SPLIT = "▁[^▁]*|[^▁]+"


class Splitter:
    """The split stages of a tokenizer (step 3 of :meth:`fastbpe.Tokenizer.encode`).

    >>> Splitter("whitespace").bounds("ab  c")[1:]
    (array([0, 4]), array([2, 5]))
    """

    def __init__(self, pattern: str = "gpt2", split_gaps: bool = False, split_stages: Sequence[Stage] = (),
                 prefix_space: bool = False):
        stages: List[Stage] = []
        for stage in split_stages:
            if not (isinstance(stage, (tuple, list)) and len(stage) == 2 and isinstance(stage[0], str)):
                raise ValueError(f"split_stages entries must be (pattern, keep_gaps) pairs, got {stage!r:.80}")
            compiled_regex(stage[0])
            stages.append((stage[0], bool(stage[1])))
        if not isinstance(prefix_space, bool):
            raise TypeError(f"prefix_space must be True or False, got {prefix_space!r:.40}")
        check_user_pattern(pattern)  # an unknown name or a bad regex fails here, not at the first encode
        self.pattern = pattern
        self.split_gaps = bool(split_gaps)
        self.split_stages = stages
        self.prefix_space = prefix_space

    @property
    def stages(self) -> List[Stage]:
        """Every ``(pattern, keep_gaps)`` stage in order, the first one included."""
        return [(self.pattern, self.split_gaps), *self.split_stages]

    def is_plain(self) -> bool:
        """One pattern, gaps dropped, no prefix space: what fastbpe trains, and all that the
        formats with a single split regex (tiktoken, GPT-2) can say."""
        return not (self.split_gaps or self.split_stages or self.prefix_space)

    def fused_scanner(self) -> Optional[int]:
        """The compiled scanner that splits and encodes in one pass (one named pattern whose
        chunks tile the text), or None."""
        return None if self.split_stages else fused_scanner_id(self.pattern)

    def tiles(self) -> bool:
        """Whether the chunks, one after the other, are the text: every stage keeps its gaps or
        is a named pattern whose matches tile the text (``"whitespace"`` drops the spaces)."""
        return all(keep or fused_scanner_id(pattern) is not None for pattern, keep in self.stages)

    def with_prefix_space(self, text: str) -> str:
        """``text`` with the space ``prefix_space`` puts before a piece (unchanged without it)."""
        if self.prefix_space and text and not text.startswith(" "):
            return " " + text
        return text

    def bounds(self, text: str):
        """``(utf8, starts, ends)``: the chunks of ``text`` as byte offsets (:mod:`.bounds`)."""
        if self.split_stages:
            return staged_chunk_bounds(text, self.stages)
        return chunk_bounds(text, self.pattern, self.split_gaps)

    def keywords(self) -> dict:
        """The :class:`fastbpe.Tokenizer` arguments that make this splitter."""
        return dict(pattern=self.pattern, split_gaps=self.split_gaps, split_stages=list(self.split_stages),
                    prefix_space=self.prefix_space)

    # ---- fastbpe's own file ---------------------------------------------------------------------

    def to_native(self) -> dict:
        """Its fields of fastbpe's file; the options only when set (a trained tokenizer's file
        reads in every version 1 reader)."""
        return {
            "pattern": self.pattern,
            **({"split_gaps": True} if self.split_gaps else {}),
            **({"split_stages": [list(x) for x in self.split_stages]} if self.split_stages else {}),
            **({"prefix_space": True} if self.prefix_space else {}),
        }

    @classmethod
    def from_native(cls, data: Mapping) -> "Splitter":
        """The splitter of a fastbpe file's JSON object; ValueError for a field of the wrong type."""
        stages = []
        for stage in json_field(data, "split_stages", (list,), []):
            if not (isinstance(stage, list) and len(stage) == 2 and isinstance(stage[0], str)
                    and isinstance(stage[1], bool)):
                raise ValueError(f"fastbpe tokenizer file: split stages are [pattern, keep_gaps] pairs, got "
                                 f"{stage!r:.60}")
            stages.append(tuple(stage))
        return cls(json_field(data, "pattern", (str,)), json_field(data, "split_gaps", (bool,), False), stages,
                   json_field(data, "prefix_space", (bool,), False))

    # ---- tiktoken's pat_str ------------------------------------------------------------------------

    def to_tiktoken(self) -> str:
        """tiktoken's ``pat_str``: the regex of a single split whose gaps, if kept, never occur
        (a named pattern that tiles the text, or a user regex, which tiktoken runs the same way).
        Several stages, a prefix space, or gaps kept by a named pattern that leaves some are a
        ValueError: tiktoken would encode differently."""
        entry = resolve(self.pattern)
        if self.split_stages or self.prefix_space or (self.split_gaps and entry is not None and not entry.tiles):
            raise ValueError("this format has a single split pattern, which drops the text between matches; the "
                             "tokenizer splits in several stages, keeps gaps or puts a space before each piece")
        if entry is None:  # (a user regex, run by tiktoken's own engine)
            check_tiktoken_pattern(self.pattern)
        return source(self.pattern)

    # ---- Hugging Face's tokenizer.json ------------------------------------------------------------

    def to_huggingface(self, byte_level: bool = True) -> Optional[dict]:
        """The ``pre_tokenizer`` object: for a byte-level tokenizer a ``Sequence`` of ``Split``
        steps then ``ByteLevel`` (whose own regex, ``use_regex``, does the last split when it
        is GPT-2's); for a character-level one the whole piece (none) or Metaspace's split.
        What the file cannot say is a ValueError."""
        if not byte_level:
            if self.pattern not in (WHOLE_PIECE, METASPACE_SPLIT) or self.split_stages or self.prefix_space:
                raise ValueError("a character-level tokenizer is written to tokenizer.json only with the whole "
                                 "piece as one chunk or Metaspace's split")
            if self.pattern == WHOLE_PIECE:
                return None
            return {"type": "Split", "pattern": {"Regex": METASPACE_SPLIT}, "behavior": "Isolated", "invert": False}
        stages = [(source(pattern), keep_gaps) for pattern, keep_gaps in self.stages]
        use_regex = stages[-1] == (source(GPT2_ORIGINAL_PATTERN), True)  # ByteLevel's own regex does the last split
        if use_regex or stages == [(WHOLE_PIECE, True)]:
            stages = stages[:-1]
        if self.prefix_space and stages:
            raise ValueError("a tokenizer with prefix_space is written to tokenizer.json only with ByteLevel's own "
                             "split (GPT-2's regex) or none")
        splits = [{"type": "Split", "pattern": {"Regex": oniguruma_pattern(pattern)},
                   "behavior": "Isolated" if keep_gaps else "Removed", "invert": not keep_gaps}
                  for pattern, keep_gaps in stages]
        byte_level_step = {"type": "ByteLevel", "add_prefix_space": self.prefix_space, "trim_offsets": True,
                           "use_regex": use_regex}
        return {"type": "Sequence", "pretokenizers": [*splits, byte_level_step]}

    @classmethod
    def from_huggingface(cls, pre, source_name: str) -> "Splitter":
        """The splitter of a byte-level file's ``pre_tokenizer``: ``Split`` steps (``Isolated``,
        or ``Removed`` with ``invert``) then ``ByteLevel`` (``use_regex`` on or off,
        ``add_prefix_space``). Anything else is a ValueError naming the step."""
        if not isinstance(pre, Mapping):
            raise ValueError(f"{source_name}: no pre_tokenizer; only byte-level BPE files are supported")
        steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]
        if not isinstance(steps, list) or not steps:
            raise ValueError(f"{source_name}: malformed pre_tokenizer Sequence")
        *splits, last = steps
        if not isinstance(last, Mapping) or last.get("type") != "ByteLevel":
            raise ValueError(f"{source_name}: the pre_tokenizer must end with ByteLevel (byte-level BPE), "
                             f"got {last!r:.80}")
        for key in ("add_prefix_space", "use_regex"):
            if not isinstance(last.get(key, False), bool):
                raise ValueError(f"{source_name}: pre_tokenizer ByteLevel {key} must be true or false")
        prefix_space = last.get("add_prefix_space", False)
        if prefix_space and splits:
            # ByteLevel would put its space before every chunk of the Splits, not before the text
            raise ValueError(f"{source_name}: pre_tokenizer ByteLevel with add_prefix_space=true after a Split is "
                             "not supported (only as the whole pre-tokenizer)")
        stages: List[Stage] = []
        for step in splits:
            if not isinstance(step, Mapping) or step.get("type") != "Split":
                raise ValueError(f"{source_name}: unsupported pre_tokenizer step {step!r:.80} (supported: Split, "
                                 "then ByteLevel)")
            stages.append(_split_stage(step, source_name))
        if last.get("use_regex", True):
            stages.append((GPT2_ORIGINAL_PATTERN, True))  # ByteLevel's own split (Isolated)
        if not stages:
            stages.append((WHOLE_PIECE, True))  # ByteLevel alone without its regex: one chunk per piece
        import regex  # (a custom split: the compiled scanners need no ``regex``)

        for pattern_text, _ in stages:
            try:
                regex.compile(pattern_text)
            except regex.error as exc:
                raise ValueError(f"{source_name}: pre_tokenizer split pattern {pattern_text!r:.80} does not "
                                 f"compile: {exc}") from None
        (pattern, keep_gaps), *more = stages
        return cls(pattern, keep_gaps, more, prefix_space)

    def __eq__(self, other) -> bool:
        return isinstance(other, Splitter) and self.keywords() == other.keywords()

    def __repr__(self) -> str:
        return f"Splitter({self.pattern!r}, split_gaps={self.split_gaps}, split_stages={self.split_stages!r}, " \
               f"prefix_space={self.prefix_space})"


def _split_stage(step: Mapping, source_name: str) -> Stage:
    """A ``Split`` pre-tokenizer as a ``(regex, keep_gaps)`` stage."""
    pattern = step.get("pattern")
    if not isinstance(pattern, Mapping) or not ("Regex" in pattern or "String" in pattern) \
            or not isinstance(pattern.get("Regex", pattern.get("String")), str):
        raise ValueError(f"{source_name}: pre_tokenizer Split pattern must be {{'Regex': str}} or {{'String': str}}")
    behavior, invert = step.get("behavior"), step.get("invert", False)
    if not isinstance(invert, bool):  # "false" would be true to bool()
        raise ValueError(f"{source_name}: pre_tokenizer Split invert must be true or false, got {invert!r:.20}")
    if (behavior, invert) == ("Isolated", False):
        keep_gaps = True
    elif (behavior, invert) == ("Removed", True):
        keep_gaps = False
    else:
        raise ValueError(f"{source_name}: pre_tokenizer Split behavior {behavior!r} (invert={invert}) is not "
                         "supported; Isolated, or Removed with invert, is")
    if "Regex" in pattern:
        text = from_oniguruma_pattern(pattern["Regex"])
    else:
        import regex

        text = regex.escape(pattern["String"])
    # A split regex spelled like a name ("abc") would select fastbpe's pattern of that name, or
    # be refused as an unknown one; a Hugging Face file means the regex.
    if NAME_LIKE.fullmatch(text):
        text = f"(?:{text})"  # a regex, not the name of one of fastbpe's patterns
    return text, keep_gaps


def metaspace_splitter(pre, has_added_tokens: bool, source_name: str) -> Tuple[Splitter, List[dict]]:
    """The splitter of a character-level file's pre-tokenizer and the normaliser steps that
    stand for its ``Metaspace`` (spaces become ``▁``; with ``prepend_scheme`` "always", a ``▁``
    before every piece that does not start with one)."""
    if pre is None:
        return Splitter(WHOLE_PIECE), []
    if not isinstance(pre, Mapping):
        raise ValueError(f"{source_name}: malformed pre_tokenizer {pre!r:.80}")
    if pre.get("type") == "Split" and pre.get("pattern") == {"Regex": METASPACE_SPLIT}:
        return Splitter(_split_stage(pre, source_name)[0]), []  # what to_huggingface gives Metaspace's split
    if pre.get("type") != "Metaspace":
        raise ValueError(f"{source_name}: pre_tokenizer {pre.get('type')!r:.40} in a character-level file "
                         "(byte_fallback=true, or an unk_token) is not supported (none, or Metaspace, is)")
    if pre.get("replacement") != "▁" or not isinstance(pre.get("split", True), bool):
        raise ValueError(f"{source_name}: pre_tokenizer Metaspace with replacement {pre.get('replacement')!r:.20} "
                         "is not supported (only '▁')")
    scheme = pre.get("prepend_scheme", "always" if pre.get("add_prefix_space", True) else "never")
    if scheme == "first" and has_added_tokens:
        # "first" puts the marker before the piece at the start of the text only, not after an
        # added token: a per-piece normaliser cannot tell the two apart
        raise ValueError(f"{source_name}: pre_tokenizer Metaspace prepend_scheme='first' with added tokens is not "
                         "supported")
    if scheme not in ("always", "first", "never"):
        raise ValueError(f"{source_name}: pre_tokenizer Metaspace prepend_scheme {scheme!r:.20} is not supported")
    steps = [{"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]
    if scheme != "never":  # \A: Oniguruma's ^ would match after every newline
        steps.append({"type": "Replace", "pattern": {"Regex": "\\A(?!▁)(?=[\\s\\S])"}, "content": "▁"})
    return Splitter(METASPACE_SPLIT if pre.get("split", True) else WHOLE_PIECE), steps
