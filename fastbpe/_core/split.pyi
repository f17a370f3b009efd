from typing import Dict, List, Union

import numpy as np
import numpy.typing as npt

Buffer = Union[bytes, bytearray, memoryview]

PATTERN_IDS: Dict[str, int]
ERRORS_IDS: Dict[str, int]

class InvalidUTF8(ValueError):
    offset: int
    def __init__(self, offset: int) -> None: ...

def split_bytes(data: Buffer, pattern: int, errors: int = ...) -> List[bytes]: ...
def chunk_ends(data: Buffer, pattern: int, errors: int = ...) -> npt.NDArray[np.int64]: ...
def split_text(text: str, pattern: int) -> List[str]: ...
def find_cut(buf: Buffer, start: int, pattern: int) -> int: ...
