"""A str's UTF-8 kept inside it, made by the compiled encoder (str_utf8.h) where CPython would
make it: the bytes CPython then reads from the str are the str's UTF-8, for strs of every kind
(1, 2 and 4 bytes a character, ASCII runs of every length around the encoder's 16-unit steps),
a str it cannot make (a lone surrogate, a subclass) is left to CPython, and the memory is
CPython's to free (a debug allocator, which stops the process at a mismatch, runs it)."""
import os
import subprocess
import sys
import sysconfig
import textwrap

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import fastbpe
from fastbpe._core.encode import STR_UTF8_MADE_HERE

TEXT = "the cat sat on the mat; le chat était assis. 猫が座った. кот сидел 😀 " * 20


@pytest.fixture(scope="module")
def tok():
    return fastbpe.train(TEXT, vocab_size=300, progress=False)


def fresh(text: str) -> str:
    """A new str object equal to ``text``, with no UTF-8 inside it yet (slicing a longer str
    makes one; a one-character str may be CPython's shared one, which is fine)."""
    return (text + "\x00")[:-1]


# runs of ASCII of lengths around the encoder's steps of 16, between characters of 2, 3 and 4
# bytes of UTF-8 from strs of each kind
WIDE = st.sampled_from(["é", "ÿ", "ж", "中", "\uffff", "😀", "\U0010ffff"])
ASCII_RUN = st.integers(0, 40).map(lambda n: "abcdefghijklmnopqrstuvwxyz0123456789 .,!"[:n])


@given(st.lists(st.tuples(ASCII_RUN, WIDE), min_size=1, max_size=12), ASCII_RUN)
@example([("", "é")], "")
@example([("a" * 16, "ж")], "b" * 15)
@example([("a" * 31, "😀")], "b" * 33)
def test_the_utf8_kept_in_a_str_is_its_utf8(tok, parts, tail):
    text = fresh("".join(a + b for a, b in parts) + tail)
    want = fresh(text).encode("utf-8")  # (CPython's encoder, on another object)
    ids = tok.encode(text)  # (the UTF-8 is made and kept here)
    assert text.encode("utf-8") == want  # (read from inside the str now)
    assert tok.decode_bytes(ids) == want
    assert tok.encode(text) == ids  # (and read in place the second time)


@given(st.text(max_size=200))
def test_any_str_keeps_its_utf8(tok, text):
    text = fresh(text)
    try:
        want = fresh(text).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: CPython's rules, as before
        want = None
    ids = tok.encode_batch([text, text[:3]], disallowed_special=())
    if want is not None:
        assert text.encode("utf-8") == want
        assert tok.decode_bytes(ids[0]) == want
    else:
        assert text.encode("utf-8", "surrogatepass") == fresh(text).encode("utf-8", "surrogatepass")


def test_strs_it_does_not_make_are_left_to_cpython(tok):
    class Sub(str):
        pass

    sub = Sub("é" * 40 + "x")
    lone = fresh("ab\ud800cd" * 10)
    want = tok.encode("é" * 40 + "x")
    assert tok.encode(sub) == want and sub.encode() == ("é" * 40 + "x").encode()
    tok.encode(lone)  # (as before: the lone surrogate goes the slow way)
    with pytest.raises(UnicodeEncodeError):
        lone.encode("utf-8")


def test_the_memory_is_freed_by_cpython_as_its_own():
    """Under PYTHONMALLOC=debug, freeing memory from the wrong allocator stops the process
    (``Fatal Python error: bad ID``): strs of each kind and size (the thread's buffer and one
    of their own) are encoded, their UTF-8 read, and freed."""
    code = textwrap.dedent(f"""
        import gc, fastbpe
        tok = fastbpe.train({TEXT!r}, vocab_size=280, progress=False)
        for size in (1, 15, 16, 1000, 300_000, 1_100_000):
            for ch in ("é", "ж", "😀"):
                text = ("a" * 7 + ch) * (size // 8 + 1)
                strs = [(text + "x")[:-1] for _ in range(3)]
                tok.encode_batch(strs, disallowed_special=())
                tok.encode(strs[0][:size])
                assert strs[0].encode() == text.encode()
                del strs
                gc.collect()
        print("freed")
        """)
    env = {**os.environ, "PYTHONMALLOC": "debug"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0 and run.stdout.strip() == "freed", run.stderr[-2000:]


def test_made_here_on_the_cpython_versions_whose_layout_is_known():
    known = sys.implementation.name == "cpython" and (3, 9) <= sys.version_info[:2] <= (3, 13)
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    assert STR_UTF8_MADE_HERE == (known and not free_threaded)
