"""Ctrl-C while ``pretokenize`` makes the list of a huge text's chunks (64 MB of English: 14M
str objects, seconds): raised from inside the compiled call, not once the list is done. The
test asserts where the exception came from, not how soon."""
import gzip


import fastbpe
from tests.interrupts import stopped_inside


def test_the_chunks_of_a_huge_text(shared_data):
    with gzip.open(shared_data.path("english.txt.gz"), "rb") as f:
        english = f.read(64 << 20).decode("ascii", "replace")
    assert stopped_inside(lambda: fastbpe.pretokenize(english, "cl100k"), "split.pyx", 1.0)
    assert fastbpe.pretokenize("I'm  here", "cl100k") == ["I", "'m", " ", " here"]
