"""Corpus files: pieces of a fixed size whatever the decompressor returns, the decode error, and
damaged compressed files."""
import io
import re

import pytest

import fastbpe
from fastbpe.corpus.files import CorpusDecodeError, decode_error, open_bytes, read_pieces


class ShortReads(io.RawIOBase):
    """A stream that returns at most 3 bytes per read, as a decompressor may at a frame's end."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def readable(self):
        return True

    def read(self, size=-1):
        piece = self.data[self.pos:self.pos + min(size, 3)]
        self.pos += len(piece)
        return piece


def test_pieces_are_full_even_when_reads_come_short():
    data = bytes(range(256)) * 4
    pieces = list(read_pieces(ShortReads(data), 100))
    assert b"".join(pieces) == data
    assert [len(p) for p in pieces] == [100] * 10 + [24]
    assert list(read_pieces(ShortReads(b""), 100)) == []


def test_decode_error_names_the_source(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(b"plain")
    error = decode_error(str(path), 7, b"\xfe")
    assert isinstance(error, CorpusDecodeError) and isinstance(error, ValueError)
    assert str(error) == f"{path}: invalid UTF-8 at byte offset 7 (byte 0xfe)"


def _damaged_copies(tmp_path, kind):
    """A truncated and a garbled compressed copy of a text, in format ``kind``."""
    import bz2
    import gzip
    import lzma

    text = ("the cat sat on the mat. " * 5000).encode()
    if kind == "zst":
        zstandard = pytest.importorskip("zstandard", reason="zstandard is optional")
        data = zstandard.ZstdCompressor().compress(text)
    else:
        data = {"gz": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress}[kind](text)
    truncated = tmp_path / f"truncated.txt.{kind}"
    truncated.write_bytes(data[: len(data) // 2])
    garbled = tmp_path / f"garbled.txt.{kind}"
    garbled.write_bytes(data[:20] + b"\x00garbage" * 40 + data[340:])
    return truncated, garbled


def _read_whole(path, piece_size):
    reader, raw = open_bytes(str(path))
    with raw, reader:
        return list(read_pieces(reader, piece_size))


@pytest.mark.parametrize("kind", ["gz", "xz", "bz2", "zst"])
def test_damaged_compressed_files_are_a_decode_error_naming_the_file(tmp_path, kind):
    for path in _damaged_copies(tmp_path, kind):
        with pytest.raises(CorpusDecodeError, match=f"{path}: the .* data is corrupt or truncated"):
            _read_whole(path, 1 << 16)
        for workers in (1, 2):
            with pytest.raises(CorpusDecodeError, match=str(path.name)), pytest.warns(UserWarning, match="4 times"):
                fastbpe.count_words([str(path)] * 4, workers=workers, progress=False)
        tok = fastbpe.Tokenizer([bytes([b]) for b in range(256)], [])
        with pytest.raises(CorpusDecodeError, match=str(path.name)):
            fastbpe.encode_files(tok, [path], tmp_path / f"out-{path.name}", separator=None, progress=False)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
@pytest.mark.parametrize("compressed", [False, True])
def test_a_utf16_file_is_named_as_one_by_every_reader(tmp_path, encoding, compressed):
    """A file with a UTF-16 (or UTF-32) byte-order mark, as Windows tools write: each reader's
    error says so and how to convert it, rather than advising to replace its bytes."""
    import gzip

    from fastbpe.cli.skipgram import read_documents

    data = ("\ufeff" if encoding == "utf-16-be" else "").encode(encoding) + "hello world\r\n".encode(encoding)
    path = tmp_path / ("in.txt.gz" if compressed else "in.txt")
    path.write_bytes(gzip.compress(data) if compressed else data)
    said = r"invalid UTF-8 at byte offset 0 .*UTF-16 byte-order mark, and fastbpe reads UTF-8: convert it first"
    with pytest.raises(CorpusDecodeError, match=said):
        fastbpe.count_words(str(path))
    byte_tokens = fastbpe.Tokenizer([bytes([b]) for b in range(256)], [], pattern="cl100k")
    with pytest.raises(CorpusDecodeError, match=said):
        fastbpe.encode_files(byte_tokens, [path], tmp_path / "out", separator=None, progress=False)
    with pytest.raises(CorpusDecodeError, match=said):
        read_documents([str(path)], 1000, "block")


def test_a_file_that_only_begins_like_a_byte_order_mark_gets_the_usual_advice(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"\xff text")
    with pytest.raises(CorpusDecodeError, match=r"offset 0 \(byte 0xff\); pass errors='replace'"):
        fastbpe.count_words(str(path))


@pytest.mark.parametrize("kind", ["gz", "xz", "bz2"])
def test_a_truncated_file_says_how_far_it_decompressed(tmp_path, kind):
    """Read in blocks of 8 MiB, a cut file said "after 0 bytes" of the text it had decompressed."""
    import bz2
    import gzip
    import lzma
    import random

    rng = random.Random(0)
    text = " ".join(rng.choice(["the", "cat", "sat", "on", "a", "mat", "dog", "ran"]) + str(rng.randrange(99))
                    for _ in range(200_000 if kind != "bz2" else 600_000)).encode()  # (bz2: blocks of 900 KB)
    module = {"gz": gzip, "xz": lzma, "bz2": bz2}[kind]
    data = module.compress(text)
    path = tmp_path / f"cut.txt.{kind}"
    path.write_bytes(data[: len(data) // 2])
    recoverable = 0  # (what a decompressor gives of the cut data before it fails)
    try:
        with module.open(path, "rb") as f:
            while piece := f.read(1 << 12):
                recoverable += len(piece)
    except Exception:
        pass
    with pytest.raises(CorpusDecodeError, match=r"after about ([\d,]+) bytes") as caught:
        _read_whole(path, 8 << 20)
    said = int(re.search(r"after about ([\d,]+) bytes", str(caught.value)).group(1).replace(",", ""))
    assert recoverable > 0 and recoverable - (2 << 16) <= said <= recoverable


def test_a_file_named_twice_is_read_twice_with_a_warning(tmp_path):
    """A folder and a file inside it, or a glob and a file it matches: the file is counted each
    time it is named (what was asked), and a warning names it."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("hello world\n", encoding="utf-8")
    (tmp_path / "corpus" / "b.txt").write_text("other words\n", encoding="utf-8")
    once = fastbpe.count_words([tmp_path / "corpus"], progress=False)
    for inputs in ([tmp_path / "corpus", tmp_path / "corpus" / "a.txt"],
                   [str(tmp_path / "corpus" / "*.txt"), tmp_path / "corpus" / "a.txt"]):
        with pytest.warns(UserWarning, match=re.escape(f"{tmp_path / 'corpus' / 'a.txt'} (2 times)")) as caught:
            twice = fastbpe.count_words(inputs, progress=False)
        assert twice.to_dict() == {**once.to_dict(), b"hello": 2, b" world": 2, b"\n": 3}
        assert caught[0].filename == __file__  # (the caller's line, however deep in fastbpe it is raised)
    inputs = [tmp_path / "corpus", tmp_path / "corpus" / "a.txt"]
    with pytest.warns(UserWarning, match=r"a\.txt \(2 times\).*: each is read every time") as caught:
        tok = fastbpe.train(inputs, vocab_size=260, progress=False)
        fastbpe.encode_files(tok, inputs, tmp_path / "out", progress=False, separator=None)
    # (only the UserWarnings: a ResourceWarning of an earlier test's object can be raised here, where
    # the cycle collector happens to find it)
    assert [w.filename for w in caught if w.category is UserWarning] == [__file__, __file__]
