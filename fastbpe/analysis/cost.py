"""What a vocabulary costs a model: the [V, d] tables, their bytes and share of the parameters,
the lm_head's FLOPs and the logits' bytes, and what that comes to on a given text.

A model has an input table (``embed_tokens``, a row gather per token) and an output table
(``lm_head``, a full [V, d] matvec per position: 2·V·d FLOPs). Tied models (Press and Wolf
2017; GPT-2, Llama-3.2-1B) share one table for both. The logits of one position are V floats
(4·V bytes in fp32). A bigger vocabulary makes those costs grow linearly while the text takes
fewer tokens: :func:`text_cost` puts both sides on the same text.

The presets are the published ``config.json`` of each model; their parameter counts are
computed from the architecture (every weight matrix, bias and norm), not copied.
"""
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

from .common import check_labels, resolve_tokenizer, tokenizer_labels

__all__ = ["cost", "text_cost", "ModelShape", "PRESETS", "DTYPE_BYTES"]

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
FAMILIES = ("gpt2", "llama", "qwen3")


@dataclass(frozen=True)
class ModelShape:
    """The shape of a decoder-only Transformer, enough to count its parameters.

    ``family``: ``gpt2`` (learned positions, biases, LayerNorm, 4·d MLP), ``llama`` (RoPE,
    no biases, RMSNorm, gated MLP of width ``ffn``, grouped-query attention) or ``qwen3``
    (``llama`` plus an RMSNorm on each head's queries and keys).
    """

    name: str
    family: str
    vocab: int
    d_model: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    tied: bool
    positions: int = 0
    source: str = ""

    def parameters(self) -> int:
        """Every parameter of the model, both vocabulary tables included (one when tied)."""
        d, tables = self.d_model, 1 if self.tied else 2
        if self.family == "gpt2":
            # per block: 2 LayerNorms (weight + bias), qkv and output projections with biases,
            # an MLP d -> 4d -> d with biases; then the final LayerNorm and the position table
            block = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * self.ffn + self.ffn) + (self.ffn * d + d)
            return tables * self.vocab * d + self.positions * d + self.layers * block + 2 * d
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        attention = d * q + 2 * d * kv + q * d
        if self.family == "qwen3":
            attention += 2 * self.head_dim  # q_norm and k_norm
        block = attention + 3 * d * self.ffn + 2 * d  # gate, up, down; two RMSNorms
        return tables * self.vocab * d + self.layers * block + d  # + the final RMSNorm


# From each model's published config.json on the Hugging Face hub (the repository named).
PRESETS: Dict[str, ModelShape] = {shape.name: shape for shape in (
    # openai-community/gpt2: n_embd 768, n_layer 12, n_head 12, n_positions 1024, vocab 50257, tied
    ModelShape("gpt2", "gpt2", 50257, 768, 12, 12, 12, 64, 3072, True, positions=1024,
               source="openai-community/gpt2"),
    # meta-llama/Meta-Llama-3-8B: hidden 4096, 32 layers, 32 heads, 8 KV heads, intermediate 14336
    ModelShape("llama3-8b", "llama", 128256, 4096, 32, 32, 8, 128, 14336, False,
               source="meta-llama/Meta-Llama-3-8B"),
    # meta-llama/Llama-3.2-1B: hidden 2048, 16 layers, 32 heads, 8 KV heads, head_dim 64,
    # intermediate 8192, tie_word_embeddings true
    ModelShape("llama3.2-1b", "llama", 128256, 2048, 16, 32, 8, 64, 8192, True,
               source="meta-llama/Llama-3.2-1B"),
    # Qwen/Qwen3-0.6B: hidden 1024, 28 layers, 16 heads, 8 KV heads, head_dim 128,
    # intermediate 3072, vocab 151936, tied
    ModelShape("qwen3-0.6b", "qwen3", 151936, 1024, 28, 16, 8, 128, 3072, True, source="Qwen/Qwen3-0.6B"),
    # Qwen/Qwen3-1.7B: hidden 2048, 28 layers, 16 heads, 8 KV heads, intermediate 6144, tied
    ModelShape("qwen3-1.7b", "qwen3", 151936, 2048, 28, 16, 8, 128, 6144, True, source="Qwen/Qwen3-1.7B"),
    # Qwen/Qwen3-4B: hidden 2560, 36 layers, 32 heads, 8 KV heads, intermediate 9728, tied
    ModelShape("qwen3-4b", "qwen3", 151936, 2560, 36, 32, 8, 128, 9728, True, source="Qwen/Qwen3-4B"),
    # Qwen/Qwen3-8B: hidden 4096, 36 layers, 32 heads, 8 KV heads, intermediate 12288, untied
    ModelShape("qwen3-8b", "qwen3", 151936, 4096, 36, 32, 8, 128, 12288, False, source="Qwen/Qwen3-8B"),
)}


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def cost(vocab: Optional[int] = None, d_model: Optional[int] = None, *, tied: Optional[bool] = None,
         params: Optional[int] = None, dtype: str = "bf16", preset: Optional[str] = None,
         tokens: Optional[int] = None) -> Dict[str, Any]:
    """The costs of a vocabulary of ``vocab`` tokens in a model of width ``d_model``.

    ``preset`` (a name of :data:`PRESETS`) fills in ``vocab``, ``d_model``, ``tied`` and
    ``params``; any of them given too overrides it (a what-if: only the tables change).
    ``params``: the whole model's parameters, for the vocabulary's share and the lm_head's share
    of the forward pass (about 2 FLOPs per parameter per token). ``tokens``: a token count, for
    the lm_head FLOPs and fp32 logits bytes of that many positions.

    >>> c = cost(128256, 4096, params=8_030_261_248)
    >>> c["params_per_table"], c["vocab_params"], round(100 * c["vocab_share"], 1)
    (525336576, 1050673152, 13.1)
    """
    shape = None
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; the presets are {', '.join(PRESETS)}")
        shape = PRESETS[preset]
        base_params = shape.parameters()
        vocab = shape.vocab if vocab is None else vocab
        d_model = shape.d_model if d_model is None else d_model
        tied = shape.tied if tied is None else tied
        if params is None:
            # the preset's other tensors, with the tables as asked
            params = base_params - (1 if shape.tied else 2) * shape.vocab * shape.d_model \
                + (1 if tied else 2) * vocab * d_model
    if vocab is None or d_model is None:
        raise ValueError("give vocab and d_model, or a preset")
    vocab, d_model = _positive_int("vocab", vocab), _positive_int("d_model", d_model)
    tied = bool(tied)
    if params is not None:
        params = _positive_int("params", params)
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0):
        raise ValueError(f"tokens must be an int >= 0, got {tokens!r}")
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}")
    tables = 1 if tied else 2
    per_table = vocab * d_model
    vocab_params = tables * per_table
    if params is not None and params < vocab_params:
        raise ValueError(f"params={params:,} is smaller than the vocabulary tables alone ({vocab_params:,})")
    lm_head_flops = 2 * vocab * d_model
    result: Dict[str, Any] = {
        "preset": preset,
        "source": shape.source if shape else None,
        "vocab": vocab,
        "d_model": d_model,
        "tied": tied,
        "tables": tables,
        "dtype": dtype,
        "params_per_table": per_table,
        "bytes_per_table": per_table * DTYPE_BYTES[dtype],
        "vocab_params": vocab_params,
        "vocab_bytes": vocab_params * DTYPE_BYTES[dtype],
        "model_params": params,
        "vocab_share": vocab_params / params if params else None,
        "lm_head_flops_per_token": lm_head_flops,
        "forward_flops_per_token": 2 * params if params else None,
        "lm_head_share_of_forward": lm_head_flops / (2 * params) if params else None,
        "logits_bytes_per_position": 4 * vocab,
        "embedding_bytes_read_per_token": d_model * DTYPE_BYTES[dtype],
        "tokens": tokens,
        "lm_head_flops": None if tokens is None else tokens * lm_head_flops,
        "logits_bytes": None if tokens is None else tokens * 4 * vocab,
    }
    return result


def text_cost(tokenizers: Sequence[Any], text: str, d_model: int, *, tied: bool = False,
              dtype: str = "bf16", labels: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    """For each tokenizer (a name, a path or a Tokenizer): the tokens ``text`` takes and what
    its vocabulary costs in a model of width ``d_model``: the table parameters and the lm_head
    FLOPs and fp32 logits bytes over those tokens. Fewer tokens against bigger tables: the trade
    of a bigger vocabulary, on the user's own text."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    labels = list(labels) if labels is not None else tokenizer_labels(tokenizers)
    if len(labels) != len(tokenizers):
        raise ValueError("give one label per tokenizer")
    check_labels(labels, tokenizers)
    rows = []
    for label, spec in zip(labels, tokenizers):
        tokenizer = resolve_tokenizer(spec)
        n = len(tokenizer.encode_to_numpy(text, disallowed_special=()))
        c = cost(tokenizer.n_vocab, d_model, tied=tied, dtype=dtype, tokens=n)  # (a row for every id)
        rows.append({
            "tokenizer": label,
            "vocab": c["vocab"],
            "tokens": n,
            "chars_per_token": len(text) / n if n else float("nan"),
            "vocab_params": c["vocab_params"],
            "vocab_bytes": c["vocab_bytes"],
            "lm_head_gflops": c["lm_head_flops"] / 1e9,
            "logits_mb": c["logits_bytes"] / 1e6,
        })
    return rows


def shape_dict(name: str) -> Dict[str, Any]:
    """A preset's shape and parameter count, as a dict (for ``--json``)."""
    shape = PRESETS[name]
    return {**asdict(shape), "parameters": shape.parameters()}


def cost_lines(result: Dict[str, Any]) -> List[Dict[str, Union[str, int, float]]]:
    """The rows of :func:`cost`'s table: quantity, value, and the value in people's units."""
    gb = 1e9
    rows = [
        ("vocabulary x width", f"{result['vocab']:,} x {result['d_model']:,}"
         + (f" ({result['preset']})" if result["preset"] else ""), ""),
        ("tables", "1 (tied)" if result["tied"] else "2 (embed_tokens, lm_head)", ""),
        ("params per table", f"{result['params_per_table']:,}", f"{result['params_per_table'] / 1e6:,.1f}M"),
        (f"bytes per table ({result['dtype']})", f"{result['bytes_per_table']:,}",
         f"{result['bytes_per_table'] / gb:,.2f} GB"),
        ("vocabulary params", f"{result['vocab_params']:,}", f"{result['vocab_params'] / 1e6:,.1f}M"),
    ]
    if result["model_params"]:
        rows += [
            ("model params", f"{result['model_params']:,}", f"{result['model_params'] / 1e9:,.2f}B"),
            ("vocabulary share", f"{result['vocab_share']:.4f}", f"{100 * result['vocab_share']:.1f}%"),
        ]
    rows.append(("lm_head FLOPs per token (2Vd)", f"{result['lm_head_flops_per_token']:,}",
                 f"{result['lm_head_flops_per_token'] / 1e9:,.3f} GFLOP"))
    if result["model_params"]:
        rows.append(("lm_head share of forward (2N)", f"{result['lm_head_share_of_forward']:.4f}",
                     f"{100 * result['lm_head_share_of_forward']:.1f}%"))
    rows += [
        ("fp32 logits per position (4V)", f"{result['logits_bytes_per_position']:,}",
         f"{result['logits_bytes_per_position'] / 1e3:,.0f} KB"),
        ("embedding bytes read per token", f"{result['embedding_bytes_read_per_token']:,}",
         f"{result['embedding_bytes_read_per_token'] / 1e3:,.1f} KB"),
    ]
    if result["tokens"] is not None:
        rows += [
            ("tokens", f"{result['tokens']:,}", ""),
            ("lm_head FLOPs over the tokens", f"{result['lm_head_flops']:,}", f"{result['lm_head_flops'] / 1e9:,.1f} GFLOP"),
            ("fp32 logits over the tokens", f"{result['logits_bytes']:,}", f"{result['logits_bytes'] / 1e6:,.1f} MB"),
        ]
    return [{"quantity": q, "value": v, "": h} for q, v, h in rows]
