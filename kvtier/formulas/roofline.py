"""Roofline regeneration time and the link bandwidth at which fetching breaks even.

The source chapter times regeneration by compute alone, ``FLOPs / (peak x MFU)``.  A
forward pass over a 16-token block must also stream the weights (and the cached KV
it attends to) from device memory, and for a lone block that read, not the
arithmetic, sets the time.  The functions here put the two sides together as a
roofline: the pass takes as long as the slower of its compute and its memory
traffic.

All functions are pure and vectorized: they take floats or numpy arrays in SI base
units (bytes, s, FLOP, FLOP/s, B/s; bandwidths decimal, 1 GB/s = 1e9 B/s) and
broadcast, so a sweep over any grid of inputs is one call.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kvtier.errors import KvtierError
from kvtier.formulas import costs

FloatArray = NDArray[np.float64]

BOUNDS = ("compute", "memory")
"""The labels :func:`bound` returns."""


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def _require_positive(value: FloatArray, name: str) -> None:
    if np.any(np.isnan(value)):
        raise KvtierError(f"{name} is required: got a missing value (None or NaN)")
    if np.any(value <= 0):
        raise KvtierError(f"{name} must be positive, got {float(np.min(value)):g}")


def _require_fraction(value: FloatArray, name: str) -> None:
    if np.any(np.isnan(value)) or np.any(value <= 0) or np.any(value > 1):
        bad = value[np.isnan(value) | (value <= 0) | (value > 1)].flat[0]
        raise KvtierError(f"{name} must be in (0, 1], got {float(bad):g}")


def regen_bytes_read(
    weight_bytes: ArrayLike,
    block_tokens: ArrayLike,
    batch_tokens: ArrayLike,
    kv_bytes_per_token: ArrayLike,
    context_positions: ArrayLike,
) -> FloatArray:
    """Bytes a block's regeneration reads from device memory, attributed to the block (B).

    ``weight_bytes x block_tokens / batch_tokens + kv_bytes_per_token x context_positions``

    The model:

    - **Weights.** One forward pass reads every weight once from device memory, however
      many tokens it processes (the weights do not fit on chip, and a pass streams them
      layer by layer).  The ``batch_tokens`` tokens processed in the same pass share that
      read; the block's share is proportional to its tokens,
      ``weight_bytes x block_tokens / batch_tokens``.  A block regenerated on its own
      (a *lone* block) has ``batch_tokens == block_tokens`` and pays for all the weights.
      For an MoE model pass the bytes of the weights a pass actually touches.
    - **Cached KV.** Attention reads the K and V of every cached position the block's
      tokens attend to, once per pass: a fused attention kernel streams each K/V row once
      for all the block's query tokens, and other sequences in the batch have their own
      KV, so nothing is shared.  ``context_positions`` is the number of such positions
      read from device memory: for a block starting at position ``p`` with its prefix
      resident, ``p`` (the block's own K/V are produced in the pass and consumed from
      on-chip memory); pass ``p + block_tokens`` to count those too.
    - **Not counted.** Activations (kilobytes to megabytes per token, mostly on chip),
      and writes, including the regenerated block's own KV (``kv_bytes_per_token x
      block_tokens``); add them if your memory system is write-limited.

    Parameters
    ----------
    weight_bytes : array_like
        Bytes of the weights one pass reads (B).
    block_tokens : array_like
        Tokens in the block being regenerated (tokens, > 0).
    batch_tokens : array_like
        Tokens processed by the same forward pass, the block's included (tokens,
        ``>= block_tokens``).
    kv_bytes_per_token : array_like
        KV-cache bytes per token over all layers (B).
    context_positions : array_like
        Cached positions whose KV the block's attention reads (tokens, >= 0).

    Returns
    -------
    ndarray
        Bytes read from device memory on the block's account (B).

    Raises
    ------
    KvtierError
        If ``block_tokens`` is not positive or ``batch_tokens < block_tokens``.
    """
    block = _f(block_tokens)
    batch = _f(batch_tokens)
    _require_positive(block, "block_tokens")
    if np.any(batch < block):
        raise KvtierError("batch_tokens must be >= block_tokens (a lone block has batch_tokens == block_tokens)")
    return _f(weight_bytes) * block / batch + _f(kv_bytes_per_token) * _f(context_positions)


def _compute_side(flops: ArrayLike, peak_flop_per_s: ArrayLike, mfu: ArrayLike) -> FloatArray:
    """Compute side of the roofline, :func:`kvtier.formulas.costs.compute_time_s`, with its inputs checked (s).

    A missing peak (None or NaN, e.g. DGX Spark, which publishes no bf16 peak) or an MFU
    outside (0, 1] is a :class:`~kvtier.errors.KvtierError`; the time itself is the one
    formula, ``flops / (peak x mfu)``.
    """
    peak = _f(peak_flop_per_s)
    mfu = _f(mfu)
    _require_positive(peak, "peak_flop_per_s (a peak compute rate)")
    _require_fraction(mfu, "mfu")
    return costs.compute_time_s(flops, peak, mfu)


def memory_time_s(
    bytes_read: ArrayLike, mem_bandwidth_bytes_per_s: ArrayLike, mem_efficiency: ArrayLike = 1.0
) -> FloatArray:
    """Memory side of the roofline: ``bytes_read / (bandwidth x efficiency)`` (s).

    Parameters
    ----------
    bytes_read : array_like
        Bytes read from device memory (B), e.g. from :func:`regen_bytes_read`.
    mem_bandwidth_bytes_per_s : array_like
        Peak device-memory bandwidth (B/s).
    mem_efficiency : array_like, optional
        Achieved fraction of that peak, in (0, 1]; 1 by default.
    """
    bw = _f(mem_bandwidth_bytes_per_s)
    eff = _f(mem_efficiency)
    _require_positive(bw, "mem_bandwidth_bytes_per_s")
    _require_fraction(eff, "mem_efficiency")
    return _f(bytes_read) / (bw * eff)


def roofline_time_s(
    flops: ArrayLike,
    bytes_read: ArrayLike,
    peak_flop_per_s: ArrayLike,
    mfu: ArrayLike,
    mem_bandwidth_bytes_per_s: ArrayLike,
    mem_efficiency: ArrayLike = 1.0,
) -> FloatArray:
    """Time of a forward pass under the roofline model (s).

    ``max(flops / (peak x mfu), bytes_read / (bandwidth x mem_efficiency))``: compute
    and memory traffic overlap perfectly, so the slower side sets the time.  When the
    compute side binds this equals the MFU model of the source chapter,
    :func:`kvtier.formulas.costs.compute_time_s`.

    Parameters
    ----------
    flops : array_like
        Work of the pass (FLOP).
    bytes_read : array_like
        Bytes read from device memory (B).
    peak_flop_per_s : array_like
        Dense peak compute rate (FLOP/s); missing (None/NaN) is an error.
    mfu : array_like
        Achieved fraction of the peak, in (0, 1].
    mem_bandwidth_bytes_per_s : array_like
        Peak device-memory bandwidth (B/s).
    mem_efficiency : array_like, optional
        Achieved fraction of the memory bandwidth, in (0, 1]; 1 by default.

    Returns
    -------
    ndarray
        Time (s), broadcast over all inputs.
    """
    return np.maximum(
        _compute_side(flops, peak_flop_per_s, mfu),
        memory_time_s(bytes_read, mem_bandwidth_bytes_per_s, mem_efficiency),
    )


def bound(
    flops: ArrayLike,
    bytes_read: ArrayLike,
    peak_flop_per_s: ArrayLike,
    mfu: ArrayLike,
    mem_bandwidth_bytes_per_s: ArrayLike,
    mem_efficiency: ArrayLike = 1.0,
) -> NDArray[np.str_]:
    """Which side of the roofline binds, elementwise: ``"compute"`` or ``"memory"``.

    Same parameters as :func:`roofline_time_s`.  ``"memory"`` where the memory time
    exceeds the compute time, ``"compute"`` otherwise (a tie counts as compute-bound).

    Returns
    -------
    ndarray of str
        ``"compute"`` or ``"memory"``, broadcast over all inputs.
    """
    compute = _compute_side(flops, peak_flop_per_s, mfu)
    memory = memory_time_s(bytes_read, mem_bandwidth_bytes_per_s, mem_efficiency)
    return np.where(memory > compute, BOUNDS[1], BOUNDS[0])


def break_even_bandwidth(block_bytes: ArrayLike, regen_time_s: ArrayLike, latency_s: ArrayLike = 0.0) -> FloatArray:
    """Link bandwidth at which fetching a block takes as long as regenerating it (B/s).

    Fetch time is ``latency + block_bytes / bandwidth`` (:func:`kvtier.formulas.costs.fetch_time_s`);
    setting it equal to ``regen_time_s`` gives
    ``block_bytes / (regen_time_s - latency_s)``.  Any faster link makes fetching win.
    With no latency, ``break_even_bandwidth x regen_time_s == block_bytes``.

    Where ``latency_s >= regen_time_s`` the fetch loses at any bandwidth, and the result
    is ``inf`` (no finite bandwidth makes fetching win).  NaN in any input gives NaN.

    Parameters
    ----------
    block_bytes : array_like
        Bytes of the block (B).
    regen_time_s : array_like
        Time to regenerate it (s).
    latency_s : array_like, optional
        Fixed per-transfer latency of the link (s); 0 by default.

    Returns
    -------
    ndarray
        Break-even bandwidth (B/s; decimal GB/s = 1e9 B/s), or ``inf``.
    """
    size = _f(block_bytes)
    slack = _f(regen_time_s) - _f(latency_s)
    result = costs.bandwidth_for_ratio(size, regen_time_s, 1.0, latency_s)
    return np.where(np.isnan(size) | np.isnan(slack), np.nan, result)


def compute_bound_batch_tokens(
    weight_bytes: ArrayLike,
    block_tokens: ArrayLike,
    kv_bytes_per_token: ArrayLike,
    context_positions: ArrayLike,
    compute_time: ArrayLike,
    mem_bandwidth_bytes_per_s: ArrayLike,
    mem_efficiency: ArrayLike = 1.0,
) -> FloatArray:
    """Smallest batch (tokens per forward pass) at which regenerating the block is compute-bound.

    Setting the memory time of :func:`regen_bytes_read` equal to ``compute_time`` and
    solving for the batch: ``W x T / (t_c x bw x eff - kv x p)``.  Never below the
    block itself (a block that is compute-bound alone returns ``block_tokens``); ``inf``
    where reading the cached KV alone takes longer than the compute, so that no batch
    makes the block compute-bound.
    """
    t = _f(block_tokens)
    budget = _f(compute_time) * _f(mem_bandwidth_bytes_per_s) * _f(mem_efficiency) - _f(kv_bytes_per_token) * _f(
        context_positions
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        batch = np.where(budget > 0, _f(weight_bytes) * t / np.where(budget > 0, budget, 1.0), np.inf)
    return np.maximum(batch, t)


def lone_knee_tokens(
    weight_bytes: ArrayLike,
    mem_bandwidth_bytes_per_s: ArrayLike,
    mem_efficiency: ArrayLike,
    peak_flop_per_s: ArrayLike,
    mfu: ArrayLike,
    params: ArrayLike,
    flops_per_param_token: ArrayLike = 2.0,
) -> FloatArray:
    """Tokens at which a lone pass's parameter FLOPs take as long as its read of the weights (tokens).

    Setting the compute side of ``n`` tokens, ``k x N x n / (peak x mfu)``, equal to the
    memory side of the weights, :func:`memory_time_s` of ``weight_bytes``, and solving for
    ``n``: ``weights_time x peak x mfu / (k x N)``.  The attention term and the cached KV
    are left out (they only add compute and bytes); a lone pass over fewer tokens is
    memory-bound.

    Parameters
    ----------
    weight_bytes : array_like
        Bytes of the weights one pass reads (B).
    mem_bandwidth_bytes_per_s : array_like
        Peak device-memory bandwidth (B/s).
    mem_efficiency : array_like
        Achieved fraction of that bandwidth, in (0, 1].
    peak_flop_per_s : array_like
        Dense peak compute rate (FLOP/s).
    mfu : array_like
        Achieved fraction of the peak (dimensionless).
    params : array_like
        Parameters a token passes through (dimensionless).
    flops_per_param_token : array_like, optional
        FLOPs per parameter per token, ``k`` (2 for a multiply-add).
    """
    weights_s = memory_time_s(weight_bytes, mem_bandwidth_bytes_per_s, mem_efficiency)
    return weights_s * _f(peak_flop_per_s) * _f(mfu) / (_f(flops_per_param_token) * _f(params))


def blended_time_s(compute_s: ArrayLike, floor_s: ArrayLike, sharpness: ArrayLike) -> FloatArray:
    """Time of a forward pass near the roofline's knee: a smooth maximum of its two sides (s).

    ``(compute_s ** p + floor_s ** p) ** (1 / p)`` with ``p = sharpness``.  Far from the
    knee it equals the larger side, as :func:`roofline_time_s` does; at the knee, where
    the two sides are equal, it is ``2 ** (1 / p)`` times either, because a real pass
    does not overlap its compute and its memory traffic perfectly: the layers whose
    matrices are small stay memory-bound while the large ones are already compute-bound.
    ``p -> inf`` gives back the plain maximum; ``p = 1`` is no overlap at all (the sum).
    Measured on one H200, a plain maximum stays about 18 % short of a Llama-3-70B-shaped
    pass over 256 tokens; see :mod:`kvtier.inputs.measurements` for the fitted ``p``.

    Parameters
    ----------
    compute_s : array_like
        Compute side, FLOPs / (peak x MFU) (s, >= 0).
    floor_s : array_like
        Memory side, or whatever else bounds a pass from below, such as the host's time
        to launch an eager pass's kernels (s, >= 0).
    sharpness : array_like
        The exponent ``p`` (dimensionless, >= 1).

    Returns
    -------
    ndarray
        Time (s), broadcast over all inputs.

    Raises
    ------
    KvtierError
        If ``sharpness`` is below 1 or a time is negative.
    """
    c, f, p = _f(compute_s), _f(floor_s), _f(sharpness)
    if np.any(~(p >= 1)):
        raise KvtierError(f"sharpness must be >= 1, got {float(np.min(p)):g}")
    if np.any(c < 0) or np.any(f < 0):
        raise KvtierError("compute_s and floor_s must not be negative")
    top = np.maximum(c, f)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.where(top > 0, (c / np.where(top > 0, top, 1.0)) ** p + (f / np.where(top > 0, top, 1.0)) ** p, 0)
    return top * scaled ** (1.0 / p)


def attention_time_s(
    kv_bytes: ArrayLike,
    layers: ArrayLike,
    fixed_per_layer_s: ArrayLike,
    mem_bandwidth_bytes_per_s: ArrayLike,
    attention_efficiency: ArrayLike,
) -> FloatArray:
    """Time of a pass's attention over its cached positions, run layer by layer (s).

    ``layers x fixed_per_layer_s + kv_bytes / (bandwidth x attention_efficiency)``: each
    layer's attention call costs a fixed time plus its read of the cached K and V at its
    own rate, which for a handful of queries is far below the weight stream's.  Measured on
    one H200 (:mod:`kvtier.inputs.measurements`), 16 queries over 1,024 to 65,536 positions
    take 79 µs to 1.4 ms per layer.  With no cached KV (``kv_bytes == 0``) it is 0: a pass
    over fresh tokens pays its attention calls within its other terms.

    Parameters
    ----------
    kv_bytes : array_like
        Cached K and V bytes read over all the layers (B).
    layers : array_like
        Attention calls the pass makes one after another (count).
    fixed_per_layer_s : array_like
        Fixed time of one call (s, >= 0).
    mem_bandwidth_bytes_per_s : array_like
        Peak device-memory bandwidth (B/s).
    attention_efficiency : array_like
        Fraction of it the attention's KV read reaches, in (0, 1].
    """
    kv = _f(kv_bytes)
    time = _f(layers) * _f(fixed_per_layer_s) + memory_time_s(kv, mem_bandwidth_bytes_per_s, attention_efficiency)
    return np.where(kv > 0, time, 0.0)


def forward_pass_time_s(
    flops: ArrayLike,
    bytes_read: ArrayLike,
    peak_flop_per_s: ArrayLike,
    mfu: ArrayLike,
    mem_bandwidth_bytes_per_s: ArrayLike,
    mem_efficiency: ArrayLike = 1.0,
    *,
    layers: ArrayLike = 0.0,
    mem_overhead_per_layer_s: ArrayLike = 0.0,
    launch_floor_per_layer_s: ArrayLike = 0.0,
    sharpness: ArrayLike = np.inf,
    share: ArrayLike = 1.0,
    serial_s: ArrayLike = 0.0,
) -> FloatArray:
    """Time of a forward pass, or of a block's share of one: the package's one forward-pass model (s).

    ``blended_time_s(compute, max(memory, launch), p) + serial`` with

    - ``compute = flops / (peak x mfu)``;
    - ``memory = bytes_read / (bandwidth x mem_efficiency) + share x layers x mem_overhead_per_layer_s``:
      the bytes streamed at the efficiency of a long stream, plus a fixed time per layer
      (small matrices do not reach the stream's rate: on one H200 a Llama-3-70B-shaped pass
      reaches 66 % of the peak, an 8B-shaped one 39 %, and one fixed time per layer
      accounts for both);
    - ``launch = share x layers x launch_floor_per_layer_s``: the host's time to launch an
      eager pass's kernels, below which the pass cannot go (0 for a CUDA graph);
    - ``p = sharpness`` (:func:`blended_time_s`; ``inf`` gives the plain maximum);
    - ``serial``: time added after the blend, such as :func:`attention_time_s`.

    ``share`` is the block's share of the pass, ``block tokens / pass tokens`` (1 for a
    lone block): the fixed times per pass are shared like the weight read.  With every
    keyword at its default this is :func:`roofline_time_s` exactly, the chapter's model.

    Parameters
    ----------
    flops, bytes_read, peak_flop_per_s, mfu, mem_bandwidth_bytes_per_s, mem_efficiency
        As in :func:`roofline_time_s` (FLOP, B, FLOP/s, fraction, B/s, fraction).
    layers : array_like, optional
        Layers the pass crosses one after another (count).
    mem_overhead_per_layer_s, launch_floor_per_layer_s : array_like, optional
        Fixed times per layer (s, >= 0).
    sharpness : array_like, optional
        Exponent of the knee (>= 1; ``inf``: the plain maximum).
    share : array_like, optional
        The block's share of the pass (dimensionless, in (0, 1]).
    serial_s : array_like, optional
        Time added after the blend (s).

    Returns
    -------
    ndarray
        Time (s), broadcast over all inputs.
    """
    compute = _compute_side(flops, peak_flop_per_s, mfu)
    per_layer = _f(share) * _f(layers)
    memory = memory_time_s(bytes_read, mem_bandwidth_bytes_per_s, mem_efficiency) + per_layer * _f(
        mem_overhead_per_layer_s
    )
    floor = np.maximum(memory, per_layer * _f(launch_floor_per_layer_s))
    return blended_time_s(compute, floor, sharpness) + _f(serial_s)
