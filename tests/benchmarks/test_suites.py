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
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.suites import common  # noqa: E402

SUITES = ["suite_train", "suite_ingest", "suite_encode", "suite_kernels", "suite_memory", "suite_longpiece",
          "suite_cluster"]
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
        module = importlib.import_module(f"benchmarks.suites.{suite}")
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
    # asv runs setup_cache once and passes what it returns first to setup, benchmarks, teardown
    cached = (cls().setup_cache(),) if hasattr(cls, "setup_cache") else ()
    for params in tiny_params(cls):
        args = (*cached, *params)
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


# What every ``track_*`` may return: a cost, where smaller is better, since asv reads every number
# that way (a rate such as MB/s would show a slowdown as an improvement); or a plain count of the
# inputs, where a change means the inputs changed.
COST_UNITS = {"s/MB", "s/GB", "ns/token", "ns/chunk", "us/merge", "tokens/KB", "seconds"}
COUNT_UNITS = {"chunks"}


def test_every_track_is_smaller_is_better():
    """No benchmark reports a rate: ``asv compare`` and ``python -m benchmarks compare`` would
    flag its regressions as improvements."""
    seen = []
    for param in _benchmark_classes():
        cls, methods = param.values
        for name in methods:
            if not name.startswith("track_"):
                continue
            unit = getattr(getattr(cls, name), "unit", None)
            seen.append(f"{cls.__name__}.{name}")
            assert unit in COST_UNITS | COUNT_UNITS, (
                f"{cls.__name__}.{name} has unit {unit!r}: report a cost (seconds per MB, ns per "
                "token), where smaller is better, not a rate")
            assert "per_second" not in name and not unit.endswith("/s"), f"{cls.__name__}.{name}"
    assert len(seen) >= 8, seen


def test_suites_package_holds_only_suites():
    """asv imports every module of benchmarks/suites: only asv suites and their input helpers
    belong there, and the helpers define nothing asv would take for a benchmark."""
    found = sorted(p.stem for p in (ROOT / "benchmarks" / "suites").glob("*.py"))
    assert found == sorted(["__init__", "common"] + SUITES), found
    for attr, obj in vars(common).items():
        if attr.startswith("_"):
            continue
        assert not (inspect.isfunction(obj) and BENCH_PREFIX.match(attr)), attr
        assert not (inspect.isclass(obj) and any(BENCH_PREFIX.match(m) for m in dir(obj))), attr


def test_asv_config_is_valid_json_with_comments():
    """asv.conf.json parses (asv allows // comments) and points at this benchmarks/ directory."""
    import json

    text = (ROOT / "asv.conf.json").read_text()
    config = json.loads("\n".join(line for line in text.splitlines()
                                  if not line.lstrip().startswith("//")))
    assert config["benchmark_dir"] == "benchmarks/suites"
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


def test_peers_child_run_and_documents(tmp_path):
    """The peer harness runs one fastbpe training in a fresh process and reads back its time,
    peak RSS and merges; ``documents`` cuts text at newlines without losing any."""
    from benchmarks.peers import child, run

    text = common.generated_text(20_000)
    assert "".join(child.documents(text, size=1000)) == text
    assert all(d.endswith("\n") for d in child.documents(text, size=1000)[:-1])
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text, encoding="utf-8")
    job = {"kind": "train", "lib": "fastbpe", "corpus": str(corpus), "vocab": 300,
           "min_frequency": 2, "threads": 1, "out_dir": str(tmp_path)}
    result = run.run_child(job, threads=1, timeout=120)
    assert "error" not in result, result
    assert result["seconds"] > 0 and result["peak_rss_mb"] > 0
    assert result["merges"] == 300 - 256 == result["vocab"] - 256
    assert run.merge_agreement(str(tmp_path), "fastbpe", "fastbpe") == "identical merges (44)"


def test_peers_adapters_share_one_interface():
    """Every library has one adapter; every trainer and table row belongs to exactly one, and
    names resolve to their library's adapter (``hf-count`` and ``hf:gpt2`` to HF's)."""
    from benchmarks.peers import adapters

    names = [a.name for a in adapters.ADAPTERS]
    assert names == ["fastbpe", "hf", "sentencepiece", "youtokentome", "gigatoken", "rustbpe", "tiktoken",
                     "fastokens", "splintr", "rs-bpe", "bpe-openai"]
    assert adapters.TRAINERS == ["fastbpe", "fastbpe-hf", "hf", "hf-count", "sentencepiece", "youtokentome",
                                 "gigatoken", "rustbpe"]
    assert list(adapters.LABELS) == ["fastbpe", "fastbpe-hf", "fastbpe-merge", "hf", "hf-count", "hf-merge",
                                     "sentencepiece", "youtokentome", "gigatoken", "rustbpe"]
    assert "gigatoken:llama3" in adapters.PEER_ENCODERS and "rs-bpe:o200k_base" in adapters.PEER_ENCODERS
    for name, owner in [("hf-count", "hf"), ("hf:gpt2", "hf"), ("fastbpe-hf", "fastbpe"),
                        ("fastbpe:cl100k_base", "fastbpe"), ("tiktoken:o200k_base", "tiktoken"),
                        ("gigatoken", "gigatoken"), ("splintr:llama3", "splintr"), ("rs-bpe:cl100k_base", "rs-bpe")]:
        assert adapters.adapter(name).name == owner
    assert adapters.available("fastbpe") is None and adapters.available("no-such-library") is None
    with pytest.raises(ValueError):
        adapters.adapter("tiktoken").train("tiktoken", "corpus.txt", 300, 2, 1, ".")


# The peers that are optional installs, by the module each needs, with one of their names.
OPTIONAL_PEERS = [("gigatoken", "gigatoken:cl100k_base"), ("gigatoken", "gigatoken"), ("rustbpe", "rustbpe"),
                  ("fastokens", "fastokens:o200k_base"), ("splintr", "splintr:llama3"),
                  ("rs_bpe", "rs-bpe:cl100k_base"), ("bpe_openai", "bpe-openai:o200k_base")]


@pytest.mark.parametrize("module, name", OPTIONAL_PEERS)
def test_absent_peer_is_skipped_with_a_message(monkeypatch, module, name):
    """A peer that is not installed (its import fails) is skipped, saying which module is
    missing; nothing else needs it."""
    from benchmarks.peers import adapters

    monkeypatch.setitem(sys.modules, module, None)  # ``import module`` now raises ImportError
    assert adapters.available(name) == f"{module} is not installed"


def test_encode_run_reports_absent_peers_and_their_reference(monkeypatch, tmp_path):
    """An encode-only run where the peers and tiktoken are all absent runs no child, and the
    table says why each row is missing; every published-vocabulary encoder is paired with the
    reference its ids are checked against (tiktoken, or HF for Llama 3's file)."""
    from benchmarks.peers import report, run

    for module, _ in OPTIONAL_PEERS:
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    monkeypatch.setattr(run, "run_child", lambda *a, **k: pytest.fail("no child should run"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(common.generated_text(2000), encoding="utf-8")
    args = run.parse_args(["--libs", "", "--corpus", str(corpus), "--encode-size", "1KB", "--repeats", "1",
                           "--encoders", "gigatoken:cl100k_base,rs-bpe:o200k_base"])
    results = {"meta": {"threads": 1}, "encode": {}}
    specs, skipped = run.encode_all(args, results, {}, tmp_path)
    assert specs == ["tiktoken:cl100k_base", "gigatoken:cl100k_base", "tiktoken:o200k_base", "rs-bpe:o200k_base"]
    assert skipped["gigatoken:cl100k_base"] == "gigatoken is not installed"
    assert skipped["rs-bpe:o200k_base"] == "rs_bpe is not installed"
    table = "\n".join(report.encode_table(results))
    assert "| gigatoken:cl100k_base | — |" in table and "tiktoken is not installed" in table
    assert run.reference_of("splintr:llama3") == "hf:llama3"
    assert run.reference_of("fastokens:cl100k_base") == "tiktoken:cl100k_base"
    assert run.reference_of("tiktoken:cl100k_base") is None
