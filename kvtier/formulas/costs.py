"""Fetch and regeneration costs of one KV block: pure, vectorized formulas.

Every function takes floats or numpy arrays in SI base units and broadcasts, so a
sweep of a million points is one call.  Each formula lives here once; the notebooks,
tables and CLI call these.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def block_bytes(kv_bytes_per_token: ArrayLike, block_tokens: ArrayLike) -> FloatArray:
    """Bytes of one KV block: ``kv_bytes_per_token x block_tokens`` (bytes)."""
    return _f(kv_bytes_per_token) * _f(block_tokens)


def fetch_time_s(
    n_bytes: ArrayLike, bandwidth_bytes_per_s: ArrayLike, latency_s: ArrayLike = 0.0, transfers: ArrayLike = 1
) -> FloatArray:
    """Time to move ``n_bytes`` over a link: ``transfers x latency + bytes / bandwidth`` (seconds).

    Parameters
    ----------
    n_bytes : array_like
        Bytes moved (B).
    bandwidth_bytes_per_s : array_like
        Sustained link bandwidth, one direction (B/s; decimal GB/s = 1e9 B/s).
    latency_s : array_like, optional
        Fixed per-transfer latency (s), 0 by default.
    transfers : array_like, optional
        Transfers the bytes are moved in (1: one contiguous copy; one per layer chunk for a
        paged cache), each paying ``latency_s``; the bytes themselves cross the link once.
    """
    return _f(transfers) * _f(latency_s) + _f(n_bytes) / _f(bandwidth_bytes_per_s)


def forward_flops(tokens: ArrayLike, params: ArrayLike, flops_per_param_token: ArrayLike = 2.0) -> FloatArray:
    """Parameter FLOPs of a forward pass over ``tokens`` tokens: ``k x N x tokens`` (FLOP).

    The attention-score term, which grows with context, is *not* included: see
    :func:`attention_flops`.
    """
    return _f(flops_per_param_token) * _f(params) * _f(tokens)


def attention_flops(tokens: ArrayLike, first_position: ArrayLike, flops_per_position: ArrayLike) -> FloatArray:
    """Attention-score FLOPs for ``tokens`` consecutive tokens starting at ``first_position``.

    Token ``i`` (0-based position) attends to ``i + 1`` positions (itself and all before
    it), so the sum over positions ``p .. p+T-1`` is ``T x p + T (T + 1) / 2`` positions,
    each costing ``flops_per_position`` (see
    :meth:`kvtier.inputs.models.ModelSpec.attention_flops_per_position`).
    """
    t = _f(tokens)
    p = _f(first_position)
    return _f(flops_per_position) * (t * p + t * (t + 1.0) / 2.0)


def compute_time_s(flops: ArrayLike, peak_flop_per_s: ArrayLike, mfu: ArrayLike) -> FloatArray:
    """Time to execute ``flops`` at ``mfu`` of the peak: ``flops / (peak x mfu)`` (seconds)."""
    return _f(flops) / (_f(peak_flop_per_s) * _f(mfu))


def tail_regen_time_s(
    block_tokens: ArrayLike,
    params: ArrayLike,
    peak_flop_per_s: ArrayLike,
    mfu: ArrayLike,
    flops_per_param_token: ArrayLike = 2.0,
) -> FloatArray:
    """Regeneration time of the most recent block, the source chapter's cheapest case (s).

    ``k x N x T / (peak x MFU)`` with the attention term left out, as in the chapter.
    """
    return compute_time_s(forward_flops(block_tokens, params, flops_per_param_token), peak_flop_per_s, mfu)


def ratio(regen_time_s: ArrayLike, fetch_time: ArrayLike) -> FloatArray:
    """How many times longer regenerating takes than fetching (dimensionless)."""
    return _f(regen_time_s) / _f(fetch_time)


def implied_peak_interval(
    flops: float, mfus: list[float], times_s: list[float], half_widths_s: list[float]
) -> tuple[float, float]:
    """The range of peak FLOP/s consistent with rounded regeneration times.

    A time quoted as ``t`` with rounding half-width ``w`` means the true time lies in
    ``[t - w, t + w)``; since ``time = flops / (peak x mfu)``, the peak lies in
    ``(flops / (mfu (t + w)), flops / (mfu (t - w))]``.  The intersection over all
    quoted times is returned as ``(low, high)`` in FLOP/s; ``low > high`` means no
    single peak fits them all.
    """
    low, high = 0.0, math.inf
    for mfu, t, w in zip(mfus, times_s, half_widths_s, strict=True):
        low = max(low, flops / (mfu * (t + w)))
        high = min(high, flops / (mfu * (t - w)))
    return low, high


def recompute_span(
    position: ArrayLike, block_tokens: ArrayLike, upstream: str, anchor_every: ArrayLike = 0
) -> tuple[FloatArray, FloatArray]:
    """Which tokens must be recomputed to regenerate the block at ``position``.

    Parameters
    ----------
    position : array_like
        0-based position of the block's first token (tokens).
    block_tokens : array_like
        Tokens in the block.
    upstream : {"resident", "evicted"}
        ``resident``: the KV of every earlier position is still cached, so only the
        block's own tokens are recomputed, attending over them.  ``evicted``: the
        upstream KV is gone too, so the forward pass restarts at the nearest resident
        anchor and walks the whole prefix up to and through the block.
    anchor_every : array_like, optional
        Spacing of resident anchors (tokens) for ``evicted``; 0 means the only anchor
        is the start of the context.

    Returns
    -------
    first_token, n_tokens : ndarray
        Position of the first recomputed token and how many tokens are recomputed.
    """
    p = _f(position)
    t = _f(block_tokens)
    if upstream == "resident":
        return p + 0.0 * t, t + 0.0 * p
    if upstream == "evicted":
        spacing = _f(anchor_every)
        anchor = np.where(spacing > 0, np.floor(p / np.where(spacing > 0, spacing, 1.0)) * spacing, 0.0)
        return anchor + 0.0 * t, p - anchor + t
    raise ValueError(f"upstream must be 'resident' or 'evicted', got {upstream!r}")


def regen_flops(
    position: ArrayLike,
    block_tokens: ArrayLike,
    params: ArrayLike,
    flops_per_position: ArrayLike,
    upstream: str = "resident",
    anchor_every: ArrayLike = 0,
    flops_per_param_token: ArrayLike = 2.0,
) -> FloatArray:
    """FLOPs to regenerate the block at ``position``, attention term included (FLOP).

    ``k x N x n + flops_per_position x (n x first + n (n + 1) / 2)`` for the ``n`` tokens
    recomputed from ``first`` (see :func:`recompute_span`).  At position 0 both cases
    reduce to the tail block at the start of a sequence.
    """
    first, n = recompute_span(position, block_tokens, upstream, anchor_every)
    return forward_flops(n, params, flops_per_param_token) + attention_flops(n, first, flops_per_position)


def bandwidth_for_ratio(
    n_bytes: ArrayLike, regen_time: ArrayLike, target_ratio: ArrayLike = 1.0, latency_s: ArrayLike = 0.0
) -> FloatArray:
    """Link bandwidth at which regenerating takes ``target_ratio`` times as long as fetching (B/s).

    Solves ``regen_time = target_ratio x (latency + n_bytes / bandwidth)`` for the
    bandwidth: ``n_bytes / (regen_time / target_ratio - latency)``.  With
    ``target_ratio = 1`` this is the break-even bandwidth below which regenerating
    wins.  Where the latency alone already exceeds ``regen_time / target_ratio`` no
    bandwidth reaches the target and the result is ``inf``.
    """
    budget = _f(regen_time) / _f(target_ratio) - _f(latency_s)
    with np.errstate(divide="ignore"):
        return np.where(budget > 0, _f(n_bytes) / np.where(budget > 0, budget, 1.0), np.inf)


def latency_for_ratio(
    n_bytes: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    regen_time: ArrayLike,
    transfers: ArrayLike = 1,
    target_ratio: ArrayLike = 1.0,
) -> FloatArray:
    """Per-transfer latency at which regenerating takes ``target_ratio`` times as long as fetching (s).

    Solves ``regen_time = target_ratio x (transfers x latency + n_bytes / bandwidth)`` for the
    latency: ``(regen_time / target_ratio - n_bytes / bandwidth) / transfers``.  With
    ``target_ratio = 1`` this is the break-even latency: a link whose every transfer costs
    more loses to regeneration.  Where the bytes alone already take longer than
    ``regen_time / target_ratio`` no latency reaches the target and the result is 0.
    """
    budget = _f(regen_time) / _f(target_ratio) - _f(n_bytes) / _f(bandwidth_bytes_per_s)
    return np.maximum(budget, 0.0) / _f(transfers)


def attention_parity_position(
    params: ArrayLike, flops_per_position: ArrayLike, block_tokens: ArrayLike, flops_per_param_token: ArrayLike = 2.0
) -> FloatArray:
    """Position at which a resident-upstream block's attention FLOPs equal its parameter FLOPs (tokens).

    Solves ``fpp x (T x p + T (T + 1) / 2) = k x N x T`` for ``p``:
    ``p = k N / fpp - (T + 1) / 2``.  Past it, regenerating even the block alone costs
    more than twice the source chapter's tail-block figure.
    """
    t = _f(block_tokens)
    return _f(flops_per_param_token) * _f(params) / _f(flops_per_position) - (t + 1.0) / 2.0
