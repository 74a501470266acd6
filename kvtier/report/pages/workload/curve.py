"""The workload page's LRU curve: the tier each hit-ratio target needs, what it saves per link, and its figures."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from kvtier.formulas.cache.curve import counted_percentiles
from kvtier.formulas.cache.report import TARGETS_PCT
from kvtier.report.columns import Column, declare, named
from kvtier.report.figures import MIN_FONT_PT, PALETTE, finish, new_figure, plain_log_ticks
from kvtier.report.pages.workload.summary import SHOWN_TARGET, TIB, contrast_name, curve, link_specs, report, trace_name
from kvtier.report.pages.workload.words import reuse_lead, targets_words, trace_nothing_to_cache
from kvtier.scenario import Scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def target_label(target: float) -> str:
    """A hit-ratio target (% of the achievable hit ratio) as the tables name it: ``95%``."""
    return f"{target:g}%"


TIERS_COLUMNS = (
    Column("trace", "trace"),
    Column("target", "share of the achievable hit ratio"),
    Column("capacity_blocks", "capacity", "blocks"),
    Column("capacity_TiB", "capacity", "TiB"),
    Column("hit_blocks_pct", "hits", "% of blocks"),
    Column("hit_tokens_pct", "hits", "% of tokens"),
    Column("hit_GBps", "hits", "GB/s"),
    Column("prefill_avoided_in_batch_gpus", "accelerators saved, in batch"),
    Column("prefill_avoided_lone_gpus", "accelerators saved, lone"),
    Column("lone_memory_bound_pct", "memory-bound, lone block", "%"),
    *named("provenance"),
)
"""The columns of :func:`tiers_table`, in words with their units."""


def tiers_table(s: Scenario) -> pd.DataFrame:
    """Per trace and target: the LRU capacity, its hit ratios and the prefill it avoids, in both regimes."""
    rows = []
    for name in (trace_name(s), contrast_name(s)):
        rep = report(s, name)
        for tier in rep["tiers"]:
            rows.append(
                {
                    "trace": name,
                    "target": target_label(tier["target_pct"]),
                    "capacity_blocks": tier["capacity_blocks"],
                    "capacity_TiB": tier["capacity_bytes"] / TIB,
                    "hit_blocks_pct": tier["hit_ratio_blocks"] * 100,
                    "hit_tokens_pct": tier["hit_ratio_tokens"] * 100,
                    "hit_GBps": tier["hit_bytes_per_s"] / 1e9,
                    "prefill_avoided_in_batch_gpus": tier["in_batch_gpu_s_per_s"],
                    "prefill_avoided_lone_gpus": tier["lone_gpu_s_per_s"],
                    "lone_memory_bound_pct": tier["lone_memory_bound_share"] * 100,
                    "provenance": "derived",
                }
            )
    return declare(pd.DataFrame(rows), TIERS_COLUMNS)


LINKS_COLUMNS = (
    *named("trace", "target"),
    Column("link", "link preset"),
    Column("bandwidth_GBps", "bandwidth", "GB/s"),
    Column("latency_us", "latency", "µs"),
    Column("transfers", "transfers"),
    Column("link_busy_pct", "link busy", "%"),
    Column("recompute_over_fetch_in_batch", "recompute / fetch, in batch"),
    Column("recompute_over_fetch_lone", "recompute / fetch, lone"),
    *named("provenance"),
)
"""The columns of :func:`links_table`, in words with their units."""


def links_table(s: Scenario) -> pd.DataFrame:
    """Per trace, target and link preset: how busy fetching the tier's hits keeps the link, against recomputing.

    Each link is a tier of :attr:`Scenario.tier_links` (its bandwidth, and the set's latency per transfer,
    ``latency_us``), fetched in the set's ``fetch_layout`` (``transfers`` per block).
    """
    links = {k.name: k for k in link_specs(s)}
    rows = []
    for name in (trace_name(s), contrast_name(s)):
        rep = report(s, name)
        for tier in rep["tiers"]:
            for k in tier["links"]:
                rows.append(
                    {
                        "trace": name,
                        "target": target_label(tier["target_pct"]),
                        "link": k["link"],
                        "bandwidth_GBps": links[k["link"]].bandwidth_bytes_per_s / 1e9,
                        "latency_us": links[k["link"]].latency_s * 1e6,
                        "transfers": s.fetch_transfers,
                        "link_busy_pct": k["fetch_link_s_per_s"] * 100,
                        "recompute_over_fetch_in_batch": k["in_batch_over_fetch"],
                        "recompute_over_fetch_lone": k["lone_over_fetch"],
                        "provenance": "derived",
                    }
                )
    return declare(pd.DataFrame(rows), LINKS_COLUMNS)


TIERS_SHOWN = (
    "target",
    "capacity_TiB",
    "capacity_blocks",
    "hit_blocks_pct",
    "hit_tokens_pct",
    "hit_GBps",
    "prefill_avoided_in_batch_gpus",
    "prefill_avoided_lone_gpus",
)
"""The columns of :func:`tiers_table` the page shows, in order (their headers: :data:`TIERS_COLUMNS`)."""


LINKS_SHOWN = ("link", "bandwidth_GBps", "link_busy_pct", "recompute_over_fetch_in_batch", "recompute_over_fetch_lone")
"""The columns of :func:`links_table` the page shows, in order (their headers: :data:`LINKS_COLUMNS`)."""


def shown_tiers(s: Scenario) -> pd.DataFrame:
    """The page's capacity table: the sized trace's rows of :func:`tiers_table`, display columns."""
    df = tiers_table(s)
    return df.loc[df["trace"] == trace_name(s), list(TIERS_SHOWN)].reset_index(drop=True)


def shown_links(s: Scenario) -> pd.DataFrame:
    """The page's link table: the sized trace at the shown target, from :func:`links_table`, display columns."""
    df = links_table(s)
    keep = (df["trace"] == trace_name(s)) & (df["target"] == target_label(SHOWN_TARGET))
    return df.loc[keep, list(LINKS_SHOWN)].reset_index(drop=True)


def footer_records(s: Scenario, *keys: str) -> list:
    """The records a figure's footer cites: the trace, its block size and ``keys``."""
    return s.used("workload.trace", "workload.block_tokens", *keys)


def lru_curve(s: Scenario) -> tuple[Figure, str]:
    """Exact LRU hit ratio against the tier's capacity in TiB, both traces, with the targets marked.

    The sized trace is a thick solid line, the contrast a thin dashed grey one; each is named
    on the figure, at its infinite cache's ceiling, so that colour is not the only key.
    """
    from matplotlib.ticker import LogLocator

    name, other = trace_name(s), contrast_name(s)
    fig, ax = new_figure(4.8, 4.4)
    marks: list[tuple[int, float]] = []
    for trace, color, width, style in ((name, PALETTE[0], 2.2, "-"), (other, PALETTE[6], 1.3, "--")):
        reuse = curve(s, trace)
        caps, ratio = reuse.curve("blocks")
        block_bytes = s.tier_bytes_per_token * reuse.block_tokens  # as a tier stores it
        x = np.r_[caps[0], caps] * block_bytes / TIB
        y = np.r_[0.0, ratio] * 100
        ax.step(x, y, where="post", color=color, lw=width, ls=style)
        inf = float(reuse.hit_ratio()) * 100
        ax.axhline(inf, color=color, lw=0.8, ls=":")
        role = "sized" if trace == name else "contrast"
        ax.annotate(
            f"{trace} ({role}): {inf:.1f} %",
            (0.01, inf),
            xycoords=("axes fraction", "data"),
            textcoords="offset points",
            xytext=(0, 3),
            fontsize=MIN_FONT_PT,
            color=color,
        )
        if trace == name and inf > 0:  # no reuse: no capacity to mark
            for target in TARGETS_PCT:
                cap = reuse.capacity_for(target / 100)
                cx, cy = cap * block_bytes / TIB, float(reuse.hit_ratio(cap)) * 100
                marks.append((target, cx))
                ax.plot(cx, cy, "o", color=PALETTE[1], ms=5, zorder=3)
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))  # five decades: 1, 2, 5 of each would crowd
    ax.set_ylim(0, 100)
    listing = "\n".join(f"{target} %: {cx:,.2f} TiB" for target, cx in marks)
    empty = trace_nothing_to_cache(s)
    ax.text(
        0.98,
        0.97,
        f"{name} trace:\nnothing to cache" if empty else f"red dots, {name}:\n{listing}",
        transform=ax.transAxes,
        ha="right",
        va="top",
        fontsize=MIN_FONT_PT,
        color=PALETTE[1],
    )
    ax.set_xlabel(f"tier capacity (TiB of {s.model.name} KV, log)")
    ax.set_ylabel("LRU hit ratio (% of block references)")
    records = footer_records(s, "model", "kv_dtype")
    if empty:
        lead = f"The {name} trace has nothing to cache ({empty}): an LRU tier of any size hits nothing."
    else:
        first, last = marks[0], marks[-1]
        grows = f"grows {last[1] / first[1]:.1f} times" if last[1] > first[1] else "stays the same"
        lead = (
            f"The {name} trace's tier {grows}, from {first[1]:.2f} to {last[1]:.2f} TiB, to go from {first[0]} to"
            f" {last[0]} % of an infinite cache's hits: the last points are the dear ones."
        )
    return finish(
        fig,
        records,
        "Hit ratio against capacity (log axis); dotted: each trace's infinite cache, named with its hit ratio;"
        f" dots: the capacities for {targets_words()} of it.",
        lead=lead,
        drivers=("workload.trace", "model"),
    )


def reuse_intervals(s: Scenario) -> tuple[Figure, str]:
    """Distribution of the time between consecutive references to a block, both traces.

    The sized trace is a thick solid line, the contrast a thin dashed grey one, both named in the legend.
    """
    from matplotlib.ticker import LogLocator

    name, other = trace_name(s), contrast_name(s)
    fig, ax = new_figure(4.8, 4.0)
    p90 = {}
    for trace, color, width, style in ((name, PALETTE[0], 2.2, "-"), (other, PALETTE[6], 1.3, "--")):
        values, counts = curve(s, trace).intervals  # distinct waits (s), ascending, and how many reuses each
        if not counts.sum():
            continue
        iv = values / 60
        floor = 1e-3 / 60  # the traces' timestamps are whole milliseconds
        y = np.cumsum(counts) / counts.sum() * 100
        role = "sized" if trace == name else "contrast"
        ax.step(np.maximum(iv, floor), y, where="post", color=color, lw=width, ls=style, label=f"{trace} ({role})")
        pct = counted_percentiles(iv, counts, (50, 90))
        p90[trace] = pct["p90"]
        for q in (50, 90):
            v = pct[f"p{q}"]
            if trace == name:
                ax.plot(max(v, floor), q, "o", color=PALETTE[1], ms=5, zorder=3)
                ax.annotate(
                    f"p{q}: {v:.1f} min",
                    (max(v, floor), q),
                    textcoords="offset points",
                    xytext=(8, -12),
                    fontsize=MIN_FONT_PT,
                    color=PALETTE[1],
                )
    ax.set_xscale("log")
    ax.set_xlim(left=1e-2)
    plain_log_ticks(ax.xaxis)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))  # 1, 2, 5 of each decade would crowd
    ax.set_ylim(0, 100)
    ax.set_xlabel("time since the block's previous use (min, log)")
    ax.set_ylabel("share of repeat references (%)")
    ax.legend(loc="upper left")
    return finish(
        fig,
        footer_records(s),
        "Cumulative share of repeat references against the wait since the block's previous use (log axis);"
        " repeats within the same millisecond sit at the left edge.",
        lead=reuse_lead(s, p90),
        drivers=("workload.trace",),
    )
