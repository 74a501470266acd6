"""The ratio page (``notebooks/04_ratio.md``): regenerate/fetch over the brackets, and the verdict on the claim."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import costs
from kvtier.inputs import chapter
from kvtier.inputs import measurements as ms
from kvtier.inputs.keys import BANDWIDTH_LABELS, MFU_LABELS
from kvtier.report import words
from kvtier.report.columns import Column, declare, named, twins
from kvtier.report.figures import finish, new_figure
from kvtier.scenario import POINT_KEYS, Scenario, seed_scenario
from kvtier.units import format_number

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "04_ratio"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "the ratio"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (*POINT_KEYS, "reference.h200_host_link")
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""


FIG_WIDTH_IN = 4.8
"""Figure width (in): under :data:`~kvtier.report.figures.MAX_WIDTH_IN` with room for the tight bounding box's
padding, so that 9 pt text is still 9 px where a 420 px screen shows the figure 370 px wide."""

REGIMES = {"in-batch": "ratio", "lone block": "lone_ratio"}
"""The two regimes of regeneration and the table column holding each one's ratio."""


def _verdict(df: pd.DataFrame, column: str) -> tuple[str, int, int, int]:
    """The verdict on the chapter's band for the ratios in ``column``, and the counts within, below, above."""
    lo_claim, hi_claim = chapter.CLAIM_LOW, chapter.CLAIM_HIGH
    below = df[df[column] < lo_claim]
    above = df[df[column] > hi_claim]
    within = len(df) - len(below) - len(above)
    if len(below) == 0 and len(above) == 0:
        return f"holds at all {len(df)} combinations of the bracketed assumptions", within, 0, 0
    parts = []
    for rows, word, bound in ((below, "falls below", lo_claim), (above, "exceeds", hi_claim)):
        if len(rows):
            pts = "; ".join(
                f"{r['bandwidth_GBps']:g} GB/s at {r['mfu_pct']:g} % MFU, {r[column]:,.1f}×" for _, r in rows.iterrows()
            )
            parts.append(f"{word} {bound:,.0f}× at {len(rows)}: {pts}")
    return f"holds at {within} of {len(df)} combinations; it " + ", and ".join(parts), within, len(below), len(above)


def seed_sentence(out: dict[str, Any]) -> str:
    """Why the source chapter prints a rounder illustrative ratio, beside the seed set's when this build differs.

    The seed build has just stated its ratio, so it does not state it again as the seed set's.
    """
    rounding = (
        f"the source chapter prints about {out['chapter_ratio']:.0f} because it divides its rounded figures, which"
        f" give {out['chapter_rounded_inputs_ratio']:.2f}: rounding, not a different model."
    )
    seed = format_number(out["seed_ratio_illustrative"], 3)  # as the page and its table show the build's
    if format_number(out["ratio_illustrative"], 3) == seed:
        return rounding[0].upper() + rounding[1:]
    return f"With the seed assumptions the in-batch ratio is {seed}; {rounding}"


def layout_numbers(s: Scenario) -> dict[str, Any]:
    """The illustrative block fetched contiguously and as a paged cache lays it out, one transfer per chunk.

    Each transfer pays the set's per-transfer latency (:attr:`~kvtier.scenario.Scenario.transfer_latency_s`:
    ``fetch_latency``, or the copy method's per-copy cost); where that is zero (the source chapter's
    choice) the per-transfer latency fitted to the H200's pinned copies stands in for it, and
    the sentence says so.
    """
    point = s.illustrative
    per_transfer = s.transfer_latency_s
    if per_transfer > 0:
        source = f"this set's {per_transfer * 1e6:g} µs fetch latency"
    else:
        rec = ms.shipped_fits().records["h2d_pinned_latency"]
        per_transfer = float(rec.value)
        source = f"the {per_transfer * 1e6:.2f} µs per transfer fitted to one H200's copies ({rec.provenance})"
    chunks = s.layer_chunks
    bw = point["bandwidth_bytes_per_s"]
    one = float(s.link_fetch_s(s.fetch_bytes, bw, per_transfer, 1))
    many = float(s.link_fetch_s(s.fetch_bytes, bw, per_transfer, chunks))
    regen = point["regen_s"]
    lone = float(s.lone_regen_s(0, "resident", point["mfu"]))
    out = {
        "layout_chunks": chunks,
        "layout_latency_us": per_transfer * 1e6,
        "layout_contiguous_us": one * 1e6,
        "layout_per_layer_us": many * 1e6,
        "layout_ratio_contiguous": regen / one,
        "layout_ratio_per_layer": regen / many,
        "layout_lone_ratio_contiguous": lone / one,
        "layout_lone_ratio_per_layer": lone / many,
    }
    out["layout_sentence"] = (
        f"The layout of the tier can matter as much as its link. A paged KV cache keeps this block as {chunks:,}"
        f" chunks of {s.shard_bytes / chunks / 1024:,.0f} KiB, "
        + ("one latent per layer" if s.model.attention == "MLA" else "one per layer for keys and one for values")
        + "; copied chunk by"
        f" chunk, each copy pays the per-transfer latency. With {source}, the {point['bandwidth_label']} bracket's"
        f" fetch grows from {one * 1e6:,.1f} µs in one transfer to {many * 1e6:,.1f} µs in {chunks:,}, and the"
        f" ratio falls from {regen / one:,.1f} to {regen / many:,.1f} inside a batch and from {lone / one:,.1f} to"
        f" {lone / many:,.1f} for a lone block. Setting the set's block layout to per layer applies that"
        " layout on every page."
    )
    return out


def brackets_whose(s: Scenario) -> str:
    """Whose bandwidth and MFU brackets the grid spans: the source chapter's (the seed's values), or this set's own."""
    seed = seed_scenario()
    keys = [f"bandwidth.{b}" for b in BANDWIDTH_LABELS] + [f"mfu.{m}" for m in MFU_LABELS]
    same = all(s.v(k) == seed.v(k) for k in keys)
    return "the source chapter's own" if same else "this set's own, not the source chapter's"


def numbers(s: Scenario) -> dict[str, Any]:
    """The ratio grid's extremes in both regimes, the illustrative point, and the verdict on the chapter's claim."""
    df = table(s)
    point = s.illustrative
    lo_claim, hi_claim = chapter.CLAIM_LOW, chapter.CLAIM_HIGH
    low_row = df.loc[df["ratio"].idxmin()]
    high_row = df.loc[df["ratio"].idxmax()]
    regen = s.regen_by_label()
    latency = s.block_latency_s
    lone_point = float(s.lone_regen_s(0, "resident", point["mfu"]))
    out: dict[str, Any] = {
        "n_points": len(df),
        "claim_low": lo_claim,
        "claim_high": hi_claim,
        "ratio_min": float(low_row["ratio"]),
        "ratio_min_point": f"{low_row['bandwidth_GBps']:g} GB/s with {low_row['mfu_pct']:g} % MFU",
        "ratio_max": float(high_row["ratio"]),
        "ratio_max_point": f"{high_row['bandwidth_GBps']:g} GB/s with {high_row['mfu_pct']:g} % MFU",
        "orders_min": float(np.log10(low_row["ratio"])),
        "orders_max": float(np.log10(high_row["ratio"])),
        "illustrative_bandwidth_gbps": point["bandwidth_bytes_per_s"] / 1e9,
        "illustrative_mfu_pct": point["mfu"] * 100,
        "illustrative_fetch_us": point["fetch_s"] * 1e6,
        "illustrative_regen_ms": point["regen_s"] * 1e3,
        "ratio_illustrative": point["ratio"],
        "chapter_ratio": chapter.ILLUSTRATIVE_RATIO.value,
        "seed_ratio_illustrative": seed_scenario().illustrative["ratio"],
        "brackets_whose": brackets_whose(s),
        # the chapter's own division: its unrounded conservative time over its rounded mid-bandwidth fetch
        "chapter_rounded_inputs_ratio": chapter.REGEN_CONSERVATIVE_UNROUNDED_S.value / chapter.FETCH_S["mid"].value,
        "optimistic_ends_ratio": regen["optimistic"] / s.fetch_by_label()["optimistic"],
        # the lone-block regime: the block's tokens are the whole forward pass (roofline on the set's device)
        "lone_device": words.lone_device(s),
        "lone_illustrative_regen_ms": lone_point * 1e3,
        "lone_ratio_illustrative": lone_point / point["fetch_s"],
        "lone_ratio_min": float(df["lone_ratio"].min()),
        "lone_ratio_max": float(df["lone_ratio"].max()),
        "lone_orders_min": float(np.log10(df["lone_ratio"].min())),
        "lone_orders_max": float(np.log10(df["lone_ratio"].max())),
        "lone_regen_min_ms": float(df["lone_regen_ms"].min()),
        "lone_regen_max_ms": float(df["lone_regen_ms"].max()),
        "n_lone_memory_bound": int((df["lone_bound"] == "memory").sum()),
        "lone_over_in_batch_illustrative": lone_point / point["regen_s"],
    }
    lo_ms, hi_ms = out["lone_regen_min_ms"], out["lone_regen_max_ms"]
    out["lone_regen_range"] = (
        f"are {lo_ms:.1f} ms at every MFU bracket"
        if np.isclose(lo_ms, hi_ms, rtol=1e-9)
        else f"run from {lo_ms:.1f} to {hi_ms:.1f} ms"
    )
    for label in MFU_LABELS:
        out[f"mfu_{label}_pct"] = s.mfu(label) * 100
        need = costs.bandwidth_for_ratio(s.fetch_bytes, regen[label], lo_claim, latency)
        out[f"claim_min_bandwidth_{label}_gbps"] = float(need) / 1e9
    for label in BANDWIDTH_LABELS:
        out[f"bandwidth_{label}_gbps"] = s.bandwidth(label) / 1e9
        out[f"bandwidth_{label}_hardware"] = words.bracket_hardware(s, label) or "no link preset at this bandwidth"
    out["host_link_gbps"] = s.v("reference.h200_host_link") / 1e9
    out["host_link_note"] = words.host_link_note(s)
    out["verdict"], out["n_within_claim"], out["n_below_claim"], out["n_above_claim"] = _verdict(df, "ratio")
    lone = _verdict(df, "lone_ratio")
    out["lone_verdict"], out["lone_n_within_claim"], out["lone_n_below_claim"], out["lone_n_above_claim"] = lone
    if out["lone_n_below_claim"] == 0 and out["lone_n_above_claim"]:
        out["lone_verdict_note"] = (
            "The lower end of the band is safe in this regime; what the fastest links can do is push the ratio past"
            " its upper end."
        )
    elif out["lone_n_below_claim"] == 0:
        out["lone_verdict_note"] = "In this regime every combination lands inside the band."
    else:
        out["lone_verdict_note"] = "Even regenerated alone, the block is cheap enough here to fall below the band."
    out["seed_sentence"] = seed_sentence(out)
    out["top_verdict"] = (
        f"no combination reaches {hi_claim:,.0f}× inside a batch: the largest ratio is {out['orders_max']:.2f} orders"
        " of magnitude, so the upper end of the claimed band is not approached by the tail block in that regime"
        if not out["n_above_claim"] and out["ratio_max"] < hi_claim
        else f"{out['n_above_claim']} combination(s) exceed {hi_claim:,.0f}× inside a batch"
    )
    out["answer_regimes"] = (
        "Inside a batch, where regenerating the block costs only its marginal compute,"
        f" {words.faster(out['ratio_min'], out['ratio_max'], 'fetching it', 'regenerating it')} across the"
        f" {len(df)} bracket combinations,"
        f" and the source chapter's two to three orders of magnitude holds at {out['n_within_claim']} of them."
        f" Regenerated alone, the block must stream every weight from device memory; on {words.lone_device(s)},"
        f" {words.faster(out['lone_ratio_min'], out['lone_ratio_max'], 'fetching', 'regenerating')}, and the claim"
        " holds at"
        f" {out['lone_n_within_claim']} of {len(df)}"
        + (
            f", the rest above {hi_claim:,.0f}×."
            if out["lone_n_above_claim"] and not out["lone_n_below_claim"]
            else "."
        )
    )
    out.update(layout_numbers(s))
    return out


COLUMNS = (
    Column("bandwidth_bracket", "bandwidth bracket"),
    Column("mfu_bracket", "MFU bracket"),
    Column("bandwidth_GBps", "bandwidth", "GB/s"),
    Column("mfu_pct", "MFU", "%"),
    Column("fetch_us", "fetch time", "µs"),
    *twins("regen_ms", "regeneration time", "ms"),
    *twins("ratio", "regeneration / fetch", "×"),
    *twins("orders_of_magnitude", "orders of magnitude"),
    *twins("within_claim", "within the chapter's claim"),
    Column("illustrative", "illustrative", words=("the illustrative point", "")),
    Column("lone_bound", "bound by, lone block"),
    *named("provenance"),
)
"""The columns of :func:`table`, in words with their units; the unprefixed ones are the in-batch twins of the
``lone_`` ones."""


def table(s: Scenario) -> pd.DataFrame:
    """Regenerate/fetch ratio over the cross product of bandwidth and MFU brackets, in both regimes.

    ``regen_ms`` and ``ratio`` are the in-batch regime (marginal compute, the source
    chapter's model); the ``lone_`` columns are a lone block under the roofline on the
    assumption set's device (``peak_flops``, ``regen.mem_bandwidth``, ``regen.mem_efficiency``).
    """
    fetch_s = s.fetch_by_label()
    regen_s = s.regen_by_label()
    point = s.illustrative
    lone_s = {m: float(s.lone_regen_s(0, "resident", s.mfu(m))) for m in MFU_LABELS}
    lone_bound = {m: str(s.lone_bound(0, "resident", s.mfu(m))) for m in MFU_LABELS}
    rows = []
    for b in BANDWIDTH_LABELS:
        for m in MFU_LABELS:
            r = regen_s[m] / fetch_s[b]
            lone = lone_s[m] / fetch_s[b]
            rows.append(
                {
                    "bandwidth_bracket": b,
                    "mfu_bracket": m,
                    "bandwidth_GBps": s.bandwidth(b) / 1e9,
                    "mfu_pct": s.mfu(m) * 100,
                    "fetch_us": fetch_s[b] * 1e6,
                    "regen_ms": regen_s[m] * 1e3,
                    "ratio": r,
                    "orders_of_magnitude": float(np.log10(r)),
                    "within_claim": bool(chapter.CLAIM_LOW <= r <= chapter.CLAIM_HIGH),
                    "illustrative": (b, m) == (point["bandwidth_label"], point["mfu_label"]),
                    "lone_regen_ms": lone_s[m] * 1e3,
                    "lone_bound": lone_bound[m],
                    "lone_ratio": lone,
                    "lone_orders_of_magnitude": float(np.log10(lone)),
                    "lone_within_claim": bool(chapter.CLAIM_LOW <= lone <= chapter.CLAIM_HIGH),
                    "provenance": "derived",
                }
            )
    return declare(pd.DataFrame(rows), COLUMNS)


def ratio_ticks(vmin: float, vmax: float) -> list[float]:
    """Colour-bar ticks in the ratio's own units: 1, 3, 10, 30, ... between ``vmin`` and ``vmax``."""
    ticks = []
    for decade in range(math.floor(math.log10(vmin)), math.ceil(math.log10(vmax)) + 1):
        ticks += [m * 10.0**decade for m in (1, 3) if vmin <= m * 10.0**decade <= vmax]
    return ticks


def ratio_heatmap(s: Scenario) -> tuple[Figure, str]:
    """The regenerate/fetch ratio over every bandwidth x MFU bracket in both regimes, the claimed band marked.

    The two regimes are stacked (inside a batch above, a lone block below) and share one
    colour scale, logarithmic and labelled in × (the ratio itself).
    """
    from matplotlib import colormaps
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Rectangle

    df = table(s).set_index(["bandwidth_bracket", "mfu_bracket"])
    point = s.illustrative
    fig, ax0 = new_figure(FIG_WIDTH_IN, 7.4)
    ax0.remove()
    axes = fig.subplots(2, 1)
    panels = (
        ("ratio", "inside a batch (the chapter's model)"),
        ("lone_ratio", "a lone block (the roofline)"),
    )
    ratios = df[["ratio", "lone_ratio"]].to_numpy()
    lo_claim, hi_claim = chapter.CLAIM_LOW, chapter.CLAIM_HIGH
    norm = LogNorm(vmin=min(lo_claim * 0.3, float(ratios.min())), vmax=max(hi_claim * 3, float(ratios.max())))
    cmap = colormaps["viridis"]
    for ax, (column, title) in zip(axes, panels, strict=True):
        data = np.array([[df.loc[(b, m), column] for m in MFU_LABELS] for b in BANDWIDTH_LABELS])
        im = ax.imshow(data, cmap=cmap, norm=norm, aspect="auto")
        ax.grid(False)
        ax.set_xticks(range(len(MFU_LABELS)), [f"{m}\n{s.mfu(m) * 100:g} % MFU" for m in MFU_LABELS])
        ax.set_yticks(range(len(BANDWIDTH_LABELS)), [f"{b}\n{s.bandwidth(b) / 1e9:g} GB/s" for b in BANDWIDTH_LABELS])
        ax.tick_params(length=0)
        for i, b in enumerate(BANDWIDTH_LABELS):
            for j, m in enumerate(MFU_LABELS):
                r = data[i, j]
                side = "below band" if r < lo_claim else "above band" if r > hi_claim else ""
                text = words.times(r)
                # dark text on the light end of the scale, white on the dark end
                dark = sum(cmap(norm(r))[:3]) > 1.5
                ax.text(
                    j,
                    i,
                    text + (f"\n{side}" if side else ""),
                    ha="center",
                    va="center",
                    fontsize=9.5,
                    color="black" if dark else "white",
                )
                if (b, m) == (point["bandwidth_label"], point["mfu_label"]):
                    ax.add_patch(
                        Rectangle((j - 0.47, i - 0.47), 0.94, 0.94, fill=False, lw=2.5, ec="black" if dark else "white")
                    )
        ax.set_title(title, fontsize=10, loc="left")
    fig.subplots_adjust(left=0.2, right=0.76, hspace=0.45, top=0.88)
    cax = fig.add_axes((0.8, axes[1].get_position().y0, 0.035, axes[0].get_position().y1 - axes[1].get_position().y0))
    cbar = fig.colorbar(im, cax=cax)
    ticks = ratio_ticks(norm.vmin, norm.vmax)
    cbar.set_ticks(ticks, labels=[f"{t:,g}×" for t in ticks])
    cbar.ax.minorticks_off()
    for bound in (lo_claim, hi_claim):  # the chapter's band on the scale
        cbar.ax.axhline(bound, color="white", lw=2.5)
        cbar.ax.axhline(bound, color="black", lw=1.0, ls=(0, (3, 2)))
    cbar.set_label("regenerate time / fetch time")
    fig.suptitle("How many times longer regenerating a tail block\ntakes than fetching it", fontsize=11)
    records = s.used(
        "model",
        "kv_dtype",
        "param_count",
        "weight_dtype",
        "block_tokens",
        "peak_flops",
        "flops_per_param_token",
        "fetch_latency",
        *[f"bandwidth.{b}" for b in BANDWIDTH_LABELS],
        *[f"mfu.{m}" for m in MFU_LABELS],
        "regen.mem_bandwidth",
        "regen.mem_efficiency",
    )
    n = numbers(s)
    band = f"{lo_claim:,.0f}–{hi_claim:,.0f}×"
    ranges = (
        f"{words.times(n['ratio_min'])} to {words.times(n['ratio_max'])} inside a batch ({n['n_within_claim']} of"
        f" {n['n_points']} in the chapter's {band} band), {words.times(n['lone_ratio_min'])} to"
        f" {words.times(n['lone_ratio_max'])} as a"
        f" lone block ({n['lone_n_within_claim']} of {n['n_points']})."
    )
    if min(n["ratio_min"], n["lone_ratio_min"]) > 1:
        lead = f"Regenerating costs more than fetching in every cell: {ranges}"
    else:
        lead = f"Regenerating does not always cost more than fetching: {ranges}"
    fig, text = finish(
        fig,
        records,
        "Top: inside a batch; bottom: a lone block. A cell per bandwidth and MFU bracket, the framed one the"
        " illustrative point; dashes on the scale mark the band.",
        lead=lead,
        drivers=("peak_flops", "regen.mem_bandwidth"),
    )
    return fig, text


TABLES = (
    (
        "ratio",
        table,
        ("bandwidth_bracket", "mfu_bracket"),
        (
            "bandwidth_bracket",
            "mfu_bracket",
            "fetch_us",
            "regen_ms",
            "ratio",
            "within_claim",
            "lone_regen_ms",
            "lone_bound",
            "lone_ratio",
            "lone_within_claim",
        ),
    ),
)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (("fig_ratio", ratio_heatmap),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
