"""Ids in tokenizer files (fastbpe.formats.ids): every reader refuses ids that would make it
allocate by the id rather than by the file, and ids that are not 32-bit ints."""
import base64
import json
import tracemalloc

import pytest

import fastbpe
from fastbpe import Tokenizer
from fastbpe.formats import ids

MB = 1 << 20


@pytest.fixture(scope="module")
def small():
    return fastbpe.train("the cat sat on the mat " * 20, vocab_size=300, progress=False,
                         special_tokens=["<|endoftext|>"])


def refused_cheaply(load, match):
    """``load()`` raises ValueError matching ``match`` having allocated little (the refusal comes
    before any table sized by the id)."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match):
            load()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * MB


def tiktoken_lines(ranks):
    return b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks.items())


BYTE_RANKS = {bytes([b]): b for b in range(256)}


def test_a_tiktoken_rank_far_beyond_the_file_is_refused(tmp_path):
    path = tmp_path / "far.tiktoken"
    path.write_bytes(tiktoken_lines({**BYTE_RANKS, b"ab": 100_000_000}))
    assert path.stat().st_size < 3000
    refused_cheaply(lambda: Tokenizer.from_tiktoken(path, "gpt2"), "largest token id is 100000000")


def test_a_few_unused_ranks_are_fine(tmp_path):
    path = tmp_path / "gaps.tiktoken"
    path.write_bytes(tiktoken_lines({**BYTE_RANKS, b"ab": 256 + ids.GAP_SLACK - 1}))
    tok = Tokenizer.from_tiktoken(path, "gpt2", {"<|endoftext|>": 5000})
    assert tok.encode("ab") == [256 + ids.GAP_SLACK - 1]
    path.write_bytes(tiktoken_lines({**BYTE_RANKS, b"ab": 257 + ids.GAP_SLACK}))
    with pytest.raises(ValueError, match="unused"):
        Tokenizer.from_tiktoken(path, "gpt2")


def test_a_huggingface_vocab_id_far_beyond_the_file_is_refused(tmp_path, small):
    small.to_huggingface(tmp_path / "tokenizer.json")
    data = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    data["model"]["vocab"]["Ġcat"] = 2**31 - 1
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    refused_cheaply(lambda: Tokenizer.from_huggingface(tmp_path), "largest token id is 2147483647")


def test_a_gpt2_encoder_id_far_beyond_the_file_is_refused(tmp_path, small):
    small.to_gpt2(tmp_path)
    encoder = json.loads((tmp_path / "encoder.json").read_text(encoding="utf-8"))
    encoder["Ġcat"] = 100_000_000
    (tmp_path / "encoder.json").write_text(json.dumps(encoder), encoding="utf-8")
    refused_cheaply(lambda: Tokenizer.from_gpt2(tmp_path / "encoder.json", tmp_path / "vocab.bpe"),
                    "largest token id is 100000000")


BAD_IDS = [1000.7, 2**31, 2**40, -1, True, "7", None]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_special_token_ids_must_be_32_bit_ints_in_the_tokenizer(bad):
    tokens = [bytes([b]) for b in range(256)]
    with pytest.raises(ValueError, match="invalid id"):
        Tokenizer(tokens, [], special_tokens={"<a>": bad})
    assert Tokenizer(tokens, [], special_tokens={"<a>": 2**31 - 1}).encode("<a>", allowed_special="all") \
        == [2**31 - 1]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_special_token_ids_must_be_32_bit_ints_in_every_file(tmp_path, small, bad):
    # fastbpe's own file: 1000.7 was read as 1000
    small.save(tmp_path / "native.json")
    data = json.loads((tmp_path / "native.json").read_text(encoding="utf-8"))
    data["special_tokens"] = {"<a>": bad}
    (tmp_path / "native.json").write_text(json.dumps(data), encoding="utf-8")
    for load in (Tokenizer.load, fastbpe.load):
        with pytest.raises(ValueError, match="invalid id"):
            load(tmp_path / "native.json")
    # Hugging Face: an added token
    small.to_huggingface(tmp_path / "tokenizer.json")
    data = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    data["added_tokens"][0]["id"] = bad
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="invalid id"):
        Tokenizer.from_huggingface(tmp_path)
    # tiktoken: the special tokens given with the file
    small.to_tiktoken(tmp_path / "small.tiktoken")
    with pytest.raises(ValueError, match="invalid id"):
        Tokenizer.from_tiktoken(tmp_path / "small.tiktoken", "gpt2", {"<a>": bad})
    # GPT-2: an entry of encoder.json that no merge makes is a special token
    small.to_gpt2(tmp_path)
    encoder = json.loads((tmp_path / "encoder.json").read_text(encoding="utf-8"))
    encoder["<|endoftext|>"] = bad
    (tmp_path / "encoder.json").write_text(json.dumps(encoder), encoding="utf-8")
    with pytest.raises(ValueError, match="invalid id"):
        Tokenizer.from_gpt2(tmp_path / "encoder.json", tmp_path / "vocab.bpe")


def test_huge_special_ids_load_and_encode_in_every_file(tmp_path, small):
    """A special token id may be anywhere below 2**31 (it takes no slot): it loads and encodes."""
    small.save(tmp_path / "native.json")
    data = json.loads((tmp_path / "native.json").read_text(encoding="utf-8"))
    data["special_tokens"] = {"<a>": 2**31 - 1}
    (tmp_path / "native.json").write_text(json.dumps(data), encoding="utf-8")
    tok = Tokenizer.load(tmp_path / "native.json")
    assert tok.encode("x<a>", allowed_special="all")[-1] == 2**31 - 1
    assert tok.decode([2**31 - 1]) == "<a>"


def test_deeply_nested_json_is_a_value_error(tmp_path):
    (tmp_path / "deep.json").write_bytes(b"[" * 200_000)
    for load in (Tokenizer.load, fastbpe.load, Tokenizer.from_huggingface):
        with pytest.raises(ValueError, match="nested too deeply"):
            load(tmp_path / "deep.json")
