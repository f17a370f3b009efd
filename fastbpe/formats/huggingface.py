"""Hugging Face ``tokenizer.json`` files of byte-level BPE models: reading and writing.

A loaded file encodes exactly as ``tokenizers`` does: ``merge_rule="pair"`` (lowest merge rank
first), whole-chunk lookup when the file says ``ignore_merges``, the file's split stages and
normaliser, the model's ``end_of_word_suffix`` and ``continuing_subword_prefix``; its added
tokens become special tokens that keep their matching options. The regex dialect differs
(``tokenizers`` runs Oniguruma): :func:`oniguruma_pattern` and :func:`from_oniguruma_pattern`
convert.
"""
import collections
import itertools
import os
import re
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

import numpy as np

from ..encode.markers import Markers, decoder_difference
from ..encode.normalizers import check_huggingface_steps
from ..encode.special import SpecialTokens
from ..encode.vocab import lengths_and_first_bytes
from ..fileio import file_bytes, json_bytes, json_without, read_json, write_atomic
from ..split.oniguruma import from_oniguruma_pattern, oniguruma_pattern
from ..split.splitter import Splitter, metaspace_splitter
from ..stacklevel import caller_stacklevel
from .._core.encode import lookup_tokens, scan_bpe_json
from .bytelevel import (as_token_text, check_byte_level, check_specials_apart, code_point_bytes, scanned_tables,
                        text_byte_values, texts_to_tokens)
from .ids import GAP_SLACK, check_vocab_ids, table_size
from .native import FORMAT_NAME

__all__ = ["read", "write", "oniguruma_pattern", "from_oniguruma_pattern"]

PathLike = Union[str, os.PathLike]

# The tokens byte fallback spells a byte with (SentencePiece's <0x41> for "A").
BYTE_TOKEN = re.compile(r"<0x[0-9A-F]{2}>")


def _has_normalizer(norm) -> bool:
    """Whether a ``normalizer`` object changes anything (an empty Sequence does not). The steps
    themselves are checked where they are run (:mod:`fastbpe.encode.normalizers`)."""
    if isinstance(norm, Mapping) and norm.get("type") == "Sequence" and isinstance(norm.get("normalizers"), list):
        return any(_has_normalizer(step) for step in norm["normalizers"])
    return norm is not None


def _vocab_bytes(vocab: Mapping, specials: Mapping[str, int], source: str) -> List[bytes]:
    """The table of token bytes (index = id) of a byte-level vocabulary, converted in bulk.

    An entry that is not byte-level text is an added token stored in the vocabulary (its slot
    stays empty: it is split out as a special token), or a token byte-level BPE can never
    produce, which is left out."""
    texts = list(vocab)
    ids = list(vocab.values())
    check_vocab_ids(vocab, source)
    special_ids = {i: s for s, i in specials.items()}
    # ids index a table: refuse far-off ids before allocating it (fastbpe.formats.ids)
    size = table_size(_largest_slot(ids, special_ids, len(specials)), len(ids), len(specials), source)
    tokens = texts_to_tokens(texts)
    table: List[bytes] = [b""] * size
    slotted = np.array(ids, dtype=np.int64)
    slotted = slotted[slotted < size]  # (an added token past every token has no slot: nothing counted for it)
    uses = np.bincount(slotted, minlength=size)
    if len(slotted) == len(ids) and uses.max(initial=0) <= 1 and all(tokens) and \
            not any(i < size and uses[i] for i in special_ids):
        # every entry a byte-level token with an id of its own, no added token among them
        # (llama3's, qwen3's...): the table in one pass, without the checks below
        collections.deque(map(table.__setitem__, ids, tokens), maxlen=0)
        return table
    for text, i, token in zip(texts, ids, tokens):
        if i >= size:  # (an added token listed in the vocabulary past every token: no slot)
            continue
        if table[i]:
            raise ValueError(f"{source}: id {i} is used by two vocab entries")
        if i in special_ids:
            if token is not None and token != special_ids[i].encode("utf-8") and text != special_ids[i]:
                raise ValueError(f"{source}: added token {special_ids[i]!r} has id {i} (the id tokenizers gives it "
                                 "as it loads the file), which the vocab uses for another token")
            if token != special_ids[i].encode("utf-8"):
                continue  # the added token takes the id; tokenizers splits it out before BPE
            # its own bytes as byte-level text: BPE can make it too (tokenizers' model keeps it)
        if token is None:
            continue  # not byte-level text: BPE over bytes never makes it
        if not token:
            raise ValueError(f"{source}: vocab entry {i} is empty")
        table[i] = token
    return table


def _largest_slot(ids: List[int], special_ids, specials: int) -> int:
    """The largest id of a vocabulary's table: its largest, unless that lies past what the ids
    may leave unused and added tokens are listed in the vocabulary (Hugging Face's files list
    them there too), whose ids take no slot: then the largest of the others. A tokenizer
    whose special tokens sit far above its tokens (ids 0..151,642, then 160,255) loads.

    >>> _largest_slot([0, 1, 2, 5000], {5000}, 1), _largest_slot([0, 1, 5000], set(), 0)
    (2, 5000)
    """
    top = max(ids, default=-1)
    if top >= len(ids) + specials + GAP_SLACK and special_ids:
        top = max((i for i in ids if i not in special_ids), default=-1)
    return top


def _made_by_merges(tokens: List[bytes], pairs: np.ndarray, wanted: Sequence[bytes]) -> Set[bytes]:
    """Those of ``wanted`` that a merge makes (the concatenation of its two tokens). Only the
    merges whose concatenation has a wanted length and begins with a wanted byte are joined in
    Python (joining every merge's cost a 32k vocabulary's load 15 ms).

    >>> _made_by_merges([b"a", b"b", b"ab", b"ba"], np.array([[0, 1], [1, 0]]), [b"ab", b"aa"])
    {b'ab'}
    """
    wanted = {token for token in wanted if token}
    if not wanted or not len(pairs):
        return set()
    lengths, firsts = lengths_and_first_bytes(tokens)
    left, right = pairs[:, 0], pairs[:, 1]
    maybe = np.isin(lengths[left] + lengths[right], [len(token) for token in wanted])
    maybe &= np.isin(np.where(lengths[left] > 0, firsts[left], firsts[right]), [token[0] for token in wanted])
    return {tokens[a] + tokens[b] for a, b in pairs[maybe].tolist()} & wanted


def _refuse_added_tokens_bpe_needs(candidates: Mapping[int, Tuple[str, bytes]], tokens: List[bytes], pairs: np.ndarray,
                                   source: str, base_symbol: Callable[[str, bytes], bool]) -> None:
    """Refuse an added token whose vocab entry BPE needs as other bytes: ``candidates`` maps the
    id of each added token that is also a vocab entry (its slot left empty) to its text and the
    bytes BPE knows the entry by (``Ġthe``: `` the``). Needed means a merge makes or uses it, or
    ``base_symbol`` says BPE starts from it (a byte; a ``<0xNN>`` of byte fallback):
    ``tokenizers`` gives the id to the added text and to those bytes alike, and a fastbpe
    token has one byte string per id."""
    if not candidates:
        return
    used = set(np.intersect1d(pairs, np.array(list(candidates), dtype=np.int64)).tolist())
    made = _made_by_merges(tokens, pairs, [token for _, token in candidates.values()])
    for i, (name, token) in candidates.items():
        if i in used or token in made or base_symbol(name, token):
            raise ValueError(f"{source}: added token {name!r} is also vocab entry {i}, the bytes {token!r} to BPE, "
                             f"which it starts from or its merges make or use; tokenizers gives id {i} to both the "
                             "added text and those bytes, and fastbpe keeps one byte string per id")


def _drop_unmade_specials(tokens: List[bytes], pairs: np.ndarray, specials: Mapping[str, int]) -> None:
    """Empty the slot of an added token that is in the vocabulary as its own bytes but that BPE
    never makes (no merge makes or uses it, more than one byte): only the special token is left
    at its id, as in the tokenizer :func:`write` wrote it from (it puts special tokens in
    ``model.vocab`` to keep their ids). A slot BPE can make stays (:func:`_vocab_bytes`)."""
    shared = [i for i in specials.values() if i < len(tokens) and len(tokens[i]) > 1]
    if not shared:
        return
    used = set(np.intersect1d(pairs, np.array(shared, dtype=np.int64)).tolist())
    made = _made_by_merges(tokens, pairs, [tokens[i] for i in shared])
    for i in shared:
        if i not in used and tokens[i] not in made:
            tokens[i] = b""


def _merge_parts(merges: list) -> Optional[str]:
    """Every part of the merges, in order, joined by newlines, when each merge is a pair: a str
    of two parts around its one space, or a list of two strs, no part holding a newline. None
    otherwise (the caller's one-by-one check then names the bad merge). Checked by where the
    separators fall, in NumPy, with no Python step per merge (a count of them alone let a merge
    of one part and another of three pass as two pairs).

    >>> _merge_parts(["a b", "ab c"]), _merge_parts([["a b", "c"]]), _merge_parts(["ab", "a b c"])
    ('a\\nb\\nab\\nc', 'a b\\nc', None)
    """
    if not merges:
        return ""
    kinds = set(map(type, merges))
    if kinds == {str}:
        joined = "\n".join(merges)
        points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        at = np.flatnonzero((points == 10) | (points == 32))
        # (a space, then a newline, in turn: one space in each merge, and no newline)
        if len(at) != 2 * len(merges) - 1 or (points[at[0::2]] != 32).any() or (points[at[1::2]] != 10).any():
            return None
        return joined.replace(" ", "\n")
    if kinds == {list} and set(map(len, merges)) == {2}:
        parts = list(itertools.chain.from_iterable(merges))
        if set(map(type, parts)) != {str}:
            return None
        joined = "\n".join(parts)
        return joined if joined.count("\n") == len(parts) - 1 else None
    return None


def _merge_pairs(merges: list, vocab: Mapping, table: List[bytes], source: str) -> np.ndarray:
    """The merges as ``(left, right)`` ids, in rank order; merges of entries that are not
    byte-level tokens (they never apply to bytes) are left out."""
    joined = _merge_parts(merges)
    pairs = None if joined is None else _merge_pairs_in_bulk(joined, table)
    if pairs is not None:
        return pairs
    pairs = _vocab_pairs(joined, merges, vocab, source)
    unused = np.fromiter(map(len, table), dtype=np.int64, count=len(table)) == 0
    return pairs[~unused[pairs].any(axis=1)] if unused[pairs].any() else pairs


def _vocab_pairs(joined: Optional[str], merges: list, vocab: Mapping, source: str) -> np.ndarray:
    """The merges as ``(left, right)`` vocab ids, their parts ``joined`` (:func:`_merge_parts`;
    None: taken one merge at a time); a bad merge is a ValueError naming it."""
    parts = joined.split("\n") if joined else _merge_parts_one_by_one(merges, source)
    try:
        flat_ids = list(map(vocab.__getitem__, parts)) if merges else []
    except KeyError:
        number = next(k // 2 for k, part in enumerate(parts) if part not in vocab)
        a, b = parts[2 * number:2 * number + 2]
        raise ValueError(f"{source}: merge {number} ({a!r}, {b!r}) uses a token missing from the vocab") from None
    return np.array(flat_ids, dtype=np.int64).reshape(-1, 2)


def _merge_pairs_in_bulk(joined: str, table: List[bytes], byte_level: bool = True) -> Optional[np.ndarray]:
    """:func:`_merge_pairs` of a file whose merges all join tokens of ``table``, their parts
    ``joined`` (:func:`_merge_parts`): turned into bytes at once (by one NumPy lookup of
    byte-level text; as UTF-8 for a character-level vocabulary) and into ids by compiled code,
    with no Python string per merge part. None when any part is not like that (the caller's
    one-by-one path then decides, or says what is wrong)."""
    if not joined:
        return np.zeros((0, 2), dtype=np.int64)
    if byte_level:
        points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        values = text_byte_values(points)
        newline = points == 10
        if (values[~newline] < 0).any():
            return None  # a part that is not byte-level text
    else:  # (in UTF-8, byte 10 is a newline and nothing else)
        values = np.frombuffer(joined.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        newline = values == 10
    cuts = np.flatnonzero(newline)
    offsets = np.concatenate([[0], cuts - np.arange(len(cuts)), [len(values) - len(cuts)]]).astype(np.int64)
    ids = lookup_tokens(table, values[~newline].astype(np.uint8), offsets)
    if (ids < 0).any() or (np.diff(offsets) == 0).any():
        return None  # a part that is no token (or an empty part)
    return ids.astype(np.int64).reshape(-1, 2)


def _merge_parts_one_by_one(merges: list, source: str) -> List[str]:
    """The two parts of each merge, in order (what :func:`_merge_parts` gives in bulk, for the
    files it declines: a part holding a newline); a merge that is not a pair is a ValueError
    naming it."""
    parts: List[str] = []
    for number, merge in enumerate(merges):
        pair = merge.split(" ") if isinstance(merge, str) else merge
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(p, str) for p in pair):
            raise ValueError(f"{source}: merge {number} is not a pair of tokens: {merge!r:.80}")
        parts += pair
    return parts


def read(path: PathLike, data: Any = None) -> dict:
    """A byte-level BPE ``tokenizer.json`` (a folder holding one works too), encoding exactly as
    ``tokenizers`` does: lowest merge rank first, the file's split stages, normaliser and
    prefix space, its model's ``end_of_word_suffix`` and ``continuing_subword_prefix``, and its
    added tokens (inside
    ``model.vocab`` or not, special or not, with their ``lstrip``/``rstrip``/``single_word``/
    ``normalized`` options) as special tokens (pass ``allowed_special="all"`` to match
    ``tokenizers``, which always splits them out). What fastbpe cannot reproduce exactly is a
    ValueError naming the component.
    ``data``: the file's JSON when the caller has parsed it already (not parsed twice)."""
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer.json"
    if data is None:
        found = read_plain(path)
        if found is not None:
            return found
        data = read_json(path, "Hugging Face tokenizer.json")
    return _read_data(path, data, None)


def read_plain(path: Path) -> Optional[dict]:
    """What :func:`read` gives for a plain ``tokenizer.json``, byte-level or character-level
    (SentencePiece-style), its vocabulary and merges read by compiled code from the file's
    bytes; None for any other file (then parse it with the json module)."""
    raw = file_bytes(path)
    if raw is None:
        return None
    scanned = _scan_model(raw)
    if scanned is not None:
        found = _read_data(path, *scanned)
        if found is not None or not _is_character_level(scanned[0]):
            return found
    scanned = _scan_model(raw, characters=True)
    return None if scanned is None else _read_data(path, *scanned, characters=True)


def _scan_model(raw: bytes, characters: bool = False) -> Optional[tuple]:
    """The file's JSON without its model's vocabulary and merges (an empty object and list
    stand in for them), and those two read from the file's bytes ``raw`` by compiled code
    (``scan_bpe_json``; ``characters``: each text as its UTF-8, not as byte-level text):
    ``(data, scanned)``. None when the file is not a plain one (the json module then reads it
    all, and says what is wrong with it)."""
    scanned = scan_bpe_json(raw, None if characters else code_point_bytes())
    if scanned is None:
        return None
    vocab_begin, vocab_end, merges_begin, merges_end = scanned[0]
    data = json_without(raw, [(vocab_begin, vocab_end, b"{}"), (merges_begin, merges_end, b"[]")])
    if data is None:
        return None
    if isinstance(data, Mapping) and data.get("format") == FORMAT_NAME:
        return None  # (fastbpe's own file, its "format" not first: the loader reads it as one)
    return data, scanned


def _added_in_vocab(added, vocab: Mapping) -> Dict[str, int]:
    """The vocab id of each added token that is a ``model.vocab`` key."""
    return {content: vocab[content] for content in _added_contents(added) if content in vocab}


def _warn_renumbered(added, ids: Mapping[str, int], source: str) -> None:
    """Say which added tokens do not get the id the file lists (tokenizers numbers them its own
    way and only logs it): once per file, pointing at the caller's code. ``ids``: every added
    token's id (the list is well formed: SpecialTokens.from_huggingface read it)."""
    for entry in added or ():
        if entry["id"] != ids[entry["content"]]:
            warnings.warn(f"{source}: added token {entry['content']!r} is listed with id {entry['id']}; tokenizers "
                          f"gives it {ids[entry['content']]}, and so does fastbpe", stacklevel=caller_stacklevel())


def _added_contents(added) -> List[str]:
    """The texts of the well-formed ``added_tokens`` entries (SpecialTokens.from_huggingface
    refuses the others)."""
    if not isinstance(added, list):
        return []
    return [entry["content"] for entry in added if isinstance(entry, Mapping) and isinstance(entry.get("content"), str)]


def _is_character_level(data: Any) -> bool:
    """Whether a file's parsed JSON is of a character-level model: byte fallback, or an
    ``unk_token`` without byte-level steps (:func:`_read_character_level` reads it)."""
    model = data.get("model") if isinstance(data, Mapping) else None
    return isinstance(model, Mapping) and bool(model.get("byte_fallback") or _unknown_characters(data))


def _read_data(path: Path, data: Any, scanned: Optional[tuple], characters: bool = False) -> Optional[dict]:
    """:func:`read` of the parsed JSON; with ``scanned`` (:func:`_scan_model`; ``characters``:
    its texts read as characters), the model's vocabulary and merges come from there instead,
    or None when they are not the plain case. The ``post_processor`` (the ids ``tokenizers``
    puts around the text's with ``add_special_tokens``) is kept as it is, to be written back."""
    source = os.fspath(path)
    if not isinstance(data, Mapping):
        raise ValueError(f"{source}: expected a JSON object")
    post_processor = data.get("post_processor")
    if post_processor is not None and not isinstance(post_processor, Mapping):
        raise ValueError(f"{source}: the post_processor must be an object or null")
    found = _read_steps(path, data, scanned, characters)
    if found is None:
        return None
    _warn_of_decoder(data.get("decoder"), found, source)
    return found if post_processor is None else {**found, "post_processor": post_processor}


def _warn_of_decoder(decoder, found: Mapping, source: str) -> None:
    """Say so when ``tokenizers`` decodes this file's ids otherwise than fastbpe does (ids are
    not concerned; :func:`.markers.decoder_difference`). A file with subword markers is decoded
    by its model's markers (its ``BPEDecoder`` or ``WordPiece`` decoder says the same)."""
    if found.get("end_of_word_suffix") or found.get("continuing_subword_prefix"):
        return
    steps = decoder_difference(decoder, found.get("unit") == "chars", bool(found.get("byte_fallback")))
    if steps is not None:
        warnings.warn(f"{source}: its decoder ({steps}) is not one fastbpe decodes by: decode gives the text of "
                      "the tokens' bytes (a byte piece as its byte, the space marker as a space), which "
                      "tokenizers' decode of this file may not; encoding is the same",
                      stacklevel=caller_stacklevel())


def _read_steps(path: Path, data: Mapping, scanned: Optional[tuple], characters: bool) -> Optional[dict]:
    """:func:`_read_data` but the post-processor."""
    source = os.fspath(path)
    model = data.get("model")
    if not isinstance(model, Mapping) or model.get("type", "BPE") != "BPE":
        raise ValueError(f"{source}: the model must be BPE")
    markers = Markers.from_huggingface(model=model, source=source)  # the model's subword markers
    if model.get("dropout"):
        raise ValueError(f"{source}: model dropout is not supported (encoding would be random)")
    vocab, merges = model.get("vocab"), model.get("merges")
    if not isinstance(vocab, Mapping) or not isinstance(merges, list):
        raise ValueError(f"{source}: the model needs a 'vocab' object and a 'merges' list")
    if not isinstance(model.get("byte_fallback", False), bool):
        raise ValueError(f"{source}: model byte_fallback must be true or false")
    check_huggingface_steps(data.get("normalizer"), source)
    if model.get("byte_fallback") or _unknown_characters(data):
        if scanned is not None and not characters:
            return None  # (its vocabulary is characters, not byte-level text)
        if markers.has_subword_markers():
            raise ValueError(f"{source}: model end_of_word_suffix or continuing_subword_prefix with "
                             "byte_fallback=true or an unk_token is not supported")
        return _read_character_level(data, model, source, scanned)
    if characters:
        return None  # (a byte-level file's texts read as characters: the json module reads it)
    splitter = Splitter.from_huggingface(data.get("pre_tokenizer"), source)
    normalizer = data.get("normalizer")
    if not isinstance(model.get("ignore_merges", False), bool):
        raise ValueError(f"{source}: model ignore_merges must be true or false")
    if markers.has_subword_markers() and model.get("ignore_merges"):
        # tokenizers looks the chunk up without its markers: fastbpe's marker path has no lookup
        raise ValueError(f"{source}: model end_of_word_suffix or continuing_subword_prefix with ignore_merges=true "
                         "is not supported")
    # added tokens get the ids tokenizers gives them, from their vocab ids and the vocab's size
    added = data.get("added_tokens")
    if scanned is not None:
        # the compiled reader's tables hold the plain case only (no markers, no added token in
        # the vocabulary): anything else is read from the parsed JSON
        tables = None if markers.has_subword_markers() else scanned_tables(scanned[1:], _added_contents(added), source)
        if tables is None:
            return None
        tokens, pairs, in_vocab = tables
        specials = SpecialTokens.from_huggingface(added, source, in_vocab, len(scanned[2]))
        if any(i < len(tokens) and tokens[i] for i in specials.ids.values()):
            return None
    else:
        specials = SpecialTokens.from_huggingface(added, source, _added_in_vocab(added, vocab), len(vocab))
        tokens = _vocab_bytes(vocab, specials.ids, source)
        pairs = _merge_pairs(merges, vocab, tokens, source)
        # added tokens that are vocab entries, their slots left empty, and the bytes BPE knows them by
        shared = [(i, name) for name, i in specials.ids.items()
                  if i < len(tokens) and not tokens[i] and vocab.get(name) == i]
        as_bytes = texts_to_tokens([name for _, name in shared])
        _refuse_added_tokens_bpe_needs({i: (name, token) for (i, name), token in zip(shared, as_bytes) if token},
                                       tokens, pairs, source, base_symbol=lambda name, token: len(token) == 1)
        if not model.get("ignore_merges"):
            _drop_unmade_specials(tokens, pairs, specials.ids)
    # the one-byte tokens picked out at C speed (no Python test per token)
    singles = set(itertools.compress(tokens, map((1).__eq__, map(len, tokens))))
    missing = [b for b in range(256) if bytes((b,)) not in singles]
    if missing:
        raise ValueError(f"{source}: byte 0x{missing[0]:02x} has no token, which byte-level BPE needs")
    _warn_renumbered(added, specials.ids, source)
    return dict(tokens=tokens, merges=pairs, **specials.keywords(), merge_rule="pair",
                whole_token_lookup=bool(model.get("ignore_merges", False)),
                normalizer=normalizer, **splitter.keywords(), **markers.keywords())


def _unknown_characters(data: Mapping) -> bool:
    """Whether a file without byte fallback is character-level with an ``unk_token`` (for the
    characters without a token): no ``ByteLevel`` step in its pre-tokenizer or decoder."""
    if not isinstance(data["model"].get("unk_token"), str):
        return False
    steps = []
    for spec in (data.get("pre_tokenizer"), data.get("decoder")):
        if isinstance(spec, Mapping):
            inner = spec.get("pretokenizers", spec.get("decoders"))
            steps += [spec.get("type"), *(step.get("type") for step in inner if isinstance(step, Mapping))] \
                if isinstance(inner, list) else [spec.get("type")]
    return "ByteLevel" not in steps


def _character_tokens(vocab: Mapping, special_ids: Set[int], specials: int, source: str) -> List[bytes]:
    """The table of token bytes (index = id) of a character-level vocabulary: each entry's
    UTF-8, the slots of added tokens (``special_ids``) left empty (they are split out before
    BPE). Built in bulk; an id out of range, used twice, or an empty entry is a ValueError
    naming it."""
    texts, ids = list(vocab), list(vocab.values())
    check_vocab_ids(vocab, source)
    size = table_size(_largest_slot(ids, special_ids, specials), len(ids), specials, source)
    tokens: List[bytes] = [b""] * size
    if size <= max(ids, default=-1):  # (added tokens past every token, listed in the vocabulary: no slot)
        kept = [(text, i) for text, i in vocab.items() if i < size]
        texts, ids = [text for text, _ in kept], [i for _, i in kept]
    if "" in texts or len(set(ids)) != len(ids):  # (the loop below says which entry)
        for text, i in zip(texts, ids):
            if not text:
                raise ValueError(f"{source}: vocab entry {i} is empty")
            if tokens[i]:
                raise ValueError(f"{source}: id {i} is used by two vocab entries")
            if i not in special_ids:  # (an added token's slot stays empty, then and now)
                tokens[i] = b"-"
    collections.deque(map(tokens.__setitem__, ids, [text.encode("utf-8", "surrogatepass") for text in texts]),
                      maxlen=0)
    for i in special_ids & set(ids):
        tokens[i] = b""
    return tokens


def _read_character_level(data: Mapping, model: Mapping, source: str,
                          scanned: Optional[tuple] = None) -> Optional[dict]:
    """A SentencePiece-style file: BPE over Unicode characters with ``byte_fallback`` (a
    character missing from the vocabulary becomes its UTF-8 bytes' ``<0xNN>`` tokens) or an
    ``unk_token`` (it becomes that token; a run of them one, with ``fuse_unk``), spaces
    made ``▁`` by the normaliser (Llama 2's ``Prepend`` + ``Replace``, the whole piece one
    chunk) or by a ``Metaspace`` pre-tokenizer (split at each ``▁`` or not). ``scanned``: its
    vocabulary and merges as the compiled reader gave them (:func:`_scan_model`), or None when
    they are not the plain case."""
    if model.get("ignore_merges"):
        raise ValueError(f"{source}: model ignore_merges=true with byte_fallback=true is not supported")
    normalizer = data.get("normalizer")
    splitter, metaspace = metaspace_splitter(data.get("pre_tokenizer"), bool(data.get("added_tokens")), source)
    added = data.get("added_tokens")
    if scanned is None:
        vocab, merges = model["vocab"], model["merges"]
        in_vocab, size = _added_in_vocab(added, vocab), len(vocab)
    else:  # (the plain case, read compiled; anything else: None, and the json module reads it)
        tables = scanned_tables(scanned[1:], _added_contents(added), source,
                                as_tokens=lambda texts: [text.encode("utf-8", "surrogatepass") for text in texts])
        if tables is None:
            return None
        tokens, pairs, in_vocab = tables
        size = len(scanned[2])
    specials = SpecialTokens.from_huggingface(added, source, in_vocab, size)
    if metaspace and any(flags.get("normalized") for flags in specials.options.values()):
        # fastbpe runs Metaspace as normaliser steps, so the normalised text is not tokenizers'
        raise ValueError(f"{source}: added tokens with normalized=true and a Metaspace pre_tokenizer are not "
                         "supported")
    if scanned is None:
        tokens = _character_tokens(vocab, set(specials.ids.values()), len(specials.ids), source)
        joined = _merge_parts(merges)
        pairs = None if joined is None else _merge_pairs_in_bulk(joined, tokens, byte_level=False)
        if pairs is None:  # (a merge of an added token's entry, whose slot is empty; or a bad merge)
            pairs = _vocab_pairs(joined, merges, vocab, source)
    else:
        for i in specials.ids.values():  # an added token's slot stays empty: it is split out before BPE
            if i < len(tokens):
                tokens[i] = b""
    _refuse_added_tokens_bpe_needs(
        {i: (name, name.encode("utf-8", "surrogatepass"))
         for name, i in specials.ids.items() if in_vocab.get(name) == i},
        tokens, pairs, source, base_symbol=lambda name, token: BYTE_TOKEN.fullmatch(name) is not None)
    _warn_renumbered(added, specials.ids, source)
    if metaspace:  # the pre-tokenizer's spaces and prefix, run after the file's normaliser
        normalizer = [*([normalizer] if _has_normalizer(normalizer) else []), *metaspace]
    byte_fallback, unk_token, fuse_unk = model.get("byte_fallback", False), model.get("unk_token"), model.get("fuse_unk")
    if not isinstance(unk_token, (str, type(None))) or not isinstance(fuse_unk, (bool, type(None))):
        raise ValueError(f"{source}: model unk_token must be a str or null, fuse_unk true or false")
    return dict(tokens=tokens, merges=pairs, unit="chars",
                **specials.keywords(), merge_rule="pair", normalizer=normalizer, byte_fallback=byte_fallback,
                unk_token=unk_token, fuse_unk=bool(fuse_unk), **splitter.keywords(),
                **Markers.from_huggingface(data.get("decoder")).keywords())


def _model_data(tok) -> dict:
    """The ``model`` object (step 4): the vocabulary as byte-level text (as UTF-8 text for a
    ``byte_fallback`` vocabulary), the merges as pairs of tokens, ``ignore_merges`` for a
    whole-token lookup, and the markers' ``continuing_subword_prefix`` and ``end_of_word_suffix``
    (step 5)."""
    if _character_level(tok) and tok.merge_rule != "pair":
        raise ValueError("a character-level tokenizer is written to tokenizer.json only with merge_rule='pair'")
    merges = tok.merge_ids.tolist()
    if tok.merge_rule == "replay":
        ids = {t: i for i, t in enumerate(tok.token_bytes) if t}
        produced = [ids[tok.token_bytes[a] + tok.token_bytes[b]] for a, b in merges]
        if len(set(produced)) != len(produced):
            warnings.warn("some merges produce the same token twice; Hugging Face's encoder (lowest "
                          "rank first, no replay floor) can then differ from fastbpe's on rare words",
                          stacklevel=3)
    as_text = as_token_text(_character_level(tok))
    texts = [as_text(t) for t in tok.token_bytes]
    vocab = {text: i for i, text in enumerate(texts) if text}
    # (tokenizers gives an added token that is a vocab key that key's id)
    check_specials_apart(tok.special_tokens, vocab, "tokenizer.json")
    vocab.update(_specials_in_vocab(tok, len(vocab)))
    return {
        "type": "BPE", "dropout": None, "unk_token": tok.unk_token, **tok.markers.to_huggingface_model(),
        "fuse_unk": tok.fuse_unk, "byte_fallback": tok.byte_fallback,
        # a chunk that is a whole token maps to it in tiktoken's rule: HF's ignore_merges does that
        "ignore_merges": tok.whole_token_lookup or tok.merge_rule == "token",
        "vocab": vocab,
        "merges": [[texts[a], texts[b]] for a, b in merges],
    }


def _specials_in_vocab(tok, entries: int) -> Dict[str, int]:
    """The special tokens that must stand in ``model.vocab`` too for ``tokenizers`` to give them
    their ids: all of them, unless they sit after the vocabulary with consecutive ids from its
    number of entries. (``tokenizers`` numbers an added token missing from the vocabulary
    itself, from the vocabulary's size on: a gap, as cl100k's before ``<|endoftext|>``, or a
    special token inside the table would be renumbered.) SentencePiece-style files keep them
    there anyway."""
    inside = {s: i for s, i in tok.special_tokens.items() if i < len(tok.token_bytes)}
    after = sorted(i for i in tok.special_tokens.values() if i >= len(tok.token_bytes))
    if _character_level(tok) or after != list(range(entries + len(inside), entries + len(inside) + len(after))):
        return dict(tok.special_tokens)
    return inside


def _character_level(tok) -> bool:
    """Whether a tokenizer is written as a SentencePiece-style file: characters, and one of
    byte fallback or an unknown token for the characters without a token (without either,
    tokenizers would drop them)."""
    return tok.byte_fallback or tok.unk_token is not None


def write(tok, path: PathLike) -> None:
    """Write a ``tokenizer.json`` that ``tokenizers.Tokenizer.from_file`` encodes identically
    (with ``add_special_tokens=False``; special tokens become added tokens). The file is written
    component by component, in the order the text flows through them."""
    character_level = _character_level(tok)
    if not character_level:
        check_byte_level(tok, one_split=False, suffix=True)
    data = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": tok.specials.to_huggingface(),  # step 1, the special tokens
        "normalizer": tok.normalize.to_huggingface(),  # step 2
        "pre_tokenizer": tok.splitter.to_huggingface(byte_level=not character_level),  # step 3
        "post_processor": tok.post_processor,  # (a file's, kept as it was; encode does not apply it)
        # undoes steps 3-5 (byte-level text, markers)
        "decoder": tok.markers.to_huggingface(character_level, tok.byte_fallback),
        "model": _model_data(tok),  # step 4
    }
    write_atomic(path, json_bytes(data, indent=1))
