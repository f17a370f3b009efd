"""What a user sees before running anything: the licence, the metadata, the changelog, the
extras the benchmarks need, and the README's commands."""
import re
import shlex
import sys
from pathlib import Path

import pytest

from fastbpe.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")


@pytest.fixture(scope="module")
def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def test_licence_file_matches_the_metadata(project):
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]


def test_classifiers_name_the_supported_pythons(project):
    lowest = tuple(map(int, re.fullmatch(r">=(\d+)\.(\d+)", project["requires-python"]).groups()))
    versions = sorted(tuple(map(int, c.rsplit(" ", 1)[1].split(".")))
                      for c in project["classifiers"] if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c))
    assert versions and versions[0] == lowest
    assert all(b == (a[0], a[1] + 1) for a, b in zip(versions, versions[1:]))  # no gaps
    # A licence expression and a licence classifier together are refused by packaging tools.
    assert not any(c.startswith("License ::") for c in project["classifiers"])


def test_changelog_lists_this_release():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for topic in ("Layout", "pattern table", "compression", "Command line", "--special-token", "raw", "llmc"):
        assert topic in text, topic


def test_extras_install_what_the_peer_comparison_and_asv_import(project):
    extras = {name: {_name(r) for r in reqs} for name, reqs in project["optional-dependencies"].items()}
    adapters = ROOT / "benchmarks" / "peers" / "adapters"
    modules = {m for path in adapters.glob("*.py")
               for m in re.findall(r'^\s+module = "([\w.]+)"', path.read_text(encoding="utf-8"), re.M)}
    # youtokentome builds from source (not on every Python); its rows are skipped without it.
    # A module whose distribution is named otherwise on PyPI, by that name.
    distribution = {"splintr": "splintr-rs", "bpe_openai": "bpe-openai"}
    assert {distribution.get(m, m) for m in modules} - {"youtokentome"} <= extras["peers"]
    if (ROOT / "benchmarks" / "peers" / "report.py").exists():
        assert "matplotlib" in extras["peers"]
    assert {"asv", "virtualenv", "matplotlib"} <= extras["bench"]


def _commands(readme: str, section: str):
    body = readme.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", body, re.S)


def test_readme_commands_are_true():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [install] = _commands(readme, "Install and run")
    [tests] = _commands(readme, "Tests")
    assert install.strip().count("\n") == 0 and tests.strip().count("\n") == 0  # one command each
    assert tests.strip() == 'python -m pip install -e ".[test]" && python -m pytest'
    fastbpe_part = install.split("&&", 1)[1].split()
    assert fastbpe_part[0] == "fastbpe"
    args = build_parser().parse_args(fastbpe_part[1:])
    assert args.command == "train" and not args.files
    for block in _commands(readme, "The command line"):
        for line in block.strip().splitlines():
            words = shlex.split(line)
            assert words[0] == "fastbpe"
            build_parser().parse_args(words[1:])
