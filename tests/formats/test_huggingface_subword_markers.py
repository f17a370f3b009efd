"""Hugging Face BPE files with an ``end_of_word_suffix`` (``"</w>"``, CLIP's and openai-gpt's
layout: the last byte of every chunk starts as its ``...</w>`` token) or a
``continuing_subword_prefix`` (``"##"``: every byte but the first starts as its ``##...``
token, and a merge drops the right-hand token's prefix). Built here by ``tokenizers``' own
trainer and checked against ``tokenizers`` on the multilingual table."""
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastbpe import Tokenizer

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) is the reference for tokenizer.json")

# CLIP's layout: one Split that drops whitespace, then ByteLevel without its own regex
WORDS = {"type": "Split", "behavior": "Removed", "invert": True,
         "pattern": {"Regex": "'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+"}}
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}


@pytest.fixture(scope="module")
def rows(shared_data):
    return shared_data.rows("parallel_multi.tsv.gz", 200)


def _trained(rows, tmp_path_factory, **markers):
    """(path, data) of a tokenizer.json trained by tokenizers with these BPE markers, every
    byte in every place of a chunk in the vocabulary (as CLIP's file has them)."""
    from tokenizers import Tokenizer as HF, models, pre_tokenizers, trainers

    hf = HF(models.BPE(**markers))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    hf.train_from_iterator(rows, trainers.BpeTrainer(vocab_size=1200, show_progress=False, **markers,
                                                     initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    data = json.loads(hf.to_str())
    vocab = data["model"]["vocab"]
    prefix, suffix = markers.get("continuing_subword_prefix", ""), markers.get("end_of_word_suffix", "")
    for char in sorted(pre_tokenizers.ByteLevel.alphabet()):
        for text in (char, prefix + char, char + suffix, prefix + char + suffix):
            vocab.setdefault(text, len(vocab))
    path = tmp_path_factory.mktemp("markers") / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path, data


@pytest.fixture(scope="module")
def suffixed(rows, tmp_path_factory):
    return _trained(rows, tmp_path_factory, end_of_word_suffix="</w>")


@pytest.fixture(scope="module", params=["prefix", "prefix and suffix"])
def prefixed(request, rows, tmp_path_factory):
    markers = {"continuing_subword_prefix": "##"}
    if request.param == "prefix and suffix":
        markers["end_of_word_suffix"] = "</w>"
    return _trained(rows, tmp_path_factory, **markers)


def _write(data, tmp_path, name="tokenizer.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("pre_tokenizer", [
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    {"type": "Sequence", "pretokenizers": [WORDS, BYTE_LEVEL]},
])
def test_suffix_encodes_as_tokenizers(suffixed, rows, tmp_path, pre_tokenizer):
    data = json.loads(json.dumps(suffixed[1]))
    data["pre_tokenizer"] = pre_tokenizer
    data["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]}
    path = _write(data, tmp_path)
    tok, hf = Tokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    assert tok.end_of_word_suffix == "</w>"
    for text in [*rows, "", " ", "a", "  x  y ", "It's 2024!! ÜNÏCODE 你好\n\n", "a</w>b"]:
        assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids, repr(text)
    # fastbpe's own file and a tokenizer.json written back encode the same
    tok.save(tmp_path / "native.json")
    again = Tokenizer.load(tmp_path / "native.json")
    assert again == tok
    tok.to_huggingface(tmp_path / "again.json")
    hf_again = tokenizers.Tokenizer.from_file(str(tmp_path / "again.json"))
    for text in rows[:40]:
        expected = hf.encode(text, add_special_tokens=False).ids
        assert again.encode(text) == expected and hf_again.encode(text, add_special_tokens=False).ids == expected


def test_prefix_encodes_as_tokenizers(prefixed, rows, tmp_path):
    """"a" + "##b" makes "ab", "##a" + "##b" makes "##ab": the merges of tokenizers' own file."""
    path, data = prefixed
    assert any(b.startswith("##") and not a.startswith("##") for a, b in data["model"]["merges"])
    tok, hf = Tokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    assert tok.continuing_subword_prefix == "##"
    for text in [*rows, "", " ", "a", "## #a ### a##b", "It's 2024!! ÜNÏCODE 你好\n\n"]:
        assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids, repr(text)
    if not tok.end_of_word_suffix:  # each token's bytes without the prefix: the text as it was
        assert all(tok.decode(tok.encode(text)) == text for text in rows[:50])
    tok.save(tmp_path / "native.json")
    assert Tokenizer.load(tmp_path / "native.json") == tok
    tok.to_huggingface(tmp_path / "again.json")
    hf_again = tokenizers.Tokenizer.from_file(str(tmp_path / "again.json"))
    for text in rows[:40]:
        assert hf_again.encode(text, add_special_tokens=False).ids == hf.encode(text, add_special_tokens=False).ids


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(st.sampled_from(list("ab é你 \n\t'sx1</w>#")), max_size=30))
def test_generated_text(suffixed, prefixed, text):
    for path, _ in (suffixed, prefixed):
        tok, hf = Tokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
        assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids


def test_suffix_decodes_to_spaces(suffixed, tmp_path):
    """In CLIP's layout (whitespace dropped by the split) each suffix stands for a space."""
    data = json.loads(json.dumps(suffixed[1]))
    data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [WORDS, BYTE_LEVEL]}
    tok = Tokenizer.from_huggingface(_write(data, tmp_path))
    assert tok.decode(tok.encode("hello   world")) == "hello world"
    assert tok.encode("a\ud800b") == tok.encode("a\ufffdb")  # a lone surrogate as U+FFFD, as elsewhere
    assert tok.encode("a\ud83d\ude00b") == tok.encode("a😀b")  # a surrogate pair joined


@pytest.mark.parametrize("change, component", [
    (lambda d: d["model"].update(continuing_subword_prefix="##"), "continuing_subword_prefix"),  # no ## tokens
    (lambda d: d["model"].update(ignore_merges=True), "ignore_merges"),
    (lambda d: d["model"].update(byte_fallback=True), "byte_fallback"),
    (lambda d: d["model"]["vocab"].pop("Ã</w>"), "end_of_word_suffix"),  # a byte's suffixed token missing
])
def test_what_cannot_be_reproduced_is_refused(suffixed, tmp_path, change, component):
    data = json.loads(json.dumps(suffixed[1]))
    change(data)
    with pytest.raises(ValueError, match=component):
        Tokenizer.from_huggingface(_write(data, tmp_path))


def test_other_formats_refuse_the_markers(suffixed, prefixed, tmp_path):
    for path, _ in (suffixed, prefixed):
        tok = Tokenizer.from_huggingface(path)
        with pytest.raises(ValueError, match="only to tokenizer.json"):
            tok.to_tiktoken(tmp_path / "x.tiktoken")
        with pytest.raises(ValueError, match="continuing_subword_prefix"):
            tok.encode_with_offsets("a b")
