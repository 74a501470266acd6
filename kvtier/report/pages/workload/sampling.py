"""The workload page's sampling: the LRU curve of a spatially sampled trace (SHARDS) against the exact one."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier import analysis, store
from kvtier.formulas.cache.curve import LruHistogram
from kvtier.inputs import traces
from kvtier.report.columns import Column, declare, named
from kvtier.report.figures import MIN_FONT_PT, PALETTE, finish, new_figure, plain_log_ticks
from kvtier.report.pages.workload.curve import footer_records
from kvtier.report.pages.workload.summary import contrast_name, trace_name
from kvtier.report.pages.workload.words import sampling_sentence
from kvtier.scenario import Scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure


SAMPLE_RATES: tuple[float, ...] = traces.SAMPLE_RATES
"""The sampling rates whose error the page states (:data:`kvtier.inputs.traces.SAMPLE_RATES`)."""


SAMPLE_SHOWN_RATE = 0.01
"""The rate whose sampled curve the page draws beside the exact one (the issue's goal rate)."""


def _sampling_rows(s: Scenario, rates: tuple[float, ...]) -> list[dict[str, Any]]:
    """:func:`kvtier.inputs.traces.sampling_error` of both traces the page reads, without the timings.

    Each trace as the page reads it (:func:`curve`: the sized one at the set's block size and
    format, streamed), counted as ``workload.hit_count`` counts, priced as the page prices it so that the
    figures built on the curve (tier sizes, prefill saved, reuse intervals) have their error measured too.
    Sampling is spatially hashed (SHARDS), so the rows are the same on every run.
    """
    count = str(s.assumptions.value("workload.hit_count"))
    key = {
        "rc": s.regen_costs(),
        "trace": analysis.trace_key(s),
        "contrast": traces.version_key(contrast_name(s)),
        "contrast_name": contrast_name(s),
        "rates": rates,
    }
    if key["trace"] is None or key["contrast"] is None:
        return _rows(s, rates, count)
    return store.memoized("sampling", key, lambda: _rows(s, rates, count))


def _rows(s: Scenario, rates: tuple[float, ...], count: str) -> list[dict[str, Any]]:
    """The rows of :func:`_sampling_rows`, computed."""
    rows = []
    for name in (trace_name(s), contrast_name(s)):
        if name == trace_name(s):
            fmt, bt = str(s.assumptions.value("workload.trace_format")), int(s.v("workload.block_tokens"))
        else:
            fmt, bt = traces.DEFAULT_FORMAT, traces.TRACE_BLOCK_TOKENS
        for row in traces.sampling_error(name, rates, bt, fmt, count, rc=s.regen_costs()):
            fig = row["figures"]
            rows.append(
                {
                    "trace": name,
                    "role": "sized" if name == trace_name(s) else "contrast",
                    "sample_rate_pct": row["rate"] * 100,
                    "block_references": int(row["refs"]),
                    # an unsampled stream (rate 1) keeps every reference but counts none as sampled
                    "sampled_references": int(row["sampled_refs"] if row["rate_used"] < 1 else row["refs"]),
                    "mean_abs_error_pts": row["mean_abs"] * 100,
                    "max_abs_error_pts": row["max_abs"] * 100,
                    "capacity_error_pct": fig["capacity_rel"] * 100,
                    "saving_error_pct": fig["saving_rel"] * 100,
                    "reuse_interval_error_pct": fig["reuse_interval_rel"] * 100,
                    "provenance": "derived",
                }
            )
    return rows


SAMPLING_COLUMNS = (
    *named("trace", "role"),
    Column("sample_rate_pct", "sampling rate", "%"),
    Column("block_references", "block references"),
    Column("sampled_references", "sampled references"),
    Column("mean_abs_error_pts", "mean absolute error of the hit ratio", "points"),
    Column("max_abs_error_pts", "largest absolute error of the hit ratio", "points"),
    Column("capacity_error_pct", "largest error of a tier size", "%"),
    Column("saving_error_pct", "largest error of the prefill saved", "%"),
    Column("reuse_interval_error_pct", "largest error of a reuse interval", "%"),
    *named("provenance"),
)
"""The columns of :func:`sampling_table`, in words with their units."""


def sampling_table(s: Scenario) -> pd.DataFrame:
    """Per trace and rate of :data:`SAMPLE_RATES`: the sampled references and the sampled curve's error.

    The error is :func:`kvtier.formulas.cache.curve.curve_error`'s: the mean and the largest absolute
    difference of the sampled LRU hit ratio from the exact one, in points of hit ratio (% of block
    references), over evenly spaced capacities up to the one that catches every achievable hit; and the
    largest relative error of the figures built on it (:func:`kvtier.formulas.cache.report.figure_errors`):
    a tier's size for each target, the prefill it saves per second in either regime, the reuse interval's
    percentiles.
    No wall-clock time: that is ``benchmarks/bench_scale.py``'s (tables of record are the same
    on every run).
    """
    return declare(pd.DataFrame(_sampling_rows(s, SAMPLE_RATES)), SAMPLING_COLUMNS)


def sampled_curve_of(s: Scenario, rate: float = SAMPLE_SHOWN_RATE) -> LruHistogram:
    """The build's trace sampled at ``rate`` as it streams (:func:`kvtier.inputs.traces.stream_lru`, hashed ids)."""
    value = s.assumptions.value

    def compute() -> LruHistogram:
        return traces.stream_lru(
            trace_name(s),
            int(s.v("workload.block_tokens")),
            trace_format=str(value("workload.trace_format")),
            count=str(value("workload.hit_count")),
            sample_rate=rate,
        )

    key = {"trace": analysis.trace_key(s), "sample_rate": rate}
    return compute() if key["trace"] is None else store.memoized("sampled-curve", key, compute)


def sampling_numbers(s: Scenario) -> dict[str, Any]:
    """The sized trace's sampled references and error at each rate, and the sentence that states them."""
    df = sampling_table(s)
    own = df[df["role"] == "sized"]
    out: dict[str, Any] = {"sample_shown_rate_pct": SAMPLE_SHOWN_RATE * 100}
    for _, row in own.iterrows():
        key = rate_key(row["sample_rate_pct"])
        out[f"sample_{key}_refs"] = int(row["sampled_references"])
        out[f"sample_{key}_mean_pts"] = float(row["mean_abs_error_pts"])
        out[f"sample_{key}_max_pts"] = float(row["max_abs_error_pts"])
        out[f"sample_{key}_saving_pct"] = float(row["saving_error_pct"])
        out[f"sample_{key}_capacity_pct"] = float(row["capacity_error_pct"])
    out["sampling_sentence"] = sampling_sentence(trace_name(s), own)
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}


def rate_key(pct: float) -> str:
    """A rate in % as a glue-name part: 10 -> '10', 1 -> '1', 0.1 -> '0_1'."""
    return f"{pct:g}".replace(".", "_")


def sampled_figure(s: Scenario) -> tuple[Figure, str]:
    """The build's trace's exact LRU curve and its curve sampled at :data:`SAMPLE_SHOWN_RATE`, against capacity."""
    from matplotlib.ticker import LogLocator

    name = trace_name(s)
    r = analysis.curve(s)
    gib = s.tier_bytes_per_token * r.block_tokens / 2**30
    fig, ax = new_figure(4.8, 3.8)
    caps, ratio = r.curve("blocks")
    ax.step(np.r_[caps[0], caps] * gib, np.r_[0.0, ratio] * 100, where="post", color=PALETTE[0], lw=2.2, label="exact")
    h = sampled_curve_of(s)
    scaps, sratio = h.curve("blocks")
    rate_pct = SAMPLE_SHOWN_RATE * 100
    ax.step(
        np.r_[scaps[0], scaps] * gib,
        np.clip(np.r_[0.0, sratio], 0.0, 1.0) * 100,  # SHARDS_adj may step past 0 or 1; hit_ratio clips as well
        where="post",
        color=PALETTE[1],
        lw=1.4,
        ls="--",
        label=f"sampled at {rate_pct:g} %",
    )
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))
    ax.set_ylim(0, 100)
    ax.legend(loc="upper left", fontsize=MIN_FONT_PT, frameon=False)
    ax.set_xlabel(f"tier capacity (GiB of {s.model.name} KV, log)")
    ax.set_ylabel("LRU hit ratio (% of block references)")
    df = sampling_table(s)
    at = df[(df["role"] == "sized") & np.isclose(df["sample_rate_pct"], rate_pct)].iloc[0]
    if int(at["block_references"]):
        lead = (
            f"Sampled at {rate_pct:g} %, {int(at['sampled_references']):,} of the {name} trace's"
            f" {int(at['block_references']):,} references draw its LRU curve within"
            f" {at['mean_abs_error_pts']:.2f} points of hit ratio on average, {at['max_abs_error_pts']:.2f} at most."
        )
    else:
        lead = f"The {name} trace holds no block references: there is nothing to sample."
    return finish(
        fig,
        footer_records(s, "model", "kv_dtype"),
        "Solid: exact, from every reference; dashed: SHARDS sampling, which keeps the blocks whose hashed id falls"
        " below the rate and scales their distances by its inverse.",
        lead=lead,
        drivers=("workload.trace", "model"),
    )
