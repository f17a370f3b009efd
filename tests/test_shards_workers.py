"""encode_files on worker threads: the shards and the manifest of any worker count are those of
one worker (same ids, same files, same resume points), on documents of every size: empty ones,
one long document cut into many tasks, many tiny ones; an error in a task names the file."""
import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe import shards
from fastbpe.shards import MANIFEST, encode_files, read_shard

from tests.interrupts import interrupt_at_shard

EOT = "<|endoftext|>"
TEXT = "the cat sat on the mat; le chat était assis. 猫が座った. кот сидел 😀 \n\n" * 30


@pytest.fixture(scope="module")
def byte_level():
    return fastbpe.train(TEXT, vocab_size=330, progress=False, special_tokens=[EOT])


@pytest.fixture(scope="module")
def char_level():
    return fastbpe.train(TEXT, vocab_size=200, unit="chars", pattern="whitespace", progress=False,
                         special_tokens=[EOT])


@pytest.fixture
def small_tasks(monkeypatch):
    """Tasks of a few bytes, so that short inputs make many tasks and long blocks many pieces."""
    monkeypatch.setattr(shards, "TASK_BYTES", 64)
    monkeypatch.setattr(shards, "TASK_PIECES", 5)


def shard_files(out_dir):
    """The manifest without its timings, and every shard file's bytes."""
    manifest = json.loads((out_dir / MANIFEST).read_text())
    manifest.pop("seconds", None)
    return manifest, {s["file"]: (out_dir / s["file"]).read_bytes() for s in manifest["shards"]}


def documents_of(seed: int, count: int) -> list:
    rng = random.Random(seed)
    words = TEXT.split(" ") + ["", "\n", "\n\n", " ", "<|endoftext|>"]
    out = []
    for _ in range(count):
        size = rng.choice([0, 0, 1, 3, 20, 400])
        out.append(" ".join(rng.choice(words) for _ in range(size)))
    return out


@pytest.mark.parametrize("documents", ["file", "line", "blank-line"])
def test_any_worker_count_writes_the_shards_of_one_worker(byte_level, tmp_path, small_tasks, documents):
    docs = documents_of(1, 60) + ["", "x" * 3000 + " long " * 500, ""] + ["a", "", "b c"] * 30
    paths = []
    for i in range(0, len(docs), 20):  # several files; some hold only empty documents
        path = tmp_path / f"in{i:03d}.txt"
        path.write_text("\n".join(docs[i:i + 20]), encoding="utf-8")
        paths.append(path)
    (tmp_path / "empty.txt").write_bytes(b"")
    paths.insert(2, tmp_path / "empty.txt")
    options = dict(shard_size=97, fmt="raw", progress=False, documents=documents, block_size=200)
    encode_files(byte_level, paths, tmp_path / "w1", workers=1, **options)
    want = shard_files(tmp_path / "w1")
    assert len(want[1]) > 5
    for workers in (2, 3):
        encode_files(byte_level, paths, tmp_path / f"w{workers}", workers=workers, **options)
        assert shard_files(tmp_path / f"w{workers}") == want
    # and the ids are those of every document encoded whole, a separator between them
    ids = np.concatenate([read_shard(tmp_path / "w1" / name) for name in want[1]]).tolist()
    if documents == "file":
        pieces = [p.read_text(encoding="utf-8") for p in paths]
    elif documents == "line":
        pieces = [line for p in paths for line in p.read_text(encoding="utf-8").split("\n")]
    else:
        pieces = None
    if pieces is not None:
        expected = []
        for doc in (d for d in pieces if d):
            expected += ([byte_level.special_tokens[EOT]] if expected else []) + byte_level.encode_ordinary(doc)
        assert ids == expected


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(st.sampled_from("ab é\n猫😀<|>"), max_size=300), max_size=6), st.integers(2, 3),
       st.sampled_from(["file", "line"]))
def test_generated_documents_any_worker_count(byte_level, tmp_path_factory, small_tasks, docs, workers, documents):
    root = tmp_path_factory.mktemp("gen")
    paths = []
    for i, doc in enumerate(docs):
        paths.append(root / f"d{i}.txt")
        paths[-1].write_text(doc, encoding="utf-8")
    if not paths:
        return
    options = dict(shard_size=13, fmt="npy", progress=False, documents=documents, block_size=50)
    encode_files(byte_level, paths, root / "one", workers=1, **options)
    encode_files(byte_level, paths, root / "many", workers=workers, **options)
    assert shard_files(root / "many") == shard_files(root / "one")


def test_a_tokenizer_without_the_one_call_path_gives_the_same_shards(char_level, tmp_path, small_tasks):
    path = tmp_path / "in.txt"
    path.write_text("the cat sat\n\non the mat\n" * 40, encoding="utf-8")
    options = dict(shard_size=50, fmt="raw", progress=False, block_size=100)
    for documents in ("file", "line"):
        encode_files(char_level, [path], tmp_path / f"{documents}1", workers=1, documents=documents, **options)
        encode_files(char_level, [path], tmp_path / f"{documents}2", workers=2, documents=documents, **options)
        assert shard_files(tmp_path / f"{documents}2") == shard_files(tmp_path / f"{documents}1")


def test_a_resumed_run_on_workers_ends_with_the_shards_of_one_worker(byte_level, tmp_path, small_tasks, monkeypatch):
    path = tmp_path / "in.txt"
    path.write_text("\n".join(documents_of(2, 100)), encoding="utf-8")
    for documents in ("file", "line"):
        options = dict(shard_size=700, fmt="raw", progress=False, documents=documents, block_size=150)
        encode_files(byte_level, [path], tmp_path / f"{documents}-whole", workers=1, **options)
        out = tmp_path / f"{documents}-resumed"
        with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
            interrupt_at_shard(patched, 5)  # as the fifth shard is finished
            encode_files(byte_level, [path], out, workers=3, **options)
        assert not list(out.glob(".tmp-*"))
        assert not json.loads((out / MANIFEST).read_text())["complete"]
        encode_files(byte_level, [path], out, workers=2, **options)
        assert shard_files(out) == shard_files(tmp_path / f"{documents}-whole")


def test_errors_in_a_task_name_the_file(tmp_path, small_tasks):
    ascii_only = fastbpe.Tokenizer([bytes([b]) for b in range(128)], [], pattern="gpt2")
    path = tmp_path / "accented.txt"
    path.write_text("plain words " * 40 + "café" + " more" * 40, encoding="utf-8")
    for workers, documents in ((1, "file"), (2, "file"), (2, "line")):  # (line: tasks of whole documents)
        with pytest.raises(ValueError, match=r"accented\.txt, byte offset 483: byte 0xc3 is not in the vocabulary"):
            encode_files(ascii_only, [path], tmp_path / f"o{workers}{documents}", workers=workers, separator=None,
                         documents=documents, progress=False)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"word " * 100 + b"x\xc3(" + b" word" * 100)
    for workers, documents in ((1, "file"), (2, "file"), (3, "line")):
        with pytest.raises(fastbpe.corpus.files.CorpusDecodeError,
                           match=r"bad\.txt: invalid UTF-8 at byte offset 501 \(byte 0xc3\)"):
            encode_files(ascii_only, [bad], tmp_path / f"b{workers}{documents}", workers=workers, separator=None,
                         documents=documents, progress=False)


def test_errors_in_a_cluster_partition_name_the_file(tmp_path):
    """A partition encoded on a cluster worker reports a byte outside the vocabulary as a local
    run does: the file and the byte offset."""
    ascii_only = fastbpe.Tokenizer([bytes([b]) for b in range(128)], [], pattern="gpt2")
    path = tmp_path / "accented.txt"
    path.write_text("plain words " * 40 + "café" + " more" * 40, encoding="utf-8")
    part = shards._plan_partitions([path], 1 << 20, "file", False)[0]
    options = {"documents": "file", "block_size": 100, "format": "raw", "shard_size": 50, "separator_id": None}
    (tmp_path / "out").mkdir()
    with pytest.raises(ValueError, match=r"accented\.txt, byte offset 483: byte 0xc3 is not in the vocabulary"):
        shards.encode_partition(ascii_only, part, 0, str(tmp_path / "out"), options, False)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=200).map(lambda b: b.replace(b"\r", b"")) |
                st.lists(st.sampled_from(["ab ", "é", "\n", "猫", "😀", EOT, " <|", "|>"]), max_size=60).map(
                    lambda parts: "".join(parts).encode()), min_size=1, max_size=5),
       st.integers(2, 3), st.sampled_from(["file", "line"]))
def test_generated_bytes_any_worker_count_same_shards_or_same_error(byte_level, tmp_path_factory, small_tasks, docs,
                                                                    workers, documents):
    """Files of random bytes (invalid UTF-8 most often) or of text with the separator's own text
    in it: any worker count writes one worker's shards, or raises one worker's error (the
    same file, the same byte offset)."""
    root = tmp_path_factory.mktemp("bytes")
    paths = []
    for i, doc in enumerate(docs):
        paths.append(root / f"d{i}.txt")
        paths[-1].write_bytes(doc)
    options = dict(shard_size=13, fmt="raw", progress=False, documents=documents, block_size=50)

    def outcome(out, count):
        try:
            encode_files(byte_level, paths, root / out, workers=count, **options)
        except fastbpe.corpus.files.CorpusDecodeError as exc:
            return str(exc)
        return shard_files(root / out)

    assert outcome("many", workers) == outcome("one", 1)


def test_a_block_goes_to_the_workers_before_the_next_is_read(byte_level, tmp_path, monkeypatch):
    """encode_files takes each block as soon as it is cut (the first task starts after the
    first block's pieces are read, not the second's); input_blocks gives the same blocks, a
    file's bytes read after its last block added to that block's count."""
    text = ("the cat sat on the mat " * 200).encode()
    (tmp_path / "a.txt").write_bytes(text)
    (tmp_path / "empty.txt").write_bytes(b"")
    paths = [tmp_path / "a.txt", tmp_path / "empty.txt"]
    pulled = []
    real_pieces = shards.read_pieces

    def counted(reader, size):
        for piece in real_pieces(reader, size):
            pulled.append(len(piece))
            yield piece

    monkeypatch.setattr(shards, "read_pieces", counted)
    items = shards._blocks(byte_level, paths, "file", 1000)
    first = next(items)
    assert len(first.data) >= 1000 and len(pulled) == 2  # the piece it ends in, no further one
    items = [first] + list(items)
    blocks = [item for item in items if not isinstance(item, int)]
    assert [b.data for b in blocks] == [b.data for b in shards.input_blocks(byte_level, paths, "file", 1000)]
    assert b"".join(b.data for b in blocks) == text and blocks[-1] == shards.Block(b"", True, str(paths[1]), 0, 0)
    folded = list(shards.input_blocks(byte_level, paths, "file", 1000))
    assert [b.raw for b in folded[:-1]] == [b.raw for b in blocks[:-2]] + [blocks[-2].raw + items[-3]]
    assert sum(b.raw for b in folded) == len(text) and folded[-1].raw == 0


@pytest.mark.parametrize("docs", [[""], ["the cat sat"] * 3])
def test_a_new_job_records_the_tokenizer_digest_and_resumes(byte_level, tmp_path, docs):
    """The digest of a new job is computed once its first tasks run (or at its first checkpoint
    when it has none): the manifest holds it, and a rerun recognises its job. (A job of no
    file is refused, as train refuses it.)"""
    with pytest.raises(ValueError, match="the inputs name no files"):
        encode_files(byte_level, [], tmp_path / "none", progress=False)
    paths = []
    for i, doc in enumerate(docs):
        paths.append(tmp_path / f"d{i}.txt")
        paths[-1].write_text(doc, encoding="utf-8")
    out = tmp_path / "out"
    options = dict(shard_size=5, fmt="raw", progress=False, workers=2)
    manifest = encode_files(byte_level, paths, out, **options)
    assert manifest["job"]["tokenizer_digest"] == shards._tokenizer_digest(byte_level)
    assert json.loads((out / MANIFEST).read_text())["job"] == manifest["job"]
    assert encode_files(byte_level, paths, out, **options)["job"] == manifest["job"]  # complete: resumed as is
