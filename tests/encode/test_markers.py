"""The markers component: word markers, the space marker and Hugging Face's subword markers,
their file fields and decoding."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastbpe import Tokenizer, train
from fastbpe.encode.markers import Markers


@pytest.mark.parametrize("markers", [Markers(), Markers(word_end="</w>"), Markers(word_start="▁"),
                                     Markers("<w>", "</w>"), Markers(space_marker="▁"),
                                     Markers(end_of_word_suffix="</w>"), Markers(continuing_subword_prefix="##"),
                                     Markers(end_of_word_suffix="é", continuing_subword_prefix="##")], ids=repr)
def test_native_fields_read_back_the_same(markers):
    assert Markers.from_native(markers.to_native()) == markers
    assert Markers(**markers.keywords()) == markers


def test_decode_turns_markers_into_spaces():
    assert Markers(word_end="</w>").decode("the</w>cat</w>") == "the cat"
    assert Markers(word_start="▁").decode("▁the▁cat") == "the cat"
    # (the space marker is the decode table's, token by token: a ▁ spelled by byte tokens stays)
    assert Markers(space_marker="▁").decode("▁a▁▁b") == "▁a▁▁b"
    tok = Tokenizer(["▁".encode(), b"a", b"b"] + [f"<0x{b:02X}>".encode() for b in range(256)], [], unit="chars",
                    space_marker="▁", byte_fallback=True)
    assert tok.decode([0, 1, 0, 0, 2]) == "a  b"
    assert tok.decode([1, *(3 + b for b in "▁".encode()), 0, 2]) == "a▁ b"
    ascii_marker = Tokenizer([b"_", b"a"] + [f"<0x{b:02X}>".encode() for b in range(256)], [], unit="chars",
                             space_marker="_", byte_fallback=True)
    assert ascii_marker.decode([1, 0, 1, 2 + ord("_"), 1]) == "a a_a"
    assert Markers().decode(" as is ") == " as is "
    assert Markers(end_of_word_suffix="</w>").decode("lo w</w>er</w>") == "lo w er"


def test_subword_markers_in_the_model_object_of_a_tokenizer_json():
    markers = Markers(end_of_word_suffix="é</w>", continuing_subword_prefix="##")
    model = markers.to_huggingface_model()
    assert model == {"continuing_subword_prefix": "##", "end_of_word_suffix": "Ã©</w>"}  # byte-level text
    assert Markers.from_huggingface(model=model) == markers
    assert Markers.from_huggingface(model={"end_of_word_suffix": None}) == Markers()
    with pytest.raises(ValueError, match="end_of_word_suffix"):
        Markers.from_huggingface(model={"end_of_word_suffix": 3})
    # the prefix stands for nothing when decoded
    assert Markers(continuing_subword_prefix="##").decoded_tokens([b"ab", b"##cd", b"#e"]) == [b"ab", b"cd", b"#e"]


def test_word_markers_have_no_place_in_a_tokenizer_json(tmp_path):
    with pytest.raises(ValueError, match="without word markers"):
        Markers(word_end="</w>").to_huggingface(character_level=False, byte_fallback=False)
    tok = train(text="low lower lowest newer wider " * 20, num_merges=10, unit="chars", word_end="</w>",
                workers=1, progress=False)
    with pytest.raises(ValueError, match="without word markers"):
        tok.to_huggingface(tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("byte_fallback", [True, False])
def test_the_space_marker_maps_to_a_decoder_and_back(byte_fallback):
    decoder = Markers(space_marker="▁").to_huggingface(character_level=True, byte_fallback=byte_fallback)
    assert ({"type": "ByteFallback"} in decoder["decoders"]) == byte_fallback
    assert Markers.from_huggingface(decoder) == Markers(space_marker="▁")
    assert Markers.from_huggingface(Markers().to_huggingface(True, byte_fallback)) == Markers()
    # tokenizers' Metaspace decoder drops every marker of the first token, and is written back as it is
    metaspace = Markers.from_huggingface({"type": "Metaspace", "replacement": "▁"})
    assert metaspace == Markers(space_marker="▁", dummy_prefix="token")
    assert Markers.from_huggingface(metaspace.to_huggingface(True, byte_fallback)) == metaspace
    for never in ({"prepend_scheme": "never"}, {"add_prefix_space": False}):
        assert Markers.from_huggingface({"type": "Metaspace", "replacement": "▁", **never}).dummy_prefix is False


@pytest.mark.parametrize("arguments, error", [(dict(word_end=5), TypeError), (dict(space_marker="ab"), ValueError),
                                              (dict(end_of_word_suffix=""), ValueError),
                                              (dict(continuing_subword_prefix=b"##"), ValueError)])
def test_bad_markers(arguments, error):
    with pytest.raises(error):
        Markers(**arguments)
    with pytest.raises(error):
        Tokenizer([b"a"], [], unit="chars", **arguments)


def test_a_pickle_whose_markers_were_plain_attributes_loads():
    tok = Tokenizer([bytes([b]) for b in range(256)] + [bytes([b]) + b"</w>" for b in range(256)], [],
                    merge_rule="pair", end_of_word_suffix="</w>")
    state = dict(tok.__dict__)
    markers = state.pop("markers")  # the layout before the markers had their own class: "" for none
    state.update(word_start="", word_end="", space_marker="", end_of_word_suffix=markers.end_of_word_suffix,
                 continuing_subword_prefix="")
    old = Tokenizer.__new__(Tokenizer)
    old.__setstate__(state)
    assert old.markers == markers and old.encode("ab c") == tok.encode("ab c")


@pytest.fixture(scope="module")
def marked_tokenizers():
    text = "the cat sat on the mat, and the  dog\n  ran to 12 cats! " * 40
    return [train(text=text, num_merges=30, progress=False, **options)
            for options in (dict(word_start="_"), dict(word_end="</w>"), dict(word_start="_", pattern="cl100k"),
                            dict(unit="chars", word_end="</w>"), dict(unit="chars", word_start="_", word_end="-"))]


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="the catsmo,dgnr12!\n", max_size=40))
def test_word_markers_over_a_split_whose_chunks_carry_their_spaces_decode_to_the_text(marked_tokenizers, text):
    """GPT-2's chunks hold their spaces (" cat"): the markers stand for no space then, and each
    one turned into a space doubled every space of the text."""
    for tok in marked_tokenizers:
        assert tok.decode(tok.encode(text)) == text


@pytest.fixture(scope="module")
def named_specials():
    """Tokenizers with word markers and special tokens whose names hold them, and for each the
    same vocabulary whose special tokens are named without them (``<0>``, ``<1>``...)."""
    text = "the cat sat on the mat and the dog ran to cats " * 20
    names = ["<|im_start|>", "<|im_end|>", "<a</w>b>", "<eos>"]
    pairs = []
    for options in (dict(word_start="_", pattern="whitespace"), dict(word_end="</w>", pattern="whitespace"),
                    dict(word_start="_"), dict(unit="chars", word_start="_", word_end="</w>")):
        tok = train(text=text, num_merges=30, progress=False, workers=1, special_tokens=names, **options)
        fields = tok.to_dict()
        fields["special_tokens"] = {f"<{k}>": tok.special_tokens[name] for k, name in enumerate(names)}
        plain = Tokenizer.from_dict(fields)
        pairs.append((tok, plain, names))
    return pairs


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 10**6), max_size=30), st.sampled_from(["list", "array", "iterator"]))
def test_word_markers_leave_the_names_of_special_tokens_whole(named_specials, picks, given_as):
    """A word marker in a special token's name is part of the name, not a space (``word_start="_"``
    decodes ``<|im_start|>`` as itself): the ids decode as those of a vocabulary whose special
    tokens hold no marker, each name put back in its place."""
    import numpy as np

    for tok, plain, names in named_specials:
        ids = [i % (tok.n_vocab) for i in picks]
        expected = plain.decode(ids)
        for k, name in enumerate(names):
            expected = expected.replace(f"<{k}>", name)
        given = {"list": ids, "array": np.array(ids, dtype=np.int32), "iterator": iter(ids)}[given_as]
        assert tok.decode(given) == expected
        assert tok.decode(ids, skip_special_tokens=True) == plain.decode(ids, skip_special_tokens=True)
        assert tok.decode_batch([ids, ids[::-1]]) == [tok.decode(ids), tok.decode(ids[::-1])]
    tok = named_specials[0][0]
    with pytest.raises(TypeError):
        tok.decode([tok.special_tokens["<|im_start|>"], 1.0])


def test_a_word_marker_in_the_corpus_is_warned_of(tmp_path):
    """Decoding cannot tell a marker from the same text in the corpus (``snake_case`` under
    ``word_start="_"``): training on such a corpus warns, naming a chunk that holds it."""
    with pytest.warns(UserWarning, match=r"word_start='_' is in the corpus's own text \(in 'snake_case'\)"):
        tok = train(text="a snake_case b " * 5, num_merges=5, unit="chars", pattern="whitespace", word_start="_",
                    workers=1, progress=False, min_frequency=1)
    assert tok.decode(tok.encode("snake_case")) == "snake case"
    with pytest.warns(UserWarning, match=r"word_end='</w>'.*\(in 'x</w>'\)"):
        train(text="a x</w> b", num_merges=2, word_end="</w>", pattern="whitespace", workers=1, progress=False,
              min_frequency=1)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # a marker the text lacks, and one whose characters meet only across two chunks ("xa", "b")
        train(text="the cat sat " * 5, num_merges=5, unit="chars", pattern="whitespace", word_start="_", workers=1,
              progress=False)
        train(text="xa b xa b", num_merges=2, unit="chars", pattern="whitespace", word_end="ab", workers=1,
              progress=False, min_frequency=1)


def test_dummy_prefix_says_whether_the_first_space_marker_is_dropped():
    """A space marker put before the text (SentencePiece's add_dummy_prefix) is dropped when
    decoding; a vocabulary that puts none there (Gemma's) decodes every marker to a space."""
    def spaced(**options):
        return Tokenizer([t.encode() for t in ("▁", "a", "b", "▁a", "▁b")], [], unit="chars", space_marker="▁",
                         **options)

    assert spaced().decode([3, 4]) == "a b" and spaced().decode([0, 3]) == " a"
    assert spaced(dummy_prefix=False).decode([3, 4]) == " a b"
    assert Markers.from_native(Markers(space_marker="▁", dummy_prefix=False).to_native()).dummy_prefix is False
    assert "dummy_prefix" not in Markers(space_marker="▁").to_native()  # (files as before)
    with pytest.raises(ValueError, match="needs a space_marker"):
        Markers(dummy_prefix=False)
    with pytest.raises(TypeError, match="True, False, 'piece', 'pieces' or 'token'"):
        Markers(space_marker="▁", dummy_prefix=0)
    # SentencePiece's rules by pieces read the ids: the marker of the first piece with text, and
    # for "pieces" those of the pieces of the marker alone before it; fastbpe's file keeps the rule
    assert spaced(dummy_prefix="piece").decode([0, 3]) == " a" and spaced(dummy_prefix="pieces").decode([0, 3]) == "a"
    # and tokenizers' Metaspace decoder, every marker of the first token
    assert spaced(dummy_prefix="token").decode([0, 3]) == " a" and spaced(dummy_prefix="token").decode([3, 4]) == "a b"
    for rule in ("piece", "pieces", "token"):
        assert spaced(dummy_prefix=rule).decode([3, 4]) == "a b" and spaced(dummy_prefix=rule).decode([1, 4]) == "a b"
        assert Markers.from_native(Markers(space_marker="▁", dummy_prefix=rule).to_native()).dummy_prefix == rule
        with pytest.raises(ValueError, match="needs a space_marker"):
            Markers(dummy_prefix=rule)
    with pytest.raises(ValueError, match="'piece', 'pieces' or 'token'"):
        Markers(space_marker="▁", dummy_prefix="sentencepiece")
    # a lone surrogate as the marker (what a file's JSON can hold) still makes markers
    assert Markers(space_marker="\ud800", dummy_prefix="piece").space_marker_utf8 == b"\xed\xa0\x80"
