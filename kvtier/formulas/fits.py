"""Fits of simple timing models to measurements: pure arithmetic on arrays, SI units in and out.

:mod:`kvtier.inputs.measurements` applies them to the H200 measurements of record and
:mod:`kvtier.inputs.probe` to this machine's copies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from kvtier.formulas import roofline
from kvtier.formulas.roofline import FloatArray


def fit_latency_bandwidth(n_bytes: ArrayLike, times_s: ArrayLike) -> tuple[float, float]:
    """Fit ``t = latency + bytes / bandwidth`` to copies by relative least squares.

    Minimises the sum of ``((latency + bytes / bandwidth) / t - 1) ** 2``, so that a
    1 MiB copy weighs as much as a 1 GiB one (plain least squares on times would let
    the largest copy set both parameters).  The problem is linear in ``latency`` and
    ``1 / bandwidth``.

    Parameters
    ----------
    n_bytes : array_like
        Bytes of each copy (B).
    times_s : array_like
        Its measured time (s).

    Returns
    -------
    latency_s, bandwidth_bytes_per_s : float
        Per-transfer latency (s) and bandwidth (B/s).
    """
    b = np.asarray(n_bytes, dtype=np.float64)
    t = np.asarray(times_s, dtype=np.float64)
    design = np.column_stack([np.ones_like(b), b]) / t[:, None]
    (latency, inverse), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    return float(latency), float(1.0 / inverse)


def fit_pageable(
    n_bytes: ArrayLike,
    times_s: ArrayLike,
    latency_s: float,
    bandwidth_bytes_per_s: float,
    cache_bytes: float,
) -> tuple[float, float, float]:
    """Fit the pageable copy model of :func:`kvtier.formulas.transfer.staging_efficiency` by relative least squares.

    Each copy, of one buffer copied again and again, is modelled as
    ``latency + overhead + bytes / (bandwidth x efficiency)`` with the warm efficiency where
    ``bytes <= cache_bytes`` and the cold one above: linear in ``overhead``, ``1 / warm`` and
    ``1 / cold``, fitted like :func:`fit_latency_bandwidth` so that every copy weighs alike.
    ``latency_s`` and ``bandwidth_bytes_per_s`` are the pinned copies' fit, held fixed.

    Parameters
    ----------
    n_bytes, times_s : array_like
        Bytes of each pageable copy (B) and its measured time (s); at least one copy on each side of
        ``cache_bytes``.
    latency_s, bandwidth_bytes_per_s : float
        The pinned copies' latency (s) and bandwidth (B/s).
    cache_bytes : float
        The host CPU's last-level cache (B), the breakpoint; held fixed, not fitted.

    Returns
    -------
    overhead_s, warm_efficiency, cold_efficiency : float
        Per-copy overhead (s) and the shares of ``bandwidth_bytes_per_s`` reached staged from the cache
        and from DRAM.
    """
    b = np.asarray(n_bytes, dtype=np.float64)
    t = np.asarray(times_s, dtype=np.float64)
    warm = b <= cache_bytes
    if warm.all() or not warm.any():
        raise ValueError("fit_pageable needs copies both within and beyond the cache")
    design = np.column_stack([np.ones_like(b), np.where(warm, b, 0.0), np.where(warm, 0.0, b)]) / t[:, None]
    (overhead, warm_inverse, cold_inverse), *_ = np.linalg.lstsq(design, 1.0 - latency_s / t, rcond=None)
    return (
        float(overhead),
        float(1.0 / (warm_inverse * bandwidth_bytes_per_s)),
        float(1.0 / (cold_inverse * bandwidth_bytes_per_s)),
    )


def fit_rate_fraction(work: ArrayLike, times_s: ArrayLike, peak: float) -> float:
    """The fraction of ``peak`` that ``work / time`` reaches, fitted by least squares on log time.

    ``t = work / (peak x f)`` gives ``log f = mean(log(work / (peak x t)))``: the geometric mean
    of the achieved fractions.  Used for the MFU (work in FLOP, peak in FLOP/s) and the
    memory efficiency (work in bytes, peak in B/s).
    """
    w = np.asarray(work, dtype=np.float64)
    t = np.asarray(times_s, dtype=np.float64)
    return float(np.exp(np.mean(np.log(w / (peak * t)))))


def fit_floor(compute: FloatArray, memory: FloatArray, times: FloatArray, p: float) -> tuple[float, float]:
    """The eager floor minimising squared log residuals of the blended roofline, and that sum.

    Parameters
    ----------
    compute, memory, times : ndarray
        Per pass: its compute time at an MFU of 1 (s), its memory time (s) and its measured time (s).
    p : float
        Sharpness of :func:`kvtier.formulas.roofline.blended_time_s`.

    Returns
    -------
    floor_s, cost : float
        The floor (s), searched on 401 log-spaced points from half to 1.5 times the fastest pass,
        and the sum of squared log residuals it leaves.
    """
    grid = np.min(times) * np.exp(np.linspace(np.log(0.5), np.log(1.5), 401))
    floor = np.maximum(memory[None, :], grid[:, None])
    model = roofline.blended_time_s(compute[None, :], floor, p)
    cost = np.sum(np.log(model / times[None, :]) ** 2, axis=1)
    best = int(np.argmin(cost))
    return float(grid[best]), float(cost[best])


def leave_one_out(
    x: ArrayLike, y: ArrayLike, fit: Callable[[FloatArray, FloatArray], Any], predict: Callable[[Any, float], float]
) -> FloatArray:
    """Each point predicted by the model refitted without it: the leave-one-out predictions.

    For each ``i``, ``predict(fit(x without i, y without i), x[i])``.  Against ``y`` these give
    the out-of-sample errors a fit's own residuals hide.

    Parameters
    ----------
    x, y : array_like
        The points (any units): what the model predicts from and what it predicts.
    fit : callable
        ``fit(x, y)`` gives the model's parameters.
    predict : callable
        ``predict(parameters, x_i)`` gives the model's value at ``x_i``, in ``y``'s units.

    Returns
    -------
    ndarray
        The prediction of each point, in ``y``'s units.
    """
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    out = np.empty_like(ys)
    for i in range(len(ys)):
        keep = np.arange(len(ys)) != i
        out[i] = predict(fit(xs[keep], ys[keep]), float(xs[i]))
    return out
