"""The ``fastbpe`` command, end to end."""
import bz2
import gzip
import json
import lzma
import subprocess
import sys

import numpy as np
import pytest

import fastbpe
from fastbpe.cli import default_corpus, main
from fastbpe import Tokenizer
from fastbpe.shards import MANIFEST, read_shard

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
                 "--out", str(tmp_path / "out"), "--shard-size", "10000", "--format", "bin", "-q"]) == 0
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
                     "--shard-size", "4000", "--format", "bin", "--documents", "line", "-q"]) == 0
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
