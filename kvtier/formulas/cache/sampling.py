"""Spatially hashed sampling (SHARDS): a block is kept when the hash of its id falls below the rate.

A kept block keeps every reference to it, so the sampled stream's stack distances, scaled by the
rate, estimate the exact ones (:class:`kvtier.formulas.cache.stream.LruStream` with a rate below 1).
"""

from __future__ import annotations

import numpy as np

from kvtier.formulas.cache.ids import mix64

SAMPLE_SPACE = 1 << 24
"""P of spatially hashed sampling: a block is kept when its hashed id modulo P is below ``rate x P``."""


def sample_threshold(rate: float) -> int:
    """``rate x P`` (:data:`SAMPLE_SPACE`), rounded, at least 1: the hashed ids kept are those below it."""
    if not 0 < rate <= 1:
        raise ValueError(f"sample rate must be in (0, 1], got {rate!r}")
    return max(1, round(rate * SAMPLE_SPACE))


def block_hash(ids: np.ndarray) -> np.ndarray:
    """Each (prefix-chained) id hashed into ``[0, P)`` (:data:`SAMPLE_SPACE`) by SplitMix64's finalizer."""
    return (mix64(np.ascontiguousarray(ids, dtype=np.int64).view(np.uint64)) & np.uint64(SAMPLE_SPACE - 1)).astype(
        np.int64
    )
