"""fastbpe side by side with the other BPE libraries, on your machine.

    python -m benchmarks.peers                       # 10 MB of english.txt.gz, 3 repeats
    python -m benchmarks.peers --quick               # 1 MB, 1 repeat: a minute or so
    python -m benchmarks.peers --sizes 1MB,10MB,100MB --repeats 3 --threads 1
    python -m benchmarks.peers --corpus my.txt --vocab 50000

What it does, with the same settings for every library (byte-level BPE where the library has it,
GPT-2 split, ``--vocab`` tokens, ``--min-frequency``, ``--threads`` threads:
``RAYON_NUM_THREADS`` for Hugging Face, ``num_threads`` for sentencepiece, ``n_threads`` for
youtokentome, ``workers`` for fastbpe):

1. **Training** on the first ``--size`` bytes of the corpus, every library in turn (alternating,
   so drift of the machine hits all alike), ``--repeats`` times, each run in a fresh subprocess so
   that the peak RSS (``os.wait4``'s ``ru_maxrss``) is that run's alone. fastbpe reports its
   counting and merge phases apart too (``merge phase`` rows).
2. **Encoding** the same text with each trained tokenizer and with OpenAI's ranks (tiktoken; and
   fastbpe's own loader of them when this version has ``Tokenizer.from_tiktoken``), same protocol.
3. **Agreement**: the merges of fastbpe (``compat="hf"`` when that option exists) against Hugging
   Face's, and the ids of fastbpe against tiktoken's on the same ranks; stated in the tables.
4. **Languages** (``parallel_multi.tsv.gz``): encode throughput per language and the "token tax"
   (tokens per row relative to English, on rows translated into all nine languages).
5. A markdown report, the raw JSON and PNG plots in ``--out`` (default ``benchmarks/results``).

Libraries that are not installed are skipped, and say so. Install them with the ``peers`` extra
(``pip install -e ".[peers,bench]"``); youtokentome is not in the extra (it has no wheels for
recent Pythons and builds from source): ``pip install youtokentome`` if you want it.
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
from typing import Dict, List, Optional

from .suites import common

PEER_MODULES = {"hf": "tokenizers", "sentencepiece": "sentencepiece",
                "youtokentome": "youtokentome", "tiktoken": "tiktoken"}
TRAINERS = ["fastbpe", "fastbpe-hf", "hf", "hf-count", "sentencepiece", "youtokentome"]
LABELS = {
    "fastbpe": "fastbpe",
    "fastbpe-hf": 'fastbpe compat="hf"',
    "fastbpe-merge": "fastbpe merge phase only",
    "hf": "HF tokenizers",
    "hf-count": "HF tokenizers, counting only",
    "hf-merge": "HF merge phase (estimate)",
    "sentencepiece": "sentencepiece",
    "youtokentome": "youtokentome",
}
SETTINGS = {
    "fastbpe": "byte-level, GPT-2 split",
    "fastbpe-hf": "byte-level, GPT-2 split, HF tie rule",
    "fastbpe-merge": "train(counted table): merges + Tokenizer",
    "hf": "ByteLevel(GPT-2 regex) + BpeTrainer",
    "hf-count": "same, vocab 256: reads, splits, counts, no merge",
    "hf-merge": "median(HF) − median(HF counting only)",
    "sentencepiece": "model_type=bpe, byte_fallback, identity normalisation; no min-frequency",
    "youtokentome": "character-level BPE (no byte level); no min-frequency",
}


# =============================================================================================
# Children: one training or encoding run each, in a fresh process; they print one JSON line.
# =============================================================================================

def _hf_merges_as_bytes(tok) -> List[List[str]]:
    """A trained HF byte-level tokenizer's merges, as hex strings of the two tokens' bytes."""
    from fastbpe.tokenizer import bytes_to_unicode  # GPT-2's byte -> printable character map

    inverse = {c: b for b, c in bytes_to_unicode().items()}
    merges = json.loads(tok.to_str())["model"]["merges"]
    out = []
    for merge in merges:
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        out.append([bytes(inverse[c] for c in left).hex(), bytes(inverse[c] for c in right).hex()])
    return out


def _child_train(lib: str, corpus: str, vocab: int, min_frequency: int, threads: int,
                 out_dir: str) -> dict:
    result: dict = {}
    if lib in ("fastbpe", "fastbpe-hf"):
        import inspect

        fastbpe = common.fastbpe_module()
        kwargs = {}
        if lib == "fastbpe-hf":
            if "compat" not in inspect.signature(fastbpe.train).parameters:
                return {"skipped": 'train() has no compat="hf" option in this version'}
            kwargs["compat"] = "hf"
        start = time.perf_counter()
        table = fastbpe.count_words(Path(corpus), pretokenizer="gpt2", workers=threads)
        counted = time.perf_counter()
        tok = fastbpe.train(table, vocab, min_frequency=min_frequency, progress=False, **kwargs)
        end = time.perf_counter()
        result.update(seconds=end - start, count_seconds=counted - start,
                      merge_seconds=end - counted, unique_chunks=len(table),
                      fastbpe_file=fastbpe.__file__)
        merges = [[a.hex(), b.hex()] for a, b in tok.merges]
        result["vocab"] = tok.vocab_size
        tok.save(os.path.join(out_dir, f"{lib}.json"))
    elif lib in ("hf", "hf-count"):
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        if lib == "hf-count":  # the byte alphabet only: everything but the merge loop
            vocab = 256
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=min_frequency,
                                      show_progress=False, special_tokens=[],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        start = time.perf_counter()
        tok.train([corpus], trainer)
        result["seconds"] = time.perf_counter() - start
        merges = _hf_merges_as_bytes(tok)
        result["vocab"] = tok.get_vocab_size()
        if lib == "hf-count":
            return result
        tok.save(os.path.join(out_dir, "hf.json"))
    elif lib == "sentencepiece":
        import sentencepiece as spm

        start = time.perf_counter()
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=os.path.join(out_dir, "sentencepiece"), vocab_size=vocab,
            model_type="bpe", byte_fallback=True, character_coverage=1.0, num_threads=threads,
            normalization_rule_name="identity", add_dummy_prefix=False,
            remove_extra_whitespaces=False, hard_vocab_limit=False, minloglevel=2)
        result["seconds"] = time.perf_counter() - start
        model = spm.SentencePieceProcessor(model_file=os.path.join(out_dir, "sentencepiece.model"))
        result["vocab"] = model.get_piece_size()
        merges = None
    elif lib == "youtokentome":
        import youtokentome as yttm

        start = time.perf_counter()
        yttm.BPE.train(data=corpus, model=os.path.join(out_dir, "youtokentome.model"),
                       vocab_size=vocab, n_threads=threads, coverage=1.0)
        result["seconds"] = time.perf_counter() - start
        result["vocab"] = yttm.BPE(os.path.join(out_dir, "youtokentome.model")).vocab_size()
        merges = None
    else:
        raise ValueError(f"unknown trainer {lib!r}")
    if merges is not None:
        with open(os.path.join(out_dir, f"{lib}.merges.json"), "w") as f:
            json.dump(merges, f)
        result["merges"] = len(merges)
    return result


def _threads() -> int:
    return int(os.environ.get("FASTBPE_PEERS_THREADS", "1"))


def _load_encoder(spec: str, out_dir: str):
    """``encode_lines(list of str) -> list of id sequences`` for an encoder spec: a trained
    library name, or ``tiktoken:<encoding>``, ``fastbpe:<encoding>``, ``hf:gpt2``.

    Every library gets the same documents (:func:`documents`) through its own batch API when it
    has one, on ``--threads`` threads. sentencepiece and youtokentome get the documents' lines
    without the newline, as they were trained (they are sentence/line-based).
    """
    threads = _threads()
    if spec == "fastbpe":
        tok = common.fastbpe_module().Tokenizer.load(os.path.join(out_dir, "fastbpe.json"))
        return _fastbpe_lines(tok)
    if spec == "hf":
        from tokenizers import Tokenizer

        return _hf_lines(Tokenizer.from_file(os.path.join(out_dir, "hf.json")))
    if spec == "sentencepiece":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=os.path.join(out_dir, "sentencepiece.model"))
        return lambda docs: sp.encode(_lines(docs), num_threads=threads)
    if spec == "youtokentome":
        import youtokentome as yttm

        bpe = yttm.BPE(os.path.join(out_dir, "youtokentome.model"), n_threads=threads)
        return lambda docs: bpe.encode(_lines(docs))
    kind, _, name = spec.partition(":")
    if kind == "tiktoken":
        enc = common.tiktoken_encoding(name)
        if threads == 1:  # its batch API runs a thread pool even for one thread: slower
            return lambda docs: [enc.encode_ordinary(d) for d in docs]
        return lambda docs: enc.encode_ordinary_batch(docs, num_threads=threads)
    if kind == "fastbpe":
        from .suites.suite_encode import _openai_tokenizer

        return _fastbpe_lines(_openai_tokenizer(name))
    if spec == "hf:gpt2":
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers

        vocab = common.data_file("tokenizers/encoder.json")
        merges = common.data_file("tokenizers/vocab.bpe")
        if vocab is None or merges is None:
            common.skip("GPT-2's encoder.json / vocab.bpe not in the shared data")
        tok = Tokenizer(models.BPE.from_file(str(vocab), str(merges)))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.decoder = decoders.ByteLevel()
        return _hf_lines(tok)
    raise ValueError(f"unknown encoder {spec!r}")


def _lines(docs: List[str]) -> List[str]:
    return [line for doc in docs for line in doc.split("\n")]


def documents(text: str, size: int = 1 << 16) -> List[str]:
    r"""``text`` cut after a newline into pieces of at least ``size`` characters (the last may be
    shorter): what every encoder is given. Big enough that per-call overhead is small, small
    enough that no library hits a one-huge-string slow path.

    >>> documents("ab\ncd\nef", size=4)
    ['ab\ncd\n', 'ef']
    """
    docs, start = [], 0
    while start < len(text):
        cut = text.find("\n", start + size - 1)
        end = len(text) if cut < 0 else cut + 1
        docs.append(text[start:end])
        start = end
    return docs


def _hf_lines(tok):
    return lambda lines: [e.ids for e in tok.encode_batch(lines, add_special_tokens=False)]


def _fastbpe_lines(tok):
    batch = getattr(tok, "encode_batch", None)
    if batch is not None:
        return lambda lines: batch(lines, workers=_threads())
    return lambda lines: [tok.encode(line) for line in lines]


def _child_encode(spec: str, text_file: str, out_dir: str, ids_file: Optional[str]) -> dict:
    import numpy as np

    encode_lines = _load_encoder(spec, out_dir)
    with open(text_file, encoding="utf-8", newline="") as f:
        text = f.read()
    lines = documents(text)
    start = time.perf_counter()
    rows = encode_lines(lines)
    seconds = time.perf_counter() - start
    tokens = sum(len(r) for r in rows)
    if ids_file:
        flat = [np.asarray(r, dtype=np.int64) for r in rows]
        np.save(ids_file, np.concatenate(flat) if flat else np.zeros(0, dtype=np.int64))
    return {"seconds": seconds, "tokens": tokens, "bytes": len(text.encode("utf-8")),
            "documents": len(lines)}


def _child_languages(spec: str, out_dir: str, max_rows: int) -> dict:
    encode_lines = _load_encoder(spec, out_dir)
    rows = common.parallel_rows(max_rows)
    out = {}
    for lang, cells in rows.items():
        text = "\n".join(cells) + "\n"  # one row a line, cut into documents like the corpus
        docs = documents(text)
        encode_lines(docs[:1])  # warm caches and lazy initialisation before timing
        best = float("inf")
        for _ in range(3):  # best of three: these texts are small, the machine may be busy
            start = time.perf_counter()
            n = sum(len(r) for r in encode_lines(docs))
            best = min(best, time.perf_counter() - start)
        out[lang] = {"seconds": best, "tokens": n, "rows": len(cells),
                     "bytes": len(text.encode("utf-8"))}
    return out


def _peak_rss_mb() -> float:
    """This process's peak resident set since its exec (Linux ``VmHWM``).

    Not ``ru_maxrss`` of the child as the parent sees it: Linux carries the pre-exec peak over an
    exec, so every child would report at least the parent's own size.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    scale = 1024 * 1024 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def _child_agree(corpus: str, vocab: int, min_frequency: int, threads: int) -> dict:
    """Merges of HF's trainer and of fastbpe's ``compat="hf"`` on the very same documents (the
    corpus's lines, through ``train_from_iterator`` and ``iter(lines)``), compared. HF's
    ``train([file])`` reads the file its own way, so the timed runs need not agree exactly."""
    import inspect

    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    fastbpe = common.fastbpe_module()
    if "compat" not in inspect.signature(fastbpe.train).parameters:
        return {"skipped": 'train() has no compat="hf" option in this version'}
    with open(corpus, encoding="utf-8", newline="") as f:
        docs = f.read().splitlines(keepends=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.train_from_iterator(docs, trainers.BpeTrainer(
        vocab_size=vocab, min_frequency=min_frequency, show_progress=False, special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    hf = [tuple(m) for m in _hf_merges_as_bytes(tok)]
    ours = fastbpe.train(iter(docs), vocab, min_frequency=min_frequency, compat="hf",
                         progress=False, workers=threads)
    mine = [(a.hex(), b.hex()) for a, b in ours.merges]
    first = next((i for i, (x, y) in enumerate(zip(hf, mine)) if x != y), min(len(hf), len(mine)))
    return {"hf_merges": len(hf), "fastbpe_merges": len(mine), "first_difference": first,
            "identical": hf == mine}


def _child_main(argv: List[str]) -> None:
    job = json.loads(argv[0])
    try:
        if job["kind"] == "train":
            result = _child_train(job["lib"], job["corpus"], job["vocab"], job["min_frequency"],
                                  job["threads"], job["out_dir"])
        elif job["kind"] == "agree":
            result = _child_agree(job["corpus"], job["vocab"], job["min_frequency"], job["threads"])
        elif job["kind"] == "encode":
            result = _child_encode(job["spec"], job["text"], job["out_dir"], job.get("ids_file"))
        else:
            result = _child_languages(job["spec"], job["out_dir"], job["max_rows"])
    except NotImplementedError as exc:  # common.skip
        result = {"skipped": str(exc)}
    result["peak_rss_mb"] = _peak_rss_mb()
    print("RESULT " + json.dumps(result))


# =============================================================================================
# Parent: runs the children, gathers, tabulates, plots.
# =============================================================================================

CHECKOUT = [common.REPO_ROOT]  # the fastbpe source tree the children import (--checkout)


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


def _run_child(job: dict, threads: int, timeout: float) -> dict:
    """Run one job in a fresh interpreter; return its JSON plus ``peak_rss_mb`` and ``wall``."""
    env = dict(os.environ)
    env.update(RAYON_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="true" if threads > 1 else "false",
               OMP_NUM_THREADS=str(threads), NUMBA_NUM_THREADS=str(threads),
               FASTBPE_PEERS_THREADS=str(threads))
    # The checkout first (its fastbpe), then this repo (for ``benchmarks``), then the rest.
    paths = [str(CHECKOUT[0]), str(common.REPO_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        # An empty working directory: ``-m`` puts the cwd first on sys.path, and a cwd holding a
        # fastbpe tree would shadow the checkout.
        with tempfile.TemporaryDirectory(prefix="fastbpe-peers-cwd-") as cwd:
            proc = subprocess.Popen([sys.executable, "-m", "benchmarks.peers", "--child", json.dumps(job)],
                                    stdout=out, stderr=err, env=env, cwd=cwd)
            status = _wait(proc, start + timeout)
        if status is None:
            return {"error": f"timeout after {timeout:.0f} s"}
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        lines = [l for l in out.read().splitlines() if l.startswith("RESULT ")]
        if proc.returncode != 0 or not lines:
            tail = err.read().strip().splitlines()[-3:]
            return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}
    result = json.loads(lines[-1][len("RESULT "):])
    result["wall"] = wall
    return result


def _available(lib: str) -> Optional[str]:
    """None when ``lib`` can run, else why not."""
    module = PEER_MODULES.get(lib.split(":")[0])
    if module is None:
        return None
    try:
        __import__(module)
    except ImportError:
        return f"{module} is not installed"
    return None


def _summary(runs: List[dict], key: str = "seconds") -> dict:
    good = [r for r in runs if key in r]
    if not good:
        reason = next((r.get("skipped") or r.get("error") for r in runs if "skipped" in r or "error" in r), "")
        return {"ok": False, "reason": reason}
    times = [r[key] for r in good]
    return {"ok": True, "median": statistics.median(times), "min": min(times), "max": max(times),
            "rss": max(r["peak_rss_mb"] for r in good), "n": len(good), "runs": good}


def _merge_agreement(out_dir: str, a: str, b: str) -> Optional[str]:
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


def _ids_agreement(file_a: str, file_b: str) -> str:
    import numpy as np

    a, b = np.load(file_a), np.load(file_b)
    if len(a) == len(b) and (a == b).all():
        return f"identical ids ({len(a)})"
    n = min(len(a), len(b))
    first = int(np.argmax(a[:n] != b[:n])) if (a[:n] != b[:n]).any() else n
    return f"ids DIFFER ({len(a)} vs {len(b)} tokens, first difference at {first})"


def prepare_corpus(path: Optional[str], nbytes: int, work: Path) -> Path:
    """The first ``nbytes`` of the corpus (default english.txt.gz) as a plain UTF-8 file."""
    source = Path(path) if path else common.data_file("english.txt.gz")
    if source is None:
        raise SystemExit(f"english.txt.gz not found in {common.data_dir()}; pass --corpus PATH or set FASTBPE_DATA")
    text = common._read_prefix(source, nbytes)
    out = work / f"corpus_{nbytes}.txt"
    out.write_text(text, encoding="utf-8")
    return out


def _fmt_s(x: float) -> str:
    return f"{x:.3g} s" if x >= 0.1 else f"{x * 1000:.3g} ms"


def train_table(results: dict, sizes: List[int]) -> List[str]:
    lines = ["| corpus | library | settings | vocab | median | min–max | peak RSS | MB/s | time ÷ fastbpe | agreement |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for nbytes in sizes:
        rows = results["train"][str(nbytes)]
        base = rows.get("fastbpe", {})
        for lib, s in rows.items():
            label = LABELS.get(lib, lib)
            if not s["ok"]:
                lines.append(f"| {common.format_size(nbytes)} | {label} | {SETTINGS.get(lib, '')} | — | — | — | — | — | — | {s['reason']} |")
                continue
            ref = rows.get("fastbpe-merge", {}) if lib == "hf-merge" else base
            ratio = (f"{s['median'] / ref['median']:.2f}×" if ref.get("ok") and lib != "fastbpe" else "1")
            spread = f"{_fmt_s(s['min'])}–{_fmt_s(s['max'])}"
            speed = f"{nbytes / 1e6 / s['median']:.2f}"
            median = _fmt_s(s["median"])
            if lib == "hf-merge":  # a difference of two medians: no spread of its own
                spread = "—"
                ratio += " (÷ fastbpe merge phase)"
                if s["median"] <= 0:
                    median, speed, ratio = "below the noise", "—", "—"
            lines.append(
                f"| {common.format_size(nbytes)} | {label} | {SETTINGS.get(lib, '')} | {s['runs'][0].get('vocab', '?')} | {median} | "
                f"{spread} | {s['rss']:.0f} MB | {speed} | {ratio} | {s.get('agreement', '')} |")
    return lines


def encode_table(results: dict) -> List[str]:
    lines = ["| encoder | median | min–max | peak RSS | MB/s | tokens/s | bytes/token | time ÷ fastbpe | agreement |",
             "|---|---|---|---|---|---|---|---|---|"]
    rows = results["encode"]
    base = rows.get("fastbpe", {})
    for spec, s in rows.items():
        if not s["ok"]:
            lines.append(f"| {spec} | — | — | — | — | — | — | — | {s['reason']} |")
            continue
        run = s["runs"][0]
        ratio = f"{s['median'] / base['median']:.2f}×" if base.get("ok") and spec != "fastbpe" else "1"
        lines.append(
            f"| {spec} | {_fmt_s(s['median'])} | {_fmt_s(s['min'])}–{_fmt_s(s['max'])} | {s['rss']:.0f} MB | "
            f"{run['bytes'] / 1e6 / s['median']:.2f} | {run['tokens'] / s['median']:,.0f} | "
            f"{run['bytes'] / run['tokens']:.2f} | {ratio} | {s.get('agreement', '')} |")
    return lines


def language_tables(results: dict) -> List[str]:
    langs = common.LANGUAGES
    mbps = ["| encoder | " + " | ".join(langs) + " |", "|---|" + "---|" * len(langs)]
    tax = ["| encoder | " + " | ".join(langs) + " |", "|---|" + "---|" * len(langs)]
    for spec, per in results["languages"].items():
        if "skipped" in per or "error" in per:
            reason = per.get("skipped") or per.get("error")
            mbps.append(f"| {spec} | {reason} |" + " |" * (len(langs) - 1))
            continue
        en = per["en"]["tokens"]
        mbps.append(f"| {spec} | " + " | ".join(f"{per[l]['bytes'] / 1e6 / per[l]['seconds']:.2f}" for l in langs) + " |")
        tax.append(f"| {spec} | " + " | ".join(
            f"{per[l]['tokens'] / per[l]['rows']:.1f} ({per[l]['tokens'] / en:.2f}×)" for l in langs) + " |")
    return mbps, tax


def plot(results: dict, out: Path) -> List[Path]:
    """training_time.png, language_throughput.png, token_tax.png; needs matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots")
        return []
    written = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sizes = sorted(int(s) for s in results["train"])
    order = list(LABELS)
    libs = sorted({lib for s in sizes for lib in results["train"][str(s)]},
                  key=lambda l: order.index(l) if l in order else len(order))
    for lib in libs:
        xs, ys, lo, hi = [], [], [], []
        for s in sizes:
            r = results["train"][str(s)].get(lib)
            if r and r["ok"] and r["median"] > 0:
                xs.append(s / 1e6)
                ys.append(r["median"])
                estimate = lib == "hf-merge"  # a difference of medians: no spread of its own
                lo.append(0 if estimate else r["median"] - r["min"])
                hi.append(0 if estimate else r["max"] - r["median"])
        if xs:
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=LABELS.get(lib, lib),
                        linestyle="--" if "merge" in lib or lib == "hf-count" else "-")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("corpus size (MB of english.txt)" if not results["meta"].get("corpus") else "corpus size (MB)")
    ax.set_ylabel("training time (s), median and min–max")
    ax.set_title(f"BPE training, vocab {results['meta']['vocab']}, {results['meta']['threads']} thread(s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "training_time.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    per_lang = {k: v for k, v in results.get("languages", {}).items() if "en" in v}
    if per_lang:
        import numpy as np

        langs = common.LANGUAGES
        for name, metric, ylabel in (
            ("language_throughput.png", lambda r: r["bytes"] / 1e6 / r["seconds"], "encode MB/s"),
            ("token_tax.png", None, "tokens per row ÷ English's"),
        ):
            fig, ax = plt.subplots(figsize=(9, 4.5))
            width = 0.8 / len(per_lang)
            for i, (spec, per) in enumerate(per_lang.items()):
                if metric is None:
                    vals = [per[l]["tokens"] / per["en"]["tokens"] for l in langs]
                else:
                    vals = [metric(per[l]) for l in langs]
                ax.bar(np.arange(len(langs)) + i * width, vals, width, label=spec)
            ax.set_xticks(np.arange(len(langs)) + width * (len(per_lang) - 1) / 2)
            ax.set_xticklabels(langs)
            ax.set_ylabel(ylabel)
            ax.set_title(("Encode throughput" if metric else "Token tax") +
                         " per language, parallel_multi.tsv.gz (rows in all 9 languages)")
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=7, ncol=2)
            fig.tight_layout()
            path = out / name
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
    return written


def machine_info() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {"python": platform.python_version(), "fastbpe checkout": str(CHECKOUT[0])}
    from importlib import metadata

    for name in ("fastbpe", "tokenizers", "tiktoken", "sentencepiece", "youtokentome", "numpy", "numba"):
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


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        _child_main(argv[1:])
        return 0
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default=None, help="corpus size for training, e.g. 10MB (default 10MB)")
    parser.add_argument("--sizes", default=None, help="several sizes, comma-separated: 1MB,10MB,100MB")
    parser.add_argument("--encode-size", default="10MB", help="text encoded (prefix of the corpus); default 10MB")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--min-frequency", type=int, default=2)
    parser.add_argument("--corpus", default=None, help="a text file (.gz read as gzip); default english.txt.gz")
    parser.add_argument("--libs", default=",".join(TRAINERS), help="trainers to run, comma-separated")
    parser.add_argument("--big-libs", default="fastbpe,fastbpe-hf,hf",
                        help="trainers run at sizes above --big-threshold (the others take too long)")
    parser.add_argument("--big-threshold", default="20MB")
    parser.add_argument("--language-rows", type=int, default=None, help="rows of parallel_multi used (default all)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--quick", action="store_true", help="1 MB, 1 repeat, 1 MB encoded, 2000 language rows")
    parser.add_argument("--out", default=str(common.REPO_ROOT / "benchmarks" / "results"))
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--checkout", default=str(common.REPO_ROOT),
                        help="the fastbpe source tree to measure (built in place); default this one")
    args = parser.parse_args(argv)
    CHECKOUT[0] = Path(args.checkout).resolve()
    if args.quick:
        args.sizes = args.sizes or args.size or "1MB"
        args.repeats, args.encode_size = 1, "1MB"
        args.language_rows = args.language_rows or 2000
    sizes = [common.parse_size(s) for s in (args.sizes or args.size or "10MB").split(",")]
    big = common.parse_size(args.big_threshold)
    libs = [l for l in args.libs.split(",") if l]
    big_libs = set(args.big_libs.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="fastbpe-peers-"))
    results: dict = {"meta": {**machine_info(), "vocab": args.vocab, "threads": args.threads,
                              "min_frequency": args.min_frequency, "repeats": args.repeats,
                              "corpus": args.corpus, "command": "python -m benchmarks.peers " + " ".join(argv)},
                     "train": {}, "encode": {}, "languages": {}}
    print(f"# {results['meta']['cpu']}, {results['meta']['cores']} cores; load average "
          f"{' '.join(f'{x:.1f}' for x in results['meta']['load_average'])}", flush=True)
    try:
        model_dirs: Dict[str, Path] = {}  # each trainer's largest successful run
        for nbytes in sizes:
            corpus = prepare_corpus(args.corpus, nbytes, work)
            run_dir = work / f"models_{nbytes}"
            run_dir.mkdir()
            runnable, rows = [], {}
            for lib in libs:
                why = _available(lib)
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
                    r = _run_child(job, args.threads, args.timeout)
                    runs[lib].append(r)
                    shown = r.get("seconds")
                    print(f"train {common.format_size(nbytes)} {lib} run {rep + 1}: "
                          + (f"{shown:.2f} s, {r['peak_rss_mb']:.0f} MB" if shown is not None
                             else (r.get("skipped") or r.get("error"))), flush=True)
            for lib in runnable:
                rows[lib] = _summary(runs[lib])
                if lib == "fastbpe" and rows[lib]["ok"]:
                    merge = {"ok": True, "median": statistics.median(r["merge_seconds"] for r in rows[lib]["runs"]),
                             "min": min(r["merge_seconds"] for r in rows[lib]["runs"]),
                             "max": max(r["merge_seconds"] for r in rows[lib]["runs"]),
                             "rss": rows[lib]["rss"], "n": rows[lib]["n"], "runs": rows[lib]["runs"]}
                    rows["fastbpe-merge"] = merge
            if rows.get("hf", {}).get("ok") and rows.get("hf-count", {}).get("ok"):
                hf, count = rows["hf"], rows["hf-count"]
                rows["hf-merge"] = {"ok": True, "median": hf["median"] - count["median"],
                                    "min": hf["min"] - count["max"], "max": hf["max"] - count["min"],
                                    "rss": hf["rss"], "n": hf["n"], "runs": hf["runs"]}
            for lib in ("fastbpe", "fastbpe-hf"):
                if rows.get(lib, {}).get("ok") and rows.get("hf", {}).get("ok"):
                    rows[lib]["agreement"] = ("vs the timed HF run (HF reads the file its own way): "
                                              + (_merge_agreement(str(run_dir), lib, "hf") or "?"))
            if rows.get("fastbpe-hf", {}).get("ok") and _available("hf") is None:
                job = {"kind": "agree", "corpus": str(corpus), "vocab": args.vocab,
                       "min_frequency": args.min_frequency, "threads": args.threads}
                a = _run_child(job, args.threads, args.timeout)
                if "identical" in a:
                    verdict = (f"identical merges ({a['hf_merges']})" if a["identical"] else
                               f"DIFFER: first difference at merge {a['first_difference']} "
                               f"({a['hf_merges']} vs {a['fastbpe_merges']} merges)")
                    rows["fastbpe-hf"]["agreement"] = ("vs HF on the same documents (train_from_iterator): "
                                                       + verdict)
                else:
                    rows["fastbpe-hf"]["agreement"] = "agreement check failed: " + str(a.get("error") or a.get("skipped"))
                print(f"agreement {common.format_size(nbytes)}: {rows['fastbpe-hf']['agreement']}", flush=True)
            ordered = {k: rows[k] for k in list(LABELS) if k in rows}
            results["train"][str(nbytes)] = ordered
            for lib, row in rows.items():
                if row.get("ok") and lib in TRAINERS:
                    model_dirs[lib] = run_dir

        # ---- encoding ----
        enc_bytes = common.parse_size(args.encode_size)
        text_file = prepare_corpus(args.corpus, enc_bytes, work)
        specs = [l for l in ("fastbpe", "hf", "sentencepiece", "youtokentome") if l in model_dirs]
        results["meta"]["models"] = {l: d.name.split("_")[-1] for l, d in model_dirs.items()}
        any_dir = str(next(iter(model_dirs.values()), work))
        specs += ["fastbpe:r50k_base", "tiktoken:r50k_base", "hf:gpt2",
                  "fastbpe:cl100k_base", "tiktoken:cl100k_base", "tiktoken:o200k_base"]
        enc_runs: Dict[str, List[dict]] = {s: [] for s in specs}
        skipped: Dict[str, str] = {}
        for spec in specs:
            why = _available(spec)
            if why:
                skipped[spec] = why
        for rep in range(args.repeats):
            for spec in specs:
                if spec in skipped:
                    continue
                ids_file = str(work / f"ids_{spec.replace(':', '_')}.npy") if rep == 0 else None
                job = {"kind": "encode", "spec": spec, "text": str(text_file),
                       "out_dir": str(model_dirs.get(spec, any_dir)), "ids_file": ids_file}
                r = _run_child(job, args.threads, args.timeout)
                if "skipped" in r:
                    skipped[spec] = r["skipped"]
                enc_runs[spec].append(r)
                print(f"encode {common.format_size(enc_bytes)} {spec} run {rep + 1}: "
                      + (f"{r['seconds']:.2f} s, {r['tokens']} tokens" if "seconds" in r
                         else (r.get("skipped") or r.get("error"))), flush=True)
        for spec in specs:
            results["encode"][spec] = ({"ok": False, "reason": skipped[spec]} if spec in skipped
                                       else _summary(enc_runs[spec]))
        for a, b in (("fastbpe:r50k_base", "tiktoken:r50k_base"), ("hf:gpt2", "tiktoken:r50k_base"),
                     ("fastbpe:cl100k_base", "tiktoken:cl100k_base")):
            fa, fb = work / f"ids_{a.replace(':', '_')}.npy", work / f"ids_{b.replace(':', '_')}.npy"
            if fa.exists() and fb.exists() and results["encode"][a]["ok"]:
                results["encode"][a]["agreement"] = f"vs {b}: " + _ids_agreement(str(fa), str(fb))
        results["meta"]["encode_bytes"] = enc_bytes

        # ---- languages ----
        if common.data_file("parallel_multi.tsv.gz") is not None:
            for spec in specs:
                if spec in skipped:
                    results["languages"][spec] = {"skipped": skipped[spec]}
                    continue
                job = {"kind": "languages", "spec": spec, "out_dir": str(model_dirs.get(spec, any_dir)),
                       "max_rows": args.language_rows}
                r = _run_child(job, args.threads, args.timeout)
                r.pop("peak_rss_mb", None)
                r.pop("wall", None)
                results["languages"][spec] = r
                print(f"languages {spec}: " + ("done" if "en" in r else str(r)), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    report = render(results, sizes)
    print("\n" + report)
    (out / "peers.md").write_text(report + "\n", encoding="utf-8")
    (out / "peers.json").write_text(json.dumps(_strip_runs(results), indent=1), encoding="utf-8")
    if not args.no_plot:
        for path in plot(results, out):
            print(f"wrote {path}")
    print(f"wrote {out / 'peers.md'} and {out / 'peers.json'}")
    return 0


def _strip_runs(results: dict) -> dict:
    """The JSON keeps every run's numbers but not the bulky duplicates."""
    return json.loads(json.dumps(results))


def render(results: dict, sizes: List[int]) -> str:
    meta = results["meta"]
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    lines = [
        f"Machine: {meta['cpu']}, {meta['cores']} cores; load average at start "
        f"{' '.join(f'{x:.1f}' for x in meta['load_average'])}; {meta['platform']}.",
        f"Versions: {versions}; fastbpe commit {meta['commit']}.",
        f"Settings: vocab {meta['vocab']}, min frequency {meta['min_frequency']}, {meta['threads']} thread(s), "
        f"{meta['repeats']} repeat(s), each run in a fresh process, libraries alternating.",
        f"Command: `{meta['command']}`",
        "",
        "### Training (time includes reading the file; fastbpe's counting phase and merge phase are also shown apart)",
        "",
        *train_table(results, sizes),
        "",
    ]
    if results["encode"]:
        models = ", ".join(f"{lib} {common.format_size(int(n))}" for lib, n in meta.get("models", {}).items())
        lines += [f"### Encoding {common.format_size(meta.get('encode_bytes', 0))} of the corpus", "",
                  "Each library gets the same documents (the text cut after a newline every 64 KB) "
                  "through its batch API where it has one (HF `encode_batch`, fastbpe `encode_batch` "
                  "when present, else a loop; tiktoken `encode_ordinary` in a loop at 1 thread); "
                  "sentencepiece and youtokentome, being line-based, get the documents' lines. "
                  f"{meta['threads']} thread(s). "
                  f"Trained tokenizers come from each library's largest training run ({models}); "
                  "`tiktoken:*` and `hf:gpt2` are OpenAI's published ranks.", "",
                  *encode_table(results), ""]
    if results["languages"]:
        mbps, tax = language_tables(results)
        lines += ["### Encode throughput per language (MB/s), parallel_multi.tsv.gz", "", *mbps, "",
                  "### Token tax: tokens per row (and ÷ English) on the same rows", "", *tax, ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
