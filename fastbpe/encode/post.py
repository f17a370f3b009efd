"""Step 6 of encoding, a ``tokenizer.json``'s post-processor: the ids ``tokenizers`` puts around
a text's ids (or a pair of texts') when it encodes with ``add_special_tokens=True``, as Llama's
files put ``<|begin_of_text|>`` first. A tokenizer keeps the file's object as it is
(``Tokenizer.post_processor``); :func:`post_process` applies it to ids.

Each processor maps the list of sequences (one, or a pair) to a list of sequences, as
``tokenizers``' ``process_encodings`` does, and the result is their concatenation:

* ``TemplateProcessing``: its ``single`` or ``pair`` template, piece by piece: a special token's
  ids, or sequence ``A`` or ``B``;
* ``BertProcessing``: ``cls A sep`` and ``cls A sep B sep``;
* ``RobertaProcessing``: ``cls A sep`` and ``cls A sep sep B sep``;
* ``ByteLevel``: the sequences as they are (it trims offsets, not ids);
* ``Sequence``: its processors in turn.

>>> template = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
...             {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {"<s>": {"ids": [1]}}}
>>> post_process(template, [5, 6])
[1, 5, 6]
"""
from typing import List, Mapping, Optional, Sequence

__all__ = ["post_process"]


def post_process(processor: Optional[Mapping], ids: Sequence[int], pair: Optional[Sequence[int]] = None) -> List[int]:
    """The ids ``tokenizers`` gives for ``ids`` (and ``pair``) under this post-processor (None:
    the ids as they are, a pair concatenated); a ValueError names a processor it does not know."""
    sequences = [list(ids)] + ([] if pair is None else [list(pair)])
    if processor is not None:
        try:
            sequences = _process(processor, sequences)
        except (KeyError, TypeError, IndexError, AttributeError) as exc:
            raise ValueError(f"the post_processor is not one tokenizers reads ({type(exc).__name__}: {exc})") from None
    return [i for sequence in sequences for i in sequence]


def _process(processor: Mapping, sequences: List[List[int]]) -> List[List[int]]:
    kind = processor.get("type")
    if kind == "Sequence":
        for step in processor.get("processors") or ():
            sequences = _process(step, sequences)
        return sequences
    if kind == "ByteLevel":
        return sequences
    if kind == "TemplateProcessing":
        template = processor["single" if len(sequences) == 1 else "pair"]
        specials = processor.get("special_tokens", {})
        out: List[int] = []
        for piece in template:
            if "SpecialToken" in piece:
                out += specials[piece["SpecialToken"]["id"]]["ids"]
            else:
                out += sequences[{"A": 0, "B": 1}[piece["Sequence"]["id"]]]
        return [out]
    if kind in ("BertProcessing", "RobertaProcessing"):
        cls, sep = [processor["cls"][1]], [processor["sep"][1]]
        first = cls + sequences[0] + sep
        if len(sequences) == 1:
            return [first]
        between = sep if kind == "RobertaProcessing" else []
        return [first + between + sequences[1] + sep]
    raise ValueError(f"a {kind!r} post-processor is not supported (TemplateProcessing, BertProcessing, "
                     "RobertaProcessing, ByteLevel and Sequence are)")
