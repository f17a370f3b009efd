"""Stage 7: analysis. What a vocabulary costs and whom it serves, one function per question;
``skipgram``: which tokens a model trained on other text would barely update (glitch tokens).
"""
from .skipgram import SkipGram, skipgram, skipgram_ids

__all__ = ["skipgram", "skipgram_ids", "SkipGram"]
