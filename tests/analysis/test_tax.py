"""The token tax (Petrov et al. 2023): the premium is the language's tokens over the
reference's on the same rows, computed here against plain per-row encoding."""
import gzip

import pytest

import fastbpe
from fastbpe.analysis import read_parallel, tax, tax_sweep
from fastbpe.analysis.tax import premium_table

ROWS = [
    ("1", "the cat sat", "kucing itu duduk", "கதை"),
    ("2", "on the mat", "", "பாய்"),
    ("3", "a dog ran\\tfast", "anjing itu berlari\\npantas", ""),
    ("4", "", "tiada", "இல்லை"),
]


def write_tsv(path, rows=ROWS, header=("domain", "en", "ms", "ta")):
    text = "\t".join(header) + "\n" + "".join("\t".join(r) + "\n" for r in rows)
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def small_tokenizer():
    return fastbpe.train(text="the cat sat on the mat. a dog ran fast. kucing itu duduk " * 20, vocab_size=300,
                         progress=False)


def test_read_parallel_unescapes_cells(tmp_path):
    header, rows = read_parallel(write_tsv(tmp_path / "p.tsv.gz"))
    assert header == ["domain", "en", "ms", "ta"]
    assert rows[2][1] == "a dog ran\tfast" and rows[2][2] == "anjing itu berlari\npantas"
    assert read_parallel(write_tsv(tmp_path / "p.tsv"), rows=2)[1] == [list(r) for r in ROWS[:2]]


def test_premium_is_tokens_over_reference_tokens_on_the_same_rows(tmp_path, small_tokenizer):
    result = tax([small_tokenizer], write_tsv(tmp_path / "p.tsv"), labels=["t"])
    header, rows = read_parallel(tmp_path / "p.tsv")
    assert result["languages"] == ["en", "ms", "ta"]  # "domain" is not a language code
    by = {r["language"]: r for r in result["results"]}
    for lang, col in (("ms", 2), ("ta", 3), ("en", 1)):
        same = [r for r in rows if r[col] and r[1]]
        tokens = sum(len(small_tokenizer.encode(r[col])) for r in same)
        reference = sum(len(small_tokenizer.encode(r[1])) for r in same)
        assert by[lang]["rows"] == len(same)
        assert by[lang]["tokens"] == tokens and by[lang]["reference_tokens"] == reference
        assert by[lang]["premium"] == tokens / reference
        assert by[lang]["bytes_per_token"] == sum(len(r[col].encode()) for r in same) / tokens
    assert by["en"]["premium"] == 1.0
    assert premium_table(result)[1] == {"language": "ms", "rows": 2, "t": by["ms"]["premium"]}


def test_complete_rows_and_bytes_without_merges(tmp_path):
    """A tokenizer without merges makes one token per byte: the premium is the byte ratio."""
    bytes_only = fastbpe.Tokenizer([bytes([b]) for b in range(256)], [])
    result = tax([bytes_only], write_tsv(tmp_path / "p.tsv"), complete=True)
    assert result["rows"] == 1  # only row 1 has every language
    by = {r["language"]: r for r in result["results"]}
    assert by["ta"]["premium"] == len("கதை".encode()) / len("the cat sat")
    assert by["ta"]["bytes_per_token"] == 1.0


def test_bad_corpora(tmp_path, small_tokenizer):
    with pytest.raises(ValueError, match="reference column 'en'"):
        tax([small_tokenizer], write_tsv(tmp_path / "de.tsv", header=("domain", "de", "ms", "ta")))
    (tmp_path / "ragged.tsv").write_text("en\tms\na\tb\nc\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 3"):
        read_parallel(tmp_path / "ragged.tsv")
    with pytest.raises(ValueError, match="no column 'xx'"):
        tax([small_tokenizer], write_tsv(tmp_path / "p.tsv"), languages=["xx"])
    # the same checks for a table given as (header, rows)
    with pytest.raises(ValueError, match="names a column twice"):
        tax([small_tokenizer], (["en", "en"], [["a", "b"]]))
    with pytest.raises(ValueError, match="row 1: 1 cells for 2 columns"):  # (was an IndexError)
        tax([small_tokenizer], (["en", "ms"], [["a", "b"], ["c"]]))
    one = tax([small_tokenizer], (["en", "ms"], [["the cat", "kucing itu"]]), languages="ms")  # (read as "m", "s")
    assert [r["language"] for r in one["results"]] == ["en", "ms"]


def test_tamil_pays_more_than_indonesian(shared_data, gpt2, cl100k):
    """The shared tokenizers on real parallel rows: Tamil's premium over English is far above
    Indonesian's (a Latin script) for GPT-2, and cl100k's larger vocabulary cuts it."""
    corpus = shared_data.path("parallel_multi.tsv.gz")
    result = tax([gpt2, cl100k], corpus, languages=["id", "ta"], rows=400, labels=["gpt2", "cl100k"])
    p = {(r["tokenizer"], r["language"]): r["premium"] for r in result["results"]}
    assert p[("gpt2", "ta")] > 3 * p[("gpt2", "id")] > 3
    assert p[("cl100k", "ta")] < p[("gpt2", "ta")]


def test_sweep_mixing_a_language_in_lowers_its_premium(tmp_path):
    """Made-up languages keep it small: English-like words and a language whose words share none
    of their pieces. With half the training text in it, its premium falls."""
    english = " ".join(["the quick brown fox jumps over the lazy dog"] * 300)
    other_rows = ["zyxq vwut zyxq srqp", "vwut srqp onml", "zyxq onml vwut", "srqp zyxq onml kjih"]
    rows = [(str(i), "the lazy dog jumps", other_rows[i % 4]) for i in range(40)]
    corpus = write_tsv(tmp_path / "p.tsv", rows, header=("domain", "en", "zz"))
    other = "\n".join(f"{w} kjih onml" for w in ("zyxq vwut", "srqp zyxq", "vwut onml")) * 200
    result = tax_sweep(english, other, corpus, language="zz", vocab_size=300, train_bytes=12_000,
                       shares=(0.0, 0.5))
    none, half = result["points"]
    assert none["other_bytes"] == 0 and half["other_bytes"] >= 6000
    assert half["premium"] < none["premium"]
    assert none["english_bytes"] + none["other_bytes"] <= 12_000


def test_sweep_refuses_a_misspelt_path_and_reads_a_text(tmp_path):
    """A str that could be a path to nothing is a FileNotFoundError naming its argument, before
    any work (it was trained on as a text of its own letters); a str with whitespace is a text."""
    corpus = write_tsv(tmp_path / "p.tsv", [("the lazy dog", "zyxq vwut")] * 20, header=("en", "zz"))
    english = " ".join(["the quick brown fox jumps over the lazy dog"] * 100)
    with pytest.raises(FileNotFoundError, match="english: no such file: 'englsh.txt.gz'"):
        tax_sweep("englsh.txt.gz", "zyxq onml\n" * 50, corpus, language="zz", vocab_size=300, shares=(0.0,))
    with pytest.raises(FileNotFoundError, match="other: no such file"):
        tax_sweep(english, str(tmp_path / "mallay.txt"), corpus, language="zz", vocab_size=300, shares=(0.0,))
    (point,) = tax_sweep(english, "zyxq onml\n" * 50, corpus, language="zz", vocab_size=300, train_bytes=4000,
                         shares=(0.5,))["points"]
    assert point["other_bytes"] > 0 and point["english_bytes"] > 0


def test_plot_is_a_png(tmp_path, small_tokenizer):
    pytest.importorskip("matplotlib", reason="plots need matplotlib (an optional dependency)")
    from fastbpe.analysis.tax import plot_premiums

    result = tax([small_tokenizer], write_tsv(tmp_path / "p.tsv"))
    plot_premiums(result, tmp_path / "tax.png")
    assert (tmp_path / "tax.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_label_given_to_two_tokenizers_is_refused(tmp_path, small_tokenizer):
    """Each label is a column of the premium table: two tokenizers under one would be one."""
    corpus = write_tsv(tmp_path / "p.tsv")
    bytes_only = fastbpe.Tokenizer([bytes([b]) for b in range(256)], [])
    with pytest.raises(ValueError, match="2 tokenizers are labelled 'a'"):
        tax([small_tokenizer, bytes_only], corpus, labels=["a", "a"])
    with pytest.raises(ValueError, match=r"labelled 'tokenizer\(256\)'"):  # (default labels alike)
        tax([bytes_only, bytes_only], corpus)


def test_sweep_measures_the_reference_on_the_rows_of_the_premium(tmp_path):
    """Rows without the other language count for neither side: the premium is the ratio of the
    two tokens per row reported (the English of the other rows, much shorter, is left out)."""
    rows = [(str(i), "the lazy dog jumps over the quick fox" if i % 2 else "a", "zyxq onml" if i % 2 else "")
            for i in range(20)]
    corpus = write_tsv(tmp_path / "p.tsv", rows, header=("domain", "en", "zz"))
    english = " ".join(["the quick brown fox jumps over the lazy dog"] * 100)
    (point,) = tax_sweep(english, "zyxq onml kjih\n" * 50, corpus, language="zz", vocab_size=300,
                         train_bytes=2000, shares=(0.0,))["points"]
    assert point["rows"] == 10
    assert point["premium"] == pytest.approx(point["tokens_per_row"] / point["reference_tokens_per_row"], rel=1e-12)


def test_a_byte_order_mark_is_not_part_of_the_header(tmp_path, small_tokenizer):
    plain = write_tsv(tmp_path / "p.tsv")
    marked = tmp_path / "bom.tsv"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert read_parallel(marked) == read_parallel(plain)
    first = write_tsv(tmp_path / "en-first.tsv", [r[1:] for r in ROWS], header=("en", "ms", "ta"))
    (tmp_path / "en-first-bom.tsv").write_bytes(b"\xef\xbb\xbf" + first.read_bytes())
    assert tax([small_tokenizer], tmp_path / "en-first-bom.tsv") == tax([small_tokenizer], first)
