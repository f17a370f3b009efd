"""fastbpe.train(compat="hf") learns Hugging Face BpeTrainer's merges, entry by entry."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe.formats.bytelevel import token_to_text as _bytes_to_text


tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) is the oracle here")


def hf_train(text, vocab_size, min_frequency, specials):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([text], trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return tok, [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]


def ours_train(text, vocab_size, min_frequency, specials):
    tok = fastbpe.train(text, vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials,
                        progress=False, compat="hf")
    return tok, [(_bytes_to_text(a), _bytes_to_text(b)) for a, b in tok.merges]


def test_same_merges_as_bpetrainer_on_real_text(shared_data):
    text = shared_data.text("english.txt.gz", 1_000_000)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    hf_tok, theirs = hf_train(text, 2500, 2, specials)
    tok, ours = ours_train(text, 2500, 2, specials)
    assert len(ours) == len(theirs) > 2000
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, f"merge {i}: fastbpe {a} vs tokenizers {b}"
    sample = shared_data.text("english.txt.gz", 1_100_000)[1_000_000:]
    assert tok.encode_ordinary(sample) == _remap(tok, hf_tok, sample)
    # A tokenizer.json whose pre-tokenizer is ByteLevel alone (use_regex) loads and encodes alike.
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        hf_tok.save(str(Path(tmp) / "tokenizer.json"))
        loaded = fastbpe.Tokenizer.from_huggingface(Path(tmp) / "tokenizer.json")
    assert loaded.encode(sample, allowed_special="all") == hf_tok.encode(sample, add_special_tokens=False).ids
    # The default tie rule (first seen) is a different, documented rule: it diverges early.
    default = fastbpe.train(text, vocab_size=2500, min_frequency=2, special_tokens=specials, progress=False)
    assert [(_bytes_to_text(a), _bytes_to_text(b)) for a, b in default.merges] != theirs


def _remap(tok, hf_tok, text):
    """HF's ids for ``text`` expressed as fastbpe ids (the two number tokens differently)."""
    hf_vocab = {i: s for s, i in hf_tok.get_vocab().items()}
    from fastbpe.formats.bytelevel import text_to_token as _text_to_bytes

    return [tok._ids[_text_to_bytes(hf_vocab[i])] for i in hf_tok.encode(text, add_special_tokens=False).ids]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["aa", "ab", "ba", "b", "a a", " ", "\n", "aaa", "é", "xy", "yx"]),
                min_size=1, max_size=60), st.integers(258, 300), st.integers(1, 3))
def test_same_merges_on_tie_heavy_corpora(parts, vocab_size, min_frequency):
    text = "".join(parts)
    _, theirs = hf_train(text, vocab_size, min_frequency, [])
    _, ours = ours_train(text, vocab_size, min_frequency, [])
    assert ours == theirs


def test_compat_needs_byte_level_gpt2():
    with pytest.raises(ValueError, match="compat"):
        fastbpe.train("a b", vocab_size=300, compat="hf", unit="chars", progress=False)
    with pytest.raises(ValueError, match="compat must be"):
        fastbpe.train("a b", vocab_size=300, compat="sentencepiece", progress=False)


def test_several_split_steps_load_and_export(tmp_path, shared_data):
    """A pre-tokenizer Sequence of two Splits plus ByteLevel with its own regex (three stages)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    text = shared_data.text("english.txt.gz", 200_000) + " 12345 678 año 2024-11-30 "
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\d"), behavior="isolated"),
        pre_tokenizers.Split(Regex(r"-"), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    hf.train_from_iterator([text], trainers.BpeTrainer(vocab_size=600, show_progress=False,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    hf.save(str(tmp_path / "tokenizer.json"))
    tok = fastbpe.Tokenizer.from_huggingface(tmp_path / "tokenizer.json")
    assert len(tok.split_stages) == 2
    sample = text[-20_000:] + "\nCall 555-0123 now, 99 bottles"
    expected = hf.encode(sample, add_special_tokens=False).ids
    assert tok.encode(sample) == expected
    tok.save(tmp_path / "native.json")
    assert fastbpe.Tokenizer.load(tmp_path / "native.json").encode(sample) == expected
    tok.to_huggingface(tmp_path / "again.json")
    assert Tokenizer.from_file(str(tmp_path / "again.json")).encode(sample, add_special_tokens=False).ids == expected
    with pytest.raises(ValueError, match="single split"):
        tok.to_tiktoken(tmp_path / "x.tiktoken")
