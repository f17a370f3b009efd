"""gigatoken: a Rust encoder and trainer (``gigatoken.Tokenizer``, ``gigatoken.train_bpe``).

Encodes with tiktoken's rank files (it takes the split pattern and special tokens from the file's
name) and with HF ``tokenizer.json`` files; trains byte-level BPE from a file path (no
min-frequency; HF's tie rule)."""
import os

from .base import OPENAI_VOCABULARIES, PublishedEncoders, Timer, published_file


class Gigatoken(PublishedEncoders):
    name = "gigatoken"
    module = "gigatoken"
    vocabularies = OPENAI_VOCABULARIES + ("llama3",)
    rows = {"gigatoken": ("gigatoken", "train_bpe on the file: byte-level, HF tie rule; no min-frequency")}
    trainers = ("gigatoken",)

    def load(self, vocabulary, threads):
        import gigatoken

        path = published_file(vocabulary)
        tok = (gigatoken.Tokenizer(str(path)) if vocabulary == "llama3"
               else gigatoken.Tokenizer.from_tiktoken(str(path)))
        # Its native batch result (an awkward Array, one row per document); parallel=False keeps
        # the work on the calling thread, so one thread means one.
        return lambda docs: tok.encode_batch(docs, parallel=threads > 1)

    def train(self, trainer, corpus, vocab, min_frequency, threads, out_dir):
        if trainer not in self.trainers:
            return super().train(trainer, corpus, vocab, min_frequency, threads, out_dir)
        import gigatoken

        with Timer() as timer:
            tokens, merges = gigatoken.train_bpe(corpus, vocab, [], tie_breaking="huggingface")
        result = {"seconds": timer.seconds, "cpu_seconds": timer.cpu_seconds, "vocab": len(tokens)}
        return result, [[a.hex(), b.hex()] for a, b in merges]
