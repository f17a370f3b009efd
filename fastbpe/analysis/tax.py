"""The token tax: what the same content costs in tokens, language by language.

Petrov et al. (2023, "Language Model Tokenizers Introduce Unfairness Between Languages") define
the premium of a language as the tokens its text takes over the tokens the reference language
(English) takes for the same content: total tokens of the language / total tokens of the
reference, on the same rows of a parallel corpus. :func:`tax` measures it for several tokenizers
on a TSV with one language per column (a header row names them); :func:`tax_sweep` trains
tokenizers of one size on English mixed with a share of another language and measures the
premium of that language against the share.
"""
import os
import re
import sys
from itertools import islice
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .common import (check_labels, pyplot, read_texts, text_lines, resolve_tokenizer, save_figure, tokenizer_labels,
                     utf8_prefix)

__all__ = ["tax", "tax_sweep", "read_parallel", "premium_table", "DEFAULT_SHARES"]

PathLike = Union[str, os.PathLike]
DEFAULT_SHARES = (0.0, 0.01, 0.05, 0.2, 0.5)
# A column is a language when its header is a language code: ``en``, ``zh_CN``, ``pt-BR``, ``yue``.
_LANGUAGE = re.compile(r"[a-z]{2,3}(?:[_-][A-Za-z]{2,4})?")
_ESCAPE = re.compile(r"\\(.)")
_UNESCAPED = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}


def _unescape(cell: str) -> str:
    r"""A cell's text: ``\t``, ``\n``, ``\r`` and ``\\`` escapes undone (other backslashes kept).

    >>> _unescape(r"a\tb\\n\n")
    'a\tb\\n\n'
    """
    if "\\" not in cell:
        return cell
    return _ESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), m.group(0)), cell)


def read_parallel(path: PathLike, rows: Optional[int] = None) -> Tuple[List[str], List[List[str]]]:
    """The header and the first ``rows`` rows (all when None) of a parallel TSV: one column per
    language, a header row naming them, cells escaped (``\\t``, ``\\n``, ``\\r``, ``\\\\``); an empty
    cell means no translation. Plain, .gz, .xz or .bz2; a leading byte-order mark is dropped."""
    lines = text_lines(path)
    try:
        # (a byte-order mark, as spreadsheet programs write, is no part of the first column's name)
        header_line = next(lines, "").removeprefix("\ufeff")
        if not header_line.strip():
            raise ValueError(f"{os.fspath(path)}: no header row (a TSV naming one language per column)")
        header = header_line.rstrip("\r\n").split("\t")
        if len(set(header)) != len(header):
            raise ValueError(f"{os.fspath(path)}: the header names a column twice")
        table = []
        # (a count past what islice takes is every row there is)
        for number, line in enumerate(islice(lines, None if rows is None else min(rows, sys.maxsize)), start=2):
            cells = line.rstrip("\r\n").split("\t")
            if len(cells) != len(header):
                raise ValueError(f"{os.fspath(path)}, line {number}: {len(cells)} cells for {len(header)} columns")
            table.append([_unescape(c) for c in cells])
    finally:
        lines.close()
    return header, table


def _parallel_table(corpus, rows: Optional[int]) -> Tuple[List[str], List[Sequence[str]]]:
    """``(header, rows)`` of a corpus given as a TSV path (:func:`read_parallel`) or as that
    pair already, checked alike: each column named once, every row a cell per column."""
    if isinstance(corpus, (str, os.PathLike)):
        return read_parallel(corpus, rows)
    header, table = corpus
    header, table = list(header), list(table)[:rows]
    if len(set(header)) != len(header):
        raise ValueError("the header names a column twice")
    for number, row in enumerate(table):
        if len(row) != len(header):
            raise ValueError(f"row {number}: {len(row)} cells for {len(header)} columns")
    return header, table


def _languages(header: Sequence[str], reference: str, languages: Optional[Sequence[str]]) -> List[str]:
    if isinstance(languages, str):
        languages = [languages]  # one language, not its letters
    if reference not in header:
        raise ValueError(f"the reference column {reference!r} is not in the header ({', '.join(header)})")
    if languages is None:
        languages = [c for c in header if _LANGUAGE.fullmatch(c)]
    missing = [lang for lang in languages if lang not in header]
    if missing:
        raise ValueError(f"no column {missing[0]!r} in the header ({', '.join(header)})")
    return [reference] + [lang for lang in languages if lang != reference]


def _token_counts(tokenizer, texts: List[str], workers: Optional[int]) -> np.ndarray:
    """Tokens of each text (special-token strings are ordinary text here)."""
    # lists, not arrays: on texts of a few words an array per text costs more than the encoding
    ids = tokenizer.encode_batch(texts, workers=workers, disallowed_special=())
    return np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))


def tax(tokenizers: Sequence[Any], corpus: Union[PathLike, Tuple[Sequence[str], Sequence[Sequence[str]]]], *,
        reference: str = "en", languages: Optional[Sequence[str]] = None, rows: Optional[int] = None,
        labels: Optional[Sequence[str]] = None, complete: bool = False,
        workers: Optional[int] = None) -> Dict[str, Any]:
    """The token tax of each language for each tokenizer, on a parallel corpus.

    ``tokenizers``: names, paths or Tokenizers. ``corpus``: a TSV path (:func:`read_parallel`)
    or ``(header, rows)``. For each language, the rows where both it and the ``reference`` have
    text: the tokens, bytes and characters of each, tokens per row, bytes and characters per
    token, and the premium (tokens of the language / tokens of the reference on those rows,
    Petrov et al. 2023). ``labels``: the tokenizers' names, one each (default: their file or
    encoding names, with the folders above where two coincide, :func:`tokenizer_labels`).
    ``complete``: only the rows where every measured language has text,
    so that every premium is taken on the same content. Returns ``{"reference", "rows", "languages", "tokenizers", "results"}``,
    ``results`` one dict per (tokenizer, language).
    """
    header, table = _parallel_table(corpus, rows)
    columns = _languages(header, reference, languages)
    if not table:
        raise ValueError("the corpus has no rows")
    labels = list(labels) if labels is not None else tokenizer_labels(tokenizers)
    if len(labels) != len(tokenizers):
        raise ValueError("give one label per tokenizer")
    check_labels(labels, tokenizers)
    index = {name: header.index(name) for name in columns}
    if complete:
        table = [row for row in table if all(row[index[name]] for name in columns)]
        if not table:
            raise ValueError(f"no row has text in every column of {', '.join(columns)}")
    cells = {name: [row[index[name]] for row in table] for name in columns}
    present = {name: np.array([bool(c) for c in cells[name]]) for name in columns}
    chars = {name: np.fromiter(map(len, cells[name]), dtype=np.int64) for name in columns}
    nbytes = {name: np.fromiter((len(c.encode("utf-8", "surrogatepass")) for c in cells[name]), dtype=np.int64)
              for name in columns}
    results = []
    for label, spec in zip(labels, tokenizers):
        tokenizer = resolve_tokenizer(spec)
        counts = {name: _token_counts(tokenizer, cells[name], workers) for name in columns}
        for name in columns:
            same = present[name] & present[reference]
            tokens = int(counts[name][same].sum())
            reference_tokens = int(counts[reference][same].sum())
            n = int(same.sum())
            b, c = int(nbytes[name][same].sum()), int(chars[name][same].sum())
            results.append({
                "tokenizer": label,
                "language": name,
                "rows": n,
                "tokens": tokens,
                "reference_tokens": reference_tokens,
                "bytes": b,
                "chars": c,
                "tokens_per_row": tokens / n if n else float("nan"),
                "bytes_per_token": b / tokens if tokens else float("nan"),
                "chars_per_token": c / tokens if tokens else float("nan"),
                "premium": tokens / reference_tokens if reference_tokens else float("nan"),
            })
    return {"reference": reference, "rows": len(table), "complete": bool(complete), "languages": columns,
            "tokenizers": labels, "results": results}


def premium_table(result: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per language, one premium column per tokenizer (the table Petrov et al. print)."""
    by = {(r["tokenizer"], r["language"]): r for r in result["results"]}
    rows = []
    for lang in result["languages"]:
        row: Dict[str, Any] = {"language": lang, "rows": by[(result["tokenizers"][0], lang)]["rows"]}
        for label in result["tokenizers"]:
            row[label] = by[(label, lang)]["premium"]
        rows.append(row)
    return rows


def plot_premiums(result: Dict[str, Any], path: PathLike) -> None:
    """A grouped bar chart: the premium of each language, one bar per tokenizer."""
    plt = pyplot()
    languages = [lang for lang in result["languages"] if lang != result["reference"]]
    labels = result["tokenizers"]
    by = {(r["tokenizer"], r["language"]): r["premium"] for r in result["results"]}
    width = 0.8 / max(len(labels), 1)
    figure, axis = plt.subplots(figsize=(max(6, 0.9 * len(languages) * max(1, len(labels) / 3)), 4))
    for k, label in enumerate(labels):
        xs = np.arange(len(languages)) + (k - (len(labels) - 1) / 2) * width
        axis.bar(xs, [by[(label, lang)] for lang in languages], width, label=label)
    axis.axhline(1.0, color="black", linewidth=0.8)
    axis.set_xticks(np.arange(len(languages)), languages)
    axis.set_ylabel(f"tokens / tokens of {result['reference']} (same rows)")
    axis.set_title("token premium (Petrov et al. 2023)")
    axis.legend(fontsize=8)
    axis.grid(axis="y", alpha=0.3)
    save_figure(figure, path)


def _is_text(source) -> bool:
    """Whether ``source`` is a text rather than a file's path: a str that names no file and
    cannot be a path (it holds whitespace, and is no path into an existing folder). A str that
    could be a path to nothing is a FileNotFoundError: a misspelt name, never read as text.

    >>> _is_text("Saya suka makan nasi."), _is_text(os.devnull)
    (True, False)
    """
    if not isinstance(source, str) or os.path.exists(source):
        return False
    folder = os.path.dirname(source) if "\n" not in source else ""
    if any(c.isspace() for c in source) and not (folder and os.path.isdir(folder)):
        return True
    raise FileNotFoundError(f"no such file: {source[:200]!r} (a text given in its place holds whitespace)")


def _read_prefix(source, size: int) -> str:
    """The first ``size`` bytes of a file (plain or compressed) or of a text (:func:`_is_text`)."""
    if _is_text(source):
        text = source
    else:
        text = "".join(read_texts([source], size))
    return utf8_prefix(text, size)


def _lines_not_in(source, held_out: set, size: int) -> Tuple[List[str], int]:
    """Lines of a file or text, those in ``held_out`` skipped, until ``size`` bytes are kept (or
    the source ends); and how many lines were skipped."""
    lines = source.splitlines(keepends=True) if _is_text(source) else text_lines(source)
    kept, skipped, total = [], 0, 0
    for line in lines:
        if total >= size:
            break
        if line.rstrip("\r\n") in held_out:
            skipped += 1
            continue
        kept.append(line)
        total += len(line.encode("utf-8", "surrogatepass"))
    if hasattr(lines, "close"):
        lines.close()
    return kept, skipped


def tax_sweep(english, other, corpus, *, language: str = "ms", reference: str = "en", vocab_size: int = 8192,
              train_bytes: int = 2_000_000, shares: Sequence[float] = DEFAULT_SHARES, rows: Optional[int] = None,
              pattern: str = "gpt2", workers: Optional[int] = None) -> Dict[str, Any]:
    """Train one tokenizer of ``vocab_size`` per share: ``train_bytes`` of text, that share of it
    from ``other`` (the ``language``) and the rest from ``english``, and measure the premium of
    ``language`` against ``reference`` on the parallel ``corpus``.

    ``english`` and ``other``: paths (read from the start) or texts (:func:`_is_text`: a
    misspelt path is a FileNotFoundError, not a text). Lines of ``other`` that are
    cells of the ``language`` column of the evaluated rows are left out of training, so that the
    premium is measured on text the tokenizer never saw. Returns ``{"points": [...]}``, each with
    the share asked, the bytes actually trained on from each side, and, on the rows where both
    languages have text, the tokens per row of each and the premium (their ratio).
    """
    from ..learn.train import train

    if not shares:
        raise ValueError("give at least one share")
    if any(not 0.0 <= s < 1.0 for s in shares):
        raise ValueError(f"shares are fractions in [0, 1), got {list(shares)}")
    for name, source in (("english", english), ("other", other)):
        try:
            _is_text(source)  # (before the corpus is read)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{name}: {exc}") from None
    header, table = _parallel_table(corpus, rows)
    _languages(header, reference, [language])
    held_out = {row[header.index(language)] for row in table}
    other_lines, skipped = _lines_not_in(other, held_out, int(train_bytes * max(shares)))
    english_text = _read_prefix(english, train_bytes)
    points = []
    for share in shares:
        want = int(train_bytes * share)
        picked, size = [], 0
        for line in other_lines:
            if size >= want:
                break
            picked.append(line)
            size += len(line.encode("utf-8", "surrogatepass"))
        mixed_other = "".join(picked)
        english_part = utf8_prefix(english_text, train_bytes - size)
        texts = [t for t in (english_part, mixed_other) if t]
        tokenizer = train(iter(texts), vocab_size, pattern=pattern, progress=False, workers=workers)
        measured = tax([tokenizer], (header, table), reference=reference, languages=[language],
                       labels=[f"{share:g}"], workers=workers)
        measure = next(r for r in measured["results"] if r["language"] == language)
        rows_measured = measure["rows"]
        points.append({
            "share": share,
            "other_bytes": size,
            "english_bytes": len(english_part.encode("utf-8", "surrogatepass")),
            "vocab_size": tokenizer.vocab_size,
            "rows": rows_measured,
            # on the rows of the premium (both languages have text), not every row of the
            # reference: so that the premium is the ratio of the two tokens per row shown
            "reference_tokens_per_row": measure["reference_tokens"] / rows_measured if rows_measured else float("nan"),
            "tokens_per_row": measure["tokens_per_row"],
            "premium": measure["premium"],
        })
    return {"language": language, "reference": reference, "vocab_size": vocab_size, "train_bytes": train_bytes,
            "held_out_lines": skipped, "points": points}


def plot_sweep(result: Dict[str, Any], path: PathLike) -> None:
    """The premium of the language against its share of the training text."""
    plt = pyplot()
    points = result["points"]
    figure, axis = plt.subplots(figsize=(6, 3.6))
    xs = np.arange(len(points))
    axis.plot(xs, [p["premium"] for p in points], marker="o")
    axis.set_xticks(xs, [f"{100 * p['share']:g}%" for p in points])
    axis.axhline(1.0, color="black", linewidth=0.8)
    axis.set_xlabel(f"share of {result['language']} in the training text")
    axis.set_ylabel(f"premium of {result['language']} over {result['reference']}")
    axis.set_title(f"token premium against the training mix (vocab {result['vocab_size']:,})")
    axis.grid(alpha=0.3)
    save_figure(figure, path)
