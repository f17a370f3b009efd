"""sentencepiece: its BPE model with byte fallback (it has no byte-level pre-split and no
min-frequency); line-based, so it trains on and encodes the documents' lines."""
import os

from .base import Adapter, Timer, lines_of


class SentencePiece(Adapter):
    name = "sentencepiece"
    module = "sentencepiece"
    rows = {"sentencepiece": ("sentencepiece", "model_type=bpe, byte_fallback, identity normalisation; "
                                               "no min-frequency")}
    trainers = ("sentencepiece",)

    def train(self, trainer, corpus, vocab, min_frequency, threads, out_dir):
        if trainer not in self.trainers:
            return super().train(trainer, corpus, vocab, min_frequency, threads, out_dir)
        import sentencepiece as spm

        with Timer() as timer:
            spm.SentencePieceTrainer.train(
                input=corpus, model_prefix=os.path.join(out_dir, "sentencepiece"), vocab_size=vocab,
                model_type="bpe", byte_fallback=True, character_coverage=1.0, num_threads=threads,
                normalization_rule_name="identity", add_dummy_prefix=False,
                remove_extra_whitespaces=False, hard_vocab_limit=False, minloglevel=2)
        result = {"seconds": timer.seconds, "cpu_seconds": timer.cpu_seconds}
        model = spm.SentencePieceProcessor(model_file=os.path.join(out_dir, "sentencepiece.model"))
        result["vocab"] = model.get_piece_size()
        return result, None

    def encoder(self, spec, out_dir, threads):
        if spec != "sentencepiece":
            return super().encoder(spec, out_dir, threads)
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=os.path.join(out_dir, "sentencepiece.model"))
        return lambda docs: sp.encode(lines_of(docs), num_threads=threads)
