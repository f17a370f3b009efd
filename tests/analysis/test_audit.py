"""The audit, in batches, against the plain per-token loop that defines each check."""
import numpy as np
import pytest

import fastbpe
from fastbpe.analysis import audit, digit_splits, never_produced, reachability
from fastbpe.analysis.audit import summary_row


def per_token_unreachable(tok):
    """The definition, one encode per token."""
    special = set(tok.special_tokens.values())
    out, invalid = [], []
    for i, t in enumerate(tok.token_bytes):
        if not t or i in special:
            continue
        try:
            text = t.decode("utf-8")
        except UnicodeDecodeError:
            invalid.append(i)
            continue
        if tok.encode(text, disallowed_special=()) != [i]:
            out.append(i)
    return out, invalid


BYTES = [bytes([b]) for b in range(256)]


def test_a_token_the_merges_build_another_way_is_unreachable():
    # replayed in order, "abc" becomes "ab" + "c" before (a, bc) can fire: "abc" is unreachable
    tokens = BYTES + [b"ab", b"bc", b"abc"]
    a, b, c = ord("a"), ord("b"), ord("c")
    tok = fastbpe.Tokenizer(tokens, [(a, b), (b, c), (a, 257)])
    result = reachability(tok)
    assert result["unreachable"] == [258] and result["split_by_pattern"] == []
    assert (result["unreachable"], result["not_utf8"]) == per_token_unreachable(tok)


def test_a_token_the_pattern_cuts_is_unreachable_by_the_pattern():
    tokens = BYTES + [b"a ", b"a b", b"\xc3\xa9"]
    tok = fastbpe.Tokenizer(tokens, [(ord("a"), ord(" ")), (256, ord("b")), (0xC3, 0xA9)], special_tokens=["<|x|>"])
    result = reachability(tok)
    assert set(result["unreachable"]) == {256, 257}  # gpt2's split: "a b" -> "a", " b"; "a " -> "a", " "
    assert set(result["split_by_pattern"]) == {256, 257}
    assert result["not_utf8"] == list(range(0x80, 0x100))  # lone bytes of multi-byte characters
    assert 258 not in result["unreachable"] and result["special"] == 1
    assert (result["unreachable"], result["not_utf8"]) == per_token_unreachable(tok)


def test_trained_tokenizer_matches_the_per_token_loop():
    tok = fastbpe.train(text="naïve café 12345 the cat sat on the mat, aaaa bbbb " * 30, vocab_size=330,
                        special_tokens=["<|endoftext|>"], progress=False)
    result = reachability(tok)
    assert (result["unreachable"], result["not_utf8"]) == per_token_unreachable(tok)


def test_never_produced_is_every_token_no_text_gave():
    tok = fastbpe.train(text="the cat sat on the mat " * 20 + "zebra quagga " * 5, vocab_size=290, progress=False)
    texts = ["the cat sat", "on the mat"]
    result = never_produced(tok, texts=texts)
    produced = {i for t in texts for i in tok.encode(t)}
    assert result["never"] == [i for i in range(len(tok.token_bytes)) if i not in produced]
    assert result["corpus_tokens"] == sum(len(tok.encode(t)) for t in texts)
    assert tok.encode(" zebra")[0] in result["never"]


def test_never_produced_reads_files(tmp_path):
    tok = fastbpe.train(text="the cat sat on the mat " * 20, vocab_size=280, progress=False)
    (tmp_path / "a.txt").write_text("the cat\n" * 3, encoding="utf-8")
    from_file = never_produced(tok, tmp_path / "a.txt")
    assert from_file["never"] == never_produced(tok, texts=["the cat\n" * 3])["never"]
    with pytest.raises(ValueError):
        never_produced(tok, tmp_path / "a.txt", texts=["x"])


def per_number(tok, up_to):
    """The definition: each number encoded alone."""
    by_digits = {}
    for n in range(1, up_to + 1):
        by_digits.setdefault(len(str(n)), []).append(len(tok.encode(str(n))))
    return {d: (float(np.mean(v)), max(v), sum(1 for x in v if x == 1)) for d, v in by_digits.items()}


def test_digit_splits_match_encoding_each_number():
    tok = fastbpe.train(text=" ".join(str(n) for n in range(0, 3000, 7)) + " 1999 2000 2024 " * 40,
                        vocab_size=300, progress=False)
    rows = digit_splits(tok, 2500, block=700)  # blocks that cut inside a digit length
    expected = per_number(tok, 2500)
    assert [r["digits"] for r in rows] == [1, 2, 3, 4]
    for row in rows:
        assert (row["mean_tokens"], row["max_tokens"], row["one_token"]) == pytest.approx(expected[row["digits"]])


@pytest.mark.parametrize("arguments", [{"up_to": 0}, {"up_to": 10.0}, {"block": 0}, {"block": 2.5}, {"block": True}])
def test_digit_splits_refuse_counts_that_are_not(arguments):
    # a block of 2.5 encoded "1.0\n2.0..." and reported 1-digit numbers as three tokens
    with pytest.raises(ValueError, match=f"{next(iter(arguments))} must be an int >= 1"):
        digit_splits(fastbpe.Tokenizer(BYTES, []), **{"up_to": 100, **arguments})


def test_no_merges_split_every_digit():
    rows = digit_splits(fastbpe.Tokenizer(BYTES, []), 1000)
    assert [(r["mean_tokens"], r["commonest_split"]) for r in rows] == [(1, "1"), (2, "1+1"), (3, "1+1+1"), (4, "1+1+1+1")]


def test_cl100k_caps_digit_chunks_at_three_and_gpt2_does_not(cl100k, gpt2):
    capped = {r["digits"]: r for r in digit_splits(cl100k, 10**5)}
    assert capped[4]["commonest_split"] == "3+1" and capped[4]["commonest_share"] == 1.0
    assert capped[5]["commonest_split"] == "3+2" and capped[5]["longest_token"] == 3
    free = {r["digits"]: r for r in digit_splits(gpt2, 10**5)}
    assert free[5]["longest_token"] > 3 and free[4]["splits"] > 1  # merges, not the pattern, decide


def test_audit_of_gpt2(gpt2):
    result = audit(gpt2, texts=["Hello world, this is a test of 12345 numbers."], digits_up_to=100)
    assert result["ordinary_tokens"] == 50256 and result["special_tokens"] == 1
    assert result["unreachable"] == len(per_token_unreachable(gpt2)[0])
    assert result["not_utf8"] >= 128  # at least the lone bytes 0x80..0xff
    assert result["never_produced"] > 50000 and result["never_produced_candidates"] <= result["never_produced"]
    assert [d["digits"] for d in result["digits"]] == [1, 2, 3]


@pytest.mark.parametrize("up_to, column", [(100, "tokens_2_digits"), (999, "tokens_3_digits"), (5, "tokens_1_digits")])
def test_the_summary_digit_column_is_a_length_whose_numbers_were_all_encoded(up_to, column):
    # (up to 100 the 3-digit numbers are 100 alone: one number is no mean of the 3-digit ones)
    rows = digit_splits(fastbpe.Tokenizer(BYTES, []), up_to)
    row = summary_row({"tokenizer": "bytes", "vocab_size": 256, "special_tokens": 0, "not_utf8": 0, "digits": rows})
    assert [key for key in row if key.startswith("tokens_")] == [column]
    assert row[column] == int(column.split("_")[1])


def test_word_markers_have_no_reachability_but_an_audit(worked_example):
    tok = fastbpe.train(text=worked_example.text, num_merges=15, unit="chars", pattern="whitespace", word_start="_",
                        min_frequency=1, progress=False)
    with pytest.raises(ValueError, match="word markers"):
        reachability(tok)
    result = audit(tok, texts=["saya makan nasi"], digits_up_to=None)
    assert "unreachable" not in result and result["not_utf8"] == 0
    assert result["never_produced"] == len(never_produced(tok, texts=["saya makan nasi"])["never"])


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 13, 14, 100, 10_000])
def test_a_corpus_limit_reads_at_most_that_many_bytes(tmp_path, limit):
    """Cut at a character boundary, not at the end of the line that crosses the limit."""
    line = "naïve café\n"  # 13 bytes
    path = tmp_path / "c.txt"
    path.write_text(line * 50, encoding="utf-8")
    kept = (line * 50).encode()[:limit].decode("utf-8", "ignore")
    bytes_only = fastbpe.Tokenizer([bytes([b]) for b in range(256)], [])  # a token per byte
    seen = never_produced(bytes_only, path, limit=limit)
    assert seen["corpus_bytes"] == seen["corpus_tokens"] == len(kept.encode())
    assert seen["corpus_bytes"] <= limit


def test_tokens_that_carry_markers_are_not_checked_for_reachability(tmp_path):
    """SentencePiece's pieces spell a space as ``▁`` (and a byte as ``<0xC5>``), CLIP's word ends
    carry ``</w>``: no token is the encoding of its own spelling there, so reachability is not
    checked (it called every token unreachable), and the audit says nothing of it."""
    import sentencepiece as spm

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat, the dog sat on the log\n" * 40 + "ÅÉÎ\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "sp"), vocab_size=300,
                                   model_type="bpe", byte_fallback=True, minloglevel=2, num_threads=1)
    # CLIP's shape: every byte alone and at a word's end, and merges up to "the</w>"
    tokens = [bytes([b]) for b in range(256)] + [bytes([b]) + b"</w>" for b in range(256)] + [b"th", b"the</w>"]
    fastbpe.Tokenizer(tokens, [(ord("t"), ord("h")), (512, 256 + ord("e"))], pattern="whitespace", merge_rule="pair",
                      end_of_word_suffix="</w>").to_huggingface(tmp_path / "clip.json")
    for path in (tmp_path / "sp.model", tmp_path / "clip.json"):
        tok = fastbpe.load(path)
        assert tok.encode_ordinary("the") == [tok.token_to_id("▁the" if path.suffix == ".model" else "the</w>")]
        with pytest.raises(ValueError, match="spell their text alone"):
            reachability(tok)
        audited = audit(tok, texts=["the cat sat"], digits_up_to=None)
        assert "unreachable" not in audited and audited["never_produced_candidates"] > 0
    # a SentencePiece model makes no token of a newline alone: its digit splits cannot be read a
    # line a number, which the audit says, auditing the rest (one of several tokenizers: it raised)
    sp = fastbpe.load(tmp_path / "sp.model")
    with pytest.raises(ValueError, match="needs a newline that is one token alone"):
        digit_splits(sp, 100)
    audited = audit(sp, digits_up_to=100)
    assert "digits" not in audited and "newline" in audited["digits_not_measured"]
    assert "tokens_2_digits" not in summary_row(audited)


def test_base_symbols_and_byte_pieces_are_no_candidates_and_high_byte_pieces_not_utf8(tmp_path):
    """The under-trained candidates are merged tokens: not a SentencePiece model's byte pieces
    (``<0x41>``) or one-character pieces, nor CLIP's characters with ``</w>``; and a byte piece
    of 0x80 and up, a byte that is no text alone, counts as not UTF-8 (its spelling is)."""
    import sentencepiece as spm

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat, the dog sat on the log\n" * 40 + "ÅÉÎ\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "sp"), vocab_size=300,
                                   model_type="bpe", byte_fallback=True, minloglevel=2, num_threads=1)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    tok = fastbpe.load(tmp_path / "sp.model")
    audited = audit(tok, texts=["the cat sat"], digits_up_to=100)
    high_bytes = [i for i in range(sp.get_piece_size()) if sp.is_byte(i) and int(sp.id_to_piece(i)[3:5], 16) >= 0x80]
    assert audited["not_utf8_ids"] == high_bytes and len(high_bytes) == 128
    merged = {i for i in range(sp.get_piece_size()) if sp.is_unknown(i) is False and not sp.is_byte(i)
              and not sp.is_control(i) and len(sp.id_to_piece(i)) > 1}
    never = set(audited["never_produced_ids"])
    assert audited["never_produced_candidates"] == len(never & merged) > 0
    tokens = [bytes([b]) for b in range(256)] + [bytes([b]) + b"</w>" for b in range(256)] + [b"th", b"the</w>"]
    clip = fastbpe.Tokenizer(tokens, [(ord("t"), ord("h")), (512, 256 + ord("e"))], pattern="whitespace",
                             merge_rule="pair", end_of_word_suffix="</w>")
    audited = audit(clip, texts=["a cat"], digits_up_to=None)
    assert [e["token"] for e in audited["never_produced_examples"]] == ["th", "the</w>"]
