"""The measured page's ratio: regenerating a block over fetching it, measured, fitted and as the set says."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import costs
from kvtier.inputs import chapter
from kvtier.inputs import measurements as ms
from kvtier.report.columns import Column, declare, named
from kvtier.report.figures import PALETTE, new_figure, plain_log_ticks
from kvtier.report.pages.measured.shipped import (
    BLOCK_BYTES,
    BLOCK_TOKENS,
    SHAPE70,
    SLOPE_CASE,
    SLOPE_PROVENANCE,
    fetch_model_s,
    finish_figure,
    fits,
    measurements,
)
from kvtier.report.words import times
from kvtier.scenario import Scenario, seed_scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def ratio_rows(s: Scenario, with_set: bool) -> list[dict[str, Any]]:
    """Regenerating over fetching the block per case and regime; ``with_set``: this set's two rows too."""
    m, f = measurements(), fits()
    seed = seed_scenario().illustrative
    point = s.illustrative
    set_lone = float(s.lone_regen_s(0, "resident", point["mfu"]))
    fetch = m.v("fetch_5mib_h2d_pinned")
    in_batch = f.slope_s_per_token * BLOCK_TOKENS
    model_fetch = fetch_model_s(1, BLOCK_BYTES)
    model_lone = float(ms.forward_model_s(m, f, SHAPE70, BLOCK_TOKENS, "graph")["blended"])
    shape = m.shapes[SHAPE70]
    model_batch = float(costs.compute_time_s(shape.flops(BLOCK_TOKENS), ms.H200_PEAK_FLOP_PER_S, f.mfu[SHAPE70]))
    chunk_worst, chunk_best = m.v("block_per_chunk_probe1"), m.v("block_per_chunk_probe2")
    rows = [
        ("source chapter", "in batch", "contiguous", seed["regen_s"], seed["fetch_s"], "seed assumptions"),
        *(
            [
                ("this assumption set", "in batch", "contiguous", point["regen_s"], point["fetch_s"], "assumption set"),
                ("this assumption set", "lone block", "contiguous", set_lone, point["fetch_s"], "assumption set"),
            ]
            if with_set
            else []
        ),
        (
            "H200 measured, CUDA graph",
            "lone block",
            "contiguous",
            m.v("forward16_llama-3-70b_graph"),
            fetch,
            "measured",
        ),
        ("H200 measured, eager", "lone block", "contiguous", m.v("forward16_llama-3-70b_eager"), fetch, "measured"),
        (SLOPE_CASE, "in batch", "contiguous", in_batch, fetch, SLOPE_PROVENANCE),
        (
            "H200 measured, CUDA graph",
            "lone block",
            "one strided copy",
            m.v("forward16_llama-3-70b_graph"),
            m.v("block_strided"),
            "measured",
        ),
        (
            "H200 measured, CUDA graph",
            "lone block",
            "per-chunk copies, fastest run",
            m.v("forward16_llama-3-70b_graph"),
            chunk_best,
            "measured",
        ),
        (
            "H200 measured, CUDA graph",
            "lone block",
            "per-chunk copies, slowest run",
            m.v("forward16_llama-3-70b_graph"),
            chunk_worst,
            "measured",
        ),
        (
            SLOPE_CASE,
            "in batch",
            "per-chunk copies, fastest run",
            in_batch,
            chunk_best,
            SLOPE_PROVENANCE,
        ),
        (
            SLOPE_CASE,
            "in batch",
            "per-chunk copies, slowest run",
            in_batch,
            chunk_worst,
            SLOPE_PROVENANCE,
        ),
        ("H200 model, fitted", "lone block", "contiguous", model_lone, model_fetch, "derived"),
        ("H200 model, fitted", "in batch", "contiguous", model_batch, model_fetch, "derived"),
    ]
    return [
        {
            "case": case,
            "regime": regime,
            "layout": layout,
            "regen_ms": regen * 1e3,
            "fetch_us": fetch_s * 1e6,
            "ratio": regen / fetch_s,
            "provenance": prov,
        }
        for case, regime, layout, regen, fetch_s, prov in rows
    ]


RATIO_COLUMNS = (
    *named("case", "regime", "layout"),
    Column("regen_ms", "regeneration time", "ms"),
    Column("fetch_us", "fetch time", "µs"),
    Column("ratio", "regeneration / fetch", "×"),
    *named("provenance"),
)
"""The columns of :func:`ratio_table` and :func:`comparison_table`, in words with their units (each row names its
regime)."""


def ratio_table(s: Scenario) -> pd.DataFrame:
    """The illustrative point measured: regenerate / fetch on the H200 beside the chapter's, its table of record.

    Every row names its regime: *lone block* (the block's 16 tokens are the whole pass)
    or *in batch* (its marginal cost inside a compute-bound pass: the slope of the
    measured sweep, or the chapter's compute-only model).  The rows do not depend on the
    assumption set being built (the chapter's is the seed's), so that a rerun leaves this
    record alone; :func:`comparison_table` adds the set's own two rows for the page.
    """
    return declare(pd.DataFrame(ratio_rows(s, with_set=False)), RATIO_COLUMNS)


def comparison_table(s: Scenario) -> pd.DataFrame:
    """:func:`ratio_table` with this assumption set's in-batch and lone-block ratios after the chapter's row."""
    return declare(pd.DataFrame(ratio_rows(s, with_set=True)), RATIO_COLUMNS)


RATIO_LABELS = {
    "source chapter": "source chapter",
    "this assumption set": "this assumption set",
    "H200 measured, CUDA graph": "H200, CUDA graph",
    "H200 measured, eager": "H200, eager",
    SLOPE_CASE: "H200, fitted slope",
    "H200 model, fitted": "H200 model, fitted",
}
"""Short names of the ratio table's cases for the figure's axis."""


def ratio_figure(s: Scenario) -> tuple[Figure, str]:
    """Regenerate / fetch at the illustrative point: a lone block above, inside a batch below; measured bars solid."""
    from matplotlib.patches import Patch
    from matplotlib.ticker import LogLocator

    df = comparison_table(s)
    layouts = {
        "contiguous": "",
        "one strided copy": ", strided",
        "per-chunk copies, fastest run": ", chunks, fast",
        "per-chunk copies, slowest run": ", chunks, slow",
    }
    regimes = (("lone block", PALETTE[0], "a. a lone block"), ("in batch", PALETTE[2], "b. inside a batch"))
    counts = [int((df["regime"] == regime).sum()) for regime, _, _ in regimes]
    fig, ax0 = new_figure(4.8, 7.8)
    ax0.remove()
    axes = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": counts})
    for ax, (regime, color, title) in zip(axes, regimes, strict=True):
        rows = df[df["regime"] == regime]
        y = np.arange(len(rows))[::-1]
        for yi, (_, r) in zip(y, rows.iterrows(), strict=True):
            measured = str(r["case"]).startswith("H200 measured")  # solid: measured; hatched: fitted or assumed
            ax.barh(
                yi,
                r["ratio"],
                height=0.65,
                color=color if measured else "white",
                edgecolor=color,
                hatch=None if measured else "///",
                lw=1.0,
            )
            value = float(r["ratio"])
            text = f"{value:,.0f}×" if value >= 100 else f"{value:.1f}×" if value >= 1 else times(value)
            ax.annotate(text, xy=(value, yi), xytext=(3, 0), textcoords="offset points", va="center", fontsize=9.5)
        ax.set_yticks(y, [f"{RATIO_LABELS[r['case']]}{layouts[r['layout']]}" for _, r in rows.iterrows()])
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.axvspan(chapter.CLAIM_LOW, chapter.CLAIM_HIGH, color="#eeeeee", zorder=0)
        ax.set_title(title, fontsize=10, loc="left")
        ax.grid(axis="y", visible=False)
    axes[1].set_xscale("log")
    axes[1].set_xlim(1, float(df["ratio"].max()) * 12)
    plain_log_ticks(axes[1].xaxis)
    axes[1].xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,), numticks=5))  # every other decade past 4
    axes[1].set_xlabel("regenerate / fetch (log scale)")
    fig.legend(
        handles=[
            Patch(facecolor="#777777", edgecolor="#777777", label="measured on one H200"),
            Patch(facecolor="white", edgecolor="#777777", hatch="///", label="fitted, or an assumption"),
            Patch(facecolor="#eeeeee", label=f"the chapter's {chapter.CLAIM_LOW:g}× to {chapter.CLAIM_HIGH:,.0f}×"),
        ],
        loc="lower left",
        bbox_to_anchor=(0.02, 0.085),
        ncol=1,
        fontsize=9.5,
        borderaxespad=0.0,
    )
    fig.subplots_adjust(left=0.46, right=0.97, top=0.96, hspace=0.22)
    f = fits()
    point = s.illustrative
    records = [
        *s.used(f"bandwidth.{point['bandwidth_label']}", f"mfu.{point['mfu_label']}", "peak_flops"),
        measurements().record("forward16_llama-3-70b_graph"),
        measurements().record("fetch_5mib_h2d_pinned"),
        f.records["slope_s_per_token"],
    ]
    measured = df[df["case"].str.startswith("H200 measured") | (df["case"] == SLOPE_CASE)]

    def pick(regime: str, layout: str) -> pd.Series:
        return measured[(measured["regime"] == regime) & (measured["layout"].str.startswith(layout))]["ratio"]

    lone = float(pick("lone block", "contiguous").min())
    batch = float(pick("in batch", "contiguous").min())
    chunk_lone = (float(pick("lone block", "per-chunk").min()), float(pick("lone block", "per-chunk").max()))
    chunk_batch = (float(pick("in batch", "per-chunk").min()), float(pick("in batch", "per-chunk").max()))
    verb = "drop" if chunk_lone[1] < lone and chunk_batch[1] < batch else "move"
    fig, caption = finish_figure(
        fig,
        records,
        (measurements().record("forward16_llama-3-70b_graph").key, measurements().record("fetch_5mib_h2d_pinned").key),
        f"On one H200 a lone block costs {lone:,.0f} times its fetch and a block inside a batch {batch:,.0f} times;"
        f" fetched as one copy per layer chunk, the ratios {verb} to {chunk_lone[0]:,.0f} to {chunk_lone[1]:,.0f}"
        f" and {chunk_batch[0]:.1f} to {chunk_batch[1]:.1f}. Solid bars are measured; hatched ones are fitted (the"
        " in-batch slope, the models) or assumed; the shaded band is the chapter's claim.",
    )
    fig.subplots_adjust(bottom=0.27)
    return fig, caption


def point_numbers(s: Scenario) -> dict[str, Any]:
    """The illustrative block's ratio of regenerating over fetching it: the chapter's, this set's, measured, fitted."""
    f = fits()
    ratios = comparison_table(s)

    def ratio(case: str, regime: str, layout: str = "contiguous") -> float:
        row = ratios[(ratios["case"] == case) & (ratios["regime"] == regime) & (ratios["layout"] == layout)]
        return float(row["ratio"].iloc[0])

    return dict(
        chapter_ratio=ratio("source chapter", "in batch"),
        set_in_batch_ratio=ratio("this assumption set", "in batch"),
        set_lone_ratio=ratio("this assumption set", "lone block"),
        set_name=s.assumptions.name,
        measured_lone_ratio=ratio("H200 measured, CUDA graph", "lone block"),
        measured_lone_eager_ratio=ratio("H200 measured, eager", "lone block"),
        measured_in_batch_ratio=ratio(SLOPE_CASE, "in batch"),
        measured_strided_ratio=ratio("H200 measured, CUDA graph", "lone block", "one strided copy"),
        model_lone_ratio=ratio("H200 model, fitted", "lone block"),
        model_in_batch_ratio=ratio("H200 model, fitted", "in batch"),
        in_batch_16_ms=f.slope_s_per_token * BLOCK_TOKENS * 1e3,
        slope_us_per_token=f.slope_s_per_token * 1e6,
    )
