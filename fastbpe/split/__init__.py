"""Stage 1: split text into chunks (pre-tokens) that no merge crosses.

``patterns`` is the one table of named patterns (name, published regex, compiled scanner, cut
rule); ``pretokenize`` splits text or UTF-8 bytes into chunks; ``bounds`` gives chunk bounds as
byte offsets for the encoder.
"""
from .bounds import chunk_bounds, staged_chunk_bounds
from .patterns import PATTERNS, compiled_regex, resolve
from .pretokenize import InvalidUTF8, pretokenize, pretokenize_bytes

__all__ = ["PATTERNS", "resolve", "compiled_regex", "pretokenize", "pretokenize_bytes", "InvalidUTF8",
           "chunk_bounds", "staged_chunk_bounds"]
