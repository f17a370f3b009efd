"""ChunkCounter (the compiled counting table) equals the reference on the cases its fast paths
split: chunks of 15 bytes (kept in the slot, the length in the key's top byte) against 16 and 17
(kept by hash), of 7, 8 and 9 bytes (one key word full, the next empty or not), chunks that
differ only in trailing NUL bytes (the same zero-padded words), chunks within 16 bytes of the end
of the buffer, texts of fewer and more chunks than are in flight at once, invalid bytes between
valid text, a table that grows while chunks are in flight, and lookups that probe past a
chunk's home slot, around the end of the slot array."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastbpe._core.count import ChunkCounter, Utf8Reader
from fastbpe.reference.count import count_words as reference_counts
from fastbpe.split.patterns import scanner_id
from fastbpe.split.pretokenize import check_errors

TILING = ["gpt2", "cl100k", "llama3", "o200k"]
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# words around the 8- and 15-byte boundaries of the inline keys (with and without the pattern's
# leading space), words equal but for trailing NULs, non-ASCII and separators
PIECES = ["a" * 6, "a" * 7, "a" * 8, "a" * 14, "a" * 15, "a" * 16, "a" * 17, "b" * 31, "b" * 33, "x\x00",
          "x\x00\x00", "x", "\x00", "é" * 7, "é" * 8, "é" * 9, "中文", " ", "  ", "\n", "\n\n", "'s", "7" * 20,
          "!" * 15, "!" * 16, ".", "the", "The"]
documents = st.lists(st.lists(st.sampled_from(PIECES), max_size=120).map("".join), min_size=1, max_size=4)


def counted(docs, pattern, errors="strict", reserve=None):
    """ChunkCounter's table of the documents packed into one buffer, as {chunk: count} in
    first-appearance order, with the index of the first bad document (or -1)."""
    data = [d.encode("utf-8", "surrogateescape") if isinstance(d, str) else d for d in docs]
    buf = b"".join(data)
    ends = np.cumsum([len(d) for d in data], dtype=np.int64)
    counter = ChunkCounter()
    if reserve is not None:
        counter.reserve(reserve)
    bad = counter.add_documents(buf, ends, scanner_id(pattern), check_errors(errors))
    table, offsets, counts = counter.arrays()
    chunks = [table[offsets[k]:offsets[k + 1]].tobytes() for k in range(len(counts))]
    return dict(zip(chunks, counts.tolist())), bad


def expected(docs, pattern, errors="strict"):
    return reference_counts(docs, pattern, errors)


def same_order(got, want):
    assert list(got.items()) == list(want.items())


@pytest.mark.parametrize("pattern", TILING + ["whitespace"])
@SETTINGS
@given(docs=documents)
def test_equals_reference_around_the_inline_key_length(pattern, docs):
    got, bad = counted(docs, pattern)
    assert bad == -1
    same_order(got, expected(docs, pattern))


@pytest.mark.parametrize("pattern", TILING)
def test_chunk_counts_across_the_chunks_in_flight(pattern):
    # n distinct chunks then the first ones again: every count settles in order, whatever n
    # is against the number of chunks hashed ahead of their lookup
    for n in range(0, 70):
        docs = [" ".join(f"w{k}" for k in range(n)) + " w0 w1"]
        got, _ = counted(docs, pattern)
        same_order(got, expected(docs, pattern))


@pytest.mark.parametrize("pattern", TILING)
def test_chunks_at_the_end_of_the_buffer(pattern):
    # the last chunks have fewer than 16 bytes after them: their keys are read byte-exact
    for tail in ["a", "a" * 7, "a" * 8, "a" * 9, "a" * 14, "a" * 15, "a" * 16, "a" * 17, "x\x00", "é"]:
        for before in range(0, 20):
            docs = ["q " * before + tail, tail]
            got, _ = counted(docs, pattern)
            same_order(got, expected(docs, pattern))


def test_trailing_nul_bytes_are_different_chunks():
    got, _ = counted(["x x\x00 x\x00\x00 x\x00 " + "\x00" * 16 + " " + "\x00" * 17], "whitespace")
    assert got == {b"x": 1, b"x\x00": 2, b"x\x00\x00": 1, b"\x00" * 16: 1, b"\x00" * 17: 1}


@pytest.mark.parametrize("pattern", TILING + ["whitespace"])
def test_chunks_of_every_length_around_the_inline_keys(pattern):
    # x then n NULs, or n letters, for every length up to 19: inline keys up to 15 bytes (a
    # key word full at 8, the length alone telling x + NULs apart), hashed from 16 on; every
    # chunk twice, once well inside the buffer and once at its end
    words = ["x" + "\x00" * n for n in range(19)] + ["q" * n for n in range(1, 20)]
    docs = [" ".join(words + words[::-1]), " ".join(words)]
    got, _ = counted(docs, pattern)
    same_order(got, expected(docs, pattern))
    assert len(got) >= 38  # every word a chunk of its own (with or without a leading space)


@pytest.mark.parametrize("pattern", TILING)
@pytest.mark.parametrize("reserve", [None, 0, 100_000])
def test_a_table_growing_while_chunks_are_in_flight(pattern, reserve):
    # 20,000 unique chunks from an empty table: it doubles 4 times during the scan
    words = [f" w{k}" + "z" * (k % 20) for k in range(20_000)]
    docs = ["".join(words) + "".join(words[::-7]), "".join(words[:50])]
    got, _ = counted(docs, pattern, reserve=reserve)
    same_order(got, expected(docs, pattern))


@pytest.mark.parametrize("pattern", TILING)
def test_probes_past_the_home_slot_and_around_the_end(pattern):
    # 2,860 unique chunks (" w" and letters: one chunk under every pattern) fill the first
    # table (4,096 slots) to just under its 70% bound without growing it; counted again, many
    # are found past their home slot, and with this hash six lookups wrap from the last slot
    # to the first
    words = [" w" + _letters(k) for k in range(2_860)]
    docs = ["".join(words) * 2, "".join(words[:1_000])]
    got, _ = counted(docs, pattern)
    same_order(got, expected(docs, pattern))
    assert len(got) == 2_860 and got[b" wb"] == 3 and got[words[-1].encode()] == 2


def _letters(k):
    """k in base 26, written with a-z."""
    s = ""
    while True:
        s = chr(ord("a") + k % 26) + s
        k //= 26
        if k == 0:
            return s


@pytest.mark.parametrize("pattern", TILING)
@SETTINGS
@given(parts=st.lists(st.one_of(st.lists(st.sampled_from(PIECES), max_size=30).map(lambda p: "".join(p).encode()),
                                st.binary(max_size=3)), max_size=10),
       errors=st.sampled_from(["replace", "bytes"]))
def test_invalid_bytes_between_valid_text(pattern, parts, errors):
    # errors="bytes": the invalid bytes (one chunk each) keep their place among the text's chunks
    data = b"".join(parts)
    got, bad = counted([data], pattern, errors)
    assert bad == -1
    same_order(got, expected([data], pattern, errors))


def test_strict_reports_the_first_bad_document():
    got, bad = counted([b"the cat", b"ok \xff", b"the \xfe"], "gpt2", "strict")
    assert bad == 1
    assert got == {b"the": 1, b" cat": 1}


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(st.text(alphabet=st.characters(blacklist_categories=()), max_size=40),
                      st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=40),
                      st.text(alphabet=st.characters(max_codepoint=0xFF), max_size=40),
                      st.text(alphabet=st.characters(blacklist_categories=(), max_codepoint=0xFFFF), max_size=40)),
       sizes=st.lists(st.integers(0, 9), min_size=1, max_size=30))
def test_utf8_reader_reads_the_surrogatepass_utf8(text, sizes):
    """Read in buffers of any sizes (0 included), a str gives its surrogatepass UTF-8, each read
    filling its buffer whole until the text ends (so a short read is the end)."""
    expected = text.encode("utf-8", "surrogatepass")
    reader = Utf8Reader(text)
    assert reader.bound >= len(expected)
    got = b""
    k = 0
    while True:
        buf = bytearray(sizes[k % len(sizes)] if k < 200 else 9)
        n = reader.readinto(buf)
        got += bytes(buf[:n])
        if n < len(buf):
            break
        k += 1
    assert got == expected
    assert reader.readinto(bytearray(4)) == 0


def test_utf8_reader_takes_a_str():
    class Text(str):
        pass

    assert bytes(_read_all(Utf8Reader(Text("caf\u00e9")))) == "caf\u00e9".encode()
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        Utf8Reader(b"abc")


def _read_all(reader):
    out = bytearray()
    buf = bytearray(3)
    while n := reader.readinto(buf):
        out += buf[:n]
    return out


def test_taken_arrays_equal_the_copies():
    """take_arrays hands the table's bytes and offsets over (no copy): the same arrays as
    arrays(), and the counter is left empty and usable."""
    counter = ChunkCounter()
    text = b"the cat and the hat, the end" * 50 + b" " + b"x" * 40
    counter.add_documents(text, np.array([len(text)], dtype=np.int64), scanner_id("gpt2"), 0)
    copies = counter.arrays()
    taken = counter.take_arrays()
    for a, b in zip(copies, taken):
        assert a.dtype == b.dtype and a.tolist() == b.tolist()
    assert len(counter) == 0 and [len(a) for a in counter.arrays()] == [0, 1, 0]
    counter.add_documents(b"the", np.array([3], dtype=np.int64), scanner_id("gpt2"), 0)
    assert [a.tolist() for a in counter.arrays()] == [list(b"the"), [0, 3], [1]]


def test_bad_arguments_raise():
    """Arguments the table cannot take: a clear exception, nothing counted."""
    from fastbpe._core.count import merge_partition, write_merged

    counter = ChunkCounter()
    with pytest.raises(ValueError, match="at most"):
        counter.reserve(2**58)  # (its slot array's size in bytes past 64 bits)
    with pytest.raises(ValueError, match="at most"):
        counter.reserve(2**64 - 1)
    with pytest.raises(ValueError, match="counts must be positive"):
        counter.add_table(np.frombuffer(b"ab", np.uint8), np.array([0, 1, 2]), np.array([0, -5]))
    assert len(counter) == 0
    with pytest.raises(TypeError, match="not None"):
        merge_partition([None], 0, 1, np.zeros(1, np.int64), np.zeros(1, np.int64))
    with pytest.raises(TypeError, match="not None"):
        write_merged([None], 0, 1, np.zeros(0, np.uint8), np.zeros(1, np.int64), np.zeros(0, np.int64), 0, 0, 0, 0)
    # write_merged reads every chunk's merged count: a counter still counting has none
    counter.begin_task(0)
    counter.add_documents(b"a b c d e f g" * 100, np.array([1300], dtype=np.int64), scanner_id("gpt2"), 0)
    out = np.zeros(1300, np.uint8), np.zeros(8, np.int64), np.zeros(7, np.int64)
    with pytest.raises(ValueError, match="finish_tasks"):
        write_merged([counter], 0, 1, *out, 0, 7, 0, 13)
    counter.finish_tasks()
    counter.add_documents(b" x y z", np.array([6], dtype=np.int64), scanner_id("gpt2"), 0)  # new ones, after finishing
    with pytest.raises(ValueError, match="finish_tasks"):
        write_merged([counter], 0, 1, *out, 0, 7, 0, 13)
