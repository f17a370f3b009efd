"""A small trainable embedding table: gather forward, sparse backward, touched-rows optimiser.

The table ``weight`` (``V x d``) is indexed by token ids. :meth:`Embedding.forward` gathers rows,
:meth:`Embedding.backward` turns the gradient of those rows into a per-row gradient (sparse: only
the rows used), and :meth:`Embedding.step` applies SGD or Adam to the touched rows only, so a step
costs O(touched rows x d), not O(V x d). :meth:`Embedding.logits` is the tied output layer
``h @ weight.T``; its backward (:meth:`Embedding.logits_backward`) touches every row.

All arithmetic runs in the table's dtype (float32 or float64) and is deterministic: the kernels
of :mod:`fastbpe.embed.kernels` give bit-identical results for any thread count.
"""
from typing import List, Optional, Tuple, Union

import numpy as np

from ..arguments import check_count, check_seed
from . import kernels

__all__ = ["Embedding"]

SparseGrad = Tuple[np.ndarray, np.ndarray]


class Embedding:
    """A ``(num_embeddings, dim)`` table trained with sparse gradients.

    ``optimizer`` is ``"sgd"`` (``w -= lr * g``) or ``"adam"``. Adam keeps two moment tables and
    updates, at each step, only the rows that received gradient (like ``torch.optim.SparseAdam``:
    the bias correction uses the global step count and untouched rows' moments do not decay).

    >>> emb = Embedding(4, 2, weight=np.zeros((4, 2), dtype=np.float32), lr=0.5)
    >>> h = emb.forward([1, 3, 1])
    >>> u, rows = emb.backward(np.ones((3, 2), dtype=np.float32))
    >>> u.tolist(), rows.tolist()
    ([1, 3], [[2.0, 2.0], [1.0, 1.0]])
    >>> emb.step().tolist()
    [1, 3]
    >>> emb.weight[:, 0].tolist()
    [0.0, -1.0, 0.0, -0.5]
    """

    def __init__(self, num_embeddings: int, dim: int, *, dtype=np.float32,
                 weight: Optional[np.ndarray] = None, seed: Optional[int] = 0,
                 init_std: float = 0.02, optimizer: str = "sgd", lr: float = 0.01,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        if optimizer not in ("sgd", "adam"):
            raise ValueError(f"optimizer must be 'sgd' or 'adam', got {optimizer!r}")
        if len(betas) != 2:
            raise ValueError(f"betas must be two numbers (Adam's beta1, beta2), got {betas!r}")
        if weight is None:
            if not (np.isfinite(init_std) and init_std >= 0):
                raise ValueError(f"init_std must be finite and >= 0, got {init_std}")
            dtype = np.dtype(dtype)
            if dtype not in kernels.FLOAT_DTYPES:
                raise TypeError(f"dtype must be float32 or float64, got {dtype}")
            check_count(num_embeddings, "num_embeddings", 0)
            check_count(dim, "dim", 0)
            check_seed(seed)
            rng = np.random.default_rng(seed)
            weight = (rng.standard_normal((num_embeddings, dim)) * init_std).astype(dtype)
        else:
            if not isinstance(weight, np.ndarray) or weight.dtype not in kernels.FLOAT_DTYPES:
                raise TypeError("weight must be a float32 or float64 ndarray")
            if weight.shape != (num_embeddings, dim):
                raise ValueError(f"weight has shape {weight.shape}, expected "
                                 f"{(num_embeddings, dim)}")
            weight = np.array(weight, order="C", copy=True)  # the table owns its memory
        self.weight = weight
        self._optimizer = optimizer
        self.lr = float(lr)
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps = float(eps)
        self._check_settings()
        self.step_count = 0
        self._m = self._v = None
        if optimizer == "adam":
            self._m = np.zeros_like(weight)
            self._v = np.zeros_like(weight)
        self._last_ids: Optional[np.ndarray] = None
        self._sparse: List[SparseGrad] = []
        self._dense: Optional[np.ndarray] = None

    @property
    def optimizer(self) -> str:
        """``"sgd"`` or ``"adam"``, chosen when the table is made (Adam's moment tables are
        made with it): read-only."""
        return self._optimizer

    @property
    def num_embeddings(self) -> int:
        return self.weight.shape[0]

    @property
    def dim(self) -> int:
        return self.weight.shape[1]

    # --- forward / backward ----------------------------------------------------------------

    def forward(self, ids) -> np.ndarray:
        """``weight[ids]`` (shape ``ids.shape + (dim,)``); remembers ``ids`` for :meth:`backward`."""
        out = kernels.gather(self.weight, ids)
        self._last_ids = kernels._id_array(ids).copy()  # (as gather took them: [] is int64)
        return out

    __call__ = forward

    def backward(self, grad, ids=None, *, dense: bool = False
                 ) -> Union[SparseGrad, np.ndarray]:
        """Accumulate the weight gradient of ``forward(ids)`` given ``grad`` (its output gradient).

        ``ids`` defaults to those of the last :meth:`forward`. Returns the gradient of this call:
        ``(unique_ids, rows)`` (sparse, default) or the dense ``(V, dim)`` array when ``dense``.
        Either way it is also added to the pending gradient that :meth:`step` applies.
        """
        if ids is None:
            if self._last_ids is None:
                raise RuntimeError("backward() without ids needs a forward() first")
            ids = self._last_ids
        grad = np.asarray(grad)
        if grad.dtype != self.weight.dtype:
            raise TypeError(f"grad has dtype {grad.dtype}, the table is {self.weight.dtype}")
        ids_arr = kernels._id_array(ids)
        kernels._check_id_range(ids_arr, self.num_embeddings)
        if grad.shape != ids_arr.shape + (self.dim,):
            raise ValueError(f"grad must have shape ids.shape + (dim,) = {ids_arr.shape + (self.dim,)}, "
                             f"got {grad.shape}")
        unique_ids, rows = kernels.scatter_add_sparse(grad, ids_arr)
        self._sparse.append((unique_ids, rows))
        if dense:
            full = np.zeros_like(self.weight)
            full[unique_ids] = rows  # same sums as kernels.scatter_add, bit for bit
            return full
        return unique_ids, rows

    def logits(self, h) -> np.ndarray:
        """Tied output layer: ``h @ weight.T`` (shape ``h.shape[:-1] + (V,)``)."""
        h = np.asarray(h)
        if h.dtype != self.weight.dtype:
            raise TypeError(f"h has dtype {h.dtype}, the table is {self.weight.dtype}")
        if h.shape[-1:] != (self.dim,):
            raise ValueError(f"h's last axis must be dim={self.dim}, got shape {h.shape}")
        return h @ self.weight.T

    def logits_backward(self, h, grad_logits) -> np.ndarray:
        """Backward of :meth:`logits`: returns ``grad_h = grad_logits @ weight`` and adds
        ``grad_logits^T h`` (every row) to the pending weight gradient."""
        h = np.asarray(h)
        grad_logits = np.asarray(grad_logits)
        if h.dtype != self.weight.dtype or grad_logits.dtype != self.weight.dtype:
            raise TypeError(f"h and grad_logits must be {self.weight.dtype}")
        if h.shape[-1:] != (self.dim,) or grad_logits.shape != h.shape[:-1] + (self.num_embeddings,):
            raise ValueError(f"expected h (..., {self.dim}) and grad_logits (..., "
                             f"{self.num_embeddings}) with the same leading shape, got "
                             f"{h.shape} and {grad_logits.shape}")
        # (the leading axes as one, counted: reshape(-1, 0) cannot tell how many rows a
        # zero-sized table's arrays hold)
        leading = int(np.prod(h.shape[:-1], dtype=np.int64))
        g2 = grad_logits.reshape(leading, self.num_embeddings)
        h2 = h.reshape(leading, self.dim)
        if self._dense is None:
            self._dense = np.zeros_like(self.weight)
        self._dense += g2.T @ h2
        return grad_logits @ self.weight

    # --- optimiser -------------------------------------------------------------------------

    def pending_gradient(self) -> SparseGrad:
        """The accumulated gradient as ``(row_ids, rows)``, without clearing it.

        Sparse pieces are merged with :func:`fastbpe.kernels.scatter_add_sparse` (in the order
        they were accumulated); if :meth:`logits_backward` ran, every row is touched.
        """
        if self._dense is not None:
            total = self._dense.copy()
            for unique_ids, rows in self._sparse:
                total[unique_ids] += rows
            return np.arange(len(total), dtype=np.int64), total  # (the rows of the table it was made for)
        if not self._sparse:
            return np.empty(0, dtype=np.int64), np.empty((0, self.dim), dtype=self.weight.dtype)
        if len(self._sparse) == 1:
            return self._sparse[0]
        all_ids = np.concatenate([u for u, _ in self._sparse])
        all_rows = np.concatenate([r for _, r in self._sparse])
        return kernels.scatter_add_sparse(all_rows, all_ids)

    def zero_grad(self) -> None:
        """Drop the pending gradient."""
        self._sparse = []
        self._dense = None

    def step(self) -> np.ndarray:
        """Apply the optimiser to the rows with pending gradient, clear it, return those rows.

        ``weight`` may have been replaced since :meth:`backward` (by an array of its dtype,
        C-contiguous and writeable); a pending gradient that does not fit the current table (a
        row it no longer has, another width, Adam moments of another shape) is a ValueError
        and stays pending."""
        touched, rows = self.pending_gradient()
        self._check_step(touched, rows)
        if self._optimizer == "sgd":
            kernels.sgd_rows(self.weight, touched, rows, self.lr)
        else:
            kernels.adam_rows(self.weight, self._m, self._v, touched, rows, self.lr,
                              self.betas[0], self.betas[1], self.eps, self.step_count + 1)
        # (counted and cleared once applied: a step refused leaves both as they were)
        self.zero_grad()
        self.step_count += 1
        return touched

    def _check_settings(self) -> None:
        """The optimiser's settings (Adam's betas and eps only for Adam, which reads them)."""
        if self._optimizer == "adam":
            kernels._check_optimizer_settings(self.lr, *self.betas, self.eps, dtype=self.weight.dtype)
        else:
            kernels._check_optimizer_settings(self.lr, dtype=self.weight.dtype)

    def _check_step(self, touched: np.ndarray, rows: np.ndarray) -> None:
        """Refuse a step whose gradient was computed for another table than ``weight``."""
        weight = self.weight
        if not isinstance(weight, np.ndarray) or weight.dtype not in kernels.FLOAT_DTYPES \
                or weight.ndim != 2:
            raise TypeError("weight must be a 2-D float32 or float64 ndarray")
        if not weight.flags.c_contiguous or not weight.flags.writeable:
            raise ValueError("weight is updated in place: it must be a writeable C-contiguous array")
        if rows.dtype != weight.dtype:
            raise TypeError(f"the pending gradient is {rows.dtype}, weight is {weight.dtype}")
        if rows.shape[1:] != (weight.shape[1],):
            raise ValueError(f"the pending gradient has rows of width {rows.shape[1]}, weight "
                             f"{weight.shape[1]}: was weight replaced after backward()?")
        if touched.size and int(touched.max()) >= weight.shape[0]:
            raise ValueError(f"the pending gradient touches row {int(touched.max())}, weight has "
                             f"{weight.shape[0]} rows: was weight replaced after backward()?")
        self._check_settings()  # (they are attributes: changed since __init__, checked again)
        if self._optimizer == "adam" and (self._m.shape != weight.shape or self._m.dtype != weight.dtype):
            raise ValueError(f"the Adam moments are {self._m.dtype} {self._m.shape}, weight is "
                             f"{weight.dtype} {weight.shape}: replace weight only by an array like it")
