"""The models fitted to a measurement set: the fetch line, each shape's MFU, memory efficiency and floor, the knee."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import ArrayLike

from kvtier.errors import KvtierError, show
from kvtier.formulas import costs, roofline
from kvtier.formulas.fits import fit_floor, fit_latency_bandwidth, fit_rate_fraction
from kvtier.inputs.measurements.reading import load
from kvtier.inputs.measurements.records import (
    COMPUTE_FIT_MIN_TOKENS,
    DATA_DIR,
    FETCH_FIT_MIN_BYTES,
    H200_MEM_BANDWIDTH,
    H200_PEAK_FLOP_PER_S,
    SHAPES,
    SLOPE_TOKENS,
    SOURCES,
    FloatArray,
    Measurements,
    Shape,
)
from kvtier.inputs.provenance import Record
from kvtier.units import MIB

BLEND_GRID = np.round(np.arange(1.0, 12.0001, 0.05), 2)
"""Candidate sharpness exponents of the knee (dimensionless)."""


@dataclass(frozen=True)
class Fits:
    """The models fitted to a measurement set; :attr:`records` holds each value with its basis.

    Attributes
    ----------
    fetch : dict of str to tuple of float
        ``(latency_s, bandwidth_bytes_per_s)`` per copy kind (``h2d_pinned``, ``d2h_pinned``).
    mfu, mem_efficiency, eager_floor_s : dict of str to float
        Per shape: the compute MFU of :data:`H200_PEAK_FLOP_PER_S`, the memory efficiency of
        :data:`H200_MEM_BANDWIDTH` (from the CUDA-graph pass) and the eager pass's floor (s).
    sharpness : float
        The knee's exponent in :func:`kvtier.formulas.roofline.blended_time_s`.
    slope_s_per_token : float
        Marginal time of one more token inside a compute-bound 70B pass (s).
    records : dict of str to Record
        Every fitted value as a ``derived`` record.
    """

    fetch: dict[str, tuple[float, float]]
    mfu: dict[str, float]
    mem_efficiency: dict[str, float]
    eager_floor_s: dict[str, float]
    sharpness: float
    slope_s_per_token: float
    records: dict[str, Record]


def _derived(key: str, value: float, kind: str, text: str, basis: str, file: str) -> Record:
    # the source names the module by its name before the folders (kvtier.measurements, issue 23): the
    # committed tables of record and data/h200-measured.yaml quote it, and they stay byte-identical
    return Record(
        f"fit.{key}", value, kind, text, "derived", basis, f"fitted by kvtier.measurements to {DATA_DIR}/{file}"
    )


def fit(m: Measurements) -> Fits:
    """Fit the fetch and forward-pass models to the measurements ``m``.

    - **Fetch**: :func:`fit_latency_bandwidth` over the pinned copies of at least
      :data:`FETCH_FIT_MIN_BYTES`, per direction.
    - **MFU**: :func:`fit_rate_fraction` of the pass's FLOPs (parameters and attention,
      :meth:`Shape.flops`) over the eager sweep points of at least
      :data:`COMPUTE_FIT_MIN_TOKENS` tokens, per shape.
    - **Memory efficiency**: the weight and KV bytes of the 16-token CUDA-graph pass over
      its time, per shape: the one measured pass that streams the weights with no
      launch overhead.  (The eager sweep's flat start is the host launching kernels,
      slower than the weight stream: fitted as the eager floor instead.)
    - **Eager floor and knee**: the sharpness ``p`` on :data:`BLEND_GRID` and, for each
      ``p``, each shape's floor minimising the squared log residuals of
      ``blended_time_s(compute, max(memory, floor), p)`` over its eager sweep; the ``p``
      with the least total.
    - **Marginal token**: the least-squares slope of the 70B sweep over :data:`SLOPE_TOKENS`.
    """
    records: dict[str, Record] = {}
    fetch: dict[str, tuple[float, float]] = {}
    for kind in ("h2d_pinned", "d2h_pinned"):
        pts = [c for c in m.copies_of(kind) if c.n_bytes >= FETCH_FIT_MIN_BYTES]
        latency, bw = fit_latency_bandwidth([c.n_bytes for c in pts], [c.timing.median_s for c in pts])
        fetch[kind] = (latency, bw)
        how = (
            f"relative least squares of t = latency + bytes / bandwidth over the {len(pts)} {kind} copies of"
            f" {pts[0].n_bytes / MIB:g} MiB to {pts[-1].n_bytes / 2**30:g} GiB (probe1.json copies[*].median_s)"
        )
        records[f"{kind}_latency"] = _derived(
            f"{kind}_latency", latency, "time", f"{latency * 1e6:.2f} µs", how, "probe1.json"
        )
        records[f"{kind}_bandwidth"] = _derived(
            f"{kind}_bandwidth", bw, "bandwidth", f"{bw / 1e9:.2f} GB/s", how, "probe1.json"
        )

    mfu: dict[str, float] = {}
    eff: dict[str, float] = {}
    compute_at_1: dict[str, FloatArray] = {}
    memory: dict[str, FloatArray] = {}
    times: dict[str, FloatArray] = {}
    for shape_name in SHAPES:
        shape, sweep = m.shapes[shape_name], m.sweeps[shape_name]
        file, group, _ = SOURCES[shape_name]
        tokens = np.array([p.tokens for p in sweep], dtype=np.float64)
        t = np.array([p.timing.median_s for p in sweep])
        flops = shape.flops(tokens)
        bound = tokens >= COMPUTE_FIT_MIN_TOKENS
        mfu[shape_name] = fit_rate_fraction(flops[bound], t[bound], H200_PEAK_FLOP_PER_S)
        graph = m.tail16[(shape_name, "graph")].median_s
        bytes16 = shape.weight_bytes + shape.kv_bytes_per_token * 16
        eff[shape_name] = fit_rate_fraction(bytes16, graph, H200_MEM_BANDWIDTH)
        compute_at_1[shape_name], memory[shape_name] = sides(shape, mfu[shape_name], eff[shape_name], tokens)
        times[shape_name] = t
        used = ", ".join(f"{n:,.0f}" for n in tokens[bound])
        records[f"mfu_{shape_name}"] = _derived(
            f"mfu_{shape_name}",
            mfu[shape_name],
            "fraction",
            f"{mfu[shape_name] * 100:.1f}%",
            f"least squares on log time of FLOPs / (989 TFLOP/s x MFU) over the eager {shape_name} passes of {used}"
            f" tokens ({group}.token_sweep[*].median_s; FLOPs = 2 N n plus attention)",
            file,
        )
        records[f"mem_efficiency_{shape_name}"] = _derived(
            f"mem_efficiency_{shape_name}",
            eff[shape_name],
            "fraction",
            f"{eff[shape_name] * 100:.1f}%",
            f"the 16-token pass's weight and KV bytes over its CUDA-graph time, as a fraction of 4.8 TB/s"
            f" ({group}.tail16_graph.median_s)",
            file,
        )

    per_p = [
        {s: fit_floor(compute_at_1[s], memory[s], times[s], p) for s in SHAPES} for p in BLEND_GRID
    ]  # per p, per shape: (floor, cost)
    best = int(np.argmin([sum(cost for _, cost in fitted.values()) for fitted in per_p]))  # ties: the smaller p
    sharpness = float(BLEND_GRID[best])
    floors = {s: floor for s, (floor, _) in per_p[best].items()}
    how = (
        "least squares on log time of blended_time_s(compute, max(memory, floor), p) over the eager sweeps of both"
        " shapes (probe1.json regenerate.token_sweep, probe2.json llama3_8b.token_sweep): p on a grid of"
        f" {BLEND_GRID[0]:g} to {BLEND_GRID[-1]:g} in steps of 0.05, one floor per shape"
    )
    records["sharpness"] = _derived("sharpness", sharpness, "count", f"{sharpness:g}", how, "probe1.json, probe2.json")
    for shape_name in SHAPES:
        records[f"eager_floor_{shape_name}"] = _derived(
            f"eager_floor_{shape_name}",
            floors[shape_name],
            "time",
            f"{floors[shape_name] * 1e3:.1f} ms",
            how + f"; {floors[shape_name] / m.shapes[shape_name].layers * 1e3:.2f} ms per layer",
            SOURCES[shape_name][0],
        )

    sweep70 = {p.tokens: p.timing.median_s for p in m.sweeps["llama-3-70b"]}
    missing = [n for n in SLOPE_TOKENS if n not in sweep70]
    if missing:
        raise KvtierError(f"{m.name}/probe1.json: key 'regenerate.token_sweep' has no pass of {missing[0]} tokens")
    slope, _ = np.polyfit(SLOPE_TOKENS, [sweep70[n] for n in SLOPE_TOKENS], 1)
    records["slope_s_per_token"] = _derived(
        "slope_s_per_token",
        float(slope),
        "time",
        f"{slope * 1e6:.1f} µs",
        "least-squares slope of time against tokens over the eager llama-3-70b passes of "
        + ", ".join(f"{n:,}" for n in SLOPE_TOKENS)
        + " tokens (regenerate.token_sweep[*].median_s): the marginal time of one more token in a compute-bound pass",
        "probe1.json",
    )
    return Fits(fetch, mfu, eff, floors, sharpness, float(slope), records)


@cache
def shipped_fits() -> Fits:
    """:func:`fit` of the shipped set, computed once per process."""
    return fit(load())


def sides(
    shape: Shape,
    mfu: float,
    mem_efficiency: float,
    tokens: FloatArray,
    position: ArrayLike = 0,
    logits_tokens: ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray]:
    """A pass's compute time, its FLOPs at ``mfu`` of the H200's peak, and its memory time, the weights and the
    KV of every position read at ``mem_efficiency`` of its bandwidth (s, s): the two sides of the roofline
    (:func:`kvtier.formulas.costs.compute_time_s`, :func:`kvtier.formulas.roofline.memory_time_s`)."""
    compute = costs.compute_time_s(shape.flops(tokens, position, logits_tokens), H200_PEAK_FLOP_PER_S, mfu)
    memory = roofline.memory_time_s(
        shape.weight_bytes + shape.kv_bytes_per_token * (tokens + position), H200_MEM_BANDWIDTH, mem_efficiency
    )
    return compute, memory


def forward_model_s(
    m: Measurements,
    fits: Fits,
    shape_name: str,
    tokens: ArrayLike,
    mode: str,
    position: ArrayLike = 0,
    logits_tokens: ArrayLike | None = None,
) -> dict[str, FloatArray]:
    """The fitted models of a forward pass on the measured H200 (s).

    Parameters
    ----------
    m, fits : Measurements, Fits
        The measurements and their fits.
    shape_name : str
        One of :data:`SHAPES`.
    tokens : array_like
        Tokens in the pass (tokens).
    mode : {"eager", "graph"}
        Eager passes have the fitted launch floor; a CUDA graph has none.
    position : array_like
        Position of the pass's first token: cached KV read and attended (tokens).
    logits_tokens : array_like, optional
        Tokens that get logits (all by default).

    Returns
    -------
    dict of str to ndarray
        ``compute`` (FLOPs at the fitted MFU), ``memory`` (weights and KV at the fitted
        efficiency), ``floor`` (the larger of memory and, eager, the launch floor),
        ``roofline`` (the plain maximum of compute and floor) and ``blended``
        (:func:`kvtier.formulas.roofline.blended_time_s`, the package's model).
    """
    if mode not in ("eager", "graph"):
        raise KvtierError(f"mode must be 'eager' or 'graph', got {show(mode, quote=True)}")
    compute, memory = sides(
        m.shapes[shape_name],
        fits.mfu[shape_name],
        fits.mem_efficiency[shape_name],
        np.asarray(tokens, dtype=np.float64),
        np.asarray(position, dtype=np.float64),
        logits_tokens,
    )
    floor = np.maximum(memory, fits.eager_floor_s[shape_name]) if mode == "eager" else memory
    return {
        "compute": compute,
        "memory": memory,
        "floor": floor,
        "roofline": np.maximum(compute, floor),
        "blended": roofline.blended_time_s(compute, floor, fits.sharpness),
    }


def knee_tokens(m: Measurements, fits: Fits, shape_name: str, mode: str) -> float:
    """Tokens per pass at which the fitted compute time equals the floor (tokens): the knee.

    Solved by bisection on ``log(tokens)`` between 1 and 2**20 tokens; below the knee a
    pass costs its floor (the weight stream, or in eager mode the launch floor), above it
    its FLOPs.
    """
    low, high = 0.0, 20.0 * math.log(2.0)
    for _ in range(100):
        mid = 0.5 * (low + high)
        sides = forward_model_s(m, fits, shape_name, math.exp(mid), mode)
        if float(sides["compute"]) < float(sides["floor"]):
            low = mid
        else:
            high = mid
    return math.exp(0.5 * (low + high))


def energy_check(m: Measurements) -> dict[str, float]:
    """The lone-block energy model, a pass's time times one board power, against the measured energies (SI units).

    The model charges every lone block the mean board power of the 70B eager loop
    (``power_forward16_llama-3-70b_w``).  Set against that loop's own energy per pass it is
    a consistency check, not a validation: the power is that loop's energy over its
    duration, so only the time per pass can differ.  The held-out check charges the same
    power to the 8B CUDA-graph pass, whose energy was measured in a loop of its own.

    Returns
    -------
    dict of str to float
        ``power_w`` (the 70B loop's power, W); ``in_sample_j`` (it times the 70B eager pass's
        median time, J), ``in_sample_measured_j``, ``in_sample_error_pct``; ``held_out_j`` (it
        times the 8B CUDA-graph pass's median time, J), ``held_out_measured_j``,
        ``held_out_error_pct`` (percent; negative: the model is short) and
        ``held_out_power_w``, the mean power of the 8B pass's own loop (W).
    """
    power = m.v("power_forward16_llama-3-70b_w")
    in_sample = power * m.v("forward16_llama-3-70b_eager")
    held_out = power * m.v("forward16_llama-3-8b_graph")
    e70, e8 = m.v("energy_forward16_llama-3-70b_j"), m.v("energy_forward16_llama-3-8b_j")
    return {
        "power_w": power,
        "in_sample_j": in_sample,
        "in_sample_measured_j": e70,
        "in_sample_error_pct": (in_sample / e70 - 1.0) * 100.0,
        "held_out_j": held_out,
        "held_out_measured_j": e8,
        "held_out_error_pct": (held_out / e8 - 1.0) * 100.0,
        "held_out_power_w": m.v("power_forward16_llama-3-8b_w"),
    }
