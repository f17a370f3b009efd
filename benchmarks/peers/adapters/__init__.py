"""One adapter per library, all with the same interface (:class:`~.base.Adapter`): what it needs
installed, which trainers it offers, how one of them trains on a corpus file, how to get an
encoder for one of its models or published vocabularies, and which table rows derive from its
runs. The harness (``run``, ``child``) and the report name no library; to compare one more,
add a module here and list it in :data:`ADAPTERS`.

Names: a trainer is a row name (``fastbpe``, ``fastbpe-hf``, ``hf``, ``hf-count``, ...); an
encoder spec is a trainer's name (its trained model) or ``<library>:<vocabulary>``
(``tiktoken:cl100k_base``, ``fastbpe:r50k_base``, ``hf:gpt2``, ``gigatoken:llama3``).
"""
from typing import Dict, Optional

from .base import Adapter, Encoder, HexMerges, PublishedEncoders, Timer, lines_of
from .bpe_openai import BpeOpenai
from .fastbpe import Fastbpe
from .fastokens import Fastokens
from .gigatoken import Gigatoken
from .hf import HuggingFace
from .rs_bpe import RsBpe
from .rustbpe import RustBpe
from .sentencepiece import SentencePiece
from .splintr import Splintr
from .tiktoken import Tiktoken
from .youtokentome import YouTokenToMe

__all__ = ["Adapter", "Encoder", "HexMerges", "Timer", "lines_of", "ADAPTERS", "TRAINERS", "LABELS",
           "SETTINGS", "PEER_ENCODERS", "adapter", "available"]

# The peers are optional installs: an absent one is skipped, with the reason in the table.
ADAPTERS = (Fastbpe(), HuggingFace(), SentencePiece(), YouTokenToMe(), Gigatoken(), RustBpe(), Tiktoken(),
            Fastokens(), Splintr(), RsBpe(), BpeOpenai())

# Every trainer, and every table row with its label and settings, in table order.
TRAINERS = [t for a in ADAPTERS for t in a.trainers]
LABELS: Dict[str, str] = {row: label for a in ADAPTERS for row, (label, _) in a.rows.items()}
SETTINGS: Dict[str, str] = {row: settings for a in ADAPTERS for row, (_, settings) in a.rows.items()}

# Every encoder spec of the libraries that only encode published vocabularies here.
PEER_ENCODERS = [s for a in ADAPTERS if isinstance(a, PublishedEncoders) for s in a.specs]


def adapter(name: str) -> Adapter:
    """The adapter of a trainer (``hf-count``) or an encoder spec (``hf``, ``hf:gpt2``)."""
    key = name.split(":")[0]
    for a in ADAPTERS:
        if key == a.name or key in a.rows:
            return a
    raise ValueError(f"unknown library {name!r}")


def available(name: str) -> Optional[str]:
    """None when ``name`` can run, else why not (an unknown name fails in its child instead)."""
    try:
        return adapter(name).available()
    except ValueError:
        return None
