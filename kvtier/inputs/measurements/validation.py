"""Validation of the models on the measurements: in sample, leave-one-out and held out, per forward pass and copy."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from kvtier.errors import KvtierError, show
from kvtier.formulas import costs, roofline, transfer
from kvtier.formulas.fits import fit_floor, fit_latency_bandwidth, fit_pageable, fit_rate_fraction, leave_one_out
from kvtier.inputs.measurements.fits import BLEND_GRID
from kvtier.inputs.measurements.reading import load
from kvtier.inputs.measurements.records import (
    COMPUTE_FIT_MIN_TOKENS,
    FETCH_FIT_MIN_BYTES,
    H200_MEM_BANDWIDTH,
    H200_PEAK_FLOP_PER_S,
    HOST_CACHE_BYTES,
    SHAPES,
    FloatArray,
    Measurements,
    Shape,
    Timing,
)
from kvtier.units import MIB

FIT_SHAPE = "llama-3-70b"
"""The shape the transferable model is fitted on; the other shape is held out entirely."""


HELD_OUT_SHAPE = "llama-3-8b"
"""The shape no fitted value of :class:`ForwardFit` sees: its passes test whether the model transfers."""


@dataclass(frozen=True)
class ForwardFit:
    """The values of :func:`kvtier.formulas.roofline.forward_pass_time_s` fitted to one shape (SI units).

    Each is the value of one ``regen.*`` assumption key of ``h200-measured.yaml``.

    Attributes
    ----------
    mfu : float
        ``mfu.typical``: the compute side's fraction of the 989 TFLOP/s peak.
    mem_efficiency : float
        ``regen.mem_efficiency``: the rate of a long stream, the bare HBM copy's over 4.8 TB/s.
    mem_overhead_per_layer_s : float
        ``regen.mem_overhead_per_layer``: what a CUDA-graph pass takes beyond that stream, per layer (s).
    launch_floor_per_layer_s : float
        ``regen.launch_floor_per_layer``: an eager pass's launch floor per layer (s).
    sharpness : float
        ``regen.knee_sharpness``: the knee's exponent.
    attention_fixed_per_layer_s, attention_efficiency : float
        ``regen.attention_fixed_per_layer`` (s) and ``regen.attention_efficiency`` (fraction of
        4.8 TB/s): one layer's attention over cached positions, ``fixed + KV bytes / rate``.
    """

    mfu: float
    mem_efficiency: float
    mem_overhead_per_layer_s: float
    launch_floor_per_layer_s: float
    sharpness: float
    attention_fixed_per_layer_s: float
    attention_efficiency: float


def fit_forward(
    m: Measurements,
    shape_name: str = FIT_SHAPE,
    drop: frozenset[tuple[str, int]] = frozenset(),
    sharpness: float | None = None,
) -> ForwardFit:
    """Fit the package's forward-pass model to one shape's passes, leaving out the points ``drop`` names.

    - **Stream efficiency**: the bare HBM copy's read plus write rate over 4.8 TB/s (``hbm_copy_rate``),
      no forward pass.
    - **Memory overhead per layer**: the shape's 16-token CUDA-graph pass less its weights at that
      rate, over its layers.
    - **MFU**: :func:`fit_rate_fraction` over its eager passes of at least :data:`COMPUTE_FIT_MIN_TOKENS`.
    - **Launch floor and knee**: ``p`` on :data:`BLEND_GRID` and for each the floor of
      :func:`fit_floor`; the ``p`` with the least squared log residuals over the eager sweep.
    - **Attention**: :func:`fit_latency_bandwidth` over one layer's masked attention of 16 queries
      against the cached KV bytes it reads (probe1.json attention_vs_position).

    ``drop`` holds ``("sweep", tokens)`` and ``("attention", position)`` points to leave out
    (a leave-one-out refit).  ``sharpness`` fixes ``p`` instead of fitting it (``inf``: the plain
    maximum, the model without the knee blend).
    """
    shape = m.shapes[shape_name]
    eff = m.v("hbm_copy_rate") / H200_MEM_BANDWIDTH
    stream = float(roofline.memory_time_s(shape.weight_bytes, H200_MEM_BANDWIDTH, eff))
    overhead = (m.tail16[(shape_name, "graph")].median_s - stream) / shape.layers
    sweep = [p for p in m.sweeps[shape_name] if ("sweep", p.tokens) not in drop]
    tokens = np.array([p.tokens for p in sweep], dtype=np.float64)
    t = np.array([p.timing.median_s for p in sweep])
    flops = shape.flops(tokens)
    bound = tokens >= COMPUTE_FIT_MIN_TOKENS
    mfu = fit_rate_fraction(flops[bound], t[bound], H200_PEAK_FLOP_PER_S)
    compute = flops / (H200_PEAK_FLOP_PER_S * mfu)
    memory = np.full_like(t, stream + overhead * shape.layers)
    grid = BLEND_GRID if sharpness is None else np.array([sharpness])
    per_p = [fit_floor(compute, memory, t, p) for p in grid]
    best = int(np.argmin([cost for _, cost in per_p]))
    points = [(pos, kv, masked) for pos, kv, masked, _ in m.attention if ("attention", pos) not in drop]
    fixed, rate = fit_latency_bandwidth([kv for _, kv, _ in points], [t.median_s for _, _, t in points])
    return ForwardFit(
        mfu=mfu,
        mem_efficiency=eff,
        mem_overhead_per_layer_s=overhead,
        launch_floor_per_layer_s=per_p[best][0] / shape.layers,
        sharpness=float(grid[best]),
        attention_fixed_per_layer_s=fixed,
        attention_efficiency=rate / H200_MEM_BANDWIDTH,
    )


@cache
def shipped_forward_fit() -> ForwardFit:
    """:func:`fit_forward` of the shipped set on :data:`FIT_SHAPE`, computed once per process."""
    return fit_forward(load())


def pass_s(
    ff: ForwardFit,
    shape: Shape,
    tokens: ArrayLike,
    mode: str,
    position: ArrayLike = 0,
    logits_tokens: ArrayLike | None = None,
) -> FloatArray:
    """A pass of ``shape`` on the H200 under the package's forward-pass model at the values ``ff`` (s).

    :func:`kvtier.formulas.roofline.forward_pass_time_s` of the pass's FLOPs and weight bytes, with
    the launch floor in ``mode`` ``"eager"`` (none in ``"graph"``) and, where ``position > 0``, the
    serial attention over the cached positions (:func:`kvtier.formulas.roofline.attention_time_s`):
    what the ``regen.*`` keys of ``h200-measured.yaml`` give a lone block (``kvtier compare``).
    """
    if mode not in ("eager", "graph"):
        raise KvtierError(f"mode must be 'eager' or 'graph', got {show(mode, quote=True)}")
    n = np.asarray(tokens, dtype=np.float64)
    pos = np.asarray(position, dtype=np.float64)
    attention = roofline.attention_time_s(
        shape.kv_bytes_per_token * pos,
        shape.layers,
        ff.attention_fixed_per_layer_s,
        H200_MEM_BANDWIDTH,
        ff.attention_efficiency,
    )
    return roofline.forward_pass_time_s(
        shape.flops(n, pos, logits_tokens),
        np.full_like(n, shape.weight_bytes),
        H200_PEAK_FLOP_PER_S,
        ff.mfu,
        H200_MEM_BANDWIDTH,
        ff.mem_efficiency,
        layers=shape.layers,
        mem_overhead_per_layer_s=ff.mem_overhead_per_layer_s,
        launch_floor_per_layer_s=ff.launch_floor_per_layer_s if mode == "eager" else 0.0,
        sharpness=ff.sharpness,
        serial_s=attention,
    )


IN_SAMPLE = "in sample"


LEAVE_ONE_OUT = "leave-one-out"


HELD_OUT = "held out"


SAMPLES = (IN_SAMPLE, LEAVE_ONE_OUT, HELD_OUT)
"""How a model value was obtained against its measurement: fitted with the point, refitted without
it (leave-one-out), or from fits that never see its group (held out)."""


@dataclass(frozen=True)
class Check:
    """One measurement against the model: its group, case, measured and modelled time (s), and how.

    ``sample`` is one of :data:`SAMPLES`; ``error_pct`` is ``(model / measured - 1) x 100``.
    ``spread`` is the measurement's repetitions (median, fastest, slowest, how many), ``measured_s``
    their median.
    """

    group: str
    case: str
    measured_s: float
    model_s: float
    sample: str
    spread: Timing | None = None

    @property
    def error_pct(self) -> float:
        """Error of the model (percent; negative: the model is short)."""
        return (self.model_s / self.measured_s - 1.0) * 100.0


STACK_FLOOR_GRID = np.exp(np.linspace(np.log(0.25), np.log(4.0), 401))
"""The launch floors per layer :func:`fit_stack_floor` tries, as multiples of the plain-PyTorch one."""


def fit_stack_floor(m: Measurements, ff: ForwardFit, drop: frozenset[tuple[str, int]] = frozenset()) -> float:
    """The launch floor per layer of transformers' ``LlamaForCausalLM``, fitted on its own eager passes (s).

    A launch floor belongs to the software stack it was measured on: the fitted
    ``ff.launch_floor_per_layer_s`` is plain PyTorch's (the probe's own decoder), and transformers
    launches other kernels from other Python.  The floor per layer on :data:`STACK_FLOOR_GRID` (times
    the PyTorch one) with the least squared log residuals of :func:`pass_s` over transformers' passes of
    both shapes (probe4.json), every other value as ``ff``; ``drop`` holds ``(shape, tokens)`` passes to
    leave out (a leave-one-out refit).
    """
    grid = ff.launch_floor_per_layer_s * STACK_FLOOR_GRID
    cost = np.zeros_like(grid)
    for shape_name in SHAPES:
        passes = [p for p in m.hf_sweeps[shape_name] if (shape_name, p.tokens) not in drop]
        if not passes:
            continue
        tokens = np.array([p.tokens for p in passes], dtype=np.float64)
        measured = np.array([p.timing.median_s for p in passes])
        trial = replace(ff, launch_floor_per_layer_s=grid[:, None])  # type: ignore[arg-type]  # a grid, broadcast
        model = pass_s(trial, m.shapes[shape_name], tokens[None, :], "eager")
        cost += np.sum(np.log(model / measured[None, :]) ** 2, axis=1)
    return float(grid[int(np.argmin(cost))])


def leave_one_out_s(m: Measurements, point: tuple[str, int], predict: Any) -> float:
    """``predict(fit_forward(m, drop={point}))``: the model of a point refitted without it (s)."""
    return float(predict(fit_forward(m, drop=frozenset({point}))))


def forward_checks(m: Measurements) -> tuple[Check, ...]:
    """Every measured pass and attention call against the model fitted on :data:`FIT_SHAPE` only.

    - the 70B eager sweep: in sample, and leave-one-out (:func:`fit_forward` without the pass);
    - the 70B 16-token CUDA-graph pass: in sample only (it alone fixes the memory overhead per layer);
    - one layer's masked attention by position: in sample and leave-one-out;
    - held out, no fitted value sees them: every 8B pass, the 70B interior blocks with the upstream
      resident (eager, serial attention) and evicted (a prefill, logits for the last token);
    - both shapes through transformers' ``LlamaForCausalLM`` (eager): leave-one-out, under transformers'
      own launch floor (:func:`fit_stack_floor` without the pass), never plain PyTorch's.

    Each check carries its measurement's repetitions (:attr:`Check.spread`).
    """
    ff = fit_forward(m)
    s70, s8 = m.shapes[FIT_SHAPE], m.shapes[HELD_OUT_SHAPE]
    out: list[Check] = []
    group = f"{FIT_SHAPE} eager passes"
    for p in m.sweeps[FIT_SHAPE]:
        case = f"{p.tokens:,} tokens"
        t = p.timing.median_s

        def predict(f: ForwardFit, n: int = p.tokens) -> FloatArray:
            return pass_s(f, s70, n, "eager")

        out.append(Check(group, case, t, float(predict(ff)), IN_SAMPLE, p.timing))
        out.append(Check(group, case, t, leave_one_out_s(m, ("sweep", p.tokens), predict), LEAVE_ONE_OUT, p.timing))
    g16 = m.tail16[(FIT_SHAPE, "graph")]
    model16 = float(pass_s(ff, s70, 16, "graph"))
    out.append(Check(f"{FIT_SHAPE} CUDA-graph pass", "16 tokens", g16.median_s, model16, IN_SAMPLE, g16))
    group = "one layer's attention, 16 queries, masked"
    for pos, kv, masked, _ in m.attention:
        case = f"{pos:,} positions"

        def attn(f: ForwardFit, b: int = kv) -> FloatArray:
            return roofline.attention_time_s(
                b, 1, f.attention_fixed_per_layer_s, H200_MEM_BANDWIDTH, f.attention_efficiency
            )

        out.append(Check(group, case, masked.median_s, float(attn(ff)), IN_SAMPLE, masked))
        loo = leave_one_out_s(m, ("attention", pos), attn)
        out.append(Check(group, case, masked.median_s, loo, LEAVE_ONE_OUT, masked))
    group = f"{HELD_OUT_SHAPE} passes from {FIT_SHAPE} fits"
    for p in m.sweeps[HELD_OUT_SHAPE]:
        out.append(
            Check(
                group,
                f"{p.tokens:,} tokens, eager",
                p.timing.median_s,
                float(pass_s(ff, s8, p.tokens, "eager")),
                HELD_OUT,
                p.timing,
            )
        )
    for mode in ("eager", "graph"):
        tail = m.tail16[(HELD_OUT_SHAPE, mode)]
        case = "16 tokens, graph" if mode == "graph" else "16 tokens, eager, tail loop"  # the sweep has its own 16
        out.append(Check(group, case, tail.median_s, float(pass_s(ff, s8, 16, mode)), HELD_OUT, tail))
    group = f"{FIT_SHAPE} interior blocks"
    for p in m.resident:
        model = float(pass_s(ff, s70, p.tokens, "eager", p.position))
        out.append(Check(group, f"at {p.position:,}, upstream resident", p.timing.median_s, model, HELD_OUT, p.timing))
    for p in m.evicted:
        model = float(pass_s(ff, s70, p.tokens, "eager", 0, 1))
        out.append(
            Check(
                group, f"at {p.tokens - 16:,}, upstream evicted (prefill)", p.timing.median_s, model, HELD_OUT, p.timing
            )
        )
    for shape_name in SHAPES:
        group = f"{shape_name} through transformers"
        for p in m.hf_sweeps[shape_name]:
            # transformers' own launch floor, refitted on its passes without this one: not plain PyTorch's
            own = replace(ff, launch_floor_per_layer_s=fit_stack_floor(m, ff, frozenset({(shape_name, p.tokens)})))
            model = float(pass_s(own, m.shapes[shape_name], p.tokens, "eager"))
            out.append(Check(group, f"{p.tokens:,} tokens, eager", p.timing.median_s, model, LEAVE_ONE_OUT, p.timing))
    return tuple(out)


def copy_checks(m: Measurements) -> tuple[Check, ...]:
    """The pinned copies of at least :data:`FETCH_FIT_MIN_BYTES` against ``latency + bytes / bandwidth``.

    In sample (fitted on every such copy of the direction) and leave-one-out (refitted without it).
    """
    out: list[Check] = []
    for kind in ("h2d_pinned", "d2h_pinned"):
        pts = [c for c in m.copies_of(kind) if c.n_bytes >= FETCH_FIT_MIN_BYTES]
        sizes = np.array([c.n_bytes for c in pts], dtype=np.float64)
        times = np.array([c.timing.median_s for c in pts])
        latency, bw = fit_latency_bandwidth(sizes, times)

        def predict(fitted: tuple[float, float], n_bytes: float) -> float:
            return float(costs.fetch_time_s(n_bytes, fitted[1], fitted[0]))

        loo = leave_one_out(sizes, times, fit_latency_bandwidth, predict)
        for c, held in zip(pts, loo, strict=True):
            case = f"{c.n_bytes / MIB:g} MiB"
            group = f"copies, {kind.replace('_', ' ')}"
            out.append(Check(group, case, c.timing.median_s, predict((latency, bw), c.n_bytes), IN_SAMPLE, c.timing))
            out.append(Check(group, case, c.timing.median_s, float(held), LEAVE_ONE_OUT, c.timing))
    return tuple(out)


@dataclass(frozen=True)
class TransferFit:
    """The transfer model's values beyond latency and bandwidth (:func:`kvtier.formulas.transfer.fetch_time_s`).

    Attributes
    ----------
    latency_s, bandwidth_bytes_per_s : float
        ``fetch_latency`` and the pinned host-to-device rate (``bandwidth.mid``): :attr:`Fits.fetch`.
    min_transfer_s : float
        ``fetch.min_transfer_time``: the median of the pinned host-to-device copies below
        :data:`FETCH_FIT_MIN_BYTES` (s).
    pageable_efficiency, pageable_warm_efficiency, pageable_overhead_s : float
        ``fetch.pageable_efficiency`` (staged from DRAM, the copies beyond :attr:`host_cache_bytes`),
        ``fetch.pageable_warm_efficiency`` (staged from the host cache, the copies within it) and
        ``fetch.pageable_overhead`` (s): :func:`kvtier.formulas.fits.fit_pageable` over every pageable
        host-to-device copy, at the pinned fit's latency and bandwidth.
    host_cache_bytes : float
        ``fetch.host_cache``, :data:`HOST_CACHE_BYTES` (B): the breakpoint, assumed.
    duplex_efficiency : float
        ``fetch.duplex_efficiency``: host to device alone over host to device with device to host running.
    """

    latency_s: float
    bandwidth_bytes_per_s: float
    min_transfer_s: float
    pageable_efficiency: float
    pageable_warm_efficiency: float
    pageable_overhead_s: float
    host_cache_bytes: float
    duplex_efficiency: float

    def pageable_s(self, n_bytes: float, source_bytes: float | None = None) -> float:
        """One copy of ``n_bytes`` from pageable memory whose working set is ``source_bytes`` (s).

        ``None``: the copy's own size, one buffer copied again and again as the probe did; ``math.inf``:
        a pool far larger than the host cache, as a serving system's KV pool.
        """
        source = n_bytes if source_bytes is None else source_bytes
        eff = transfer.staging_efficiency(
            source, self.pageable_efficiency, self.pageable_warm_efficiency, self.host_cache_bytes
        )
        return _fetch(self, n_bytes, efficiency=float(eff), overhead_s=self.pageable_overhead_s)


def fit_transfer(m: Measurements, drop: frozenset[tuple[str, int]] = frozenset()) -> TransferFit:
    """Fit :class:`TransferFit` to the pinned and pageable host-to-device copies, leaving out ``drop``.

    ``drop`` holds ``(kind, n_bytes)`` copies to leave out (a leave-one-out refit).
    """
    pinned = [c for c in m.copies_of("h2d_pinned") if ("h2d_pinned", c.n_bytes) not in drop]
    big = [c for c in pinned if c.n_bytes >= FETCH_FIT_MIN_BYTES]
    latency, bw = fit_latency_bandwidth([c.n_bytes for c in big], [c.timing.median_s for c in big])
    small = [c.timing.median_s for c in pinned if c.n_bytes < FETCH_FIT_MIN_BYTES]
    pageable = [c for c in m.copies_of("h2d_pageable") if ("h2d_pageable", c.n_bytes) not in drop]
    sizes = [c.n_bytes for c in pageable]
    warm = [n <= HOST_CACHE_BYTES for n in sizes]
    if all(warm) or not any(warm):
        side = "within" if not any(warm) else "beyond"
        raise KvtierError(
            f"copies[kind=h2d_pageable]: the pageable fit needs a copy {side} the host cache of"
            f" {HOST_CACHE_BYTES / MIB:g} MiB, got sizes {sorted(sizes)}"
        )
    overhead, warm_eff, cold_eff = fit_pageable(
        sizes, [c.timing.median_s for c in pageable], latency, bw, HOST_CACHE_BYTES
    )
    return TransferFit(
        latency_s=latency,
        bandwidth_bytes_per_s=bw,
        min_transfer_s=float(np.median(small)),
        pageable_efficiency=cold_eff,
        pageable_warm_efficiency=warm_eff,
        pageable_overhead_s=overhead,
        host_cache_bytes=float(HOST_CACHE_BYTES),
        duplex_efficiency=m.v("bidirectional_h2d_alone_s") / m.v("bidirectional_h2d_together_s"),
    )


def _fetch(
    tf: TransferFit, n_bytes: float, transfers: int = 1, efficiency: float = 1.0, overhead_s: float = 0.0
) -> float:
    return float(
        transfer.fetch_time_s(
            n_bytes, tf.bandwidth_bytes_per_s, tf.latency_s, transfers, tf.min_transfer_s, efficiency, overhead_s
        )
    )


POOL_GROUP = "copies, h2d pageable, from a KV pool (compare's pageable)"
"""The validation group of every pageable copy under the share a KV pool sees (the DRAM-staged one)."""


def transfer_checks(m: Measurements) -> tuple[Check, ...]:
    """The copies the plain ``latency + bytes / bandwidth`` leaves out, under the transfer model.

    - pinned host-to-device copies below a mebibyte: in sample (their median is the floor) and
      leave-one-out; device to host: held out (the floor is fitted on the other direction);
    - every pageable copy (below a mebibyte in their own group) as the probe took it, one buffer
      copied again and again, staged from the host cache up to :data:`HOST_CACHE_BYTES` and from
      DRAM beyond it (``kvtier compare --host-memory pageable-warm`` within the cache): in sample and
      leave-one-out;
    - the same copies as a KV pool far larger than the host cache would see them, every one staged from
      DRAM (:data:`POOL_GROUP`, ``kvtier compare --host-memory pageable``, what every page uses):
      leave-one-out;
    - the 5 MiB block in one copy per 32 KiB chunk (probe1 and probe2): held out;
    - 256 MiB each way at once: host to device in sample, device to host held out.

    Each check carries its measurement's repetitions (:attr:`Check.spread`).
    """
    tf = fit_transfer(m)
    out: list[Check] = []
    for c in m.copies_of("h2d_pinned"):
        if c.n_bytes < FETCH_FIT_MIN_BYTES:
            case, group = f"{c.n_bytes // 1024} KiB", "small copies, h2d pinned"
            loo = fit_transfer(m, frozenset({("h2d_pinned", c.n_bytes)}))
            out.append(Check(group, case, c.timing.median_s, _fetch(tf, c.n_bytes), IN_SAMPLE, c.timing))
            out.append(Check(group, case, c.timing.median_s, _fetch(loo, c.n_bytes), LEAVE_ONE_OUT, c.timing))
    for c in m.copies_of("d2h_pinned"):
        if c.n_bytes < FETCH_FIT_MIN_BYTES:
            case, group = f"{c.n_bytes // 1024} KiB", "small copies, d2h pinned"
            out.append(Check(group, case, c.timing.median_s, _fetch(tf, c.n_bytes), HELD_OUT, c.timing))
    pool: list[Check] = []
    for c in m.copies_of("h2d_pageable"):
        big = c.n_bytes >= FETCH_FIT_MIN_BYTES
        case = f"{c.n_bytes / MIB:g} MiB" if big else f"{c.n_bytes // 1024} KiB"
        group = "copies, h2d pageable" if big else "small copies, h2d pageable"
        loo = fit_transfer(m, frozenset({("h2d_pageable", c.n_bytes)}))
        t = c.timing.median_s
        out.append(Check(group, case, t, tf.pageable_s(c.n_bytes), IN_SAMPLE, c.timing))
        out.append(Check(group, case, t, loo.pageable_s(c.n_bytes), LEAVE_ONE_OUT, c.timing))
        pool.append(Check(POOL_GROUP, case, t, loo.pageable_s(c.n_bytes, math.inf), LEAVE_ONE_OUT, c.timing))
    out += pool
    block = m.chunk_bytes * m.chunks
    for probe in ("probe1", "probe2"):
        t = m.block[f"per_chunk_{probe}"]
        model = _fetch(tf, block, m.chunks)
        out.append(Check("a block in per-layer chunks", f"{m.chunks} copies, {probe}", t.median_s, model, HELD_OUT, t))
    each = m.v("bidirectional_bytes")
    for direction, sample in (("h2d", IN_SAMPLE), ("d2h", HELD_OUT)):
        t = m.duplex[f"{direction}_together"]
        model = _fetch(tf, each, efficiency=tf.duplex_efficiency)
        out.append(Check("both directions at once", f"{direction}, {each / MIB:g} MiB", t.median_s, model, sample, t))
    return tuple(out)
