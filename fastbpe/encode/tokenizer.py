"""The Tokenizer: vocabulary, merges, split pattern and special tokens, encoding and decoding.

Token ids index ``Tokenizer.token_bytes``; merges are pairs of ids in priority (learned) order,
and the token a merge produces is the one whose bytes are the concatenation. Every token is
stored as bytes: raw bytes for ``unit="bytes"``, the UTF-8 of the text for ``unit="chars"``.

Encoding rules (``merge_rule``), each exact for the tokenizers it serves (specified in
:mod:`fastbpe.reference.encode`, run by the compiled core ``fastbpe/_core/encode.pyx``):

* ``"replay"`` (trained tokenizers): the merges replayed in learned order;
* ``"pair"`` (imported Hugging Face files): the adjacent pair of lowest merge rank, no floor;
* ``"token"`` (imported tiktoken and GPT-2 files): the adjacent pair whose concatenation has
  the lowest rank (= id).

``whole_token_lookup=True`` (tiktoken; Hugging Face's ``ignore_merges``) maps a chunk that is a
token straight to its id.

A tokenizer is made of small parts, in the order the text flows through them (the steps of
``encode``, numbered as Hugging Face numbers its pipeline); each serialises itself and maps to
the peers' files (:mod:`fastbpe.formats`):

1. the special-token policy (:mod:`.special`: ``special_tokens``, ``special_token_options``):
   special tokens are found and set apart;
2. the normaliser (:mod:`.normalizers`): each ordinary piece is normalised;
3. the splitter (:mod:`fastbpe.split.splitter`: ``pattern``, ``split_gaps``, ``split_stages``,
   ``prefix_space``): the piece is cut into chunks, by one or several split stages;
4. the BPE model (:mod:`.model`): token bytes, merges with the ids they make, the merge rule
   and the whole-token lookup, run by the compiled core;
5. optional markers (:mod:`.markers`: ``word_start``/``word_end``, ``space_marker``,
   ``end_of_word_suffix``/``continuing_subword_prefix``) and character-level units: the chunk
   reaches the same compiled core as symbol ids instead of bytes.

Byte-level tokenizers run steps 3 and 4 in one compiled pass when the split pattern allows.
"""
import json
import os
import threading
import warnings
from typing import (TYPE_CHECKING, AbstractSet, Collection, Dict, Iterable, Iterator, List, Mapping, NamedTuple,
                    Optional, Sequence, Set, Tuple, Union)

import numpy as np

from .._core.encode import MERGE_RULES, BPECore, EncodeState, NameFinder, byte_lengths, utf8_positions
from .._core.encode import decode_single_token_bytes as _decode_single_token_bytes
from ..arguments import check_byte_offsets, check_error_handler, check_workers
from ..formats import detect as detect_format
from ..formats import gpt2 as gpt2_format
from ..formats import huggingface as huggingface_format
from ..formats import native as native_format
from ..formats import sentencepiece as sentencepiece_format
from ..formats import tiktoken as tiktoken_format
from ..split.pretokenize import pretokenize
from ..split.splitter import WHOLE_PIECE, Splitter
from . import batch, special, surrogates, vocab
from .pools import PoolRegistry
from .id_arrays import as_id_dtype
from .markers import Markers
from .model import BPEModel
from .normalizers import Normalizer

if TYPE_CHECKING:  # (the added-token search's type; regex is imported where a search is made)
    import regex

__all__ = ["Tokenizer", "MERGE_RULES"]

UNITS = ("bytes", "chars")
# the byte length of the UTF-8 character each byte begins (0: a byte that begins none)
_UTF8_LENGTH_OF_LEAD = np.repeat(np.array([1, 0, 2, 3, 4, 0], dtype=np.int64), [0x80, 0x40, 0x20, 0x10, 0x08, 0x08])
PathLike = Union[str, os.PathLike]
_NO_NAMES: frozenset = frozenset()  # (encode_ordinary's refused special tokens: none)


def _default_policy(allowed_special, disallowed_special) -> bool:
    """Whether these are encode's defaults (no special token allowed, every one refused),
    tested without building the sets: the short-text fast path's question.

    >>> _default_policy(frozenset(), "all"), _default_policy(set(), "all"), _default_policy("all", "all")
    (True, True, False)
    """
    return (type(allowed_special) in (frozenset, set) and not allowed_special
            and type(disallowed_special) is str and disallowed_special == "all")


def _workers_or_threads(workers, num_threads) -> Optional[int]:
    """The thread count of a batch call given as ``workers`` or as tiktoken's ``num_threads``
    (None when neither is given); TypeError when both are.

    >>> _workers_or_threads(None, 8), _workers_or_threads(2, None)
    (8, 2)
    """
    if num_threads is None:
        return None if workers is None else check_workers(workers)
    if workers is not None:
        raise TypeError("give workers or num_threads (tiktoken's name for it), not both")
    return check_workers(num_threads, "num_threads")


def _id_sequences(batch) -> list:
    """The id sequences of a batch, for the batch decoders; TypeError for a str or for one
    sequence of ids (a batch holds sequences)."""
    if isinstance(batch, (str, bytes)) or (isinstance(batch, np.ndarray) and batch.ndim != 2):
        raise TypeError(f"a batch of id sequences is a list of them (or a 2-D array), not {type(batch).__name__}"
                        + (f" of {batch.ndim} dimensions" if isinstance(batch, np.ndarray) else ""))
    batch = batch if type(batch) is list else list(batch)
    if batch and isinstance(batch[0], (int, np.integer)):
        raise TypeError("a batch of id sequences is a list of them, not one sequence of ids (decode takes one)")
    return batch


class _InNormalized(NamedTuple):
    """Tokens matched always that are found in the normalised text (Tokenizer._in_normalized):
    their ``names``, the compiled ``finder`` of their texts there, the leftmost-longest
    ``search`` of them (None where an option looks around a match) and each text's id."""

    names: frozenset
    finder: NameFinder
    search: Optional["regex.Pattern"]
    ids: Dict[str, int]

    def matches(self, text: str) -> Iterator[Tuple[int, int, int]]:
        """``(start, end, id)`` of each token in ``text``, leftmost-longest (``search`` is not None)."""
        ids = self.ids
        for match in self.search.finditer(text):
            yield match.start(), match.end(), ids[match.group()]

    def spans(self, text: str) -> Optional[np.ndarray]:
        """:meth:`matches` flattened (int64): the ``frozen`` spans of ``BPECore.encode_chars``;
        None where an option decides."""
        if self.search is None:
            return None
        return np.array([x for span in self.matches(text) for x in span], dtype=np.int64)


def _json_object(value, what: str) -> Optional[dict]:
    """A JSON object a tokenizer keeps as it is (a copy, checked to be one), or None."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a JSON object (a dict) or None, got {type(value).__name__}")
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must hold JSON values only ({exc})") from None


class Tokenizer:
    """A BPE tokenizer: what :func:`fastbpe.train` returns and :meth:`load` reads.

    ``tokens``: the bytes of every id (``b""`` marks an unused id); ``merges``: pairs of ids
    in priority order (a third column, the id each merge produces, as the learner returns it,
    is accepted and checked). ``special_tokens``: names (given the ids after the vocabulary) or
    a name -> id mapping; ``special_token_options``: ``{name: {"lstrip": True, ...}}``, how a
    special token is matched (Hugging Face's added-token options ``single_word``, ``lstrip``,
    ``rstrip``, ``normalized``: :class:`.special.AddedTokenSplitter`; and ``always``, a token
    matched in every text whatever the special-token policy, as Hugging Face's added tokens
    that are not special are). Encoding options, for
    the imported formats (:mod:`fastbpe.formats`): ``merge_rule`` (module docstring),
    ``whole_token_lookup``, ``normalizer`` (``"NFC"``... or a list of steps, applied before
    splitting: :mod:`.normalizers`), ``prefix_space`` (a space
    before every ordinary piece that does not start with one, as Hugging Face's
    ``ByteLevel(add_prefix_space=True)``) and ``split_gaps`` (text between pattern matches becomes chunks
    too, as Hugging Face's ``Split(behavior="Isolated")``; by default it is dropped, as
    ``regex.findall`` and tiktoken do); ``split_stages``: further ``(pattern, keep_gaps)``
    splits applied to every chunk in turn (Hugging Face files with several ``Split`` steps);
    ``end_of_word_suffix``: the last byte of every chunk starts as the token of that byte with
    this text after it (Hugging Face's BPE ``end_of_word_suffix``, ``"</w>"`` in CLIP's and
    openai-gpt's files; Sennrich et al. 2016 mark word ends so); ``continuing_subword_prefix``:
    every byte of a chunk but the first starts as the token of this text followed by the byte,
    and a merge drops it from its right-hand token (Hugging Face's BPE option, ``"##"``);
    ``training_stats``: what each phase of training took (fastbpe's own files keep it);
    ``dummy_prefix``: with a ``space_marker``, whether one was put before the text
    (SentencePiece's ``add_dummy_prefix``), which decoding drops (False: Gemma's vocabularies,
    whose every marker decodes to a space; ``"piece"`` or ``"pieces"``: dropped as SentencePiece
    decodes; ``"token"``: every marker of the first token, as tokenizers' Metaspace decoder;
    see :class:`fastbpe.encode.markers.Markers`); ``unk_token``: for ``unit="chars"``, the token (or
    special token) a character without a token becomes, unless ``byte_fallback`` spells it as
    bytes first, and with ``fuse_unk`` a run of such characters is one (Hugging Face's BPE
    options; SentencePiece's models without byte fallback fuse); ``special_surfaces``: what
    special tokens decode to where that is not their name (``{name: text}``; SentencePiece's
    models: `` ⁇ `` for ``<unk>``, nothing for its control pieces ``<s>`` and ``</s>``);
    ``fallback_replacement``: how ``decode`` spells the bytes of a run of byte-fallback tokens
    that are not UTF-8, ``"token"`` (a U+FFFD for each token of the run, as the ``ByteFallback``
    decoder of ``tokenizers`` does) or ``"byte"`` (a U+FFFD for each byte that begins no
    character, as SentencePiece does); ``post_processor``: a ``tokenizer.json``'s
    ``post_processor`` object (the ``TemplateProcessing`` that puts a BOS token before the ids
    of Llama's files, or ``ByteLevel``'s offset trimming), kept as it is and written back by
    ``to_huggingface`` and ``save``; encoding does not apply it (its ids are those of
    ``tokenizers``' ``encode(text, add_special_tokens=False)``).

    >>> tok = Tokenizer([b"a", b"b", b"ab"], [(0, 1)], pattern="whitespace")
    >>> tok.encode("abab b")
    [2, 2, 1]
    >>> tok.decode([2, 2])
    'abab'
    """

    # The OpenAI encoding's name (``"cl100k_base"``) when one of OpenAI's rank files was read
    # (:func:`fastbpe.openai`, :func:`fastbpe.get_encoding`, ``load`` of ``cl100k_base.tiktoken``),
    # as tiktoken's ``Encoding.name``; None for the others (set by the loader, not saved).
    name: Optional[str] = None
    # (what pickles of versions before it hold)
    post_processor: Optional[dict] = None

    def __init__(
        self,
        tokens: Sequence[bytes],
        merges: Iterable[Tuple[int, int]],
        *,
        unit: str = "bytes",
        pattern: str = "gpt2",
        word_start: Optional[str] = None,
        word_end: Optional[str] = None,
        special_tokens: Union[Mapping[str, int], Sequence[str]] = (),
        special_token_options: Optional[Mapping[str, Mapping[str, bool]]] = None,
        merge_counts: Optional[Sequence[int]] = None,
        merge_rule: str = "replay",
        whole_token_lookup: bool = False,
        normalizer: Union[None, str, Sequence[Mapping], Normalizer] = None,
        split_gaps: bool = False,
        split_stages: Sequence[Tuple[str, bool]] = (),
        prefix_space: bool = False,
        byte_fallback: bool = False,
        space_marker: Optional[str] = None,
        end_of_word_suffix: Optional[str] = None,
        continuing_subword_prefix: Optional[str] = None,
        training_stats: Optional[Mapping] = None,
        dummy_prefix: Union[bool, str] = True,
        unk_token: Optional[str] = None,
        fuse_unk: bool = False,
        special_surfaces: Optional[Mapping[str, str]] = None,
        fallback_replacement: str = "token",
        post_processor: Optional[Mapping] = None,
    ):
        if not isinstance(byte_fallback, (bool, np.bool_)):
            raise TypeError(f"byte_fallback must be True or False, got {byte_fallback!r:.40}")
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
        if merge_rule not in MERGE_RULES:
            raise ValueError(f"merge_rule must be one of {MERGE_RULES}, got {merge_rule!r}")
        if (merge_rule == "token" or split_gaps or split_stages or whole_token_lookup) and (
                unit != "bytes" or word_start or word_end):
            # (the whole-chunk lookup reads a chunk's bytes; the symbol path of characters and
            # markers has none to look up)
            raise ValueError("merge_rule='token', whole_token_lookup, split_gaps and split_stages need unit='bytes' "
                             "and no word markers")
        if merge_rule == "pair" and (word_start or word_end):
            raise ValueError("merge_rule='pair' needs no word markers")
        if (byte_fallback or space_marker) and (unit != "chars" or word_start or word_end):
            raise ValueError("byte_fallback and space_marker need unit='chars' and no word markers")
        self.byte_fallback = bool(byte_fallback)
        if fallback_replacement not in vocab.FALLBACK_REPLACEMENTS:
            raise ValueError(f"fallback_replacement must be 'token' or 'byte', got {fallback_replacement!r:.40}")
        self.fallback_replacement = fallback_replacement
        self.post_processor = _json_object(post_processor, "post_processor")
        if unk_token is not None and not isinstance(unk_token, str):
            raise TypeError(f"unk_token must be a token's text or None, got {unk_token!r:.40}")
        if unk_token == "":
            raise ValueError("unk_token must not be empty")
        if not isinstance(fuse_unk, (bool, np.bool_)):
            raise TypeError(f"fuse_unk must be True or False, got {fuse_unk!r:.40}")
        if unk_token is not None and (unit != "chars" or word_start or word_end):
            raise ValueError("unk_token needs unit='chars' and no word markers (bytes always have tokens)")
        # A character without a token becomes the unknown token (a run of them one, with
        # fuse_unk), unless byte fallback spells it first: Hugging Face's BPE, and SentencePiece's
        # models without byte fallback (which always fuse).
        self.unk_token, self.fuse_unk = unk_token, bool(fuse_unk)
        # Step 5, the markers (fastbpe.encode.markers)
        self.markers = Markers(word_start, word_end, space_marker, end_of_word_suffix, continuing_subword_prefix,
                               dummy_prefix)
        for name in ("end_of_word_suffix", "continuing_subword_prefix"):
            if getattr(self.markers, name) and (unit != "bytes" or word_start or word_end or merge_rule != "pair"
                                                or whole_token_lookup):
                raise ValueError(f"{name} needs unit='bytes', merge_rule='pair', no word markers and no "
                                 "whole_token_lookup")
        # Step 3, the splitter (fastbpe.split.splitter)
        self.splitter = Splitter(pattern, split_gaps, split_stages, prefix_space)
        # Step 2, the normaliser (fastbpe.encode.normalizers)
        self.normalize = Normalizer.from_spec(normalizer)
        if prefix_space and not self._reads_bytes_for(unit, word_start, word_end):
            raise ValueError("prefix_space needs unit='bytes' and no word markers")
        self.unit = unit
        if isinstance(tokens, (str, bytes, bytearray)):
            raise TypeError(f"tokens must be a sequence of bytes, not one {type(tokens).__name__}")
        if type(tokens) is list and byte_lengths(tokens) is not None:
            # every token already bytes (a trained or loaded vocabulary): checked and copied at
            # C speed, not by a Python test per token (byte_lengths: a set of their types took
            # 1 ms of a 32k vocabulary)
            token_bytes: List[bytes] = tokens.copy()
        else:
            bad = next((t for t in tokens if not isinstance(t, (bytes, bytearray, memoryview))), None)
            if bad is not None:  # bytes(5) would be five NUL bytes, bytes(10**10) ten gigabytes
                raise TypeError(f"every token must be bytes, got {type(bad).__name__} {bad!r:.40}")
            token_bytes = [bytes(t) for t in tokens]
        if merges is None and merge_rule != "token":
            raise ValueError("merges are required (only merge_rule='token' derives them from the ranks)")
        # Step 4, the BPE model: built (and checked, in compiled code) here, so the first
        # encode finds its tables ready
        try:
            self.model = BPEModel(token_bytes, merges, merge_rule=merge_rule, whole_token_lookup=whole_token_lookup,
                                  symbols=not self._reads_bytes,
                                  core_bytes=self._marked_bytes(token_bytes) if continuing_subword_prefix else None)
        except ValueError as exc:
            if not continuing_subword_prefix:
                raise
            raise ValueError(f"continuing_subword_prefix {continuing_subword_prefix!r}: {exc} (every merge's "
                             "right-hand token must start with the prefix)") from None
        self.merge_counts = None if merge_counts is None else self._checked_counts(merge_counts)
        # What each phase of training took (fastbpe.train fills it in, fastbpe's files keep it;
        # None otherwise). Not part of the tokenizer's identity (to_dict, ==).
        self.training_stats: Optional[dict] = None if training_stats is None else dict(training_stats)
        # Step 1, the special-token policy (fastbpe.encode.special), with its matching options
        # (Hugging Face's added tokens); none: exact matches in the text
        self.specials = special.SpecialTokens(special_tokens, special_token_options, token_bytes=self.token_bytes,
                                              has_normalizer=bool(self.normalize))
        self._added_splitter = self.specials.added_token_splitter(self.normalize)
        if self.byte_fallback:
            self._byte_token_ids()  # every <0xNN> token present, or a ValueError now
        if self.unk_token is not None:
            self._unk_id()  # the token is there, or a ValueError now
        self.special_surfaces: Dict[str, str] = dict(special_surfaces or {})
        for name, text in self.special_surfaces.items():
            if name not in self.specials.ids or not isinstance(text, str):
                raise ValueError(f"special_surfaces maps special tokens to the text they decode to; got {name!r:.40}: "
                                 f"{text!r:.40}")
        if self.markers.has_subword_markers():
            self._marked_symbol_ids()  # every byte's token with and without the markers, or a ValueError now
        self._local = threading.local()
        self._pools = PoolRegistry(self._local)

    def _byte_token_ids(self) -> np.ndarray:
        """int32 ids of the 256 byte tokens ``<0x00>``..``<0xFF>`` of a ``byte_fallback``
        vocabulary (SentencePiece's, Kudo and Richardson 2018), which spell a character
        missing from the vocabulary as its UTF-8 bytes."""
        found = self.__dict__.get("_byte_ids_cache")
        if found is None:
            found = np.array([self.model.token_id(f"<0x{b:02X}>".encode("ascii")) for b in range(256)],
                             dtype=np.int32)
            if (found < 0).any():
                raise ValueError(f"byte_fallback needs the 256 tokens <0x00>..<0xFF>; "
                                 f"<0x{int(np.flatnonzero(found < 0)[0]):02X}> is missing")
            self.__dict__["_byte_ids_cache"] = found
        return found

    # The prefix and the suffix of Hugging Face's BPE, and the mark the compiled tables put
    # before a token without the prefix (so that a merge's plain concatenation is the token it
    # makes: "a" + "##b" -> "ab" is MARK+"a" + "b" -> MARK+"ab"; "##a" + "##b" is "a" + "b")
    _WORD_START_MARK = b"\xff\xfe"

    def _marked_bytes(self, token_bytes: Sequence[bytes]) -> List[bytes]:
        """What the compiled tables index for a ``continuing_subword_prefix`` vocabulary: a
        token with the prefix without it, any other token after ``_WORD_START_MARK``."""
        prefix = self.continuing_subword_prefix.encode("utf-8", "surrogatepass")
        marked = [t[len(prefix):] if t.startswith(prefix) else self._WORD_START_MARK + t if t else t
                  for t in token_bytes]
        if len(set(marked)) - (b"" in marked) != sum(map(bool, token_bytes)):
            raise ValueError(f"continuing_subword_prefix {self.continuing_subword_prefix!r}: two tokens differ only "
                             f"by it ({self._WORD_START_MARK!r} ahead of a token is reserved)")
        if any(t == prefix for t in token_bytes):
            raise ValueError(f"continuing_subword_prefix {self.continuing_subword_prefix!r} is a token by itself")
        return marked

    def _marked_symbol_ids(self) -> np.ndarray:
        """int32 ``[4, 256]``: the id each byte of a chunk starts as, by its place (row =
        not first + 2 * last): the byte's token, with ``continuing_subword_prefix`` before it
        unless it is the first byte, and ``end_of_word_suffix`` after it if it is the last."""
        found = self.__dict__.get("_marked_ids_cache")
        if found is None:
            prefix = self.continuing_subword_prefix.encode("utf-8", "surrogatepass")
            suffix = self.end_of_word_suffix.encode("utf-8", "surrogatepass")
            rows = []
            for place in range(4):
                texts = [(prefix if place & 1 else b"") + bytes([b]) + (suffix if place & 2 else b"")
                         for b in range(256)]
                indexed = self._marked_bytes(texts) if prefix else texts
                rows.append([self.model.token_id(t) for t in indexed])
            found = np.array(rows, dtype=np.int32)
            if (found < 0).any():
                place, b = np.argwhere(found < 0)[0]
                raise ValueError(f"continuing_subword_prefix {self.continuing_subword_prefix!r} / end_of_word_suffix "
                                 f"{self.end_of_word_suffix!r}: byte 0x{b:02x} "
                                 f"{('first', 'inside', 'alone', 'last')[place]} in a chunk has no token")
            self.__dict__["_marked_ids_cache"] = found
        return found

    def _marked_ids(self, text: str) -> np.ndarray:
        """int32 ids of normalised text through the splitter and the model of a tokenizer with
        an ``end_of_word_suffix`` or a ``continuing_subword_prefix``: each chunk's bytes as
        symbols, each the token of its place in the chunk (:meth:`_marked_symbol_ids`). Lone
        surrogates have no bytes: U+FFFD, as tiktoken (:mod:`.surrogates`)."""
        data, starts, ends = self.splitter.bounds(surrogates.as_tiktoken(text))
        lengths = ends - starts
        starts, lengths = starts[lengths > 0], lengths[lengths > 0]
        symbol_ends = np.cumsum(lengths, dtype=np.int64)
        # the bytes of the chunks, gaps left out: position i of chunk k is starts[k] + i
        at = np.arange(int(symbol_ends[-1]) if len(lengths) else 0, dtype=np.int64)
        at += np.repeat(starts - (symbol_ends - lengths), lengths)
        raw = np.frombuffer(data, dtype=np.uint8)[at]
        place = np.ones(len(raw), dtype=np.int64)  # inside a chunk
        place[symbol_ends - lengths] = 0  # first
        place[symbol_ends - 1] += 2  # last (a one-byte chunk: alone)
        symbols = self._marked_symbol_ids()[place, raw]
        return self._core().encode_symbols(np.ascontiguousarray(symbols), symbol_ends, self._state())

    def _fill_missing(self, ids: np.ndarray, ends: np.ndarray) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """``(ids, ends)`` with the characters outside the vocabulary (negative ids) as byte
        fallback or the ``unk_token`` gives them tokens, ``ends`` (offsets into ``ids``: where
        each text or chunk starts, and the end) moved along; None when the tokenizer has
        neither."""
        if self.byte_fallback:
            return self._fall_back_to_bytes(ids, ends)
        if self.unk_token is not None:
            return self._fall_back_to_unk(ids, ends)
        return None

    def _fall_back_to_bytes(self, ids: np.ndarray, ends: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``ids`` with every character outside the vocabulary (a negative id, ``-1 - ord``)
        replaced by the ids of its UTF-8 bytes' ``<0xNN>`` tokens, and ``ends`` moved along.
        Only the missing characters are visited (rare in text the vocabulary was made for)."""
        if not len(ids) or ids.min() >= 0:  # (one pass, the usual answer)
            return ids, ends
        missing = np.flatnonzero(ids < 0)
        byte_ids = self._byte_token_ids()
        spelled = [byte_ids[np.frombuffer(chr(-1 - int(i)).encode("utf-8", "surrogatepass"), dtype=np.uint8)]
                   for i in ids[missing].tolist()]
        counts = np.ones(len(ids), dtype=np.int64)
        counts[missing] = [len(x) for x in spelled]
        out = np.repeat(ids, counts)
        starts = np.cumsum(counts) - counts
        for at, ids_of_char in zip(starts[missing].tolist(), spelled):
            out[at:at + len(ids_of_char)] = ids_of_char
        return out, np.concatenate([starts, [len(out)]])[ends]

    def _unk_id(self) -> int:
        """The id of ``unk_token``: a special token's, else the token of its UTF-8 text."""
        found = self.specials.ids.get(self.unk_token)
        if found is None:
            found = self.model.token_id(self.unk_token.encode("utf-8", "surrogatepass"))
            if found < 0:
                raise ValueError(f"unk_token {self.unk_token!r} is neither a token nor a special token")
        return found

    def _fall_back_to_unk(self, ids: np.ndarray, ends: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``ids`` with every character outside the vocabulary (a negative id) replaced by the
        ``unk_token``'s id; with ``fuse_unk``, each run of them by one, never across an end of
        ``ends`` (a text's, or a chunk's), which are moved along.

        Example: with ``<unk>`` id 0 and fuse_unk, the ids ``[5, -20000, -20001, 6]`` become
        ``[5, 0, 6]``.
        """
        missing = ids < 0
        if not missing.any():
            return ids, ends
        out = np.where(missing, np.int32(self._unk_id()), ids).astype(np.int32, copy=False)
        if not self.fuse_unk:
            return out, ends
        kept = np.ones(len(ids), dtype=bool)
        kept[1:] = ~(missing[1:] & missing[:-1])
        kept[ends[:-1][ends[:-1] < len(ids)]] = True  # (a text's or chunk's first id is its own)
        return out[kept], np.concatenate([[0], np.cumsum(kept)])[ends]

    def _decoded_token_bytes(self) -> List[bytes]:
        """What each id decodes to: its bytes, except a ``byte_fallback`` vocabulary's
        ``<0xNN>`` tokens, which stand for the byte NN, and a token with the
        ``continuing_subword_prefix``, which stands for what follows it."""
        if self.continuing_subword_prefix:
            return self.markers.decoded_tokens(self.token_bytes)
        if not self.byte_fallback:
            return self.token_bytes
        pieces = list(self.token_bytes)
        for b, i in enumerate(self._byte_token_ids().tolist()):
            pieces[i] = bytes([b])
        return pieces

    def _decoded_specials(self) -> Dict[int, str]:
        """The bytes of each special token, by id, as ``decode_bytes`` gives them: its name, or
        its ``special_surfaces`` text."""
        return {i: self.special_surfaces.get(name, name) for name, i in self.special_tokens.items()}

    def _special_texts(self) -> Dict[int, str]:
        """What each special token is in the text ``decode`` gives, by id: as in
        ``_decoded_specials``, but a ``normalized`` one (matched in the normalised text) is its
        name normalised, as tokenizers decodes it (a ``▁`` put before it is the space it was
        found after)."""
        options, normalize = self.specials.options, self.normalize
        texts = self._decoded_specials()
        if normalize:
            for name, i in self.special_tokens.items():
                if name not in self.special_surfaces and options.get(name, {}).get("normalized"):
                    texts[i] = normalize(name)
        return texts

    def _checked_counts(self, merge_counts) -> List[int]:
        """One count per merge, each an int >= 0 (not a float, bool or str)."""
        if isinstance(merge_counts, np.ndarray) and merge_counts.ndim == 1 and merge_counts.dtype.kind in "iu":
            # the learner's int64 array: one vector check, not a Python test per merge
            if len(merge_counts) and merge_counts.min() < 0:
                raise ValueError(f"merge_counts must be ints >= 0, got {int(merge_counts.min())}")
            if len(merge_counts) != len(self.merge_ids):
                raise ValueError(f"merge_counts has {len(merge_counts)} counts for {len(self.merge_ids)} merges")
            return merge_counts.tolist()
        counts = list(merge_counts)
        if any(isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)) or c < 0 for c in counts):
            bad = next(c for c in counts if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer))
                       or c < 0)
            raise ValueError(f"merge_counts must be ints >= 0, got {bad!r:.40}")
        if len(counts) != len(self.merge_ids):
            raise ValueError(f"merge_counts has {len(counts)} counts for {len(self.merge_ids)} merges")
        return [int(c) for c in counts]

    # The special tokens', the splitter's and the markers' parts, as attributes of the tokenizer
    # (the names earlier versions had).
    special_tokens = property(lambda self: self.specials.ids, doc="Special token text -> id.")
    special_token_options = property(lambda self: self.specials.options,
                                     doc="Special token text -> its matching options (only the tokens with some).")
    pattern = property(lambda self: self.splitter.pattern, doc="The split pattern (a name or a regex).")
    split_gaps = property(lambda self: self.splitter.split_gaps, doc="Whether text between matches is chunks too.")
    split_stages = property(lambda self: self.splitter.split_stages, doc="Further (pattern, keep_gaps) splits.")
    prefix_space = property(lambda self: self.splitter.prefix_space, doc="A space before every ordinary piece.")
    word_start = property(lambda self: self.markers.word_start, doc="The word-start marker ('' for none).")
    word_end = property(lambda self: self.markers.word_end, doc="The word-end marker ('' for none).")
    space_marker = property(lambda self: self.markers.space_marker, doc="The character a space is written as.")
    end_of_word_suffix = property(lambda self: self.markers.end_of_word_suffix,
                                  doc="What follows each chunk's last byte ('' for none).")
    continuing_subword_prefix = property(lambda self: self.markers.continuing_subword_prefix,
                                         doc="What precedes each byte of a chunk but the first ('' for none).")

    # The BPE model's parts, as attributes of the tokenizer (the names earlier versions had).
    token_bytes = property(lambda self: self.model.token_bytes, doc="Bytes of every id (b'' for an unused id).")
    merge_ids = property(lambda self: self.model.merges, doc="int64 (n, 2): the merges as pairs of ids.")
    merge_rule = property(lambda self: self.model.merge_rule, doc="How the model picks the next merge.")
    whole_token_lookup = property(lambda self: self.model.whole_token_lookup,
                                  doc="Whether a chunk that is a token maps straight to its id.")

    @property
    def _ids(self) -> Dict[bytes, int]:
        """``{token bytes: id}`` (built on demand: encoding does not need it)."""
        ids = self.__dict__.get("_ids_cache")
        if ids is None:
            ids = self.__dict__["_ids_cache"] = self.model.ids()
        return ids

    def __getstate__(self) -> dict:
        # The per-thread state and the caches are rebuilt on demand (the model pickles without
        # its compiled tables and rebuilds them).
        state = dict(self.__dict__)
        for key in ("_local", "_pools", "_ids_cache", "_decode_table", "_text_table", "_byte_ids_cache",
                    "_added_splitter", "_marked_ids_cache", "_plain_cache", "_char_ids_cache", "_whole_text_chunk",
                    "_default_sets", "_in_normalized_cache", "_sorted_tokens_cache", "_named_with_markers",
                    "_space_runs"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict) -> None:
        state.pop("_pool", None)  # what pickles of earlier versions hold
        state.pop("_core_obj", None)
        state.pop("_core_lock", None)
        state.pop("_ids", None)
        if "normalize" not in state:  # a pickle of a version whose normaliser was a name
            state["normalize"] = Normalizer.from_spec(state.pop("normalizer", None))
            state.setdefault("prefix_space", False)
        state.setdefault("byte_fallback", False)
        state.setdefault("unk_token", None)
        state.setdefault("fuse_unk", False)
        state.setdefault("special_surfaces", {})
        state.setdefault("fallback_replacement", "token")
        if "specials" not in state:  # a pickle of a version before the special tokens had their own class
            state["specials"] = special.SpecialTokens(state.pop("special_tokens", {}),
                                                      state.pop("special_token_options", None))
        if "splitter" not in state:  # a pickle of a version before the splitter had its own class
            state["splitter"] = Splitter(state.pop("pattern", "gpt2"), state.pop("split_gaps", False),
                                         state.pop("split_stages", ()), state.pop("prefix_space", False))
        if "markers" not in state:  # nor the markers
            state["markers"] = Markers(state.pop("word_start", None), state.pop("word_end", None),
                                       state.pop("space_marker", None),
                                       state.pop("end_of_word_suffix", None) or None,  # "" in those pickles
                                       state.pop("continuing_subword_prefix", None) or None)
        if "model" not in state:  # a pickle of a version before the BPE model had its own class
            state["model"] = BPEModel(state.pop("token_bytes"), state.pop("merge_ids"),
                                      merge_rule=state.pop("merge_rule", "replay"),
                                      whole_token_lookup=state.pop("whole_token_lookup", False),
                                      symbols=not (state.get("unit") == "bytes"
                                                   and not state["markers"].has_word_markers()))
        self.__dict__.update(state)
        self._added_splitter = self.specials.added_token_splitter(self.normalize)
        self._local = threading.local()
        self._pools = PoolRegistry(self._local)

    # ---- views ------------------------------------------------------------------------------

    def _as_unit(self, token: bytes) -> Union[str, bytes]:
        return token.decode("utf-8", "surrogatepass") if self.unit == "chars" else token

    @property
    def vocab(self) -> Dict[int, Union[str, bytes]]:
        """Id -> token (``bytes`` for byte-level, ``str`` for chars; special tokens as ``str``)."""
        vocab: Dict[int, Union[str, bytes]] = {i: self._as_unit(t) for i, t in enumerate(self.token_bytes) if t}
        vocab.update({i: s for s, i in self.special_tokens.items()})
        return vocab

    @property
    def vocab_size(self) -> int:
        """How many ids are tokens, special tokens included: what ``train``'s ``vocab_size``
        counts, and ``len(tok)``. Gaps in the ids (cl100k's before its special tokens) are not
        counted; :attr:`n_vocab` is one more than the largest id."""
        return vocab.vocab_len(self)

    @property
    def merges(self) -> List[Tuple[Union[str, bytes], Union[str, bytes]]]:
        """The merges in learned order, as pairs of tokens."""
        t = self.token_bytes
        return [(self._as_unit(t[a]), self._as_unit(t[b])) for a, b in self.merge_ids.tolist()]

    def __repr__(self) -> str:
        return (f"Tokenizer(vocab_size={self.vocab_size}, merges={len(self.merge_ids)}, "
                f"unit={self.unit!r}, pattern={self.pattern!r})")

    # ---- the compiled core ------------------------------------------------------------------

    @property
    def _reads_bytes(self) -> bool:
        """Whether chunks go to the core as bytes (byte-level, no word markers: every real
        tokenizer) rather than as symbol ids."""
        return (self._reads_bytes_for(self.unit, self.word_start, self.word_end)
                and not self.markers.has_subword_markers())

    @staticmethod
    def _reads_bytes_for(unit: str, word_start, word_end) -> bool:
        return unit == "bytes" and not word_start and not word_end

    @property
    def normalizer(self):
        """The normaliser as its tokenizer files hold it: None, ``"NFC"``..., or a list of steps."""
        return self.normalize.to_spec()

    def _core(self) -> BPECore:
        """The compiled encoding tables (the BPE model's)."""
        return self.model.core

    def _state(self) -> EncodeState:
        """This thread's chunk cache and scratch space."""
        state = getattr(self._local, "state", None)
        if state is None:
            state = self._local.state = EncodeState()
        return state

    # ---- encoding ---------------------------------------------------------------------------

    def _symbols(self, text: str) -> Tuple[np.ndarray, np.ndarray]:
        """Base symbol ids of every chunk of ``text`` (word markers added) and the end of each
        chunk in them. A symbol outside the vocabulary (a character never seen in training)
        gets the negative id ``-1 - ord(symbol)``: it never merges, and ``encode`` refuses it.
        For bytes, lone surrogates have none: U+FFFD, as tiktoken (:mod:`.surrogates`); a
        character-level vocabulary may hold them (text read with ``surrogateescape``)."""
        if self.unit == "bytes":
            text = surrogates.as_tiktoken(text)
        chunks = pretokenize(text, self.pattern)
        words = [self.markers.word(chunk) for chunk in chunks]
        joined = "".join(words)
        ends = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, words), dtype=np.int64, count=len(words)), out=ends[1:])
        if self.unit == "bytes":
            data = joined.encode("utf-8", "surrogatepass")
            by_byte = np.array([self._ids.get(bytes([b]), -1 - b) for b in range(256)], dtype=np.int32)
            symbols = by_byte[np.frombuffer(data, dtype=np.uint8)]
            if len(data) != len(joined):
                ends = utf8_positions(joined, ends)
        else:
            symbols = self._char_symbols(joined)
        return np.ascontiguousarray(symbols, dtype=np.int32), np.ascontiguousarray(ends[1:])

    def _text_is_one_chunk(self) -> bool:
        """Whether the tokenizer reads characters and its split keeps a text whole, without word
        markers (SentencePiece's layout). Decided once: the settings are fixed at construction."""
        whole = self.__dict__.get("_whole_text_chunk")
        if whole is None:
            whole = self.__dict__["_whole_text_chunk"] = (
                self.unit == "chars" and self.pattern == WHOLE_PIECE and not self.markers.has_word_markers())
        return whole

    def _char_symbols(self, text: str) -> np.ndarray:
        """int32 symbol of each character of ``text``: its token's id, or ``-1 - code point``."""
        return self._char_ids()[np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)]

    def _one_chunk_texts(self, texts: List[str], start: int, stop: int) -> Tuple[np.ndarray, np.ndarray, List[int]]:
        """For a tokenizer whose text is one chunk of characters (:meth:`_text_is_one_chunk`),
        ``encode_str_many``'s answer for ``texts[start:stop]``: ``(ids, ends, failed)``, the ids
        of text ``start + k`` being ``ids[ends[k]:ends[k + 1]]``, ``failed`` the ``k`` of texts
        encode's own path is to encode (:meth:`_char_texts_ids`). Every text normalised, then
        one compiled call for all (the call a text cost more than its BPE: 57,566 lines of
        English, a SentencePiece 32k model, 1.7 -> 0.21 s)."""
        normalized = [self.normalize(text) for text in texts[start:stop]] if self.normalize else texts[start:stop]
        return self._char_texts_ids(normalized)

    def _char_texts_ids(self, normalized: List[str]) -> Tuple[np.ndarray, np.ndarray, List[int]]:
        """``(ids, ends, failed)`` of normalised texts, each one chunk of characters, by one
        compiled call. A token matched always in the normalised text (:meth:`_in_normalized`)
        is one symbol there, its id, as ``encode_chars``' frozen spans make it: BPE never merges
        it, so the stretches on each side encode apart, as SentencePiece's frozen pieces do.
        ``failed``: the texts with a character outside the vocabulary (no byte fallback:
        encode's own path names it), or with such tokens that an option decides (one that
        looks around a match: the added-token splitter's)."""
        in_normalized = self._in_normalized()
        held = in_normalized.finder.holding(normalized, 0, -1).tolist() if in_normalized is not None else []
        cut = held if held and in_normalized.search is not None else []
        failed = [] if cut else held
        symbols = self._char_symbols("".join(normalized))
        ends = np.cumsum(np.fromiter(map(len, normalized), dtype=np.int64, count=len(normalized)))
        if cut:
            kept = np.ones(len(symbols), dtype=bool)
            for k in cut:
                base = int(ends[k - 1]) if k else 0
                for start, end, token in in_normalized.matches(normalized[k]):
                    symbols[base + start] = token
                    kept[base + start + 1:base + end] = False
            removed = np.zeros(len(symbols) + 1, dtype=np.int64)
            np.cumsum(~kept, out=removed[1:])
            symbols, ends = symbols[kept], ends - removed[ends]
        ids, ends = self._core().encode_symbols(symbols, ends, self._state(), with_ends=True)
        if len(ids) and ids.min() < 0:
            filled = self._fill_missing(ids, ends)
            if filled is not None:
                ids, ends = filled
            else:
                missing = np.searchsorted(ends, np.flatnonzero(ids < 0), side="right") - 1
                failed = sorted(set(failed) | set(missing.tolist()))
        return ids, ends, failed

    def _in_normalized(self) -> Optional["_InNormalized"]:
        """How the tokens matched always in the normalised text (a SentencePiece user-defined
        piece, by its own text; a Hugging Face ``normalized`` token, by its text normalised) are
        found there, None without such tokens (or without a normaliser: the text as given is the
        normalised text). A text whose normalised form holds none of them needs no splitting
        there, whatever it held before it."""
        found = self.__dict__.get("_in_normalized_cache", False)
        if found is False:
            found = None
            flags_of = self.specials.options
            names = [name for name, flags in flags_of.items()
                     if flags.get(special.ALWAYS) and special.found_in_normalized(flags)] if self.normalize else []
            if names:
                by_text = {special.normalized_text(name, flags_of[name], self.normalize): self.special_tokens[name]
                           for name in names}
                ids = np.fromiter(by_text.values(), dtype=np.int64, count=len(by_text))
                # A token's id stands for it among the symbols only where it never merges: merges
                # are pairs of ids (not ranks of concatenated bytes), none of them names it, and
                # it is a token of the tables. single_word, lstrip and rstrip look at the text
                # around a match: the added-token splitter's to apply.
                plain = (all(set(flags_of[name]) <= {special.ALWAYS, "normalized", special.USER_DEFINED}
                             for name in names)
                         and self.merge_rule == "pair" and int(ids.max()) < len(self.token_bytes)
                         and not np.isin(self.merge_ids, ids).any())
                found = _InNormalized(frozenset(names), special.name_finder(frozenset(by_text)),
                                      special.alternation(frozenset(by_text)) if plain else None, by_text)
            self.__dict__["_in_normalized_cache"] = found
        return found

    def _char_ids(self) -> np.ndarray:
        """int32 id of each code point as a one-character token, ``-1 - code point`` where there
        is none: the symbols of a character-level tokenizer's text by one array lookup (a lookup
        per distinct character cost 17 us a text, more than its BPE). 4.4 MB, made at the first
        call; the tokens never change. Only the tokens whose length is that of the UTF-8
        character their first byte begins are decoded: a loop over every token cost a 32k
        vocabulary's first call 6-14 ms. Those are decoded as one text: when it decodes, each
        token is one character of it (each begins where the character before it ends, and is
        as long as the character its first byte begins), so the code points come out as one
        array with no step a token (the loop over a 32k SentencePiece model's 3,300 such
        tokens took 2 ms of its first call); else token by token, which skips the ones that
        are not UTF-8."""
        table = self.__dict__.get("_char_ids_cache")
        if table is None:
            table = np.arange(-1, -0x110001, -1, dtype=np.int32)  # (one array: -1 - arange made two)
            tokens = self.token_bytes
            lengths, firsts = vocab.lengths_and_first_bytes(tokens)
            # (an empty token's "first byte" is 0, which begins a character of one byte, not of 0)
            ids = np.flatnonzero(lengths == _UTF8_LENGTH_OF_LEAD[firsts])
            try:
                text = b"".join([tokens[i] for i in ids.tolist()]).decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                text = None
            if text is not None:
                # (one character a token; the tokens are distinct, so no code point twice)
                table[np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)] = ids
            else:
                for i in ids.tolist():
                    try:
                        one = tokens[i].decode("utf-8", "surrogatepass")  # (a character-level vocabulary's)
                    except UnicodeDecodeError:
                        continue  # (no character: its bytes are not UTF-8)
                    if len(one) == 1:
                        table[ord(one)] = i
            self.__dict__["_char_ids_cache"] = table
        return table

    def _ordinary_ids(self, text: str, strict: bool = True, normalized: bool = False) -> np.ndarray:
        """int32 ids of text without special tokens. ``strict``: a byte or character outside the
        vocabulary is a ValueError; otherwise it comes out as its negative id. ``normalized``:
        the text has been through the normaliser already."""
        if not normalized:
            text = self.normalize(text)  # step 2, the normaliser
        text = self.splitter.with_prefix_space(text)  # step 3 begins: ByteLevel(add_prefix_space=True)
        if self.markers.has_subword_markers():  # steps 3 and 4, each byte the token of its place in its chunk
            return self._marked_ids(text)
        if self._reads_bytes:  # steps 3 and 4, split and merge, on bytes
            try:
                return self._byte_ids(text)  # never negative: a byte outside the vocabulary raises
            except ValueError:
                if strict:
                    raise
        # step 5, symbols: character-level, word markers, or (not strict) bytes outside the vocabulary
        if self._text_is_one_chunk():  # (the text one chunk of characters: no list of chunks)
            symbols, symbol_ends = self._char_symbols(text), np.array([len(text)], dtype=np.int64)
        else:
            symbols, symbol_ends = self._symbols(text)
        ids, chunk_ends = self._core().encode_symbols(symbols, symbol_ends, self._state(), with_ends=True)
        if not len(ids) or ids.min() >= 0:  # (one pass: every character has a token, as usual)
            return ids
        # step 4 ends: a character missing from the vocabulary as its bytes, or as the unknown
        # token (a run fused within its chunk only)
        filled = self._fill_missing(ids, chunk_ends)
        if filled is not None:
            return filled[0]
        if strict:
            raise ValueError(f"{self._piece(int(ids[ids < 0][0]))!r} is not in the vocabulary")
        return ids

    def _byte_ids(self, text: str) -> np.ndarray:
        """int32 ids of text through the byte path: split and merge in one compiled pass for
        a named pattern whose chunks tile the text, else chunk bounds then the core.

        Lone surrogates have no bytes: they become U+FFFD and pairs are joined, as tiktoken does
        (:mod:`.surrogates`). The compiled pass finds them while it converts the str to UTF-8
        (it gives up, returning None), so only a text that holds one pays for the fix; the
        regex paths run the Python search (they are the slow paths anyway)."""
        scanner = self.splitter.fused_scanner()
        if scanner is not None:
            ids = self._core().encode_str(text, scanner, self._state())
            if ids is not None:
                return ids
            ids = self._core().encode_str(surrogates.as_tiktoken(text), scanner, self._state())
            if ids is not None:
                return ids
        data, starts, ends = self.splitter.bounds(surrogates.as_tiktoken(text))
        return self._core().encode_chunks(data, starts, ends, self._state())

    def _plain(self) -> Optional[tuple]:
        """``(core, scanner, finders)`` when the ordinary path is one compiled call (steps 2-5
        of encode do nothing else: byte-level, no normaliser, prefix space or markers, and a
        named pattern whose scanner splits and encodes in one pass); ``(core, None, finders,
        normaliser, character ids, byte ids, unk id, fuse_unk)`` when it is one call after the
        normaliser (a character-level tokenizer whose text is one chunk: SentencePiece's
        layout; the byte ids empty without byte fallback, the unk id -1 without an
        ``unk_token``); else None. ``finders``: the compiled searches of the names of the
        tokens matched always and of every special token, indexed by whether every name is
        refused (None: no such names). Made once: the settings it reads are fixed at
        construction."""
        plain = self.__dict__.get("_plain_cache")
        if plain is None:
            scanner = self.splitter.fused_scanner()
            simple = (scanner is not None and self._reads_bytes and not self.normalize
                      and not self.splitter.prefix_space)
            # (tokens found in the normalised text are looked for there, by the one-chunk path;
            # the simple path has no normaliser, so none)
            in_normalized = self._in_normalized()
            later = in_normalized.names if in_normalized is not None else frozenset()
            finders = tuple(special.name_finder(names - later) if names - later else None
                            for names in (self.specials.always, frozenset(self.special_tokens)))
            if simple:
                plain = (self._core(), scanner, finders)
            elif self._text_is_one_chunk():
                byte_ids = self._byte_token_ids() if self.byte_fallback else np.zeros(0, dtype=np.int32)
                unk_id = self._unk_id() if self.unk_token is not None else -1
                plain = (self._core(), None, finders, self.normalize or None, self._char_ids(), byte_ids, unk_id,
                         self.fuse_unk, in_normalized)
            self.__dict__["_plain_cache"] = plain = plain or ()
        return plain or None

    def _plain_ids(self, text, refuse_specials: bool, as_list: bool = False) -> Union[None, np.ndarray, List[int]]:
        """The int32 ids of ``text`` (a list with ``as_list``, as ``_id_list`` makes it) by the
        one compiled call of ``_plain`` (a short text costs little more than the call), or None
        where the general path must decide: no such call, a str with a lone surrogate, a text
        holding a special token's name while ``refuse_specials`` (every name disallowed: the
        general path raises) or the name of a token matched always (the general path splits it
        out), a character without a token (no byte fallback), or no str."""
        plain = self.__dict__.get("_plain_cache") or self._plain()  # (made: no call; else _plain decides)
        if plain is None or type(text) is not str:
            return None
        core, scanner, finders = plain[:3]
        finder = finders[refuse_specials]
        if finder is not None and finder.holds(text):
            return None
        if scanner is None:  # characters, the text one chunk: normalised here, then one call
            normalize, char_ids, byte_ids, unk_id, fuse_unk, in_normalized = plain[3:]
            if normalize is not None:
                text = normalize(text)
                if in_normalized is not None and in_normalized.finder.holds(text):
                    frozen = in_normalized.spans(text)  # (its tokens one symbol each)
                    if frozen is None:
                        return None
                    return core.encode_chars(text, char_ids, byte_ids, self._state(), as_list, unk_id, fuse_unk,
                                             frozen)
            return core.encode_chars(text, char_ids, byte_ids, self._state(), as_list, unk_id, fuse_unk)
        return core.encode_str(text, scanner, self._state(), as_list)

    def _id_list(self, ids: np.ndarray) -> List[int]:
        """``ids.tolist()``; the compiled path's int32 ids through ``BPECore.id_list``, which
        shares one int object per id (per thread) instead of allocating one per token."""
        if ids.dtype == np.int32:
            return self._core().id_list(ids, self._state())
        return ids.tolist()

    def encode_chunk_bounds(self, data: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """int32 ids of pre-split UTF-8: the BPE core alone, for callers (and benchmarks) that
        already have chunk bounds as byte offsets (``starts``/``ends`` int64)."""
        if not self._reads_bytes:
            raise ValueError("encode_chunk_bounds needs a byte-level tokenizer without word markers")
        starts, ends = check_byte_offsets(starts, "starts"), check_byte_offsets(ends, "ends")
        return self._core().encode_chunks(data, starts, ends, self._state())

    def encode_utf8_chunks(self, data: bytes, offsets: np.ndarray) -> np.ndarray:
        """int32 ids of UTF-8 ``data`` already split into contiguous chunks at the int64 byte
        ``offsets`` (``len(chunks) + 1`` of them, from 0 to ``len(data)``): the BPE core alone,
        for a pre-tokenizer that hands over offsets."""
        offsets = check_byte_offsets(offsets, "offsets")
        if len(offsets) and (offsets[0] != 0 or offsets[-1] != len(data)):
            raise ValueError("offsets must run from 0 to len(data)")
        return self.encode_chunk_bounds(data, offsets[:-1], offsets[1:])

    def _check_text(self, text) -> None:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")

    def _special_sets(self, allowed_special, disallowed_special) -> Tuple[frozenset, frozenset]:
        if type(allowed_special) is frozenset and not allowed_special and type(disallowed_special) is str \
                and disallowed_special == "all":
            # encode's default (none allowed but those matched always, every other one
            # refused), made once: 2 us a short text
            found = self.__dict__.get("_default_sets")
            if found is None:
                always = self.specials.always
                found = self.__dict__["_default_sets"] = (always, frozenset(self.special_tokens) - always)
            return found
        return special.allowed_and_disallowed(self.special_tokens.keys(), allowed_special, disallowed_special,
                                              self.specials.always)

    def _encode_array(self, text: str, allowed_special="all", disallowed_special=()) -> np.ndarray:
        return self._encode_with_sets(text, *self._special_sets(allowed_special, disallowed_special))

    def _encode_with_sets(self, text: str, allowed: frozenset, disallowed: frozenset) -> np.ndarray:
        """``_encode_array`` with the special-token sets made (a batch makes them once)."""
        self._check_text(text)
        # step 1, the special-token policy: refuse or set apart special tokens (the ordinary
        # pieces between them go through steps 2-5 in _ordinary_ids)
        special.check_disallowed(text, disallowed, self.specials.always, self.special_tokens.keys())
        if not allowed:
            return self._ordinary_ids(text)
        parts = []
        for name, piece, normalized in self._special_pieces(text, allowed):
            if name is not None:
                parts.append(np.array([self.special_tokens[name]], dtype=np.int32))
            elif piece or not parts:
                parts.append(self._ordinary_ids(piece, normalized=normalized))
        return np.concatenate(parts)

    def _special_pieces(self, text: str, allowed: frozenset) -> Iterator[Tuple[Optional[str], str, bool]]:
        """``(special token or None, piece, normalised already)`` of ``text`` cut at its
        ``allowed`` special tokens, in order: with their matching options (Hugging Face's
        added-token rules, :class:`.special.AddedTokenSplitter`), else exact matches."""
        if self._added_splitter is not None:
            for _, _, name, piece, normalized in self._added_splitter.split(text, allowed):
                yield name, piece, normalized
        else:
            for piece, is_special in special.split_on_specials(text, allowed):
                yield (piece if is_special else None), piece, False

    def _added_parts(self, text: str, allowed: frozenset) -> List[Tuple[np.ndarray, Optional[int], Optional[int],
                                                                         Optional[str]]]:
        """``(ids, start, end, piece)`` of each piece of ``text`` cut at its allowed special
        tokens with their matching options (:class:`.special.AddedTokenSplitter`): an ordinary
        piece's text (normalised, when it was cut out of normalised text), None for a special
        token, whose span includes the whitespace its ``lstrip``/``rstrip`` took in (no span:
        :data:`.special.Piece`)."""
        parts = []
        for start, end, name, piece, normalized in self._added_splitter.split(text, allowed):
            if name is not None:
                parts.append((np.array([self.special_tokens[name]], dtype=np.int32), start, end, None))
            elif piece or not parts:
                parts.append((self._ordinary_ids(piece, normalized=normalized), start, end, piece))
        return parts

    def encode(self, text: str, *, allowed_special: Union[str, AbstractSet[str]] = frozenset(),
               disallowed_special: Union[str, Collection[str], None] = "all") -> List[int]:
        """Token ids of ``text``.

        Special tokens follow tiktoken: a literal special token in the text is a ValueError
        unless ``allowed_special`` (a set, or ``"all"``) names it, which encodes it as its id,
        or ``disallowed_special`` leaves it out (``()`` or None), which encodes it as ordinary
        text. As in tiktoken, ``allowed_special`` may name tokens this vocabulary lacks (one set
        for several encodings), and ``disallowed_special`` any text to refuse. A token matched
        ``always`` (an added token that is not special) gets its id whatever the policy.
        A character (or byte) outside the vocabulary is a ValueError.
        """
        if _default_policy(allowed_special, disallowed_special):
            ids = self._plain_ids(text, True, True)
            if ids is not None:
                return ids
        return self._id_list(self._encode_array(text, allowed_special, disallowed_special))

    def encode_ordinary(self, text: str) -> List[int]:
        """Token ids of ``text``, special-token strings encoded as ordinary text; the tokens
        matched ``always`` (added tokens that are not special) still get their ids."""
        ids = self._plain_ids(text, False, True)
        return ids if ids is not None else self._id_list(self._encode_with_sets(text, *self._ordinary_sets()))

    def _ordinary_sets(self) -> Tuple[frozenset, frozenset]:
        """The special-token sets of encode_ordinary: the tokens matched always allowed, none refused."""
        return self.specials.always, _NO_NAMES

    def post_process(self, ids: Sequence[int], pair: Optional[Sequence[int]] = None) -> List[int]:
        """``ids`` (and a second sequence, ``pair``) with what the ``tokenizer.json``'s
        post-processor puts around them: ``tok.post_process(tok.encode(text))`` is
        ``tokenizers``' ``encode(text).ids`` (``add_special_tokens=True``), Llama's BOS first
        (:mod:`.post`). Without a post-processor, the ids as they are."""
        from .post import post_process

        return post_process(self.post_processor, ids, pair)

    def encode_with_unstable(self, text: str, *, allowed_special: Union[str, AbstractSet[str]] = frozenset(),
                             disallowed_special: Union[str, Collection[str], None] = "all"
                             ) -> Tuple[List[int], List[List[int]]]:
        """tiktoken's ``encode_with_unstable``: ``(stable ids, completions)``, the ids of ``text``
        but those of its last chunk (which more text may change), and each token sequence that
        may stand for that chunk and what follows it (:mod:`.unstable`). Byte-level tokenizers
        that encode as tiktoken does (one split pattern, no normaliser) only."""
        from .unstable import encode_with_unstable

        self._check_text(text)
        return encode_with_unstable(self, text, allowed_special, disallowed_special)

    def encode_to_numpy(self, text: str, *, allowed_special: Union[str, AbstractSet[str]] = frozenset(),
                        disallowed_special: Union[str, Collection[str], None] = "all") -> np.ndarray:
        """Token ids as a uint32 NumPy array, as tiktoken's ``encode_to_numpy`` gives them
        (``encode_batch(..., as_numpy=True)`` gives :attr:`id_dtype`, uint16 where every id
        fits: a sum of uint16 ids wraps silently)."""
        # (the int32 ids are read as uint32 in their own buffer: held once)
        ids = self._plain_ids(text, True) if _default_policy(allowed_special, disallowed_special) else None
        if ids is None:
            ids = self._encode_array(text, allowed_special, disallowed_special)
        return as_id_dtype(ids, np.uint32)

    @property
    def id_dtype(self) -> np.dtype:
        """The smallest unsigned dtype holding every token id (uint16 or uint32)."""
        top = max([len(self.token_bytes) - 1, *self.special_tokens.values()])
        return np.dtype(np.uint16 if top < 2**16 else np.uint32)

    def encode_batch(self, texts: Sequence[str], *, workers: Optional[int] = None,
                     allowed_special: Union[str, AbstractSet[str]] = frozenset(),
                     disallowed_special: Union[str, Collection[str], None] = "all",
                     as_numpy: bool = False, num_threads: Optional[int] = None) -> List:
        """Encode many texts on ``workers`` threads (default: all cores), each thread a
        contiguous group of about equal size (:mod:`.batch`); the compiled core releases the
        GIL. A small batch (a few short texts) is encoded in the calling thread, where handing
        it to threads would cost more than encoding it. Returns lists of ids (arrays with
        ``as_numpy``), as ``encode`` gives them. ``num_threads``: tiktoken's name for
        ``workers`` (give one or the other).

        Safe to call from several threads at once on one tokenizer, with any ``workers``: each
        call borrows a lane of its size on the tokenizer's pool (:mod:`.pools`), which no
        other call can shut down."""
        if isinstance(texts, (str, bytes)):  # one text, not one per character
            raise TypeError(f"encode_batch takes a list of texts, not one {type(texts).__name__} (encode takes one)")
        workers = _workers_or_threads(workers, num_threads)
        # a small batch: encode's one-call path text by text, here (None: the general path decides)
        ids = batch.encode_small(self, texts, _default_policy(allowed_special, disallowed_special), allowed_special,
                                 disallowed_special, as_numpy)
        if ids is not None:
            return ids
        workers = (os.cpu_count() or 1) if workers is None else workers
        return batch.encode_batch(self, texts, workers, allowed_special, disallowed_special, as_numpy)

    def encode_ordinary_batch(self, texts: Sequence[str], *, workers: Optional[int] = None,
                              as_numpy: bool = False, num_threads: Optional[int] = None) -> List:
        """``encode_batch`` with every special token's name encoded as ordinary text (tiktoken's
        ``encode_ordinary_batch``; the tokens matched ``always`` still get their ids)."""
        return self.encode_batch(texts, workers=workers, num_threads=num_threads, disallowed_special=(),
                                 as_numpy=as_numpy)

    def _piece(self, i: int) -> Union[str, bytes]:
        if i >= 0:
            piece = self._as_unit(self.token_bytes[i]) if i < len(self.token_bytes) else b""
            return piece or vocab.id_to_token(self, i)  # (a special token, such as the unknown one: its name)
        return chr(-1 - i) if self.unit == "chars" else bytes([-1 - i])

    def tokens(self, text: str) -> List[Union[str, bytes]]:
        """The pieces of ``text`` as ``encode_ordinary`` cuts it (``bytes`` for byte-level,
        ``str`` for chars; a token matched ``always`` as its name). Unlike ``encode``, a piece
        outside the vocabulary is shown as itself (unless byte fallback or an ``unk_token``
        gives it tokens: those)."""
        self._check_text(text)
        always = self.specials.always
        if not always:
            return [self._piece(i) for i in self._ordinary_ids(text, strict=False).tolist()]
        out: List[Union[str, bytes]] = []
        for name, piece, normalized in self._special_pieces(text, always):
            if name is not None:
                out.append(name)
            elif piece:
                ids = self._ordinary_ids(piece, strict=False, normalized=normalized)
                out.extend(self._piece(i) for i in ids.tolist())
        return out

    # ---- decoding ---------------------------------------------------------------------------

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The tokens' bytes as the vocabulary holds them, joined (special tokens as their UTF-8
        text), gathered by the compiled core: ``b"".join(decode_tokens_bytes(ids))``, as in
        tiktoken. Markers stay as they are (a SentencePiece ``▁``, a ``</w>``): :meth:`decode`
        turns them into the text's spaces. ``ids``: ints, or an int array; TypeError for
        anything else."""
        return vocab.decode_bytes(self, ids)

    # (skip_special_tokens is not keyword-only: a keyword-only default cost every call 20 ns, 8%
    # of a 4-id decode; errors stays second, where tiktoken has it)
    def decode(self, ids: Iterable[int], errors: str = "replace", skip_special_tokens: bool = False) -> str:
        """Text of ``ids`` (``errors`` as in ``bytes.decode``: ``"replace"`` or ``"strict"``;
        ``skip_special_tokens``: leave the special tokens out first, as tokenizers' option does,
        but not the added tokens a ``tokenizer.json`` marks ``"special": false``).
        Word markers (``word_start``/``word_end``, ``end_of_word_suffix``) become single
        spaces, the last one dropped (``word_start``/``word_end`` are dropped all where the
        split's chunks carry their spaces, as GPT-2's pattern's do; a special token's name
        keeps them); a ``space_marker`` in a
        token becomes a space (one that byte-fallback tokens spell stays), and the one put
        before the text is dropped (``dummy_prefix``: as the decoders of Hugging Face's
        SentencePiece-style files, Replace + Strip or Metaspace, do, or by pieces as
        SentencePiece's own decoding does)."""
        if skip_special_tokens:
            ids = vocab.without_special_tokens(self, ids)
        markers = self.markers
        if markers.in_text and (named := vocab.named_with_markers(self)):
            # word markers, and special tokens whose names hold one: where the ids hold such a
            # token (a set's look at each id, in C), the markers are replaced around its name
            ids = vocab._check_ids(ids)
            if not named.isdisjoint(ids if type(ids) is list else ids.tolist()):
                if errors != "replace" and errors != "strict":
                    check_error_handler(errors)
                return markers.decode(vocab.decode_parts(self, ids, errors), chunks_tile=self._markers_tile())
        # (a list of ids the text table holds goes straight to the compiled gathering: a
        # streaming decoder's few ids cost the call; anything else, vocab.decode_text)
        table = self.__dict__.get("_text_table")
        data = table.gather(ids) if table is not None and type(ids) is list else None
        if errors != "replace" and errors != "strict":
            check_error_handler(errors)  # (bytes.decode looks a handler up only at an error)
        if type(data) is not bytes:
            text = vocab.decode_text(self, ids, errors)
        elif self.byte_fallback and errors == "replace":
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:  # (byte tokens that spell no character: tokenizers' or SentencePiece's way)
                text = vocab.decode_text(self, ids, errors)
        else:
            text = data.decode("utf-8", errors)
        return markers.decode(text, chunks_tile=self._markers_tile()) if markers.in_text else text

    def _markers_tile(self) -> bool:
        """Whether the word markers stand for no space (the split's chunks carry their spaces)."""
        return self.markers.has_word_markers() and self.splitter.tiles()

    def decode_batch(self, batch: Iterable[Iterable[int]], *, errors: str = "replace",
                     num_threads: Optional[int] = None, skip_special_tokens: bool = False) -> List[str]:
        """``decode`` of each id sequence of ``batch`` (tiktoken's ``decode_batch``), in this
        thread: ``num_threads`` is checked and otherwise left, as gathering bytes costs less
        than handing sequences to threads would."""
        _workers_or_threads(None, num_threads)
        return [self.decode(ids, errors, skip_special_tokens) for ids in _id_sequences(batch)]

    def decode_bytes_batch(self, batch: Iterable[Iterable[int]], *, num_threads: Optional[int] = None) -> List[bytes]:
        """``decode_bytes`` of each id sequence of ``batch`` (tiktoken's ``decode_bytes_batch``;
        ``num_threads`` as in ``decode_batch``)."""
        _workers_or_threads(None, num_threads)
        return [self.decode_bytes(ids) for ids in _id_sequences(batch)]

    def decode_tokens_bytes(self, ids: Iterable[int]) -> List[bytes]:
        """The bytes of each id (special tokens as their UTF-8 text), one ``bytes`` an id;
        KeyError for an id that is no token (tiktoken's ``decode_tokens_bytes``)."""
        return vocab.decode_tokens_bytes(self, ids)

    def decode_with_offsets(self, ids: Iterable[int]) -> Tuple[str, List[int]]:
        """``(text, starts)``: the text of ``ids`` (strict UTF-8) and the character at which
        each id's token starts in it (tiktoken's ``decode_with_offsets``; a token that begins
        inside a character starts at that character)."""
        return vocab.decode_with_offsets(self, ids)

    def extend(self, corpus=None, num_merges: Optional[int] = None, **options) -> "Tokenizer":
        """A new tokenizer: this one with up to ``num_merges`` merges learned on ``corpus``
        appended, every existing id, merge and special token kept (:func:`fastbpe.learn.extend.extend`
        documents the options)."""
        from ..learn.extend import extend  # learn imports this module

        return extend(self, corpus, num_merges, **options)

    def _with_vocabulary(self, token_bytes: Sequence[bytes], merge_ids: np.ndarray,
                         merge_counts: Optional[Sequence[int]]) -> "Tokenizer":
        """This tokenizer's settings (unit, split, markers, special tokens, merge rule,
        normaliser, byte fallback) over another vocabulary and merge list: what ``extend`` builds."""
        return type(self)(
            token_bytes,
            merge_ids,
            unit=self.unit,
            **self.splitter.keywords(),
            **self.markers.keywords(),
            special_tokens=dict(self.special_tokens),
            special_token_options=self.special_token_options,
            merge_counts=merge_counts,
            merge_rule=self.merge_rule,
            whole_token_lookup=self.whole_token_lookup,
            normalizer=self.normalizer,
            byte_fallback=self.byte_fallback,
            unk_token=self.unk_token,
            fuse_unk=self.fuse_unk,
            special_surfaces=self.special_surfaces,
            fallback_replacement=self.fallback_replacement,
            post_processor=self.post_processor,
        )

    # ---- the vocabulary seen from outside (fastbpe.encode.vocab) -------------------------------

    def token_to_id(self, token: Union[str, bytes]) -> Optional[int]:
        """Id of a token given as bytes, or as text as Hugging Face's ``token_to_id`` reads it
        (a special token, else as its files spell tokens: ``"Ġworld"``; text no byte-level
        token spells, as its UTF-8); None if absent."""
        return vocab.token_to_id(self, token)

    # tiktoken's Encoding keeps its arguments under these names, and its README's recipe for an
    # encoding with more special tokens reads them (fastbpe.Encoding takes them back); what a
    # tiktoken encoding cannot hold (a normaliser...) is refused, as by to_tiktoken
    @property
    def _pat_str(self) -> str:
        tiktoken_format.check_encoding(self)
        return self.splitter.to_tiktoken()

    @property
    def _mergeable_ranks(self) -> Dict[bytes, int]:
        tiktoken_format.check_encoding(self)
        return tiktoken_format.mergeable_ranks(self)

    @property
    def _special_tokens(self) -> Dict[str, int]:
        return dict(self.special_tokens)

    def get_vocab(self, with_added_tokens: bool = True) -> Dict[str, int]:
        """``{token: id}`` as Hugging Face's ``get_vocab`` gives it (byte-level tokens as its
        files spell them, ``"Ġworld"``; special tokens by name unless ``with_added_tokens=False``)."""
        return vocab.get_vocab(self, with_added_tokens)

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        """How many ids are tokens (Hugging Face's ``get_vocab_size``): :attr:`vocab_size`, or
        with ``with_added_tokens=False`` the model's tokens alone (a special token a
        ``tokenizer.json`` lists in its vocabulary among them, as there)."""
        return self.vocab_size if with_added_tokens else len(self.token_bytes) - self.model.unused_ids

    def id_to_token(self, token_id: int) -> Optional[Union[str, bytes]]:
        """A special token's name or a token's bytes (text for ``unit="chars"``); None if absent."""
        return vocab.id_to_token(self, token_id)

    # The bytes of one id (KeyError for an id that is no token, as tiktoken): a compiled method,
    # its common case (an id the decode table holds) without a Python frame, the rest in
    # _single_token_bytes.
    decode_single_token_bytes = _decode_single_token_bytes

    def _single_token_bytes(self, token_id) -> bytes:
        """``decode_single_token_bytes`` beyond its compiled common case: builds the decode
        table, finds a special token beyond it, or raises for what is no token id."""
        return vocab.decode_single_token_bytes(self, token_id)

    def encode_single_token(self, token: Union[str, bytes]) -> int:
        """The id of one token given as its bytes or text, a special token's name included;
        KeyError when it is no single token (tiktoken's ``encode_single_token``)."""
        return vocab.encode_single_token(self, token)

    def is_special_token(self, token_id: int) -> bool:
        """Whether the id is a special token's (tiktoken's ``is_special_token``)."""
        return token_id in self.special_tokens.values()

    @property
    def special_tokens_set(self) -> Set[str]:
        """The special tokens' names (tiktoken's ``special_tokens_set``)."""
        return set(self.special_tokens)

    def token_byte_values(self) -> List[bytes]:
        """Every mergeable token's bytes, sorted (tiktoken's ``token_byte_values``)."""
        return sorted(token for token in self.token_bytes if token)

    @property
    def n_vocab(self) -> int:
        """One more than the largest id, special tokens included (tiktoken's ``n_vocab``)."""
        return vocab.n_vocab(self)

    @property
    def max_token_value(self) -> int:
        """The largest id, special tokens included (tiktoken's ``max_token_value``)."""
        return self.n_vocab - 1

    @property
    def eot_token(self) -> Optional[int]:
        """Id of the end-of-text special token (``<|endoftext|>``, ``<|end_of_text|>``, ``</s>``, ``<eos>``)."""
        return vocab.eot_token(self)

    def __len__(self) -> int:
        """How many ids are tokens, special tokens included (gaps not counted)."""
        return vocab.vocab_len(self)

    def encode_with_offsets(self, text: str, **special_options) -> Tuple[List[int], np.ndarray]:
        """``(ids, offsets)``: ``encode``'s ids and each token's ``[start, end)`` character
        span in ``text`` (an ``[n, 2]`` array), as Hugging Face's ``Encoding.offsets``.
        Takes ``encode``'s ``allowed_special``/``disallowed_special``."""
        return vocab.encode_with_offsets(self, text, **special_options)

    # ---- files (fastbpe.formats reads and writes each format) ---------------------------------

    def to_dict(self) -> dict:
        """fastbpe's own file format as a JSON object (:mod:`fastbpe.formats.native`)."""
        return native_format.to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> "Tokenizer":
        return cls(**native_format.read_dict(data))

    def save(self, path: PathLike) -> None:
        """Write fastbpe's own file (versioned JSON, with the training statistics when there
        are some), atomically (temp file, then rename). :meth:`to_huggingface` and
        :meth:`to_tiktoken` write the peers' formats; a file named ``tokenizer.json``, the name
        Hugging Face's tools look for, is written all the same, with a warning that they cannot
        read it."""
        if os.path.basename(os.fspath(path)) == "tokenizer.json":
            warnings.warn(f"{os.fspath(path)}: save writes fastbpe's own format, which Hugging Face's tools do not "
                          "read; to_huggingface writes theirs (fastbpe.load reads both)", stacklevel=2)
        native_format.write(self, path)

    @classmethod
    def load(cls, path: PathLike) -> "Tokenizer":
        """A file written by :meth:`save`, or any other format :func:`fastbpe.load` reads
        (recognised by its content)."""
        return cls._from_file(detect_format.read_any(path), path)

    @classmethod
    def _from_file(cls, kwargs: dict, path: PathLike) -> "Tokenizer":
        """The tokenizer of a reader's keyword arguments (with ``"name"`` when the reader knows
        one); a ValueError names the file."""
        kwargs = dict(kwargs)
        name = kwargs.pop("name", None)
        try:
            tok = cls(**kwargs)
        except ValueError as exc:
            raise ValueError(f"{os.fspath(path)}: {exc}") from None
        tok.name = name
        return tok

    @classmethod
    def from_huggingface(cls, path: PathLike) -> "Tokenizer":
        """A byte-level BPE ``tokenizer.json`` (or a folder holding one); encodes as
        ``tokenizers`` does."""
        return cls._from_file(huggingface_format.read(path), path)

    def to_huggingface(self, path: PathLike) -> None:
        """Write a ``tokenizer.json`` that ``tokenizers`` encodes identically."""
        huggingface_format.write(self, path)

    @classmethod
    def from_tiktoken(cls, path: PathLike, pattern: str,
                      special_tokens: Optional[Mapping[str, int]] = None) -> "Tokenizer":
        """A ``.tiktoken`` rank file with its split pattern and special tokens."""
        return cls._from_file(tiktoken_format.read(path, pattern, special_tokens), path)

    def to_tiktoken(self, path: PathLike) -> None:
        """Write ``path`` (ranks) and ``path.json`` (``pat_str``, ``special_tokens``)."""
        tiktoken_format.write(self, path)

    def to_tiktoken_encoding(self, name: str = "fastbpe"):
        """This tokenizer as a ``tiktoken.Encoding`` (needs tiktoken)."""
        return tiktoken_format.to_tiktoken_encoding(self, name)

    @classmethod
    def from_sentencepiece(cls, path: PathLike) -> "Tokenizer":
        """A SentencePiece BPE ``.model`` file (Llama 2's and Mistral's ``tokenizer.model``);
        ``encode_ordinary`` gives the ids SentencePiece's ``encode`` gives."""
        return cls._from_file(sentencepiece_format.read(path), path)

    @classmethod
    def from_gpt2(cls, encoder_json: PathLike, vocab_bpe: PathLike, pattern: Optional[str] = None) -> "Tokenizer":
        """GPT-2's ``encoder.json`` + ``vocab.bpe``; encodes as tiktoken's ``r50k_base``. The
        files hold no split pattern: GPT-2's unless ``pattern`` says another (the same pair as
        Hugging Face names it, ``vocab.json`` + ``merges.txt``, may be of a model that splits
        otherwise: ``pattern="qwen"`` for Qwen's)."""
        pattern = gpt2_format.GPT2_PATTERN if pattern is None else pattern
        return cls._from_file(gpt2_format.read(encoder_json, vocab_bpe, pattern), encoder_json)

    def to_gpt2(self, directory: PathLike) -> None:
        """Write ``encoder.json`` and ``vocab.bpe`` into ``directory``."""
        gpt2_format.write(self, directory)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self.to_dict() == other.to_dict()
