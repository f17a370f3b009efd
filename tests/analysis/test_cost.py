"""Vocabulary costs: the published answers (Llama-3-8B, GPT-2 small, Llama-3.2-1B) and the
parameter counts of the presets, computed from their shapes."""
import pytest

import fastbpe
from fastbpe.analysis import PRESETS, cost, text_cost


def test_llama3_8b_tables():
    c = cost(128256, 4096, params=8_030_261_248)
    assert c["params_per_table"] == 525_336_576
    assert round(c["bytes_per_table"] / 1e9, 2) == 1.05  # bf16
    assert c["vocab_params"] == 1_050_673_152  # embed_tokens + untied lm_head
    assert round(100 * c["vocab_share"], 1) == 13.1
    assert c["lm_head_flops_per_token"] == 2 * 128256 * 4096
    assert round(c["lm_head_flops_per_token"] / 1e9, 3) == 1.051
    assert round(100 * c["lm_head_share_of_forward"], 1) == 6.5
    assert c["logits_bytes_per_position"] == 4 * 128256
    assert round(c["logits_bytes_per_position"] / 1e3) == 513
    assert c["embedding_bytes_read_per_token"] == 8192


def test_presets_count_the_published_totals():
    assert PRESETS["llama3-8b"].parameters() == 8_030_261_248
    assert PRESETS["gpt2"].parameters() == 124_439_808
    assert round(PRESETS["llama3.2-1b"].parameters() / 1e9, 2) == 1.24
    # the Qwen3 model cards give the parameters outside the embedding table
    for name, published in (("qwen3-0.6b", 0.44), ("qwen3-1.7b", 1.4), ("qwen3-4b", 3.6), ("qwen3-8b", 6.95)):
        shape = PRESETS[name]
        outside = shape.parameters() - (1 if shape.tied else 2) * shape.vocab * shape.d_model
        assert round(outside / 1e9, len(str(published).split(".")[1])) == published, name


def test_gpt2_small_tied():
    c = cost(preset="gpt2")
    assert c["tied"] and c["tables"] == 1
    assert c["vocab_params"] == 50257 * 768
    assert round(c["vocab_params"] / 1e6, 1) == 38.6
    assert round(c["model_params"] / 1e6, 1) == 124.4
    assert round(100 * c["vocab_share"]) == 31


def test_llama32_1b_tied():
    c = cost(preset="llama3.2-1b")
    assert c["tied"] and round(c["vocab_params"] / 1e6, 1) == 262.7
    assert round(100 * c["vocab_share"], 1) == 21.3
    untied = cost(preset="llama3.2-1b", tied=False)
    assert untied["model_params"] - c["model_params"] == c["params_per_table"]  # another 262.7M


def test_doubling_the_vocabulary_is_a_what_if_on_the_tables_only():
    base, double = cost(preset="llama3-8b"), cost(preset="llama3-8b", vocab=256512)
    assert double["model_params"] - base["model_params"] == 2 * 525_336_576
    assert double["lm_head_flops_per_token"] == 2 * base["lm_head_flops_per_token"]
    assert double["logits_bytes_per_position"] == 2 * base["logits_bytes_per_position"]


def test_tokens_multiply_the_per_token_costs():
    c = cost(1000, 64, tokens=7)
    assert c["lm_head_flops"] == 7 * 2 * 1000 * 64 and c["logits_bytes"] == 7 * 4 * 1000
    assert cost(1000, 64, dtype="fp32")["bytes_per_table"] == 4 * 1000 * 64


def test_text_cost_counts_the_tokenizers_tokens():
    text = "the cat sat on the mat " * 40
    small = fastbpe.train(text=text, vocab_size=260, progress=False)
    big = fastbpe.train(text=text, vocab_size=300, progress=False)
    rows = text_cost([small, big], text, 64, labels=["small", "big"])
    for row, tok in zip(rows, (small, big)):
        assert row["tokens"] == len(tok.encode(text))
        assert row["vocab"] == tok.n_vocab
        assert row["lm_head_gflops"] == pytest.approx(row["tokens"] * 2 * tok.n_vocab * 64 / 1e9)
    assert rows[1]["tokens"] < rows[0]["tokens"] and rows[1]["vocab_params"] > rows[0]["vocab_params"]


@pytest.mark.parametrize("kwargs, error", [
    ({"vocab": 10}, ValueError),
    ({"vocab": 10, "d_model": 4, "dtype": "int3"}, ValueError),
    ({"vocab": 10, "d_model": 4, "params": 50}, ValueError),  # smaller than its own tables
    ({"preset": "gpt5"}, ValueError),
    ({"vocab": 10.5, "d_model": 4}, TypeError),
    ({"vocab": 0, "d_model": 4}, ValueError),
])
def test_bad_arguments(kwargs, error):
    with pytest.raises(error):
        cost(**kwargs)
