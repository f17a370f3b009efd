"""Questions about a vocabulary, one function each (the stage after the pipeline: it reads
tokenizers and corpora, and trains through ``learn``).

* :func:`tax`: the token premium of each language on a parallel corpus (Petrov et al. 2023),
  and :func:`tax_sweep`, the premium of a language against its share of the training text;
* :func:`cost`: what a [V, d] vocabulary table costs a model (parameters, bytes, lm_head FLOPs,
  logits), and :func:`text_cost`, that cost on a given text;
* :func:`trace`: a training run merge by merge (Sennrich et al. 2016), and :func:`trace_word`,
  the order a word's merges fire in;
* :func:`skipgram`: skip-gram embeddings on token ids (Mikolov et al. 2013), to see which rows a
  model trained on other text barely updates (glitch tokens);
* :func:`audit`: unreachable tokens, tokens that are not UTF-8, tokens a corpus never produces
  (under-trained candidates, Land and Bartolo 2024), and how digit runs split.

Plots need matplotlib (optional: ``pip install 'fastbpe[analysis]'``).
"""
import importlib

from .audit import audit, digit_splits, never_produced, reachability
from .common import resolve_tokenizer
from .cost import PRESETS, cost, text_cost
from .tax import read_parallel, tax, tax_sweep
from .trace import trace, trace_word

__all__ = [
    "tax", "tax_sweep", "read_parallel",
    "cost", "text_cost", "PRESETS",
    "trace", "trace_word",
    "audit", "reachability", "never_produced", "digit_splits",
    "skipgram", "skipgram_ids", "SkipGram",
    "resolve_tokenizer",
]

_SKIPGRAM = ("SkipGram", "skipgram", "skipgram_ids")


def __getattr__(name: str):
    """The skip-gram names, imported when first used: they load Numba (about half a second at
    start-up and a third of one at exit), which no other question needs."""
    if name not in _SKIPGRAM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(".skipgram", __name__)
    # (importing the submodule binds its name here to the module: the function takes it back)
    globals().update({key: getattr(module, key) for key in _SKIPGRAM})
    return globals()[name]
