"""asv: encoding and decoding with a trained tokenizer, and with OpenAI's vocabularies.

``impl="fast"`` is ``Tokenizer.encode``/``decode``; ``impl="reference"`` is the pure-Python
rank-based encoder (GPT-2's ``encoder.py`` algorithm, per-chunk cache included, on the same
``regex`` split) and a ``b"".join`` decoder. The tokenizers are trained in ``setup`` on 1 MB of
generated text, so the vocabulary is the same for every input size.
"""
import inspect
import os
import re
import time

from .common import (byte_pair_ranks_encode, corpus_text, data_file, fastbpe_module, feature, input_size,
                     language_text, parallel_rows, regex_pattern, require, sentencepiece_json_file,
                     sentencepiece_model_file, skip, tiktoken_encoding, tiktoken_file)

IMPLS = ["fast", "reference"]
SIZES = ["100KB", "1MB", "10MB"]
VOCABS = [1024, 32768]


def trained_tokenizer(vocab_size: int):
    """A byte-level GPT-2-split tokenizer trained on 1 MB of generated text."""
    fastbpe = fastbpe_module()
    return fastbpe.train(iter([corpus_text("generated", "1MB")]), vocab_size, min_frequency=2, progress=False,
                         workers=1)


WARM_UP_TEXT = "Warm-up: lazy tables, 12345 numbers, Привет мир, 日本語, ภาษาไทย, café!\n" * 20


def _warm(encode):
    """One call on other text before timing: lazy initialisation (pattern tables, caches of the
    encoder) is a first-call cost, not encoding speed."""
    encode(WARM_UP_TEXT)


def _ranks(tok):
    return {(left, right): rank for rank, (left, right) in enumerate(tok.merges)}


class Encode:
    """``Tokenizer.encode(text)`` over input size and vocabulary size."""

    params = (IMPLS, SIZES, VOCABS)
    param_names = ["impl", "size", "vocab_size"]
    timeout = 300

    def setup(self, impl, size, vocab_size):
        if impl == "reference" and size == "10MB":
            skip("the pure-Python encoder would take minutes here")
        self.tok = trained_tokenizer(vocab_size)
        self.text = corpus_text("generated", size)
        _warm(self.tok.encode)
        if impl == "reference":
            import regex

            self.ranks = _ranks(self.tok)
            self.split = regex.compile(regex_pattern("gpt2")).findall

    def _encode(self, impl):
        if impl == "fast":
            return len(self.tok.encode(self.text))
        chunks = [c.encode("utf-8") for c in self.split(self.text)]
        return byte_pair_ranks_encode(chunks, self.ranks)

    def time_encode(self, impl, size, vocab_size):
        self._encode(impl)


class EncodeMemory:
    """Peak memory of ``Tokenizer.encode`` (vocabulary 32768) over input size."""

    params = (SIZES,)
    param_names = ["size"]

    def setup(self, size):
        self.tok = trained_tokenizer(32768)
        self.text = corpus_text("generated", size)
        _warm(self.tok.encode)

    def peakmem_encode(self, size):
        self.tok.encode(self.text)


class EncodeThroughput:
    """Nanoseconds per token, seconds per MB, and tokens per KB (compression) of the trained
    tokenizers on 1 MB: every number the inverse of a rate, so that smaller is better, as asv
    assumes when it compares two commits."""

    params = (IMPLS, VOCABS)
    param_names = ["impl", "vocab_size"]

    def setup(self, impl, vocab_size):
        Encode.setup(self, impl, "1MB", vocab_size)
        self.nbytes = len(self.text.encode("utf-8"))

    def _timed(self, impl):
        start = time.perf_counter()
        n = Encode._encode(self, impl)
        return n, time.perf_counter() - start

    def track_ns_per_token(self, impl, vocab_size):
        n, seconds = self._timed(impl)
        return seconds * 1e9 / max(n, 1)

    track_ns_per_token.unit = "ns/token"

    def track_seconds_per_mb(self, impl, vocab_size):
        _, seconds = self._timed(impl)
        return seconds / (self.nbytes / 1e6)

    track_seconds_per_mb.unit = "s/MB"

    def track_tokens_per_kb(self, impl, vocab_size):
        n, _ = self._timed(impl)
        return n / (self.nbytes / 1e3)

    track_tokens_per_kb.unit = "tokens/KB"


class EncodeBatch:
    """``Tokenizer.encode_batch(lines, workers=N)`` on the lines of 1 MB (once it exists)."""

    params = ([1, 2],)
    param_names = ["workers"]

    def setup(self, workers):
        self.tok = trained_tokenizer(32768)
        if not hasattr(self.tok, "encode_batch"):
            skip("Tokenizer.encode_batch is not in this commit")
        self.lines = corpus_text("generated", "1MB").split("\n")
        _warm(self.tok.encode)

    def time_encode_batch(self, workers):
        self.tok.encode_batch(self.lines, workers=workers)


class EncodeCharacterLevel:
    """A character-level tokenizer whose text is one chunk (SentencePiece's layout, without its
    spaces' ▁): the lines of 1 MB of generated text, by ``encode_ordinary_batch`` on one thread
    (a compiled call a group of texts) and by a loop of ``encode_ordinary``."""

    def setup(self):
        fastbpe = fastbpe_module()
        self.lines = corpus_text("generated", "1MB").split("\n")
        self.tok = fastbpe.train(iter(self.lines), 16384, unit="chars", pattern=r"(?s:.+)", min_frequency=2,
                                 progress=False, workers=1)
        self.tok.encode_ordinary_batch(self.lines[:10], num_threads=1)

    def time_encode_ordinary_batch(self):
        self.tok.encode_ordinary_batch(self.lines, num_threads=1)

    def time_encode_ordinary_loop(self):
        for line in self.lines:
            self.tok.encode_ordinary(line)


class EncodeUserDefinedPieces:
    """SentencePiece's layout with user-defined pieces that most lines hold (``the``, ``ab``,
    ``<mask>``: found in the normalised text, never merged), ``pieces="user-defined"``, against
    the same tokenizer without them, ``pieces="none"``: the lines of 1 MB of generated text, by
    ``encode_ordinary_batch`` on one thread and by a loop of ``encode_ordinary`` (once the
    option exists)."""

    params = (["none", "user-defined"],)
    param_names = ["pieces"]

    def setup(self, pieces):
        fastbpe = fastbpe_module()
        kept = ["the", "ab", "<mask>"]
        try:
            options = {name: {"always": True, "user_defined": True} for name in kept}
            fastbpe.Tokenizer([b"a"], [], unit="chars", special_tokens={"<mask>": 1}, special_token_options={
                "<mask>": options["<mask>"]})
        except (TypeError, ValueError):
            skip("SentencePiece's user-defined pieces are not in this commit")
        step = {"type": "SentencePiece", "precompiled_charsmap": "", "add_dummy_prefix": True,
                "remove_extra_whitespaces": True, **({"user_defined_symbols": kept} if pieces != "none" else {})}
        normalize = require("encode.normalizers.Normalizer")([step])
        self.lines = corpus_text("generated", "1MB").split("\n")
        base = fastbpe.train(iter([normalize(line) for line in self.lines]), 8192, unit="chars",
                             pattern=r"(?s:.+)", min_frequency=2, progress=False, workers=1)
        n = len(base.token_bytes)
        self.tok = fastbpe.Tokenizer(list(base.token_bytes) + [b""] * len(kept), base.merge_ids, unit="chars",
                                     pattern=r"(?s:.+)", merge_rule="pair", normalizer=[step],
                                     special_tokens={name: n + k for k, name in enumerate(kept)},
                                     special_token_options=options if pieces != "none" else None)
        self.tok.encode_ordinary_batch(self.lines[:10], num_threads=1)

    def time_encode_ordinary_batch(self, pieces):
        self.tok.encode_ordinary_batch(self.lines, num_threads=1)

    def time_encode_ordinary_loop(self, pieces):
        for line in self.lines:
            self.tok.encode_ordinary(line)


class NormalizeSentencePiece:
    """SentencePiece's normaliser (its whitespace rules, no character map: the walk still runs)
    on the lines of 1 MB of generated text, ``impl="fast"`` compiled and ``impl="reference"``
    the specification's pure Python (on the first 50 KB of lines)."""

    params = (IMPLS,)
    param_names = ["impl"]

    def setup(self, impl):
        self.lines = corpus_text("generated", "1MB").split("\n")
        if impl == "fast":
            normalizer = require("_core.normalize.SentencePieceNormalizer")(b"", True, True)
            self.normalize = lambda: [normalizer(line) for line in self.lines]
        else:
            reference = require("reference.normalize.sentencepiece_normalize")
            lines = self.lines[:len(self.lines) // 20]
            self.normalize = lambda: [reference(b"", line, True, True) for line in lines]

    def time_normalize(self, impl):
        self.normalize()


class EncodeToNumpy:
    """``Tokenizer.encode_to_numpy(text)`` on 10 MB (once it exists)."""

    def setup(self):
        self.tok = trained_tokenizer(32768)
        if not hasattr(self.tok, "encode_to_numpy"):
            skip("Tokenizer.encode_to_numpy is not in this commit")
        self.text = corpus_text("generated", "10MB")
        _warm(self.tok.encode_to_numpy)

    def time_encode_to_numpy(self):
        self.tok.encode_to_numpy(self.text)

    def peakmem_encode_to_numpy(self):
        self.tok.encode_to_numpy(self.text)


class Decode:
    """``Tokenizer.decode(ids)`` against ``b"".join`` of the token bytes, over size."""

    params = (IMPLS, ["100KB", "1MB"])
    param_names = ["impl", "size"]

    def setup(self, impl, size):
        self.tok = trained_tokenizer(32768)
        text = corpus_text("generated", size)
        encode_to_numpy = getattr(self.tok, "encode_to_numpy", None)
        self.ids = encode_to_numpy(text) if encode_to_numpy else self.tok.encode(text)
        if impl == "reference":
            self.ids = [int(i) for i in self.ids]
            self.token_bytes = list(self.tok.token_bytes)

    def _decode(self, impl):
        if impl == "fast":
            return self.tok.decode(self.ids)
        table = self.token_bytes
        return b"".join([table[i] for i in self.ids]).decode("utf-8", "replace")

    def time_decode(self, impl, size):
        self._decode(impl)

    def track_decode_seconds_per_mb(self, impl, size):
        start = time.perf_counter()
        text = self._decode(impl)
        return (time.perf_counter() - start) / (len(text.encode("utf-8")) / 1e6)

    track_decode_seconds_per_mb.unit = "s/MB"


def _documents(text: str, size: int = 1 << 16) -> list:
    """``text`` cut into documents of ``size`` characters (64 KB: as the peers comparison's).

    >>> _documents("abcde", 2)
    ['ab', 'cd', 'e']
    """
    return [text[k:k + size] for k in range(0, len(text), size)]


def _openai_tokenizer(name: str):
    """fastbpe's tokenizer for an OpenAI encoding: ``fastbpe.openai(name, path)`` or
    ``Tokenizer.from_tiktoken(path)``; skips when this commit has neither or the file is absent."""
    path = tiktoken_file(name)
    if path is None:
        skip(f"{name}.tiktoken is not in the shared data")
    openai = feature("openai")
    if openai is not None:
        return openai(name, str(path))
    from_tiktoken = feature("Tokenizer.from_tiktoken")
    if from_tiktoken is None:
        skip("fastbpe.openai / Tokenizer.from_tiktoken are not in this commit")
    kwargs = {}
    params = inspect.signature(from_tiktoken).parameters
    pattern = {"cl100k_base": "cl100k", "o200k_base": "o200k"}.get(name, "gpt2")
    if "pattern" in params:
        kwargs["pattern"] = pattern
    return from_tiktoken(str(path), **kwargs)


class EncodeOpenAI:
    """Encoding 1 MB of English with cl100k / o200k ranks: fastbpe against tiktoken (the
    reference for these vocabularies). Needs the shared data and ``Tokenizer.from_tiktoken``."""

    params = (["fast", "tiktoken"], ["cl100k_base", "o200k_base"])
    param_names = ["impl", "encoding"]
    timeout = 300

    def setup(self, impl, encoding):
        self.text = corpus_text("english", "1MB")
        if impl == "fast":
            tok = _openai_tokenizer(encoding)
            self.encode = tok.encode
        else:
            enc = tiktoken_encoding(encoding)
            self.encode = lambda text: enc.encode(text, disallowed_special=())
        _warm(self.encode)

    def time_encode(self, impl, encoding):
        self.encode(self.text)


class EncodeOpenAIWarm:
    """The warm pass: 1 MB of English encoded again by the same tokenizer, so every chunk is
    answered by the encoder's caches (the short-chunk cache in front of the chunk cache), as
    in the peers comparison's second pass; ids as a list and as NumPy arrays."""

    params = (["cl100k_base", "o200k_base"],)
    param_names = ["encoding"]
    timeout = 300

    def setup(self, encoding):
        self.tok = _openai_tokenizer(encoding)
        text = corpus_text("english", "1MB")  # in documents of 64 KB, as the peers comparison
        self.docs = _documents(text)
        self.tok.encode_batch(self.docs, workers=1)  # the first pass fills the caches

    def time_encode_warm(self, encoding):
        for doc in self.docs:
            self.tok.encode(doc)

    def time_encode_batch_numpy_warm(self, encoding):
        self.tok.encode_batch(self.docs, workers=1, as_numpy=True)


class EncodeOpenAIWarmWorkers:
    """The warm pass of 10 MB of English (documents of 64 KB) through ``encode_batch`` on one
    and on two workers, ids as NumPy arrays: groups this large hand over their ids without a
    copy, and each worker's search for special tokens overlaps the other's encoding. Wall
    time; the ratio of the two is the batch's scaling (on a machine with two free cores)."""

    params = ([1, 2],)
    param_names = ["workers"]
    timeout = 300

    def setup(self, workers):
        self.tok = _openai_tokenizer("cl100k_base")
        text = corpus_text("english", "10MB")
        self.docs = _documents(text)
        self.tok.encode_batch(self.docs, workers=workers, as_numpy=True)  # fills the caches

    def time_encode_batch_numpy_warm(self, workers):
        self.tok.encode_batch(self.docs, workers=workers, as_numpy=True)


class EncodeBatchChangingWorkers:
    """``encode_batch`` of 4 MB of English (documents of 64 KB), arrays, with 2 workers and then
    3, turn by turn, as when a program (or a benchmark) tries several counts: every call runs
    on the same warm threads."""

    timeout = 300

    def setup(self):
        self.tok = _openai_tokenizer("cl100k_base")
        self.docs = _documents(corpus_text("english", "4MB"))
        self.time_two_then_three_workers()  # fills the caches

    def time_two_then_three_workers(self):
        self.tok.encode_batch(self.docs, workers=2, as_numpy=True)
        self.tok.encode_batch(self.docs, workers=3, as_numpy=True)


class EncodeBatchListsCollected:
    """``encode_batch`` of 10 MB of English (documents of 64 KB) as lists of ids (its default
    result), one worker, warm, with the cycle collector on as in a program (asv times with it
    off): 160 lists of 16,000 ids, which no young collection needs to walk."""

    timeout = 300

    def setup(self):
        self.tok = _openai_tokenizer("cl100k_base")
        self.docs = _documents(corpus_text("english", "10MB"))
        self.tok.encode_batch(self.docs, workers=1)  # fills the caches

    def time_encode_batch_lists_collector_on(self):
        import gc

        was_enabled = gc.isenabled()
        gc.enable()
        try:
            self.tok.encode_batch(self.docs, workers=1)
        finally:
            if not was_enabled:
                gc.disable()


class EncodeLanguagesWarm:
    """The warm pass over one language's rows of the multilingual table (all of them, about
    4-11 MB each; capped by the run's input size), one row a line in documents of 64 KB, with
    cl100k through ``encode_batch`` as NumPy arrays: the scanner's runs of two-byte (Russian,
    Arabic) and three-byte characters (Hindi, Tamil, Thai, Chinese), and Russian's many chunks
    past the short-chunk cache's 15 bytes."""

    params = (["ru", "ar", "hi", "ta", "th", "zh_CN"],)
    param_names = ["language"]
    timeout = 300

    def setup(self, language):
        self.tok = _openai_tokenizer("cl100k_base")
        text = language_text(language, "10MB")
        self.docs = _documents(text)
        self.tok.encode_batch(self.docs, workers=1, as_numpy=True)  # the first pass fills the caches

    def time_encode_batch_numpy_warm(self, language):
        self.tok.encode_batch(self.docs, workers=1, as_numpy=True)


class EncodeLanguagesUTF8Warm:
    """The rows of EncodeLanguagesWarm as one UTF-8 buffer, encoded in one call as
    ``encode_files``'s workers encode a file: the bytes validated (a vector at a time), then
    split and encoded; the warm pass."""

    params = EncodeLanguagesWarm.params
    param_names = EncodeLanguagesWarm.param_names
    timeout = 300

    def setup(self, language):
        try:
            from fastbpe.encode.batch import utf8_encoder
        except ImportError:
            skip("this commit has no encoder of UTF-8 bytes (fastbpe.encode.batch.utf8_encoder)")
        self.data = language_text(language, "10MB").encode("utf-8")
        self.encode = utf8_encoder(_openai_tokenizer("cl100k_base"))[0]
        self.encode(self.data)  # the first pass fills the caches

    def time_encode_utf8_warm(self, language):
        self.encode(self.data)


class EncodeOpenAICold:
    """The cold pass: 1 MB of English (documents of 64 KB, as the peers comparison) encoded by a
    tokenizer that has encoded nothing yet, so most distinct chunks miss the caches and are
    merged (or found whole among the tokens) and remembered. Loading is in setup, untimed; one
    call per sample, each after its own setup (number 1), and no warm-up call before them."""

    params = (["cl100k_base", "o200k_base"],)
    param_names = ["encoding"]
    number = 1
    repeat = 5
    warmup_time = 0
    timeout = 300

    def setup(self, encoding):
        self.tok = _openai_tokenizer(encoding)
        text = corpus_text("english", "1MB")
        self.docs = _documents(text)

    def time_encode_batch_numpy_cold(self, encoding):
        self.tok.encode_batch(self.docs, workers=1, as_numpy=True)


class StrUTF8Kept:
    """The UTF-8 a first encoding keeps inside each non-ASCII str (read in place by every later
    pass): made by fastbpe's encoder, through the special-token search that makes it and reads
    it (``NameFinder.holding``), against CPython's own ``PyUnicode_AsUTF8AndSize``, over 1 MB of
    English in documents of 64 KB (each holds some character past U+007F). Fresh strs for every
    sample: one call each, after its own setup."""

    params = (["fast", "cpython"],)
    param_names = ["impl"]
    number = 1
    repeat = 10
    warmup_time = 0

    def setup(self, impl):
        text = corpus_text("english", "1MB")
        self.docs = [(doc + "\x00")[:-1] for doc in _documents(text)]  # (new strs, nothing kept in them)
        if impl == "fast":
            name_finder = feature("encode.special.name_finder")
            if name_finder is None:
                skip("this commit has no NameFinder")
            self.make = name_finder(frozenset(["<|endoftext|>"])).holding
        else:
            import ctypes

            kept = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
            kept.restype, kept.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_void_p]
            self.make = lambda docs: [kept(doc, None) for doc in docs]

    def time_utf8_kept(self, impl):
        self.make(self.docs)


class EncodeLanguagesCold:
    """The cold pass over 1 MB of one language's rows (documents of 64 KB, as
    EncodeLanguagesWarm) by a tokenizer that has encoded nothing yet: most distinct chunks are
    merged, and most pairs a merge looks up (two Chinese characters' tokens, say) are no merge,
    which the pair table's filter answers. One call per sample, each after its own setup."""

    params = (["ru", "ar", "hi", "ta", "th", "zh_CN"], ["cl100k_base", "o200k_base"])
    param_names = ["language", "encoding"]
    number = 1
    repeat = 5
    warmup_time = 0
    timeout = 300

    def setup(self, language, encoding):
        self.tok = _openai_tokenizer(encoding)
        text = language_text(language, "1MB")
        self.docs = _documents(text)

    def time_encode_batch_numpy_cold(self, language, encoding):
        self.tok.encode_batch(self.docs, workers=1, as_numpy=True)


class LoadOpenAI:
    """Building fastbpe's cl100k tokenizer from the rank file (100k tokens), and that plus the
    first ``encode`` (any lazy initialisation the encoder defers to its first call)."""

    def setup(self):
        _openai_tokenizer("cl100k_base")  # skip early when unavailable; warms the file cache

    def time_load_cl100k(self):
        _openai_tokenizer("cl100k_base")

    def time_load_and_first_encode_cl100k(self):
        _openai_tokenizer("cl100k_base").encode("hello world")


def _load(impl: str, name: str):
    """A loader of one shared tokenizer file: fastbpe's, or its own library's (tiktoken,
    tokenizers). Skips when the file, the library or the loader is absent."""
    if name.endswith("_base"):
        if impl == "fast":
            _openai_tokenizer(name)
            return lambda: _openai_tokenizer(name)
        tiktoken_encoding(name)
        return lambda: tiktoken_encoding(name)
    if name == "gpt2":
        return _load_gpt2(impl)
    path = sentencepiece_json_file() if name == "sentencepiece-32k" else data_file(f"tokenizers/{name}/tokenizer.json")
    if path is None:
        skip(f"tokenizers/{name}/tokenizer.json is not in the shared data")
    if impl == "fast":
        from_huggingface = feature("Tokenizer.from_huggingface")
        if from_huggingface is None:
            skip("Tokenizer.from_huggingface is not in this commit")
        return lambda: from_huggingface(str(path))
    try:
        import tokenizers
    except ImportError:
        skip("tokenizers is not installed")
    return lambda: tokenizers.Tokenizer.from_file(str(path))


def _load_gpt2(impl: str):
    """A loader of GPT-2's ``encoder.json`` + ``vocab.bpe``: fastbpe's, or tokenizers' BPE model
    with GPT-2's byte-level steps. Skips as :func:`_load` does."""
    encoder, vocab = data_file("tokenizers/encoder.json"), data_file("tokenizers/vocab.bpe")
    if encoder is None or vocab is None:
        skip("GPT-2's encoder.json and vocab.bpe are not in the shared data")
    if impl == "fast":
        from_gpt2 = feature("Tokenizer.from_gpt2")
        if from_gpt2 is None:
            skip("Tokenizer.from_gpt2 is not in this commit")
        return lambda: from_gpt2(str(encoder), str(vocab))
    try:
        import tokenizers
        from tokenizers import decoders, models, pre_tokenizers
    except ImportError:
        skip("tokenizers is not installed")

    def load():
        tok = tokenizers.Tokenizer(models.BPE.from_file(str(encoder), str(vocab)))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        return tok
    return load


class Load:
    """Loading a real tokenizer file, and loading it then encoding a first short text (tables
    an encoder builds lazily count there): fastbpe against the file's own library (tiktoken for
    the ``.tiktoken`` files, tokenizers for llama3's and qwen3's ``tokenizer.json``, GPT-2's
    ``encoder.json`` + ``vocab.bpe``, and a character-level ``tokenizer.json`` of Llama 2's
    layout and size, ``sentencepiece-32k``, written from :func:`sentencepiece_model_file`)."""

    params = (["fast", "peer"], ["cl100k_base", "o200k_base", "llama3", "qwen3", "gpt2", "sentencepiece-32k"])
    param_names = ["impl", "file"]
    timeout = 120

    def setup(self, impl, file):
        self.load = _load(impl, file)  # also warms the page cache
        self.load()

    def time_load(self, impl, file):
        self.load()

    def time_load_and_first_encode(self, impl, file):
        tok = self.load()
        if hasattr(tok, "encode_ordinary"):
            tok.encode_ordinary("hello world, 12345")
        else:
            tok.encode("hello world, 12345", add_special_tokens=False)


class LoadOwnFile:
    """Loading fastbpe's own file (what ``save`` and ``fastbpe train`` write) of a published
    vocabulary, and of a character-level one of Llama 2's layout and size
    (``sentencepiece-32k``), saved in setup: the reader of the format fastbpe's users load most."""

    params = (["cl100k_base", "llama3", "sentencepiece-32k"],)
    param_names = ["file"]
    timeout = 120

    def setup(self, file):
        import tempfile
        tok = _load("fast", file)()
        if not hasattr(tok, "save"):
            skip("Tokenizer.save is not in this commit")
        self.folder = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.folder.name, "tokenizer.fastbpe.json")
        tok.save(self.path)
        self.load = fastbpe_module().load
        self.load(self.path)  # (warms the page cache)

    def teardown(self, file):
        self.folder.cleanup()

    def time_load(self, file):
        self.load(self.path)


class LoadSentencePieceModel:
    """Loading a SentencePiece BPE ``.model`` file of 32,000 pieces (Llama 2's size and layout,
    written by :func:`sentencepiece_model_file`): ``fastbpe.load`` against sentencepiece's
    ``SentencePieceProcessor`` (``impl="peer"``, when installed). Setup checks that both give
    the same ids."""

    params = (["fast", "peer"],)
    param_names = ["impl"]
    timeout = 120

    def setup(self, impl):
        path = str(sentencepiece_model_file())
        fastbpe = fastbpe_module()
        try:
            tok = fastbpe.load(path)
        except ValueError as exc:
            skip(f"this commit does not read SentencePiece models ({exc})")
        try:
            import sentencepiece
        except ImportError:
            if impl == "peer":
                skip("sentencepiece is not installed")
        else:
            text = corpus_text("generated", "10KB")
            processor = sentencepiece.SentencePieceProcessor(model_file=path)
            if tok.encode_ordinary(text) != processor.encode(text):
                raise AssertionError("fastbpe's ids differ from sentencepiece's")
        if impl == "fast":
            self.load = lambda: fastbpe.load(path)
        else:
            self.load = lambda: sentencepiece.SentencePieceProcessor(model_file=path)

    def time_load(self, impl):
        self.load()


class DecodeSentencePiece:
    """``decode`` with a SentencePiece model of 32,000 pieces (Llama 2's layout, as
    ``LoadSentencePieceModel``'s), as its ``.model`` and as its ``tokenizer.json``: the ids of
    1 MB of English in one call, and what a streaming decoder does, 10,000 calls of 4 ids each;
    fastbpe against the file's own library (``impl="peer"``, when installed: sentencepiece's
    ``decode``, tokenizers' ``decode(ids, skip_special_tokens=False)``). Setup checks that both
    give the same text."""

    params = (["fast", "peer"], ["model", "tokenizer.json"])
    param_names = ["impl", "file"]
    timeout = 120

    def setup(self, impl, file):
        path = str(sentencepiece_model_file() if file == "model" else sentencepiece_json_file())
        try:
            tok = fastbpe_module().load(path)
        except ValueError as exc:
            skip(f"this commit does not read SentencePiece-style files ({exc})")
        self.ids = tok.encode_ordinary(corpus_text("english", "1MB"))
        self.pieces = [self.ids[k:k + 4] for k in range(0, 40000, 4)]
        self.decode = tok.decode
        try:
            peer = _sentencepiece_decode(path) if file == "model" else _tokenizers_decode(path)
        except ImportError as exc:
            if impl == "peer":
                skip(f"{exc.name} is not installed")
        else:
            if any(tok.decode(ids) != peer(ids) for ids in [self.ids] + self.pieces[:1000]):
                raise AssertionError(f"fastbpe's text differs from {file}'s own library's")
            if impl == "peer":
                self.decode = peer

    def time_decode_1mb(self, impl, file):
        self.decode(self.ids)

    def time_decode_4_ids(self, impl, file):
        decode = self.decode
        for piece in self.pieces:
            decode(piece)


def _sentencepiece_decode(path: str):
    import sentencepiece

    return sentencepiece.SentencePieceProcessor(model_file=path).decode


def _tokenizers_decode(path: str):
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(path)
    return lambda ids: tok.decode(ids, skip_special_tokens=False)


class DecodeOpenAI:
    """``decode`` of the cl100k ids of 1 MB of English (a list of ints): fastbpe's compiled
    gather against tiktoken's ``decode`` on the same ranks."""

    params = (["fast", "tiktoken"],)
    param_names = ["impl"]

    def setup(self, impl):
        enc = tiktoken_encoding("cl100k_base")
        self.ids = enc.encode_ordinary(corpus_text("english", "1MB"))
        self.decode = _openai_tokenizer("cl100k_base").decode if impl == "fast" else enc.decode
        self.decode(self.ids[:100])

    def time_decode(self, impl):
        self.decode(self.ids)


class EncodeShortTexts:
    """What chat code does: 10,000 ``encode`` calls on messages of 5-300 characters (cl100k),
    and 100 ``encode_batch`` calls on 16 of them each (a small batch: what its setup costs
    beside the encoding), fastbpe against tiktoken on the same ranks: per-call cost, not
    throughput."""

    params = (["fast", "tiktoken"],)
    param_names = ["impl"]

    def setup(self, impl):
        enc = tiktoken_encoding("cl100k_base")
        lines = [line for line in corpus_text("english", "1MB").splitlines() if 5 <= len(line) <= 300]
        self.texts = (lines * (10000 // max(len(lines), 1) + 1))[:10000]
        tok = _openai_tokenizer("cl100k_base") if impl == "fast" else enc
        self.encode, self.encode_batch = tok.encode, getattr(tok, "encode_batch", None)  # (None: a commit without it)
        self.encode(self.texts[0])
        self.batches = [self.texts[k:k + 16] for k in range(0, min(len(self.texts), 1600), 16)]

    def time_encode_10000_short_texts(self, impl):
        encode = self.encode
        for text in self.texts:
            encode(text)

    def time_encode_batch_100_batches_of_16_short_texts(self, impl):
        encode_batch = self.encode_batch
        for texts in self.batches:
            encode_batch(texts)


class DecodeStreaming:
    """What a streaming decoder does: 10,000 ``decode`` calls of 4 ids each, and 10,000
    ``decode_single_token_bytes`` calls (cl100k ids of English), fastbpe against tiktoken on the
    same ranks: per-call cost, not throughput."""

    params = (["fast", "tiktoken"],)
    param_names = ["impl"]

    def setup(self, impl):
        enc = tiktoken_encoding("cl100k_base")
        ids = enc.encode_ordinary(corpus_text("english", "1MB"))[:40000]
        self.pieces = [ids[i:i + 4] for i in range(0, len(ids), 4)]
        self.ids = ids[:10000]
        tok = _openai_tokenizer("cl100k_base") if impl == "fast" else enc
        self.decode, self.single = tok.decode, tok.decode_single_token_bytes
        self.decode(self.pieces[0])

    def time_decode_4_ids(self, impl):
        decode = self.decode
        for piece in self.pieces:
            decode(piece)

    def time_decode_single_token_bytes(self, impl):
        single = self.single
        for i in self.ids:
            single(i)


class EncodeFilesLines:
    """``encode_files`` with ``documents="line"`` and ``"blank-line"`` (what ``fastbpe encode
    --documents ...`` runs) over 4 MB of English (about 88,000 lines, 30,000 paragraphs),
    cl100k, raw shards, at 1 and 2 workers: the documents found and encoded in place, a piece
    of the file at a time. ``blank-line-long``: the file's second quarter one paragraph (its
    blank lines made single newlines) and blocks of 256 KB, so that it is longer than a block:
    cut into blocks on its own, the paragraphs after it read a piece at a time again."""

    params = (["line", "blank-line", "blank-line-long"], [1, 2])
    param_names = ["documents", "workers"]
    timeout = 300

    def setup(self, documents, workers):
        import tempfile

        encode_files = fastbpe_module().encode_files
        if "documents" not in inspect.signature(encode_files).parameters:
            skip("encode_files(documents=...) is not in this commit")
        self.encode_files = encode_files
        self.tok = _openai_tokenizer("cl100k_base")
        self.dir = tempfile.mkdtemp(prefix="fastbpe-bench-documents-")
        self.path = os.path.join(self.dir, "english.txt")
        data = corpus_text("english", "4MB").encode("utf-8")
        self.options = {"documents": documents}
        if documents == "blank-line-long":
            if "block_size" not in inspect.signature(encode_files).parameters:
                skip("encode_files(block_size=...) is not in this commit")
            quarter = len(data) // 4
            data = data[:quarter] + re.sub(b"\n\n+", b"\n", data[quarter:2 * quarter]) + data[2 * quarter:]
            self.options = {"documents": "blank-line", "block_size": 256 << 10}
        with open(self.path, "wb") as f:
            f.write(data)
        self.runs = 0
        self.time_encode_files(documents, workers)

    def teardown(self, documents, workers):
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)

    def time_encode_files(self, documents, workers):
        self.runs += 1
        self.encode_files(self.tok, [self.path], os.path.join(self.dir, f"out{self.runs}"), workers=workers,
                          fmt="raw", progress=False, **self.options)


class EncodeFilesSmallShards:
    """``encode_files`` of 1 MB of English (about 260,000 cl100k ids) into shards of 250 and of
    1,000 ids (about 1,040 and 260 shards), raw, one worker: what each shard costs besides its
    ids (its file, renamed into place and synced, and the manifest that lists it)."""

    params = ([250, 1000],)
    param_names = ["shard_size"]
    timeout = 300

    def setup(self, shard_size):
        import tempfile

        self.encode_files = fastbpe_module().encode_files
        self.tok = _openai_tokenizer("cl100k_base")
        self.dir = tempfile.mkdtemp(prefix="fastbpe-bench-shards-")
        self.path = os.path.join(self.dir, "english.txt")
        with open(self.path, "wb") as f:
            f.write(corpus_text("english", "1MB").encode("utf-8"))
        self.runs = 0

    def teardown(self, shard_size):
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)

    def time_encode_files(self, shard_size):
        self.runs += 1
        self.encode_files(self.tok, [self.path], os.path.join(self.dir, f"out{self.runs}"), shard_size=shard_size,
                          workers=1, fmt="raw", progress=False)


class EncodeBatchShortLines:
    """Short texts (up to 20,000 rows of the multilingual table, 200 characters at most, 9
    languages) with cl100k: a loop of ``encode_ordinary`` against ``encode_batch`` at 1 and 2
    workers (lists of ids, and arrays: ``batch-arrays``), and tiktoken's
    ``encode_ordinary_batch`` at 1 and 2 threads."""

    params = (["loop", "batch", "batch-arrays", "tiktoken"], [1, 2])
    param_names = ["impl", "workers"]
    timeout = 300

    def setup(self, impl, workers):
        if impl == "loop" and workers == 2:
            skip("a loop has one worker")
        rows = parallel_rows(2300)
        lines = [row[:200] for lang in sorted(rows) for row in rows[lang]][:20000]
        budget = input_size("10MB")  # the smoke run's cap applies to the total
        total, self.lines = 0, []
        for line in lines:
            total += len(line.encode("utf-8"))
            if total > budget:
                break
            self.lines.append(line)
        if impl == "tiktoken":
            enc = tiktoken_encoding("cl100k_base")
            self.run = lambda: enc.encode_ordinary_batch(self.lines, num_threads=workers)
        else:
            tok = _openai_tokenizer("cl100k_base")
            if impl == "loop":
                self.run = lambda: [tok.encode_ordinary(line) for line in self.lines]
            else:
                if not hasattr(tok, "encode_batch"):
                    skip("Tokenizer.encode_batch is not in this commit")
                options = {"disallowed_special": ()}
                if impl == "batch-arrays":
                    if "as_numpy" not in inspect.signature(tok.encode_batch).parameters:
                        skip("encode_batch(as_numpy=True) is not in this commit")
                    options["as_numpy"] = True
                self.run = lambda: tok.encode_batch(self.lines, workers=workers, **options)
        self.run()

    def time_encode_lines(self, impl, workers):
        self.run()


class EncodeAddedTokens:
    """Added tokens that are not special (Qwen's ``<think>``, matched in every text): cl100k with
    four of them against cl100k alone, on 4 MB of English with a ``<think>...</think>`` pair
    every 200 lines. ``encode_ordinary_batch`` of the lines (one worker), and ``encode_files``
    of the file as one document (two workers: cut only where no such token straddles the cut)
    and as lines (each task's bytes searched for them before its one compiled call)."""

    params = (["none", "always"], ["batch", "file", "line"])
    param_names = ["added", "call"]
    timeout = 300

    def setup(self, added, call):
        import tempfile

        fastbpe = fastbpe_module()
        base = _openai_tokenizer("cl100k_base")
        names = ["<think>", "</think>", "<tool_call>", "</tool_call>"]
        self.tok = base
        if added == "always":
            top = max(base.special_tokens.values()) + 1
            try:
                self.tok = fastbpe.Tokenizer(base.token_bytes, base.merge_ids, pattern="cl100k",
                                             merge_rule=base.merge_rule,
                                             special_tokens={**base.special_tokens,
                                                             **{name: top + k for k, name in enumerate(names)}},
                                             special_token_options={name: {"always": True} for name in names})
            except ValueError:
                skip("tokens matched always (special_token_options 'always') are not in this commit")
        lines = corpus_text("english", "4MB").splitlines(keepends=True)
        for k in range(0, len(lines), 200):
            lines[k] = "<think>" + lines[k].rstrip("\n") + "</think>\n"
        self.lines = lines
        self.dir = tempfile.mkdtemp(prefix="fastbpe-bench-added-")
        self.path = os.path.join(self.dir, "english.txt")
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("".join(lines))
        self.runs = 0
        self.tok.encode_ordinary_batch(self.lines[:1000], workers=1)

    def teardown(self, added, call):
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)

    def time_encode(self, added, call):
        if call == "batch":
            self.tok.encode_ordinary_batch(self.lines, workers=1)
            return
        self.runs += 1
        fastbpe_module().encode_files(self.tok, [self.path], os.path.join(self.dir, f"out{self.runs}"), workers=2,
                                      documents=call, fmt="raw", progress=False)
