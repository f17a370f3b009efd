"""Shared test settings: hypothesis profiles and the ``shared_data`` fixture.

Tests that need the real corpora and tokenizer files ask for ``shared_data`` and skip, saying
what is missing, where ``FASTBPE_DATA`` (default ``../shared/data``) does not hold them.
"""
import math
import os

import pytest
from hypothesis import settings

from benchmarks import data as _data

# "ci" is the profile CI and the README's test command use; "thorough" for long local runs.
settings.register_profile("ci", max_examples=200, deadline=None)
settings.register_profile("thorough", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(config, items):
    """``FASTBPE_EXAMPLES_SCALE`` (a fraction) scales every generated-input test's number of
    cases, those its own ``@settings`` set too (which a profile cannot): the sanitizer lane,
    where a case costs about three times as much and the aim is memory errors rather than rare
    inputs, runs a quarter (``.ci/sanitize``). At least 10 cases a test (or its own fewer)."""
    scale = os.environ.get("FASTBPE_EXAMPLES_SCALE")
    if not scale:
        return
    scale = float(scale)
    scaled = set()
    for item in items:
        obj = getattr(item, "obj", None)  # (a function, or a bound method of a test class)
        test = getattr(obj, "__func__", obj)
        if not getattr(test, "is_hypothesis_test", False) or test in scaled:
            continue  # (the cases of a parametrised test are scaled once)
        # (where hypothesis reads a test's settings when it runs, its @settings or the profile's)
        given = getattr(test, "_hypothesis_internal_use_settings", None)
        if given is None:
            raise RuntimeError("FASTBPE_EXAMPLES_SCALE: this hypothesis keeps a test's settings elsewhere")
        test._hypothesis_internal_use_settings = settings(
            given, max_examples=min(given.max_examples, max(10, math.ceil(given.max_examples * scale)))
        )
        scaled.add(test)


class SharedData:
    """The shared data folder; every accessor skips the calling test when a file is absent."""

    @property
    def dir(self):
        return _data.data_dir()

    def path(self, *parts: str):
        try:
            return _data.data_path(*parts)
        except _data.MissingData as exc:
            pytest.skip(str(exc))

    def text(self, name: str, chars: int) -> str:
        self.path(name)
        return _data.text_slice(name, chars)

    def rows(self, name: str, count: int) -> list:
        self.path(name)
        return _data.first_lines(name, count)


@pytest.fixture(scope="session")
def shared_data() -> SharedData:
    return SharedData()


class WorkedExample:
    """BPE by hand on a small Malay and English text (15 merges, counts and five encodings
    worked out on paper), and Sennrich et al. (2016)'s toy vocabulary."""

    text = (
        "saya makan nasi lemak dan minum teh tarik . kami makan makanan sedap dan minum minuman "
        "sejuk . mereka makan nasi lemak lagi . we eat nasi lemak and we drink teh tarik . they eat "
        "and they drink ."
    )
    merges = [
        ("a", "n", 10), ("_", "m", 8), ("a", "k", 7), ("_", "t", 6), ("i", "n", 5), ("_", ".", 5),
        ("_m", "ak", 4), ("_mak", "an", 4), ("_", "l", 4), ("_", "d", 4), ("_", "s", 3),
        ("_", "n", 3), ("_n", "a", 3), ("_na", "s", 3), ("_nas", "i", 3),
    ]
    encodings = {
        "makanan": ("_makan", "an"),
        "minuman": ("_m", "in", "u", "m", "an"),
        "lemak": ("_l", "e", "m", "ak"),
        "makan-makan": ("_makan", "-", "m", "ak", "an"),
        "drinking": ("_d", "r", "in", "k", "in", "g"),
    }
    sennrich = {tuple("low_"): 5, tuple("lower_"): 2, tuple("newest_"): 6, tuple("widest_"): 3}

    def words(self):
        """The text's word table with the word-start marker ``_``."""
        from collections import Counter

        return Counter(tuple("_" + w) for w in self.text.split())


@pytest.fixture(scope="session")
def worked_example() -> WorkedExample:
    return WorkedExample()


@pytest.fixture(scope="session")
def tiktoken_encoding(shared_data):
    """tiktoken's Encoding of an OpenAI encoding name, built from the shared rank file."""
    from fastbpe.formats import OPENAI_ENCODINGS, read_tiktoken_ranks
    from fastbpe.split.patterns import source

    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken (test extra) verifies the tiktoken format")

    def build(name):
        path = shared_data.path("tokenizers", "tiktoken", f"{'p50k_base' if name == 'p50k_edit' else name}.tiktoken")
        pattern, specials = OPENAI_ENCODINGS[name]
        return tiktoken.Encoding(name, pat_str=source(pattern), mergeable_ranks=read_tiktoken_ranks(path),
                                 special_tokens=specials)

    return build


# Tokens matched always (added tokens that are not special): ASCII, one inside ordinary words, one
# with a non-ASCII character, one not in normal form (matched in the text as given); and pieces of
# text to put around them: marks that compose with what comes before, characters every form changes.
ALWAYS_NAMES = ["<t>", "ab</t>", "é!", "e\u0301x"]
ALWAYS_PIECES = ALWAYS_NAMES + [
    "\u0301", "\u0338", "\u0323", "\uac00", "\u11a8", "\u1161", "\u1100", "\u0958", "\u2100", "\u212b", "e", "=",
    "<", ">", "t>", "x<t", "t>ab", "</t> ", "A", "\u00c5", "\ufb01", "1", "\u2475", " ", "\t", "\n", "'", "s", "x",
    "ab", "中文", "caf\u00e9. "]


@pytest.fixture(scope="session")
def always_tokenizers():
    """cl100k-pattern tokenizers, without a normaliser and with each Unicode form, whose tokens
    ALWAYS_NAMES are matched always, and with <|endoftext|> special."""
    import fastbpe

    base = fastbpe.train("".join(ALWAYS_PIECES) * 30, vocab_size=300, pattern="cl100k", progress=False)
    names = ALWAYS_NAMES + ["<|endoftext|>"]
    return {form: fastbpe.Tokenizer(base.token_bytes, base.merge_ids, pattern="cl100k", normalizer=form,
                                    special_tokens={name: len(base.token_bytes) + k for k, name in enumerate(names)},
                                    special_token_options={name: {"always": True} for name in ALWAYS_NAMES})
            for form in (None, "NFC", "NFD", "NFKC", "NFKD")}
