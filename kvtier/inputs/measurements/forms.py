"""The model's forms validated, not only its parameters: each form left out with the points it was chosen for.

A leave-one-out refit tests a form's *parameters* on points they did not see; it does not test the
*form*, which was chosen after its residuals were seen.  The forward-pass and transfer models
gained five forms that way (issue 28, 2026-12-03), each to explain a group of points the earlier
model missed:

- the eager launch floor (``regen.launch_floor_per_layer``, commit 70c0502): the eager 70B passes
  below the knee, which the plain roofline put on the weight stream;
- the knee blend (``regen.knee_sharpness``, 70c0502): the pass where compute and the floor meet;
- the per-layer memory overhead (``regen.mem_overhead_per_layer``, 70c0502 and 63f4245): the 8B
  CUDA-graph pass, which one memory efficiency fitted on the 70B one misses;
- serial attention (``regen.attention: serial``, 70c0502): the 70B blocks whose prefix is resident;
- the 128 MiB host cache (``fetch.host_cache``, commit 6b876c0): the pageable copies beyond it,
  whose rate falls where the smaller ones' rises.

:func:`form_checks` gives, for each, the group's error under the model without the form (the
residual it was chosen after, everything else fitted on every point), with the form fitted on every
point (in sample), and with the form refitted with its whole group left out (the group's
prediction from the other points).  A form whose parameter only its group determines cannot be
refitted without it: the fit then falls back to the form it replaced, and the row says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from kvtier.formulas import roofline
from kvtier.formulas.fits import fit_floor
from kvtier.inputs.measurements.records import (
    H200_MEM_BANDWIDTH,
    H200_PEAK_FLOP_PER_S,
    HOST_CACHE_BYTES,
    Measurements,
)
from kvtier.inputs.measurements.validation import (
    FIT_SHAPE,
    HELD_OUT_SHAPE,
    IN_SAMPLE,
    LEAVE_ONE_OUT,
    ForwardFit,
    TransferFit,
    _fetch,
    fit_forward,
    fit_transfer,
    forward_checks,
    pass_s,
)
from kvtier.units import MIB

FLOOR_GROUP_MAX_TOKENS = 128
"""The eager 70B passes of at most this many tokens are the launch floor's group: issue 28 found all of
them short under the plain roofline (the CLI had no launch term)."""


@dataclass(frozen=True)
class FormCheck:
    """One form against the group of points it was chosen to explain (SI units; errors in percent).

    Attributes
    ----------
    form, key : str
        The form in words and the assumption key that carries it.
    introduced : str
        The commit and issue that added it, and the residual it was chosen after, in words.
    group : str
        The points it was chosen to explain, the group left out together.
    cases : tuple of str
        Each point of the group.
    measured_s, without_s, in_sample_s, left_out_s : tuple of float
        Per point: the measured median, the model without the form (everything else fitted on every
        point), the model with the form fitted on every point, and with the form refitted without the
        whole group.
    reps : tuple of int
        Per point: the repetitions its median is of.
    refit : str
        How the fit went with the group left out.
    """

    form: str
    key: str
    introduced: str
    group: str
    cases: tuple[str, ...]
    measured_s: tuple[float, ...]
    without_s: tuple[float, ...]
    in_sample_s: tuple[float, ...]
    left_out_s: tuple[float, ...]
    reps: tuple[int, ...]
    refit: str

    def errors_pct(self, model: str) -> np.ndarray:
        """Per point, ``(model / measured - 1) x 100`` for ``model`` ``without``, ``in_sample`` or ``left_out``."""
        return (np.array(getattr(self, f"{model}_s")) / np.array(self.measured_s) - 1.0) * 100.0


def _sweep_points(m: Measurements, tokens: list[int]) -> tuple[list[str], list[float], list[int]]:
    passes = [p for p in m.sweeps[FIT_SHAPE] if p.tokens in tokens]
    return (
        [f"{p.tokens:,} token{'s' if p.tokens != 1 else ''}, eager" for p in passes],
        [p.timing.median_s for p in passes],
        [p.timing.reps for p in passes],
    )


def _eager(ff: ForwardFit, m: Measurements, tokens: list[int]) -> tuple[float, ...]:
    return tuple(float(pass_s(ff, m.shapes[FIT_SHAPE], n, "eager")) for n in tokens)


def knee_group(m: Measurements, ff: ForwardFit | None = None) -> int:
    """The eager 70B pass the plain maximum (no knee blend, floor refitted) misses most: the knee's point (tokens)."""
    plain = fit_forward(m, sharpness=math.inf) if ff is None else ff
    errors = {
        p.tokens: abs(float(pass_s(plain, m.shapes[FIT_SHAPE], p.tokens, "eager")) / p.timing.median_s - 1)
        for p in m.sweeps[FIT_SHAPE]
    }
    return max(errors, key=errors.__getitem__)


def _sweep_form(
    m: Measurements, form: str, key: str, introduced: str, tokens: list[int], without: ForwardFit
) -> FormCheck:
    """A form of the eager sweep (floor, knee) against the passes ``tokens``, refitted without them."""
    ff = fit_forward(m)
    cases, measured, reps = _sweep_points(m, tokens)
    left = fit_forward(m, drop=frozenset(("sweep", n) for n in tokens))
    floors = left.launch_floor_per_layer_s * m.shapes[FIT_SHAPE].layers
    fastest = min(p.timing.median_s for p in m.sweeps[FIT_SHAPE] if p.tokens not in tokens)
    bound = " (at the bottom of its search, half the fastest pass left: no pass left lies on the floor)"
    at_bound = math.isclose(floors, 0.5 * fastest, rel_tol=1e-9)
    return FormCheck(
        form=form,
        key=key,
        introduced=introduced,
        group=f"the eager {FIT_SHAPE} pass{'es' if len(tokens) > 1 else ''} of {listed_tokens(tokens)}",
        cases=tuple(cases),
        measured_s=tuple(measured),
        without_s=_eager(without, m, tokens),
        in_sample_s=_eager(ff, m, tokens),
        left_out_s=_eager(left, m, tokens),
        reps=tuple(reps),
        refit=(
            f"floor and knee refitted on the other eager passes: floor {floors * 1e3:.1f} ms"
            f"{bound if at_bound else ''}, p = {left.sharpness:g}"
        ),
    )


def listed_tokens(tokens: list[int]) -> str:
    """``1 to 128 tokens`` for a run of sweep points, ``256 tokens`` for one."""
    return f"{tokens[0]:,} tokens" if len(tokens) == 1 else f"{min(tokens):,} to {max(tokens):,} tokens"


def _overhead_form(m: Measurements) -> FormCheck:
    """The per-layer memory overhead against the 8B CUDA-graph pass; without it, one memory efficiency."""
    ff = fit_forward(m)
    s70, s8 = m.shapes[FIT_SHAPE], m.shapes[HELD_OUT_SHAPE]
    graph70 = m.tail16[(FIT_SHAPE, "graph")].median_s
    # the form it replaced: one memory efficiency, fitted to the 70B graph pass (what the peers' tools have)
    single = float(roofline.memory_time_s(s70.weight_bytes, H200_MEM_BANDWIDTH)) / graph70
    without = replace(ff, mem_efficiency=single, mem_overhead_per_layer_s=0.0)
    t = m.tail16[(HELD_OUT_SHAPE, "graph")]
    model = float(pass_s(ff, s8, 16, "graph"))
    return FormCheck(
        form="memory overhead per layer",
        key="regen.mem_overhead_per_layer",
        introduced="70c0502 and 63f4245 (issue 28 item 3): the 8B graph pass far short under one memory efficiency",
        group=f"the {HELD_OUT_SHAPE} 16-token CUDA-graph pass",
        cases=("16 tokens, graph",),
        measured_s=(t.median_s,),
        without_s=(float(pass_s(without, s8, 16, "graph")),),
        in_sample_s=(model,),
        left_out_s=(model,),
        reps=(t.reps,),
        refit=f"never in the fit (fitted on the {FIT_SHAPE} shapes only): already left out, but seen before the form",
    )


def _attention_form(m: Measurements) -> FormCheck:
    """Serial attention against the 70B blocks whose prefix is resident; without it, the KV read with the weights."""
    ff = fit_forward(m)
    s70 = m.shapes[FIT_SHAPE]
    cases, measured, without, with_form, reps = [], [], [], [], []
    for p in m.resident:
        cases.append(f"at {p.position:,}, upstream resident")
        measured.append(p.timing.median_s)
        reps.append(p.timing.reps)
        with_form.append(float(pass_s(ff, s70, p.tokens, "eager", p.position)))
        # streamed: the cached K and V read with the weights, at the stream's rate, no attention after the blend
        without.append(
            float(
                roofline.forward_pass_time_s(
                    s70.flops(p.tokens, p.position),
                    s70.weight_bytes + s70.kv_bytes_per_token * p.position,
                    H200_PEAK_FLOP_PER_S,
                    ff.mfu,
                    H200_MEM_BANDWIDTH,
                    ff.mem_efficiency,
                    layers=s70.layers,
                    mem_overhead_per_layer_s=ff.mem_overhead_per_layer_s,
                    launch_floor_per_layer_s=ff.launch_floor_per_layer_s,
                    sharpness=ff.sharpness,
                )
            )
        )
    return FormCheck(
        form="serial attention",
        key="regen.attention",
        introduced="70c0502 (issue 28 item 1): the resident-prefix blocks short, attention 10 to 59 times the model",
        group=f"the {FIT_SHAPE} blocks whose prefix is resident",
        cases=tuple(cases),
        measured_s=tuple(measured),
        without_s=tuple(without),
        in_sample_s=tuple(with_form),
        left_out_s=tuple(with_form),
        reps=tuple(reps),
        refit="never in the fit (attention fitted on the attention calls): already left out, but seen before the form",
    )


def fit_single_pageable(m: Measurements, tf: TransferFit, sizes: list[int]) -> tuple[float, float]:
    """One pageable share and overhead, fitted like :func:`kvtier.formulas.fits.fit_pageable` with no cache.

    Relative least squares of ``t = latency + overhead + bytes / (bandwidth x efficiency)`` over the
    pageable host-to-device copies of ``sizes`` at the pinned fit's latency and bandwidth: the form
    the host cache replaced.  Returns ``(overhead_s, efficiency)``.
    """
    pts = [c for c in m.copies_of("h2d_pageable") if c.n_bytes in sizes]
    b = np.array([c.n_bytes for c in pts], dtype=np.float64)
    t = np.array([c.timing.median_s for c in pts])
    design = np.column_stack([np.ones_like(b), b]) / t[:, None]
    (overhead, inverse), *_ = np.linalg.lstsq(design, 1.0 - tf.latency_s / t, rcond=None)
    return float(overhead), float(1.0 / (inverse * tf.bandwidth_bytes_per_s))


def _single_s(tf: TransferFit, n_bytes: float, single: tuple[float, float]) -> float:
    return _fetch(tf, n_bytes, efficiency=single[1], overhead_s=single[0])


def _cache_form(m: Measurements) -> FormCheck:
    """The host cache's warm and cold shares against the pageable copies beyond it; without it, one share."""
    tf = fit_transfer(m)
    sizes = [c.n_bytes for c in m.copies_of("h2d_pageable")]
    beyond = [c for c in m.copies_of("h2d_pageable") if c.n_bytes > HOST_CACHE_BYTES]
    within = [n for n in sizes if n <= HOST_CACHE_BYTES]
    everywhere = fit_single_pageable(m, tf, sizes)
    left = fit_single_pageable(m, tf, within)  # no copy beyond the cache left: the cold share cannot be fitted
    return FormCheck(
        form="host cache (warm and cold pageable shares)",
        key="fetch.host_cache",
        introduced="6b876c0 (issue 28 item 2): the pageable rate rising to 64 MiB, then falling",
        group=f"the pageable copies beyond {HOST_CACHE_BYTES / MIB:g} MiB",
        cases=tuple(f"{c.n_bytes / MIB:g} MiB" for c in beyond),
        measured_s=tuple(c.timing.median_s for c in beyond),
        without_s=tuple(_single_s(tf, c.n_bytes, everywhere) for c in beyond),
        in_sample_s=tuple(tf.pageable_s(c.n_bytes) for c in beyond),
        left_out_s=tuple(_single_s(tf, c.n_bytes, left) for c in beyond),
        reps=tuple(c.timing.reps for c in beyond),
        refit=(
            f"no copy beyond the cache left, so no cold share: one share fitted on the {len(within)} copies within it"
            f" ({left[1] * 100:.1f} % of the pinned rate)"
        ),
    )


def form_checks(m: Measurements) -> tuple[FormCheck, ...]:
    """Each form of the forward-pass and transfer models against the group it was chosen for (module docstring).

    The last row leaves the floor's and the knee's groups out together.
    """
    ff = fit_forward(m)
    floor_tokens = [p.tokens for p in m.sweeps[FIT_SHAPE] if p.tokens <= FLOOR_GROUP_MAX_TOKENS]
    plain = fit_forward(m, sharpness=math.inf)
    knee = knee_group(m, plain)
    issue = "70c0502 (issue 28 item 1)"
    floor = _sweep_form(
        m,
        "eager launch floor",
        "regen.launch_floor_per_layer",
        f"{issue}: every eager 70B pass below the knee short, no launch term",
        floor_tokens,
        replace(ff, launch_floor_per_layer_s=0.0),
    )
    blend = _sweep_form(
        m,
        "knee blend",
        "regen.knee_sharpness",
        f"{issue}: the knee pass short under max(compute, floor)",
        [knee],
        plain,
    )
    both = _sweep_form(
        m,
        "floor and knee together",
        "regen.launch_floor_per_layer, regen.knee_sharpness",
        f"{issue}: both residuals above",
        sorted([*floor_tokens, knee]),
        replace(plain, launch_floor_per_layer_s=0.0),
    )
    return (floor, blend, _overhead_form(m), _attention_form(m), _cache_form(m), both)


@dataclass(frozen=True)
class PeerFit:
    """The peers' form calibrated on kvtier's data: one MFU, one memory efficiency, one eager floor per pass.

    llm-analysis and GenZ time a pass as ``max(FLOPs / (peak x MFU), bytes / (bandwidth x efficiency))``
    with the two efficiencies as inputs (both 1 by default).  Given the data kvtier is fitted on, they
    get kvtier's MFU (the 70B eager passes of 1,024 tokens and more), the memory efficiency of the 70B
    CUDA-graph pass, and one extra constant: an eager pass's floor (s), fitted to the 70B eager sweep
    under the plain maximum.  What they lack are kvtier's forms: a floor per layer, the knee blend, a
    memory overhead per layer, serial attention.
    """

    mfu: float
    mem_efficiency: float
    floor_s: float

    def pass_s(self, m: Measurements, shape_name: str, tokens: int, mode: str, position: int = 0) -> float:
        """A pass of ``tokens`` after ``position`` cached (``mode`` eager or graph) under the peers' form (s)."""
        shape = m.shapes[shape_name]
        compute = float(shape.flops(tokens, position)) / (H200_PEAK_FLOP_PER_S * self.mfu)
        memory = (shape.weight_bytes + shape.kv_bytes_per_token * position) / (H200_MEM_BANDWIDTH * self.mem_efficiency)
        return max(compute, memory, self.floor_s if mode == "eager" else 0.0)


def fit_peer(m: Measurements, drop: frozenset[tuple[str, int]] = frozenset()) -> PeerFit:
    """:class:`PeerFit` on the 70B passes, leaving out the sweep points ``drop`` names (as :func:`fit_forward`)."""
    s70 = m.shapes[FIT_SHAPE]
    eff = float(roofline.memory_time_s(s70.weight_bytes, H200_MEM_BANDWIDTH)) / m.tail16[(FIT_SHAPE, "graph")].median_s
    mfu = fit_forward(m, drop=drop).mfu
    sweep = [p for p in m.sweeps[FIT_SHAPE] if ("sweep", p.tokens) not in drop]
    tokens = np.array([p.tokens for p in sweep], dtype=np.float64)
    t = np.array([p.timing.median_s for p in sweep])
    compute = s70.flops(tokens) / (H200_PEAK_FLOP_PER_S * mfu)
    memory = np.full_like(t, s70.weight_bytes / (H200_MEM_BANDWIDTH * eff))
    floor, _ = fit_floor(compute, memory, t, math.inf)
    return PeerFit(mfu=mfu, mem_efficiency=eff, floor_s=floor)


@dataclass(frozen=True)
class PeerCheck:
    """One forward pass under kvtier's model and the peers' calibrated form, each out of sample where it can be."""

    group: str
    case: str
    measured_s: float
    kvtier_s: float
    peer_s: float
    sample: str


def peer_checks(m: Measurements) -> tuple[PeerCheck, ...]:
    """Every plain-PyTorch forward pass under kvtier's model and the peers' form, given the same data.

    The 70B eager passes leave-one-out for both (MFU and floors refitted without the pass); the 70B
    graph pass in sample for both (it alone fixes the memory side); the 8B passes and the interior
    blocks held out for both.  Transformers' passes are not among them (another stack: its floor is
    its own) and neither are the attention calls (the peers have no attention call to time).
    """
    checks = {(c.group, c.case, c.sample): c for c in forward_checks(m)}
    full = fit_peer(m)
    out: list[PeerCheck] = []
    group = f"{FIT_SHAPE} eager passes"
    for p in m.sweeps[FIT_SHAPE]:
        case = f"{p.tokens:,} tokens"
        kv = checks[(group, case, LEAVE_ONE_OUT)]
        peer = fit_peer(m, frozenset({("sweep", p.tokens)})).pass_s(m, FIT_SHAPE, p.tokens, "eager")
        out.append(PeerCheck(group, case, kv.measured_s, kv.model_s, peer, LEAVE_ONE_OUT))
    group = f"{FIT_SHAPE} CUDA-graph pass"
    kv = checks[(group, "16 tokens", IN_SAMPLE)]
    out.append(
        PeerCheck(group, "16 tokens", kv.measured_s, kv.model_s, full.pass_s(m, FIT_SHAPE, 16, "graph"), IN_SAMPLE)
    )
    group = f"{HELD_OUT_SHAPE} passes from {FIT_SHAPE} fits"
    for (g, case, sample), kv in checks.items():
        if g != group:
            continue
        tokens = int(case.split()[0].replace(",", ""))
        mode = "graph" if "graph" in case else "eager"
        out.append(PeerCheck(g, case, kv.measured_s, kv.model_s, full.pass_s(m, HELD_OUT_SHAPE, tokens, mode), sample))
    group = f"{FIT_SHAPE} interior blocks"
    interior = [c for (g, _, _), c in checks.items() if g == group]
    for kv, p in zip(interior, [*m.resident, *m.evicted], strict=True):
        resident = "resident" in kv.case
        tokens, position = (p.tokens, p.position) if resident else (p.tokens, 0)
        peer = full.pass_s(m, FIT_SHAPE, tokens, "eager", position)
        out.append(PeerCheck(group, kv.case, kv.measured_s, kv.model_s, peer, kv.sample))
    return tuple(out)


__all__ = [
    "FLOOR_GROUP_MAX_TOKENS",
    "FormCheck",
    "PeerCheck",
    "PeerFit",
    "fit_peer",
    "peer_checks",
    "fit_single_pageable",
    "form_checks",
    "knee_group",
    "listed_tokens",
]
