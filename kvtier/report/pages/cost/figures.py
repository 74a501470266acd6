"""The cost page's figures: the break-even intervals, the tornado, and the mix per model."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from kvtier.inputs.keys import COST_RANGES
from kvtier.report.figures import MIN_FONT_PT, PALETTE, finish, new_figure
from kvtier.report.pages.cost.glue import numbers
from kvtier.report.pages.cost.intervals import CXL_TIER, MEDIA, YEAR_S, block_sizes, intervals, long_table
from kvtier.report.pages.cost.mix import mix_table, model_label
from kvtier.report.pages.cost.tornado import tornado_table
from kvtier.scenario import Scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _bar_label(row: Any) -> str:
    """A mix figure's bar label: the mix's cost per hour against recomputing, or why it has none."""
    if math.isnan(row.share_hbm_pct):
        return "nothing to cache: 0 USD/h"
    if math.isnan(row.mix_usd_per_h):
        return "no cost per hour: the trace lasts 0 s"
    return f"{row.mix_usd_per_h:.3g} USD/h; recomputing: {row.recompute_all_usd_per_h:.3g} USD/h"


MIX_STYLE: dict[str, tuple[str, str]] = {
    "hbm": (PALETTE[5], "xx"),
    "dram": (PALETTE[0], ""),
    "cxl": (PALETTE[3], "//"),
    "nvme": (PALETTE[2], ".."),
}
"""Each tier of the mix figure: its colour and its hatch, so that colour is not the only key."""


def mix_figure(s: Scenario) -> tuple[Figure, str]:
    """GiB each tier holds for the trace, per model and ladder, with the mix's cost per hour against recomputing.

    One bar per model and ladder, each labelled above with its cost per hour; the tiers are
    keyed by colour and hatch.
    """
    df = mix_table(s)
    df = df[df["regime"] == "batch"].reset_index(drop=True)
    n = numbers(s)
    fig, ax = new_figure(4.8, 6.2)
    labels = [f"{model_label(r.model)}\n{r.ladder}" for r in df.itertuples()]
    y = np.arange(len(df))[::-1].astype(float)
    left = np.zeros(len(df))
    for m, (color, hatch) in MIX_STYLE.items():
        gib = np.nan_to_num(df[f"{m}_GiB"].to_numpy())  # a trace of 0 s holds no GiB on average: no bar
        ax.barh(y, gib, left=left, color=color, hatch=hatch, edgecolor="white", lw=0.5, height=0.5, label=MEDIA[m])
        left += gib
    for yi, r in zip(y, df.itertuples(), strict=True):
        ax.text(0, yi + 0.3, _bar_label(r), va="bottom", ha="left", fontsize=MIN_FONT_PT)
    ax.set_yticks(y, labels)
    ax.set_ylim(-0.5, len(df) - 0.2)
    ax.set_xlim(0, float(left.max()) * 1.05 or 1.0)  # nothing held: an axis of its own
    ax.set_xlabel("mean GiB each tier holds for the trace")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower center", bbox_to_anchor=(0.4, 1.0), ncol=2)
    fig.subplots_adjust(left=0.3, right=0.95, top=0.88)
    records = s.used(
        "workload.trace",
        "workload.block_tokens",
        *COST_RANGES,
        "model",
        "peak_flops",
        f"mfu.{s.assumptions.value('illustrative.mfu')}",
    )
    return finish(
        fig,
        records,
        "Bars: each model's cheapest mix, with room in host DRAM and with none; segments: the mean GiB each tier"
        " holds; labels: cost per hour.",
        lead=n["mix_lead"],
        drivers=("cost.dram_gb", "cost.cxl_gb"),
    )


_MARKS = (("lone", "o", True), ("batch", "o", False))


def interval_ticks(ax: Any, low: float, high: float) -> None:
    """Label a log axis of seconds at readable durations."""
    from matplotlib.ticker import NullLocator

    coarse = [(1, "1 s"), (60, "1 min"), (300, "5 min"), (3600, "1 h"), (86400, "1 d"), (30 * 86400, "30 d")]
    coarse += [(YEAR_S, "1 y"), (10 * YEAR_S, "10 y")]
    fine = [(10, "10 s"), (900, "15 min"), (3 * 3600, "3 h"), (12 * 3600, "12 h"), (2 * 86400, "2 d")]
    fine += [(7 * 86400, "7 d"), (90 * 86400, "90 d")]
    marks = [(v, t) for v, t in coarse if low <= v <= high]
    if len(marks) < 3:
        marks = sorted((v, t) for v, t in coarse + fine if low <= v <= high)
    ax.set_xticks([v for v, _ in marks], [t for _, t in marks])
    ax.xaxis.set_minor_locator(NullLocator())


def interval_figure(s: Scenario) -> tuple[Figure, str]:
    """Each tier's break-even holding interval against recomputation, in dollars (top) and joules (below), log axis.

    Block size is keyed by colour and marker (circle, square), the regime by fill (filled: alone,
    open: inside a batch), so that colour is never the only key; both panels share the time axis.
    """
    df = long_table(s)
    small, large = block_sizes(s)
    tiers = list(dict.fromkeys(df["tier"]))
    order = sorted(tiers, key=lambda t: float(df[(df["tier"] == t)]["keep_usd_s"].median()))
    fig, axes = new_figure(4.8, 9.4)
    fig.delaxes(axes)
    ax_usd = fig.add_subplot(2, 1, 1)
    ax_j = fig.add_subplot(2, 1, 2, sharex=ax_usd)
    y = {t: i for i, t in enumerate(order)}
    regime_words = {"lone": "alone", "batch": "in a batch"}
    styles = {  # colour, marker, fill and the row's offset within its tier: equal intervals stay apart
        (small, "lone"): (PALETTE[0], "o", "full", -0.27),
        (small, "batch"): (PALETTE[0], "o", "none", -0.09),
        (large, "lone"): (PALETTE[1], "s", "full", 0.09),
        (large, "batch"): (PALETTE[1], "s", "none", 0.27),
    }
    values = np.r_[df["keep_usd_s"].to_numpy(), df["keep_J_s"].to_numpy()]
    positive = values[values > 0]
    low, high = float(positive.min()) / 3, float(positive.max()) * 3
    for ax, col, title in ((ax_usd, "keep_usd_s", "by the dollar"), (ax_j, "keep_J_s", "by the joule")):
        for (tokens, regime), (color, marker, fill, offset) in styles.items():
            part = df[(df["block_tokens"] == tokens) & (df["regime"] == regime)]
            yy = np.array([y[t] for t in part["tier"]]) + offset
            ax.scatter(
                np.maximum(part[col].to_numpy(), low),
                yy,
                s=30,
                marker=marker,
                facecolors=color if fill == "full" else "white",
                edgecolors=color,
                linewidths=1.4,
                label=f"{tokens} tokens, {regime_words[regime]}",
                zorder=3,
            )
        ax.set_xscale("log")
        ax.set_xlim(low, high)
        interval_ticks(ax, low, high)
        ax.tick_params(labelbottom=True)
        ax.axvline(300, color="#888888", lw=0.8, ls=":")
        ax.set_title(f"break-even interval {title}", fontsize=10)
        ax.set_yticks(range(len(order)), order)
        ax.set_ylim(-0.6, len(order) - 0.4)
        ax.grid(axis="y", visible=False)
    ax_j.set_xlabel("keep a block while its next use comes sooner (log)")
    handles, labels = ax_usd.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=2, bbox_to_anchor=(0.5, 0.995), columnspacing=1.0)
    fig.subplots_adjust(top=0.9, hspace=0.3, left=0.25, right=0.96)
    n = numbers(s)
    records = s.used(
        "cost.accelerator_hour",
        "cost.hbm_share",
        "cost.hbm_capacity",
        "cost.dram_gb",
        "cost.cxl_gb",
        "cost.nvme_gb",
        "cost.amortisation",
        "cost.energy_kwh",
        "energy.power_lone",
        "energy.power_batch",
        "energy.dram_w_per_gb",
        "energy.nvme_w_per_gb",
        "model",
        "block_tokens",
        "cost.large_block_tokens",
        "peak_flops",
        f"mfu.{s.assumptions.value('illustrative.mfu')}",
        "regen.mem_bandwidth",
        "regen.mem_efficiency",
    )
    lone = intervals(s)[(small, "lone")]
    cxl, hbm = lone.at(CXL_TIER)["keep_usd_s"], lone.at("hbm")["keep_usd_s"]
    than = "longer than" if cxl > hbm else "shorter than" if cxl < hbm else "as long as"
    lead = (
        f"By the dollar, a {small}-token block regenerated alone is worth keeping {n['small_lone_cxl2_x8_keep_usd']}"
        f" in a CXL expander, {than} the {n['small_lone_hbm_keep_usd']} in HBM"
        f" ({n['small_lone_cxl2_x8_keep_j']} by the joule)."
    )
    return finish(
        fig,
        records,
        "Each mark: the longest wait for a block's next use at which holding it in that tier costs less than"
        " recomputing it; top by the dollar, bottom by the joule.",
        extra="tier presets: see the cost table (published-spec, derived, assumed)",
        lead=lead,
        drivers=("cost.accelerator_hour", "cost.cxl_gb"),
    )


TORNADO_NAMES: dict[str, str] = {
    "cost.accelerator_hour": "accelerator price per hour",
    "cost.hbm_share": "HBM share of that price",
    "cost.dram_gb": "host DRAM price per GB",
    "cost.cxl_gb": "CXL expander price per GB",
    "cost.nvme_gb": "NVMe price per GB",
    "cost.amortisation": "amortisation period",
    "cost.energy_kwh": "energy price per kWh",
    "energy.dram_w_per_gb": "DRAM power per GB",
    "energy.nvme_w_per_gb": "NVMe power per GB",
    "energy.power_lone": "board power, lone block",
}
"""Each input of the tornado as its tick labels name it (the tables of record keep the keys)."""


def tornado_figure(s: Scenario) -> tuple[Figure, str]:
    """The CXL tier's dollar interval as each price moves across its range, widest swing on top.

    The low end of a range is a plain bar, the high end a hatched one, so that colour is not the only key.
    """
    from matplotlib.patches import Patch

    t = tornado_table(s).iloc[::-1].reset_index(drop=True)
    n = numbers(s)
    fig, ax = new_figure(4.8, 5.2)
    base = float(t["keep_usd_base_h"].iloc[0]) * 3600
    ends = {"low": (PALETTE[0], ""), "high": (PALETTE[1], "//")}
    for i, row in t.iterrows():
        for end, (color, hatch) in ends.items():
            x = float(row[f"keep_usd_at_{end}_h"]) * 3600
            ax.barh(i, x - base, left=base, color=color, hatch=hatch, edgecolor="white", lw=0.5, height=0.6)
        if float(row["keep_usd_at_low_h"]) == float(row["keep_usd_at_high_h"]) == base / 3600:
            ax.annotate(
                "no effect",
                (base, i),
                textcoords="offset points",
                xytext=(4, 0),
                va="center",
                fontsize=MIN_FONT_PT,
                color="#666666",
            )
    ax.axvline(base, color="#333333", lw=1.0)
    ax.set_yticks(range(len(t)), [TORNADO_NAMES[key] for key in t["input"]])
    ax.set_xscale("log")
    lows = np.r_[t["keep_usd_at_low_h"], t["keep_usd_at_high_h"]] * 3600
    ax.set_xlim(float(lows.min()) / 1.6, float(lows.max()) * 1.6)
    interval_ticks(ax, float(lows.min()) / 1.6, float(lows.max()) * 1.6)
    ax.set_xlabel(
        f"how long a {s.block_tokens}-token block regenerated\nalone is worth keeping in a CXL expander,"
        "\nby the dollar (log)"
    )
    ax.grid(axis="y", visible=False)
    ax.legend(
        [Patch(facecolor=color, hatch=hatch, edgecolor="white") for color, hatch in ends.values()],
        ["input at its low end", "input at its high end"],
        loc="lower center",
        bbox_to_anchor=(0.35, 1.0),
        ncol=1,
    )
    fig.subplots_adjust(left=0.4, right=0.95, top=0.86)
    records = s.used(*(f"{k}{end}" for k in COST_RANGES for end in ("", "_low", "_high")), "energy.power_lone")
    lead = (
        f"Of all the inputs, the {TORNADO_NAMES[n['tornado_top_key']]} moves a block's break-even interval in"
        " CXL most:"
        f" from {n['tornado_top_low']} to {n['tornado_top_high']} across its range, a factor of"
        f" {n['tornado_top_swing']:.1f}."
    )
    fig, caption = finish(
        fig,
        records,
        "Each bar moves one input across its range, the others held: plain to its low end, hatched to its high end;"
        " the line: the interval at the set's values.",
        lead=lead,
        drivers=(n["tornado_top_key"], n["tornado_second_key"]),
    )
    # the footer leaves room for a one-line axis label; this one has three
    fig.subplots_adjust(bottom=fig.subplotpars.bottom + 2 * 12 / (fig.get_size_inches()[1] * 72))
    return fig, caption
