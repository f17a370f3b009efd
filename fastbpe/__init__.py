"""fastbpe: byte-pair-encoding tokenizers trained and used at corpus scale on CPU."""
from . import reference

__version__ = "0.1.0"
__all__ = ["reference"]
from . import kernels
from .kernels import (gather, scatter_add, scatter_add_sparse, normalize_rows, cosine_similarity,
                      topk_cosine, analogy)
from .embedding import Embedding
__all__ += ["kernels", "gather", "scatter_add", "scatter_add_sparse", "normalize_rows",
            "cosine_similarity", "topk_cosine", "analogy", "Embedding"]
