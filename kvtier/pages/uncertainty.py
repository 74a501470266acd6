"""The uncertainty page (``notebooks/10_uncertainty.md``): a seeded Monte Carlo and a tornado chart."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier import chapter
from kvtier import uncertainty as mc
from kvtier.figures import PALETTE, finish, new_figure
from kvtier.scenario import Scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "10_uncertainty"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""


def inputs(s: Scenario) -> tuple[dict[str, mc.Range], dict[str, float]]:
    """The Monte Carlo ranges and the illustrative base point.

    Returns
    -------
    ranges : dict
        ``bandwidth`` (B/s), ``mfu`` (fraction) and ``peak`` (FLOP/s) ranges from the
        ``uncertainty.*`` keys.
    base : dict
        The same three inputs at the illustrative point (B/s, fraction, FLOP/s).
    """
    dist = str(s.assumptions.value("uncertainty.distribution"))
    ranges = {
        name: mc.Range(
            s.v(f"uncertainty.{name}_low"), s.v(f"uncertainty.{name}_high"), dist, name=f"uncertainty.{name}"
        )
        for name in ("bandwidth", "mfu", "peak")
    }
    point = s.illustrative
    base = {"bandwidth": point["bandwidth_bytes_per_s"], "mfu": point["mfu"], "peak": s.v("peak_flops")}
    return ranges, base


def ratio_draws(s: Scenario) -> np.ndarray:
    """The seeded Monte Carlo draws of the tail block's regenerate/fetch ratio."""
    ranges, _ = inputs(s)
    draws = mc.sample(ranges, int(s.v("uncertainty.draws")), int(s.v("uncertainty.seed")))
    return mc.ratio_draws(s.block_bytes, s.block_flops, draws, s.v("fetch_latency"))


def numbers(s: Scenario) -> dict[str, Any]:
    """Percentiles of the ratio, the chance it leaves the chapter's band, and the top tornado input."""
    ratios = ratio_draws(s)
    summary = mc.summarize(ratios, threshold=chapter.CLAIM_LOW)
    ranges, base = inputs(s)
    rows = mc.tornado(s.block_bytes, s.block_flops, base, ranges, s.v("fetch_latency"))
    out: dict[str, Any] = {
        "draws": summary["n"],
        "seed": int(s.v("uncertainty.seed")),
        "distribution": str(s.assumptions.value("uncertainty.distribution")),
        "mean": summary["mean"],
        "p_below_claim_pct": summary["p_below"] * 100,
        "p_below_claim_se_pct": summary["p_below_se"] * 100,
        "p_above_claim_pct": float(np.mean(ratios > chapter.CLAIM_HIGH)) * 100,
        "top_input": rows[0].name,
        "top_swing": rows[0].swing,
        "second_input": rows[1].name,
        "second_swing": rows[1].swing,
    }
    for q, value in summary["percentiles"].items():
        out[f"p{q:g}"] = value
    for name, unit, scale in (("bandwidth", "gbps", 1e9), ("mfu", "pct", 0.01), ("peak", "tflops", 1e12)):
        out[f"{name}_low_{unit}"] = ranges[name].low / scale
        out[f"{name}_high_{unit}"] = ranges[name].high / scale
    fixed = dict(ranges, peak=mc.Range.fixed(base["peak"], name="peak_flops"))
    draws = mc.sample(fixed, int(s.v("uncertainty.draws")), int(s.v("uncertainty.seed")))
    fixed_ratios = mc.ratio_draws(s.block_bytes, s.block_flops, draws, s.v("fetch_latency"))
    out["p_below_claim_fixed_peak_pct"] = float(np.mean(fixed_ratios < chapter.CLAIM_LOW)) * 100
    out["peak_tflops"] = base["peak"] / 1e12
    return out


def table(s: Scenario) -> pd.DataFrame:
    """Monte Carlo statistics of the tail block's ratio (seeded, so reproducible)."""
    n = numbers(s)
    basis = f"{n['draws']:,} {n['distribution']} draws, seed {n['seed']}"
    rows = [(f"p{q}", n[f"p{q}"], "ratio") for q in (5, 25, 50, 75, 95)]
    rows += [
        ("mean", n["mean"], "ratio"),
        ("below_100x", n["p_below_claim_pct"], "% of draws"),
        ("below_100x_standard_error", n["p_below_claim_se_pct"], "percentage points"),
        ("above_1000x", n["p_above_claim_pct"], "% of draws"),
    ]
    return pd.DataFrame(
        [{"statistic": k, "value": v, "unit": u, "basis": basis, "provenance": "derived"} for k, v, u in rows]
    )


def tornado_table(s: Scenario) -> pd.DataFrame:
    """One-at-a-time sensitivity of the ratio, widest swing first."""
    ranges, base = inputs(s)
    rows = mc.tornado(s.block_bytes, s.block_flops, base, ranges, s.v("fetch_latency"))
    units = {"bandwidth": ("GB/s", 1e9), "mfu": ("%", 0.01), "peak": ("TFLOP/s", 1e12)}
    return pd.DataFrame(
        [
            {
                "input": r.name,
                "unit": units[r.name][0],
                "low": r.low_value / units[r.name][1],
                "high": r.high_value / units[r.name][1],
                "ratio_at_low": r.ratio_at_low,
                "ratio_at_high": r.ratio_at_high,
                "swing": r.swing,
                "provenance": "derived",
            }
            for r in rows
        ]
    )


def uncertainty_histogram(s: Scenario) -> tuple[Figure, str]:
    """Distribution of the Monte Carlo ratio, the source chapter's band shaded."""
    ratios = ratio_draws(s)
    fig, ax = new_figure()
    bins = np.logspace(np.log10(ratios.min()), np.log10(ratios.max()), 60)
    ax.hist(ratios, bins=bins, color=PALETTE[0], alpha=0.85)
    ax.set_xscale("log")
    ax.axvspan(100, 1000, color=PALETTE[3], alpha=0.15, label="the source chapter's 100x to 1000x")
    for q in (5, 50, 95):
        v = float(np.percentile(ratios, q))
        ax.axvline(v, color="#333333", lw=0.8, ls="--")
        ax.annotate(
            f"p{q}: {v:.0f}x", (v, ax.get_ylim()[1] * 0.9), xytext=(3, 0), textcoords="offset points", fontsize=8
        )
    ax.set_xlabel("regenerate time / fetch time (tail block)")
    ax.set_ylabel("draws")
    ax.set_title(f"{len(ratios):,} draws of bandwidth, MFU and peak")
    ax.legend(loc="upper right", fontsize=8)
    records = s.used(
        "uncertainty.distribution",
        "uncertainty.bandwidth_low",
        "uncertainty.bandwidth_high",
        "uncertainty.mfu_low",
        "uncertainty.mfu_high",
        "uncertainty.peak_low",
        "uncertainty.peak_high",
        "uncertainty.draws",
        "uncertainty.seed",
        "model",
        "param_count",
        "kv_dtype",
        "block_tokens",
        "flops_per_param_token",
        "fetch_latency",
    )
    return finish(fig, records, "Monte Carlo distribution of the tail block's regenerate/fetch ratio.")


def tornado_chart(s: Scenario) -> tuple[Figure, str]:
    """One-at-a-time sensitivity of the ratio to each uncertain input."""
    ranges, base = inputs(s)
    rows = mc.tornado(s.block_bytes, s.block_flops, base, ranges, s.v("fetch_latency"))[::-1]
    point = s.illustrative
    fig, ax = new_figure(7.5, 3.6)
    for i, r in enumerate(rows):
        lo, hi = sorted((r.ratio_at_low, r.ratio_at_high))
        ax.barh(i, hi - lo, left=lo, color=PALETTE[i % len(PALETTE)])
        ax.annotate(f"{lo:.0f}x to {hi:.0f}x", (hi, i), xytext=(4, -3), textcoords="offset points", fontsize=8)
    ax.axvline(point["ratio"], color="#333333", lw=0.8, ls="--")
    ax.set_yticks(range(len(rows)), [r.name for r in rows])
    ax.set_xlabel("regenerate/fetch ratio when one input spans its range, the others at the illustrative point")
    ax.set_title("Which assumption moves the answer most")
    ax.grid(axis="y", visible=False)
    records = s.used(
        "uncertainty.bandwidth_low",
        "uncertainty.bandwidth_high",
        "uncertainty.mfu_low",
        "uncertainty.mfu_high",
        "uncertainty.peak_low",
        "uncertainty.peak_high",
        f"bandwidth.{point['bandwidth_label']}",
        f"mfu.{point['mfu_label']}",
        "peak_flops",
        "model",
        "param_count",
        "kv_dtype",
        "block_tokens",
        "flops_per_param_token",
        "fetch_latency",
    )
    return finish(
        fig,
        records,
        "Tornado chart: the range of the ratio as each input alone moves across its range; the dashed line is the "
        "illustrative point.",
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
