"""Skip-gram embeddings with negative sampling on token ids: glitch tokens seen from the
embedding side.

Mikolov et al. (2013)'s objective, per (center, context) pair with ``K`` negatives drawn from
the unigram distribution raised to 3/4:

    loss = -log s(u_ctx . v_c) - sum_k log s(-u_neg_k . v_c)      (s: the logistic function)

``v`` rows live in the input table, ``u`` rows in the output table. Each batch gathers the rows
it needs (:func:`fastbpe.kernels.gather`), sums the row gradients of every position into its
row (:func:`fastbpe.kernels.scatter_add_sparse`) and updates only the touched rows (SGD or Adam,
:class:`fastbpe.Embedding`). So a token that never occurs in the embedding corpus gets exactly
zero gradient: neither a center, a context nor a negative (its sampling mass is zero), its rows
stay exactly at their initialisation. Tokens that won a merge in the tokenizer's corpus but are
rare in the model's keep near-initial rows: the under-trained "glitch" tokens (Rumbelow and
Watkins 2023; Land and Bartolo 2024 detect them in released models).

Deterministic: one seeded NumPy generator draws every sample, and the kernels are
bit-identical for any thread count.
"""
import math
import os
import time
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Sequence, Tuple

import numba
import numpy as np

from ..arguments import check_count, check_seed
from ..embed import kernels
from ..embed.embedding import Embedding

__all__ = ["skipgram", "skipgram_ids", "SkipGram", "sgns_loss_reference", "sgns_gradients",
           "sgns_gradients_reference"]

# Candidate contexts a training step lays out at most (batch_size * 2 * window): each takes a few
# int64 and bool arrays of that size, about 3 GB at this bound.
MAX_STEP_CONTEXTS = 1 << 27


def _pair_terms(h: np.ndarray, u: np.ndarray):
    """The loss of every pair and the gradients w.r.t. the gathered rows: ``h`` (P, d) center
    rows, ``u`` (P, 1 + K, d) output rows, the context first, then the K negatives.
    Returns ``(loss (P,), d_h (P, d), d_u (P, 1 + K, d))``."""
    s = np.einsum("pd,pkd->pk", h, u)                      # (P, 1 + K) scores
    z = s.copy()
    z[:, 0] = -z[:, 0]                                     # the context's term is -log s(+s), the negatives' -log s(-s)
    softplus = np.logaddexp(0, z)                          # -log s(-z), stable for large |z|
    g = np.exp(z - softplus)                               # s(z) = d softplus(z) / dz
    g[:, 0] = -g[:, 0]                                     # d loss / d score
    d_h = np.einsum("pk,pkd->pd", g, u)
    d_u = g[:, :, None] * h[:, None, :]
    return softplus.sum(axis=1), d_h.astype(h.dtype, copy=False), d_u.astype(h.dtype, copy=False)


def _softplus(z: float) -> float:
    """``log(1 + e**z)``, for any finite z (``math.exp`` alone overflows past z = 709).

    >>> _softplus(0.0) == math.log(2), _softplus(1000.0), _softplus(-1000.0)
    (True, 1000.0, 0.0)
    """
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


def _sigmoid(z: float) -> float:
    """``1 / (1 + e**-z)``, for any finite z.

    >>> _sigmoid(0.0), _sigmoid(1000.0), _sigmoid(-1000.0)
    (0.5, 1.0, 0.0)
    """
    if z >= 0:
        return 1 / (1 + math.exp(-z))
    return math.exp(z) / (1 + math.exp(z))


def sgns_loss_reference(W_in: np.ndarray, W_out: np.ndarray, centers, contexts, negatives) -> float:
    """Total skip-gram negative-sampling loss of the pairs, in plain NumPy (the specification;
    ``negatives`` has shape ``(P, K)``): ``-log s(score)`` of each context, ``-log s(-score)`` of
    each negative (``s`` the logistic sigmoid)."""
    total = 0.0
    for c, o, negs in zip(np.asarray(centers).tolist(), np.asarray(contexts).tolist(), np.asarray(negatives).tolist()):
        total += _softplus(-float(W_in[c] @ W_out[o]))
        for n in negs:
            total += _softplus(float(W_in[c] @ W_out[n]))
    return total


def sgns_gradients(W_in: np.ndarray, W_out: np.ndarray, centers, contexts, negatives):
    """The total loss of the pairs and its gradients, the way training computes them: rows
    gathered by the kernels, row gradients summed by ``scatter_add_sparse``.
    Returns ``(loss, (in_ids, in_rows), (out_ids, out_rows))`` (touched rows only)."""
    centers, contexts, negatives = (np.asarray(a, dtype=np.int64) for a in (centers, contexts, negatives))
    h = kernels.gather(W_in, centers)
    out_ids = np.concatenate([contexts[:, None], negatives], axis=1)
    loss, d_h, d_u = _pair_terms(h, kernels.gather(W_out, out_ids))
    return float(loss.sum()), kernels.scatter_add_sparse(d_h, centers), kernels.scatter_add_sparse(d_u, out_ids)


def sgns_gradients_reference(W_in, W_out, centers, contexts, negatives):
    """Dense gradients ``(d W_in, d W_out)`` of the total loss, pair by pair in plain NumPy."""
    d_in, d_out = np.zeros_like(W_in), np.zeros_like(W_out)
    for c, o, negs in zip(np.asarray(centers).tolist(), np.asarray(contexts).tolist(), np.asarray(negatives).tolist()):
        g = _sigmoid(float(W_in[c] @ W_out[o])) - 1
        d_in[c] += g * W_out[o]
        d_out[o] += g * W_in[c]
        for n in negs:
            g = _sigmoid(float(W_in[c] @ W_out[n]))
            d_in[c] += g * W_out[n]
            d_out[n] += g * W_in[c]
    return d_in, d_out


@dataclass
class SkipGram:
    """What :func:`skipgram` trained, with the measures of how far each row moved.

    ``input``/``output``: the two ``(V, d)`` tables after training; ``initial``: the input
    table as initialised; ``frequency``: occurrences of each id in the embedding corpus;
    ``losses``: ``(pairs seen, mean loss per pair)`` along training."""

    input: np.ndarray
    output: np.ndarray
    initial: np.ndarray
    frequency: np.ndarray
    losses: List[Tuple[int, float]]
    tokens: int
    pairs: int
    seconds: float
    options: dict = field(default_factory=dict)

    @property
    def tokens_per_second(self) -> float:
        """Center tokens processed per second of training (CPU time of this process)."""
        return self.tokens / max(self.seconds, 1e-12)

    @property
    def drift(self) -> np.ndarray:
        """L2 distance of every input row from its initial value (0: never updated)."""
        return np.linalg.norm((self.input - self.initial).astype(np.float64), axis=1)

    @property
    def norm(self) -> np.ndarray:
        """L2 norm of every input row."""
        return np.linalg.norm(self.input.astype(np.float64), axis=1)

    def by_frequency(self, edges: Sequence[int] = (0, 1, 10, 100, 1000, 10000)) -> List[dict]:
        """Drift and norm summarised over frequency bands ``[edges[i], edges[i+1])`` (the last
        one open): how many tokens, and the median and max of each."""
        drift, norm, rows = self.drift, self.norm, []
        bounds = list(edges) + [None]
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            mask = (self.frequency >= lo) & (True if hi is None else self.frequency < hi)
            if not mask.any():
                continue
            rows.append({"min_frequency": int(lo), "max_frequency": None if hi is None else int(hi) - 1,
                         "tokens": int(mask.sum()),
                         "median_drift": float(np.median(drift[mask])), "max_drift": float(drift[mask].max()),
                         "median_norm": float(np.median(norm[mask]))})
        return rows

    def candidates(self, k: int = 20, max_frequency: int = 0, rank=None) -> np.ndarray:
        """Ids of up to ``k`` under-trained tokens: seen at most ``max_frequency`` times in the
        embedding corpus, ordered by ``rank`` descending when given (say each token's count in
        the tokenizer's own corpus: the strings a tokenizer made tokens of most eagerly), else by
        smallest drift, then by id."""
        check_count(k, "k", 0)  # (a negative k sliced all but the last ids)
        ids = np.flatnonzero(self.frequency <= max_frequency)
        if rank is not None:
            rank = np.asarray(rank)
            if rank.shape != self.frequency.shape:
                raise ValueError(f"rank must hold one value per token ({len(self.frequency)}), got shape {rank.shape}")
            order = np.lexsort((ids, -rank[ids]))
        else:
            order = np.lexsort((ids, self.drift[ids]))
        return ids[order][:k]

    def neighbours(self, ids, k: int = 5) -> Tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest rows (cosine, :func:`fastbpe.kernels.topk_cosine`) of each id in
        ``ids``, the id itself left out: ``(indices, scores)`` of shape ``(len(ids), k)``."""
        ids = kernels._id_array(ids)
        if ids.ndim != 1:
            raise ValueError(f"ids must be one-dimensional, got shape {ids.shape}")
        kernels._check_id_range(ids, len(self.input))
        k = kernels._check_k(k, max(len(self.input) - 1, 0))  # (the id itself is no candidate)
        ids = ids.astype(np.int64)
        idx, score = kernels.topk_cosine(self.input[ids], self.input, k=k + 1)
        keep = idx != ids[:, None]
        rows = [np.flatnonzero(keep[i])[:k] for i in range(len(ids))]  # self, when found, is dropped
        return (np.stack([idx[i, r] for i, r in enumerate(rows)]) if len(ids) else idx[:, :k],
                np.stack([score[i, r] for i, r in enumerate(rows)]) if len(ids) else score[:, :k])

    def analogy(self, a, b, c, k: int = 5):
        """"a is to b as c is to ?" (3CosAdd, :func:`fastbpe.kernels.analogy`) on the input table."""
        return kernels.analogy(self.input, a, b, c, k=k)


def _unigram_table(frequency: np.ndarray, size: int = 1 << 22, power: float = 0.75) -> np.ndarray:
    """word2vec's negative-sampling table: ``size`` ids, each id holding a share of the entries
    proportional to ``frequency ** power`` (drawing a uniform entry draws an id by that law, to
    within 1/size). An id of frequency 0 holds no entry, so it is never drawn."""
    mass = np.cumsum(frequency.astype(np.float64) ** power)
    ends = np.floor(mass / mass[-1] * size).astype(np.int64)
    ends[-1] = size
    return np.repeat(np.arange(len(frequency), dtype=np.int64), np.diff(ends, prepend=0))


def _occurrences(ids: np.ndarray) -> np.ndarray:
    """How often each item's id occurs among ``ids`` (same shape).

    >>> _occurrences(np.array([[3, 1], [3, 3]])).tolist()
    [[3, 1], [3, 3]]
    """
    _, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
    return counts[inverse].reshape(ids.shape)


def skipgram_ids(
    documents: Sequence[np.ndarray],
    num_embeddings: int,
    *,
    dim: int = 64,
    window: int = 5,
    negatives: int = 5,
    epochs: int = 1,
    batch_size: int = 1024,
    optimizer: str = "adam",
    lr: Optional[float] = None,
    init_std: Optional[float] = None,
    seed: int = 0,
    dtype=np.float32,
    log_every: int = 20,
    threads: Optional[int] = None,
) -> SkipGram:
    """Train skip-gram embeddings on documents of token ids (each an int array; windows never
    cross documents). ``window``: the largest distance of a context (each center draws its own
    window in ``1..window``, as word2vec does); ``negatives``: negatives per pair; ``batch_size``:
    centers per step. ``optimizer`` ``"adam"`` (``lr`` 0.01 by default) or ``"sgd"``
    (word2vec's: ``lr`` 0.025 decaying linearly to 0; a step sums the gradients of a row's
    occurrences in the batch over the square root of their number). The input table starts at
    ``N(0, init_std)`` (default ``0.5 / dim``), the output table at zero, as in word2vec. ``threads``: Numba
    threads for the kernels during training (default: as set; 1 avoids thread start-up costs on
    a busy machine, and the results are the same for any count)."""
    if threads is not None:
        check_count(threads, "threads", 1, numba.config.NUMBA_NUM_THREADS)  # (Numba's error names no argument)
        previous = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            return skipgram_ids(documents, num_embeddings, dim=dim, window=window, negatives=negatives,
                                epochs=epochs, batch_size=batch_size, optimizer=optimizer, lr=lr,
                                init_std=init_std, seed=seed, dtype=dtype, log_every=log_every)
        finally:
            numba.set_num_threads(previous)
    for name, value in (("num_embeddings", num_embeddings), ("dim", dim), ("window", window),
                        ("negatives", negatives), ("epochs", epochs), ("batch_size", batch_size),
                        ("log_every", log_every)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if batch_size * 2 * window > MAX_STEP_CONTEXTS:
        # (a step lays out every center's 2 * window candidate positions at once)
        raise ValueError(f"window {window:,} with batch_size {batch_size:,} lays out {batch_size * 2 * window:,} "
                         f"candidate contexts a step; at most {MAX_STEP_CONTEXTS:,} (lower either)")
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam', got {optimizer!r}")
    check_seed(seed)
    documents = [np.asarray(d) for d in documents]
    for k, d in enumerate(documents):
        if d.ndim != 1 or not (np.issubdtype(d.dtype, np.integer) or d.size == 0):
            raise TypeError("every document must be a 1-D array of integer token ids")
        if d.dtype == np.uint64 and d.size and d.max() > np.iinfo(np.int64).max:  # (the int64 copy would wrap it)
            kernels._check_id_range(d, num_embeddings, f"documents[{k}]")
    ids = np.concatenate(documents).astype(np.int64) if documents else np.zeros(0, dtype=np.int64)
    kernels._check_id_range(ids, num_embeddings)
    doc = np.repeat(np.arange(len(documents)), [len(d) for d in documents])
    n = len(ids)
    if n < 2:
        raise ValueError(f"the embedding corpus has {n} tokens; skip-gram needs at least 2")
    frequency = np.bincount(ids, minlength=num_embeddings).astype(np.int64)
    table = _unigram_table(frequency)
    rng = np.random.default_rng(seed)
    std = 0.5 / dim if init_std is None else float(init_std)
    table_in = Embedding(num_embeddings, dim, dtype=dtype, seed=seed, init_std=std, optimizer=optimizer,
                         lr=0.025 if lr is None and optimizer == "sgd" else (0.01 if lr is None else lr))
    table_out = Embedding(num_embeddings, dim, weight=np.zeros((num_embeddings, dim), dtype=dtype),
                          optimizer=optimizer, lr=table_in.lr)
    initial = table_in.weight.copy()
    base_lr = table_in.lr
    offsets = np.concatenate([np.arange(-window, 0), np.arange(1, window + 1)])
    steps_per_epoch = -(-n // batch_size)
    total_steps = steps_per_epoch * epochs
    losses: List[Tuple[int, float]] = []
    pairs_seen, loss_sum, loss_pairs, step = 0, 0.0, 0, 0
    started = time.process_time()
    for _ in range(epochs):
        order = rng.permutation(n)
        for begin in range(0, n, batch_size):
            centers = order[begin:begin + batch_size]
            reach = rng.integers(1, window + 1, size=len(centers))  # word2vec's shrunk window
            where = centers[:, None] + offsets[None, :]
            ok = (np.abs(offsets)[None, :] <= reach[:, None]) & (where >= 0) & (where < n)
            ok[ok] = doc[where[ok]] == np.broadcast_to(doc[centers][:, None], where.shape)[ok]
            center_pos = np.broadcast_to(centers[:, None], where.shape)[ok]
            c_ids, o_ids = ids[center_pos], ids[where[ok]]
            step += 1
            if not len(c_ids):
                continue
            out_ids = np.empty((len(c_ids), 1 + negatives), dtype=np.int64)
            out_ids[:, 0] = o_ids
            out_ids[:, 1:] = table[rng.integers(0, len(table), size=(len(c_ids), negatives))]
            with np.errstate(over="ignore", invalid="ignore"):  # (told below, once, as a divergence)
                loss, d_h, d_u = _pair_terms(table_in.forward(c_ids), table_out.forward(out_ids))
                total = float(loss.sum())
            if not math.isfinite(total):  # the rows overflowed: every later step would be NaN
                raise ValueError(f"training diverged at step {step} (the loss is {total}): lower lr "
                                 f"(it is {base_lr:g})")
            if optimizer == "sgd":
                # word2vec steps pair by pair; a step here sums a batch's pairs, so a row met m
                # times in it (a frequent token: hundreds of times as a negative) moved m steps
                # at once and diverged at the defaults (1 MB of English, GPT-2: at step 20). A
                # row takes that sum over sqrt(m): stable there, and the loss fell further (2.81
                # after one pass) than with the mean (4.15), which starves the frequent rows.
                d_h /= np.sqrt(_occurrences(c_ids))[:, None]
                d_u /= np.sqrt(_occurrences(out_ids))[..., None]
            table_in.backward(d_h, c_ids)
            table_out.backward(d_u)
            if optimizer == "sgd":
                table_in.lr = table_out.lr = base_lr * max(1e-4, 1 - (step - 1) / total_steps)
            table_in.step()
            table_out.step()
            pairs_seen += len(c_ids)
            loss_sum += total
            loss_pairs += len(c_ids)
            if step % log_every == 0 or step == total_steps:
                losses.append((pairs_seen, loss_sum / loss_pairs))
                loss_sum, loss_pairs = 0.0, 0
    if loss_pairs:
        losses.append((pairs_seen, loss_sum / loss_pairs))
    seconds = time.process_time() - started
    return SkipGram(input=table_in.weight, output=table_out.weight, initial=initial, frequency=frequency,
                    losses=losses, tokens=n * epochs, pairs=pairs_seen, seconds=seconds,
                    options=dict(dim=dim, window=window, negatives=negatives, epochs=epochs, batch_size=batch_size,
                                 optimizer=optimizer, lr=base_lr, init_std=std, seed=seed,
                                 dtype=np.dtype(dtype).name))


def skipgram(tokenizer, texts: Iterable[str], **options) -> SkipGram:
    """Skip-gram embeddings (:func:`skipgram_ids`' options) for ``tokenizer``'s vocabulary, on
    the documents ``texts`` encoded by it (special-token text as ordinary text). One row per id
    of the tokenizer, special tokens included.

    >>> import fastbpe
    >>> tok = fastbpe.train(text="def f(x): return x + 1 " * 20, vocab_size=270, progress=False)
    >>> emb = skipgram(tok, ["the cat sat on the mat"] * 20, dim=8, seed=1)
    >>> int(emb.frequency[tok.encode(" return")[0]]), float(emb.drift[tok.encode(" return")[0]])
    (0, 0.0)
    """
    if isinstance(texts, (str, bytes)):  # (its characters would be documents of a token or so each)
        raise TypeError("texts must be an iterable of documents (str), not one str: pass [text]")
    texts = list(texts)
    if any(not isinstance(t, str) for t in texts):
        raise TypeError("texts must be strings (the documents of the embedding corpus)")
    documents = tokenizer.encode_batch(texts, workers=min(len(texts), os.cpu_count() or 1) or 1,
                                       disallowed_special=(), as_numpy=True)
    size = max([len(tokenizer.token_bytes) - 1, *tokenizer.special_tokens.values()]) + 1
    return skipgram_ids(documents, size, **options)
