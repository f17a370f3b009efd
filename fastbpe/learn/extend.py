"""Extending a tokenizer: more merges learned on a new corpus, every existing id kept.

The corpus is split into chunks with the tokenizer's own pattern and counted; each unique chunk
is encoded once by the tokenizer (its own merge rule), and the compiled learner
(``fastbpe/_core/learn.pyx``) continues from those segmentations, with the tokenizer's ordinary
tokens as its starting vocabulary. So the new merges are exactly the ones the reference learner
(:mod:`fastbpe.reference.learning`) finds on the re-encoded chunks
(:func:`extend_reference` states it in plain Python; the tests compare the two).

The result keeps every existing token id, merge, special token and encoding rule; the new
tokens take the ids after the largest existing id (special tokens included). As in training, a
merge whose bytes are already a token reuses that token's id. This is how a vocabulary is
adapted to an under-served language without retraining it (the premium of Petrov et al. 2023
falls as merges for the new language are appended).

With tiktoken's rule (``merge_rule="token"``, tiktoken and GPT-2 files) the extended tokenizer
merges any adjacent pair whose bytes form a new token, not only the learned pair, so on a few
chunks its encoding can be shorter than the learner's segmentation; the merges themselves are
exact either way.
"""
import time
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .. import reference
from ..corpus.count import count_words
from ..corpus.files import corpus_or_text, str_corpus
from ..corpus.wordtable import WordTable
from ..progress import merge_progress
from ..reference import encode as reference_encode
from ..split.patterns import fused_scanner_id, same_split
from .learner import check_num_merges, make_learner

__all__ = ["extend", "extend_reference", "check_extendable"]

Symbol = Union[str, bytes]


def check_extendable(tokenizer) -> None:
    """Refuse a tokenizer whose chunks :func:`fastbpe.count_words` cannot reproduce (a
    normaliser, several split stages, or text between matches kept as chunks by a pattern that
    does not tile the text): its extension would learn from chunks it never encodes."""
    # Known by what it can do, so that this module (which the Tokenizer's own ``extend`` calls)
    # need not import the Tokenizer.
    if not callable(getattr(tokenizer, "_with_vocabulary", None)):
        raise TypeError(f"expected a fastbpe Tokenizer, got {type(tokenizer).__name__}")
    if tokenizer.normalizer:
        raise ValueError(f"cannot extend a tokenizer with a normaliser ({tokenizer.normalize.names()}): its "
                         "chunks are split after normalising, which counting does not do")
    if tokenizer.split_stages or (tokenizer.split_gaps and fused_scanner_id(tokenizer.pattern) is None):
        raise ValueError("cannot extend a tokenizer with several split stages or a split that keeps the text "
                         "between matches: counting splits with one pattern")


def _count(tokenizer, corpus, text, workers, errors, progress) -> WordTable:
    """The corpus's unique chunks under the tokenizer's pattern, as ``train`` counts them."""
    corpus = corpus_or_text(corpus, text)
    if isinstance(corpus, WordTable):
        if corpus.pattern is not None and not same_split(corpus.pattern, tokenizer.pattern):
            raise ValueError(f"the WordTable was counted with pattern={corpus.pattern!r:.80}, the tokenizer splits "
                             f"with {tokenizer.pattern!r:.80}: count the corpus with the tokenizer's pattern "
                             "(count_words(corpus, pattern=tokenizer.pattern))")
        return corpus
    if isinstance(corpus, str):
        corpus = str_corpus(corpus)
    return count_words(corpus, pattern=tokenizer.pattern, workers=workers, errors=errors,
                       progress=False if callable(progress) else progress)


def _unit_lengths(tokenizer) -> np.ndarray:
    """Length of every token in the units the encoder reads: bytes, or characters."""
    if tokenizer.unit == "bytes":
        return np.fromiter(map(len, tokenizer.token_bytes), dtype=np.int64, count=len(tokenizer.token_bytes))
    return np.array([len(t.decode("utf-8", "surrogatepass")) for t in tokenizer.token_bytes], dtype=np.int64)


def _encode_chunks(tokenizer, table: WordTable) -> Tuple[np.ndarray, np.ndarray]:
    """Every unique chunk encoded once by the tokenizer: the ids of all chunks, concatenated,
    and the int64 offset of each chunk's first id (``len(table) + 1`` entries)."""
    if tokenizer._reads_bytes:
        ids = tokenizer.encode_utf8_chunks(table.data.tobytes(), table.offsets)
        bounds = table.offsets  # tokens never cross a chunk: their byte ends hit every offset
    else:
        symbol_of: Dict[str, int] = {}
        flat: List[int] = []
        ends = [0]
        for i, (chunk, _) in enumerate(table.items()):
            try:
                word = tokenizer.word_start + chunk.decode("utf-8") + tokenizer.word_end
            except UnicodeDecodeError as exc:
                raise ValueError(f"chunk {i} is not valid UTF-8 ({exc}); a tokenizer of characters or with word "
                                 "markers extends only on text (errors='replace' makes it text)") from None
            for unit in (word if tokenizer.unit == "chars" else word.encode("utf-8")):
                key = unit.encode("utf-8", "surrogatepass") if tokenizer.unit == "chars" else bytes([unit])
                sid = symbol_of.get(key)
                if sid is None:
                    sid = symbol_of[key] = tokenizer._ids.get(key, -1)
                if sid < 0:
                    raise ValueError(f"{key.decode('utf-8', 'backslashreplace')!r} (chunk {i}) is not in the "
                                     "vocabulary: extend appends merges, not base symbols")
                flat.append(sid)
            ends.append(len(flat))
        symbols = np.asarray(flat, dtype=np.int32)
        bounds = np.asarray(ends, dtype=np.int64)
        ids = tokenizer._core().encode_symbols(symbols, np.ascontiguousarray(bounds[1:]), tokenizer._state())
    token_ends = np.cumsum(_unit_lengths(tokenizer)[ids])
    starts = np.searchsorted(token_ends, bounds, side="right")
    starts[-1] = len(ids)
    return np.ascontiguousarray(ids, dtype=np.int32), starts.astype(np.int64)


def extend(
    tokenizer,
    corpus=None,
    num_merges: Optional[int] = None,
    *,
    text: Optional[str] = None,
    min_frequency: int = 2,
    workers: Optional[int] = None,
    errors: str = "strict",
    progress=None,
):
    """A new :class:`~fastbpe.encode.Tokenizer`: ``tokenizer`` with up to ``num_merges`` merges
    learned on ``corpus`` appended.

    ``corpus`` is what :func:`fastbpe.train` takes (paths, an iterator of texts, a
    :class:`WordTable` counted with the tokenizer's pattern), or ``text=`` a string. Learning
    continues from each chunk as the tokenizer encodes it (special-token text counts as
    ordinary text) and stops early when the best pair occurs fewer than ``min_frequency``
    times. Existing ids, merges, special tokens and the encoding rule are kept; new tokens get
    the ids after the largest existing one.

    >>> import fastbpe
    >>> tok = fastbpe.train(text="low lower lowest", num_merges=2, min_frequency=1, pattern="whitespace")
    >>> bigger = extend(tok, text="newest newest widest", num_merges=2, min_frequency=1)
    >>> bigger.merges[len(tok.merges):], bigger.token_bytes[:len(tok.token_bytes)] == tok.token_bytes
    ([(b'e', b's'), (b'es', b't')], True)
    """
    check_extendable(tokenizer)
    if num_merges is None:
        raise ValueError("give num_merges: how many merges to learn")
    check_num_merges(num_merges, min_frequency)
    started = time.perf_counter()
    table = _count(tokenizer, corpus, text, workers, errors, progress)
    counted = time.perf_counter()
    ids, starts = _encode_chunks(tokenizer, table)
    # The learner numbers its tokens densely; the ordinary tokens are its starting vocabulary
    # (special tokens and unused ids never occur in an encoding, so they stay out of it).
    ordinary = np.flatnonzero(np.fromiter(map(bool, tokenizer.token_bytes), dtype=bool,
                                          count=len(tokenizer.token_bytes)))
    dense_of = np.full(len(tokenizer.token_bytes), -1, dtype=np.int32)
    dense_of[ordinary] = np.arange(len(ordinary), dtype=np.int32)
    learner = make_learner(np.ascontiguousarray(dense_of[ids]), starts, table.counts,
                            [tokenizer.token_bytes[i] for i in ordinary.tolist()])
    encoded = time.perf_counter()
    tokens_before = learner.corpus_tokens()
    with merge_progress(progress, num_merges) as callback:
        merge_rows, counts, learned_tokens = learner.run(int(num_merges), int(min_frequency), -1, callback)
    merged = time.perf_counter()
    # Back to the tokenizer's ids: a learner id below len(ordinary) is an existing token, the
    # rest are new and follow the largest id in use.
    first_new = max([len(tokenizer.token_bytes) - 1, *tokenizer.special_tokens.values()]) + 1
    original = np.concatenate([ordinary, first_new + np.arange(len(learned_tokens) - len(ordinary))])
    new_rows = original[merge_rows[:, :2]] if len(merge_rows) else np.zeros((0, 2), dtype=np.int64)
    tokens = (list(tokenizer.token_bytes) + [b""] * (first_new - len(tokenizer.token_bytes))
              + list(learned_tokens[len(ordinary):]))
    merge_counts = None
    if tokenizer.merge_counts is not None:
        merge_counts = list(tokenizer.merge_counts) + counts.tolist()
    extended = tokenizer._with_vocabulary(
        tokens, np.concatenate([tokenizer.merge_ids.astype(np.int64), new_rows.astype(np.int64)]), merge_counts)
    extended.training_stats = {
        "input_bytes": table.total_bytes,
        "input_chunks": table.total_count,
        "unique_chunks": len(table),
        "base_merges": len(tokenizer.merge_ids),
        "merges": len(merge_rows),
        "new_tokens": len(learned_tokens) - len(ordinary),
        "new_merge_counts": counts.tolist(),
        "corpus_tokens_before": tokens_before,
        "corpus_tokens": learner.corpus_tokens(),
        "seconds_count": counted - started,
        "seconds_encode": encoded - counted,
        "seconds_merge": merged - encoded,
    }
    return extended


def _reference_encoder(tokenizer):
    """One chunk (bytes) -> its tokens (bytes), by the tokenizer's rule in plain Python."""
    token_bytes = tokenizer.token_bytes
    merges = [(token_bytes[a], token_bytes[b]) for a, b in tokenizer.merge_ids.tolist()]
    if tokenizer.unit == "chars" or tokenizer.word_start or tokenizer.word_end:
        as_unit = (lambda s: s) if tokenizer.unit == "chars" else (lambda s: s.encode("utf-8"))
        str_merges = [(tokenizer._as_unit(a), tokenizer._as_unit(b)) for a, b in merges]

        def encode(chunk: bytes) -> Tuple[bytes, ...]:
            word = as_unit(tokenizer.word_start + chunk.decode("utf-8") + tokenizer.word_end)
            units = tuple(word) if tokenizer.unit == "chars" else tuple(bytes([b]) for b in word)
            pieces = reference_encode.encode_word(units, str_merges if tokenizer.unit == "chars" else merges)
            return tuple(p.encode("utf-8", "surrogatepass") if isinstance(p, str) else p for p in pieces)
        return encode
    if tokenizer.merge_rule == "token":
        ranks = {t: i for i, t in enumerate(token_bytes) if t}
        return lambda chunk: tuple(reference_encode.encode_by_token_rank(chunk, ranks, tokenizer.whole_token_lookup))
    if tokenizer.merge_rule == "pair":
        def plain(chunk: bytes) -> Tuple[bytes, ...]:
            return tuple(reference_encode.encode_by_pair_rank(chunk, merges))
    else:
        def plain(chunk: bytes) -> Tuple[bytes, ...]:
            return reference_encode.encode_word(tuple(bytes([b]) for b in chunk), merges)
    if not tokenizer.whole_token_lookup:
        return plain
    tokens = {t for t in token_bytes if t}  # (a chunk that is a token is that token, by either rule)
    return lambda chunk: (chunk,) if chunk in tokens else plain(chunk)


def extend_reference(tokenizer, texts: Sequence[Union[str, bytes]], num_merges: int,
                     min_frequency: int = 2, errors: str = "strict") -> Tuple[List[Tuple[bytes, bytes]], List[int]]:
    """The specification of :func:`extend`, in plain Python: count the texts' chunks
    (:func:`fastbpe.reference.count.count_words`), encode each unique chunk with the
    tokenizer's rule (:mod:`fastbpe.reference.encode`), and continue the reference learner
    (:func:`fastbpe.reference.learn`) from those segmentations. Returns the new merges as
    pairs of token bytes and the count of each."""
    check_extendable(tokenizer)
    encode = _reference_encoder(tokenizer)
    chunks: Mapping[bytes, int] = reference.count.count_words(texts, tokenizer.pattern, errors)
    words: Dict[Tuple[bytes, ...], int] = {}
    for chunk, count in chunks.items():
        word = encode(chunk)
        words[word] = words.get(word, 0) + count
    return reference.learn(words, num_merges, min_frequency)
