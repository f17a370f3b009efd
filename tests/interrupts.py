"""Ctrl-C in tests: as ``encode_files`` finishes its n-th shard (interrupted runs), and as a
real SIGINT during one long compiled call (how soon the call stops)."""
import contextlib
import os
import signal
import threading

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


class Interrupted(Exception):
    """What ``sigint_soon``'s handler raises: not KeyboardInterrupt, so that a signal that came
    after its test would fail that test instead of stopping the whole run."""


@contextlib.contextmanager
def sigint_soon(seconds: float):
    """SIGINT to this process ``seconds`` after the block starts (from a timer thread, as
    Ctrl-C arrives while the main thread runs), its handler raising :class:`Interrupted`; the
    handler before it is put back after the block, no signal left pending."""
    def handler(signum, frame):
        raise Interrupted

    previous = signal.signal(signal.SIGINT, handler)
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()
        try:
            _python_call()  # (a signal the block's code never looked at is handled here at the latest)
        finally:
            signal.signal(signal.SIGINT, previous)


def _python_call():
    return None


def raised_in(info, source: str) -> bool:
    """Whether the exception of pytest's ``info`` passed through a function of the compiled
    module ``source`` (``encode.pyx``): raised inside that call, not after it returned (Cython
    adds its functions to the traceback as the exception leaves them)."""
    tb = info.tb
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.endswith(source):
            return True
        tb = tb.tb_next
    return False
