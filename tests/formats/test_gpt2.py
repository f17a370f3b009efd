"""GPT-2's encoder.json + vocab.bpe, verified by tiktoken's reading of the same files."""
import json
import warnings

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


def test_special_tokens_besides_endoftext_are_written_with_a_warning(tmp_path, samples):
    """GPT-2's files list no special tokens: another one goes into encoder.json as an entry,
    which fastbpe reads back as one and transformers' GPT2Tokenizer as text; said, not silent."""
    text = samples["english"][:50_000]
    plain = fastbpe.train(text, vocab_size=300, progress=False, special_tokens=["<|endoftext|>"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain.to_gpt2(tmp_path / "plain")
    padded = fastbpe.train(text, vocab_size=300, progress=False, special_tokens=["<|endoftext|>", "<|pad|>"])
    with pytest.warns(UserWarning, match=r"GPT-2's files list no special tokens: '<\|pad\|>' go") as caught:
        padded.to_gpt2(tmp_path / "padded")
    assert caught[0].filename == __file__
    assert fastbpe.load(tmp_path / "padded").special_tokens == padded.special_tokens


def test_steps_a_rank_or_merge_file_cannot_hold_are_refused_before_writing(tmp_path, shared_data):
    """GPT-2's files are read with GPT-2's split, and neither they nor a .tiktoken file hold a
    normaliser or special-token options: a tokenizer with one is refused, naming it, and no file
    is written (read back, it would have encoded some text otherwise)."""
    cl100k = fastbpe.train(text="hello world, 12345 numbers\n" * 40, vocab_size=300, pattern="cl100k",
                           progress=False)
    with pytest.raises(ValueError, match="hold no split pattern .* splits with 'cl100k'"):
        cl100k.to_gpt2(tmp_path / "a")
    cl100k.to_tiktoken(tmp_path / "a.tiktoken")  # (which holds the pattern)
    assert fastbpe.load(tmp_path / "a.tiktoken").encode("\n\nt 123456") == cl100k.encode("\n\nt 123456")
    qwen3 = fastbpe.load(shared_data.path("tokenizers", "qwen3", "tokenizer.json"))
    options = Tokenizer(qwen3.token_bytes, qwen3.merge_ids, **qwen3.splitter.keywords(), merge_rule=qwen3.merge_rule,
                        special_tokens=qwen3.special_tokens, special_token_options=qwen3.special_token_options)
    for tok, said in ((qwen3, r"cannot hold a normaliser.*\('NFC'\)"),
                      (options, "cannot hold options of special tokens")):
        for write in (lambda: tok.to_gpt2(tmp_path / "b"), lambda: tok.to_tiktoken(tmp_path / "b.tiktoken"),
                      lambda: tok.to_tiktoken_encoding()):
            with pytest.raises(ValueError, match=said):
                write()
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists() and not (tmp_path / "b.tiktoken").exists()


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
    # vocab.bpe cut short: the tokens of the lost merges would become special tokens
    lines = vocab.read_text(encoding="utf-8").splitlines(keepends=True)
    bad_vocab.write_text("".join(lines[:20_000]), encoding="utf-8")
    with pytest.raises(ValueError, match="30002 entries .* made by no merge: is vocab.bpe cut short"):
        from_gpt2(encoder, bad_vocab)
    # a few merges lost: too few entries to tell by their number, but byte-level text (a space
    # spelled Ġ) is no special token's name
    bad_vocab.write_text("".join(lines[:-10]), encoding="utf-8")
    with pytest.raises(ValueError, match="made by no merge, and it is byte-level text.*cut short"):
        from_gpt2(encoder, bad_vocab)


def test_malformed_gpt2_files_name_the_first_bad_entry(tmp_path):
    """Whole files are read at once; a bad one still gets the error of its first bad line,
    id or merge (the spaces of two bad lines adding up to one a line are not mistaken for two
    good lines)."""
    byte_texts = [fastbpe.formats.bytelevel.token_to_text(bytes([b])) for b in range(256)]
    encoder = {t: i for i, t in enumerate(byte_texts)}
    encoder.update({"ab": 256, "abc": 257, "<|endoftext|>": 258})
    encoder_path, vocab_path = tmp_path / "encoder.json", tmp_path / "vocab.bpe"

    def load(vocab_lines, entries=encoder):
        encoder_path.write_text(json.dumps(entries), encoding="utf-8")
        vocab_path.write_text("\n".join(["#version: 0.2", *vocab_lines]) + "\n", encoding="utf-8")
        return from_gpt2(encoder_path, vocab_path)

    tok = load(["a b", "", "ab c"])
    assert tok.merge_ids.tolist() == [[97, 98], [256, 99]]
    assert tok.special_tokens == {"<|endoftext|>": 258}
    assert tok.encode_ordinary("abc ab") == [257, 32, 256]
    with pytest.raises(ValueError, match=r"line 2: expected two tokens separated by a space, got 'a b c'"):
        load(["a b c", "ab"])
    with pytest.raises(ValueError, match=r"line 3: .*got 'ab '"):
        load(["a b", "ab "])
    with pytest.raises(ValueError, match=r"merge 1 \('ab' 'x'\) uses a token missing from"):
        load(["a b", "ab x"])
    with pytest.raises(ValueError, match="id 97 is used twice"):
        load(["a b", "ab c"], {**encoder, "ab": 97})
    with pytest.raises(ValueError, match="is not a byte token"):
        load(["a b", "ab c", "abc 中"], {**encoder, "abc中": 259})


def test_a_failed_write_leaves_the_old_pair(tmp_path, monkeypatch):
    """encoder.json and vocab.bpe are written in full before either replaces its old file: a
    full disk while writing the second left the new encoder.json beside the old vocab.bpe."""
    import errno

    from fastbpe import fileio

    old = fastbpe.train("the cat sat on the mat " * 20, vocab_size=270, progress=False)
    new = fastbpe.train("a dog ran in the fog " * 20, vocab_size=275, progress=False)
    old.to_gpt2(tmp_path / "pair")
    before = {p.name: p.read_bytes() for p in (tmp_path / "pair").iterdir()}
    real_finish = fileio.AtomicWriter.finish

    def full_disk_on_the_merges(writer):  # (as a full disk fails the flush or the fsync)
        if writer.path.endswith("vocab.bpe"):
            raise writer._naming_the_output(OSError(errno.ENOSPC, "No space left on device", writer.temporary))
        real_finish(writer)

    monkeypatch.setattr(fileio.AtomicWriter, "finish", full_disk_on_the_merges)
    with pytest.raises(OSError, match="No space left on device") as raised:
        new.to_gpt2(tmp_path / "pair")
    assert raised.value.filename == str(tmp_path / "pair" / "vocab.bpe")  # (the file asked for, not the temporary)
    assert {p.name: p.read_bytes() for p in (tmp_path / "pair").iterdir()} == before
    with pytest.raises(OSError):
        new.to_gpt2(tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()  # (the folder made for them goes too)
    monkeypatch.undo()
    assert fastbpe.load(tmp_path / "pair").token_bytes == old.token_bytes
