"""Loading any tokenizer file: damaged files of every format give ValueError, never anything else."""
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe import Tokenizer

from_gpt2, from_huggingface = Tokenizer.from_gpt2, Tokenizer.from_huggingface

_SMALL = []


def _small_files(tmp_dir):
    """A small trained tokenizer written in every format (built once)."""
    if not _SMALL:
        tok = fastbpe.train("the cat sat on the mat, the dog ate 12 bones; ünï 😀 " * 20, vocab_size=320,
                            progress=False, special_tokens=["<|endoftext|>"])
        tok.to_huggingface(tmp_dir / "tokenizer.json")
        tok.to_tiktoken(tmp_dir / "small.tiktoken")
        tok.to_gpt2(tmp_dir / "gpt2")
        tok.save(tmp_dir / "native.json")
        _SMALL.append({name: (tmp_dir / name).read_bytes() for name in
                       ["tokenizer.json", "small.tiktoken", "gpt2/encoder.json", "gpt2/vocab.bpe", "native.json"]})
    return _SMALL[0]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["tokenizer.json", "small.tiktoken", "gpt2/encoder.json", "gpt2/vocab.bpe", "native.json"]),
       st.integers(0, 10**9), st.sampled_from(["truncate", "flip", "delete"]), st.binary(min_size=1, max_size=3))
def test_corrupted_files_give_value_errors(tmp_path_factory, name, where, how, junk):
    """Random damage to any format: it loads, or raises ValueError; nothing else escapes."""
    tmp = tmp_path_factory.getbasetemp() / "corrupt"
    (tmp / "gpt2").mkdir(parents=True, exist_ok=True)
    files = _small_files(tmp)
    data = files[name]
    cut = where % (len(data) + 1)
    if how == "truncate":
        bad = data[:cut]
    elif how == "flip":
        bad = data[:cut] + junk + data[cut + len(junk):]
    else:
        bad = data[:cut] + data[cut + len(junk):]
    work = tmp / "work"
    (work / "gpt2").mkdir(parents=True, exist_ok=True)
    for other, content in files.items():
        (work / other).write_bytes(content)
    (work / name).write_bytes(bad)
    loaders = {
        "tokenizer.json": lambda: from_huggingface(work / "tokenizer.json"),
        "small.tiktoken": lambda: Tokenizer.from_tiktoken(work / "small.tiktoken", "gpt2", {"<|endoftext|>": 320}),
        "gpt2/encoder.json": lambda: from_gpt2(work / "gpt2" / "encoder.json", work / "gpt2" / "vocab.bpe"),
        "gpt2/vocab.bpe": lambda: from_gpt2(work / "gpt2" / "encoder.json", work / "gpt2" / "vocab.bpe"),
        "native.json": lambda: Tokenizer.load(work / "native.json"),
    }
    try:
        tok = loaders[name]()
    except ValueError:
        return
    try:  # a damaged vocabulary may lack a byte: also a ValueError, never anything else
        tok.decode(tok.encode("the cat ate 12 bones", disallowed_special=()))
    except ValueError:
        pass


def test_load_recognises_every_format(tmp_path):
    """fastbpe.load picks the reader from the file itself; a file it cannot read names itself."""
    tok = fastbpe.train("the cat sat on the mat " * 20, vocab_size=280, progress=False,
                        special_tokens=["<|endoftext|>"])
    tok.save(tmp_path / "native.json")
    tok.to_huggingface(tmp_path / "tokenizer.json")
    (tmp_path / "hf").mkdir()
    tok.to_huggingface(tmp_path / "hf" / "tokenizer.json")
    text = "the mat sat"
    for path in (tmp_path / "native.json", tmp_path / "tokenizer.json", tmp_path / "hf"):
        assert fastbpe.load(path).encode(text) == tok.encode(text), path
    (tmp_path / "other.json").write_text('{"neither": 1}')
    with pytest.raises(ValueError, match="other.json"):
        fastbpe.load(tmp_path / "other.json")
    # A .tiktoken file reads with the sidecar written beside it, and without one needs its pattern.
    tok.to_tiktoken(tmp_path / "mine.tiktoken")
    mine = fastbpe.load(tmp_path / "mine.tiktoken")
    assert mine.encode(text) == tok.encode(text) and mine.special_tokens == tok.special_tokens
    (tmp_path / "mine.tiktoken.json").unlink()
    with pytest.raises(ValueError, match="from_tiktoken"):
        fastbpe.load(tmp_path / "mine.tiktoken")
    (tmp_path / "mine.tiktoken.json").write_text('{"pat_str": 3}')
    with pytest.raises(ValueError, match="mine.tiktoken.json"):
        fastbpe.load(tmp_path / "mine.tiktoken")


def test_load_reads_a_tokenizer_json_as_its_own_reader_does(tmp_path):
    """A plain byte-level tokenizer.json goes through the compiled reader under any name, and
    gives the keyword arguments the json-module path gives; other JSON files still parse."""
    import json

    from fastbpe.formats import detect, huggingface

    tok = fastbpe.train("the cat sat on the mat, ünï 😀 " * 20, vocab_size=300, progress=False,
                        special_tokens=["<|endoftext|>"])
    tok.to_huggingface(tmp_path / "renamed.json")
    assert huggingface.read_plain(tmp_path / "renamed.json") is not None
    parsed = huggingface.read(tmp_path / "renamed.json", json.loads((tmp_path / "renamed.json").read_text()))
    found = detect.read_any(tmp_path / "renamed.json")
    assert found.keys() == parsed.keys()
    assert all(repr(found[key]) == repr(parsed[key]) for key in found), sorted(found)
    tok.save(tmp_path / "native.json")
    assert huggingface.read_plain(tmp_path / "native.json") is None
    assert fastbpe.load(tmp_path / "native.json").encode("the mat") == tok.encode("the mat")


def test_a_bad_field_of_a_fastbpe_file_names_the_file(tmp_path):
    """Every loader's ValueError for a damaged fastbpe file starts with the file's path."""
    import json

    tok = fastbpe.train("the cat sat on the mat " * 20, vocab_size=270, progress=False, special_tokens=["<s>"])
    tok.save(tmp_path / "native.json")
    data = json.loads((tmp_path / "native.json").read_text())
    for field, value in (("special_tokens", {"<s>": 1000.7}), ("word_start", 5), ("pattern", "gpt5"),
                         ("special_token_options", {"<t>": {"lstrip": True}})):
        (tmp_path / "bad.json").write_text(json.dumps({**data, field: value}))
        for loader in (fastbpe.load, Tokenizer.load):
            with pytest.raises((ValueError, TypeError)) as caught:
                loader(tmp_path / "bad.json")
            assert str(caught.value).startswith(str(tmp_path / "bad.json")), (field, loader, caught.value)


@pytest.mark.parametrize("name", ["nope.tiktoken", "cl100k_base.tiktoken", "t.json", "t.fastbpe.json", "vocab.bpe",
                                  "folder"])
def test_a_missing_file_is_said_to_be_missing(tmp_path, name):
    """Whatever its name promises (a .tiktoken file's sidecar, GPT-2's pair), a file that is not
    there is a FileNotFoundError naming it."""
    with pytest.raises(FileNotFoundError) as raised:
        fastbpe.load(tmp_path / name)
    assert raised.value.filename == str(tmp_path / name)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
@pytest.mark.parametrize("name", ["t.json", "t.tiktoken", "m.model", "fifo"])
def test_a_pipe_is_refused_for_what_it_is(tmp_path, name):
    """A tokenizer given as a pipe (``-t <(cat t.json)``) is refused as one: its first bytes,
    read to tell its format, were gone when the file was read, and valid JSON was 'bad JSON'."""
    os.mkfifo(tmp_path / name)
    with pytest.raises(ValueError, match="not a regular file .*save the stream to a file first"):
        fastbpe.load(tmp_path / name)


def test_an_encoding_name_given_to_load_points_to_get_encoding(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # (no file of that name here)
    with pytest.raises(FileNotFoundError, match=r"fastbpe.get_encoding\('r50k_base'\)") as raised:
        fastbpe.load("r50k_base")
    assert raised.value.filename == "r50k_base"


@pytest.mark.parametrize("name", ["tokenizer.json", "small.tiktoken", "gpt2/encoder.json", "native.json"])
def test_a_number_too_long_to_read_names_the_file(tmp_path_factory, name):
    """An id of 5,000 digits: Python's int() refuses it with its own message; the loader says
    which file it was reading."""
    tmp = tmp_path_factory.getbasetemp() / "long-number"
    (tmp / "gpt2").mkdir(parents=True, exist_ok=True)
    files = _small_files(tmp)
    text = files[name].decode("utf-8")
    number = {"small.tiktoken": " 260", "native.json": '"version": 1'}.get(name, ": 260")
    long_number = number.rstrip("0123456789") + "9" * 5000
    assert number in text
    path = tmp / name
    path.write_bytes(text.replace(number, long_number, 1).encode("utf-8"))
    if name == "gpt2/encoder.json":
        (tmp / "gpt2" / "vocab.bpe").write_bytes(files["gpt2/vocab.bpe"])
    with pytest.raises(ValueError, match=path.name):
        fastbpe.load(path)


def test_json_under_another_name_is_still_json(tmp_path):
    """A JSON tokenizer file whose name says nothing and whose first byte is a newline (the byte
    a SentencePiece model starts with) is read as JSON, as before content was looked at."""
    tok = fastbpe.train(text="the cat sat on the mat " * 20, vocab_size=270, progress=False)
    tok.save(tmp_path / "tok.fastbpe.json")
    (tmp_path / "tok").write_bytes(b"\n" + (tmp_path / "tok.fastbpe.json").read_bytes())
    assert fastbpe.load(tmp_path / "tok") == tok
    tok.to_huggingface(tmp_path / "hf.json")
    (tmp_path / "vocab.json").write_bytes(b"\n\n" + (tmp_path / "hf.json").read_bytes())  # (no merges.txt needed)
    assert fastbpe.load(tmp_path / "vocab.json").encode("the mat") == tok.encode("the mat")
