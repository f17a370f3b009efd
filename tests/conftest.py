import os
from pathlib import Path

import pytest
from hypothesis import settings

# "ci" is the profile CI and the README's test command use; "thorough" for long local runs.
settings.register_profile("ci", max_examples=200, deadline=None)
settings.register_profile("thorough", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The shared data folder: $FASTBPE_DATA, else ../shared/data beside the checkout."""
    return Path(os.environ.get("FASTBPE_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = data_dir()
    if not path.is_dir():
        pytest.skip(f"shared data not found at {path} (set FASTBPE_DATA to run this test)")
    return path
