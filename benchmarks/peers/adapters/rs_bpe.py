"""rs-bpe (PyPI ``rs_bpe``): linear-time BPE (the backtracking encoder of GitHub's ``bpe`` crate)
with cl100k and o200k built in."""
from .base import OPENAI_VOCABULARIES, PublishedEncoders


class RsBpe(PublishedEncoders):
    name = "rs-bpe"
    module = "rs_bpe"
    vocabularies = OPENAI_VOCABULARIES

    def load(self, vocabulary, threads):
        from rs_bpe.bpe import openai

        tok = getattr(openai, vocabulary)()
        if threads == 1:  # encode_batch returns (ids, total tokens, seconds)
            return lambda docs: tok.encode_batch(docs)[0]
        options = openai.ParallelOptions(1, 1, threads)
        return lambda docs: tok.encode_batch_parallel(docs, options)[0]
