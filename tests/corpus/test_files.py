"""Corpus files: pieces of a fixed size whatever the decompressor returns, and the decode error."""
import io

from fastbpe.corpus.files import CorpusDecodeError, decode_error, read_pieces


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
