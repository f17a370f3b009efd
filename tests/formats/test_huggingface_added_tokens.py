"""Added tokens with Hugging Face's matching options (``lstrip``, ``rstrip``, ``single_word``,
``normalized``; special or not, inside ``model.vocab`` or not) and ``Replace`` normaliser
regexes, in tokenizer.json files built here: ids and offsets checked against ``tokenizers``
itself on the multilingual table and on generated text full of spaces, newlines and added
tokens next to words."""
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastbpe import Tokenizer

from tests.formats.hf_files import trained_by_tokenizers

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (test extra) is the reference for tokenizer.json")

BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


@pytest.fixture(scope="module")
def rows(shared_data):
    return shared_data.rows("parallel_multi.tsv.gz", 200)


@pytest.fixture(scope="module")
def base(rows):
    """A byte-level BPE tokenizer.json (as a dict) trained by tokenizers on the table."""
    return trained_by_tokenizers(rows, 800)


def _added(content, i, special=False, normalized=False, **flags):
    return {"id": i, "content": content, "single_word": flags.get("single_word", False),
            "lstrip": flags.get("lstrip", False), "rstrip": flags.get("rstrip", False),
            "normalized": normalized, "special": special}


def _with_added(base, normalizer=None):
    """The base file with added tokens using every option: outside the vocabulary (new ids)
    and one inside it (in model.vocab too, as GPT-2's <|endoftext|> is)."""
    data = json.loads(json.dumps(base))
    vocab = data["model"]["vocab"]
    n = len(vocab)
    vocab["<in>"] = n
    made = next(t for t in ("ing", "and", "ent", "the") if t in vocab)  # a token the merges make
    # ids as tokenizers gives them (after the vocabulary, in order), which it uses over the file's
    data["added_tokens"] = [
        _added("<in>", n, normalized=True, single_word=True),
        _added("<mask>", n + 1, special=True, lstrip=True, rstrip=True),
        _added("<w>", n + 2, single_word=True),
        _added("<LS>", n + 3, lstrip=True, normalized=True),
        _added("<rs>", n + 4, special=True, rstrip=True, single_word=True, normalized=True),
        _added("ab", n + 5),
        _added("xabc", n + 6, normalized=True),
        _added("<|eot|>", n + 7, special=True),
        # in model.vocab and made by the merges too: BPE still makes it inside words
        _added(made, vocab[made], normalized=True, single_word=True),
    ]
    data["normalizer"] = normalizer
    return data


def _load_both(data, tmp_path, name="tokenizer.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    tok, hf = Tokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    assert tok.special_tokens == {t.content: i for i, t in hf.get_added_tokens_decoder().items()}
    return tok, hf


NEAR_TOKENS = ["<mask>", "<w>", "<LS>", "<ls>", "<rs>", "<RS>", "ab", "xabc", "XABC", "<in>", "<IN>", "<|eot|>",
               "ing", "ING", "thing",
               " ", "  ", "\n", "\t", "\r\n", "\u2000", "\u3000", "a", "_", "é", "Ω", "9", "-", "你好", "word"]


def _check(tok, hf, text, offsets=True):
    expected = hf.encode(text, add_special_tokens=False)
    assert tok.encode(text, allowed_special="all") == expected.ids, repr(text)
    if offsets:
        ids, spans = tok.encode_with_offsets(text, allowed_special="all")
        assert ids == expected.ids
        assert [tuple(s) for s in spans.tolist()] == expected.offsets, repr(text)


def _spliced(rows):
    """Rows of the table with added tokens put next to words, and in whitespace runs."""
    out = []
    for k, row in enumerate(rows):
        words = row.split(" ")
        token = NEAR_TOKENS[k % 12]
        at = k % max(len(words), 1)
        out.append(" ".join(words[:at] + [token + words[at] if k % 3 == 0 else token] + words[at:]))
        out.append(row.replace(" ", f"  {token}\n", 1))
    return out


def test_options_without_normalizer_ids_and_offsets(base, rows, tmp_path):
    """lstrip/rstrip take in whitespace (and the token's offsets span it), single_word skips
    matches inside words, tokens matched in the text as given are found before normalized ones."""
    tok, hf = _load_both(_with_added(base), tmp_path)
    assert tok.special_token_options["<mask>"] == {"lstrip": True, "rstrip": True}
    for text in [*rows[:100], *_spliced(rows[:100]), "", " <mask> ", "a  <mask>\n\nb", "<w>a <w> _<w> é<w>",
                 "xabc", "<rs>  x<rs> <rs>", "\t<LS>\t<LS>", "  <mask><mask>  ", "<in>x <in> x<in>",
                 "ing thing ing\nbring ing"]:
        _check(tok, hf, text)


def test_options_with_a_normalizer(base, rows, tmp_path):
    """normalized=true tokens are matched in the lowercased pieces, their own text lowercased."""
    normalizer = {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]}
    tok, hf = _load_both(_with_added(base, normalizer), tmp_path)
    for text in [*rows[:100], *_spliced(rows[:100]), "XABC <RS>", " <In> <LS>  <IN>\n<ls>", "Ｘabc"]:
        _check(tok, hf, text, offsets=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(NEAR_TOKENS), max_size=14))
def test_generated_text_with_and_without_normalizer(base, tmp_path_factory, parts):
    text = "".join(parts)
    tmp = tmp_path_factory.mktemp("added")
    plain, hf_plain = _load_both(_with_added(base), tmp, "plain.json")
    _check(plain, hf_plain, text)
    lower, hf_lower = _load_both(_with_added(base, {"type": "Lowercase"}), tmp, "lower.json")
    _check(lower, hf_lower, text, offsets=False)


TRIMMING = {  # post-processors that trim offsets in tokenizers, special tokens added or not
    "byte-level": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    "byte-level-prefix": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "roberta": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True,
                "add_prefix_space": True},
    "sequence": {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {}}]},
}


@pytest.mark.parametrize("kind", sorted(TRIMMING))
def test_offsets_trimmed_by_the_post_processor_as_tokenizers_trims_them(base, rows, tmp_path, kind):
    """ByteLevel's and RoBERTa's trim_offsets: a token's span leaves out the spaces its text
    begins and ends with (fastbpe's spanned them: [(0, 5), (5, 11)] for 'hello world', where
    tokenizers gives (6, 11)), with added tokens beside words and in whitespace runs."""
    data = _with_added(base)
    data["post_processor"] = TRIMMING[kind]
    tok, hf = _load_both(data, tmp_path)
    for text in [*rows[:60], *_spliced(rows[:60]), "hello world", "  two  spaces ", " ", "   ", "a  <mask>  b",
                 "\n x \n", "x ", " x", " <LS> <rs>  x"]:
        _check(tok, hf, text)


SPACE_RUNS = {"type": "Replace", "pattern": {"Regex": " +"}, "content": " "}


def _offsets_or_refused(tok, hf, text) -> bool:
    """Offsets equal tokenizers', or the normaliser is named as the reason there are none;
    returns whether there were offsets."""
    expected = hf.encode(text, add_special_tokens=False)
    try:
        ids, spans = tok.encode_with_offsets(text, allowed_special="all")
    except ValueError as exc:
        assert "changes the text" in str(exc), repr(text)
        return False
    assert ids == expected.ids
    assert [tuple(s) for s in spans.tolist()] == expected.offsets, repr(text)
    return True


def test_offsets_through_a_normaliser_that_shortens_the_text_are_exact_or_refused(base, tmp_path):
    """A normaliser that makes a run of spaces one: a piece of the text it leaves alone has
    tokenizers' offsets, one it shortens is refused (its characters no longer line up with the
    text's), including a trailing run cut out as a piece of its own beside an added token."""
    tok, hf = _load_both(_with_added(base, SPACE_RUNS), tmp_path)
    given = ["a b", "<mask> a", "xabc b", "a <LS>"]
    assert all(_offsets_or_refused(tok, hf, text) for text in given)
    shortened = ["a  ", "  ", "a  b", "<mask>a  ", "xabc  ", "  <LS>", "a  <|eot|>"]
    assert not any(_offsets_or_refused(tok, hf, text) for text in shortened)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(NEAR_TOKENS), max_size=14))
def test_offsets_through_normalisers_that_change_the_text_are_exact_or_refused(base, tmp_path_factory, parts):
    text = "".join(parts)
    tmp = tmp_path_factory.mktemp("changed")
    for name, normalizer in [("spaces.json", SPACE_RUNS), ("lower.json", {"type": "Lowercase"})]:
        tok, hf = _load_both(_with_added(base, normalizer), tmp, name)
        _offsets_or_refused(tok, hf, text)


SPECIAL_NAMES = ("<mask>", "<rs>", "<|eot|>")  # the added tokens of _with_added that are special


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(NEAR_TOKENS), max_size=14))
def test_added_tokens_that_are_not_special_are_matched_under_every_policy(base, tmp_path_factory, parts):
    """tokenizers matches an added token that is not special whatever the caller asks; so does
    every encoding call here, its default and encode_ordinary included. A special one is still
    refused by default."""
    text = "".join(parts)
    tok, hf = _load_both(_with_added(base), tmp_path_factory.mktemp("always"))
    assert tok.specials.always == {entry["content"] for entry in _with_added(base)["added_tokens"]
                                   if not entry["special"]}
    if any(name in text for name in SPECIAL_NAMES):
        with pytest.raises(ValueError, match="which is disallowed"):
            tok.encode(text)
        return
    expected = hf.encode(text, add_special_tokens=False).ids
    assert tok.encode(text) == expected
    assert tok.encode(text, disallowed_special=()) == tok.encode_ordinary(text) == expected
    assert tok.encode_to_numpy(text).tolist() == expected
    assert tok.encode_batch([text] * 70) == [expected] * 70  # (past the small-batch path)
    assert tok.encode_ordinary_batch([text, text], as_numpy=True)[1].tolist() == expected
    assert tok.encode_with_offsets(text)[0] == expected
    pieces = tok.tokens(text)  # (an added token by its name; "ing" inside a word is BPE's, as bytes)
    assert len(pieces) == len(expected)
    assert all(tok.special_tokens[piece] == i for piece, i in zip(pieces, expected) if isinstance(piece, str))


def test_an_added_token_that_is_not_special_is_never_refused(base, tmp_path):
    """tiktoken's idiom of refusing every special token passes over it; tokens() shows it whole."""
    tok, hf = _load_both(_with_added(base), tmp_path)
    text = "<w> x <|eot|>"
    expected = hf.encode(text, add_special_tokens=False)
    for policy in ({"disallowed_special": {"<w>"}}, {"allowed_special": {"<w>"}, "disallowed_special": ()}):
        assert tok.encode("<w> x", **policy) == expected.ids[:len(tok.encode("<w> x"))]
    with pytest.raises(ValueError, match="<|eot|>"):
        tok.encode(text, disallowed_special=tok.special_tokens_set)
    assert tok.encode(text, allowed_special="all") == expected.ids
    pieces = tok.tokens("<w> x")
    assert pieces[0] == "<w>" and len(pieces) == len(tok.encode("<w> x"))


def test_a_special_token_inside_one_matched_always_is_not_refused():
    """tokenizers matches the longer added token where two start at one place; the special one
    inside it is not in the text as a token, so the default policy does not refuse it."""
    tok = Tokenizer([bytes([b]) for b in range(256)], [], special_tokens={"<a>": 256, "<a>b": 257},
                    special_token_options={"<a>b": {"always": True}})
    assert tok.encode("x<a>b") == [ord("x"), 257]
    with pytest.raises(ValueError, match="<a>"):
        tok.encode("x<a>c")


def test_options_survive_native_and_tokenizer_json_files(base, rows, tmp_path):
    tok, hf = _load_both(_with_added(base, {"type": "Lowercase"}), tmp_path)
    tok.save(tmp_path / "native.json")
    again = Tokenizer.load(tmp_path / "native.json")
    assert again.special_token_options == tok.special_token_options and again == tok
    tok.to_huggingface(tmp_path / "again.json")
    special = {entry["content"]: entry["special"] for entry in _with_added(base)["added_tokens"]}
    assert {entry["content"]: entry["special"]
            for entry in json.loads((tmp_path / "again.json").read_text())["added_tokens"]} == special
    hf_again = tokenizers.Tokenizer.from_file(str(tmp_path / "again.json"))
    for text in [*_spliced(rows[:40]), " <In> <LS>  <IN>\n<ls> <RS>x <rs>"]:
        expected = hf.encode(text, add_special_tokens=False).ids
        assert again.encode(text, allowed_special="all") == expected
        assert hf_again.encode(text, add_special_tokens=False).ids == expected


def test_tokens_without_options_keep_the_exact_match(base, tmp_path):
    """A file whose added tokens have no options needs no matching options at all."""
    data = json.loads(json.dumps(base))
    data["added_tokens"] = [_added("<|eot|>", len(data["model"]["vocab"]), special=True)]
    tok, _ = _load_both(data, tmp_path)
    assert tok.special_token_options == {} and tok._added_splitter is None


@pytest.mark.parametrize("options, error", [
    ({"<x>": {"lstrip": 1}}, "true or false"),
    ({"<x>": {"strip": True}}, "mapping of"),
    ({"<y>": {"lstrip": True}}, "not a special token"),
])
def test_bad_options_are_refused(options, error):
    with pytest.raises(ValueError, match=error):
        Tokenizer([bytes([b]) for b in range(256)], [], special_tokens={"<x>": 256}, special_token_options=options)


# (patterns that never match empty text: tokenizers' ByteLevel doubles what an empty match at
# the start of a piece inserts)
REPLACE_PATTERNS = ["^\\s+", "\\s+$", "^[^\\n]", "[^\\n]$", "^\\p{L}+", "\\n$", "\\s\\Z", "\\s\\z", "(?m)a.b",
                    "(?m:\\t.)", "[\\^^a]", "\\A\\s"]


# Oniguruma's word characters: UTS #18's but the zero-width joiners, and outside a class ¹²³¼½¾
# (a Replace of an empty match, \b alone, is a tokenizers bug of its own: not tried)
WORD_PATTERNS = ["\\w+", "\\W", "[\\w-]+", "[a\\W]", "x\\b", "\\B.", "\\bx\\b", "\\w\\B\\w"]


@pytest.mark.parametrize("pattern", WORD_PATTERNS)
def test_replace_regex_word_classes_as_tokenizers(base, rows, tmp_path, pattern):
    data = json.loads(json.dumps(base))
    data["normalizer"] = {"type": "Replace", "pattern": {"Regex": pattern}, "content": "#"}
    tok, hf = _load_both(data, tmp_path)
    for text in [*rows[:40], "a\u200db x² ½ Ⅻ _ x", "x\u0301y ٣ -x- \u200c", "²x ½ x xⒶ x৴ x\u200d"]:
        assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids, repr(text)
    tok.to_huggingface(tmp_path / "back.json")  # (written as the regex module reads it, read back the same)
    back = tokenizers.Tokenizer.from_file(str(tmp_path / "back.json"))
    for text in ["a\u200db x² ½ Ⅻ _ x", rows[0]]:
        assert back.encode(text, add_special_tokens=False).ids == tok.encode(text), repr(text)


@pytest.mark.parametrize("pattern", REPLACE_PATTERNS)
def test_replace_regex_anchors_as_tokenizers(base, rows, tmp_path, pattern):
    """Replace regexes mean what Oniguruma (Ruby syntax) makes of them: ^ and $ at every line,
    \\Z also before a final newline, (?m) lets . match a newline."""
    data = json.loads(json.dumps(base))
    data["normalizer"] = {"type": "Replace", "pattern": {"Regex": pattern}, "content": "#"}
    tok, hf = _load_both(data, tmp_path)
    texts = ["\n".join(rows[k:k + 3]) + "\n" * (k % 3) for k in range(0, 60, 3)]
    for text in [*texts, "", "\n", "a\n\n", " a \n b ", "a\r\nb", "^a\n^"]:
        assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids, repr(text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["<a>", "<b>", "<c>", "<d>", "the", "and", "<in>", "<far>"]),
                          st.integers(-3, 12), st.booleans()), max_size=6, unique_by=lambda entry: entry[0]))
def test_added_token_ids_are_the_ones_tokenizers_gives(base, tmp_path, entries):
    """tokenizers ignores an added token's listed id as it loads a file: a vocab entry keeps its
    vocab id, the others take the vocabulary's size, one more, and so on. Listed ids here are
    anything near the vocabulary's end, some taken, some repeated; two added tokens are in
    model.vocab, one of them past a gap in its ids."""
    import warnings

    data = json.loads(json.dumps(base))
    vocab = data["model"]["vocab"]
    n = len(vocab)
    vocab["<in>"] = n  # added tokens kept in model.vocab (as GPT-2's <|endoftext|> is)
    vocab["<far>"] = n + 9  # (beyond the ids the four new tokens can take: n + 2 .. n + 5)
    data["added_tokens"] = [_added(content, vocab.get(content, n + 1) + shift if shift > 6 else n + shift, special)
                            for content, shift, special in entries]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a listed id tokenizers does not use is warned about)
        tok, hf = _load_both(data, tmp_path)
    _check(tok, hf, " ".join(content for content, _, _ in entries) + " the end<a>and<in>", offsets=False)


def test_a_renumbered_added_token_is_warned_about_once_where_it_is_loaded(base, tmp_path):
    data = json.loads(json.dumps(base))
    data["added_tokens"] = [_added("<x>", len(data["model"]["vocab"]) + 7, special=True)]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.warns(UserWarning, match=r"'<x>' is listed with id \d+; tokenizers gives it") as caught:
        Tokenizer.from_huggingface(path)
    assert len(caught) == 1 and caught[0].filename == __file__


@pytest.mark.parametrize("kind", ["byte", "merged"])
def test_an_added_token_that_is_other_bytes_bpe_needs_is_refused(base, tmp_path, kind):
    """"é" as a vocab key is the byte 0xe9, "Ġthe" the bytes " the": tokenizers gives their id to
    the added text and to those bytes alike, which one id per byte string cannot hold."""
    data = json.loads(json.dumps(base))
    merged = [left + right for left, right in data["model"]["merges"] if left.startswith("Ġ")]
    content = "é" if kind == "byte" else merged[0]
    assert content in data["model"]["vocab"]
    data["added_tokens"] = [_added(content, data["model"]["vocab"][content], special=True)]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=f"added token '{content}' is also vocab entry .*one byte string per id"):
        Tokenizer.from_huggingface(path)
