"""fastbpe's own tokenizer file."""
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
