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
