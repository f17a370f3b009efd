"""fastbpe: byte-pair-encoding tokenizers trained and used at corpus scale on CPU.

>>> import fastbpe
>>> tok = fastbpe.train("the cat sat on the mat " * 50, vocab_size=270, progress=False)
>>> tok.decode(tok.encode("the cat"))
'the cat'
"""
from . import reference
from .counting import CorpusDecodeError, count_words
from .pretokenize import PATTERNS, pretokenize, pretokenize_bytes
from .tokenizer import Tokenizer
from .training import learn_from_table, train, train_words
from .wordtable import WordTable

__version__ = "0.1.0"
__all__ = [
    "reference",
    "train",
    "train_words",
    "learn_from_table",
    "Tokenizer",
    "WordTable",
    "count_words",
    "CorpusDecodeError",
    "pretokenize",
    "pretokenize_bytes",
    "PATTERNS",
]
