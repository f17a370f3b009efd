"""Running: the plan (train at each size, then encode, then per language), each run in a fresh
child process (``child``), libraries alternating within each repeat, the machine and its load
average recorded; then the report (``report``).
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..suites import common
from . import adapters, child, report

CHECKOUT = [common.REPO_ROOT]  # the fastbpe source tree the children import (--checkout)
# Where a run writes unless ``--out`` says otherwise: git-ignored, so a run never overwrites the
# committed results (``benchmarks/results/``); copy a run there on purpose with ``--out``.
SCRATCH = common.REPO_ROOT / "benchmarks" / "results" / "scratch"
COMMITTED = common.REPO_ROOT / "benchmarks" / "results"

# What is encoded besides each library's own trained model: OpenAI's published ranks.
PUBLISHED_ENCODERS = ["fastbpe:r50k_base", "tiktoken:r50k_base", "hf:gpt2",
                      "fastbpe:cl100k_base", "tiktoken:cl100k_base", "fastbpe:o200k_base", "tiktoken:o200k_base",
                      "fastbpe:llama3", "hf:llama3"]



def reference_of(spec: str) -> Optional[str]:
    """The encoder whose ids ``spec``'s must equal (same ranks, same split), or None for a
    reference itself and for trained models: tiktoken for OpenAI's vocabularies, HF
    ``tokenizers`` for Llama 3's ``tokenizer.json``.

    >>> reference_of("gigatoken:cl100k_base"), reference_of("hf:gpt2"), reference_of("fastbpe:llama3")
    ('tiktoken:cl100k_base', 'tiktoken:r50k_base', 'hf:llama3')
    >>> reference_of("tiktoken:o200k_base"), reference_of("hf:llama3"), reference_of("fastbpe")
    (None, None, None)
    """
    lib, _, vocabulary = spec.partition(":")
    if spec == "hf:gpt2":  # GPT-2's files: r50k_base's ranks, as a check of the harness
        return "tiktoken:r50k_base"
    if not vocabulary or lib in ("tiktoken", "hf"):
        return None
    return f"hf:{vocabulary}" if vocabulary == "llama3" else f"tiktoken:{vocabulary}"


# ---- one run in a fresh process ---------------------------------------------------------------

def _wait(proc, deadline: float):
    """The child's wait status, or None after killing it at ``deadline``."""
    while True:
        pid, status = os.waitpid(proc.pid, os.WNOHANG)
        if pid:
            return status
        if time.perf_counter() > deadline:
            proc.kill()
            os.waitpid(proc.pid, 0)
            proc.returncode = -9
            return None
        time.sleep(0.02)


def run_child(job: dict, threads: int, timeout: float) -> dict:
    """Run one job in a fresh interpreter; return its JSON plus ``peak_rss_mb``, ``wall`` and
    ``load_average`` (the machine's 1-minute load average as the run started)."""
    load = os.getloadavg()[0]
    env = dict(os.environ)
    env.update(RAYON_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="true" if threads > 1 else "false",
               OMP_NUM_THREADS=str(threads), NUMBA_NUM_THREADS=str(threads),
               FASTOKENS_BPE_THREADS=str(threads), FASTBPE_PEERS_THREADS=str(threads))
    # This repo (for ``benchmarks``), then the rest; the checkout's ``fastbpe`` comes first from the
    # working directory (below), so that a checkout's own ``benchmarks`` never shadows this one.
    paths = [str(common.REPO_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        # A working directory holding only a link to the checkout's ``fastbpe``: ``-m`` puts the
        # cwd first on sys.path, so the child imports that package and nothing else from there.
        with tempfile.TemporaryDirectory(prefix="fastbpe-peers-cwd-") as cwd:
            os.symlink(Path(CHECKOUT[0], "fastbpe").resolve(), Path(cwd, "fastbpe"), target_is_directory=True)
            proc = subprocess.Popen([sys.executable, "-m", "benchmarks.peers", "--child", json.dumps(job)],
                                    stdout=out, stderr=err, env=env, cwd=cwd)
            status = _wait(proc, start + timeout)
        if status is None:
            return {"error": f"timeout after {timeout:.0f} s", "load_average": load}
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        lines = [l for l in out.read().splitlines() if l.startswith("RESULT ")]
        if proc.returncode != 0 or not lines:
            tail = err.read().strip().splitlines()[-3:]
            return {"error": f"exit {proc.returncode}: " + " | ".join(tail), "load_average": load}
    result = json.loads(lines[-1][len("RESULT "):])
    result["wall"] = wall
    result["load_average"] = load
    for key, value in result.items():  # files the child names (fastbpe_file): not absolute
        if key.endswith("_file") and isinstance(value, str) and os.path.isabs(value):
            result[key] = portable(value)
    return result


def summary(runs: List[dict], key: str = "seconds") -> dict:
    """Median, min, max and peak RSS of the runs that have ``key``; else why none did."""
    good = [r for r in runs if key in r]
    if not good:
        reason = next((r.get("skipped") or r.get("error") for r in runs if "skipped" in r or "error" in r), "")
        return {"ok": False, "reason": reason}
    times = [r[key] for r in good]
    return {"ok": True, "median": statistics.median(times), "min": min(times), "max": max(times),
            "rss": max(r["peak_rss_mb"] for r in good), "n": len(good), "runs": good}


# ---- agreement --------------------------------------------------------------------------------

def merge_agreement(out_dir: str, a: str, b: str) -> Optional[str]:
    """How far the saved merges of trainers ``a`` and ``b`` agree; None if either has none."""
    pa, pb = Path(out_dir, f"{a}.merges.json"), Path(out_dir, f"{b}.merges.json")
    if not (pa.exists() and pb.exists()):
        return None
    ma, mb = json.loads(pa.read_text()), json.loads(pb.read_text())
    same = 0
    for x, y in zip(ma, mb):
        if x != y:
            break
        same += 1
    if same == len(ma) == len(mb):
        return f"identical merges ({same})"
    return (f"first {same} of {min(len(ma), len(mb))} merges identical; "
            f"{len(set(map(tuple, ma)) & set(map(tuple, mb)))} shared")


def ids_agreement(file_a: str, file_b: str) -> str:
    """Whether two saved id arrays are identical, else where they first differ."""
    import numpy as np

    a, b = np.load(file_a), np.load(file_b)
    if len(a) == len(b) and (a == b).all():
        return f"identical ids ({len(a)})"
    n = min(len(a), len(b))
    first = int(np.argmax(a[:n] != b[:n])) if (a[:n] != b[:n]).any() else n
    return f"ids DIFFER ({len(a)} vs {len(b)} tokens, first difference at {first})"


# ---- inputs and the machine -------------------------------------------------------------------

def portable(path) -> str:
    """``path`` relative to this repository (``../main`` for a checkout beside it): the results
    are committed, so they name no absolute path of the machine that made them."""
    try:
        return os.path.relpath(Path(path).resolve(), common.REPO_ROOT)
    except ValueError:  # another drive (Windows): no relative path
        return Path(path).name


def portable_command(argv: List[str]) -> str:
    """The command line as run, with absolute paths (``--checkout``, ``--corpus``, ``--out``)
    made :func:`portable`."""
    words = []
    for arg in argv:
        option, eq, value = arg.partition("=")
        if eq and option.startswith("--") and os.path.isabs(value):
            arg = f"{option}={portable(value)}"
        elif os.path.isabs(arg):
            arg = portable(arg)
        words.append(arg or '""')  # an empty value (--libs "") stays visible
    return " ".join(["python -m benchmarks.peers", *words])


def prepare_corpus(path: Optional[str], nbytes: int, work: Path) -> Path:
    """The first ``nbytes`` of the corpus (default english.txt.gz) as a plain UTF-8 file."""
    source = Path(path) if path else common.data_file("english.txt.gz")
    if source is None:
        raise SystemExit(f"english.txt.gz not found in {common.data_dir()}; pass --corpus PATH or set FASTBPE_DATA")
    text = common._read_prefix(source, nbytes)
    out = work / f"corpus_{nbytes}.txt"
    out.write_text(text, encoding="utf-8")
    return out


def machine_info() -> dict:
    """CPU, cores, load average now, platform, library versions, the checkout's commit."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {"python": platform.python_version(), "fastbpe checkout": portable(CHECKOUT[0])}
    from importlib import metadata

    for name in ("fastbpe", "tokenizers", "tiktoken", "sentencepiece", "youtokentome", "gigatoken", "rustbpe",
                 "fastokens", "splintr-rs", "rs_bpe", "bpe-openai", "numpy", "numba"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=CHECKOUT[0],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    return {"cpu": cpu, "cores": os.cpu_count(), "load_average": os.getloadavg(),
            "platform": platform.platform(), "versions": versions, "commit": commit}


# ---- the plan ---------------------------------------------------------------------------------

def train_size(args, nbytes: int, libs: List[str], big_libs: set, big: int, work: Path) -> Dict[str, dict]:
    """Every trainer on the first ``nbytes`` of the corpus, ``--repeats`` times, alternating;
    then the derived rows and the merge agreement. Returns row name -> summary."""
    corpus = prepare_corpus(args.corpus, nbytes, work)
    run_dir = work / f"models_{nbytes}"
    run_dir.mkdir()
    runnable, rows = [], {}
    for lib in libs:
        why = adapters.available(lib)
        if why is None and nbytes > big and lib not in big_libs:
            why = f"not run above {args.big_threshold} (--big-libs)"
        if why:
            rows[lib] = {"ok": False, "reason": why}
        else:
            runnable.append(lib)
    runs: Dict[str, List[dict]] = {lib: [] for lib in runnable}
    for rep in range(args.repeats):
        for lib in runnable:  # alternate libraries within each repeat
            job = {"kind": "train", "lib": lib, "corpus": str(corpus), "vocab": args.vocab,
                   "min_frequency": args.min_frequency, "threads": args.threads,
                   "out_dir": str(run_dir)}
            r = run_child(job, args.threads, args.timeout)
            runs[lib].append(r)
            shown = r.get("seconds")
            print(f"train {common.format_size(nbytes)} {lib} run {rep + 1}: "
                  + (f"{shown:.2f} s, {r['peak_rss_mb']:.0f} MB" if shown is not None
                     else (r.get("skipped") or r.get("error"))), flush=True)
    for lib in runnable:
        rows[lib] = summary(runs[lib])
    for adapter in adapters.ADAPTERS:
        adapter.derive(rows)
    for lib in ("fastbpe", "fastbpe-hf"):
        if rows.get(lib, {}).get("ok") and rows.get("hf", {}).get("ok"):
            rows[lib]["agreement"] = ("vs the timed HF run (HF reads the file its own way): "
                                      + (merge_agreement(str(run_dir), lib, "hf") or "?"))
    if rows.get("gigatoken", {}).get("ok") and rows.get("fastbpe-hf", {}).get("ok"):  # both HF's tie rule
        rows["gigatoken"]["agreement"] = ('vs fastbpe compat="hf" on the same file: '
                                          + (merge_agreement(str(run_dir), "gigatoken", "fastbpe-hf") or "?"))
    if rows.get("fastbpe-hf", {}).get("ok") and adapters.available("hf") is None:
        job = {"kind": "agree", "corpus": str(corpus), "vocab": args.vocab,
               "min_frequency": args.min_frequency, "threads": args.threads}
        a = run_child(job, args.threads, args.timeout)
        if "identical" in a:
            verdict = (f"identical merges ({a['hf_merges']})" if a["identical"] else
                       f"DIFFER: first difference at merge {a['first_difference']} "
                       f"({a['hf_merges']} vs {a['fastbpe_merges']} merges)")
            rows["fastbpe-hf"]["agreement"] = ("vs HF on the same documents (train_from_iterator): "
                                               + verdict)
        else:
            rows["fastbpe-hf"]["agreement"] = "agreement check failed: " + str(a.get("error") or a.get("skipped"))
        print(f"agreement {common.format_size(nbytes)}: {rows['fastbpe-hf']['agreement']}", flush=True)
    return {k: rows[k] for k in adapters.LABELS if k in rows}


def encode_all(args, results: dict, model_dirs: Dict[str, Path], work: Path) -> Tuple[List[str], Dict[str, str]]:
    """Every trained model and published vocabulary encoding the same text, ``--repeats`` times,
    alternating; ids compared where they must agree. Returns the encoders, and those skipped
    with why."""
    enc_bytes = common.parse_size(args.encode_size)
    text_file = prepare_corpus(args.corpus, enc_bytes, work)
    specs = [l for l in ("fastbpe", "hf", "sentencepiece", "youtokentome") if l in model_dirs]
    results["meta"]["models"] = {l: d.name.split("_")[-1] for l, d in model_dirs.items()}
    any_dir = str(next(iter(model_dirs.values()), work))
    for spec in args.encoders.split(","):
        for name in (reference_of(spec), spec):  # the reference first, so every check can run
            if name and name not in specs:
                specs.append(name)
    enc_runs: Dict[str, List[dict]] = {s: [] for s in specs}
    skipped: Dict[str, str] = {}
    for spec in specs:
        why = adapters.available(spec)
        if why:
            skipped[spec] = why
    for rep in range(args.repeats):
        for spec in specs:
            if spec in skipped:
                continue
            ids_file = str(work / f"ids_{spec.replace(':', '_')}.npy") if rep == 0 else None
            job = {"kind": "encode", "spec": spec, "text": str(text_file),
                   "out_dir": str(model_dirs.get(spec, any_dir)), "ids_file": ids_file}
            r = run_child(job, args.threads, args.timeout)
            if "skipped" in r:
                skipped[spec] = r["skipped"]
            enc_runs[spec].append(r)
            print(f"encode {common.format_size(enc_bytes)} {spec} run {rep + 1}: "
                  + (f"{r['seconds']:.2f} s, {r['tokens']} tokens" if "seconds" in r
                     else (r.get("skipped") or r.get("error"))), flush=True)
    for spec in specs:
        results["encode"][spec] = ({"ok": False, "reason": skipped[spec]} if spec in skipped
                                   else summary(enc_runs[spec]))
    for a in specs:  # every encoder of a published vocabulary against its reference
        b = reference_of(a)
        if b is None or not results["encode"][a]["ok"]:
            continue
        fa, fb = work / f"ids_{a.replace(':', '_')}.npy", work / f"ids_{b.replace(':', '_')}.npy"
        results["encode"][a]["agreement"] = (f"vs {b}: " + ids_agreement(str(fa), str(fb))
                                             if fa.exists() and fb.exists()
                                             else f"NOT CHECKED: {b} did not run")
    results["meta"]["encode_bytes"] = enc_bytes
    return specs, skipped


def encode_languages(args, results: dict, specs: List[str], skipped: Dict[str, str],
                     model_dirs: Dict[str, Path], work: Path) -> None:
    """Every encoder on the rows of ``parallel_multi.tsv.gz``, language by language."""
    if common.data_file("parallel_multi.tsv.gz") is None:
        return
    any_dir = str(next(iter(model_dirs.values()), work))
    for spec in specs:
        if spec in skipped:
            results["languages"][spec] = {"skipped": skipped[spec]}
            continue
        job = {"kind": "languages", "spec": spec, "out_dir": str(model_dirs.get(spec, any_dir)),
               "max_rows": args.language_rows}
        r = run_child(job, args.threads, args.timeout)
        for key in ("peak_rss_mb", "wall", "load_average"):  # keep language -> numbers only
            r.pop(key, None)
        results["languages"][spec] = r
        print(f"languages {spec}: " + ("done" if "en" in r else str(r)), flush=True)


def parse_args(argv: List[str]) -> argparse.Namespace:
    from . import __doc__ as doc

    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers", description=doc.split("\n\n")[0])
    parser.add_argument("--size", default=None, help="corpus size for training, e.g. 10MB (default 10MB)")
    parser.add_argument("--sizes", default=None, help="several sizes, comma-separated: 1MB,10MB,100MB")
    parser.add_argument("--encode-size", default="10MB", help="text encoded (prefix of the corpus); default 10MB")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--min-frequency", type=int, default=2)
    parser.add_argument("--corpus", default=None, help="a text file (.gz read as gzip); default english.txt.gz")
    parser.add_argument("--libs", default=",".join(adapters.TRAINERS),
                        help="trainers to run, comma-separated (empty: encode only)")
    parser.add_argument("--encoders", default=",".join(PUBLISHED_ENCODERS + adapters.PEER_ENCODERS),
                        help="published-vocabulary encoders, comma-separated <library>:<vocabulary> "
                             "(each one's reference, tiktoken or hf, is added to check its ids)")
    parser.add_argument("--big-libs", default="fastbpe,fastbpe-hf,hf",
                        help="trainers run at sizes above --big-threshold (the others take too long)")
    parser.add_argument("--big-threshold", default="20MB")
    parser.add_argument("--language-rows", type=int, default=None, help="rows of parallel_multi used (default all)")
    parser.add_argument("--no-languages", action="store_true", help="skip the per-language encodings")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--quick", action="store_true", help="1 MB, 1 repeat, 1 MB encoded, 2000 language rows")
    parser.add_argument("--out", default=None,
                        help="directory for peers.md, peers.json and the plots (default "
                             "benchmarks/results/scratch, git-ignored; benchmarks/results holds "
                             "the committed results)")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--checkout", default=str(common.REPO_ROOT),
                        help="the fastbpe source tree to measure (built in place); default this one")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes = args.sizes or args.size or "1MB"
        args.repeats, args.encode_size = 1, "1MB"
        args.language_rows = args.language_rows or 2000
    return args


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child.main(argv[1:])
        return 0
    args = parse_args(argv)
    CHECKOUT[0] = Path(args.checkout).resolve()
    sizes = [common.parse_size(s) for s in (args.sizes or args.size or "10MB").split(",")]
    big = common.parse_size(args.big_threshold)
    libs = [l for l in args.libs.split(",") if l]
    big_libs = set(args.big_libs.split(","))
    out = Path(args.out) if args.out else SCRATCH
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="fastbpe-peers-"))
    corpus = portable(args.corpus) if args.corpus and os.path.isabs(args.corpus) else args.corpus
    results: dict = {"meta": {**machine_info(), "vocab": args.vocab, "threads": args.threads,
                              "min_frequency": args.min_frequency, "repeats": args.repeats,
                              "corpus": corpus, "command": portable_command(argv)},
                     "train": {}, "encode": {}, "languages": {}}
    print(f"# {results['meta']['cpu']}, {results['meta']['cores']} cores; load average "
          f"{' '.join(f'{x:.1f}' for x in results['meta']['load_average'])}", flush=True)
    try:
        model_dirs: Dict[str, Path] = {}  # each trainer's largest successful run
        for nbytes in sizes if libs else []:
            rows = train_size(args, nbytes, libs, big_libs, big, work)
            results["train"][str(nbytes)] = rows
            for lib in libs:
                if rows.get(lib, {}).get("ok") and lib in adapters.TRAINERS:
                    model_dirs[lib] = work / f"models_{nbytes}"
        specs, skipped = encode_all(args, results, model_dirs, work)
        if not args.no_languages:
            encode_languages(args, results, specs, skipped, model_dirs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # The plots draw training times and per-language speeds: an encode-only run has neither.
    report.write(results, sizes, out, plots=not args.no_plot and bool(results["train"]))
    return 0
