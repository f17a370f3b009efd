"""rustbpe: a Rust BPE trainer (``rustbpe.Tokenizer.train_from_iterator``) that takes the text
as an iterator of strings; it is given the file's lines and the GPT-2 split pattern."""
from .base import Adapter, Timer


class RustBpe(Adapter):
    name = "rustbpe"
    module = "rustbpe"
    rows = {"rustbpe": ("rustbpe", "train_from_iterator(lines): byte-level, GPT-2 split; no min-frequency")}
    trainers = ("rustbpe",)

    def train(self, trainer, corpus, vocab, min_frequency, threads, out_dir):
        if trainer not in self.trainers:
            return super().train(trainer, corpus, vocab, min_frequency, threads, out_dir)
        import rustbpe

        from ...suites import common

        pattern = common.feature("split.patterns.GPT2_ORIGINAL_PATTERN")
        tok = rustbpe.Tokenizer()
        with Timer() as timer:  # reading the file is timed, as for every trainer
            with open(corpus, encoding="utf-8", newline="") as f:
                tok.train_from_iterator(iter(f), vocab, pattern=pattern)
        return {"seconds": timer.seconds, "cpu_seconds": timer.cpu_seconds, "vocab": tok.vocab_size}, None
