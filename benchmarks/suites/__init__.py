"""The asv suites of fastbpe (``benchmark_dir`` in ``asv.conf.json``), one module per area.

They live in their own package, not directly in ``benchmarks/``, because asv imports every
module of its benchmark directory to discover benchmarks: a plain script there that imports a
feature missing from an older commit would stop discovery, and any top-level ``time_*`` helper
would be run as a benchmark. ``common`` makes the inputs (shared with ``benchmarks.peers``).
"""
