"""Training: a corpus or a word table in, merges or a Tokenizer out.

``train_words`` is the low-level contract both backends (the compiled learner and
:mod:`fastbpe.reference.learning`) implement; ``train`` counts a corpus, learns and returns a
:class:`~fastbpe.encode.Tokenizer`. The corpus-scale path that feeds a
:class:`~fastbpe.corpus.wordtable.WordTable` to the compiled learner without building Python
tuples (``learn_from_table``) is in :mod:`fastbpe.learn.learner`.
"""
from itertools import chain
import os
import time
import warnings
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .. import reference
from ..corpus.count import count_words
from ..corpus.files import corpus_or_text, str_corpus
from ..corpus.wordtable import WordTable
from ..arguments import check_count, check_word_markers
from ..encode.special import check_special_name
from ..encode.tokenizer import Tokenizer
from ..formats.bytelevel import bytes_to_unicode
from ..formats.ids import ID_LIMIT
from ..progress import merge_progress
from ..split.patterns import TABLE, check_user_pattern, renamed_pattern, resolve, same_split
from .learner import check_num_merges, make_learner, run_learner, table_symbols

Symbol = Union[str, bytes]
Pair = Tuple[Symbol, Symbol]
ProgressCallback = Callable[[int, int], None]

__all__ = ["train", "train_words", "BACKENDS"]

BACKENDS = ("fast", "reference")
COMPAT = (None, "hf")


def hf_byte_tie_ranks() -> List[int]:
    """Rank of each byte in Hugging Face's ``BpeTrainer`` id order: its alphabet is sorted by
    the code point of each byte's GPT-2 byte-to-unicode character.

    >>> r = hf_byte_tie_ranks()
    >>> r[ord("!")], r[ord("a")], r[ord(" ")]
    (0, 64, 220)
    """
    chars = bytes_to_unicode()
    order = sorted(range(256), key=lambda b: ord(chars[b]))
    ranks = [0] * 256
    for rank, b in enumerate(order):
        ranks[b] = rank
    return ranks


def hf_id_layout(tokens: List[bytes], merge_ids: np.ndarray, special_tokens: List[str]):
    """The learner's byte-level vocabulary (the 256 bytes, then a token per merge) and its
    merges renumbered as ``BpeTrainer`` numbers them: the special tokens first, the bytes in
    the order of :func:`hf_byte_tie_ranks`, then the merged tokens in merge order. Returns
    ``(tokens, merge_ids, special_tokens)``, the special tokens' slots empty.

    >>> tokens, merges, specials = hf_id_layout([bytes([b]) for b in range(256)] + [b"!!"],
    ...                                         np.array([[33, 33, 256]]), ["<s>"])
    >>> tokens[:2], merges.tolist(), specials, tokens[1 + 256]
    ([b'', b'!'], [[1, 1, 257]], {'<s>': 0}, b'!!')
    """
    first = len(special_tokens)
    new_id = np.arange(first, first + len(tokens), dtype=np.int64)
    new_id[:256] = first + np.array(hf_byte_tie_ranks(), dtype=np.int64)
    laid_out = np.full(first + len(tokens), b"", dtype=object)
    laid_out[new_id] = np.array(tokens + [b""], dtype=object)[:-1]  # (the b"": never a 2-D array of bytes)
    return laid_out.tolist(), new_id[np.asarray(merge_ids, dtype=np.int64)], \
        {name: k for k, name in enumerate(special_tokens)}


def _first_bad_word(words: Mapping) -> str:
    """Name the first invalid entry of a table (the slow path, only once a check has failed)."""
    for i, (word, count) in enumerate(words.items()):
        if type(word) is not tuple:
            return f"word {i} must be a tuple of symbols, got {type(word).__name__}"
        if not word:
            return f"word {i} is empty"
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
            return f"word {i}: count must be an int, got {type(count).__name__}"
        if count <= 0:
            return f"word {i}: count must be positive, got {count}"
    return "invalid word table"


def _validate_words(words: Mapping) -> Tuple[Optional[type], np.ndarray, np.ndarray, set]:
    """Check a word table; return the symbol type (str or bytes, None for an empty table), the
    word lengths, the counts and the set of distinct symbols. Every check runs at C speed over the whole table; only a
    failure walks the words one by one, to name the culprit.

    >>> kind, lengths, counts, _ = _validate_words({("a", "b"): 2})
    >>> kind is str, lengths.tolist(), counts.tolist()
    (True, [2], [2])
    """
    if not isinstance(words, Mapping):
        raise TypeError(f"words must be a mapping of symbol tuples to counts, got {type(words).__name__}")
    if not set(map(type, words)) <= {tuple}:
        raise TypeError(_first_bad_word(words))
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    if len(lengths) and lengths.min() == 0:
        raise ValueError(_first_bad_word(words))
    values = list(words.values())
    if any(t is bool or not issubclass(t, (int, np.integer)) for t in set(map(type, values))):
        raise TypeError(_first_bad_word(words))
    if values and min(values) <= 0:
        raise ValueError(_first_bad_word(words))
    if values and max(values) >= 2**63:
        raise OverflowError(f"a count ({max(values)}) does not fit in 64 bits")
    counts = np.asarray(values, dtype=np.int64).reshape(-1)
    # Every pair count is at most sum(count * (length - 1)); the compiled counters are 64-bit.
    if sum(map(int.__mul__, map(int, values), (lengths - 1).tolist())) >= 2**63:
        raise OverflowError("the word counts are too large: pair counts could overflow 64 bits")
    # Symbols are checked once each, on the distinct ones.
    distinct = set(chain.from_iterable(words))
    kinds = {type(symbol) for symbol in distinct}
    if not kinds <= {str, bytes}:
        bad = next(k for k in kinds if k not in (str, bytes))
        raise TypeError(f"symbols must be str or bytes, got {bad.__name__}")
    if len(kinds) > 1:
        raise TypeError("the table mixes str and bytes symbols; use one kind for the whole table")
    if "" in distinct or b"" in distinct:
        raise ValueError("the table has an empty symbol")
    return next(iter(kinds), None), lengths, counts, distinct


def _encode_symbol(symbol: Symbol) -> bytes:
    return symbol.encode("utf-8", "surrogatepass") if isinstance(symbol, str) else symbol


def _decode_symbol(content: bytes, kind: type) -> Symbol:
    return content.decode("utf-8", "surrogatepass") if kind is str else content


def _flat_ids(words: Mapping, kind: type, single: bool) -> Tuple[np.ndarray, List[Symbol]]:
    """Every symbol of the table as an int32 id, words concatenated, and the symbol of each id.

    Ids only name symbols (the tie rule looks at positions, never at ids), so any numbering
    works. When every symbol is ``single`` (one byte or one character, the usual case) they are
    numbered by value straight from the joined text; longer symbols by first appearance.

    >>> ids, symbols = _flat_ids({("b", "a"): 1, ("a",): 2}, str, single=True)
    >>> ids.tolist(), symbols
    ([1, 0, 0], ['a', 'b'])
    """
    symbols = chain.from_iterable(words)
    if single and kind is bytes:
        flat = np.frombuffer(b"".join(symbols), dtype=np.uint8).astype(np.int32)
        return flat, [bytes([b]) for b in range(256)]
    if single and kind is str:
        points = np.frombuffer("".join(symbols).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        alphabet, flat = np.unique(points, return_inverse=True)
        return flat.astype(np.int32).reshape(-1), [chr(c) for c in alphabet.tolist()]
    first_seen = list(dict.fromkeys(symbols))
    ids = {s: i for i, s in enumerate(first_seen)}
    return np.fromiter(map(ids.__getitem__, chain.from_iterable(words)), dtype=np.int32), first_seen


def train_words(
    words: Mapping[Tuple[Symbol, ...], int],
    num_merges: int,
    *,
    min_frequency: int = 1,
    backend: str = "fast",
    with_counts: bool = False,
    progress: Optional[ProgressCallback] = None,
):
    """Learn merges from a word table; the contract shared by every backend.

    ``words`` maps tuples of symbols (all ``str`` or all ``bytes``) to positive counts, in
    first-appearance order. Returns ``[(left, right), ...]``, or ``(merges, counts)`` with
    ``with_counts=True``. ``backend="reference"`` runs :mod:`fastbpe.reference`.

    >>> train_words({tuple("abab"): 2, tuple("ab"): 1}, 2)
    [('a', 'b'), ('ab', 'ab')]
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    check_num_merges(num_merges, min_frequency)
    kind, lengths, word_counts, distinct = _validate_words(words)
    if backend == "reference" or kind is None:
        merges, counts = reference.learn(words, num_merges, min_frequency)
    else:
        flat, base_symbols = _flat_ids(words, kind, max(map(len, distinct)) == 1)
        starts = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        base_tokens = [_encode_symbol(symbol) for symbol in base_symbols]
        merge_ids, merge_counts, tokens = run_learner(
            flat,
            starts,
            word_counts,
            base_tokens,
            num_merges,
            min_frequency,
            progress,
        )
        symbols = base_symbols + [_decode_symbol(t, kind) for t in tokens[len(base_symbols):]]
        merges = [(symbols[left], symbols[right]) for left, right, _ in merge_ids.tolist()]
        counts = merge_counts.tolist()
    return (merges, counts) if with_counts else merges


def _warn_of_markers_in_text(table: WordTable, word_start: str, word_end: str) -> None:
    """A UserWarning where the corpus's own text holds a word marker: BPE sees it as the same
    symbol as the marker, and decoding cannot tell the two apart (``snake_case`` under
    ``word_start="_"`` decodes as ``snake case``)."""
    if not word_start and not word_end:
        return
    data = table.data.tobytes()
    for name, marker in (("word_start", word_start), ("word_end", word_end)):
        text = marker.encode("utf-8")
        at = data.find(text) if text else -1
        while at >= 0:
            chunk = int(np.searchsorted(table.offsets, at, side="right")) - 1
            begin, end = table.offsets[chunk], table.offsets[chunk + 1]
            if at + len(text) > end:  # (across two chunks: in neither)
                at = data.find(text, at + 1)
                continue
            example = data[begin:end].decode("utf-8", "replace")
            warnings.warn(f"{name}={marker!r} is in the corpus's own text (in {example!r:.60}): decode turns it into "
                          "a space or drops it, as it cannot tell it from the markers; a marker the text never holds "
                          "(such as '</w>') decodes the text exactly", UserWarning, stacklevel=3)
            break


def training_pattern(corpus, pattern: Optional[str]) -> str:
    """The split a training uses: ``pattern``, or where none is given the one a WordTable corpus
    was counted with, else GPT-2's. A table counted with another split than ``pattern`` is
    refused: the tokenizer would split text otherwise than its merges were learned on.

    >>> training_pattern(None, None), training_pattern(None, "whitespace")
    ('gpt2', 'whitespace')
    """
    counted = corpus.pattern if isinstance(corpus, WordTable) else None
    if pattern is None:
        return counted or "gpt2"
    if counted is not None and not same_split(pattern, counted):
        raise ValueError(f"the WordTable was counted with pattern={counted!r:.80}, not {pattern!r:.80}; train it "
                         "with its own (leave pattern out), or count the corpus again with this one")
    return pattern


def train(
    corpus=None,
    vocab_size: Optional[int] = None,
    *,
    text: Optional[str] = None,
    num_merges: Optional[int] = None,
    unit: str = "bytes",
    pattern: Optional[str] = None,
    word_start: Optional[str] = None,
    word_end: Optional[str] = None,
    min_frequency: int = 2,
    special_tokens: Sequence[str] = (),
    progress=None,
    workers: Optional[int] = None,
    cluster=None,
    errors: str = "strict",
    compat: Optional[str] = None,
    pretokenizer: Optional[str] = None,
):
    """Train a BPE tokenizer on a corpus; returns a :class:`~fastbpe.encode.Tokenizer`.

    ``corpus``: a path (``pathlib.Path``, or a ``str`` naming an existing file, directory or
    matching glob), a list of paths, an iterator of ``str``/``bytes`` texts, or a
    :class:`WordTable` already counted with :func:`fastbpe.count_words` (count once, train many
    times). ``text``: a string to train on, as text (instead of ``corpus``). A ``str`` corpus
    that names no existing path is taken as text only when it cannot be one: it holds
    whitespace and no existing folder of it; otherwise (``"corpus/a.txtt"``, ``"tokens"``) it is a
    ValueError, so a mistyped path is never trained on. ``workers`` and ``cluster`` are passed
    to ``count_words``.
    ``vocab_size`` counts base symbols, merged tokens and special tokens; ``num_merges`` caps
    the merges instead. Byte-level with the GPT-2 split is the default for real use;
    ``pattern``: the split (default: the one a :class:`WordTable` corpus was counted with, else
    ``"gpt2"``; a table counted with another is refused).
    ``pattern="whitespace", unit="chars", word_start="_"`` reproduces BPE by hand as
    Sennrich et al. (2016) present it. Training stops early when no pair is left or the best count falls below
    ``min_frequency``. The returned tokenizer's ``training_stats`` says what each phase took.

    ``pretokenizer`` is the name earlier versions gave ``pattern`` (still accepted, with a
    DeprecationWarning).

    ``compat="hf"`` learns the merges Hugging Face's ``BpeTrainer`` learns for the same text
    with ``pre_tokenizers.ByteLevel(add_prefix_space=False)`` and
    ``initial_alphabet=ByteLevel.alphabet()`` (same vocab size, min frequency, special
    tokens): its tie rule (equal counts go to the pair of smaller ids, special tokens first,
    then the bytes in the code-point order of their characters, then merges in order), its ids
    (in that order: ``<s>`` 0 when it is the first special token, ``!`` next), and its encoder
    (lowest merge rank first) for the result. Byte-level, GPT-2 split only. As there,
    files (paths) are read line by line, each line with its line ending a text of its own
    (``Tokenizer.train(files, trainer)``), and an iterator's texts are each one text
    (``train_from_iterator``).
    """
    if vocab_size is None and num_merges is None:
        raise ValueError("give vocab_size or num_merges")
    # arguments are checked before the corpus is read, not after minutes of counting
    if vocab_size is not None:
        check_count(vocab_size, "vocab_size", 1, ID_LIMIT)  # (token ids are int32)
    check_num_merges(0 if num_merges is None else num_merges, min_frequency)
    check_word_markers(word_start, word_end)
    pattern = renamed_pattern(pattern, pretokenizer)
    if pattern is not None:  # (a table's was checked as it was counted)
        check_user_pattern(pattern)
    pattern = training_pattern(corpus, pattern)
    if compat not in COMPAT:
        raise ValueError(f"compat must be one of {COMPAT}, got {compat!r}")
    tie_ranks = None
    if compat == "hf":
        if unit != "bytes" or word_start or word_end or resolve(pattern) is not TABLE["gpt2"]:
            raise ValueError("compat='hf' needs unit='bytes', pattern='gpt2' (ByteLevel's split) "
                             "and no word markers")
        tie_ranks = hf_byte_tie_ranks()
    if isinstance(special_tokens, (str, bytes, bytearray)) or not isinstance(special_tokens, Iterable):
        raise TypeError(f"special_tokens must be a list of names, not one {type(special_tokens).__name__} "
                        f"(write [{special_tokens!r:.40}])")
    if isinstance(special_tokens, Mapping):  # its ids would be dropped without a word
        raise TypeError("special_tokens must be a list of names: training gives them the ids after the "
                        "vocabulary, in order (a name -> id mapping is for Tokenizer)")
    special_tokens = list(special_tokens)
    for name in special_tokens:  # (before the corpus is read; the Tokenizer checks the rest)
        check_special_name(name)
    if len(set(special_tokens)) != len(special_tokens):
        twice = sorted({name for name in special_tokens if special_tokens.count(name) > 1})
        raise ValueError(f"special_tokens names {', '.join(map(repr, twice))} more than once")
    if unit not in ("bytes", "chars"):
        raise ValueError(f"unit must be 'bytes' or 'chars', got {unit!r}")
    corpus = corpus_or_text(corpus, text)
    started = time.perf_counter()
    if isinstance(corpus, WordTable):
        table = corpus
    else:
        if isinstance(corpus, str):
            corpus = str_corpus(corpus)
        kwargs = {"pattern": pattern, "workers": workers, "progress": progress,
                  "errors": errors}
        if cluster is not None:
            kwargs["cluster"] = cluster
        if compat == "hf" and isinstance(corpus, (str, os.PathLike, list, tuple)):
            kwargs["lines"] = True  # Hugging Face trains on files line by line
        table = count_words(corpus, **kwargs)
    counted = time.perf_counter()
    _warn_of_markers_in_text(table, word_start or "", word_end or "")
    symbols, starts, base_tokens = table_symbols(table, unit, word_start or "", word_end or "")
    max_tokens = -1
    if vocab_size is not None:
        max_tokens = vocab_size - len(special_tokens)
        if max_tokens < len(base_tokens):
            raise ValueError(
                f"vocab_size={vocab_size} is smaller than the {len(base_tokens)} base symbols "
                f"plus {len(special_tokens)} special tokens")
        if num_merges is None:
            num_merges = max_tokens - len(base_tokens)
    check_num_merges(num_merges, min_frequency)
    learner = make_learner(symbols, starts, table.counts, base_tokens, tie_ranks)
    input_stats = {"input_bytes": table.total_bytes, "input_chunks": table.total_count, "unique_chunks": len(table)}
    # The learner holds its own copy of the symbols: a table counted here (not one the caller
    # holds) is freed before merging, the input's size less at the peak.
    del symbols, starts, table
    prepared = time.perf_counter()
    with merge_progress(progress, num_merges) as callback:
        merge_ids, counts, tokens = learner.run(num_merges, min_frequency, max_tokens, callback)
    merged = time.perf_counter()
    # The learner's tables go before the tokenizer is built: held while it was, they had put
    # the training's peak there (on one 50 MB chunk, 4 MB above the merging's own).
    corpus_tokens = learner.corpus_tokens()
    del learner
    specials: Union[List[str], Dict[str, int]] = special_tokens  # (a list: ids after the vocabulary)
    if compat == "hf":
        tokens, merge_ids, specials = hf_id_layout(tokens, merge_ids, special_tokens)
    tokenizer = Tokenizer(
        tokens,
        merge_ids,  # (left, right, new): the learner's ids, checked, not rebuilt
        unit=unit,
        pattern=pattern,
        word_start=word_start,
        word_end=word_end,
        special_tokens=specials,
        merge_counts=counts,
        merge_rule="pair" if compat == "hf" else "replay",
    )
    tokenizer.training_stats = {
        **input_stats,
        "base_symbols": len(base_tokens),
        "merges": len(merge_ids),
        "corpus_tokens": corpus_tokens,
        "seconds_count": counted - started,
        "seconds_prepare": prepared - counted,
        "seconds_merge": merged - prepared,
    }
    return tokenizer
