"""Ctrl-C in tests: as ``encode_files`` finishes its n-th shard (interrupted runs), and as a
real SIGINT during one long compiled call (how soon the call stops)."""
import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

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
def sigint_soon(seconds: float, first=None):
    """SIGINT to this process ``seconds`` after the block starts, sent by another process as a
    terminal's Ctrl-C is (a thread of this one could not send it while the main thread holds
    the GIL in a compiled loop), its handler calling ``first()`` when given and then raising
    :class:`Interrupted`; the handler before it is put back after the block, no signal left
    pending."""
    def handler(signum, frame):
        if first is not None:
            first()
        raise Interrupted

    previous = signal.signal(signal.SIGINT, handler)
    sender = subprocess.Popen([sys.executable, "-c", "import os, signal, sys, time; print(flush=True); "
                               "time.sleep(float(sys.argv[1])); os.kill(int(sys.argv[2]), signal.SIGINT)",
                               str(seconds), str(os.getpid())], stdout=subprocess.PIPE)
    try:
        sender.stdout.readline()  # (its interpreter started: the seconds count from here)
        yield
    finally:
        sender.kill()  # (the signal sent or not, never after this)
        sender.wait()
        sender.stdout.close()
        try:
            _python_call()  # (a signal the block's code never looked at is handled here at the latest)
        finally:
            signal.signal(signal.SIGINT, previous)


def _python_call():
    return None


def stopped_inside(call, source: str, after: float) -> bool:
    """Run ``call()`` with a SIGINT ``after`` seconds in: whether the handler's exception came
    out of a function of the compiled module ``source`` (``encode.pyx``), raised inside the call
    rather than once it returned (Cython adds its functions to the traceback as the exception
    leaves them). Where the call ends before the signal comes, the machine is too fast for the
    workload: the test is skipped, saying so. A call that runs past the signal and on to its end
    is the failure the tests look for."""
    ended = None
    try:
        with sigint_soon(after):
            started = time.monotonic()
            call()
            ended = time.monotonic() - started
    except Interrupted as exc:
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename.endswith(source):
                return True
            tb = tb.tb_next
        return False
    if ended is not None and ended < after:
        pytest.skip(f"the call ended {ended:.2f} s in, before the signal at {after} s: nothing to interrupt")
    raise AssertionError("the SIGINT handler never ran")
