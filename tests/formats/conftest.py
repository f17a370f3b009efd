"""Shared inputs of the format tests: real text samples and tiktoken's own encodings."""
import pytest

from fastbpe.formats import OPENAI_ENCODINGS, read_tiktoken_ranks
from fastbpe.split.patterns import source


@pytest.fixture(scope="session")
def samples(shared_data):
    """Real text: 2,000 rows of the 9-language table, 1 MB of English, 1 MB of code."""
    return {
        "multi": "".join(shared_data.rows("parallel_multi.tsv.gz", 2000)),
        "english": shared_data.text("english.txt.gz", 1_000_000),
        "code": shared_data.text("code.txt.gz", 1_000_000),
    }


@pytest.fixture(scope="session")
def tiktoken_encoding(shared_data):
    """tiktoken's Encoding of an OpenAI encoding name, built from the shared rank file."""
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken (test extra) verifies the tiktoken format")

    def build(name):
        path = shared_data.path("tokenizers", "tiktoken", f"{name}.tiktoken")
        pattern, specials = OPENAI_ENCODINGS[name]
        return tiktoken.Encoding(name, pat_str=source(pattern), mergeable_ranks=read_tiktoken_ranks(path),
                                 special_tokens=specials)

    return build
