"""Ctrl-C while ``pretokenize`` makes the list of a huge text's chunks (64 MB of English: 14M
str objects, seconds), and while it scans the text before that: raised from inside the
compiled call, not once the list is done. The tests assert where the exception came from, not
how soon."""
import gzip


import fastbpe
from fastbpe._core.split import PATTERN_IDS, chunk_ends
from tests.interrupts import stopped_inside


def test_the_chunks_of_a_huge_text(shared_data):
    with gzip.open(shared_data.path("english.txt.gz"), "rb") as f:
        english = f.read(64 << 20).decode("ascii", "replace")
    assert stopped_inside(lambda: fastbpe.pretokenize(english, "cl100k"), "split.pyx", 1.0)
    assert fastbpe.pretokenize("I'm  here", "cl100k") == ["I", "'m", " ", " here"]


def test_the_scan_of_a_huge_text(shared_data):
    """``chunk_ends`` is the scan alone (no list of objects after it, which looks at Ctrl-C
    itself): 128 MB of English, seconds of scanning, stopped inside it."""
    with gzip.open(shared_data.path("english.txt.gz"), "rb") as f:
        english = f.read(64 << 20) * 2
    assert stopped_inside(lambda: chunk_ends(english, PATTERN_IDS["cl100k"]), "split.pyx", 0.5)
    assert chunk_ends(b"I'm  here", PATTERN_IDS["cl100k"]).tolist() == [1, 3, 4, 9]
