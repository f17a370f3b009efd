"""The compiled reader of a tokenizer.json's vocabulary and merges against the json module.

``huggingface.read(path)`` reads a plain byte-level file's ``model.vocab`` and ``model.merges``
straight from its bytes; every other file goes to the json module. Whatever the file, the
result (or the ValueError) must be the one of parsing it with the json module first."""
import json

import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import fastbpe
from fastbpe.fileio import read_json
from fastbpe.formats import huggingface
from fastbpe.formats.bytelevel import code_point_bytes
from fastbpe._core.encode import scan_bpe_json

from tests.formats.readers import damaged, outcome


@pytest.fixture(scope="module")
def small_file():
    """A small byte-level tokenizer.json as a dict, merges written as [a, b] lists."""
    tok = fastbpe.train("the cat sat on the mat; \"quotes\" \\ back/slash é " * 20, vocab_size=300,
                        progress=False, special_tokens=["<|endoftext|>"])
    data = json.loads(huggingface_json(tok))
    assert data["model"]["merges"] and isinstance(data["model"]["merges"][0], list)
    return data


@pytest.fixture(scope="module")
def chars_file():
    """A small character-level tokenizer.json as a dict (Llama 2's layout: byte fallback, the
    ``<0xNN>`` tokens, ``▁`` for spaces), merges written as [a, b] lists."""
    from fastbpe.split.splitter import WHOLE_PIECE

    text = "the cat sat on the mat; \"quotes\" \\ back/slash é 😀 " * 20
    base = fastbpe.train(text=text.replace(" ", "▁"), num_merges=60, unit="chars", pattern=r"(?s:.+)",
                         progress=False, workers=1, min_frequency=1)
    tokens = [b""] + [f"<0x{b:02X}>".encode() for b in range(256)] + list(base.token_bytes)
    merges = [(a + 257, b + 257) for a, b in base.merge_ids.tolist()]
    spaces = [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]
    tok = fastbpe.Tokenizer(tokens, merges, unit="chars", pattern=WHOLE_PIECE, merge_rule="pair", byte_fallback=True,
                            special_tokens={"<unk>": 0}, normalizer=spaces)
    data = json.loads(huggingface_json(tok))
    assert data["model"]["byte_fallback"] and isinstance(data["model"]["merges"][0], list)
    return data


@pytest.fixture(params=["bytes", "chars"])
def a_file(request, small_file, chars_file):
    """Each small file in turn: byte-level, and character-level."""
    return small_file if request.param == "bytes" else chars_file


def huggingface_json(tok) -> str:
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tokenizer.json"
        tok.to_huggingface(path)
        return path.read_text(encoding="utf-8")


def both(path):
    """The compiled reader's outcome and the json module's, for one file."""
    fast = outcome(lambda: huggingface.read(path))
    reference = outcome(lambda: huggingface.read(path, read_json(path, "Hugging Face tokenizer.json")))
    return fast, reference


def scanned(path, characters: bool = False) -> bool:
    return huggingface._scan_model(path.read_bytes(), characters) is not None


def test_a_plain_file_is_read_by_the_compiled_reader_as_json_reads_it(tmp_path, small_file):
    path = tmp_path / "tokenizer.json"
    for indent in (None, 2):
        path.write_text(json.dumps(small_file, indent=indent, ensure_ascii=False), encoding="utf-8")
        assert scanned(path)
        fast, reference = both(path)
        assert fast == reference and fast[0] == "ok"


def test_merges_as_strings_and_as_lists(tmp_path, small_file):
    path = tmp_path / "tokenizer.json"
    results = []
    for as_strings in (False, True):
        data = json.loads(json.dumps(small_file))
        if as_strings:
            data["model"]["merges"] = [f"{a} {b}" for a, b in data["model"]["merges"]]
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        assert scanned(path)
        fast, reference = both(path)
        assert fast == reference and fast[0] == "ok"
        results.append(fast)
    assert results[0] == results[1]


def test_escaped_keys(tmp_path, small_file):
    """Keys spelled with JSON escapes: \\u0120 for Ġ, \\u00e9, \\", \\\\ and \\/."""
    path = tmp_path / "tokenizer.json"
    text = json.dumps(small_file, ensure_ascii=True)  # every non-ASCII character as \\uXXXX
    assert "\\u0120" in text and '\\"' in text and "\\\\" in text
    text = text.replace('"/"', '"\\/"')
    path.write_text(text, encoding="utf-8")
    assert scanned(path)
    fast, reference = both(path)
    assert fast == reference and fast[0] == "ok"
    path.write_text(json.dumps(small_file, ensure_ascii=False), encoding="utf-8")
    assert both(path)[0] == fast


@pytest.mark.filterwarnings("ignore:.*tokenizers gives it")  # (an added token renumbered as tokenizers does)
@pytest.mark.parametrize("key", ["\\ud83d\\ude00", "\\ud83d", "a\\u0000", "\U0001F600", "<｜x｜>", "a b"])
def test_keys_that_are_not_byte_level_go_to_the_json_module(tmp_path, small_file, key):
    """A surrogate pair, a lone surrogate, a control character, an emoji, an added token's
    text, a space: not byte-level text; json's reading decides (such entries are left out)."""
    path = tmp_path / "tokenizer.json"
    text = json.dumps(small_file, ensure_ascii=False)
    text = text.replace('"vocab": {', '"vocab": {"' + key + '": 299, ', 1)
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    assert not scanned(path)
    fast, reference = both(path)
    assert fast == reference


@pytest.mark.filterwarnings("ignore:.*tokenizers gives it")  # (an added token renumbered as tokenizers does)
@pytest.mark.parametrize("change", [
    lambda t: t.replace('"vocab": {', '"vocab": {"t": 5, ', 1),          # a key twice: json keeps the last
    lambda t: t.replace('"vocab": {', '"vocab": {"zz": 5, ', 1),         # an id twice
    lambda t: t.replace('"vocab": {', '"vocab": {"zz": 2147483647, ', 1),  # a huge id
    lambda t: t.replace('"vocab": {', '"vocab": {"zz": 100000000, ', 1),   # a sparse id
    lambda t: t.replace('"vocab": {', '"vocab": {"zz": 123456789012, ', 1),  # more than 10 digits
    lambda t: t.replace('"vocab": {', '"vocab": {"zz": -1, ', 1),
    lambda t: t.replace('"vocab": {', '"vocab": {"zz": 7.0, ', 1),
    lambda t: t.replace('"vocab": {', '"vocab": {"zz": 1e2, ', 1),
    lambda t: t.replace('"vocab": {', '"vocab": {"zz": 01, ', 1),        # not JSON
    lambda t: t.replace('"vocab": {', '"vocab": {"": 299, ', 1),
    lambda t: t.replace('"vocab": {', '"vocab": {"zz": 299,', 1).replace('"merges": [', '"merges": [["zz", "t"], ', 1),
    lambda t: t.replace('"merges": [', '"merges": [["t", "nope"], ', 1),
    lambda t: t.replace('"merges": [', '"merges": [["t"], ', 1),
    lambda t: t.replace('"merges": [', '"merges": ["t h", ', 1),         # strings and lists mixed
    lambda t: t.replace('"merges": [', '"merges": [["t", "h", "e"], ', 1),
    lambda t: t.replace('"merges": [', '"merges": [["t", ""], ', 1),
    lambda t: t.replace('"model": {', '"model": {"vocab": {}, ', 1),     # "vocab" twice
    lambda t: t.replace('"model": {', '"model": {"merges": [], ', 1),
    lambda t: t.replace('{"version"', '{"model": 5, "version"', 1),      # "model" twice
    lambda t: t.replace('"model": {', '"mod\\u0065l": {', 1),           # a key spelled with an escape
    lambda t: t.replace('"vocab": {', '"voc\\u0061b": {', 1),
    lambda t: t.replace('"vocab": {', '"vocab": {"a":\x01 3, ', 1),      # a control character
    lambda t: t.replace('"vocab": {', '"vocab": {"zz": 299,, ', 1),      # malformed JSON
    lambda t: t.replace('"vocab": {', '"vocab": {"zz" 299, ', 1),
    lambda t: t.replace('"vocab": {', '"vocab": {"z\\x": 299, ', 1),
    lambda t: t.replace('"vocab": {', '"vocab": {"z\\u12": 299, ', 1),
    lambda t: t.replace('"t": ', '"t" : ', 1),
    lambda t: t.replace("]]", "],]", 1),
    lambda t: t + " x",
    lambda t: "\ufeff" + t,
    lambda t: t[: len(t) // 2],
])
def test_unusual_files_read_as_json_reads_them(tmp_path, a_file, change):
    path = tmp_path / "tokenizer.json"
    path.write_text(change(json.dumps(a_file, ensure_ascii=False)), encoding="utf-8")
    fast, reference = both(path)
    assert fast == reference


def test_bytes_that_are_not_utf8(tmp_path, a_file):
    path = tmp_path / "tokenizer.json"
    raw = json.dumps(a_file, ensure_ascii=False).encode("utf-8")
    for bad in (b"\xc3", b"\xc0\xa0", b"\xed\xa0\x80", b"\xff", b"\xe0\x80\xaf", b"\xf4\x90\x80\x80", b"\xf0\x9f\x98"):
        path.write_bytes(raw.replace(b'"vocab": {', b'"vocab": {"z' + bad + b'": 299, ', 1))
        fast, reference = both(path)
        assert fast == reference and fast[0] == "error" and "JSON" in fast[1]


# (damage to an added token's id renumbers it, and to a decoder makes one fastbpe does not
# decode by, which both readers say in a warning)
@pytest.mark.filterwarnings("ignore:.*is listed with id:UserWarning")
@pytest.mark.filterwarnings("ignore:.*is not one fastbpe decodes by:UserWarning")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_files_read_as_json_reads_them(tmp_path_factory, small_file, chars_file, data):
    """Generated damage (a byte replaced, removed or inserted anywhere), to a byte-level file or
    a character-level one: the same outcome."""
    path = tmp_path_factory.mktemp("damaged") / "tokenizer.json"
    raw = json.dumps(data.draw(st.sampled_from([small_file, chars_file])),
                     ensure_ascii=data.draw(st.booleans())).encode("utf-8")
    path.write_bytes(damaged(data, [raw], b'"\\:,{}[] \n0179aeu\xc3\xa9\x00\xff')[0])
    fast, reference = both(path)
    assert fast == reference


def test_scan_reads_escapes_and_both_merge_forms():
    table = code_point_bytes()
    raw = '{"model": {"vocab": {"\\u00e9": 0, "\\"": 1, "\\u00e9\\"": 2, "\\u0120": 3}, "merges": ["é \\""]}}'
    spans, tokens, ids, blob, offsets = scan_bpe_json(raw.encode("utf-8"), table)
    assert tokens == [b"\xe9", b'"', b'\xe9"', b" "] and ids.tolist() == [0, 1, 2, 3]
    assert blob.tobytes() == b'\xe9"' and offsets.tolist() == [0, 1, 2]
    assert raw.encode("utf-8")[spans[2]:spans[3]] == '["é \\""]'.encode("utf-8")
    as_lists = scan_bpe_json(raw.replace('["é \\""]', '[ [ "é" , "\\"" ] ]').encode("utf-8"), table)
    assert as_lists[1] == tokens and as_lists[2].tolist() == ids.tolist()
    assert as_lists[3].tobytes() == blob.tobytes() and as_lists[4].tolist() == offsets.tolist()
    assert scan_bpe_json(raw.replace("\\u0120", "\\ud83d\\ude00").encode("utf-8"), table) is None
    assert scan_bpe_json(b"", table) is None and scan_bpe_json(b"[]", table) is None


@pytest.mark.parametrize("as_strings", [True, False])
def test_a_merge_of_one_part_next_to_one_of_three_is_refused(tmp_path, small_file, as_strings):
    """As many parts as two pairs, every part a token: refused, naming the first merge, by the
    compiled reader and the json module alike (not read as two other pairs)."""
    data = json.loads(json.dumps(small_file))
    (a, b), (c, d) = data["model"]["merges"][:2]
    wrong = [a + b, f"{c} {d} {a}"] if as_strings else [[a + b], [c, d, a]]
    data["model"]["merges"] = wrong + [f"{x} {y}" if as_strings else [x, y] for x, y in data["model"]["merges"][2:]]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    fast, reference = both(path)
    assert fast == reference and fast[0] == "error" and "merge 0 is not a pair of tokens" in fast[1], fast


@pytest.mark.parametrize("ensure_ascii", [False, True])
@pytest.mark.parametrize("as_strings", [False, True])
def test_a_character_level_file_is_read_compiled_as_json_reads_it(tmp_path, chars_file, ensure_ascii, as_strings):
    """Its texts kept as their UTF-8, written as they are or as escapes (an emoji as a
    surrogate pair), merges in either form."""
    data = json.loads(json.dumps(chars_file))
    if as_strings:
        data["model"]["merges"] = [f"{a} {b}" for a, b in data["model"]["merges"]]
    path = tmp_path / "tokenizer.json"
    for indent in (None, 2):
        text = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)
        assert ("\\ud83d\\ude00" in text) == ensure_ascii
        path.write_text(text, encoding="utf-8")
        assert scanned(path, characters=True) and huggingface.read_plain(path) is not None
        fast, reference = both(path)
        assert fast == reference and fast[0] == "ok"


@pytest.mark.filterwarnings("ignore:.*tokenizers gives it")  # (an added token renumbered as tokenizers does)
@pytest.mark.parametrize("key", ["\\ud83d\\ude00", "\\ud83d", "\\udc00\\ud83d", "\\ud83dx", "a\\u0000", "\U0001F600",
                                 "a b", "\\u0020x", "\\u2581", "<unk>", "\x7f"])
def test_character_level_keys_read_as_json_reads_them(tmp_path, chars_file, key):
    """A surrogate pair (one character), lone surrogates (their three bytes, as
    "surrogatepass" writes them), a control character, an emoji, a space, an escaped one, an
    added token's text: the compiled reader reads each as json does (or leaves the file to it)."""
    path = tmp_path / "tokenizer.json"
    text = json.dumps(chars_file, ensure_ascii=False).replace('"vocab": {', '"vocab": {"' + key + '": 400, ', 1)
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    fast, reference = both(path)
    assert fast == reference


def test_an_escaped_space_in_a_merge_string_splits_it_as_json_reads_it(tmp_path, chars_file):
    """"t\\u0020h" is the merge "t h" to the json module: the compiled reader leaves such a
    file to it, and a space inside a list form's part is part of the token."""
    path = tmp_path / "tokenizer.json"
    data = json.loads(json.dumps(chars_file))
    data["model"]["merges"] = [f"{a} {b}" for a, b in data["model"]["merges"]]
    text = json.dumps(data, ensure_ascii=False)
    a, b = data["model"]["merges"][0].split(" ")
    path.write_text(text.replace(f'"{a} {b}"', f'"{a}\\u0020{b}"', 1), encoding="utf-8")
    assert not scanned(path, characters=True)
    fast, reference = both(path)
    assert fast == reference and fast[0] == "ok"
    data = json.loads(json.dumps(chars_file))
    data["model"]["vocab"]["t h"] = 400
    data["model"]["merges"].append(["t h", "e"])
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert scanned(path, characters=True)
    fast, reference = both(path)
    assert fast == reference


def test_scan_reads_characters_as_their_utf8():
    raw = ('{"model": {"vocab": {"\u2581a": 0, "\\ud83d\\ude00": 1, "\\udc00x": 2, "\\n": 3}, '
           '"merges": ["\u2581a \\ud83d\\ude00"]}}')
    spans, tokens, ids, blob, offsets = scan_bpe_json(raw.encode("utf-8"), None)
    assert tokens == ["\u2581a".encode(), "😀".encode(), "\udc00x".encode("utf-8", "surrogatepass"), b"\n"]
    assert ids.tolist() == [0, 1, 2, 3] and blob.tobytes() == "\u2581a😀".encode() and offsets.tolist() == [0, 4, 8]
    assert scan_bpe_json(raw.replace("\\ud83d\\ude00", "\\u0020").encode("utf-8"), None) is None
    for bad in (b"\xed\xa0\x80", b"\xc0\xaf", b"\x01"):
        assert scan_bpe_json(raw.encode("utf-8").replace(b"a", bad, 1), None) is None
