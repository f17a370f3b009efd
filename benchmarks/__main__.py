"""``python -m benchmarks record | compare A B | check``: the asv workflow (``benchmarks/workflow.py``)."""
import sys

from .workflow import main

sys.exit(main())
