"""Smoke test of the benchmarks: every asv benchmark's setup and one call, on tiny inputs.

Nothing is timed (speed lives in the benchmarks themselves); this catches a benchmark broken by an
API change before the nightly asv run does. Inputs are capped at 20 KB (``FASTBPE_BENCH_TINY``),
numeric parameters take their smallest value, and a benchmark whose setup raises
``NotImplementedError`` (asv's skip: feature not in this commit, data absent) is reported as a
pytest skip with asv's reason.
"""
import importlib
import inspect
import itertools
import math
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import common  # noqa: E402

SUITES = ["suite_train", "suite_ingest", "suite_encode", "suite_kernels"]
BENCH_PREFIX = re.compile(r"^(time_|peakmem_|track_|mem_)")


def _is_size(value) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    return isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?[KMG]?B", value) is not None


def tiny_params(cls):
    """One small grid per class: each size-like parameter at its smallest value, every other
    (implementation, pattern, ...) at all of its values; ``tiny_params`` on a class overrides."""
    if hasattr(cls, "tiny_params"):
        return list(itertools.product(*cls.tiny_params))
    params = getattr(cls, "params", None)
    if params is None:
        return [()]
    if not isinstance(params, tuple) or (params and not isinstance(params[0], list)):
        params = (params,)
    grid = []
    for values in params:
        if all(_is_size(v) for v in values):
            grid.append([min(values, key=common.parse_size)])
        else:
            grid.append(list(values))
    return list(itertools.product(*grid))


def _benchmark_classes():
    for suite in SUITES:
        module = importlib.import_module(f"benchmarks.{suite}")
        for name, obj in vars(module).items():
            if name.startswith("_") or not inspect.isclass(obj) or obj.__module__ != module.__name__:
                continue
            methods = [m for m in dir(obj) if BENCH_PREFIX.match(m)]
            if methods:
                yield pytest.param(obj, methods, id=f"{suite}.{name}")


@pytest.fixture(autouse=True)
def tiny_inputs(monkeypatch, tmp_path_factory):
    monkeypatch.setenv(common.TINY_ENV, "1")


@pytest.mark.parametrize("cls,methods", list(_benchmark_classes()))
def test_benchmark_runs(cls, methods):
    ran, skipped = 0, []
    for args in tiny_params(cls):
        bench = cls()
        try:
            if hasattr(bench, "setup"):
                bench.setup(*args)
        except NotImplementedError as exc:
            skipped.append(f"{args}: {exc}")
            continue
        for method in methods:
            result = getattr(bench, method)(*args)
            if method.startswith("track_"):
                assert isinstance(result, (int, float)) and math.isfinite(result) and result >= 0, (
                    f"{cls.__name__}.{method}{args} returned {result!r}")
        if hasattr(bench, "teardown"):
            bench.teardown(*args)
        ran += 1
    if not ran:
        pytest.skip("every parameter combination skipped: " + "; ".join(skipped))


def test_no_stray_benchmarks_in_helpers():
    """peers/plot/common define no name asv would take for a benchmark (asv imports every module
    in benchmarks/ and runs any top-level ``time_*``/``track_*``/... function or class with such
    methods)."""
    for name in ("common", "peers", "plot"):
        path = ROOT / "benchmarks" / f"{name}.py"
        if not path.exists():
            continue
        module = importlib.import_module(f"benchmarks.{name}")
        for attr, obj in vars(module).items():
            if attr.startswith("_"):
                continue
            if inspect.isfunction(obj):
                assert not BENCH_PREFIX.match(attr), f"benchmarks.{name}.{attr} looks like a benchmark"
            if inspect.isclass(obj):
                assert not any(BENCH_PREFIX.match(m) for m in dir(obj)), (
                    f"benchmarks.{name}.{attr} has benchmark-like methods")


def test_asv_config_is_valid_json_with_comments():
    """asv.conf.json parses (asv allows // comments) and points at this benchmarks/ directory."""
    import json

    text = (ROOT / "asv.conf.json").read_text()
    config = json.loads("\n".join(line for line in text.splitlines()
                                  if not line.lstrip().startswith("//")))
    assert config["benchmark_dir"] == "benchmarks"
    assert config["repo"] == "."
    assert config["results_dir"].startswith(".asv")
    assert (ROOT / config["benchmark_dir"] / "__init__.py").exists()


def test_common_helpers():
    """The deterministic inputs really are deterministic and the size parser round-trips."""
    assert common.generated_text(5000) == common.generated_text(5000)
    assert common.generated_text(5000, seed=1) != common.generated_text(5000)
    for size in ("100KB", "1MB", "10MB"):
        assert common.format_size(common.parse_size(size)) == size
    assert common.input_size("10MB") == common.TINY_BYTES  # the autouse fixture's tiny mode
    assert common.unescape_cell(r"a\\tb\tc") == "a\\tb\tc"
