"""The analysis subcommands end to end: a table on stdout, --json for the same result, --plot,
tokenizers by path and by name, and one error format."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fastbpe
from fastbpe.cli import main

TREE = Path(__file__).resolve().parents[2]
SENNRICH = "low " * 5 + "lower " * 2 + "newest " * 6 + "widest " * 3


@pytest.fixture
def trained(tmp_path):
    tok = fastbpe.train(text="the cat sat on the mat. kucing itu duduk di atas tikar. " * 30, vocab_size=300,
                        progress=False)
    path = tmp_path / "small.fastbpe.json"
    tok.save(path)
    return tok, path


@pytest.fixture
def parallel(tmp_path):
    path = tmp_path / "p.tsv"
    path.write_text("domain\ten\tms\nx\tthe cat sat\tkucing itu duduk\nx\ton the mat\tdi atas tikar\n",
                    encoding="utf-8")
    return path


def run_json(capsys, argv):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cost_known_answer_table_and_json(capsys):
    assert main(["cost", "--preset", "llama3-8b"]) == 0
    table = capsys.readouterr().out
    assert "525,336,576" in table and "13.1%" in table and "1.051 GFLOP" in table and "513 KB" in table
    result = run_json(capsys, ["cost", "--vocab", "50257", "--d-model", "768", "--tied", "--params", "124439808"])
    assert result["vocab_params"] == 38_597_376 and round(result["vocab_share"], 2) == 0.31


def test_cost_on_a_text(capsys, trained, tmp_path):
    tok, path = trained
    text = tmp_path / "t.txt"
    text.write_text("the cat sat on the mat\n" * 5, encoding="utf-8")
    result = run_json(capsys, ["cost", "--tokenizer", f"mine={path}", "--text", str(text), "--d-model", "64"])
    (row,) = result["rows"]
    assert row["tokenizer"] == "mine" and row["tokens"] == len(tok.encode(text.read_text(encoding="utf-8")))


def test_trace_sennrich(capsys, tmp_path):
    corpus = tmp_path / "toy.txt"
    corpus.write_text(SENNRICH, encoding="utf-8")
    argv = ["trace", str(corpus), "--num-merges", "10", "--unit", "chars", "--pretokenizer", "whitespace",
            "--word-end", "_", "--word", "lowest"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "10 merges: 95 -> 28 symbols" in out and "newest_ x6" in out
    result = run_json(capsys, argv)
    assert result["curve"][0] == 95 and result["curve"][-1] == 28 and result["merges"][2]["new"] == "est_"
    assert result["traced_words"]["lowest"][0]["pieces"] == ["low", "est_"]


def test_trace_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="plots need matplotlib (an optional dependency)")
    corpus = tmp_path / "toy.txt"
    corpus.write_text(SENNRICH, encoding="utf-8")
    assert main(["trace", str(corpus), "--num-merges", "5", "--plot", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    # the format its name says, or a name no format goes by refused before the work
    assert main(["trace", str(corpus), "--num-merges", "5", "--plot", str(tmp_path / "c.PDF")]) == 0
    assert (tmp_path / "c.PDF").read_bytes()[:5] == b"%PDF-"
    assert main(["trace", str(corpus), "--num-merges", "5", "--plot", str(tmp_path / "c.svg")]) == 0
    assert b"<svg" in (tmp_path / "c.svg").read_bytes()[:1000]
    capsys.readouterr()
    assert main(["trace", str(corpus), "--num-merges", "5", "--plot", str(tmp_path / "c.jpg")]) == 2
    assert "name the file .png, .pdf or .svg" in capsys.readouterr().err and not (tmp_path / "c.jpg").exists()


def test_an_output_where_nothing_can_be_written_is_refused_before_the_work(tmp_path, capsys, monkeypatch):
    """A folder this user may not write in (found by access(2), which root passes: simulated
    here) is refused up front, not after the training it would have thrown away."""
    from fastbpe.cli import options

    corpus = tmp_path / "toy.txt"
    corpus.write_text(SENNRICH, encoding="utf-8")
    (tmp_path / "locked").mkdir()
    real_access = os.access
    monkeypatch.setattr(options.os, "access", lambda path, mode: real_access(path, mode) and
                        os.path.basename(os.fspath(path)) != "locked")
    assert main(["train", str(corpus), "--vocab-size", "270", "-o", str(tmp_path / "locked" / "t.json")]) == 2
    assert f"its folder {str(tmp_path / 'locked')!r} is not writable" in capsys.readouterr().err


def test_trace_of_a_word_through_a_tokenizer_draws_no_curve(tmp_path, capsys, trained):
    """--plot draws a training run's curve; a word traced through a tokenizer has none, so the
    plot is refused before the work rather than left undrawn."""
    _, path = trained
    assert main(["trace", "-t", str(path), "--word", "lowest", "--plot", str(tmp_path / "c.png")]) == 2
    assert "--plot draws the compression curve of a training run" in capsys.readouterr().err
    assert not (tmp_path / "c.png").exists()


def test_tax_and_audit_on_a_trained_tokenizer(capsys, trained, parallel):
    tok, path = trained
    result = run_json(capsys, ["tax", "--tokenizer", str(path), "--corpus", str(parallel)])
    by = {r["language"]: r for r in result["results"]}
    assert by["ms"]["premium"] == by["ms"]["tokens"] / by["en"]["tokens"]
    assert main(["tax", "-t", str(path), "--corpus", str(parallel)]) == 0
    assert "premium" in capsys.readouterr().out
    result = run_json(capsys, ["audit", "-t", str(path), "--corpus", str(parallel), "--digits-up-to", "200"])
    (audited,) = result["results"]
    assert audited["tokenizer"] == "small" and audited["vocab_size"] == tok.vocab_size
    assert [d["digits"] for d in audited["digits"]] == [1, 2, 3]


def test_audit_says_what_it_did_not_check(tmp_path, capsys):
    # with word markers reachability is not checked: the never-produced list says so
    tok = fastbpe.train(text="the cat sat on the mat " * 30, num_merges=12, unit="chars", pattern="whitespace",
                        word_end="_", min_frequency=1, progress=False)
    tok.save(tmp_path / "w.fastbpe.json")
    (tmp_path / "corpus.txt").write_text("the mat sat on the cat")
    assert main(["audit", "-t", str(tmp_path / "w.fastbpe.json"), "--corpus", str(tmp_path / "corpus.txt"),
                 "--no-digits"]) == 0
    out, err = capsys.readouterr()
    assert "merged (reachability not checked: the tokens carry markers)" in out and "and reachable" not in out
    assert "warning" not in err
    (tmp_path / "empty.txt").write_text("")
    assert main(["audit", "-t", str(tmp_path / "w.fastbpe.json"), "--corpus", str(tmp_path / "empty.txt"),
                 "--no-digits"]) == 0
    assert "warning: --corpus holds no text" in capsys.readouterr().err


def test_tokenizer_by_encoding_name(shared_data, tmp_path):
    """An OpenAI encoding named, found in $FASTBPE_ENCODINGS, in a fresh process."""
    folder = shared_data.path("tokenizers", "tiktoken")
    done = subprocess.run([sys.executable, "-m", "fastbpe", "audit", "-t", "cl100k_base", "--digits-up-to", "1000",
                           "--json"], capture_output=True, text=True, cwd=TREE, timeout=300,
                          env={"PATH": "", "PYTHONPATH": str(TREE), "FASTBPE_ENCODINGS": str(folder)})
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)["results"]
    assert result["tokenizer"] == "cl100k_base" and result["vocab_size"] == 100261
    assert result["digits"][3]["commonest_split"] == "3+1"


@pytest.mark.parametrize("argv, says", [
    (["cost"], "give --vocab and --d-model, or --preset"),
    (["cost", "--preset", "gpt5"], "invalid choice"),
    (["tax", "--corpus", "p.tsv"], "at least one --tokenizer"),
    (["tax", "-t", "nope/tok.json", "--corpus", "p.tsv"], "does not exist"),
    (["tax", "--sweep", "--corpus", "p.tsv"], "--english"),
    (["tax", "--sweep", "--shares", "0,150", "--corpus", "p.tsv"], "percentages"),
    (["tax", "--sweep", "--english", "toy.txtt", "--other", "toy.txt", "--corpus", "p.tsv"],
     "--english 'toy.txtt': no such file"),  # (a misspelt name was trained on as a text)
    (["tax", "--sweep", "--english", "toy.txt", "--other", "toy.txtt", "--corpus", "p.tsv"],
     "--other 'toy.txtt': no such file"),
    (["tax", "-t", "tok.fastbpe.json", "--corpus", "q.tsv"], "--corpus 'q.tsv': no such file"),
    (["trace"], "give the corpus"),
    (["trace", "-t", "tok.fastbpe.json", "--word", "low", "--num-merges", "5"], "drop --num-merges"),
    (["skipgram", "toy.txt", "-t", "tok.fastbpe.json", "-t", "cl100k_base"], "-t is given twice"),
    (["trace", "toy.txt"], "--num-merges"),
    (["audit", "-t", "cl100k_base"], "FASTBPE_ENCODINGS"),
    (["audit", "-t", "tok.fastbpe.json", "--corpus", "empty", "--no-digits"], "the inputs name no files"),
    (["cost", "-t", "tok.fastbpe.json", "--text", "empty", "--d-model", "64"], "the inputs name no files"),
    (["trace", "empty", "--num-merges", "2"], "the inputs name no files"),
])
def test_user_errors(argv, says, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("FASTBPE_ENCODINGS", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.tsv").write_text("en\tms\na\tb\n", encoding="utf-8")
    (tmp_path / "toy.txt").write_text(SENNRICH, encoding="utf-8")
    (tmp_path / "empty").mkdir()  # (a folder of no file: an empty corpus is a mistake, not a result of zeros)
    fastbpe.train(text=SENNRICH, vocab_size=270, progress=False).save(tmp_path / "tok.fastbpe.json")
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "fastbpe: error:" in error and says in error


def test_readme_examples_parse():
    """Every command the README's analysis section shows is one the parser accepts."""
    import re
    import shlex

    from fastbpe.cli import build_parser

    readme = (TREE / "README.md").read_text(encoding="utf-8")
    body = readme.split("## Questions about a vocabulary\n", 1)[1].split("\n## ", 1)[0]
    commands = [line[2:] if line.startswith("$ ") else line
                for block in re.findall(r"```(?:sh)?\n(.*?)```", body, re.S)
                for line in block.replace("\\\n", " ").splitlines()
                if re.match(r"(\$ )?fastbpe ", line)]
    assert {c.split()[1] for c in commands} == {"tax", "cost", "trace", "audit"}
    for command in commands:
        build_parser().parse_args(shlex.split(command)[1:])


def test_tax_sweep_command(capsys, tmp_path):
    english = tmp_path / "en.txt"
    english.write_text("the quick brown fox jumps over the lazy dog\n" * 300, encoding="utf-8")
    other = tmp_path / "zz.txt"
    other.write_text("zyxq vwut kjih onml\nsrqp zyxq onml\n" * 200, encoding="utf-8")
    corpus = tmp_path / "p.tsv"
    corpus.write_text("domain\ten\tzz\n" + "x\tthe lazy dog\tzyxq onml vwut\n" * 20, encoding="utf-8")
    argv = ["tax", "--sweep", "--english", str(english), "--other", str(other), "--language", "zz",
            "--corpus", str(corpus), "--vocab-size", "300", "--train-bytes", "8k", "--shares", "0,50"]
    result = run_json(capsys, argv)
    assert [p["share"] for p in result["points"]] == [0.0, 0.5]
    assert result["points"][1]["premium"] < result["points"][0]["premium"]
    out = (main(argv), capsys.readouterr().out)[1]
    assert "premium" in out and "note:" not in out
    # a share its text cannot fill is said, with the share reached
    other.write_text("zyxq vwut kjih onml\n" * 20, encoding="utf-8")
    assert main(argv) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("note: ") and "400 bytes of zz text" in last and "50% is 5% of the training text" in last


def test_cost_takes_the_vocabulary_of_a_tokenizer(capsys, trained):
    tok, path = trained
    result = run_json(capsys, ["cost", "-t", str(path), "--d-model", "32", "--tokens", "10"])
    assert result["vocab"] == tok.n_vocab and result["lm_head_flops"] == 10 * 2 * tok.n_vocab * 32


def test_train_takes_the_word_markers_trace_takes(tmp_path, capsys, worked_example):
    corpus = tmp_path / "malay.txt"
    corpus.write_text(worked_example.text, encoding="utf-8")
    out = tmp_path / "t.fastbpe.json"
    argv = [str(corpus), "--unit", "chars", "--pretokenizer", "whitespace", "--word-start", "_",
            "--min-frequency", "1"]
    assert main(["train", *argv, "--num-merges", "15", "--vocab-size", "1000", "--out", str(out), "-q"]) == 0
    capsys.readouterr()
    tok = fastbpe.load(out)
    assert [(a, b) for a, b, _ in worked_example.merges] == tok.merges
    result = run_json(capsys, ["trace", *argv, "--num-merges", "15", "--words", "0"])
    assert [(m["left"], m["right"], m["count"]) for m in result["merges"]] == worked_example.merges
    assert main(["train", str(corpus), "--word-start", "_", "--out", str(tmp_path / "t.json")]) == 2
    assert "word markers" in capsys.readouterr().err
    # a marker the corpus's own text holds: the command says so as its own warning, and --json lists it
    corpus.write_text("a snake_case b\n", encoding="utf-8")
    assert main(["train", *argv, "--num-merges", "3", "--out", str(out)]) == 0
    assert "fastbpe: warning: word_start='_' is in the corpus's own text (in 'snake_case')" in capsys.readouterr().err
    assert "snake_case" in run_json(capsys, ["train", *argv, "--num-merges", "3", "--out", str(out), "--json"])[
        "warnings"][0]


@pytest.fixture
def two_finals(tmp_path):
    """Two tokenizers saved as e1/final/tokenizer.json and e2/final/tokenizer.json: both named
    'final' by their folder."""
    paths = []
    for run, text in (("e1", "the cat sat on the mat. "), ("e2", "kucing itu duduk di atas tikar. ")):
        (tmp_path / run / "final").mkdir(parents=True)
        path = tmp_path / run / "final" / "tokenizer.json"
        fastbpe.train(text=text * 30, vocab_size=280, progress=False).to_huggingface(path)
        paths.append(str(path))
    return paths


def test_tokenizers_named_alike_keep_their_own_columns(capsys, two_finals, parallel, tmp_path):
    e1, e2 = two_finals
    result = run_json(capsys, ["tax", "-t", e1, "-t", e2, "--corpus", str(parallel)])
    assert result["tokenizers"] == ["e1/final", "e2/final"]
    premiums = {(r["tokenizer"], r["language"]): r["premium"] for r in result["results"]}
    assert premiums[("e1/final", "ms")] != premiums[("e2/final", "ms")]
    text = tmp_path / "t.txt"
    text.write_text("the cat sat on the mat\n", encoding="utf-8")
    rows = run_json(capsys, ["cost", "-t", e1, "-t", e2, "--text", str(text), "--d-model", "8"])["rows"]
    assert [r["tokenizer"] for r in rows] == ["e1/final", "e2/final"]
    (a, b) = run_json(capsys, ["audit", "-t", e1, "-t", e2, "--no-digits"])["results"]
    assert (a["tokenizer"], b["tokenizer"]) == ("e1/final", "e2/final")


@pytest.mark.parametrize("command", [
    ["tax", "--corpus", "p.tsv"],
    ["cost", "--text", "p.tsv", "--d-model", "8"],
    ["audit", "--no-digits"],
])
@pytest.mark.parametrize("tokenizers, label", [
    (["a={e1}", "a={e2}"], "a"),             # one label given twice
    (["{e1}", "final={e2}"], "final"),       # a label given, and a file's name alike
    (["{e1}", "{e1}"], "final"),             # one file twice: no folder tells them apart
])
def test_one_label_for_two_tokenizers_is_refused(command, tokenizers, label, capsys, two_finals, tmp_path,
                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.tsv").write_text("en\tms\nthe cat\tkucing itu\n", encoding="utf-8")
    e1, e2 = two_finals
    argv = list(command)
    for spec in tokenizers:
        argv += ["-t", spec.format(e1=e1, e2=e2)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("fastbpe: error: ") and f"2 tokenizers are labelled {label!r}" in err


@pytest.mark.parametrize("command", [
    ["audit", "-t", "nope/t.json"],
    ["tax", "-t", "nope/t.json", "--corpus", "p.tsv"],
    ["tax", "--sweep", "--english", "nope.txt", "--other", "nope.txt", "--corpus", "p.tsv"],
    ["trace", "nope.txt", "--num-merges", "5"],
    ["skipgram", "nope.txt", "-t", "nope/t.json"],
])
@pytest.mark.parametrize("plot, says", [
    ("missing/x.png", "the folder of --plot 'missing/x.png' does not exist"),
    ("a.txt/x.png", "--plot 'a.txt/x.png' is under 'a.txt', which is a file, not a folder"),
    ("a.txt/b/x.png", "--plot 'a.txt/b/x.png' is under 'a.txt', which is a file, not a folder"),
    (".", "--plot '.' is a folder; give the image file to write in it"),
])
def test_a_plot_that_cannot_be_written_is_refused_before_anything_is_read(command, plot, says, capsys, tmp_path,
                                                                          monkeypatch):
    """(The inputs do not exist either: the --plot error comes first.)"""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("a file\n", encoding="utf-8")
    assert main(command + ["--plot", plot]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"fastbpe: error: {says}\n"


def test_audit_refuses_a_plot_without_digits_before_the_work(capsys):
    assert main(["audit", "-t", "nope/t.json", "--no-digits", "--plot", "x.png"]) == 2
    assert capsys.readouterr().err == "fastbpe: error: --plot draws the digit splits: drop --no-digits\n"


@pytest.mark.parametrize("argv, says", [
    (["audit", "-t", "nope/t.json", "--no-digits", "--digits-up-to", "5"], "--no-digits skips the digit splits that "
                                                                            "--digits-up-to sizes: give one of them"),
    (["audit", "-t", "nope/t.json", "--digits-up-to", "1e12"], "--digits-up-to must be at most 1,000,000,000"),
    (["tax", "--sweep", "-t", "nope/t.json", "--corpus", "p.tsv", "--english", "e.txt", "--other", "o.txt"],
     "--sweep trains its own tokenizers on --english and --other: drop --tokenizer"),
])
def test_options_that_contradict_or_could_never_finish_are_refused_before_the_work(argv, says, capsys):
    """(Each was silently ignored, or ran for minutes: the tokenizer named does not exist either,
    so the refusal comes first.)"""
    assert main(argv) == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize("limit, read", [("2", 2), ("1000", 1000), ("1k", 1000), ("10k", 3600)])
def test_audit_corpus_bytes_is_a_limit(capsys, tmp_path, trained, limit, read):
    corpus = tmp_path / "lines.txt"
    corpus.write_text(("x" * 35 + "\n") * 100, encoding="utf-8")
    (result,) = run_json(capsys, ["audit", "-t", str(trained[1]), "--corpus", str(corpus), "--corpus-bytes", limit,
                                  "--no-digits"])["results"]
    assert result["corpus_bytes"] == read


def test_tax_reads_a_row_count_past_every_row_as_all_and_refuses_a_folder(tmp_path, capsys, parallel, trained):
    """``--rows 1e30`` reads every row (it was islice's own error); ``--corpus`` naming a folder
    says so (it was "[Errno 21] Is a directory")."""
    _, path = trained
    every = run_json(capsys, ["tax", "-t", str(path), "--corpus", str(parallel)])
    assert run_json(capsys, ["tax", "-t", str(path), "--corpus", str(parallel), "--rows", "1e30"]) == every
    assert main(["tax", "-t", str(path), "--corpus", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"fastbpe: error: {tmp_path} is a folder; give a file\n"


@pytest.mark.parametrize("command", [["audit", "--no-digits"], ["tax", "--corpus", "p.tsv"]])
def test_a_tokenizer_that_is_not_there_is_said_before_any_is_worked_on(command, capsys, monkeypatch, tmp_path):
    """The second --tokenizer names no file: the command stops before the first one's work (it
    audited or measured the ones before it first: 41 s for the README's audit)."""
    from fastbpe.cli import audit as audit_command, tax as tax_command

    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.tsv").write_text("en\tms\na\tb\n", encoding="utf-8")
    fastbpe.train(text=SENNRICH, vocab_size=270, progress=False).save(tmp_path / "tok.fastbpe.json")
    worked = []
    monkeypatch.setattr(audit_command, "audit", lambda *a, **k: worked.append(a))
    monkeypatch.setattr(tax_command, "tax", lambda *a, **k: worked.append(a))
    assert main(command + ["-t", "tok.fastbpe.json", "-t", "nope/t.json"]) == 2
    assert "tokenizer file 'nope/t.json' does not exist" in capsys.readouterr().err and worked == []
