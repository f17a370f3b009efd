"""Type stubs of the compiled normalisers (fastbpe/_core/normalize.pyx; the algorithm in charsmap.h)."""
from typing import Iterable

class SentencePieceNormalizer:
    def __init__(self, blob: bytes, add_dummy_prefix: bool, remove_extra_whitespaces: bool,
                 kept: Iterable[str] = ()) -> None: ...
    def __call__(self, text: str) -> str: ...
