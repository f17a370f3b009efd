"""Type stubs of the compiled merge learner (fastbpe/_core/learn.pyx)."""
from typing import Callable, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

LONG_CHUNK_SYMBOLS: int
COARSE_BITS: int
DENSE_INDEX_PAIRS: int

class MergeLearner:
    """Incremental BPE merge learner over a flat word table; one instance per training run."""
    compact_slack: int

    def __init__(
        self,
        symbols: Union[npt.NDArray[np.int32], npt.NDArray[np.uint8]],
        word_starts: npt.NDArray[np.int64],
        word_counts: npt.NDArray[np.int64],
        token_bytes: List[bytes],
        tie_ranks: Optional[Sequence[int]] = None,
        long_chunk: Optional[int] = None,
        coarse_bits: Optional[int] = None,
    ) -> None: ...
    def corpus_tokens(self) -> int: ...
    def run(
        self,
        num_merges: int,
        min_frequency: int = 1,
        max_tokens: int = -1,
        progress: Optional[Callable[[int, int], None]] = None,
        progress_every: int = 512,
    ) -> Tuple[npt.NDArray[np.int32], npt.NDArray[np.int64], List[bytes]]: ...
