"""fastbpe's own tokenizer file."""
import json
import warnings

import pytest

import fastbpe
from fastbpe import Tokenizer, openai


def test_native_file_keeps_peer_rules(tmp_path, shared_data):
    tok = openai("r50k_base", shared_data.path("tokenizers", "tiktoken"))
    tok.save(tmp_path / "r50k.json")
    again = Tokenizer.load(tmp_path / "r50k.json")
    assert (again.merge_rule, again.whole_token_lookup) == ("token", True)
    text = "Hello world, ünïcödé 😀 and code: x += 1\n\n"
    assert again.encode(text) == tok.encode(text)


# ---- malformed and truncated files: a ValueError naming the problem, never a crash --------------


def test_truncated_native_file(tmp_path):
    tok = fastbpe.train("the cat sat on the mat " * 20, vocab_size=270, progress=False)
    tok.save(tmp_path / "t.json")
    data = (tmp_path / "t.json").read_bytes()
    (tmp_path / "t.json").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError):
        Tokenizer.load(tmp_path / "t.json")


@pytest.mark.parametrize("field,value,message", [
    ("word_start", 5, "word_start"),
    ("word_end", ["</w>"], "word_end"),
    ("pattern", None, "pattern"),
    ("pattern", "gpt5", "unknown split pattern"),
    ("unit", 3, "unit"),
    ("merges", [[0, 1.5]], "merges"),
    ("merges", [[0, True]], "merges"),
    ("merges", [[0, 2**70]], "invalid id"),
    ("merges", [[0, -1]], "invalid id"),
    ("merges", [[0, 1], [0, 1, 2]], "merges"),
    ("merges", [[0, 1, 2, 3]], "pair of token ids"),
    ("vocab", ["a", "\u4e2d"], "not a byte token"),
    ("merge_counts", ["12"], "merge_counts"),
    ("special_tokens", {"<a>": 1000.7}, "invalid id"),
    ("special_tokens", ["<a>"], "special_tokens"),
    ("whole_token_lookup", "yes", "whole_token_lookup"),
    ("split_stages", [["\\d+", "true"]], "split stages"),
    ("vocab", [1, 2], "vocab"),
    ("token_text", "latin1", "token_text.*gpt2-bytes-to-unicode"),  # (tokens spelt otherwise: other tokens)
    ("token_text", 3, "token_text"),
])
def test_fields_of_the_wrong_type_are_value_errors(tmp_path, field, value, message):
    tok = fastbpe.train("the cat sat on the mat " * 20, vocab_size=270, progress=False)
    data = tok.to_dict()
    data[field] = value
    (tmp_path / "t.json").write_text(json.dumps(data), encoding="utf-8")
    for load in (Tokenizer.load, fastbpe.load):
        with pytest.raises(ValueError, match=message):
            load(tmp_path / "t.json")


def test_a_rank_vocabulary_cut_short_under_its_merges_is_refused(shared_data):
    """tiktoken's rule reads ranks, not merges, but a file whose merges make tokens its vocab
    no longer has was cut short: it is refused, not loaded as a smaller vocabulary."""
    data = fastbpe.openai("r50k_base", shared_data.path("tokenizers", "tiktoken")).to_dict()
    assert Tokenizer.from_dict(data).encode(" informants") == [50254]
    data["vocab"] = data["vocab"][:-1000]
    with pytest.raises(ValueError, match="merge 49000: the concatenation .* is not a token"):
        Tokenizer.from_dict(data)


def test_tokens_and_special_tokens_that_are_not_utf8_save_and_load(tmp_path):
    tok = Tokenizer([b"a", "\udcff".encode("utf-8", "surrogatepass"), b"b"], [],
                    unit="chars", pattern="whitespace", special_tokens={"<\ud800>": 7})
    tok.save(tmp_path / "t.json")
    again = Tokenizer.load(tmp_path / "t.json")
    assert again == tok and again.special_tokens == {"<\ud800>": 7}
    assert again.encode("a\udcff b", allowed_special="all") == [0, 1, 2]


# Files written by the version before the tokenizer was made of components (the same text,
# trained or set up there): they still load, write back the same JSON, and encode as the
# reference replay of their merges.
OLD_FILES = ["main_trained.json", "main_chars.json", "main_imported.json"]


@pytest.mark.parametrize("name", OLD_FILES)
def test_files_of_the_previous_version_load(name):
    import json
    from pathlib import Path

    from fastbpe.reference.encode import encode_by_pair_rank, encode_word
    from fastbpe.split.pretokenize import pretokenize

    path = Path(__file__).parent / "data" / name
    data = json.loads(path.read_text(encoding="utf-8"))
    tok = Tokenizer.load(path)
    written = tok.to_dict()
    assert written == {k: v for k, v in data.items() if k != "training_stats"}
    text = "the cat sat on the mat. Le chat était assis — 猫が座った 12345 ünïcödé\n" * 2
    ids = tok.encode(text)
    decoded = tok.decode(ids)  # word markers decode to spaces: compare without them
    assert decoded.replace(" ", "") == text.replace(" ", "") if tok.word_end else decoded == text
    if not tok.split_stages:
        merges = [(a.encode(), b.encode()) if tok.unit == "chars" else (a, b) for a, b in tok.merges]
        pieces = []
        for chunk in pretokenize(text, tok.pattern):
            word = (tok.word_start + chunk + tok.word_end).encode()
            symbols = tuple(c.encode() for c in word.decode()) if tok.unit == "chars" else tuple(bytes([b]) for b in word)
            pieces += (encode_by_pair_rank(word, merges) if tok.merge_rule == "pair" else list(encode_word(symbols, merges)))
        assert ids == [tok._ids[p] for p in pieces]


def test_a_native_file_reads_whatever_the_order_of_its_fields(tmp_path):
    """The loader tells fastbpe's files by their first field (as ``save`` writes them); one
    written with its fields in another order still loads as one, merges and made ids alike."""
    tok = fastbpe.train("the cat sat on the mat " * 20, vocab_size=270, progress=False)
    data = tok.to_dict()
    data["merges"] = [[a, b, c] for (a, b), c in zip(tok.merge_ids.tolist(), tok.model.made.tolist())]
    for order in (data, dict(reversed(list(data.items())))):
        (tmp_path / "t.json").write_text(json.dumps(order), encoding="utf-8")
        again = fastbpe.load(tmp_path / "t.json")
        assert again.token_bytes == tok.token_bytes and again.merge_ids.tolist() == tok.merge_ids.tolist()
    data["merges"][3][2] += 1  # a made id that is not the merge's concatenation
    (tmp_path / "t.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="merge 3 says it makes token"):
        fastbpe.load(tmp_path / "t.json")


def test_save_to_the_name_hugging_face_tools_look_for_warns_that_they_cannot_read_it(tmp_path):
    """``tokenizer.save("tokenizer.json")`` is a Hugging Face habit, where it writes their
    format; fastbpe's save writes its own (which ``fastbpe.load`` reads back), and says so."""
    tok = fastbpe.train(text="the cat sat on the mat " * 20, vocab_size=270, progress=False)
    with pytest.warns(UserWarning, match="to_huggingface writes theirs"):
        tok.save(tmp_path / "tokenizer.json")
    assert fastbpe.load(tmp_path / "tokenizer.json") == tok
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok.save(tmp_path / "tok.fastbpe.json")
        tok.to_huggingface(tmp_path / "hf.json")


@pytest.mark.parametrize("name", ["m.model", "tok.vocab", "vocab.bpe", "merges.txt"])
def test_the_command_refuses_to_write_under_a_name_of_a_format_it_does_not_write(tmp_path, name, capsys):
    """``fastbpe train --out m.model`` wrote Hugging Face's JSON under SentencePiece's name,
    which load then read as a (bad) SentencePiece model."""
    from fastbpe.cli import main

    (tmp_path / "c.txt").write_text("the cat sat on the mat\n" * 20, encoding="utf-8")
    assert main(["train", str(tmp_path / "c.txt"), "--vocab-size", "270", "--out", str(tmp_path / name), "-q"]) == 2
    assert "writes neither from the command line" in capsys.readouterr().err and not (tmp_path / name).exists()
