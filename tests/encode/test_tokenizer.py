"""Tokenizer: trained end to end, encoding as the reference replays merges, and its file."""
import json
import pickle
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe import reference
from fastbpe import Tokenizer
from fastbpe._core.encode import EncodeState
from fastbpe.split.bounds import chunk_bounds
from fastbpe.split.patterns import fused_scanner_id
from fastbpe.formats.bytelevel import bytes_to_unicode

def generated_text(seed: int = 0, words: int = 6000) -> str:
    """Deterministic text with a Zipf-like vocabulary, code-like lines and non-ASCII words."""
    rng = random.Random(seed)
    syllables = ["de", "f", "re", "turn", "va", "lue", "na", "ïve", "ca", "fé", "日", "本", "in", "g"]
    lexicon = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(800)]
    out = []
    for i in range(words):
        out.append(lexicon[int(len(lexicon) * rng.random() ** 3)])  # skewed to the front
        if i % 9 == 8:
            out.append(rng.choice(["(value):\n   ", "= 42;\n", " * 3 +", "\n\n#"]))
    return " ".join(out)


CODE = generated_text()


@pytest.fixture(scope="module")
def worked_tokenizer(worked_example):
    return fastbpe.train(worked_example.text, num_merges=15, unit="chars", pattern="whitespace",
                         word_start="_", min_frequency=1, progress=False)


@pytest.fixture(scope="module")
def code_tokenizer():
    return fastbpe.train(CODE, vocab_size=600, progress=False)


def test_worked_example_pieces(worked_tokenizer, worked_example):
    for word, expected in worked_example.encodings.items():
        assert tuple(worked_tokenizer.tokens(word)) == expected, word


def test_unknown_character_is_an_error_for_ids_but_a_piece_for_tokens(worked_tokenizer):
    assert worked_tokenizer.tokens("makan-makan")[1] == "-"
    with pytest.raises(ValueError, match="'-'"):
        worked_tokenizer.encode("makan-makan")


@pytest.mark.parametrize("fuse_unk", [True, False])
def test_unknown_characters_become_the_unk_token(fuse_unk):
    """With an unk_token, a character without a token is that token (a run of them one, with
    fuse_unk, never across two texts of a batch), on every path: one text, a batch, the
    general path, the pieces, a saved file and a pickle."""
    from fastbpe.split.splitter import WHOLE_PIECE

    tok = Tokenizer([b"", b"a", b"b", b"ab"], [(1, 2)], unit="chars", pattern=WHOLE_PIECE, merge_rule="pair",
                    special_tokens={"<unk>": 0}, unk_token="<unk>", fuse_unk=fuse_unk)
    run = [0] if fuse_unk else [0, 0]
    assert tok.encode_ordinary("ab😀é") == [3, *run] and tok.encode_ordinary("😀éb") == [*run, 2]
    assert tok.encode_ordinary("a😀b\ud800") == [1, 0, 2, 0]
    texts = ["ab😀é", "😀éb", "", "é", "é", "ba"]
    want = [tok.encode_ordinary(text) for text in texts]
    assert want[3:5] == [[0], [0]]
    assert tok.encode_ordinary_batch(texts) == want
    assert [ids.tolist() for ids in tok.encode_ordinary_batch(texts, as_numpy=True)] == want
    many = texts * 3000  # (past the small-batch path: one compiled call a group of texts)
    assert tok.encode_ordinary_batch(many, num_threads=2) == want * 3000
    assert [tok._ordinary_ids(text).tolist() for text in texts] == want
    assert tok.tokens("a😀é") == ["a", *["<unk>"] * len(run)]
    assert pickle.loads(pickle.dumps(tok)).encode_ordinary("😀éb") == want[1]
    assert Tokenizer.from_dict(json.loads(json.dumps(tok.to_dict()))) == tok
    # each chunk's own run: split into one-character chunks, two unknown characters are two
    per_character = Tokenizer([b"", b"a"], [], unit="chars", pattern=r"\S", merge_rule="pair",
                              special_tokens={"<unk>": 0}, unk_token="<unk>", fuse_unk=fuse_unk)
    assert per_character.encode_ordinary("😀éa") == [0, 0, 1]
    with pytest.raises(ValueError, match="neither a token nor a special token"):
        Tokenizer([b"a"], [], unit="chars", unk_token="<unk>")
    with pytest.raises(ValueError, match="unk_token needs unit='chars'"):
        Tokenizer([bytes([b]) for b in range(256)], [], unk_token="<unk>")


def test_special_tokens_decode_as_their_surfaces():
    """``special_surfaces``: what special tokens decode to where that is not their name
    (SentencePiece's " ⁇ " for <unk>, nothing for <s>), in every decoding call and the offsets;
    their names stay their tokens; kept by files and pickles; only special tokens, only strs."""
    from fastbpe.split.splitter import WHOLE_PIECE

    def make(**extra):
        return Tokenizer([b"", b"", b"a", b"b", b"ab"], [(2, 3)], unit="chars", pattern=WHOLE_PIECE,
                         merge_rule="pair", special_tokens={"<unk>": 0, "<s>": 1}, unk_token="<unk>", fuse_unk=True,
                         **extra)

    tok, plain = make(special_surfaces={"<unk>": " ?? ", "<s>": ""}), make()
    ids = [1] + tok.encode_ordinary("ab😀éa")
    assert ids == [1] + plain.encode_ordinary("ab😀éa") == [1, 4, 0, 2]
    assert (tok.decode(ids), plain.decode(ids)) == ("ab ?? a", "<s>ab<unk>a")
    assert tok.decode_bytes(ids) == b"".join(tok.decode_tokens_bytes(ids)) == b"ab ?? a"
    # the compiled gathering takes a special token that decodes to nothing (ids with a BOS took
    # the per-id path after it: 1 MB of ids 15x slower)
    from fastbpe.encode.vocab import _table
    assert _table(tok).gather(ids) == b"ab ?? a" and _table(plain).gather(ids) == b"<s>ab<unk>a"
    assert _table(tok).gather(np.array(ids, dtype=np.int64)) == b"ab ?? a"
    assert tok.decode_with_offsets(ids) == ("ab ?? a", [0, 0, 2, 6])
    assert tok.tokens("ab😀éa") == ["ab", "<unk>", "a"] and tok.encode("<s>", allowed_special="all") == [1]
    assert tok != plain and pickle.loads(pickle.dumps(tok)) == tok
    assert Tokenizer.from_dict(json.loads(json.dumps(tok.to_dict()))).decode(ids) == "ab ?? a"
    for bad in ({"<pad>": ""}, {"<s>": 5}):
        with pytest.raises(ValueError, match="special_surfaces"):
            make(special_surfaces=bad)


def test_fallback_replacement_says_how_byte_tokens_that_spell_no_character_decode():
    """A run of byte tokens whose bytes are not UTF-8: a U+FFFD for each token ("token", as
    tokenizers decodes) or for each byte that begins no character ("byte", as SentencePiece
    does); valid runs, other tokens and errors="strict" as before; kept by files and pickles."""
    tokens = [b"a", b"b"] + [f"<0x{b:02X}>".encode() for b in range(256)]

    def make(**extra):
        return Tokenizer(tokens, [], unit="chars", byte_fallback=True, **extra)

    per_token, per_byte = make(), make(fallback_replacement="byte")
    ids = [0] + [2 + b for b in "é".encode()[:1] + b"b" + "é".encode()] + [1] + [2 + 0xE2]
    assert per_token.decode(ids) == "a\ufffd" * 1 + "\ufffd\ufffd\ufffd" + "b\ufffd"
    assert per_byte.decode(ids) == "a\ufffdbéb\ufffd"
    assert per_token.decode(ids[:1] + ids[2:5]) == per_byte.decode(ids[:1] + ids[2:5]) == "abé"
    with pytest.raises(UnicodeDecodeError):
        per_byte.decode(ids, errors="strict")
    assert pickle.loads(pickle.dumps(per_byte)).decode(ids) == per_byte.decode(ids)
    assert Tokenizer.from_dict(json.loads(json.dumps(per_byte.to_dict()))).decode(ids) == per_byte.decode(ids)
    with pytest.raises(ValueError, match="fallback_replacement must be 'token' or 'byte'"):
        make(fallback_replacement="bytes")


SPACED_TOKENS = [t.encode() for t in ("▁", "▁▁", "a", "▁a", "b▁", "é", "", "")] + \
    [f"<0x{b:02X}>".encode() for b in range(256)]
BYTE_ID = {b: 8 + b for b in range(256)}


@settings(max_examples=300, deadline=None)
@given(data=st.data(), rule=st.sampled_from([True, False, "piece", "pieces", "token"]),
       replacement=st.sampled_from(["token", "byte"]))
def test_decode_s_compiled_gathering_is_its_rules_written_in_python(data, rule, replacement):
    """decode's compiled path (the text table's gathering: each space marker a space, the one
    before the text dropped by the rule, byte runs that meet across control pieces handed
    back) gives the text its Python path gives (run by run, the rule read id by id), on
    generated ids: markers alone, in a row and inside tokens at the start, control pieces, byte
    tokens that spell ▁ or é or no character, as lists and as arrays. A special token far beyond the
    table takes the Python path, and an id that is no token is refused on both."""
    from fastbpe.encode import vocab

    tok = Tokenizer(SPACED_TOKENS, [], unit="chars", space_marker="▁", dummy_prefix=rule, byte_fallback=True,
                    fallback_replacement=replacement, special_tokens={"<s>": 6, "</s>": 7, "▁far": 400_000},
                    special_surfaces={"<s>": "", "</s>": ""})
    runs = [[BYTE_ID[b] for b in "▁".encode()], [BYTE_ID[b] for b in "é".encode()], [BYTE_ID[0x20]], [BYTE_ID[0xE2]]]
    singles = st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7]).map(lambda i: [i])
    parts = data.draw(st.lists(st.one_of(singles, st.sampled_from(runs)), max_size=10))
    ids = [i for part in parts for i in part]
    table = vocab.text_table(tok)
    by_rules = vocab._text_by_runs(tok, table, ids, "replace")
    assert tok.decode(ids) == tok.decode(np.array(ids, dtype=np.int64)) == by_rules, ids
    # the compiled gathering alone: None where two byte runs have only control pieces between them
    shown = [(k, i) for k, i in enumerate(ids) if i not in (6, 7)]
    meet = any(a >= 8 and b >= 8 and j > k + 1 for (k, a), (j, b) in zip(shown, shown[1:]))
    gathered = table.gather(ids)
    assert (gathered is None) == meet, ids
    if not meet and gathered.decode("utf-8", "replace") == gathered.decode("utf-8", "ignore"):  # (all UTF-8)
        assert gathered.decode() == by_rules, ids
    far = ids + [400_000] + ids
    assert tok.decode(far) == vocab._text_by_runs(tok, table, far, "replace")
    with pytest.raises(KeyError):
        tok.decode(ids + [300])


def test_the_text_table_s_gathering_checks_what_it_is_given():
    from fastbpe._core.encode import LEADING_RULES, ByteTable

    flat, offsets = np.frombuffer(b" a", np.uint8), np.array([0, 1, 2])
    with pytest.raises(ValueError, match="leading"):
        ByteTable(flat, offsets, np.zeros(2, np.uint8), 7)
    with pytest.raises(ValueError, match="kinds"):
        ByteTable(flat, offsets, None, LEADING_RULES["piece"])
    with pytest.raises(ValueError, match="one flag a slot"):
        ByteTable(flat, offsets, np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="first token's table"):
        ByteTable(flat, offsets, None, LEADING_RULES["token"])
    with pytest.raises(ValueError, match="as many slots"):
        ByteTable(flat, offsets, None, LEADING_RULES["token"], (flat, np.array([0, 2])))
    for bad in ((), (flat,), [flat], (flat, offsets, 3)):  # (an index past a short tuple read past its items)
        with pytest.raises(ValueError):
            ByteTable(flat, offsets, None, LEADING_RULES["token"], bad)
    with pytest.raises(TypeError):
        ByteTable(flat, offsets, None, LEADING_RULES["token"], (None, offsets))
    first = ByteTable(flat, offsets, None, LEADING_RULES["token"], (np.frombuffer(b"a", np.uint8), np.array([0, 0, 1])))
    assert first.gather([0, 1, 0]) == b"a " and first.gather([1, 0]) == b"a " and first.gather([]) == b""
    table = ByteTable(flat, offsets, None, LEADING_RULES[True])
    assert table.gather([0, 1, 0]) == b"a " and table.gather([1, 0]) == b"a " and table.gather([]) == b""


def test_each_character_s_id_is_its_one_character_token():
    """The table a character-level tokenizer looks its text's characters up in: a token of one
    character (of 1 to 4 UTF-8 bytes) at its code point, every other code point -1 - itself;
    tokens of several characters, or of bytes that begin none, are not characters."""
    tokens = [b"", b"a", "é".encode(), "😀".encode(), b"ab", "e\u0301".encode(), "中".encode(), "\u0301".encode(),
              b"\x80", "\U0010ffff".encode(), "a😀".encode(), b"\xc3("]
    tok = Tokenizer(tokens, [], unit="chars", pattern=r"(?s:.+)", merge_rule="pair")
    table = tok._char_ids()
    assert table.dtype == np.int32 and table.shape == (0x110000,)
    texts = [token.decode("utf-8", "replace") for token in tokens]
    expected = {ord(text): i for i, text in enumerate(texts) if len(text) == 1 and text != "\ufffd"}
    assert {int(c): int(table[c]) for c in np.flatnonzero(table >= 0)} == expected
    others = np.flatnonzero(table < 0)
    assert (table[others] == -1 - others).all() and len(others) == 0x110000 - len(expected)
    assert tok.encode_ordinary("aé😀中\u0301\U0010ffff") == [1, 2, 3, 6, 7, 9]


def test_trained_merges_match_train_words(code_tokenizer):
    words = {}
    for chunk in fastbpe.pretokenize(CODE, "gpt2"):
        key = tuple(bytes([b]) for b in chunk.encode())
        words[key] = words.get(key, 0) + 1
    expected = fastbpe.train_words(words, len(code_tokenizer.merges), min_frequency=2,
                                   backend="reference")
    assert code_tokenizer.merges == expected


def test_vocab_size_is_respected(code_tokenizer):
    assert code_tokenizer.vocab_size == 600
    tok = fastbpe.train(CODE, vocab_size=300, special_tokens=["<|endoftext|>"], progress=False)
    assert tok.vocab_size == 300
    assert tok.special_tokens == {"<|endoftext|>": 299}


@given(st.text(max_size=200))
def test_decode_encode_round_trip(code_tokenizer, text):
    assert code_tokenizer.decode(code_tokenizer.encode(text)) == text


# The three ways a text reaches the compiled core; each must give the reference's tokens.
ENCODE_PATHS = ("fused", "bounds", "symbols")


def encode_by(tok: Tokenizer, text: str, path: str) -> list:
    """Token ids of ``text`` through one path: the one-pass split and merge (``fused``), chunk
    bounds then merges (``bounds``: what user regexes and Hugging Face split stages take), or
    symbol ids per chunk (``symbols``: character-level tokenizers and word markers)."""
    core, state = tok._core(), EncodeState()
    if path == "fused":
        ids = core.encode_str(text, fused_scanner_id(tok.pattern), state)
    elif path == "bounds":
        ids = core.encode_chunks(*chunk_bounds(text, tok.pattern), state)
    else:
        ids = core.encode_symbols(*tok._symbols(text), state)
    return ids.tolist()


def reference_tokens(tok: Tokenizer, text: str) -> list:
    merges = tok.merges
    out = []
    for chunk in fastbpe.pretokenize(text, tok.pattern):
        out.extend(reference.encode_word(tuple(bytes([b]) for b in chunk.encode()), merges))
    return out


@pytest.mark.parametrize("path", ENCODE_PATHS)
@given(st.text(alphabet="defrtunvalïcé日本ig(): *+=\n", max_size=80))
def test_every_encode_path_replays_merges_like_the_reference(code_tokenizer, path, text):
    expected = reference_tokens(code_tokenizer, text)
    assert [code_tokenizer.token_bytes[i] for i in encode_by(code_tokenizer, text, path)] == expected
    assert code_tokenizer.tokens(text) == expected


@pytest.mark.parametrize("path", ENCODE_PATHS)
def test_every_encode_path_on_real_text(shared_data, path):
    text = shared_data.text("english.txt.gz", 200_000)
    tok = fastbpe.train(text[:150_000], vocab_size=900, progress=False)
    sample = text[150_000:] + " ünïcödé 😀 中文。"
    expected = reference_tokens(tok, sample)
    assert [tok.token_bytes[i] for i in encode_by(tok, sample, path)] == expected


def test_encode_replays_merges_when_a_merge_recreates_a_token():
    # "abc" is made twice (ab+c, then a+bc); (abc, d) was learned in between. Replaying merges
    # in order never applies (abc, d) to a word that only becomes abc at the later merge.
    tokens = [b"a", b"b", b"c", b"d", b"ab", b"abc", b"bc", b"abcd"]
    merges = [(0, 1), (4, 2), (5, 3), (1, 2), (0, 6)]
    tok = Tokenizer(tokens, merges, pattern="whitespace")
    pairs = [tuple(tokens[i] for i in m) for m in merges]
    for word in ("abcd", "acbcd", "bcd", "abcabcd"):
        expected = list(reference.encode_word(tuple(bytes([b]) for b in word.encode()), pairs))
        assert tok.tokens(word) == expected


@pytest.mark.parametrize("fixture", ["worked_tokenizer", "code_tokenizer"])
def test_save_load_round_trip(request, tmp_path, fixture):
    tok = request.getfixturevalue(fixture)
    path = tmp_path / "tok.json"
    tok.save(path)
    loaded = Tokenizer.load(path)
    assert loaded == tok
    assert loaded.merges == tok.merges and loaded.vocab == tok.vocab
    sample = "makan minuman" if fixture == "worked_tokenizer" else CODE[:500]
    assert loaded.encode(sample) == tok.encode(sample)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "fastbpe" and data["version"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["tok.json"]  # no temp file left behind


def test_file_is_human_readable(code_tokenizer, tmp_path):
    code_tokenizer.save(tmp_path / "t.json")
    vocab = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))["vocab"]
    # GPT-2's byte-to-unicode form: Ġ is the space byte, printable bytes stand for themselves.
    spaced = [t for t in code_tokenizer.token_bytes if t.startswith(b" ") and t[1:].isalpha()]
    assert spaced and all("Ġ" + t[1:].decode() in vocab for t in spaced)


@pytest.mark.parametrize(
    "content,message",
    [
        (b"not json", "JSON"),
        (b'{"format": "other"}', "neither a fastbpe tokenizer file nor a Hugging Face"),
        (b'{"format": "fastbpe", "version": 99}', "version"),
        (b'{"format": "fastbpe", "version": 1, "unit": "bytes"}', "missing"),
        (b'{"format": "fastbpe", "version": 1, "unit": "bytes", "pattern": "gpt2", '
         b'"vocab": ["a", "b"], "merges": [[0, 1]]}', "not a token"),
        (b'{"format": "fastbpe", "version": 1, "unit": "bytes", "pattern": "gpt2", '
         b'"vocab": ["a", "a"], "merges": []}', "duplicates"),
        (b'{"format": "fastbpe", "version": 1, "unit": "bytes", "pattern": "gpt2", '
         b'"vocab": ["a"], "merges": [[0, 5]]}', "unknown token"),
        (b'{"format": "fastbpe", "version": 1, "unit": "bytes", "pattern": "gpt2", '
         b'"vocab": ["\\u4e00"], "merges": []}', "byte token"),
    ],
)
def test_malformed_files(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        Tokenizer.load(path)


def test_truncated_file(code_tokenizer, tmp_path):
    code_tokenizer.save(tmp_path / "t.json")
    blob = (tmp_path / "t.json").read_bytes()
    (tmp_path / "cut.json").write_bytes(blob[: len(blob) // 2])
    with pytest.raises(ValueError):
        Tokenizer.load(tmp_path / "cut.json")


def test_bytes_to_unicode_is_a_bijection_onto_printables():
    mapping = bytes_to_unicode()
    assert sorted(mapping) == list(range(256))
    assert all(c.isprintable() and not c.isspace() for c in mapping.values())


def test_train_argument_errors():
    with pytest.raises(ValueError, match="vocab_size or num_merges"):
        fastbpe.train("abc")
    with pytest.raises(ValueError, match="smaller than"):
        fastbpe.train("abc abc", vocab_size=100)
    with pytest.raises(ValueError, match="unit"):
        fastbpe.train("abc abc", num_merges=1, unit="words")
    with pytest.raises(ValueError, match="empty"):
        fastbpe.train("", vocab_size=300)


def test_encode_batch_from_many_threads_with_different_worker_counts(code_tokenizer):
    import threading

    texts = [CODE[i * 97:i * 97 + 300] for i in range(48)]
    expected = [code_tokenizer.encode(t) for t in texts]
    errors, done = [], []

    def run(workers):
        try:
            for _ in range(20):
                assert code_tokenizer.encode_batch(texts, workers=workers) == expected
            done.append(workers)
        except Exception as exc:  # collected: a thread's exception would be lost otherwise
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(2 + i % 4,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(done) == 8


@pytest.mark.parametrize("workers,error", [(-3, ValueError), (0, ValueError), (True, TypeError),
                                           (2.5, TypeError), ("2", TypeError)])
def test_encode_batch_refuses_bad_worker_counts(code_tokenizer, workers, error):
    with pytest.raises(error, match="workers"):
        code_tokenizer.encode_batch(["a b", "c"], workers=workers)


def test_encode_batch_takes_a_list_not_one_text(code_tokenizer):
    # a str is a sequence of characters: each one was encoded as a text of its own
    for one_text in ("abc", b"abc"):
        with pytest.raises(TypeError, match="list of texts"):
            code_tokenizer.encode_batch(one_text)
    assert code_tokenizer.encode_batch(("abc",)) == [code_tokenizer.encode("abc")]


def test_the_pattern_must_be_a_known_name_or_a_regex():
    tokens = [bytes([b]) for b in range(256)]
    for name in ("gpt5", "cl100k_bsae", "llama"):
        # a typo of a name was compiled as a regex matching that very word
        with pytest.raises(ValueError, match="unknown split pattern"):
            Tokenizer(tokens, [], pattern=name)
    with pytest.raises(ValueError, match="invalid split pattern"):
        Tokenizer(tokens, [], pattern="(unclosed")
    with pytest.raises(TypeError, match="pattern"):
        Tokenizer(tokens, [], pattern=5)
    assert Tokenizer(tokens, [], pattern="cl100k_base").encode("it's") == \
        Tokenizer(tokens, [], pattern="cl100k").encode("it's")
    assert Tokenizer(tokens, [], pattern=r"(?:gpt5)").tokens("a gpt5") == [b"g", b"p", b"t", b"5"]


def test_word_markers_must_be_text():
    tokens = [bytes([b]) for b in range(256)]
    with pytest.raises(TypeError, match="word_start"):
        Tokenizer(tokens, [], word_start=5)
    with pytest.raises(TypeError, match="word_end"):
        Tokenizer(tokens, [], word_end=b"</w>")


@pytest.mark.parametrize("flag", ["whole_token_lookup", "byte_fallback", "prefix_space"])
def test_switches_must_be_true_or_false(flag):
    """A switch given as text ("none", "false") is refused: any non-empty str is truthy and
    would have turned the switch on."""
    tokens = [bytes([b]) for b in range(256)]
    for value in ("none", "false", 1, None):
        with pytest.raises(TypeError, match=flag):
            Tokenizer(tokens, [], **{flag: value})


@pytest.mark.parametrize("merges,error", [
    ([(97.7, 98.2)], TypeError),      # was truncated to (97, 98)
    ([("97", "98")], TypeError),      # was parsed
    ([(True, 98)], TypeError),        # was (1, 98)
    ([(97, 98, 99, 100)], ValueError),  # was read as two merges
    ([(97, 98), (97,)], ValueError),
    ([(97, 2**70)], ValueError),      # was OverflowError
])
def test_merges_must_be_pairs_of_integer_ids(merges, error):
    tokens = [bytes([b]) for b in range(256)] + [b"ab"]
    with pytest.raises(error, match="merges"):
        Tokenizer(tokens, merges)
    assert Tokenizer(tokens, np.array([[97, 98, 256]], dtype=np.int32)).merge_ids.tolist() == [[97, 98]]


def test_tokens_must_be_bytes_and_counts_ints():
    tokens = [bytes([b]) for b in range(256)] + [b"ab"]
    with pytest.raises(TypeError, match="bytes"):
        Tokenizer(tokens[:-1] + [10**10], [])  # bytes(10**10) would allocate ten gigabytes
    with pytest.raises(TypeError, match="bytes"):
        Tokenizer(["a", "b"], [])
    with pytest.raises(TypeError, match="sequence of bytes"):
        Tokenizer(b"abc", [])
    for counts in ([1.5], ["3"], [True], [-1]):
        with pytest.raises(ValueError, match="merge_counts"):
            Tokenizer(tokens, [(97, 98)], merge_counts=counts)
    with pytest.raises(ValueError, match="2 counts for 1 merges"):
        Tokenizer(tokens, [(97, 98)], merge_counts=[3, 4])
    assert Tokenizer(tokens, [(97, 98)], merge_counts=np.array([3])).merge_counts == [3]


def test_counts_as_an_array_are_checked_as_a_list_is():
    """The learner's int64 array takes a vectorised check: the same errors, plain ints out."""
    tokens = [bytes([b]) for b in range(256)] + [b"ab", b"abab"]
    merges = [(97, 98), (256, 256)]
    for counts in (np.array([3, -1]), np.array([1.0, 2.0]), np.array([True, True]), np.array([[3, 4]])):
        with pytest.raises(ValueError, match="merge_counts"):
            Tokenizer(tokens, merges, merge_counts=counts)
    with pytest.raises(ValueError, match="3 counts for 2 merges"):
        Tokenizer(tokens, merges, merge_counts=np.array([5, 4, 3], dtype=np.int64))
    for dtype in (np.int64, np.int32, np.uint64):
        got = Tokenizer(tokens, merges, merge_counts=np.array([5, 2**31 if dtype != np.int32 else 7], dtype=dtype))
        assert got.merge_counts == Tokenizer(tokens, merges, merge_counts=[5, int(got.merge_counts[1])]).merge_counts
        assert all(type(c) is int for c in got.merge_counts)
    assert Tokenizer(tokens[:256], [], merge_counts=np.zeros(0, dtype=np.int64)).merge_counts == []


def test_tokens_are_copied_as_bytes():
    """A list of bytes is copied (the caller's list may change later); other buffers become bytes."""
    tokens = [bytes([b]) for b in range(256)] + [b"ab"]
    tok = Tokenizer(tokens, [(97, 98)])
    tokens[256] = b"xy"
    assert tok.token_bytes[256] == b"ab" and tok.encode("ab") == [256]
    mixed = [bytes([b]) for b in range(256)] + [bytearray(b"ab")]
    assert type(Tokenizer(mixed, [(97, 98)]).token_bytes[256]) is bytes
    with pytest.raises(TypeError, match="bytes"):
        Tokenizer(tuple(tokens[:-1]) + ("ab",), [])


def test_decode_takes_int_ids_only():
    tok = Tokenizer([bytes([b]) for b in range(256)], [], special_tokens={"<\ud800>": 300})
    assert tok.decode([104, 105, np.int64(33)]) == "hi!"
    for bad in ([104.7], [True], ["104"], np.array([104.0]), [300.0], [np.float64(300)]):
        with pytest.raises(TypeError, match="ints"):  # 104.7 was taken as 104
            tok.decode(bad)
        with pytest.raises(TypeError, match="ints"):  # (300.0 is no special token's id to leave out)
            tok.decode(bad, skip_special_tokens=True)
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.decode([104, 299])
    assert tok.decode([104, 300, np.int64(300), 105], skip_special_tokens=True) == "hi"
    # a special token that is not valid UTF-8 decodes like such a token would
    assert tok.decode_bytes([300]) == "<\ud800>".encode("utf-8", "surrogatepass")
    assert tok.decode([104, 300]) == "h<\ufffd\ufffd\ufffd>"


@pytest.mark.parametrize("options", [{"unit": "chars"}, {"word_start": "_"}, {"word_end": "</w>"}])
def test_whole_token_lookup_needs_bytes_without_markers(options):
    # the symbol path of characters and markers has no chunk bytes to look up: it was silently ignored
    with pytest.raises(ValueError, match="whole_token_lookup"):
        Tokenizer([bytes([i]) for i in range(256)] + [b"ab"], [(97, 98)], whole_token_lookup=True, **options)


@pytest.mark.parametrize("splitter", [dict(pattern="cl100k"), dict(pattern=r"\w+|\W"), dict(pattern="gpt2", split_gaps=True),
                                      dict(pattern=r"\d+", split_gaps=True, split_stages=[(r"\S+", True)])])
def test_lone_surrogates_become_u_fffd_on_every_split_path(splitter, monkeypatch):
    from fastbpe.encode import surrogates

    tok = Tokenizer([bytes([b]) for b in range(256)], [], **splitter)
    fixed = "a\ufffdb 😀 \ufffd12"
    assert tok.encode("a\ud800b \ud83d\ude00 \udfff12") == list(fixed.encode()) == tok.encode(fixed)
    assert tok.encode_batch(["a\ud800b \ud83d\ude00 \udfff12", "x"], workers=2) == [list(fixed.encode()), [120]]
    # the compiled pass finds them while converting the text: a text without any never pays for the search
    calls = []
    monkeypatch.setattr(surrogates, "as_tiktoken", lambda text: calls.append(text) or text)
    tok.encode("naïve 日本語 😀")
    assert calls == ([] if tok.splitter.fused_scanner() is not None else ["naïve 日本語 😀"])



@pytest.mark.parametrize("markers", [{"word_end": "</w>"}, {"word_start": "_"}])
def test_lone_surrogates_become_u_fffd_with_word_markers(markers):
    """The symbol path of word markers encoded a surrogate's own three bytes (invalid UTF-8)."""
    tok = fastbpe.train(text="the cat sat on the mat " * 20, vocab_size=280, pattern="whitespace", progress=False,
                        **markers)
    for text, fixed in (("a\ud800b", "a\ufffdb"), ("x\ud83d\ude00y", "x😀y")):
        assert tok.encode(text) == tok.encode(fixed) == tok.encode_batch([text])[0]
        assert tok.decode(tok.encode(text)) == fixed


def test_a_trace_has_the_ids_encoding_gives_lone_surrogates():
    from fastbpe.analysis.trace import trace_word

    tok = Tokenizer([bytes([b]) for b in range(256)] + [b"\xef\xbf", b"\xef\xbf\xbd"], [(239, 191), (256, 189)])
    for text in ("a\ud800b", "x\ud83d\ude00y"):
        assert [i for chunk in trace_word(tok, text) for i in chunk["ids"]] == tok.encode(text)

# ---- the one-call path of short texts ----------------------------------------------------------

@pytest.fixture(scope="module")
def with_specials():
    """Byte-level, GPT-2 split, two special tokens (one sharing a first character with text)."""
    return fastbpe.train(CODE, vocab_size=600, special_tokens=["<|end|>", "<pad>"], progress=False)


def _general(tok, text, allowed=frozenset(), disallowed="all"):
    """encode through the general path (policy, normaliser, split, merge), not the one call."""
    return tok._id_list(tok._encode_array(text, allowed, disallowed))


@given(st.lists(st.sampled_from(list("ab <|>end\n\t") + ["é", "😀", "\ud800", "\udc00", "<|end|>", "<pad>"]),
                max_size=30).map("".join))
def test_the_one_call_path_equals_the_general_path(with_specials, text):
    assert with_specials._plain() is not None  # (the fixture takes it)
    try:
        want = _general(with_specials, text)
    except ValueError as exc:  # a special token's text, refused
        with pytest.raises(ValueError, match="special token"):
            with_specials.encode(text)
        assert "special token" in str(exc)
    else:
        assert with_specials.encode(text) == want
        assert with_specials.encode(text, allowed_special=set()) == want
        assert with_specials.encode_to_numpy(text).tolist() == want
    ordinary = _general(with_specials, text, frozenset(), ())
    assert with_specials.encode_ordinary(text) == ordinary
    assert with_specials.encode(text, allowed_special="all") == _general(with_specials, text, "all", "all")


def test_the_one_call_path_keeps_the_edges(with_specials):
    tok = with_specials
    assert tok.encode("") == [] and tok.encode_ordinary("") == [] and tok.encode_to_numpy("").tolist() == []

    class Text(str):
        pass

    assert tok.encode(Text("ab ab")) == tok.encode("ab ab")
    with pytest.raises(TypeError):
        tok.encode(b"ab")
    with pytest.raises(TypeError):
        tok.encode("ab", allowed_special="")  # a str other than "all" is a mistake, on any path
    with pytest.raises(ValueError, match="<pad>"):
        tok.encode("a <pad> b")
    assert tok.encode("a <pad>", disallowed_special=()) == tok.encode_ordinary("a <pad>")
    no_a = Tokenizer([bytes([b]) for b in range(256) if b != ord("a")], [])
    assert no_a._plain() is not None
    with pytest.raises(ValueError, match="not in the vocabulary"):
        no_a.encode("cat")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        no_a.encode_ordinary("cat")
    assert pickle.loads(pickle.dumps(tok)).encode("ab <|end") == tok.encode("ab <|end")


def test_a_normaliser_or_a_prefix_space_takes_the_general_path():
    base = dict(tokens=[bytes([b]) for b in range(256)], merges=[])
    assert Tokenizer(**base)._plain() is not None
    assert Tokenizer(**base, normalizer="NFC")._plain() is None
    assert Tokenizer(**base, prefix_space=True)._plain() is None
    assert Tokenizer(**base, prefix_space=True).encode("a") == Tokenizer(**base).encode(" a")
    assert Tokenizer(**base, pattern=r"\w+|\W")._plain() is None


def test_str_subclasses_are_encoded_as_their_text():
    """numpy's str_ (what iterating a NumPy array of texts gives) and other str subclasses are
    texts: the character-level and word-marker paths refused them (the compiled scanner takes
    exact str)."""
    class Text(str):
        pass

    chars = fastbpe.train(text="the cat sat " * 50, num_merges=20, unit="chars", progress=False)
    marked = fastbpe.train(text="the cat sat " * 50, num_merges=20, word_start="_", pattern="whitespace",
                           progress=False)
    for tok in (chars, marked):
        for text in (np.str_("the cat"), Text("the cat")):
            assert tok.encode(text) == tok.encode("the cat") and tok.tokens(text) == tok.tokens("the cat")
        assert tok.encode_batch(list(np.array(["the cat", "a sat"]))) == tok.encode_batch(["the cat", "a sat"])
    assert fastbpe.pretokenize(np.str_("a b"), "gpt2") == ["a", " b"]
