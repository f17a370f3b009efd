"""Token shards: exact ids, separators, every format (npy, raw, llm.c, and reading the old
FBPETOK files), atomic and resumable output, every compression, blocks cut at safe cuts in
linear time and bounded size."""
import bz2
import gzip
import json
import lzma
import os
import random
import re
import tempfile
import time
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastbpe
from fastbpe import shards
from fastbpe._core.split import find_cut
from fastbpe.corpus import cut as cut_module
from fastbpe.corpus.cut import cut_stream, normalize_stream
from fastbpe.corpus.files import CorpusDecodeError
from fastbpe.reference.split import document_spans as reference_document_spans
from fastbpe.shards import MANIFEST, encode_files, input_blocks, read_shard
from fastbpe.split.patterns import cut_rule

from tests.conftest import ALWAYS_PIECES
from tests.interrupts import interrupt_at_shard

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def tok(shared_data):
    return fastbpe.train(shared_data.text("english.txt.gz", 200_000), vocab_size=800, progress=False,
                         special_tokens=[EOT])


@pytest.fixture(scope="module")
def cl100k(shared_data):
    return fastbpe.openai("cl100k_base", shared_data.path("tokenizers", "tiktoken"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, shared_data):
    """Three documents: plain text, gzip, and one with awkward whitespace at every line end."""
    root = tmp_path_factory.mktemp("corpus")
    text = shared_data.text("english.txt.gz", 260_000)
    docs = [text[:60_000], text[60_000:200_000],
            "  trailing  \nspaces \n\nand x\nlines\n  \n" * 300 + "it has <|endoftext|> inside"]
    paths = [root / "a.txt", root / "b.txt.gz", root / "c.txt"]
    paths[0].write_text(docs[0], encoding="utf-8")
    with gzip.open(paths[1], "wt", encoding="utf-8") as f:
        f.write(docs[1])
    paths[2].write_text(docs[2], encoding="utf-8")
    return paths, docs


def expected_ids(tok, docs, separator=EOT):
    out = []
    for i, doc in enumerate(d for d in docs if d):
        if i and separator is not None:
            out.append(tok.special_tokens[separator])
        out.extend(tok.encode_ordinary(doc))
    return out


def split_documents(text: str, documents: str) -> list:
    """The documents of ``text`` by their definition: a line ends at \\n or \\r\\n, and a
    paragraph at a run of two or more line ends."""
    if documents == "file":
        return [text]
    return regex.split(r"(?:\r?\n){2,}" if documents == "blank-line" else r"\r?\n", text)


def document_text(max_size: int):
    """Text of letters, spaces, combining marks, and line ends of both kinds among lone ``\\r``."""
    return st.lists(st.sampled_from(list("ab \n\t.é中\u0301") + ["\r\n", "\r"]), max_size=max_size).map("".join)


def all_ids(out_dir):
    manifest = json.loads((Path(out_dir) / MANIFEST).read_text())
    if not manifest["shards"]:
        return manifest, []
    return manifest, np.concatenate([read_shard(Path(out_dir) / s["file"]) for s in manifest["shards"]]).tolist()


def longest_stretch_without_cut(data: bytes, rule: int) -> int:
    longest = last = 0
    i = find_cut(data, 1, rule)
    while i >= 0:
        longest, last = max(longest, i - last), i
        i = find_cut(data, i + 1, rule)
    return max(longest, len(data) - last)


@pytest.mark.parametrize("fmt", ["npy", "raw", "llmc"])
def test_shards_hold_exactly_the_ids(tok, corpus, tmp_path, fmt):
    paths, docs = corpus
    manifest = encode_files(tok, paths, tmp_path, shard_size=7000, fmt=fmt, workers=2, progress=False,
                            block_size=3000)
    got_manifest, ids = all_ids(tmp_path)
    assert ids == expected_ids(tok, docs)
    assert manifest["complete"] and got_manifest["tokens"] == len(ids)
    sizes = [s["tokens"] for s in got_manifest["shards"]]
    assert all(n == 7000 for n in sizes[:-1]) and 0 < sizes[-1] <= 7000
    assert all(read_shard(tmp_path / s["file"]).dtype == np.uint16 for s in got_manifest["shards"])
    assert not list(tmp_path.glob(".tmp-*"))
    # The manifest says how to read the shards without fastbpe.
    assert (got_manifest["format"], got_manifest["dtype"], got_manifest["byte_order"]) == (fmt, "uint16", "little")
    assert got_manifest["header_bytes"] == {"npy": None, "raw": 0, "llmc": 1024}[fmt]


def test_block_cuts_change_no_id_with_cl100k(corpus, tmp_path, cl100k):
    paths, docs = corpus
    encode_files(cl100k, paths[2:], tmp_path, shard_size=10**6, workers=1, progress=False, block_size=200)
    _, ids = all_ids(tmp_path)
    assert ids == cl100k.encode_ordinary(docs[2])


def test_documents_by_blank_line(tok, tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("first doc\nline two\n\n\nsecond doc\n\nthird", encoding="utf-8")
    encode_files(tok, [path], tmp_path / "out", shard_size=100, documents="blank-line", progress=False)
    _, ids = all_ids(tmp_path / "out")
    assert ids == expected_ids(tok, ["first doc\nline two", "second doc", "third"])
    encode_files(tok, [path], tmp_path / "nosep", shard_size=100, separator=None, progress=False)
    assert all_ids(tmp_path / "nosep")[1] == tok.encode_ordinary(path.read_text())


@pytest.fixture(scope="module")
def whitespace_tok(shared_data):
    """Splits on whitespace, whose rule cuts anywhere before a space or newline: between the two
    newlines of a blank line too."""
    return fastbpe.train(shared_data.text("english.txt.gz", 100_000), vocab_size=400, pattern="whitespace",
                         progress=False, special_tokens=[EOT])


DOCUMENT_TEXT = ("one\n\ntwo two\n\n\n\nthree\nthree \n \n\nfour\n" * 3 + "\n\n" + "five\n" * 4
                 + "\n\nsix\r\n\r\nseven\n")


@pytest.mark.parametrize("documents", ["blank-line", "line"])
def test_a_block_boundary_beside_a_newline_loses_no_separator(whitespace_tok, cl100k, tmp_path, documents):
    """Every block size from 1 byte up puts a boundary at every place once, next to each newline
    included; the documents and their separators are those of the whole text."""
    path = tmp_path / "in.txt"
    path.write_bytes(DOCUMENT_TEXT.encode())
    docs = split_documents(DOCUMENT_TEXT, documents)
    for number, tok in enumerate((whitespace_tok, cl100k)):
        expected = expected_ids(tok, docs)
        for block_size in range(1, 12):
            out = tmp_path / f"{number}-{block_size}"
            encode_files(tok, [path], out, documents=documents, block_size=block_size, workers=1, progress=False)
            assert all_ids(out)[1] == expected, (tok.pattern, block_size)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(text=document_text(80),
       documents=st.sampled_from(["file", "blank-line", "line"]), block_size=st.integers(1, 9))
def test_any_text_any_blocks_equals_documents_encoded_whole(whitespace_tok, text, documents, block_size):
    docs = split_documents(text, documents)
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "in.txt"
        path.write_bytes(text.encode())
        encode_files(whitespace_tok, [path], Path(root) / "out", documents=documents, block_size=block_size,
                     workers=1, progress=False)
        assert all_ids(Path(root) / "out")[1] == expected_ids(whitespace_tok, docs)


def _encoded_with_invalid_bytes(tok, data: bytes) -> list:
    """``errors="bytes"`` by its definition: each invalid byte its one-byte token, each valid
    stretch between them encoded as a text of its own."""
    out = []
    for stretch in regex.split("([\udc80-\udcff])", data.decode("utf-8", "surrogateescape")):
        if len(stretch) == 1 and "\udc80" <= stretch <= "\udcff":
            out.append(tok.encode_single_token(bytes([ord(stretch) - 0xDC00])))
        elif stretch:
            out.extend(tok.encode_ordinary(stretch))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(parts=st.lists(st.sampled_from([b"ab", b" ", b"\n", b"the", b".", "\u00e9".encode(), "\u4e2d".encode(), b"\xff",
                                       b"\xe2\x82", b"\xc3", b"\x80", b"\r\n", b"  "]), max_size=60),
       block_size=st.sampled_from([1, 3, 9, 1 << 20]), workers=st.sampled_from([1, 2]))
def test_invalid_utf8_replaced_or_as_bytes(tok, parts, block_size, workers):
    """errors='replace' encodes the text bytes.decode('utf-8', 'replace') gives; errors='bytes'
    each invalid byte as its byte's token, the stretches between encoded apart; any blocks."""
    data = b"".join(parts)
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "in.txt"
        path.write_bytes(data)
        for errors, expected in (("replace", tok.encode_ordinary(data.decode("utf-8", "replace"))),
                                 ("bytes", _encoded_with_invalid_bytes(tok, data))):
            out = Path(root) / errors
            encode_files(tok, [path], out, separator=None, block_size=block_size, workers=workers, progress=False,
                         errors=errors)
            assert all_ids(out)[1] == expected, errors


@given(st.binary(max_size=40), st.lists(st.integers(0, 40), max_size=6))
def test_replacing_a_piece_at_a_time_is_replacing_the_whole(data, cuts):
    pieces = [data[a:b] for a, b in zip([0] + sorted(cuts), sorted(cuts) + [len(data)])]
    assert b"".join(shards._replaced(pieces)) == data.decode("utf-8", "replace").encode("utf-8")


def test_invalid_utf8_options_are_checked_and_part_of_the_job(tok, tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"caf\xe9 au lait\n" * 50)
    with pytest.raises(CorpusDecodeError, match="byte offset 3"):
        encode_files(tok, [path], tmp_path / "strict", progress=False)
    with pytest.raises(ValueError, match="errors must be one of"):
        encode_files(tok, [path], tmp_path / "x", progress=False, errors="ignore")
    chars = fastbpe.train(text="the cat sat " * 20, vocab_size=30, unit="chars", progress=False)
    with pytest.raises(ValueError, match=r"no byte-level vocabulary\): use errors='replace'"):
        encode_files(chars, [path], tmp_path / "x", separator=None, progress=False, errors="bytes")
    assert not (tmp_path / "x").exists()
    encode_files(tok, [path], tmp_path / "out", progress=False, errors="replace")
    with pytest.raises(ValueError, match="another job"):  # (a rerun with another handling is no resume)
        encode_files(tok, [path], tmp_path / "out", progress=False, errors="bytes")
    assert encode_files(tok, [path], tmp_path / "out", progress=False, errors="replace")["complete"]


def _document_start_by_definition(data: bytes, pos: int, documents: str) -> int:
    for p in range(max(pos, 0), len(data)):
        if p == 0 or (documents == "line" and data[p - 1:p] == b"\n") or \
                (documents == "blank-line" and regex.search(rb"(?:\r?\n){2}\Z", data[:p])
                 and not regex.match(rb"\r?\n", data[p:])):
            return p
    return len(data)


@settings(max_examples=150, deadline=None)
@given(data=st.lists(st.sampled_from(["a", "\n", " ", "\r\n", "\r"]), max_size=60).map("".join).map(str.encode),
       documents=st.sampled_from(["line", "blank-line"]))
def test_document_starts_of_partitions(data, documents):
    with tempfile.TemporaryFile() as f:
        f.write(data)
        for pos in range(len(data) + 2):
            assert shards.document_start_at_or_after(f, pos, len(data), documents) == \
                min(_document_start_by_definition(data, pos, documents), len(data)), pos


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(texts=st.lists(document_text(60), min_size=1,
                      max_size=3),
       documents=st.sampled_from(["file", "blank-line", "line"]), partition_size=st.integers(1, 25),
       block_size=st.integers(1, 9))
def test_partitions_encoded_apart_give_the_local_stream(whitespace_tok, texts, documents, partition_size,
                                                         block_size):
    """What cluster workers do, one partition after another here: the shards of all partitions,
    in order, hold the ids of a local run, whatever the partition and block sizes (empty files
    and partitions without text included)."""
    with tempfile.TemporaryDirectory() as root:
        paths = []
        for k, text in enumerate(texts):
            paths.append(Path(root) / f"{k}.txt")
            paths[-1].write_bytes(text.encode())
        encode_files(whitespace_tok, paths, Path(root) / "local", documents=documents, block_size=block_size,
                     workers=1, progress=False)
        parts = shards._plan_partitions(paths, partition_size, documents, False)
        options = {"documents": documents, "block_size": block_size, "format": "raw", "shard_size": 7,
                   "separator_id": whitespace_tok.special_tokens[EOT]}
        out = Path(root) / "parts"
        out.mkdir()
        ids, seen_text = [], False
        for number, part in enumerate(parts):
            record = shards.encode_partition(whitespace_tok, part, number, str(out), options, seen_text)
            seen_text = seen_text or record["text"]
            ids += [int(i) for s in record["shards"] for i in read_shard(out / s["file"], fmt="raw", dtype=np.uint16)]
            assert all(s["tokens"] <= 7 for s in record["shards"])
        assert ids == all_ids(Path(root) / "local")[1]


def test_gaps_kept_as_chunks_are_never_cut_inside(tmp_path):
    """``whitespace`` with its gaps kept (Hugging Face's Split(\\S+, Isolated)): a run of newlines
    is one chunk, so the cut between two newlines that the plain rule allows would change ids."""
    tokens = [bytes([b]) for b in range(256)] + [b"\n\n"]
    tok = fastbpe.Tokenizer(tokens, [(10, 10)], pattern="whitespace", split_gaps=True)
    text = "a\n\nb \n\n c\n\n\n" * 20
    whole = tok.encode_ordinary(text)
    naive = [i for block, _ in cut_stream([text.encode()], cut_rule("whitespace"), 1)
             for i in tok.encode_ordinary(block.decode())]
    assert naive != whole  # the plain rule is wrong here
    path = tmp_path / "in.txt"
    path.write_text(text, encoding="utf-8")
    encode_files(tok, [path], tmp_path / "out", block_size=1, separator=None, workers=1, progress=False)
    assert all_ids(tmp_path / "out")[1] == whole


NORMALISATION_TEXT = ("caf\u00e9. na\u00efve, \u0958. \u095b.\n\u2475\nb\u2100 \u1100\u1161\u11a8. "
                      "\uac00\u11a8 e\u0301\u0323! \u212b.\n") * 30


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_normalising_tokenizers_cut_the_normalised_text(form, tmp_path):
    """Normalising changes what the split sees (U+0958 is a letter, its NFC ends with a mark; NFD
    ends "é" with a mark; NFKC turns ⑵ into "(2)"), so cuts are made on the normalised text."""
    base = fastbpe.train(unicodedata.normalize(form, NORMALISATION_TEXT), vocab_size=320, pattern="cl100k",
                         progress=False)
    tok = fastbpe.Tokenizer(base.token_bytes, base.merge_ids, pattern="cl100k", normalizer=form)
    whole = tok.encode_ordinary(NORMALISATION_TEXT)
    path = tmp_path / "in.txt"
    path.write_text(NORMALISATION_TEXT, encoding="utf-8")
    for block_size in (1, 2, 3, 5, 8, 64):
        out = tmp_path / f"out{block_size}"
        encode_files(tok, [path], out, block_size=block_size, separator=None, workers=2, progress=False)
        assert all_ids(out)[1] == whole, block_size
    # cutting before normalising, as the input's characters suggest, would change ids
    naive = [i for block, _ in cut_stream([NORMALISATION_TEXT.encode()], cut_rule("cl100k"), 1)
             for i in tok.encode_ordinary(block.decode())]
    assert naive != whole


@pytest.mark.parametrize("form", [None, "NFC", "NFD", "NFKC", "NFKD"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(ALWAYS_PIECES), max_size=60), block_size=st.sampled_from([1, 2, 3, 7, 64]),
       documents=st.sampled_from(["file", "line"]))
def test_tokens_matched_always_are_never_cut(always_tokenizers, form, parts, block_size, documents):
    """Blocks of any size never cut through a token matched always, and with a normaliser the
    text is cut as given (the tokens are matched there, then each piece normalised): the ids
    are those of encode_ordinary, which splits such tokens out before anything else."""
    tok = always_tokenizers[form]
    text = "".join(parts)
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "in.txt"
        path.write_text(text, encoding="utf-8")
        encode_files(tok, [path], Path(root) / "out", documents=documents, block_size=block_size, workers=2,
                     progress=False)
        assert all_ids(Path(root) / "out")[1] == expected_ids(tok, split_documents(text, documents)), repr(text)


def test_tokens_matched_always_in_a_long_document_are_cut_around(always_tokenizers, tmp_path):
    """A long document with tokens matched always is still cut (so the workers share it)
    wherever no token straddles the cut, and encodes as a whole."""
    rng = random.Random(3)
    text = "".join(rng.choice(ALWAYS_PIECES) for _ in range(40_000))
    path = tmp_path / "in.txt"
    path.write_text(text, encoding="utf-8")
    for form, tok in always_tokenizers.items():
        blocks = list(input_blocks(tok, [path], block_size=4096))
        assert len(blocks) > 10 and b"".join(b.data for b in blocks) == text.encode()
        out = tmp_path / f"out-{form}"
        encode_files(tok, [path], out, block_size=4096, separator=None, workers=2, progress=False)
        assert all_ids(out)[1] == tok.encode_ordinary(text)


def test_a_normaliser_of_steps_keeps_long_documents_whole(tok, tmp_path, monkeypatch):
    """A Prepend runs once before each document: a document longer than a task is not cut into
    pieces that each get it."""
    prepending = fastbpe.Tokenizer(tok.token_bytes, tok.merge_ids, normalizer=[{"type": "Prepend", "prepend": "X"}])
    monkeypatch.setattr(shards, "TASK_BYTES", 256)
    text = "a few words of text, then more\n" * 200
    path = tmp_path / "in.txt"
    path.write_text(text, encoding="utf-8")
    encode_files(prepending, [path], tmp_path / "out", separator=None, workers=2, progress=False)
    assert all_ids(tmp_path / "out")[1] == prepending.encode_ordinary(text)


def test_qwen3_real_tokenizer_any_blocks(shared_data, tmp_path):
    """Qwen3 normalises (NFC), has a pattern without a compiled scanner (llama3's rule holds) and
    added tokens that are not special (matched in the text as given, before normalising)."""
    tok = fastbpe.load(shared_data.path("tokenizers", "qwen3"))
    rows = shared_data.rows("parallel_multi.tsv.gz", 300)
    text = "".join(rows) + "\u0958\nabc \u095b\n12345\n<think>x</think>\u0338<tool_call>\n" * 20
    path = tmp_path / "in.txt"
    path.write_text(text, encoding="utf-8")
    for documents in ("file", "line"):
        docs = [text] if documents == "file" else text.split("\n")
        for block_size in (7, 1000):
            out = tmp_path / f"{documents}{block_size}"
            encode_files(tok, [path], out, documents=documents, block_size=block_size, workers=2, progress=False)
            assert all_ids(out)[1] == expected_ids(tok, docs)


def _numbers(size):
    return "\n".join(str(i) for i in range(size // 6))[:size]


def _one_line_without_spaces(size):
    rng = random.Random(5)
    parts, length = [], 0
    while length < size:
        word = "".join(rng.choices("abcdefghijklmnopqrstuvwxyzXYZ0123456789", k=rng.randint(1, 12)))
        parts.append(word + rng.choice(",.;:-_/()'\"!?"))
        length += len(parts[-1])
    parts.insert(len(parts) // 2, "z" * 200_000)  # and one stretch with no cut at all
    return "".join(parts)[:size]


def _cjk_without_spaces(shared_data, size):
    rows = shared_data.rows("parallel_multi.tsv.gz", 4000)[1:]
    zh = "".join(r.split("\t")[6] for r in rows if r.count("\t") >= 10)
    zh = "".join(c for c in zh if not c.isspace() and c != "\\")
    return (zh * (size // len(zh.encode()) + 1))[: size // 3]


@pytest.mark.parametrize("kind", ["numbers", "one line", "cjk"])
def test_linear_time_and_bounded_blocks_on_any_file(kind, cl100k, shared_data, tmp_path, monkeypatch):
    """A few MB of one number per line, of one line without spaces, of Chinese without spaces,
    in 64 KiB blocks: the ids of the whole document; every block at least block_size and longer
    only by the longest stretch without a safe cut; the cut search reads each byte about once."""
    size, block_size = 3 << 20, 64 << 10
    text = {"numbers": lambda: _numbers(size), "one line": lambda: _one_line_without_spaces(size),
            "cjk": lambda: _cjk_without_spaces(shared_data, size)}[kind]()
    data = text.encode()
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    toks = [cl100k] + ([fastbpe.load(shared_data.path("tokenizers", "qwen3"))] if kind == "cjk" else [])
    for tok in toks:
        rule = cut_rule(tok.pattern)
        stretch = longest_stretch_without_cut(data, rule)
        scanned = 0
        real_find_cut = cut_module.find_cut

        def counting_find_cut(buf, start, rule):
            nonlocal scanned
            i = real_find_cut(buf, start, rule)
            scanned += (i if i >= 0 else len(buf)) - start
            return i

        monkeypatch.setattr(cut_module, "find_cut", counting_find_cut)
        blocks = list(input_blocks(tok, [path], block_size=block_size))
        monkeypatch.setattr(cut_module, "find_cut", real_find_cut)
        assert scanned <= 2 * len(data)
        normalised = unicodedata.normalize(tok.normalizer, text).encode() if tok.normalizer else data
        assert b"".join(b.data for b in blocks) == normalised
        assert len(blocks) > 10 and blocks[-1].ends_document and not any(b.ends_document for b in blocks[:-1])
        assert all(block_size <= len(b.data) <= block_size + stretch + 4 for b in blocks[:-1])
        assert stretch < block_size or kind == "one line"
        assert sum(b.raw for b in blocks) == len(data)
        out = tmp_path / f"out-{len(tok.token_bytes)}"
        encode_files(tok, [path], out, block_size=block_size, workers=2, progress=False)
        assert all_ids(out)[1] == tok.encode_ordinary(text)


@pytest.mark.parametrize("compressed", [False, True])
def test_line_blocks_account_for_every_byte_of_the_file(cl100k, tmp_path, compressed):
    """Line documents, many to a piece read from the file: each block's file bytes (what the
    progress shows) are those read since the block before, and they add up to the file's size,
    plain or compressed."""
    data = "".join(f"line {i} of the file\n" for i in range(3000)).encode()
    path = tmp_path / ("lines.txt.gz" if compressed else "lines.txt")
    path.write_bytes(gzip.compress(data) if compressed else data)
    blocks = list(input_blocks(cl100k, [path], documents="line", block_size=1000))
    assert [b.data for b in blocks] == data.splitlines()
    assert all(b.raw >= 0 for b in blocks) and 0 < sum(b.raw > 0 for b in blocks) < 200
    assert sum(b.raw for b in blocks) == path.stat().st_size


def _a_block_a_document(path, pieces, documents, rule, block_size, offset=0):
    """What encode_files read for ``documents="line"`` and ``"blank-line"`` before it took a
    piece's whole documents at once: a Block a document (_file_blocks)."""
    return shards._file_blocks(path, pieces, documents, rule, block_size, None, offset)


@pytest.mark.parametrize("documents", ["line", "blank-line"])
@pytest.mark.parametrize("separator", [EOT, None])
def test_documents_a_piece_at_a_time_write_what_a_block_a_document_wrote(tok, tmp_path, monkeypatch, separator,
                                                                        documents):
    """Line and blank-line documents: a piece's whole documents read as one item write the very
    shards and manifest that a Block a document wrote, over empty documents, runs of newlines
    across the pieces' ends, documents longer than a block (each through _file_blocks alone,
    the pieces read as before after it), a gzip file, a file that starts with a separator and ends with one or with a single
    newline, and a last document without a newline, on 1 and 2 workers; and a run interrupted
    either way resumes the other way to the same output."""
    rng = random.Random(3)
    words = ["the", " cat", " sat", "é", "猫", "\n", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\r"]
    texts = ["".join(rng.choice(words) for _ in range(3000)),
             "".join(rng.choice(words) for _ in range(2000)) + "x" * 900 + "\n"
             + "".join(rng.choice(words) for _ in range(500)) + "tail",
             "\n\nfirst" + "".join(rng.choice(words) for _ in range(1000)) + "\n\n\n",
             "".join(rng.choice(words) for _ in range(1000)) + "end\n",
             # documents longer than a block (one over several pieces) between short ones, each
             # ended by a run of one to four newlines, the last one at the end of the file
             "".join("".join(rng.choice(words) for _ in range(rng.randrange(0, 300)))
                     + rng.choice(["y" * 700, "z é" * 400, "w " * 90]) + "\n" * rng.randrange(1, 5)
                     for _ in range(12)) + "v" * 600]
    paths = [tmp_path / "a.txt", tmp_path / "b.txt.gz", tmp_path / "c.txt", tmp_path / "d.txt", tmp_path / "e.txt"]
    for path, text in zip(paths, texts):
        path.write_bytes(gzip.compress(text.encode()) if path.suffix == ".gz" else text.encode())
    options = dict(shard_size=700, fmt="raw", progress=False, block_size=256, documents=documents,
                   separator=separator)

    def run(out, a_block_a_document, workers=2, stop_at=None):
        with monkeypatch.context() as patched:
            if a_block_a_document:
                patched.setattr(shards, "_document_runs", _a_block_a_document)
            interrupt_at_shard(patched, stop_at)
            encode_files(tok, paths, tmp_path / out, workers=workers, **options)

    def written(out):
        manifest, ids = all_ids(tmp_path / out)
        kept = {k: manifest[k] for k in ("shards", "tokens", "resume_at", "complete")}
        return kept, [p.read_bytes() for p in sorted((tmp_path / out).glob("*.bin"))], ids

    run("before", True)
    want = written("before")
    docs = [doc for text in texts for doc in split_documents(text, documents)]
    assert want[2] == expected_ids(tok, docs, separator) and len(want[1]) > 10
    run("one", False, workers=1)
    run("two", False)
    assert written("one") == want and written("two") == want
    for first_way in (True, False):
        out = f"resumed-{first_way}"
        with pytest.raises(KeyboardInterrupt):
            run(out, first_way, stop_at=4)
        run(out, not first_way)
        assert written(out) == want


def test_offsets_of_blocks_are_file_offsets(cl100k, tmp_path):
    text = "first line\n\nsecond, longer line of text\n" * 50
    path = tmp_path / "in.txt.gz"
    with gzip.open(path, "wb") as f:
        f.write(text.encode())
    for documents in ("file", "line", "blank-line"):
        # (lines longer than a block, lines across the pieces' ends, whole lines a piece at a time)
        for block_size in (7, 50, 1 << 20):
            blocks = list(input_blocks(cl100k, [path], documents, block_size=block_size))
            assert len(blocks) > 1 or documents == "file"
            for block in blocks:
                assert text.encode()[block.offset:block.offset + len(block.data)] == block.data


def test_a_line_that_ends_a_piece_after_one_begun_before_it(cl100k, tmp_path):
    """Pieces of 8 bytes: the second holds the end of a line begun in the first, and nothing
    after its newline; the lines after it keep their offsets."""
    text = b"abcdef\nc" + b"defghij\n" + b"more\nlin" + b"es\n"
    path = tmp_path / "in.txt"
    path.write_bytes(text)
    blocks = list(input_blocks(cl100k, [path], "line", block_size=8))
    assert [(b.data, b.offset) for b in blocks] == [(b"abcdef", 0), (b"cdefghij", 7), (b"more", 16), (b"lines", 21)]


def _write(path, data: bytes, kind: str):
    if kind == "zst":
        zstandard = pytest.importorskip("zstandard", reason="reading .zst needs the zstandard module")
        # two frames, as a parallel compressor writes them
        c = zstandard.ZstdCompressor()
        path.write_bytes(c.compress(data[: len(data) // 3]) + c.compress(data[len(data) // 3:]))
        return
    opener = {"gz": gzip.open, "gzip-named-txt": gzip.open, "xz": lzma.open, "bz2": bz2.open}.get(kind, open)
    with opener(path, "wb") as f:
        f.write(data)


COMPRESSIONS = {"gz": "in.txt.gz", "xz": "in.txt.xz", "bz2": "in.txt.bz2", "zst": "in.txt.zst",
                "gzip-named-txt": "gzip-inside.txt"}


@pytest.mark.parametrize("kind", sorted(COMPRESSIONS))
def test_every_compression_gives_the_shards_of_the_plain_file(kind, tok, corpus, tmp_path):
    _, docs = corpus
    data = "\n\n".join(docs).encode()
    plain = tmp_path / "plain.txt"
    plain.write_bytes(data)
    packed = tmp_path / COMPRESSIONS[kind]
    _write(packed, data, kind)
    for documents in ("file", "blank-line"):
        encode_files(tok, [plain], tmp_path / f"plain-{documents}", shard_size=5000, fmt="raw", documents=documents,
                     block_size=4096, progress=False)
        encode_files(tok, [packed], tmp_path / f"packed-{documents}", shard_size=5000, fmt="raw",
                     documents=documents, block_size=4096, progress=False)
        want, got = sorted((tmp_path / f"plain-{documents}").glob("*.bin")), \
            sorted((tmp_path / f"packed-{documents}").glob("*.bin"))
        assert [p.name for p in got] == [p.name for p in want] and len(want) > 3
        assert all(a.read_bytes() == b.read_bytes() for a, b in zip(want, got))
        # and the same blocks: they depend on the decompressed bytes only
        assert [b.data for b in input_blocks(tok, [packed], documents, 4096)] == \
            [b.data for b in input_blocks(tok, [plain], documents, 4096)]


@pytest.mark.parametrize("documents", ["file", "line"])
def test_interrupted_run_resumes_to_the_same_output(tok, corpus, tmp_path, monkeypatch, documents):
    paths, docs = corpus
    options = dict(shard_size=5000, fmt="raw", progress=False, block_size=4000, documents=documents)
    reference_dir = tmp_path / "whole"
    encode_files(tok, paths, reference_dir, **options)
    _, reference = all_ids(reference_dir)

    out = tmp_path / "resumed"
    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        interrupt_at_shard(patched, 4)  # an interrupt as the fourth shard is finished
        encode_files(tok, paths, out, **options)
    manifest = json.loads((out / MANIFEST).read_text())
    assert len(manifest["shards"]) == 3 and not manifest["complete"]
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST] + [f"shard_{i:06d}.bin" for i in range(3)]
    encode_files(tok, paths, out, **options)
    manifest, ids = all_ids(out)
    assert manifest["complete"] and ids == reference
    assert sorted(p.read_bytes() for p in out.glob("*.bin")) == sorted(p.read_bytes() for p in reference_dir.glob("*.bin"))
    # Running again is a no-op; a different job in the same folder is refused.
    assert encode_files(tok, paths, out, **options)["complete"]
    with pytest.raises(ValueError, match=r"another job \(other shard_size\)"):
        encode_files(tok, paths, out, **dict(options, shard_size=6000))
    with pytest.raises(ValueError, match=r"already holds shards \(resume=False\)"):
        encode_files(tok, paths, out, resume=False, **options)
    # an input edited since (an invalid byte mended, say) is named
    edited = tmp_path / "edited.txt"
    edited.write_text(docs[0], encoding="utf-8")
    encode_files(tok, [edited], tmp_path / "edited", **options)
    edited.write_text(docs[0] + "more\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"another job \(.*edited\.txt changed since \(its size or time\)\)"):
        encode_files(tok, [edited], tmp_path / "edited", **options)


@pytest.mark.parametrize("at", [1, 3])
def test_an_interrupt_just_after_a_shard_is_finished_leaves_a_manifest_that_resumes(tok, corpus, tmp_path,
                                                                                   monkeypatch, at):
    """A Ctrl-C that lands after a shard is finished and listed but before its checkpoint: the
    manifest saved on the way out lists the shards, their tokens and the place to resume of one
    moment (it listed the new shard with the count and place of the one before: a folder
    refused on the rerun, 'its token count is not its shards' sum')."""
    paths, _ = corpus
    options = dict(shard_size=3000, fmt="raw", progress=False, block_size=4000, documents="line")
    encode_files(tok, paths, tmp_path / "whole", **options)
    _, whole = all_ids(tmp_path / "whole")
    monkeypatch.setattr(shards, "MANIFEST_EVERY_SECONDS", 1e9)  # (checkpoints fall behind: saved on the way out)
    real_init = shards._ShardWriter.__init__

    def interrupted_at_a_checkpoint(writer, *args, checkpoint=None, **kwargs):
        calls = []

        def checkpoint_or_interrupt(resume_at, final):
            calls.append(resume_at)
            if len(calls) == at + 1:
                raise KeyboardInterrupt  # (the shard is finished and in the writer's list)
            checkpoint(resume_at, final)

        real_init(writer, *args, checkpoint=checkpoint_or_interrupt, **kwargs)

    out = tmp_path / "resumed"
    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        patched.setattr(shards._ShardWriter, "__init__", interrupted_at_a_checkpoint)
        encode_files(tok, paths, out, **options)
    manifest = json.loads((out / MANIFEST).read_text())
    assert len(manifest["shards"]) == at and manifest["tokens"] == at * 3000 and not manifest["complete"]
    assert encode_files(tok, paths, out, **options)["complete"]
    assert all_ids(out)[1] == whole


@pytest.mark.parametrize("documents", ["line", "blank-line"])
@pytest.mark.parametrize("empty_first", [False, True])
def test_a_resumed_run_of_short_documents_passes_over_what_was_written_as_the_whole_run_read_it(
        tok, shared_data, tmp_path, monkeypatch, documents, empty_first):
    """A resumed run of line or paragraph documents passes over the pieces written before at
    once, keeping what decides the next separator: whether a document with text came before
    (a file that starts with pieces of empty documents only, or not)."""
    words = shared_data.text("english.txt.gz", 40_000).split()
    lines = [" ".join(words[i:i + 6]) for i in range(0, len(words), 6)]  # (short: read a piece at a time)
    between = "\n" if documents == "line" else "\n\n"
    text = "\n" * (300 if empty_first else 0) + between.join(lines[:200]) + "\n\n\n" + between.join(lines[200:])
    path = tmp_path / "docs.txt"
    path.write_text(text, encoding="utf-8")
    options = dict(shard_size=300, fmt="raw", progress=False, block_size=256, documents=documents)
    encode_files(tok, [path], tmp_path / "whole", **options)
    _, whole = all_ids(tmp_path / "whole")
    assert whole == expected_ids(tok, split_documents(text, documents))
    for shard in (2, 9):  # (early: one piece of text passed over; late: many)
        out = tmp_path / f"resumed-{shard}"
        with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
            interrupt_at_shard(patched, shard)
            encode_files(tok, [path], out, **options)
        assert len(json.loads((out / MANIFEST).read_text())["shards"]) == shard - 1
        assert encode_files(tok, [path], out, **options)["complete"]
        assert all_ids(out)[1] == whole


def test_many_small_shards_rewrite_the_manifest_rarely_and_an_interrupt_lists_every_finished_one(
        tok, corpus, tmp_path, monkeypatch):
    """The manifest (every shard listed) is rewritten at most once a second during a run, not
    after every shard, which made runs of many small shards quadratic; the end of the run, and
    an interrupt, still write it with every shard finished listed, so a rerun resumes there."""
    paths, docs = corpus
    options = dict(shard_size=400, fmt="raw", progress=False, block_size=4000)
    writes = []
    real_write = shards.write_atomic

    def counted(path, payload):
        if Path(path).name == MANIFEST:
            writes.append(json.loads(payload)["shards"])
        real_write(path, payload)

    monkeypatch.setattr(shards, "write_atomic", counted)
    manifest = encode_files(tok, paths, tmp_path / "whole", **options)
    _, reference = all_ids(tmp_path / "whole")
    assert len(manifest["shards"]) > 100 and reference == expected_ids(tok, docs)
    seconds = manifest["seconds"]
    assert len(writes) <= 2 + seconds / shards.MANIFEST_EVERY_SECONDS and writes[-1] == manifest["shards"]

    monkeypatch.setattr(shards, "MANIFEST_EVERY_SECONDS", 1e9)  # (no rewrite due during the run)
    writes.clear()
    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        interrupt_at_shard(patched, 60)  # as the sixtieth shard is finished
        encode_files(tok, paths, tmp_path / "resumed", **options)
    listed = json.loads((tmp_path / "resumed" / MANIFEST).read_text())
    assert len(writes) == 1 and len(listed["shards"]) == 59 and not listed["complete"]
    assert encode_files(tok, paths, tmp_path / "resumed", **options)["complete"]
    assert all_ids(tmp_path / "resumed")[1] == reference


def test_directories_and_globs_are_read_like_every_corpus(tok, corpus, tmp_path):
    paths, docs = corpus
    root = tmp_path / "in"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "b.txt").write_text(docs[1], encoding="utf-8")
    (root / "a.txt").write_text(docs[0], encoding="utf-8")
    (root / ".hidden.txt").write_text("never read", encoding="utf-8")
    encode_files(tok, root, tmp_path / "dir", progress=False)
    assert all_ids(tmp_path / "dir")[1] == expected_ids(tok, docs[:2])
    encode_files(tok, [str(root / "**" / "*.txt")], tmp_path / "glob", progress=False)
    assert all_ids(tmp_path / "glob")[1] == expected_ids(tok, docs[:2])


def test_progress_bar_counts_input_bytes(tok, corpus, capsys, tmp_path):
    paths, _ = corpus
    encode_files(tok, paths, tmp_path, progress=True, block_size=5000)
    err = capsys.readouterr().err
    assert "encoding" in err and "100%" in err


def test_invalid_utf8_names_the_file_and_offset(tok, tmp_path):
    big = tmp_path / "big_bad.txt"
    big.write_bytes(b"word " * 40_000 + b"x\xc3(" + b" word" * 1000)
    for documents in ("file", "line"):
        with pytest.raises(CorpusDecodeError, match=r"big_bad\.txt: invalid UTF-8 at byte offset 200001 \(byte 0xc3\)"):
            encode_files(tok, [big], tmp_path / f"o-{documents}", documents=documents, block_size=1000, progress=False)
    packed = tmp_path / "bad.txt.xz"
    with lzma.open(packed, "wb") as f:
        f.write(b"line one\nline \xff two\n")
    with pytest.raises(CorpusDecodeError, match=r"bad\.txt\.xz: invalid UTF-8 at byte offset 14 \(offset in the "
                                                r"decompressed stream\) \(byte 0xff\)"):
        encode_files(tok, [packed], tmp_path / "o-xz", documents="line", progress=False)
    normalising = fastbpe.Tokenizer(tok.token_bytes, tok.merge_ids, pattern="cl100k", normalizer="NFC")
    with pytest.raises(CorpusDecodeError, match=r"big_bad\.txt: invalid UTF-8 at byte offset 200001 \(byte 0xc3\)"):
        encode_files(normalising, [big], tmp_path / "o-nfc", block_size=1000, separator=None, progress=False)


def test_a_character_tokenizer_s_documents_in_one_call_fail_as_one_at_a_time(tmp_path):
    """A one-chunk character tokenizer encodes a block's documents in one call; a document that
    is not UTF-8, or holds a character without a token, is then named as the one-at-a-time
    path names it."""
    from fastbpe.split.splitter import WHOLE_PIECE

    chars = fastbpe.Tokenizer([b"a", b"b", b"\n", b"ab"], [(0, 1)], unit="chars", pattern=WHOLE_PIECE,
                              merge_rule="pair", special_tokens={"</s>": 4})
    good = tmp_path / "good.txt"
    good.write_text("ab\nba\n\nabab\n", encoding="utf-8")
    encode_files(chars, [good], tmp_path / "o", documents="line", separator="</s>", progress=False)
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    ids = np.concatenate([fastbpe.read_shard(tmp_path / "o" / s["file"]) for s in manifest["shards"]]).tolist()
    assert ids == [3, 4, 1, 0, 4, 3, 3]
    for name, data, message in (("bad.txt", b"ab\nb\xffa\n", r"bad\.txt: invalid UTF-8 at byte offset 4"),
                                ("missing.txt", "ab\nbéa\n".encode(), "'é' is not in the vocabulary")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=message):
            encode_files(chars, [tmp_path / name], tmp_path / f"o-{name}", documents="line", separator="</s>",
                         progress=False)


def test_damaged_shards_are_clear_errors(tok, tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("some text " * 200, encoding="utf-8")
    encode_files(tok, [path], tmp_path / "o", shard_size=50, fmt="llmc", progress=False)
    shard = tmp_path / "o" / "shard_000000.bin"
    data = shard.read_bytes()
    shard.write_bytes(data[:-3])
    with pytest.raises(ValueError, match="does not match its header"):
        read_shard(shard)
    shard.write_bytes(b"NOTMAGIC" + data[8:])
    with pytest.raises(ValueError, match="magic"):
        read_shard(shard)
    shard.write_bytes(data[:10])
    with pytest.raises(ValueError, match="truncated"):
        read_shard(shard)
    with pytest.raises(ValueError, match="does not match|magic|truncated"):
        encode_files(tok, [path], tmp_path / "o", shard_size=50, fmt="llmc", progress=False)
    shard.unlink()
    with pytest.raises(ValueError, match="cannot be read"):
        encode_files(tok, [path], tmp_path / "o", shard_size=50, fmt="llmc", progress=False)
    (tmp_path / "o" / MANIFEST).write_text("{not json")
    with pytest.raises(ValueError, match="unreadable manifest"):
        encode_files(tok, [path], tmp_path / "o", shard_size=50, fmt="llmc", progress=False)
    # A raw shard is whole ids; without its manifest it needs its dtype.
    encode_files(tok, [path], tmp_path / "r", shard_size=50, fmt="raw", progress=False)
    raw = tmp_path / "r" / "shard_000000.bin"
    want = read_shard(raw).tolist()
    (tmp_path / "r" / MANIFEST).unlink()
    with pytest.raises(ValueError, match="dtype"):
        read_shard(raw)
    assert read_shard(raw, dtype="uint16").tolist() == want
    raw.write_bytes(raw.read_bytes()[:-1])
    with pytest.raises(ValueError, match="whole number"):
        read_shard(raw, dtype="uint16")


def test_raw_shards_are_what_nanogpt_reads(tok, corpus, tmp_path):
    """The raw format is bare little-endian ids: a nanoGPT-style loader (np.memmap, random
    windows of block_size + 1 ids) reads exactly the encoded stream, no header in sight."""
    paths, docs = corpus
    manifest = encode_files(tok, paths, tmp_path, shard_size=20_000, fmt="raw", progress=False)
    want = expected_ids(tok, docs)
    assert manifest["dtype"] == "uint16" and all(s["file"].endswith(".bin") for s in manifest["shards"])
    assert sum(s["tokens"] for s in manifest["shards"]) == len(want) == manifest["tokens"]
    offset, block_size, rng = 0, 64, np.random.default_rng(0)
    for shard in manifest["shards"]:
        data = np.memmap(tmp_path / shard["file"], dtype=np.uint16, mode="r")  # as nanoGPT's get_batch
        assert len(data) == shard["tokens"]
        starts = rng.integers(0, len(data) - block_size - 1, size=8)
        x = np.stack([data[i:i + block_size].astype(np.int64) for i in starts])
        y = np.stack([data[i + 1:i + 1 + block_size].astype(np.int64) for i in starts])
        for row, i in enumerate(starts):
            assert x[row].tolist() == want[offset + i:offset + i + block_size]
            assert y[row].tolist() == want[offset + i + 1:offset + i + 1 + block_size]
        offset += len(data)
    assert offset == len(want)


def test_llmc_shards_follow_llm_c_layout(tok, corpus, tmp_path):
    """llm.c's token files: 256 int32 (magic 20240520, version 1, token count), uint16 ids."""
    paths, docs = corpus
    manifest = encode_files(tok, paths, tmp_path, shard_size=30_000, fmt="llmc", progress=False)
    ids = []
    for shard in manifest["shards"]:
        raw = (tmp_path / shard["file"]).read_bytes()
        header = np.frombuffer(raw[:1024], dtype="<i4")
        assert header[:3].tolist() == [20240520, 1, shard["tokens"]] and not header[3:].any()
        assert len(raw) == 1024 + 2 * shard["tokens"]
        ids.extend(np.frombuffer(raw[1024:], dtype="<u2").tolist())
    assert ids == expected_ids(tok, docs)


def test_llmc_needs_uint16_ids(cl100k, tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("text", encoding="utf-8")
    with pytest.raises(ValueError, match="uint16"):
        encode_files(cl100k, [path], tmp_path / "o", fmt="llmc", separator=None)
    encode_files(cl100k, [path], tmp_path / "o32", fmt="raw", separator=None, progress=False)
    assert read_shard(tmp_path / "o32" / "shard_000000.bin").dtype == np.uint32


def test_old_fbpetok_shards_still_read(tmp_path):
    """Shards written by earlier versions (the FBPETOK header) read back; none are written."""
    ids = np.arange(1000, 1100, dtype="<u2")
    header = shards.BIN_HEADER.pack(shards.BIN_MAGIC, 1, 2, len(ids))
    old = tmp_path / "shard_000000.bin"
    old.write_bytes(header + ids.tobytes())
    assert read_shard(old).tolist() == ids.tolist()
    assert read_shard(old, mmap=False, fmt="bin").tolist() == ids.tolist()
    # beside the version 1 manifest of those days too
    (tmp_path / MANIFEST).write_text(json.dumps({"format": "fastbpe-shards", "version": 1, "job": {
        "format": "bin", "dtype": "uint16"}, "shards": [{"file": old.name, "tokens": 100}]}))
    assert read_shard(old).tolist() == ids.tolist()
    old.write_bytes(header + ids.tobytes()[:-2])
    with pytest.raises(ValueError, match="does not match its header"):
        read_shard(old)
    with pytest.raises(ValueError, match="no longer written"):
        encode_files(fastbpe.Tokenizer([bytes([b]) for b in range(256)], []), [old], tmp_path / "o", fmt="bin")


def test_bad_arguments(tok, tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("text", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="no such file"):
        encode_files(tok, [tmp_path / "missing.txt"], tmp_path / "o")
    with pytest.raises(FileNotFoundError, match="glob"):
        encode_files(tok, [tmp_path / "*.none"], tmp_path / "o")
    with pytest.raises(ValueError, match="fmt"):
        encode_files(tok, [path], tmp_path / "o", fmt="csv")
    with pytest.raises(ValueError, match="shard_size"):
        encode_files(tok, [path], tmp_path / "o", shard_size=0)
    with pytest.raises(ValueError, match="block_size"):
        encode_files(tok, [path], tmp_path / "o", block_size=0)
    # (a block is held in memory whole: one of a terabyte could only end in a MemoryError)
    with pytest.raises(ValueError, match="block_size must be at most 2,147,483,648"):
        encode_files(tok, [path], tmp_path / "o", block_size=10**12)
    with pytest.raises(ValueError, match="block_size must be at most"):
        fastbpe.count_words(str(path), block_size=10**12)
    with pytest.raises(ValueError, match="count their tokens in an int32: shard_size must be at most 2,147,483,647"):
        encode_files(tok, [path], tmp_path / "llmc", fmt="llmc", shard_size=3 * 10**9)
    assert not (tmp_path / "llmc").exists()  # (refused before the folder is made)
    with pytest.raises(ValueError, match="documents"):
        encode_files(tok, [path], tmp_path / "o", documents="page")
    for workers, error in ((0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="workers"):
            encode_files(tok, [path], tmp_path / "o", workers=workers)
    for not_a_tokenizer in (str(path), None):
        with pytest.raises(TypeError, match=r"fastbpe\.Tokenizer, got .* fastbpe\.load\(path\)"):
            encode_files(not_a_tokenizer, [path], tmp_path / "o")
    wide = fastbpe.Tokenizer([bytes([b]) for b in range(256)], [], special_tokens={"<|endoftext|>": 70_000})
    with pytest.raises(ValueError, match="uint16"):
        encode_files(wide, [path], tmp_path / "o", fmt="llmc")
    assert not (tmp_path / "o").exists()
    encode_files(tok, [path], tmp_path / "numpy", shard_size=np.int64(1000), progress=False)  # (a count as NumPy's)
    with pytest.raises(ValueError, match=r"no special token '<\|nope\|>' .* separator=None .* one of its 1 special "
                                         r"tokens: '<\|endoftext\|>'$"):
        encode_files(tok, [path], tmp_path / "o", separator="<|nope|>")
    with pytest.raises(ValueError, match="not both"):
        encode_files(tok, [path], tmp_path / "o", block_size=10, block_chars=10)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok \xff\xfe not utf-8")
    with pytest.raises(CorpusDecodeError, match=r"bad\.txt: invalid UTF-8 at byte offset 3 \(byte 0xff\)"):
        encode_files(tok, [bad], tmp_path / "o2", progress=False)
    assert not (tmp_path / "o2").exists()  # (a job that wrote nothing leaves no folder)


@pytest.mark.parametrize("documents", ["file", "line"])
def test_a_character_the_vocabulary_lacks_is_named_with_its_byte_offset(tmp_path, documents):
    chars = fastbpe.train(text="low lower newest widest\n" * 20, vocab_size=40, unit="chars", progress=False)
    path = tmp_path / "u.txt"
    path.write_text("low\n" * 300 + "low ユ lower\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"u\.txt, byte offset 1204: 'ユ' is not in the vocabulary"):
        encode_files(chars, [path], tmp_path / "o", documents=documents, separator=None, block_size=100,
                     progress=False)


def test_an_output_folder_the_job_could_only_spoil_is_refused_first(tok, tmp_path, monkeypatch):
    """An empty name (the current folder), a file or a path under one, an input folder or a
    folder inside one: refused before any work, nothing written; and inputs that name no file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus" / "sub").mkdir(parents=True)
    (tmp_path / "corpus" / "a.txt").write_text("hello world\n", encoding="utf-8")
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    for out, says in (("", "out_dir is empty"), ("corpus", "inside the input folder 'corpus'"),
                      ("corpus/sub/shards", "inside the input folder 'corpus'"), ("afile", "'afile' is a file"),
                      ("afile/shards", "'afile' is a file")):
        with pytest.raises(ValueError, match=re.escape(says)):
            encode_files(tok, ["corpus"], out, progress=False)
    with pytest.raises(ValueError, match=r"name no files \(empty folders\?\)"):
        encode_files(tok, ["empty"], "shards", progress=False)
    assert sorted(os.listdir(tmp_path)) == ["afile", "corpus", "empty"]
    assert sorted(os.listdir(tmp_path / "corpus")) == ["a.txt", "sub"] and not os.listdir(tmp_path / "corpus" / "sub")
    encode_files(tok, ["corpus/a.txt"], "corpus/sub/shards", progress=False)  # (a file of a folder: read alone)
    assert read_shard(tmp_path / "corpus" / "sub" / "shards" / "shard_000000.npy").tolist() == \
        tok.encode_ordinary("hello world\n")


def test_block_chars_is_the_former_name_of_block_size(tok, corpus, tmp_path):
    paths, docs = corpus
    with pytest.warns(DeprecationWarning, match="block_size"):
        encode_files(tok, paths, tmp_path / "old", block_chars=3000, progress=False)
    encode_files(tok, paths, tmp_path / "new", block_size=3000, progress=False)
    assert all_ids(tmp_path / "old")[1] == all_ids(tmp_path / "new")[1] == expected_ids(tok, docs)


def test_the_job_names_everything_that_decides_the_ids(tok, cl100k):
    """The tokenizer digest of a job changes with any field, token or merge that changes the
    ids, and not with the training statistics; it equals for an equal tokenizer."""
    digest = shards._tokenizer_digest
    assert digest(tok) == digest(fastbpe.Tokenizer.from_dict(tok.to_dict()))
    data = tok.to_dict()
    changed = [dict(data, pattern="whitespace"), dict(data, special_tokens={EOT: len(data["vocab"]) + 1}),
               dict(data, merges=data["merges"][:-1], vocab=data["vocab"][:-1], merge_counts=None),
               dict(data, prefix_space=True)]
    for other in changed:
        assert digest(fastbpe.Tokenizer.from_dict(other)) != digest(tok), [k for k in data if other[k] != data[k]]
    assert data["merge_counts"], "a trained tokenizer has its merge counts"
    assert digest(fastbpe.Tokenizer.from_dict(dict(data, merge_counts=[c + 1 for c in data["merge_counts"]]))) == \
        digest(tok)
    swapped = list(cl100k.token_bytes)
    swapped[300], swapped[301] = swapped[301], swapped[300]  # two tokens' bytes: other ids
    assert digest(fastbpe.Tokenizer(swapped, None, merge_rule="token", pattern=cl100k.pattern,
                                    special_tokens=cl100k.special_tokens, whole_token_lookup=True)) != digest(cl100k)


def test_a_run_of_an_earlier_version_resumes(tok, corpus, tmp_path):
    """A manifest whose job names the tokenizer as earlier versions did (the SHA-256 of its
    file's JSON) resumes, and a different tokenizer is still refused."""
    paths, _ = corpus
    options = dict(shard_size=5000, fmt="raw", progress=False, block_size=4000)
    encode_files(tok, paths, tmp_path / "whole", **options)
    out = tmp_path / "earlier"
    encode_files(tok, paths, out, **options)
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["job"].pop("tokenizer_digest")
    manifest["job"]["tokenizer_sha256"] = shards._fingerprint(tok, [], {}, earlier=True)["tokenizer_sha256"]
    manifest["complete"] = False
    (out / MANIFEST).write_text(json.dumps(manifest))
    assert encode_files(tok, paths, out, **options)["complete"]
    assert all_ids(out)[1] == all_ids(tmp_path / "whole")[1]
    manifest["job"]["tokenizer_sha256"] = "0" * 64
    (out / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="another job"):
        encode_files(tok, paths, out, **options)



@pytest.mark.parametrize("line_end", [b"\n", b"\r\n"])
def test_a_line_job_of_a_version_that_kept_the_carriage_return_resumes_where_the_rules_agree(
        tok, corpus, tmp_path, monkeypatch, line_end):
    """Earlier versions kept the \\r of a \\r\\n in a line document, and their jobs named no
    line ends: such a job resumes on files without a \\r\\n (the ids are the same), and is
    refused, naming the file, where one has them."""
    _, docs = corpus
    path = tmp_path / "in.txt.gz"
    path.write_bytes(gzip.compress("\n".join(docs).encode().replace(b"\n", line_end)))
    options = dict(shard_size=5000, fmt="raw", progress=False, block_size=4000, documents="line")
    encode_files(tok, [path], tmp_path / "whole", **options)
    out = tmp_path / "earlier"
    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        interrupt_at_shard(patched, 3)
        encode_files(tok, [path], out, **options)
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["job"].pop("line_ends") == shards.LINE_ENDS
    (out / MANIFEST).write_text(json.dumps(manifest))
    if line_end == b"\r\n":
        with pytest.raises(ValueError, match=r"earlier fastbpe version, whose line documents kept the \\r of "
                                             r"\\r\\n line ends, which .*in\.txt\.gz has"):
            encode_files(tok, [path], out, **options)
        return
    assert encode_files(tok, [path], out, **options)["complete"]
    assert all_ids(out)[1] == all_ids(tmp_path / "whole")[1]
    with pytest.raises(ValueError, match=r"another job \(other shard_size\)"):
        encode_files(tok, [path], out, **dict(options, shard_size=6000))


@pytest.mark.parametrize("edit", [{"tokens": -5}, {"tokens": "abc"}, {"tokens": 1}, {"resume_at": ["0", 0]},
                                  {"resume_at": [0, 0, 0]}, {"resume_at": [0, -1]}, {"resume_at": None}])
def test_a_hand_edited_manifest_is_refused_not_trusted(tok, corpus, tmp_path, edit):
    """A count or a resume point a run trusts: one that disagrees with the shards, or is no
    count at all, is refused (a resume point of [0, 0] wrote the stream twice; a count of -5
    was carried into the finished manifest)."""
    paths, _ = corpus
    options = dict(shard_size=5000, fmt="raw", progress=False, block_size=4000)
    encode_files(tok, paths, tmp_path, **options)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    manifest.update(edit, complete=False)
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="remove the folder to start over"):
        encode_files(tok, paths, tmp_path, **options)


@pytest.mark.parametrize("content, said", [("[1, 2]", "an array"), ("null", "null"), ('"x"', "a string"),
                                           ("7", "a number")])
def test_a_manifest_that_is_no_object_is_refused_by_name(tok, corpus, tmp_path, content, said):
    """Another tool's manifest.json in the output folder (valid JSON, no object): a ValueError
    naming it, not an AttributeError from inside the resume."""
    paths, _ = corpus
    (tmp_path / MANIFEST).write_text(content)
    with pytest.raises(ValueError, match=f"not a fastbpe manifest \\(it holds {said}, not an object\\)"):
        encode_files(tok, paths, tmp_path, shard_size=5000, fmt="raw", progress=False)


def test_a_manifest_whose_job_lists_no_files_is_another_job(tok, corpus, tmp_path):
    paths, _ = corpus
    options = dict(shard_size=5000, fmt="raw", progress=False, block_size=4000)
    encode_files(tok, paths, tmp_path, **options)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    for files in (5, [{"path": [1]}], [{"path": None}, 3]):
        manifest["job"]["files"] = files
        (tmp_path / MANIFEST).write_text(json.dumps(manifest))
        with pytest.raises(ValueError, match=r"another job \(other input files"):
            encode_files(tok, paths, tmp_path, **options)


# ------------------------------------------------------------------------------ long words


def _long_word(chars: int, seed: int) -> str:
    """Letters only (ASCII and not), so every split pattern keeps it as one chunk."""
    rng = random.Random(seed)
    parts = ["the", "qu", "ick", "é", "жук", "日本", "ß", "ab", "ing", "ø", "straße", "x"]
    return "".join(rng.choice(parts) for _ in range(chars // 3))[:chars]


@pytest.fixture(scope="module")
def r50k(shared_data):
    return fastbpe.openai("r50k_base", shared_data.path("tokenizers", "tiktoken"))


@pytest.mark.parametrize("task_bytes", [None, 50_000])
@pytest.mark.parametrize("name, fmt", [("r50k_base", "llmc"), ("r50k_base", "npy"), ("cl100k_base", "raw")])
def test_long_single_chunk_documents_give_tiktokens_ids(name, fmt, task_bytes, r50k, cl100k, tiktoken_encoding,
                                                        tmp_path, monkeypatch):
    """Documents that are one chunk of a few hundred KB (a long block, gathered in place and
    encoded from its bytes), beside short ones, with separators, across shard boundaries: the
    ids of tiktoken, of ``encode`` and of ``encode_to_numpy``. Small tasks make the long chunks
    pieces longer than a task (uint16 ids straight from the encoder for r50k)."""
    if task_bytes is not None:
        monkeypatch.setattr(shards, "TASK_BYTES", task_bytes)
    tok = {"r50k_base": r50k, "cl100k_base": cl100k}[name]
    enc = tiktoken_encoding(name)
    docs = ["short one", "words, then " + _long_word(300_000, 1) + " and after it", "a b", _long_word(120_000, 2)]
    paths = []
    for i, doc in enumerate(docs):
        paths.append(tmp_path / f"{i}.txt")
        paths[-1].write_text(doc, encoding="utf-8")
    out = tmp_path / "out"
    encode_files(tok, paths, out, shard_size=40_000, fmt=fmt, block_size=4096, workers=2, progress=False)
    expected = []
    for i, doc in enumerate(docs):
        expected += ([enc.eot_token] if i else []) + enc.encode_ordinary(doc)
    manifest, ids = all_ids(out)
    assert ids == expected
    assert [s["tokens"] for s in manifest["shards"]][:-1] == [40_000] * (len(manifest["shards"]) - 1)
    assert tok.encode_to_numpy(docs[1]).tolist() == tok.encode(docs[1]) == enc.encode_ordinary(docs[1])
    assert tok.encode_to_numpy(docs[1]).dtype == np.uint32  # (as tiktoken's)


def test_long_blocks_are_gathered_not_joined(r50k, tmp_path):
    """A stretch without a cut spanning many pieces comes out as one bytearray block, holding
    the file's bytes."""
    data = _long_word(200_000, 3).encode()
    path = tmp_path / "w.txt"
    path.write_bytes(data + b" tail")
    blocks = list(input_blocks(r50k, [path], block_size=4096))
    assert type(blocks[0].data) is bytearray and len(blocks[0].data) >= len(data) - 4
    assert b"".join(b.data for b in blocks) == data + b" tail"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=40), max_size=12), st.integers(1, 30))
def test_cut_stream_grow_gives_the_same_segments(pieces, block_size):
    rule = cut_rule("gpt2")
    plain = list(cut_stream(pieces, rule, block_size))
    grown = list(cut_stream(pieces, rule, block_size, grow=True))
    assert [(bytes(s), o) for s, o in grown] == plain


def test_invalid_utf8_inside_a_long_word_names_the_file_and_offset(r50k, tmp_path):
    word = _long_word(150_000, 4)
    head, tail = word[:90_000].encode(), word[90_000:].encode()
    bad = tmp_path / "long_bad.txt"
    bad.write_bytes(head + b"\xff" + tail)
    offset = len(head)
    with pytest.raises(CorpusDecodeError, match=rf"long_bad\.txt: invalid UTF-8 at byte offset {offset} \(byte 0xff\)"):
        encode_files(r50k, [bad], tmp_path / "o", block_size=4096, progress=False)
    assert not list((tmp_path / "o").glob(".tmp-*"))
    manifest = tmp_path / "o" / MANIFEST
    assert not manifest.exists() or not json.loads(manifest.read_text())["complete"]


def test_a_shard_interrupted_as_its_ids_are_written_is_never_half_written(r50k, tmp_path, monkeypatch):
    """An interrupt while a shard's ids are written, as they come, leaves no partial file; the
    rerun resumes to the same ids."""
    docs = [_long_word(100_000, 5), "between", _long_word(100_000, 6)]
    paths = []
    for i, doc in enumerate(docs):
        paths.append(tmp_path / f"{i}.txt")
        paths[-1].write_text(doc, encoding="utf-8")
    options = dict(shard_size=30_000, fmt="npy", block_size=4096, progress=False)
    encode_files(r50k, paths, tmp_path / "whole", **options)
    _, reference = all_ids(tmp_path / "whole")

    real_open = shards._open_shard
    opened = []

    def interrupted(path, *args):
        file = real_open(path, *args)
        opened.append(file)
        if len(opened) == 2:
            real_write, writes = file.write, []

            def write(piece):
                writes.append(piece)
                if len(writes) == 2:
                    raise KeyboardInterrupt  # in the middle of writing the shard's ids
                real_write(piece)
            file.write = write
        return file

    monkeypatch.setattr(shards, "_open_shard", interrupted)
    out = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        encode_files(r50k, paths, out, **options)
    monkeypatch.setattr(shards, "_open_shard", real_open)
    assert len(opened) == 2
    assert not list(out.glob(".tmp-*"))
    listed = json.loads((out / MANIFEST).read_text())["shards"]
    assert sorted(p.name for p in out.iterdir()) == sorted([MANIFEST] + [s["file"] for s in listed])
    encode_files(r50k, paths, out, **options)
    assert all_ids(out)[1] == reference


def test_only_idle_temporaries_are_removed_at_the_start_of_a_cluster_run(tmp_path, monkeypatch):
    """A task of an interrupted earlier run may still be writing its temporary file when a
    rerun starts: only files idle for a while are a lost worker's. One renamed into place
    between the listing and the removal is not an error."""
    live, idle = tmp_path / ".tmp-1-aa-live", tmp_path / ".tmp-2-bb-idle"
    live.write_bytes(b"being written")
    idle.write_bytes(b"left by a lost worker")
    old = time.time() - 2 * shards.STALE_TEMPORARY_SECONDS
    os.utime(idle, (old, old))
    (tmp_path / "shard_000000.npy").write_bytes(b"kept")
    shards._remove_temporaries(tmp_path, idle_for=shards.STALE_TEMPORARY_SECONDS)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tmp-1-aa-live", "shard_000000.npy"]

    real_listdir = os.listdir
    monkeypatch.setattr(shards.os, "listdir", lambda d: real_listdir(d) + [".tmp-3-cc-renamed"])
    shards._remove_temporaries(tmp_path)  # the end of a run: every temporary goes
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shard_000000.npy"]


def _whole_documents(items) -> list:
    """``(document, its offset)`` from the items of the document readers: ``(piece, offset, ends
    a document)`` of _document_pieces, or _document_runs' PieceDocuments and blocks."""
    documents, begun = [], None
    for item in items:
        if isinstance(item, shards.PieceDocuments):
            assert begun is None
            documents += [(item.data[a:b], item.offset + a) for a, b in zip(item.starts.tolist(), item.stops.tolist())]
            continue
        data, offset, ends = (item[0], item[2], item[1]) if type(item[1]) is bool else item
        begun = [bytes(data), offset] if begun is None else [begun[0] + bytes(data), begun[1]]
        if ends:
            if begun[0]:
                documents.append(tuple(begun))
            begun = None
    assert begun is None
    return documents


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b" ", b"\n", b"\n\n", b"\r", b"\r\n", b"\r\n\r\n", b"\xc3\xa9"]), max_size=50),
       st.integers(1, 9), st.integers(1, 12), st.sampled_from(["line", "blank-line"]))
def test_documents_read_a_piece_at_a_time_are_those_of_the_whole_file(parts, piece_size, block_size, documents):
    """Whatever the pieces a file is read in, the readers find its documents, at their offsets:
    line ends of both kinds, and a "\\r" that ends no line, split across pieces included."""
    data = b"".join(parts)
    pieces = [data[i:i + piece_size] for i in range(0, len(data), piece_size)]
    want = [(data[a:b], a) for a, b in reference_document_spans(data, shards._SEPARATOR_NEWLINES[documents])]
    assert _whole_documents(shards._document_pieces(iter(pieces), documents)) == want
    rule = cut_rule("whitespace")
    assert _whole_documents(shards._document_runs("p", iter(pieces), documents, rule, block_size)) == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([b"a", b" ", b"\n", b"\n\n", b"bb", b"\xc3\xa9", b"  ", b"x"]), max_size=60),
       st.integers(1, 12), st.integers(1, 15), st.sampled_from(["file", "line", "blank-line"]),
       st.sampled_from([None, "NFC"]))
def test_file_blocks_flag_the_last_block_of_each_document(parts, piece_size, block_size, documents, normalizer):
    """Blocks are handed on as they are cut (a cut inside a piece: text follows), yet they are
    those of holding each block until the next one is cut: cut_stream's segments of each
    document, its last one, alone, ending it."""
    data = b"".join(parts)
    pieces = [data[i:i + piece_size] for i in range(0, len(data), piece_size)]
    rule = cut_rule("gpt2")
    got = [(bytes(d), ends, offset) for d, ends, offset in
           shards._file_blocks("p", iter(pieces), documents, rule, block_size, normalizer)]
    expected = []
    events = shards._document_pieces(iter(pieces), documents)
    for first, start, ends in events:
        if ends and len(first) <= block_size and normalizer is None:
            if first:
                expected.append((first, True, start))
            continue
        text = shards._rest_of_document(first, ends, events)
        if normalizer is not None:
            text = normalize_stream(text, normalizer)
        segments = list(cut_stream(text, rule, block_size, grow=True))
        expected += [(bytes(s), k == len(segments) - 1, -1 if normalizer else start + o)
                     for k, (s, o) in enumerate(segments)]
    assert got == expected


def test_shards_written_as_their_ids_come_equal_whole_ones(r50k, tmp_path, monkeypatch):
    """Each shard is written as its ids come (synced to the disk every SYNC_BYTES), its header
    put in place at the end: the files hold the ids and headers of every format, and a shard
    size of more digits than NumPy's header leaves room for moves the ids behind the header
    of the real count."""
    text = "the cat sat on the mat; " * 3000
    path = tmp_path / "in.txt"
    path.write_text(text, encoding="utf-8")
    want = r50k.encode_ordinary(text)
    synced = []
    monkeypatch.setattr(shards._ShardWriter, "SYNC_BYTES", 1000)
    real_sync = fastbpe.fileio.AtomicWriter.sync
    monkeypatch.setattr(fastbpe.fileio.AtomicWriter, "sync", lambda self: synced.append(self.path) or real_sync(self))
    for fmt in ("npy", "raw", "llmc"):
        out = tmp_path / fmt
        encode_files(r50k, [path], out, shard_size=2000, fmt=fmt, block_size=4096, progress=False)
        manifest, ids = all_ids(out)
        assert ids == want and [s["tokens"] for s in manifest["shards"]][:-1] == [2000] * (len(manifest["shards"]) - 1)
        for shard in manifest["shards"]:
            data = read_shard(out / shard["file"], mmap=False)
            header = {"npy": shards._npy_header(np.dtype("<u2"), len(data)), "raw": b"",
                      "llmc": shards._llmc_header(len(data))}[fmt]
            assert (out / shard["file"]).read_bytes() == header + data.astype("<u2").tobytes()
    assert synced
    huge = 10 ** 60  # (61 digits: a longer header than that of a count of NumPy's 21 digits of room)
    assert len(shards._npy_header(np.dtype("<u2"), huge)) != len(shards._npy_header(np.dtype("<u2"), len(want)))
    monkeypatch.setattr(shards, "TASK_BYTES", 64)  # (many small writes, some still buffered at the end)
    encode_files(r50k, [path], tmp_path / "huge", shard_size=huge, fmt="npy", block_size=4096, progress=False)
    (shard,) = json.loads((tmp_path / "huge" / MANIFEST).read_text())["shards"]
    assert np.load(tmp_path / "huge" / shard["file"]).tolist() == want
    assert not list((tmp_path / "huge").glob(".tmp-*"))


def test_a_slow_hand_over_to_the_disk_holds_up_no_write_and_its_error_ends_the_run(r50k, tmp_path, monkeypatch):
    """The periodic sync runs beside the writing thread, one at a time: while one waits for
    the disk the ids keep coming (fewer syncs than SYNC_BYTES crossed, the same files), and a
    sync that fails fails the run at the end of its shard, which is removed."""
    import threading

    text = "the cat sat on the mat; " * 3000
    path = tmp_path / "in.txt"
    path.write_text(text, encoding="utf-8")
    want = r50k.encode_ordinary(text)
    monkeypatch.setattr(shards._ShardWriter, "SYNC_BYTES", 200)
    monkeypatch.setattr(shards, "TASK_BYTES", 512)  # (many writes, each past SYNC_BYTES)
    real_sync = fastbpe.fileio.AtomicWriter.sync
    release = threading.Event()
    calls = []

    def slow_sync(self):
        calls.append(threading.current_thread() is threading.main_thread())
        release.wait(0.05 if len(calls) == 1 else 0)  # the first one waits while the writes go on
        real_sync(self)

    monkeypatch.setattr(fastbpe.fileio.AtomicWriter, "sync", slow_sync)
    out = tmp_path / "slow"
    encode_files(r50k, [path], out, shard_size=10 ** 6, fmt="raw", block_size=4096, progress=False, workers=2)
    manifest, ids = all_ids(out)
    crossings = 2 * len(want) // 200
    assert ids == want and calls and not any(calls) and len(calls) < crossings

    def failing_sync(self):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(fastbpe.fileio.AtomicWriter, "sync", failing_sync)
    with pytest.raises(OSError, match="Input/output error"):
        encode_files(r50k, [path], tmp_path / "failed", shard_size=10 ** 6, fmt="npy", block_size=4096,
                     progress=False)
    failed = tmp_path / "failed"  # (no shard left; a folder that holds nothing goes too)
    assert not failed.exists() or not [p for p in failed.iterdir() if p.name != MANIFEST]


def test_an_input_changed_while_it_is_encoded_is_not_called_complete(tok, tmp_path, monkeypatch):
    """A file cut short or grown while encode ran ended in shards said complete, holding parts
    of two versions of it."""
    path = tmp_path / "in.txt"
    path.write_text("the cat sat on the mat\n" * 5000)
    real_read_pieces = shards.read_pieces

    def grown_after_the_first_piece(reader, size):
        for k, piece in enumerate(real_read_pieces(reader, size)):
            yield piece
            if k == 0:
                with open(path, "a") as f:  # (another program appends to it meanwhile)
                    f.write("a line more\n")

    monkeypatch.setattr(shards, "read_pieces", grown_after_the_first_piece)
    with pytest.raises(ValueError, match="in.txt changed while it was encoded"):
        encode_files(tok, [path], tmp_path / "out", block_size=4096, shard_size=2000, workers=1, progress=False)
    manifest = json.loads((tmp_path / "out" / MANIFEST).read_text())  # (the shards finished are listed)
    assert manifest["shards"] and not manifest["complete"]



@pytest.mark.skipif(os.name != "posix", reason="flock")
def test_two_runs_never_write_one_folder_at_once(tok, tmp_path, monkeypatch):
    """A second run into a folder another run is writing is refused before it writes anything
    (two at once wrote one another's shards under one manifest said complete)."""
    path = tmp_path / "in.txt"
    path.write_text("the cat sat on the mat\n" * 2000)
    real_read_pieces = shards.read_pieces
    refused = []

    def a_second_run_starts_meanwhile(reader, size):
        for piece in real_read_pieces(reader, size):
            if not refused:
                with pytest.raises(ValueError, match="another run of encode is writing into this folder") as raised:
                    encode_files(tok, [path], tmp_path / "out", documents="line", progress=False)
                refused.append(raised.value)
            yield piece

    monkeypatch.setattr(shards, "read_pieces", a_second_run_starts_meanwhile)
    manifest = encode_files(tok, [path], tmp_path / "out", workers=1, progress=False)
    assert refused and manifest["complete"] and manifest["job"]["documents"] == "file"
    monkeypatch.undo()
    assert encode_files(tok, [path], tmp_path / "out", workers=1, progress=False)["complete"]  # (released)


def test_a_shard_is_removed_only_after_its_hand_over_to_the_disk_ends_even_after_ctrl_c(tmp_path, monkeypatch):
    """Ctrl-C while the end of a shard waits for the disk, then the removal of that shard: the
    removal still waits for the hand-over (Python 3.11's Thread.join, interrupted, took the
    running thread for ended, and the file was closed under it)."""
    import threading

    from fastbpe import fileio
    from fastbpe.shards import _ShardWriter
    from tests.interrupts import Interrupted, sigint_soon

    release, synced = threading.Event(), []

    def slow_sync(self):
        release.wait(10)
        synced.append(True)

    monkeypatch.setattr(fileio.AtomicWriter, "sync", slow_sync)
    monkeypatch.setattr(_ShardWriter, "SYNC_BYTES", 2)
    writer = _ShardWriter(tmp_path / "out", [], 1000, "raw", np.uint16, "t")
    writer.add(np.arange(4, dtype=np.uint16), 0, 0)  # (a hand-over starts, and waits)
    with pytest.raises(Interrupted):
        with sigint_soon(0.2):
            writer.flush((1, 0), final=True)  # (waits for the hand-over: interrupted)
    threading.Timer(0.3, release.set).start()
    writer.abort()
    assert synced == [True]
