"""Token shards: exact ids, separators, both formats, atomic and resumable output, the CLI hook."""
import gzip
import json

import numpy as np
import pytest

import fastbpe
from fastbpe import shards
from fastbpe.cli import main
from fastbpe.shards import MANIFEST, encode_files, read_shard


EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def tok(shared_data):
    return fastbpe.train(shared_data.text("english.txt.gz", 200_000), vocab_size=800, progress=False,
                         special_tokens=[EOT])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, shared_data):
    """Three documents: plain text, gzip, and one with awkward whitespace at every line end."""
    root = tmp_path_factory.mktemp("corpus")
    text = shared_data.text("english.txt.gz", 260_000)
    docs = [text[:60_000], text[60_000:200_000],
            "  trailing  \nspaces \n\nand x\nlines\n  \n" * 300 + "it has <|endoftext|> inside"]
    paths = [root / "a.txt", root / "b.txt.gz", root / "c.txt"]
    paths[0].write_text(docs[0], encoding="utf-8")
    with gzip.open(paths[1], "wt", encoding="utf-8") as f:
        f.write(docs[1])
    paths[2].write_text(docs[2], encoding="utf-8")
    return paths, docs


def expected_ids(tok, docs):
    out = []
    for i, doc in enumerate(d for d in docs if d):
        if i:
            out.append(tok.special_tokens[EOT])
        out.extend(tok.encode_ordinary(doc))
    return out


def all_ids(out_dir):
    manifest = json.loads((out_dir / MANIFEST).read_text())
    return manifest, np.concatenate([read_shard(out_dir / s["file"]) for s in manifest["shards"]]).tolist()


@pytest.mark.parametrize("fmt", ["npy", "bin"])
def test_shards_hold_exactly_the_ids(tok, corpus, tmp_path, fmt):
    paths, docs = corpus
    manifest = encode_files(tok, paths, tmp_path, shard_size=7000, fmt=fmt, workers=2, progress=False,
                            block_chars=3000)
    got_manifest, ids = all_ids(tmp_path)
    assert ids == expected_ids(tok, docs)
    assert manifest["complete"] and got_manifest["tokens"] == len(ids)
    sizes = [s["tokens"] for s in got_manifest["shards"]]
    assert all(n == 7000 for n in sizes[:-1]) and 0 < sizes[-1] <= 7000
    assert all(read_shard(tmp_path / s["file"]).dtype == np.uint16 for s in got_manifest["shards"])
    assert not list(tmp_path.glob(".tmp-*"))


def test_block_cuts_change_no_id_with_cl100k(corpus, tmp_path, shared_data):
    tok = fastbpe.openai("cl100k_base", shared_data.path("tokenizers", "tiktoken"))
    paths, docs = corpus
    encode_files(tok, paths[2:], tmp_path, shard_size=10**6, workers=1, progress=False, block_chars=200)
    _, ids = all_ids(tmp_path)
    assert ids == tok.encode_ordinary(docs[2])


def test_documents_by_blank_line(tok, tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("first doc\nline two\n\n\nsecond doc\n\nthird", encoding="utf-8")
    encode_files(tok, [path], tmp_path / "out", shard_size=100, documents="blank-line", progress=False)
    _, ids = all_ids(tmp_path / "out")
    assert ids == expected_ids(tok, ["first doc\nline two", "second doc", "third"])
    encode_files(tok, [path], tmp_path / "nosep", shard_size=100, separator=None, progress=False)
    assert all_ids(tmp_path / "nosep")[1] == tok.encode_ordinary(path.read_text())


def test_interrupted_run_resumes_to_the_same_output(tok, corpus, tmp_path, monkeypatch):
    paths, docs = corpus
    reference_dir = tmp_path / "whole"
    encode_files(tok, paths, reference_dir, shard_size=5000, fmt="bin", progress=False, block_chars=4000)
    _, reference = all_ids(reference_dir)

    real_write = shards._write_shard
    calls = []

    def failing_write(path, ids, fmt):
        calls.append(path)
        if len(calls) == 4:
            raise KeyboardInterrupt  # an interrupt in the middle of the fourth shard
        real_write(path, ids, fmt)

    out = tmp_path / "resumed"
    monkeypatch.setattr(shards, "_write_shard", failing_write)
    with pytest.raises(KeyboardInterrupt):
        encode_files(tok, paths, out, shard_size=5000, fmt="bin", progress=False, block_chars=4000)
    monkeypatch.setattr(shards, "_write_shard", real_write)
    manifest = json.loads((out / MANIFEST).read_text())
    assert len(manifest["shards"]) == 3 and not manifest["complete"]
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST] + [f"shard_{i:06d}.bin" for i in range(3)]
    encode_files(tok, paths, out, shard_size=5000, fmt="bin", progress=False, block_chars=4000)
    manifest, ids = all_ids(out)
    assert manifest["complete"] and ids == reference
    # Running again is a no-op; a different job in the same folder is refused.
    assert encode_files(tok, paths, out, shard_size=5000, fmt="bin", progress=False, block_chars=4000)["complete"]
    with pytest.raises(ValueError, match="another job"):
        encode_files(tok, paths, out, shard_size=6000, fmt="bin", progress=False)


def test_damaged_shards_are_clear_errors(tok, tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("some text " * 200, encoding="utf-8")
    encode_files(tok, [path], tmp_path / "o", shard_size=50, fmt="bin", progress=False)
    shard = tmp_path / "o" / "shard_000000.bin"
    data = shard.read_bytes()
    shard.write_bytes(data[:-3])
    with pytest.raises(ValueError, match="does not match its header"):
        read_shard(shard)
    shard.write_bytes(b"NOTMAGIC" + data[8:])
    with pytest.raises(ValueError, match="magic"):
        read_shard(shard)
    shard.write_bytes(data[:10])
    with pytest.raises(ValueError, match="truncated"):
        read_shard(shard)
    with pytest.raises(ValueError, match="does not match|magic|truncated"):
        encode_files(tok, [path], tmp_path / "o", shard_size=50, fmt="bin", progress=False)
    shard.unlink()
    with pytest.raises(ValueError, match="cannot be read"):
        encode_files(tok, [path], tmp_path / "o", shard_size=50, fmt="bin", progress=False)
    (tmp_path / "o" / MANIFEST).write_text("{not json")
    with pytest.raises(ValueError, match="unreadable manifest"):
        encode_files(tok, [path], tmp_path / "o", shard_size=50, fmt="bin", progress=False)


def test_bad_arguments(tok, tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("text", encoding="utf-8")
    with pytest.raises(ValueError, match="no such file"):
        encode_files(tok, [tmp_path / "missing.txt"], tmp_path / "o")
    with pytest.raises(ValueError, match="fmt"):
        encode_files(tok, [path], tmp_path / "o", fmt="csv")
    with pytest.raises(ValueError, match="shard_size"):
        encode_files(tok, [path], tmp_path / "o", shard_size=0)
    with pytest.raises(ValueError, match="no special token"):
        encode_files(tok, [path], tmp_path / "o", separator="<|nope|>")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok \xff\xfe not utf-8")
    with pytest.raises(ValueError, match="not UTF-8"):
        encode_files(tok, [bad], tmp_path / "o2", progress=False)


def test_cli_subcommand(tok, corpus, tmp_path, shared_data):
    paths, docs = corpus
    tok.save(tmp_path / "tok.json")
    assert main(["encode", str(paths[0]), str(paths[1]), "--tokenizer", str(tmp_path / "tok.json"),
                              "--out", str(tmp_path / "out"), "--shard-size", "10000", "--format", "bin", "-q"]) == 0
    _, ids = all_ids(tmp_path / "out")
    assert ids == expected_ids(tok, docs[:2])
    assert main(["encode", str(paths[0]), "--tokenizer", str(tmp_path / "tok.json"),
                              "--out", str(tmp_path / "out"), "-q", "--no-resume"]) == 2
    # The peers' files work as --tokenizer too.
    assert main(["encode", str(paths[0]), "--tokenizer",
                              str(shared_data.path("tokenizers", "tiktoken", "r50k_base.tiktoken")),
                              "--out", str(tmp_path / "r50k"), "-q"]) == 0
    r50k = fastbpe.openai("r50k_base", shared_data.path("tokenizers", "tiktoken"))
    assert all_ids(tmp_path / "r50k")[1] == r50k.encode_ordinary(docs[0])
    assert main(["encode", str(paths[0]), "--tokenizer", str(tmp_path / "missing.json"),
                              "--out", str(tmp_path / "x"), "-q"]) == 2
