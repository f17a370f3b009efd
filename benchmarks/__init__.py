"""Benchmarks for fastbpe.

* ``suites/`` holds the asv suites (``asv run``, ``asv continuous``; see ``benchmarks/README.md``)
  and ``suites/common.py``, the inputs they and the peer comparison use: deterministic generated
  text and slices of the real corpora.
* ``python -m benchmarks record | compare A B | check`` (``workflow.py``): the asv workflow, one
  commit recorded, two compared (exit 1 on a regression), every benchmark run once (CI).
* ``python -m benchmarks.peers`` compares fastbpe with the other BPE libraries side by side.
  ``python -m benchmarks.peers.report --readme`` writes the READMEs' figures from its results.
* ``scripts/`` holds the plain per-area scripts (``bench_train``, ``bench_ingest``,
  ``bench_encode``, ``bench_kernels``) and ``plot``, which redraws a saved peer comparison.
* ``data.py`` is the one place that knows where the shared data lives (``FASTBPE_DATA``); the
  tests use it too.
* ``results/`` holds the committed results of the peer comparison.

Nothing under ``suites/`` may run heavy work at import: asv imports every module there to find
benchmarks (any top-level ``time_*``/``peakmem_*``/``track_*`` function or class with such
methods becomes one).
"""
