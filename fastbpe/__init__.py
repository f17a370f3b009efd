"""fastbpe: byte-pair-encoding tokenizers trained and used at corpus scale on CPU.

>>> import fastbpe
>>> tok = fastbpe.train("the cat sat on the mat " * 50, vocab_size=270, progress=False)
>>> tok.decode(tok.encode("the cat"))
'the cat'
"""
from . import reference
from .counting import count_words
from .pretokenize import pretokenize
from .tokenizer import Tokenizer
from .training import learn_from_table, train, train_words
from .wordtable import WordTable
from .formats import openai
from .shards import encode_files, read_shard

__version__ = "0.1.0"
__all__ = [
    "reference",
    "train",
    "train_words",
    "learn_from_table",
    "Tokenizer",
    "WordTable",
    "count_words",
    "pretokenize",
    "openai",
    "encode_files",
    "read_shard",
]
