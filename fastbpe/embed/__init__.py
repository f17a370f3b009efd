"""Embedding kernels for the [V, d] table that token ids index, and a trainable ``Embedding``.

``kernels`` holds the public functions (Numba bodies in ``_numba``, a NumPy reference beside each
one); ``embedding`` puts them together as a table with forward, backward and a touched-rows
optimiser. Importing this package imports Numba (about a second), so ``fastbpe`` loads it lazily.
"""
from .embedding import Embedding
from .kernels import (analogy, cosine_similarity, gather, normalize_rows, scatter_add, scatter_add_sparse,
                      topk_cosine)

__all__ = ["Embedding", "gather", "scatter_add", "scatter_add_sparse", "normalize_rows", "cosine_similarity",
           "topk_cosine", "analogy"]
