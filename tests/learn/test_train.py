"""Learning merges: the compiled learner gives exactly the reference's merges on every input
(``train_words``, ``train``), and ``compat="hf"`` gives Hugging Face BpeTrainer's merges."""
import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe import reference
from fastbpe.formats.bytelevel import token_to_text as _bytes_to_text

IMPLS = ("reference", "fast")


@pytest.fixture(params=IMPLS)
def impl(request):
    return request.param


def learn(words, num_merges, impl, **kwargs):
    return fastbpe.train_words(words, num_merges, backend=impl, with_counts=True, **kwargs)


# ---- known answers, every implementation --------------------------------------------------


def test_worked_merges(impl, worked_example):
    merges, counts = learn(worked_example.words(), 15, impl)
    assert [(a, b, c) for (a, b), c in zip(merges, counts)] == worked_example.merges


def test_worked_example_at_byte_level(impl, worked_example):
    words = Counter(tuple(bytes([b]) for b in (" " + w).encode()) for w in worked_example.text.split())
    merges, counts = learn(words, 15, impl)
    as_text = [(a.decode().replace(" ", "_"), b.decode().replace(" ", "_"), c)
               for (a, b), c in zip(merges, counts)]
    assert as_text == worked_example.merges


def test_sennrich(impl, worked_example):
    merges, counts = learn(worked_example.sennrich, 10, impl)
    assert (merges[0], counts[0]) == (("e", "s"), 9)
    assert merges == reference.learn(worked_example.sennrich, 10)[0]


@pytest.mark.parametrize(
    "words",
    [
        {},
        {("a",): 1},
        {("a",) * 4: 1},
        {("a",) * 5: 3, ("a", "a"): 1},
        {("é", "é", "é"): 2, ("日", "本"): 2},
        {(b"\xff", b"\xfe", b"\xff", b"\xfe"): 1, (b"\x00",): 7},
        {("ab", "c"): 1, ("a", "bc"): 1, ("abc", "d"): 2},  # one string, two merges
    ],
    ids=["empty", "one-symbol", "aaaa", "overlaps", "non-ascii", "invalid-utf8-bytes", "dup-token"],
)
def test_edge_cases_agree(words):
    assert learn(words, 20, "fast") == learn(words, 20, "reference")


def test_huge_word():
    words = {tuple("ab" * 5000 + "c" * 3001): 2, tuple("abc"): 1}
    assert learn(words, 40, "fast") == learn(words, 40, "reference")


@settings(max_examples=25, deadline=None)
@given(letters=st.sampled_from([b"a", b"ab", b"aab", b"ab\xff"]), n=st.integers(200, 3000),
       seed=st.integers(0, 2**32 - 1), num_merges=st.integers(1, 40))
def test_long_words_from_byte_ids_with_compaction_equal_reference(letters, n, seed, num_merges):
    """A long word of few letters (ties and overlaps everywhere) from uint8 ids, the table's own
    bytes, with the stale positions of every pair dropped after each merge."""
    from fastbpe._core.learn import MergeLearner

    word = np.random.default_rng(seed).choice(np.frombuffer(letters, np.uint8), n).astype(np.uint8)
    other = np.frombuffer(b"ab", np.uint8)
    words = {tuple(bytes([b]) for b in word.tobytes()): 1, (b"a", b"b"): 2}
    expected = learn(words, num_merges, "reference")
    learner = MergeLearner(np.concatenate([word, other]), np.array([0, n, n + 2], np.int64),
                           np.array([1, 2], np.int64), [bytes([b]) for b in range(256)])
    learner.compact_slack = -(1 << 40)
    merge_ids, counts, tokens = learner.run(num_merges)
    got = ([(tokens[a], tokens[b]) for a, b, _ in merge_ids.tolist()], counts.tolist())
    assert got == expected


@settings(max_examples=8, deadline=None)
@given(letters=st.sampled_from([b"a", b"ab", b"aab", b"a\xc3\xa9"]), n=st.integers(9000, 18000),
       seed=st.integers(0, 2**32 - 1), num_merges=st.integers(1, 12), compact=st.booleans())
def test_long_word_with_normal_and_one_symbol_words_equals_reference(letters, n, seed, num_merges, compact):
    """A word long enough that its pairs outgrow the small position lists (a few thousand
    occurrences of one pair), beside normal and one-symbol words; with and without dropping
    the stale positions after every merge."""
    from fastbpe._core.learn import MergeLearner

    word = np.random.default_rng(seed).choice(np.frombuffer(letters, np.uint8), n).astype(np.uint8)
    others = [b"ab", b"a", b"\xc3\xa9a", b"b"]
    words = {tuple(bytes([b]) for b in word.tobytes()): 1}
    for count, other in enumerate(others, start=2):
        words[tuple(bytes([b]) for b in other)] = count
    expected = learn(words, num_merges, "reference")
    flat = np.frombuffer(word.tobytes() + b"".join(others), np.uint8)
    starts = np.cumsum([0, n] + [len(o) for o in others]).astype(np.int64)
    learner = MergeLearner(flat, starts, np.arange(1, len(others) + 2, dtype=np.int64),
                           [bytes([b]) for b in range(256)])
    if compact:
        learner.compact_slack = -(1 << 40)
    merge_ids, counts, tokens = learner.run(num_merges)
    got = ([(tokens[a], tokens[b]) for a, b, _ in merge_ids.tolist()], counts.tolist())
    assert got == expected


def test_min_frequency_and_exhaustion(impl):
    words = {("a", "b"): 1, ("c", "d"): 3}
    assert learn(words, 10, impl, min_frequency=2) == ([("c", "d")], [3])
    assert learn(words, 10, impl) == ([("c", "d"), ("a", "b")], [3, 1])
    assert learn(words, 0, impl) == ([], [])


def test_large_counts_do_not_overflow(impl):
    big = 2**62
    merges, counts = learn({("a", "b"): big, ("a", "b", "a", "b"): 1}, 1, impl)
    assert counts == [big + 2]


# ---- differential: generated tables ---------------------------------------------------------

def word_tables(alphabet, max_len=10, counts=st.integers(1, 4)):
    word = st.lists(alphabet, min_size=1, max_size=max_len).map(tuple)
    return st.dictionaries(word, counts, max_size=10)


small_alphabets = st.sampled_from(["a", "ab", "abc", "aé", "日本語"]).flatmap(
    lambda letters: word_tables(st.sampled_from(list(letters))))
byte_tables = st.sampled_from([b"a", b"ab", b"\x00\xff", b"a\xc3\xa9"]).flatmap(
    lambda letters: word_tables(st.sampled_from([bytes([x]) for x in letters])))
all_ones = st.sampled_from(["ab", "abc"]).flatmap(
    lambda letters: word_tables(st.sampled_from(list(letters)), counts=st.just(1)))
multi_char_symbols = word_tables(st.sampled_from(["a", "b", "ab", "ba"]), max_len=6)
any_text = word_tables(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_len=6)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(words=st.one_of(small_alphabets, byte_tables, all_ones, multi_char_symbols, any_text),
       num_merges=st.integers(0, 30), min_frequency=st.integers(1, 3))
def test_fast_equals_reference(words, num_merges, min_frequency):
    expected = learn(words, num_merges, "reference", min_frequency=min_frequency)
    assert learn(words, num_merges, "fast", min_frequency=min_frequency) == expected


# ---- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "words,num_merges,error",
    [
        ({("a", ""): 1}, 1, ValueError),
        ({(): 1}, 1, ValueError),
        ({("a", b"b"): 1}, 1, TypeError),
        ({("a",): 1, (b"b",): 1}, 1, TypeError),
        ({("a", "b"): 0}, 1, ValueError),
        ({("a", "b"): -2}, 1, ValueError),
        ({("a", "b"): 1.5}, 1, TypeError),
        ({("a", 3): 1}, 1, TypeError),
        ({"ab": 1}, 1, TypeError),
        ([("a", "b")], 1, TypeError),
        ({("a", "b"): 1}, -1, ValueError),
        ({("a", "b"): 1}, 1.0, TypeError),
        ({("a", "b"): 2**64}, 1, OverflowError),
        ({("a", "b", "a"): 2**62, ("b", "a", "b"): 2**62}, 1, OverflowError),
    ],
)
def test_bad_input(impl, words, num_merges, error):
    with pytest.raises(error):
        fastbpe.train_words(words, num_merges, backend=impl)


def test_bad_backend_and_min_frequency():
    with pytest.raises(ValueError, match="backend"):
        fastbpe.train_words({("a", "b"): 1}, 1, backend="rust")
    with pytest.raises(ValueError, match="min_frequency"):
        fastbpe.train_words({("a", "b"): 1}, 1, min_frequency=-1)
    # 0, BpeTrainer's default (a Hugging Face setup as it is written): every pair occurs, as with 1
    words = {tuple("abcab"): 1, tuple("bcd"): 2}
    assert fastbpe.train_words(words, 5, min_frequency=0) == fastbpe.train_words(words, 5, min_frequency=1)


def test_progress_callback_sees_every_batch():
    calls = []
    words = {tuple(f"w{i:04d}"): 1 + i % 7 for i in range(2000)}
    fastbpe.train_words(words, 600, progress=lambda done, best: calls.append((done, best)))
    assert calls and calls[-1][0] == len(fastbpe.train_words(words, 600))
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


# ---- compat="hf": Hugging Face BpeTrainer's merges, entry by entry ------------------------


def hf_train(text, vocab_size, min_frequency, specials):
    pytest.importorskip("tokenizers", reason="tokenizers (test extra) is the oracle of compat='hf'")
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([text], trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return tok, [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]


def ours_train(text, vocab_size, min_frequency, specials):
    tok = fastbpe.train(text=text, vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials,
                        progress=False, compat="hf")
    return tok, [(_bytes_to_text(a), _bytes_to_text(b)) for a, b in tok.merges]


def test_same_merges_as_bpetrainer_on_real_text(shared_data):
    text = shared_data.text("english.txt.gz", 1_000_000)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    hf_tok, theirs = hf_train(text, 2500, 2, specials)
    tok, ours = ours_train(text, 2500, 2, specials)
    assert len(ours) == len(theirs) > 2000
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, f"merge {i}: fastbpe {a} vs tokenizers {b}"
    # and BpeTrainer's ids: special tokens first, the bytes, the merged tokens
    assert _vocab(tok) == hf_tok.get_vocab()
    sample = shared_data.text("english.txt.gz", 1_100_000)[1_000_000:]
    assert tok.encode_ordinary(sample) == hf_tok.encode(sample, add_special_tokens=False).ids
    # A tokenizer.json whose pre-tokenizer is ByteLevel alone (use_regex) loads and encodes alike.
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        hf_tok.save(str(Path(tmp) / "tokenizer.json"))
        loaded = fastbpe.Tokenizer.from_huggingface(Path(tmp) / "tokenizer.json")
    assert loaded.encode(sample, allowed_special="all") == hf_tok.encode(sample, add_special_tokens=False).ids
    # The default tie rule (first seen) is a different, documented rule: it diverges early.
    default = fastbpe.train(text, vocab_size=2500, min_frequency=2, special_tokens=specials, progress=False)
    assert [(_bytes_to_text(a), _bytes_to_text(b)) for a, b in default.merges] != theirs


def _vocab(tok):
    """A byte-level tokenizer's ``{token as byte-level text: id}``, special tokens included (as
    ``tokenizers``' ``get_vocab``)."""
    return {**{_bytes_to_text(t): i for i, t in enumerate(tok.token_bytes) if t}, **tok.special_tokens}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["aa", "ab", "ba", "b", "a a", " ", "\n", "aaa", "é", "xy", "yx"]),
                min_size=1, max_size=60), st.integers(258, 300), st.integers(0, 3))
def test_same_merges_on_tie_heavy_corpora(parts, vocab_size, min_frequency):
    text = "".join(parts)
    hf_tok, theirs = hf_train(text, vocab_size, min_frequency, ["<s>"])
    tok, ours = ours_train(text, vocab_size, min_frequency, ["<s>"])
    assert ours == theirs
    assert _vocab(tok) == hf_tok.get_vocab()


def test_compat_needs_byte_level_gpt2():
    with pytest.raises(ValueError, match="compat"):
        fastbpe.train("a b", vocab_size=300, compat="hf", unit="chars", progress=False)
    with pytest.raises(ValueError, match="compat must be"):
        fastbpe.train("a b", vocab_size=300, compat="sentencepiece", progress=False)


def test_a_mistyped_path_is_never_trained_on_as_text(tmp_path, monkeypatch):
    """A str that names no file is text only when it cannot be a path; a typo is a ValueError."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("the cat sat on the mat " * 20, encoding="utf-8")
    from_file = fastbpe.train("corpus/a.txt", vocab_size=270, progress=False)
    for typo in ("corpus/a.txtt", "a.txt", "corpus/my notes.txt", "tokens"):
        with pytest.raises(ValueError, match="names no file.*text="):
            fastbpe.train(typo, vocab_size=270, progress=False)
    # a path read from a list of files with its line end: said as such, not trained on as text
    with pytest.raises(ValueError, match=r"has whitespace around the path 'corpus/a.txt': strip it"):
        fastbpe.train("corpus/a.txt\n", vocab_size=270, progress=False)
    for text in (" the", "see docs/README.md", "the ratio is 22/7.0"):  # (one line of text, as text)
        assert fastbpe.train(text, num_merges=1, min_frequency=1, progress=False).training_stats["input_bytes"] == \
            len(text)
    # text= always means text, whatever it looks like; a str with spaces still reads as text
    typo_as_text = fastbpe.train(text="corpus/a.txtt", num_merges=3, min_frequency=1, progress=False)
    assert typo_as_text.training_stats["input_bytes"] == len("corpus/a.txtt")
    as_text = fastbpe.train(text="the cat sat on the mat " * 20, vocab_size=270, progress=False)
    assert as_text == from_file == fastbpe.train("the cat sat on the mat " * 20, vocab_size=270, progress=False)
    with pytest.raises(ValueError, match="not both"):
        fastbpe.train("corpus/a.txt", text="x y", vocab_size=270)
    with pytest.raises(ValueError, match="give a corpus"):
        fastbpe.train(vocab_size=270)
    with pytest.raises(TypeError, match="text must be a str"):
        fastbpe.train(text=["a b"], vocab_size=270)


def test_train_takes_special_tokens_as_a_list_only():
    text = "the cat sat on the mat " * 20
    with pytest.raises(TypeError, match="special_tokens"):
        fastbpe.train(text, vocab_size=300, special_tokens="<|endoftext|>", progress=False)
    with pytest.raises(TypeError, match="special_tokens"):
        fastbpe.train(text, vocab_size=300, special_tokens=7, progress=False)
    tok = fastbpe.train(text, vocab_size=300, special_tokens=("<|endoftext|>",), progress=False)
    assert list(tok.special_tokens) == ["<|endoftext|>"]


@pytest.mark.parametrize("argument,error,message", [
    ({"word_start": 5}, TypeError, "word_start must be a str"),          # was AttributeError from .encode
    ({"word_end": b"</w>", "unit": "chars"}, TypeError, "word_end must be a str"),
    ({"special_tokens": {"<s>": 1}}, TypeError, "list of names"),       # its ids were dropped
    ({"special_tokens": "<s>"}, TypeError, "special_tokens"),           # not three one-character tokens
    ({"pattern": "gpt5"}, ValueError, "unknown split pattern"),
    ({"pattern": 5}, TypeError, "pattern"),
    ({"workers": True}, TypeError, "workers must be an int"),           # was one worker
    ({"workers": 2.5}, TypeError, "workers must be an int"),
    ({"workers": -3}, ValueError, "workers must be >= 1"),
    ({"vocab_size": "300"}, TypeError, "vocab_size must be an int"),   # was "unsupported operand"
    ({"vocab_size": 300.5}, TypeError, "vocab_size must be an int"),   # was blamed on num_merges
    ({"vocab_size": True}, TypeError, "vocab_size must be an int"),
    ({"vocab_size": 0}, ValueError, "vocab_size must be >= 1"),
    ({"num_merges": -1}, ValueError, "num_merges must be >= 0"),
    ({"vocab_size": 10**30}, ValueError, "vocab_size must be at most 2,147,483,648"),  # was an OverflowError
    ({"vocab_size": 300, "min_frequency": 2**63}, ValueError, "min_frequency must be at most"),
    ({"num_merges": 2**40}, ValueError, "num_merges must be at most"),
    ({"min_frequency": 1.5}, TypeError, "min_frequency must be an int"),
    ({"special_tokens": [5]}, TypeError, "special tokens must be str, got int"),  # was a ValueError
    ({"progress": "yes"}, TypeError, "progress must be None"),                    # was taken as no bar
])
def test_ill_typed_arguments_fail_clearly_before_the_corpus_is_read(argument, error, message):
    read = []

    def corpus():
        read.append(True)
        yield "the cat sat on the mat " * 20

    arguments = {"vocab_size": 300, "progress": False, "workers": 1, **argument}
    with pytest.raises(error, match=message):
        fastbpe.train(corpus(), **arguments)
    assert not read, "the corpus was read before the arguments were checked"


def test_a_corpus_of_no_kind_is_a_type_error_naming_the_kinds():
    with pytest.raises(TypeError, match="corpus must be paths or an iterable .* got int"):
        fastbpe.train(5, vocab_size=300)


def hf_train_files(paths, vocab_size, min_frequency, specials, iterator=None):
    """Hugging Face BpeTrainer's merges from files (``Tokenizer.train``) or an iterator."""
    pytest.importorskip("tokenizers", reason="tokenizers (test extra) is the oracle of compat='hf'")
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    if iterator is None:
        tok.train([str(p) for p in paths], trainer)
    else:
        tok.train_from_iterator(iterator, trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]


def _our_merges(corpus, vocab_size, min_frequency, specials, **options):
    tok = fastbpe.train(corpus, vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials,
                        progress=False, compat="hf", **options)
    return [(_bytes_to_text(a), _bytes_to_text(b)) for a, b in tok.merges]


@pytest.mark.parametrize("corpus", ["english", "multi"])
@pytest.mark.parametrize("vocab_size", [400, 3000])
def test_same_merges_as_bpetrainer_trained_on_files(shared_data, tmp_path, corpus, vocab_size):
    """Files are read line by line, each line with its ending its own sequence, as there."""
    text = (shared_data.text("english.txt.gz", 400_000) if corpus == "english"
            else "".join(shared_data.rows("parallel_multi.tsv.gz", 1500)))
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("utf-8"))
    specials = ["<|endoftext|>"]
    theirs = hf_train_files([path], vocab_size, 2, specials)
    assert _our_merges(path, vocab_size, 2, specials) == theirs
    assert _our_merges([path], vocab_size, 2, specials, workers=2) == theirs
    if corpus == "multi" and vocab_size == 3000:  # runs across line ends: the whole text merges otherwise
        assert _our_merges(iter([text]), vocab_size, 2, specials) != theirs


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["ab", "a", " ", "  ", "\n", "\r\n", "\t", "b a", "é", "\n\n", " \n"]),
                min_size=1, max_size=60), st.integers(258, 290))
def test_same_merges_as_bpetrainer_on_files_of_blank_lines_and_runs(tmp_path_factory, parts, vocab_size):
    path = tmp_path_factory.mktemp("lines") / "corpus.txt"
    path.write_bytes("".join(parts).encode("utf-8"))
    assert _our_merges(path, vocab_size, 1, []) == hf_train_files([path], vocab_size, 1, [])


def test_same_merges_as_train_from_iterator_on_many_texts(shared_data):
    rows = shared_data.rows("parallel_multi.tsv.gz", 600)
    texts = ["".join(rows[i:i + 50]) for i in range(0, len(rows), 50)]
    theirs = hf_train_files(None, 1200, 2, [], iterator=texts)
    assert _our_merges(iter(texts), 1200, 2, []) == theirs


def test_a_table_trains_with_the_pattern_it_was_counted_with():
    """Count once, train many times: a table counted with another split than GPT-2's trained
    with GPT-2's split (the default) gave a tokenizer that splits text otherwise than its
    merges were learned on."""
    texts = ["the cat's 12345 sat; on   the mat", "don't stop 2024-11-30"] * 50
    table = fastbpe.count_words(iter(texts), pattern="whitespace", workers=1)
    assert table.pattern == "whitespace"
    tok = fastbpe.train(table, vocab_size=300, progress=False)
    direct = fastbpe.train(iter(texts), vocab_size=300, pattern="whitespace", progress=False)
    assert tok.pattern == "whitespace" and tok.merges == direct.merges
    assert fastbpe.train(table, vocab_size=300, pattern="whitespace", progress=False).merges == direct.merges
    with pytest.raises(ValueError, match="counted with pattern='whitespace', not 'gpt2'"):
        fastbpe.train(table, vocab_size=300, pattern="gpt2", progress=False)
    # a name and its pattern's text are one split; tables combined keep a split they share
    cl100k = fastbpe.count_words(iter(texts), pattern="cl100k_base", workers=1)
    assert fastbpe.train(cl100k, vocab_size=300, pattern="cl100k", progress=False).pattern == "cl100k"
    unknown = fastbpe.WordTable.from_counts({b"ab": 2})
    assert unknown.pattern is None  # (any split is taken)
    assert fastbpe.WordTable.concat([table, unknown, table]).pattern == "whitespace"
    with pytest.raises(ValueError, match="counted with different patterns"):
        fastbpe.WordTable.concat([table, cl100k])
    # a table pickled before tables kept their pattern reads back as one of unknown pattern
    import pickle

    old = fastbpe.WordTable.__new__(fastbpe.WordTable)
    old.data, old.offsets, old.counts = table.data, table.offsets, table.counts
    assert pickle.loads(pickle.dumps(old)).pattern is None and pickle.loads(pickle.dumps(table)) == table
    assert pickle.loads(pickle.dumps(table)).pattern == "whitespace"


def test_extend_refuses_a_table_counted_with_another_split():
    tok = fastbpe.train(text="the cat sat on the mat " * 20, vocab_size=270, progress=False)
    malay = ["kucing itu duduk di atas tikar"] * 20
    table = fastbpe.count_words(iter(malay), pattern="whitespace", workers=1)
    with pytest.raises(ValueError, match="counted with pattern='whitespace', the tokenizer splits with 'gpt2'"):
        tok.extend(table, num_merges=5)
    same = fastbpe.count_words(iter(malay), pattern=tok.pattern, workers=1)
    assert tok.extend(same, num_merges=5, min_frequency=1).vocab_size == tok.vocab_size + 5
