"""Runs on a Dask cluster: the same tables, tokenizers and token streams as local runs.

One process-based LocalCluster on loopback TCP serves the whole module: tasks, tokenizers and
tables really cross process boundaries through serialization, as on several machines.
"""
import gzip
import json
import operator
import os
from pathlib import Path

import numpy as np
import pytest

import fastbpe
from fastbpe import shards
from fastbpe.cli import main
from fastbpe.cluster import OrderedReduction, WorkerVersionError
from fastbpe.shards import MANIFEST, encode_files, read_shard

distributed = pytest.importorskip("distributed", reason="dask.distributed not installed (pip install '.[test]')")

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, shared_data):
    """English and code text as a plain file, a gzip file, an empty file first (its partition
    has no text, so the next one must not start with a separator) and a folder of three files
    with blank lines and lines of every length."""
    root = tmp_path_factory.mktemp("cluster-corpus")
    english = shared_data.text("english.txt.gz", 240_000)
    code = shared_data.text("code.txt.gz", 120_000)
    (root / "0-empty.txt").write_bytes(b"")
    (root / "1-english.txt").write_text(english[:160_000], encoding="utf-8")
    with gzip.open(root / "2-code.txt.gz", "wt", encoding="utf-8") as f:
        f.write(code)
    folder = root / "3-folder"
    folder.mkdir()
    (folder / "a.txt").write_text(english[160_000:], encoding="utf-8")
    (folder / "b.txt").write_text("  x\n\n\n y\n\nz \n" * 3000 + "\n\n", encoding="utf-8")
    (folder / "c.txt").write_text("\n\nno final newline", encoding="utf-8")
    return [root / "0-empty.txt", root / "1-english.txt", root / "2-code.txt.gz", folder]


@pytest.fixture(scope="module")
def tok(shared_data):
    text = shared_data.text("english.txt.gz", 100_000) + shared_data.text("code.txt.gz", 50_000)
    return fastbpe.train(text=text, vocab_size=700, special_tokens=[EOT], progress=False)


def stream(out_dir):
    """The manifest and the ids of its shards read in its order."""
    manifest = json.loads((Path(out_dir) / MANIFEST).read_text())
    parts = [read_shard(Path(out_dir) / s["file"]) for s in manifest["shards"]]
    return manifest, (np.concatenate(parts).tolist() if parts else [])


def shard_files(out_dir):
    return sorted(p.name for p in Path(out_dir).iterdir() if p.name != MANIFEST)


OPTIONS = dict(shard_size=6000, fmt="raw", block_size=5000, progress=False)


@pytest.fixture(scope="module")
def local_streams(tok, corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("local")
    out = {}
    for documents in ("file", "line", "blank-line"):
        encode_files(tok, corpus, root / documents, documents=documents, **OPTIONS)
        out[documents] = stream(root / documents)[1]
    return out


@pytest.mark.parametrize("errors", ["replace", "bytes"])
def test_invalid_utf8_on_the_cluster_as_locally(client, tok, tmp_path, errors):
    text = ("caf\xe9 \xff\xfe au lait, a\xe2\x82 line\n".encode("latin-1") + "no\u00ebl\n".encode()) * 4000
    (tmp_path / "in.txt").write_bytes(text)
    encode_files(tok, [tmp_path / "in.txt"], tmp_path / "local", errors=errors, **OPTIONS)
    encode_files(tok, [tmp_path / "in.txt"], tmp_path / "cluster", errors=errors, cluster=client,
                 partition_size=20_000, **OPTIONS)
    assert stream(tmp_path / "cluster")[1] == stream(tmp_path / "local")[1] != []


@pytest.mark.parametrize("documents", ["file", "line", "blank-line"])
def test_shards_on_the_cluster_hold_the_local_token_stream(client, tok, corpus, local_streams, tmp_path, documents):
    manifest = encode_files(tok, corpus, tmp_path, documents=documents, cluster=client, partition_size=40_000,
                            **OPTIONS)
    _, ids = stream(tmp_path)
    assert ids == local_streams[documents] and len(ids) > 50_000
    assert manifest["complete"] and manifest["tokens"] == len(ids)
    parts = manifest["partitions"]
    # plain files in byte ranges, the gzip file whole, every partition done and its shards listed
    assert len(parts) > 8 and sum(p["end"] is None for p in parts) == 1
    assert all(p["done"] for p in parts)
    assert [s["file"] for s in manifest["shards"]] == [s["file"] for p in parts for s in p["shards"]]
    assert sum(p["tokens"] for p in parts) == len(ids)
    assert shard_files(tmp_path) == sorted(s["file"] for s in manifest["shards"])
    # plain ranges meet: each starts where the one before it ended
    ranges = [p["range"] for p in parts if p["end"] is not None and p["path"] == str(corpus[1])]
    assert ranges[0][0] == 0 and all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    # a rerun has nothing left to do
    assert encode_files(tok, corpus, tmp_path, documents=documents, cluster=client, partition_size=40_000,
                        **OPTIONS)["complete"]


def test_a_worker_killed_mid_shard_loses_and_duplicates_nothing(client, tok, corpus, local_streams, tmp_path):
    def die_on_third_shard():
        """On a worker: its third shard is left half written in its temporary file, then the
        process dies."""
        import signal

        from fastbpe import shards as worker_shards

        real = worker_shards._finish_shard
        calls = []

        def dying(file, *args):
            calls.append(file.path)
            if len(calls) == 3:
                written = Path(file.temporary).read_bytes()
                Path(file.temporary).write_bytes(written[: len(written) // 2])
                os.kill(os.getpid(), signal.SIGKILL)
            real(file, *args)

        worker_shards._finish_shard = dying

    before = set(client.scheduler_info()["workers"])
    client.run(die_on_third_shard)
    try:
        encode_files(tok, corpus, tmp_path, documents="line", cluster=client, partition_size=40_000, **OPTIONS)
    except distributed.KilledWorker:
        pass  # the scheduler gave up on a task: the rerun below finishes it
    client.wait_for_workers(2, timeout=60)
    assert not before & set(client.scheduler_info()["workers"]), "both workers should have died once"
    manifest = encode_files(tok, corpus, tmp_path, documents="line", cluster=client, partition_size=40_000,
                            **OPTIONS)
    _, ids = stream(tmp_path)
    assert manifest["complete"] and ids == local_streams["line"]
    assert shard_files(tmp_path) == sorted(s["file"] for s in manifest["shards"])  # no stray or half file


def test_an_interrupted_client_resumes_per_partition(client, tok, corpus, local_streams, tmp_path, monkeypatch):
    real = shards.write_atomic
    saves = []

    def interrupted(path, payload):
        saves.append(path)
        if len(saves) == 4:
            raise KeyboardInterrupt  # the client stops while recording the fourth partition
        real(path, payload)

    monkeypatch.setattr(shards, "write_atomic", interrupted)
    with pytest.raises(KeyboardInterrupt):
        encode_files(tok, corpus, tmp_path, cluster=client, partition_size=40_000, **OPTIONS)
    monkeypatch.setattr(shards, "write_atomic", real)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert sum(p["done"] for p in manifest["partitions"]) == 3 and not manifest["complete"]
    resumed = encode_files(tok, corpus, tmp_path, cluster=client, partition_size=40_000, **OPTIONS)
    _, ids = stream(tmp_path)
    assert resumed["complete"] and ids == local_streams["file"]
    assert 0 < resumed["run"]["tokens"] < len(ids)  # the rerun encoded only what was missing
    with pytest.raises(ValueError, match="another job"):
        encode_files(tok, corpus, tmp_path, cluster=client, partition_size=50_000, **OPTIONS)


def test_counts_and_training_on_the_cluster_equal_local_ones(client, corpus):
    local = fastbpe.count_words(corpus, "o200k", workers=1, progress=False)
    remote = fastbpe.count_words(corpus, "o200k", cluster=client, block_size=20_000, partition_size=30_000,
                                 progress=False)
    assert remote == local and len(local) > 5000
    trained = [fastbpe.train(corpus, 600, cluster=c, progress=False, workers=1) for c in (None, client)]
    assert trained[0].merges == trained[1].merges and trained[0].to_dict() == trained[1].to_dict()


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 13])
def test_ordered_reduction_keeps_the_order(client, n):
    pieces = [chr(ord("a") + i) for i in range(n)]
    reduction = OrderedReduction(client, operator.add)  # string concatenation: order shows
    # held here (scattered data has no task to recompute it from), under keys of its own (equal
    # keys for equal data would race with the release of the previous test's)
    scattered = client.scatter(pieces, hash=False)
    for future in scattered:
        reduction.add(future)
        assert len(reduction.stack) <= n.bit_length()
    assert reduction.result().result() == "".join(pieces)
    assert OrderedReduction(client, operator.add).result() is None


def test_cli_train_and_encode_with_a_scheduler(client, tok, corpus, local_streams, tmp_path, capsys):
    address = client.scheduler.address
    files = [str(p) for p in corpus]
    for where in ("local", "cluster"):
        extra = ["--scheduler", address] if where == "cluster" else ["--workers", "1"]
        assert main(["train", *files, "--vocab-size", "500", "--out", str(tmp_path / f"{where}.json"), "-q",
                     *extra]) == 0
    assert (tmp_path / "local.json").read_bytes() == (tmp_path / "cluster.json").read_bytes()
    tok.save(tmp_path / "tok.fastbpe.json")
    assert main(["encode", *files, "-t", str(tmp_path / "tok.fastbpe.json"), "-o", str(tmp_path / "shards"),
                 "--shard-size", "6000", "--format", "raw", "--block-size", "5000", "--scheduler", address,
                 "--partition-size", "40000", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["complete"] and summary["tokens"] == len(local_streams["file"])
    assert stream(tmp_path / "shards")[1] == local_streams["file"]
    assert main(["encode", files[1], "-t", str(tmp_path / "tok.fastbpe.json"), "-o", str(tmp_path / "x"),
                 "--partition-size", "1M"]) == 2
    assert "--partition-size needs --scheduler" in capsys.readouterr().err


def test_a_worker_with_another_fastbpe_version_is_refused(client, corpus, tok, tmp_path, capsys):
    def pretend(version):
        import fastbpe as worker_fastbpe

        worker_fastbpe.__version__ = version

    client.run(pretend, "0.0.1-other", workers=[sorted(client.scheduler_info()["workers"])[0]])
    try:
        with pytest.raises(WorkerVersionError, match=f"mismatch: this process runs {fastbpe.__version__}.*0.0.1-other"):
            fastbpe.count_words(corpus, cluster=client, progress=False)
        with pytest.raises(WorkerVersionError, match="same fastbpe version"):
            encode_files(tok, corpus, tmp_path / "shards", cluster=client, **OPTIONS)
        assert not (tmp_path / "shards").exists()  # (refused before anything is written: not even the folder)
        assert main(["train", str(corpus[1]), "--out", str(tmp_path / "t.json"), "--scheduler",
                     client.scheduler.address]) == 2
        assert "fastbpe: error: fastbpe version mismatch" in capsys.readouterr().err
    finally:
        client.run(pretend, fastbpe.__version__)


def test_a_scheduler_address_nothing_listens_at_is_said_at_once(monkeypatch):
    """A refused connection (a port no process listens on) is said as such after the client's
    first try, not after its whole timeout as "Timed out"; an address of another kind is left
    to the client."""
    import socket

    from fastbpe import cluster
    from fastbpe.cluster import _refused, connect

    monkeypatch.setattr(cluster, "FIRST_TRY", 0.2)

    with socket.socket() as bound:  # (bound, never listening: the port refuses connections)
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        for address in (f"tcp://127.0.0.1:{port}", f"127.0.0.1:{port}"):
            with pytest.raises(OSError, match=f"scheduler at '{address}': the connection to 127.0.0.1:{port} was refused"):
                connect(address)
    assert _refused("inproc://nowhere") is None and _refused("not an address") is None
