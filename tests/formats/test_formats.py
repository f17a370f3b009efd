"""The peers' file formats, each verified by the peer library itself (tiktoken, tokenizers)."""
import json

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

import fastbpe
from fastbpe import openai
from fastbpe.formats import OPENAI_ENCODINGS, read_tiktoken_ranks, to_tiktoken_encoding
from fastbpe.split.patterns import source as pattern_source
from fastbpe import Tokenizer

from_gpt2, from_huggingface = Tokenizer.from_gpt2, Tokenizer.from_huggingface


tiktoken = pytest.importorskip("tiktoken", reason="tiktoken (test extra) verifies the tiktoken format")
tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) verifies the HF format")


@pytest.fixture(scope="module")
def samples(shared_data):
    """Real text: 2,000 rows of the 9-language table, 1 MB of English, 1 MB of code."""
    return {
        "multi": "".join(shared_data.rows("parallel_multi.tsv.gz", 2000)),
        "english": shared_data.text("english.txt.gz", 1_000_000),
        "code": shared_data.text("code.txt.gz", 1_000_000),
    }


def tiktoken_encoding(name, shared_data):
    path = shared_data.path("tokenizers", "tiktoken", f"{name}.tiktoken")
    pattern, specials = OPENAI_ENCODINGS[name]
    return tiktoken.Encoding(name, pat_str=pattern_source(pattern), mergeable_ranks=read_tiktoken_ranks(path),
                             special_tokens=specials)


@pytest.mark.parametrize("name,hello", [("r50k_base", [31373, 995]), ("p50k_base", [31373, 995]),
                                        ("cl100k_base", [15339, 1917]), ("o200k_base", [24912, 2375])])
def test_openai_encodings_equal_tiktoken(name, hello, samples, shared_data):
    tok = openai(name, shared_data.path("tokenizers", "tiktoken"))
    enc = tiktoken_encoding(name, shared_data)
    assert tok.encode("hello world") == hello
    size = None if name in ("cl100k_base", "o200k_base") else 200_000  # the older two: a smaller slice
    for label, text in samples.items():
        text = text[:size]
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), label
    # per row too (short texts exercise chunk edges)
    for row in shared_data.rows("parallel_multi.tsv.gz", 300):
        assert tok.encode_ordinary(row) == enc.encode_ordinary(row)


def test_gpt2_files_equal_r50k(samples, shared_data):
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    encoder, vocab = shared_data.path("tokenizers", "encoder.json"), shared_data.path("tokenizers", "vocab.bpe")
    tok = from_gpt2(encoder, vocab)
    ranks = data_gym_to_mergeable_bpe_ranks(str(vocab), str(encoder))
    assert {t: i for i, t in enumerate(tok.token_bytes) if t} == ranks
    assert tok.special_tokens == {"<|endoftext|>": 50256}
    assert tok.encode("hello world") == [31373, 995]
    enc = tiktoken_encoding("r50k_base", shared_data)
    text = samples["english"][:200_000] + samples["multi"][:100_000]
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)


def test_gpt2_export_round_trip(tmp_path, samples, shared_data):
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    tok = fastbpe.train(samples["english"][:200_000], vocab_size=600, progress=False, special_tokens=["<|endoftext|>"])
    tok.to_gpt2(tmp_path)
    again = Tokenizer.from_gpt2(tmp_path / "encoder.json", tmp_path / "vocab.bpe")
    assert again.token_bytes == tok.token_bytes
    assert again.merge_ids.tolist() == tok.merge_ids.tolist()
    # GPT-2's own files survive the trip, and tiktoken's loader reads the written ones.
    # (Its loader assumes GPT-2's id layout, so it is only asked about GPT-2's vocabulary.)
    gpt2 = from_gpt2(shared_data.path("tokenizers", "encoder.json"), shared_data.path("tokenizers", "vocab.bpe"))
    gpt2.to_gpt2(tmp_path / "gpt2")
    ranks = data_gym_to_mergeable_bpe_ranks(str(tmp_path / "gpt2" / "vocab.bpe"), str(tmp_path / "gpt2" / "encoder.json"))
    assert ranks == {t: i for i, t in enumerate(gpt2.token_bytes) if t}


def test_trained_tokenizer_exports_to_tiktoken(tmp_path, samples):
    tok = fastbpe.train(samples["english"][:300_000], vocab_size=2000, progress=False,
                        special_tokens=["<|endoftext|>"])
    tok.to_tiktoken(tmp_path / "mine.tiktoken")
    side = json.loads((tmp_path / "mine.tiktoken.json").read_text())
    enc = tiktoken.Encoding("mine", pat_str=side["pat_str"], special_tokens=side["special_tokens"],
                            mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(tmp_path / "mine.tiktoken")))
    for text in (samples["english"][300_000:600_000], samples["code"][:200_000], samples["multi"][:200_000]):
        assert enc.encode_ordinary(text) == tok.encode_ordinary(text)
    assert to_tiktoken_encoding(tok).encode("x<|endoftext|>", allowed_special="all") == \
        tok.encode("x<|endoftext|>", allowed_special="all")
    back = Tokenizer.from_tiktoken(tmp_path / "mine.tiktoken", side["pat_str"], side["special_tokens"])
    assert back.encode_ordinary(samples["code"][:100_000]) == tok.encode_ordinary(samples["code"][:100_000])


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_huggingface_import_equals_tokenizers(name, samples, shared_data):
    path = shared_data.path("tokenizers", name, "tokenizer.json")
    tok = Tokenizer.from_huggingface(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    for label, text in samples.items():
        text = text[:250_000]
        assert tok.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids, label
    chat = "<|im_start|>user\nHi<|im_end|>" if name == "qwen3" else "<|begin_of_text|>Hi<|eot_id|>"
    assert tok.encode(chat, allowed_special="all") == hf.encode(chat, add_special_tokens=False).ids


def test_trained_tokenizer_exports_to_huggingface(tmp_path, samples):
    tok = fastbpe.train(samples["english"][:300_000], vocab_size=2000, progress=False,
                        special_tokens=["<|endoftext|>"])
    tok.to_huggingface(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in (samples["english"][300_000:600_000], samples["code"][:200_000], samples["multi"][:200_000],
                 "a <|endoftext|> b"):
        assert hf.encode(text, add_special_tokens=False).ids == tok.encode(text, allowed_special="all")
    again = Tokenizer.from_huggingface(tmp_path / "tokenizer.json")
    assert again.encode_ordinary(samples["code"][:100_000]) == tok.encode_ordinary(samples["code"][:100_000])


def test_gap_dropping_pattern_exports_to_huggingface(tmp_path):
    tok = fastbpe.train("aa bb aa bb cc " * 30, num_merges=5, pretokenizer="whitespace", progress=False)
    tok.to_huggingface(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    text = "aa  bb\ncc aabb"
    assert hf.encode(text, add_special_tokens=False).ids == tok.encode(text)


def test_tiktoken_import_exports_to_huggingface(tmp_path, samples, shared_data):
    tok = openai("cl100k_base", shared_data.path("tokenizers", "tiktoken"))
    tok.to_huggingface(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in (samples["english"][:200_000], samples["multi"][:200_000]):
        assert hf.encode(text, add_special_tokens=False).ids == tok.encode_ordinary(text)


def test_native_file_keeps_peer_rules(tmp_path, shared_data):
    tok = openai("r50k_base", shared_data.path("tokenizers", "tiktoken"))
    tok.save(tmp_path / "r50k.json")
    again = Tokenizer.load(tmp_path / "r50k.json")
    assert (again.merge_rule, again.whole_token_lookup) == ("token", True)
    text = "Hello world, ünïcödé 😀 and code: x += 1\n\n"
    assert again.encode(text) == tok.encode(text)


# ---- malformed and truncated files: a ValueError naming the problem, never a crash --------------


def test_malformed_tiktoken_files(tmp_path, shared_data):
    cases = {
        "empty": b"",
        "one field": b"YQ==\n",
        "bad base64": b"!!!! 0\n",
        "bad rank": b"YQ== zero\n",
        "duplicate rank": b"YQ== 0\nYg== 0\n",
        "duplicate token": b"YQ== 0\nYQ== 1\n",
        "negative rank": b"YQ== -1\n",
    }
    for label, content in cases.items():
        path = tmp_path / f"{label}.tiktoken"
        path.write_bytes(content)
        with pytest.raises(ValueError):
            read_tiktoken_ranks(path)
    # Truncated: a prefix of a real file lacks most byte tokens.
    real = shared_data.path("tokenizers", "tiktoken", "r50k_base.tiktoken").read_bytes()
    path = tmp_path / "cut.tiktoken"
    path.write_bytes(real[:1000])
    with pytest.raises(ValueError):
        Tokenizer.from_tiktoken(path, "gpt2")
    with pytest.raises(ValueError, match="unknown OpenAI encoding"):
        openai("nope", tmp_path)


def test_malformed_gpt2_files(tmp_path, shared_data):
    encoder, vocab = shared_data.path("tokenizers", "encoder.json"), shared_data.path("tokenizers", "vocab.bpe")
    bad_json = tmp_path / "encoder.json"
    bad_json.write_bytes(encoder.read_bytes()[:5000])
    with pytest.raises(ValueError, match="JSON"):
        from_gpt2(bad_json, vocab)
    bad_vocab = tmp_path / "vocab.bpe"
    bad_vocab.write_text("Ġ t\n")
    with pytest.raises(ValueError, match="#version"):
        from_gpt2(encoder, bad_vocab)
    bad_vocab.write_text("#version: 0.2\nĠ t x\n")
    with pytest.raises(ValueError, match="line 2"):
        from_gpt2(encoder, bad_vocab)
    bad_vocab.write_text("#version: 0.2\nzzzq zzzw\n")
    with pytest.raises(ValueError, match="missing"):
        from_gpt2(encoder, bad_vocab)
    bad_json.write_text("[1, 2]")
    with pytest.raises(ValueError, match="object"):
        from_gpt2(bad_json, vocab)


def test_malformed_huggingface_files(tmp_path, shared_data):
    small = fastbpe.train("the cat sat on the mat " * 20, vocab_size=300, progress=False,
                          special_tokens=["<|endoftext|>"])
    small.to_huggingface(tmp_path / "small.json")
    real = json.loads((tmp_path / "small.json").read_text(encoding="utf-8"))
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(real), encoding="utf-8")
    assert from_huggingface(path).encode("the cat") == small.encode("the cat")

    def broken(change):
        data = json.loads(json.dumps(real))
        change(data)
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(ValueError) as info:
            from_huggingface(path)
        return str(info.value)

    assert "BPE" in broken(lambda d: d["model"].update(type="WordPiece"))
    assert "vocab" in broken(lambda d: d["model"].pop("vocab"))
    assert "merge 0" in broken(lambda d: d["model"]["merges"].__setitem__(0, ["Ġ"]))
    assert "missing" in broken(lambda d: d["model"]["merges"].__setitem__(0, ["t", "nope-token"]))
    assert "ByteLevel" in broken(lambda d: d.update(pre_tokenizer={"type": "Whitespace"}))
    assert "normalizer" in broken(lambda d: d.update(normalizer={"type": "Lowercase"}))
    assert "Split" in broken(lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(behavior="Contiguous"))
    assert "added token" in broken(lambda d: d["added_tokens"].append({"id": "x"}))
    assert "invalid id" in broken(lambda d: d["model"]["vocab"].update({"t": -5}))
    assert "add_prefix_space" in broken(lambda d: d["pre_tokenizer"]["pretokenizers"][1].update(add_prefix_space=True))
    raw = shared_data.path("tokenizers", "qwen3", "tokenizer.json").read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="JSON"):
        from_huggingface(path)


def test_truncated_native_file(tmp_path):
    tok = fastbpe.train("the cat sat on the mat " * 20, vocab_size=270, progress=False)
    tok.save(tmp_path / "t.json")
    data = (tmp_path / "t.json").read_bytes()
    (tmp_path / "t.json").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError):
        Tokenizer.load(tmp_path / "t.json")


_SMALL = []


def _small_files(tmp_dir):
    """A small trained tokenizer written in every format (built once)."""
    if not _SMALL:
        tok = fastbpe.train("the cat sat on the mat, the dog ate 12 bones; ünï 😀 " * 20, vocab_size=320,
                            progress=False, special_tokens=["<|endoftext|>"])
        tok.to_huggingface(tmp_dir / "tokenizer.json")
        tok.to_tiktoken(tmp_dir / "small.tiktoken")
        tok.to_gpt2(tmp_dir / "gpt2")
        tok.save(tmp_dir / "native.json")
        _SMALL.append({name: (tmp_dir / name).read_bytes() for name in
                       ["tokenizer.json", "small.tiktoken", "gpt2/encoder.json", "gpt2/vocab.bpe", "native.json"]})
    return _SMALL[0]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["tokenizer.json", "small.tiktoken", "gpt2/encoder.json", "gpt2/vocab.bpe", "native.json"]),
       st.integers(0, 10**9), st.sampled_from(["truncate", "flip", "delete"]), st.binary(min_size=1, max_size=3))
def test_corrupted_files_give_value_errors(tmp_path_factory, name, where, how, junk):
    """Random damage to any format: it loads, or raises ValueError; nothing else escapes."""
    tmp = tmp_path_factory.getbasetemp() / "corrupt"
    (tmp / "gpt2").mkdir(parents=True, exist_ok=True)
    files = _small_files(tmp)
    data = files[name]
    cut = where % (len(data) + 1)
    if how == "truncate":
        bad = data[:cut]
    elif how == "flip":
        bad = data[:cut] + junk + data[cut + len(junk):]
    else:
        bad = data[:cut] + data[cut + len(junk):]
    work = tmp / "work"
    (work / "gpt2").mkdir(parents=True, exist_ok=True)
    for other, content in files.items():
        (work / other).write_bytes(content)
    (work / name).write_bytes(bad)
    loaders = {
        "tokenizer.json": lambda: from_huggingface(work / "tokenizer.json"),
        "small.tiktoken": lambda: Tokenizer.from_tiktoken(work / "small.tiktoken", "gpt2", {"<|endoftext|>": 320}),
        "gpt2/encoder.json": lambda: from_gpt2(work / "gpt2" / "encoder.json", work / "gpt2" / "vocab.bpe"),
        "gpt2/vocab.bpe": lambda: from_gpt2(work / "gpt2" / "encoder.json", work / "gpt2" / "vocab.bpe"),
        "native.json": lambda: Tokenizer.load(work / "native.json"),
    }
    try:
        tok = loaders[name]()
    except ValueError:
        return
    try:  # a damaged vocabulary may lack a byte: also a ValueError, never anything else
        tok.decode(tok.encode("the cat ate 12 bones", disallowed_special=()))
    except ValueError:
        pass
