"""The uncertainty page (``notebooks/10_uncertainty.md``): a seeded Monte Carlo and a tornado chart, both regimes.

Both regimes of regeneration are drawn from the same seeded draws of the link bandwidth,
the MFU and the peak: *inside a batch* the block costs its marginal compute (the source
chapter's model); a *lone block* also streams every weight from device memory, so its
draws add the memory bandwidth and its efficiency.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import uncertainty as mc
from kvtier.inputs import chapter
from kvtier.inputs import measurements as ms
from kvtier.report.columns import Column, declare, named
from kvtier.report.figures import PALETTE, finish, new_figure, plain_log_ticks
from kvtier.report.words import times
from kvtier.scenario import POINT_KEYS, Scenario

if TYPE_CHECKING:
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure

NOTEBOOK = "10_uncertainty"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "uncertainty"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (
    *POINT_KEYS,
    "uncertainty.bandwidth_high",
    "uncertainty.bandwidth_low",
    "uncertainty.distribution",
    "uncertainty.draws",
    "uncertainty.mem_bandwidth_high",
    "uncertainty.mem_bandwidth_low",
    "uncertainty.mem_efficiency_high",
    "uncertainty.mem_efficiency_low",
    "uncertainty.mfu_high",
    "uncertainty.mfu_low",
    "uncertainty.peak_high",
    "uncertainty.peak_low",
    "uncertainty.seed",
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""

REGIMES = ("in-batch", "lone block")
"""The two regimes of regeneration: marginal compute inside a batch, and a lone block under the roofline."""

UNITS = {
    "bandwidth": ("GB/s", 1e9),
    "mfu": ("%", 0.01),
    "peak": ("TFLOP/s", 1e12),
    "mem_bandwidth": ("TB/s", 1e12),
    "mem_efficiency": ("%", 0.01),
}
"""Display unit and scale of each uncertain input."""

RANGE_KEYS = (
    "uncertainty.distribution",
    "uncertainty.bandwidth_low",
    "uncertainty.bandwidth_high",
    "uncertainty.mfu_low",
    "uncertainty.mfu_high",
    "uncertainty.peak_low",
    "uncertainty.peak_high",
)
MEMORY_KEYS = (
    "uncertainty.mem_bandwidth_low",
    "uncertainty.mem_bandwidth_high",
    "uncertainty.mem_efficiency_low",
    "uncertainty.mem_efficiency_high",
    "weight_dtype",
)
BLOCK_KEYS = ("model", "param_count", "kv_dtype", "block_tokens", "flops_per_param_token", "fetch_latency")


def inputs(s: Scenario) -> tuple[dict[str, mc.Range], dict[str, float]]:
    """The Monte Carlo ranges and the illustrative base point, both regimes' inputs.

    Returns
    -------
    ranges : dict
        ``bandwidth`` (B/s), ``mfu`` (fraction), ``peak`` (FLOP/s), ``mem_bandwidth`` (B/s)
        and ``mem_efficiency`` (fraction) ranges from the ``uncertainty.*`` keys.
    base : dict
        The same inputs at the illustrative point, on the assumption set's device.
    """
    dist = str(s.assumptions.value("uncertainty.distribution"))
    ranges = {
        name: mc.Range(
            s.v(f"uncertainty.{name}_low"), s.v(f"uncertainty.{name}_high"), dist, name=f"uncertainty.{name}"
        )
        for name in mc.LONE_INPUTS
    }
    point = s.illustrative
    base = {
        "bandwidth": point["bandwidth_bytes_per_s"],
        "mfu": point["mfu"],
        "peak": s.v("peak_flops"),
        "mem_bandwidth": s.v("regen.mem_bandwidth"),
        "mem_efficiency": s.v("regen.mem_efficiency"),
    }
    return ranges, base


def lone_bytes(s: Scenario) -> float:
    """Bytes a lone tail block's regeneration reads from device memory: every weight once (B)."""
    return float(s.regen_bytes(0, "resident", s.block_tokens))


def _bytes_read(s: Scenario, regime: str) -> float | None:
    return None if regime == "in-batch" else lone_bytes(s)


def _flops(s: Scenario, regime: str) -> float:
    """The tail block's FLOPs one accelerator computes in ``regime`` under the placement (FLOP).

    The FLOPs :meth:`~kvtier.scenario.Scenario.interior_flops` counts at position 0, the block's
    attention over itself included: inside a batch every accelerator shares them (``/ accelerators``),
    as :meth:`~kvtier.scenario.Scenario.regen_s` counts them; a lone block's busiest rank computes its
    share (:attr:`~kvtier.scenario.Scenario.compute_share`), as
    :meth:`~kvtier.scenario.Scenario.lone_regen_s` does.  The collectives a placement adds are held
    fixed (:func:`fixed_terms`).
    """
    flops = float(s.interior_flops(0, "resident"))
    if regime == "in-batch":
        return flops / s.placement.accelerators
    return flops * s.compute_share


def _regime_ranges(s: Scenario, regime: str, fixed_peak: bool) -> dict[str, mc.Range]:
    """The ranges ``regime`` draws: the memory side only for a lone block; ``fixed_peak`` pins the peak."""
    ranges, base = inputs(s)
    if fixed_peak:
        ranges = dict(ranges, peak=mc.Range.fixed(base["peak"], name="peak_flops"))
    names = mc.INPUTS if regime == "in-batch" else mc.LONE_INPUTS
    return {name: ranges[name] for name in names}


def fixed_terms(s: Scenario, regime: str) -> mc.Fixed:
    """What the draws hold fixed in ``regime``: the forward-pass model's per-layer terms (a lone block),
    the placement's collectives (a lone block pays their latency, a block in a batch its bytes over the
    stages) and the transfer model, as :meth:`~kvtier.scenario.Scenario.lone_regen_s`,
    :meth:`~kvtier.scenario.Scenario.in_batch_compute_s` and :meth:`~kvtier.scenario.Scenario.fetch_s` use them."""
    link = {
        "min_transfer_s": s.v("fetch.min_transfer_time"),
        "link_efficiency": s.link_efficiency,
        "link_overhead_s": s.link_overhead_s * s.fetch_transfers,
    }
    if regime == "in-batch":
        return mc.Fixed(collectives_s=float(s.collectives_s(s.block_tokens, 0.0)) / s.placement.pp, **link)
    return mc.Fixed(
        layers=float(s.model.n_layers),
        mem_overhead_per_layer_s=s.v("regen.mem_overhead_per_layer"),
        launch_floor_per_layer_s=s.v("regen.launch_floor_per_layer"),
        sharpness=s.knee_sharpness,
        collectives_s=float(s.collectives_s(s.block_tokens, 1.0)),
        **link,
    )


def ratio_draws(s: Scenario, regime: str = "in-batch", fixed_peak: bool = False) -> np.ndarray:
    """The seeded Monte Carlo draws of the tail block's regenerate/fetch ratio in ``regime``, for the figure.

    Both regimes read the same draws (the memory side is drawn after the others, so it
    leaves them unchanged); ``fixed_peak`` holds the peak at the build's ``peak_flops``.
    """
    ranges = _regime_ranges(s, regime, fixed_peak)
    draws = mc.sample(ranges, int(s.v("uncertainty.draws")), int(s.v("uncertainty.seed")))
    return mc.ratio_draws(
        s.fetch_bytes, _flops(s, regime), draws, s.block_latency_s, _bytes_read(s, regime), fixed_terms(s, regime)
    )


def monte_carlo(s: Scenario, regime: str = "in-batch", fixed_peak: bool = False) -> dict[str, Any]:
    """:func:`kvtier.formulas.uncertainty.monte_carlo`'s summary of the draws :func:`ratio_draws` returns.

    The chance of falling below the chapter's band is ``p_below``, above it ``p_above``.
    """
    return mc.monte_carlo(
        s.fetch_bytes,
        _flops(s, regime),
        _regime_ranges(s, regime, fixed_peak),
        n=int(s.v("uncertainty.draws")),
        seed=int(s.v("uncertainty.seed")),
        latency_s=s.block_latency_s,
        threshold=chapter.CLAIM_LOW,
        threshold_high=chapter.CLAIM_HIGH,
        bytes_read=_bytes_read(s, regime),
        fixed=fixed_terms(s, regime),
    )


def tornado_rows(s: Scenario, regime: str) -> list[mc.TornadoRow]:
    """One-at-a-time swings of the ratio in ``regime``, widest first."""
    ranges, base = inputs(s)
    if regime == "in-batch":
        ranges = {name: ranges[name] for name in mc.INPUTS}
        base = {name: base[name] for name in mc.INPUTS}
    return mc.tornado(
        s.fetch_bytes,
        _flops(s, regime),
        base,
        ranges,
        s.block_latency_s,
        _bytes_read(s, regime),
        fixed_terms(s, regime),
    )


def fixed_peak_sentence(n: dict[str, Any]) -> str:
    """What holding the peak at the build's does to the shares below the claim, said as it is: it matters, or not."""
    fixed, free = f"{n['p_below_claim_fixed_peak_pct']:.1f}", f"{n['p_below_claim_pct']:.1f}"
    lone = f"{n['lone_p_below_claim_fixed_peak_pct']:.1f}"
    held = f"with the peak held at the build's {n['peak_tflops']:g} TFLOP/s"
    below = f"the in-batch share below {chapter.CLAIM_LOW:,.0f}×"
    if fixed == free:
        return (
            f"The peak's range changes nothing visible here: {held}, {below} stays at {fixed} %; for a lone block it"
            f" is {lone} %."
        )
    return (
        f"The peak's range matters inside a batch: {held}, {below} is {fixed} % instead of {free} %; for a lone block"
        f" it is {lone} %."
    )


def numbers(s: Scenario) -> dict[str, Any]:
    """Percentiles of the ratio in each regime, the chance it leaves the chapter's band, the top tornado inputs."""
    ranges, base = inputs(s)
    out: dict[str, Any] = {
        "draws": int(s.v("uncertainty.draws")),
        "seed": int(s.v("uncertainty.seed")),
        "distribution": str(s.assumptions.value("uncertainty.distribution")),
        "peak_tflops": base["peak"] / 1e12,
        "mem_tbps": base["mem_bandwidth"] / 1e12,
        "mem_efficiency_pct": base["mem_efficiency"] * 100,
    }
    for regime in REGIMES:
        prefix = "" if regime == "in-batch" else "lone_"
        summary = monte_carlo(s, regime)
        rows = tornado_rows(s, regime)
        fixed = monte_carlo(s, regime, fixed_peak=True)
        out.update(
            {
                f"{prefix}mean": summary["mean"],
                f"{prefix}p_below_claim_pct": summary["p_below"] * 100,
                f"{prefix}p_below_claim_se_pct": summary["p_below_se"] * 100,
                f"{prefix}p_above_claim_pct": summary["p_above"] * 100,
                f"{prefix}p_below_claim_fixed_peak_pct": fixed["p_below"] * 100,
                f"{prefix}top_input": rows[0].name,
                f"{prefix}top_swing": rows[0].swing,
                f"{prefix}second_input": rows[1].name,
                f"{prefix}second_swing": rows[1].swing,
            }
        )
        for q, value in summary["percentiles"].items():
            out[f"{prefix}p{q:g}"] = value
    for name, (unit, scale) in UNITS.items():
        unit = {"GB/s": "gbps", "%": "pct", "TFLOP/s": "tflops", "TB/s": "tbps"}[unit]
        out[f"{name}_low_{unit}"] = ranges[name].low / scale
        out[f"{name}_high_{unit}"] = ranges[name].high / scale
    out["lone_minus_in_batch_p50"] = out["lone_p50"] - out["p50"]
    # the share of draws between the lowest and the highest percentile the pages quote (p5 to p95: 90 %)
    quoted = sorted(summary["percentiles"])
    out["central_pct"] = float(quoted[-1] - quoted[0])
    out["pin_down_sentence"] = _pin_down_sentence(s)
    out["fixed_peak_sentence"] = fixed_peak_sentence(out)
    out["claim_low"] = chapter.CLAIM_LOW
    out["claim_high"] = chapter.CLAIM_HIGH
    out["answer_sureness"] = (
        f"In {out['draws']:,} draws over the ranges of the link, the utilization, the peak and the device"
        f" memory, {out['p_below_claim_pct']:.1f} % of in-batch ratios and {out['lone_p_below_claim_pct']:.1f} %"
        f" of lone-block ratios fall below {chapter.CLAIM_LOW:g}×; "
        + (
            f"both move most with {_input_words(out['top_input'])}, of the inputs the draws vary."
            if out["top_input"] == out["lone_top_input"]
            else f"the in-batch answer moves most with {_input_words(out['top_input'])}, the lone-block answer"
            f" with {_input_words(out['lone_top_input'])}."
        )
    )
    return out


def _fold(row: mc.TornadoRow) -> float:
    """How many times the ratio changes as one input spans its range (dimensionless, at least 1)."""
    return max(row.ratio_at_low, row.ratio_at_high) / min(row.ratio_at_low, row.ratio_at_high)


def held_fixed(s: Scenario) -> dict[str, Any]:
    """What the draws hold fixed, and how far those fixed choices moved the ratio measured on one H200.

    The Monte Carlo varies the link, the MFU, the peak and the device memory; the regime, the
    block's layout and the per-transfer latency stay as the set has them.  On the H200
    (:mod:`kvtier.inputs.measurements`) the regime moved the measured ratio by the lone-block
    CUDA-graph pass over the in-batch slope's 16 tokens, and the layout by the faster per-chunk
    fetch over the contiguous one; ``fixed_fold`` is the smaller of the two, ``top_fold`` the
    widest one-input swing of the draws' inputs (as a factor, both regimes).
    """
    m, f = ms.load(), ms.shipped_fits()
    regime_fold = m.v("forward16_llama-3-70b_graph") / (f.slope_s_per_token * 16)
    chunked = min(m.v("block_per_chunk_probe1"), m.v("block_per_chunk_probe2"))
    layout_fold = chunked / m.v("fetch_5mib_h2d_pinned")
    top = max((tornado_rows(s, regime)[0] for regime in REGIMES), key=_fold)
    layout = str(s.assumptions.value("fetch_layout"))
    transfers = s.fetch_transfers
    return {
        "regime_fold": regime_fold,
        "layout_fold": layout_fold,
        "fixed_fold": min(regime_fold, layout_fold),
        "top_fold": _fold(top),
        "top_input": top.name,
        "held": (
            f"the regime, the block's layout ({layout}, {transfers:,} transfer{'s' if transfers != 1 else ''} per"
            f" block) and the per-transfer latency ({s.transfer_latency_s * 1e6:g} µs)"
        ),
    }


def _pin_down_sentence(s: Scenario) -> str:
    """Which input to pin down first, qualified by what the draws hold fixed; the verb chosen by the numbers."""
    h = held_fixed(s)
    top = _input_words(h["top_input"])
    head = (
        f"The draws hold fixed {h['held']}. On one H200 the regime moved the measured ratio"
        f" {h['regime_fold']:.1f}-fold and the layout {h['layout_fold']:.1f}-fold, against at most"
        f" {h['top_fold']:.1f}-fold for {top} across its range here, "
    )
    if h["fixed_fold"] > h["top_fold"]:
        return head + (
            f"so the regime and the layout come first; among the inputs the draws vary, {top} is the one to pin"
            " down first."
        )
    return head + f"so {top} is the input to pin down first, with the regime and the layout as this set has them."


def _input_words(name: str) -> str:
    """An uncertain input in words."""
    return {
        "bandwidth": "the link bandwidth",
        "mfu": "the MFU",
        "peak": "the accelerator's peak",
        "mem_bandwidth": "the device-memory bandwidth",
        "mem_efficiency": "the memory efficiency",
    }[name]


COLUMNS = named("statistic", "regime", "value", "unit", "basis", "provenance")
"""The columns of :func:`table`: words a reader reads as they are (each row names its unit)."""


def table(s: Scenario) -> pd.DataFrame:
    """Monte Carlo statistics of the tail block's ratio in both regimes (seeded, so reproducible)."""
    n = numbers(s)
    basis = f"{n['draws']:,} {n['distribution']} draws, seed {n['seed']}"
    rows = []
    for regime in REGIMES:
        prefix = "" if regime == "in-batch" else "lone_"
        name = "" if regime == "in-batch" else "lone_block_"
        stats = [(f"p{q}", n[f"{prefix}p{q}"], "ratio") for q in (5, 25, 50, 75, 95)]
        stats += [
            ("mean", n[f"{prefix}mean"], "ratio"),
            ("below_100x", n[f"{prefix}p_below_claim_pct"], "% of draws"),
            ("below_100x_standard_error", n[f"{prefix}p_below_claim_se_pct"], "percentage points"),
            ("above_1000x", n[f"{prefix}p_above_claim_pct"], "% of draws"),
            ("below_100x_fixed_peak", n[f"{prefix}p_below_claim_fixed_peak_pct"], "% of draws"),
        ]
        rows += [
            {
                "statistic": f"{name}{k}",
                "regime": regime,
                "value": v,
                "unit": u,
                "basis": basis,
                "provenance": "derived",
            }
            for k, v, u in stats
        ]
    return declare(pd.DataFrame(rows), COLUMNS)


TORNADO_COLUMNS = (
    *named("input", "regime", "unit", "low", "high"),
    Column("ratio_at_low", "regeneration / fetch, input at its low end", "×"),
    Column("ratio_at_high", "regeneration / fetch, input at its high end", "×"),
    *named("swing", "provenance"),
)
"""The columns of :func:`tornado_table`, in words with their units (``low`` and ``high`` in each row's unit)."""


def tornado_table(s: Scenario) -> pd.DataFrame:
    """One-at-a-time sensitivity of the ratio in each regime, widest swing first."""
    rows = []
    for regime in REGIMES:
        for r in tornado_rows(s, regime):
            unit, scale = UNITS[r.name]
            rows.append(
                {
                    "input": r.name if regime == "in-batch" else f"{r.name} (lone block)",
                    "regime": regime,
                    "unit": unit,
                    "low": r.low_value / scale,
                    "high": r.high_value / scale,
                    "ratio_at_low": r.ratio_at_low,
                    "ratio_at_high": r.ratio_at_high,
                    "swing": r.swing,
                    "provenance": "derived",
                }
            )
    return declare(pd.DataFrame(rows), TORNADO_COLUMNS)


INPUT_COLORS: dict[str, str] = {
    "bandwidth": PALETTE[2],
    "mfu": PALETTE[4],
    "peak": PALETTE[7],
    "mem_bandwidth": PALETTE[5],
    "mem_efficiency": PALETTE[6],
}
"""One colour per uncertain input, the same in both panels of the tornado chart (and apart from the regimes')."""
REGIME_COLORS: dict[str, str] = {"in-batch": PALETTE[0], "lone block": PALETTE[1]}
"""One colour per regime; the histogram also fills one regime and outlines the other, so colour is not alone."""
REGIME_SHORT: dict[str, str] = {"in-batch": "inside a batch", "lone block": "as a lone block"}
"""Each regime as the figures name it."""


INPUT_SHORT: dict[str, str] = {
    "bandwidth": "link bandwidth",
    "mfu": "MFU",
    "peak": "peak",
    "mem_bandwidth": "memory bandwidth",
    "mem_efficiency": "memory efficiency",
}
"""Each uncertain input as the tornado chart's tick labels name it."""


def _stacked(height_in: float, height_ratios: tuple[float, float] = (1.0, 1.0)) -> tuple[Figure, Any]:
    """A figure :data:`~kvtier.report.figures.MAX_WIDTH_IN` wide at most with two panels, one above the other."""
    fig, ax = new_figure(4.8, height_in)
    ax.remove()
    return fig, fig.subplots(2, 1, gridspec_kw={"height_ratios": list(height_ratios)})


def _log_ticks(axis: Axis, low: float, high: float) -> None:
    """Plain-number ticks on a log ``axis`` from ``low`` to ``high``: at 1, 2 and 5 of each decade over a
    narrow span, at each power of ten over more than two decades (where 1, 2, 5 would run into each other)."""
    from matplotlib.ticker import LogLocator

    plain_log_ticks(axis)
    if np.log10(high / low) > 2:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0,)))


def _shift(new: float, old: float) -> str:
    """The verb for a share moving from ``old`` to ``new`` (percent, as printed to one decimal)."""
    if round(new, 1) == round(old, 1):
        return "leaves"
    return "lowers" if new < old else "raises"


def uncertainty_histogram(s: Scenario) -> tuple[Figure, str]:
    """Distribution of the Monte Carlo ratio in both regimes: the peak drawn (above), and the peak fixed (below)."""
    _, base = inputs(s)
    fig, axes = _stacked(7.6)
    panels = (
        (
            False,
            f"a. peak drawn, {s.v('uncertainty.peak_low') / 1e12:g} to {s.v('uncertainty.peak_high') / 1e12:g} TFLOP/s",
        ),
        (True, f"b. peak fixed at the build's {base['peak'] / 1e12:g} TFLOP/s"),
    )
    all_ratios = {(f, r): ratio_draws(s, r, f) for f, _ in panels for r in REGIMES}
    low = min(float(v.min()) for v in all_ratios.values())
    high = max(float(v.max()) for v in all_ratios.values())
    bins = np.logspace(np.log10(low), np.log10(high), 70)
    for ax, (fixed, title) in zip(axes, panels, strict=True):
        ax.axvspan(
            chapter.CLAIM_LOW,
            chapter.CLAIM_HIGH,
            color=PALETTE[3],
            alpha=0.12,
            label=f"the chapter's {chapter.CLAIM_LOW:g}× to {chapter.CLAIM_HIGH:,.0f}×",
        )
        for regime in REGIMES:
            ratios = all_ratios[(fixed, regime)]
            below = float(np.mean(ratios < chapter.CLAIM_LOW)) * 100
            color = REGIME_COLORS[regime]
            label = f"{REGIME_SHORT[regime]}: {below:.1f} % below {chapter.CLAIM_LOW:g}×"
            if regime == "in-batch":  # filled
                ax.hist(ratios, bins=bins, histtype="stepfilled", color=color, alpha=0.55, label=label)
            else:  # outlined
                ax.hist(ratios, bins=bins, histtype="step", color=color, lw=1.8, label=label)
            ax.axvline(float(np.median(ratios)), color=color, lw=1.2, ls="--")
        ax.set_xscale("log")
        _log_ticks(ax.xaxis, low, high)
        ax.set_ylim(top=ax.get_ylim()[1] * 1.05)
        ax.set_ylabel("draws")
        ax.legend(
            loc="lower left",
            bbox_to_anchor=(0.0, 1.0),
            borderaxespad=0.2,
            fontsize=9.5,
            title=title,
            title_fontsize=10,
            alignment="left",
        )
    axes[1].set_xlabel("regenerate time / fetch time (tail block, log scale)")
    fig.subplots_adjust(hspace=0.62, top=0.86, left=0.16, right=0.96)
    records = s.used(*RANGE_KEYS, *MEMORY_KEYS, "uncertainty.draws", "uncertainty.seed", "peak_flops", *BLOCK_KEYS)
    n = numbers(s)
    fixed_share = n["p_below_claim_fixed_peak_pct"]
    lead = (
        f"Inside a batch, {n['p_below_claim_pct']:.1f} % of draws fall below the chapter's {chapter.CLAIM_LOW:g}×,"
        f" as a lone block {n['lone_p_below_claim_pct']:.1f} %; fixing the peak"
        f" {_shift(fixed_share, n['p_below_claim_pct'])} the in-batch share"
        + (
            f" at {fixed_share:.1f} %."
            if _shift(fixed_share, n["p_below_claim_pct"]) == "leaves"
            else f" to {fixed_share:.1f} %."
        )
    )
    return finish(
        fig,
        records,
        f"Over {n['draws']:,} draws per regime, filled bars are inside a batch, outlined ones a lone block; dashed"
        " lines mark the medians, the shaded band the chapter's claim.",
        lead=lead,
        drivers=(f"uncertainty.{n['top_input']}_low", f"uncertainty.{n['top_input']}_high"),
    )


def _span(row: mc.TornadoRow) -> str:
    """The ratio's range as one input crosses its range, in words."""
    lo, hi = sorted((row.ratio_at_low, row.ratio_at_high))
    return f"{times(lo)} to {times(hi)}" if times(hi) != times(lo) else f"{times(lo)}, unmoved"


def tornado_chart(s: Scenario) -> tuple[Figure, str]:
    """One-at-a-time sensitivity of the ratio to each uncertain input, one panel per regime, one above the other."""
    from matplotlib.ticker import MaxNLocator, StrMethodFormatter

    point = s.illustrative
    by_regime = {regime: tornado_rows(s, regime) for regime in REGIMES}
    fig, axes = _stacked(6.4, tuple(float(len(rows) + 1) for rows in by_regime.values()))  # type: ignore[arg-type]
    for k, (ax, regime) in enumerate(zip(axes, REGIMES, strict=True)):
        rows = by_regime[regime][::-1]
        lows = min(min(r.ratio_at_low, r.ratio_at_high) for r in rows)
        highs = max(max(r.ratio_at_low, r.ratio_at_high) for r in rows)
        left = lows - 0.06 * (highs - lows)
        ax.set_xlim(left, left + (highs - left) / 0.56)  # the bars in the left 56 %, their ranges in a column right
        for i, r in enumerate(rows):
            lo, hi = sorted((r.ratio_at_low, r.ratio_at_high))
            ax.barh(i, max(hi - lo, 1e-9 * hi), left=lo, height=0.6, color=INPUT_COLORS[r.name])
            ax.annotate(_span(r), (1.0, i), xycoords=("axes fraction", "data"), ha="right", va="center", fontsize=9.5)
        base_ratio = (
            point["ratio"]
            if regime == "in-batch"
            else float(s.lone_regen_s(0, "resident", point["mfu"]) / point["fetch_s"])
        )
        bottom, top = -0.6, len(rows) + 0.05
        ax.set_ylim(bottom, top)
        # the dashed line stops below its label, in the row above the bars
        ax.axvline(base_ratio, ymax=(len(rows) - 0.55 - bottom) / (top - bottom), color="#333333", lw=0.9, ls="--")
        ax.annotate(times(base_ratio), (base_ratio, len(rows) - 0.3), ha="center", va="center", fontsize=9.5)
        ax.set_yticks(range(len(rows)), [INPUT_SHORT[r.name] for r in rows])
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        ax.set_title(f"{'ab'[k]}. {REGIME_SHORT[regime]}", fontsize=10, loc="left")
        ax.grid(axis="y", visible=False)
    axes[1].set_xlabel("regenerate / fetch, one input across its range")
    fig.subplots_adjust(hspace=0.35, top=0.95, left=0.27, right=0.97)
    records = s.used(
        *RANGE_KEYS[1:],
        *MEMORY_KEYS,
        f"bandwidth.{point['bandwidth_label']}",
        f"mfu.{point['mfu_label']}",
        "peak_flops",
        "regen.mem_bandwidth",
        "regen.mem_efficiency",
        *BLOCK_KEYS,
    )
    n = numbers(s)
    top, lone_top = by_regime["in-batch"][0], by_regime["lone block"][0]
    if top.name == lone_top.name:
        lead = (
            f"{_input_words(top.name).capitalize()} moves the ratio most in both regimes: {_span(top)} inside a"
            f" batch, {_span(lone_top)} as a lone block."
        )
    else:
        lead = (
            f"{_input_words(top.name).capitalize()} moves the in-batch ratio most ({_span(top)}),"
            f" {_input_words(lone_top.name)} the lone-block ratio ({_span(lone_top)})."
        )
    return finish(
        fig,
        records,
        "Each bar spans the ratio as one input alone crosses its range, the others at the illustrative point"
        " (dashed);"
        " the regime, the layout and the per-transfer latency stay fixed.",
        lead=lead,
        drivers=(f"uncertainty.{n['top_input']}_low", f"uncertainty.{n['top_input']}_high"),
    )


TABLES = (
    ("uncertainty", table, ("statistic",)),
    ("tornado", tornado_table, ("input",)),
)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (
    ("fig_mc", uncertainty_histogram),
    ("fig_tornado", tornado_chart),
)
"""The page's figures: (glue name, function returning the figure and its caption)."""
