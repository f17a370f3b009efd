from typing import Dict, List, Union

Buffer = Union[bytes, bytearray, memoryview]

PATTERN_IDS: Dict[str, int]
ERRORS_IDS: Dict[str, int]

class InvalidUTF8(ValueError):
    offset: int
    def __init__(self, offset: int) -> None: ...

def split_bytes(data: Buffer, pattern: int, errors: int = ...) -> List[bytes]: ...
def split_text(text: str, pattern: int) -> List[str]: ...
def find_cut(buf: Buffer, start: int, pattern: int) -> int: ...
