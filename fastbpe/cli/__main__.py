"""``python -m fastbpe.cli``: the ``fastbpe`` command."""
import sys

from . import main

sys.exit(main())
