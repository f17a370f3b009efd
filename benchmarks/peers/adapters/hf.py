"""Hugging Face ``tokenizers``: byte-level BPE with the GPT-2 split, as GPT-2 and RoBERTa use it."""
import json
import os
from typing import Dict, List

from ...suites import common
from .base import Adapter, HexMerges, Timer, published_file


def byte_level_bpe(decoder: bool = True):
    """An untrained byte-level BPE tokenizer with the GPT-2 regex split."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if decoder:
        tok.decoder = decoders.ByteLevel()
    return tok


def bpe_trainer(vocab: int, min_frequency: int):
    """HF's BPE trainer with the same settings as every other library: no special tokens, the
    256 byte characters as the initial alphabet."""
    from tokenizers import pre_tokenizers, trainers

    return trainers.BpeTrainer(vocab_size=vocab, min_frequency=min_frequency, show_progress=False,
                               special_tokens=[], initial_alphabet=pre_tokenizers.ByteLevel.alphabet())


def merges_as_hex(tok) -> HexMerges:
    """A trained HF byte-level tokenizer's merges, as hex strings of the two tokens' bytes."""
    # GPT-2's byte -> printable character map, fastbpe's own (older checkouts: fastbpe.tokenizer)
    bytes_to_unicode = (common.feature("formats.bytelevel.bytes_to_unicode")
                        or common.feature("tokenizer.bytes_to_unicode"))
    inverse = {c: b for b, c in bytes_to_unicode().items()}
    merges = json.loads(tok.to_str())["model"]["merges"]
    out = []
    for merge in merges:
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        out.append([bytes(inverse[c] for c in left).hex(), bytes(inverse[c] for c in right).hex()])
    return out


def batch_encoder(tok):
    return lambda lines: [e.ids for e in tok.encode_batch(lines, add_special_tokens=False)]


class HuggingFace(Adapter):
    name = "hf"
    module = "tokenizers"
    rows = {
        "hf": ("HF tokenizers", "ByteLevel(GPT-2 regex) + BpeTrainer"),
        "hf-count": ("HF tokenizers, counting only", "same, vocab 256: reads, splits, counts, no merge"),
        "hf-merge": ("HF merge phase (estimate)", "median(HF) − median(HF counting only)"),
    }
    trainers = ("hf", "hf-count")

    def train(self, trainer, corpus, vocab, min_frequency, threads, out_dir):
        if trainer not in self.trainers:
            return super().train(trainer, corpus, vocab, min_frequency, threads, out_dir)
        if trainer == "hf-count":  # the byte alphabet only: everything but the merge loop
            vocab = 256
        tok = byte_level_bpe()
        trainer_obj = bpe_trainer(vocab, min_frequency)
        with Timer() as timer:
            tok.train([corpus], trainer_obj)
        result: dict = {"seconds": timer.seconds, "cpu_seconds": timer.cpu_seconds}
        merges: List[List[str]] = merges_as_hex(tok)
        result["vocab"] = tok.get_vocab_size()
        if trainer == "hf-count":
            return result, None
        tok.save(os.path.join(out_dir, "hf.json"))
        return result, merges

    def encoder(self, spec, out_dir, threads):
        from tokenizers import Tokenizer

        if spec == "hf":
            return batch_encoder(Tokenizer.from_file(os.path.join(out_dir, "hf.json")))
        if spec == "hf:gpt2":  # GPT-2's published files, as a check of the harness
            from tokenizers import decoders, models, pre_tokenizers

            vocab = common.data_file("tokenizers/encoder.json")
            merges = common.data_file("tokenizers/vocab.bpe")
            if vocab is None or merges is None:
                common.skip("GPT-2's encoder.json / vocab.bpe not in the shared data")
            tok = Tokenizer(models.BPE.from_file(str(vocab), str(merges)))
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
            tok.decoder = decoders.ByteLevel()
            return batch_encoder(tok)
        if spec == "hf:llama3":  # Llama 3's tokenizer.json: the reference of every llama3 encoder
            return batch_encoder(Tokenizer.from_file(str(published_file("llama3"))))
        return super().encoder(spec, out_dir, threads)

    def derive(self, rows: Dict[str, dict]) -> None:
        """``hf-merge``: HF's merge phase, estimated as its time minus the counting-only run's."""
        if rows.get("hf", {}).get("ok") and rows.get("hf-count", {}).get("ok"):
            hf, count = rows["hf"], rows["hf-count"]
            rows["hf-merge"] = {"ok": True, "median": hf["median"] - count["median"],
                                "min": hf["min"] - count["max"], "max": hf["max"] - count["min"],
                                "rss": hf["rss"], "n": hf["n"], "runs": hf["runs"]}
