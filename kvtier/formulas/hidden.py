"""Restoring the KV cache from stored hidden states: what a tier holds, what a restore computes, what it costs.

HCache (Gao et al., arXiv 2410.05004, EuroSys 2025) stores each layer's input hidden state instead of its keys and
values, and on a hit recomputes only the K and V projections (no attention, no MLP), overlapping the hidden states'
transfer with that compute. Per token and layer it stores ``hidden_size`` elements where the KV cache stores
``2 x kv_heads x head_dim`` (one compressed latent of ``kv_lora_rank + qk_rope_head_dim`` under multi-head latent
attention), so:

- under multi-head attention (every query head its own key and value) the hidden state is half the KV;
- under grouped-query attention it is larger than the KV by ``hidden / (2 kv_heads head_dim)`` (Llama-3-70B:
  8,192 against 2 x 8 x 128 = 2,048 elements, four times larger);
- under multi-head latent attention it is larger still than the latent the cache holds (DeepSeek-V3: 7,168
  against 576).

Restoring a token's KV from its hidden states computes its projections into the cached elements:
``2 x hidden_size x kv_elements_per_token`` FLOP (a multiply and an add per weight; the K and V projections of every
layer, or the latent's down-projection under MLA), against the ``2 x active parameters`` of a forward pass.

Sizes are elements or bytes per token, work FLOP per token, times seconds.
"""

from __future__ import annotations

import numpy as np

from kvtier.formulas import costs


def hidden_elements_per_token(hidden_size: int, n_layers: int) -> int:
    """Elements a tier holds per token to restore the KV from hidden states: one hidden state per layer."""
    return int(hidden_size) * int(n_layers)


def hidden_bytes_per_token(hidden_size: int, n_layers: int, kv_bytes_per_token: float, kv_elements: int) -> float:
    """Bytes a tier holds per token to restore the KV from hidden states, in the KV's element type (B per token).

    :func:`hidden_elements_per_token` times the bytes of one KV element (``kv_bytes_per_token / kv_elements``).
    """
    return hidden_elements_per_token(hidden_size, n_layers) * (float(kv_bytes_per_token) / kv_elements)


def restore_flops_per_token(hidden_size: int, kv_elements_per_token: int, flops_per_param_token: float = 2.0) -> float:
    """FLOPs that recompute a token's cached KV from its hidden states: the projections into it (FLOP per token).

    ``flops_per_param_token x hidden_size x kv_elements_per_token``: every cached element is a dot product of the
    layer's hidden state with one row of its projection.
    """
    return float(flops_per_param_token) * float(hidden_size) * float(kv_elements_per_token)


def restore_s(
    tokens: np.ndarray,
    hidden_bytes_per_token: float,
    restore_flops_per_token_: float,
    bandwidth_bytes_per_s: float,
    peak_flop_per_s: float,
    mfu: float,
    latency_s: float = 0.0,
    transfers: float = 1.0,
) -> np.ndarray:
    """Restoring the KV of ``tokens`` tokens from hidden states over a link, the transfer overlapped with the compute.

    ``max(transfers x latency + tokens x hidden bytes / bandwidth, tokens x restore FLOPs / (peak x MFU))``: the
    projections of one layer run while the next layer's hidden states arrive, as HCache schedules them, so the
    slower of the two streams sets the time (s).
    """
    tokens = np.asarray(tokens, dtype=float)
    move = transfers * latency_s + tokens * hidden_bytes_per_token / bandwidth_bytes_per_s
    compute = costs.compute_time_s(tokens * restore_flops_per_token_, peak_flop_per_s, mfu)
    return np.where(tokens > 0, np.maximum(move, compute), 0.0)
