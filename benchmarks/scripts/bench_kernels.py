"""Benchmark the embedding kernels against NumPy (and torch, when installed).

    python benchmarks/scripts/bench_kernels.py                  # table for 1 and 2 threads
    python benchmarks/scripts/bench_kernels.py --threads 2      # one thread count only
    python benchmarks/scripts/bench_kernels.py --compile-cost   # first-call cost, empty vs warm JIT cache
    python benchmarks/scripts/bench_kernels.py --big            # also all-pairs top-k of 100,000 rows (slow)
    python benchmarks/scripts/bench_kernels.py --ops gather scatter_add   # a subset of the operations

Each thread count runs in a fresh child process, because BLAS reads its thread count from the
environment at import. Times are the best of several interleaved rounds after one warm-up call (so JIT
compilation is excluded; see ``--compile-cost`` for that). Ratios are computed from the same run.

The functions ``make_inputs``, ``cases`` and ``time_call`` are importable for other harnesses
(an asv suite can wrap ``cases(make_inputs(seed))``).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO_ROOT)  # benchmark the checkout this script lives in

V, D, N_IDS, N_COS, K = 50_257, 768, 65_536, 10_000, 10


def zipf_ids(rng, vocab, n, exponent=1.0):
    """``n`` ids whose frequencies follow Zipf's law over a random ranking of ``vocab`` rows."""
    ranks = np.arange(1, vocab + 1, dtype=np.float64)
    p = ranks ** -exponent
    p /= p.sum()
    by_rank = rng.permutation(vocab)
    return by_rank[rng.choice(vocab, size=n, p=p)].astype(np.int64)


def make_inputs(seed=0, vocab=V, dim=D, n_ids=N_IDS, n_cos=N_COS, dtype=np.float32):
    """The benchmark's arrays: table ``E``, Zipf ``ids``, ``grad`` rows, cosine matrix ``A``."""
    rng = np.random.default_rng(seed)
    return {
        "E": rng.standard_normal((vocab, dim), dtype=np.float32).astype(dtype),
        "ids": zipf_ids(rng, vocab, n_ids),
        "grad": rng.standard_normal((n_ids, dim), dtype=np.float32).astype(dtype),
        "A": rng.standard_normal((n_cos, dim), dtype=np.float32).astype(dtype),
    }


def _np_normalize(A):
    norms = np.linalg.norm(A, axis=1, keepdims=True)
    norms[norms == 0] = 1
    return A / norms


def _np_topk(A, k):
    """The baseline: full matmul, argpartition, then sort the k per row."""
    An = _np_normalize(A)
    S = An @ An.T
    np.fill_diagonal(S, -np.inf)
    part = np.argpartition(-S, k, axis=1)[:, :k]
    top = np.take_along_axis(S, part, axis=1)
    order = np.argsort(-top, axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1), np.take_along_axis(top, order, axis=1)


def cases(inputs):
    """``{operation: {implementation: zero-argument callable}}`` over ``inputs``."""
    from fastbpe.embed import kernels as K_

    E, ids, grad, A = inputs["E"], inputs["ids"], inputs["grad"], inputs["A"]
    # "(out=)" rows reuse one output buffer across calls (as a training loop would), so they
    # exclude the page faults of a fresh 150-200 MB allocation that the other rows pay.
    gathered = np.empty(ids.shape + E.shape[1:], dtype=E.dtype)
    dense = np.empty_like(E)

    def add_at_into():
        dense.fill(0)
        np.add.at(dense, ids, grad)

    table = {
        "gather": {
            "fastbpe.gather": lambda: K_.gather(E, ids),
            "fastbpe.gather (out=)": lambda: K_.gather(E, ids, out=gathered),
            "numpy E[ids]": lambda: E[ids],
            "numpy take (out=)": lambda: np.take(E, ids, axis=0, out=gathered),
        },
        "scatter_add": {
            "fastbpe.scatter_add": lambda: K_.scatter_add(grad, ids, E.shape[0]),
            "fastbpe.scatter_add (out=)": lambda: K_.scatter_add(grad, ids, E.shape[0], out=dense),
            "fastbpe.scatter_add_sparse": lambda: K_.scatter_add_sparse(grad, ids),
            "numpy np.add.at": lambda: np.add.at(np.zeros_like(E), ids, grad),
            "numpy fill(0)+add.at (out=)": add_at_into,
        },
        "cosine_similarity": {
            "fastbpe.cosine_similarity": lambda: K_.cosine_similarity(A),
            "numpy normalise+matmul": lambda: (lambda An: An @ An.T)(_np_normalize(A)),
        },
        "topk_cosine": {
            "fastbpe.topk_cosine": lambda: K_.topk_cosine(A, k=K),
            "numpy matmul+argpartition": lambda: _np_topk(A, K),
        },
    }
    try:
        import torch
    except ImportError:
        return table
    tE, tids, tgrad, tA = (torch.from_numpy(x) for x in (E, ids, grad, A))
    t_gathered, t_dense = torch.from_numpy(gathered), torch.from_numpy(dense)
    table["gather"]["torch index_select"] = lambda: torch.index_select(tE, 0, tids)
    table["gather"]["torch index_select (out=)"] = (
        lambda: torch.index_select(tE, 0, tids, out=t_gathered))
    table["scatter_add"]["torch zeros+index_add_"] = (
        lambda: torch.zeros_like(tE).index_add_(0, tids, tgrad))
    table["scatter_add"]["torch zero_+index_add_ (out=)"] = (
        lambda: t_dense.zero_().index_add_(0, tids, tgrad))

    def torch_topk():
        An = torch.nn.functional.normalize(tA, dim=1)
        S = An @ An.T
        S.fill_diagonal_(-float("inf"))
        return torch.topk(S, K, dim=1)

    table["topk_cosine"]["torch matmul+topk"] = torch_topk
    return table


def time_call(fn, repeats):
    """Best wall time of ``repeats`` calls after one warm-up call (JIT, page faults)."""
    return time_interleaved({"fn": fn}, repeats)["fn"]


def time_interleaved(impls, repeats):
    """Best time of each implementation over ``repeats`` rounds, one call of each per round.

    Interleaving spreads background load evenly over the implementations being compared, and
    the minimum is the least-disturbed run, so the ratios stay meaningful on a shared machine.
    """
    for fn in impls.values():
        fn()  # warm-up: JIT compile, first-touch page faults of reused buffers
    best = {name: float("inf") for name in impls}
    for _ in range(repeats):
        for name, fn in impls.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


REPEATS = {"gather": 15, "scatter_add": 9, "cosine_similarity": 5, "topk_cosine": 3}
BASELINES = {"gather": "numpy E[ids]", "scatter_add": "numpy np.add.at",
             "cosine_similarity": "numpy normalise+matmul", "topk_cosine": "numpy matmul+argpartition"}


def topk_memory(n_queries, n_table=None, dim=D, k=K, seed=1):
    """Time and peak traced memory of ``topk_cosine(Q, T)`` (``n_table=None``: ``Q`` with
    itself), not counting the inputs themselves."""
    from fastbpe.embed import kernels as K_
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((n_queries, dim), dtype=np.float32)
    T = None if n_table is None else rng.standard_normal((n_table, dim), dtype=np.float32)
    K_.topk_cosine(Q[:100], None if T is None else T[:1000], k=k)  # compile
    tracemalloc.start()
    t0 = time.perf_counter()
    K_.topk_cosine(Q, T, k=k)
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    m = n_queries if n_table is None else n_table
    return {"n": n_queries, "m": m, "seconds": elapsed, "peak_mb": peak / 2**20,
            "inputs_mb": (n_queries + (0 if n_table is None else n_table)) * dim * 4 / 2**20,
            "full_matrix_mb": n_queries * m * 4 / 2**20}


def child(threads, big, ops=None):
    """Run the cases (all, or the operations ``ops``) with ``threads`` threads; print JSON."""
    import numba
    numba.set_num_threads(threads)
    try:
        import torch
        torch.set_num_threads(threads)
        torch_version = torch.__version__
    except ImportError:
        torch_version = None
    inputs = make_inputs(0)
    results = {}
    for op, impls in cases(inputs).items():
        if ops is None or op in ops:
            results[op] = time_interleaved(impls, REPEATS[op])
    memory = [topk_memory(100_000, 10_000)] if ops is None or "topk_cosine" in ops else []
    if big:
        memory.append(topk_memory(100_000))  # all-pairs neighbours of 100,000 rows
    print(json.dumps({"threads": threads, "results": results, "memory": memory,
                      "torch": torch_version, "loadavg": os.getloadavg()}))


def run_child(threads, big, ops=None):
    env = dict(os.environ)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[var] = str(threads)
    cmd = [sys.executable, __file__, "--child", str(threads)] + (["--big"] if big else [])
    if ops:
        cmd += ["--ops", *ops]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def print_table(runs):
    print(f"V={V} d={D} float32, {N_IDS} Zipf ids, cosine {N_COS}x{D}, top-k k={K}")
    print(f"{'operation':<18} {'implementation':<32} {'threads':>7} {'ms':>10} {'vs numpy':>9} "
          f"{'vs torch':>9}")
    for run in runs:
        for op, impls in run["results"].items():
            base = impls[BASELINES[op]]
            for name, t in impls.items():
                # Compare like with like: "(out=)" rows against the baselines' "(out=)" rows.
                reuse = name.endswith("(out=)")
                same_kind = {n: v for n, v in impls.items() if n.endswith("(out=)") == reuse}
                base = next((v for n, v in same_kind.items() if n.startswith("numpy")), base)
                torch_t = next((v for n, v in same_kind.items() if n.startswith("torch")), None)
                vs_torch = f"{torch_t / t:8.2f}x" if torch_t else "     n/a"
                print(f"{op:<18} {name:<32} {run['threads']:>7} {t * 1e3:10.1f} "
                      f"{base / t:8.2f}x {vs_torch}")
        print(f"(threads={run['threads']}: 1/5/15-min load average at the end of the run: "
              f"{', '.join(f'{x:.1f}' for x in run['loadavg'])} on {os.cpu_count()} CPUs)")
        for mem in run["memory"]:
            print(f"topk_cosine memory: n={mem['n']} m={mem['m']} threads={run['threads']}: "
                  f"{mem['seconds']:.2f} s, peak traced {mem['peak_mb']:.0f} MB, of which "
                  f"{mem['inputs_mb']:.0f} MB are the normalised copies of the inputs (the full "
                  f"score matrix alone would be {mem['full_matrix_mb']:.0f} MB)")
    print("'vs numpy'/'vs torch' = baseline time / this time (>1: this is faster); '(out=)' rows "
          "are compared with the baselines' '(out=)' rows. torch:",
          runs[0]["torch"] or "not installed")


COMPILE_PROBE = r"""
import time, numpy as np
t0 = time.perf_counter()
from fastbpe.embed import kernels as K
t_import = time.perf_counter() - t0
rng = np.random.default_rng(0)
E = rng.standard_normal((1000, 64)).astype(np.float32)
ids = rng.integers(0, 1000, 5000)
g = rng.standard_normal((5000, 64)).astype(np.float32)
out = {"import": t_import}
for name, fn in [("gather", lambda: K.gather(E, ids)),
                 ("scatter_add", lambda: K.scatter_add(g, ids, 1000)),
                 ("scatter_add_sparse", lambda: K.scatter_add_sparse(g, ids)),
                 ("cosine_similarity", lambda: K.cosine_similarity(E)),
                 ("topk_cosine", lambda: K.topk_cosine(E, k=5))]:
    t0 = time.perf_counter(); fn(); out[name] = time.perf_counter() - t0
print(out)
"""


def compile_cost():
    """First-call cost in fresh processes: empty Numba cache, then the cache just written."""
    with tempfile.TemporaryDirectory() as cache_dir:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=REPO_ROOT)
        for label in ("empty cache (compiles)", "warm cache (loads)"):
            proc = subprocess.run([sys.executable, "-c", COMPILE_PROBE], env=env,
                                  capture_output=True, text=True, check=True)
            times = eval(proc.stdout.strip().splitlines()[-1])  # a dict literal we printed
            row = ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in times.items())
            print(f"{label}: total {sum(times.values()):.2f} s; {row}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--big", action="store_true", help="all-pairs top-k of 100,000 rows too (slow)")
    parser.add_argument("--compile-cost", action="store_true")
    parser.add_argument("--ops", nargs="*", choices=list(REPEATS), help="only these operations")
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.big, args.ops)
    elif args.compile_cost:
        compile_cost()
    else:
        print_table([run_child(t, args.big, args.ops) for t in args.threads])


if __name__ == "__main__":
    main()
