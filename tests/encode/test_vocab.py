"""The vocabulary from outside: lookups, compiled decoding, character offsets, lone surrogates."""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe import Tokenizer
from fastbpe.reference import encode as reference_encode
from fastbpe.encode.surrogates import as_tiktoken

TEXT = "the cat sat on the mat; le chat était assis. 猫が座った. кот сидел 😀 " * 20


@pytest.fixture(scope="module")
def small():
    return fastbpe.train(TEXT, vocab_size=330, progress=False, special_tokens=["<|endoftext|>", "<pad>"])


@pytest.fixture(scope="module")
def real_files(shared_data):
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) is the reference")
    out = {}
    for name in ("llama3", "qwen3"):
        path = shared_data.path("tokenizers", name, "tokenizer.json")
        out[name] = (fastbpe.load(path), tokenizers.Tokenizer.from_file(str(path)))
    return out


@pytest.fixture(scope="module")
def multilingual(shared_data):
    # rows of nine languages, then characters of 2, 3 and 4 UTF-8 bytes that byte-level
    # vocabularies split across tokens
    return "".join(shared_data.rows("parallel_multi.tsv.gz", 120)) + " 😀😀 \U00020000\U0002a6d6x  \n\n ӝ a"


def _splits_a_character(tok, ids) -> bool:
    return any(tok.decode_single_token_bytes(i)[0] & 0xC0 == 0x80 for i in ids)


def test_offsets_equal_huggingface_on_real_files(real_files, multilingual):
    for name, (ours, hf) in real_files.items():
        want = hf.encode(multilingual, add_special_tokens=False)
        ids, offsets = ours.encode_with_offsets(multilingual)
        assert ids == want.ids, name
        assert [tuple(o) for o in offsets.tolist()] == want.offsets, name
        assert _splits_a_character(ours, ids), name  # the text exercises partial characters


def test_offsets_equal_huggingface_on_a_trained_tokenizer(tmp_path, multilingual):
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) is the reference")
    tok = fastbpe.train(multilingual, vocab_size=400, progress=False)
    tok.to_huggingface(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in (multilingual, "", "😀", "a😀b", " \n\t x"):
        want = hf.encode(text, add_special_tokens=False)
        ids, offsets = tok.encode_with_offsets(text)
        assert ids == want.ids and [tuple(o) for o in offsets.tolist()] == want.offsets, text[:40]


def test_offset_starts_equal_tiktoken_decode_with_offsets(tiktoken_encoding, shared_data, multilingual):
    oracle = tiktoken_encoding("cl100k_base")
    ours = fastbpe.openai("cl100k_base", shared_data.path("tokenizers", "tiktoken"))
    text = multilingual + " <|endoftext|> end"
    ids, offsets = ours.encode_with_offsets(text, allowed_special="all")
    decoded, starts = oracle.decode_with_offsets(ids)
    assert ids == oracle.encode(text, allowed_special="all")
    assert decoded == text and offsets[:, 0].tolist() == starts


# characters NFC composes, decomposes (U+0F73), maps to another (Angstrom, Ohm), reorders (marks of
# several classes), joins across bases (Hangul jamo, Oriya vowel signs), leaves apart, and plain text
_NORMALISED = ["a", "e", "o", " ", "\n", "!", "1", "caf", "\u0301", "\u0302", "\u0308", "\u0323", "\u0327", "\u093c",
               "\u0654", "\u0344", "\u00e9", "\u00c5", "\u212b", "\u2126", "\u0f73", "\u1e9b", "\u1eb9", "\u1100",
               "\u1161", "\u11a8", "\uac00", "\u0b47", "\u0b3e", "\u0915", "\u0626", "\ufb2c", "\ufb01", "中",
               "<think>"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_NORMALISED), max_size=25).map("".join))
def test_offsets_through_a_normaliser_equal_huggingface(real_files, text):
    """Qwen3 normalises with NFC: offsets are spans of the text given, mapped back through the
    composition as tokenizers' alignments map them (a composed character spans its base)."""
    qwen, hf = real_files["qwen3"]
    assert qwen.normalizer == "NFC"
    want = hf.encode(text, add_special_tokens=False)
    ids, offsets = qwen.encode_with_offsets(text, allowed_special="all")
    assert ids == want.ids and [tuple(o) for o in offsets.tolist()] == want.offsets


def test_offsets_through_every_unicode_form(tmp_path):
    """A token a byte here (no merges): each token's span is that of the character it is part of."""
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) is the reference")
    base = fastbpe.Tokenizer([bytes([b]) for b in range(256)], [])
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        tok = fastbpe.Tokenizer.from_dict({**base.to_dict(), "normalizer": form})
        tok.to_huggingface(tmp_path / f"{form}.json")
        hf = tokenizers.Tokenizer.from_file(str(tmp_path / f"{form}.json"))
        for text in ("cafe\u0301 x", "caf\u00e9", "\ufb01n", "\u212b\u0323", "\u1100\u1161\u11a8!", "\u0344a"):
            want = hf.encode(text, add_special_tokens=False)
            ids, offsets = tok.encode_with_offsets(text)
            assert ids == want.ids and [tuple(o) for o in offsets.tolist()] == want.offsets, (form, text)
    steps = fastbpe.Tokenizer.from_dict({**base.to_dict(), "normalizer": [{"type": "NFC"}, {"type": "Lowercase"}]})
    with pytest.raises(ValueError, match="normalis"):
        steps.encode_with_offsets("Cafe\u0301")  # (a normaliser of other steps is not mapped back)


def test_offsets_of_text_the_tokens_do_not_spell_are_refused_saying_why(small):
    """A space put before the text, or text no match of the split pattern covers (dropped):
    no character spans those tokens, said as such (it was 'a normaliser changed it?')."""
    data = small.to_dict()
    with pytest.raises(ValueError, match="add_prefix_space"):
        fastbpe.Tokenizer.from_dict({**data, "prefix_space": True}).encode_with_offsets("hello world")
    letters = fastbpe.Tokenizer.from_dict({**data, "pattern": "[a-z]+"})
    spans = letters.encode_with_offsets("hello")[1]  # (all of it matched: spanned)
    assert spans[0, 0] == 0 and spans[-1, 1] == 5
    with pytest.raises(ValueError, match="leaves some of it out"):
        letters.encode_with_offsets("hello world")


@given(st.text(max_size=60))
def test_offsets_cover_the_text_in_order(small, text):
    # ordinary text: a generated text that spells a special token is not an error here
    ids, offsets = small.encode_with_offsets(text, disallowed_special=())
    text = as_tiktoken(text)
    assert len(offsets) == len(ids)
    if ids:
        assert offsets[0, 0] == 0 and offsets[-1, 1] == len(text)
        assert (offsets[1:, 0] >= offsets[:-1, 0]).all() and (offsets[:, 1] > offsets[:, 0]).all()
        tokens = [small.decode_single_token_bytes(i) for i in ids]
        assert [tuple(o) for o in offsets.tolist()] == reference_encode.char_spans(text, tokens)


def test_lookups(small):
    assert small.token_to_id("<pad>") == small.special_tokens["<pad>"]
    assert small.token_to_id(b"t") == small.encode("t")[0] == small.token_to_id("t")
    assert small.token_to_id("never a token") is None
    assert small.id_to_token(small.special_tokens["<pad>"]) == "<pad>"
    assert small.id_to_token(small.token_to_id(b"t")) == b"t" and small.id_to_token(10**6) is None
    assert small.eot_token == small.special_tokens["<|endoftext|>"]
    assert small.n_vocab == len(small.token_bytes) + 2 == len(small)  # no gaps: every id is a token
    with pytest.raises(KeyError):
        small.decode_single_token_bytes(10**6)
    with pytest.raises(TypeError):
        small.token_to_id(5)


def test_lookups_equal_tiktoken(tiktoken_encoding, shared_data):
    oracle = tiktoken_encoding("o200k_base")
    ours = fastbpe.openai("o200k_base", shared_data.path("tokenizers", "tiktoken"))
    assert ours.n_vocab == oracle.n_vocab and ours.eot_token == oracle.eot_token
    for i in (0, 255, 1000, 150000, 199997):
        assert ours.decode_single_token_bytes(i) == oracle.decode_single_token_bytes(i)
        assert ours.token_to_id(oracle.decode_single_token_bytes(i)) == oracle.encode_single_token(
            oracle.decode_single_token_bytes(i))


def test_len_equals_huggingface(real_files):
    for name, (ours, hf) in real_files.items():
        assert len(ours) == hf.get_vocab_size(with_added_tokens=True), name
        assert ours.token_to_id("<|endoftext|>") == hf.token_to_id("<|endoftext|>"), name


def test_the_vocabulary_as_huggingface_spells_it(real_files):
    """get_vocab, get_vocab_size and token_to_id under tokenizers' names give its answers: every
    token by its byte-level text (Qwen3's "Ċ" is the newline, not the token of its UTF-8)."""
    for name, (ours, hf) in real_files.items():
        for added in (True, False):
            assert ours.get_vocab(added) == hf.get_vocab(added), name
            assert ours.get_vocab_size(added) == hf.get_vocab_size(added), name
        assert all(ours.token_to_id(text) == i for text, i in hf.get_vocab().items()), name
        assert ours.token_to_id("Ċ") == hf.token_to_id("Ċ") == ours.token_to_id(b"\n")
        assert ours.token_to_id("世") == ours.token_to_id("世".encode())  # (no byte-level text: its UTF-8)
        # (byte-level text that names no token: its UTF-8's token, where tokenizers has none)
        assert hf.token_to_id("ção") is None and ours.token_to_id("ção") == ours.token_to_id("ção".encode())


def test_special_tokens_a_tokenizer_json_lists_in_its_vocabulary_are_counted_once(tmp_path, shared_data):
    """A tokenizer.json written from a tiktoken encoding lists the special tokens in its model's
    vocabulary too: len(), get_vocab_size and get_vocab answer as tokenizers does, and tiktoken's
    _mergeable_ranks leave them out (so its recipe takes them back as special tokens)."""
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) is the reference")
    fastbpe.openai("cl100k_base", shared_data.path("tokenizers", "tiktoken")).to_huggingface(tmp_path / "cl.json")
    ours, hf = fastbpe.load(tmp_path / "cl.json"), tokenizers.Tokenizer.from_file(str(tmp_path / "cl.json"))
    assert len(ours) == hf.get_vocab_size() == 100261
    for added in (True, False):
        assert ours.get_vocab_size(added) == hf.get_vocab_size(added) == len(ours.get_vocab(added))
    assert ours.special_tokens["<|endoftext|>"] not in ours._mergeable_ranks.values()
    more = fastbpe.Encoding("cl_im", pat_str=ours._pat_str, mergeable_ranks=ours._mergeable_ranks,
                            special_tokens={**ours._special_tokens, "<|im_start|>": 100264})
    assert more.encode("hi<|im_start|>", allowed_special="all") == [6151, 100264]
    # and the rank file written of it reads back (its special token was ranked too, and refused)
    ours.to_tiktoken(tmp_path / "cl.tiktoken")
    assert fastbpe.load(tmp_path / "cl.tiktoken").encode("hi<|endoftext|>", allowed_special="all") == [6151, 100257]


def _reference_decode(tok, ids):
    token_of = {i: t for i, t in enumerate(tok.token_bytes) if t}
    token_of.update({i: s.encode("utf-8", "surrogatepass") for s, i in tok.special_tokens.items()})
    return reference_encode.decode_bytes(token_of, ids)


@given(st.lists(st.integers(0, 400), max_size=200))  # (lists of over 64 ids are gathered from the heap)
def test_compiled_decode_equals_the_reference(small, ids):
    ids = [i for i in ids if i in small.special_tokens.values() or (i < len(small.token_bytes) and small.token_bytes[i])]
    want = _reference_decode(small, ids)
    assert small.decode_bytes(ids) == want
    assert small.decode_bytes(np.array(ids, dtype=np.uint16)) == want
    assert small.decode_bytes(np.array(ids, dtype=np.int64)) == want
    assert small.decode_bytes(tuple(ids)) == want
    assert small.decode(ids) == want.decode("utf-8", "replace")


@pytest.mark.parametrize("n", [63, 64, 65, 300])
def test_decode_of_long_lists_finds_a_bad_id_anywhere(small, n):
    ids = [i % 256 for i in range(n)]
    assert small.decode_bytes(ids) == _reference_decode(small, ids)
    for bad in (-1, 10**6, 2.0):
        with pytest.raises((ValueError, TypeError)):
            small.decode_bytes(ids[:-1] + [bad])


def test_single_token_bytes_equal_the_reference_for_every_id(small):
    for i in range(len(small.token_bytes) + 4):
        want = _reference_decode(small, [i]) if i < len(small.token_bytes) or i in small.special_tokens.values() else None
        if want is None:
            with pytest.raises(KeyError):
                small.decode_single_token_bytes(i)
        else:
            assert small.decode_single_token_bytes(i) == small.decode_single_token_bytes(np.int64(i)) == want
    with pytest.raises(TypeError):
        small.decode_single_token_bytes(True)


def test_single_token_bytes_refuse_what_is_no_token_id(small):
    """The compiled common case and the Python rest give the same errors: KeyError for an int
    that is no token (negative, beyond the vocabulary, past 64 bits), TypeError for no int."""
    small.decode_single_token_bytes(0)  # (the decode table built: the compiled case runs)
    assert small._decode_table is not None
    for bad in (-1, -2, -(2**70), len(small.token_bytes) + 2, 2**31, 2**63, 2**70):
        with pytest.raises(KeyError) as caught:
            small.decode_single_token_bytes(bad)
        assert caught.value.args == (bad,)
    for bad in (2.0, "5", b"5", None, [5], np.float64(5), np.bool_(True), False):
        with pytest.raises(TypeError, match="token ids must be ints"):
            small.decode_single_token_bytes(bad)


def test_single_token_bytes_before_the_table_and_after_a_pickle(small):
    """The first call builds the decode table; a pickled tokenizer, which drops it, builds it again."""
    import pickle

    fresh = Tokenizer(list(small.token_bytes), small.merge_ids, special_tokens=small.special_tokens)
    assert "_decode_table" not in fresh.__dict__
    pad = small.special_tokens["<pad>"]
    assert fresh.decode_single_token_bytes(300) == small.token_bytes[300] and "_decode_table" in fresh.__dict__
    copy = pickle.loads(pickle.dumps(fresh))
    assert "_decode_table" not in copy.__dict__
    assert copy.decode_single_token_bytes(pad) == b"<pad>" and copy.decode_single_token_bytes(np.uint16(300)) == \
        small.token_bytes[300]


def test_single_token_bytes_of_an_unused_id_and_of_decoded_tokens():
    """An unused id (an empty slot) is a KeyError; a byte_fallback vocabulary's <0xNN> token
    stands for its byte, as in decode."""
    tokens = [bytes([b]) for b in range(256)] + [b"", b"ab"]
    tok = Tokenizer(tokens, [(97, 98)])
    assert tok.decode_single_token_bytes(257) == b"ab"
    with pytest.raises(KeyError):
        tok.decode_single_token_bytes(256)
    fallback = Tokenizer([f"<0x{b:02X}>".encode() for b in range(256)] + [b"a"], [], unit="chars",
                         pattern="whitespace", byte_fallback=True)
    for i in (0, 0x41, 255, 256):
        assert fallback.decode_single_token_bytes(i) == fallback.decode_bytes([i])


def _answers_as_tiktoken(ours, oracle, arg) -> None:
    """``ours(arg)`` gives what tiktoken's ``oracle(arg)`` gives, or a KeyError where it does."""
    try:
        want = oracle(arg)
    except KeyError:
        with pytest.raises(KeyError):
            ours(arg)
    else:
        assert ours(arg) == want


def test_single_token_bytes_equal_tiktoken(tiktoken_encoding, shared_data):
    oracle = tiktoken_encoding("cl100k_base")
    ours = fastbpe.openai("cl100k_base", shared_data.path("tokenizers", "tiktoken"))
    for i in [*range(0, oracle.n_vocab, 997), *oracle._special_tokens.values()]:
        _answers_as_tiktoken(ours.decode_single_token_bytes, oracle.decode_single_token_bytes, i)


@pytest.mark.parametrize("offsets", [[0, 2, 1, 3], [0, 1, 4], [-1, 1, 3], []])
def test_a_byte_table_refuses_offsets_outside_its_buffer(offsets):
    from fastbpe._core.encode import ByteTable

    with pytest.raises(ValueError, match="offsets"):
        ByteTable(np.frombuffer(b"abc", dtype=np.uint8), np.array(offsets, dtype=np.int64))


def test_decode_refuses_what_is_no_id(small):
    for bad in ("12", b"\x01", bytearray(b"\x01"), [1.7], np.array([1.0]), np.array([True]), [None]):
        with pytest.raises(TypeError):
            small.decode(bad)
    for bad in ([-1], [len(small.token_bytes) + 2], [2**31], [2**70], np.array([-1]), np.array([2**40]),
                np.array([2**64 - 1], dtype=np.uint64)):
        with pytest.raises(ValueError, match="not in the vocabulary"):
            small.decode(bad)
    with pytest.raises(ValueError, match="dimensional"):
        small.decode(np.zeros((2, 2), dtype=np.int32))
    assert small.decode([]) == "" and small.decode(np.array([], dtype=np.int32)) == ""


def test_decode_refuses_an_unknown_error_handler_even_without_an_error(small):
    """bytes.decode looks its handler up only at an invalid byte: a misspelt one is refused at
    once, not the first time a text cuts a character in two."""
    ids = small.encode("hello")
    assert small.decode(ids, errors="ignore") == small.decode(ids, errors="strict") == "hello"
    with pytest.raises(ValueError, match="no error handler"):
        small.decode(ids, errors="bogus")
    with pytest.raises(TypeError, match="errors must be a str"):
        small.decode(ids, errors=None)


def test_decode_of_a_special_token_far_beyond_the_vocabulary():
    tok = Tokenizer([bytes([b]) for b in range(256)], [], special_tokens={"<far>": 2**31 - 1})
    assert tok.decode([104, 2**31 - 1, 105]) == "h<far>i"
    assert tok.decode(np.array([2**31 - 1], dtype=np.int64)) == "<far>"
    assert tok.decode_single_token_bytes(2**31 - 1) == b"<far>" and tok.n_vocab == 2**31


@pytest.mark.parametrize("text", ["a\ud800b", "\ud800", "x \udfff\ud83d y", "😀\ud83d", "\ud83d\ude00 ok", "\udc80" * 3])
def test_lone_surrogates_encode_as_tiktoken(tiktoken_encoding, shared_data, text):
    oracle = tiktoken_encoding("cl100k_base")
    ours = fastbpe.openai("cl100k_base", shared_data.path("tokenizers", "tiktoken"))
    assert ours.encode(text) == oracle.encode(text)
    assert ours.encode_batch([text, "ok"], workers=2) == [oracle.encode(text), oracle.encode("ok")]


@pytest.fixture(scope="module")
def cl100k_pair(tiktoken_encoding, shared_data):
    """tiktoken's cl100k Encoding and fastbpe's, from the same rank file."""
    return tiktoken_encoding("cl100k_base"), fastbpe.openai("cl100k_base", shared_data.path("tokenizers", "tiktoken"))


def test_tiktoken_batch_methods_equal_tiktoken(cl100k_pair, multilingual):
    oracle, ours = cl100k_pair
    texts = [multilingual[k:k + 300] for k in range(0, 3000, 300)] + ["", "<|endoftext|> x", "😀"]
    ids = oracle.encode_ordinary_batch(texts)
    assert ours.encode_ordinary_batch(texts) == ids
    assert [a.tolist() for a in ours.encode_ordinary_batch(texts, workers=2, as_numpy=True)] == ids
    # pieces cut inside characters decode as tiktoken decodes them (errors="replace" by default)
    cut = [row[1:] for row in ids] + [[], [oracle.eot_token]]
    assert ours.decode_batch(cut) == oracle.decode_batch(cut)
    assert ours.decode_bytes_batch(cut) == oracle.decode_bytes_batch(cut)
    row = oracle.encode_ordinary("hello world")
    assert ours.decode_batch(np.array([row, row[::-1]])) == oracle.decode_batch([row, row[::-1]])
    lone = [[ours.encode_single_token(b"\x80")]]  # (a continuation byte alone: no UTF-8)
    assert ours.decode_batch(lone) == oracle.decode_batch(lone) == ["\ufffd"]
    for decoder in (ours, oracle):
        with pytest.raises(UnicodeDecodeError):
            decoder.decode_batch(lone, errors="strict")
    for bad in ([1, 2, 3], np.array([1, 2]), "ab", b"ab"):
        with pytest.raises(TypeError, match="batch of id sequences"):
            ours.decode_batch(bad)


def test_tiktoken_thread_keyword_and_limits(cl100k_pair, multilingual):
    """tiktoken's ``num_threads=`` works where fastbpe takes ``workers=``, and
    ``max_token_value`` is tiktoken's."""
    oracle, ours = cl100k_pair
    texts = [multilingual[k:k + 200] for k in range(0, 4000, 200)]
    ids = oracle.encode_batch(texts, num_threads=2)
    assert ours.encode_batch(texts, num_threads=2) == ids
    assert ours.encode_ordinary_batch(texts, num_threads=1) == oracle.encode_ordinary_batch(texts, num_threads=1)
    assert ours.decode_batch(ids, num_threads=2) == oracle.decode_batch(ids, num_threads=2) == texts
    assert ours.decode_bytes_batch(ids, num_threads=2) == oracle.decode_bytes_batch(ids, num_threads=2)
    with pytest.raises(TypeError, match="not both"):
        ours.encode_batch(texts, workers=2, num_threads=2)
    for bad, error in ((0, ValueError), (1.5, TypeError), (True, TypeError)):
        for call in (lambda: ours.encode_batch(texts, num_threads=bad), lambda: ours.decode_batch(ids, num_threads=bad),
                     lambda: ours.decode_bytes_batch(ids, num_threads=bad)):
            with pytest.raises(error, match="num_threads"):
                call()
    assert ours.max_token_value == oracle.max_token_value == ours.n_vocab - 1


def test_openai_encodings_carry_their_name(cl100k_pair, shared_data, tmp_path):
    oracle, ours = cl100k_pair
    assert ours.name == oracle.name == "cl100k_base"
    assert fastbpe.load(shared_data.path("tokenizers", "tiktoken", "r50k_base.tiktoken")).name == "r50k_base"
    assert pickle.loads(pickle.dumps(ours)).name == "cl100k_base"
    ours.save(tmp_path / "mine.fastbpe.json")  # (another file: no longer OpenAI's)
    assert fastbpe.load(tmp_path / "mine.fastbpe.json").name is None
    assert fastbpe.train(TEXT, vocab_size=270, progress=False).name is None


def test_decoding_an_unknown_id_is_caught_as_tiktoken_users_catch_it(cl100k_pair):
    """tiktoken's decoders raise KeyError for an id that is no token; fastbpe's raise an error
    that is a KeyError and a ValueError at once, with a plain message."""
    oracle, ours = cl100k_pair
    for bad in ([1, oracle.n_vocab + 5], [1, 100256]):  # (100256: between the tokens and the special ones)
        calls = {"decode": lambda d: d.decode(bad), "decode_bytes": lambda d: d.decode_bytes(bad),
                 "decode_batch": lambda d: d.decode_batch([[1], bad]),
                 "decode_bytes_batch": lambda d: d.decode_bytes_batch([[1], bad])}
        for name, call in calls.items():
            with pytest.raises(KeyError):
                call(oracle)
            with pytest.raises(fastbpe.UnknownTokenIdError) as caught:
                call(ours)
            assert isinstance(caught.value, KeyError) and isinstance(caught.value, ValueError), name
            assert str(caught.value) == f"token id {bad[1]} is not in the vocabulary", name


def test_tiktoken_token_methods_equal_tiktoken(cl100k_pair, multilingual):
    oracle, ours = cl100k_pair
    ids = oracle.encode(multilingual + " <|endoftext|> end", allowed_special="all")
    assert _splits_a_character(ours, ids)  # (offsets of tokens that begin inside a character are tested)
    assert ours.decode_tokens_bytes(ids) == oracle.decode_tokens_bytes(ids)
    assert ours.decode_tokens_bytes(np.array(ids, dtype=np.uint32)) == oracle.decode_tokens_bytes(ids)
    assert ours.decode_with_offsets(ids) == oracle.decode_with_offsets(ids)
    assert ours.decode_with_offsets([]) == oracle.decode_with_offsets([]) == ("", [])
    for bad in (oracle.n_vocab + 5, 100256):  # (100256: an id between the tokens and the special ones)
        with pytest.raises(KeyError):
            ours.decode_tokens_bytes([1, bad])
        with pytest.raises(KeyError):
            oracle.decode_tokens_bytes([1, bad])
    with pytest.raises(KeyError):  # (tiktoken: an OverflowError)
        ours.decode_tokens_bytes([1, -1])
    with pytest.raises(KeyError):
        ours.decode_tokens_bytes(np.array([1, 2**63], dtype=np.uint64))
    with pytest.raises(TypeError):
        ours.decode_tokens_bytes([1, 2.0])
    for token in ("hello", b" world", "<|endoftext|>", b"<|endoftext|>", "\u00e9", b"\xe9"):
        _answers_as_tiktoken(ours.encode_single_token, oracle.encode_single_token, token)
    with pytest.raises(KeyError):
        ours.encode_single_token("hello world")
    assert ours.special_tokens_set == oracle.special_tokens_set
    assert [ours.is_special_token(i) for i in (0, 100257, 100276)] == [oracle.is_special_token(i)
                                                                        for i in (0, 100257, 100276)]
    assert ours.token_byte_values() == oracle.token_byte_values()


def test_decode_with_offsets_needs_the_bytes_text():
    marked = fastbpe.train(TEXT, vocab_size=300, progress=False, word_end="</w>")
    with pytest.raises(ValueError, match="without word or space markers"):
        marked.decode_with_offsets(marked.encode("the cat"))


def test_token_list_lengths_serves_every_kind_of_token_list():
    """One helper gives the lengths of a vocabulary's tokens: compiled for a list of bytes,
    item by item for a tuple or a list holding other sized items; the merge check of a model
    reads it, so an empty (unused) id named by a merge is refused for any of them."""
    from fastbpe.encode.model import BPEModel
    from fastbpe.encode.vocab import lengths_and_first_bytes, token_list_lengths

    tokens = [bytes([b]) for b in range(256)] + [b"", b"ab"]
    for given in (tokens, tuple(tokens), tokens[:-1] + [bytearray(b"ab")]):
        assert token_list_lengths(given).tolist() == [1] * 256 + [0, 2]
        assert lengths_and_first_bytes(given)[1].tolist()[-2:] == [0, 97]
        with pytest.raises(ValueError, match="merge 1 refers to unknown token id 256"):
            BPEModel(given, [(97, 98), (256, 97)])
