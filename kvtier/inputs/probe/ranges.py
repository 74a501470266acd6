"""The uncertainty range of every measured value, and the MFU brackets, from a run's timed repetitions.

Every measured value comes with a range of its own (the spread of its timed repetitions,
widened to at least :data:`RANGE_BAND` either side), so that the book's Monte Carlo draws
around the machine measured.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from kvtier.inputs.probe.backends import Timing
from kvtier.inputs.probe.measuring import Result

RANGE_BAND = 0.1
"""Least half-width of a measured value's uncertainty range, as a share of the value (10 %).

One run's repetitions see neither another run's state (clocks, temperature, other processes)
nor another machine of the same kind, so a range never narrower than this is written."""


def widen(point: float, low: float, high: float, cap: float = math.inf) -> tuple[float, float]:
    """The uncertainty range of a measured ``point``: its spread ``low`` .. ``high``, at least :data:`RANGE_BAND` wide.

    Both ends in the unit of ``point``; the high end at most ``cap`` (1 for a fraction).
    The range always holds ``point`` (which must not exceed ``cap``).
    """
    return min(low, point * (1 - RANGE_BAND)), min(cap, max(high, point * (1 + RANGE_BAND)))


def mfu_brackets(result: Result, params: int) -> dict[str, float]:
    """The MFU brackets and their range, from the sweep's medians and its repetitions' spread (fractions)."""

    def fractions(pick: Callable[[Timing], float]) -> list[float]:
        return [2 * params * tokens / pick(t) / result.matmul_rate for tokens, t in result.sweep]

    median = fractions(lambda t: t.median)
    half = len(median) // 2
    upper = median[half:]
    out = {
        "optimistic": min(1.0, max(median)),
        "typical": min(1.0, float(np.exp(np.mean(np.log(upper))))),
        "conservative": min(1.0, min(upper)),
    }
    slow, fast = fractions(lambda t: t.slowest)[half:], fractions(lambda t: t.fastest)
    out["low"] = min(min(slow), out["conservative"] * (1 - RANGE_BAND))
    out["high"] = min(1.0, max(max(fast), out["optimistic"] * (1 + RANGE_BAND)))
    return out


def measured_ranges(result: Result, params: int) -> dict[str, tuple[float, float, float]]:
    """``name -> (point, low, high)`` of every measured value the Monte Carlo draws (SI units, fractions)."""
    rate = 2 * result.matmul_n**3
    t16 = dict(result.sweep)[16]
    eff = min(1.0, result.weight_bytes / t16.median / result.mem_bandwidth)
    mfu = mfu_brackets(result, params)
    return {
        "bandwidth": (result.bandwidth, *widen(result.bandwidth, *result.bandwidth_spread())),
        "peak": (
            result.matmul_rate,
            *widen(result.matmul_rate, rate / result.matmul.slowest, rate / result.matmul.fastest),
        ),
        "mem_bandwidth": (
            result.mem_bandwidth,
            *widen(
                result.mem_bandwidth,
                result.mem_bytes / result.mem_copy.slowest,
                result.mem_bytes / result.mem_copy.fastest,
            ),
        ),
        "mem_efficiency": (
            eff,
            *widen(
                eff,
                result.weight_bytes / t16.slowest / result.mem_bandwidth,
                result.weight_bytes / t16.fastest / result.mem_bandwidth,
                cap=1.0,
            ),
        ),
        "mfu": (mfu["typical"], mfu["low"], mfu["high"]),
    }
