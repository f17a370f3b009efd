"""asv: training. The merge loop alone, and end to end (count + merge + Tokenizer).

Every class compares the compiled path (``impl="fast"``) with the pure-Python reference
(``impl="reference"``: :mod:`fastbpe.reference` and a ``regex`` + dict counter) on the same
input, and scales over corpus size and number of merges. The reference only runs where it takes
seconds (100 KB, 1k merges); elsewhere it is skipped, because it would take minutes to hours.
Inputs are generated text (always there); ``TrainRealCorpus`` uses the shared corpora.
"""
import inspect
import time

from .common import (corpus_text, fastbpe_module, parse_size, reference_count, reference_table,
                     reference_words, require, skip)

IMPLS = ["fast", "reference"]
SIZES = ["100KB", "1MB", "10MB"]
MERGES = [1000, 8000, 32000]
VOCABS = [1024, 8192, 32768]
MIN_FREQUENCY = 2


def _reference_is_quick(size: str, work: int) -> bool:
    """Where the reference learner finishes in seconds: ~8 ms per merge per 100 KB."""
    return parse_size(size) <= 100_000 and work <= 1024


def _word_table(arrays):
    fastbpe = fastbpe_module()
    data, offsets, counts = arrays
    return fastbpe.WordTable(data, offsets, counts)


class MergePhase:
    """The merge loop only, on a chunk table counted beforehand (``learn_from_table`` against
    ``reference.learn``). Growth over corpus size is the unique-chunk count; over merges, the
    heap and the pair index. (Peak memory: ``MergePhaseMemory``, compiled path only.)"""

    params = (IMPLS, SIZES, MERGES)
    param_names = ["impl", "size", "merges"]
    timeout = 300

    def setup(self, impl, size, merges):
        arrays = reference_table("generated", size)
        if impl == "fast":
            self.table = _word_table(arrays)
        elif _reference_is_quick(size, merges):
            self.words = reference_words(arrays)
        else:
            skip("the pure-Python learner would take minutes here")

    def _learn(self, impl, merges):
        fastbpe = fastbpe_module()
        if impl == "fast":
            return fastbpe.learn_from_table(self.table, merges, min_frequency=MIN_FREQUENCY)
        return fastbpe.reference.learn(self.words, merges, MIN_FREQUENCY)

    def time_learn(self, impl, size, merges):
        self._learn(impl, merges)


class MergePhaseMemory:
    """Peak memory of the compiled merge loop (32k merges) over corpus size."""

    params = (SIZES,)
    param_names = ["size"]

    def setup(self, size):
        self.table = _word_table(reference_table("generated", size))

    def peakmem_learn(self, size):
        fastbpe_module().learn_from_table(self.table, 32000, min_frequency=MIN_FREQUENCY)


class MergePhaseThroughput:
    """Microseconds per merge of the compiled learner (the inverse of merges per second, so that
    smaller is better as asv assumes), and how many merges the table allowed (a run stops early
    when the best pair count falls below ``min_frequency``)."""

    params = (SIZES,)
    param_names = ["size"]
    merges = 32000

    def setup(self, size):
        self.table = _word_table(reference_table("generated", size))

    def track_us_per_merge(self, size):
        fastbpe = fastbpe_module()
        start = time.perf_counter()
        merges = fastbpe.learn_from_table(self.table, self.merges, min_frequency=MIN_FREQUENCY)[0]
        return (time.perf_counter() - start) * 1e6 / max(len(merges), 1)

    track_us_per_merge.unit = "us/merge"

    def track_unique_chunks(self, size):
        return len(self.table)

    track_unique_chunks.unit = "chunks"


class TrainEndToEnd:
    """``fastbpe.train(text, vocab_size)``: counting, merging and building the Tokenizer,
    against the reference counter plus ``reference.learn``."""

    params = (IMPLS, SIZES, VOCABS)
    param_names = ["impl", "size", "vocab_size"]
    timeout = 300

    def setup(self, impl, size, vocab_size):
        if impl == "reference" and not _reference_is_quick(size, vocab_size):
            skip("the pure-Python trainer would take minutes here")
        self.text = corpus_text("generated", size)

    def _train(self, impl, vocab_size):
        fastbpe = fastbpe_module()
        if impl == "fast":
            return fastbpe.train(iter([self.text]), vocab_size, min_frequency=MIN_FREQUENCY, progress=False, workers=1)
        counts = reference_count(self.text)
        words = {tuple(bytes([b]) for b in chunk): n for chunk, n in counts.items()}
        return fastbpe.reference.learn(words, vocab_size - 256, MIN_FREQUENCY)

    def time_train(self, impl, size, vocab_size):
        self._train(impl, vocab_size)


class TrainThroughput:
    """Seconds per corpus megabyte (the inverse of MB/s: smaller is better, as asv reads every
    number) and peak memory, end to end, at vocabulary 32768."""

    params = (SIZES,)
    param_names = ["size"]

    def setup(self, size):
        self.text = corpus_text("generated", size)
        self.nbytes = len(self.text.encode("utf-8"))

    def track_train_seconds_per_mb(self, size):
        fastbpe = fastbpe_module()
        start = time.perf_counter()
        fastbpe.train(iter([self.text]), 32768, min_frequency=MIN_FREQUENCY, progress=False, workers=1)
        return (time.perf_counter() - start) / (self.nbytes / 1e6)

    track_train_seconds_per_mb.unit = "s/MB"

    def peakmem_train(self, size):
        fastbpe_module().train(iter([self.text]), 32768, min_frequency=MIN_FREQUENCY, progress=False, workers=1)


class TrainRealCorpus:
    """End to end and merge phase on the first 10 MB of the shared corpora (``FASTBPE_DATA``);
    skipped when the data is absent."""

    params = (["english", "code"], [32768])
    param_names = ["corpus", "vocab_size"]
    timeout = 300
    size = "10MB"

    def setup(self, corpus, vocab_size):
        self.text = corpus_text(corpus, self.size)
        self.table = _word_table(reference_table(corpus, self.size))

    def time_train(self, corpus, vocab_size):
        fastbpe_module().train(iter([self.text]), vocab_size, min_frequency=MIN_FREQUENCY, progress=False, workers=1)

    def peakmem_train(self, corpus, vocab_size):
        fastbpe_module().train(iter([self.text]), vocab_size, min_frequency=MIN_FREQUENCY, progress=False, workers=1)

    def time_merge_phase(self, corpus, vocab_size):
        fastbpe_module().learn_from_table(self.table, vocab_size - 256, min_frequency=MIN_FREQUENCY)


class TrainHFCompat:
    """``train(..., compat="hf")`` (Hugging Face's merge rule) against the default rule, once
    the option exists."""

    params = ([None, "hf"],)
    param_names = ["compat"]

    def setup(self, compat):
        train = require("train")
        if compat is not None and "compat" not in inspect.signature(train).parameters:
            skip("train() has no compat option in this commit")
        self.text = corpus_text("generated", "1MB")

    def time_train(self, compat):
        kwargs = {} if compat is None else {"compat": compat}
        fastbpe_module().train(iter([self.text]), 8192, min_frequency=MIN_FREQUENCY, progress=False, workers=1, **kwargs)
