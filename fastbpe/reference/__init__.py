"""The specification: every algorithm of fastbpe in plain, readable Python.

One module per stage, with the signatures of the fast paths they specify: ``split`` (``regex``
findall), ``count`` (chunk counting), ``learning`` (merge learning, Sennrich et al. 2016) and
``encode`` (the three merge rules). Every compiled path is tested against these; when the two
disagree, the reference is right.
"""
from . import count, encode, learning, split
from .encode import encode_by_pair_rank, encode_by_token_rank, encode_word
from .learning import apply_merge, best_pair, corpus_size, learn, merge_word, pair_counts, symbols_of

__all__ = ["pair_counts", "best_pair", "merge_word", "apply_merge", "learn", "encode_word", "corpus_size",
           "symbols_of", "encode_by_pair_rank", "encode_by_token_rank", "split", "count", "learning", "encode"]
