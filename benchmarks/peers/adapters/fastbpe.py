"""fastbpe itself: the checkout under test (``--checkout``), as the child process imports it."""
import inspect
import os
import statistics
import time
from pathlib import Path
from typing import Dict

from ...suites import common
from .base import Adapter, Timer, published_file


def has_compat(fastbpe) -> bool:
    """Whether this version's ``train`` has the ``compat="hf"`` option."""
    return "compat" in inspect.signature(fastbpe.train).parameters


NO_COMPAT = 'train() has no compat="hf" option in this version'


def batch_encoder(tok, threads: int):
    """``encode_batch`` on ``threads`` workers when the version has it, else a loop. Its ids
    come as one NumPy array per document where the version can (``as_numpy``), as the peers'
    bulk results do (gigatoken's awkward Array, fastokens' flat buffers): no Python int per
    token in any timed result."""
    batch = getattr(tok, "encode_batch", None)
    if batch is not None and "as_numpy" in inspect.signature(batch).parameters:
        return lambda lines: batch(lines, workers=threads, as_numpy=True)
    if batch is not None:
        return lambda lines: batch(lines, workers=threads)
    return lambda lines: [tok.encode(line) for line in lines]


class Fastbpe(Adapter):
    name = "fastbpe"
    rows = {
        "fastbpe": ("fastbpe", "byte-level, GPT-2 split"),
        "fastbpe-hf": ('fastbpe compat="hf"', "byte-level, GPT-2 split, HF tie rule"),
        "fastbpe-merge": ("fastbpe merge phase only", "train(counted table): merges + Tokenizer"),
    }
    trainers = ("fastbpe", "fastbpe-hf")

    def train(self, trainer, corpus, vocab, min_frequency, threads, out_dir):
        if trainer not in self.trainers:
            return super().train(trainer, corpus, vocab, min_frequency, threads, out_dir)
        fastbpe = common.fastbpe_module()
        kwargs = {}
        if trainer == "fastbpe-hf":
            if not has_compat(fastbpe):
                return {"skipped": NO_COMPAT}, None
            kwargs["compat"] = "hf"
        # Imported before the timer, as every peer's module is: `import fastbpe` defers its
        # modules (and NumPy) to the first use of a name, so that the CLI starts fast, and
        # their import (about 0.25 s) would land in the first call's time. Measured apart.
        with Timer() as imports:
            count_words, train = fastbpe.count_words, fastbpe.train
        with Timer() as timer:
            table = count_words(Path(corpus), "gpt2", workers=threads)
            counted = time.perf_counter()
            tok = train(table, vocab, min_frequency=min_frequency, progress=False, **kwargs)
        end = timer.start + timer.seconds
        result = dict(seconds=timer.seconds, cpu_seconds=timer.cpu_seconds, count_seconds=counted - timer.start,
                      merge_seconds=end - counted, import_seconds=imports.seconds, unique_chunks=len(table),
                      fastbpe_file=os.path.realpath(fastbpe.__file__))  # the checkout, not the link
        merges = [[a.hex(), b.hex()] for a, b in tok.merges]
        result["vocab"] = tok.vocab_size
        tok.save(os.path.join(out_dir, f"{trainer}.json"))
        return result, merges

    def encoder(self, spec, out_dir, threads):
        if spec == "fastbpe":
            tok = common.fastbpe_module().Tokenizer.load(os.path.join(out_dir, "fastbpe.json"))
        elif spec == "fastbpe:llama3":  # Llama 3's tokenizer.json
            tok = common.fastbpe_module().Tokenizer.from_huggingface(published_file("llama3"))
        elif spec.startswith("fastbpe:"):  # OpenAI's ranks, through fastbpe's own loader
            from ...suites.suite_encode import _openai_tokenizer

            tok = _openai_tokenizer(spec.partition(":")[2])
        else:
            return super().encoder(spec, out_dir, threads)
        return batch_encoder(tok, threads)

    def derive(self, rows: Dict[str, dict]) -> None:
        """``fastbpe-merge``: the merge phase of the timed fastbpe runs, on its own."""
        full = rows.get("fastbpe", {})
        if full.get("ok"):
            phase = [r["merge_seconds"] for r in full["runs"]]
            rows["fastbpe-merge"] = {"ok": True, "median": statistics.median(phase), "min": min(phase),
                                     "max": max(phase), "rss": full["rss"], "n": full["n"],
                                     "runs": full["runs"]}
