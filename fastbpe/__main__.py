"""``python -m fastbpe``: the ``fastbpe`` command."""
import sys

from .cli import main

sys.exit(main())
