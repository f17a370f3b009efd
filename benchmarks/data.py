"""Where the shared data lives, for the tests and the benchmarks alike.

The real corpora and tokenizer files are not in this repository: they are read from the folder
named by ``FASTBPE_DATA``, by default ``shared/data`` beside the checkout.
"""
import gzip
import itertools
import os
from pathlib import Path
from typing import List

__all__ = ["data_dir", "data_path", "MissingData", "text_slice", "first_lines"]

REPO = Path(__file__).resolve().parent.parent


class MissingData(FileNotFoundError):
    """A shared-data file is not there (the message says where it was looked for)."""


def data_dir() -> Path:
    """``$FASTBPE_DATA``, or ``../shared/data`` relative to the repository root."""
    return Path(os.environ.get("FASTBPE_DATA", REPO.parent / "shared" / "data"))


def data_path(*parts: str) -> Path:
    """The path of a shared-data file; :class:`MissingData` when it is absent."""
    path = data_dir().joinpath(*parts)
    if not path.exists():
        raise MissingData(f"shared data file {path} not found (set FASTBPE_DATA to the shared data folder)")
    return path


def text_slice(name: str, chars: int) -> str:
    """The first ``chars`` characters of a gzipped UTF-8 text of the shared data."""
    with gzip.open(data_path(name), "rt", encoding="utf-8") as f:
        return f.read(chars)


def first_lines(name: str, count: int) -> List[str]:
    """The first ``count`` lines (with their endings) of a gzipped text of the shared data."""
    with gzip.open(data_path(name), "rt", encoding="utf-8") as f:
        return list(itertools.islice(f, count))
