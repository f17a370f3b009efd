"""Extending a tokenizer: the compiled learner continued from the tokenizer's own segmentations
gives exactly the reference's merges (re-encode every chunk with the old rule, then continue
``fastbpe.reference.learn``), and every existing id, merge and special token is kept."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe.learn.extend import extend, extend_reference


def new_merges(extended, old):
    """The appended merges as pairs of token bytes."""
    t = extended.token_bytes
    return [(t[a], t[b]) for a, b in extended.merge_ids[len(old.merge_ids):].tolist()]


def assert_matches_reference(tok, texts, num_merges, min_frequency=1, errors="strict"):
    extended = tok.extend(iter(texts), num_merges, min_frequency=min_frequency, errors=errors,
                          workers=1, progress=False)
    merges, counts = extend_reference(tok, texts, num_merges, min_frequency, errors)
    assert new_merges(extended, tok) == merges
    assert extended.training_stats["new_merge_counts"] == counts
    assert_keeps_everything(extended, tok)
    return extended


def assert_keeps_everything(extended, tok):
    n = len(tok.token_bytes)
    assert extended.token_bytes[:n] == tok.token_bytes
    assert extended.merge_ids[:len(tok.merge_ids)].tolist() == tok.merge_ids.tolist()
    assert extended.special_tokens == tok.special_tokens
    assert extended.special_token_options == tok.special_token_options
    assert extended.markers == tok.markers and extended.splitter == tok.splitter
    assert (extended.merge_rule, extended.pattern, extended.unit) == (tok.merge_rule, tok.pattern, tok.unit)
    largest = max([n - 1, *tok.special_tokens.values()])
    added = [i for i in range(n, len(extended.token_bytes)) if extended.token_bytes[i]]
    assert all(i > largest for i in added)
    assert added == list(range(largest + 1, largest + 1 + len(added)))  # dense, in merge order


# ---- small tokenizers of every kind, on generated corpora ----------------------------------

def trained(base_text, num_merges, **options):
    return fastbpe.train(text=base_text, num_merges=num_merges, min_frequency=1, progress=False, **options)


def with_rule(tok, rule, whole):
    """The same vocabulary encoding by another rule (Hugging Face's, tiktoken's)."""
    return fastbpe.Tokenizer(tok.token_bytes, tok.merge_ids, pattern=tok.pattern, merge_rule=rule,
                             whole_token_lookup=whole, special_tokens=tok.special_tokens)


texts_of = st.sampled_from(["ab ", "a ", "aé日 ", "ab\n"]).flatmap(
    lambda letters: st.lists(st.text(alphabet=letters, max_size=30), min_size=1, max_size=5))
kinds = st.sampled_from(["replay", "replay-whole", "pair", "pair-whole", "token", "token-whole", "special"])


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(base=texts_of, texts=texts_of, base_merges=st.integers(0, 6), num_merges=st.integers(0, 12),
       min_frequency=st.integers(1, 2), kind=kinds)
def test_byte_level_equals_reference(base, texts, base_merges, num_merges, min_frequency, kind):
    if not "".join(texts).strip():
        texts = texts + ["aa ab"]
    tok = trained(" ".join(base) + " aaaa", base_merges, special_tokens=["<|end|>"] if kind == "special" else ())
    if kind not in ("replay", "special"):
        tok = with_rule(tok, kind.split("-")[0], kind.endswith("whole"))
    assert_matches_reference(tok, texts, num_merges, min_frequency)


def test_a_chunk_that_is_a_token_is_that_token_under_the_replay_rule_too():
    """whole_token_lookup with merge_rule="replay": the encoder gives "bba" its own id, where
    replaying the merges gives b + ba; the specification read it so only for the pair rule."""
    tok = fastbpe.Tokenizer([bytes([b]) for b in range(256)] + [b"ba", b"bb", b"bba"],
                            [(98, 97), (98, 98), (257, 97)], merge_rule="replay", whole_token_lookup=True)
    assert tok.encode("bba") == [258]
    extended = assert_matches_reference(tok, ["bba bba"], 1)
    assert new_merges(extended, tok) == [(b" ", b"b")]


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=40)
@given(texts=st.lists(st.binary(max_size=24).map(lambda b: b.replace(b"\x00", b"a")), min_size=1, max_size=5),
       num_merges=st.integers(0, 10))
def test_invalid_utf8_counted_as_bytes(texts, num_merges):
    texts = [t + b" \xff\xfe\xff\xfe" for t in texts]
    tok = trained("ab ab \u00e9\u00e9", 3)
    assert_matches_reference(tok, texts, num_merges, errors="bytes")


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=40)
@given(texts=st.lists(st.text(alphabet="lowerns é", max_size=40), min_size=1, max_size=4),
       num_merges=st.integers(0, 10), marker=st.sampled_from(["", "_"]))
def test_character_level_with_word_markers(texts, num_merges, marker):
    tok = trained("low lower newest widest é", 4, unit="chars", pattern="whitespace", word_start=marker or None)
    if not "".join(texts).split():
        texts = texts + ["lowest"]
    assert_matches_reference(tok, texts, num_merges)


@pytest.mark.parametrize("text", ["aaaa aaaa aaa", "abab abab ab", "a b c d", "éé éé é"])
def test_ties_and_overlaps(text):
    tok = trained("x y z", 0)
    extended = assert_matches_reference(tok, [text], 6)
    # the learner's segmentation is what the extended tokenizer produces (replay rule)
    assert len(extended.encode(text)) == extended.training_stats["corpus_tokens"]


def test_continues_where_training_stopped():
    """Extending by k merges on the training corpus itself gives the next k merges of a longer
    training run (no merge recreates a token's bytes here), with the same ids."""
    corpus = "the cat sat on the mat; the hat sat flat on that cat " * 5
    short, long = trained(corpus, 5), trained(corpus, 12)
    extended = short.extend(text=corpus, num_merges=7, min_frequency=1)
    assert extended.merge_ids.tolist() == long.merge_ids.tolist()
    assert extended.token_bytes == long.token_bytes


def test_known_answer_sennrich():
    """Sennrich et al. (2016)'s toy, BPE by hand: after "es", the next merges are "est", "est_"
    and "lo" (counts 9, 9, 7), appended with the next ids."""
    text = " ".join(["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3)
    tok = trained(text, 1, unit="chars", pattern="whitespace", word_end="_")
    assert tok.merges == [("e", "s")]
    extended = tok.extend(text=text, num_merges=3, min_frequency=1)
    assert extended.merges[1:] == [("es", "t"), ("est", "_"), ("l", "o")]
    assert extended.training_stats["new_merge_counts"] == [9, 9, 7]
    assert extended.tokens("newest") == ["n", "e", "w", "est_"]
    with pytest.raises(ValueError, match="not in the vocabulary"):  # 'x' was never seen
        tok.extend(text="lox", num_merges=2)


def test_round_trips_through_files(tmp_path):
    tok = trained("the cat sat on the mat", 6, special_tokens=["<|endoftext|>"])
    extended = tok.extend(text="kucing duduk di atas tikar kucing duduk", num_merges=5, min_frequency=1)
    text = "kucing itu duduk<|endoftext|>"
    ids = extended.encode(text, allowed_special="all")
    assert extended.decode(ids) == text
    for path in (tmp_path / "t.fastbpe.json", tmp_path / "t.json"):
        (extended.save if path.name.endswith(".fastbpe.json") else extended.to_huggingface)(path)
        assert fastbpe.load(path).encode(text, allowed_special="all") == ids


def test_bad_input():
    tok = trained("ab ab", 1)
    with pytest.raises(ValueError, match="num_merges"):
        tok.extend(text="ab")
    with pytest.raises(ValueError, match="num_merges"):
        tok.extend(text="ab", num_merges=-1)
    with pytest.raises(ValueError, match="corpus"):
        tok.extend(num_merges=1)
    with pytest.raises(ValueError, match="empty"):
        tok.extend(iter([""]), 3)
    with pytest.raises(TypeError, match="Tokenizer"):
        extend("gpt2", text="ab", num_merges=1)
    nfc = fastbpe.Tokenizer(tok.token_bytes, tok.merge_ids, merge_rule="pair", normalizer="NFC")
    with pytest.raises(ValueError, match="normaliser"):
        nfc.extend(text="ab", num_merges=1)
    marked = fastbpe.train(text="ab ab ab", vocab_size=258, word_end="</w>", progress=False)
    with pytest.raises(ValueError, match="with word markers extends only on text"):  # (it said "character-level")
        marked.extend([b"ab \xff ab"], 1, errors="bytes", progress=False)


def test_a_normaliser_is_named_by_its_steps_and_said_before_the_output_format(tmp_path, capsys):
    """A SentencePiece model cannot be extended (its normaliser): the command said instead that
    a character-level tokenizer cannot be written as tokenizer.json, and with --format fastbpe
    printed the normaliser whole, its character map hundreds of kilobytes of base64."""
    import sentencepiece as spm

    from fastbpe.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\n" * 50, encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "sp"), vocab_size=30,
                                   model_type="bpe", minloglevel=2, num_threads=1)
    for out in ("o.json", "o.fastbpe.json"):
        assert main(["extend", str(corpus), "--tokenizer", str(tmp_path / "sp.model"), "--num-merges", "5",
                     "--out", str(tmp_path / out), "-q"]) == 2
        error = capsys.readouterr().err
        assert "cannot extend a tokenizer with a normaliser (SentencePiece)" in error and len(error) < 300


# ---- the real tokenizers --------------------------------------------------------------------

@pytest.fixture(scope="module")
def malay(shared_data):
    with open(shared_data.path("malay.txt"), encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(300)]


def test_gpt2_files_on_malay(shared_data, malay):
    d = "tokenizers"
    gpt2 = fastbpe.Tokenizer.from_gpt2(shared_data.path(d, "encoder.json"), shared_data.path(d, "vocab.bpe"))
    extended = assert_matches_reference(gpt2, malay, 40)
    assert len(gpt2.token_bytes) == 50256 and extended.token_bytes[50256] == b""  # <|endoftext|>'s id
    assert extended.token_bytes[50257] == b"".join(new_merges(extended, gpt2)[0])
    assert extended.special_tokens == {"<|endoftext|>": 50256}
    before = sum(len(gpt2.encode(t)) for t in malay)
    after = sum(len(extended.encode(t)) for t in malay)
    assert after < before
    assert extended.training_stats["corpus_tokens_before"] == before  # lines hold whole chunks


def test_tiktoken_file(shared_data, malay):
    cl100k = fastbpe.load(shared_data.path("tokenizers", "tiktoken", "cl100k_base.tiktoken"))
    extended = assert_matches_reference(cl100k, malay[:150], 20)
    assert min(extended.special_tokens.values()) == 100257
    # the ids in use, each counted once (extend keeps the special tokens' ids in its table)
    assert extended.vocab_size == len(extended) == cl100k.vocab_size + len(extended.merge_ids) - len(cl100k.merge_ids)


def test_special_token_matching_options_are_kept():
    tok = fastbpe.Tokenizer([bytes([b]) for b in range(256)], [], special_tokens={"<mask>": 256},
                            special_token_options={"<mask>": {"lstrip": True}})
    extended = tok.extend(iter(["the cat <mask> sat on the mat"] * 5), 4, workers=1, progress=False)
    assert_keeps_everything(extended, tok)
    assert extended.encode("cat <mask>", allowed_special="all")[-1] == 256
    assert len(extended.encode("cat <mask>", allowed_special="all")) == len(extended.encode("cat")) + 1


def test_a_subclass_extends_to_its_own_class():
    class Subclassed(fastbpe.Tokenizer):
        pass

    base = trained("low lower lowest", 2)
    tok = Subclassed(base.token_bytes, base.merge_ids, pattern=base.pattern)
    extended = tok.extend(text="newest newest widest", num_merges=2, min_frequency=1)
    assert type(extended) is Subclassed
    assert_keeps_everything(extended, tok)
