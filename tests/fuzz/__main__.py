"""Run the fuzz harnesses from the command line, for longer than the test run does.

    python -m tests.fuzz [--seconds 60] [--engine loop|atheris|auto] [--keep-going] [HARNESS ...]

From the project root. No harness named: all of them (``--list`` shows them). ``--engine loop``
is the mutation loop of :mod:`tests.fuzz.engine` (no dependency); ``atheris`` is Google's
coverage-guided engine (libFuzzer) driving the same harnesses, with their mutators mixed with
libFuzzer's own, each harness in a process of its own (atheris exits when done); ``auto`` (the
default) takes atheris when it imports. atheris sees the coverage of fastbpe's Python code (the
loaders' checks above all); the compiled code is not instrumented for it (that needs clang's
``-fsanitize=fuzzer``), so there the harnesses' own generators matter most.

Under the sanitizer build (``.ci/sanitize``) use ``--engine loop``: with GCC's AddressSanitizer
runtime preloaded, atheris's coverage hooks resolve to that runtime instead of libFuzzer, which
leaves it without coverage and about a thousand times slower.

Failing inputs are saved under ``tests/fuzz/corpus/<harness>/`` (atheris: ``crash-<sha1>``) and
replayed by the normal test run. Exit status 1 when a harness failed.
"""
import argparse
import importlib.util
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

from tests.fuzz import engine


def have_atheris() -> bool:
    return importlib.util.find_spec("atheris") is not None


def run_loop(names, seconds: float, keep_going: bool) -> int:
    from tests.fuzz import targets

    status = 0
    for name in names:
        target = targets.by_name(name)
        try:
            target.setup()
        except engine.Unavailable as exc:
            print(f"{name}: skipped ({exc})", flush=True)
            continue
        try:
            stats = engine.fuzz(target, seconds, keep_going=keep_going)
            print(repr(stats), flush=True)
            status |= bool(stats.failures)
        except engine.FuzzFailure as exc:
            print(f"FAILED {exc}", flush=True)
            status = 1
        finally:
            target.teardown()
    return status


def run_atheris_one(name: str, seconds: float) -> int:
    """This process fuzzes ``name`` under atheris until ``seconds`` pass; atheris exits."""
    import atheris

    # coverage of fastbpe and the harnesses; the reference is an oracle, and slow instrumented
    with atheris.instrument_imports(include=["fastbpe", "tests.fuzz"], exclude=["fastbpe.reference"]):
        from tests.fuzz import targets

        target = targets.by_name(name)
        try:
            target.setup()
        except engine.Unavailable as exc:
            print(f"{name}: skipped ({exc})", flush=True)
            return 0
    seeds = tempfile.mkdtemp(prefix=f"fastbpe-fuzz-{name}-")
    for i, data in enumerate(list(target.seeds()) + [p.read_bytes() for p in engine.corpus_files(name)]):
        with open(os.path.join(seeds, f"seed-{i}"), "wb") as f:
            f.write(data)
    artifacts = engine.CORPUS / name
    artifacts.mkdir(parents=True, exist_ok=True)

    def mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if rng.random() < 0.3:
            return atheris.Mutate(data, max_size)
        return target.mutate(data, rng)[:max_size]

    def one_input(data: bytes) -> None:
        target.check(data)

    argv = [sys.argv[0], f"-max_total_time={int(seconds)}", f"-max_len={target.max_size}",
            f"-artifact_prefix={artifacts}{os.sep}", "-rss_limit_mb=0", "-timeout=120",
            "-print_final_stats=1", "-detect_leaks=0", seeds]
    atheris.Setup(argv, one_input, custom_mutator=mutator)
    try:
        atheris.Fuzz()
    finally:
        shutil.rmtree(seeds, ignore_errors=True)
        target.teardown()
    return 0


def run_atheris(names, seconds: float) -> int:
    status = 0
    for name in names:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "tests.fuzz", "--engine", "atheris", "--one", name,
                               "--seconds", str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace")
        runs = re.findall(r"Done (\d+) runs in (\d+) second", proc.stdout)
        if proc.returncode != 0 or not runs:
            print(proc.stdout[-6000:], flush=True)
            print(f"FAILED {name} (exit status {proc.returncode})", flush=True)
            status = 1
        else:
            done, took = runs[-1]
            print(f"{name}: {done} executions in {took} s under atheris "
                  f"({time.monotonic() - started:.0f} s with setup)", flush=True)
    return status


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("harnesses", nargs="*")
    parser.add_argument("--seconds", type=float, default=engine.budget(60.0))
    parser.add_argument("--engine", choices=("auto", "loop", "atheris"), default="auto")
    parser.add_argument("--keep-going", action="store_true",
                        help="loop engine: save one input of each kind of failure and go on")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the atheris child process
    args = parser.parse_args(argv)
    if args.one:
        return run_atheris_one(args.one, args.seconds)
    from tests.fuzz import targets

    if args.list:
        print("\n".join(t.name for t in targets.TARGETS))
        return 0
    names = args.harnesses or [t.name for t in targets.TARGETS]
    for name in names:
        targets.by_name(name)  # an unknown name fails before anything runs
    use_atheris = args.engine == "atheris" or (args.engine == "auto" and have_atheris())
    if use_atheris:
        return run_atheris(names, args.seconds)
    return run_loop(names, args.seconds, args.keep_going)


if __name__ == "__main__":
    sys.exit(main())
