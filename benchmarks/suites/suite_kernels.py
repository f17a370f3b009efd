"""asv: the embedding kernels of ``fastbpe.kernels`` (Numba) against their NumPy references.

Each ``setup`` calls the kernel once on the very inputs it will time, so Numba's compilation
(and the choice of its serial or parallel variant) happens before timing; what compiling costs is
measured apart, in ``FirstCall``, in a fresh process with an empty Numba cache. The reference is
the package's ``<name>_reference`` when there is one, else the plain NumPy below.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

from .common import feature, fastbpe_module, skip

VOCAB, DIM = 32768, 128
DTYPE = np.float32


def _zipf_ids(rng, vocab, n):
    """Token ids with Zipf frequencies over a random ranking of the rows, as real text has."""
    weights = 1.0 / np.arange(1, vocab + 1)
    return rng.permutation(vocab)[rng.choice(vocab, size=n, p=weights / weights.sum())]


def _numpy_scatter_add(grad, ids, num_rows):
    out = np.zeros((num_rows,) + grad.shape[1:], dtype=grad.dtype)
    np.add.at(out, ids, grad)
    return out


def _numpy_scatter_add_sparse(grad, ids):
    unique, inverse = np.unique(ids, return_inverse=True)
    out = np.zeros((len(unique),) + grad.shape[1:], dtype=grad.dtype)
    np.add.at(out, inverse, grad)
    return unique, out


def _numpy_cosine(A, B=None):
    B = A if B is None else B
    An = A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-12)
    Bn = B / np.maximum(np.linalg.norm(B, axis=1, keepdims=True), 1e-12)
    return An @ Bn.T


def _numpy_topk(A, B=None, k=10):
    S = _numpy_cosine(A, B)
    idx = np.argpartition(-S, k, axis=1)[:, :k]
    top = np.take_along_axis(S, idx, axis=1)
    order = np.argsort(-top, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(top, order, axis=1)


FALLBACKS = {
    "gather": lambda E, ids: E[ids],
    "scatter_add": _numpy_scatter_add,
    "scatter_add_sparse": _numpy_scatter_add_sparse,
    "cosine_similarity": _numpy_cosine,
    "topk_cosine": _numpy_topk,
}


def kernel(name: str, impl: str):
    """The fast kernel or its reference; skips when this commit has no ``fastbpe.kernels``."""
    if feature("kernels") is None or feature(f"kernels.{name}") is None:
        skip(f"fastbpe.kernels.{name} is not in this commit")
    if impl == "fast":
        return feature(f"kernels.{name}")
    return feature(f"kernels.{name}_reference") or FALLBACKS[name]


class _KernelBench:
    """Shared shape: ``self.fn`` and ``self.args`` made in ``setup``, one warm call there."""

    def _prepare(self, name, impl, args, kwargs=None):
        self.fn = kernel(name, impl)
        self.args = args
        self.kwargs = kwargs or {}
        self.fn(*self.args, **self.kwargs)  # JIT compile and pick the variant, untimed

    def _call(self):
        return self.fn(*self.args, **self.kwargs)


class Gather(_KernelBench):
    """Embedding lookup ``E[ids]`` (V=32768, d=128, float32) over the number of ids."""

    params = (["fast", "reference"], [16384, 262144])
    param_names = ["impl", "n_ids"]

    def setup(self, impl, n_ids):
        rng = np.random.default_rng(0)
        E = rng.random((VOCAB, DIM), dtype=DTYPE) - 0.5
        self._prepare("gather", impl, (E, _zipf_ids(rng, VOCAB, n_ids)))
        self.nbytes = n_ids * DIM * E.itemsize

    def time_gather(self, impl, n_ids):
        self._call()

    def track_gather_seconds_per_gb(self, impl, n_ids):
        import time

        start = time.perf_counter()
        self._call()
        return (time.perf_counter() - start) / (self.nbytes / 1e9)

    track_gather_seconds_per_gb.unit = "s/GB"


class ScatterAdd(_KernelBench):
    """Backward of the lookup: sum gradient rows into ``(V, d)``, dense and touched-rows form."""

    params = (["fast", "reference"], ["dense", "sparse"], [16384, 262144])
    param_names = ["impl", "form", "n_ids"]

    def setup(self, impl, form, n_ids):
        rng = np.random.default_rng(1)
        grad = rng.random((n_ids, DIM), dtype=DTYPE) - 0.5
        ids = _zipf_ids(rng, VOCAB, n_ids)
        if form == "dense":
            self._prepare("scatter_add", impl, (grad, ids, VOCAB))
        else:
            self._prepare("scatter_add_sparse", impl, (grad, ids))

    def time_scatter_add(self, impl, form, n_ids):
        self._call()

    def peakmem_scatter_add(self, impl, form, n_ids):
        self._call()


class CosineSimilarity(_KernelBench):
    """All-pairs cosine similarity of ``n`` rows against ``n`` rows (d=128)."""

    params = (["fast", "reference"], [1000, 4000])
    param_names = ["impl", "n"]

    def setup(self, impl, n):
        rng = np.random.default_rng(2)
        A = rng.standard_normal((n, DIM)).astype(DTYPE)
        B = rng.standard_normal((n, DIM)).astype(DTYPE)
        self._prepare("cosine_similarity", impl, (A, B))

    def time_cosine_similarity(self, impl, n):
        self._call()


class TopkCosine(_KernelBench):
    """The 10 nearest rows (cosine) of every row of an ``n x 128`` table, against itself. The
    reference materialises the ``n x n`` matrix; the fast path tiles it."""

    params = (["fast", "reference"], [2000, 5000])
    param_names = ["impl", "n"]
    timeout = 300

    def setup(self, impl, n):
        if impl == "reference" and n > 2000:
            skip("the reference ranks a full n x n matrix: seconds and 100 MB at n=5000")
        rng = np.random.default_rng(3)
        A = rng.standard_normal((n, DIM)).astype(DTYPE)
        self._prepare("topk_cosine", impl, (A,), {"k": 10})

    def time_topk_cosine(self, impl, n):
        self._call()

    def peakmem_topk_cosine(self, impl, n):
        self._call()


_FIRST_CALL_CHILD = r"""
import sys, time
import numpy as np
t0 = time.perf_counter()
import fastbpe.kernels as K
t1 = time.perf_counter()
rng = np.random.default_rng(0)
E = rng.standard_normal((1000, 16)).astype(np.float32)
ids = rng.integers(0, 1000, size=100)
calls = {
    "gather": lambda: K.gather(E, ids),
    "scatter_add": lambda: K.scatter_add(E[ids], ids, 1000),
    "scatter_add_sparse": lambda: K.scatter_add_sparse(E[ids], ids),
    "cosine_similarity": lambda: K.cosine_similarity(E[:50], E),
    "topk_cosine": lambda: K.topk_cosine(E, k=5),
}
call = calls[sys.argv[1]]
t2 = time.perf_counter()
call()
t3 = time.perf_counter()
call()
t4 = time.perf_counter()
print(t1 - t0, t3 - t2, t4 - t3)
"""


class FirstCall:
    """What the first call of a kernel costs in a new process (Numba compiling, with an empty
    on-disk cache), and the import of ``fastbpe.kernels``. Measured inside a child process."""

    params = (["gather", "topk_cosine"],)
    param_names = ["kernel"]
    timeout = 300
    number = 1
    repeat = 1
    tiny_params = (["gather"],)  # the test suite's smoke run compiles one kernel, not five

    def setup(self, name):
        kernel(name, "fast")  # skip when absent

    def _child(self, name):
        root = os.path.dirname(os.path.dirname(os.path.abspath(fastbpe_module().__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        with tempfile.TemporaryDirectory() as cache:
            env["NUMBA_CACHE_DIR"] = cache
            out = subprocess.run([sys.executable, "-c", _FIRST_CALL_CHILD, name], env=env,
                                 capture_output=True, text=True, check=True).stdout
        return [float(x) for x in out.split()]

    def track_first_call_seconds(self, name):
        return self._child(name)[1]

    track_first_call_seconds.unit = "seconds"
