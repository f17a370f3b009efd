"""The asv workflow in three commands: record a commit, compare two, check that every benchmark runs.

    python -m benchmarks record                     # this checkout's commit, saved in .asv/results
    python -m benchmarks record -b TrainThroughput  # only the benchmarks matching a regex
    python -m benchmarks compare main HEAD          # flags what got slower by more than 10 %
    python -m benchmarks compare A B --factor 1.2 -b Encode
    python -m benchmarks check                      # every benchmark once on tiny inputs (CI)

Why a wrapper: asv, run on the interpreter at hand (``--python=same``), saves nothing unless it
is told which commit it measures (``--set-commit-hash``), and it imports whichever fastbpe that
interpreter finds, which with an editable install is the checkout that was installed, not
necessarily this one. ``record`` builds this checkout in place, puts it first on the path asv
gives its benchmark processes (``ASV_PYTHONPATH``), checks that the fastbpe those processes import
is this checkout's, and saves the results under this checkout's commit. ``compare`` records each
of the two commits that has no results yet (a commit other than this checkout's is exported with
``git archive`` to a temporary directory and built there: no network, no virtualenv), then runs
``asv compare`` and exits with status 1 when a benchmark got worse by more than ``--factor``.

The suites are always this checkout's (``benchmarks/suites``): one suite measures every commit,
a benchmark whose feature a commit lacks is skipped there (``suites/common.py``). Every number a
benchmark reports is smaller-is-better (times, seconds per MB, ns per token), as asv assumes.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[1]
MACHINE_FILE = Path("~/.asv-machine.json").expanduser()
# What the measured code is made of: a change here outside a commit makes its results a lie.
SOURCE_PATHS = ["fastbpe", "setup.py", "pyproject.toml", "setup.cfg"]
# A row of ``asv compare``'s table that got worse: "+" slower, "!" a benchmark that now fails.
WORSE_ROW = re.compile(r"^\|\s*[+!]\s*\|")
# A benchmark that failed in ``asv run``'s log: "[ 42.11%] ··· suite_x.Class.method   failed".
FAILED_ROW = re.compile(r"^\[\s*[\d.]+%\]\s+·+\s+(\S+)\s+failed\s*$")


def fail(message: str) -> "SystemExit":
    return SystemExit(f"python -m benchmarks: error: {message}")


def git(*args: str, cwd: Path = ROOT, strip: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise fail(f"git {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout.strip() if strip else out.stdout


def asv_command() -> List[str]:
    """asv, run by this interpreter (so ``--python=same`` means this one)."""
    try:
        import asv  # noqa: F401
    except ImportError:
        raise fail('asv is not installed: python -m pip install asv  (or pip install -e ".[bench]")')
    return [sys.executable, "-m", "asv"]


def run(cmd: List[str], env: Optional[dict] = None, cwd: Path = ROOT, capture: bool = False):
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE if capture else None)


def ensure_machine() -> None:
    """asv's description of this machine (``~/.asv-machine.json``), made once with defaults."""
    if not MACHINE_FILE.exists():
        if run(asv_command() + ["machine", "--yes"]).returncode != 0:
            raise fail("asv machine --yes failed")


def build(tree: Path) -> None:
    """Compile the extensions of ``tree`` in place (a second call recompiles nothing)."""
    jobs = str(min(os.cpu_count() or 1, 4))
    out = run([sys.executable, "setup.py", "build_ext", "--inplace", "-j", jobs], cwd=tree, capture=True)
    if out.returncode != 0:
        print(out.stdout)
        raise fail(f"building {tree} failed")


def asv_env(tree: Path, tiny: bool = False) -> dict:
    """The environment for asv: ``tree`` first on its benchmark processes' path."""
    env = dict(os.environ)
    env["ASV_PYTHONPATH"] = os.pathsep.join(
        [str(tree)] + [p for p in env.get("ASV_PYTHONPATH", "").split(os.pathsep) if p])
    if tiny:
        env["FASTBPE_BENCH_TINY"] = "1"
    return env


def check_imports(tree: Path) -> None:
    """The fastbpe a benchmark process would import is ``tree``'s, compiled parts included."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = "import fastbpe, fastbpe._core, os; print(os.path.realpath(fastbpe.__file__))"
    with tempfile.TemporaryDirectory() as cwd:  # no fastbpe tree in the working directory
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise fail(f"fastbpe does not import from {tree}:\n{out.stderr.strip()}")
    found = Path(out.stdout.strip())
    if Path(os.path.realpath(tree)) not in found.parents:
        raise fail(f"the benchmarks would import fastbpe from {found.parent}, not from {tree}")


def dirty_sources(tree: Path = ROOT) -> List[str]:
    out = git("status", "--porcelain", "--", *SOURCE_PATHS, cwd=tree, strip=False)  # " M path"
    return [line[3:] for line in out.splitlines() if line.strip()]


def results_file(commit: str) -> Optional[Path]:
    """The saved results of ``commit`` on this machine, run on this interpreter, if any."""
    try:
        machine = json.loads(MACHINE_FILE.read_text())
    except (OSError, ValueError):
        return None
    names = [k for k in machine if k != "version"]
    for name in names:
        for path in glob.glob(str(ROOT / ".asv" / "results" / glob.escape(name) / f"{commit[:8]}-existing-*.json")):
            return Path(path)
    return None


def asv_run(tree: Path, commit: str, extra: List[str]) -> int:
    """``asv run`` on the interpreter at hand, measuring ``tree``, saved under ``commit``."""
    ensure_machine()
    # asv's log names the head of the configured branch ("For fastbpe commit ... <main>"): with
    # --python=same it takes no range. The code measured is ``tree``'s, saved under ``commit``.
    print(f"measuring {tree} as commit {commit[:8]}", flush=True)
    cmd = asv_command() + ["run", "--python=same", f"--set-commit-hash={commit}",
                           "--launch-method=forkserver", *extra]
    return run(cmd, env=asv_env(tree)).returncode


def record_tree(tree: Path, commit: str, extra: List[str], no_build: bool = False) -> None:
    if not no_build:
        build(tree)
    check_imports(tree)
    code = asv_run(tree, commit, extra)
    if code != 0:
        why = "a benchmark failed; -- --show-stderr says why" if code == 2 else "see its message above"
        raise fail(f"asv run exited with status {code} ({why})")
    saved = results_file(commit)
    print(f"recorded {commit[:8]}" + (f" in {saved.relative_to(ROOT)}" if saved else ""), flush=True)


def record_commit(commit: str, extra: List[str], no_build: bool = False) -> None:
    """Record ``commit``: in this checkout when it is checked out here (and its sources are
    unchanged), else exported to a temporary directory and built there."""
    if commit == git("rev-parse", "HEAD") and not dirty_sources():
        record_tree(ROOT, commit, extra, no_build)
        return
    with tempfile.TemporaryDirectory(prefix=f"fastbpe-{commit[:8]}-") as tmp:
        print(f"exporting {commit[:8]} to {tmp}", flush=True)
        archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, capture_output=True)
        if archive.returncode != 0:
            raise fail(f"git archive {commit}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        record_tree(Path(tmp), commit, extra)


# ---- the commands ---------------------------------------------------------------------------------

def cmd_record(args, extra: List[str]) -> int:
    dirty = dirty_sources()
    if dirty and not args.allow_dirty:
        raise fail("uncommitted changes in " + ", ".join(dirty) + ": the results would be saved "
                   "under HEAD but measure other code. Commit them, or pass --allow-dirty")
    commit = git("rev-parse", "HEAD")
    record_tree(ROOT, commit, bench_args(args) + extra, no_build=args.no_build)
    print("next: python -m benchmarks compare <other commit> HEAD   |   "
          "asv publish && asv preview  (HTML in .asv/html)")
    return 0


def cmd_compare(args, extra: List[str]) -> int:
    commits = [git("rev-parse", "--verify", f"{name}^{{commit}}") for name in (args.before, args.after)]
    for name, commit in zip((args.before, args.after), commits):
        if args.rerun or results_file(commit) is None:
            print(f"== recording {name} ({commit[:8]})", flush=True)
            record_commit(commit, bench_args(args) + extra)
        else:
            print(f"== {name} ({commit[:8]}): results already in {results_file(commit).relative_to(ROOT)}"
                  " (--rerun to measure again)", flush=True)
    cmd = asv_command() + ["compare", commits[0], commits[1], f"--factor={args.factor}", "--split"]
    out = run(cmd, capture=True)
    print(out.stdout)
    if out.returncode != 0:
        raise fail(f"asv compare exited with status {out.returncode}")
    worse = [line for line in out.stdout.splitlines() if WORSE_ROW.match(line)]
    if worse:
        print(f"REGRESSION: {len(worse)} benchmark(s) worse by more than x{args.factor} "
              f"from {args.before} to {args.after} (or now failing)")
        return 1
    print(f"no benchmark worse by more than x{args.factor} from {args.before} to {args.after}")
    return 0


def cmd_check(args, extra: List[str]) -> int:
    """Every benchmark once, on inputs capped at 20 KB, nothing saved: fails when one fails."""
    if not args.no_build:
        build(ROOT)
    check_imports(ROOT)
    ensure_machine()
    cmd = asv_command() + ["run", "--python=same", "--quick", "--dry-run", "--show-stderr",
                           "--launch-method=forkserver", *bench_args(args), *extra]
    out = run(cmd, env=asv_env(ROOT, tiny=True), capture=True)
    print(out.stdout)
    failed = [m.group(1) for m in map(FAILED_ROW.match, out.stdout.splitlines()) if m]
    if out.returncode != 0 or failed:
        raise fail(f"asv run --quick exited with status {out.returncode}; failed: "
                   + (", ".join(failed) or "see above"))
    print("every benchmark ran")
    return 0


def bench_args(args) -> List[str]:
    return [f"--bench={b}" for b in (args.bench or [])]


def parse(argv: List[str]):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0],
                                     epilog="Arguments after -- go to asv run as they are "
                                            "(e.g. -- --show-stderr -a repeat=3).")
    sub = parser.add_subparsers(dest="command", required=True)

    def bench_option(p):
        p.add_argument("-b", "--bench", action="append", metavar="REGEX",
                       help="only the benchmarks whose name matches (repeatable); default all")

    p = sub.add_parser("record", help="record this checkout's commit (asv results in .asv/results)")
    bench_option(p)
    p.add_argument("--no-build", action="store_true", help="do not run build_ext --inplace first")
    p.add_argument("--allow-dirty", action="store_true",
                   help="record even with uncommitted changes to the sources (saved under HEAD)")
    p = sub.add_parser("compare", help="compare two commits; exit 1 on a regression beyond --factor")
    p.add_argument("before", help="the reference commit (a branch, tag or hash), e.g. main")
    p.add_argument("after", help="the commit under test, e.g. HEAD")
    p.add_argument("--factor", type=float, default=1.1,
                   help="a ratio after/before above this is a regression (default 1.1: 10%%)")
    p.add_argument("--rerun", action="store_true", help="measure both commits again even if recorded")
    bench_option(p)
    p = sub.add_parser("check", help="every benchmark once on tiny inputs, nothing saved (CI)")
    bench_option(p)
    p.add_argument("--no-build", action="store_true", help="do not run build_ext --inplace first")
    if "--" in argv:
        i = argv.index("--")
        return parser.parse_args(argv[:i]), argv[i + 1:]
    return parser.parse_args(argv), []


def main(argv: Optional[List[str]] = None) -> int:
    args, extra = parse(sys.argv[1:] if argv is None else argv)
    return {"record": cmd_record, "compare": cmd_compare, "check": cmd_check}[args.command](args, extra)
