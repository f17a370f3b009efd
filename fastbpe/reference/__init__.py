"""The specification: every algorithm of fastbpe in plain, readable Python.

One module per stage, with the signatures of the fast paths they specify: ``split`` (``regex``
findall), ``count`` (chunk counting), ``learning`` (merge learning, Sennrich et al. 2016),
``normalize`` (SentencePiece's normaliser) and ``encode`` (the three merge rules). Every
compiled path is tested against these; when the two disagree, the reference is right.
"""
from .._lazy import lazy_names

__all__ = ["pair_counts", "best_pair", "merge_word", "apply_merge", "learn", "encode_word", "corpus_size",
           "symbols_of", "encode_by_pair_rank", "encode_by_token_rank", "split", "count", "learning", "encode",
           "normalize"]

# Each name is imported from its module on first use (the split's reference is what the
# compiled split imports; the encoders and the learner are for tests and analyses).
_HOMES = {name: f"{module}:{name}" for module, names in [
    ("encode", ("encode_by_pair_rank", "encode_by_token_rank", "encode_word")),
    ("learning", ("apply_merge", "best_pair", "corpus_size", "learn", "merge_word", "pair_counts", "symbols_of"))]
    for name in names}
_SUBMODULES = ("count", "encode", "learning", "normalize", "split")


__getattr__, __dir__ = lazy_names(__name__, _HOMES, _SUBMODULES)
