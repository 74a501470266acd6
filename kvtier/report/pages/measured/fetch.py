"""The measured page's copies: every fetch from host memory against the fitted line, and the block layouts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import costs
from kvtier.inputs import measurements as ms
from kvtier.report.columns import Column, declare, named
from kvtier.report.figures import PALETTE, new_figure
from kvtier.report.pages.measured.shipped import (
    BLOCK_BYTES,
    BLOCK_TOKENS,
    error_pct,
    fetch_model_s,
    finish_figure,
    fits,
    measurements,
)
from kvtier.scenario import Scenario, seed_scenario
from kvtier.units import MIB

if TYPE_CHECKING:
    from matplotlib.figure import Figure


FETCH_COLUMNS = (
    *named("kind", "bytes", "size"),
    Column("measured_us", "measured", "µs"),
    Column("min_us", "fastest", "µs"),
    Column("max_us", "slowest", "µs"),
    Column("measured_GBps", "measured", "GB/s"),
    Column("model_us", "model", "µs"),
    Column("error_pct", "error", "%"),
    Column("in_fit", "in the fit", words=("in the fit", "left out")),
    *named("provenance"),
)
"""The columns of :func:`fetch_table`, in words with their units."""


def fetch_table(s: Scenario) -> pd.DataFrame:
    """Every measured copy from host memory (and back) against the fitted ``latency + bytes / bandwidth``.

    Pinned copies get the fit of their own direction; pageable copies have no fit of their
    own and are set against the host-to-device pinned fit, to show what staging through
    pageable memory costs.  ``in_fit`` marks the points the fit was made from.
    """
    m = measurements()
    rows = []
    for kind in ("h2d_pinned", "d2h_pinned", "h2d_pageable"):
        fit_kind = kind if kind in fits().fetch else "h2d_pinned"
        for c in m.copies_of(kind):
            model = fetch_model_s(1, c.n_bytes, fit_kind)
            rows.append(
                {
                    "kind": kind,
                    "bytes": c.n_bytes,
                    "size": f"{c.n_bytes / 2**10:,.0f} KiB" if c.n_bytes < MIB else f"{c.n_bytes / MIB:,.0f} MiB",
                    "measured_us": c.timing.median_s * 1e6,
                    "min_us": c.timing.min_s * 1e6,
                    "max_us": c.timing.max_s * 1e6,
                    "measured_GBps": c.n_bytes / c.timing.median_s / 1e9,
                    "model_us": model * 1e6,
                    "error_pct": error_pct(model, c.timing.median_s),
                    "in_fit": bool(kind == fit_kind and c.n_bytes >= ms.FETCH_FIT_MIN_BYTES),
                    "provenance": "measured; model derived",
                }
            )
    return declare(pd.DataFrame(rows), FETCH_COLUMNS)


def layouts() -> list[dict[str, Any]]:
    """The 5 MiB block moved in each measured layout: contiguous, one copy per chunk, strided, batched."""
    m = measurements()
    chunk_all = m.chunks * m.chunk_bytes
    blocks = int(m.v("batching_blocks"))
    return [
        ("contiguous (size sweep)", 1, BLOCK_BYTES, m.v("fetch_5mib_h2d_pinned"), "probe1.json"),
        ("contiguous (layout probe)", 1, chunk_all, m.v("block_contiguous"), "probe1.json"),
        ("one strided 2-D copy", 1, chunk_all, m.v("block_strided"), "probe2.json"),
        (
            "a copy per chunk, run 1",
            m.chunks,
            chunk_all,
            m.v("block_per_chunk_probe1"),
            "probe1.json",
        ),
        (
            "a copy per chunk, run 2",
            m.chunks,
            chunk_all,
            m.v("block_per_chunk_probe2"),
            "probe2.json",
        ),
        (f"{blocks} blocks, one copy", 1, blocks * BLOCK_BYTES, m.v("batching_one_copy"), "probe3.json"),
        (
            f"{blocks} blocks, a copy each",
            blocks,
            blocks * BLOCK_BYTES,
            m.v("batching_copy_per_block"),
            "probe3.json",
        ),
    ]  # type: ignore[return-value]


LAYOUT_COLUMNS = (
    *named("layout", "transfers", "bytes"),
    Column("measured_us", "measured", "µs"),
    Column("model_us", "model", "µs"),
    Column("error_pct", "error", "%"),
    Column("per_block_us", "per block", "µs"),
    Column("lone_block_ratio", "regeneration / fetch, lone block", "×"),
    Column("in_batch_ratio", "regeneration / fetch, in a batch", "×"),
    *named("source"),
)
"""The columns of :func:`layout_table`, in words with their units."""


def layout_table(s: Scenario) -> pd.DataFrame:
    """The block moved in each layout: transfers, measured time, the fitted model and the ratios it gives.

    The model charges the fitted per-transfer latency once per transfer:
    ``transfers x latency + bytes / bandwidth``.  The ratios divide the measured lone-block
    (CUDA graph) and in-batch regeneration times by the measured fetch time of one block.
    """
    m, f = measurements(), fits()
    lone = m.v("forward16_llama-3-70b_graph")
    in_batch = f.slope_s_per_token * BLOCK_TOKENS
    rows = []
    for layout, transfers, n_bytes, measured, file in layouts():
        model = fetch_model_s(transfers, n_bytes)
        per_block = measured * BLOCK_BYTES / n_bytes
        rows.append(
            {
                "layout": layout,
                "transfers": transfers,
                "bytes": n_bytes,
                "measured_us": measured * 1e6,
                "model_us": model * 1e6,
                "error_pct": error_pct(model, measured),
                "per_block_us": per_block * 1e6,
                "lone_block_ratio": lone / per_block,
                "in_batch_ratio": in_batch / per_block,
                "source": f"{ms.DATA_DIR}/{file}",
            }
        )
    return declare(pd.DataFrame(rows), LAYOUT_COLUMNS)


def fetch_figure(s: Scenario) -> tuple[Figure, str]:
    """Fetch time against transfer size: measured copies, the fitted model, this set's model; residuals below."""
    import matplotlib.pyplot as plt

    df = fetch_table(s)
    fig, _ = new_figure(4.8, 6.4)
    fig.clf()
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2.2, 1]})
    styles = {
        "h2d_pinned": ("host to device, pinned", PALETTE[0], "o"),
        "d2h_pinned": ("device to host, pinned", PALETTE[3], "s"),
        "h2d_pageable": ("host to device, pageable", PALETTE[1], "^"),
    }
    for kind, (label, color, marker) in styles.items():
        rows = df[df["kind"] == kind]
        top.loglog(rows["bytes"], rows["measured_us"], marker, color=color, label=label, ms=5)
        if kind != "h2d_pageable":
            bottom.semilogx(rows["bytes"], rows["error_pct"], marker + "-", color=color, ms=4, lw=0.8, label=label)
    sizes = np.logspace(np.log10(df["bytes"].min()), np.log10(df["bytes"].max()), 200)
    latency, bw = fits().fetch["h2d_pinned"]
    top.loglog(
        sizes,
        costs.fetch_time_s(sizes, bw, latency) * 1e6,
        color=PALETTE[0],
        lw=1.2,
        label=f"fit: {latency * 1e6:.1f} µs + bytes / {bw / 1e9:.1f} GB/s",
    )
    tf = ms.fit_transfer(measurements())
    top.loglog(
        sizes,
        [tf.pageable_s(n) * 1e6 for n in sizes],
        color=PALETTE[1],
        lw=1.0,
        ls="-.",
        label=f"pageable fit, cache to {tf.host_cache_bytes / MIB:g} MiB",
    )
    label = s.assumptions["illustrative.bandwidth"].value
    set_bw = s.bandwidth(str(label))
    top.loglog(
        sizes,
        costs.fetch_time_s(sizes, set_bw, s.v("fetch_latency")) * 1e6,
        color="#555555",
        lw=1.0,
        ls="--",
        label=f"this set: {s.v('fetch_latency') * 1e6:g} µs + bytes / {set_bw / 1e9:g} GB/s",
    )
    top.axvline(BLOCK_BYTES, color="#888888", lw=0.8, ls=":")
    top.annotate(
        f"{BLOCK_BYTES / MIB:g} MiB block",
        xy=(BLOCK_BYTES, 0.03),
        xycoords=top.get_xaxis_transform(),
        xytext=(3, 0),
        textcoords="offset points",
        fontsize=9.5,
        color="#555555",
    )
    top.set_ylim(bottom=float(df["measured_us"].min()) / 3)
    top.set_ylabel("copy time (µs)")
    top.set_ylim(top=float(df["measured_us"].max()) * 60)  # room above the points for the legend
    top.legend(
        fontsize=9.5,
        loc="upper left",
        title="One H200, PCIe 5.0 x16",
        title_fontsize=10,
        alignment="left",
        frameon=True,
        framealpha=1.0,
        edgecolor="none",
    )
    bottom.axhline(0, color="#444444", lw=0.8)
    bottom.axvspan(df["bytes"].min() / 1.5, ms.FETCH_FIT_MIN_BYTES / 1.4, color="#eeeeee", zorder=0)
    bottom.annotate(
        "not in the fit", xy=(0.02, 0.86), xycoords="axes fraction", va="top", fontsize=9.5, color="#555555"
    )
    bottom.set_ylabel("fit error (%)")
    bottom.set_xlabel("bytes per transfer")
    bottom.legend(fontsize=9.5, loc="lower right")
    fig.subplots_adjust(hspace=0.08, left=0.16, right=0.97, top=0.98)
    plt.setp(top.get_xticklabels(), visible=False)
    f = fits()
    records = [
        measurements().record("fetch_5mib_h2d_pinned"),
        f.records["h2d_pinned_latency"],
        f.records["h2d_pinned_bandwidth"],
        *s.used("fetch_latency", f"bandwidth.{label}"),
    ]
    small = df[(df["kind"] == "h2d_pinned") & (df["bytes"] < ms.FETCH_FIT_MIN_BYTES)]["measured_us"]
    outside = df[df["kind"].str.endswith("_pinned") & ~df["in_fit"]]["error_pct"]
    small_error = float(outside.loc[outside.abs().idxmax()])  # the widest miss below the fitted sizes (signed)
    big = df[df["bytes"] >= ms.FETCH_FIT_MIN_BYTES]
    slow = (
        big[big["kind"] == "h2d_pageable"].set_index("bytes")["measured_us"]
        / big[big["kind"] == "h2d_pinned"].set_index("bytes")["measured_us"]
    )
    return finish_figure(
        fig,
        records,
        (f.records["h2d_pinned_latency"].key, f.records["h2d_pinned_bandwidth"].key),
        f"From {ms.FETCH_FIT_MIN_BYTES / MIB:g} MiB up, the fit predicts every pinned copy"
        f" within {numbers_fetch_max(df):.1f} %; smaller copies sit on a {small.min():.0f} to {small.max():.0f} µs"
        f" floor it {'undershoots' if small_error < 0 else 'overshoots'} by up to {abs(small_error):.0f} %;"
        f" pageable copies take {slow.min():.1f} to {slow.max():.1f} times as long. Points: medians of"
        f" {min(c.timing.reps for c in measurements().copies)} to"
        f" {max(c.timing.reps for c in measurements().copies)} copies; lines:"
        " the fit (solid), the pageable fit (dash-dotted), this set's model (dashed).",
    )


def numbers_fetch_max(df: pd.DataFrame) -> float:
    """The largest error (percent, absolute) of the fetch fit over the points it was fitted to."""
    return float(df[df["in_fit"]]["error_pct"].abs().max())


def fetch_numbers(s: Scenario) -> dict[str, Any]:
    """The copies the page quotes: the 5 MiB block measured and fitted, the small copies, the seed set's fetch.

    Times in µs, rates in GB/s, errors in percent of the measured time.
    """
    m, f = measurements(), fits()
    fetch = fetch_table(s)
    pinned = fetch[fetch["kind"] == "h2d_pinned"]
    small = pinned[pinned["bytes"] < ms.FETCH_FIT_MIN_BYTES]
    block = pinned[pinned["bytes"] == BLOCK_BYTES].iloc[0]
    fitted = fetch[fetch["in_fit"]]
    seed = seed_scenario()
    latency, bw = f.fetch["h2d_pinned"]
    return dict(
        fetch_5mib_us=float(block["measured_us"]),
        fetch_5mib_gbps=float(block["measured_GBps"]),
        fetch_5mib_d2h_us=m.v("fetch_5mib_d2h_pinned") * 1e6,
        pageable_5mib_us=m.v("fetch_5mib_h2d_pageable") * 1e6,
        pageable_5mib_gbps=BLOCK_BYTES / m.v("fetch_5mib_h2d_pageable") / 1e9,
        fit_latency_us=latency * 1e6,
        fit_bandwidth_gbps=bw / 1e9,
        fit_d2h_latency_us=f.fetch["d2h_pinned"][0] * 1e6,
        fit_d2h_bandwidth_gbps=f.fetch["d2h_pinned"][1] / 1e9,
        fit_min_mib=ms.FETCH_FIT_MIN_BYTES / MIB,
        fit_5mib_us=float(block["model_us"]),
        fit_5mib_error_pct=float(block["error_pct"]),
        fit_max_abs_error_pct=float(fitted["error_pct"].abs().max()),
        small_min_us=float(small["measured_us"].min()),
        small_max_us=float(small["measured_us"].max()),
        small_max_kib=float(small["bytes"].max() / 2**10),
        small_worst_short_pct=-float(small["error_pct"].min()),
        chapter_fetch_us=float(seed.fetch_s(seed.bandwidth("mid"))) * 1e6,
        chapter_fetch_error_pct=error_pct(
            float(seed.fetch_s(seed.bandwidth("mid"))), float(block["measured_us"]) / 1e6
        ),
        chapter_bandwidth_gbps=seed.bandwidth("mid") / 1e9,
    )


def layout_numbers(s: Scenario) -> dict[str, Any]:
    """The layouts the page quotes: one copy per chunk against one per block, and copies batched (ms, µs, ratios)."""
    m = measurements()
    lay = layout_table(s).set_index("layout")
    chunked = lay[lay["transfers"] == m.chunks]
    blocks = int(m.v("batching_blocks"))
    return dict(
        chunks=m.chunks,
        chunk_kib=m.chunk_bytes / 2**10,
        per_chunk_min_ms=float(chunked["measured_us"].min()) / 1e3,
        per_chunk_max_ms=float(chunked["measured_us"].max()) / 1e3,
        per_chunk_model_ms=float(chunked["model_us"].iloc[0]) / 1e3,
        per_copy_min_us=float(chunked["measured_us"].min()) / m.chunks,
        per_copy_max_us=float(chunked["measured_us"].max()) / m.chunks,
        strided_us=m.v("block_strided") * 1e6,
        per_chunk_lone_ratio_min=float(chunked["lone_block_ratio"].min()),
        per_chunk_lone_ratio_max=float(chunked["lone_block_ratio"].max()),
        per_chunk_in_batch_ratio_min=float(chunked["in_batch_ratio"].min()),
        per_chunk_in_batch_ratio_max=float(chunked["in_batch_ratio"].max()),
        batch_blocks=blocks,
        batch_one_copy_ms=m.v("batching_one_copy") * 1e3,
        batch_per_block_ms=m.v("batching_copy_per_block") * 1e3,
        batch_extra_per_copy_us=(m.v("batching_copy_per_block") - m.v("batching_one_copy")) / (blocks - 1) * 1e6,
    )
