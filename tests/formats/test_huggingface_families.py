"""Hugging Face tokenizer.json layouts of other model families, built here from a small model
trained by ``tokenizers``, and checked against ``tokenizers`` itself on the multilingual table."""
import json

import pytest

from fastbpe import Tokenizer

from tests.formats.hf_files import trained_by_tokenizers

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) verifies the HF format")

# DeepSeek-V3's pre-tokenizer: digits, then CJK runs, then a GPT-style regex, then ByteLevel
DIGITS = {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": False}
CJK = {"type": "Split", "pattern": {"Regex": "[一-龥\u3040-ゟ゠-ヿ]+"}, "behavior": "Isolated", "invert": False}
WORDS = {"type": "Split", "behavior": "Isolated", "invert": False, "pattern": {
    "Regex": "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
             "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}}
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}


@pytest.fixture(scope="module")
def rows(shared_data):
    return shared_data.rows("parallel_multi.tsv.gz", 300)


@pytest.fixture(scope="module")
def base(rows):
    """A byte-level BPE tokenizer.json (as a dict) trained by tokenizers on the table."""
    return trained_by_tokenizers(rows, 1500)


def _added(content, i, special=True, normalized=False):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": normalized, "special": special}


def _same_as_tokenizers(data, rows, tmp_path, extra=()):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = Tokenizer.from_huggingface(path)
    texts = list(rows) + ["", " ", "  x", "a\r\n\r\n  b", "1234567 ２０２４年", *extra]
    for text in texts:
        assert tok.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids, repr(text)
    # a native file and a tokenizer.json written back encode the same
    tok.save(tmp_path / "native.json")
    again = Tokenizer.load(tmp_path / "native.json")
    tok.to_huggingface(tmp_path / "again.json")
    hf_again = tokenizers.Tokenizer.from_file(str(tmp_path / "again.json"))
    for text in texts[:50]:
        expected = hf.encode(text, add_special_tokens=False).ids
        assert again.encode(text, allowed_special="all") == expected
        assert hf_again.encode(text, add_special_tokens=False).ids == expected
    return tok


def test_deepseek_v3_layout(base, rows, tmp_path):
    """Added tokens in plain text inside model.vocab, a Sequence of three Splits and ByteLevel,
    an empty normalizer Sequence."""
    data = json.loads(json.dumps(base))
    vocab = data["model"]["vocab"]
    first = len(vocab)
    names = ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜fim▁hole｜>", "<think>"]
    for k, name in enumerate(names):
        vocab[name] = first + k
    data["added_tokens"] = [_added(n, first + k, special=k < 3, normalized=k >= 3) for k, n in enumerate(names)]
    data["normalizer"] = {"type": "Sequence", "normalizers": []}
    data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [DIGITS, CJK, WORDS, BYTE_LEVEL]}
    tok = _same_as_tokenizers(data, rows, tmp_path,
                              extra=["<｜begin▁of▁sentence｜>Hi 你好<think>x</think><｜end▁of▁sentence｜>"])
    assert tok.special_tokens["<｜begin▁of▁sentence｜>"] == first
    assert tok.decode([first, *tok.encode("你好")]) == "<｜begin▁of▁sentence｜>你好"


def test_normalizers_and_prefix_space(base, rows, tmp_path):
    """NFKC + Lowercase + Replace + Strip, and ByteLevel alone with add_prefix_space."""
    data = json.loads(json.dumps(base))
    data["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "NFKC"}, {"type": "Lowercase"},
        {"type": "Replace", "pattern": {"Regex": "\\s{2,}"}, "content": " "},
        {"type": "Replace", "pattern": {"String": "%s"}, "content": "<s>"},
        {"type": "Strip", "strip_left": False, "strip_right": True}]}
    data["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    data["added_tokens"] = [_added("<|endoftext|>", len(data["model"]["vocab"]))]
    _same_as_tokenizers(data, rows, tmp_path, extra=["ＡＢＣ  Ｄ <|endoftext|>X  ", "İstanbul ǅ"])


# Oniguruma spellings the regex module reads otherwise: \h is a hexadecimal digit there (the
# regex module's horizontal whitespace), a class holds classes (a union) and intersections (&&)
ONIGURUMA_REGEXES = ["\\h+", "[\\h_]+", "\\H+", "[^\\H]+", "[a-z&&[^aeiou]]+", "[[a-c]x]+", "[\\w&&[^\\d]]+",
                     "[[:alpha:]&&[^a]]+", "[^[a-c]]+", "[]a]", "\\h{2}+"]


@pytest.mark.parametrize("pattern", ONIGURUMA_REGEXES)
def test_oniguruma_classes_in_split_and_replace(base, rows, tmp_path, pattern):
    """A Split regex and a Replace regex mean what Oniguruma makes of them."""
    data = json.loads(json.dumps(base))
    data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}, BYTE_LEVEL]}
    extra = ["hello world 0xBEEF cafe ]a] [x] a&b", "deadbeef 12ab\n_Z"]
    _same_as_tokenizers(data, rows[:60], tmp_path, extra=extra)
    data = json.loads(json.dumps(base))
    data["normalizer"] = {"type": "Replace", "pattern": {"Regex": pattern}, "content": "#"}
    _same_as_tokenizers(data, rows[:60], tmp_path, extra=extra)


def test_prepend_and_one_chunk_per_piece(base, rows, tmp_path):
    """Prepend and NFD; ByteLevel without its regex and no Split: each piece is one chunk;
    ignore_merges looks whole chunks up."""
    data = json.loads(json.dumps(base))
    data["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Prepend", "prepend": "▁"}]}
    data["pre_tokenizer"] = dict(BYTE_LEVEL)
    data["model"]["ignore_merges"] = True
    _same_as_tokenizers(data, rows[:100], tmp_path)


@pytest.mark.filterwarnings("ignore:.*tokenizers gives it")  # (an added token renumbered as tokenizers does)
@pytest.mark.parametrize("change, component", [
    (lambda d: d["model"].update(byte_fallback=True), "byte_fallback"),
    (lambda d: d["model"].update(continuing_subword_prefix="##"), "continuing_subword_prefix"),
    (lambda d: d["model"].update(end_of_word_suffix="</w>"), "end_of_word_suffix"),
    (lambda d: d.update(normalizer={"type": "BertNormalizer"}), "BertNormalizer"),
    (lambda d: d.update(pre_tokenizer={"type": "Metaspace"}), "pre_tokenizer"),
    (lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        DIGITS | {"behavior": "Removed", "invert": "false"}, {"type": "ByteLevel", "add_prefix_space": False}]}), "invert must be true or false"),
    (lambda d: d["added_tokens"].append(_added("<mask>", 5000) | {"lstrip": 1}), "lstrip"),
    (lambda d: d.update(normalizer={"type": "Lowercase"}) or d["added_tokens"].extend(
        [_added("<A>", 5000, normalized=True), _added("<a>", 5001, normalized=True)]), "normalized"),
])
def test_what_cannot_be_reproduced_is_refused(base, tmp_path, change, component):
    data = json.loads(json.dumps(base))
    change(data)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=component):
        Tokenizer.from_huggingface(path)
