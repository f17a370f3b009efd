"""Redraw the peer-comparison plots and report from a saved ``peers.json``.

    python -m benchmarks.scripts.plot                          # benchmarks/results/peers.json
    python -m benchmarks.scripts.plot path/to/peers.json --out somewhere/

The same as ``python -m benchmarks.peers.report`` (which also writes the READMEs' figures with
``--readme``); kept so that every area has its script here.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's benchmarks package

from benchmarks.peers.report import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
