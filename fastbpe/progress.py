"""Progress reporting, one way for every stage: a tqdm bar on a terminal, silence elsewhere, or
the caller's callback.

``progress`` arguments everywhere mean the same: ``None`` a bar when stderr is a terminal,
``True`` always a bar, ``False`` none; the merge learner also takes a callable.
"""
import sys
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Union

import numpy as np

__all__ = ["merge_progress", "wants_bar", "byte_bar", "check_progress"]

Progress = Union[None, bool, Callable[[int, int], None]]


def check_progress(progress) -> None:
    """Refuse a ``progress`` that means nothing (``"yes"``, ``1``): the bar's choice would be
    a guess.

    >>> check_progress(None), check_progress(False)
    (None, None)
    """
    if progress is not None and not isinstance(progress, (bool, np.bool_)) and not callable(progress):
        raise TypeError(f"progress must be None (a bar on a terminal), True, False or a callable, "
                        f"got {progress!r:.40}")


def wants_bar(progress: Progress) -> bool:
    """``None`` means: a bar when stderr is a terminal. ``True`` forces one, ``False`` none."""
    if progress is None:
        return sys.stderr.isatty()
    return bool(progress is True or progress is np.True_)


def byte_bar(progress: Progress, total: Optional[int], desc: str):
    """A bar counting input bytes (MB/s and, with a ``total``, the ETA), or None."""
    if not wants_bar(progress):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc, smoothing=0.1,
                dynamic_ncols=True)


@contextmanager
def merge_progress(progress: Progress, total: int) -> Iterator[Optional[Callable[[int, int], None]]]:
    """Yield the callback the merge learner calls with (merges done, current best count)."""
    if callable(progress):
        yield progress
        return
    if not wants_bar(progress) or total <= 0:
        yield None
        return
    from tqdm.auto import tqdm

    with tqdm(total=total, desc="merges", unit="merge", dynamic_ncols=True) as bar:
        def update(done: int, best_count: int) -> None:
            bar.update(done - bar.n)
            bar.set_postfix(best_count=best_count, refresh=False)

        yield update
        if bar.n < bar.total:  # (learning stopped early: no pair frequent enough) the bar ends full
            bar.total = bar.n
            bar.refresh()
