"""The interior page (``notebooks/05_interior.md``): a block mid-sequence, upstream KV resident or evicted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import costs
from kvtier.report import words
from kvtier.report.figures import PALETTE, finish, mark_context_limit, new_figure
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
    return pd.DataFrame(rows)


def regen_vs_position(s: Scenario) -> tuple[Figure, str]:
    """Regeneration time of a block against its position, both upstream cases, the fetch time beside."""
    point = s.illustrative
    positions = np.logspace(0, 6, 400)
    fig, ax = new_figure()
    for i, upstream in enumerate(UPSTREAM_CASES):
        t = s.interior_regen_s(positions, upstream, point["mfu"])
        ax.loglog(positions, t * 1e3, color=PALETTE[i], label=f"in-batch: regenerate, upstream KV {upstream}")
        lone = s.lone_regen_s(positions, upstream, point["mfu"])
        ax.loglog(positions, lone * 1e3, color=PALETTE[i], ls="-.", lw=1.2, label=f"lone block: upstream KV {upstream}")
    ax.axhline(
        point["regen_s"] * 1e3,
        color=PALETTE[6],
        ls=":",
        label="tail block in-batch, parameter FLOPs only (the chapter)",
    )
    ax.axhline(
        point["fetch_s"] * 1e3,
        color=PALETTE[3],
        ls="--",
        label=f"fetch at {point['bandwidth_bytes_per_s'] / 1e9:g} GB/s",
    )
    p = s.v("interior.position")
    for i, upstream in enumerate(UPSTREAM_CASES):
        t = float(s.interior_regen_s(p, upstream, point["mfu"]))
        ax.plot(p, t * 1e3, "o", color=PALETTE[i])
        ax.annotate(f"{t * 1e3:,.1f} ms", (p, t * 1e3), textcoords="offset points", xytext=(6, -12), fontsize=8)
    ax.axvline(p, color="#999999", lw=0.8)
    limit_note = mark_context_limit(ax, s.model.name, s.model.max_positions, float(positions[-1]))
    fetch_ms = point["fetch_s"] * 1e3
    ratio_axis = ax.secondary_yaxis("right", functions=(lambda t: t / fetch_ms, lambda r: r * fetch_ms))
    ratio_axis.set_ylabel("ratio to the fetch time (regenerate / fetch)")
    ax.set_xlabel("position of the block's first token in the sequence (tokens)")
    ax.set_ylabel("time (ms)")
    ax.set_title(
        f"Regenerating a {s.block_tokens}-token block at {point['mfu'] * 100:g} % MFU, by position: both regimes"
    )
    ax.legend(loc="upper left", fontsize=8)
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
        f"Regenerating a block gets dearer the deeper it sits: inside a batch, at position {n['position_tokens']:,}"
        f" it costs {n['resident_over_tail']:.2f} times the tail block with the upstream KV resident and"
        f" {n['evicted_over_tail']:,.0f} times with it evicted, while the fetch stays {n['fetch_us']:.2f} µs."
    )
    return finish(
        fig,
        records,
        "Regeneration time of one block against its position in both regimes, inside a batch (solid: marginal "
        "compute) and as a lone block (dash-dot: roofline on the set's device), attention term included, "
        "with the upstream KV "
        "resident (only the block is recomputed) or evicted (the prefix is recomputed from the nearest anchor); "
        "the right axis reads the same curves as a ratio to the fetch time; the vertical line marks the example "
        "position." + limit_note,
        lead=lead,
        drivers=("interior.position", "interior.anchor_every"),
    )


TABLES = (("interior", table, ("upstream", "position_tokens")),)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (("fig_interior", regen_vs_position),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
