"""tiktoken: OpenAI's encoder, on OpenAI's published ranks (it does not train)."""
from ...suites import common
from .base import Adapter


class Tiktoken(Adapter):
    name = "tiktoken"
    module = "tiktoken"

    def encoder(self, spec, out_dir, threads):
        kind, _, name = spec.partition(":")
        if kind != "tiktoken" or not name:
            return super().encoder(spec, out_dir, threads)
        enc = common.tiktoken_encoding(name)
        if threads == 1:  # its batch API runs a thread pool even for one thread: slower
            return lambda docs: [enc.encode_ordinary(d) for d in docs]
        return lambda docs: enc.encode_ordinary_batch(docs, num_threads=threads)
