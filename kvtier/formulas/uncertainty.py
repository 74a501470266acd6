"""Uncertainty in the fetch-vs-regenerate ratio: seeded Monte Carlo and a tornado table.

The source chapter brackets its inputs (bandwidth 32/64/121 GB/s, MFU 25/40/50 %) and
reads the grid of corners.  This module treats each bracket as a distribution instead,
draws all inputs at once, and reports percentiles of

    ratio = regen_time / fetch_time = (flops / (peak x mfu)) / (latency + bytes / bandwidth)

in either regime of regeneration: *inside a batch* (the block's marginal compute, as
above: the source chapter's model) or as a *lone block* (its tokens are the whole forward
pass, so the regeneration time is the roofline ``max(flops / (peak x mfu), bytes_read /
(mem_bandwidth x mem_efficiency))``), and the probability that the ratio falls below a
threshold (100x: the lower end of the chapter's "two to three orders of magnitude").  The formulas themselves live in
:mod:`kvtier.formulas.costs`; this module only draws inputs and summarizes.

Inputs are named ``bandwidth`` (B/s), ``mfu`` (fraction in (0, 1]) and ``peak`` (FLOP/s);
the lone-block regime adds ``mem_bandwidth`` (B/s) and ``mem_efficiency`` (fraction in
(0, 1]).  Every draw is reproducible: one ``numpy.random.default_rng(seed)`` draws one
uniform vector per input, the three inputs of :data:`INPUTS` first and any others after
them, each group in sorted name order, fixed inputs included, so changing how one input
is distributed never reshuffles another's draws, and adding the memory side leaves the
in-batch draws as they were.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kvtier.errors import KvtierError
from kvtier.formulas import costs, roofline, transfer

FloatArray = NDArray[np.float64]

DISTS = ("log-uniform", "uniform", "fixed")
"""Allowed values of :attr:`Range.dist`."""

INPUTS = ("bandwidth", "mfu", "peak")
"""Names of the uncertain inputs of the in-batch ratio: B/s, fraction, FLOP/s."""

LONE_INPUTS = (*INPUTS, "mem_bandwidth", "mem_efficiency")
"""Names of the uncertain inputs of the lone-block ratio: the above, device-memory B/s and its efficiency."""

DEFAULT_PERCENTILES = (5, 25, 50, 75, 95)


def _label(name: str) -> str:
    return f"uncertainty range {name!r}" if name else "uncertainty range"


def _check_number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise KvtierError(f"{what} must be a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Range:
    """One uncertain input: bounds in SI base units and how values are spread between them.

    Parameters
    ----------
    low, high : float
        Bounds, in the input's SI unit (B/s, fraction, FLOP/s); ``0 < low <= high``, finite.
    dist : {"log-uniform", "uniform", "fixed"}
        ``log-uniform``: ``log(x)`` uniform on ``[log low, log high]`` (every factor of the
        range equally likely; the default, suited to quantities known to within a factor).
        ``uniform``: ``x`` uniform on ``[low, high]``.  ``fixed``: always ``low``, which
        must equal ``high``.
    name : str, optional, keyword-only
        The input's name, used only in error messages.

    Raises
    ------
    KvtierError
        One line naming the input when a bound is not a finite positive number, when
        ``high < low``, when ``dist`` is unknown, or when a fixed range has ``low != high``.
    """

    low: float
    high: float
    dist: str = "log-uniform"
    name: str = field(default="", kw_only=True, compare=False)

    def __post_init__(self) -> None:
        label = _label(self.name)
        low = _check_number(self.low, f"{label}: low")
        high = _check_number(self.high, f"{label}: high")
        if low <= 0:
            raise KvtierError(f"{label}: low must be > 0, got {low!r}")
        if high < low:
            raise KvtierError(f"{label}: high must be >= low, got low={low!r}, high={high!r}")
        if self.dist not in DISTS:
            raise KvtierError(f"{label}: dist must be one of {', '.join(DISTS)}, got {self.dist!r}")
        if self.dist == "fixed" and high != low:
            raise KvtierError(f"{label}: a fixed range needs low == high, got low={low!r}, high={high!r}")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    @classmethod
    def fixed(cls, value: float, *, name: str = "") -> Range:
        """A range that always draws ``value``."""
        return cls(value, value, "fixed", name=name)

    def from_unit(self, u: ArrayLike) -> FloatArray:
        """Map uniform draws ``u`` in ``[0, 1)`` onto this range (input's SI unit).

        The map is monotone, so ``u`` and the result keep their order; results are
        clipped to ``[low, high]`` against rounding in ``exp(log(.))``.
        """
        u = np.asarray(u, dtype=np.float64)
        if self.dist == "fixed":
            values = np.full_like(u, self.low)
        elif self.dist == "uniform":
            values = self.low + (self.high - self.low) * u
        else:
            log_low, log_high = math.log(self.low), math.log(self.high)
            values = np.exp(log_low + (log_high - log_low) * u)
        return np.clip(values, self.low, self.high)


def _check_ranges(ranges: Mapping[str, Range]) -> None:
    for name in sorted(ranges):
        if not isinstance(ranges[name], Range):
            raise KvtierError(f"{_label(name)}: expected a Range, got {ranges[name]!r}")


def sample(ranges: Mapping[str, Range], n: int, seed: int) -> dict[str, FloatArray]:
    """Draw ``n`` values of every input, reproducibly.

    Parameters
    ----------
    ranges : mapping of str to Range
        The inputs and their ranges (SI base units).
    n : int
        Draws per input, ``>= 1``.
    seed : int
        Seed of ``numpy.random.default_rng``.  The same ``ranges``, ``n`` and ``seed``
        give identical arrays.

    Returns
    -------
    dict of str to ndarray
        One float64 array of shape ``(n,)`` per input, keys in sorted order.

    Notes
    -----
    Inputs are drawn in order, the names of :data:`INPUTS` first and the rest after them,
    each group sorted, each input consuming one ``rng.random(n)`` vector whatever its
    distribution, so making one input fixed or changing its bounds leaves every other
    input's draws unchanged (common random numbers across variants), and the lone-block
    regime's extra inputs leave the in-batch inputs' draws unchanged.
    """
    _check_ranges(ranges)
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise KvtierError(f"n (number of draws) must be a positive integer, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise KvtierError(f"seed must be a non-negative integer, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    order = sorted(ranges, key=lambda name: (name not in INPUTS, name))
    drawn = {name: ranges[name].from_unit(rng.random(int(n))) for name in order}
    return {name: drawn[name] for name in sorted(drawn)}


def _names(bytes_read: float | None) -> tuple[str, ...]:
    """The inputs a regime needs: :data:`INPUTS` inside a batch, :data:`LONE_INPUTS` for a lone block."""
    return INPUTS if bytes_read is None else LONE_INPUTS


def _check_inputs(
    values: Mapping[str, Any], what: str, allow_extra: bool = False, names: tuple[str, ...] = INPUTS
) -> None:
    missing = [name for name in names if name not in values]
    if missing:
        raise KvtierError(f"{what}: missing input {missing[0]!r}; needs {', '.join(names)}")
    extra = sorted(set(values) - set(names))
    if extra and not allow_extra:
        raise KvtierError(f"{what}: unknown input {extra[0]!r}; allowed {', '.join(names)}")


def _check_mfu(mfu: ArrayLike, what: str, name: str = "mfu") -> None:
    values = np.asarray(mfu, dtype=np.float64)
    if np.any(~(values > 0)) or np.any(values > 1):
        low, high = float(values.min()), float(values.max())
        raise KvtierError(f"{what}: {name} must lie in (0, 1], got values from {low!r} to {high!r}")


@dataclass(frozen=True)
class Fixed:
    """The terms of the forward-pass and transfer models the draws hold fixed (every default changes nothing).

    Attributes
    ----------
    layers, mem_overhead_per_layer_s, launch_floor_per_layer_s, sharpness : float
        The forward-pass model's other terms (:func:`kvtier.formulas.roofline.forward_pass_time_s`):
        layers, fixed memory time and launch floor per layer (s), the knee's exponent; a lone block only.
    collectives_s : float
        What a placement's collectives add to the regeneration in the regime drawn (s).
    min_transfer_s, link_efficiency : float
        The transfer model's floor under a fetch (s) and share of the link's rate reached
        (:func:`kvtier.formulas.transfer.fetch_time_s`).
    link_overhead_s : float
        Time the whole fetch adds to its latency (s): pageable host memory's overhead per transfer
        times the block's transfers.
    """

    layers: float = 0.0
    mem_overhead_per_layer_s: float = 0.0
    launch_floor_per_layer_s: float = 0.0
    sharpness: float = math.inf
    collectives_s: float = 0.0
    min_transfer_s: float = 0.0
    link_efficiency: float = 1.0
    link_overhead_s: float = 0.0


NOTHING_FIXED = Fixed()
"""The chapter's models: the plain roofline, no collectives, the plain fetch."""


def ratio_draws(
    block_bytes: float,
    flops: float,
    draws: Mapping[str, ArrayLike],
    latency_s: float = 0.0,
    bytes_read: float | None = None,
    fixed: Fixed = NOTHING_FIXED,
) -> FloatArray:
    """Regenerate/fetch ratio for every draw (dimensionless), in either regime.

    Inside a batch (``bytes_read`` None): ``(flops / (peak x mfu)) / (latency + bytes /
    bandwidth)``, via :func:`kvtier.formulas.costs.compute_time_s`, :func:`kvtier.formulas.costs.fetch_time_s`
    and :func:`kvtier.formulas.costs.ratio`.  A lone block (``bytes_read`` given): the regeneration
    time is the forward-pass model, :func:`kvtier.formulas.roofline.forward_pass_time_s`: with
    ``fixed`` at its defaults ``max(flops / (peak x mfu), bytes_read / (mem_bandwidth x mem_efficiency))``.
    ``fixed`` adds what the draws hold fixed: the forward-pass model's per-layer terms, a placement's
    collectives, and the transfer model's floor and efficiency (:func:`kvtier.formulas.transfer.fetch_time_s`).

    Parameters
    ----------
    block_bytes : float
        Bytes of one KV block (B).
    flops : float
        FLOPs to regenerate it (FLOP).
    draws : mapping
        ``bandwidth`` (B/s), ``mfu`` (fraction in (0, 1]) and ``peak`` (FLOP/s), arrays
        of one shape or scalars; other keys are ignored.
    latency_s : float, optional
        Fixed per-fetch latency (s), 0 by default.
    bytes_read : float, optional
        Bytes a lone block's regeneration reads from device memory (B); None (the default)
        for the in-batch regime.  Given, ``draws`` also needs ``mem_bandwidth`` (B/s) and
        ``mem_efficiency`` (fraction in (0, 1]).
    fixed : Fixed, optional
        The models' terms the draws hold fixed; none by default (the chapter's models).

    Returns
    -------
    ndarray
        The ratio per draw, broadcast over the inputs.
    """
    _check_inputs(draws, "draws", allow_extra=True, names=_names(bytes_read))
    _check_mfu(draws["mfu"], "draws")
    if bytes_read is None:
        regen = costs.compute_time_s(flops, draws["peak"], draws["mfu"])
    else:
        _check_mfu(draws["mem_efficiency"], "draws", "mem_efficiency")
        regen = roofline.forward_pass_time_s(
            flops,
            bytes_read,
            draws["peak"],
            draws["mfu"],
            draws["mem_bandwidth"],
            draws["mem_efficiency"],
            layers=fixed.layers,
            mem_overhead_per_layer_s=fixed.mem_overhead_per_layer_s,
            launch_floor_per_layer_s=fixed.launch_floor_per_layer_s,
            sharpness=fixed.sharpness,
        )
    fetch = transfer.fetch_time_s(
        block_bytes,
        draws["bandwidth"],
        latency_s,
        1,
        fixed.min_transfer_s,
        fixed.link_efficiency,
        fixed.link_overhead_s,
    )
    return costs.ratio(regen + fixed.collectives_s, fetch)


def summarize(
    ratios: ArrayLike,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    threshold: float = 100.0,
    threshold_high: float | None = None,
) -> dict[str, Any]:
    """Percentiles, mean and tail probability of a sample of ratios.

    Parameters
    ----------
    ratios : array_like
        Ratio draws (dimensionless), at least one, all finite.
    percentiles : sequence of float, optional
        Percentiles in ``[0, 100]`` (numpy's default linear interpolation).
    threshold : float, optional
        Ratio below which a draw counts as "cheaper than claimed" (default 100).
    threshold_high : float, optional
        Ratio above which a draw counts as "dearer than claimed"; None (the default)
        leaves ``p_above`` out.

    Returns
    -------
    dict
        ``n`` (int), ``mean`` (float), ``percentiles`` (dict from each requested
        percentile to its value), ``threshold``, ``p_below`` (fraction of draws with
        ``ratio < threshold``) and ``p_below_se`` (its binomial standard error,
        ``sqrt(p (1 - p) / n)``), and with ``threshold_high`` ``p_above`` (fraction of
        draws with ``ratio > threshold_high``).
    """
    r = np.asarray(ratios, dtype=np.float64).ravel()
    if r.size == 0:
        raise KvtierError("ratios: need at least one draw")
    if not np.all(np.isfinite(r)):
        raise KvtierError("ratios: every draw must be finite")
    qs = [_check_number(q, "percentile") for q in percentiles]
    bad = [q for q in qs if not 0 <= q <= 100]
    if bad:
        raise KvtierError(f"percentile must lie in [0, 100], got {bad[0]!r}")
    threshold = _check_number(threshold, "threshold")
    values = np.percentile(r, qs) if qs else np.array([])
    p = float(np.mean(r < threshold))
    out = {
        "n": int(r.size),
        "mean": float(np.mean(r)),
        "percentiles": {q: float(v) for q, v in zip(percentiles, values, strict=True)},
        "threshold": threshold,
        "p_below": p,
        "p_below_se": math.sqrt(p * (1.0 - p) / r.size),
    }
    if threshold_high is not None:
        out["p_above"] = float(np.mean(r > _check_number(threshold_high, "threshold_high")))
    return out


class TornadoRow(NamedTuple):
    """One input's one-at-a-time swing of the ratio, others held at base.

    ``low_value``/``high_value`` are in the input's SI unit; ratios are dimensionless;
    ``swing = |ratio_at_high - ratio_at_low|``.
    """

    name: str
    low_value: float
    high_value: float
    ratio_at_low: float
    ratio_at_high: float
    swing: float


def tornado(
    block_bytes: float,
    flops: float,
    base: Mapping[str, float],
    ranges: Mapping[str, Range],
    latency_s: float = 0.0,
    bytes_read: float | None = None,
    fixed: Fixed = NOTHING_FIXED,
) -> list[TornadoRow]:
    """One-at-a-time sensitivity of the ratio: each input at its low and high, others at base.

    Parameters
    ----------
    block_bytes : float
        Bytes of one KV block (B).
    flops : float
        FLOPs to regenerate it (FLOP).
    base : mapping of str to float
        ``bandwidth`` (B/s), ``mfu`` (fraction) and ``peak`` (FLOP/s) at their base values.
    ranges : mapping of str to Range
        The inputs to swing (a subset of ``base``'s keys); only the bounds are used.
    latency_s : float, optional
        Fixed per-fetch latency (s).
    bytes_read : float, optional
        Bytes a lone block's regeneration reads (B), for the lone-block regime (see
        :func:`ratio_draws`); ``base`` then also needs ``mem_bandwidth`` and ``mem_efficiency``.
    fixed : Fixed, optional
        The models' terms held fixed (:func:`ratio_draws`).

    Returns
    -------
    list of TornadoRow
        Sorted by ``swing`` descending, then by name.
    """
    names = _names(bytes_read)
    _check_inputs(base, "base", names=names)
    _check_ranges(ranges)
    unknown = sorted(set(ranges) - set(names))
    if unknown:
        raise KvtierError(f"{_label(unknown[0])}: unknown input; allowed {', '.join(names)}")
    base_values = {name: _check_number(base[name], f"base {name!r}") for name in names}
    for name, value in base_values.items():
        if value <= 0:
            raise KvtierError(f"base {name!r} must be > 0, got {value!r}")
    _check_mfu(base_values["mfu"], "base")
    rows = []
    for name in sorted(ranges):
        rng = ranges[name]
        draws = {key: np.full(2, value) for key, value in base_values.items()}
        draws[name] = np.array([rng.low, rng.high])
        if name == "mfu":
            _check_mfu(draws["mfu"], _label(name))
        if name == "mem_efficiency":
            _check_mfu(draws[name], _label(name), name)
        lo, hi = (float(x) for x in ratio_draws(block_bytes, flops, draws, latency_s, bytes_read, fixed))
        rows.append(TornadoRow(name, rng.low, rng.high, lo, hi, abs(hi - lo)))
    return sorted(rows, key=lambda row: (-row.swing, row.name))


def monte_carlo(
    block_bytes: float,
    flops: float,
    ranges: Mapping[str, Range],
    n: int = 100_000,
    seed: int = 0,
    latency_s: float = 0.0,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    threshold: float = 100.0,
    bytes_read: float | None = None,
    threshold_high: float | None = None,
    fixed: Fixed = NOTHING_FIXED,
) -> dict[str, Any]:
    """Sample the inputs, compute the ratio per draw and summarize it.

    Parameters
    ----------
    block_bytes : float
        Bytes of one KV block (B).
    flops : float
        FLOPs to regenerate it (FLOP).
    ranges : mapping of str to Range
        Exactly ``bandwidth`` (B/s), ``mfu`` (fraction) and ``peak`` (FLOP/s); use
        :meth:`Range.fixed` for a known input.
    n, seed : int, optional
        Draws and seed (see :func:`sample`).
    latency_s : float, optional
        Fixed per-fetch latency (s).
    percentiles, threshold, threshold_high : optional
        Passed to :func:`summarize`.
    bytes_read : float, optional
        Bytes a lone block's regeneration reads (B): the lone-block regime, whose ``ranges``
        also hold ``mem_bandwidth`` (B/s) and ``mem_efficiency`` (fraction); None (the
        default) for the in-batch regime.
    fixed : Fixed, optional
        The models' terms held fixed (:func:`ratio_draws`).

    Returns
    -------
    dict
        :func:`summarize`'s dict plus ``seed``.
    """
    _check_inputs(ranges, "ranges", names=_names(bytes_read))
    _check_ranges(ranges)
    _check_mfu([ranges["mfu"].low, ranges["mfu"].high], _label("mfu"))
    if bytes_read is not None:
        eff = ranges["mem_efficiency"]
        _check_mfu([eff.low, eff.high], _label("mem_efficiency"), "mem_efficiency")
    ratios = ratio_draws(block_bytes, flops, sample(ranges, n, seed), latency_s, bytes_read, fixed)
    return {**summarize(ratios, percentiles, threshold, threshold_high), "seed": int(seed)}
