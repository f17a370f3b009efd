"""The shared tokenizers the analysis tests read, each loaded once per session (skipped, saying
what is missing, without the shared data)."""
import pytest

import fastbpe


@pytest.fixture(scope="session")
def gpt2(shared_data):
    return fastbpe.Tokenizer.from_gpt2(shared_data.path("tokenizers", "encoder.json"),
                                       shared_data.path("tokenizers", "vocab.bpe"))


@pytest.fixture(scope="session")
def cl100k(shared_data):
    return fastbpe.load(shared_data.path("tokenizers", "tiktoken", "cl100k_base.tiktoken"))
