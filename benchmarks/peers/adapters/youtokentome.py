"""YouTokenToMe: character-level BPE (no byte level, no min-frequency); line-based, so it
encodes the documents' lines."""
import os

from .base import Adapter, Timer, lines_of


class YouTokenToMe(Adapter):
    name = "youtokentome"
    module = "youtokentome"
    rows = {"youtokentome": ("youtokentome", "character-level BPE (no byte level); no min-frequency")}
    trainers = ("youtokentome",)

    def train(self, trainer, corpus, vocab, min_frequency, threads, out_dir):
        if trainer not in self.trainers:
            return super().train(trainer, corpus, vocab, min_frequency, threads, out_dir)
        import youtokentome as yttm

        model = os.path.join(out_dir, "youtokentome.model")
        with Timer() as timer:
            yttm.BPE.train(data=corpus, model=model, vocab_size=vocab, n_threads=threads, coverage=1.0)
        result = {"seconds": timer.seconds, "cpu_seconds": timer.cpu_seconds}
        result["vocab"] = yttm.BPE(model).vocab_size()
        return result, None

    def encoder(self, spec, out_dir, threads):
        if spec != "youtokentome":
            return super().encoder(spec, out_dir, threads)
        import youtokentome as yttm

        bpe = yttm.BPE(os.path.join(out_dir, "youtokentome.model"), n_threads=threads)
        return lambda docs: bpe.encode(lines_of(docs))
