"""GPT-2's encoder.json + vocab.bpe, verified by tiktoken's reading of the same files."""
import pytest

import fastbpe
from fastbpe import Tokenizer

from_gpt2, from_huggingface = Tokenizer.from_gpt2, Tokenizer.from_huggingface

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken (test extra) verifies the tiktoken format")


def test_gpt2_files_equal_r50k(samples, shared_data, tiktoken_encoding):
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    encoder, vocab = shared_data.path("tokenizers", "encoder.json"), shared_data.path("tokenizers", "vocab.bpe")
    tok = from_gpt2(encoder, vocab)
    ranks = data_gym_to_mergeable_bpe_ranks(str(vocab), str(encoder))
    assert {t: i for i, t in enumerate(tok.token_bytes) if t} == ranks
    assert tok.special_tokens == {"<|endoftext|>": 50256}
    assert tok.encode("hello world") == [31373, 995]
    enc = tiktoken_encoding("r50k_base")
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
