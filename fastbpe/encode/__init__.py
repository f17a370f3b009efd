"""Stage 4: encoding. The :class:`Tokenizer` (special tokens set apart, normalise, split, merge in
the compiled core; decode), its special-token policy (``special``), and tokenizers from files
(``loading``).
"""
from .loading import load, openai
from .registry import encoding_for_model, get_encoding
from .tokenizer import MERGE_RULES, Tokenizer

__all__ = ["Tokenizer", "MERGE_RULES", "load", "openai", "get_encoding", "encoding_for_model"]
