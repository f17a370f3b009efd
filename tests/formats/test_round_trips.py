"""Every kind of tokenizer fastbpe builds or loads, through its files and back.

For each kind: fastbpe's own file read back writes the same JSON; a tokenizer.json written by
fastbpe encodes, in ``tokenizers`` itself, exactly as fastbpe does on the multilingual table
(and one loaded from a tokenizer.json reads its own written file back to the same tokenizer);
a ``.tiktoken`` file written by fastbpe reads back to the same ids. What a format cannot say
is a ValueError, never a file that encodes otherwise.
"""
import json

import pytest

import fastbpe
from fastbpe import Tokenizer

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) verifies the written files")

BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]
EXTRA = ["", " ", "  x", "a\r\n\r\n  b", "1234567 ２０２４年", "ＡＢＣ  Ｄ İstanbul ǅ", "😀 🙂🙂 𝔘", "a\u0301 combining"]


@pytest.fixture(scope="module")
def rows(shared_data):
    return shared_data.rows("parallel_multi.tsv.gz", 120)


def _hf_base(rows) -> dict:
    """A byte-level tokenizer.json trained by tokenizers itself."""
    from tokenizers import models, pre_tokenizers, trainers

    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    hf.train_from_iterator(rows, trainers.BpeTrainer(vocab_size=900, show_progress=False,
                                                     initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return json.loads(hf.to_str())


def _added(content, i, special=True):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": special}


def _from_json(data: dict, tmp_path) -> Tokenizer:
    path = tmp_path / "source.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return Tokenizer.from_huggingface(path)


def _deepseek(rows, tmp_path):
    data = _hf_base(rows)
    vocab = data["model"]["vocab"]
    first = len(vocab)
    names = ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"]
    for k, name in enumerate(names):
        vocab[name] = first + k  # added tokens in plain text inside the model's vocabulary
    data["added_tokens"] = [_added(n, first + k) for k, n in enumerate(names)]
    split = lambda rx: {"type": "Split", "pattern": {"Regex": rx}, "behavior": "Isolated", "invert": False}
    data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        split("\\p{N}{1,3}"), split("[一-龥\u3040-ゟ゠-ヿ]+"), split("\\s+(?!\\S)|\\s+|\\S+"),
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    return _from_json(data, tmp_path)


def _normalizer_sequence(rows, tmp_path):
    data = _hf_base(rows)
    data["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "NFKC"}, {"type": "Lowercase"}, {"type": "Replace", "pattern": {"Regex": "\\s{2,}"}, "content": " "},
        {"type": "Strip", "strip_left": False, "strip_right": True}]}
    data["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    data["model"]["ignore_merges"] = True
    return _from_json(data, tmp_path)


def _byte_fallback(rows, tmp_path):
    from tokenizers import decoders, models, pre_tokenizers, trainers

    hf = tokenizers.Tokenizer(models.BPE(byte_fallback=True))
    hf.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    hf.decoder = decoders.Sequence([decoders.Metaspace(replacement="▁", prepend_scheme="always"),
                                    decoders.ByteFallback(), decoders.Fuse()])  # (the byte pieces decoded too)
    hf.train_from_iterator(rows, trainers.BpeTrainer(vocab_size=700, special_tokens=["<s>", "</s>", *BYTE_TOKENS],
                                                     limit_alphabet=100, show_progress=False))
    data = json.loads(hf.to_str())
    data["added_tokens"] = [a for a in data["added_tokens"] if a["content"] not in BYTE_TOKENS]
    return _from_json(data, tmp_path)


# kind -> (builder, whether a tokenizer.json can hold it, whether it came from one)
KINDS = {
    "trained-bytes": (lambda rows, tmp: fastbpe.train(text="".join(rows), num_merges=400, special_tokens=["<|eot|>"],
                                                      workers=1, progress=False), True, False),
    "trained-markers": (lambda rows, tmp: fastbpe.train(text="".join(rows), num_merges=200, unit="chars",
                                                        word_end="</w>", workers=1, progress=False), False, False),
    "trained-bytes-word-start": (lambda rows, tmp: fastbpe.train(text="".join(rows), num_merges=200, word_start="▁",
                                                                 workers=1, progress=False), False, False),
    "byte-fallback": (_byte_fallback, True, True),
    "deepseek-stages": (_deepseek, True, True),
    "normalizer-sequence": (_normalizer_sequence, True, True),
}


def _check_native(tok: Tokenizer, tmp_path) -> Tokenizer:
    """fastbpe's file read back writes the same JSON, and encodes the same."""
    tok.save(tmp_path / "a.json")
    again = Tokenizer.load(tmp_path / "a.json")
    again.save(tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert again == tok and again.to_dict() == tok.to_dict()
    return again


def _check_huggingface(tok: Tokenizer, texts, tmp_path, from_huggingface: bool) -> None:
    path = tmp_path / "written.json"
    tok.to_huggingface(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    for text in texts:
        assert tok.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids, repr(text)
    again = Tokenizer.from_huggingface(path)
    if from_huggingface:  # every component maps to the file and back
        assert again.to_dict() == tok.to_dict()
    for text in texts[:30]:
        assert again.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_round_trips(kind, rows, tmp_path):
    build, huggingface, from_huggingface = KINDS[kind]
    tok = build(rows, tmp_path)
    texts = [*rows, *EXTRA, *(f"{s}{rows[0][:20]}{s}" for s in tok.special_tokens)]
    _check_native(tok, tmp_path)
    if huggingface:
        _check_huggingface(tok, texts, tmp_path, from_huggingface)
    else:
        with pytest.raises(ValueError, match="word markers"):
            tok.to_huggingface(tmp_path / "refused.json")
        assert not (tmp_path / "refused.json").exists()


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_shared_huggingface_files_round_trip(name, rows, shared_data, tmp_path):
    tok = Tokenizer.from_huggingface(shared_data.path("tokenizers", name, "tokenizer.json"))
    _check_native(tok, tmp_path)
    _check_huggingface(tok, [*rows[:60], *EXTRA], tmp_path, from_huggingface=True)


def test_shared_tiktoken_file_round_trips(rows, shared_data, tmp_path):
    tok = fastbpe.openai("cl100k_base", shared_data.path("tokenizers", "tiktoken"))
    again = _check_native(tok, tmp_path)
    texts = [*rows[:60], *EXTRA, "<|endoftext|> x"]
    tok.to_tiktoken(tmp_path / "t.tiktoken")
    from_tiktoken = Tokenizer._from_file(fastbpe.formats.tiktoken.read_with_sidecar(tmp_path / "t.tiktoken"), "t")
    for text in texts:
        expected = tok.encode(text, allowed_special="all")
        assert again.encode(text, allowed_special="all") == expected
        assert from_tiktoken.encode(text, allowed_special="all") == expected
    _check_huggingface(tok, texts, tmp_path, from_huggingface=False)


def test_trained_tokenizer_round_trips_through_tiktoken(rows, tmp_path):
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken (test extra) reads the written file")
    import tiktoken.load
    tok = fastbpe.train(text="".join(rows), num_merges=300, pattern="cl100k", special_tokens=["<|eot|>"],
                        workers=1, progress=False)
    tok.to_tiktoken(tmp_path / "t.tiktoken")
    sidecar = json.loads((tmp_path / "t.tiktoken.json").read_text(encoding="utf-8"))
    encoding = tiktoken.Encoding("t", pat_str=sidecar["pat_str"], special_tokens=sidecar["special_tokens"],
                                 mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(tmp_path / "t.tiktoken")))
    for text in [*rows[:60], *EXTRA, "<|eot|>x"]:
        assert encoding.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all"), repr(text)


def test_a_special_token_inside_the_table_reads_back_as_a_special_token_only(rows, tmp_path):
    # after extend, new tokens follow the special token's id: the written file puts the special
    # token in model.vocab to keep its id, and reading it back must not make it a mergeable token
    tok = fastbpe.train(text="".join(rows[:40]), num_merges=100, special_tokens=["<|eot|>"], workers=1, progress=False)
    tok = tok.extend(text="".join(rows[40:80]), num_merges=20, progress=False)
    (sid,) = tok.special_tokens.values()
    assert sid < len(tok.token_bytes) and tok.token_bytes[sid] == b""
    tok.to_huggingface(tmp_path / "t.json")
    again = Tokenizer.from_huggingface(tmp_path / "t.json")
    assert again.token_bytes == tok.token_bytes and again.special_tokens == tok.special_tokens
    again.to_tiktoken(tmp_path / "t.tiktoken")  # a special token may not share a rank's id there
    assert fastbpe.load(tmp_path / "t.tiktoken").encode("<|eot|> x", allowed_special="all") == \
        tok.encode("<|eot|> x", allowed_special="all")
