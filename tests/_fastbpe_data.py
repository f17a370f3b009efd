"""Shared-data access for the encoding tests (FASTBPE_DATA, default ../shared/data)."""
import gzip
import itertools
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    return Path(os.environ.get("FASTBPE_DATA", REPO.parent / "shared" / "data"))


def need(*parts: str) -> Path:
    """Path of a shared-data file, or skip the test saying what is missing."""
    path = data_dir().joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data file {path} not found (set FASTBPE_DATA to run this test)")
    return path


def text_slice(name: str, chars: int) -> str:
    with gzip.open(need(name), "rt", encoding="utf-8") as f:
        return f.read(chars)


def rows(name: str, count: int) -> list:
    with gzip.open(need(name), "rt", encoding="utf-8") as f:
        return list(itertools.islice(f, count))
