"""A small mutation fuzzer with a time budget, and the regression corpus it keeps.

Every harness (:mod:`tests.fuzz.targets`) states a property of one part of fastbpe over inputs
that are plain bytes: ``check(data)`` raises when the property fails. :func:`fuzz` then runs
``check`` on inputs made from the harness's seeds, from its own generator and by mutating
earlier inputs, until the time budget is spent. An input whose outcome was not seen before
(``check`` may return a short signature of what happened, such as the kind of error a loader
gave, or a set of such features) stays in the pool and is mutated further: a crude stand-in for the coverage feedback of
a real fuzzing engine, which :mod:`tests.fuzz.__main__` drives instead when atheris is
installed.

An input that fails is shrunk (byte ranges removed while it still fails the same way) and
saved under ``tests/fuzz/corpus/<harness>/``; :func:`replay` runs every saved input, and the
normal test run calls it, so a failure once found stays tested.

Environment: ``FASTBPE_FUZZ_SECONDS`` (the budget per harness, default 1),
``FASTBPE_FUZZ_SEED`` (the random seed; default: a new one per run, printed on failure),
``FASTBPE_FUZZ_CORPUS`` (the corpus folder, default ``tests/fuzz/corpus``).
"""
import hashlib
import os
import random
import re
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional

__all__ = ["Target", "Unavailable", "FuzzFailure", "fuzz", "replay", "corpus_files", "budget", "CORPUS", "STATS"]

# FASTBPE_FUZZ_CORPUS: another folder (the sanitizer lane runs in a copy and saves into the checkout)
CORPUS = Path(os.environ.get("FASTBPE_FUZZ_CORPUS") or Path(__file__).resolve().parent / "corpus")
POOL_LIMIT = 512          # inputs kept for mutation
KEEP_ANYWAY = 0.02        # share of inputs kept without a new signature
SHRINK_SECONDS = 20.0     # time allowed to shrink one failing input

# Byte values that make UTF-8 decoders, JSON readers and split patterns take their rarer paths.
INTERESTING_BYTES = bytes([0x00, 0x0A, 0x0D, 0x20, 0x22, 0x27, 0x2C, 0x2D, 0x30, 0x39, 0x3A, 0x5B,
                           0x5C, 0x5D, 0x7B, 0x7D, 0x7F, 0x80, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xED,
                           0xEF, 0xF0, 0xF4, 0xF5, 0xFF])


def budget(default: float = 1.0) -> float:
    """Seconds per harness: ``FASTBPE_FUZZ_SECONDS`` or ``default``."""
    return float(os.environ.get("FASTBPE_FUZZ_SECONDS", default))


def seed_from_env() -> int:
    value = os.environ.get("FASTBPE_FUZZ_SEED")
    return int(value) if value else random.SystemRandom().randrange(2**32)


class FuzzFailure(AssertionError):
    """An input broke a harness's property; the message names the saved copy of the input."""


class Target:
    """One harness. Subclasses set ``name`` and define :meth:`check`; the rest has defaults."""

    name = "target"
    ext = ".txt"           # the suffix of its saved inputs
    max_size = 4096        # mutated inputs are cut to this many bytes

    def setup(self) -> None:
        """Load what the checks need (once); raise ``Unavailable`` when it cannot be had."""

    def seeds(self) -> List[bytes]:
        return [b""]

    def generate(self, rng: random.Random) -> bytes:
        """A fresh input; by default a mutated seed."""
        return self.mutate(rng.choice(self.seeds()), rng)

    def mutate(self, data: bytes, rng: random.Random) -> bytes:
        return mutate_bytes(data, rng, self.max_size)

    def check(self, data: bytes):
        """Raise if the property fails on ``data``; may return a short signature of the outcome."""
        raise NotImplementedError

    def teardown(self) -> None:
        """Remove what :meth:`setup` left on disk."""


class Unavailable(Exception):
    """What a harness needs (a data file, a peer library) is not here."""


def mutate_bytes(data: bytes, rng: random.Random, max_size: int = 4096,
                 splice_with: Optional[bytes] = None) -> bytes:
    """One to four random edits of ``data``: flips, interesting bytes, insertions, deletions,
    duplications, swaps and (given ``splice_with``) a cross-over."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(8)
        n = len(buf)
        if op == 0 and n:
            buf[rng.randrange(n)] ^= 1 << rng.randrange(8)
        elif op == 1 and n:
            buf[rng.randrange(n)] = rng.choice(INTERESTING_BYTES)
        elif op == 2:
            pos = rng.randint(0, n)
            buf[pos:pos] = bytes(rng.choice(INTERESTING_BYTES) for _ in range(rng.randint(1, 4)))
        elif op == 3 and n:
            a = rng.randrange(n)
            del buf[a:a + rng.randint(1, max(1, n // 8))]
        elif op == 4 and n:
            a = rng.randrange(n)
            piece = buf[a:a + rng.randint(1, 64)]
            pos = rng.randint(0, n)
            buf[pos:pos] = piece * rng.randint(1, 3)
        elif op == 5 and n > 2:
            a, b = sorted(rng.sample(range(n), 2))
            k = min(b - a, rng.randint(1, 16))
            buf[a:a + k], buf[b:b + k] = buf[b:b + k], buf[a:a + k]
        elif op == 6 and splice_with:
            a = rng.randint(0, n)
            s = rng.randrange(len(splice_with))
            buf[a:] = splice_with[s:s + rng.randint(1, 256)] + buf[a:]
        elif op == 7 and n:
            a = rng.randint(0, n)
            buf[a:a] = str(rng.choice([0, 1, -1, 255, 256, 2**31 - 1, 2**31, 2**32, 2**63, 10**8])).encode()
    return bytes(buf[:max_size])


def corpus_files(target_name: str) -> List[Path]:
    folder = CORPUS / target_name
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def save(target: Target, data: bytes) -> Path:
    folder = CORPUS / target.name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (hashlib.sha1(data).hexdigest()[:16] + target.ext)
    path.write_bytes(data)
    return path


def _fails_alike(target: Target, data: bytes, kind: type) -> bool:
    try:
        target.check(data)
    except Exception as exc:  # noqa: BLE001 - any failure of the same kind counts
        return type(exc) is kind
    return False


def shrink(target: Target, data: bytes, kind: type, seconds: float = SHRINK_SECONDS) -> bytes:
    """A smaller input failing with the same exception type: byte ranges removed, halving the
    range length down to single bytes (delta debugging), within ``seconds``."""
    deadline = time.monotonic() + seconds
    size = max(1, len(data) // 2)
    while size >= 1 and time.monotonic() < deadline:
        i, removed = 0, False
        while i < len(data) and time.monotonic() < deadline:
            candidate = data[:i] + data[i + size:]
            if _fails_alike(target, candidate, kind):
                data, removed = candidate, True
            else:
                i += size
        if not removed:
            size //= 2
    return data


class Stats:
    def __init__(self, name: str):
        self.name, self.executions, self.seconds, self.signatures = name, 0, 0.0, 0
        self.failures: Dict[str, Path] = {}

    def __repr__(self) -> str:
        failures = "".join(f"\n  FAILURE {kind} -> {path}" for kind, path in self.failures.items())
        return (f"{self.name}: {self.executions} executions in {self.seconds:.1f} s, "
                f"{self.signatures} distinct outcomes{failures}")


STATS: Dict[str, Stats] = {}


def _fail(target: Target, data: bytes, exc: Exception, seed: int, shrink_it: bool) -> None:
    if shrink_it:
        data = shrink(target, data, type(exc))
    path = save(target, data)
    raise FuzzFailure(f"{target.name}: {type(exc).__name__}: {str(exc)[:300]}\n"
                      f"  input ({len(data)} bytes) saved as {path}; seed {seed}") from exc


def failure_kind(exc: BaseException) -> str:
    """An exception's type and message with numbers and quoted parts left out: failures of one
    kind differ only there."""
    message = re.sub(r"\d+|'[^']*'|\"[^\"]*\"|/\S+", "", str(exc))
    return f"{type(exc).__name__}: {message[:80]}"


def fuzz(target: Target, seconds: float, seed: Optional[int] = None, shrink_it: bool = True,
         keep_going: bool = False) -> Stats:
    """Run ``target`` for ``seconds``; raise :class:`FuzzFailure` on the first failing input.

    ``keep_going``: save one input of each kind of failure (:func:`failure_kind`) and go on;
    the failures are listed in the returned statistics (``failures``).
    """
    seed = seed_from_env() if seed is None else seed
    rng = random.Random(seed)
    stats = STATS.setdefault(target.name, Stats(target.name))
    pool: List[bytes] = list(target.seeds()) + [p.read_bytes() for p in corpus_files(target.name)]
    seen = set()
    started = time.monotonic()
    deadline = started + seconds
    queue = list(pool)  # seeds and saved inputs first, then made-up ones
    while True:
        if queue:
            data = queue.pop()
        elif time.monotonic() >= deadline:
            break
        elif rng.random() < 0.25:
            data = target.generate(rng)
        else:
            data = target.mutate(rng.choice(pool), rng)
            if rng.random() < 0.1:
                data = mutate_bytes(data, rng, target.max_size, splice_with=rng.choice(pool))
        try:
            signature = target.check(data)
        except Exception as exc:  # noqa: BLE001 - every failure is reported with its input
            stats.executions += 1
            if keep_going:
                kind = failure_kind(exc)
                if kind not in stats.failures:
                    kept = shrink(target, data, type(exc)) if shrink_it else data
                    stats.failures[kind] = save(target, kept)
                continue
            stats.seconds += time.monotonic() - started
            _fail(target, data, exc, seed, shrink_it)
        stats.executions += 1
        features = signature if isinstance(signature, (set, frozenset)) else {signature}
        new = features - seen - {None}
        if new:
            seen |= new
            pool.append(data)
        elif rng.random() < KEEP_ANYWAY:
            pool.append(data)
        if len(pool) > POOL_LIMIT:
            del pool[rng.randrange(len(target.seeds()), len(pool))]
    stats.seconds += time.monotonic() - started
    stats.signatures = max(stats.signatures, len(seen))
    return stats


def replay(target: Target, paths: Iterable[Path]) -> int:
    """Run ``check`` on saved inputs; returns how many ran."""
    count = 0
    for path in paths:
        try:
            target.check(path.read_bytes())
        except Exception as exc:  # noqa: BLE001
            raise FuzzFailure(f"{target.name}: saved input {path} fails again: "
                              f"{type(exc).__name__}: {str(exc)[:300]}") from exc
        count += 1
    return count


def run_all(targets: Iterable[Target], seconds: float,
            report: Callable[[str], None] = print) -> List[Stats]:
    """Fuzz each target for ``seconds`` (the command line's loop engine)."""
    out = []
    for target in targets:
        try:
            target.setup()
        except Unavailable as exc:
            report(f"{target.name}: skipped ({exc})")
            continue
        out.append(fuzz(target, seconds))
        report(repr(out[-1]))
    return out
