"""Token shards: corpora streamed through a tokenizer into fixed-size files of token ids.

``encode_files`` reads text files (plain or ``.gz``) in blocks, encodes blocks on worker threads,
puts the separator token (``<|endoftext|>`` by default) between documents, and writes shards of
exactly ``shard_size`` ids (the last one shorter) as ``.npy`` or ``.bin``:

``.bin`` layout (little-endian): 8-byte magic ``b"FBPETOK\\0"``, uint32 format version (1),
uint32 bytes per id (2 for uint16, 4 for uint32), uint64 id count, 16 reserved zero bytes, then
the ids. :func:`read_shard` reads either format and checks it.

Atomic and resumable: every shard is written to a temporary name and renamed into place, then
``manifest.json`` (itself written atomically) records it with the input position it reached.
A rerun with the same tokenizer, files and options skips what the manifest lists and continues;
an interrupted run never leaves a half-written shard under a shard's name.

Blocks are cut at a newline between a non-space character and a letter: a chunk boundary of every built-in split
pattern (gpt2, cl100k, o200k, and the Llama 3 / Qwen ones), so the ids equal those of encoding
each document whole.
"""
import gzip
import hashlib
import json
import os
import struct
import time
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from .fileio import write_atomic
from .progress import wants_bar

__all__ = ["encode_files", "read_shard", "BIN_MAGIC", "MANIFEST", "FORMATS", "DOCUMENTS"]

BIN_MAGIC = b"FBPETOK\0"
BIN_VERSION = 1
BIN_HEADER = struct.Struct("<8sIIQ16x")  # magic, version, bytes per id, count, reserved
MANIFEST = "manifest.json"
FORMATS = ("npy", "bin")
DOCUMENTS = ("file", "blank-line", "line")
PathLike = Union[str, os.PathLike]


def _open_text(path: Path):
    """Text stream of a plain or gzip file (UTF-8; undecodable bytes are an error)."""
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    if gz:
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, "r", encoding="utf-8", newline="")


def _block_cut(text: str) -> int:
    """Where to end a block: just after the last newline with a non-space character before it
    and a letter after it (0 if there is none). Every built-in split pattern has a chunk
    boundary there whether or not the text goes on, so cutting changes no id.

    >>> _block_cut("one\\ntwo \\nthree")
    4
    """
    i = len(text)
    while True:
        i = text.rfind("\n", 0, i)
        if i <= 0:
            return 0
        if i + 1 < len(text) and text[i + 1].isalpha() and not text[i - 1].isspace():
            return i + 1


def _documents(text: str, documents: str) -> List[str]:
    """Split a block into document pieces; every piece but the last ends a document."""
    if documents == "file":
        return [text]
    if documents == "line":
        return text.split("\n")
    import regex

    return regex.split(r"\n{2,}", text)


Segment = Tuple[str, bool]  # (text, ends a document)


def _segments(files: Sequence[Path], documents: str, block_chars: int) -> Iterator[Segment]:
    """The input, in order, as text pieces of about ``block_chars`` characters."""
    for path in files:
        try:
            with _open_text(path) as f:
                carry = ""
                while True:
                    block = f.read(block_chars)
                    text = carry + block
                    if not block:
                        pieces = _documents(text, documents)
                        for piece in pieces:
                            yield piece, True
                        break
                    cut = _block_cut(text)
                    if cut == 0:
                        carry = text
                        continue
                    carry = text[cut:]
                    pieces = _documents(text[:cut], documents)
                    for piece in pieces[:-1]:
                        yield piece, True
                    yield pieces[-1], False
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text ({exc})") from None


def _fingerprint(tokenizer, files: Sequence[Path], options: dict) -> dict:
    tok_hash = hashlib.sha256(json.dumps(tokenizer.to_dict(), sort_keys=True).encode()).hexdigest()
    return {
        "tokenizer_sha256": tok_hash,
        "files": [{"path": str(p.resolve()), "size": p.stat().st_size, "mtime_ns": p.stat().st_mtime_ns}
                  for p in files],
        **options,
    }


def _write_shard(path: Path, ids: np.ndarray, fmt: str) -> None:
    if fmt == "npy":
        import io

        buf = io.BytesIO()
        np.save(buf, ids, allow_pickle=False)
        write_atomic(path, buf.getvalue())
    else:
        header = BIN_HEADER.pack(BIN_MAGIC, BIN_VERSION, ids.dtype.itemsize, len(ids))
        write_atomic(path, header + ids.astype(ids.dtype.newbyteorder("<"), copy=False).tobytes())


def read_shard(path: PathLike, mmap: bool = True) -> np.ndarray:
    """The ids of a ``.npy`` or ``.bin`` shard; ValueError for a damaged or foreign file."""
    path = Path(path)
    if path.suffix == ".npy":
        try:
            ids = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise ValueError(f"{path}: not a readable .npy shard ({exc})") from None
        if ids.ndim != 1 or ids.dtype not in (np.uint16, np.uint32):
            raise ValueError(f"{path}: expected a 1-D uint16/uint32 array, got {ids.dtype} {ids.shape}")
        return ids
    with open(path, "rb") as f:
        head = f.read(BIN_HEADER.size)
    if len(head) < BIN_HEADER.size:
        raise ValueError(f"{path}: truncated .bin shard (header is {len(head)} bytes)")
    magic, version, width, count = BIN_HEADER.unpack(head)
    if magic != BIN_MAGIC:
        raise ValueError(f"{path}: not a fastbpe .bin shard (bad magic {magic!r})")
    if version != BIN_VERSION:
        raise ValueError(f"{path}: unsupported .bin shard version {version}")
    if width not in (2, 4):
        raise ValueError(f"{path}: bad id width {width}")
    dtype = np.dtype("<u2" if width == 2 else "<u4")
    expected = BIN_HEADER.size + count * width
    if path.stat().st_size != expected:
        raise ValueError(f"{path}: size {path.stat().st_size} does not match its header ({expected} bytes)")
    if count == 0:
        return np.zeros(0, dtype=dtype)
    if mmap:
        return np.memmap(path, dtype=dtype, mode="r", offset=BIN_HEADER.size, shape=(count,))
    return np.fromfile(path, dtype=dtype, offset=BIN_HEADER.size)


class _ShardWriter:
    """Cuts the id stream into shards; each finished shard is renamed into place, then the
    manifest is rewritten to list it with the input position after its last id."""

    def __init__(self, out_dir: Path, manifest: dict, shard_size: int, fmt: str, dtype: np.dtype):
        self.out_dir, self.manifest, self.shard_size, self.fmt = out_dir, manifest, shard_size, fmt
        self.buffer = np.empty(shard_size, dtype=dtype)
        self.filled = 0
        self.total = manifest["tokens"]

    def add(self, ids: np.ndarray, segment: int, skip: int) -> None:
        """Append the ids of segment ``segment``, of which ``skip`` were already written."""
        position = skip
        while position < len(ids):
            take = min(self.shard_size - self.filled, len(ids) - position)
            self.buffer[self.filled:self.filled + take] = ids[position:position + take]
            self.filled += take
            position += take
            if self.filled == self.shard_size:
                if position == len(ids):
                    self.flush((segment + 1, 0))
                else:
                    self.flush((segment, position))

    def flush(self, resume_at: Tuple[int, int], final: bool = False) -> None:
        if self.filled == 0 and not final:
            return
        shards = self.manifest["shards"]
        if self.filled:
            name = f"shard_{len(shards):06d}.{self.fmt}"
            _write_shard(self.out_dir / name, self.buffer[:self.filled], self.fmt)
            shards.append({"file": name, "tokens": int(self.filled)})
            self.total += self.filled
            self.filled = 0
        self.manifest["tokens"] = int(self.total)
        self.manifest["resume_at"] = list(resume_at)
        self.manifest["complete"] = final
        write_atomic(self.out_dir / MANIFEST, json.dumps(self.manifest, indent=1).encode())


def encode_files(
    tokenizer,
    files: Sequence[PathLike],
    out_dir: PathLike,
    shard_size: int = 100_000_000,
    fmt: str = "npy",
    workers: Optional[int] = None,
    progress=None,
    *,
    documents: str = "file",
    separator: Optional[str] = "<|endoftext|>",
    block_chars: int = 4_000_000,
    resume: bool = True,
) -> dict:
    """Encode ``files`` into token shards in ``out_dir``; returns the manifest.

    ``documents``: what a document is: a ``"file"``, a ``"blank-line"``-separated block, or a
    ``"line"``. ``separator``: the special token put between documents (``None`` for none; a
    token the tokenizer lacks is a ValueError). Literal special-token text inside documents is
    encoded as ordinary text. ``resume``: continue a previous run with the same inputs and
    options (otherwise a non-empty ``out_dir`` with a manifest is an error).
    """
    files = [Path(f) for f in files]
    for path in files:
        if not path.is_file():
            raise ValueError(f"{path}: no such file")
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    if documents not in DOCUMENTS:
        raise ValueError(f"documents must be one of {DOCUMENTS}, got {documents!r}")
    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        raise ValueError(f"shard_size must be a positive int, got {shard_size!r}")
    if block_chars < 1:
        raise ValueError("block_chars must be positive")
    sep_id = None
    if separator is not None:
        if separator not in tokenizer.special_tokens:
            raise ValueError(f"the tokenizer has no special token {separator!r} to separate documents; "
                             f"pass separator=None or one of {sorted(tokenizer.special_tokens)}")
        sep_id = tokenizer.special_tokens[separator]
    workers = max(1, int(workers or os.cpu_count() or 1))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dtype = tokenizer.id_dtype
    options = {"shard_size": shard_size, "format": fmt, "documents": documents, "separator": separator,
               "block_chars": block_chars, "dtype": dtype.name}
    job = _fingerprint(tokenizer, files, options)
    manifest_path = out_dir / MANIFEST
    manifest = None
    if manifest_path.exists():
        try:
            manifest = json.loads(manifest_path.read_text())
        except (ValueError, OSError) as exc:
            raise ValueError(f"{manifest_path}: unreadable manifest ({exc}); remove it to start over") from None
        if not resume or manifest.get("job") != job:
            raise ValueError(f"{out_dir} already holds shards of another job (or resume=False); "
                             "use a new directory or delete it")
        try:
            for shard in manifest["shards"]:
                if len(read_shard(out_dir / shard["file"])) != shard["tokens"]:
                    raise ValueError(f"{out_dir / shard['file']}: does not match the manifest")
            int(manifest["tokens"]), list(manifest["resume_at"])
        except OSError as exc:
            raise ValueError(f"{manifest_path}: a shard it lists cannot be read ({exc}); remove the folder "
                             "to start over") from None
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{manifest_path}: malformed manifest ({exc!r}); remove the folder to start over") from None
        if manifest.get("complete"):
            return manifest
    if manifest is None:
        manifest = {"format": "fastbpe-shards", "version": 1, "job": job, "shards": [], "tokens": 0,
                    "resume_at": [0, 0], "complete": False}
    resume_segment, resume_offset = manifest["resume_at"]
    writer = _ShardWriter(out_dir, manifest, shard_size, fmt, dtype)

    bar = None
    if wants_bar(progress):
        from tqdm.auto import tqdm

        bar = tqdm(desc="encode", unit="MB", unit_scale=False, dynamic_ncols=True, bar_format=None)
    started = time.perf_counter()
    chars_done = 0

    def batches():
        """Groups of (segment index, text, starts a new non-empty document with a separator)."""
        batch = []
        emitted_any = False
        in_doc = False  # the current document already has text
        for index, (text, ends_doc) in enumerate(_segments(files, documents, block_chars)):
            needs_sep = bool(text) and not in_doc and emitted_any and sep_id is not None
            if text:
                in_doc = True
                emitted_any = True
            if ends_doc:
                in_doc = False
            if index < resume_segment:
                continue  # written by an earlier run
            batch.append((index, text, needs_sep))
            if len(batch) >= 2 * workers:
                yield batch
                batch = []
        if batch:
            yield batch

    last_index = resume_segment - 1
    for batch in batches():
        texts = [text for _, text, _ in batch]
        encoded = tokenizer.encode_batch(texts, workers=workers, disallowed_special=(), as_numpy=True)
        for (index, text, needs_sep), ids in zip(batch, encoded):
            if needs_sep:
                ids = np.concatenate([np.array([sep_id], dtype=dtype), ids])
            writer.add(ids, index, resume_offset if index == resume_segment else 0)
            last_index = index
            chars_done += len(text)
        if bar is not None:
            bar.update(sum(len(t) for t in texts) / 1e6)
            bar.set_postfix(tokens=f"{writer.total + writer.filled:,}", refresh=False)
    writer.flush((last_index + 1, 0), final=True)
    if bar is not None:
        bar.close()
    manifest["seconds"] = round(time.perf_counter() - started, 3)
    return manifest
