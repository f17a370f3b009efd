"""splintr (PyPI ``splintr-rs``): a Rust encoder with OpenAI's and Llama 3's vocabularies
built in (``Tokenizer.from_pretrained``)."""
from .base import OPENAI_VOCABULARIES, PublishedEncoders, flat_rows


class Splintr(PublishedEncoders):
    name = "splintr"
    module = "splintr"
    vocabularies = OPENAI_VOCABULARIES + ("llama3",)

    def load(self, vocabulary, threads):
        import splintr

        tok = splintr.Tokenizer.from_pretrained(vocabulary)
        # Its bulk API: two flat buffers (threads: RAYON_NUM_THREADS); encode_batch_flat does not
        # treat special tokens' text as special, as tiktoken's encode_ordinary.
        return lambda docs: flat_rows(*tok.encode_batch_flat(docs))
