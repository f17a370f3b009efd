"""The compiled pre-tokenizers yield exactly the chunks of the `regex` module, on every input."""
import gzip
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


from fastbpe.reference.split import GPT2_ORIGINAL_PATTERN
from fastbpe.reference.split import pretokenize as regex_pretokenize
from fastbpe.reference.split import pretokenize_bytes as regex_pretokenize_bytes
from fastbpe._core.split import PATTERN_IDS
from fastbpe.split import PATTERNS, InvalidUTF8, pretokenize, pretokenize_bytes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = sorted(PATTERNS)

# Characters that exercise every branch of the scanners: each kind of whitespace (\s of regex,
# newline kinds, NBSP, ideographic space, NEL), apostrophes and contraction letters in both cases
# (and U+017F, which (?i:s) matches), letters of each o200k class (Lu Ll Lt Lm Lo, of two and
# of three bytes: o200k's letter runs take three-byte Lo, Lm and marks in a loop of their own),
# marks (Mn Mc Me), digits of other scripts and other numbers, punctuation, '/', emoji with
# modifiers and ZWJ, and U+001C..U+001F (whitespace for str.split(), not for regex's \s).
SPECIAL = list(
    " \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000"
    "'\u2019sStTdDmMlLvVeErR\u017f"
    "aZ\u00e9\u00c9\u01c5\u02b0\u4e2d\u0e01\u0939\u0628\u0416"
    "\u2c00\u2c30\u1e9e\u1d00\u30fc\u3041"
    "\u0301\u0300\u093f\u0903\u20dd"
    "09\u0663\u0967\u00b2\u00bd\u2165"
    "!.,-/\\\"?()\u3002\u00bf"
    "\U0001F600\U0001F3FB\u200d\ufffd"
)
special_text = st.lists(
    st.one_of(st.sampled_from(SPECIAL), st.sampled_from(["'s", "'LL", "'Ve", "'RE", "\r\n", "  ", "\n\n", " '"])),
    max_size=40,
).map("".join)
ascii_text = st.text(alphabet=st.characters(max_codepoint=127), max_size=60)
spaces_text = st.text(alphabet=" \t\n\r\x0b\x0c\xa0\u3000ab1.'\u0301", max_size=40)
any_text = st.text(max_size=60)  # every code point except surrogates

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(params=["compiled", "regex"])
def impl(request):
    """Both implementations: each test checks them against each other / against invariants."""
    return pretokenize if request.param == "compiled" else regex_pretokenize


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(text=st.one_of(special_text, ascii_text, spaces_text, any_text))
def test_compiled_equals_regex(name, text):
    assert pretokenize(text, name) == regex_pretokenize(text, name)


# Lengths around the 16 bytes a SIMD step classifies and multiples of it up to two 64-byte
# windows: runs that end just before, at and just after each (where a block-wise scanner errs).
WINDOW_LENGTHS = [15, 16, 17, 31, 32, 33, 47, 48, 49, 59, 60, 61, 62, 63, 64, 65, 66, 126, 127, 128, 129]

# Runs of one kind of character, of lengths around the 16 bytes the scanners classify at a
# time, so that runs start, end and continue at every offset of a 16-byte window (and the text
# ends inside or right after one), with the characters that end an ASCII stretch mid-run.
RUN_ALPHABETS = ["abcXYZ", "ABCDE", "xyz", "0123456789", " ", "\t\n\r\x0b\x0c ", "\n", ".,!?-/'", "\u00e9\u00c9\u01c5",
                 "\u0663\u00b2", "\u00a0\u3000\u2028", "\u0301", "\u4e2d",
                 # two-byte letters (Cyrillic, Greek, Hebrew, Arabic), and two-byte characters of
                 # other classes among them (a sign, an Arabic digit, a mark, NBSP, a letter)
                 "\u0416\u0436\u03a9\u05d0\u0628", "\u00d7\u0660\u0301\u00a0\u00b5",
                 # three-byte letters and marks (Devanagari, Thai, CJK, Hangul, full-width Latin
                 # of both cases), three-byte characters of other classes (digits, punctuation,
                 # spaces) and four-byte ones (a capital letter, an emoji) among them
                 "\u0915\u0937\u094d\u093e\u0e01\u0e02\u0e31\u0e48\u4e2d\u6587\ud55c\uff21\uff41",
                 "\u0966\u0e51\u3002\u2019\u3000\U0001d400\U0001f600\u0416"]
long_runs_text = st.lists(
    st.tuples(st.sampled_from(RUN_ALPHABETS), st.one_of(st.integers(1, 40), st.sampled_from(WINDOW_LENGTHS)),
              st.integers(0, 2**32)),
    max_size=24,
).map(lambda runs: "".join("".join(a[(seed >> k) % len(a)] for k in range(n)) for a, n, seed in runs))


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(text=long_runs_text)
def test_compiled_equals_regex_on_long_runs(name, text):
    assert pretokenize(text, name) == regex_pretokenize(text, name)


@pytest.mark.parametrize("name", NAMES)
def test_compiled_equals_regex_after_each_ascii_whitespace(name):
    """Every ASCII whitespace character (and U+001C, not whitespace for regex) before every
    character of SPECIAL, with each kind of continuation: the scanners' fast path for a chunk
    that starts with ASCII whitespace hands it to the whitespace alternatives only when no
    other alternative can start there."""
    texts = []
    for ws in " \t\n\r\x0b\x0c\x1c":
        for c in SPECIAL:
            for tail in ("", "a", " ", "\n", "1", ".", ws):
                texts += [ws + c + tail, "x" + ws + c + tail, ws + ws + c + tail]
    assert [pretokenize(t, name) for t in texts] == [regex_pretokenize(t, name) for t in texts]


# One run of each kind an ASCII fast path decides (and the cases it hands over: contractions,
# a non-ASCII continuation), after every offset from 0 to 70 and of every length of
# WINDOW_LENGTHS, with each kind of end; all in one text per pattern, so that the runs start at
# every offset of a classified window.
WINDOW_RUNS = ["a", "Ab", "ABC", "aB", "7", " ", "\n", "\r\n", " \t", ".", "=/", " x", " .", "\t-"]
WINDOW_TAILS = ["", " z", "'s", "\u00e9", "\u00a0", "\n", "9", "/\n", "\u0663"]


@pytest.mark.parametrize("name", NAMES)
def test_compiled_equals_regex_across_window_edges(name):
    filler = "It's 12 ab.\n " * 6
    pieces = [filler[:offset] + run * (length // len(run) + 1) + tail
              for run in WINDOW_RUNS for tail in WINDOW_TAILS for offset in range(0, 71, 7)
              for length in WINDOW_LENGTHS[::2]]
    text = "".join(pieces)
    assert pretokenize(text, name) == regex_pretokenize(text, name)
    # and each piece as a text of its own: the text ends inside or right after the window
    assert [pretokenize(t, name) for t in pieces[::5]] == [regex_pretokenize(t, name) for t in pieces[::5]]


# What decides a chunk start near a 64-byte block edge (the scanners compute the starts of a
# whole block of ASCII at once): contractions, apostrophe runs, space and newline prefixes,
# newlines (and o200k's slashes) after punctuation, spaces after a newline, digit groups, CRLF,
# o200k's case changes, non-ASCII characters (the last: a block after one taken up mid-way).
BLOCK_PIECES = ["'s", "'RE", "'ll", "'ve", "'", "''s", " 's", "x's", "!'d", "\t't", "\r\n", " \r\n", "\n  x",
                "\n \n x", "!\n\n  \nx", "!\r\n", ".\n\n", "1234567", " 12", "a.b", " .x", "..x", "\tx", "\t.",
                "   x", "  \n", "\u00e9", "\u2019s", "'\u017f", "\n\u00a0x", "aB", "ABc", "don't", "IT'S's", "x's's's",
                "!\n/x", "a/\n/.", "\u00e9 xy!\n/!xyz"]
BLOCK_FILLERS = ["ab cd ", " ", "7", "'", "\n", "!?", "A\tb"]


@pytest.mark.parametrize("name", NAMES)
def test_compiled_equals_regex_across_block_edges(name):
    """Each piece of BLOCK_PIECES after filler runs of every length from 52 to 68 and from 116
    to 132 (so that it straddles bytes 63/64 or 127/128), followed by more filler or by the end
    of the text."""
    texts = []
    for filler in BLOCK_FILLERS:
        run = filler * (140 // len(filler))
        for piece in BLOCK_PIECES:
            for k in [*range(52, 69), *range(116, 133)]:
                texts += [run[:k] + piece + run[:70], run[:k] + piece]
    assert [pretokenize(t, name) for t in texts] == [regex_pretokenize(t, name) for t in texts]


@pytest.mark.parametrize("name", NAMES)
def test_compiled_equals_regex_on_whitespace_filling_blocks_after_a_newline(name):
    """A newline that ends a block (or sits anywhere near its end), then spaces or tabs that fill
    the next block whole and go on past it, then a letter, a newline, a non-ASCII character or
    the end of the text: whether those spaces start a chunk is decided by what ends their run,
    which lies beyond the block in which the run starts."""
    texts = []
    for before in (62, 63, 64):
        for blank in (" ", "\t", " \t\x0b\x0c"):
            for length in (63, 64, 65, 127, 128, 129, 140):
                run = (blank * length)[:length]
                for tail in ("x", "\n", "\r\nx", "\u00e9", "", " y", "!"):
                    texts.append("a" * before + "\n" + run + tail)
                    texts.append("a" * (before - 1) + "!\n" + run + tail)
    assert [pretokenize(t, name) for t in texts] == [regex_pretokenize(t, name) for t in texts]


# Mostly-ASCII texts of a few hundred bytes from the pieces above and common words: several
# blocks, with every kind of start at every offset.
block_text = st.lists(
    st.one_of(st.sampled_from(BLOCK_PIECES), st.sampled_from(BLOCK_FILLERS),
              st.sampled_from(["the", " The", " cat", "ISN'T", " 2024", ",", " (", "\n\n", "    ", "\t\t", "x" * 70,
                               " " * 66, "9" * 65])),
    max_size=80,
).map("".join)


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(text=block_text)
def test_compiled_equals_regex_on_texts_of_several_blocks(name, text):
    assert pretokenize(text, name) == regex_pretokenize(text, name)


# scan.h's portable code (what a build without SSE2 compiles): texts on stdin, each a decimal
# byte count, a newline and the bytes; for each, its chunk ends on one line.
PORTABLE_DRIVER = r"""
#include "scan.h"
#include <cstdio>
#include <cstdlib>
#include <vector>
int main(int argc, char** argv) {
    const int pattern = std::atoi(argv[1]);
    size_t n;
    while (std::scanf("%zu", &n) == 1) {
        std::getchar();
        std::vector<uint8_t> text(n + 1);
        if (std::fread(text.data(), 1, n, stdin) != n) return 1;
        fbpt::ChunkList chunks;
        fbpt::scan_chunks(text.data(), n, text.data() + n, pattern, chunks);
        for (int64_t e : chunks.ends) std::printf("%lld ", (long long)e);
        std::printf("\n");
    }
    return 0;
}
"""


def test_portable_scanners_equal_regex(tmp_path):
    """The scanners compiled without SSE2 (the byte loops that stand in for the SIMD steps) on
    the block-edge texts and this project's README and CHANGELOG."""
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        pytest.skip("no C++ compiler")
    source = tmp_path / "portable.cc"
    source.write_text(PORTABLE_DRIVER)
    program = tmp_path / "portable"
    subprocess.run([cxx, "-O1", "-std=c++17", "-U__SSE2__", "-I" + os.path.join(ROOT, "fastbpe", "_core"),
                    str(source), "-o", str(program)], check=True)
    texts = []
    for filler in BLOCK_FILLERS[:4]:
        run = filler * (140 // len(filler))
        texts += [run[:k] + piece + run[:70] for piece in BLOCK_PIECES for k in (60, 62, 63, 64, 65)]
    for doc in ("README.md", "CHANGELOG.md"):
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            texts.append(f.read())
    stdin = b"".join(b"%d\n%s" % (len(t.encode()), t.encode()) for t in texts)
    for name in ("gpt2", "cl100k", "llama3", "o200k"):
        out = subprocess.run([str(program), str(PATTERN_IDS[name])], input=stdin, capture_output=True, check=True).stdout
        got = [[int(e) for e in line.split()] for line in out.decode().splitlines()]
        expected = [list(itertools.accumulate(len(c.encode()) for c in regex_pretokenize(t, name))) for t in texts]
        assert got == expected, name


@pytest.mark.parametrize("name", NAMES)
def test_compiled_equals_regex_with_a_non_ascii_character_at_every_offset(name):
    """A non-ASCII character (a letter, a space, a digit, other, a mark) at each byte of the
    first two 64-byte windows, inside runs of each kind: an ASCII fast path stops there and hands
    over."""
    texts = []
    for base in ("a" * 140, "ab cd " * 24, "1234567" * 20, " " * 140, "\n\n " * 47, ".,;" * 47, "AbCd'S " * 20):
        for extra in ("\u00e9", "\u00a0", "\u0663", "\u00bf", "\u0301", "\U0001F600"):
            texts += [base[:k] + extra + base[k:] for k in range(0, 130, 3)]
    assert [pretokenize(t, name) for t in texts] == [regex_pretokenize(t, name) for t in texts]


@pytest.mark.parametrize("name", NAMES)
def test_compiled_equals_regex_on_letter_runs_of_every_length_up_to_two_windows(name):
    """A letter run of each length from 1 to 34 (after nothing, a space, a parenthesis, an
    upper-case letter), stopped by each kind of byte: ASCII ones end it inside or at the edge
    of a 16-byte window, non-ASCII letters continue it, other non-ASCII characters end it; then
    nothing (the text ends right after the run) or enough filler that the window lies inside
    the text."""
    texts = []
    for prefix in ("", " ", "(", "Q", " '"):
        for length in range(1, 35):
            run = "".join("abcdefghijklmnopqrstuvwxyzABCDEFGH"[(k * 7) % 34] for k in range(length))
            for stop in ("", " ", ".", "'s", "1", "\n", "\u00e9x", "\u00a0", "\u0663", "\u3002", "\U0001F600"):
                for filler in ("", " and more" * 4):
                    texts.append(prefix + run + stop + filler)
    assert [pretokenize(t, name) for t in texts] == [regex_pretokenize(t, name) for t in texts]
    expected = [[c.encode("utf-8") for c in regex_pretokenize(t, name)] for t in texts]
    assert [pretokenize_bytes(t.encode("utf-8"), name) for t in texts] == expected


@pytest.mark.parametrize("name", NAMES)
def test_compiled_equals_regex_on_every_prefix(name):
    """Texts ending at every byte (a scanner reading ahead must stop at the end)."""
    text = "Hello  world's 1234567 THE End.\n\n\t  x/y\r\n" * 4
    prefixes = [text[:k] for k in range(len(text) + 1)]
    assert [pretokenize(t, name) for t in prefixes] == [regex_pretokenize(t, name) for t in prefixes]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("errors", ["replace", "bytes"])
def test_invalid_byte_at_every_offset_equals_reference(name, errors):
    """An invalid byte at every offset of ASCII text: the scanner restarts after it (bytes) or
    scans U+FFFD in its place (replace)."""
    data = ("Hello  world's 1234567 THE End.\n\n\t  x/y " * 3).encode()
    for k in range(0, len(data) + 1):
        bad = data[:k] + b"\xff" + data[k:]
        expected = [c.encode("utf-8", "surrogateescape") for c in regex_pretokenize_bytes(bad, name, errors)]
        assert pretokenize_bytes(bad, name, errors) == expected


@FAST
@given(text=st.one_of(special_text, ascii_text, spaces_text, any_text))
def test_gpt2_equals_the_original_release_spelling(text):
    """GPT-2's encoder.py spelling (the issue's) and tiktoken's give the same chunks."""
    assert pretokenize(text, "gpt2") == regex.findall(GPT2_ORIGINAL_PATTERN, text)


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(text=st.one_of(special_text, any_text))
def test_bytes_entry_equals_regex(name, text):
    data = text.encode("utf-8")
    assert pretokenize_bytes(data, name) == [c.encode("utf-8") for c in regex_pretokenize(text, name)]


@pytest.mark.parametrize("name", NAMES)
def test_chunks_cover_the_text(name, impl):
    text = "Hello  world!\n\n  It's 2024 \u4e2d\u6587 \u0915\u093f\u0924\u093e\u092c  \n"
    chunks = impl(text, name)
    if name == "whitespace":
        assert chunks == text.split()
    else:
        assert "".join(chunks) == text
    assert all(chunks)


@pytest.mark.parametrize(
    "name, text, expected",
    [
        # \s+(?!\S) gives the run minus its last space; that space joins the word (gpt2)
        ("gpt2", "a   b", ["a", "  ", " b"]),
        # ...but a newline cannot be the optional ' ' prefix: it stands alone
        ("gpt2", "a \n b\n\nc", ["a", " \n", " b", "\n", "\n", "c"]),
        # a trailing whitespace run is one chunk
        ("gpt2", "a \n ", ["a", " \n "]),
        # cl100k: any non-letter non-digit non-newline char can prefix a letter run
        ("cl100k", "a\t\tb", ["a", "\t", "\tb"]),
        ("cl100k", "x  \n\n  y", ["x", "  \n\n", " ", " y"]),
        ("cl100k", "1234567", ["123", "456", "7"]),
        ("cl100k", "I'M 'S'll", ["I", "'M", " '", "S", "'ll"]),
        ("cl100k", "\u017f'\u017f", ["\u017f", "'\u017f"]),
        # o200k: case-aware words, contractions glued, marks in words
        ("o200k", "HelloWORLDWide don'T", ["Hello", "WORLDWide", " don'T"]),
        ("o200k", "a.\n/b", ["a", ".\n/", "b"]),
        # o200k: a run of ideographs (Lo: either case) takes a lower-case letter after it, and an
        # upper-case one after that starts the next word; the same with kana and a mark
        ("o200k", "\u4e2d\u6587\u2c30\u2c00a", ["\u4e2d\u6587\u2c30", "\u2c00a"]),
        ("o200k", "\u3041\u0e31\u1d00\u1e9e\u4e2d", ["\u3041\u0e31\u1d00", "\u1e9e\u4e2d"]),
        ("llama3", "a \n ", ["a", " \n", " "]),
        ("cl100k", "a \n ", ["a", " \n "]),
    ],
)
def test_hand_checked_examples(name, text, expected, impl):
    assert impl(text, name) == expected


@pytest.mark.parametrize("name", NAMES)
def test_lone_surrogates_fall_back_to_regex(name):
    text = "ab\ud800 cd \udfff"
    assert pretokenize(text, name) == regex_pretokenize(text, name)


def test_user_regex_and_errors():
    assert pretokenize("don't stop", r"\w+|[^\w\s]+") == ["don", "'", "t", "stop"]
    with pytest.raises(ValueError, match="not a pattern name"):
        pretokenize("x", "(unclosed")
    with pytest.raises(TypeError):
        pretokenize(b"bytes", "gpt2")
    with pytest.raises(TypeError):
        pretokenize("x", 3)
    with pytest.raises(ValueError, match="errors"):
        pretokenize_bytes(b"x", "gpt2", errors="ignore")
    assert pretokenize("", "gpt2") == [] and pretokenize_bytes(b"", "o200k") == []


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("errors", ["strict", "replace", "bytes"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.one_of(special_text.map(lambda t: t.encode("utf-8")), st.binary(max_size=6)), max_size=6))
def test_invalid_utf8_modes_equal_reference(name, errors, parts):
    data = b"".join(parts)
    try:
        expected = [c.encode("utf-8", "surrogateescape") for c in regex_pretokenize_bytes(data, name, errors)]
    except InvalidUTF8 as exc:
        with pytest.raises(InvalidUTF8) as info:
            pretokenize_bytes(data, name, errors)
        assert info.value.offset == exc.offset
        return
    assert pretokenize_bytes(data, name, errors) == expected


@pytest.mark.parametrize("errors", ["strict", "replace", "bytes"])
def test_utf8_at_every_offset_of_long_ascii_runs_equals_reference(errors):
    """Valid and invalid sequences at each offset of the first three 32-byte steps of the
    validator's ASCII path and at the text's end: the step that holds one must stop at its
    first byte (a lone continuation, a truncated, overlong or surrogate sequence, a code point
    past U+10FFFF, and valid 2-, 3- and 4-byte characters, also two in one step)."""
    filler = ("The quick brown fox's 1234 jumps.\n" * 4).encode()
    sequences = [b"\x80", b"\xc3", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                 "\u00e9".encode(), "\u4e2d".encode(), "\U0001F600".encode(), "\u00e9 \u00a0".encode()]
    for seq in sequences:
        for k in range(0, 100):
            for data in (filler[:k] + seq + filler[k:], filler[:k] + seq):
                try:
                    expected = [c.encode("utf-8", "surrogateescape") for c in regex_pretokenize_bytes(data, "gpt2", errors)]
                except InvalidUTF8 as exc:
                    with pytest.raises(InvalidUTF8) as info:
                        pretokenize_bytes(data, "gpt2", errors)
                    assert info.value.offset == exc.offset == k
                    continue
                assert pretokenize_bytes(data, "gpt2", errors) == expected, (seq, k)


def test_invalid_bytes_are_one_byte_chunks():
    # each invalid byte is its own chunk; the valid stretches are chunked as separate texts
    assert pretokenize_bytes(b"ab \xff\xfe cd\xe2\x82", "gpt2", "bytes") == [b"ab", b" ", b"\xff", b"\xfe", b" cd", b"\xe2", b"\x82"]
    # replace: one U+FFFD per maximal invalid subpart, as Python's decoder
    assert pretokenize_bytes(b"ab\xe2\x82 cd", "gpt2", "replace") == [b"ab", "\ufffd".encode(), b" cd"]
    with pytest.raises(InvalidUTF8) as info:
        pretokenize_bytes(b"ok \xc3(", "gpt2")
    assert info.value.offset == 3


def test_huge_single_chunk_is_linear():
    text = "x" * (3 << 20)
    assert pretokenize(text, "o200k") == [text]
    assert pretokenize_bytes(("\u4e2d" * (1 << 20)).encode(), "cl100k") == [("\u4e2d" * (1 << 20)).encode()]


def _published_patterns():
    tiktoken_ext = pytest.importorskip("tiktoken_ext.openai_public", reason="tiktoken not installed")
    source = Path(tiktoken_ext.__file__).read_text(encoding="utf-8")
    return tiktoken_ext, source


def test_patterns_are_the_published_strings(shared_data):
    tiktoken_ext, source = _published_patterns()
    assert PATTERNS["gpt2"] == tiktoken_ext.r50k_pat_str
    assert repr(PATTERNS["cl100k"])[1:-1] in source or PATTERNS["cl100k"] in source
    o200k_parts = PATTERNS["o200k"].split("|")
    assert all(part in source for part in o200k_parts)
    llama = shared_data.dir / "tokenizers" / "llama3" / "tokenizer.json"
    if llama.exists():
        with open(llama, encoding="utf-8") as f:
            spec = json.load(f)["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
        assert PATTERNS["llama3"] == spec
    # the original GPT-2 spelling gives the same chunks as tiktoken's
    text = "It's  a test\n\n  of   GPT-2's 99 \u4e2d\u6587 \n"
    assert regex.findall(GPT2_ORIGINAL_PATTERN, text) == pretokenize(text, "gpt2")


def test_unicode_tables_are_up_to_date():
    script = os.path.join(ROOT, "tools", "gen_unicode_tables.py")
    result = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _parallel_rows(limit, shared_data):
    path = shared_data.path("parallel_multi.tsv.gz")
    unescape = {"\\\\": "\\", "\\t": "\t", "\\n": "\n", "\\r": "\r"}
    rows = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        next(f)  # header
        for i, line in enumerate(f):
            if i >= limit:
                break
            cells = line.rstrip("\n").split("\t")
            rows.append([regex.sub(r"\\[\\tnr]", lambda m: unescape[m.group()], c) for c in cells])
    return rows


@pytest.mark.parametrize("name", NAMES)
def test_parallel_multi_rows(name, shared_data):
    rows = _parallel_rows(3000, shared_data)
    for row in rows:
        for cell in row:
            assert pretokenize(cell, name) == regex_pretokenize(cell, name), (name, cell)
    # and all rows as one text (rows joined by newlines and tabs, as in the file)
    whole = "\n".join("\t".join(row) for row in rows)
    assert_same_chunks(pretokenize(whole, name), regex_pretokenize(whole, name))


def test_every_code_point_is_classified_as_regex_does():
    """Each code point (surrogates aside) after a letter, before a mark and a digit, with spaces:
    the tables agree with regex on every class the patterns use."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    text = " ".join("a" + chr(c) + "\u0301" + chr(c) + "1" for c in cps)
    # o200k reads every class of the tables: \p{L} and \p{N} (its prefix class), \p{M}, \s, and
    # both case classes of its words
    assert_same_chunks(pretokenize(text, "o200k"), regex_pretokenize(text, "o200k"))


def assert_same_chunks(got, expected):
    """Compare two long chunk lists, reporting the first difference (pytest's own diff of
    lists of millions of items takes minutes)."""
    if got == expected:
        return
    i = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    raise AssertionError(f"chunk {i} differs: {got[i:i + 3]!r} != {expected[i:i + 3]!r} "
                         f"(lengths {len(got)} and {len(expected)})")
