"""The model as ``kvtier measure`` builds it: dense decoders only, and their parameter counts."""

from __future__ import annotations

from kvtier.errors import KvtierError
from kvtier.inputs.models import ModelSpec


def layer_params(spec: ModelSpec) -> int:
    """Parameters of one dense decoder layer as measured (attention and SwiGLU MLP, no norms)."""
    h, q, kv = spec.hidden_size, spec.n_heads * spec.head_dim, spec.n_kv_heads * spec.head_dim
    return h * (q + 2 * kv) + q * h + 3 * h * spec.intermediate_size


def check_model(spec: ModelSpec) -> None:
    """Refuse a model ``kvtier measure`` cannot build: multi-head latent attention or a mixture of experts."""
    if spec.attention == "MLA" or spec.is_moe:
        raise KvtierError(
            f"model '{spec.name}': kvtier measure builds dense MHA/GQA decoders only; this one is"
            f" {'MLA' if spec.attention == 'MLA' else 'a mixture of experts'}"
        )


def model_params(spec: ModelSpec) -> int:
    """Parameters of the whole model as measured: every layer, the embedding and the untied head."""
    return spec.n_layers * layer_params(spec) + 2 * spec.vocab_size * spec.hidden_size
