"""tokenizer.json files that ``tokenizers`` itself trains, for the tests that compare fastbpe's
reading of a file with the library that wrote it."""
import json


def trained_by_tokenizers(rows, vocab_size: int) -> dict:
    """A byte-level BPE ``tokenizer.json`` (as a dict) that ``tokenizers`` trains on ``rows``;
    the tests then put in the normaliser, split stages and added tokens of the layout they need."""
    from tokenizers import Tokenizer as HF, models, pre_tokenizers, trainers

    hf = HF(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    hf.train_from_iterator(rows, trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                                     initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return json.loads(hf.to_str())
