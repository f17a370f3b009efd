"""Stage 4: encoding. The :class:`Tokenizer` (special tokens set apart, normalise, split, merge in
the compiled core; decode), its special-token policy (``special``), tokenizers from files
(``loading``) and OpenAI's encodings by name (``registry``), the vocabulary's lookups, decoding
and character offsets (``vocab``), many texts at once (``batch``), lone surrogates
(``surrogates``), and the encoder's ids as the id dtype without a second copy (``id_arrays``).
"""
from .loading import load, openai
from .registry import encoding_for_model, get_encoding
from .tokenizer import MERGE_RULES, Tokenizer

__all__ = ["Tokenizer", "MERGE_RULES", "load", "openai", "get_encoding", "encoding_for_model"]
