"""``python -m benchmarks.peers``: the side-by-side comparison (``--child JSON``: one run)."""
import sys

from .run import main

sys.exit(main())
