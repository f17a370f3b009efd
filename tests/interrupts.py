"""A Ctrl-C as ``encode_files`` finishes its n-th shard, for the tests of interrupted runs."""
from fastbpe import shards


def interrupt_at_shard(patch, n) -> list:
    """Make the ``n``-th shard ``encode_files`` finishes raise KeyboardInterrupt instead (as a
    Ctrl-C at that moment would; ``n`` None: none does). ``patch``: a pytest monkeypatch (or its
    context), which puts the real step back. Returns the list of the shards' paths as they
    come to be finished, the interrupted one last."""
    real = shards._finish_shard
    finished = []

    def finish(file, *args):
        finished.append(file.path)
        if len(finished) == n:
            raise KeyboardInterrupt
        real(file, *args)

    patch.setattr(shards, "_finish_shard", finish)
    return finished
