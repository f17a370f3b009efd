"""asv: peak memory of whole operations on whole files: ``count_words``, ``train`` and
``encode_files`` (what ``fastbpe encode`` runs), each reading its input from disk.

Inputs: the whole English corpus (``english.txt.gz``, 167 MB of text; skipped without the
shared data) and one word without whitespace (lower-case letters, 5 MB and 50 MB; generated),
which every split pattern keeps as a single chunk: the input where a chunk table or an encoder
that holds a chunk at once holds the whole file. ``english_letters_50MB`` is such a word cut
from the English corpus (its letters only, mixed case): far more distinct pairs than the
generated word, the case where the learner's pair tables, not the long-chunk store, make the
training's peak.

asv's ``peakmem_`` is the peak resident set size of the benchmark's process, setup included: the
inputs are made on disk by ``setup_cache`` (run in a process of its own), the benchmark gets
their paths only, and ``MemoryFloor`` gives the floor every figure includes (Python, NumPy and
fastbpe imported). One worker throughout: the memory of worker processes would not be counted.
Encoding uses GPT-2's ranks (``r50k_base.tiktoken`` of the shared data; skipped without it).
"""
import shutil
import tempfile

from .common import corpus_file, data_file, fastbpe_module, letters_word_file, long_word_file, require, skip

INPUTS = ["english", "long_word_5MB", "long_word_50MB", "english_letters_50MB"]
VOCAB_SIZE = 32768
ENCODER = "tokenizers/tiktoken/r50k_base.tiktoken"


def _input_paths():
    """``{input: path}`` of every input there is (a missing corpus maps to its reason)."""
    paths = {}
    for name in INPUTS:
        try:
            if name.startswith("long_word_"):
                paths[name] = str(long_word_file(name[len("long_word_"):]))
            elif name.startswith("english_letters_"):
                paths[name] = str(letters_word_file(name[len("english_letters_"):]))
            else:
                paths[name] = str(corpus_file(name))
        except NotImplementedError as exc:  # common.skip: the corpus is absent
            paths[name] = exc
    return paths


def _path(paths, name) -> str:
    if isinstance(paths[name], Exception):
        skip(str(paths[name]))
    return paths[name]


def _encoder_path(relative: str) -> str:
    """The path of a tokenizer file of the shared data (the benchmark is skipped without it)."""
    encoder = data_file(relative)
    if encoder is None:
        skip(f"{relative} not found in the shared data (set FASTBPE_DATA)")
    return str(encoder)


class PeakMemory:
    """Counting and training (vocabulary 32768) on a whole file."""

    params = (INPUTS,)
    param_names = ["input"]
    timeout = 1200  # training on the 50 MB word took minutes before the long-word work

    def setup_cache(self):
        return _input_paths()

    def setup(self, paths, name):
        self.path = _path(paths, name)
        fastbpe_module()

    def peakmem_count_words(self, paths, name):
        fastbpe_module().count_words(self.path, workers=1, progress=False)

    def peakmem_train(self, paths, name):
        fastbpe_module().train(self.path, VOCAB_SIZE, workers=1, progress=False)


class EncodePeakMemory:
    """``encode_files`` of a whole file into token shards with GPT-2's ranks, loading included
    (as ``fastbpe encode --workers 1`` does); the shards go to a temporary folder."""

    params = (INPUTS,)
    param_names = ["input"]
    timeout = 1200

    def setup_cache(self):
        return _input_paths()

    def setup(self, paths, name):
        self.path = _path(paths, name)
        self.encoder = _encoder_path(ENCODER)
        self.encode_files = require("shards.encode_files")
        self.out = tempfile.mkdtemp(prefix="fastbpe-peakmem-")

    def teardown(self, paths, name):
        shutil.rmtree(self.out, ignore_errors=True)

    def peakmem_encode(self, paths, name):
        tokenizer = fastbpe_module().load(self.encoder)
        out = tempfile.mkdtemp(dir=self.out)  # a new folder: never a finished job to resume
        self.encode_files(tokenizer, self.path, out, workers=1, progress=False, separator=None)


class EncodeLongWordPeakMemory:
    """``Tokenizer.encode_to_numpy`` of the long word read as one str with cl100k_base's ranks
    (one chunk: the backtracking encoder; ids written once, into the result)."""

    params = (["long_word_5MB", "long_word_50MB"],)
    param_names = ["input"]
    timeout = 1200

    def setup_cache(self):
        return _input_paths()

    def setup(self, paths, name):
        self.path = _path(paths, name)
        self.encoder = _encoder_path("tokenizers/tiktoken/cl100k_base.tiktoken")

    def peakmem_encode_to_numpy(self, paths, name):
        with open(self.path, encoding="utf-8") as f:
            text = f.read()
        fastbpe_module().openai("cl100k_base", self.encoder).encode_to_numpy(text)


class MemoryFloor:
    """What every figure above includes: the benchmark process with fastbpe imported."""

    def setup(self):
        fastbpe_module()

    def peakmem_import(self):
        pass
