"""The fuzz harnesses: each states one property of fastbpe over inputs that are bytes.

* ``pretokenize``: the compiled pre-tokenizers equal ``regex.findall`` (the reference) for every
  built-in pattern, on the str path, the bytes path (three ``errors`` modes; invalid UTF-8 is the
  same ``InvalidUTF8`` at the same offset) and the chunk-bounds path the encoder uses.
* ``cut``: every cut ``find_cut`` finds is safe (the chunks of the two sides are the chunks of
  the whole), and it never reads outside the buffer whatever the bytes.
* ``count``: ``count_words`` (compiled chunk tables, block cuts, the corpus reader) gives the
  reference's counts in the same order, for any block size and ``errors`` mode.
* ``roundtrip-trained``, ``roundtrip-tiktoken``, ``roundtrip-huggingface``: encode then decode
  gives the text back, and the ids are the reference's: the pure-Python encoder for tokenizers
  trained here (byte-level, character-level with word markers, several patterns), tiktoken
  itself for OpenAI's files and GPT-2's, ``tokenizers`` itself for the Hugging Face files.
* ``train``: the compiled learner learns the reference learner's merges and counts.
* ``loader-native``, ``loader-huggingface``, ``loader-tiktoken``, ``loader-gpt2``: a mutated
  tokenizer file either loads or raises ``ValueError``, nothing else; a file that loads gives
  a tokenizer that encodes, decodes and saves without any other exception.

Inputs are bytes so that one mutation engine (:mod:`tests.fuzz.engine`, or atheris) serves all;
each harness reads its bytes in its own way (text, a word table, a file).
"""
import copy
import functools
import json
import random
import re
import shutil
import tempfile
import unicodedata
import warnings
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, Optional

from benchmarks.data import data_dir
from tests.fuzz.engine import Target, Unavailable, mutate_bytes

__all__ = ["TARGETS", "by_name"]

DATA = data_dir()  # FASTBPE_DATA, or shared/data beside the checkout


# --- text generation -----------------------------------------------------------------------------

WHITESPACE = [" ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", " \n", "\u00a0", "\u3000", "\u2028", "\u2029",
              "\x0b", "\x0c", "\x85", "\u1680", "\u2009", "\u200b", "\u180e", "\ufeff"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Re", "'x", "\u2019s", "'"]
SPECIAL_TEXTS = ["<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>", "<|begin_of_text|>", "<|im_start|>",
                 "<|endoftext", "<|"]
INVALID_UTF8 = [b"\x80", b"\xbf", b"\xff", b"\xfe", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80",
                b"\xed\xbf\xbf", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80"]


@functools.lru_cache(maxsize=1)
def code_points_by_category() -> Dict[str, List[int]]:
    """Every non-surrogate code point, grouped by its general category (Python's tables)."""
    groups: Dict[str, List[int]] = defaultdict(list)
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        groups[unicodedata.category(chr(cp))].append(cp)
    return dict(groups)


CATEGORY_WEIGHTS = {"Lu": 4, "Ll": 4, "Lt": 2, "Lm": 2, "Lo": 4, "Mn": 3, "Mc": 2, "Me": 1, "Nd": 3,
                    "Nl": 1, "No": 2, "Pc": 1, "Pd": 1, "Ps": 1, "Pe": 1, "Po": 2, "Sm": 1, "Sc": 1,
                    "Sk": 1, "So": 2, "Zs": 2, "Zl": 1, "Zp": 1, "Cc": 2, "Cf": 2, "Co": 1, "Cn": 1}


def random_char(rng: random.Random) -> str:
    groups = code_points_by_category()
    names = [n for n in CATEGORY_WEIGHTS if n in groups]
    category = rng.choices(names, [CATEGORY_WEIGHTS[n] for n in names])[0]
    return chr(rng.choice(groups[category]))


def random_atom(rng: random.Random) -> str:
    kind = rng.randrange(10)
    if kind == 0:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
                       for _ in range(rng.randint(1, 8)))
    if kind == 1:
        return "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 8)))
    if kind == 2:
        return rng.choice(WHITESPACE) * rng.randint(1, 3)
    if kind == 3:
        return rng.choice(CONTRACTIONS)
    if kind == 4:
        return "".join(rng.choice("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~") for _ in range(rng.randint(1, 4)))
    if kind == 5:
        cp = rng.randrange(0x110000 - 0x800)
        return chr(cp + 0x800 if cp >= 0xD800 else cp) if rng.random() < 0.5 else random_char(rng)
    return "".join(random_char(rng) for _ in range(rng.randint(1, 4)))


def random_text(rng: random.Random, atoms: int = 24, specials: bool = False) -> str:
    parts = [random_atom(rng) for _ in range(rng.randint(0, atoms))]
    if specials and parts and rng.random() < 0.3:
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(SPECIAL_TEXTS))
    text = "".join(parts)
    return "".join(c for c in text if not 0xD800 <= ord(c) < 0xE000)


def random_utf8(rng: random.Random, invalid: bool) -> bytes:
    data = random_text(rng).encode("utf-8")
    if invalid:
        for _ in range(rng.randint(1, 3)):
            pos = rng.randint(0, len(data))
            data = data[:pos] + rng.choice(INVALID_UTF8) + data[pos:]
    return data


def mutate_text(data: bytes, rng: random.Random, max_size: int) -> bytes:
    """Byte edits, or an atom of text inserted at a character boundary."""
    if rng.random() < 0.5:
        return mutate_bytes(data, rng, max_size)
    text = data.decode("utf-8", "surrogateescape")
    pos = rng.randint(0, len(text))
    if rng.random() < 0.3 and text:
        end = min(len(text), pos + rng.randint(1, 8))
        text = text[:pos] + text[end:]
    else:
        text = text[:pos] + random_atom(rng) + text[pos:]
    return text.encode("utf-8", "surrogateescape")[:max_size]


def category_features(label: str, chunks) -> frozenset:
    """What kinds of chunks a text gave: (label, category of first and last character, length up
    to 3). Inputs that show a new kind are kept for mutation."""
    out = set()
    for c in chunks:
        if c:
            out.add((label, unicodedata.category(c[0]), unicodedata.category(c[-1]), min(len(c), 3)))
    return frozenset(out)


def _marker_in_text(train, *args, **kwargs):
    """``train(*args, **kwargs)`` on the fuzz text, which holds the word marker ``_`` on purpose
    (the harnesses check what decoding makes of it): the warning that training gives of it is
    expected here."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "word_start='_' is in the corpus's own text", UserWarning)
        return train(*args, **kwargs)


class TextTarget(Target):
    max_size = 1024

    def seeds(self) -> List[bytes]:
        return [b"", b"Hello world", "I'm  here: 12345!\n\n  x\r\n\u00e9t\u00e9 \u65e5\u672c\u8a9e 😀 'LL".encode(),
                b"a\xffb \xc3", b"   \n\n\t", "\u0915\u093f \u0645\u0631\u062d\u0628\u0627".encode()]

    def generate(self, rng: random.Random) -> bytes:
        return random_utf8(rng, invalid=rng.random() < 0.3)

    def mutate(self, data: bytes, rng: random.Random) -> bytes:
        return mutate_text(data, rng, self.max_size)


# --- (a) the pre-tokenizer against regex ------------------------------------------------------------

class Pretokenize(TextTarget):
    name = "pretokenize"

    def setup(self):
        from fastbpe.reference import split as reference_split

        self.patterns = list(reference_split.NAMED) + [reference_split.GPT2_ORIGINAL_PATTERN]

    def check(self, data: bytes):
        import fastbpe
        from fastbpe.reference import split as reference_split
        from fastbpe.split.bounds import chunk_bounds
        from fastbpe.split.patterns import resolve
        from fastbpe.split.pretokenize import InvalidUTF8

        features = set()
        texts = [data.decode("utf-8", "replace"), data.decode("utf-8", "surrogateescape")]
        for label, pattern in enumerate(self.patterns):
            for text in texts[: 1 if texts[0] == texts[1] else 2]:
                expected = reference_split.pretokenize(text, pattern)
                got = fastbpe.pretokenize(text, pattern)
                assert got == expected, f"str path, pattern {label}: {got!r} != {expected!r}"
                if resolve(pattern).tiles:
                    buf, starts, ends = chunk_bounds(text, pattern)
                    pieces = [buf[a:b] for a, b in zip(starts.tolist(), ends.tolist())]
                    want = [c.encode("utf-8", "surrogatepass") for c in expected]
                    assert pieces == want, f"chunk bounds, pattern {label}: {pieces!r} != {want!r}"
            features |= category_features(label, expected)
            for errors in ("strict", "replace", "bytes"):
                try:
                    want = [c.encode("utf-8", "surrogateescape")
                            for c in reference_split.pretokenize_bytes(data, pattern, errors)]
                except InvalidUTF8 as exc:
                    want = ("InvalidUTF8", exc.offset)
                try:
                    got = fastbpe.pretokenize_bytes(data, pattern, errors)
                except InvalidUTF8 as exc:
                    got = ("InvalidUTF8", exc.offset)
                assert got == want, f"bytes path ({errors}), pattern {label}: {got!r} != {want!r}"
        return frozenset(features)


class Cut(TextTarget):
    name = "cut"
    max_size = 512

    def check(self, data: bytes):
        from fastbpe._core.split import PATTERN_IDS, find_cut
        from fastbpe.reference import split as reference_split

        try:
            text: Optional[str] = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None  # still searched: no read may leave the buffer
        features = set()
        for name, rule in PATTERN_IDS.items():
            cuts = set()
            for start in range(len(data)):
                cut = find_cut(data, start, rule)
                if cut == -1:
                    continue
                assert start <= cut < len(data), f"{name}: cut {cut} from start {start} outside the data"
                cuts.add(cut)
            if text is None:
                continue
            whole = reference_split.pretokenize(text, name)
            for cut in sorted(cuts):
                try:
                    left, right = data[:cut].decode("utf-8"), data[cut:].decode("utf-8")
                except UnicodeDecodeError:
                    raise AssertionError(f"{name}: cut {cut} splits a character") from None
                parts = reference_split.pretokenize(left, name) + reference_split.pretokenize(right, name)
                assert parts == whole, f"{name}: the cut at {cut} changes the chunks"
            features |= {(name, unicodedata.category(data[:c].decode()[-1])) for c in cuts if c}
        return frozenset(features)


class Count(TextTarget):
    """Counting (the compiled chunk tables, the block cuts, the corpus reader) against the
    reference count, on several documents with small blocks so that texts are cut often. The
    first byte picks the pattern, the errors mode and the block size; documents are separated by
    NUL bytes."""

    name = "count"
    max_size = 2048

    def generate(self, rng: random.Random) -> bytes:
        docs = [random_utf8(rng, invalid=rng.random() < 0.2) for _ in range(rng.randint(1, 4))]
        return bytes([rng.randrange(256)]) + b"\x00".join(docs)

    def check(self, data: bytes):
        import fastbpe
        from fastbpe.reference import count as reference_count
        from fastbpe.reference.split import NAMED

        flags = data[0] if data else 0
        pattern = sorted(NAMED)[flags % len(NAMED)]
        errors = ("strict", "replace", "bytes")[(flags >> 3) % 3]
        block_size = (1, 2, 3, 5, 8, 16, 64, None)[(flags >> 5) % 8]
        docs = data[1:].split(b"\x00")
        try:
            want = reference_count.count_words(docs, pattern, errors)
        except ValueError:
            want = ValueError
        try:
            table = fastbpe.count_words(iter(docs), pattern, workers=1, errors=errors, progress=False,
                                        block_size=block_size)
            got = dict(table.items())
        except ValueError as exc:
            got = {} if "corpus is empty" in str(exc) else ValueError  # no chunk: an error, by design
        assert got == want, f"{pattern}, errors={errors}, block_size={block_size}: {got!r} != {want!r}"
        if got is not ValueError:
            assert list(got) == list(want), "first-appearance order differs"
        return (pattern, errors, block_size, got is ValueError)


# --- (b) encode/decode round trips ------------------------------------------------------------------

def training_text() -> str:
    """A fixed text with every kind of atom, to train the tokenizers the round trips use."""
    rng = random.Random(1234)
    words = ["".join(random_atom(rng) for _ in range(rng.randint(1, 3))) for _ in range(400)]
    return " ".join(words[int(len(words) * rng.random() ** 2)] for _ in range(6000))


class RoundTripTrained(TextTarget):
    """Tokenizers trained here, against the pure-Python encoders of :mod:`fastbpe.reference`."""

    name = "roundtrip-trained"
    max_size = 600

    def setup(self):
        import fastbpe

        text = training_text()
        train = functools.partial(fastbpe.train, text, progress=False, workers=1)
        self.tokenizers = {
            "bytes-gpt2": train(vocab_size=700),
            "bytes-cl100k": train(vocab_size=600, pattern="cl100k", special_tokens=["<|endoftext|>"]),
            "bytes-o200k": train(vocab_size=600, pattern="o200k"),
            "bytes-llama3": train(vocab_size=600, pattern="llama3"),
            "bytes-user-regex": train(vocab_size=500, pattern=r"\w+|[^\w\s]+|\s+"),
            "bytes-hf-compat": train(vocab_size=600, compat="hf"),
            "bytes-word-start": train(vocab_size=600, pattern="whitespace", word_start="\u2581"),
            "chars-word-start": _marker_in_text(train, num_merges=300, unit="chars", pattern="whitespace",
                                                word_start="_", min_frequency=1),
            "chars-word-end": train(num_merges=300, unit="chars", pattern="whitespace", word_end="</w>"),
            "chars-gpt2": train(num_merges=300, unit="chars"),
        }
        self.merges = {label: tok.merges for label, tok in self.tokenizers.items()}

    @staticmethod
    def replay(word: tuple, merges) -> tuple:
        """:func:`fastbpe.reference.encode_word`, skipping the merges whose pair cannot occur
        because a side is not in the word (merging them changes nothing): the same result,
        without a pass over the word for each of the hundreds of merges."""
        from fastbpe.reference.learning import merge_word

        present = set(word)
        for a, b in merges:
            if a in present and b in present:
                word = merge_word(word, (a, b))
                present = set(word)
        return word

    def reference_pieces(self, label: str, tok, text: str) -> list:
        from fastbpe import reference
        from fastbpe.reference import split as reference_split

        pieces: list = []
        merges = self.merges[label]
        for chunk in reference_split.pretokenize(text, tok.pattern):
            word = tok.word_start + chunk + tok.word_end
            if tok.merge_rule == "pair":
                pieces.extend(reference.encode_by_pair_rank(word.encode("utf-8", "surrogatepass"), merges))
            elif tok.unit == "bytes":
                pieces.extend(self.replay(tuple(bytes([b]) for b in word.encode("utf-8")), merges))
            else:
                pieces.extend(self.replay(tuple(word), merges))
        return pieces

    def check(self, data: bytes):
        from fastbpe.reference import split as reference_split

        text = data.decode("utf-8", "replace")
        features = set()
        for label, tok in self.tokenizers.items():
            pieces = tok.tokens(text)
            expected = self.reference_pieces(label, tok, text)
            assert pieces == expected, f"{label}: {pieces!r} != the reference's {expected!r}"
            try:
                ids = tok.encode(text, disallowed_special=())
            except ValueError:
                # only for a symbol outside the vocabulary, which tokens() shows as itself
                assert tok.unit == "chars" and any(p not in tok._ids and p.encode() not in tok._ids
                                                   for p in pieces), f"{label}: encode refused {text!r}"
                features.add((label, "unknown symbol"))
                continue
            assert [tok._as_unit(tok.token_bytes[i]) for i in ids] == pieces, label
            decoded = tok.decode(ids)
            markers = tok.word_start or tok.word_end
            if tok.pattern == "whitespace":
                if not (markers and any(m in text for m in markers)):
                    words = " ".join(reference_split.pretokenize(text, "whitespace"))
                    assert decoded == words, f"{label}: decode gave {decoded!r}, not {words!r}"
            else:
                assert decoded == text, f"{label}: decode gave {decoded!r}, not {text!r}"
            assert tok.encode_batch([text, text[: len(text) // 2]], workers=2, disallowed_special=()) == \
                [ids, tok.encode(text[: len(text) // 2], disallowed_special=())], label
            features.add((label, min(len(ids), 8)))
        return frozenset(features)


def peers_agree_on(text: str) -> bool:
    """Whether tiktoken and ``tokenizers`` can be expected to split ``text`` as fastbpe does.

    fastbpe's scanners follow ``regex`` (the reference), whose Unicode tables are newer than
    the peers': a character that Python's own tables (older still) leave unassigned may be a
    letter to ``regex`` and nothing to a peer. Ids are compared with a peer only on text without
    such characters; the round trip is checked on every text.
    """
    return all(unicodedata.category(c) != "Cn" for c in text)


def _need(path: Path) -> Path:
    if not path.exists():
        raise Unavailable(f"{path} is absent (FASTBPE_DATA)")
    return path


class RoundTripTiktoken(TextTarget):
    """OpenAI's ``.tiktoken`` files and GPT-2's own files, against tiktoken."""

    name = "roundtrip-tiktoken"
    max_size = 600

    def setup(self):
        try:
            import tiktoken
        except ImportError:
            raise Unavailable("tiktoken (test extra) is not installed") from None
        import fastbpe
        from fastbpe.formats import OPENAI_ENCODINGS, read_tiktoken_ranks
        from fastbpe.split.patterns import source

        folder = _need(DATA / "tokenizers" / "tiktoken")
        self.pairs = {}
        for name in ("r50k_base", "p50k_base", "cl100k_base", "o200k_base"):
            path = _need(folder / f"{name}.tiktoken")
            pattern, specials = OPENAI_ENCODINGS[name]
            oracle = tiktoken.Encoding(name, pat_str=source(pattern), mergeable_ranks=read_tiktoken_ranks(path),
                                       special_tokens=specials)
            self.pairs[name] = (fastbpe.openai(name, folder), oracle)
        gpt2 = fastbpe.Tokenizer.from_gpt2(_need(DATA / "tokenizers" / "encoder.json"),
                                           _need(DATA / "tokenizers" / "vocab.bpe"))
        self.pairs["gpt2-files"] = (gpt2, self.pairs["r50k_base"][1])

    def generate(self, rng: random.Random) -> bytes:
        return random_text(rng, specials=True).encode("utf-8")

    def check(self, data: bytes):
        text = data.decode("utf-8", "replace")
        features = set()
        compare = peers_agree_on(text)
        for label, (tok, oracle) in self.pairs.items():
            ids = tok.encode_ordinary(text)
            if compare:
                want = oracle.encode_ordinary(text)
                assert ids == want, f"{label}: {ids} != tiktoken's {want}"
            assert tok.decode_bytes(ids) == text.encode("utf-8"), label
            ids = tok.encode(text, allowed_special="all")
            if compare:
                want = oracle.encode(text, allowed_special="all")
                assert ids == want, f"{label} (special tokens allowed): {ids} != tiktoken's {want}"
            assert tok.decode(ids) == text, label
            features.add((label, min(len(ids), 8)))
        return frozenset(features) | category_features("t", text.split())


def _normalized_between_specials(tok, text: str) -> str:
    """The text a tokenizer with a normaliser encodes: its special tokens are found in the text
    as given (as Hugging Face finds them), and the pieces between them normalised one by one,
    so a combining mark after a special token stays apart from it (NFC would join ``>`` and
    U+0338 across the boundary)."""
    if not tok.normalizer:
        return text
    names = sorted(tok.special_tokens, key=len, reverse=True)  # (the longest at a place first)
    pieces = re.split("(" + "|".join(map(re.escape, names)) + ")", text) if names else [text]
    return "".join(p if k % 2 else unicodedata.normalize(tok.normalizer, p) for k, p in enumerate(pieces))


class RoundTripHuggingface(TextTarget):
    """The Hugging Face files (Llama 3, Qwen 3), against ``tokenizers``."""

    name = "roundtrip-huggingface"
    max_size = 600

    def setup(self):
        try:
            import tokenizers
        except ImportError:
            raise Unavailable("tokenizers (test extra) is not installed") from None
        import fastbpe

        self.pairs = {}
        for name in ("llama3", "qwen3"):
            path = _need(DATA / "tokenizers" / name / "tokenizer.json")
            self.pairs[name] = (fastbpe.Tokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path)))

    def generate(self, rng: random.Random) -> bytes:
        return random_text(rng, specials=True).encode("utf-8")

    def check(self, data: bytes):
        text = data.decode("utf-8", "replace")
        features = set()
        for label, (tok, oracle) in self.pairs.items():
            ids = tok.encode(text, allowed_special="all")
            normalized = unicodedata.normalize(tok.normalizer, text) if tok.normalizer else text
            # the peer's normaliser has its own (older) tables too
            same_text = oracle.normalizer is None or oracle.normalizer.normalize_str(text) == normalized
            if same_text and peers_agree_on(text):
                want = oracle.encode(text, add_special_tokens=False).ids
                assert ids == want, f"{label}: {ids} != tokenizers' {want}"
            assert tok.decode(ids) == _normalized_between_specials(tok, text), label
            features.add((label, min(len(ids), 8)))
        return frozenset(features) | category_features("h", text.split())


# --- (c) the trainer against the reference ----------------------------------------------------------

class Train(Target):
    """The input is a word table in text: words split on spaces, symbols on ``|`` (else one per
    character, or per byte), a ``*N`` suffix multiplies a word's count; the first two bytes set
    the symbol type, the number of merges and the minimum frequency."""

    name = "train"
    max_size = 512

    def seeds(self) -> List[bytes]:
        return [b"\x00\x10low low lower newest newest widest", b"\x01\x20ab|c ab|c*3 a|bc*2 \xff\xfe x",
                b"\x02\x07aaaa aaaa*5 aa*2 a", b"\x03\x30t|h|e the th|e*7 \xc3\xa9t\xc3\xa9*2"]

    @staticmethod
    def table(data: bytes):
        flags = data[0] if data else 0
        num_merges = data[1] % 48 if len(data) > 1 else 4
        as_bytes = bool(flags & 1)
        min_frequency = 1 + (flags >> 1) % 3
        words: Counter = Counter()
        for token in data[2:].split():
            count = 1
            m = re.fullmatch(rb"(.+)\*(\d{1,9})", token)
            if m:
                token, count = m.group(1), int(m.group(2)) or 1
            if b"|" in token:
                parts = [p for p in token.split(b"|") if p]
            else:
                parts = [bytes([b]) for b in token] if as_bytes else None
            if as_bytes:
                word = tuple(parts)
            else:
                text = token.decode("utf-8", "surrogateescape")
                word = tuple(p.decode("utf-8", "surrogateescape") for p in parts) if parts is not None else tuple(text)
            if word:
                words[word] += count
        return dict(words), num_merges, min_frequency

    def generate(self, rng: random.Random) -> bytes:
        alphabet = rng.choice([b"ab", b"abc", b"abcd|", "aé日".encode(), bytes(range(256))])
        words = []
        for _ in range(rng.randint(1, 30)):
            word = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 8))).replace(b" ", b"")
            if word and rng.random() < 0.3:
                word += b"*" + str(rng.choice([1, 2, 3, 10, 1000, 10**6])).encode()
            words.append(word)
        return bytes([rng.randrange(256), rng.randrange(256)]) + b" ".join(words)

    def check(self, data: bytes):
        import fastbpe

        words, num_merges, min_frequency = self.table(data)
        outcomes = []
        for backend in ("fast", "reference"):
            try:
                outcomes.append(fastbpe.train_words(words, num_merges, min_frequency=min_frequency,
                                                    backend=backend, with_counts=True))
            except (ValueError, TypeError) as exc:
                outcomes.append(type(exc))
        assert outcomes[0] == outcomes[1], f"fast {outcomes[0]!r} != reference {outcomes[1]!r}"
        result = outcomes[0]
        return (len(result[0]) if isinstance(result, tuple) else result, min_frequency)


# --- (d) every file loader on mutated files ---------------------------------------------------------

INTERESTING_VALUES = [None, True, False, 0, 1, -1, 255, 256, 1.5, 1000.7, -0.0, 2**31 - 1, 2**31, 2**32, 2**40,
                      2**63, 2**64, 10**8, -2**63, 1e308, "", "x", "gpt2", "gpt5", "\u0120", "\x00", "<|endoftext|>",
                      [], {}, [0, 1], ["a", "b"], {"a": 1}, [[0, 1]], "a b"]


def _interesting(rng: random.Random):
    return copy.deepcopy(rng.choice(INTERESTING_VALUES))  # never share a list or dict between documents


def _nodes(value, rng: random.Random, path=()):
    """Paths to the values of a JSON document (a sample of each long list's elements, down to
    depth 8)."""
    yield path, value
    if len(path) >= 8:
        return
    if isinstance(value, dict):
        for k, v in list(value.items())[:64]:
            yield from _nodes(v, rng, path + (k,))
    elif isinstance(value, list) and value:
        n = len(value)
        for i in sorted({0, 1, n // 2, n - 2, n - 1} | {rng.randrange(n) for _ in range(3)}):
            if 0 <= i < n:
                yield from _nodes(value[i], rng, path + (i,))


def mutate_json_value(doc, rng: random.Random):
    """One structural edit of a parsed JSON document: a value replaced, a key or element
    removed, duplicated or moved."""
    nodes = list(_nodes(doc, rng))
    path, value = rng.choice(nodes)
    if not path:
        return _interesting(rng) if rng.random() < 0.05 else doc
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    op = rng.randrange(6)
    if op == 0:
        parent[key] = _interesting(rng)
    elif op == 1:
        del parent[key]
    elif op == 2 and isinstance(parent, list):
        parent.insert(rng.randint(0, len(parent)), json.loads(json.dumps(value)))
    elif op == 2 and isinstance(parent, dict):
        parent[str(key) + rng.choice(["", "x", "\u0120", "a"])] = json.loads(json.dumps(value))
    elif op == 3:
        other_path, other = rng.choice(nodes)
        parent[key] = json.loads(json.dumps(other))
    elif op == 4 and isinstance(value, int) and not isinstance(value, bool):
        parent[key] = value + rng.choice([-1, 1, 256, -256, 2**31, 10**8])
    elif op == 5 and isinstance(value, str):
        parent[key] = value[: rng.randint(0, len(value))] + rng.choice(["", "a", "\u0120", "xxx"])
    else:
        parent[key] = _interesting(rng)
    return doc


def mutate_json_bytes(data: bytes, rng: random.Random, max_size: int) -> bytes:
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return mutate_bytes(data, rng, max_size)
    for _ in range(rng.randint(1, 3)):
        doc = mutate_json_value(doc, rng)
    try:
        out = json.dumps(doc, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError):
        return mutate_bytes(data, rng, max_size)
    if rng.random() < 0.01:
        out = b"[" * rng.choice([10, 1000, 100000]) + out  # nesting deeper than the JSON reader's stack
    return out if len(out) <= max_size else data


def mutate_lines(data: bytes, rng: random.Random, max_size: int) -> bytes:
    """Line edits of a text file (``.tiktoken``, ``vocab.bpe``): numbers changed, lines dropped,
    repeated or swapped, fields garbled."""
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    op = rng.randrange(6)
    if op == 0:
        lines[i] = re.sub(rb"\d+", lambda m: str(rng.choice([0, 1, 255, 256, 2**31 - 1, 2**31, 10**8,
                                                               int(m.group()) + 1])).encode(), lines[i], count=1)
    elif op == 1:
        del lines[i]
    elif op == 2:
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
    elif op == 3:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 4:
        lines[i] = lines[i] + rng.choice([b" ", b" 7", b"=", b"\xff", b"\t1"])
    else:
        return mutate_bytes(data, rng, max_size)
    return b"\n".join(lines)[: max_size]


SAMPLE_TEXTS = ["Hello world", "the cat <|endoftext|> sat", "  12345 \n\n\u00e9t\u00e9 \u65e5\u672c 😀", ""]


class LoaderTarget(Target):
    """A file loader on mutated files: only ValueError may escape, and what loads must work."""

    max_size = 1 << 16
    filename = "tokenizer-file"

    def setup(self):
        import fastbpe

        self.folder = Path(tempfile.mkdtemp(prefix="fastbpe-fuzz-"))
        text = training_text()[:20000]
        self.tok = fastbpe.train(text, vocab_size=320, progress=False, workers=1,
                                 special_tokens=["<|endoftext|>", "<pad>"])
        self.char_tok = _marker_in_text(fastbpe.train, text, num_merges=40, unit="chars", pattern="whitespace",
                                        word_start="_", progress=False, workers=1, min_frequency=1)
        self._seeds = self.make_seeds()

    def teardown(self):
        if getattr(self, "folder", None) is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def seeds(self) -> List[bytes]:
        return self._seeds

    def mutate(self, data: bytes, rng: random.Random) -> bytes:
        return mutate_json_bytes(data, rng, self.max_size) if rng.random() < 0.7 else \
            mutate_bytes(data, rng, self.max_size)

    def load(self, data: bytes) -> list:
        raise NotImplementedError

    def check(self, data: bytes):
        import fastbpe

        try:
            loaded = self.load(data)
        except ValueError as exc:
            return re.sub(r"\d+|'[^']*'|\"[^\"]*\"", "", str(exc).replace(str(self.folder), ""))[:60]
        for tok in loaded:
            for text in SAMPLE_TEXTS:
                try:
                    ids = tok.encode(text, allowed_special="all")
                except ValueError:
                    continue  # a character outside a character-level vocabulary
                tok.encode_to_numpy(text, allowed_special="all")
                tok.decode(ids)
                tok.decode_bytes(ids)
            path = self.folder / "saved.json"
            tok.save(path)
            again = fastbpe.Tokenizer.load(path)
            assert again == tok, "a loaded tokenizer does not survive save and load"
        return "loaded"


class LoaderNative(LoaderTarget):
    name = "loader-native"
    ext = ".json"

    def make_seeds(self) -> List[bytes]:
        out = []
        for tok in (self.tok, self.char_tok):
            tok.save(self.folder / "seed.json")
            out.append((self.folder / "seed.json").read_bytes())
        return out

    def load(self, data: bytes) -> list:
        import fastbpe

        path = self.folder / "native.json"
        path.write_bytes(data)
        return [fastbpe.Tokenizer.load(path), fastbpe.load(path)]


class LoaderHuggingface(LoaderTarget):
    name = "loader-huggingface"
    ext = ".json"

    def make_seeds(self) -> List[bytes]:
        self.tok.to_huggingface(self.folder / "seed.json")
        return [(self.folder / "seed.json").read_bytes()]

    def load(self, data: bytes) -> list:
        import warnings

        import fastbpe

        path = self.folder / "tokenizer.json"
        path.write_bytes(data)
        with warnings.catch_warnings():
            # a mutated file often lists an added token under an id tokenizers would not give
            # it: the loader's warning saying so is an expected outcome here
            warnings.filterwarnings("ignore", message=".*tokenizers gives it")
            # and a mutated decoder, one fastbpe does not decode by, is warned of (encoding is the same)
            warnings.filterwarnings("ignore", message=".*is not one fastbpe decodes by")
            return [fastbpe.Tokenizer.from_huggingface(path), fastbpe.load(path), fastbpe.load(self.folder)]


SIDECAR_SEPARATOR = b"\n\x00sidecar\x00\n"


class LoaderTiktoken(LoaderTarget):
    """A ``.tiktoken`` file, alone (read with OpenAI's preset of its name, and with a pattern and
    special tokens given) or followed by a separator line and the ``.tiktoken.json`` sidecar
    that :meth:`Tokenizer.to_tiktoken` writes beside it."""

    name = "loader-tiktoken"
    ext = ".tiktoken"

    def make_seeds(self) -> List[bytes]:
        self.tok.to_tiktoken(self.folder / "seed.tiktoken")
        ranks = (self.folder / "seed.tiktoken").read_bytes()
        return [ranks, ranks + SIDECAR_SEPARATOR + (self.folder / "seed.tiktoken.json").read_bytes()]

    def mutate(self, data: bytes, rng: random.Random) -> bytes:
        ranks, separator, sidecar = data.partition(SIDECAR_SEPARATOR)
        if separator and rng.random() < 0.4:
            return ranks + separator + mutate_json_bytes(sidecar, rng, self.max_size)
        ranks = mutate_lines(ranks, rng, self.max_size) if rng.random() < 0.7 else \
            mutate_bytes(ranks, rng, self.max_size)
        return ranks + separator + sidecar

    def load(self, data: bytes) -> list:
        import fastbpe

        ranks, separator, sidecar = data.partition(SIDECAR_SEPARATOR)
        if separator:
            path = self.folder / "mine.tiktoken"
            path.write_bytes(ranks)
            (self.folder / "mine.tiktoken.json").write_bytes(sidecar)
            return [fastbpe.load(path), fastbpe.Tokenizer.load(path)]
        path = self.folder / "r50k_base.tiktoken"
        path.write_bytes(ranks)
        specials = {"<|endoftext|>": 318, "<pad>": 319}
        return [fastbpe.Tokenizer.from_tiktoken(path, "gpt2", specials), fastbpe.load(path)]


GPT2_SEPARATOR = b"\n\x00vocab.bpe\x00\n"


class LoaderGpt2(LoaderTarget):
    """The input holds both files: ``encoder.json``, a separator line, ``vocab.bpe``."""

    name = "loader-gpt2"
    ext = ".gpt2"

    def make_seeds(self) -> List[bytes]:
        with warnings.catch_warnings():  # (<pad> goes in as an entry, as the warning says: meant here)
            warnings.simplefilter("ignore", UserWarning)
            self.tok.to_gpt2(self.folder / "seed")
        return [(self.folder / "seed" / "encoder.json").read_bytes() + GPT2_SEPARATOR +
                (self.folder / "seed" / "vocab.bpe").read_bytes()]

    def mutate(self, data: bytes, rng: random.Random) -> bytes:
        encoder, _, merges = data.partition(GPT2_SEPARATOR)
        if rng.random() < 0.5:
            encoder = mutate_json_bytes(encoder, rng, self.max_size)
        else:
            merges = mutate_lines(merges, rng, self.max_size)
        return encoder + GPT2_SEPARATOR + merges

    def load(self, data: bytes) -> list:
        import fastbpe

        encoder, _, merges = data.partition(GPT2_SEPARATOR)
        (self.folder / "encoder.json").write_bytes(encoder)
        (self.folder / "vocab.bpe").write_bytes(merges)
        return [fastbpe.Tokenizer.from_gpt2(self.folder / "encoder.json", self.folder / "vocab.bpe")]


TARGETS: List[Target] = [Pretokenize(), Cut(), Count(), RoundTripTrained(), RoundTripTiktoken(), RoundTripHuggingface(),
                         Train(), LoaderNative(), LoaderHuggingface(), LoaderTiktoken(), LoaderGpt2()]


def by_name(name: str) -> Target:
    for target in TARGETS:
        if target.name == name:
            return target
    raise KeyError(f"no fuzz harness {name!r}; the harnesses are {[t.name for t in TARGETS]}")
