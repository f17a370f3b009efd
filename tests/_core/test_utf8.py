"""The compiled UTF-8 validator: its vector path (blocks of 32 bytes under AVX2) finds the same
first error, with the same invalid length, as its one-character-at-a-time path, which the
scanner and encoder tests hold to Python's own decoder."""
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

import fastbpe
from fastbpe import CorpusDecodeError, WordTable, count_words
from fastbpe._core.encode import EncodeState, is_utf8
from fastbpe.reference.count import count_words as reference_counts
from fastbpe.split.patterns import TABLE
from tests.native import build_checked, program_env


def test_the_vector_validator_agrees_with_the_scalar_one(tmp_path):
    """native/utf8_blocks.cpp: every string of up to four boundary bytes around the blocks'
    seams and random texts with and without invalid bytes, built with AddressSanitizer and
    UBSan where the compiler has them (no read past the text)."""
    env = program_env()
    program = str(tmp_path / "utf8_blocks")
    built = build_checked("utf8_blocks.cpp", program)
    assert built.returncode == 0, built.stderr
    run = subprocess.run([program], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    if run.stdout.splitlines()[0] != "avx2 1":
        pytest.skip("this CPU (or compiler) has no AVX2: only the scalar validator runs here")
    assert int(run.stdout.split()[-2]) > 6_000_000  # (every case was checked)


# invalid sequences of each kind (a byte never valid, a surrogate, a character cut off, above
# U+10FFFF, an overlong), each set at the start, across the first seam between blocks, or at
# the end of texts of Cyrillic (two-byte letters: every block takes the full check)
BAD = [b"\xff", b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80", b"\xc0\xaf"]


def _cyrillic_with(bad, size, at):
    text = "привет, мир! ".encode() * (size // 20 + 1)
    text = text[:size].decode(errors="ignore").encode()  # (whole characters)
    at = min(at, len(text))
    while 0 < at < len(text) and (text[at] & 0xC0) == 0x80:
        at -= 1  # (the start of a character)
    return text[:at] + bad + text[at:]


@pytest.mark.parametrize("size", [40, 64, 100, 1000, 5000])
@pytest.mark.parametrize("at", [0, 29, 30, 31, 32, 33, 10**9])
@pytest.mark.parametrize("bad", BAD)
def test_counting_finds_the_first_invalid_byte_where_python_does(size, at, bad):
    """The strict count's offset is the start of Python's decode error; replace and bytes
    count as the reference does."""
    data = _cyrillic_with(bad, size, at)
    with pytest.raises(UnicodeDecodeError) as python:
        data.decode()
    with pytest.raises(CorpusDecodeError, match=f"invalid UTF-8 at byte offset {python.value.start} "):
        count_words(iter([data]), "cl100k", workers=1, progress=False)
    for errors in ("replace", "bytes"):
        assert count_words(iter([data]), "cl100k", workers=1, errors=errors, progress=False) == \
            WordTable.from_counts(reference_counts([data], "cl100k", errors=errors))


@pytest.mark.parametrize("size", [64, 100, 1000])
@pytest.mark.parametrize("bad", BAD)
def test_the_encoder_falls_back_exactly_on_invalid_text(size, bad):
    """The one-pass encoder takes only valid UTF-8 (None sends the caller to the regex path),
    wherever the invalid sequence sits."""
    tok = fastbpe.train("привет, мир! hello, world. " * 50, vocab_size=300, pattern="cl100k", progress=False)
    core, pattern = tok._core(), TABLE["cl100k"].scanner
    for at in (0, 31, 32, 33, 10**9):
        data = _cyrillic_with(bad, size, at)
        assert core.encode_text(data, pattern, EncodeState()) is None
        good = data.decode(errors="replace").encode()
        assert tok.decode(core.encode_text(good, pattern, EncodeState()).tolist()) == good.decode()


@settings(max_examples=300)
@given(st.binary(max_size=80) | st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_is_utf8_is_python_s_strict_decode(data):
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert is_utf8(data) == valid
    for bad in BAD:  # (the vector path: a long valid run around an invalid sequence)
        assert not is_utf8(_cyrillic_with(bad, 100, len(data)))
