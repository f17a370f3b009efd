"""Inputs for the benchmarks: generated text, real corpora, and the references' helpers.

Everything here is deterministic (fixed seeds, fixed corpus prefixes) so that two commits, or two
libraries, are timed on exactly the same bytes. Inputs are cached on disk (outside the repo, in
``FASTBPE_BENCH_CACHE``, default ``<tmp>/fastbpe-bench-cache``) because asv runs ``setup`` in a
fresh process for every parameter combination; a cache file is keyed by everything that makes it,
and is made with pure-Python code only (never with the fastbpe code under test), so a buggy commit
cannot poison another commit's inputs.

asv skips a benchmark whose ``setup`` raises ``NotImplementedError``; :func:`skip` does that with
a reason, used for features not present in the checked-out commit, absent data, and reference
runs that would take minutes.

Where the shared data lives is decided in one place, ``benchmarks/data.py`` (also used by the
tests): :func:`data_dir` and :func:`data_file` here only ask it.
"""
import functools
import gzip
import hashlib
import importlib.util
import os
import pickle
import struct
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

__all__ = [
    "REPO_ROOT", "SIZES", "parse_size", "format_size", "skip", "data_dir", "data_file",
    "fastbpe_module", "feature", "generated_text", "corpus_text", "reference_table",
    "reference_words", "regex_pattern", "reference_count", "parallel_rows", "LANGUAGES",
    "byte_pair_ranks_encode", "long_word_file", "letters_word_file", "sentencepiece_model_file", "sentencepiece_json_file", "corpus_file",
]

REPO_ROOT = Path(__file__).resolve().parents[2]  # benchmarks/suites/common.py
CACHE_VERSION = 4

try:  # pytest and ``python -m benchmarks.peers``: this module is benchmarks.suites.common
    from .. import data as shared_data
except ImportError:
    # asv imports its benchmark_dir (benchmarks/suites) as a top-level package, ``suites``, so
    # ``benchmarks`` is no package there: load the same benchmarks/data.py by its path.
    _spec = importlib.util.spec_from_file_location("fastbpe_benchmarks_data", REPO_ROOT / "benchmarks" / "data.py")
    shared_data = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(shared_data)

SIZES = {"10KB": 10_000, "100KB": 100_000, "1MB": 1_000_000, "10MB": 10_000_000,
         "100MB": 100_000_000}
LANGUAGES = ("en", "ms", "id", "ta", "zh_CN", "th", "hi", "ar", "ru")


def parse_size(size) -> int:
    """Bytes in a size written like ``10MB``, ``100KB``, ``1.5MB`` or a plain number.

    Decimal units, as disk sizes are written (1 MB = 10**6 bytes).

    >>> parse_size("10MB"), parse_size("100KB"), parse_size("1.5MB"), parse_size(42)
    (10000000, 100000, 1500000, 42)
    """
    if isinstance(size, (int, np.integer)):
        return int(size)
    text = str(size).strip().upper().replace(" ", "")
    for unit, factor in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3), ("B", 1)):
        if text.endswith(unit):
            return int(round(float(text[: -len(unit)]) * factor))
    return int(text)


def format_size(nbytes: int) -> str:
    """The inverse of :func:`parse_size` for round sizes.

    >>> format_size(10_000_000), format_size(100_000), format_size(1234)
    ('10MB', '100KB', '1234B')
    """
    for unit, factor in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if nbytes >= factor and nbytes % factor == 0:
            return f"{nbytes // factor}{unit}"
    return f"{nbytes}B"


TINY_ENV = "FASTBPE_BENCH_TINY"
TINY_BYTES = 20_000


def input_size(size) -> int:
    """Bytes of input a benchmark asks for; capped at 20 KB when ``FASTBPE_BENCH_TINY=1`` (the
    test suite's smoke run of every benchmark, which checks that they work, not how fast)."""
    nbytes = parse_size(size)
    if os.environ.get(TINY_ENV, "") not in ("", "0"):
        nbytes = min(nbytes, TINY_BYTES)
    return nbytes


def skip(reason: str):
    """Skip this asv benchmark (asv treats NotImplementedError in setup as 'skipped')."""
    raise NotImplementedError(reason)


# ---- the package under test -------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def fastbpe_module():
    """``import fastbpe``.

    asv installs the commit under test into its own environment, where the import just works.
    With ``--python=same`` and nothing installed (a checkout built with
    ``python setup.py build_ext --inplace``) the repo root is put on ``sys.path`` so that the
    checkout itself is measured. Never in an asv-built environment: there a failed import must
    stay a failure rather than silently measure the working tree.
    """
    try:
        import fastbpe
    except ImportError:
        if os.environ.get("ASV_ENV_TYPE") not in (None, "", "existing"):
            raise
        sys.path.insert(0, str(REPO_ROOT))
        import fastbpe
    return fastbpe


def feature(dotted: str):
    """The object at ``dotted`` under ``fastbpe`` (``"kernels.gather"``,
    ``"Tokenizer.encode_batch"``), or None when this commit does not have it.

    Lets one suite measure every commit: a benchmark whose feature is missing skips.
    """
    import importlib

    obj = fastbpe_module()
    module_path = "fastbpe"
    for part in dotted.split("."):
        module_path += "." + part
        # A submodule first when there is one: ``fastbpe.pretokenize`` is both a function
        # (re-exported) and a module, and ``pretokenize.PATTERNS`` means the module's.
        if isinstance(obj, type(importlib)):
            try:
                obj = importlib.import_module(module_path)
                continue
            except ModuleNotFoundError as exc:
                if exc.name != module_path:  # the module is there but its import is broken
                    raise
        try:
            obj = getattr(obj, part)
        except AttributeError:
            return None
    return obj


def require(dotted: str):
    """:func:`feature`, or skip the benchmark naming what is missing."""
    obj = feature(dotted)
    if obj is None:
        skip(f"fastbpe.{dotted} is not in this commit")
    return obj


# ---- cache ------------------------------------------------------------------------------------

def _cache_dir() -> Path:
    path = Path(os.environ.get("FASTBPE_BENCH_CACHE")
                or Path(tempfile.gettempdir()) / "fastbpe-bench-cache")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _cached(key: str, make):
    """``make()``, pickled on disk under a hash of ``key``; written to a temp file, then renamed,
    so that two benchmark processes racing on the same key never read half a file."""
    digest = hashlib.sha1(f"v{CACHE_VERSION}:{key}".encode()).hexdigest()[:20]
    path = _cache_dir() / f"{digest}.pkl"
    if path.exists():
        try:
            with open(path, "rb") as f:
                return pickle.load(f)
        except Exception:  # a corrupt cache file is remade, never trusted
            pass
    value = make()
    _write_cache_file(path, lambda f: pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL))
    return value


def _write_cache_file(path: Path, write) -> None:
    """``write(f)`` into a temporary file beside ``path``, then renamed to it, so that two
    benchmark processes racing on the same key never read half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _cached_file(key: str, suffix: str, write) -> Path:
    """The path of a cache file made once by ``write(f)`` (for inputs read from disk, which a
    benchmark must not hold in memory)."""
    digest = hashlib.sha1(f"v{CACHE_VERSION}:{key}".encode()).hexdigest()[:20]
    path = _cache_dir() / f"{digest}{suffix}"
    if not path.exists():
        _write_cache_file(path, write)
    return path


# ---- generated text ---------------------------------------------------------------------------

_ONSETS = ["", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
           "th", "sh", "ch", "st", "tr", "pl", "gr"]
_NUCLEI = ["a", "e", "i", "o", "u", "ea", "ou", "ai", "y"]
_CODAS = ["", "", "", "n", "r", "s", "t", "l", "nd", "ng", "st"]
_FOREIGN = ["café", "naïve", "straße", "привет", "мир", "日本語", "東京", "ภาษา", "हिन्दी",
            "عربي", "Ελληνικά", "😀", "ß", "ø"]


def _word_list(rng: np.random.Generator, n: int) -> List[str]:
    """About ``n`` distinct pseudo-words of English-like syllables, some capitalised, some
    numbers, a few non-ASCII, so that every branch of a byte-level BPE is exercised."""
    words, seen = [], set()
    for i in range(n):
        syllables = int(rng.integers(1, 5))
        picks = rng.integers(0, 1 << 30, size=(syllables, 3))
        word = "".join(_ONSETS[a % len(_ONSETS)] + _NUCLEI[b % len(_NUCLEI)] + _CODAS[c % len(_CODAS)]
                       for a, b, c in picks.tolist())
        if i % 17 == 0:
            word = word.capitalize()
        elif i % 29 == 0:
            word = str(int(rng.integers(0, 100_000)))
        elif i % 101 == 0:
            word = _FOREIGN[(i // 101) % len(_FOREIGN)] + word[:2]
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def _generate(nbytes: int, seed: int) -> str:
    words = np.array(_cached(f"words:{seed}:200000",
                             lambda: _word_list(np.random.default_rng(seed), 200_000)),
                     dtype=object)
    rng = np.random.default_rng(seed + 1)
    # Zipf-distributed word frequencies, as in natural text (rank r has weight 1/r): the number
    # of distinct words then keeps growing with the corpus (Heaps' law), as in real text.
    weights = 1.0 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    punctuation = np.array(["", "", "", "", "", "", ",", ".", "'s", "!", "?", ";", ":"],
                           dtype=object)
    parts: List[str] = []
    size = 0
    while size < nbytes:
        n = 50_000
        picked = words[rng.choice(len(words), size=n, p=weights)]
        punct = punctuation[rng.integers(0, len(punctuation), size=n)]
        breaks = np.where(rng.random(n) < 0.02, "\n", " ").astype(object)
        block = "".join((picked + punct + breaks).tolist())
        parts.append(block)
        size += len(block.encode("utf-8"))
    return _cut_utf8("".join(parts).encode("utf-8"), nbytes)


def _cut_utf8(data: bytes, nbytes: int) -> str:
    """The longest prefix of ``data`` of at most ``nbytes`` bytes that is whole UTF-8."""
    return data[:nbytes].decode("utf-8", "ignore")


def generated_text(nbytes, seed: int = 0) -> str:
    """Deterministic English-like text of (at most, and within 4 bytes of) ``nbytes`` UTF-8 bytes.

    >>> t = generated_text(1000)
    >>> t == generated_text(1000), 996 <= len(t.encode()) <= 1000
    (True, True)
    """
    nbytes = parse_size(nbytes)
    return _cached(f"generated:{nbytes}:{seed}", lambda: _generate(nbytes, seed))


def long_word_file(nbytes) -> Path:
    """A file of ``nbytes`` lower-case ASCII letters and nothing else: the pseudo-words of
    :func:`generated_text` run together into one word, which every split pattern keeps as a
    single chunk (the worst case of counting and encoding: one chunk as long as the input).
    Written in pieces, so that making it never holds the whole text."""
    nbytes = input_size(nbytes)

    def write(f):
        words = [w.lower() for w in _cached("words:0:200000", lambda: _word_list(np.random.default_rng(0), 200_000))
                 if w.isascii() and w.isalpha()]
        words = np.array(words, dtype=object)
        rng = np.random.default_rng(nbytes)
        weights = 1.0 / np.arange(1, len(words) + 1)
        weights /= weights.sum()
        left = nbytes
        while left > 0:
            piece = "".join(words[rng.choice(len(words), size=20_000, p=weights)].tolist()).encode("ascii")
            f.write(piece[:left])
            left -= min(len(piece), left)

    return _cached_file(f"long-word:{nbytes}", ".txt", write)


def letters_word_file(nbytes) -> Path:
    """A file of the first ``nbytes`` ASCII letters of the English corpus (every other byte
    removed): one word of real mixed-case letters, which every split pattern keeps as a single
    chunk. Its pairs are more varied than in :func:`long_word_file`'s lower-case pseudo-words
    (training at 32768 on 50 MB ends with 4.4M distinct pairs live), so the learner's pair
    tables weigh more beside the long-chunk store. Skips without the corpus."""
    nbytes = input_size(nbytes)
    path = data_file(CORPORA["english"])
    if path is None:
        skip(f"{CORPORA['english']} not found in {data_dir()} (set FASTBPE_DATA)")
    stat = path.stat()
    others = bytes(b for b in range(256) if not (65 <= b <= 90 or 97 <= b <= 122))

    def write(f):
        left = nbytes
        with gzip.open(path, "rb") as source:
            while left > 0:
                piece = source.read(1 << 22)
                if not piece:
                    skip(f"{CORPORA['english']} holds fewer than {nbytes} letters")
                piece = piece.translate(None, others)[:left]
                f.write(piece)
                left -= len(piece)

    return _cached_file(f"letters-word:{path}:{stat.st_size}:{stat.st_mtime_ns}:{nbytes}", ".txt", write)


def _protobuf_field(number: int, value) -> bytes:
    """One protobuf field: an int as a varint (wire type 0), a float as a float32 (5), bytes
    as themselves (2)."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while n >= 0x80:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        return bytes(out + bytes([n]))
    if isinstance(value, int):  # (a bool too)
        return varint(number << 3) + varint(int(value))
    if isinstance(value, float):
        return varint(number << 3 | 5) + struct.pack("<f", value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def sentencepiece_model_file(vocab_size: int = 32000):
    """A SentencePiece BPE ``.model`` file of about ``vocab_size`` pieces (Llama 2's layout: byte
    fallback, the identity map, spaces kept, a ``▁`` before the text), its protobuf written
    here: the pieces fastbpe learns from the lines of 2 MB of generated text with spaces as
    ``▁``, scored by the order they were learned in, as SentencePiece's trainer scores them.
    Skips where this commit cannot train on characters."""
    fastbpe = fastbpe_module()

    def write(f):
        lines = ["\u2581" + line.replace(" ", "\u2581") for line in corpus_text("generated", "2MB").split("\n")]
        try:
            tok = fastbpe.train(iter(lines), vocab_size - 259, unit="chars", pattern=r"(?s:.+)", min_frequency=2,
                                progress=False, workers=1)
        except (TypeError, ValueError) as exc:
            skip(f"this commit does not train on characters ({exc})")
        learned = [token for token in tok.token_bytes if token]
        chars = [token for token in learned if len(token.decode("utf-8")) == 1]
        merged = [token for token in learned if len(token.decode("utf-8")) > 1]
        pieces = [(b"<unk>", 0.0, 2), (b"<s>", 0.0, 3), (b"</s>", 0.0, 3)]
        pieces += [(f"<0x{b:02X}>".encode(), 0.0, 6) for b in range(256)]
        pieces += [(token, -float(k), 1) for k, token in enumerate(merged + chars)]
        model = b"".join(_protobuf_field(1, _protobuf_field(1, text) + _protobuf_field(2, score)
                                         + _protobuf_field(3, kind)) for text, score, kind in pieces)
        model += _protobuf_field(2, _protobuf_field(3, 2) + _protobuf_field(35, True))  # (BPE, byte fallback)
        model += _protobuf_field(3, _protobuf_field(1, b"identity") + _protobuf_field(3, True)
                                 + _protobuf_field(4, False) + _protobuf_field(5, True))
        f.write(model)

    return _cached_file(f"sentencepiece-model-{vocab_size}", ".model", write)


def sentencepiece_json_file(vocab_size: int = 32000):
    """:func:`sentencepiece_model_file`'s model as a Hugging Face ``tokenizer.json`` (Llama 2's
    and Mistral's layout: character-level BPE, byte fallback), written by fastbpe. Skips where
    this commit cannot read the model or write the file."""
    model = sentencepiece_model_file(vocab_size)

    def write(f):
        fastbpe = fastbpe_module()
        with tempfile.TemporaryDirectory() as folder:
            try:
                fastbpe.load(str(model)).to_huggingface(os.path.join(folder, "tokenizer.json"))
            except (AttributeError, ValueError) as exc:
                skip(f"this commit does not write a SentencePiece model as a tokenizer.json ({exc})")
            with open(os.path.join(folder, "tokenizer.json"), "rb") as written:
                f.write(written.read())

    return _cached_file(f"sentencepiece-json-{vocab_size}", ".json", write)


# ---- real corpora -----------------------------------------------------------------------------

def data_dir() -> Path:
    """The shared data folder (``benchmarks/data.py``: ``FASTBPE_DATA``, or ``../shared/data``
    relative to the repo root)."""
    return shared_data.data_dir()


def data_file(name: str) -> Optional[Path]:
    """The path of a shared data file, or None when it is absent."""
    try:
        return shared_data.data_path(name)
    except shared_data.MissingData:
        return None


CORPORA = {"english": "english.txt.gz", "code": "code.txt.gz", "malay": "malay.txt"}


def _read_prefix(path: Path, nbytes: int) -> str:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        return _cut_utf8(f.read(nbytes), nbytes)


def corpus_text(source: str, nbytes) -> str:
    """``nbytes`` of text: ``generated`` (always there) or the prefix of a real corpus
    (``english``, ``code``, ``malay``; skips the benchmark when the file is absent or shorter)."""
    nbytes = input_size(nbytes)
    if source == "generated":
        return generated_text(nbytes)
    if source not in CORPORA:
        raise ValueError(f"unknown corpus {source!r}; one of generated, {', '.join(CORPORA)}")
    path = data_file(CORPORA[source])
    if path is None:
        skip(f"{CORPORA[source]} not found in {data_dir()} (set FASTBPE_DATA)")
    stat = path.stat()
    key = f"corpus:{path}:{stat.st_size}:{stat.st_mtime_ns}:{nbytes}"
    text = _cached(key, lambda: _read_prefix(path, nbytes))
    if len(text) < nbytes // 5:  # a short file: compare characters to bytes, loosely
        skip(f"{path.name} holds fewer than {nbytes} bytes")
    return text


def corpus_file(source: str) -> Path:
    """The whole of a shared corpus file (read from disk by the code measured; skips when it is
    absent), or, with tiny inputs, a plain file of its first 20 KB."""
    if source not in CORPORA:
        raise ValueError(f"unknown corpus {source!r}; one of {', '.join(CORPORA)}")
    path = data_file(CORPORA[source])
    if path is None:
        skip(f"{CORPORA[source]} not found in {data_dir()} (set FASTBPE_DATA)")
    if os.environ.get(TINY_ENV, "") in ("", "0"):
        return path
    stat = path.stat()
    key = f"corpus-file:{path}:{stat.st_size}:{stat.st_mtime_ns}:{TINY_BYTES}"
    return _cached_file(key, ".txt", lambda f: f.write(_read_prefix(path, TINY_BYTES).encode("utf-8")))


# ---- pure-Python references used as baselines and as inputs -----------------------------------

def regex_pattern(name: str) -> Optional[str]:
    """The regex of a named pre-tokenizer pattern in this commit, or None if it does not know it."""
    resolve = feature("pretokenize.resolve_pattern")
    patterns = feature("PATTERNS")
    if isinstance(patterns, dict) and isinstance(patterns.get(name), str):
        return patterns[name]
    if resolve is not None:
        try:
            resolved = resolve(name)
        except Exception:
            return None
        return resolved if isinstance(resolved, str) and resolved != name else None
    return None


# GPT-2's split, fixed here so that cached inputs never depend on the commit under test.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def reference_count(text: str, pattern: str = GPT2_PATTERN) -> Dict[bytes, int]:
    """Chunk counts in first-appearance order, the plain way: ``regex.findall`` and a dict.

    >>> reference_count("a a b a")
    {b'a': 1, b' a': 2, b' b': 1}
    """
    import regex

    counts: Dict[bytes, int] = {}
    for chunk in regex.findall(pattern, text):
        key = chunk.encode("utf-8")
        counts[key] = counts.get(key, 0) + 1
    return counts


def reference_table(source: str, nbytes) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The GPT-2 chunk table of a corpus as ``(data, offsets, counts)`` arrays, made by
    :func:`reference_count` and cached; build a ``fastbpe.WordTable`` from it."""
    nbytes = input_size(nbytes)
    text = corpus_text(source, nbytes)

    def make():
        counts = reference_count(text)
        chunks = list(counts)
        offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
        np.cumsum([len(c) for c in chunks], out=offsets[1:])
        data = np.frombuffer(b"".join(chunks), dtype=np.uint8).copy()
        return data, offsets, np.fromiter(counts.values(), dtype=np.int64, count=len(chunks))

    return _cached(f"table:gpt2:{source}:{nbytes}:{len(text)}", make)


def reference_words(arrays) -> Dict[Tuple[bytes, ...], int]:
    """The chunk table as the reference learner's input: tuples of 1-byte ``bytes``."""
    data, offsets, counts = arrays
    buf = data.tobytes()
    offs = offsets.tolist()
    return {
        tuple(bytes([b]) for b in buf[offs[i] : offs[i + 1]]): c
        for i, c in enumerate(counts.tolist())
    }


def byte_pair_ranks_encode(chunks: List[bytes], ranks: Dict[Tuple[bytes, bytes], int]) -> int:
    """Pure-Python BPE encoding of pre-split chunks by merge rank (GPT-2's ``encoder.py``
    algorithm, with its per-chunk cache); returns the number of tokens. The baseline the
    encoders are compared with.

    >>> byte_pair_ranks_encode([b"abab", b"ab"], {(b"a", b"b"): 0, (b"ab", b"ab"): 1})
    2
    """
    cache: Dict[bytes, int] = {}
    total = 0
    for chunk in chunks:
        n = cache.get(chunk)
        if n is None:
            word = [bytes([b]) for b in chunk]
            while len(word) > 1:
                best = min(range(len(word) - 1),
                           key=lambda i: ranks.get((word[i], word[i + 1]), 1 << 62))
                if (word[best], word[best + 1]) not in ranks:
                    break
                word[best : best + 2] = [word[best] + word[best + 1]]
            n = cache[chunk] = len(word)
        total += n
    return total


# ---- parallel text ----------------------------------------------------------------------------

_UNESCAPE = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def unescape_cell(cell: str) -> str:
    r"""Undo the TSV cell escapes of ``parallel_multi.tsv.gz`` (``\\ \t \n \r``).

    >>> unescape_cell(r"a\tb\\n")
    'a\tb\\n'
    """
    if "\\" not in cell:
        return cell
    out, i = [], 0
    while i < len(cell):
        c = cell[i]
        if c == "\\" and i + 1 < len(cell) and cell[i + 1] in _UNESCAPE:
            out.append(_UNESCAPE[cell[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parallel_rows(max_rows: Optional[int] = None) -> Dict[str, List[str]]:
    """Rows of ``parallel_multi.tsv.gz`` translated into every language, one list per language
    (same index = same message), unescaped. Skips when the file is absent."""
    path = data_file("parallel_multi.tsv.gz")
    if path is None:
        skip(f"parallel_multi.tsv.gz not found in {data_dir()} (set FASTBPE_DATA)")

    def make():
        columns: Dict[str, List[str]] = {lang: [] for lang in LANGUAGES}
        with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
            header = f.readline().rstrip("\n").split("\t")
            index = [header.index(lang) for lang in LANGUAGES]
            for line in f:
                cells = line.rstrip("\n").split("\t")
                if len(cells) != len(header):
                    continue
                row = [cells[i] for i in index]
                if all(row):
                    for lang, cell in zip(LANGUAGES, row):
                        columns[lang].append(unescape_cell(cell))
                    if max_rows is not None and len(columns["en"]) >= max_rows:
                        break
        return columns

    return _cached(f"parallel:{path}:{path.stat().st_size}:{max_rows}", make)


def language_text(language: str, size) -> str:
    """One language's rows of ``parallel_multi.tsv.gz``, one a line, cut to at most ``size``
    bytes of UTF-8 (capped like every input, see ``input_size``) at a character's end."""
    text = "\n".join(parallel_rows()[language]) + "\n"
    return text.encode("utf-8")[:input_size(size)].decode("utf-8", "ignore")


# ---- OpenAI encodings, offline ----------------------------------------------------------------

OPENAI_ENCODINGS = ("r50k_base", "p50k_base", "cl100k_base", "o200k_base")


def tiktoken_file(name: str) -> Optional[Path]:
    """The shared ``<name>.tiktoken`` rank file, or None when absent."""
    return data_file(f"tokenizers/tiktoken/{name}.tiktoken")


def tiktoken_encoding(name: str):
    """A ``tiktoken.Encoding`` for one of :data:`OPENAI_ENCODINGS`, built offline from the shared
    rank file: tiktoken's own constructor spec (split pattern, special tokens) with the ranks read
    from disk instead of downloaded. Skips when tiktoken or the file is missing."""
    try:
        import tiktoken
        import tiktoken.load
        import tiktoken_ext.openai_public as public
    except ImportError:
        skip("tiktoken is not installed")
    path = tiktoken_file(name)
    if path is None:
        skip(f"tokenizers/tiktoken/{name}.tiktoken not found in {data_dir()}")
    ranks = tiktoken.load.load_tiktoken_bpe(str(path))
    original = public.load_tiktoken_bpe
    public.load_tiktoken_bpe = lambda *args, **kwargs: ranks
    try:
        spec = getattr(public, name)()
    finally:
        public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**spec)
