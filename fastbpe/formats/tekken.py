"""Mistral's tekken files (``tekken.json``, read by mistral_common's ``Tekkenizer``).

A tekken file is a tiktoken rank table written as JSON: ``config`` holds the split ``pattern``,
``default_vocab_size`` and ``default_num_special_tokens``; ``vocab`` lists ``{"rank",
"token_bytes" (base64), "token_str"}`` in rank order, and newer files list their
``special_tokens`` (``{"rank", "token_str", "is_control"}``). The special tokens take the first
``default_num_special_tokens`` ids: those a file lists, then ``<SPECIAL_k>`` up to the count
(a file of versions 1 to 7 without the list has twenty of mistral_common's names). The first
``default_vocab_size - default_num_special_tokens`` ranked tokens take the ids after them, as
tiktoken's rule encodes them. So a loaded file's ``encode_ordinary`` gives ``Tekkenizer``'s
``encode(text, bos=False, eos=False)`` (which encodes special-token text as text), and its
special tokens encode to their ids where allowed.

>>> import base64
>>> vocab = [{"rank": b, "token_bytes": base64.b64encode(bytes([b])).decode(), "token_str": None}
...          for b in range(256)]
>>> data = {"config": {"pattern": r"\\S+|\\s+", "default_vocab_size": 259, "default_num_special_tokens": 3},
...         "vocab": vocab, "special_tokens": [{"rank": 0, "token_str": "<unk>"}, {"rank": 1, "token_str": "<s>"}]}
>>> spec = read_dict(data, "t.json")
>>> spec["special_tokens"], spec["tokens"][3], len(spec["tokens"])
({'<unk>': 0, '<s>': 1, '<SPECIAL_2>': 2}, b'\\x00', 259)
"""
import base64
import binascii
from typing import List, Mapping

import numpy as np

from ..fileio import json_field
from ..split.patterns import check_user_pattern
from .tiktoken import spec_from_table

__all__ = ["is_tekken", "read_dict"]

# The special tokens of a file that does not list its own (mistral_common's
# DEPRECATED_SPECIAL_TOKENS: versions 1 to 7), ids 0 to 19.
OLD_SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                      "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
                      "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
                      "[TOOL_CONTENT]")
OLD_VERSIONS = (None, "v1", "v2", "v3", "v7")
FILLER = "<SPECIAL_{}>"  # the special tokens a file neither lists nor names


def is_tekken(data) -> bool:
    """Whether parsed JSON is a tekken file: a ``config`` with a special-token count, a list ``vocab``."""
    return (isinstance(data, Mapping) and isinstance(data.get("config"), Mapping)
            and "default_num_special_tokens" in data["config"] and isinstance(data.get("vocab"), list))


def read_dict(data: Mapping, source: str) -> dict:
    """The Tokenizer keyword arguments of a parsed tekken file (the module docstring says how
    it is read); ValueError naming ``source`` for a file that does not hold together."""
    config = data["config"]
    pattern = json_field(config, "pattern", (str,), source=source)
    specials = json_field(config, "default_num_special_tokens", (int,), source=source)
    size = json_field(config, "default_vocab_size", (int,), source=source)
    version = config.get("version")
    vocab = data["vocab"]
    if not 0 <= specials < size <= specials + len(vocab):
        raise ValueError(f"{source}: default_vocab_size {size} must lie above default_num_special_tokens "
                         f"({specials}, at least 0) and at most that plus the {len(vocab)} ranked tokens the file "
                         "holds")
    try:
        check_user_pattern(pattern)
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None
    tokens = _ranked_tokens(vocab[:size - specials], source)  # (a file holds more; the model uses these)
    names = _special_names(data.get("special_tokens"), version, specials, source)
    return spec_from_table(tokens, np.arange(specials, specials + len(tokens), dtype=np.int64), pattern,
                           {name: k for k, name in enumerate(names)}, source)


def _ranked_tokens(entries: list, source: str) -> List[bytes]:
    """The bytes of each entry ``{"rank": k, "token_bytes": base64}`` of ``vocab``, entry k
    ranked k."""
    tokens = []
    for k, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or entry.get("rank") != k or not isinstance(entry.get("token_bytes"), str):
            raise ValueError(f"{source}: vocab entry {k} is not {{\"rank\": {k}, \"token_bytes\": base64}}: "
                             f"{entry!r:.80}")
        try:
            token = base64.b64decode(entry["token_bytes"], validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{source}: vocab entry {k}'s token_bytes is not base64: {entry['token_bytes']!r:.60}") \
                from None
        if not token:
            raise ValueError(f"{source}: vocab entry {k} is an empty token")
        tokens.append(token)
    return tokens


def _special_names(listed, version, count: int, source: str) -> List[str]:
    """The texts of the special tokens, id by id: those listed (or the old names), then fillers."""
    if listed is None:
        if version not in OLD_VERSIONS:
            raise ValueError(f"{source}: a tekken file of version {version!r} lists its special_tokens; "
                             "this one has none")
        names = list(OLD_SPECIAL_TOKENS)
    else:
        if not isinstance(listed, list):
            raise ValueError(f"{source}: special_tokens must be a list, got {listed!r:.60}")
        names = []
        for k, entry in enumerate(listed):
            if not isinstance(entry, Mapping) or entry.get("rank") != k or not isinstance(entry.get("token_str"), str):
                raise ValueError(f"{source}: special token {k} is not {{\"rank\": {k}, \"token_str\": str}}: "
                                 f"{entry!r:.80}")
            names.append(entry["token_str"])
    if len(names) > count:
        raise ValueError(f"{source}: {len(names)} special tokens, default_num_special_tokens is {count}")
    names += [FILLER.format(k) for k in range(len(names), count)]
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{source}: special token {name!r} is listed twice")
        seen.add(name)
    return names
