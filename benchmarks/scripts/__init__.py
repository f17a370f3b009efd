"""Plain benchmark scripts, one per area, run by hand: ``python benchmarks/scripts/bench_encode.py``
(or ``python -m benchmarks.scripts.bench_encode``). Each puts its own checkout first on
``sys.path``, so it measures the fastbpe built in place beside it, and finds the shared data
through ``benchmarks/data.py``. Not asv suites: those are in ``benchmarks/suites/``.
"""
