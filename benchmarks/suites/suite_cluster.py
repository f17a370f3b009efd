"""asv: the same counting and shard encoding on this machine and on a Dask cluster.

``mode="local"`` runs ``count_words`` and ``encode_files`` with 2 threads;
``mode="cluster"`` runs them with ``cluster=`` on a process-based ``LocalCluster`` of 2
single-threaded workers on loopback TCP, started in ``setup`` (not timed). The difference is
the cost of the cluster path: shipping tasks and tokenizer, combining tables on the workers,
workers writing their own shards. Skipped where the commit or dask.distributed lacks it.
"""
import itertools
import os
import shutil
import tempfile

from .common import corpus_text, fastbpe_module, input_size, require, skip
from .suite_encode import trained_tokenizer

MODES = ["local", "cluster"]
WORKS = ["count", "encode"]
SIZES = ["10MB", "100MB"]


class ScaleOut:
    """``count_words`` / ``encode_files`` locally and on a 2-worker cluster, over corpus size."""

    params = (MODES, WORKS, SIZES)
    param_names = ["mode", "work", "size"]
    number = 1
    repeat = 3
    warmup_time = 0
    timeout = 900

    def setup(self, mode, work, size):
        fastbpe = fastbpe_module()
        self.client = self.cluster = None
        if mode == "cluster":
            check_versions = require("cluster.check_worker_versions")
            try:
                import distributed
            except ImportError:
                skip("dask.distributed is not installed")
        self.folder = tempfile.mkdtemp(prefix="fastbpe-asv-cluster-")
        path = os.path.join(self.folder, "corpus.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(corpus_text("generated", size))
        self.files = [path]
        self.tok = trained_tokenizer(1024) if work == "encode" else None
        self.outputs = itertools.count()
        # eight partitions, so that both workers have several
        self.partition_size = max(1, input_size(size) // 8)
        if mode == "cluster":
            self.cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                    dashboard_address=None, host="127.0.0.1")
            self.client = distributed.Client(self.cluster)
            check_versions(self.client)  # the workers import fastbpe before the clock starts

    def teardown(self, mode, work, size):
        if self.client is not None:
            self.client.close()
            self.cluster.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def time_run(self, mode, work, size):
        fastbpe = fastbpe_module()
        if work == "count":
            target = {"cluster": self.client} if mode == "cluster" else {"workers": 2}
            fastbpe.count_words(self.files, "gpt2", progress=False, partition_size=self.partition_size, **target)
        else:
            target = {"cluster": self.client, "partition_size": self.partition_size} if mode == "cluster" \
                else {"workers": 2}
            out = os.path.join(self.folder, f"shards-{next(self.outputs)}")
            fastbpe.encode_files(self.tok, self.files, out, separator=None, progress=False, **target)
