"""Stage 3: learning merges. ``train`` (corpus in, Tokenizer out), ``learn_from_table`` (a counted
``WordTable`` to flat merge arrays) and ``train_words`` (the contract the compiled learner and the
reference share), with Hugging Face ``BpeTrainer``'s tie rule for ``compat="hf"``.
"""
from .learner import learn_from_table
from .train import BACKENDS, hf_byte_tie_ranks, train, train_words

__all__ = ["train", "train_words", "learn_from_table", "hf_byte_tie_ranks", "BACKENDS"]
