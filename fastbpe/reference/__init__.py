"""The specification: every algorithm of fastbpe in plain, readable Python.

One module per stage, with the signatures of the fast paths they specify: ``split`` (``regex``
findall), ``count`` (chunk counting), ``learning`` (merge learning, Sennrich et al. 2016) and
``encode`` (the three merge rules). Every compiled path is tested against these; when the two
disagree, the reference is right.
"""
from importlib import import_module

__all__ = ["pair_counts", "best_pair", "merge_word", "apply_merge", "learn", "encode_word", "corpus_size",
           "symbols_of", "encode_by_pair_rank", "encode_by_token_rank", "split", "count", "learning", "encode"]

# Each name is imported from its module on first use (the split's reference is what the
# compiled split imports; the encoders and the learner are for tests and analyses).
_HOMES = {"encode_by_pair_rank": "encode", "encode_by_token_rank": "encode", "encode_word": "encode",
          **{name: "learning" for name in ("apply_merge", "best_pair", "corpus_size", "learn", "merge_word",
                                           "pair_counts", "symbols_of")}}
_SUBMODULES = ("count", "encode", "learning", "split")


def __getattr__(name: str):
    if name in _SUBMODULES:
        value = import_module(f".{name}", __name__)
    elif name in _HOMES:
        value = getattr(import_module(f".{_HOMES[name]}", __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_HOMES) | set(_SUBMODULES))
