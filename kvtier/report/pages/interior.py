"""The interior page (``notebooks/05_interior.md``): a block mid-sequence, upstream KV resident or evicted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import costs
from kvtier.report import words
from kvtier.report.columns import Column, declare, named, twins
from kvtier.report.figures import PALETTE, finish, keep_label_inside, mark_context_limit, new_figure
from kvtier.scenario import POINT_KEYS, Scenario
from kvtier.units import format_time

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "05_interior"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "interior blocks"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (*POINT_KEYS, "interior.context", "interior.position")
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""

FIG_WIDTH_IN = 4.8
"""Figure width (in): under :data:`~kvtier.report.figures.MAX_WIDTH_IN` with room for the tight bounding box's
padding, so that 9 pt text is still 9 px where a 420 px screen shows the figure 370 px wide."""

INTERIOR_POSITIONS = (0, 1_000, 10_000, 50_000, 100_000, 1_000_000)
"""Block positions (tokens) of the interior table, besides ``interior.position``."""
UPSTREAM_CASES = ("resident", "evicted")
"""Whether the KV before the block is still cached when it is regenerated."""


def numbers(s: Scenario) -> dict[str, Any]:
    """The chapter's interior example (a block mid-sequence), both upstream cases."""
    point = s.illustrative
    p = s.v("interior.position")
    tail_ms = point["regen_s"] * 1e3
    resident_s = float(s.interior_regen_s(p, "resident", point["mfu"]))
    evicted_s = float(s.interior_regen_s(p, "evicted", point["mfu"]))
    anchor = s.v("interior.anchor_every")
    _, n_evicted = costs.recompute_span(p, s.block_tokens, "evicted", anchor)
    prefix_fetch_s = float(s.fetch_s(point["bandwidth_bytes_per_s"])) / s.block_tokens * float(n_evicted)
    parity = costs.attention_parity_position(
        s.active_params, s.model.attention_flops_per_position(), s.block_tokens, s.v("flops_per_param_token")
    )
    lone_resident_s = float(s.lone_regen_s(p, "resident", point["mfu"]))
    lone_evicted_s = float(s.lone_regen_s(p, "evicted", point["mfu"]))
    lone_tail_s = float(s.lone_regen_s(0, "resident", point["mfu"]))
    if np.isclose(lone_evicted_s, evicted_s, rtol=1e-9):
        note = "A prefill this long is a batch of its own, so here the two regimes give the same time."
    else:
        note = f"That is {lone_evicted_s / evicted_s:.2f} times its in-batch time."
    return {
        "lone_evicted_note": note,
        "lone_device": words.lone_device(s),
        "lone_tail_regen_ms": lone_tail_s * 1e3,
        "lone_resident_regen_ms": lone_resident_s * 1e3,
        "lone_evicted_regen_s": lone_evicted_s,
        "lone_evicted_regen_time": format_time(lone_evicted_s),
        "lone_resident_ratio": lone_resident_s / point["fetch_s"],
        "lone_evicted_ratio": lone_evicted_s / point["fetch_s"],
        "lone_evicted_amortised_ratio": lone_evicted_s / prefix_fetch_s,
        "lone_resident_bound": str(s.lone_bound(p, "resident", point["mfu"])),
        "lone_evicted_bound": str(s.lone_bound(p, "evicted", point["mfu"])),
        "lone_resident_kv_gb": float(s.kv_bytes(p)) / 1e9,
        "position_tokens": int(p),
        "position_words": f"at position {p:,.0f} ({words.context_note(s, p + s.block_tokens)})",
        "context_tokens": int(s.v("interior.context")),
        "position_share_pct": p / s.v("interior.context") * 100,
        "anchor_every_tokens": int(anchor),
        "block_tokens": s.block_tokens,
        "mfu_pct": point["mfu"] * 100,
        "fetch_us": point["fetch_s"] * 1e6,
        "tail_regen_ms": tail_ms,
        "resident_regen_ms": resident_s * 1e3,
        "evicted_regen_ms": evicted_s * 1e3,
        "evicted_regen_s": evicted_s,
        "evicted_regen_time": format_time(evicted_s),
        "resident_over_tail": resident_s * 1e3 / tail_ms,
        "evicted_over_tail": evicted_s * 1e3 / tail_ms,
        "resident_ratio": resident_s / point["fetch_s"],
        "evicted_ratio": evicted_s / point["fetch_s"],
        "evicted_tokens_recomputed": int(n_evicted),
        # the fair comparison when the whole prefix had been tiered too: fetch all the recomputed tokens
        "evicted_prefix_fetch_ms": prefix_fetch_s * 1e3,
        "evicted_amortised_ratio": evicted_s / prefix_fetch_s,
        "attention_flops_per_position": s.model.attention_flops_per_position(),
        "attention_parity_tokens": float(parity),
    }


COLUMNS = (
    Column("upstream", "upstream"),
    Column("position_tokens", "position", "tokens"),
    Column("regen_TFLOP", "regeneration work", "TFLOP"),
    *twins("regen_ms", "regeneration time", "ms"),
    *twins("ratio_to_fetch", "regeneration / fetch", "×"),
    Column("lone_bound", "bound by, lone block"),
    *named("provenance"),
)
"""The columns of :func:`table`, in words with their units; the unprefixed ones are the in-batch twins of the
``lone_`` ones."""


def table(s: Scenario) -> pd.DataFrame:
    """Regeneration of a block by position, both upstream cases, attention included, in both regimes.

    ``regen_ms`` and ``ratio_to_fetch`` are the in-batch regime (marginal compute at the
    illustrative MFU); the ``lone_`` columns a lone block (or a lone prefix, when the
    upstream was evicted) under the roofline on the assumption set's device.
    """
    point = s.illustrative
    positions = np.array(sorted({*INTERIOR_POSITIONS, int(s.v("interior.position"))}), dtype=np.float64)
    rows = []
    for upstream in UPSTREAM_CASES:
        flops = s.interior_flops(positions, upstream)
        regen = s.interior_regen_s(positions, upstream, point["mfu"])
        lone = s.lone_regen_s(positions, upstream, point["mfu"])
        bound = s.lone_bound(positions, upstream, point["mfu"])
        for p, f, t, lt, b in zip(positions, flops, regen, lone, bound, strict=True):
            rows.append(
                {
                    "upstream": upstream,
                    "position_tokens": int(p),
                    "regen_TFLOP": f / 1e12,
                    "regen_ms": t * 1e3,
                    "ratio_to_fetch": t / point["fetch_s"],
                    "lone_regen_ms": lt * 1e3,
                    "lone_bound": str(b),
                    "lone_ratio_to_fetch": lt / point["fetch_s"],
                    "provenance": "derived",
                }
            )
    return declare(pd.DataFrame(rows), COLUMNS)


def regen_vs_position(s: Scenario) -> tuple[Figure, str]:
    """Regeneration time of a block against its position, both upstream cases, the fetch time beside."""
    from matplotlib.ticker import FixedLocator

    point = s.illustrative
    positions = np.logspace(0, 6, 400)
    fig, ax = new_figure(FIG_WIDTH_IN, 6.4)
    # colour and marker name the upstream case, the line style the regime: never colour alone
    marks = {"resident": ("o", 0), "evicted": ("s", 1)}
    for regime, ls, draw in (
        ("in a batch", "-", lambda p, u: s.interior_regen_s(p, u, point["mfu"])),
        ("alone", "-.", lambda p, u: s.lone_regen_s(p, u, point["mfu"])),
    ):
        for upstream in UPSTREAM_CASES:
            marker, i = marks[upstream]
            ax.loglog(
                positions,
                draw(positions, upstream) * 1e3,
                color=PALETTE[i],
                ls=ls,
                lw=1.8 if ls == "-" else 1.3,
                marker=marker,
                markevery=(40 if ls == "-" else 70, 80),
                ms=5,
                mfc="white" if ls == "-." else PALETTE[i],
                label=f"{regime}, upstream KV {upstream}",
            )
    ax.axhline(point["regen_s"] * 1e3, color=PALETTE[6], ls=":", lw=1.5, label="tail block in a batch (the chapter)")
    fetch_ms = point["fetch_s"] * 1e3
    ax.axhline(
        fetch_ms, color=PALETTE[3], ls="--", lw=1.5, label=f"fetch at {point['bandwidth_bytes_per_s'] / 1e9:g} GB/s"
    )
    p = s.v("interior.position")
    for upstream in UPSTREAM_CASES:
        marker, i = marks[upstream]
        t = float(s.interior_regen_s(p, upstream, point["mfu"]))
        ax.plot(p, t * 1e3, marker, color=PALETTE[i], ms=8, zorder=4)
    ax.axvline(p, color="#999999", lw=0.8)
    # the fetch line sits a fifth of the way up, clear of the context limit's label along the bottom
    top = ax.get_ylim()[1]
    ax.set_ylim(10 ** ((np.log10(fetch_ms) - 0.22 * np.log10(top)) / 0.78), top)
    limit = mark_context_limit(ax, s.model.name, s.model.max_positions, float(positions[-1]))
    ratio_axis = ax.secondary_yaxis("right", functions=(lambda t: t / fetch_ms, lambda r: r * fetch_ms))
    ratio_axis.set_ylabel("× the fetch time")
    # only the ticks inside the view: matplotlib keeps a label for the next decade above it, on the title
    low, high = (np.log10(y / fetch_ms) for y in ax.get_ylim())
    ratio_axis.yaxis.set_major_locator(FixedLocator(10.0 ** np.arange(np.ceil(low), np.floor(high) + 1, 2)))
    ax.set_xlabel("position of the block's first token (tokens)")
    ax.set_ylabel("regeneration time (ms)")
    ax.set_title(
        f"Regenerating a {s.block_tokens}-token block at {point['mfu'] * 100:g} % MFU, by position", fontsize=10, pad=20
    )
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=1, fontsize=9)
    fig.subplots_adjust(left=0.14, right=0.86)
    records = s.used(
        "model",
        "param_count",
        "block_tokens",
        "peak_flops",
        "flops_per_param_token",
        "kv_dtype",
        "fetch_latency",
        f"mfu.{point['mfu_label']}",
        f"bandwidth.{point['bandwidth_label']}",
        "interior.position",
        "interior.anchor_every",
        "weight_dtype",
        "regen.mem_bandwidth",
        "regen.mem_efficiency",
    )
    n = numbers(s)
    lead = (
        f"Deeper blocks cost more to regenerate: at position {n['position_tokens']:,}, in a batch,"
        f" {n['resident_over_tail']:,.2f}× the tail block with the upstream KV resident,"
        f" {words.times(n['evicted_over_tail'])} evicted, against a fixed {n['fetch_us']:,.2f} µs fetch."
    )
    limit_note = (
        f" Past the red line, {s.model.name}'s context limit ({s.model.max_positions:,} positions), curves describe"
        " a long-context variant."
        if limit
        else ""
    )
    fig, text = finish(
        fig,
        records,
        "Solid: in a batch; dash-dot: alone; circles: KV resident; squares: evicted; right axis: multiples of the"
        " fetch." + limit_note,
        lead=lead,
        drivers=("interior.position", "interior.anchor_every"),
    )
    # room between the axis label and the footer for the legend
    fig.subplots_adjust(bottom=fig.subplotpars.bottom + 1.25 / fig.get_size_inches()[1])
    if limit:
        keep_label_inside(ax, next(t for t in ax.texts if "max_position_embeddings" in t.get_text()))
    return fig, text


TABLES = (("interior", table, ("upstream", "position_tokens")),)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (("fig_interior", regen_vs_position),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
