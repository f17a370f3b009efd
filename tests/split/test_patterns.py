"""The pattern table: every name and spelling of a named pattern selects its compiled scanner."""
import pytest

import fastbpe
from fastbpe import PATTERNS
from fastbpe.reference import split as split_reference
from fastbpe.split import patterns
from fastbpe.split.patterns import TABLE, check_user_pattern, cut_rule, fused_scanner_id, resolve, scanner_id

SPELLINGS = [(name, name) for name in TABLE] + [(name, PATTERNS[name]) for name in TABLE] + [
    ("gpt2", "r50k_base"), ("gpt2", "p50k_base"), ("gpt2", "p50k_edit"), ("cl100k", "cl100k_base"),
    ("o200k", "o200k_base"), ("gpt2", patterns.GPT2_ORIGINAL_PATTERN),
]


@pytest.mark.parametrize("name,spelling", SPELLINGS)
def test_every_spelling_resolves_to_its_entry(name, spelling):
    assert resolve(spelling) is TABLE[name]
    assert scanner_id(spelling) == TABLE[name].scanner >= 0
    assert cut_rule(spelling) == TABLE[name].scanner
    assert patterns.source(spelling) == PATTERNS[name]


def test_table_texts_are_the_references():
    assert PATTERNS == split_reference.NAMED
    assert {name for name, entry in TABLE.items() if not entry.tiles} == {"whitespace"}
    assert fused_scanner_id("whitespace") is None and fused_scanner_id(PATTERNS["o200k"]) == TABLE["o200k"].scanner


def test_user_regexes_have_no_scanner():
    for text in (r"\w+|[^\w\s]+", "(?:" + PATTERNS["gpt2"] + ")", "a"):
        assert resolve(text) is None and scanner_id(text) == -1
        assert cut_rule(text) not in {entry.scanner for entry in TABLE.values()}


@pytest.fixture
def regex_path_forbidden(monkeypatch):
    """Make the regex path fail loudly, so a test shows the compiled scanner ran."""
    def refuse(*args, **kwargs):
        raise AssertionError("the regex path ran")

    monkeypatch.setattr(split_reference, "pretokenize_bytes", refuse)
    monkeypatch.setattr(split_reference, "pretokenize", refuse)


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k", "llama3", "qwen", "tekken"])
def test_exact_regex_text_counts_with_the_compiled_scanner(name, tmp_path, regex_path_forbidden):
    """A Hugging Face or tiktoken user passes the regex text; it must not fall back to regex."""
    path = tmp_path / "c.txt"
    path.write_text("Hello world, it's 2024!\n  Ünïcödé  text\n" * 50, encoding="utf-8")
    by_name = fastbpe.count_words(str(path), pattern=name, workers=1, progress=False)
    by_text = fastbpe.count_words(str(path), pattern=PATTERNS[name], workers=1, progress=False)
    assert by_name == by_text
    assert fastbpe.pretokenize("it's a test", PATTERNS[name]) == fastbpe.pretokenize("it's a test", name)


def test_user_regex_runs_the_regex_path(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("ab cd ab\n", encoding="utf-8")
    table = fastbpe.count_words(str(path), pattern=r"\w+", workers=1, progress=False)
    assert table.to_dict() == {b"ab": 2, b"cd": 1}


@pytest.mark.parametrize("typo", ["gpt5", "cl100k_bas", "GPT2", "o200"])
def test_unknown_names_are_errors_not_literal_regexes(typo, tmp_path):
    with pytest.raises(ValueError, match="unknown split pattern"):
        check_user_pattern(typo)
    path = tmp_path / "c.txt"
    path.write_text("gpt5 is not a pattern\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown split pattern"):
        fastbpe.count_words(str(path), pattern=typo, workers=1, progress=False)
    with pytest.raises(ValueError, match="unknown split pattern"):
        fastbpe.train(fastbpe.count_words(str(path), workers=1, progress=False), vocab_size=300, pattern=typo)


def test_bad_regex_is_a_value_error():
    with pytest.raises(ValueError, match="nor a valid regex"):
        check_user_pattern("(unclosed")
    with pytest.raises(TypeError):
        resolve(b"gpt2")


def test_an_empty_pattern_is_refused_where_it_is_given(shared_data):
    """An empty regex matches only empty text: every text would encode to no ids."""
    with pytest.raises(ValueError, match="split pattern is empty"):
        check_user_pattern("")
    with pytest.raises(ValueError, match="split pattern is empty"):
        fastbpe.count_words(iter(["hello world"]), pattern="", workers=1)
    with pytest.raises(ValueError, match="split pattern is empty"):
        fastbpe.Tokenizer.from_tiktoken(shared_data.path("tokenizers", "tiktoken", "r50k_base.tiktoken"), "")


def test_the_earlier_keyword_still_works(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("the cat sat\n", encoding="utf-8")
    with pytest.warns(DeprecationWarning, match="pattern="):
        old = fastbpe.count_words(str(path), pretokenizer="whitespace", workers=1, progress=False)
    assert old == fastbpe.count_words(str(path), pattern="whitespace", workers=1, progress=False)
    with pytest.raises(TypeError, match="same option"), pytest.warns(DeprecationWarning):
        fastbpe.count_words(str(path), pattern="cl100k", pretokenizer="whitespace", workers=1, progress=False)
    with pytest.warns(DeprecationWarning):
        tok = fastbpe.train("the cat sat " * 20, vocab_size=260, pretokenizer="whitespace", progress=False)
    assert tok.pattern == "whitespace"
