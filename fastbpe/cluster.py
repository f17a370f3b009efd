"""Running on a Dask cluster: connecting, checking the workers, and combining results on them.

Counting (:func:`fastbpe.count_words`) and shard encoding (:func:`fastbpe.encode_files`) take
``cluster=``: a ``dask.distributed.Client`` or a scheduler address. Workers import fastbpe
themselves and unpickle the tasks sent to them, so every worker must run the same fastbpe
version as the client: :func:`connect` asks each one and refuses a mismatch before any task
is sent (a different version could cut, count or encode differently and still look fine).

Partial results are combined where they are, on the workers: :class:`OrderedReduction` merges
neighbouring results in a binary tree in input order, so the client holds futures only, and the
workers hold about log2(partitions) partial results at a time.
"""
import socket
from typing import Any, Callable, List, Optional, Tuple

__all__ = ["connect", "check_worker_versions", "WorkerVersionError", "OrderedReduction", "worker_threads"]


class WorkerVersionError(ValueError):
    """A Dask worker runs another fastbpe version than the client (or none at all)."""


def _worker_version() -> str:
    """Runs on each worker: the fastbpe version it imports."""
    import fastbpe

    return fastbpe.__version__


def check_worker_versions(client) -> None:
    """Raise :class:`WorkerVersionError` unless every worker imports this process's fastbpe
    version (or when the cluster has no worker at all)."""
    from . import __version__

    try:
        versions = client.run(_worker_version)
    except ImportError as exc:  # a worker without fastbpe fails to unpickle the function
        raise WorkerVersionError(f"a Dask worker cannot import fastbpe ({exc}); install fastbpe {__version__} "
                                 "on every worker") from None
    if not versions:
        raise WorkerVersionError("the Dask cluster has no worker; start some (dask worker ADDRESS) and retry")
    other = {address: version for address, version in versions.items() if version != __version__}
    if other:
        listed = ", ".join(f"{address} runs {version}" for address, version in sorted(other.items()))
        raise WorkerVersionError(f"fastbpe version mismatch: this process runs {__version__}, but {listed}; "
                                 "install the same fastbpe version on every worker")


# How long the client tries to reach a scheduler that does not answer (a host that drops the
# connection, or is down), in seconds; a machine that refuses it is said after the first try
# (_refused), not after the whole wait.
CONNECT_TIMEOUT = 30
FIRST_TRY = 2


def _refused(address: str) -> Optional[str]:
    """Why no scheduler listens at a TCP address, when its machine refuses the connection (no
    process on the port); None otherwise, and for what is no TCP address. (Dask's client retries
    a refused connection until its timeout: 30 s of silence for a mistyped port.)"""
    from distributed.comm import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        host, port = parse_host_port(location)
    except (TypeError, ValueError):  # (the client says what is wrong with it)
        return None
    if scheme not in ("tcp", "tls") or not port:
        return None
    try:
        socket.create_connection((host, port), timeout=2).close()
    except ConnectionRefusedError:
        return f"the connection to {host}:{port} was refused (is the scheduler running, on that port?)"
    except OSError:
        return None  # (unresolved or silent: the client's timeout decides)
    return None


def connect(cluster) -> Tuple[Any, bool]:
    """``(client, whether it was opened here)`` for a Client or a scheduler address, with the
    workers' fastbpe versions checked. A client opened here is closed again on an error."""
    try:
        from distributed import Client
    except ImportError:
        raise ImportError("cluster= needs dask.distributed (pip install 'dask[distributed]')") from None
    if isinstance(cluster, Client):
        client, own = cluster, False
    else:
        try:
            client, own = Client(cluster, timeout=f"{FIRST_TRY}s"), True
        except OSError:
            # (a scheduler that answers is never probed: a bare connection shows in its log)
            refused = _refused(cluster) if isinstance(cluster, str) else None
            if refused:
                raise OSError(f"cannot reach the Dask scheduler at {cluster!r}: {refused}") from None
            try:
                client, own = Client(cluster, timeout=f"{CONNECT_TIMEOUT - FIRST_TRY}s"), True
            except OSError as exc:
                raise OSError(f"cannot reach the Dask scheduler at {cluster!r}: {exc}") from None
    try:
        check_worker_versions(client)
    except BaseException:
        if own:
            client.close()
        raise
    return client, own


def worker_threads(client) -> int:
    """Tasks the cluster runs at once (its worker threads, at least 1)."""
    return max(1, sum(client.nthreads().values()))


class OrderedReduction:
    """Combine a sequence of Dask futures with ``combine(left, right)`` on the workers, keeping
    their order (``combine`` need only be associative, not commutative).

    Futures are added in input order. Like a binary counter, two results of equal weight
    (covering as many inputs) are combined as soon as both exist, so at most one pending result
    per power of two is kept: about log2(n) partial results for n inputs. :meth:`result` returns
    the future of the whole (None when nothing was added).
    """

    def __init__(self, client, combine: Callable[[Any, Any], Any]):
        self.client, self.combine = client, combine
        self.stack: List[Tuple[int, Any]] = []  # (inputs covered, future), oldest first

    def add(self, future) -> None:
        weight = 1
        while self.stack and self.stack[-1][0] == weight:
            _, left = self.stack.pop()
            future = self.client.submit(self.combine, left, future, pure=False)
            weight *= 2
        self.stack.append((weight, future))

    def result(self) -> Optional[Any]:
        if not self.stack:
            return None
        _, whole = self.stack.pop()
        while self.stack:  # the rest, right to left: older results on the left
            _, left = self.stack.pop()
            whole = self.client.submit(self.combine, left, whole, pure=False)
        return whole
