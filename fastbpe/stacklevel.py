"""Where a warning of fastbpe's points: the user's line that called into fastbpe, however deep
in the package the warning is raised (``warnings.warn(..., stacklevel=caller_stacklevel())``)."""
import os
import sys

__all__ = ["caller_stacklevel"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def caller_stacklevel() -> int:
    """The stacklevel, for the ``warnings.warn`` of the function that calls this, of the first
    frame outside fastbpe."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
