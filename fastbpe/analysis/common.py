"""What every analysis shares: naming a tokenizer, printing a table, and drawing a plot.

* :func:`resolve_tokenizer` (its home is :mod:`fastbpe.encode.registry`, which the commands
  that do no analysis import): a path is read with :func:`fastbpe.load` (a folder or file of
  GPT-2's ``encoder.json`` + ``vocab.bpe`` too); any other text is the name of an OpenAI
  encoding (``cl100k_base``...; ``gpt2`` is ``r50k_base``, the same ranks).
* :func:`tokenizer_labels`: the names of several tokenizers in a table, one each.
* :func:`format_table`: rows of dicts as an aligned text table, numbers right-aligned.
* :func:`pyplot`: matplotlib, imported only when a plot is asked for (it is optional).
"""
import codecs
import json
import math
import os
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ..corpus.files import decode_error, input_files, open_bytes, read_pieces
from ..encode.registry import NAME_ALIASES, resolve_tokenizer
from ..encode.tokenizer import Tokenizer
from ..fileio import check_regular_file, write_atomic

__all__ = ["resolve_tokenizer", "tokenizer_label", "tokenizer_labels", "check_labels", "format_table", "pyplot",
           "save_figure", "json_text", "text_lines", "read_texts", "cut_texts", "utf8_cut", "utf8_prefix",
           "NAME_ALIASES"]

PathLike = Union[str, os.PathLike]

def tokenizer_label(name_or_path: Union[PathLike, Tokenizer]) -> str:
    """A short name for a table's row or a plot's legend: the encoding name, or the file's (or
    its folder's, for ``tokenizer.json`` and GPT-2's files) name without its extension.

    >>> tokenizer_label("cl100k_base"), tokenizer_label("models/llama3/tokenizer.json")
    ('cl100k_base', 'llama3')
    >>> tokenizer_label("runs/mine.fastbpe.json"), tokenizer_label("o200k_base.tiktoken")
    ('mine', 'o200k_base')
    """
    if isinstance(name_or_path, Tokenizer):
        return f"tokenizer({name_or_path.vocab_size})"
    path = Path(name_or_path)
    if path.name in ("tokenizer.json", "encoder.json", "vocab.bpe") and path.parent.name:
        return path.parent.name
    name = path.name
    for suffix in (".fastbpe.json", ".tiktoken", ".json"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name or os.fspath(name_or_path)


def _folders_above(name_or_path: Union[PathLike, Tokenizer]) -> Tuple[str, ...]:
    """The folders of a path above the part :func:`tokenizer_label` names it by (none for an
    encoding name or a Tokenizer)."""
    if isinstance(name_or_path, Tokenizer):
        return ()
    path = Path(name_or_path)
    above = path.parent
    if path.name in ("tokenizer.json", "encoder.json", "vocab.bpe") and path.parent.name:
        above = above.parent
    return tuple(part for part in above.parts if part != above.anchor)


def tokenizer_labels(tokenizers: Sequence[Union[PathLike, Tokenizer]]) -> List[str]:
    """:func:`tokenizer_label` of each tokenizer, made unique: the tokenizers whose labels
    coincide take the folders above, one at a time, until they differ (a table keyed by label
    would otherwise keep only the last of them). Labels that cannot differ (the same path twice,
    two Tokenizers of one size) stay alike: :func:`check_labels` refuses them.

    >>> tokenizer_labels(["e1/final/tokenizer.json", "e2/final/tokenizer.json", "cl100k_base"])
    ['e1/final', 'e2/final', 'cl100k_base']
    """
    base = [tokenizer_label(t) for t in tokenizers]
    above = [_folders_above(t) for t in tokenizers]
    taken = [0] * len(base)  # folders each label has taken so far
    whole = ["/".join(above[i] + (base[i],)) for i in range(len(base))]  # every folder taken

    def label(i: int) -> str:
        return "/".join(above[i][len(above[i]) - taken[i]:] + (base[i],))

    while True:
        labels = [label(i) for i in range(len(base))]
        # (a label alike only to the same path's stays short: no folder would tell them apart)
        longer = [i for i in range(len(base)) if taken[i] < len(above[i]) and any(
            labels[j] == labels[i] and whole[j] != whole[i] for j in range(len(base)))]
        if not longer:
            return labels
        for i in longer:
            taken[i] += 1


def check_labels(labels: Sequence[str], tokenizers: Sequence[Any], advice: str = "give each its own label") -> None:
    """Refuse a label given to two tokenizers: their columns of a table would be one.
    ``advice``: what the error tells the caller to do (the command line's way of naming).

    >>> check_labels(["a", "a"], ["r50k_base", "o200k_base"])
    Traceback (most recent call last):
    ...
    ValueError: 2 tokenizers are labelled 'a' ('r50k_base', 'o200k_base'): give each its own label
    """
    for name in dict.fromkeys(labels):
        named = [t for t, other in zip(tokenizers, labels) if other == name]
        if len(named) > 1:
            shown = ", ".join(repr(os.fspath(t)) if isinstance(t, (str, os.PathLike)) else type(t).__name__
                              for t in named)
            raise ValueError(f"{len(named)} tokenizers are labelled {name!r} ({shown}): {advice}")


def text_lines(path: PathLike) -> Iterator[str]:
    """The lines of a UTF-8 text file, plain or compressed (gz, xz, bz2, zst: known by its
    first bytes), each with its ``\\n``; read a megabyte at a time."""
    if os.path.isdir(path):
        raise ValueError(f"{os.fspath(path)} is a folder; give a file")
    check_regular_file(path)
    reader, raw = open_bytes(os.fspath(path))
    decoder = codecs.getincrementaldecoder("utf-8")()
    read = 0  # bytes handed to the decoder so far, for the offset of invalid UTF-8
    try:
        rest = ""
        for piece in read_pieces(reader, 1 << 20):
            lines = (rest + _decode(decoder, piece, path, read)).split("\n")
            read += len(piece)
            rest = lines.pop()
            for line in lines:
                yield line + "\n"
        rest += _decode(decoder, b"", path, read, final=True)
        if rest:
            yield rest
    finally:
        reader.close()
        raw.close()


def _decode(decoder, piece: bytes, path: PathLike, read: int, final: bool = False) -> str:
    """``decoder.decode(piece)``; invalid UTF-8 is a CorpusDecodeError naming the file and the
    byte offset, like every corpus reader's."""
    held = len(decoder.getstate()[0])  # the start of a character cut by the previous piece
    try:
        return decoder.decode(piece, final)
    except UnicodeDecodeError as exc:
        raise decode_error(os.fspath(path), read - held + exc.start, exc.object[exc.start:exc.start + 1]) from None


def read_texts(paths: Union[PathLike, Sequence[PathLike]], limit: Optional[int] = None) -> List[str]:
    """The texts of files (folders and globs expanded) in pieces of whole lines, about a
    megabyte each, up to ``limit`` bytes in all (whole lines; None: everything)."""
    pieces: List[str] = []
    part: List[str] = []
    size = total = 0
    for path in input_files(paths):
        for line in text_lines(path):
            if limit is not None and total >= limit:
                break
            n = len(line.encode("utf-8", "surrogatepass"))
            part.append(line)
            size += n
            total += n
            if size >= 1 << 20:
                pieces.append("".join(part))
                part, size = [], 0
    if part:
        pieces.append("".join(part))
    return pieces


def utf8_cut(data: bytes, size: int) -> bytes:
    """The first ``size`` bytes of UTF-8 ``data``, less the start of a character cut in two
    (continuation bytes are 10xxxxxx; a character has at most 3 of them). Bytes that are not
    UTF-8 are left as they are, for the reader to name.

    >>> utf8_cut("你好".encode(), 4), utf8_cut(b"abc", 2)
    (b'\xe4\xbd\xa0', b'ab')
    """
    end = size
    while size - 3 < end < len(data) and 0x80 <= data[end] < 0xC0:
        end -= 1
    return data[:end]


def utf8_prefix(text: str, size: int) -> str:
    """The first ``size`` bytes of ``text``'s UTF-8 (a character cut in two is dropped).

    >>> utf8_prefix("naïve", 3), utf8_prefix("naïve", 4)
    ('na', 'naï')
    """
    return utf8_cut(text.encode("utf-8", "surrogatepass"), size).decode("utf-8", "ignore")


def cut_texts(texts: Sequence[str], size: int) -> List[str]:
    r"""The texts, in order, up to ``size`` bytes of UTF-8 in all: the one that crosses it cut at
    a character boundary, those after it left out.

    >>> cut_texts(["one\n", "two\n"], 6)
    ['one\n', 'tw']
    """
    out: List[str] = []
    for text in texts:
        n = len(text.encode("utf-8", "surrogatepass"))
        if n > size:
            if size:
                out.append(utf8_prefix(text, size))
            break
        out.append(text)
        size -= n
    return out


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def format_table(rows: Sequence[Mapping[str, Any]], columns: Optional[Sequence[str]] = None,
                 headers: Optional[Mapping[str, str]] = None) -> str:
    """An aligned text table: a header line, then one line per row; numbers right-aligned
    (ints with thousands separators, floats to 3 decimals, NaN as ``-``).

    >>> print(format_table([{"lang": "en", "tokens": 1200}, {"lang": "ms", "tokens": 15}]))
    lang  tokens
    en     1,200
    ms        15
    """
    if columns is None:
        columns = list(dict.fromkeys(key for row in rows for key in row))
    headers = dict(headers or {})
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    titles = [headers.get(c, c) for c in columns]
    widths = [max([len(t)] + [len(line[i]) for line in cells]) for i, t in enumerate(titles)]
    numeric = [all(isinstance(row.get(c), (int, float)) and not isinstance(row.get(c), bool)
                   for row in rows if row.get(c) is not None) for c in columns]

    def line(values: Iterable[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "  ".join(parts).rstrip()

    return "\n".join([line(titles)] + [line(c) for c in cells])


def json_text(result: Mapping[str, Any]) -> str:
    """One JSON object on one line (NaN written as null, as JSON has no NaN)."""
    def clean(value):
        if isinstance(value, float) and math.isnan(value):
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return value

    return json.dumps(clean(result), ensure_ascii=False)


def pyplot():
    """``matplotlib.pyplot`` on the file-only Agg backend; a clear ImportError without it."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install matplotlib "
                          "(or pip install 'fastbpe[analysis]')") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure, path: PathLike, **options) -> None:
    """Save a figure in the format its name says (``.pdf``, ``.svg``; else PNG) through a
    temporary file, then close it (no half-written image). ``options``: ``savefig``'s."""
    import io

    buffer = io.BytesIO()
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    figure.savefig(buffer, format=suffix[1:] if suffix in (".pdf", ".svg") else "png", dpi=110,
                   **{"bbox_inches": "tight", **options})
    pyplot().close(figure)
    write_atomic(path, buffer.getvalue())


def as_dict(rows: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    return [dict(row) for row in rows]
