"""Cutting one text into blocks at *safe cuts*, where splitting the text changes no chunk.

A cut at i is safe for a pattern when the chunks of text T equal the chunks of T[:i] followed by
the chunks of T[i:]. Each named pattern has its own rule, and user regexes a conservative one;
the rules and their proof live beside the code that applies them, ``find_cut`` in
``fastbpe/_core/cut.h``, and :func:`fastbpe.split.patterns.cut_rule` picks the rule of a pattern.
Every rule is decided by the characters at i-1 and i alone, so the search is one linear scan.

Counting (:func:`fastbpe.count_words`) and shard encoding (:func:`fastbpe.encode_files`) both
cut here, so both read any file in bounded memory and linear time: a stretch with no safe cut
(a multi-megabyte "word") makes one block longer than ``block_size``, never a re-scan.

A tokenizer that normalises (NFC...) splits the normalised text, whose characters may fall in
other classes than the input's (U+0958 is a letter; its NFC ends with a mark). So its text is
normalised first, streaming (:func:`normalize_stream`), and the rule is applied to the result;
unless tokens are split out of the text as given before it is normalised (Hugging Face's added
tokens), where the text is cut as given, each cut checked (:class:`CutOutsideTokens`).
"""
import unicodedata
from typing import BinaryIO, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple, Union

from .._core.split import InvalidUTF8, find_cut

__all__ = ["cut_stream", "cut_segments", "file_cut_at_or_after", "normalize_stream", "CheckedRule", "find_checked_cut",
           "CutOutsideTokens"]


class CheckedRule(NamedTuple):
    """A cut rule with a further test every cut must pass, ``accept(data, i)`` (data: the bytes
    searched; refusing a cut is always safe): where the text is more than the split's chunks,
    as with tokens split out of it before the split (a cut must not fall inside one)."""

    rule: int
    accept: Callable[[memoryview, int], bool]


def find_checked_cut(data, start: int, rule: Union[int, CheckedRule]) -> int:
    """``find_cut`` for a rule or a :class:`CheckedRule`: the first cut at or after ``start``
    that the rule finds and the check accepts, or -1."""
    if not isinstance(rule, CheckedRule):
        return find_cut(data, start, rule)
    i = find_cut(data, start, rule.rule)
    while i >= 0 and not rule.accept(data, i):
        i = find_cut(data, i + 1, rule.rule)
    return i


def cut_stream(pieces: Iterable[bytes], rule: int, block_size: Optional[int], *,
               grow: bool = False) -> Iterator[Tuple[bytes, int]]:
    """Re-cut a stream of byte pieces (one text) at safe cuts into segments of >= block_size
    bytes (the last may be shorter). Yields (segment, offset of its first byte in the text).

    Pieces are held as views, not concatenated, until a segment is cut: each segment costs one
    copy, and while it is made the pieces and the segment are both held. ``grow``: once a
    segment spans more than two pieces (a stretch without a cut, a multi-megabyte word), its
    bytes are gathered instead in a bytearray grown in place piece by piece (each piece is
    dropped once appended) and yielded as it is: a long segment is held once, not twice. The
    cut search looks at each byte once (a cut within 4 bytes after a piece boundary
    is not considered: its deciding bytes straddle two pieces; skipping a cut is always safe),
    so time stays linear however long a stretch without a cut is. ``block_size=None`` yields
    the text whole.

    >>> from fastbpe.split.patterns import cut_rule
    >>> list(cut_stream([b"aaa bbb ", b"ccc"], cut_rule("gpt2"), 2))
    [(b'aaa', 0), (b' bbb', 3), (b' ccc', 7)]
    >>> list(cut_stream([b"aa", b"aa", b"aa", b"aaaaa b"], cut_rule("gpt2"), 2, grow=True))
    [(bytearray(b'aaaaaaaaaaa'), 0), (b' b', 11)]
    """
    for segment, offset, _ in cut_segments(pieces, rule, block_size, grow=grow):
        yield segment, offset


def cut_segments(pieces: Iterable[bytes], rule: Union[int, CheckedRule], block_size: Optional[int], *,
                 grow: bool = False) -> Iterator[Tuple[bytes, int, bool]]:
    """:func:`cut_stream`'s segments as ``(segment, offset, more)``: ``more`` is True when
    bytes of the text are known to follow (the cut lies inside a piece), so a reader can hand
    the segment on as not the text's last at once, without reading on to find out.

    >>> from fastbpe.split.patterns import cut_rule
    >>> list(cut_segments([b"aaa bbb ", b"ccc"], cut_rule("gpt2"), 2))
    [(b'aaa', 0, True), (b' bbb', 3, True), (b' ccc', 7, False)]
    """
    gathered: Optional[bytearray] = None  # (grow) the text after the last cut, when it got long
    pending: List[memoryview] = []  # views of the text after the last cut (after `gathered`)
    pending_len = 0  # bytes of both
    offset = 0  # offset in the text of the first pending byte
    for piece in pieces:
        view = memoryview(piece)
        start = 0  # bytes of this piece before `start` are already handed out
        while block_size is not None and pending_len + len(view) - start > block_size:
            # the segment must reach block_size; positions near the piece start need bytes of
            # the previous piece to decide, so they are skipped when there is one
            lo = max(start + block_size - pending_len, start + (4 if pending_len else 1))
            i = find_checked_cut(view, lo, rule) if lo < len(view) else -1
            if i < 0:
                break
            if gathered is not None:
                gathered += view[start:i]
                segment, gathered = gathered, None
            else:
                segment = b"".join(pending + [view[start:i]])
            yield segment, offset, i < len(view)
            offset += len(segment)
            pending, pending_len, start = [], 0, i
        if start < len(view):
            pending.append(view[start:])
            pending_len += len(view) - start
            if grow and (gathered is not None or len(pending) > 2):
                # (a bytearray past the heap's threshold grows by mremap: no copy)
                if gathered is None:
                    gathered = bytearray()
                for part in pending:
                    gathered += part
                pending = []
    if gathered is not None:
        yield gathered, offset, False
    elif pending:
        yield b"".join(pending), offset, False


def file_cut_at_or_after(f: BinaryIO, pos: int, file_size: int, rule: int, end: Optional[int] = None) -> int:
    """First safe cut at or after ``pos`` in a seekable plain file (``file_size`` if none): where
    a worker's byte range starts, so that neighbouring ranges meet at the same cut. With ``end``,
    the search stops there: a result of ``end`` or more only says there is no cut before ``end``.

    The file is read a piece at a time and only the bytes that still decide a position are kept
    (find_cut looks at most 4 bytes back), so a stretch without a cut, a long word that fills
    the rest of the file, costs a read, not its size in memory.
    """
    if pos <= 0:
        return 0
    if pos >= file_size:
        return file_size
    base = max(0, pos - 4)  # the file offset of buf[0]
    f.seek(base)
    buf = b""
    search = pos - base
    while True:
        piece = f.read(1 << 16)
        if not piece:
            return file_size
        buf += piece
        i = find_cut(buf, search, rule)
        if i >= 0:
            return base + i
        # the last 4 positions wait for the bytes that follow them; each keeps 4 bytes before it
        search = max(search, len(buf) - 4)
        if end is not None and base + search >= end:
            return base + search
        drop = max(0, search - 4)
        buf, base, search = buf[drop:], base + drop, search - drop


class CutOutsideTokens:
    """The check of a :class:`CheckedRule` for a text from which the tokens ``names`` are split
    out before anything else (a tokenizer's tokens matched always): a cut at ``i`` is accepted
    when no occurrence of their text straddles it (so both sides split out the same tokens, and
    the piece of ordinary text around ``i`` holds the two characters the split's rule judged).

    ``form`` (the tokenizer's Unicode form): the text is cut as read and normalised block by
    block, as the tokens are matched in the text as given (``tokenizers``' order). A cut then
    also needs the two characters the rule judged to be ones normalisation leaves as they are
    wherever they stand (each its own normal form, a starter that composes with nothing before
    it), and the character after them to start afresh too: normalising each side then gives the
    normalisation of the whole, with the judged characters unchanged. A cut whose deciding
    bytes run past the data is refused (refusing is always safe).

    >>> accept = CutOutsideTokens(["<think>"], None)
    >>> data = b"1234567 <think> 123456789012"
    >>> accept(data, 8), accept(data, 11), accept(data, 15)
    (True, False, True)
    >>> accept = CutOutsideTokens(["<think>"], "NFC")
    >>> [accept(text.encode(), 8) for text in ("1234567 abcdefgh", "1234567 e\u0301fgh", "1234567 \u2126bcdefgh")]
    [True, False, False]
    """

    def __init__(self, names, form: Optional[str]):
        self.names = [name.encode("utf-8", "surrogatepass") for name in names]
        self.reach = max(len(name) for name in self.names)  # (bytes each side that decide)
        self.form = form
        self.decomposition = None if form is None else decomposition_of(form)
        self._kept: Dict[str, bool] = {}  # character -> left as it is by normalisation, wherever it stands

    def _kept_as_is(self, ch: str) -> bool:
        kept = self._kept.get(ch)
        if kept is None:
            kept = self._kept[ch] = (_starts_afresh(ch, self.decomposition)
                                     and unicodedata.normalize(self.form, ch) == ch)
        return kept

    def __call__(self, data, i: int) -> bool:
        lo, hi = i - max(self.reach, 4), i + max(self.reach, 8)
        if lo < 0 or hi > len(data):
            return False
        window = bytes(data[lo:hi])
        at = i - lo  # (i in the window)
        for name in self.names:  # an occurrence that starts before i and ends after it
            if window.find(name, at - len(name) + 1, at + len(name) - 1) >= 0:
                return False
        if self.form is None:
            return True
        before = window[at - 4:at].decode("utf-8", "surrogateescape")[-1]
        here, after = window[at:at + 8].decode("utf-8", "surrogateescape")[:2]
        return self._kept_as_is(before) and self._kept_as_is(here) and _starts_afresh(after, self.decomposition)


# ------------------------------------------------------------------------------ normalising a stream

_FRESH: Dict[Tuple[str, str], bool] = {}  # (character, decomposition form) -> starts afresh


def decomposition_of(form: str) -> str:
    """The decomposition a Unicode form starts with (``"NFKD"`` for the compatibility forms).

    >>> decomposition_of("NFKC"), decomposition_of("NFC")
    ('NFKD', 'NFD')
    """
    return "NFKD" if form in ("NFKC", "NFKD") else "NFD"


def _starts_afresh(ch: str, decomposition: str) -> bool:
    """Whether normalising the text before ``ch`` and the text from ``ch`` on apart gives the
    normalisation of the whole: ``ch`` decomposes to a first character of combining class 0
    (nothing reorders across it) that never composes with a character before it. Those that do
    are marks, or Hangul vowels and final consonants (which join the syllable before them)."""
    key = (ch, decomposition)
    fresh = _FRESH.get(key)
    if fresh is None:
        first = unicodedata.normalize(decomposition, ch)[0]
        fresh = not ("\ud800" <= ch <= "\udfff"  # an undecodable byte (surrogateescape)
                     or unicodedata.combining(first)
                     or unicodedata.category(first).startswith("M")
                     or "\u1161" <= first <= "\u1175" or "\u11a8" <= first <= "\u11c2")
        _FRESH[key] = fresh
    return fresh


def _last_boundary(piece: bytes, decomposition: str) -> int:
    """The last place in ``piece`` before which normalisation can start afresh, or -1."""
    # Almost every text has a space or a newline (ASCII: never reordered, never composed) near
    # its end; scripts written without either get a character-by-character search.
    j = max(piece.rfind(b"\n"), piece.rfind(b" "))
    if j >= 0:
        return j
    start = 0
    while start < min(len(piece), 4) and 0x80 <= piece[start] < 0xC0:
        start += 1  # the tail of a character begun in the previous piece
    text = piece[start:].decode("utf-8", "surrogateescape")
    for k in range(len(text) - 1, -1, -1):
        if _starts_afresh(text[k], decomposition):
            return start + len(text[:k].encode("utf-8", "surrogateescape"))
    return -1


def _normalized(data: bytes, offset: int, form: str) -> bytes:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        error = InvalidUTF8(offset + exc.start)
        error.bad = data[exc.start:exc.start + 1]
        raise error from None
    return unicodedata.normalize(form, text).encode("utf-8")


def normalize_stream(pieces: Iterable[bytes], form: str) -> Iterator[bytes]:
    """The UTF-8 of ``unicodedata.normalize(form, text)`` for the text that ``pieces`` (UTF-8)
    spell, a piece at a time: each is normalised up to its last place where normalisation starts
    afresh (see _starts_afresh), the rest is held for the next. Invalid UTF-8 raises
    :class:`InvalidUTF8` with its ``offset`` in the input and the byte found there as ``bad``.

    Each input byte is searched once and normalised once, so time is linear; memory holds one
    piece plus the stretch since the last such place (in practice a few bytes: every space,
    newline, ideograph or letter without a decomposing mark starts afresh).

    >>> b"".join(normalize_stream([b"cafe\\xcc", b"\\x81 ok"], "NFC")).decode()
    'café ok'
    """
    decomposition = decomposition_of(form)
    held: List[bytes] = []  # input after the last boundary found
    done = 0  # input bytes normalised so far
    for piece in pieces:
        j = _last_boundary(piece, decomposition)
        if j < 0 or (j == 0 and not held):
            held.append(piece)
            continue
        head = b"".join(held + [piece[:j]])
        yield _normalized(head, done, form)
        done += len(head)
        held = [piece[j:]]
    tail = b"".join(held)
    if tail:
        yield _normalized(tail, done, form)
