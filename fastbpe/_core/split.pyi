"""Type stubs of the compiled pre-tokenizers (fastbpe/_core/split.pyx; scanners in scan.h, cuts in cut.h)."""
from typing import Dict, List, Tuple, Union

import numpy as np
import numpy.typing as npt

_Buffer = Union[bytes, bytearray, memoryview]

PATTERN_IDS: Dict[str, int]
CUSTOM_CUT_RULE: int
ERRORS_IDS: Dict[str, int]

class InvalidUTF8(ValueError):
    offset: int
    def __init__(self, offset: int) -> None: ...

def split_bytes(data: _Buffer, pattern: int, errors: int = ...) -> List[bytes]: ...
def chunk_ends(data: _Buffer, pattern: int, errors: int = ...) -> npt.NDArray[np.int64]: ...
def split_text(text: str, pattern: int) -> List[str]: ...
def find_cut(buf: _Buffer, start: int, rule: int) -> int: ...
def document_spans(data: _Buffer, newlines: int) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
