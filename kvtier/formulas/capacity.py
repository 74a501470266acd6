"""Capacity: KV-cache footprint against context length, and against the weights.

Vectorized over numpy arrays; sizes in bytes, contexts in tokens.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def weight_bytes(params: ArrayLike, bytes_per_param: ArrayLike) -> NDArray[np.float64]:
    """Bytes of the model weights: ``parameters x bytes per parameter`` (B)."""
    return np.asarray(params, dtype=np.float64) * np.asarray(bytes_per_param, dtype=np.float64)


def kv_bytes(context_tokens: ArrayLike, kv_bytes_per_token: ArrayLike) -> NDArray[np.float64]:
    """KV-cache bytes of one sequence of ``context_tokens`` tokens (B)."""
    return np.asarray(context_tokens, dtype=np.float64) * np.asarray(kv_bytes_per_token, dtype=np.float64)


def kv_share_of_weights(
    context_tokens: ArrayLike, kv_bytes_per_token: ArrayLike, weights_bytes: ArrayLike
) -> NDArray[np.float64]:
    """One sequence's KV cache as a fraction of the weight footprint (dimensionless)."""
    return kv_bytes(context_tokens, kv_bytes_per_token) / np.asarray(weights_bytes, dtype=np.float64)


def crossover_context_tokens(weights_bytes: ArrayLike, kv_bytes_per_token: ArrayLike) -> NDArray[np.float64]:
    """Context length (tokens) at which one sequence's KV cache equals the weights.

    A linear extrapolation, ``weight bytes / KV bytes per token``, as in the source
    chapter; real deployments also hold activations and fragmentation overheads.
    """
    return np.asarray(weights_bytes, dtype=np.float64) / np.asarray(kv_bytes_per_token, dtype=np.float64)
