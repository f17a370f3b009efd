"""tiktoken rank files and OpenAI's presets, verified by tiktoken itself."""
import base64
import json

import numpy as np

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe import Tokenizer, openai
from fastbpe.formats import read_tiktoken_ranks, to_tiktoken_encoding

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken (test extra) verifies the tiktoken format")
pytest.importorskip("tiktoken.load", reason="tiktoken (test extra) reads its own rank files")

@pytest.mark.parametrize("name,hello", [("r50k_base", [31373, 995]), ("p50k_base", [31373, 995]),
                                        ("cl100k_base", [15339, 1917]), ("o200k_base", [24912, 2375])])
def test_openai_encodings_equal_tiktoken(name, hello, samples, shared_data, tiktoken_encoding):
    tok = openai(name, shared_data.path("tokenizers", "tiktoken"))
    enc = tiktoken_encoding(name)
    assert tok.encode("hello world") == hello
    size = None if name in ("cl100k_base", "o200k_base") else 200_000  # the older two: a smaller slice
    for label, text in samples.items():
        text = text[:size]
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), label
    # per row too (short texts exercise chunk edges)
    for row in shared_data.rows("parallel_multi.tsv.gz", 300):
        assert tok.encode_ordinary(row) == enc.encode_ordinary(row)


POLICIES = [dict(), dict(allowed_special="all"), dict(disallowed_special=()), dict(disallowed_special=None),
            dict(allowed_special={"<|endoftext|>", "<|im_start|>"}),  # (one set for several encodings)
            dict(allowed_special={"<|im_start|>"}, disallowed_special=None),
            dict(disallowed_special={"<|im_start|>"}),  # (a name this vocabulary lacks: text to refuse)
            dict(disallowed_special={"hello"}), dict(allowed_special="all", disallowed_special={"<|fim_prefix|>"}),
            dict(allowed_special={"<|fim_prefix|>"}, disallowed_special="all")]


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base"])
def test_special_token_policies_equal_tiktoken_s(name, shared_data, tiktoken_encoding):
    """The special-token arguments as tiktoken reads them, every combination with texts that
    hold a special token of the vocabulary, one of another, and one of none: the same ids, or
    a ValueError from both."""
    tok = openai(name, shared_data.path("tokenizers", "tiktoken"))
    enc = tiktoken_encoding(name)
    texts = ["hello <|endoftext|> world", "a <|im_start|>b", "<|fim_prefix|>x", "plain hello", ""]

    def outcome(encoder, text, policy):
        try:
            return encoder.encode(text, **policy)
        except ValueError:
            return ValueError

    for policy in POLICIES:
        expected = [outcome(enc, text, policy) for text in texts]
        assert [outcome(tok, text, policy) for text in texts] == expected, policy
        accepted = [text for text, ids in zip(texts, expected) if ids is not ValueError]
        assert tok.encode_batch(accepted, **policy) == [ids for ids in expected if ids is not ValueError]
    for bad in ({1}, {""}):
        with pytest.raises((TypeError, ValueError), match="disallowed_special must hold non-empty str"):
            tok.encode("a", disallowed_special=bad)
    with pytest.raises(TypeError, match="allowed_special must hold str"):  # (tiktoken: a TypeError too)
        tok.encode("a", allowed_special={1})
    with pytest.raises(ValueError, match="the text contains 'hel', which disallowed_special names: leave it out"):
        tok.encode("hello", disallowed_special={"hel"})  # (no special token: no advice to allow it)


def test_tiktoken_s_recipe_for_more_special_tokens_runs_as_written(shared_data, tiktoken_encoding):
    """tiktoken's README makes an encoding with more special tokens from another's ``_pat_str``,
    ``_mergeable_ranks`` and ``_special_tokens``: with ``fastbpe.Encoding`` in place of
    ``tiktoken.Encoding``, the same recipe gives the same encoder."""
    base, oracle = openai("cl100k_base", shared_data.path("tokenizers", "tiktoken")), tiktoken_encoding("cl100k_base")
    assert (base._pat_str, base._mergeable_ranks, base._special_tokens) == \
        (oracle._pat_str, oracle._mergeable_ranks, oracle._special_tokens)
    arguments = dict(pat_str=base._pat_str, mergeable_ranks=base._mergeable_ranks,
                     special_tokens={**base._special_tokens, "<|im_start|>": 100264, "<|im_end|>": 100265})
    ours, theirs = fastbpe.Encoding("cl100k_im", **arguments), tiktoken.Encoding("cl100k_im", **arguments)
    assert ours.name == "cl100k_im" and ours.n_vocab == theirs.n_vocab
    for text in ("<|im_start|>user\nhello world 123<|im_end|>", "plain text, 12345", ""):
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
    # (cl100k's ranks leave a gap before its special tokens: no explicit_n_vocab fits, in tiktoken either)
    with pytest.raises(ValueError, match="explicit_n_vocab=100277"):
        fastbpe.Encoding("gap", explicit_n_vocab=100277, **arguments)
    small = dict(pat_str=r"\S+|\s+", mergeable_ranks={bytes([b]): b for b in range(256)}, special_tokens={"<s>": 256})
    assert fastbpe.Encoding("small", explicit_n_vocab=257, **small).n_vocab == 257
    with pytest.raises(TypeError, match="mergeable_ranks must map token bytes"):
        fastbpe.Encoding("text", pat_str=r"\S+", mergeable_ranks={"a": 0}, special_tokens={})
    with pytest.raises(TypeError, match="explicit_n_vocab must be an int"):
        fastbpe.Encoding("small", explicit_n_vocab="257", **small)
    # what a tiktoken encoding cannot hold is refused by the attributes too, as by to_tiktoken
    qwen3 = fastbpe.load(shared_data.path("tokenizers", "qwen3", "tokenizer.json"))
    for attribute in ("_pat_str", "_mergeable_ranks"):
        with pytest.raises(ValueError, match="a tiktoken encoding cannot hold a normaliser"):
            getattr(qwen3, attribute)


UNSTABLE_PARTS = ["a", "b", "x", " ", "  ", "\n", "\t", ".", "'", "0", "12", "é", "日本", " the", "ing", "hello",
                  "\u3000", "\xa0", "😀", "'s", "<|endoftext|>", "\x1c"]


@pytest.fixture(scope="module")
def unstable_pair(shared_data, tiktoken_encoding):
    return openai("cl100k_base", shared_data.path("tokenizers", "tiktoken")), tiktoken_encoding("cl100k_base")


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(UNSTABLE_PARTS), max_size=8), st.sampled_from(["default", "all"]))
def test_encode_with_unstable_equals_tiktoken_s(unstable_pair, parts, policy):
    """The stable ids and the set of completions (in no order) of generated texts, tiktoken's:
    texts that end in a chunk, in spaces (held back with it), in a special token (none held),
    in a character that begins a longer token, in a whitespace character after a word."""
    ours, theirs = unstable_pair
    text = "".join(parts)
    options = {} if policy == "default" else {"allowed_special": "all"}

    def outcome(encoder):
        try:
            stable, completions = encoder.encode_with_unstable(text, **options)
        except ValueError:
            return ValueError
        return stable, sorted(map(tuple, completions))

    assert outcome(ours) == outcome(theirs)


def test_encode_with_unstable_is_for_tokenizers_that_encode_as_tiktoken():
    chars = fastbpe.train(text="the cat sat " * 20, num_merges=5, unit="chars", progress=False)
    with pytest.raises(ValueError, match="encode_with_unstable is tiktoken's"):
        chars.encode_with_unstable("the")
    staged = Tokenizer([bytes([b]) for b in range(256)], [], split_stages=[(r"\d", True)])
    with pytest.raises(ValueError, match="single split pattern"):
        staged.encode_with_unstable("12")


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_long_pieces_equal_tiktoken(name, shared_data, tiktoken_encoding):
    """Pieces of tens of KB without a split (runs of one letter, few letters, digits-free
    words), through the rank queue of long chunks, and lengths at its switch from the heap."""
    tok = openai(name, shared_data.path("tokenizers", "tiktoken"))
    enc = tiktoken_encoding(name)
    rng = np.random.default_rng(3)
    texts = ["a" * 40_000, "ab" * 15_000, "".join(rng.choice(list("ab"), 30_000)),
             "".join(rng.choice(list("xyzé"), 20_000)), "Ä" * 10_000]
    texts += ["a" * n for n in (255, 256, 257)] + ["ba" * 128, "ab" * 128 + "a"]
    for text in texts:
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), (len(text), text[:8])


def test_trained_tokenizer_exports_to_tiktoken(tmp_path, samples, tiktoken_encoding):
    tok = fastbpe.train(samples["english"][:300_000], vocab_size=2000, progress=False,
                        special_tokens=["<|endoftext|>"])
    tok.to_tiktoken(tmp_path / "mine.tiktoken")
    side = json.loads((tmp_path / "mine.tiktoken.json").read_text())
    enc = tiktoken.Encoding("mine", pat_str=side["pat_str"], special_tokens=side["special_tokens"],
                            mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(tmp_path / "mine.tiktoken")))
    for text in (samples["english"][300_000:600_000], samples["code"][:200_000], samples["multi"][:200_000]):
        assert enc.encode_ordinary(text) == tok.encode_ordinary(text)
    assert to_tiktoken_encoding(tok).encode("x<|endoftext|>", allowed_special="all") == \
        tok.encode("x<|endoftext|>", allowed_special="all")
    back = Tokenizer.from_tiktoken(tmp_path / "mine.tiktoken", side["pat_str"], side["special_tokens"])
    assert back.encode_ordinary(samples["code"][:100_000]) == tok.encode_ordinary(samples["code"][:100_000])


def test_special_tokens_one_of_which_begins_another_are_not_written_for_tiktoken(tmp_path):
    """tiktoken matches special tokens in an order that changes from one Encoding to the next
    (measured: <x>, <x><y> and <x><y><z> in "<x><y><z>" gave each of the three), so a file in
    which one begins another would not encode as fastbpe does: refused, nothing written. Such
    tokens are fine in the other formats, which take the longest."""
    tok = Tokenizer([bytes([b]) for b in range(256)], [], special_tokens=["<x>", "<x><y>", "<x><y><z>"])
    assert tok.encode("<x><y><z>", allowed_special="all") == [258]  # (fastbpe: the longest)
    for write in (lambda: tok.to_tiktoken(tmp_path / "t.tiktoken"), lambda: to_tiktoken_encoding(tok)):
        with pytest.raises(ValueError, match="'<x>' and '<x><y>': one begins the other"):
            write()
    assert not list(tmp_path.iterdir())
    tok.to_huggingface(tmp_path / "t.json")
    assert fastbpe.load(tmp_path / "t.json").encode("<x><y><z>", allowed_special="all") == [258]
    overlapping = Tokenizer([bytes([b]) for b in range(256)], [], special_tokens=["<ab>", "b>c"])
    assert to_tiktoken_encoding(overlapping).encode("<ab>c", allowed_special="all") == \
        overlapping.encode("<ab>c", allowed_special="all")  # (tokens that only overlap: matched alike)


def test_malformed_tiktoken_files(tmp_path, shared_data):
    cases = {
        "empty": b"",
        "one field": b"YQ==\n",
        "bad base64": b"!!!! 0\n",
        "bad rank": b"YQ== zero\n",
        "duplicate rank": b"YQ== 0\nYg== 0\n",
        "duplicate token": b"YQ== 0\nYQ== 1\n",
        "negative rank": b"YQ== -1\n",
    }
    for label, content in cases.items():
        path = tmp_path / f"{label}.tiktoken"
        path.write_bytes(content)
        with pytest.raises(ValueError):
            read_tiktoken_ranks(path)
    # Truncated: a prefix of a real file lacks most byte tokens.
    real = shared_data.path("tokenizers", "tiktoken", "r50k_base.tiktoken").read_bytes()
    path = tmp_path / "cut.tiktoken"
    path.write_bytes(real[:1000])
    with pytest.raises(ValueError):
        Tokenizer.from_tiktoken(path, "gpt2")
    with pytest.raises(ValueError, match="unknown OpenAI encoding"):
        openai("nope", tmp_path)


def _read_or_error(read, path, data):
    try:
        tokens, ranks = read(path, data)
        return tokens, ranks.tolist()
    except ValueError as exc:
        return str(exc)


@pytest.mark.parametrize("seed", range(3))
def test_bulk_rank_reader_equals_the_line_reader(tmp_path, seed):
    """The compiled reader of well-formed files and the line reader agree on generated files,
    well-formed or not (the bulk reader hands what it refuses to the line reader)."""
    import base64
    import random

    from fastbpe.encode.model import BPEModel
    from fastbpe.formats.tiktoken import _read_lines, read_rank_table

    path = tmp_path / "gen.tiktoken"

    def bulk(path, data):
        path.write_bytes(data)
        return read_rank_table(path)

    noise = st.sampled_from([b"", b" ", b"\n", b"\r", b"\t", b"=", b"-", b"+", b"0", b"9" * 11, b"A", b"  ", b"\n\n"])
    tokens = st.lists(st.binary(min_size=0, max_size=6), min_size=1, max_size=12)

    @settings(max_examples=150, deadline=None, database=None)
    @given(tokens, st.lists(st.tuples(st.integers(0, 200), noise), max_size=3), st.booleans(), st.randoms())
    def check(toks, edits, trailing, rnd):
        ranks = list(range(len(toks)))
        rnd.shuffle(ranks)
        data = b"\n".join(base64.b64encode(t) + b" " + str(r).encode() for t, r in zip(toks, ranks))
        data += b"\n" if trailing else b""
        for position, text in edits:  # insert noise: most edits make a malformed file
            position %= len(data) + 1
            data = data[:position] + text + data[position:]
        got, expected = _read_or_error(bulk, path, data), _read_or_error(_read_lines, path, data)
        if isinstance(got, tuple) and len(set(got[0])) < len(got[0]):
            assert "appears twice" in expected  # left to the tokenizer, which refuses them (below)
            with pytest.raises(ValueError, match="duplicates token"):
                BPEModel(got[0], None, merge_rule="token")
        else:
            assert got == expected

    random.seed(seed)
    check()


def test_the_ranks_and_their_sidecar_are_replaced_together(tmp_path, monkeypatch):
    """A save that fails on the sidecar leaves the old pair, not new ranks with an old sidecar;
    a pair mixed anyway (a save killed between the two renames) is refused when loaded."""
    from fastbpe import fileio

    old = fastbpe.train("the cat sat on the mat " * 20, vocab_size=270, progress=False)
    new = fastbpe.train("a dog ran in the fog " * 20, vocab_size=275, progress=False)
    path = tmp_path / "t.tiktoken"
    old.to_tiktoken(path)
    before = {name: (tmp_path / name).read_bytes() for name in ("t.tiktoken", "t.tiktoken.json")}
    real_write = fileio.AtomicWriter.write

    def fail_on_the_sidecar(writer, piece):
        if writer.path.endswith(".json"):
            raise OSError("disk full")
        real_write(writer, piece)

    monkeypatch.setattr(fileio.AtomicWriter, "write", fail_on_the_sidecar)
    with pytest.raises(OSError, match="disk full"):
        new.to_tiktoken(path)
    monkeypatch.undo()
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(before)
    assert list(fastbpe.load(path).token_bytes) == list(old.token_bytes)
    crlf = path.read_bytes().replace(b"\n", b"\r\n")  # (a checkout that turned the line ends)
    path.write_bytes(crlf)
    assert list(fastbpe.load(path).token_bytes) == list(old.token_bytes)
    new.to_tiktoken(tmp_path / "new.tiktoken")
    (tmp_path / "new.tiktoken").replace(path)  # new ranks beside the old sidecar
    with pytest.raises(ValueError, match="written with other ranks than t.tiktoken's"):
        fastbpe.load(path)


def test_a_ranks_file_is_named_as_fastbpe_load_knows_it(tmp_path):
    tok = fastbpe.train("the cat sat on the mat " * 20, vocab_size=270, progress=False)
    with pytest.raises(ValueError, match="name the ranks file NAME.tiktoken"):
        tok.to_tiktoken(tmp_path / "noext")  # (written, it was read back as bad JSON)
    assert list(tmp_path.iterdir()) == []
    tok.to_tiktoken(tmp_path / "T.TIKTOKEN")
    assert fastbpe.load(tmp_path / "T.TIKTOKEN").encode("the cat") == tok.encode("the cat")


def test_two_tokens_of_one_rank_are_refused_by_name():
    """``tiktoken.Encoding`` refuses two tokens of one rank (fastbpe's took them, and the first
    was lost: "ab" encoded as two bytes)."""
    base = {bytes([b]): b for b in range(256)}
    with pytest.raises(ValueError, match=r"rank 256 is given to two tokens, b'ab' and b'cd'"):
        fastbpe.Encoding("x", pat_str=r"\S+|\s+", mergeable_ranks={**base, b"ab": 256, b"cd": 256}, special_tokens={})


def test_an_empty_token_of_a_rank_file_is_an_id_no_text_encodes_to(tmp_path):
    """A rank file's empty token (``=``, which tiktoken reads as a token of no bytes; Whisper's
    multilingual file has one, rank 50256) leaves its rank a gap: the ids are tiktoken's, as is
    the decoding of every other id, and decoding the gap is refused (tiktoken gives ''). The
    compiled reader and the line reader read it alike; two empty tokens are refused."""
    import tiktoken.load

    from fastbpe.formats.tiktoken import _read_lines, read_rank_table

    pattern = fastbpe.formats.tiktoken.OPENAI_ENCODINGS["r50k_base"][0]
    ranks = {bytes([b]): b for b in range(256)}
    for token in (b"th", b" th", b"the", b" the", b"at", b" c", b" cat"):
        ranks[token] = len(ranks) + 1  # (rank 256 is the empty token's)
    lines = [base64.b64encode(t) + b" %d\n" % r for t, r in ranks.items()]
    path = tmp_path / "gap.tiktoken"
    path.write_bytes(b"".join(lines[:256] + [b"= 256\n"] + lines[256:]))
    theirs = tiktoken.load.load_tiktoken_bpe(str(path))
    assert theirs[b""] == 256  # (what tiktoken makes of the line)
    enc = tiktoken.Encoding("gap", pat_str=pattern, mergeable_ranks=theirs, special_tokens={"<|end|>": 264})
    tok = fastbpe.Tokenizer.from_tiktoken(path, pattern, {"<|end|>": 264})
    tokens, got = read_rank_table(path)
    assert (tokens, got.tolist()) == (list(ranks), list(ranks.values()))
    assert tuple(x.tolist() if hasattr(x, "tolist") else x for x in _read_lines(path, path.read_bytes())) \
        == (tokens, got.tolist())
    for text in ["the cat", " the cat sat thatch", "", "ñ 😀 the\n\n  at", "<|end|>th"]:
        ids = enc.encode(text, allowed_special="all")
        assert tok.encode(text, allowed_special="all") == ids
        assert tok.decode_bytes(ids) == enc.decode_bytes(ids)
    assert [tok.decode_single_token_bytes(i) for i in range(256)] == [bytes([b]) for b in range(256)]
    with pytest.raises(KeyError, match="256"):
        tok.decode([256])
    path.write_bytes(b"".join(lines[:256] + [b"= 256\n"] + lines[256:] + [b"= 300\n"]))
    with pytest.raises(ValueError, match=r"line 265: token b'' appears twice"):
        fastbpe.Tokenizer.from_tiktoken(path, pattern)
