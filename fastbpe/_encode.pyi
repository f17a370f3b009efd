"""Type stubs of the compiled BPE encoder core (fastbpe/_encode.pyx)."""
from typing import List, Tuple

import numpy as np
import numpy.typing as npt

RULES: Tuple[str, str, str]

class EncodeState:
    """Per-thread chunk cache and scratch space; never share one between threads."""
    hits: int
    misses: int
    def __init__(self, max_ids: int = 4_000_000) -> None: ...
    def clear(self) -> None: ...
    @property
    def size(self) -> int: ...

class BPECore:
    """Immutable encoding tables (thread-safe); rule is "replay", "pair" or "token"."""
    num_tokens: int
    num_pairs: int
    scan_max: int
    def __init__(self, token_bytes: List[bytes], left: npt.NDArray[np.int32], right: npt.NDArray[np.int32],
                 rule: str = "replay", whole: str = "consistent") -> None: ...
    def encode_chunks(self, data: bytes, starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64],
                      state: EncodeState) -> npt.NDArray[np.int32]: ...
    def encode_bytes(self, data: bytes, state: EncodeState) -> npt.NDArray[np.int32]: ...
    def whole_lookup_size(self) -> int: ...

def derive_merges(token_bytes: List[bytes]) -> Tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int32]]: ...
def utf8_positions(text: str, char_positions: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...
