"""The ratio page (``notebooks/04_ratio.md``): regenerate/fetch over the brackets, and the verdict on the claim."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier import chapter, costs
from kvtier.assumptions import BANDWIDTH_LABELS, MFU_LABELS
from kvtier.figures import finish, new_figure
from kvtier.scenario import Scenario, seed_scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "04_ratio"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""


def numbers(s: Scenario) -> dict[str, Any]:
    """The ratio grid's extremes, the illustrative point, and the verdict on the chapter's claim."""
    df = table(s)
    point = s.illustrative
    lo_claim, hi_claim = chapter.CLAIM_LOW, chapter.CLAIM_HIGH
    low_row = df.loc[df["ratio"].idxmin()]
    high_row = df.loc[df["ratio"].idxmax()]
    below = df[df["ratio"] < lo_claim]
    above = df[df["ratio"] > hi_claim]
    regen = s.regen_by_label()
    latency = s.v("fetch_latency")
    out: dict[str, Any] = {
        "n_points": len(df),
        "n_within_claim": int(df["within_claim"].sum()),
        "n_below_claim": len(below),
        "n_above_claim": len(above),
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
        # the chapter's own division: its unrounded conservative time over its rounded mid-bandwidth fetch
        "chapter_rounded_inputs_ratio": chapter.REGEN_CONSERVATIVE_UNROUNDED_S.value / chapter.FETCH_S["mid"].value,
        "optimistic_ends_ratio": regen["optimistic"] / s.fetch_by_label()["optimistic"],
    }
    for label in MFU_LABELS:
        out[f"mfu_{label}_pct"] = s.mfu(label) * 100
        need = costs.bandwidth_for_ratio(s.block_bytes, regen[label], lo_claim, latency)
        out[f"claim_min_bandwidth_{label}_gbps"] = float(need) / 1e9
    if len(below) == 0 and len(above) == 0:
        verdict = f"holds at all {len(df)} combinations of the bracketed assumptions"
    else:
        parts = []
        if len(below):
            pts = "; ".join(
                f"{r.bandwidth_GBps:g} GB/s at {r.mfu_pct:g} % MFU ({r.ratio:.1f}x)" for r in below.itertuples()
            )
            parts.append(f"falls below {lo_claim:g}x at {len(below)} ({pts})")
        if len(above):
            pts = "; ".join(
                f"{r.bandwidth_GBps:g} GB/s at {r.mfu_pct:g} % MFU ({r.ratio:.1f}x)" for r in above.itertuples()
            )
            parts.append(f"exceeds {hi_claim:g}x at {len(above)} ({pts})")
        verdict = f"holds at {int(df['within_claim'].sum())} of {len(df)} combinations; it " + " and ".join(parts)
    out["verdict"] = verdict
    out["top_verdict"] = (
        f"no combination reaches {hi_claim:,.0f}x: the largest ratio is {out['orders_max']:.2f} orders of magnitude,"
        " so the upper end of the claimed band is not approached by the tail block"
        if not len(above) and out["ratio_max"] < hi_claim
        else f"{len(above)} combination(s) exceed {hi_claim:,.0f}x"
    )
    return out


def table(s: Scenario) -> pd.DataFrame:
    """Regenerate/fetch ratio over the cross product of bandwidth and MFU brackets."""
    fetch_s = s.fetch_by_label()
    regen_s = s.regen_by_label()
    point = s.illustrative
    rows = []
    for b in BANDWIDTH_LABELS:
        for m in MFU_LABELS:
            r = regen_s[m] / fetch_s[b]
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
                    "provenance": "derived",
                }
            )
    return pd.DataFrame(rows)


def ratio_heatmap(s: Scenario) -> tuple[Figure, str]:
    """The regenerate/fetch ratio over every bandwidth x MFU bracket, the claimed band outlined."""
    grid = s.ratio_grid()
    data = np.array([[grid[(b, m)] for m in MFU_LABELS] for b in BANDWIDTH_LABELS])
    fig, ax = new_figure(7.5, 4.8)
    logs = np.log10(data)
    im = ax.imshow(logs, cmap="viridis", vmin=min(1.5, logs.min()), vmax=max(3.5, logs.max()), aspect="auto")
    ax.grid(False)
    ax.set_xticks(range(len(MFU_LABELS)), [f"{m}\n{s.mfu(m) * 100:g} % MFU" for m in MFU_LABELS])
    ax.set_yticks(range(len(BANDWIDTH_LABELS)), [f"{b}\n{s.bandwidth(b) / 1e9:g} GB/s" for b in BANDWIDTH_LABELS])
    point = s.illustrative
    for i, b in enumerate(BANDWIDTH_LABELS):
        for j, m in enumerate(MFU_LABELS):
            r = data[i, j]
            inside = 100 <= r <= 1000
            text = f"{r:.1f}x" + ("" if inside else "\noutside 100-1000x")
            if (b, m) == (point["bandwidth_label"], point["mfu_label"]):
                text += "\n(illustrative)"
            ax.text(j, i, text, ha="center", va="center", color="white" if r < 300 else "black", fontsize=9)
    cbar = fig.colorbar(im, ax=ax)
    cbar.set_label("log10(regenerate time / fetch time)")
    ax.set_title("How many times longer regenerating a tail block takes than fetching it")
    records = s.used(
        "model",
        "kv_dtype",
        "param_count",
        "block_tokens",
        "peak_flops",
        "flops_per_param_token",
        "fetch_latency",
        *[f"bandwidth.{b}" for b in BANDWIDTH_LABELS],
        *[f"mfu.{m}" for m in MFU_LABELS],
    )
    return finish(
        fig,
        records,
        "Regenerate/fetch ratio for each pair of bracketing assumptions; cells outside the source chapter's "
        "'two to three orders of magnitude' (100x to 1000x) are marked.",
    )


TABLES = (("ratio", table, ("bandwidth_bracket", "mfu_bracket")),)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (("fig_ratio", ratio_heatmap),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
