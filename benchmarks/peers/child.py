"""What runs inside each fresh child process: one job (a training, an encoding, the per-language
encodings, or the merge-agreement check), whose result is printed as one line,
``RESULT {json}``, with the child's own peak RSS added.

The parent (``run``) starts ``python -m benchmarks.peers --child JSON`` with the thread count in
the environment (``FASTBPE_PEERS_THREADS`` and each library's own variable).
"""
import json
import os
import sys
from pathlib import Path
from typing import List, Optional

from ..suites import common
from . import adapters
from .adapters.fastbpe import NO_COMPAT, has_compat
from .adapters.hf import bpe_trainer, byte_level_bpe, merges_as_hex


def threads() -> int:
    """The thread count the parent asked for."""
    return int(os.environ.get("FASTBPE_PEERS_THREADS", "1"))


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


def train(lib: str, corpus: str, vocab: int, min_frequency: int, threads: int, out_dir: str) -> dict:
    """One training run; byte-level merges are saved as ``<lib>.merges.json`` for the
    agreement check."""
    result, merges = adapters.adapter(lib).train(lib, corpus, vocab, min_frequency, threads, out_dir)
    if merges is not None:
        with open(os.path.join(out_dir, f"{lib}.merges.json"), "w") as f:
            json.dump(merges, f)
        result["merges"] = len(merges)
    return result


def encoder(spec: str, out_dir: str) -> adapters.Encoder:
    """``encode_lines(list of str) -> list of id sequences`` for an encoder spec: a trained
    library name, or ``<library>:<vocabulary>`` (``tiktoken:cl100k_base``, ``hf:gpt2``,
    ``gigatoken:llama3``).

    Every library gets the same documents (:func:`documents`) through its own batch API when it
    has one, on ``--threads`` threads. sentencepiece and youtokentome get the documents' lines
    without the newline, as they were trained (they are sentence/line-based).
    """
    return adapters.adapter(spec).encoder(spec, out_dir, threads())


def encode(spec: str, text_file: str, out_dir: str, ids_file: Optional[str]) -> dict:
    """Two timed encodings of the text's documents in one process: the cold pass (the first
    call, with whatever tables or caches a library builds lazily) and the warm second pass. The
    first pass's ids go to ``ids_file`` when given."""
    import numpy as np

    encode_lines = encoder(spec, out_dir)
    with open(text_file, encoding="utf-8", newline="") as f:
        text = f.read()
    lines = documents(text)
    with adapters.Timer() as timer:
        rows = encode_lines(lines)
    tokens = sum(len(r) for r in rows)
    if ids_file:
        flat = [np.asarray(r, dtype=np.int64) for r in rows]
        np.save(ids_file, np.concatenate(flat) if flat else np.zeros(0, dtype=np.int64))
    del rows
    with adapters.Timer() as warm:
        encode_lines(lines)
    return {"seconds": timer.seconds, "cpu_seconds": timer.cpu_seconds, "warm_seconds": warm.seconds,
            "warm_cpu_seconds": warm.cpu_seconds, "tokens": tokens, "bytes": len(text.encode("utf-8")),
            "documents": len(lines)}


def languages(spec: str, out_dir: str, max_rows: int) -> dict:
    """Encoding the rows of ``parallel_multi.tsv.gz`` language by language: best of three."""
    encode_lines = encoder(spec, out_dir)
    rows = common.parallel_rows(max_rows)
    out = {}
    for lang, cells in rows.items():
        text = "\n".join(cells) + "\n"  # one row a line, cut into documents like the corpus
        docs = documents(text)
        encode_lines(docs[:1])  # warm caches and lazy initialisation before timing
        best = None
        for _ in range(3):  # best of three: these texts are small, the machine may be busy
            with adapters.Timer() as timer:
                n = sum(len(r) for r in encode_lines(docs))
            if best is None or timer.seconds < best.seconds:
                best = timer
        out[lang] = {"seconds": best.seconds, "cpu_seconds": best.cpu_seconds, "tokens": n,
                     "rows": len(cells), "bytes": len(text.encode("utf-8"))}
    return out


def agree(corpus: str, vocab: int, min_frequency: int, threads: int) -> dict:
    """Merges of HF's trainer and of fastbpe's ``compat="hf"`` on the very same documents (the
    corpus's lines, through ``train_from_iterator`` and ``iter(lines)``), compared. HF's
    ``train([file])`` reads the file its own way, so the timed runs need not agree exactly."""
    fastbpe = common.fastbpe_module()
    if not has_compat(fastbpe):
        return {"skipped": NO_COMPAT}
    with open(corpus, encoding="utf-8", newline="") as f:
        docs = f.read().splitlines(keepends=True)
    tok = byte_level_bpe(decoder=False)
    tok.train_from_iterator(docs, bpe_trainer(vocab, min_frequency))
    hf = [tuple(m) for m in merges_as_hex(tok)]
    ours = fastbpe.train(iter(docs), vocab, min_frequency=min_frequency, compat="hf",
                         progress=False, workers=threads)
    mine = [(a.hex(), b.hex()) for a, b in ours.merges]
    first = next((i for i, (x, y) in enumerate(zip(hf, mine)) if x != y), min(len(hf), len(mine)))
    return {"hf_merges": len(hf), "fastbpe_merges": len(mine), "first_difference": first,
            "identical": hf == mine}


def peak_rss_mb() -> float:
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


def main(argv: List[str]) -> None:
    """Run the job given as JSON in ``argv[0]``; print its result."""
    job = json.loads(argv[0])
    try:
        if job["kind"] == "train":
            result = train(job["lib"], job["corpus"], job["vocab"], job["min_frequency"],
                           job["threads"], job["out_dir"])
        elif job["kind"] == "agree":
            result = agree(job["corpus"], job["vocab"], job["min_frequency"], job["threads"])
        elif job["kind"] == "encode":
            result = encode(job["spec"], job["text"], job["out_dir"], job.get("ids_file"))
        else:
            result = languages(job["spec"], job["out_dir"], job["max_rows"])
    except NotImplementedError as exc:  # common.skip
        result = {"skipped": str(exc)}
    result["peak_rss_mb"] = peak_rss_mb()
    print("RESULT " + json.dumps(result))
