"""Redraw the peer-comparison plots and report from a saved ``peers.json``.

    python -m benchmarks.scripts.plot                          # benchmarks/results/peers.json
    python -m benchmarks.scripts.plot path/to/peers.json --out somewhere/

(``python -m benchmarks.peers`` draws them already; this is for re-rendering without re-running.)
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's benchmarks package

from benchmarks.peers.report import plot, render  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scripts.plot",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="?", default=str(RESULTS / "peers.json"))
    parser.add_argument("--out", default=None, help="directory for the PNGs and peers.md (default: beside the JSON)")
    args = parser.parse_args(argv)
    path = Path(args.results)
    results = json.loads(path.read_text(encoding="utf-8"))
    out = Path(args.out) if args.out else path.parent
    out.mkdir(parents=True, exist_ok=True)
    sizes = sorted(int(s) for s in results["train"])
    (out / "peers.md").write_text(render(results, sizes) + "\n", encoding="utf-8")
    for written in plot(results, out):
        print(f"wrote {written}")
    print(f"wrote {out / 'peers.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
