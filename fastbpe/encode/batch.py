"""``Tokenizer.encode_batch``: many texts, split by bytes over a persistent pool of threads.

The texts are cut into contiguous groups holding about the same number of characters (not of
texts: a few long texts would otherwise leave a thread idle). Each group is encoded by one
compiled call (``BPECore.encode_str_many``) that holds the GIL only to read the str objects, so
the threads run the encoder at the same time; its lists (or arrays) of ids, made under the GIL,
are made by the worker itself, or for short texts by the calling thread while the workers
encode the next groups. Texts the one-call path does not take (special tokens present, a lone
surrogate, a byte outside the vocabulary, a tokenizer that is not byte-level with a compiled
pattern) go through ``encode``'s own path, text by text, so every text gets exactly
``encode``'s ids or error. Which texts hold a special token's text is found by one search
over each group, on its worker.
"""
import functools
import gc
import os
import re
import threading
from contextlib import contextmanager
from typing import Callable, List, Optional, Tuple, Union

import numpy as np

from .._core.encode import StopFlag, array_views, str_sizes
from . import special

__all__ = ["encode_batch", "byte_balanced_groups", "texts_with_specials", "utf8_encoder", "utf8_batch_encoder"]


def byte_balanced_groups(sizes: np.ndarray, groups: int) -> List[slice]:
    """At most ``groups`` contiguous slices of the items, each with about the same total size.

    >>> byte_balanced_groups(np.array([5, 1, 1, 1, 1, 1]), 2)
    [slice(0, 1, None), slice(1, 6, None)]
    """
    total = np.cumsum(sizes, dtype=np.int64)
    if not len(total) or groups <= 1:
        return [slice(0, len(sizes))]
    targets = total[-1] * np.arange(1, groups, dtype=np.float64) / groups
    # (a set of a few ints, not np.unique: its first call in a process imports for 16 ms, all
    # of it before any thread starts)
    inner = (np.searchsorted(total, targets, side="left") + 1).tolist()
    cuts = sorted({0, len(sizes), *(min(cut, len(sizes)) for cut in inner)})
    return [slice(a, b) for a, b in zip(cuts[:-1], cuts[1:])]


# Characters per group, about, when there is enough for several groups per worker.
GROUP_CHARS = 1 << 21


def _group_count(chars: int, workers: int) -> int:
    """How many groups to cut ``chars`` characters into for ``workers`` threads: one per worker,
    or for large batches up to 8 per worker. A group's encoding runs without the GIL but its
    result conversion (the lists of ids) holds it, so with several groups per worker one
    thread's conversion overlaps another's encoding instead of all conversions queueing at the
    end. One worker takes a large batch in groups of about 4 * GROUP_CHARS characters, one
    after another: the ids of each go to the encoder's own buffer, which the result gives back
    when it dies, for the next call (one group of 100 MB went to a fresh array, whose pages
    the kernel cleared on every call).

    >>> _group_count(1000, 2), _group_count(40 << 20, 2), _group_count(40 << 20, 1)
    (2, 16, 5)
    """
    if workers <= 1:
        return max(1, chars // (4 * GROUP_CHARS))
    return workers * max(1, min(8, chars // (workers * GROUP_CHARS)))


_collector_lock = threading.Lock()
_collector_pauses = 0  # encode_batch calls running with the cycle collector paused
_collector_was_enabled = False


@contextmanager
def _cycle_collector_paused():
    """The cycle collector paused while a batch's result is built, then as it was before.

    A batch of 10^5-10^6 texts returns as many new lists: created with the collector on, they
    start a full collection (a walk over every tracked object) each time the old generation
    grows by a quarter, which costs more than the encoding itself (measured: CPU of 20 MB of
    English lines at 2 workers 0.47 s paused, 0.73-1.0 s not). The lists hold ints only, so
    no cycle can form meanwhile; they are collected as usual afterwards. Concurrent calls
    share one pause: the last to finish restores the state the first found. Yields whether
    the collector was on.
    """
    global _collector_pauses, _collector_was_enabled
    with _collector_lock:
        if _collector_pauses == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _collector_pauses += 1
        was_enabled = _collector_was_enabled
    try:
        yield was_enabled
    finally:
        with _collector_lock:
            _collector_pauses -= 1
            if _collector_pauses == 0 and _collector_was_enabled:
                gc.enable()


def _collector_after_fork_in_child() -> None:
    """A forked child runs no batch of its parent's (their threads are not there): the
    collector as it was before the parent's first pause (a child forked during a batch had it
    off for good, its own batches counting down to the parent's count, never to 0), and a
    fresh lock (one a parent thread held at the fork would stay held)."""
    global _collector_lock, _collector_pauses
    _collector_lock = threading.Lock()
    if _collector_pauses:
        _collector_pauses = 0
        if _collector_was_enabled:
            gc.enable()


if hasattr(os, "register_at_fork"):  # (not on Windows, which does not fork)
    os.register_at_fork(after_in_child=_collector_after_fork_in_child)


def _fused_pattern(tok) -> Optional[int]:
    """The compiled scanner of the tokenizer's pattern when texts may take the one-call path."""
    if not tok._reads_bytes or tok.normalizer or tok.prefix_space:  # (steps the one-call path leaves out)
        return None
    return tok.splitter.fused_scanner()


@functools.lru_cache(maxsize=64)
def utf8_name_search(names: frozenset) -> Callable:
    """``search(data)``: a match (else None) of any of ``names`` in UTF-8 ``data`` (bytes or a
    memoryview), found without making a str: whether the one-call path, which splits out no
    token, may encode it.

    >>> bool(utf8_name_search(frozenset({"<think>"}))(memoryview(b"a <think> b")))
    True
    """
    return re.compile(b"|".join(re.escape(name.encode("utf-8", "surrogatepass")) for name in sorted(names))).search


def _ordinary_utf8(tok, data) -> Optional[np.ndarray]:
    """``encode_ordinary``'s int32 ids of the text UTF-8 ``data`` spells, made a str (None when
    it is not UTF-8): the path of any tokenizer, tokens matched always split out."""
    try:
        text = str(data, "utf-8")
    except UnicodeDecodeError:
        return None
    ids = tok._plain_ids(text, False)  # (a one-chunk character tokenizer's one call)
    return ids if ids is not None else tok._encode_with_sets(text, *tok._ordinary_sets())


def utf8_encoder(tok) -> Tuple[Callable[[Union[bytes, memoryview]], Optional[np.ndarray]], bool]:
    """``(encode, cuts)``: ``encode(data)`` gives the int32 ids of UTF-8 ``data`` (bytes or a
    memoryview) that ``encode_ordinary`` gives for its text, or None when ``data`` is not
    UTF-8; ``cuts``: whether pieces of the data cut at the safe cuts of the tokenizer's split
    (:mod:`fastbpe.corpus.cut`) give, one after the other, the ids of the whole. A tokenizer
    that takes the one-call path reads the bytes in place, no str made (``BPECore.encode_text``),
    unless the data holds a token matched always; what ``encode_files``'s worker threads run
    (with the chunk cache their pool shares)."""

    encode = functools.partial(_ordinary_utf8, tok)
    pattern = _fused_pattern(tok)
    if pattern is None:
        return encode, not tok.prefix_space  # (a prefix space would go before every piece)

    def encode_fused(data):
        return tok._core().encode_text(data, pattern, tok._state())

    if not tok.specials.always:
        return encode_fused, True
    holds_name = utf8_name_search(tok.specials.always)
    return (lambda data: encode(data) if holds_name(data) else encode_fused(data)), True


def insert_separators(ids: np.ndarray, ends: np.ndarray, before: np.ndarray, separator: int):
    """``(ids, ends)`` of texts (text ``k`` is ``ids[ends[k]:ends[k + 1]]``) with id
    ``separator`` put before each text flagged in ``before`` and counted with it.

    >>> [a.tolist() for a in insert_separators(np.array([5, 6, 7]), np.array([0, 1, 3]), np.array([0, 1]), 9)]
    [[5, 9, 6, 7], [0, 1, 4]]
    """
    flags = before.astype(bool)
    ids = np.insert(ids, ends[:-1][flags], separator)
    return ids, ends + np.concatenate([[0], np.cumsum(flags)])


def texts_holding(search: Callable, data, starts: np.ndarray, stops: np.ndarray) -> List[int]:
    """The texts ``data[starts[k]:stops[k]]`` (in order, ``stops`` sorted) that a match of
    ``search`` (a compiled regex's) overlaps, one pass over ``data``.

    >>> import re
    >>> texts_holding(re.compile(b"<t>").search, b"a<t>\\nb\\nc<t>", np.array([0, 5, 7]), np.array([4, 6, 10]))
    [0, 2]
    """
    held: List[int] = []
    match = search(data)
    while match is not None:
        k = int(np.searchsorted(stops, match.start(), side="right"))  # (the first text ending after it starts)
        if k < len(starts) and starts[k] < match.end() and (not held or held[-1] != k):
            held.append(k)
        match = search(data, match.end())
    return held


def replace_texts(ids: np.ndarray, ends: np.ndarray, again: dict) -> Tuple[np.ndarray, np.ndarray]:
    """``(ids, ends)`` of texts (text ``k`` is ``ids[ends[k]:ends[k + 1]]``) with the ids of
    the texts ``again`` names replaced by its arrays.

    >>> [a.tolist() for a in replace_texts(np.array([5, 6, 7]), np.array([0, 1, 3]), {1: np.array([9])})]
    [[5, 9], [0, 1, 2]]
    """
    if not again:
        return ids, ends
    parts, lengths, at = [], np.diff(ends), 0
    for k in sorted(again):
        parts += [ids[at:ends[k]], again[k]]
        lengths[k], at = len(again[k]), ends[k + 1]
    parts.append(ids[at:])
    new_ends = np.zeros_like(ends)
    np.cumsum(lengths, out=new_ends[1:])
    return np.concatenate(parts).astype(ids.dtype, copy=False), new_ends


def utf8_batch_encoder(tok) -> Optional[Callable]:
    """For a tokenizer that takes the one-call path, ``encode(data, starts, stops, separator=-1,
    before=None)``: the ids of every UTF-8 text ``data[starts[k]:stops[k]]`` in one compiled
    call, as ``(ids, ends, failed)``, id ``separator`` before each text flagged in ``before``
    (``BPECore.encode_text_many``); for a character-level tokenizer whose text is one chunk,
    the texts made strs and encoded by one call too (``Tokenizer._one_chunk_texts``; ``failed``
    true when one is not UTF-8, or holds a character without a token); else None. The texts
    that hold a token matched always are encoded again on their own (``encode_ordinary``'s
    path, which splits it out), the rest kept from the one call."""
    pattern = _fused_pattern(tok)
    always = tok.specials.always
    if pattern is not None:
        search = utf8_name_search(always) if always else None

        def encode_fused(data, starts, stops, separator=-1, before=None):
            ids, ends, failed = tok._core().encode_text_many(data, starts, stops, pattern, tok._state(), separator,
                                                             before)
            if search is None or failed or search(data) is None:
                return ids, ends, failed
            again = {}
            for k in texts_holding(search, data, starts, stops):
                ids_k = _ordinary_utf8(tok, data[starts[k]:stops[k]])  # (UTF-8: the one call read it)
                again[k] = np.concatenate([[separator], ids_k]).astype(np.int32) if separator >= 0 and before[k] \
                    else ids_k
            ids, ends = replace_texts(ids, ends, again)
            return ids, ends, failed

        return encode_fused
    if always or not tok._text_is_one_chunk():
        return None

    def encode_chars(data, starts, stops, separator=-1, before=None):
        try:
            texts = [str(data[start:stop], "utf-8") for start, stop in zip(starts.tolist(), stops.tolist())]
        except UnicodeDecodeError:
            return None, None, True  # (the caller's text at a time names it)
        ids, ends, failed = tok._one_chunk_texts(texts, 0, len(texts))
        if separator >= 0 and not failed:
            ids, ends = insert_separators(ids, ends, before, separator)
        return ids, ends, failed

    return encode_chars


# Texts shorter than this on average (characters) have their lists made by encode_batch's
# calling thread while its workers encode (see there; texts of 256 characters ran alike both
# ways).
SHORT_TEXT_CHARS = 256
# Lists of ids built between two young collections of _lists_collected (about 0.5 MB of them).
LISTS_PER_COLLECTION = 4096


def _lists_collected(core, ids, ends, state) -> list:
    """``core.id_lists(ids, ends, state)`` built LISTS_PER_COLLECTION lists at a time, the
    young generation collected after each step, for a call made while the collector is paused
    (_cycle_collector_paused) that found it on. Each list is a new tracked object; once the
    collector is back on, its first young collection would walk every list of the batch, long
    out of the CPU's caches (586,000 lists of English lines, cl100k: 100 ms, as long as building
    them). Walked step by step, each right after it was built, they cost 20 ms in all. Their ints
    form no cycle, so the collections free nothing: they only age the lists as the collector
    would have."""
    out = core.id_lists(ids, ends[:LISTS_PER_COLLECTION + 1], state)
    gc.collect(0)
    for a in range(LISTS_PER_COLLECTION, len(ends) - 1, LISTS_PER_COLLECTION):
        out += core.id_lists(ids, ends[a:a + LISTS_PER_COLLECTION + 1], state)
        gc.collect(0)
    return out


def texts_with_specials(texts: List[str], names: frozenset, start: int = 0, stop: int = -1) -> List[int]:
    """The indices of the texts (of ``texts[start:stop]``, stop -1: to the end) in which a
    special-token name occurs (one compiled pass over each text, no copy: ``NameFinder``).

    >>> texts = ["a", "b<s>", "c<", "s>", "<s>"]
    >>> texts_with_specials(texts, frozenset(["<s>"])), texts_with_specials(texts, frozenset(["<s>"]), 2)
    ([1, 4], [4])
    """
    if not names or not texts:
        return []
    return special.name_finder(frozenset(names)).holding(texts, start, stop).tolist()


# A batch of at most this many texts and characters is encoded text by text in the calling
# thread (encode_small): under these, the general path's setup (sizes, groups, the special-token
# search over the batch, the collector pause, the pool) costs more than the encoding, and a
# second thread would gain less than handing it work costs (cl100k, 2 cores, wall time: 64
# texts of 256 characters 97 us this way against 264 us through the pool; one text of 20,000
# characters 96 us against 156 us).
SMALL_BATCH_TEXTS = 64
SMALL_BATCH_CHARS = 16384
# Special-token policies given as these types read the same when read twice (not an iterator):
# encode_small may read them and still leave the decision to the general path.
_REREADABLE = (str, frozenset, set, tuple, list, type(None))


def encode_small(tok, texts, default_policy: bool, allowed_special, disallowed_special,
                 as_numpy: bool) -> Optional[list]:
    """What :func:`encode_batch` returns for a small batch (``SMALL_BATCH_TEXTS`` and
    ``SMALL_BATCH_CHARS`` at most), each text by ``encode``'s one compiled call
    (``Tokenizer._plain_ids``) in the calling thread: a loop of ``encode`` plus a constant.
    None (never an error) wherever the general path must decide: a bigger batch, not a list or
    tuple, a text that is not a str, holds a special token's name or a lone surrogate, or that
    the call fails on, a tokenizer without the one-call path, a policy that is not valid or is
    an iterator, or that disallows text other than special tokens' names. The general path
    then encodes the whole batch and raises what it raises; a text that holds no special
    token's name encodes alike under every policy.
    ``default_policy``: the policy is ``encode``'s default (told by the caller, which tests it
    without building the sets)."""
    if type(texts) not in (list, tuple) or len(texts) > SMALL_BATCH_TEXTS:
        return None
    chars = 0
    for text in texts:
        if type(text) is not str:
            return None
        chars += len(text)
    if chars > SMALL_BATCH_CHARS or tok._plain() is None:
        return None
    if default_policy:
        refuse = True
    else:
        if type(allowed_special) not in _REREADABLE or type(disallowed_special) not in _REREADABLE:
            return None
        try:
            allowed, disallowed = tok._special_sets(allowed_special, disallowed_special)
        except (TypeError, ValueError):
            return None
        if not disallowed <= tok.special_tokens.keys():  # (text to refuse that names no special token)
            return None
        refuse = bool(allowed or disallowed)  # (neither: every name is ordinary text)
    out = []
    try:
        for text in texts:
            ids = tok._plain_ids(text, refuse, not as_numpy)
            if ids is None:
                return None
            out.append(ids)
    except ValueError:  # (a byte outside the vocabulary: the general path names the text)
        return None
    if as_numpy:  # the dtype the general path gives (int32 ids are never negative: read as uint32)
        dtype = tok.id_dtype
        out = [ids.view(dtype) if dtype.itemsize == ids.itemsize else ids.astype(dtype) for ids in out]
    return out


def encode_batch(tok, texts, workers: int, allowed_special, disallowed_special, as_numpy: bool) -> list:
    texts = texts if type(texts) is list else list(texts)
    sizes = str_sizes(texts)  # (every text checked to be a str, in one compiled pass)
    allowed, disallowed = tok._special_sets(allowed_special, disallowed_special)
    tok._core()
    dtype = tok.id_dtype

    def one(k: int):
        try:
            ids = tok._encode_with_sets(texts[k], allowed, disallowed)
        except ValueError as exc:
            if type(exc) is not ValueError:
                raise
            raise ValueError(f"text {k} of the batch: {exc}") from None  # (the text it names)
        return ids.astype(dtype) if as_numpy else tok._id_list(ids)

    pattern = _fused_pattern(tok)
    fused = pattern is not None
    # (a character-level tokenizer whose text is one chunk: one compiled call a group, too)
    one_chunk = not fused and tok._text_is_one_chunk()
    names = allowed | disallowed
    in_normalized = tok._in_normalized() if one_chunk else None
    if in_normalized is not None:  # (_one_chunk_texts finds these in the normalised texts)
        names -= in_normalized.names

    def holding_names(part: slice) -> List[int]:
        """The texts of ``part`` (their indices in the batch) that hold a special token's
        name, for encode's own path; the first that holds a disallowed one raises. Searched
        group by group on the workers rather than over the batch before they start: the search
        makes each str's UTF-8 (under the GIL; encode_str_many reads it next), which then
        overlaps the other workers' encoding (100 MB of English, cl100k: 0.1 s on a first pass)."""
        if not names:  # (and no slice of the texts: see encode_str_many)
            return []
        held = texts_with_specials(texts, names, part.start, part.stop)
        if disallowed:
            for k in held:
                try:
                    special.check_disallowed(texts[k], disallowed, tok.specials.always, tok.special_tokens.keys())
                except ValueError as exc:
                    raise ValueError(f"text {k} of the batch: {exc}") from None
        return held

    def encoded(part: slice):
        """A group's encoding: the compiled call's ``(ids, ends, failed)`` and the texts that
        hold a special token's name; or, without that call, the group's result itself."""
        if not fused and not one_chunk:
            return [one(k) for k in range(part.start, part.stop)]
        exact = holding_names(part)  # (before any encoding: a disallowed name raises first)
        if one_chunk:
            return exact, tok._one_chunk_texts(texts, part.start, part.stop)
        return exact, tok._core().encode_str_many(texts, pattern, tok._state(), part.start, part.stop)

    def result(part: slice, got) -> list:
        """A group's lists (or arrays) of ids from its encoding (encoded()'s)."""
        if not fused and not one_chunk:
            return got
        exact, (ids, ends, failed) = got
        core, state = tok._core(), tok._state()
        if as_numpy:  # (ids are never negative here: int32 read as uint32 needs no copy)
            flat = ids.view(dtype) if dtype.itemsize == ids.itemsize else ids.astype(dtype)
            out = array_views(flat, ends)  # (views of one buffer)
        elif young_collection:
            out = _lists_collected(core, ids, ends, state)
        else:
            out = core.id_lists(ids, ends, state)
        # lone surrogates, bytes outside the vocabulary, special tokens: encode's own path
        redo = sorted(set(failed) | {k - part.start for k in exact})
        for k in redo:
            out[k] = one(part.start + k)
        return out

    def place(part: slice) -> None:
        results[part] = result(part, encoded(part))  # each group puts its own lists in place

    if not texts:
        return []
    chars = int(sizes.sum())
    parts = byte_balanced_groups(sizes + 1, _group_count(chars, workers) if len(texts) > 1 else 1)
    with _cycle_collector_paused() as collector_on:
        # Lists collected step by step (_lists_collected) only when they are enough to start a
        # young collection once the collector is back on: fewer are left as any new list is
        # (160 lists of 64 KB documents, 2.6 million ids: walking them took 10 of 34 ms).
        young_collection = collector_on and len(texts) >= gc.get_threshold()[0]
        if len(parts) == 1:  # (its list is the result: not copied into another, which touches every item)
            return result(parts[0], encoded(parts[0]))
        results = [None] * len(texts)
        if workers <= 1:  # (one after another on this thread)
            for part in parts:
                place(part)
            return results
        from concurrent.futures import wait as wait_for  # (the pool's borrow imported it)

        # Short texts: this thread makes the groups' lists, in order, each as soon as its
        # encoding is done, while the workers encode the groups after it. A list is made under
        # the GIL, one per text: made by the workers between their groups, they kept each
        # other waiting for it (586,000 lines of English, cl100k, two workers, wall ms: arrays
        # 95-107 -> 87-99, lists 153-165 -> 135-144). Long texts' groups are finished on their
        # worker: fewer, longer lists, and a third busy thread beside two workers shared two
        # cores three ways (texts of 4,096 characters, lists: 42-44 ms there, 48-61 here).
        here = chars < len(texts) * SHORT_TEXT_CHARS
        # Set when this thread stops early (Ctrl-C, a group's error): the groups running on the
        # workers then stop at their encoders' next poll, rather than encode to their end.
        stop = StopFlag()

        def watched(step: Callable, part: slice):
            state = tok._state()
            state.watch(stop)
            try:
                return step(part)
            finally:
                state.watch(None)

        with tok._pools.borrow(min(workers, len(parts))) as pool:
            futures = [pool.submit(watched, encoded if here else place, part) for part in parts]
            try:
                for part, future in zip(parts, futures):
                    got = future.result()  # (the first group that failed raises, in text order)
                    if here:
                        results[part] = result(part, got)
            except BaseException:
                stop.set()
                raise
            finally:
                for future in futures:
                    future.cancel()
                # (the groups already running end before the pool is given back: a call that
                # finds no other running may empty the shared chunk cache)
                wait_for(futures)
        return results
