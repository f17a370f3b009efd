"""The figures the READMEs quote come from the committed results, and stay that way.

``python -m benchmarks.peers.report --readme`` writes every number of README.md's "How fast" and
of benchmarks/README.md's "Latest results" from ``benchmarks/results/peers.json``; these tests
fail when a README is edited by hand or the results change without the READMEs following. Also:
the peer comparison writes to a git-ignored scratch folder by default, committed results name no
absolute path, the plots render from the committed JSON, and the asv workflow's command line.
"""
import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.peers import report, run  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def committed_results() -> dict:
    return json.loads((RESULTS / "peers.json").read_text(encoding="utf-8"))


def test_readmes_match_the_committed_results():
    changed = report.update_readmes(committed_results(), check=True)
    assert not changed, (f"{', '.join(changed)}: figures differ from benchmarks/results/peers.json; "
                         "run python -m benchmarks.peers.report --readme")


def test_both_readmes_quote_the_same_encode_ratio():
    """The top README and the benchmarks README give the same fastbpe ÷ tiktoken ratio (cl100k)."""
    results = committed_results()
    enc = results["encode"]
    ratio = f"{enc['tiktoken:cl100k_base']['median'] / enc['fastbpe:cl100k_base']['median']:.2f}×"
    top = (ROOT / "README.md").read_text(encoding="utf-8")
    bench = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    assert re.search(r"\| cl100k_base, 10MB \| .* \| " + re.escape(ratio) + r" \|", top), ratio
    assert f"{ratio} tiktoken's speed (cl100k_base" in bench


def test_figures_follow_the_results():
    """Change a number in the results: the generated READMEs change with it."""
    results = committed_results()
    before = report.readme_blocks(results)
    slower = copy.deepcopy(results)
    slower["train"][max(slower["train"], key=int)]["fastbpe"]["median"] *= 2
    after = report.readme_blocks(slower)
    assert after["speed"] != before["speed"] and after["summary"] != before["summary"]


def test_a_missing_marker_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="begin generated: speed"):
        report.apply_blocks("no markers here\n", {"speed": "x\n"}, ["speed"], "README.md")
    text = ("a\n<!-- begin generated: speed (note) -->\nold\n<!-- end generated: speed -->\nb\n")
    assert report.apply_blocks(text, {"speed": "new\n"}, ["speed"]) == text.replace("old", "new")


def test_peers_write_to_scratch_unless_told():
    """A peer run never overwrites the committed results by default, and its scratch folder is
    git-ignored."""
    args = run.parse_args(["--quick"])
    assert args.out is None
    assert run.SCRATCH.parent == RESULTS
    ignored = subprocess.run(["git", "check-ignore", "-q", str(run.SCRATCH / "peers.json")], cwd=ROOT)
    assert ignored.returncode == 0, "benchmarks/results/scratch/ is not git-ignored"


ABSOLUTE = re.compile(r"(?<![\w.~])/(?:home|root|tmp|work|Users|var|opt|mnt|srv)/")


def test_committed_results_name_no_absolute_path():
    tracked = subprocess.run(["git", "ls-files", "benchmarks/results"], cwd=ROOT,
                             capture_output=True, text=True).stdout.split()
    assert tracked
    for rel in tracked:
        if rel.endswith((".json", ".md")):
            text = (ROOT / rel).read_text(encoding="utf-8")
            assert not ABSOLUTE.search(text), f"{rel}: {ABSOLUTE.search(text).group(0)}"


def test_plots_render_from_the_committed_results(tmp_path):
    pytest.importorskip("matplotlib")
    written = report.plot(committed_results(), tmp_path)
    assert [p.name for p in written] == ["training_time.png", "language_throughput.png", "token_tax.png"]
    assert all(p.stat().st_size > 10_000 for p in written)


def test_token_tax_merges_encoders_with_identical_ids():
    """One bar per vocabulary: tiktoken and fastbpe on the same ranks give the same tokens."""
    per_lang = {k: v for k, v in committed_results()["languages"].items() if "en" in v}
    series = report._token_tax_series(per_lang, 32768)
    labels = [label for label, _, _ in series]
    assert len(series) < len(per_lang)
    assert any("cl100k_base" in label and "tiktoken" in label for label in labels), labels
    assert len({colour for _, colour, _ in series}) == len(series)  # distinct colours


def test_workflow_command_line():
    from benchmarks import workflow

    args, extra = workflow.parse(["compare", "main", "HEAD", "--factor", "1.2", "-b", "Train", "--", "-a", "repeat=3"])
    assert (args.command, args.before, args.after, args.factor) == ("compare", "main", "HEAD", 1.2)
    assert workflow.bench_args(args) == ["--bench=Train"] and extra == ["-a", "repeat=3"]
    args, _ = workflow.parse(["record"])
    assert args.command == "record" and not args.allow_dirty
    # asv compare's table rows: "+" worse, "!" now failing, "-" better.
    assert workflow.WORSE_ROW.match("| +        |   0.37 |  0.44 |    1.19 | suite_train.X('100KB') |")
    assert workflow.WORSE_ROW.match("| !        |   0.37 |  failed |    n/a | suite_train.X |")
    assert not workflow.WORSE_ROW.match("| -        |   0.10 |  0.08 |    0.84 | suite_train.X('10MB') |")
    assert workflow.FAILED_ROW.match(
        "[50.00%] ··· ...ain.MergePhaseThroughput.track_unique_chunks                 failed").group(1) \
        == "...ain.MergePhaseThroughput.track_unique_chunks"


def test_workflow_sees_uncommitted_sources(tmp_path):
    """``record`` refuses to save results under HEAD when the sources differ from HEAD."""
    from benchmarks import workflow

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                       check=True, capture_output=True)

    (tmp_path / "fastbpe").mkdir()
    (tmp_path / "fastbpe" / "core.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("a\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "init")
    assert workflow.dirty_sources(tmp_path) == []
    (tmp_path / "notes.txt").write_text("b\n")  # not a source: fine
    assert workflow.dirty_sources(tmp_path) == []
    (tmp_path / "fastbpe" / "core.py").write_text("x = 2\n")
    assert workflow.dirty_sources(tmp_path) == ["fastbpe/core.py"]


def test_encoders_table_shows_speeds_ratios_and_every_id_check():
    """README.md's encoders table: MB/s of CPU time cold and warm, the ratio to fastbpe on the
    same vocabulary, a peer that did not run with its reason, and ids that differ said so."""
    def runs(cold, warm):
        return run.summary([{"seconds": cold, "cpu_seconds": cold, "warm_cpu_seconds": warm, "bytes": 10_000_000,
                             "tokens": 2_500_000, "peak_rss_mb": 100, "load_average": load}
                            for load in (1.5, 2.5)])

    encode = {"tiktoken:cl100k_base": runs(1.0, 1.0), "fastbpe:cl100k_base": runs(0.5, 0.25),
              "gigatoken:cl100k_base": runs(0.25, 0.0625), "fastokens:cl100k_base": {"ok": False,
                                                                                     "reason": "fastokens is not installed"},
              "splintr:cl100k_base": runs(0.5, 0.5)}
    encode["fastbpe:cl100k_base"]["agreement"] = "vs tiktoken:cl100k_base: identical ids (2500000)"
    encode["gigatoken:cl100k_base"]["agreement"] = "vs tiktoken:cl100k_base: identical ids (2500000)"
    encode["splintr:cl100k_base"]["agreement"] = ("vs tiktoken:cl100k_base: ids DIFFER (2500000 vs 2500001 tokens, "
                                                  "first difference at 7)")
    meta = {"command": "python -m benchmarks.peers --libs ''", "commit": "abc1234", "encode_bytes": 10_000_000,
            "corpus": None, "repeats": 2, "load_average": [1.2, 1.3, 1.4],
            "versions": {"fastbpe": "0.1.0", "tiktoken": "0.14.0", "gigatoken": "0.10.0", "splintr-rs": "0.22.0"}}
    lines = report.readme_encoders({"meta": meta, "encode": encode})
    text = "\n".join(lines)
    assert "load average 1.2 1.3 1.4 at the start, 1.5–2.5 as the runs started" in text
    assert "| tiktoken 0.14.0 | cl100k_base | 10 MB/s | 10 MB/s | 0.50× / 0.25× | reference |" in lines
    assert "| **fastbpe 0.1.0** | cl100k_base | 20 MB/s | 40 MB/s | 1 | identical to tiktoken's |" in lines
    assert "| gigatoken 0.10.0 | cl100k_base | 40 MB/s | 160 MB/s | 2.00× / 4.00× | identical to tiktoken's |" in lines
    assert "| fastokens | cl100k_base | — | — | — | fastokens is not installed |" in lines
    assert "ids DIFFER (2500000 vs 2500001 tokens, first difference at 7)" in text
