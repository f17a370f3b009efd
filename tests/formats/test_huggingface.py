"""Hugging Face tokenizer.json files, verified by the tokenizers library itself."""
import json
import os

import pytest

import fastbpe
from fastbpe import Tokenizer, openai

from_gpt2, from_huggingface = Tokenizer.from_gpt2, Tokenizer.from_huggingface

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) verifies the HF format")

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


def test_qwen3_tags_that_are_not_special_encode_as_tokenizers_does(shared_data, tmp_path):
    """Qwen3's <think> and <tool_call> are added tokens that are not special: tokenizers matches
    them in any text, and so does every call here; its special ones keep tiktoken's policy."""
    path = shared_data.path("tokenizers", "qwen3", "tokenizer.json")
    tok, hf = Tokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    text = "Sure.<think>\nfirst</think>\n\n<tool_call>{\"name\": \"f\"}</tool_call> <think>é</think>\u0338"
    expected = hf.encode(text, add_special_tokens=False).ids
    assert tok.encode(text) == tok.encode_ordinary(text) == tok.encode_batch([text] * 80)[-1] == expected
    with pytest.raises(ValueError, match="<|im_end|>"):
        tok.encode(text + "<|im_end|>")
    tok.to_huggingface(tmp_path / "tokenizer.json")
    again = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert again.encode(text, add_special_tokens=False).ids == expected
    assert {t.content for t in again.get_added_tokens_decoder().values() if not t.special} == tok.specials.always
    tok.save(tmp_path / "native.json")
    assert Tokenizer.load(tmp_path / "native.json").encode(text) == expected


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
    tok = fastbpe.train("aa bb aa bb cc " * 30, num_merges=5, pattern="whitespace", progress=False)
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


def test_the_post_processor_is_kept_and_written_back(tmp_path):
    """A file's post_processor (the BOS that Llama's files put before the ids, ByteLevel's offset
    trimming) comes back in every file fastbpe writes of the tokenizer, so that tokenizers adds
    the same ids around the text; fastbpe's own ids stay tokenizers' without them."""
    import pickle

    from tokenizers import processors

    fastbpe.train(text="hello world, hello there " * 30, vocab_size=280, progress=False,
                  special_tokens=["<|begin_of_text|>", "<|end_of_text|>"]).to_huggingface(tmp_path / "plain.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "plain.json"))
    bos, eos = hf.token_to_id("<|begin_of_text|>"), hf.token_to_id("<|end_of_text|>")
    for processor in (processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="$A:0 <|end_of_text|> $B:1",
                                                    special_tokens=[("<|begin_of_text|>", bos),
                                                                    ("<|end_of_text|>", eos)]),
                      processors.ByteLevel(trim_offsets=False)):
        hf.post_processor = processor
        hf.save(str(tmp_path / "in.json"))
        tok = fastbpe.load(tmp_path / "in.json")
        assert tok.post_processor == json.loads((tmp_path / "in.json").read_text())["post_processor"]
        tok.save(tmp_path / "t.fastbpe.json")
        for again in (tok, fastbpe.load(tmp_path / "t.fastbpe.json"), pickle.loads(pickle.dumps(tok)),
                      tok.extend(text="hello there, hello again " * 20, num_merges=3, progress=False)):
            again.to_huggingface(tmp_path / "out.json")
            out = tokenizers.Tokenizer.from_file(str(tmp_path / "out.json"))
            for text in ("hello world", "", " x"):
                assert out.encode(text).ids == hf.encode(text).ids
                assert out.encode(text, "and more").ids == hf.encode(text, "and more").ids
                assert again.encode(text) == hf.encode(text, add_special_tokens=False).ids
    with pytest.raises(ValueError, match="post_processor must be an object or null"):
        data = json.loads((tmp_path / "in.json").read_text())
        data["post_processor"] = ["TemplateProcessing"]
        (tmp_path / "bad.json").write_text(json.dumps(data))
        fastbpe.load(tmp_path / "bad.json")
    for bad in (3, {"type": float("nan")}, {"type": object()}):
        with pytest.raises(TypeError, match="post_processor must"):
            Tokenizer([bytes([b]) for b in range(256)], [], post_processor=bad)


@pytest.mark.parametrize("kind", ["TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel",
                                  "Sequence", "none"])
def test_post_process_puts_the_ids_tokenizers_puts_around_the_text(tmp_path, kind):
    """``post_process(encode(a), encode(b))`` is tokenizers' ``encode(a, b).ids`` with its
    default ``add_special_tokens=True``, for every post-processor that gives ids, single and pair."""
    from tokenizers import processors

    names = ["<s>", "</s>", "[CLS]", "[SEP]"]
    fastbpe.train(text="hello world, hello there " * 30, vocab_size=280, progress=False,
                  special_tokens=names).to_huggingface(tmp_path / "plain.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "plain.json"))
    s, e, cls, sep = (hf.token_to_id(name) for name in names)
    template = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> $B:1 </s>:1",
                                             special_tokens=[("<s>", s), ("</s>", e)])
    hf.post_processor = {
        "TemplateProcessing": template, "BertProcessing": processors.BertProcessing(("[SEP]", sep), ("[CLS]", cls)),
        "RobertaProcessing": processors.RobertaProcessing(("</s>", e), ("<s>", s)), "ByteLevel": processors.ByteLevel(),
        "Sequence": processors.Sequence([processors.ByteLevel(), template]), "none": None}[kind]
    hf.save(str(tmp_path / "in.json"))
    tok = fastbpe.load(tmp_path / "in.json")
    for a, b in (("hello world", None), ("", None), ("hello", "there world"), ("", "")):
        expected = hf.encode(a).ids if b is None else hf.encode(a, b).ids
        assert tok.post_process(tok.encode(a), None if b is None else tok.encode(b)) == expected, (a, b)
    with pytest.raises(ValueError, match="post-processor is not supported"):
        Tokenizer(tok.token_bytes, tok.merge_ids, post_processor={"type": "Other"}).post_process([1])
    with pytest.raises(ValueError, match="not one tokenizers reads"):
        Tokenizer(tok.token_bytes, tok.merge_ids, post_processor={"type": "BertProcessing"}).post_process([1])


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
    assert "BertNormalizer" in broken(lambda d: d.update(normalizer={"type": "BertNormalizer"}))
    assert "Split" in broken(lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(behavior="Contiguous"))
    assert "added token" in broken(lambda d: d["added_tokens"].append({"id": "x"}))
    assert "invalid id" in broken(lambda d: d["model"]["vocab"].update({"t": -5}))
    assert "add_prefix_space" in broken(lambda d: d["pre_tokenizer"]["pretokenizers"][1].update(add_prefix_space=True))
    raw = shared_data.path("tokenizers", "qwen3", "tokenizer.json").read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="JSON"):
        from_huggingface(path)


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


def test_added_tokens_are_distinct_and_well_typed(tmp_path):
    small = fastbpe.train("the cat sat on the mat " * 20, vocab_size=300, progress=False,
                          special_tokens=["<|endoftext|>", "<pad>"])
    small.to_huggingface(tmp_path / "tokenizer.json")
    real = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))

    def broken(change):
        data = json.loads(json.dumps(real))
        change(data)
        (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(ValueError) as info:
            from_huggingface(tmp_path)
        return str(info.value)

    # two added tokens with one content became one special token
    assert "listed twice" in broken(lambda d: d["added_tokens"][1].update(content="<|endoftext|>"))
    assert "invalid id" in broken(lambda d: d["added_tokens"][0].update(id=True))
    assert "Split pattern" in broken(lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(pattern={"Regex": 5}))
    assert "ignore_merges" in broken(lambda d: d["model"].update(ignore_merges="false"))


def test_a_split_regex_spelled_like_a_word_is_a_regex(tmp_path):
    small = fastbpe.train("the cat sat on the mat " * 20, vocab_size=300, progress=False)
    small.to_huggingface(tmp_path / "tokenizer.json")
    data = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    data["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"String": "gpt2"}
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    tok = from_huggingface(tmp_path)
    # the chunks are the matches of the literal text "gpt2" (this export drops the gaps), not
    # the chunks of GPT-2's pattern ("agpt", "2", "b")
    assert tok.tokens("agpt2b gpt2") == [b"g", b"p", b"t", b"2"] * 2
    assert tok.pattern == "(?:gpt2)"


def test_a_pattern_the_regex_module_reads_otherwise_than_oniguruma_exports_with_its_meaning(tmp_path):
    """\\h is horizontal whitespace to the regex module and a hexadecimal digit to Oniguruma;
    [ and && inside a class are characters to the regex module and a class and an
    intersection to Oniguruma: a tokenizer.json says what fastbpe's pattern means."""
    pattern = r"\h+|[a&&b]+|[[x]+|[^\w\h&\[]+|\w+"
    text = "a&&b [x] cafe\tbeef\u3000 12ab a&b [[x]] ok!\n"
    small = fastbpe.train(iter([text * 30]), vocab_size=300, pattern=pattern, progress=False)
    small.to_huggingface(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for sample in (text, "deadbeef\t \u00a0&&[[", "x[a&b]y"):
        assert hf.encode(sample, add_special_tokens=False).ids == small.encode(sample), repr(sample)
    assert from_huggingface(tmp_path).encode(text) == small.encode(text)


def test_a_pattern_a_peer_s_regex_engine_reads_otherwise_is_not_written_for_it(tmp_path):
    """What tiktoken's engine (fancy-regex) or Oniguruma would read otherwise is refused by the
    writer of that format, naming it: ``[[:alpha:]]`` is ASCII letters to tiktoken (Tamil words
    split otherwise), ``\\X`` it does not know, and Oniguruma cuts graphemes otherwise (Hindi)."""
    text = "hello world செயலிழக்கப்பட்டது नमस्ते " * 20
    posix = fastbpe.train(text=text, vocab_size=300, pattern=r"[[:alpha:]]+|.", progress=False)
    with pytest.raises(ValueError, match=r"\[:alpha:\] in .*tiktoken's regex engine reads POSIX classes as ASCII"):
        posix.to_tiktoken(tmp_path / "p.tiktoken")
    posix.to_huggingface(tmp_path / "p.json")  # (Oniguruma's POSIX classes are Unicode's: the same chunks)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "p.json"))
    assert hf.encode(text, add_special_tokens=False).ids == posix.encode(text)
    graphemes = fastbpe.train(text=text, vocab_size=300, pattern=r"\X", progress=False)
    with pytest.raises(ValueError, match="tiktoken's regex engine has no grapheme clusters"):
        graphemes.to_tiktoken(tmp_path / "g.tiktoken")
    with pytest.raises(ValueError, match="Oniguruma.*cuts grapheme clusters otherwise"):
        graphemes.to_huggingface(tmp_path / "g.json")
    assert sorted(os.listdir(tmp_path)) == ["p.json"]
    # and a file whose Split is \X is refused as it loads: fastbpe could not split as tokenizers does
    data = json.loads((tmp_path / "p.json").read_text())
    data["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"Regex": "\\X"}
    (tmp_path / "x.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="cannot split as tokenizers does"):
        fastbpe.load(tmp_path / "x.json")


def test_a_special_token_with_the_text_of_a_learned_token_is_not_exported_with_other_ids(tmp_path):
    """tokenizer.json and encoder.json give a text one id: a special token spelled as a learned
    token would get that token's id from tokenizers (or lose the token in encoder.json)."""
    tok = fastbpe.train(iter(["user said hello\nuser said bye\nuser: ok user " * 3]), vocab_size=276,
                        special_tokens=["user"], progress=False)
    learned = tok.token_bytes.index(b"user")
    assert tok.special_tokens["user"] != learned
    with pytest.raises(ValueError, match=f"special token 'user' .* text of token {learned} in tokenizer.json"):
        tok.to_huggingface(tmp_path / "tokenizer.json")
    with pytest.raises(ValueError, match=f"special token 'user' .* text of token {learned} in encoder.json"):
        tok.to_gpt2(tmp_path / "gpt2")
    assert not (tmp_path / "tokenizer.json").exists() and not (tmp_path / "gpt2" / "encoder.json").exists()
    tok.save(tmp_path / "t.fastbpe.json")  # (a fastbpe file keeps both)
    assert Tokenizer.load(tmp_path / "t.fastbpe.json").encode("user said", allowed_special="all") == \
        tok.encode("user said", allowed_special="all")
