"""asv: long pieces, text with no split point in megabytes (one letter repeated, random letters).

Encoding one such chunk is where a quadratic merge loop (or a heap that misses the cache on every
pop) shows; training on one long word is where per-position state shows. Encoding is timed by
backtracking over the vocabulary (the default for long chunks of the OpenAI encodings) and by
the rank queue of merges it replaced. Both are timed here on
pieces made in ``setup`` (deterministic, nothing read from disk but the rank file).
"""
import numpy as np

from .common import fastbpe_module, generated_text, input_size, skip, tiktoken_file

KINDS = ["one letter", "two letters", "random letters"]
SIZES = ["100KB", "1MB", "10MB"]


def long_piece(kind: str, size: str) -> str:
    """A piece of ``size`` bytes without whitespace, digits or punctuation: one chunk for every
    built-in split pattern."""
    n = input_size(size)
    if kind == "one letter":
        return "a" * n
    if kind == "two letters":
        return "ab" * (n // 2)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    return np.random.default_rng(0).choice(letters, n).tobytes().decode("ascii")


def openai_tokenizer(encoding: str):
    """fastbpe's tokenizer of one of OpenAI's encodings from the shared rank file (skips when the
    file or, at an old commit, ``fastbpe.openai`` is missing)."""
    fastbpe = fastbpe_module()
    path = tiktoken_file(encoding)
    if path is None:
        skip(f"tokenizers/tiktoken/{encoding}.tiktoken not found")
    if not hasattr(fastbpe, "openai"):
        skip("this commit has no fastbpe.openai")
    return fastbpe.openai(encoding, path)


class LongPieceEncode:
    """``Tokenizer.encode_to_numpy`` of one long piece with OpenAI's cl100k_base ranks, by
    backtracking or by the rank queue (the tables of either built in setup)."""

    params = (KINDS, SIZES, ["backtracking", "rank queue"])
    param_names = ["kind", "size", "method"]
    timeout = 300

    def setup(self, kind, size, method):
        self.tok = openai_tokenizer("cl100k_base")
        self.text = long_piece(kind, size)
        self.tok.encode_to_numpy("warm up: the tables are built on the first call")
        core = self.tok._core()
        if hasattr(core, "backtrack_min"):
            core.backtracking()  # the tables built here: not part of the timing
            if method == "rank queue":
                core.backtrack_min = 1 << 40
        elif method == "backtracking":
            skip("this commit has no backtracking encoder")

    def time_encode(self, kind, size, method):
        self.tok.encode_to_numpy(self.text)


class FreshTokenizerPerSample:
    """A benchmark of something a tokenizer does once, timed on one loaded in ``setup`` for each
    sample (``number = 1`` and no warm-up: asv runs ``setup`` before each sample, and a second
    run in the same sample would find it done), for OpenAI's cl100k_base and o200k_base."""

    params = ["cl100k_base", "o200k_base"]
    param_names = ["encoding"]
    number = 1
    warmup_time = 0
    repeat = (3, 10, 30.0)
    timeout = 300


class LongPieceTables(FreshTokenizerPerSample):
    """The backtracking encoder's tables (built once a tokenizer's long chunks reach a budget):
    every token's merge tree, the trie of the vocabulary and the pairs that fire. Each sample
    times one build."""

    def setup(self, encoding):
        self.core = openai_tokenizer(encoding)._core()
        if not hasattr(self.core, "backtracking"):
            skip("this commit has no backtracking encoder")

    def time_build(self, encoding):
        self.core.backtracking()


class FewLongChunksFirstCall(FreshTokenizerPerSample):
    """The first call of a freshly loaded tokenizer on 1 MB of text with four long chunks of
    300-1200 bytes (rules, a run of spaces, a long word): the merge loops take them, since so
    few long-chunk bytes do not earn the backtracking tables (before the budget, they were built
    on the first long chunk)."""

    def setup(self, encoding):
        self.tok = openai_tokenizer(encoding)
        self.tok.encode_to_numpy("warm up: the tables of short chunks are built on the first call")
        text = generated_text("1MB")
        third = len(text) // 3
        self.text = "".join([text[:third], "-" * 300, "\n", text[third:2 * third], " " * 1200 + "x",
                             "\n" + "=" * 400 + "\n", text[2 * third:], " " + "abcdefgh" * 100])

    def time_first_call(self, encoding):
        self.tok.encode_to_numpy(self.text)


class DeriveMerges:
    """The merges of a rank file (``Tokenizer.merges`` of a ``.tiktoken`` vocabulary): every
    token's rule run with the tokens of lower rank. On cl100k_base and o200k_base as published,
    and on a vocabulary of 1, 2, 4 ... 2**19 letters "a" then one token of ``size`` letters, where
    a rule that rescans every pair after each join is quadratic."""

    params = (["cl100k_base", "o200k_base", "1MB token"],)
    param_names = ["vocabulary"]
    timeout = 300

    def setup(self, vocabulary):
        try:
            from fastbpe._core.encode import derive_merges
        except ImportError:
            skip("this commit has no derive_merges")
        self.derive = derive_merges
        if vocabulary.endswith("token"):
            self.tokens = [b"a" * (1 << k) for k in range(20)] + [b"a" * input_size(vocabulary.split()[0])]
        else:
            tok = openai_tokenizer(vocabulary)
            self.tokens = list(tok.token_bytes[:tok.vocab_size - len(tok.special_tokens)])

    def time_derive(self, vocabulary):
        self.derive(self.tokens)


class LongPieceTrain:
    """``fastbpe.train`` on a corpus that is one long word (vocabulary 1000, one worker)."""

    params = (["random letters", "two letters"], ["1MB", "10MB"])
    param_names = ["kind", "size"]
    timeout = 300

    def setup(self, kind, size):
        self.fastbpe = fastbpe_module()
        self.text = long_piece(kind, size)

    def time_train(self, kind, size):
        self.fastbpe.train(text=self.text, vocab_size=1000, progress=False, workers=1)


class LongRunTrainFloor:
    """``fastbpe.train`` (40 merges) on one run of a letter broken by three others, at
    ``min_frequency`` 5: the pairs at the run's ends fall under the floor and come back at
    every merged occurrence (they were looked at each time, quadratic in the run)."""

    params = (["1MB", "4MB"],)
    param_names = ["size"]
    timeout = 300

    def setup(self, size):
        self.fastbpe = fastbpe_module()
        n = input_size(size)
        run = bytearray(b"a" * n)
        run[n * 37 // 100] = run[n * 56 // 100] = ord("c")
        run[n * 52 // 100] = ord("b")
        self.text = run.decode("ascii")

    def time_train(self, size):
        self.fastbpe.train(text=self.text, num_merges=40, min_frequency=5, progress=False, workers=1)
