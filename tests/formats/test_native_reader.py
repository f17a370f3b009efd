"""The compiled reader of fastbpe's own files against the json module.

``fastbpe.load`` reads a well-formed file of byte-level tokens with its ``vocab`` and ``merges``
read straight from its bytes (``native.read_plain``); every other file goes to the json module.
Whatever the file, the result (or the ValueError) must be the one of parsing it with the json
module first."""
import json
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fastbpe
from fastbpe.formats import detect, huggingface, native
from fastbpe.formats.bytelevel import code_point_bytes
from fastbpe._core.encode import scan_native_json

from tests.formats.readers import damaged, outcome


def both(path):
    """The compiled reader's outcome (as ``fastbpe.load`` reads) and the json module's (the
    same loader with the compiled readers turned away)."""
    fast = outcome(lambda: detect.read_any(path))
    with mock.patch.object(native, "read_plain", lambda path: None), \
            mock.patch.object(huggingface, "read_plain", lambda path: None):
        reference = outcome(lambda: detect.read_any(path))
    return fast, reference


@pytest.fixture(scope="module")
def small_file():
    """A small byte-level tokenizer's file as a dict (quotes, backslashes, a non-ASCII letter
    and a special token among its tokens)."""
    tok = fastbpe.train("the cat sat on the mat; \"quotes\" \\ back/slash é " * 20, vocab_size=300,
                        progress=False, special_tokens=["<|endoftext|>"])
    return tok.to_dict()


@pytest.fixture(scope="module")
def chars_file():
    """A small character-level tokenizer's file as a dict (an emoji, quotes, a backslash and
    ``▁`` among its tokens; unused slots, written as empty texts)."""
    text = "the▁cat▁sat;▁\"quotes\"▁\\▁back/slash▁é▁😀▁" * 20
    tok = fastbpe.train(text=text, num_merges=40, unit="chars", pattern=r"(?s:.+)", progress=False, workers=1,
                        min_frequency=1, special_tokens=["<s>"])
    data = tok.to_dict()
    data["vocab"] = data["vocab"] + ["", ""]
    assert data["unit"] == "chars" and "😀" in data["vocab"]
    return data


@pytest.fixture(params=["bytes", "chars"])
def a_file(request, small_file, chars_file):
    """Each small file in turn: of byte-level tokens, and character-level."""
    return small_file if request.param == "bytes" else chars_file


def test_a_saved_file_is_read_by_the_compiled_reader_as_json_reads_it(tmp_path, a_file):
    path = tmp_path / "t.json"
    for indent in (None, 1, 2):
        path.write_text(json.dumps(a_file, indent=indent, ensure_ascii=indent is None), encoding="utf-8")
        assert native.read_plain(path) is not None
        fast, reference = both(path)
        assert fast == reference and fast[0] == "ok"


def test_published_vocabularies_saved_read_as_json_reads_them(tmp_path, shared_data):
    for tok in (fastbpe.openai("cl100k_base", shared_data.path("tokenizers", "tiktoken")),
                fastbpe.load(shared_data.path("tokenizers", "llama3", "tokenizer.json"))):
        tok.save(tmp_path / "t.json")
        assert native.read_plain(tmp_path / "t.json") is not None
        fast, reference = both(tmp_path / "t.json")
        assert fast == reference and fast[0] == "ok"


@pytest.mark.parametrize("change", [
    lambda d: {**d, "merges": [m + [0] for m in d["merges"]]},            # three columns (made ids)
    lambda d: {**d, "merges": [d["merges"][0] + [0]] + d["merges"][1:]},  # mixed widths
    lambda d: {**d, "merges": []},
    lambda d: {**d, "merges": [[0, -1]]},
    lambda d: {**d, "merges": [[0, 2**31]]},
    lambda d: {**d, "merges": [[0, 1.0]]},
    lambda d: {**d, "merges": [[0, True]]},
    lambda d: {**d, "merges": [[0]]},
    lambda d: {**d, "merges": [[0, 1, 2, 3]]},
    lambda d: {**d, "vocab": d["vocab"] + ["\u4e2d"]},                    # no byte-level text
    lambda d: {**d, "vocab": d["vocab"][:-1] + [5]},
    lambda d: {**d, "vocab": []},
    lambda d: {**d, "unit": "chars"},
    lambda d: {**d, "unit": "bytes"},
    lambda d: {**d, "unit": 5},
    lambda d: {**d, "vocab": d["vocab"] + ["\ud83d", "\udc00x", "\ud83d\ude01"]},  # lone surrogates, a pair
    lambda d: {k: v for k, v in d.items() if k != "merges"},
    lambda d: {k: v for k, v in d.items() if k != "vocab"},
    lambda d: dict(reversed(list(d.items()))),
    lambda d: {**d, "extra": {"vocab": [1], "merges": "x"}},             # the names nested elsewhere
])
def test_unusual_files_read_as_json_reads_them(tmp_path, a_file, change):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(change(a_file)), encoding="utf-8")
    assert both(path)[0] == both(path)[1]


@pytest.mark.parametrize("change", [
    lambda t: t.replace('"vocab"', '"vocab": [], "vocab"', 1),         # a key twice: json keeps the last
    lambda t: t.replace('"merges"', '"merg\\u0065s"', 1),              # an escaped key
    lambda t: t.replace('"unit": "bytes"', '"unit": "bytes",'),
    lambda t: t + " x",
    lambda t: t[: len(t) // 2],
    lambda t: t.replace('"version"', '"format": "x", "version"', 1),  # "format" twice: json keeps the last
    lambda t: t.replace('"merges": [[', '"merges": [[0', 1),           # a leading zero
    lambda t: t.replace('"merges": [[', '"merges": [ [ ', 1),
])
def test_unusual_text_read_as_json_reads_it(tmp_path, small_file, change):
    path = tmp_path / "t.json"
    text = json.dumps(small_file)
    assert change(text) != text
    path.write_text(change(text), encoding="utf-8")
    fast, reference = both(path)
    assert fast == reference


def test_a_native_file_with_a_model_field_reads_as_fastbpe_s(tmp_path, small_file):
    """A fastbpe file whose "format" is not its first field and that holds a "model" object
    (which Hugging Face's files hold): read as fastbpe's, as the json module's path reads it."""
    data = dict(reversed(list(small_file.items())))
    data["model"] = {"type": "BPE", "vocab": {"a": 0}, "merges": []}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    fast, reference = both(path)
    assert fast == reference and fast[0] == "ok"
    assert fast[1]["tokens"] == [token for token in fastbpe.Tokenizer.from_dict(small_file).token_bytes]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_files_read_as_json_reads_them(tmp_path_factory, small_file, chars_file, data):
    """Generated damage (a byte replaced, removed or inserted anywhere), to a file of byte-level
    tokens or a character-level one: the same outcome."""
    path = tmp_path_factory.mktemp("damaged") / "t.json"
    raw = json.dumps(data.draw(st.sampled_from([small_file, chars_file])), indent=data.draw(st.sampled_from([None, 1])),
                     ensure_ascii=data.draw(st.booleans())).encode("utf-8")
    path.write_bytes(damaged(data, [raw], b'"\\:,{}[] \n0179-aeu\xc3\xa9\xc4\xa0\x00\xff')[0])
    fast, reference = both(path)
    assert fast == reference


def test_scan_reads_byte_level_texts_and_id_rows():
    table = code_point_bytes()
    raw = '{"a": {"vocab": 1}, "vocab": ["\\u00e9", "\\"", "\\u0120x"], "merges": [[0, 1, 2], [2,0,1]]}'
    spans, tokens, merges = scan_native_json(raw.encode("utf-8"), table)
    assert tokens == [b"\xe9", b'"', b" x"] and merges.tolist() == [[0, 1, 2], [2, 0, 1]]
    assert raw.encode("utf-8")[spans[2]:spans[3]] == b"[[0, 1, 2], [2,0,1]]"
    for bad in (raw.replace("[2,0,1]", "[2,0]"), raw.replace("[2,0,1]", "[2,-1,1]"), raw.replace('"\\u0120x"', '"x y"'),
                raw + "x", raw.replace(', "merges": [[0, 1, 2], [2,0,1]]', ""), raw.replace("[0, 1, 2]", "[0, 1, 2,]"),
                "", "[]", "{}"):
        assert scan_native_json(bad.encode("utf-8"), table) is None, bad


def test_a_character_level_file_is_read_compiled():
    """Its texts as their UTF-8: escaped or not, a surrogate pair one character, a lone
    surrogate its three bytes (as the json module and "surrogatepass" read them)."""
    raw = '{"format": "fastbpe", "unit": "chars", "vocab": ["\\u2581a", "\\ud83d\\ude00", "\\udc00", "", "é"], ' \
          '"merges": []}'
    spans, tokens, merges = scan_native_json(raw.encode("utf-8"), None)
    lone = "\udc00".encode("utf-8", "surrogatepass")
    assert tokens == ["\u2581a".encode(), "😀".encode(), lone, b"", "é".encode()]
    assert merges.shape == (0, 2)
