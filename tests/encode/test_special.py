"""Special tokens: reserved ids, tiktoken's allowed/disallowed semantics, a chat template, the
component's file fields and old pickles."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fastbpe
from fastbpe import Tokenizer
from fastbpe.encode.special import SpecialTokens


SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT = "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def tok():
    corpus = ("system user assistant You are terse. Hi there! <|im_start|> <|endoftext|> " * 40
              + "the quick brown fox " * 40)
    return fastbpe.train(corpus, vocab_size=400, progress=False, special_tokens=SPECIALS)


def test_special_ids_are_reserved(tok):
    ids = tok.special_tokens
    assert sorted(ids.values()) == list(range(len(tok.token_bytes), len(tok.token_bytes) + 3))
    # Merges never produce them: no merged token contains a special token's text.
    assert not any(s.encode() in t for s in SPECIALS for t in tok.token_bytes)


def test_literal_special_token_is_an_error_by_default(tok):
    with pytest.raises(ValueError, match=r"special token '<\|im_start\|>'.*allowed_special"):
        tok.encode(CHAT)
    with pytest.raises(ValueError, match="disallowed"):
        tok.encode_to_numpy("x <|endoftext|>")
    with pytest.raises(ValueError, match="disallowed"):
        tok.encode_batch(["fine", "bad <|im_end|>"])


def test_chat_template(tok):
    ids = tok.encode(CHAT, allowed_special="all")
    start, end = tok.special_tokens["<|im_start|>"], tok.special_tokens["<|im_end|>"]
    assert ids.count(start) == 3 and ids.count(end) == 2
    assert ids[0] == start
    assert tok.decode(ids) == CHAT
    # The text between markers encodes exactly as on its own.
    first_end = ids.index(end)
    assert ids[1:first_end] == tok.encode("system\nYou are terse.")
    assert tok.encode(CHAT, allowed_special=set(SPECIALS)) == ids


def test_allowed_subset_and_disallowed_choices(tok):
    text = "a<|im_start|>b<|endoftext|>"
    with pytest.raises(ValueError, match="endoftext"):
        tok.encode(text, allowed_special={"<|im_start|>"})
    ids = tok.encode(text, allowed_special={"<|im_start|>"}, disallowed_special=())
    assert tok.special_tokens["<|im_start|>"] in ids
    assert tok.special_tokens["<|endoftext|>"] not in ids
    assert tok.decode(ids) == text
    # as in tiktoken, a name the vocabulary lacks allows nothing (one set serves several
    # vocabularies), and disallows that text
    assert tok.encode("a<|nope|>", allowed_special={"<|nope|>"}) == tok.encode_ordinary("a<|nope|>")
    with pytest.raises(ValueError, match="nope"):
        tok.encode("a<|nope|>", disallowed_special={"<|nope|>"})


def test_encode_ordinary_ignores_special_tokens(tok):
    ids = tok.encode_ordinary(CHAT)
    assert not set(ids) & set(tok.special_tokens.values())
    assert tok.decode(ids) == CHAT
    assert ids == tok.encode(CHAT, disallowed_special=())


@given(st.lists(st.sampled_from(SPECIALS + ["a", " b", "\n", "<|", "|>", "im_", "é"]), max_size=20))
def test_special_round_trip(tok, parts):
    text = "".join(parts)
    ids = tok.encode(text, allowed_special="all")
    assert tok.decode(ids) == text
    ordinary = tok.encode_ordinary(text)
    assert not set(ordinary) & set(tok.special_tokens.values())


def test_special_tokens_survive_save_and_load(tok, tmp_path):
    tok.save(tmp_path / "t.json")
    again = Tokenizer.load(tmp_path / "t.json")
    assert again.special_tokens == tok.special_tokens
    assert again.encode(CHAT, allowed_special="all") == tok.encode(CHAT, allowed_special="all")


def test_bad_special_token_tables():
    bytes_ = [bytes([b]) for b in range(256)]
    with pytest.raises(ValueError, match="mergeable token"):
        Tokenizer(bytes_, [], special_tokens={"<s>": 3})
    with pytest.raises(ValueError, match="share an id"):
        Tokenizer(bytes_, [], special_tokens={"<s>": 300, "</s>": 300})
    with pytest.raises(ValueError, match="invalid id"):
        Tokenizer(bytes_, [], special_tokens={"<s>": -4})


def test_same_as_tiktoken_with_cl100k(shared_data):
    tiktoken = pytest.importorskip("tiktoken")
    from fastbpe import openai
    from fastbpe.formats import OPENAI_ENCODINGS, read_tiktoken_ranks
    from fastbpe.split.patterns import source as pattern_source

    path = shared_data.path("tokenizers", "tiktoken", "cl100k_base.tiktoken")
    ours = openai("cl100k_base", path)
    pattern, specials = OPENAI_ENCODINGS["cl100k_base"]
    enc = tiktoken.Encoding("cl100k_base", pat_str=pattern_source(pattern),
                            mergeable_ranks=read_tiktoken_ranks(path), special_tokens=specials)
    text = "Hello<|endoftext|> world <|fim_prefix|>x<|endofprompt|>"
    assert ours.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert ours.encode(text, allowed_special={"<|endoftext|>"}, disallowed_special=()) == \
        enc.encode(text, allowed_special={"<|endoftext|>"}, disallowed_special=())
    assert ours.encode_ordinary(text) == enc.encode_ordinary(text)
    with pytest.raises(ValueError):
        enc.encode(text)
    with pytest.raises(ValueError):
        ours.encode(text)
    assert ours.decode(ours.encode(text, allowed_special="all")) == text
    assert np.array_equal(ours.encode_to_numpy("hello world"), np.array([15339, 1917], dtype=np.uint32))


def test_special_tokens_on_the_python_path():
    """Character-level tokenizers encode in Python: same special-token rules."""
    tok = fastbpe.train("low lower lowest " * 20, num_merges=10, unit="chars", pattern="whitespace",
                        word_start="_", progress=False, min_frequency=1, special_tokens=["<eos>"])
    with pytest.raises(ValueError, match="disallowed"):
        tok.encode("low <eos> lower")
    ids = tok.encode("low <eos> lower", allowed_special="all")
    assert ids.count(tok.special_tokens["<eos>"]) == 1
    assert ids == tok.encode("low") + [tok.special_tokens["<eos>"]] + tok.encode("lower")


def test_one_string_is_not_a_list_of_special_tokens():
    bytes_ = [bytes([b]) for b in range(256)]
    # a str is a sequence of characters: it made one special token per character
    with pytest.raises(TypeError, match="special_tokens"):
        Tokenizer(bytes_, [], special_tokens="<|endoftext|>")
    with pytest.raises(TypeError, match="special_tokens"):
        Tokenizer(bytes_, [], special_tokens=b"<s>")
    with pytest.raises(ValueError, match="twice"):
        Tokenizer(bytes_, [], special_tokens=["<s>", "<s>"])
    assert Tokenizer(bytes_, [], special_tokens=("<s>",)).special_tokens == {"<s>": 256}
    for not_names in (None, 7):  # was "'NoneType' object is not iterable", naming no argument
        with pytest.raises(TypeError, match="special_tokens must be a list of names or a name -> id mapping"):
            Tokenizer(bytes_, [], special_tokens=not_names)


@pytest.mark.parametrize("argument", ["allowed_special", "disallowed_special"])
@pytest.mark.parametrize("value", ["<s>", "al", 5])
def test_allowed_and_disallowed_special_are_all_or_a_collection(argument, value):
    """A str other than "all" was read as a set of one-character names ("<s>" as "<", "s", ">")."""
    tok = Tokenizer([bytes([b]) for b in range(256)], [], special_tokens=["<s>"])
    with pytest.raises(TypeError, match=f'{argument} must be "all" or a collection'):
        tok.encode("a <s>", **{argument: value})
    assert tok.encode("a <s>", allowed_special={"<s>"}) == [97, 32, 256]
    assert tok.encode("a <s>", disallowed_special=()) == [97, 32, 60, 115, 62]


# ---- the component: ids and matching options, their file fields, old pickles ----------------------

BYTES = [bytes([b]) for b in range(256)]


@pytest.mark.parametrize("specials", [SpecialTokens(), SpecialTokens({"<s>": 300}),
                                      SpecialTokens({"<s>": 256, "<mask>": 257}, {"<mask>": {"lstrip": True}}),
                                      SpecialTokens({"<a>": 5, "<b>": 3}, {"<a>": {"normalized": True,
                                                                                  "single_word": True}})], ids=repr)
def test_file_fields_read_back_the_same(specials):
    assert SpecialTokens.from_native(specials.to_native()) == specials
    assert SpecialTokens.from_huggingface(specials.to_huggingface(), "t.json") == specials
    keywords = specials.keywords()
    assert SpecialTokens(keywords["special_tokens"], keywords["special_token_options"]) == specials
    assert [entry["id"] for entry in specials.to_huggingface()] == sorted(specials.ids.values())


def test_options_are_checked_and_trimmed():
    # off options are dropped; without a normaliser, a normalized that all tokens share changes nothing
    assert SpecialTokens({"<m>": 3}, {"<m>": {"rstrip": False, "normalized": True}}, has_normalizer=False).options == {}
    assert SpecialTokens({"<m>": 3}, {"<m>": {"normalized": True}}).options == {"<m>": {"normalized": True}}
    with pytest.raises(ValueError, match="not a special token"):
        SpecialTokens({"<m>": 3}, {"<n>": {"lstrip": True}})
    with pytest.raises(ValueError, match="listed twice"):
        SpecialTokens.from_huggingface([{"id": 1, "content": "<m>"}, {"id": 2, "content": "<m>"}], "t.json")
    # a non-special added token is matched in normalised text by default (tokenizers' rule), and always
    assert SpecialTokens.from_huggingface([{"id": 1, "content": "<m>"}], "t.json").options == \
        {"<m>": {"normalized": True, "always": True}}
    with pytest.raises(ValueError, match="special must be true or false"):
        SpecialTokens.from_huggingface([{"id": 1, "content": "<m>", "special": "yes"}], "t.json")


def test_tokenizer_attributes_read_the_component():
    tok = Tokenizer(BYTES, [], special_tokens={"<mask>": 256}, special_token_options={"<mask>": {"lstrip": True}})
    assert tok.special_tokens is tok.specials.ids and tok.special_token_options is tok.specials.options
    with pytest.raises(AttributeError):
        tok.special_tokens = {}
    assert tok.encode("a <mask>", allowed_special="all") == [ord("a"), 256]


def test_a_pickle_whose_special_tokens_were_plain_attributes_loads():
    tok = Tokenizer(BYTES, [], special_tokens={"<mask>": 256}, special_token_options={"<mask>": {"lstrip": True}})
    state = dict(tok.__dict__)
    specials = state.pop("specials")  # the layout before the special tokens had their own class
    state.update(special_tokens=dict(specials.ids), special_token_options=dict(specials.options))
    old = Tokenizer.__new__(Tokenizer)
    old.__setstate__(state)
    assert old.specials == specials and old == tok
    assert old.encode("a <mask>", allowed_special="all") == tok.encode("a <mask>", allowed_special="all")
    state = dict(tok.__dict__)
    state.pop("specials")
    state["special_tokens"] = {}  # older still: no options at all
    old.__setstate__(state)
    assert old.special_token_options == {} and old._added_splitter is None
