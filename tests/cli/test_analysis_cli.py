"""``fastbpe extend`` and ``fastbpe skipgram`` end to end: tables, --json, --plot, errors."""
import json

import pytest

import fastbpe
from fastbpe.cli import main
from fastbpe.analysis.common import resolve_tokenizer as load_tokenizer


@pytest.fixture
def base(tmp_path):
    tok = fastbpe.train(text="def f(self, x):\n    return self.value + x\n" * 30, vocab_size=300,
                        special_tokens=["<|endoftext|>"], progress=False)
    path = tmp_path / "base.fastbpe.json"
    tok.save(path)
    return tok, path


@pytest.fixture
def mixed(tmp_path):
    """A tokenizer of code and some prose: the prose's words are tokens, the code's are absent
    from the embedding corpus."""
    text = "def f(self, x):\n    return self.value + x\n" * 30 + "the cat sat on the mat the dog sat on the log " * 5
    path = tmp_path / "mixed.fastbpe.json"
    fastbpe.train(text=text, vocab_size=300, progress=False).save(path)
    return path


@pytest.fixture
def prose(tmp_path):
    path = tmp_path / "prose.txt"
    path.write_text("the cat sat on the mat\n\nthe dog sat on the log\n\n" * 30, encoding="utf-8")
    return path


def test_extend_writes_a_tokenizer_that_keeps_every_id(base, prose, tmp_path, capsys):
    tok, path = base
    out = tmp_path / "extended.json"
    assert main(["extend", str(prose), "--tokenizer", str(path), "--num-merges", "10", "--out", str(out), "-q"]) == 0
    table = capsys.readouterr().out
    assert "new merges" in table and "corpus tokens" in table and "bytes/token" in table
    extended = fastbpe.load(out)
    assert extended.token_bytes[:len(tok.token_bytes)] == tok.token_bytes
    assert extended.special_tokens == tok.special_tokens
    assert len(extended.encode("the cat sat")) < len(tok.encode("the cat sat"))
    assert main(["extend", str(prose), "-t", str(out), "--num-merges", "3", "--out", str(tmp_path / "x.tiktoken"),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["base_merges"] == len(extended.merge_ids) and summary["new_merges"] == 3
    assert summary["corpus_tokens_after"] < summary["corpus_tokens_before"]
    assert len(fastbpe.load(tmp_path / "x.tiktoken").vocab) == len(extended.vocab) + 3


def test_extend_errors(base, prose, tmp_path, capsys, monkeypatch):
    _, path = base
    monkeypatch.delenv("FASTBPE_ENCODINGS", raising=False)
    assert main(["extend", str(prose), "-t", "cl100k_base", "--num-merges", "3", "--out", str(tmp_path / "o.json")]) == 2
    assert "FASTBPE_ENCODINGS" in capsys.readouterr().err
    assert main(["extend", str(tmp_path / "nope.txt"), "-t", str(path), "--num-merges", "3",
                 "--out", str(tmp_path / "o.json")]) == 2
    assert capsys.readouterr().err.startswith("fastbpe: error:")
    assert not (tmp_path / "o.json").exists()


def test_names_resolve_through_the_encodings_folder(shared_data, monkeypatch):
    folder = shared_data.path("tokenizers", "tiktoken")
    monkeypatch.setenv("FASTBPE_ENCODINGS", str(folder))
    assert load_tokenizer("gpt2").encode("hello world") == [31373, 995]
    gpt2_files = load_tokenizer(str(shared_data.path("tokenizers", "encoder.json")))
    assert gpt2_files.encode("hello world") == [31373, 995]


def test_skipgram_table_json_and_plot(mixed, prose, tmp_path, capsys):
    path = mixed
    args = ["skipgram", str(prose), "-t", str(path), "--dim", "8", "--epochs", "3", "--seed", "3", "--batch-size", "8",
            "--neighbours", " cat, the", "--analogy", " cat, mat, dog", "-k", "2"]
    assert main(args + ["--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tokens"] > 0 and result["loss_end"] < result["loss_start"]
    assert result["never_seen"] > 0 and result["by_frequency"][0]["max_drift"] == 0.0
    assert result["candidates"] and all(c["frequency"] == 0 and c["drift"] == 0.0 for c in result["candidates"])
    assert set(result["neighbours"]) == {" cat", " the"} and len(result["neighbours"][" cat"]) == 2
    assert result["analogies"][0]["query"] == [" cat", " mat", " dog"]
    assert main(args + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["candidates"] == result["candidates"]  # seeded
    # -k past the rows there are: every other row (it was the kernel's "k must be in 0..N")
    assert main(args[:-1] + ["1000000", "--candidates", str(10**20), "--json"]) == 0  # (--candidates said 'k must')
    many = json.loads(capsys.readouterr().out)
    assert len(many["candidates"]) == result["never_seen"]
    rows = fastbpe.load(path).n_vocab
    assert len(many["neighbours"][" cat"]) == rows - 1 and len(many["analogies"][0]["answers"]) == rows - 3
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "glitch candidates" in table and "frequency band" in table and "tokens/s" in table
    pytest.importorskip("matplotlib", reason="--plot draws with matplotlib, which is not installed")
    plot = tmp_path / "rows.png"
    assert main(args + ["--plot", str(plot), "--json"]) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_skipgram_errors(mixed, prose, tmp_path, capsys):
    path = mixed
    assert main(["skipgram", str(prose), "-t", str(path), "--neighbours", " catmatdog"]) == 2
    assert "not one" in capsys.readouterr().err
    assert main(["skipgram", str(prose), "-t", str(path), "--analogy", " cat, mat"]) == 2
    assert "three tokens" in capsys.readouterr().err
    assert main(["skipgram", str(prose), "-t", str(path), "--plot", str(tmp_path / "no" / "x.png")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("documents", ["block", "line", "file"])
def test_documents_tile_the_text(tmp_path, documents):
    from fastbpe.cli.skipgram import read_documents

    text = "a b\n\n\nc d\ne\n\nf\n"
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    docs = read_documents([str(path)], 100, documents)
    assert "".join(docs) == text and all(docs)
    assert "".join(read_documents([str(path)], 7, documents)) == "a b\n\n\n"   # whole lines only


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_blocks_end_after_blank_lines_of_either_line_end(tmp_path, line_end):
    from fastbpe.cli.skipgram import read_documents

    text = "a b\n\n\nc d\ne\n\nf\r\rg\n".replace("\n", line_end)
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode())
    blocks = ["a b\n\n\n", "c d\ne\n\n", "f\r\rg\n"]
    assert read_documents([str(path)], 100, "block") == [b.replace("\n", line_end) for b in blocks]


@pytest.mark.parametrize("documents", ["block", "line", "file"])
def test_a_limit_inside_a_character_cuts_before_it(tmp_path, documents):
    """A limit that falls in a line and inside a character cuts before that character: the
    file's UTF-8 is valid, and it is not blamed for the cut."""
    from fastbpe.cli.skipgram import read_documents

    zh = tmp_path / "zh.txt"
    zh.write_text("你好世界" * 1000, encoding="utf-8")  # no newline at all
    for limit in (1, 2, 3, 4, 5, 1000, 2000):
        text = "".join(read_documents([str(zh)], limit, documents))
        assert text == ("你好世界" * 1000)[: limit // 3]
    hello, ja = tmp_path / "a1.txt", tmp_path / "a2.txt"
    hello.write_text("hello world\n" * 90, encoding="utf-8")  # 1,080 bytes
    ja.write_text("こんにちは世界、今日は良い天気です。\n" * 10, encoding="utf-8")
    text = "".join(read_documents([str(hello), str(ja)], 1100, documents))
    assert text == "hello world\n" * 90 + "こんにちは世"  # 20 bytes left: six characters of 3 bytes
    # a file cut short is the last one read
    assert "".join(read_documents([str(hello), str(ja)], 1000, documents)) == "hello world\n" * 83
    bad = tmp_path / "bad.txt"
    bad.write_bytes("你好".encode() + b"\xff" + "世界".encode())
    with pytest.raises(ValueError, match=r"bad\.txt: invalid UTF-8 at byte offset 6"):
        read_documents([str(bad)], 100, documents)


@pytest.mark.parametrize("neighbours", [",", "", " cat,", " cat,, the"])
def test_skipgram_refuses_an_empty_neighbour(mixed, prose, capsys, neighbours):
    assert main(["skipgram", str(prose), "-t", str(mixed), "--neighbours", neighbours]) == 2
    assert "empty token" in capsys.readouterr().err


def test_skipgram_neighbours_of_a_comma_and_of_several_flags(mixed, prose, capsys):
    argv = ["skipgram", str(prose), "-t", str(mixed), "--dim", "4", "-k", "2", "--json",
            "--neighbours", "\\,", "--neighbours", " cat, the", "--analogy", " cat,\\,, dog"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result["neighbours"]) == [",", " cat", " the"]
    assert result["analogies"][0]["query"] == [" cat", ",", " dog"]


def test_skipgram_on_a_tiny_corpus_prints_its_one_loss_once(mixed, tmp_path, capsys):
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("the cat sat on the mat\n", encoding="utf-8")
    assert main(["skipgram", str(tiny), "-t", str(mixed), "--dim", "4", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["loss_curve"]) == 1  # one batch: one measurement
    assert main(["skipgram", str(tiny), "-t", str(mixed), "--dim", "4"]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("loss per pair")]
    assert line.split()[3:] == [f"{result['loss_start']:.4f}", "(measured", "once)"]
