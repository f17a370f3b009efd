"""Shared inputs of the format tests: real text samples."""
import pytest


@pytest.fixture(scope="session")
def samples(shared_data):
    """Real text: 2,000 rows of the 9-language table, 1 MB of English, 1 MB of code."""
    return {
        "multi": "".join(shared_data.rows("parallel_multi.tsv.gz", 2000)),
        "english": shared_data.text("english.txt.gz", 1_000_000),
        "code": shared_data.text("code.txt.gz", 1_000_000),
    }
