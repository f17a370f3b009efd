"""The ``fastbpe`` command, end to end: every trap a new user met has a test here."""
import argparse
import bz2
import gzip
import inspect
import json
import lzma
import os
import subprocess
import sys

import numpy as np
import pytest

import fastbpe
from fastbpe.cli import build_parser, default_corpus, main, parse_size
from fastbpe.cli import encode as encode_module
from fastbpe import shards
from fastbpe.learn.train import training_pattern
from fastbpe.shards import MANIFEST, encode_files, read_shard

EOT = "<|endoftext|>"


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
    tok = fastbpe.load(out)
    assert tok.vocab_size == 270
    assert tok.decode(tok.encode("lowest newer")) == "lowest newer"


def test_missing_file_is_a_clear_error(tmp_path, capsys):
    assert main(["train", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "t.json")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("fastbpe: error:") and "no such file" in error
    assert not (tmp_path / "t.json").exists()


def test_console_script_on_default_corpus(tmp_path):
    """The README's main job: ``fastbpe train`` with no files, as a subprocess; the first line
    it prints says it trains on the standard library, and the file is a tokenizer.json."""
    out = tmp_path / "std.json"
    done = subprocess.run(
        [sys.executable, "-m", "fastbpe", "train", "--vocab-size", "1000", "--out", str(out), "-q"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "no input files given" in done.stderr.splitlines()[0]
    assert "standard library" in done.stderr.splitlines()[0]
    assert json.loads(out.read_text(encoding="utf-8"))["model"]["type"] == "BPE"


# ------------------------------------------------------------------------------ fastbpe encode


@pytest.fixture(scope="module")
def encode_setup(tmp_path_factory, shared_data):
    """A small trained tokenizer saved to a file, and two documents (a plain and a gzip file)."""
    root = tmp_path_factory.mktemp("encode")
    text = shared_data.text("english.txt.gz", 120_000)
    tok = fastbpe.train(text, vocab_size=500, progress=False, special_tokens=[EOT])
    tok.save(root / "tok.json")
    docs = [text[:50_000], text[50_000:]]
    paths = [root / "a.txt", root / "b.txt.gz"]
    paths[0].write_text(docs[0], encoding="utf-8")
    with gzip.open(paths[1], "wt", encoding="utf-8") as f:
        f.write(docs[1])
    return tok, root / "tok.json", paths, docs


def shard_ids(out_dir):
    manifest = json.loads((out_dir / MANIFEST).read_text())
    return np.concatenate([read_shard(out_dir / s["file"]) for s in manifest["shards"]]).tolist()


def test_encode_subcommand(encode_setup, tmp_path, shared_data):
    tok, tok_path, paths, docs = encode_setup
    assert main(["encode", str(paths[0]), str(paths[1]), "--tokenizer", str(tok_path),
                 "--out", str(tmp_path / "out"), "--shard-size", "10000", "--format", "raw", "-q"]) == 0
    assert shard_ids(tmp_path / "out") == tok.encode_ordinary(docs[0]) + [tok.special_tokens[EOT]] + \
        tok.encode_ordinary(docs[1])
    assert main(["encode", str(paths[0]), "--tokenizer", str(tok_path),
                 "--out", str(tmp_path / "out"), "-q", "--no-resume"]) == 2
    # The peers' files work as --tokenizer too.
    assert main(["encode", str(paths[0]), "--tokenizer",
                 str(shared_data.path("tokenizers", "tiktoken", "r50k_base.tiktoken")),
                 "--out", str(tmp_path / "r50k"), "-q"]) == 0
    r50k = fastbpe.openai("r50k_base", shared_data.path("tokenizers", "tiktoken"))
    assert shard_ids(tmp_path / "r50k") == r50k.encode_ordinary(docs[0])
    assert main(["encode", str(paths[0]), "--tokenizer", str(tmp_path / "missing.json"),
                 "--out", str(tmp_path / "x"), "-q"]) == 2


def test_a_warning_reads_as_the_command_s_own(encode_setup, tmp_path, capsys):
    """A warning during a command is said as ``fastbpe: warning: ...``, not as Python shows one
    (the source line that raised it)."""
    tok, tok_path, paths, docs = encode_setup
    assert main(["encode", str(paths[0]), str(paths[0]), "--tokenizer", str(tok_path), "--out", str(tmp_path / "out"),
                 "-q"]) == 0
    error = capsys.readouterr().err
    assert error.splitlines()[0] == (f"fastbpe: warning: the inputs name {paths[0]} (2 times): each is read every "
                                     "time it is named")
    assert "Warning" not in error and ".py" not in error
    sep = [tok.special_tokens[EOT]]
    assert shard_ids(tmp_path / "out") == tok.encode_ordinary(docs[0]) + sep + tok.encode_ordinary(docs[0])


def test_encode_names_the_likely_separators_when_the_default_is_missing(shared_data, tmp_path, capsys):
    """Llama 3's tokenizer has 256 special tokens and no <|endoftext|>: the error names the
    command line's options and a few tokens, the ends of a text and of a turn first, not all.
    A job of one document (one file, --documents file) has nothing to separate: it runs."""
    doc = tmp_path / "a.txt"
    doc.write_text("one document", encoding="utf-8")
    llama3 = str(shared_data.path("tokenizers", "llama3", "tokenizer.json"))
    assert main(["encode", str(doc), "--tokenizer", llama3, "--out", str(tmp_path / "one"), "-q"]) == 0
    assert shard_ids(tmp_path / "one") == fastbpe.load(llama3).encode_ordinary("one document")
    capsys.readouterr()
    assert main(["encode", str(doc), "--tokenizer", llama3, "--out", str(tmp_path / "o"), "-q",
                 "--documents", "line"]) == 2
    error = capsys.readouterr().err
    assert "no special token '<|endoftext|>'" in error and "--no-separator" in error
    assert "256 special tokens: '<|end_of_text|>', '<|eot_id|>'," in error and "... and 251 more" in error
    assert len(error) < 500 and not (tmp_path / "o").exists()
    assert main(["encode", str(doc), "--tokenizer", llama3, "--out", str(tmp_path / "o"), "-q",
                 "--separator", "<|end_of_text|>"]) == 0


def _compressed(path, data: bytes, kind: str) -> None:
    if kind == "zst":
        zstandard = pytest.importorskip("zstandard", reason="reading .zst needs the zstandard module")
        path.write_bytes(zstandard.ZstdCompressor().compress(data))
        return
    opener = {"gz": gzip.open, "gzip-named-txt": gzip.open, "xz": lzma.open, "bz2": bz2.open}[kind]
    with opener(path, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("kind, name", [("gz", "in.txt.gz"), ("xz", "in.txt.xz"), ("bz2", "in.txt.bz2"),
                                        ("zst", "in.txt.zst"), ("gzip-named-txt", "gzip-inside.txt")])
def test_encode_reads_every_compression_train_reads(encode_setup, tmp_path, kind, name):
    tok, tok_path, _, docs = encode_setup
    data = "\n".join(docs).encode()
    (tmp_path / "plain.txt").write_bytes(data)
    _compressed(tmp_path / name, data, kind)
    for source, out in (("plain.txt", "plain"), (name, "packed")):
        assert main(["encode", str(tmp_path / source), "--tokenizer", str(tok_path), "--out", str(tmp_path / out),
                     "--shard-size", "4000", "--format", "raw", "--documents", "line", "-q"]) == 0
    plain, packed = sorted((tmp_path / "plain").glob("*.bin")), sorted((tmp_path / "packed").glob("*.bin"))
    assert len(plain) > 3 and [p.name for p in packed] == [p.name for p in plain]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(plain, packed))


def test_encode_errors_are_clear(encode_setup, tmp_path, capsys):
    _, tok_path, _, _ = encode_setup
    bad = tmp_path / "bad.txt.xz"
    with lzma.open(bad, "wb") as f:
        f.write(b"fine text\nthen \xff\n")
    assert main(["encode", str(bad), "--tokenizer", str(tok_path), "--out", str(tmp_path / "o"), "-q"]) == 2
    error = capsys.readouterr().err
    assert "bad.txt.xz: invalid UTF-8 at byte offset 15 (offset in the decompressed stream)" in error
    assert main(["encode", str(tmp_path / "nope.txt"), "--tokenizer", str(tok_path), "--out", str(tmp_path / "o2"),
                 "-q"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists() and not (tmp_path / "o2").exists()  # (nothing written: no folder)


def test_encode_checks_its_output_folder_first_and_takes_encoding_names(encode_setup, shared_data, tmp_path, capsys,
                                                                         monkeypatch):
    _, tok_path, paths, docs = encode_setup
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text(docs[0][:1000], encoding="utf-8")
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    for out, says in (("", "--out is empty"), ("corpus", "--out 'corpus' is inside the input folder 'corpus'"),
                      ("afile/o", "--out 'afile/o': 'afile' is a file")):
        assert main(["encode", "corpus", "-t", str(tok_path), "--out", out, "-q"]) == 2
        assert says in capsys.readouterr().err.strip().splitlines()[-1]
    assert sorted(os.listdir(tmp_path)) == ["afile", "corpus"] and os.listdir(tmp_path / "corpus") == ["a.txt"]
    (tmp_path / "empty").mkdir()
    assert main(["encode", "empty", "-t", str(tok_path), "--out", "o", "-q"]) == 2
    assert "the inputs name no files" in capsys.readouterr().err and not (tmp_path / "o").exists()
    monkeypatch.setenv("FASTBPE_ENCODINGS", str(shared_data.path("tokenizers", "tiktoken")))
    assert main(["encode", "corpus", "-t", "r50k_base", "--out", "r50k", "-q", "--no-separator"]) == 0
    r50k = fastbpe.openai("r50k_base", shared_data.path("tokenizers", "tiktoken"))
    assert shard_ids(tmp_path / "r50k") == r50k.encode_ordinary(docs[0][:1000])


# ------------------------------------------------------------------------------ no silent traps


@pytest.fixture()
def small_corpus(tmp_path, shared_data):
    path = tmp_path / "b.txt"
    path.write_text(shared_data.text("english.txt.gz", 60_000), encoding="utf-8")
    return path


def _run_json(argv, capsys):
    code = main(argv + ["--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_special_tokens_never_swallow_the_input_files(small_corpus, tmp_path, capsys):
    out = tmp_path / "t.json"
    summary = _run_json(["train", "--special-tokens", "<|endoftext|>", str(small_corpus), "--vocab-size", "300",
                         "--out", str(out)], capsys)
    assert summary["input"] == {**summary["input"], "source": "files", "files": 1,
                                "bytes": small_corpus.stat().st_size, "file_bytes": small_corpus.stat().st_size}
    assert summary["special_tokens"] == {"<|endoftext|>": 299}
    # one flag per token, or a comma list; either spelling
    summary = _run_json(["train", "--special-token", "<|a|>", str(small_corpus), "--special-token", "<|b|>,<|c\\,d|>",
                         "--vocab-size", "300", "--out", str(out)], capsys)
    assert list(summary["special_tokens"]) == ["<|a|>", "<|b|>", "<|c,d|>"] and summary["input"]["files"] == 1
    assert fastbpe.load(out).special_tokens == summary["special_tokens"]
    assert main(["train", str(small_corpus), "--special-token", "a,,b", "--out", str(out)]) == 2
    assert "fastbpe: error:" in capsys.readouterr().err


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"fastbpe {fastbpe.__version__}"
    done = subprocess.run([sys.executable, "-m", "fastbpe", "--version"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == f"fastbpe {fastbpe.__version__}"


def test_the_command_starts_without_numba():
    """Only ``fastbpe skipgram`` needs the Numba kernels: loading them costs every other command
    about half a second to start and a third of one to exit."""
    code = "import sys, fastbpe.cli, fastbpe.analysis; print('numba' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert (done.returncode, done.stdout.strip()) == (0, "False"), done.stderr
    from fastbpe.analysis import SkipGram, skipgram
    assert callable(skipgram) and isinstance(SkipGram, type)


def _subparsers():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


@pytest.mark.parametrize("command", ["train", "encode", "tax", "cost", "trace", "audit"])
def test_every_option_has_help_and_shows_its_default(command):
    sub = _subparsers()[command]
    text = " ".join(sub.format_help().split())
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help, f"{action.option_strings or action.dest} has no help"
        if action.option_strings and action.default not in (None, False, [], argparse.SUPPRESS):
            assert f"(default: {action.default})" in text, f"{action.option_strings[0]} hides its default"
        elif action.option_strings and action.default is None:
            assert "default" in action.help or action.required, f"{action.option_strings[0]}: what if omitted?"


def test_every_number_option_is_bounded_when_the_command_line_is_read():
    """A count, a size or a rate out of range is refused before any file is opened, never by a
    run that fails (or does something odd) later: no option takes a bare int or float."""
    for command, sub in _subparsers().items():
        for action in sub._actions:
            assert action.type not in (int, float), f"{command} {action.option_strings[0]} takes any {action.type}"


def test_defaults_are_the_api_defaults():
    train_api = inspect.signature(fastbpe.train).parameters
    train_cli = _subparsers()["train"]
    for name in ("unit", "min_frequency", "errors", "compat", "workers", "num_merges"):
        assert train_cli.get_default(name) == train_api[name].default, name
    # (the API's None: a table's own pattern, else GPT-2's; the command reads files)
    assert train_cli.get_default("pattern") == training_pattern(None, train_api["pattern"].default) == "gpt2"
    assert train_cli.get_default("special_token") == list(train_api["special_tokens"].default)
    encode_api = inspect.signature(encode_files).parameters
    encode_cli = _subparsers()["encode"]
    for cli_name, api_name in (("shard_size", "shard_size"), ("format", "fmt"), ("documents", "documents"),
                               ("workers", "workers"), ("errors", "errors")):
        assert encode_cli.get_default(cli_name) == encode_api[api_name].default, cli_name
    assert encode_cli.get_default("block_size") == shards.DEFAULT_BLOCK_SIZE
    # (None: the API's, but where one document needs none: cli.encode)
    assert encode_cli.get_default("separator") is None
    assert encode_module.DEFAULT_SEPARATOR == encode_api["separator"].default


def test_sizes_read_as_people_write_them():
    assert parse_size("1e8") == parse_size("100M") == parse_size("100MB") == parse_size("100_000_000") == 10**8
    assert parse_size("4MiB") == parse_size("4Mi") == 4 * 2**20 and parse_size("2k") == 2000
    assert parse_size("1e23") == 10**23 and parse_size("1.000000000000000000000000000001e30") == 10**30 + 1
    for bad in ("abc", "0", "1.5", "-3", "4XB", "1e-3", ""):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_shard_and_block_sizes_accept_1e8(encode_setup, tmp_path, capsys):
    tok, tok_path, paths, docs = encode_setup
    for shard_size, block_size in (("1e8", "4MiB"), ("100M", "1e6"), ("2k", "64KiB")):
        out = tmp_path / f"o-{shard_size}"
        summary = _run_json(["encode", str(paths[0]), "-t", str(tok_path), "-o", str(out), "--shard-size", shard_size,
                             "--block-size", block_size], capsys)
        manifest = json.loads((out / MANIFEST).read_text())
        assert manifest["job"]["shard_size"] == parse_size(shard_size)
        assert manifest["job"]["block_size"] == parse_size(block_size)
        assert summary["tokens"] == len(tok.encode_ordinary(docs[0]))
    assert main(["encode", str(paths[0]), "-t", str(tok_path), "-o", str(tmp_path / "x"), "--shard-size", "lots"]) == 2
    assert "fastbpe: error:" in capsys.readouterr().err


def test_num_merges_and_compat_hf(small_corpus, tmp_path, capsys):
    out = tmp_path / "t.fastbpe.json"
    summary = _run_json(["train", str(small_corpus), "--num-merges", "25", "--out", str(out)], capsys)
    assert summary["merges"] == 25 and len(fastbpe.load(out).merges) == 25
    _run_json(["train", str(small_corpus), "--vocab-size", "400", "--compat", "hf", "--out", str(out)], capsys)
    api = fastbpe.train(small_corpus, vocab_size=400, compat="hf", progress=False)
    assert fastbpe.load(out) == api and api.merge_rule == "pair"


def test_invalid_utf8_fails_by_default_as_in_the_api(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine words here\nthen \xff and more words\n" * 10)
    assert main(["train", str(bad), "--vocab-size", "260", "--out", str(tmp_path / "t.json"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("fastbpe: error:") and "bad.txt: invalid UTF-8 at byte offset 21" in err
    assert "--errors replace" in err
    assert not (tmp_path / "t.json").exists()
    assert main(["train", str(bad), "--vocab-size", "260", "--out", str(tmp_path / "t.json"), "-q",
                 "--errors", "replace"]) == 0


@pytest.mark.parametrize("argv, says", [
    (["train", "--vocab-size", "many"], "is not a size"),
    (["train", "--bogus"], "unrecognized arguments"),
    (["train", "--vocab", "300"], "unrecognized arguments: --vocab"),  # no guessing from abbreviations
    (["train", "--unit", "chars", "--out", "t.json"], "--format fastbpe"),
    (["train", "--out", "no/such/folder/t.json"], "does not exist"),
    (["train", "--out", "."], "is a folder"),
    (["train", "--out", ""], "--out is empty"),
    (["train", "--out", "x" * 300 + ".json"], "its name is longer than a file's name can be"),  # (before training)
    (["encode", "x.txt", "-t", "t.json", "-o", os.devnull], f"{os.devnull!r} is a file, not a folder"),
    (["encode", "x.txt", "-t", "t.json", "-o", "out", "--separator", "<|endoftext|>", "--no-separator"],
     "not allowed with argument --separator"),
    (["train", "--special-token", "a", "--out", "t.json"], "'a' has the text of token 97 in tokenizer.json"),
    (["extend", "x.txt", "-t", "t.json", "--num-merges", "2", "--out", "."], "is a folder"),
    (["train", "--pattern", "gpt5"], "gpt5"),
    (["encode", "x.txt"], "required"),
    (["encode", "x.txt", "-t", "t.json", "-o", "out", "--workers", "0"], "--workers: '0': must be at least 1"),
    (["train", "--workers", "-1"], "must be at least 1"),
    (["train", "--min-frequency", "-1"], "must be at least 0"),
    (["audit", "-t", "t.json", "--examples", "-3"], "must be at least 0"),
    (["skipgram", "x.txt", "-t", "t.json", "--lr", "nan"], "finite number above 0"),
    (["skipgram", "x.txt", "-t", "t.json", "-k", "-2"], "must be at least 1"),
    (["trace", "--words", "two"], "is not a whole number"),
    (["trace", "-t", "t.json", "--word", ""], "argument --word: is empty"),
    (["frobnicate"], "invalid choice"),
    ([], "required"),
])
def test_user_errors_have_one_format_and_exit_code_2(argv, says, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("fastbpe: error: ") and says in last, err
    done = subprocess.run([sys.executable, "-m", "fastbpe", *argv], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].startswith("fastbpe: error: ")


def test_an_output_that_is_also_an_input_is_refused_and_left_as_it_was(tmp_path, capsys, monkeypatch):
    """Writing the tokenizer or a picture over a file the command reads would replace that text:
    refused before any work, the file left as it was (named directly, in a folder given, or
    under a LABEL=); extend may rewrite the tokenizer it extends."""
    monkeypatch.chdir(tmp_path)
    text = "the cat sat on the mat, and the dog sat on the log\n" * 200
    (tmp_path / "corpus").mkdir()
    for name in ("small.txt", "corpus/a.txt"):
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert main(["train", "small.txt", "--vocab-size", "270", "-o", "t.json", "-q"]) == 0
    tokenizer = (tmp_path / "t.json").read_bytes()
    for argv in (["train", "small.txt", "--vocab-size", "270", "-o", "small.txt", "-q"],
                 ["train", "corpus", "--vocab-size", "270", "-o", "corpus/a.txt", "-q"],
                 ["extend", "-t", "t.json", "corpus", "--num-merges", "2", "-o", "corpus/a.txt", "-q"],
                 ["skipgram", "-t", "t.json", "small.txt", "--dim", "4", "--plot", "small.txt"],
                 ["skipgram", "-t", "t.json", "corpus", "--dim", "4", "--plot", "corpus/a.txt"],
                 ["trace", "-t", "mine=t.json", "small.txt", "--plot", "t.json"],
                 ["encode", "-t", "t.json", "small.txt", "-o", "small.txt"]):
        assert main(argv) == 2, argv
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert "is also an input" in last and "give another name" in last, (argv, last)
    assert (tmp_path / "small.txt").read_text(encoding="utf-8") == text
    assert (tmp_path / "corpus" / "a.txt").read_text(encoding="utf-8") == text
    assert (tmp_path / "t.json").read_bytes() == tokenizer
    assert main(["extend", "-t", "t.json", "small.txt", "--num-merges", "2", "-o", "t.json", "-q"]) == 0
    assert (tmp_path / "t.json").read_bytes() != tokenizer


def test_a_tiktoken_file_is_named_so_and_its_sidecar_never_replaces_an_input(tmp_path, capsys, monkeypatch):
    """A tiktoken rank file is read by its name (NAME.tiktoken, NAME.tiktoken.json beside it):
    --format and --out's name must agree, and the sidecar is an output too."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.txt").write_text("the cat sat on the mat\n" * 50, encoding="utf-8")
    for out, fmt in (("t.json", "tiktoken"), ("t", "tiktoken"), ("t.tiktoken", "huggingface"),
                     ("t.tiktoken", "fastbpe")):
        assert main(["train", "c.txt", "--vocab-size", "260", "--out", out, "--format", fmt, "-q"]) == 2
        assert "a tiktoken rank file is read by its name" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["c.txt"]
    corpus = tmp_path / "t.tiktoken.json"  # (a corpus that is the sidecar's name)
    corpus.write_text("the cat sat on the mat\n" * 50, encoding="utf-8")
    assert main(["train", "c.txt", "t.tiktoken.json", "--vocab-size", "260", "--out", "t.tiktoken", "-q"]) == 2
    assert "the file beside --out 't.tiktoken.json' is also an input" in capsys.readouterr().err
    assert corpus.read_text(encoding="utf-8") == "the cat sat on the mat\n" * 50 and not (tmp_path / "t.tiktoken").exists()
    assert main(["train", "c.txt", "--vocab-size", "300", "--special-token", "<a>,<a><b>", "--out", "s.tiktoken",
                 "-q"]) == 2  # (refused before the training, not when writing: see check_special_tokens)
    assert "one begins the other" in capsys.readouterr().err and not (tmp_path / "s.tiktoken").exists()
    assert main(["train", "c.txt", "--vocab-size", "300", "--pattern", "[[:alpha:]]+|.", "--out", "x.tiktoken",
                 "-q"]) == 2  # (a pattern tiktoken's engine reads otherwise: refused before the training too)
    assert "POSIX classes as ASCII" in capsys.readouterr().err and not (tmp_path / "x.tiktoken").exists()
    assert main(["train", "c.txt", "--vocab-size", "260", "--out", "ok.json", "--format", "fastbpe", "-q"]) == 0
    assert fastbpe.load(tmp_path / "ok.json").encode("the cat") == fastbpe.train(
        "c.txt", vocab_size=260, progress=False).encode("the cat")
    # the name is read without its case, by the writer and by the loader alike
    assert main(["train", "c.txt", "--vocab-size", "260", "--out", "UP.TIKTOKEN", "-q"]) == 0
    up, ok = (fastbpe.load(tmp_path / name) for name in ("UP.TIKTOKEN", "ok.json"))
    assert up.encode("the cat") == ok.encode("the cat")


def test_errors_name_the_options_not_the_api_arguments(tmp_path, capsys, monkeypatch):
    """A command's error is the API's; it names the command line's options, not keyword
    arguments (vocab_size=, errors='replace', resume=False, block_size)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.txt").write_text("the cat sat on the mat\n" * 50, encoding="utf-8")
    (tmp_path / "bad.txt").write_bytes(b"ok \xff\n")
    base = fastbpe.train("c.txt", vocab_size=270, special_tokens=["<|endoftext|>"], progress=False)
    base.save(tmp_path / "base.fastbpe.json")
    for argv, says in ((["train", "c.txt", "--vocab-size", "1"], "--vocab-size 1 is smaller"),
                       (["train", "c.txt", "--vocab-size", "99999999999999999999"], "--vocab-size must be at most"),
                       (["train", "c.txt", "--vocab-size", "300", "--special-token", "<a>,<b>,<a>"],
                        "--special-token names '<a>' more than once"),
                       (["extend", "bad.txt", "-t", "base.fastbpe.json", "--num-merges", "2", "--out", "e.json"],
                        "pass --errors replace to replace invalid bytes by U+FFFD, or --errors bytes"),
                       (["encode", "c.txt", "-t", "base.fastbpe.json", "--out", "s", "--block-size", "1000"],
                        "already holds shards of another job (other --block-size)"),
                       (["encode", "c.txt", "-t", "base.fastbpe.json", "--out", "s", "--no-resume"],
                        "already holds shards (--no-resume)")):
        if argv[0] == "encode" and not (tmp_path / "s").exists():
            assert main(["encode", "c.txt", "-t", "base.fastbpe.json", "--out", "s", "-q"]) == 0
        assert main(argv + ["-q"]) == 2, argv
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert says in last and "=" not in last.replace("--", ""), (argv, last)


def test_extend_with_no_new_merge_names_no_new_id(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = fastbpe.train(text="the cat sat on the mat\n" * 50, vocab_size=270, special_tokens=["<|endoftext|>"],
                         progress=False)
    base.save(tmp_path / "base.fastbpe.json")
    (tmp_path / "same.txt").write_text("the cat\n", encoding="utf-8")  # (its chunks are single tokens already)
    argv = ["extend", "same.txt", "-t", "base.fastbpe.json", "--num-merges", "5", "--out", "e.fastbpe.json"]
    assert main(argv + ["--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["new_merges"] == summary["new_tokens"] == 0 and summary["first_new_id"] is None
    assert main(argv) == 0
    assert "0 (no new token" in capsys.readouterr().out


def test_training_on_the_standard_library_only_without_inputs(tmp_path, capsys, monkeypatch):
    """Files given: never the standard library, whatever the options; none: it, said first."""
    monkeypatch.setattr("fastbpe.cli.train.default_corpus", lambda: [tmp_path / "std.txt"])
    (tmp_path / "std.txt").write_text("def f(x):\n    return x\n" * 50, encoding="utf-8")
    summary = _run_json(["train", "--vocab-size", "260", "--out", str(tmp_path / "t.json")], capsys)
    assert summary["input"]["source"] == "stdlib"
    (tmp_path / "mine.txt").write_text("mine " * 100, encoding="utf-8")
    code = main(["train", "--special-tokens", "<s>", str(tmp_path / "mine.txt"), "--vocab-size", "260",
                 "--out", str(tmp_path / "t.json"), "-q"])
    captured = capsys.readouterr()
    assert code == 0 and "standard library" not in captured.err + captured.out


# ------------------------------------------------------------------------------ interoperable outputs


@pytest.fixture(scope="module")
def trained_files(tmp_path_factory, shared_data):
    """One corpus trained by the command into each output format."""
    root = tmp_path_factory.mktemp("outputs")
    corpus = root / "corpus.txt"
    corpus.write_text(shared_data.text("english.txt.gz", 400_000), encoding="utf-8")
    common = [str(corpus), "--vocab-size", "1200", "--special-token", EOT, "-q"]
    for out, extra in (("tokenizer.json", []), ("own.fastbpe.json", []), ("own-json.json", ["--format", "fastbpe"]),
                       ("ranks.tiktoken", [])):
        assert main(["train", *common, "--out", str(root / out), *extra]) == 0
    api = fastbpe.train(corpus, vocab_size=1200, special_tokens=[EOT], progress=False)
    return root, api, shared_data.text("english.txt.gz", 500_000)[400_000:] + " naïve café 😀 <|endoftext|> x"


def test_out_json_is_a_tokenizers_file_with_identical_ids(trained_files):
    tokenizers = pytest.importorskip("tokenizers")
    root, api, text = trained_files
    theirs = tokenizers.Tokenizer.from_file(str(root / "tokenizer.json"))
    ours = fastbpe.load(root / "tokenizer.json")
    want = api.encode(text, allowed_special="all")
    assert theirs.encode(text, add_special_tokens=False).ids == ours.encode(text, allowed_special="all") == want
    assert theirs.decode(want, skip_special_tokens=False) == text


def test_out_json_loads_in_transformers_with_identical_ids(trained_files):
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (optional check)")
    root, api, text = trained_files
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(root / "tokenizer.json"))
    assert fast(text, add_special_tokens=False)["input_ids"] == api.encode(text, allowed_special="all")
    assert fast.convert_tokens_to_ids(EOT) == api.special_tokens[EOT]


def test_fastbpe_format_keeps_the_training_stats(trained_files):
    root, api, text = trained_files
    for name in ("own.fastbpe.json", "own-json.json"):
        data = json.loads((root / name).read_text(encoding="utf-8"))
        assert data["format"] == "fastbpe" and data["training_stats"]["merges"] == len(api.merges)
        loaded = fastbpe.load(root / name)
        assert loaded == api and loaded.training_stats["input_bytes"] == api.training_stats["input_bytes"]


def test_out_tiktoken_writes_ranks_and_sidecar(trained_files):
    tiktoken = pytest.importorskip("tiktoken")
    root, api, text = trained_files
    sidecar = json.loads((root / "ranks.tiktoken.json").read_text(encoding="utf-8"))
    assert sidecar["special_tokens"] == {EOT: api.special_tokens[EOT]}
    from tiktoken.load import load_tiktoken_bpe

    encoding = tiktoken.Encoding(name="mine", pat_str=sidecar["pat_str"],
                                 mergeable_ranks=load_tiktoken_bpe(str(root / "ranks.tiktoken")),
                                 special_tokens=sidecar["special_tokens"])
    ordinary = text.replace(EOT, "")
    assert encoding.encode_ordinary(ordinary) == api.encode_ordinary(ordinary) == \
        fastbpe.load(root / "ranks.tiktoken").encode_ordinary(ordinary)


# ------------------------------------------------------------------------------ shards and summaries


def test_encode_raw_shards_read_with_memmap_and_summary(encode_setup, tmp_path, capsys, monkeypatch):
    tok, tok_path, paths, docs = encode_setup
    totals = []
    real_bar = shards.byte_bar

    def recording_bar(progress, total, desc):
        totals.append(total)
        return real_bar(progress, total, desc)

    monkeypatch.setattr(shards, "byte_bar", recording_bar)
    out = tmp_path / "out"
    assert main(["encode", *map(str, paths), "-t", str(tok_path), "-o", str(out), "--format", "raw",
                 "--shard-size", "5000"]) == 0
    err = capsys.readouterr().err
    assert totals == [sum(p.stat().st_size for p in paths)]  # the bar's total: the input's bytes
    assert "MB/s" in err and "tokens/s" in err
    manifest = json.loads((out / MANIFEST).read_text())
    assert (manifest["format"], manifest["dtype"]) == ("raw", "uint16")
    ids = np.concatenate([np.memmap(out / s["file"], dtype=np.uint16, mode="r") for s in manifest["shards"]])
    assert [len(np.memmap(out / s["file"], dtype=np.uint16, mode="r")) for s in manifest["shards"]] == \
        [s["tokens"] for s in manifest["shards"]]
    assert ids.tolist() == tok.encode_ordinary(docs[0]) + [tok.special_tokens[EOT]] + tok.encode_ordinary(docs[1])


def test_encode_json_summary(encode_setup, tmp_path, capsys):
    tok, tok_path, paths, docs = encode_setup
    summary = _run_json(["encode", str(paths[0]), "-t", str(tok_path), "-o", str(tmp_path / "o"), "--format", "llmc"],
                        capsys)
    assert summary["format"] == "llmc" and summary["tokens"] == len(tok.encode_ordinary(docs[0]))
    assert summary["run"]["text_bytes"] == len(docs[0].encode()) and summary["run"]["tokens_per_second"] > 0
    again = _run_json(["encode", str(paths[0]), "-t", str(tok_path), "-o", str(tmp_path / "o"), "--format", "llmc"],
                      capsys)
    assert again["complete"] and again["run"]["resumed"]


def test_llmc_with_ids_past_uint16_names_the_options(shared_data, tmp_path, capsys):
    (tmp_path / "a.txt").write_text("some text\n", encoding="utf-8")
    rank_file = shared_data.path("tokenizers", "tiktoken", "cl100k_base.tiktoken")
    assert main(["encode", str(tmp_path / "a.txt"), "-t", str(rank_file), "-o", str(tmp_path / "o"),
                 "--format", "llmc"]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "uint16" in last and "--format raw" in last and "fmt=" not in last
    assert not (tmp_path / "o").exists()


def test_damaged_compressed_input_is_one_line_and_exit_2(tmp_path, capsys):
    import gzip

    data = gzip.compress(("the cat sat on the mat. " * 5000).encode())
    bad = tmp_path / "corpus.txt.gz"
    bad.write_bytes(data[: len(data) // 2])
    assert main(["train", str(bad), "--vocab-size", "300", "--out", str(tmp_path / "t.json"), "-q"]) == 2
    error = capsys.readouterr().err
    failures = [line for line in error.splitlines() if line.startswith("fastbpe: error:")]
    assert len(failures) == 1 and "corpus.txt.gz" in failures[0] and "truncated" in failures[0]
    assert "Traceback" not in error and not (tmp_path / "t.json").exists()


def test_every_command_loads_with_the_help_line_it_is_listed_with():
    from fastbpe.cli import COMMANDS

    listed = " ".join(build_parser().format_help().split())
    for command, line in COMMANDS.items():
        assert f"{command} {line}" in listed
        sub = _subparsers()[command]
        text = sub.format_help()  # (the command's module adds its arguments here)
        assert text.startswith(f"usage: fastbpe {command}") and len(sub._actions) > 1, command
        assert sub.description and " ".join(sub.description.split()) in " ".join(text.split())


@pytest.mark.parametrize("argv, numpy_loaded, preset, expected", [
    (["encode", "a.txt"], False, {}, "1"),
    (["train", "a.txt", "--vocab-size", "300"], False, {}, "1"),
    (["skipgram", "a.txt"], False, {}, None),  # its embeddings use BLAS
    (["encode", "a.txt"], True, {}, None),  # too late: numpy started its pool
    (["encode", "a.txt"], False, {"OMP_NUM_THREADS": "4"}, None),  # the user's choice stands
    (["encode", "a.txt"], False, {"OPENBLAS_NUM_THREADS": "3"}, "3"),
    ([], False, {}, None),
])
def test_commands_without_linear_algebra_ask_for_one_blas_thread(monkeypatch, argv, numpy_loaded, preset, expected):
    """Run as the program, a command that does no large linear algebra asks OpenBLAS for one
    thread before numpy loads, unless a thread count is set; others are left alone."""
    from fastbpe import cli

    env = {k: v for k, v in os.environ.items() if k not in cli.BLAS_THREAD_SETTINGS}
    env.update(preset)
    monkeypatch.setattr(os, "environ", env)  # (a copy: nothing set here outlives the test)
    if not numpy_loaded:
        monkeypatch.delitem(sys.modules, "numpy", raising=False)  # (restored after the test)
    cli._one_blas_thread(argv)
    assert env.get("OPENBLAS_NUM_THREADS") == expected


@pytest.mark.parametrize("signal_error, code, line", [(KeyboardInterrupt, 130, "fastbpe: interrupted"),
                                                      ("Terminated", 143, "fastbpe: terminated")])
def test_a_signal_while_the_command_loads_is_one_line(monkeypatch, capsys, signal_error, code, line):
    """Parsing loads the command's module (numpy, the trainer): a Ctrl-C or SIGTERM landing
    there ends the command like one landing later, without a traceback."""
    import fastbpe.cli as cli

    error = getattr(cli, signal_error) if isinstance(signal_error, str) else signal_error

    class LoadingParser:
        def parse_args(self, argv):
            raise error()

    monkeypatch.setattr(cli, "build_parser", LoadingParser)
    assert main(["train", "--help"]) == code
    assert capsys.readouterr().err.strip() == line


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    """``fastbpe trace ... | head -2``: once the reader has closed the pipe, the command stops
    as a program SIGPIPE ends (exit 141), saying nothing (it reported a broken pipe as an error)."""
    import random

    rng = random.Random(0)  # (words enough for 3,000 merges: about 340 KB of output, five pipe buffers)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 10))) for _ in range(20000)]
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(" ".join(words[k:k + 10]) + "\n" for k in range(0, len(words), 10)), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "fastbpe", "trace", str(corpus), "--num-merges", "3000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # (what head does after its lines)
    with proc.stderr:
        err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141 and first.startswith(b"start:") and err == b""


def test_training_that_stops_short_of_the_size_asked_says_so(tmp_path, capsys):
    """min-frequency reached before --vocab-size (or --num-merges): a warning, and --json's
    warnings list it; none when the size is reached."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world the cat sat\n" * 50, encoding="utf-8")
    short = _run_json(["train", str(corpus), "--vocab-size", "1000", "--out", str(tmp_path / "t.json")], capsys)
    assert short["warnings"] == [f"training stopped at {short['merges']} merges (vocab size {short['vocab_size']}), "
                                 "short of --vocab-size 1,000: no pair of the corpus occurs 2 times or more any longer "
                                 "(--min-frequency)"]
    assert "short of --num-merges 500" in _run_json(["train", str(corpus), "--num-merges", "500", "--out",
                                                     str(tmp_path / "t.json")], capsys)["warnings"][0]
    for floor in ("0", "1"):  # (0 is 1, as Hugging Face's BpeTrainer reads it: every pair occurs)
        assert _run_json(["train", str(corpus), "--vocab-size", "1000", "--min-frequency", floor, "--out",
                          str(tmp_path / "t.json")], capsys)["warnings"][0].endswith(
            "short of --vocab-size 1,000: every chunk of the corpus is one token")
    assert _run_json(["train", str(corpus), "--vocab-size", "260", "--out", str(tmp_path / "t.json")],
                     capsys)["warnings"] == []


def test_out_to_stdout_writes_the_file_there_and_the_summary_to_stderr(tmp_path):
    """``-o /dev/stdout >> log``: the tokenizer is appended after what the log held (a file
    renamed over /dev/stdout's target replaced the whole log), and the summary goes to stderr,
    not after the file's bytes."""
    if not os.path.exists("/dev/stdout"):
        pytest.skip("needs /dev/stdout (a POSIX system)")
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world the cat sat\n" * 50, encoding="utf-8")
    log = tmp_path / "log.txt"
    log.write_bytes(b"an earlier line\n")
    with open(log, "ab") as out:
        done = subprocess.run([sys.executable, "-m", "fastbpe", "train", str(corpus), "--vocab-size", "260", "-o",
                               "/dev/stdout", "-q"], stdout=out, stderr=subprocess.PIPE, timeout=120)
    assert done.returncode == 0 and b"wrote           /dev/stdout" in done.stderr
    held = log.read_bytes()
    assert held.startswith(b"an earlier line\n")
    assert json.loads(held[len(b"an earlier line\n"):])["model"]["type"] == "BPE"


def test_the_summary_tells_text_from_file_bytes(tmp_path, capsys):
    corpus = tmp_path / "bad.txt"
    corpus.write_bytes(b"ab\xff\xfe cd " * 125_000)  # each invalid byte becomes U+FFFD, 3 bytes of text
    out = str(tmp_path / "t.json")
    summary = _run_json(["train", str(corpus), "--vocab-size", "270", "--errors", "replace", "--out", out], capsys)
    assert summary["input"]["file_bytes"] == 1_000_000 and summary["input"]["bytes"] == 1_500_000
    assert main(["train", str(corpus), "--vocab-size", "270", "--errors", "replace", "--out", out]) == 0
    assert "input           1.5 MB of text (1.0 MB of files) in 1 file," in capsys.readouterr().out


def test_the_summary_shows_bytes_of_a_character_once_escaped(tmp_path, capsys):
    corpus = tmp_path / "euro.txt"
    corpus.write_text("€€€ euro " * 300, encoding="utf-8")
    assert main(["train", str(corpus), "--vocab-size", "262", "--out", str(tmp_path / "t.json")]) == 0
    merges = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("first merges"))
    assert merges.split(None, 2)[2].startswith(r"'\xe2'+'\x82', '\xe2\x82'+'\xac'")


def test_running_out_of_memory_is_said_not_a_traceback(tmp_path, capsys, monkeypatch):
    from fastbpe.cli import train as train_command

    def out_of_memory(*args):
        raise MemoryError("std::bad_alloc")

    monkeypatch.setattr(train_command, "_train", out_of_memory)
    (tmp_path / "c.txt").write_text("the cat sat\n")
    assert main(["train", str(tmp_path / "c.txt"), "--out", str(tmp_path / "t.json")]) == 2
    assert "\nfastbpe: error: out of memory (std::bad_alloc): " in capsys.readouterr().err
