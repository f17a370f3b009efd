"""Reporting: the markdown tables, the JSON of every run, the plots, and the READMEs' figures.

``render(results, sizes)`` makes the report from a results dict (what ``peers.json`` holds), so a
saved run is re-rendered without re-running it:

    python -m benchmarks.peers.report                  # peers.md + PNGs beside benchmarks/results/peers.json
    python -m benchmarks.peers.report RUN/peers.json --out DIR
    python -m benchmarks.peers.report --readme         # the figures in README.md and benchmarks/README.md
    python -m benchmarks.peers.report --check          # exit 1 when a README differs from the results

The READMEs quote no number by hand: every figure they show sits between
``<!-- begin generated: NAME ... -->`` and ``<!-- end generated: NAME -->`` and is written by
:func:`readme_blocks` from the committed ``benchmarks/results/peers.json``
(``tests/benchmarks/test_readme_figures.py`` fails when they drift apart).
"""
import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Tuple

from ..suites import common
from .adapters import LABELS, SETTINGS


def _fmt_s(x: float) -> str:
    return f"{x:.3g} s" if x >= 0.1 else f"{x * 1000:.3g} ms"


def train_table(results: dict, sizes: List[int]) -> List[str]:
    """One row per library and corpus size; ratios to fastbpe (the HF merge estimate: to fastbpe's merge phase)."""
    lines = ["| corpus | library | settings | vocab | median | min–max | peak RSS | MB/s | time ÷ fastbpe | agreement |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for nbytes in sizes:
        rows = results["train"][str(nbytes)]
        base = rows.get("fastbpe", {})
        for lib, s in rows.items():
            label = LABELS.get(lib, lib)
            if not s["ok"]:
                lines.append(f"| {common.format_size(nbytes)} | {label} | {SETTINGS.get(lib, '')} | — | — | — | — | — | — | {s['reason']} |")
                continue
            ref = rows.get("fastbpe-merge", {}) if lib == "hf-merge" else base
            ratio = (f"{s['median'] / ref['median']:.2f}×" if ref.get("ok") and lib != "fastbpe" else "1")
            spread = f"{_fmt_s(s['min'])}–{_fmt_s(s['max'])}"
            speed = f"{nbytes / 1e6 / s['median']:.2f}"
            median = _fmt_s(s["median"])
            if lib == "hf-merge":  # a difference of two medians: no spread of its own
                spread = "—"
                ratio += " (÷ fastbpe merge phase)"
                if s["median"] <= 0:
                    median, speed, ratio = "below the noise", "—", "—"
            lines.append(
                f"| {common.format_size(nbytes)} | {label} | {SETTINGS.get(lib, '')} | {s['runs'][0].get('vocab', '?')} | {median} | "
                f"{spread} | {s['rss']:.0f} MB | {speed} | {ratio} | {s.get('agreement', '')} |")
    return lines


def _cpu_mbps(s: dict, key: str) -> str:
    """Median MB/s over the runs by CPU seconds ``key`` (``cpu_seconds``: the cold pass,
    ``warm_cpu_seconds``: the second pass in the same process); — where the runs lack it."""
    times = [r[key] for r in s["runs"] if r.get(key)]
    return f"{s['runs'][0]['bytes'] / 1e6 / statistics.median(times):.2f}" if times else "—"


def encode_table(results: dict) -> List[str]:
    """One row per encoder; time ratios to fastbpe on the same vocabulary (``fastbpe:cl100k_base``
    for every ``*:cl100k_base``; fastbpe's own trained model for the other trained models)."""
    lines = ["| encoder | median | min–max | peak RSS | MB/s | MB/s CPU, cold | MB/s CPU, warm | tokens/s | "
             "bytes/token | time ÷ fastbpe | agreement |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = results["encode"]
    for spec, s in rows.items():
        if not s["ok"]:
            lines.append(f"| {spec} | — | — | — | — | — | — | — | — | — | {s['reason']} |")
            continue
        run = s["runs"][0]
        vocabulary = spec.partition(":")[2]
        own = f"fastbpe:{vocabulary}" if vocabulary else "fastbpe"
        base = rows.get(own, {})
        ratio = ("1" if spec == own else f"{s['median'] / base['median']:.2f}×" if base.get("ok") else "—")
        lines.append(
            f"| {spec} | {_fmt_s(s['median'])} | {_fmt_s(s['min'])}–{_fmt_s(s['max'])} | {s['rss']:.0f} MB | "
            f"{run['bytes'] / 1e6 / s['median']:.2f} | {_cpu_mbps(s, 'cpu_seconds')} | "
            f"{_cpu_mbps(s, 'warm_cpu_seconds')} | {run['tokens'] / s['median']:,.0f} | "
            f"{run['bytes'] / run['tokens']:.2f} | {ratio} | {s.get('agreement', '')} |")
    return lines


def language_tables(results: dict) -> Tuple[List[str], List[str]]:
    """Encode MB/s per language, and the token tax (tokens per row, and that ÷ English's)."""
    langs = common.LANGUAGES
    mbps = ["| encoder | " + " | ".join(langs) + " |", "|---|" + "---|" * len(langs)]
    tax = ["| encoder | " + " | ".join(langs) + " |", "|---|" + "---|" * len(langs)]
    for spec, per in results["languages"].items():
        if "skipped" in per or "error" in per:
            reason = per.get("skipped") or per.get("error")
            mbps.append(f"| {spec} | {reason} |" + " |" * (len(langs) - 1))
            continue
        en = per["en"]["tokens"]
        mbps.append(f"| {spec} | " + " | ".join(f"{per[l]['bytes'] / 1e6 / per[l]['seconds']:.2f}" for l in langs) + " |")
        tax.append(f"| {spec} | " + " | ".join(
            f"{per[l]['tokens'] / per[l]['rows']:.1f} ({per[l]['tokens'] / en:.2f}×)" for l in langs) + " |")
    return mbps, tax


# ---- plots ------------------------------------------------------------------------------------

# One colour per library (Okabe & Ito's palette, told apart with colour-blindness too), one hatch
# per vocabulary: in a bar chart of ten encoders, colour says "which library", hatch "which ranks".
LIBRARY_COLOURS = {"fastbpe": "#0072B2", "hf": "#D55E00", "sentencepiece": "#009E73",
                   "youtokentome": "#CC79A7", "tiktoken": "#E69F00", "gigatoken": "#882255", "rustbpe": "#44AA99"}
VOCAB_HATCHES = {"": "", "r50k_base": "///", "gpt2": "///", "cl100k_base": "xxx", "o200k_base": "...", "llama3": "\\\\"}
VOCAB_COLOURS = {"r50k_base": "#56B4E9", "cl100k_base": "#000000", "o200k_base": "#999999", "llama3": "#F0E442"}
# Training rows: the library's colour; the variant's line style and marker.
TRAIN_STYLES = {"fastbpe": ("fastbpe", "-", "o"), "fastbpe-hf": ("fastbpe", "--", "s"),
                "fastbpe-merge": ("fastbpe", ":", "^"), "hf": ("hf", "-", "o"),
                "hf-count": ("hf", "--", "s"), "hf-merge": ("hf", ":", "^"),
                "sentencepiece": ("sentencepiece", "-", "D"), "youtokentome": ("youtokentome", "-", "v"),
                "gigatoken": ("gigatoken", "-", "P"), "rustbpe": ("rustbpe", "-", "X")}


def _library(spec: str) -> str:
    """``tiktoken:cl100k_base`` -> tiktoken; ``hf:gpt2`` -> hf; ``fastbpe-hf`` -> fastbpe."""
    name = spec.split(":")[0]
    return name if name in LIBRARY_COLOURS else name.split("-")[0]


def _vocabulary(spec: str) -> str:
    return spec.split(":", 1)[1] if ":" in spec else ""


def _encoder_label(spec: str, vocab: int) -> str:
    voc = _vocabulary(spec)
    if not voc:
        return f"{spec} (its own {vocab // 1024}k vocabulary)"
    return f"{_library(spec)}, {voc}"


def _legend_outside(ax, **kwargs) -> None:
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False,
              fontsize=8, **kwargs)


def _token_tax_series(per_lang: dict, vocab: int) -> List[Tuple[str, str, List[float]]]:
    """(label, colour, tokens per row ÷ English's per language), one series per distinct
    vocabulary: encoders with identical token counts everywhere (same ranks, same split) share a
    bar, named together."""
    langs = common.LANGUAGES
    groups: Dict[tuple, List[str]] = {}
    for spec, per in per_lang.items():
        groups.setdefault(tuple(per[l]["tokens"] for l in langs), []).append(spec)
    series = []
    for counts, specs in groups.items():
        voc = _vocabulary(specs[0])
        if voc:
            label = f"{voc} ({' = '.join(_library(s) if _vocabulary(s) == voc else s for s in specs)})"
            colour = VOCAB_COLOURS.get(voc, "#999999")
        else:
            label = " = ".join(specs) + f" (trained, {vocab // 1024}k)"
            colour = LIBRARY_COLOURS.get(_library(specs[0]), "#999999")
        series.append((label, colour, [c / counts[0] for c in counts]))
    return series


def plot(results: dict, out: Path) -> List[Path]:
    """training_time.png, language_throughput.png, token_tax.png; needs matplotlib. Legends
    outside the plotting area, a colour per library, axes labelled with their units."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError:
        print("matplotlib is not installed: no plots")
        return []
    meta = results["meta"]
    threads = f"{meta['threads']} thread" + ("s" if meta["threads"] != 1 else "")
    written = []

    def save(fig, name):
        path = out / name
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        written.append(path)

    # Training time against corpus size.
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    sizes = sorted(int(s) for s in results["train"])
    order = list(LABELS)
    libs = sorted({lib for s in sizes for lib in results["train"][str(s)]},
                  key=lambda l: order.index(l) if l in order else len(order))
    for lib in libs:
        xs, ys, lo, hi = [], [], [], []
        for s in sizes:
            r = results["train"][str(s)].get(lib)
            if r and r["ok"] and r["median"] > 0:
                xs.append(s / 1e6)
                ys.append(r["median"])
                estimate = lib == "hf-merge"  # a difference of medians: no spread of its own
                lo.append(0 if estimate else r["median"] - r["min"])
                hi.append(0 if estimate else r["max"] - r["median"])
        if xs:
            family, style, marker = TRAIN_STYLES.get(lib, (lib, "-", "o"))
            ax.errorbar(xs, ys, yerr=[lo, hi], marker=marker, capsize=3, linestyle=style,
                        color=LIBRARY_COLOURS.get(family, "#999999"), label=LABELS.get(lib, lib))
    ax.set_xscale("log")
    ax.set_yscale("log")
    corpus = meta.get("corpus") or "english.txt.gz"
    ax.set_xlabel(f"corpus size (MB of {corpus}, log scale)")
    ax.set_ylabel("training time (s, log scale): median, bars min–max")
    ax.set_title(f"BPE training time, vocabulary {meta['vocab']}, {threads} (lower is better)")
    ax.grid(True, which="both", alpha=0.3)
    _legend_outside(ax)
    save(fig, "training_time.png")

    per_lang = {k: v for k, v in results.get("languages", {}).items() if "en" in v}
    if not per_lang:
        return written
    langs = common.LANGUAGES
    x = np.arange(len(langs))
    rows = _language_rows(per_lang)

    # Encode throughput per language: colour = library, hatch = vocabulary.
    fig, ax = plt.subplots(figsize=(11, 4.8))
    width = 0.84 / len(per_lang)
    for i, (spec, per) in enumerate(per_lang.items()):
        ax.bar(x + i * width, [per[l]["bytes"] / 1e6 / per[l]["seconds"] for l in langs], width,
               label=_encoder_label(spec, meta["vocab"]), color=LIBRARY_COLOURS.get(_library(spec), "#999999"),
               hatch=VOCAB_HATCHES.get(_vocabulary(spec), ""), edgecolor="white", linewidth=0.3)
    ax.set_xticks(x + width * (len(per_lang) - 1) / 2)
    ax.set_xticklabels(langs)
    ax.set_xlabel(f"language ({rows} rows of parallel_multi.tsv.gz, the same text in each)")
    ax.set_yscale("log")
    ax.set_ylabel(f"encode throughput (MB/s, log scale, {threads})")
    ax.set_title("Encode throughput per language (higher is better)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    _legend_outside(ax, title="encoder (colour: library; hatch: vocabulary)", title_fontsize=8)
    save(fig, "language_throughput.png")

    # Token tax: one bar per distinct vocabulary.
    series = _token_tax_series(per_lang, meta["vocab"])
    fig, ax = plt.subplots(figsize=(11, 4.8))
    width = 0.84 / len(series)
    for i, (label, colour, vals) in enumerate(series):
        ax.bar(x + i * width, vals, width, label=label, color=colour, edgecolor="white", linewidth=0.3)
    ax.axhline(1.0, color="#444444", linewidth=0.8, linestyle="--")
    ax.set_xticks(x + width * (len(series) - 1) / 2)
    ax.set_xticklabels(langs)
    ax.set_xlabel(f"language ({rows} rows of parallel_multi.tsv.gz, the same text in each)")
    ax.set_ylabel("tokens per row ÷ English's (×; 1 = as many as English)")
    ax.set_title("Token tax per language (lower is better)")
    ax.grid(True, axis="y", alpha=0.3)
    _legend_outside(ax, title="vocabulary (encoders with identical ids share a bar)", title_fontsize=8)
    save(fig, "token_tax.png")
    return written


def _language_rows(per_lang: dict) -> str:
    counts = {per["en"]["rows"] for per in per_lang.values() if "en" in per}
    return f"{counts.pop():,}" if len(counts) == 1 else "the same"


def _strip_runs(results: dict) -> dict:
    """The JSON keeps every run's numbers but not the bulky duplicates."""
    return json.loads(json.dumps(results))


def render(results: dict, sizes: List[int], level: int = 3) -> str:
    """The markdown report: machine, versions, settings, command, then the tables (under
    headings of ``level``)."""
    meta = results["meta"]
    h = "#" * level
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    lines = [
        f"Machine: {meta['cpu']}, {meta['cores']} cores; load average at start "
        f"{' '.join(f'{x:.1f}' for x in meta['load_average'])}; {meta['platform']}.",
        f"Versions: {versions}; fastbpe commit {meta['commit']}.",
        f"Settings: vocab {meta['vocab']}, min frequency {meta['min_frequency']}, {meta['threads']} thread(s), "
        f"{meta['repeats']} repeat(s), each run in a fresh process, libraries alternating.",
        f"Command: `{meta['command']}`",
        "",
    ]
    if results["train"]:
        lines += [h + " Training (time includes reading the file; fastbpe's counting phase and merge phase "
                  "are also shown apart)", "", *train_table(results, sizes), ""]
    if results["encode"]:
        models = ", ".join(f"{lib} {common.format_size(int(n))}" for lib, n in meta.get("models", {}).items()) or "none"
        lines += [f"{h} Encoding {common.format_size(meta.get('encode_bytes', 0))} of the corpus", "",
                  "Each library gets the same documents (the text cut after a newline every 64 KB) "
                  "through its batch API where it has one (HF `encode_batch`, fastbpe `encode_batch` "
                  "when present, else a loop; tiktoken `encode_ordinary` in a loop at 1 thread); "
                  "sentencepiece and youtokentome, being line-based, get the documents' lines. "
                  f"{meta['threads']} thread(s). "
                  f"Trained tokenizers come from each library's largest training run ({models}); "
                  "`<library>:<vocabulary>` encoders use published vocabularies (OpenAI's ranks, "
                  "`hf:gpt2` GPT-2's files, `llama3` Llama 3's `tokenizer.json`), their ids checked "
                  "against tiktoken's (HF's for llama3). MB/s CPU: the first pass in a fresh process "
                  "(cold) and a second pass in the same process (warm), by its CPU time.", "",
                  *encode_table(results), ""]
    if results["languages"]:
        mbps, tax = language_tables(results)
        lines += [h + " Encode throughput per language (MB/s), parallel_multi.tsv.gz", "", *mbps, "",
                  h + " Token tax: tokens per row (and ÷ English) on the same rows", "", *tax, ""]
    return "\n".join(lines)


def write(results: dict, sizes: List[int], out: Path, plots: bool = True) -> None:
    """Print the report and write ``peers.md``, ``peers.json`` and (``plots``) the PNGs in ``out``."""
    report = render(results, sizes)
    print("\n" + report)
    (out / "peers.md").write_text(report + "\n", encoding="utf-8")
    (out / "peers.json").write_text(json.dumps(_strip_runs(results), indent=1), encoding="utf-8")
    if plots:
        for path in plot(results, out):
            print(f"wrote {path}")
    print(f"wrote {out / 'peers.md'} and {out / 'peers.json'}")


# ---- the READMEs' figures -------------------------------------------------------------------------

RESULTS_DIR = common.REPO_ROOT / "benchmarks" / "results"
RESULTS_FILE = RESULTS_DIR / "peers.json"
# Which generated blocks each README holds.
READMES = {"README.md": ["speed", "encoders"], "benchmarks/README.md": ["summary", "report"]}
# Encode-only comparisons with the peers (``--libs ""``), one folder per corpus, each a peers.json:
# README.md's "encoders" block.
ENCODERS_DIR = RESULTS_DIR / "encoders"
# The PyPI distribution of each encoder spec's library (its version is in the run's meta).
DISTRIBUTIONS = {"fastbpe": "fastbpe", "tiktoken": "tiktoken", "hf": "tokenizers", "gigatoken": "gigatoken",
                 "fastokens": "fastokens", "splintr": "splintr-rs", "rs-bpe": "rs_bpe", "bpe-openai": "bpe-openai"}
GENERATOR = "python -m benchmarks.peers.report --readme, from benchmarks/results/peers.json"


def _block_re(name: str):
    return re.compile(r"(<!-- begin generated: " + re.escape(name) + r"\b[^>]*-->\n)(.*?)"
                      r"(<!-- end generated: " + re.escape(name) + r" -->)", re.S)


def _speed(s: dict) -> float:
    """MB/s of an encode summary."""
    return s["runs"][0]["bytes"] / 1e6 / s["median"]


def _num(x: float) -> str:
    """Three significant digits, thousands separated: 1.68, 25.2, 1,583."""
    return f"{x:,.0f}" if x >= 1000 else f"{x:.3g}"


def _s(x: float) -> str:
    return _num(x) + " s"


def _ratio(x: float) -> str:
    return f"{x:.2f}×" if x < 10 else f"{x:.1f}×"


def _merge_counts(agreement: str) -> str:
    m = re.search(r"identical merges \((\d+)\)", agreement or "")
    return m.group(1) if m else ""


def _language_speed(results: dict, spec: str):
    """MB/s of ``spec`` over all the languages' rows together, or None."""
    per = results.get("languages", {}).get(spec, {})
    if "en" not in per:
        return None
    return (sum(per[l]["bytes"] for l in common.LANGUAGES) / 1e6
            / sum(per[l]["seconds"] for l in common.LANGUAGES))


def _openai_pairs(results: dict):
    """(vocabulary, fastbpe summary, tiktoken summary, agreement) for each OpenAI encoding both ran."""
    enc = results["encode"]
    for spec, s in enc.items():
        if spec.startswith("fastbpe:") and s.get("ok"):
            voc = spec.split(":", 1)[1]
            ref = enc.get(f"tiktoken:{voc}", {})
            if ref.get("ok"):
                yield voc, s, ref, s.get("agreement", "")


def readme_speed(results: dict) -> List[str]:
    """The top README's "How fast" figures: training at the largest size, encoding with OpenAI's
    ranks against tiktoken, and what agreed."""
    meta = results["meta"]
    sizes = sorted(int(n) for n in results["train"])
    big = sizes[-1]
    rows = results["train"][str(big)]
    versions = meta["versions"]
    corpus = meta.get("corpus") or "english.txt.gz"
    threads = "one thread" if meta["threads"] == 1 else f"{meta['threads']} threads"
    lines = [f"`{meta['command']}` on a {meta['cores']}-core {meta['cpu']} (load average "
             f"{meta['load_average'][0]:.1f} as it started), fastbpe commit {meta['commit']}: the first "
             f"{common.format_size(big)} of `{corpus}`, vocabulary {meta['vocab']:,}, min frequency "
             f"{meta['min_frequency']}, {threads} each, medians of {meta['repeats']} alternating runs "
             "in fresh processes (wall time, reading the file included):", "",
             f"| training, {common.format_size(big)} | time | peak RSS | vs fastbpe |", "|---|---|---|---|"]
    base = rows.get("fastbpe", {})
    names = {"gigatoken": f"gigatoken {versions.get('gigatoken', '')}",
             "rustbpe": f"rustbpe {versions.get('rustbpe', '')}",
             "hf": f"Hugging Face `tokenizers` {versions.get('tokenizers', '')}",
             "sentencepiece": f"sentencepiece {versions.get('sentencepiece', '')} (BPE)",
             "youtokentome": f"YouTokenToMe {versions.get('youtokentome', '')}"}
    if base.get("ok"):
        lines.append(f"| **fastbpe** | **{_s(base['median'])}** | {base['rss']:,.0f} MB | 1 |")
    merge = rows.get("fastbpe-merge", {})
    if merge.get("ok"):
        lines.append(f"| fastbpe, merge phase alone | {_s(merge['median'])} | | |")
    for lib, label in names.items():
        r = rows.get(lib, {})
        if r.get("ok") and base.get("ok"):
            lines.append(f"| {label} | {_s(r['median'])} | {r['rss']:,.0f} MB | "
                         f"{_ratio(r['median'] / base['median'])} slower |")
    pairs = list(_openai_pairs(results))
    if pairs:
        enc_size = common.format_size(meta.get("encode_bytes", 0))
        lines += ["", f"Encoding with OpenAI's ranks loaded in both: the first {enc_size} of `{corpus}` "
                  f"(the same documents for both, {threads}, medians of {meta['repeats']}) and every row of "
                  f"`parallel_multi.tsv.gz` ({_language_rows(results['languages'])} rows in each of nine languages, "
                  "best of three per language):", "",
                  f"| encoding | fastbpe | tiktoken {versions.get('tiktoken', '')} | fastbpe's speed ÷ tiktoken's |",
                  "|---|---|---|---|"]
        for voc, s, ref, _ in pairs:
            lines.append(f"| {voc}, {enc_size} | {_num(_speed(s))} MB/s | {_num(_speed(ref))} MB/s | "
                         f"{_ratio(ref['median'] / s['median'])} |")
        for voc, _, _, _ in pairs:
            a, b = _language_speed(results, f"fastbpe:{voc}"), _language_speed(results, f"tiktoken:{voc}")
            if a and b:
                lines.append(f"| {voc}, parallel_multi (9 languages) | {_num(a)} MB/s | {_num(b)} MB/s | "
                             f"{_ratio(a / b)} |")
    facts = []
    same = [f"{voc}: {int(m.group(1)):,} tokens" for voc, _, _, agree in pairs
            for m in [re.search(r"identical ids \((\d+)\)", agree)] if m]
    if same:
        facts.append("Token ids are identical to tiktoken's (" + "; ".join(same) + ")")
    hf_same = [common.format_size(n) for n in sizes
               if "identical merges" in results["train"][str(n)].get("fastbpe-hf", {}).get("agreement", "")
               and "same documents" in results["train"][str(n)]["fastbpe-hf"]["agreement"]]
    if hf_same:
        facts.append('`compat="hf"` training gives merges identical to Hugging Face\'s at '
                     + ", ".join(hf_same) + " (on the same documents)")
    if facts:
        lines += ["", "; ".join(facts) + "."]
    return lines


def readme_summary(results: dict) -> List[str]:
    """The benchmarks README's summary in words, every number from the results."""
    meta = results["meta"]
    sizes = sorted(int(n) for n in results["train"])
    big = sizes[-1]
    rows = results["train"][str(big)]
    base = rows.get("fastbpe", {})
    if not base.get("ok"):
        return ["fastbpe did not run: see the tables."]
    threads = "one thread" if meta["threads"] == 1 else f"{meta['threads']} threads"
    corpus = meta.get("corpus") or "English (`english.txt.gz`)"
    names = {"gigatoken": "gigatoken", "rustbpe": "rustbpe", "hf": "HF `tokenizers`", "sentencepiece": "sentencepiece",
             "youtokentome": "youtokentome"}
    peers = [(lib, rows[lib]) for lib in names if rows.get(lib, {}).get("ok")]
    text = (f"What it says, in short: training {common.format_size(big)} of {corpus} at vocabulary "
            f"{meta['vocab']} on {threads} takes fastbpe {_s(base['median'])} "
            f"({_num(big / 1e6 / base['median'])} MB/s)")
    if peers:
        text += " against " + ", ".join(
            f"{_s(r['median'])} for {names[lib]} ({_ratio(r['median'] / base['median'])})" for lib, r in peers)
        if all(base["rss"] <= r["rss"] for _, r in peers):
            text += ", with the least memory"
        else:
            least = min(peers, key=lambda p: p[1]["rss"])
            text += (f"; its peak memory ({base['rss']:,.0f} MB) is above {names[least[0]]}'s "
                     f"({least[1]['rss']:,.0f} MB)")
    merge_ratios = []
    for n in reversed(sizes):
        r = results["train"][str(n)]
        hm, fm = r.get("hf-merge", {}), r.get("fastbpe-merge", {})
        if hm.get("ok") and fm.get("ok") and hm["median"] > 0:
            merge_ratios.append(f"{_ratio(hm['median'] / fm['median'])} at {common.format_size(n)}")
    if merge_ratios:
        text += "; its merge phase alone is faster than HF's (estimated) by " + " and ".join(merge_ratios[:2])
    text += "."
    hf_same = [(common.format_size(n), _merge_counts(results["train"][str(n)].get("fastbpe-hf", {}).get("agreement")))
               for n in sizes]
    hf_same = [(size, count) for size, count in hf_same if count]
    if hf_same:
        text += (' `compat="hf"` reproduces HF\'s merges exactly, on the same documents ('
                 + ", ".join(f"{int(c):,} identical merges at {size}" for size, c in hf_same) + ").")
    own = results["encode"].get("fastbpe", {})
    if own.get("ok"):
        text += f" Encoding with its own {meta['vocab'] // 1024}k vocabulary runs at {_num(_speed(own))} MB/s on {threads}"
    pairs = list(_openai_pairs(results))
    if pairs:
        text += ("; on OpenAI's ranks fastbpe runs at " + " and ".join(
            f"{_ratio(ref['median'] / s['median'])} tiktoken's speed ({voc}, {_num(_speed(s))} vs "
            f"{_num(_speed(ref))} MB/s)" for voc, s, ref, _ in pairs))
        if all("identical ids" in agree for *_, agree in pairs):
            text += ", with identical ids"
    text += "."
    return [text]


def _cpu_speed(s: dict, key: str) -> float:
    """MB/s of an encode summary by the median CPU seconds ``key`` of its runs (0: none)."""
    times = [r[key] for r in s["runs"] if r.get(key)]
    return s["runs"][0]["bytes"] / 1e6 / statistics.median(times) if times else 0.0


def readme_encoders(results: dict) -> List[str]:
    """README.md's table of one encode-only run with the peers: per encoder, MB/s of CPU time on
    the cold pass (the first call in a fresh process) and the warm second pass, the speed ÷
    fastbpe's on the same vocabulary, and whether its ids equal the reference's."""
    meta, enc = results["meta"], results["encode"]
    loads = [r["load_average"] for s in enc.values() if s.get("ok") for r in s["runs"] if "load_average" in r]
    corpus = meta.get("corpus") or "english.txt.gz"
    machine = f" on a {meta['cores']}-core {meta['cpu']}" if "cpu" in meta else ""
    lines = [f"`{meta['command']}`{machine}, fastbpe commit {meta['commit']}: the "
             f"first {common.format_size(meta.get('encode_bytes', 0))} of `{corpus}`, one thread, "
             f"{meta['repeats']} fresh processes per library (alternating; load average "
             f"{' '.join(f'{x:.1f}' for x in meta['load_average'])} at the start, "
             f"{min(loads, default=0):.1f}–{max(loads, default=0):.1f} as the runs started); MB/s of CPU "
             "time, medians:", "",
             "| library (PyPI) | vocabulary | cold pass | warm second pass | speed ÷ fastbpe's (cold / warm) | ids |",
             "|---|---|---|---|---|---|"]
    for spec, s in enc.items():
        lib, _, vocabulary = spec.partition(":")
        dist = DISTRIBUTIONS.get(lib, lib)
        label = f"{dist} {meta['versions'].get(dist, '')}".strip()
        if lib == "fastbpe":
            label = f"**{label}**"
        if not s.get("ok"):
            lines.append(f"| {label} | {vocabulary} | — | — | — | {s.get('reason', '')} |")
            continue
        cold, warm = _cpu_speed(s, "cpu_seconds"), _cpu_speed(s, "warm_cpu_seconds")
        base = enc.get(f"fastbpe:{vocabulary}", {})
        ratio = "1"
        if lib != "fastbpe":
            ratio = "—"
            if base.get("ok") and _cpu_speed(base, "cpu_seconds") and _cpu_speed(base, "warm_cpu_seconds"):
                ratio = (f"{_ratio(cold / _cpu_speed(base, 'cpu_seconds'))} / "
                         f"{_ratio(warm / _cpu_speed(base, 'warm_cpu_seconds'))}")
        agreement = s.get("agreement", "")
        reference = {"hf": "HF"}.get(agreement.split(":")[0][3:], agreement.split(":")[0][3:])
        ids = ("reference" if not agreement else f"identical to {reference}'s"
               if "identical ids" in agreement else agreement)
        lines.append(f"| {label} | {vocabulary} | {_num(cold)} MB/s | {_num(warm)} MB/s | {ratio} | {ids} |")
    return lines


def readme_encoder_runs(root: Path = common.REPO_ROOT) -> str:
    """The "encoders" block: every committed encode-only run (``benchmarks/results/encoders/*/``),
    one table each."""
    runs = [json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((root / ENCODERS_DIR.relative_to(common.REPO_ROOT)).glob("*/peers.json"))]
    runs.sort(key=lambda r: r["meta"].get("corpus") is not None)  # the default corpus (English) first
    parts = ["\n".join(readme_encoders(r)) for r in runs]
    return "\n\n".join(parts) + "\n" if parts else "(no encode-only run committed)\n"


def readme_blocks(results: dict, root: Path = common.REPO_ROOT) -> Dict[str, str]:
    """Every generated README block, by name: ``speed`` and ``encoders`` (README.md), ``summary``
    and ``report`` (benchmarks/README.md)."""
    sizes = sorted(int(n) for n in results["train"])
    return {"speed": "\n".join(readme_speed(results)) + "\n",
            "encoders": readme_encoder_runs(root),
            "summary": "\n".join(readme_summary(results)) + "\n",
            "report": render(results, sizes, level=4).rstrip("\n") + "\n"}


def apply_blocks(text: str, blocks: Dict[str, str], names: List[str], where: str = "") -> str:
    """``text`` with each named block's body replaced; a missing marker is an error."""
    for name in names:
        pattern = _block_re(name)
        if not pattern.search(text):
            raise ValueError(f"{where}: no '<!-- begin generated: {name} -->' ... "
                             f"'<!-- end generated: {name} -->' block")
        text = pattern.sub(lambda m: m.group(1) + blocks[name] + m.group(3), text, count=1)
    return text


def update_readmes(results: dict, check: bool = False, root: Path = common.REPO_ROOT) -> List[str]:
    """Write the generated blocks into the READMEs (``check``: only compare). Returns the READMEs
    that were (``check``: would be) changed."""
    blocks = readme_blocks(results, root)
    changed = []
    for rel, names in READMES.items():
        path = root / rel
        old = path.read_text(encoding="utf-8")
        new = apply_blocks(old, blocks, names, rel)
        if new != old:
            changed.append(rel)
            if not check:
                path.write_text(new, encoding="utf-8")
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.peers.report",
        description="Re-render a saved peer comparison (peers.md and the plots) without re-running it, "
                    "or write the READMEs' figures from the committed results.")
    parser.add_argument("results", nargs="?", default=None,
                        help="a peers.json (default benchmarks/results/peers.json)")
    parser.add_argument("--out", default=None, help="directory for peers.md and the PNGs (default: beside the JSON)")
    parser.add_argument("--no-plot", action="store_true", help="peers.md only")
    parser.add_argument("--readme", action="store_true",
                        help="write the figures of README.md and benchmarks/README.md (from the committed "
                             "results unless a JSON is given) instead of re-rendering")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the READMEs' figures differ from the results; change nothing")
    args = parser.parse_args(argv)
    path = Path(args.results) if args.results else RESULTS_FILE
    results = json.loads(path.read_text(encoding="utf-8"))
    if args.readme or args.check:
        changed = update_readmes(results, check=args.check)
        verb = "differs from" if args.check else "updated from"
        for rel in changed:
            print(f"{rel} {verb} {path.name}")
        if not changed:
            print(f"README.md and benchmarks/README.md match {path.name}")
        return 1 if (args.check and changed) else 0
    out = Path(args.out) if args.out else path.parent
    out.mkdir(parents=True, exist_ok=True)
    sizes = sorted(int(s) for s in results["train"])
    (out / "peers.md").write_text(render(results, sizes) + "\n", encoding="utf-8")
    if not args.no_plot:
        for written in plot(results, out):
            print(f"wrote {written}")
    print(f"wrote {out / 'peers.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
