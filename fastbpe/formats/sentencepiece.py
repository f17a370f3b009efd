"""SentencePiece's ``.model`` files (Kudo and Richardson 2018): its BPE models, those its
trainer makes with its defaults and the layout of Llama 2's and Mistral's ``tokenizer.model``,
read from their protobuf bytes.

A SentencePiece BPE model merges, at each step, the adjacent pair whose concatenation is the
piece of the highest score (the leftmost of equal ones). That is the lowest-rank-first rule of
Hugging Face's BPE with the merges ranked by the score of the piece they make, so the model is
read as that (each piece's ways of being two pieces, ranked by its score: what the
``tokenizers`` conversion of such a model does): characters, the text one chunk. A character
missing from the vocabulary becomes the ``<0xNN>`` pieces of its UTF-8 bytes
(``byte_fallback``), or, without byte fallback (the trainer's default), ``<unk>``, one for each
run of such characters. The normaliser is the model's, compiled
(:mod:`fastbpe.reference.normalize` specifies it): its character map (``nmt_nfkc``, the
default: NFKC, with whitespace and control characters made spaces; none for ``identity``),
spaces as ``▁``, a ``▁`` before the text (``add_dummy_prefix``; Gemma's models put none), and
``remove_extra_whitespaces``, which drops the spaces at the ends and makes each run of them one.
Control pieces (``<s>``, ``</s>``) and the unknown piece are special tokens:
``encode_ordinary`` (or ``encode(text, disallowed_special=())``) reads their text as
characters, as SentencePiece does.

User-defined pieces (Gemma's models have them; the trainer's ``--user_defined_symbols``) are
SentencePiece's: the normaliser leaves each as it is written where one begins, and each is found
in the normalised text (the longest at each position) and never merged, in every text.

What fastbpe cannot reproduce exactly is a ValueError naming it: other model types (Unigram,
the trainer's default type), unused pieces, and whitespace as a suffix. Decoding is
SentencePiece's: ``<unk>`` decodes as its surface (`` ⁇ ``, the model's ``unk_surface``) and a
control piece as nothing (``special_surfaces``), at the start of a decode the ``▁`` that
begins the first piece with text is dropped, with ``remove_extra_whitespaces`` every piece of
``▁`` alone before it too (``dummy_prefix="piece"`` or ``"pieces"``; the decoders of
``tokenizers``' files drop the first space of the text instead), and byte pieces that spell no
character give a U+FFFD for each byte that begins none (``fallback_replacement="byte"``;
``tokenizers`` gives one for each byte piece of such a run). A model with a
character map, or with user-defined pieces, cannot be written as a ``tokenizer.json``:
``tokenizers``' ``Precompiled`` applies the map a grapheme at a time, which differs from
SentencePiece on some sequences, and finds added tokens before normalising; a model written as
one decodes its special tokens as their names there, and its start and its byte pieces as
``tokenizers`` does.
"""
import base64
import os
import struct
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Tuple, Union

import numpy as np

from .._core.encode import first_repeat, read_model_pieces, two_piece_splits
from ..encode.markers import Markers
from ..encode.normalizers import Normalizer
from ..encode.special import ALWAYS, USER_DEFINED as USER_DEFINED_OPTION
from ..split.splitter import WHOLE_PIECE, Splitter

__all__ = ["read", "read_pieces", "read_pieces_by_field", "Pieces"]

PathLike = Union[str, os.PathLike]

# sentencepiece_model.proto: the piece types, and the field numbers read here
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
MODEL_TYPES = {1: "Unigram", 2: "BPE", 3: "word", 4: "char"}
_MODEL_PIECES, _MODEL_TRAINER, _MODEL_NORMALIZER = 1, 2, 3
_PIECE_TEXT, _PIECE_SCORE, _PIECE_TYPE = 1, 2, 3
_TRAINER_MODEL_TYPE, _TRAINER_WHITESPACE_SUFFIX, _TRAINER_BYTE_FALLBACK, _TRAINER_UNK_SURFACE = 3, 24, 35, 44
_NORM_CHARSMAP, _NORM_DUMMY_PREFIX, _NORM_EXTRA_WHITESPACES, _NORM_ESCAPE_WHITESPACES = 2, 3, 4, 5

SPACE = "\u2581"  # ▁, what SentencePiece writes for a space
UNK_SURFACE = " \u2047 "  # what the unknown piece decodes to, unless the model says otherwise


_MASK64 = (1 << 64) - 1


def _varint(data: bytes, at: int, source: str) -> Tuple[int, int]:
    """The varint at ``data[at]`` (at most 10 bytes, kept to 64 bits as protobuf keeps it) and
    where it ends."""
    value = shift = 0
    while at < len(data) and shift < 70:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & _MASK64, at
        shift += 7
    raise ValueError(f"{source}: not a SentencePiece model (a protobuf number runs past its end)")


def _field(data: bytes, at: int, source: str) -> Tuple[int, int, Union[int, bytes], int]:
    """``(field number, wire type, value, where the field ends)`` of the protobuf field at
    ``data[at]``: an int for a varint, the bytes of the rest (a nested message, a string, a
    fixed-width number)."""
    key, at = _varint(data, at, source)
    number, wire = key >> 3, key & 7
    if wire == 0:
        value, at = _varint(data, at, source)
        return number, wire, value, at
    if wire not in (1, 2, 5):
        raise ValueError(f"{source}: not a SentencePiece model (protobuf wire type {wire})")
    if wire == 2:
        size, at = _varint(data, at, source)
    else:
        size = 8 if wire == 1 else 4
    if at + size > len(data):
        raise ValueError(f"{source}: not a SentencePiece model (a protobuf field runs past its end)")
    return number, wire, data[at:at + size], at + size


def _fields(data: bytes, source: str) -> Iterator[Tuple[int, int, Union[int, bytes]]]:
    """``(field number, wire type, value)`` of each field of a protobuf message."""
    at = 0
    while at < len(data):
        number, wire, value, at = _field(data, at, source)
        yield number, wire, value


_SCORE = struct.Struct("<f")


class Pieces(NamedTuple):
    """A model's pieces in id order: each one's text (UTF-8, not empty), score and type."""
    texts: List[bytes]
    scores: np.ndarray  # float64 (float32 in the file)
    kinds: np.ndarray  # uint64: NORMAL, UNKNOWN, ...


def read_pieces_by_field(data: bytes, source: str) -> Tuple[Pieces, List[Tuple[int, bytes]]]:
    """The pieces of a model's bytes and its specs (``(field number, message bytes)`` of each
    trainer and normalizer spec, in file order), read field by field: the specification of the
    compiled reader (``fastbpe/_core/model_proto.h``), and what says where a damaged file
    breaks.

    >>> pieces, specs = read_pieces_by_field(b"\\x0a\\x08\\x0a\\x01a\\x15\\x00\\x00\\x80\\xbf\\x12\\x02\\x18\\x02", "m")
    >>> pieces.texts, pieces.scores.tolist(), pieces.kinds.tolist(), specs
    ([b'a'], [-1.0], [1], [(2, b'\\x18\\x02')])
    """
    texts: List[bytes] = []
    scores: List[float] = []
    kinds: List[int] = []
    specs: List[Tuple[int, bytes]] = []
    for number, wire, value in _fields(data, source):
        if wire != 2:
            continue
        if number == _MODEL_PIECES:
            text, score, kind = b"", 0.0, NORMAL
            for field, field_wire, field_value in _fields(value, source):
                if field == _PIECE_TEXT and field_wire == 2:
                    try:
                        field_value.decode("utf-8")
                    except UnicodeDecodeError:
                        raise ValueError(f"{source}: piece {len(texts)} is not UTF-8") from None
                    text = field_value
                elif field == _PIECE_SCORE and field_wire == 5:
                    score = _SCORE.unpack(field_value)[0]
                elif field == _PIECE_TYPE and field_wire == 0:
                    kind = field_value
            if not text:
                raise ValueError(f"{source}: piece {len(texts)} has no text")
            texts.append(text)
            scores.append(score)
            kinds.append(kind)
        elif number in (_MODEL_TRAINER, _MODEL_NORMALIZER):
            specs.append((number, value))
    return Pieces(texts, np.array(scores, dtype=np.float64), np.array(kinds, dtype=np.uint64)), specs


def read_pieces(data: bytes, source: str) -> Tuple[Pieces, Dict[int, object], Dict[int, object]]:
    """``(pieces, trainer_spec, normalizer_spec)`` of a model's bytes, each spec as ``{field
    number: value}`` (the last of a repeated field). The pieces are read compiled
    (``read_model_pieces``: in Python, a 32k model's pieces took 0.1 s); a damaged file is read
    again field by field, which says where it breaks.

    >>> model = b"\\x0a\\x08\\x0a\\x01a\\x15\\x00\\x00\\x80\\xbf" + b"\\x12\\x02\\x18\\x02"  # (a piece, a trainer spec)
    >>> pieces, trainer, normalizer = read_pieces(model, "m")
    >>> pieces.texts, trainer, normalizer
    ([b'a'], {3: 2}, {})
    """
    read = read_model_pieces(data)
    if read is None:
        pieces, specs = read_pieces_by_field(data, source)  # (it raises: the two refuse the same files)
    else:
        pieces, specs = Pieces(*read[:3]), [(number, data[begin:end]) for number, begin, end in read[3]]
    trainer: Dict[int, object] = {}
    normalizer: Dict[int, object] = {}
    for number, message in specs:
        spec = trainer if number == _MODEL_TRAINER else normalizer
        spec.update((field, field_value) for field, _, field_value in _fields(message, source))
    return pieces, trainer, normalizer


def _merges(pieces: Pieces) -> np.ndarray:
    """Every way a normal piece is two normal pieces, as ``(left id, right id, made id)`` rows
    (the encoder's tables check the made ids against the bytes, with no lookup) ranked by
    the score of the piece (the highest first; one piece's ways by their ids, as the
    ``tokenizers`` conversion ranks them: two of them never compete for the same characters).
    The splits are found compiled (:func:`fastbpe.reference.encode.two_piece_splits` specifies
    them; in Python they took 0.07 s of a 32k model's 0.12 s load).

    >>> _merges(Pieces([b"a", b"b", b"ab", b"abb"], np.array([0.0, 0.0, -1.0, -2.0]), np.ones(4, np.uint64))).tolist()
    [[0, 1, 2], [2, 1, 3]]
    """
    made, left, right = two_piece_splits(pieces.texts, pieces.kinds == NORMAL)
    # ranked by (score, highest first; made; left): one sort of one int64 key, the piece's place
    # in score order above the left id (a piece's ways have distinct left pieces, so the key is
    # unique; a lexsort of the four columns took 15 ms of a 32k model's load). The key comes in
    # runs already in order (the splits come in id order, and a model's ids mostly follow its
    # scores), which the stable sort (a merge of runs) takes as they are: half the time of the
    # default one; with unique keys the two give the same order.
    by_score = np.argsort(-pieces.scores, kind="stable")
    place = np.empty(len(by_score), dtype=np.int64)
    place[by_score] = np.arange(len(by_score))
    order = np.argsort(place[made] << 32 | left.astype(np.int64), kind="stable")
    return np.stack([left[order], right[order], made[order]], axis=1).astype(np.int64).reshape(-1, 3)


def read(path: PathLike) -> dict:
    """The Tokenizer keyword arguments of a SentencePiece BPE ``.model`` file (the module
    docstring says which models and how they encode)."""
    source = os.fspath(path)
    pieces, trainer, normalizer = read_pieces(Path(path).read_bytes(), source)
    texts, kinds = pieces.texts, pieces.kinds
    if not texts:
        raise ValueError(f"{source}: not a SentencePiece model (it has no pieces)")
    model_type = trainer.get(_TRAINER_MODEL_TYPE, 1)
    if model_type != 2:
        # (no type is SentencePiece's default, Unigram, which it never writes; a model cut after
        # its pieces has no trainer spec at all)
        unsaid = "" if trainer else " (it names no model type, nor has a trainer spec: is the file cut short?)"
        raise ValueError(f"{source}: a SentencePiece {MODEL_TYPES.get(model_type, model_type)} model{unsaid}; "
                         "fastbpe reads BPE models (trained with --model_type=bpe)")
    if trainer.get(_TRAINER_WHITESPACE_SUFFIX, 0):
        raise ValueError(f"{source}: treat_whitespace_as_suffix is not supported")
    charsmap = normalizer.get(_NORM_CHARSMAP, b"")
    if not isinstance(charsmap, bytes):
        raise ValueError(f"{source}: not a SentencePiece model (its precompiled_charsmap is not bytes)")
    if not normalizer.get(_NORM_ESCAPE_WHITESPACES, 1):
        raise ValueError(f"{source}: escape_whitespaces=false is not supported")

    def of_kind(*wanted: int) -> List[int]:
        """The ids of the pieces of these types."""
        return np.flatnonzero(np.isin(kinds, np.array(wanted, dtype=np.uint64))).tolist()

    unused = of_kind(UNUSED)
    if unused:
        raise ValueError(f"{source}: unused pieces (such as {texts[unused[0]].decode()!r}) are not supported")
    repeated, first = first_repeat(texts)  # (fastbpe.reference.encode.first_repeat specifies it)
    if repeated >= 0:
        raise ValueError(f"{source}: piece {texts[repeated].decode()!r} is there twice (ids {first} and {repeated})")
    # SentencePiece's normaliser, compiled (normalizer.cc, read as fastbpe.reference.normalize
    # specifies it): the character map (none: the identity), spaces as ▁, its two options, and the
    # user-defined pieces, each copied as it is where one begins
    user_defined = [texts[i].decode() for i in of_kind(USER_DEFINED)]
    step = {"type": "SentencePiece", "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii"),
            "add_dummy_prefix": bool(normalizer.get(_NORM_DUMMY_PREFIX, 1)),
            "remove_extra_whitespaces": bool(normalizer.get(_NORM_EXTRA_WHITESPACES, 1)),
            **({"user_defined_symbols": user_defined} if user_defined else {})}
    try:
        normalize = Normalizer([step])  # (a blob whose parts do not fit: refused here, naming the file)
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None
    # control pieces and the unknown one are special tokens (their slots left empty: BPE never
    # makes them), the rest tokens; a ▁ decodes to a space, the one put before the text dropped.
    # A character without a piece: its UTF-8 bytes' <0xNN> pieces with byte fallback, else the
    # unknown piece, one for each run of such characters (SentencePiece merges the run).
    # A user-defined piece is found as it is written in the normalised text, in every text
    # (bpe_model.cc freezes it: it never merges), so it is a special token matched always there.
    specials = {texts[i].decode(): i for i in of_kind(UNKNOWN, CONTROL, USER_DEFINED)}
    options = {text: {ALWAYS: True, USER_DEFINED_OPTION: True} for text in user_defined}
    tokens = list(texts)
    for i in specials.values():
        tokens[i] = b""
    byte_fallback = bool(trainer.get(_TRAINER_BYTE_FALLBACK, 0))
    unknown = next((texts[i].decode() for i in of_kind(UNKNOWN)), None)
    if not byte_fallback and unknown is None:
        raise ValueError(f"{source}: a model with neither byte fallback nor an unknown piece")
    # SentencePiece's DecodeIds: the unknown piece decodes as its surface (with byte fallback it
    # stands for no character, bytes coming first, but decodes so too), a control piece as nothing
    surface = trainer.get(_TRAINER_UNK_SURFACE, UNK_SURFACE.encode())
    try:
        surface = surface.decode("utf-8")
    except (AttributeError, UnicodeDecodeError):
        raise ValueError(f"{source}: not a SentencePiece model (its unk_surface is not UTF-8 text)") from None
    surfaces = {**{texts[i].decode(): "" for i in of_kind(CONTROL)}, **({unknown: surface} if unknown else {})}
    return dict(tokens=tokens, merges=_merges(pieces), unit="chars", special_tokens=specials,
                **({"special_token_options": options} if options else {}), merge_rule="pair",
                normalizer=normalize, byte_fallback=byte_fallback,
                **({} if unknown is None else {"unk_token": unknown, "fuse_unk": True}), special_surfaces=surfaces,
                fallback_replacement="byte",
                **Splitter(WHOLE_PIECE).keywords(),
                **Markers(space_marker=SPACE, dummy_prefix=_dummy_prefix(step)).keywords())


def _dummy_prefix(step: dict):
    """How decoding drops the ▁ put before the text, as SentencePiece's DecodeIds does: with
    either option, the one that begins the first piece with text, and with
    ``remove_extra_whitespaces`` the pieces of ▁ alone before it too; with neither, none."""
    if step["remove_extra_whitespaces"]:
        return "pieces"
    return "piece" if step["add_dummy_prefix"] else False
