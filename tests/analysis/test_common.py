"""Naming a tokenizer on the command line, and the text table every analysis prints."""
import os

import pytest

import fastbpe
from fastbpe.analysis.common import (format_table, read_texts, resolve_tokenizer, text_lines,
                                     tokenizer_label)


def test_a_path_is_loaded_and_a_tokenizer_kept(tmp_path):
    tok = fastbpe.train(text="the cat sat on the mat " * 20, vocab_size=270, progress=False)
    tok.save(tmp_path / "t.fastbpe.json")
    assert resolve_tokenizer(tmp_path / "t.fastbpe.json") == tok
    assert resolve_tokenizer(tok) is tok
    with pytest.raises(ValueError, match="does not exist"):
        resolve_tokenizer(str(tmp_path / "missing.json"))


def test_gpt2_files_by_folder_or_file(shared_data, gpt2):
    folder = shared_data.path("tokenizers")
    assert resolve_tokenizer(folder) == gpt2
    assert resolve_tokenizer(folder / "encoder.json").encode("hello world") == [31373, 995]


ENCODINGS_ENV = "FASTBPE_ENCODINGS"


def test_names_come_from_the_encodings_folder(shared_data, monkeypatch, tmp_path):
    monkeypatch.delenv(ENCODINGS_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # an empty per-user cache
    with pytest.raises(ValueError, match=ENCODINGS_ENV):
        resolve_tokenizer("cl100k_base")
    monkeypatch.setenv(ENCODINGS_ENV, str(shared_data.path("tokenizers", "tiktoken")))
    assert resolve_tokenizer("gpt2").encode("hello world") == [31373, 995]  # r50k_base: the same ranks


def test_labels():
    assert tokenizer_label("qwen3/tokenizer.json") == "qwen3"
    assert tokenizer_label("data/encoder.json") == "data"
    assert tokenizer_label("o200k_base") == "o200k_base"


def test_table_aligns_numbers_right_and_shows_nan_as_a_dash():
    text = format_table([{"name": "a", "x": 1.5, "n": 1000}, {"name": "bb", "x": float("nan"), "n": 7}])
    assert text.splitlines() == ["name      x      n", "a     1.500  1,000", "bb        -      7"]


def test_read_texts_stops_at_whole_lines(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    assert read_texts(tmp_path / "a.txt", limit=5) == ["one\ntwo\n"]
    assert "".join(read_texts(tmp_path)) == "one\ntwo\nthree\n"


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("data", [
    b"ab\xffc\n",
    b"a" * ((1 << 20) - 1) + "é".encode() + b"xy\xffz",  # a character cut between two reads, then a bad byte
    b"a" * (1 << 20) + b"\n\xc3",  # a character cut short by the end of the file
])
def test_invalid_utf8_names_the_file_and_the_byte_offset(tmp_path, data, compress):
    import gzip

    from fastbpe.corpus.files import CorpusDecodeError

    path = tmp_path / ("t.txt.gz" if compress else "t.txt")
    path.write_bytes(gzip.compress(data) if compress else data)
    offset = next(i for i in range(len(data)) if data[i] in (0xff, 0xc3) and not data[i:].startswith("é".encode()))
    with pytest.raises(CorpusDecodeError, match=rf"t\.txt(\.gz)?: invalid UTF-8 at byte offset {offset}\b"):
        read_texts(path)


def test_labels_that_coincide_take_the_folders_above():
    from fastbpe.analysis.common import tokenizer_labels

    assert tokenizer_labels(["e1/final/tokenizer.json", "e2/final/tokenizer.json", "final.json"]) == \
        ["e1/final", "e2/final", "final"]
    assert tokenizer_labels(["runs/a/x/mine.json", "runs/b/x/mine.json", "o200k_base"]) == \
        ["a/x/mine", "b/x/mine", "o200k_base"]
    assert tokenizer_labels(["/abs/e1/t.json", "e2/t.json"]) == ["e1/t", "e2/t"]
    assert tokenizer_labels(["r50k_base", "r50k_base"]) == ["r50k_base", "r50k_base"]  # (refused by check_labels)
    assert tokenizer_labels(["a/e1/t.json", "b/e1/t.json", "a/e1/t.json"]) == ["a/e1/t", "b/e1/t", "a/e1/t"]
    assert tokenizer_labels(["/data/e1/t.json", "/data/e1/t.json"]) == ["t", "t"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
def test_a_pipe_is_refused_as_a_text_file(tmp_path):
    """A pipe given as a table (``--corpus <(zcat t.tsv.gz | head)``) is refused for what it is, not
    with 'File or stream is not seekable'."""
    os.mkfifo(tmp_path / "rows.tsv")
    with pytest.raises(ValueError, match="rows.tsv: not a regular file"):
        list(text_lines(tmp_path / "rows.tsv"))
