"""Special tokens: which ones a call may encode, and where they stand in a text (tiktoken's rules).

A special token is a string with an id of its own outside the mergeable vocabulary
(``<|endoftext|>``). Its text in user input is an error unless the call allows it
(``allowed_special``, a set or ``"all"``), in which case it becomes its id; ``disallowed_special=()``
instead encodes it as ordinary text.

Each special token may carry the matching options of Hugging Face's added tokens
(:class:`AddedTokenSplitter`): ``lstrip``/``rstrip`` (the match takes in the whitespace on that
side), ``single_word`` (matched only where no word character touches it) and ``normalized``
(matched in the normalised text, after the tokens matched in the text as given). A token without
options is matched exactly in the text as given.

One more option, ``always``, is for a token that is not special but still split out before
anything else: it is matched in every text, whatever the policy (``encode_ordinary`` and
``disallowed_special=()`` included), and never refused (``disallowed_special`` passes over it).
That is what ``tokenizers`` does with an added token that is not special (``"special": false``:
Qwen's ``<think>``). With ``user_defined`` as well, it is a SentencePiece user-defined piece:
found as it is written in the normalised text, which the normaliser keeps it in as it is.

:class:`SpecialTokens` is the policy as one component of a tokenizer (step 1 of encoding): the
ids and the options, checked, and how they are matched. It serialises itself: its fields of
fastbpe's own file, and the ``added_tokens`` of a ``tokenizer.json``.

>>> s = SpecialTokens({"<s>": 3, "<mask>": 4}, {"<mask>": {"lstrip": True}})
>>> [entry["content"] for entry in s.to_huggingface()]
['<s>', '<mask>']
>>> SpecialTokens.from_huggingface(s.to_huggingface(), "t.json") == s
True
"""
import collections.abc
import functools
from typing import (TYPE_CHECKING, AbstractSet, Callable, Collection, Dict, Iterable, Iterator, List, Mapping,
                    Optional, Sequence, Tuple, Union)

from .._core.encode import NameFinder
from ..fileio import json_field
from ..formats.ids import check_id, check_special_ids

if TYPE_CHECKING:  # (imported where a found special token or an option needs it)
    import regex

__all__ = ["SpecialTokens", "special_ids", "check_special_name", "allowed_and_disallowed", "check_disallowed",
           "split_on_specials", "OPTION_NAMES", "ALWAYS", "USER_DEFINED", "special_token_options",
           "AddedTokenSplitter", "alternation", "found_in_normalized", "normalized_text"]

Allowed = Union[str, AbstractSet[str]]
Disallowed = Union[str, Collection[str], None]


def check_special_name(text) -> None:
    """A special token's name is a non-empty str.

    >>> check_special_name("<|endoftext|>")
    """
    if not isinstance(text, str):
        raise TypeError(f"special tokens must be str, got {type(text).__name__} ({text!r:.40})")
    if not text:
        raise ValueError("a special token must be a non-empty str")


def special_ids(special_tokens: Union[Mapping[str, int], Sequence[str]], num_tokens: int,
                token_bytes: Sequence[bytes]) -> Dict[str, int]:
    """The name -> id map of a tokenizer's special tokens, checked. A sequence of names gets the
    ids after the vocabulary, in order.

    >>> special_ids(["<a>", "<b>"], 5, [b"x"] * 5)
    {'<a>': 5, '<b>': 6}
    """
    if isinstance(special_tokens, (str, bytes, bytearray)):
        raise TypeError(f"special_tokens must be a list of names or a name -> id mapping, not one "
                        f"{type(special_tokens).__name__} (write [{special_tokens!r:.40}])")
    if not isinstance(special_tokens, (Mapping, Iterable)):
        raise TypeError(f"special_tokens must be a list of names or a name -> id mapping, got "
                        f"{type(special_tokens).__name__}")
    if not isinstance(special_tokens, Mapping):
        names = list(special_tokens)
        if len(set(names)) != len(names):
            raise ValueError("special_tokens lists a name twice")
        special_tokens = {s: num_tokens + i for i, s in enumerate(names)}
    ids = {}
    for text, sid in special_tokens.items():
        check_special_name(text)
        # an int (not a bool, not a float: 1000.7 is not id 1000) that fits the int32 ids
        sid = check_id(sid, f"special token {text!r}")
        # a special token may share the id of the mergeable token of the same bytes (a Hugging
        # Face added token that is also in model.vocab: BPE makes it too, the text split out)
        if sid < len(token_bytes) and token_bytes[sid] and token_bytes[sid] != text.encode("utf-8", "surrogatepass"):
            raise ValueError(f"special token {text!r} has id {sid}, which a mergeable token uses")
        ids[text] = sid
    if len(set(ids.values())) != len(ids):
        raise ValueError("two special tokens share an id")
    return ids


@functools.lru_cache(maxsize=128)
def name_finder(names: frozenset) -> NameFinder:
    """The compiled search for these names (made once per set of names)."""
    return NameFinder(names)


@functools.lru_cache(maxsize=128)
def alternation(specials: frozenset) -> "regex.Pattern":
    """Alternation of the special tokens, longest first: its matches are leftmost-longest."""
    import regex  # (here: the import costs 18 ms, and a text without special tokens never needs it)

    return regex.compile("|".join(regex.escape(s) for s in sorted(specials, key=lambda s: (-len(s), s))))


def allowed_and_disallowed(names: AbstractSet[str], allowed_special: Allowed, disallowed_special: Disallowed,
                           always: frozenset = frozenset()) -> Tuple[frozenset, frozenset]:
    """tiktoken's rule: ``"all"`` means every special token; by default none is allowed and
    all are disallowed (a literal one in the text is an error). The tokens matched ``always``
    are allowed in every call, and never disallowed (``disallowed_special`` may name them, as
    ``special_tokens_set`` does: they are left out). As in tiktoken, ``allowed_special`` may
    name tokens this vocabulary lacks (one set serves several encodings: those are no special
    tokens here), ``disallowed_special`` any text the input must not hold, and None for it
    disallows nothing.

    >>> allowed_and_disallowed({"<a>", "<b>"}, {"<a>", "<c>"}, "all")
    (frozenset({'<a>'}), frozenset({'<b>'}))
    >>> allowed_and_disallowed({"<a>", "<b>"}, frozenset(), (), always=frozenset({"<b>"}))
    (frozenset({'<b>'}), frozenset())
    """
    if disallowed_special is None:
        disallowed_special = ()
    for what, value in (("allowed_special", allowed_special), ("disallowed_special", disallowed_special)):
        # a str other than "all" would be read as a set of one-character names
        # (collections.abc's Iterable: typing's costs an encode of a short text 2 us a check)
        if (isinstance(value, str) and value != "all") or not isinstance(value, (str, collections.abc.Iterable)):
            raise TypeError(f'{what} must be "all" or a collection of special token names, got {value!r:.60}'
                            + (f" (write {{{value!r:.40}}})" if isinstance(value, str) else ""))
    names = frozenset(names)
    allowed = names if allowed_special == "all" else _given_names(allowed_special, "allowed_special must hold str")
    disallowed = (names - allowed - always) if disallowed_special == "all" else \
        _given_names(disallowed_special, "disallowed_special must hold non-empty str")
    if "" in disallowed:  # (it would be found in every text)
        raise ValueError("disallowed_special must hold non-empty str, got ''")
    return (allowed & names) | always, disallowed - always


def _given_names(names, said: str) -> frozenset:
    """A caller's collection of names as a frozenset; TypeError for an item that is no str (as
    tiktoken: a mistake, not a name to skip). The sets made of a tokenizer's own names ("all")
    need no such check, and get none: a call with ``allowed_special="all"`` pays nothing for it."""
    given = frozenset(names)
    if not set(map(type, given)) <= {str}:  # (each item's type taken in C; a str subclass looked at below)
        odd = next((name for name in given if not isinstance(name, str)), None)
        if odd is not None:
            raise TypeError(f"{said}, got {odd!r:.40}")
    return given


def check_disallowed(text: str, disallowed: frozenset, always: frozenset = frozenset(),
                     names: AbstractSet[str] = frozenset()) -> None:
    """ValueError when ``text`` holds a disallowed special token (the search releases the GIL,
    so batch-encoding threads do not serialise on it); one inside a token matched ``always``
    (found first, the longer of two that start at one place) is no special token there.
    ``names``: the special tokens' names, so that disallowed text that names none is said so.

    >>> check_disallowed("x<a>b", frozenset({"<a>"}), always=frozenset({"<a>b"}))
    """
    if not disallowed or not name_finder(disallowed).holds(text):
        return  # (most texts hold none: the compiled search says so at memchr speed)
    found = alternation(disallowed).search(text, concurrent=True)
    if found and always:
        found = next((match for match in alternation(disallowed | always).finditer(text, concurrent=True)
                      if match.group() in disallowed), None)
    if found and names and found.group() not in names:  # (tiktoken's disallowed_special: any text)
        raise ValueError(f"the text contains {found.group()!r}, which disallowed_special names: leave it out of "
                         "disallowed_special to encode it as ordinary text")
    if found:
        raise ValueError(
            f"the text contains the special token {found.group()!r}, which is disallowed: "
            f"pass allowed_special={{{found.group()!r}}} (or \"all\") to encode it as a special "
            f"token, or disallowed_special=() to encode it as ordinary text")


def split_on_specials(text: str, allowed: frozenset) -> Iterator[Tuple[str, bool]]:
    """``(piece, is a special token)`` in order; ordinary pieces may be empty.

    >>> list(split_on_specials("a<s>b", frozenset({"<s>"})))
    [('a', False), ('<s>', True), ('b', False)]
    """
    position = 0
    if allowed:
        for match in alternation(allowed).finditer(text):
            yield text[position:match.start()], False
            yield match.group(), True
            position = match.end()
    yield text[position:], False


# The options of an added token, as Hugging Face's tokenizer.json spells them; all false is a
# token matched exactly in the text as given (what a special token without options is).
OPTION_NAMES = ("single_word", "lstrip", "rstrip", "normalized")
# and fastbpe's for a token matched in every text, whatever the policy (tokenizer.json's
# "special": false), and for a SentencePiece user-defined piece: matched in the normalised text
# as it is written (the normaliser leaves it as it is), not normalised itself as a Hugging Face
# ``normalized`` token is
ALWAYS = "always"
USER_DEFINED = "user_defined"


def found_in_normalized(flags: Mapping[str, bool]) -> bool:
    """Whether a token with these options is found in the normalised text (``normalized``, or
    a SentencePiece user-defined piece), not in the text as given."""
    return bool(flags.get("normalized") or flags.get(USER_DEFINED))


def normalized_text(name: str, flags: Mapping[str, bool], normalize: Callable[[str], str]) -> str:
    """The text by which a token :func:`found_in_normalized` is found there: a Hugging Face
    ``normalized`` token's own text normalised, a user-defined piece's as it is written."""
    return name if flags.get(USER_DEFINED) else normalize(name)

@functools.lru_cache(maxsize=None)
def _added_token_classes():
    """Rust regex's Unicode \\w and \\s (UTS #18), which tokenizers' added-token matching uses:
    a word character, and the whitespace before (matched backwards) and after a position."""
    import regex

    return (regex.compile(r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]"),
            regex.compile(r"(?r)\p{White_Space}*"), regex.compile(r"\p{White_Space}*"))


def special_token_options(options: Optional[Mapping[str, Mapping[str, bool]]], names: Collection[str],
                          has_normalizer: bool) -> Dict[str, Dict[str, bool]]:
    """The options of the special tokens that have some, checked: ``{name: {option: True}}``
    with only the options that are on. ``normalized`` is kept only where it changes what
    matches: with a normaliser, or when some tokens have it and others not (the tokens matched
    in the text as given are found first).

    >>> special_token_options({"<m>": {"lstrip": True, "rstrip": False}}, ["<m>"], False)
    {'<m>': {'lstrip': True}}
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"special_token_options must be a name -> options mapping, got {type(options).__name__}")
    checked: Dict[str, Dict[str, bool]] = {}
    for name, flags in options.items():
        if name not in names:
            raise ValueError(f"special_token_options names {name!r:.60}, which is not a special token")
        if not isinstance(flags, Mapping) or set(flags) - {*OPTION_NAMES, ALWAYS, USER_DEFINED}:
            raise ValueError(f"the options of special token {name!r:.60} must be a mapping of "
                             f"{(*OPTION_NAMES, ALWAYS, USER_DEFINED)}, got {flags!r:.80}")
        if not all(isinstance(v, bool) for v in flags.values()):
            raise ValueError(f"the options of special token {name!r:.60} must be true or false, got {flags!r:.80}")
        on = {k: True for k in (*OPTION_NAMES, ALWAYS, USER_DEFINED) if flags.get(k)}
        if on:
            checked[name] = on
    normalized = [name for name in names if checked.get(name, {}).get("normalized")]
    if not has_normalizer and len(normalized) in (0, len(names)):
        for name in normalized:  # one pass over the text as given either way
            del checked[name]["normalized"]
            if not checked[name]:
                del checked[name]
    return checked


class SpecialTokens:
    """The special tokens of a tokenizer, ``ids`` (``{text: id}``), with their matching
    ``options`` (``{text: {option: True}}``, only the tokens that have some; step 1 of
    :meth:`fastbpe.Tokenizer.encode`). ``tokens``: names (given the ids after ``token_bytes``)
    or a name -> id mapping (:func:`special_ids`); ``has_normalizer``: whether ordinary text is
    normalised, without which a ``normalized`` that changes nothing is dropped
    (:func:`special_token_options`).

    >>> SpecialTokens(["<a>"], token_bytes=[b"x"]).ids
    {'<a>': 1}
    """

    def __init__(self, tokens: Union[Mapping[str, int], Sequence[str]] = (),
                 options: Optional[Mapping[str, Mapping[str, bool]]] = None, *, token_bytes: Sequence[bytes] = (),
                 has_normalizer: bool = True):
        self.ids: Dict[str, int] = special_ids(tokens, len(token_bytes), token_bytes)
        self.options: Dict[str, Dict[str, bool]] = special_token_options(options, self.ids.keys(), has_normalizer)

    def __bool__(self) -> bool:
        return bool(self.ids)

    @property
    def max_id(self) -> int:
        """The largest special token id (-1 for none), found at the first call: ``n_vocab`` asks
        it, as tiktoken's attribute answers, on every call."""
        found = self.__dict__.get("_max_id")
        if found is None:
            found = self.__dict__["_max_id"] = max(self.ids.values(), default=-1)
        return found

    @property
    def always(self) -> frozenset:
        """The names of the tokens matched in every text, whatever the policy (option ``always``)."""
        found = self.__dict__.get("_always")
        if found is None:
            found = self.__dict__["_always"] = frozenset(n for n, flags in self.options.items() if flags.get(ALWAYS))
        return found

    def added_token_splitter(self, normalize: Callable[[str], str]) -> Optional["AddedTokenSplitter"]:
        """The matcher of special tokens with matching options; None when none has any (exact
        matches)."""
        if not any(set(flags) - {ALWAYS} for flags in self.options.values()):
            return None
        return AddedTokenSplitter(self.ids, self.options, normalize)

    def keywords(self) -> dict:
        """The :class:`fastbpe.Tokenizer` arguments that make these special tokens."""
        return dict(special_tokens=dict(self.ids), special_token_options={k: dict(v) for k, v in self.options.items()})

    # ---- fastbpe's own file ---------------------------------------------------------------------

    def to_native(self) -> dict:
        """Its fields of fastbpe's file (the options only when some token has any)."""
        return {"special_tokens": self.ids, **({"special_token_options": self.options} if self.options else {})}

    @classmethod
    def from_native(cls, data: Mapping) -> "SpecialTokens":
        """The special tokens of a fastbpe file's JSON object; ValueError for a field of the wrong type."""
        return cls(check_special_ids(json_field(data, "special_tokens", (dict,), {}), "fastbpe tokenizer file"),
                   json_field(data, "special_token_options", (dict,), {},
                              what="an object of special token name -> matching options"))

    # ---- Hugging Face's tokenizer.json ------------------------------------------------------------

    def to_huggingface(self) -> List[dict]:
        """The ``added_tokens`` list: every special token, by id, with its matching options (a
        token matched ``always`` is not special there); ValueError for a SentencePiece
        user-defined piece, which ``tokenizers`` finds before normalising, not after."""
        kept = next((name for name, flags in self.options.items() if flags.get(USER_DEFINED)), None)
        if kept is not None:
            raise ValueError(f"the SentencePiece user-defined piece {kept!r:.60} cannot be written as an added token "
                             "of tokenizer.json: tokenizers finds added tokens before normalising, SentencePiece after")
        return [{"id": i, "content": s, **{flag: self.options.get(s, {}).get(flag, False) for flag in OPTION_NAMES},
                 "special": s not in self.always} for s, i in sorted(self.ids.items(), key=lambda kv: kv[1])]

    @classmethod
    def from_huggingface(cls, added, source: str, in_vocab: Optional[Mapping[str, int]] = None,
                         vocab_entries: Optional[int] = None) -> "SpecialTokens":
        """The ``added_tokens`` list, which fastbpe encodes as special tokens (split out of the
        text before anything else, as ``tokenizers`` does with every added token), each with
        its options (:class:`AddedTokenSplitter`); one that is not special is matched
        ``always``, as ``tokenizers`` matches it whatever the caller asks. A malformed entry is
        a ValueError naming ``source``.

        With ``vocab_entries`` (the number of ``model.vocab`` entries) and ``in_vocab`` (the
        model's id of each added token that is a ``model.vocab`` key), the tokens get the ids
        ``tokenizers`` gives them as it loads the file, whatever ids the file lists
        (:func:`huggingface_added_ids`); else the listed ids."""
        added = added or []
        if not isinstance(added, list):
            raise ValueError(f"{source}: added_tokens must be a list")
        specials: Dict[str, int] = {}
        options: Dict[str, Dict[str, bool]] = {}
        for entry in added:
            if not isinstance(entry, Mapping) or not isinstance(entry.get("content"), str) or not entry["content"]:
                raise ValueError(f"{source}: malformed added token {entry!r:.80}")
            content = entry["content"]
            if content in specials:
                raise ValueError(f"{source}: the added token {content!r} is listed twice")
            # tokenizers' default: an added token that is not special is matched in normalised text
            flags = {"normalized": entry.get("normalized", not entry.get("special", False)),
                     **{flag: entry.get(flag, False) for flag in ("single_word", "lstrip", "rstrip")}}
            for flag, value in flags.items():
                if not isinstance(value, bool):
                    raise ValueError(f"{source}: added token {content!r} {flag} must be true or false, got "
                                     f"{value!r:.20}")
            if not isinstance(entry.get("special", False), bool):
                raise ValueError(f"{source}: added token {content!r} special must be true or false, got "
                                 f"{entry['special']!r:.20}")
            flags[ALWAYS] = not entry.get("special", False)  # (no field: AddedToken's default, not special)
            specials[content] = check_id(entry.get("id"), f"{source}: added token {content!r}")
            options[content] = {flag: True for flag, value in flags.items() if value}
        if vocab_entries is not None:
            specials = dict(zip(specials, huggingface_added_ids(list(specials), in_vocab or {}, vocab_entries)))
        return cls(check_special_ids(specials, source), {name: flags for name, flags in options.items() if flags})

    def __eq__(self, other) -> bool:
        return isinstance(other, SpecialTokens) and self.keywords() == other.keywords()

    def __repr__(self) -> str:
        return f"SpecialTokens({self.ids!r}, {self.options!r})"


def huggingface_added_ids(contents: Sequence[str], in_vocab: Mapping[str, int], vocab_entries: int) -> List[int]:
    """The ids ``tokenizers`` gives the added tokens of a ``tokenizer.json`` as it loads it: a
    token that is a ``model.vocab`` key gets its vocab id, the others ``vocab_entries`` (the
    number of vocab entries), one more, and so on in the order listed. The ids the file lists
    are not used (tokenizers only logs a warning when they differ).

    >>> huggingface_added_ids(["<a>", "the", "<b>"], {"the": 3}, 10)
    [10, 3, 11]
    """
    ids, next_id = [], vocab_entries
    for content in contents:
        if content in in_vocab:
            ids.append(in_vocab[content])
        else:
            ids.append(next_id)
            next_id += 1
    return ids


# One piece of a text cut at its added tokens: (start, end, special token or None, the piece's
# text, whether that text is normalised already). start/end are character positions in the
# text as given. A piece cut out of a stretch the normaliser changed (its length, or its
# characters) has no span of its own there: it is given the stretch's span when it is the
# stretch's one piece and ordinary text (whose offsets the normaliser's alignment maps, where
# fastbpe has one), else (None, None), and offsets are not mapped through it.
Piece = Tuple[Optional[int], Optional[int], Optional[str], str, bool]


class AddedTokenSplitter:
    """Finds a tokenizer's special tokens in a text with their options, as ``tokenizers``'
    ``AddedVocabulary`` does: first the tokens matched in the text as given (leftmost-longest,
    non-overlapping), then, in every piece between them once normalised, the ``normalized``
    ones (whose own text is normalised too). A ``single_word`` match with a word character
    beside it is skipped; ``lstrip``/``rstrip`` widen the match over the whitespace beside it
    (never back over the previous match)."""

    def __init__(self, names: Collection[str], options: Mapping[str, Mapping[str, bool]],
                 normalize: Callable[[str], str]):
        self.options = options
        self.normalize = normalize
        self._matchers: Dict[frozenset, tuple] = {}
        self._matchers_for(frozenset(names))  # a token that cannot be matched is a ValueError now

    def _matcher(self, names: Iterable[str], normalized: bool):
        """(alternation, {matched text: (name, single_word, lstrip, rstrip)}) or None."""
        by_text: Dict[str, tuple] = {}
        for name in names:
            flags = self.options.get(name, {})
            text = normalized_text(name, flags, self.normalize) if normalized else name
            if not text:
                raise ValueError(f"the special token {name!r:.60} is normalized to nothing, so it never matches")
            if text in by_text:
                raise ValueError(f"the special tokens {by_text[text][0]!r:.60} and {name!r:.60} match the same "
                                 "normalized text")
            by_text[text] = (name, bool(flags.get("single_word")), bool(flags.get("lstrip")),
                             bool(flags.get("rstrip")))
        return (alternation(frozenset(by_text)), by_text) if by_text else None

    def _matchers_for(self, allowed: frozenset) -> tuple:
        found = self._matchers.get(allowed)
        if found is None:
            in_normalized = {n for n in allowed if found_in_normalized(self.options.get(n, {}))}
            as_given = [n for n in sorted(allowed) if n not in in_normalized]
            normalized = sorted(in_normalized)
            found = self._matchers[allowed] = (self._matcher(as_given, False), self._matcher(normalized, True))
        return found

    def split(self, text: str, allowed: frozenset) -> List[Piece]:
        """The pieces of ``text`` in order (an ordinary piece is never empty, unless the text is)."""
        as_given, normalized = self._matchers_for(allowed)
        pieces: List[Piece] = []
        for start, end, name in _find(text, as_given):
            if name is not None or normalized is None:
                pieces.append((start, end, name, text[start:end], False))
                continue
            piece = self.normalize(text[start:end])
            found = _find(piece, normalized)
            for sub_start, sub_end, sub_name in found:
                if sub_end > sub_start or not pieces:
                    if piece == text[start:end]:  # (positions in the piece are positions in the text)
                        span: Tuple[Optional[int], Optional[int]] = (start + sub_start, start + sub_end)
                    else:
                        span = (start, end) if len(found) == 1 and sub_name is None else (None, None)
                    pieces.append((*span, sub_name, piece[sub_start:sub_end], True))
        return pieces


def _find(text: str, matcher) -> List[Tuple[int, int, Optional[str]]]:
    """``(start, end, name or None)`` spans of ``text``: its matches with their options
    applied, and the ordinary text between them. ``tokenizers``' rule, kept as it is: a match
    skipped by ``single_word`` does not let a later one start inside it, and a token that
    starts with whitespace may begin inside the previous token's ``rstrip``."""
    if matcher is None or not text:
        return [(0, len(text), None)]
    alternation, by_text = matcher
    word_char, spaces_before, spaces_after = _added_token_classes()
    spans: List[Tuple[int, int, Optional[str]]] = []
    position = 0
    for match in alternation.finditer(text):
        start, end = match.span()
        name, single_word, lstrip, rstrip = by_text[match.group()]
        if single_word and ((start > 0 and word_char.match(text, start - 1))
                            or (end < len(text) and word_char.match(text, end))):
            continue
        if lstrip:
            start = max(spaces_before.match(text, 0, start).start(), position)
        if rstrip:
            end = spaces_after.match(text, end).end()
        if position < start:
            spans.append((position, start, None))
        spans.append((start, end, name))
        position = end
    if position != len(text):
        spans.append((position, len(text), None))
    return spans
