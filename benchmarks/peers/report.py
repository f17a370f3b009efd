"""Reporting: the markdown tables, the JSON of every run, the plots.

``render(results, sizes)`` makes the report from a results dict (what ``peers.json`` holds), so a
saved run can be re-rendered without re-running it (``python -m benchmarks.scripts.plot``).
"""
import json
from pathlib import Path
from typing import List, Tuple

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


def encode_table(results: dict) -> List[str]:
    """One row per encoder; ratios to fastbpe with its own trained vocabulary."""
    lines = ["| encoder | median | min–max | peak RSS | MB/s | tokens/s | bytes/token | time ÷ fastbpe | agreement |",
             "|---|---|---|---|---|---|---|---|---|"]
    rows = results["encode"]
    base = rows.get("fastbpe", {})
    for spec, s in rows.items():
        if not s["ok"]:
            lines.append(f"| {spec} | — | — | — | — | — | — | — | {s['reason']} |")
            continue
        run = s["runs"][0]
        ratio = f"{s['median'] / base['median']:.2f}×" if base.get("ok") and spec != "fastbpe" else "1"
        lines.append(
            f"| {spec} | {_fmt_s(s['median'])} | {_fmt_s(s['min'])}–{_fmt_s(s['max'])} | {s['rss']:.0f} MB | "
            f"{run['bytes'] / 1e6 / s['median']:.2f} | {run['tokens'] / s['median']:,.0f} | "
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


def plot(results: dict, out: Path) -> List[Path]:
    """training_time.png, language_throughput.png, token_tax.png; needs matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots")
        return []
    written = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
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
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=LABELS.get(lib, lib),
                        linestyle="--" if "merge" in lib or lib == "hf-count" else "-")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("corpus size (MB of english.txt)" if not results["meta"].get("corpus") else "corpus size (MB)")
    ax.set_ylabel("training time (s), median and min–max")
    ax.set_title(f"BPE training, vocab {results['meta']['vocab']}, {results['meta']['threads']} thread(s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "training_time.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    per_lang = {k: v for k, v in results.get("languages", {}).items() if "en" in v}
    if per_lang:
        import numpy as np

        langs = common.LANGUAGES
        for name, metric, ylabel in (
            ("language_throughput.png", lambda r: r["bytes"] / 1e6 / r["seconds"], "encode MB/s"),
            ("token_tax.png", None, "tokens per row ÷ English's"),
        ):
            fig, ax = plt.subplots(figsize=(9, 4.5))
            width = 0.8 / len(per_lang)
            for i, (spec, per) in enumerate(per_lang.items()):
                if metric is None:
                    vals = [per[l]["tokens"] / per["en"]["tokens"] for l in langs]
                else:
                    vals = [metric(per[l]) for l in langs]
                ax.bar(np.arange(len(langs)) + i * width, vals, width, label=spec)
            ax.set_xticks(np.arange(len(langs)) + width * (len(per_lang) - 1) / 2)
            ax.set_xticklabels(langs)
            ax.set_ylabel(ylabel)
            ax.set_title(("Encode throughput" if metric else "Token tax") +
                         " per language, parallel_multi.tsv.gz (rows in all 9 languages)")
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=7, ncol=2)
            fig.tight_layout()
            path = out / name
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
    return written


def _strip_runs(results: dict) -> dict:
    """The JSON keeps every run's numbers but not the bulky duplicates."""
    return json.loads(json.dumps(results))


def render(results: dict, sizes: List[int]) -> str:
    """The markdown report: machine, versions, settings, command, then the tables."""
    meta = results["meta"]
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    lines = [
        f"Machine: {meta['cpu']}, {meta['cores']} cores; load average at start "
        f"{' '.join(f'{x:.1f}' for x in meta['load_average'])}; {meta['platform']}.",
        f"Versions: {versions}; fastbpe commit {meta['commit']}.",
        f"Settings: vocab {meta['vocab']}, min frequency {meta['min_frequency']}, {meta['threads']} thread(s), "
        f"{meta['repeats']} repeat(s), each run in a fresh process, libraries alternating.",
        f"Command: `{meta['command']}`",
        "",
        "### Training (time includes reading the file; fastbpe's counting phase and merge phase are also shown apart)",
        "",
        *train_table(results, sizes),
        "",
    ]
    if results["encode"]:
        models = ", ".join(f"{lib} {common.format_size(int(n))}" for lib, n in meta.get("models", {}).items())
        lines += [f"### Encoding {common.format_size(meta.get('encode_bytes', 0))} of the corpus", "",
                  "Each library gets the same documents (the text cut after a newline every 64 KB) "
                  "through its batch API where it has one (HF `encode_batch`, fastbpe `encode_batch` "
                  "when present, else a loop; tiktoken `encode_ordinary` in a loop at 1 thread); "
                  "sentencepiece and youtokentome, being line-based, get the documents' lines. "
                  f"{meta['threads']} thread(s). "
                  f"Trained tokenizers come from each library's largest training run ({models}); "
                  "`tiktoken:*` and `hf:gpt2` are OpenAI's published ranks.", "",
                  *encode_table(results), ""]
    if results["languages"]:
        mbps, tax = language_tables(results)
        lines += ["### Encode throughput per language (MB/s), parallel_multi.tsv.gz", "", *mbps, "",
                  "### Token tax: tokens per row (and ÷ English) on the same rows", "", *tax, ""]
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
