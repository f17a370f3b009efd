"""Progress reporting: a tqdm bar on a terminal, silence elsewhere, or the caller's callback."""
import sys
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Union

__all__ = ["merge_progress", "wants_bar"]

Progress = Union[None, bool, Callable[[int, int], None]]


def wants_bar(progress: Progress) -> bool:
    """``None`` means: a bar when stderr is a terminal. ``True`` forces one, ``False`` none."""
    if progress is None:
        return sys.stderr.isatty()
    return progress is True


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
