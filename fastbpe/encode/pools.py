"""The worker threads of one tokenizer's ``encode_batch`` and ``encode_files``, kept between calls.

A call borrows a :class:`Lane` of ``workers`` threads: at most that many of its tasks run at
once, in the order submitted, on the tokenizer's pool, whose threads keep their warm chunk
caches from call to call. The pool is as large as the largest call that needed it; a call of
fewer workers runs on it too, so calls of 2, 3 and 2 workers, one after the other, all run on
the same warm threads (a pool a size, the one not in use shut down at each change, cost each
call new threads with cold caches: 20 MB of English in 64 KB texts, cl100k, calls of 2 and 3
workers in turn, 60-127 ms a call of two then, 32-40 now).
"""
import contextlib
import os
import threading
import weakref
from collections import deque
from typing import TYPE_CHECKING, Callable, Dict, Optional

from .._core.encode import EncodeState, SharedCache

if TYPE_CHECKING:  # (imported with the first pool)
    from concurrent.futures import ThreadPoolExecutor

__all__ = ["Lane", "PoolRegistry"]


def _attach_state(local: threading.local, shared: SharedCache) -> None:
    """A pool thread's first step: its encoding state (``Tokenizer._state``) uses the pool's
    shared chunk cache."""
    local.state = EncodeState(shared=shared)


class Lane:
    """One call's share of a pool: ``submit`` as an executor's, at most ``width`` of the tasks
    running at once, started in the order submitted. A task is run by one of at most
    ``width`` runners on the pool, each taking the lane's next task until none is left; a
    task cancelled before a runner takes it is skipped."""

    def __init__(self, pool, width: int):
        from concurrent.futures import Future  # (imported by the pool's maker already)

        self._pool, self._width, self._future = pool, width, Future
        self._lock = threading.Lock()
        self._tasks: deque = deque()  # (future, fn, args) not yet taken
        self._runners = 0  # runners submitted to the pool and not finished

    def submit(self, fn: Callable, *args):
        future = self._future()
        with self._lock:
            self._tasks.append((future, fn, args))
            start = self._runners < self._width
            self._runners += start
        if start:
            try:
                self._pool.submit(self._run)
            except BaseException:  # (a pool shut down: the task runs nowhere)
                with self._lock:
                    self._runners -= 1
                    self._tasks = deque(task for task in self._tasks if task[0] is not future)
                raise
        return future

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._tasks:
                    self._runners -= 1
                    return
                future, fn, args = self._tasks.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args)
            except BaseException as exc:  # (as the executor's own work items do)
                future.set_exception(exc)
            else:
                future.set_result(result)


class PoolRegistry:
    """The thread pools of one tokenizer, shared safely by calls running at once.

    A call borrows a :class:`Lane` of its worker count on the largest pool, made larger (a new
    pool of the call's size) when the call needs more threads; a pool is shut down only when
    no call is using it and a larger one has replaced it, so no pool is ever shut down under a
    caller. Every pool thread encodes with one chunk cache that they all share
    (``SharedCache``: a chunk merged by one worker is found by the others); a call that finds
    it full while no other call runs empties it first (a call waits for all its tasks before
    it gives its lane back, so nothing then uses it).
    """

    def __init__(self, local: threading.local):
        self._local = local  # the tokenizer's per-thread states
        self._forget()
        _REGISTRIES.add(self)

    def _forget(self) -> None:
        """No pool, no shared cache: as made, and in a child forked from this process, whose
        copies of the pools have no threads (a call would wait on them forever) and whose
        locks a thread of the parent may have held as it forked."""
        self._lock = threading.Lock()
        self._pools: Dict[int, "ThreadPoolExecutor"] = {}  # by size
        self._users: Dict[int, int] = {}
        self.shared: Optional[SharedCache] = None  # (made with the first pool)

    @contextlib.contextmanager
    def borrow(self, workers: int):
        with self._lock:
            size = max([workers, *self._pools])  # (the pools smaller than this one are let go once idle)
            for other in [s for s, n in self._users.items() if n == 0 and s != size]:
                self._pools.pop(other).shutdown(wait=False)
                del self._users[other]
            if self.shared is None:
                self.shared = SharedCache()
            elif self.shared.full and not any(self._users.values()):
                self.shared.clear()
            pool = self._pools.get(size)
            if pool is None:
                # (imported here: concurrent.futures and the logging it imports cost about 8 ms,
                # which a process that never encodes on threads need not pay)
                from concurrent.futures import ThreadPoolExecutor

                pool = self._pools[size] = ThreadPoolExecutor(
                    size, thread_name_prefix="fastbpe-encode", initializer=_attach_state,
                    initargs=(self._local, self.shared))
                self._users[size] = 0
            self._users[size] += 1
        try:
            yield Lane(pool, workers)
        finally:
            with self._lock:
                self._users[size] -= 1

    def close(self) -> None:
        """Shut down every pool no call is using, waiting for its threads: what a program that
        is done encoding calls, so that its exit has no threads left to join (an interrupt
        there would land outside the program's handlers). With no pool left, the shared
        chunk cache goes too (its memory returns once the last thread's state is gone)."""
        with self._lock:
            idle = [size for size, n in self._users.items() if n == 0]
            pools = [self._pools.pop(size) for size in idle]
            for size in idle:
                del self._users[size]
            if not self._pools:
                self.shared = None
        for pool in pools:
            pool.shutdown(wait=True)


# Every registry, so that a forked child (a DataLoader worker, a multiprocessing pool's) starts
# with none of the parent's pools: it makes its own on its first call, as a fresh process does.
_REGISTRIES: "weakref.WeakSet[PoolRegistry]" = weakref.WeakSet()


def _forget_pools_after_fork() -> None:
    for registry in list(_REGISTRIES):
        registry._forget()


if hasattr(os, "register_at_fork"):  # (not on Windows, which does not fork)
    os.register_at_fork(after_in_child=_forget_pools_after_fork)
