"""asv: pre-tokenizing and counting (text -> chunks -> unique-chunk table).

``impl="fast"`` is the package's ``count_words`` / ``pretokenize``; ``impl="reference"`` is the
plain ``regex.findall`` + dict the compiled scanner must agree with. The named patterns GPT-2,
cl100k and o200k are each measured once this commit knows them (skipped before).
"""
import inspect
import time

from .common import (corpus_text, fastbpe_module, language_text, reference_count, regex_pattern, require,
                     skip)

IMPLS = ["fast", "reference"]
SIZES = ["100KB", "1MB", "10MB"]
PATTERNS = ["gpt2", "cl100k", "o200k"]


def _count(impl, text, **kwargs):
    if impl == "fast":
        kwargs.setdefault("workers", 1)
        return fastbpe_module().count_words(iter([text]), "gpt2", **kwargs)  # positional: every version names it differently
    return reference_count(text)


class CountWords:
    """``count_words`` (GPT-2 split) over corpus size."""

    params = (IMPLS, SIZES)
    param_names = ["impl", "size"]

    def setup(self, impl, size):
        self.text = corpus_text("generated", size)

    def time_count(self, impl, size):
        _count(impl, self.text)

    def peakmem_count(self, impl, size):
        _count(impl, self.text)


class CountThroughput:
    """Seconds per megabyte of text counted (the inverse of MB/s: smaller is better, as asv
    assumes), generated and real text."""

    params = (IMPLS, ["generated", "english", "code"])
    param_names = ["impl", "corpus"]
    size = "2MB"

    def setup(self, impl, corpus):
        self.text = corpus_text(corpus, self.size)
        self.nbytes = len(self.text.encode("utf-8"))

    def track_count_seconds_per_mb(self, impl, corpus):
        start = time.perf_counter()
        _count(impl, self.text)
        return (time.perf_counter() - start) / (self.nbytes / 1e6)

    track_count_seconds_per_mb.unit = "s/MB"


class CountPatterns:
    """Seconds per megabyte counted with each compiled scanner (each pattern has its own ASCII
    fast path and shares the chunk table), on real English and code."""

    params = (PATTERNS + ["llama3", "qwen", "tekken"], ["english", "code"])
    param_names = ["pattern", "corpus"]
    size = "2MB"

    def setup(self, pattern, corpus):
        if regex_pattern(pattern) is None:
            skip(f"pattern {pattern!r} is not known in this commit")
        self.text = corpus_text(corpus, self.size)
        self.nbytes = len(self.text.encode("utf-8"))

    def track_count_seconds_per_mb(self, pattern, corpus):
        start = time.perf_counter()
        fastbpe_module().count_words(iter([self.text]), pattern, workers=1)
        return (time.perf_counter() - start) / (self.nbytes / 1e6)

    track_count_seconds_per_mb.unit = "s/MB"


class CountLanguages:
    """Seconds per megabyte counted with the cl100k scanner, one language's rows of the
    multilingual table (one row a line; 2 MB, capped by the run's input size): the UTF-8
    validation and the scanner on text that is mostly two-byte (Russian, Arabic) or
    three-byte (Hindi, Chinese) characters."""

    params = (["ru", "ar", "hi", "zh_CN"],)
    param_names = ["language"]

    def setup(self, language):
        self.text = language_text(language, "2MB")
        self.nbytes = len(self.text.encode("utf-8"))

    def track_count_seconds_per_mb(self, language):
        start = time.perf_counter()
        fastbpe_module().count_words(iter([self.text]), "cl100k", workers=1)
        return (time.perf_counter() - start) / (self.nbytes / 1e6)

    track_count_seconds_per_mb.unit = "s/MB"


class CountWorkers:
    """Parallel counting: ``count_words(..., workers=N)`` on 10 MB (2 cores here)."""

    params = ([1, 2],)
    param_names = ["workers"]
    size = "10MB"

    def setup(self, workers):
        count_words = require("count_words")
        if "workers" not in inspect.signature(count_words).parameters:
            skip("count_words has no workers option in this commit")
        self.text = corpus_text("generated", self.size)

    def time_count(self, workers):
        fastbpe_module().count_words(iter([self.text]), "gpt2", workers=workers)


class CountWorkersFile:
    """Parallel counting of a plain file: ``count_words(path, workers=N)`` on 10 MB of English
    with the default partitions (byte ranges, each read by the worker that takes it; the
    tables combined in order)."""

    params = ([1, 2],)
    param_names = ["workers"]
    size = "10MB"

    def setup(self, workers):
        import os
        import tempfile

        count_words = require("count_words")
        if "partition_size" not in inspect.signature(count_words).parameters:
            skip("count_words has no partition_size option in this commit")
        data = corpus_text("english", self.size).encode("utf-8")
        handle, self.path = tempfile.mkstemp(suffix=".txt")
        with os.fdopen(handle, "wb") as f:
            f.write(data)

    def teardown(self, workers):
        import os

        os.unlink(self.path)

    def time_count(self, workers):
        fastbpe_module().count_words(self.path, "gpt2", workers=workers, progress=False)


class Pretokenize:
    """``pretokenize(text, pattern)`` against ``regex.findall`` of the same pattern."""

    params = (IMPLS, PATTERNS, ["100KB", "1MB"])
    param_names = ["impl", "pattern", "size"]

    def setup(self, impl, pattern, size):
        require("pretokenize")
        self.regex = regex_pattern(pattern)
        if self.regex is None:
            skip(f"pattern {pattern!r} is not known in this commit")
        import regex

        self.compiled = regex.compile(self.regex)
        self.text = corpus_text("generated", size)

    def _split(self, impl, pattern):
        if impl == "fast":
            return fastbpe_module().pretokenize(self.text, pattern)
        return self.compiled.findall(self.text)

    def time_pretokenize(self, impl, pattern, size):
        self._split(impl, pattern)

    def track_ns_per_chunk(self, impl, pattern, size):
        start = time.perf_counter()
        chunks = self._split(impl, pattern)
        return (time.perf_counter() - start) * 1e9 / max(len(chunks), 1)

    track_ns_per_chunk.unit = "ns/chunk"


class DocumentSpans:
    """The documents of 4 MB of English found where they lie (what ``encode_files`` reads line
    and blank-line files with): every line, every paragraph, and the search for the blank line
    after a paragraph that is the whole 4 MB (its blank lines made single newlines), against
    the reference's loop and ``bytes.find``."""

    params = (["fast", "reference"], ["line", "blank-line", "one-paragraph"])
    param_names = ["impl", "documents"]

    def setup(self, impl, documents):
        import re

        try:
            from fastbpe._core.split import document_spans, find_newlines
            from fastbpe.reference.split import document_spans as reference_spans
        except ImportError:
            skip("document_spans and find_newlines are not in this commit")
        self.data = corpus_text("english", "4MB").encode("utf-8")
        if documents == "one-paragraph":
            self.data = re.sub(b"\n\n+", b"\n", self.data)
            find = find_newlines if impl == "fast" else (lambda data, n, a, b: data.find(b"\n" * n, a, b))
            self.run = lambda: find(self.data, 2, 0, len(self.data))
        else:
            spans = document_spans if impl == "fast" else reference_spans
            self.run = lambda: spans(self.data, 1 if documents == "line" else 2)

    def time_documents(self, impl, documents):
        self.run()
