"""Merge traces: the compiled learner's run, merge by merge, against the reference learner;
Sennrich et al. (2016)'s toy and the worked Malay example; the firing order of a word's merges
under each merge rule, ending where the compiled encoder does."""
import pytest
from hypothesis import given, strategies as st

import fastbpe
from fastbpe import reference
from fastbpe.analysis import trace, trace_word
from fastbpe.corpus.wordtable import WordTable

SENNRICH_TEXT = "low " * 5 + "lower " * 2 + "newest " * 6 + "widest " * 3


def sennrich_trace(**kwargs):
    return trace(iter([SENNRICH_TEXT]), 10, unit="chars", pattern="whitespace", word_end="_", **kwargs)


def test_sennrich_toy(worked_example):
    result = sennrich_trace(words=4)
    assert result["symbols_before"] == 95 and result["symbols_after"] == 28
    assert len(result["merges"]) == 10
    merges, counts = reference.learn(worked_example.sennrich, 10)
    assert [(m["left"], m["right"]) for m in result["merges"]] == merges
    assert [m["count"] for m in result["merges"]] == counts
    assert result["merges"][2]["new"] == "est_"  # built first: shared by two frequent words
    final = dict(zip([w["chunk"] for w in result["words"]], result["merges"][-1]["segmentation"]))
    assert final["newest"] == ["newest_"] and final["low"] == ["low_"]
    assert len(final["widest"]) > 1  # the rare word stays in pieces


def test_symbol_totals_and_segmentations_follow_the_reference(worked_example):
    result = sennrich_trace(words=4)
    table = dict(worked_example.sennrich)
    order = [tuple(w["chunk"] + "_") for w in result["words"]]
    assert result["curve"][0] == reference.corpus_size(table)
    for merge in result["merges"]:
        table = reference.apply_merge(table, (merge["left"], merge["right"]))
        assert merge["symbols"] == reference.corpus_size(table)
        by_word = {"".join(w): list(w) for w in table}
        assert merge["segmentation"] == [by_word["".join(o)] for o in order]


CHUNKS = st.lists(st.sampled_from(b"ab\xc3\xa9"), min_size=1, max_size=8).map(bytes)


@given(st.dictionaries(CHUNKS, st.integers(1, 5), max_size=12), st.integers(0, 12))
def test_totals_exact_on_generated_tables_with_overlaps(counts, num_merges):
    """``aaaa``-like words: a merge's count is not always the symbols it saves; the totals are
    the learner's own, equal to the reference's after every merge."""
    if not counts:
        return
    table = WordTable.from_counts(counts)
    result = trace(table, num_merges, min_frequency=1, words=0)
    words = {tuple(bytes([b]) for b in chunk): n for chunk, n in table.items()}
    merges, merge_counts = reference.learn(words, num_merges)
    assert [m["count"] for m in result["merges"]] == merge_counts
    assert len(result["curve"]) == len(merges) + 1
    assert result["curve"][0] == reference.corpus_size(words)
    for pair, total in zip(merges, result["curve"][1:]):
        words = reference.apply_merge(words, pair)
        assert total == reference.corpus_size(words)


def test_worked_malay_example(worked_example):
    result = trace(iter([worked_example.text]), 15, unit="chars", pattern="whitespace", word_start="_", words=0,
                   min_frequency=1)
    assert [(m["left"], m["right"], m["count"]) for m in result["merges"]] == worked_example.merges
    tok = result["tokenizer"]
    for word, pieces in worked_example.encodings.items():
        chunks = trace_word(tok, word)
        assert len(chunks) == 1 and tuple(chunks[0]["pieces"]) == pieces
        assert chunks[0]["pieces"] == tok.tokens(word)  # "-" was never seen: it stays itself
        # ... with no id (a negative one was printed before), where encode refuses it
        assert [i is None for i in chunks[0]["ids"]] == [p == "-" for p in pieces]
        if "-" in word:
            with pytest.raises(ValueError, match="'-' is not in the vocabulary"):
                tok.encode(word)
        else:
            assert chunks[0]["ids"] == tok.encode(word)


def test_word_trace_fires_in_rank_order_and_ends_at_the_encoder(worked_example):
    tok = sennrich_trace()["tokenizer"]
    (chunk,) = trace_word(tok, "lowest")
    ranks = [s["rank"] for s in chunk["steps"]]
    assert ranks == sorted(ranks) and ranks
    assert chunk["pieces"] == [tok._piece(i) for i in tok.encode("lowest")]
    assert chunk["steps"][-1]["pieces"] == chunk["pieces"]


@pytest.mark.parametrize("rule", ["pair", "token"])
def test_word_trace_under_the_imported_rules(rule):
    # "abc": by pair rank (b, c) fires first; by token rank "ab" (id 3, below "bc"'s 4) does
    tokens = [b"a", b"b", b"c", b"ab", b"bc", b"abc"]
    merges = [(1, 2), (0, 1), (0, 4)] if rule == "pair" else [(0, 1), (1, 2), (3, 2)]
    tok = fastbpe.Tokenizer(tokens, merges, merge_rule=rule)
    (chunk,) = trace_word(tok, "abcab")
    assert chunk["ids"] == tok.encode("abcab")
    assert [s["new"] for s in chunk["steps"]][:1] == (["bc"] if rule == "pair" else ["ab"])


def test_word_trace_of_gpt2_and_cl100k(gpt2, cl100k):
    for tok in (gpt2, cl100k):
        chunks = trace_word(tok, " tokenization 20261130")
        assert sum((c["ids"] for c in chunks), []) == tok.encode(" tokenization 20261130")
    assert [c["chunk"] for c in trace_word(cl100k, "20261130")] == ["202", "611", "30"]  # \p{N}{1,3}


def test_bad_arguments():
    with pytest.raises(ValueError):
        trace(iter(["a b"]), -1)
    with pytest.raises(ValueError):
        trace(iter(["a b"]), 3, unit="words")
    with pytest.raises(ValueError):
        trace(iter(["a b"]), 3, words=-2)
    with pytest.raises(TypeError):
        trace_word(fastbpe.train(text="ab ab ab", vocab_size=258, progress=False), b"ab")


def test_a_whole_chunk_lookup_is_one_step():
    # "abc" is a token the merge list never builds ("ab" + "c" is no merge): under the pair
    # rule (Hugging Face's ignore_merges) only the lookup reaches it
    tokens = [b"a", b"b", b"c", b"ab", b"abc"]
    tok = fastbpe.Tokenizer(tokens, [(0, 1)], merge_rule="pair", whole_token_lookup=True)
    (chunk,) = trace_word(tok, "abc")
    assert chunk["ids"] == tok.encode("abc") == [4]
    assert [(s["left"], s["new"]) for s in chunk["steps"]] == [(None, "abc")]


def test_a_table_is_traced_with_the_pattern_it_was_counted_with():
    table = fastbpe.count_words(iter(["low lower lowest newest widest"] * 5), pattern="whitespace", workers=1)
    result = trace(table, 3, min_frequency=1)
    assert result["tokenizer"].pattern == "whitespace"
    assert result["tokenizer"].merges == fastbpe.train(table, num_merges=3, min_frequency=1, progress=False).merges
    with pytest.raises(ValueError, match="counted with pattern='whitespace'"):
        trace(table, 3, pattern="gpt2")


@pytest.mark.parametrize("markers", [dict(end_of_word_suffix="</w>"), dict(continuing_subword_prefix="##"),
                                     dict(end_of_word_suffix="</w>", continuing_subword_prefix="##")])
def test_a_trace_with_subword_markers_is_the_encoder_s(markers):
    """A Hugging Face BPE's subword markers (CLIP's ``</w>`` on a word's last byte, a ``##``
    prefix on the others) are part of the base symbols the merges see; the trace ended in
    the bare bytes and raised where the encoder gave ``the</w>``."""
    suffix = markers.get("end_of_word_suffix", "").encode()
    prefix = markers.get("continuing_subword_prefix", "").encode()
    # every byte as a word's first, middle, last and only symbol (two of them one without a kind)
    tokens = list(dict.fromkeys(p + bytes([b]) + s for p, s in ((b"", b""), (prefix, b""), (b"", suffix),
                                                                  (prefix, suffix)) for b in range(256)))
    ids = {t: i for i, t in enumerate(tokens)}
    merges = []
    for left, right in ((b"t", prefix + b"h"), (b"th", prefix + b"e" + suffix),
                        (prefix + b"a", prefix + b"t" + suffix)):
        merges.append((ids[left], ids[right]))
        ids[left + right[len(prefix):]] = len(tokens)  # (the right part's prefix goes: Hugging Face's rule)
        tokens.append(left + right[len(prefix):])
    tok = fastbpe.Tokenizer(tokens, merges, pattern="whitespace", merge_rule="pair", **markers)
    for word in ("the", "cat", "that", "t", "eat"):
        (row,) = trace_word(tok, word)
        assert row["ids"] == tok.encode_ordinary(word)
        assert row["symbols"][-1].endswith(suffix.decode())
        assert all(symbol.startswith(prefix.decode()) for symbol in row["symbols"][1:])
    assert trace_word(tok, "the")[0]["pieces"] == [f"the{suffix.decode()}"]
