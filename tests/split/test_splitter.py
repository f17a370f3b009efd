"""The splitter component: its fields of fastbpe's file, its pre_tokenizer of a tokenizer.json
(read back the same, and split as tokenizers splits), tiktoken's pat_str."""
import pytest

from fastbpe.split.patterns import GPT2_ORIGINAL_PATTERN, PATTERNS
from fastbpe.split.splitter import METASPACE_SPLIT, WHOLE_PIECE, Splitter, metaspace_splitter

SPLITTERS = [
    Splitter(),
    Splitter("cl100k"),
    Splitter(r"\w+|[^\w\s]+", split_gaps=True),
    Splitter("whitespace", split_gaps=False),
    Splitter(GPT2_ORIGINAL_PATTERN, split_gaps=True, prefix_space=True),
    Splitter(WHOLE_PIECE, split_gaps=True, prefix_space=True),
    # DeepSeek-style: digits, CJK runs, then a word regex
    Splitter(r"\p{N}{1,3}", True, [("[一-龥\u3040-ゟ゠-ヿ]+", True), (r"\s+|\S+", True)]),
    Splitter(r"\p{N}{1,3}", True, [(GPT2_ORIGINAL_PATTERN, True)]),
    Splitter(r"\p{N}{1,3}+|[ab]{2}+", False, [("x", True)]),
]


@pytest.mark.parametrize("splitter", SPLITTERS, ids=repr)
def test_native_fields_read_back_the_same(splitter):
    assert Splitter.from_native(splitter.to_native()) == splitter
    fields = splitter.to_native()
    assert set(fields) - {"pattern"} == {k for k in ("split_gaps", "split_stages", "prefix_space")
                                         if getattr(splitter, k)}


@pytest.mark.parametrize("splitter", SPLITTERS[2:], ids=repr)
def test_huggingface_pre_tokenizer_reads_back_and_splits_as_tokenizers(splitter):
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) runs the pre_tokenizer")
    import json

    pre = splitter.to_huggingface()
    again = Splitter.from_huggingface(pre, "t.json")
    assert len(again.stages) == len(splitter.stages) and again.prefix_space == splitter.prefix_space
    assert Splitter.from_huggingface(again.to_huggingface(), "t.json") == again
    hf = tokenizers.Tokenizer.from_str(json.dumps({
        "version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": pre, "post_processor": None,
        "decoder": None, "truncation": None, "padding": None,
        "model": {"type": "BPE", "vocab": {}, "merges": []}}))
    for text in ["ab  12345 cd", "日本語のテキスト 2024年", " x\ny\n\n  z", "ab ab abab xx", ""]:
        pieces = [piece for piece, _ in hf.pre_tokenizer.pre_tokenize_str(text)]
        for mine in (splitter, again):
            data, starts, ends = mine.bounds(mine.with_prefix_space(text))
            assert [_byte_level_text(data[a:b]) for a, b in zip(starts.tolist(), ends.tolist())] == pieces, text


def _byte_level_text(piece: bytes) -> str:
    from fastbpe.formats.bytelevel import token_to_text

    return token_to_text(piece)


@pytest.mark.parametrize("pre, message", [
    (None, "no pre_tokenizer"),
    ({"type": "Whitespace"}, "must end with ByteLevel"),
    ({"type": "Sequence", "pretokenizers": [{"type": "Digits"}, {"type": "ByteLevel"}]}, "unsupported pre_tokenizer step"),
    ({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Isolated"},
        {"type": "ByteLevel", "add_prefix_space": True}]}, "add_prefix_space=true after a Split"),
    ({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "MergedWithNext"}, {"type": "ByteLevel"}]},
     "behavior 'MergedWithNext'"),
])
def test_what_the_splitter_cannot_say_is_a_value_error_naming_the_step(pre, message):
    with pytest.raises(ValueError, match=message):
        Splitter.from_huggingface(pre, "t.json")


def test_written_pre_tokenizer_refuses_what_it_cannot_say():
    with pytest.raises(ValueError, match="prefix_space"):
        Splitter(r"\d+", True, [("x", True)], prefix_space=True).to_huggingface()
    with pytest.raises(ValueError, match="character-level"):
        Splitter("gpt2").to_huggingface(byte_level=False)
    assert Splitter(WHOLE_PIECE).to_huggingface(byte_level=False) is None
    assert metaspace_splitter(Splitter(METASPACE_SPLIT).to_huggingface(byte_level=False), False, "t")[0] \
        == Splitter(METASPACE_SPLIT)


def test_metaspace_becomes_a_split_and_normaliser_steps():
    splitter, steps = metaspace_splitter({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always",
                                          "split": True}, False, "t.json")
    assert splitter == Splitter(METASPACE_SPLIT) and [s["content"] for s in steps] == ["▁", "▁"]
    splitter, steps = metaspace_splitter({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never",
                                          "split": False}, False, "t.json")
    assert splitter == Splitter(WHOLE_PIECE) and len(steps) == 1
    with pytest.raises(ValueError, match="prepend_scheme='first' with added tokens"):
        metaspace_splitter({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"}, True, "t.json")


def test_tiktoken_pat_str_only_for_one_split_that_drops_nothing_else():
    assert Splitter("cl100k").to_tiktoken() == PATTERNS["cl100k"]
    assert Splitter("llama3", split_gaps=True).to_tiktoken() == PATTERNS["llama3"]  # tiles: no gaps to keep
    for splitter in [Splitter("whitespace", split_gaps=True), Splitter("gpt2", prefix_space=True),
                     Splitter("gpt2", False, [(r"\d", True)])]:
        with pytest.raises(ValueError, match="single split pattern"):
            splitter.to_tiktoken()


@pytest.mark.parametrize("data, message", [
    ({"pattern": 5}, "'pattern' must be str"),
    ({"pattern": "gpt2", "split_gaps": 1}, "'split_gaps' must be bool"),
    ({"pattern": "gpt2", "split_stages": [["a"]]}, "split stages are"),
    ({"pattern": "gpt5"}, "unknown split pattern"),
])
def test_bad_native_fields(data, message):
    with pytest.raises(ValueError, match=message):
        Splitter.from_native(data)
