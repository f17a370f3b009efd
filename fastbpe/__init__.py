"""fastbpe: byte-pair-encoding tokenizers trained and used at corpus scale on CPU."""
from . import reference

__version__ = "0.1.0"
__all__ = ["reference"]
from .pretokenize import PATTERNS, pretokenize, pretokenize_bytes  # noqa: E402
from .counting import CorpusDecodeError, count_words  # noqa: E402
from .wordtable import WordTable  # noqa: E402

__all__ += ["PATTERNS", "pretokenize", "pretokenize_bytes", "count_words", "CorpusDecodeError", "WordTable"]
