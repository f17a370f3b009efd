"""The compiled reader of GPT-2's encoder.json + vocab.bpe against the reader of parsed text.

``gpt2.read`` reads well-formed files straight from their bytes (``read_plain``); every other
pair goes to ``read_parsed`` (the json module and a split per line). Whatever the files, the
result (or the ValueError) must be the one ``read_parsed`` gives."""
import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fastbpe
from fastbpe.formats import gpt2
from fastbpe.formats.bytelevel import code_point_bytes, token_to_text
from fastbpe._core.encode import scan_gpt2_files

from tests.formats.readers import damaged, outcome


def both(encoder, vocab):
    """``read``'s outcome and ``read_parsed``'s, for one pair of files."""
    return outcome(lambda: gpt2.read(encoder, vocab)), outcome(lambda: gpt2.read_parsed(encoder, vocab))


@pytest.fixture(scope="module")
def small_pair(tmp_path_factory):
    """The bytes of a small trained vocabulary's encoder.json and vocab.bpe (quotes,
    backslashes and a non-ASCII letter among its tokens)."""
    tok = fastbpe.train("the cat sat on the mat; \"quotes\" \\ back/slash é " * 20, vocab_size=300,
                        progress=False, special_tokens=["<|endoftext|>"])
    folder = tmp_path_factory.mktemp("gpt2")
    tok.to_gpt2(folder)
    return (folder / "encoder.json").read_bytes(), (folder / "vocab.bpe").read_bytes()


def write(folder, encoder: bytes, vocab: bytes):
    (folder / "encoder.json").write_bytes(encoder)
    (folder / "vocab.bpe").write_bytes(vocab)
    return folder / "encoder.json", folder / "vocab.bpe"


def test_published_files_are_read_by_the_compiled_reader_as_parsed(shared_data):
    encoder, vocab = shared_data.path("tokenizers", "encoder.json"), shared_data.path("tokenizers", "vocab.bpe")
    assert gpt2.read_plain(encoder, vocab) is not None
    fast, reference = both(encoder, vocab)
    assert fast == reference and fast[0] == "ok"
    assert fast[1]["special_tokens"] == {"<|endoftext|>": 50256} and len(fast[1]["merges"]) == 50000


def test_a_trained_pair_is_read_by_the_compiled_reader_as_parsed(tmp_path, small_pair):
    encoder, vocab = write(tmp_path, *small_pair)
    assert gpt2.read_plain(encoder, vocab) is not None
    fast, reference = both(encoder, vocab)
    assert fast == reference and fast[0] == "ok"
    # indented JSON, blank lines between merges, no newline at the end: still the compiled path
    entries = json.loads(small_pair[0])
    lines = small_pair[1].decode("utf-8").split("\n")
    encoder, vocab = write(tmp_path, json.dumps(entries, indent=2).encode("utf-8"),
                           "\n\n".join(line for line in lines if line).encode("utf-8"))
    assert gpt2.read_plain(encoder, vocab) is not None
    assert both(encoder, vocab) == (fast, reference)


def test_windows_line_ends_read_as_the_file_itself(tmp_path, small_pair, shared_data):
    """A vocab.bpe with \\r\\n line ends (a Windows checkout's, git's autocrlf) is the same
    vocabulary, by both readers, as Hugging Face's reader has it."""
    (tmp_path / "lf").mkdir()
    lf = both(*write(tmp_path / "lf", *small_pair))
    assert both(*write(tmp_path, small_pair[0], small_pair[1].replace(b"\n", b"\r\n"))) == lf
    assert lf[0] == lf[1] and lf[0][0] == "ok"
    published = shared_data.path("tokenizers", "vocab.bpe").read_bytes().replace(b"\n", b"\r\n")
    encoder, vocab = write(tmp_path, shared_data.path("tokenizers", "encoder.json").read_bytes(), published)
    assert gpt2.read_plain(encoder, vocab) is not None
    assert fastbpe.Tokenizer.from_gpt2(encoder, vocab).encode("Hello world\r\n") == [15496, 995, 201, 198]


@pytest.mark.parametrize("change", [
    lambda e, v: (e, v.replace(b"\n", b"\r\n")),              # Windows line ends
    lambda e, v: (e, v.replace(b"#version", b"#ver")),        # no version line
    lambda e, v: (e, v + b"a  b\n"),                          # two spaces
    lambda e, v: (e, v + b"a b c\n"),                         # three parts
    lambda e, v: (e, v + b"   \n"),                           # a line of spaces
    lambda e, v: (e, v + "zz\u4e2d q\n".encode("utf-8")),     # a character no byte stands for
    lambda e, v: (e, v + b"\xff \xfe\n"),                     # not UTF-8
    lambda e, v: (e, b"#version: 0.2\xff\n" + v.split(b"\n", 1)[1]),
    lambda e, v: (e, v.split(b"\n", 1)[0]),                   # no merges at all
    lambda e, v: (e.replace(b'"a": 97', b'"a": 97.0'), v),    # a float id
    lambda e, v: (e.replace(b'"a": 97', b'"a": 1e3'), v),
    lambda e, v: (e.replace(b'"a": 97', b'"a": 0'), v),       # an id used twice
    lambda e, v: (e.replace(b'"a": 97', b'"a": 900000'), v),  # a gap
    lambda e, v: (e.replace(b'"a": 97', b'"a": 97, "a": 65'), v),  # a key twice
    lambda e, v: (e.replace(b'"a": 97', b'"\\u0061": 64'), v),     # an escaped key
    lambda e, v: (e.replace(b'"<|endoftext|>"', b'"<|end\\u00e9|>"'), v),
    lambda e, v: (e.replace(b'"<|endoftext|>"', "\"<|end\u0120|>\"".encode("utf-8")), v),
    lambda e, v: (e.replace(b'"<|endoftext|>"', "\"<|end\u4e2d|>\"".encode("utf-8")), v),
    lambda e, v: (e + b" x", v),
    lambda e, v: (e[: len(e) // 2], v),
    lambda e, v: (b"[1, 2]", v),
    lambda e, v: (b"{}", v),
])
def test_unusual_files_read_as_parsed(tmp_path, small_pair, change):
    encoder, vocab = write(tmp_path, *change(*small_pair))
    fast, reference = both(encoder, vocab)
    assert fast == reference


def test_unusual_files_change_what_they_should(tmp_path, small_pair):
    """The changes above reach the files (a change that misses would test nothing)."""
    encoder, vocab = small_pair
    assert b'"a": 97' in encoder and b'"<|endoftext|>"' in encoder and b"#version" in vocab


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_files_read_as_parsed(tmp_path_factory, small_pair, data):
    """Generated damage to either file (a byte replaced, removed or inserted anywhere): the
    same outcome."""
    files = damaged(data, list(small_pair), b'"\\:,{} \n\r0179abeu\xc3\xa9\xc4\xa0\x00\xff')
    encoder, vocab = write(tmp_path_factory.mktemp("damaged"), *files)
    fast, reference = both(encoder, vocab)
    assert fast == reference


def test_scan_reads_merge_lines_as_they_are():
    """vocab.bpe's texts are not JSON strings: a quote or backslash is that byte."""
    table = code_point_bytes()
    space = token_to_text(b" ")
    tokens, ids, blob, offsets = scan_gpt2_files(
        json.dumps({'"': 0, "\\": 1, '"\\': 2, space: 3, space + '"\\': 4}).encode("utf-8"),
        f'" \\\n\n{space} "\\\n'.encode("utf-8"), table)
    assert tokens == [b'"', b"\\", b'"\\', b" ", b' "\\'] and ids.tolist() == [0, 1, 2, 3, 4]
    assert blob.tobytes() == b'"\\ "\\' and offsets.tolist() == [0, 1, 2, 3, 5]
    for bad in (b'" \\\r\n', b'" \\ x\n', b" \\\n", b'"\n', b'" \\\t\n', b"\xc3 \\\n"):
        assert scan_gpt2_files(b'{"a": 0}', bad, table) is None, bad
    assert scan_gpt2_files(b'{"a": 0} x', b"", table) is None
    assert scan_gpt2_files(b"", b"", table) is None
