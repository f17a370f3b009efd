"""Token ids read from files: what every reader accepts, checked before it allocates by them.

A reader builds the table of token bytes with one slot per id up to the largest one, so the
largest id decides the memory it takes, whatever the size of the file. Files may leave some
ids unused (a ``.tiktoken`` file's rank gaps; a Hugging Face vocabulary whose added tokens sit
among its ids), but only a few: the largest id of a mergeable token must be below

    number of mergeable entries + number of special tokens + GAP_SLACK (1024)

or the file is refused with a ValueError before the table exists, so a 2 KB file naming rank
100,000,000 costs nothing. (OpenAI's and Hugging Face's published files have no gap at all,
or one id.) Special tokens take no slot; their ids need only fit the encoder's 32-bit ids.

Every id is an int (not a bool, not a float: a JSON ``1000.7`` is an error, not id 1000) in
``0 <= id < 2**31``.
"""
from typing import Mapping

__all__ = ["GAP_SLACK", "ID_LIMIT", "check_id", "check_vocab_ids", "check_special_ids", "table_size"]

GAP_SLACK = 1024
ID_LIMIT = 2**31  # ids are int32 in the compiled encoder and in encode()'s arrays


def check_id(value, what: str) -> int:
    """``value`` as an id; ValueError naming ``what`` unless it is an int in ``[0, 2**31)``.

    >>> check_id(5, "rank of 'a'")
    5
    >>> check_id(1000.7, "special token '<a>'")
    Traceback (most recent call last):
    ...
    ValueError: special token '<a>' has an invalid id 1000.7: ids are ints from 0 to 2147483647
    """
    if isinstance(value, bool) or not hasattr(value, "__index__") or not 0 <= value < ID_LIMIT:
        raise ValueError(f"{what} has an invalid id {value!r}: ids are ints from 0 to {ID_LIMIT - 1}")
    return int(value)


def check_vocab_ids(vocab: Mapping, source: str) -> None:
    """Every id of a ``{text: id}`` vocabulary valid (:func:`check_id`): checked in bulk, then,
    where that fails, entry by entry, the first bad one a ValueError naming it.

    >>> check_vocab_ids({"a": 0, "b": -1}, "f")
    Traceback (most recent call last):
    ...
    ValueError: f: vocab entry 'b' has an invalid id -1: ids are ints from 0 to 2147483647
    """
    ids = vocab.values()
    if set(map(type, ids)) <= {int} and (not ids or (min(ids) >= 0 and max(ids) < ID_LIMIT)):
        return
    for text, i in vocab.items():
        check_id(i, f"{source}: vocab entry {text!r}")


def check_special_ids(specials: Mapping, source: str) -> dict:
    """``{text: id}`` with every text a non-empty str and every id valid and distinct."""
    if not isinstance(specials, Mapping):
        raise ValueError(f"{source}: special tokens must map their text to ids, got {type(specials).__name__}")
    out = {}
    owner = {}
    for text, value in specials.items():
        if not isinstance(text, str) or not text:
            raise ValueError(f"{source}: special token {text!r} must be a non-empty str")
        i = check_id(value, f"{source}: special token {text!r}")
        if i in owner:
            raise ValueError(f"{source}: special tokens {owner[i]!r} and {text!r} share the id {i}")
        owner[i] = text
        out[text] = i
    return out


def table_size(max_id: int, entries: int, specials: int, source: str) -> int:
    """The number of slots (``max_id + 1``) of a table of ``entries`` mergeable tokens, or a
    ValueError when its ids leave more than ``specials + GAP_SLACK`` slots unused.

    >>> table_size(299, 300, 2, "f")
    300
    >>> table_size(100_000_000, 300, 0, "f")
    Traceback (most recent call last):
    ...
    ValueError: f: the largest token id is 100000000 for 300 tokens; ids may leave at most 1024 unused (plus one per special token)
    """
    if max_id >= entries + specials + GAP_SLACK:
        raise ValueError(f"{source}: the largest token id is {max_id} for {entries} tokens; ids may leave at "
                         f"most {GAP_SLACK} unused (plus one per special token)")
    return max_id + 1
