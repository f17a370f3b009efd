"""The ``fastbpe`` command, end to end."""
import json
import subprocess
import sys

from fastbpe.cli import default_corpus, main
from fastbpe import Tokenizer


def test_default_corpus_is_the_stdlib_sources():
    files = default_corpus()
    names = {f.name for f in files}
    assert {"os.py", "json", "argparse.py"} & names
    assert not any("site-packages" in str(f) for f in files)


def test_train_on_files(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("low lower newest widest\n" * 200, encoding="utf-8")
    out = tmp_path / "tok.json"
    assert main(["train", str(corpus), "--vocab-size", "270", "--out", str(out), "-q"]) == 0
    report = capsys.readouterr().out
    assert "unique chunks" in report and "bytes/token" in report and "first merges" in report
    tok = Tokenizer.load(out)
    assert tok.vocab_size == 270
    assert tok.decode(tok.encode("lowest newer")) == "lowest newer"


def test_missing_file_is_a_clear_error(tmp_path, capsys):
    assert main(["train", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "t.json")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("fastbpe: error:") and "no such file" in error
    assert not (tmp_path / "t.json").exists()


def test_console_script_on_default_corpus(tmp_path):
    """The README's main job: ``fastbpe train`` with no files, as a subprocess."""
    out = tmp_path / "std.json"
    done = subprocess.run(
        [sys.executable, "-m", "fastbpe", "train", "--vocab-size", "1000", "--out", str(out), "-q"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "standard library" in done.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["format"] == "fastbpe"
