"""fastokens: a Rust encoder with the HF ``tokenizers`` interface; loads tiktoken rank files
(``encoding=`` names the split pattern and special tokens) and ``tokenizer.json`` files."""
from .base import OPENAI_VOCABULARIES, PublishedEncoders, flat_rows, published_file


class Fastokens(PublishedEncoders):
    name = "fastokens"
    module = "fastokens"
    vocabularies = OPENAI_VOCABULARIES + ("llama3",)

    def load(self, vocabulary, threads):
        import fastokens

        path = str(published_file(vocabulary))
        tok = (fastokens.Tokenizer.from_file(path) if vocabulary == "llama3"
               else fastokens.Tokenizer.from_tiktoken(path, encoding=vocabulary))
        # Its bulk API: two flat buffers, no Python object per token (threads: RAYON_NUM_THREADS).
        return lambda docs: flat_rows(*tok.encode_batch_flat(docs))
