"""Ctrl-C while ``pretokenize`` makes the list of a huge text's chunks (64 MB of English: 14M
str objects, seconds): raised from inside the compiled call, not once the list is done. The
test asserts where the exception came from, not how soon."""
import gzip

import pytest

import fastbpe
from tests.interrupts import Interrupted, raised_in, sigint_soon


def test_the_chunks_of_a_huge_text(shared_data):
    with gzip.open(shared_data.path("english.txt.gz"), "rb") as f:
        english = f.read(64 << 20).decode("ascii", "replace")
    with pytest.raises(Interrupted) as info:
        with sigint_soon(1.0):
            fastbpe.pretokenize(english, "cl100k")
    assert raised_in(info, "split.pyx")
    assert fastbpe.pretokenize("I'm  here", "cl100k") == ["I", "'m", " ", " here"]
