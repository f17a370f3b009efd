"""Benchmarks for fastbpe.

* ``suite_*.py`` are asv suites (``asv run``, ``asv continuous``; see ``benchmarks/README.md``).
* ``python -m benchmarks.peers`` compares fastbpe with the other BPE libraries side by side.
* ``common.py`` makes the inputs both use: deterministic generated text and slices of the real
  corpora in ``FASTBPE_DATA``.

Nothing in this package may run heavy work at import: asv imports every module here to find
benchmarks (any top-level ``time_*``/``peakmem_*``/``track_*`` function or class with such
methods becomes one).
"""
