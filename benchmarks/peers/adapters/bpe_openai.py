"""bpe-openai (PyPI ``bpe-openai``): tiktoken's interface over GitHub's ``bpe-openai`` Rust crate
(linear-time BPE), with OpenAI's vocabularies built in."""
from .base import OPENAI_VOCABULARIES, PublishedEncoders


class BpeOpenai(PublishedEncoders):
    name = "bpe-openai"
    module = "bpe_openai"
    vocabularies = OPENAI_VOCABULARIES

    def load(self, vocabulary, threads):
        import bpe_openai

        enc = bpe_openai.get_encoding(vocabulary)
        return lambda docs: enc.encode_ordinary_batch(docs, num_threads=threads)
