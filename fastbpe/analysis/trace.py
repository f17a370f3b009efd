"""The history of a training run, merge by merge, and the order a word's merges fire in.

:func:`trace` runs the compiled learner (the one :func:`fastbpe.train` runs) one merge at a
time and reads, after each merge, the learner's own count of the corpus's symbols: merge k
(left + right -> new, its count), the total symbols after it, and how the most frequent chunks
are segmented. On Sennrich et al. (2016)'s toy vocabulary (``low`` x5, ``lower`` x2, ``newest``
x6, ``widest`` x3, ``_`` ending each word) ten merges take 95 symbols to 28, ``est_`` first.

:func:`trace_word` shows, for any tokenizer, the merges that fire while one word is encoded, in
firing order, under the tokenizer's own merge rule (:mod:`fastbpe.reference.encode`), and checks
that the pieces it ends with are the compiled encoder's.
"""
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..corpus.count import count_words
from ..corpus.wordtable import WordTable
from ..encode.surrogates import as_tiktoken
from ..encode.tokenizer import Tokenizer
from ..corpus.files import str_corpus
from ..learn.learner import check_num_merges, make_learner, table_symbols
from ..learn.train import training_pattern
from ..reference import encode as reference_encode
from ..split.patterns import check_user_pattern
from .common import resolve_tokenizer

__all__ = ["trace", "trace_word", "show_piece"]


def show_piece(piece: Union[str, bytes]) -> str:
    """A piece as readable text: characters as they are, bytes decoded where they are UTF-8
    and written ``\\xNN`` where not."""
    if isinstance(piece, bytes):
        return piece.decode("utf-8", "backslashreplace")
    return piece


def _base_units(tokenizer: Tokenizer, chunk: bytes) -> Tuple:
    """A chunk as the tokenizer's base symbols, word markers added, and a Hugging Face BPE's
    subword markers: its ``continuing_subword_prefix`` before every byte but the first, its
    ``end_of_word_suffix`` (CLIP's ``</w>``) after the last.

    >>> bytes_and_ends = [bytes([b]) + end for end in (b"", b"</w>") for b in range(256)]
    >>> _base_units(Tokenizer(bytes_and_ends, [], merge_rule="pair", end_of_word_suffix="</w>"), b"ba")
    (b'b', b'a</w>')
    """
    text_start, text_end = tokenizer.word_start, tokenizer.word_end
    if tokenizer.unit == "chars":
        return tuple(text_start + chunk.decode("utf-8", "surrogatepass") + text_end)
    units = [bytes([b]) for b in text_start.encode("utf-8") + chunk + text_end.encode("utf-8")]
    markers = tokenizer.markers
    if markers.continuing_subword_prefix:
        prefix = markers.continuing_subword_prefix.encode("utf-8")
        units[1:] = [prefix + unit for unit in units[1:]]
    if markers.end_of_word_suffix and units:
        units[-1] += markers.end_of_word_suffix.encode("utf-8")
    return tuple(units)


def _chunks(tokenizer: Tokenizer, text: str, normalized: bool = False) -> List[bytes]:
    """The chunks the tokenizer splits ``text`` into (normalised first, if it normalises and
    ``text`` is not ``normalized`` already; for a byte-level tokenizer, lone surrogates as
    U+FFFD, as encoding has them)."""
    text = tokenizer.splitter.with_prefix_space(text if normalized else tokenizer.normalize(text))
    data, starts, ends = tokenizer.splitter.bounds(as_tiktoken(text) if tokenizer.unit == "bytes" else text)
    return [data[a:b] for a, b in zip(starts.tolist(), ends.tolist())]


def _word_merges(tokenizer: Tokenizer):
    """The tokenizer's merges as pairs of pieces (cached on the tokenizer: a 200k-merge list
    is built once per tokenizer, not once per word)."""
    cached = getattr(tokenizer, "_trace_merges", None)
    if cached is None:
        cached = tokenizer.merges
        tokenizer._trace_merges = cached
    return cached


def _fire_order(tokenizer: Tokenizer, chunk: bytes) -> Tuple[List[Dict[str, Any]], Tuple]:
    """The merges that fire while ``chunk`` is encoded, and the pieces it ends as."""
    steps: List = []
    prefix = (tokenizer.markers.continuing_subword_prefix or "").encode("utf-8")  # (a merge drops its right part's)
    if tokenizer.merge_rule == "replay":
        pieces = reference_encode.encode_word(_base_units(tokenizer, chunk), _word_merges(tokenizer), steps)
    elif tokenizer.merge_rule == "pair":
        units = chunk if tokenizer.unit == "bytes" and not tokenizer.markers else _base_units(tokenizer, chunk)
        pieces = tuple(reference_encode.encode_by_pair_rank(units, _word_merges(tokenizer), steps, prefix))
    else:  # "token": tiktoken's rule, ranks are ids
        ranks = getattr(tokenizer, "_trace_ranks", None)
        if ranks is None:
            ranks = tokenizer._trace_ranks = {t: i for i, t in enumerate(tokenizer.token_bytes) if t}
        pieces = tuple(reference_encode.encode_by_token_rank(chunk, ranks, False, steps))
    whole = tokenizer._ids.get(chunk)
    if tokenizer.whole_token_lookup and whole is not None and pieces != (chunk,):
        # tiktoken (and Hugging Face's ignore_merges) look a whole chunk up before merging:
        # one step, the lookup
        steps = [(whole, None, (chunk,))]
        pieces = (chunk,)
    rows = []
    for rank, pair, after in steps:
        rows.append({
            "rank": rank,
            "left": None if pair is None else show_piece(pair[0]),
            "right": None if pair is None else show_piece(pair[1]),
            "new": show_piece(pair[0] + pair[1][len(prefix):]) if pair is not None else show_piece(after[0]),
            "pieces": [show_piece(p) for p in after],
        })
    return rows, pieces


def _added_token_row(tokenizer: Tokenizer, name: str) -> Dict[str, Any]:
    """The row of a token matched always (split out before the merges: none fires)."""
    return {"chunk": name, "symbols": [name], "steps": [], "pieces": [name], "ids": [tokenizer.special_tokens[name]]}


def _compiled_ids(tokenizer: Tokenizer, chunk: bytes, text: str) -> List[int]:
    """The compiled encoder's ids of one chunk, as a chunk (not split again); a piece the
    vocabulary lacks (a character never seen in training) as its negative id."""
    if tokenizer._reads_bytes:
        bounds = np.zeros(1, np.int64), np.full(1, len(chunk), np.int64)
        return tokenizer.encode_chunk_bounds(chunk, *bounds).tolist()
    # (a chunk splits into itself; it is normalised text already)
    return tokenizer._ordinary_ids(text, strict=False, normalized=True).tolist()


def trace_word(tokenizer, word: str) -> List[Dict[str, Any]]:
    """For each chunk of ``word`` (usually one): its base symbols, the merges that fire while it
    is encoded (rank, left, right, new token, pieces after) in firing order, and its final
    pieces and ids, which are the compiled encoder's (a RuntimeError if the rule's trace ever
    disagreed with them). A token matched always (Hugging Face's added tokens that are not
    special, SentencePiece's user-defined pieces) is split out first, as ``encode`` does: a row
    of its own, where no merge fires. ``tokenizer``: a Tokenizer, a path or an encoding name."""
    tokenizer = resolve_tokenizer(tokenizer)
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    out = []
    for name, piece, normalized in tokenizer._special_pieces(word, tokenizer.specials.always):
        if name is not None:
            out.append(_added_token_row(tokenizer, name))
        elif piece:
            out += _chunk_rows(tokenizer, piece, normalized)
    return out


def _chunk_rows(tokenizer: Tokenizer, text: str, normalized: bool) -> List[Dict[str, Any]]:
    """trace_word's rows of the chunks of ``text``, which holds no token matched always."""
    out = []
    for chunk in _chunks(tokenizer, text, normalized):
        steps, pieces = _fire_order(tokenizer, chunk)
        if tokenizer.byte_fallback or tokenizer.unk_token is not None:  # (character-level: str pieces)
            known = [tokenizer._ids.get(piece.encode("utf-8", "surrogatepass")) is not None for piece in pieces]
        if tokenizer.byte_fallback:  # a character the vocabulary lacks ends as its bytes' <0xNN> tokens
            byte_ids = tokenizer._byte_token_ids()
            pieces = tuple(part for piece, is_known in zip(pieces, known) for part in
                           ((piece,) if is_known else tuple(tokenizer._piece(int(byte_ids[b]))
                                                            for b in piece.encode("utf-8", "surrogatepass"))))
        elif tokenizer.unk_token is not None:  # or as the unknown token, a run of them one with fuse_unk
            pieces = tuple(piece if is_known else tokenizer.unk_token for k, (piece, is_known)
                           in enumerate(zip(pieces, known))
                           if is_known or not (tokenizer.fuse_unk and k and not known[k - 1]))
        text = chunk.decode("utf-8", "surrogatepass")
        ids = _compiled_ids(tokenizer, chunk, text)
        compiled = [tokenizer._piece(i) for i in ids]
        if tuple(compiled) != tuple(pieces):
            raise RuntimeError(f"the trace of {text!r} ends in {pieces!r}, the encoder gives {compiled!r}")
        out.append({
            "chunk": text,
            "symbols": [show_piece(p) for p in _base_units(tokenizer, chunk)],
            "steps": steps,
            "pieces": [show_piece(p) for p in pieces],
            # a piece the vocabulary lacks stays itself, as in BPE by hand, but has no id (None;
            # encode refuses it), unless byte fallback or an unk_token gave it tokens above
            "ids": [i if i >= 0 else None for i in ids],
        })
    return out


def _count(corpus, pattern: str, workers, errors: str) -> WordTable:
    if isinstance(corpus, WordTable):
        return corpus
    if isinstance(corpus, str):
        corpus = str_corpus(corpus)
    return count_words(corpus, pattern=pattern, workers=workers, progress=False, errors=errors)


def _segment(steps: List[Dict[str, Any]], start: List[str], after_rank: int) -> List[str]:
    """A word's pieces once merges up to ``after_rank`` have fired (the steps of a replay
    trace come in rank order)."""
    pieces = start
    for step in steps:
        if step["rank"] > after_rank:
            break
        pieces = step["pieces"]
    return pieces


def trace(corpus, num_merges: int, *, unit: str = "bytes", pattern: Optional[str] = None,
          word_start: Optional[str] = None, word_end: Optional[str] = None, min_frequency: int = 2,
          words: int = 5, workers: Optional[int] = None, errors: str = "strict") -> Dict[str, Any]:
    """Train on ``corpus`` (as :func:`fastbpe.train` takes it: paths, an iterator of texts, a
    WordTable) for up to ``num_merges`` merges and report every merge as it was learned.

    Returns a dict: ``merges`` (rank, left, right, new, count, ``symbols`` = the corpus's total
    symbols after the merge, and ``segmentation``: the ``words`` most frequent chunks as they
    stand after it), ``symbols_before``, ``symbols_after``, ``curve`` (symbols after 0, 1, ...
    merges), ``words`` (each shown chunk's count, base symbols and firing order) and the
    trained ``tokenizer``.

    The symbol totals are the compiled learner's own (read after each merge), so they hold
    exactly, overlapping pairs (``aaa``) included. ``pattern`` as ``train`` takes it (default:
    a WordTable's own, else ``"gpt2"``).
    """
    check_num_merges(num_merges, min_frequency)
    if pattern is not None:
        check_user_pattern(pattern)
    pattern = training_pattern(corpus, pattern)
    if unit not in ("bytes", "chars"):
        raise ValueError(f"unit must be 'bytes' or 'chars', got {unit!r}")
    if isinstance(words, bool) or not isinstance(words, int) or words < 0:
        raise ValueError(f"words must be an int >= 0, got {words!r}")
    table = _count(corpus, pattern, workers, errors)
    symbols, starts, base_tokens = table_symbols(table, unit, word_start or "", word_end or "")
    learner = make_learner(symbols, starts, table.counts, base_tokens)
    curve = [learner.corpus_tokens()]

    def after_each_merge(done: int, count: int) -> None:
        if done == len(curve):  # called once per merge, and once more when the learner stops early
            curve.append(learner.corpus_tokens())

    merge_ids, counts, tokens = learner.run(int(num_merges), int(min_frequency), -1, after_each_merge, 1)
    tokenizer = Tokenizer(tokens, merge_ids, unit=unit, pattern=pattern, word_start=word_start,
                          word_end=word_end, merge_counts=counts)
    order = np.argsort(-table.counts, kind="stable")[:words].tolist()
    shown = []
    for i in order:
        chunk = table.chunk(i)
        steps, _ = _fire_order(tokenizer, chunk)
        start = [show_piece(p) for p in _base_units(tokenizer, chunk)]
        shown.append({"chunk": show_piece(chunk) if unit == "bytes" else chunk.decode("utf-8"),
                      "count": int(table.counts[i]), "symbols": start, "steps": steps})
    rows = []
    for rank, ((left, right, new), count) in enumerate(zip(merge_ids.tolist(), counts.tolist())):
        rows.append({
            "rank": rank,
            "left": show_piece(tokenizer._as_unit(tokens[left])),
            "right": show_piece(tokenizer._as_unit(tokens[right])),
            "new": show_piece(tokenizer._as_unit(tokens[new])),
            "count": count,
            "symbols": curve[rank + 1],
            "segmentation": [_segment(w["steps"], w["symbols"], rank) for w in shown],
        })
    return {
        "unit": unit,
        "pattern": pattern,
        "word_start": word_start or "",
        "word_end": word_end or "",
        "min_frequency": min_frequency,
        "unique_chunks": len(table),
        "base_symbols": len(base_tokens),
        "symbols_before": curve[0],
        "symbols_after": curve[-1],
        "curve": curve,
        "merges": rows,
        "words": shown,
        "tokenizer": tokenizer,
    }


# every other control character as its Unicode control picture (NUL as U+2400, DEL as U+2421), the
# C1 ones (U+0080-U+009F, which have none) escaped: printed raw, a binary corpus's pieces rang
# the terminal's bell or moved its cursor
_VISIBLE = str.maketrans({**{chr(c): chr(0x2400 + c) for c in range(0x20)}, "\x7f": "\u2421",
                          **{chr(c): f"\\u{c:04x}" for c in range(0x80, 0xA0)},
                          " ": "\u2423", "\n": "\u21b5", "\t": "\u21e5", "\r": "\u240d"})


# Pieces of one chunk a segmentation shows at most (a line of megabytes with no split point is
# one chunk: shown whole, each merge's row was megabytes long)
SHOWN_PIECES = 40


def segmentation_text(shown: Sequence[Dict[str, Any]], pieces: Sequence[Sequence[str]]) -> str:
    """``low_ x5 | l o w e r _ x2``: the shown chunks' pieces, space-separated, with counts
    (a space inside a piece shown as ``␣``, a newline as ``↵``, other control characters as
    their control pictures: NUL as ``␀``); a chunk of more than ``SHOWN_PIECES`` pieces is
    shown by its first ones and how many more it has.

    >>> segmentation_text([{"count": 2}, {"count": 1}], [["low", "er_"], [" the\\x00"]])
    'low er_ x2 | ␣the␀ x1'
    >>> segmentation_text([{"count": 1}], [["ab"] * 1000]).endswith("ab ab ... (+960 pieces) x1")
    True
    """
    def spelled(p: Sequence[str]) -> str:
        text = " ".join(piece.translate(_VISIBLE) for piece in p[:SHOWN_PIECES])
        more = len(p) - SHOWN_PIECES
        return text + (f" ... (+{more:,} piece{'' if more == 1 else 's'})" if more > 0 else "")

    return " | ".join(f"{spelled(p)} x{w['count']}" for w, p in zip(shown, pieces))


def plot_curve(result: Dict[str, Any], path) -> None:
    """The compression curve: the corpus's symbols against the number of merges."""
    from .common import pyplot, save_figure

    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6, 3.6))
    axis.plot(range(len(result["curve"])), result["curve"], marker="." if len(result["curve"]) < 60 else None)
    axis.set_xlabel("merges")
    axis.set_ylabel("symbols in the corpus")
    axis.set_title("compression curve")
    axis.grid(alpha=0.3)
    save_figure(figure, path)
