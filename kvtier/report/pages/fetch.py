"""The fetch page (``notebooks/02_fetch.md``): fetch time of one block for each bandwidth bracket."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.inputs import chapter
from kvtier.inputs import measurements as ms
from kvtier.inputs.keys import BANDWIDTH_LABELS
from kvtier.report import words
from kvtier.report.columns import Column, declare, named
from kvtier.report.figures import PALETTE, finish, new_figure, plain_log_ticks
from kvtier.scenario import PLACEMENT_KEYS, TRANSFER_KEYS, Scenario, seed_scenario
from kvtier.units import MIB

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "02_fetch"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "fetching a block"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (
    "bandwidth.mid",
    "bandwidth.optimistic",
    "bandwidth.pessimistic",
    "block_tokens",
    "fetch_latency",
    "engine",
    "fetch_layout",
    "kv_dtype",
    "model",
    "reference.h200_host_link",
    *PLACEMENT_KEYS,
    *TRANSFER_KEYS,
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""


def numbers(s: Scenario) -> dict[str, Any]:
    """Fetch time of one block for each bandwidth bracket, beside the chapter's figures."""
    out: dict[str, Any] = {"block_mib": s.block_bytes / MIB, "latency_us": s.transfer_latency_s * 1e6}
    for label, fetch_s in s.fetch_by_label().items():
        out[f"bandwidth_{label}_gbps"] = s.bandwidth(label) / 1e9
        out[f"fetch_{label}_us"] = fetch_s * 1e6
        out[f"chapter_fetch_{label}_us"] = chapter.FETCH_S[label].value * 1e6
        out[f"seed_fetch_{label}_us"] = seed_scenario().fetch_by_label()[label] * 1e6
        out[f"bandwidth_{label}_hardware"] = words.bracket_hardware(s, label) or "no link preset at this bandwidth"
    out["host_link_gbps"] = s.v("reference.h200_host_link") / 1e9
    out["host_link_note"] = words.host_link_note(s)
    out["realistic_note"] = words.realistic_note(s)
    out["seed_sentence"] = seed_sentence(out)
    return out


def seed_sentence(out: dict[str, Any]) -> str:
    """The brackets' fetch times as the source chapter prints them, beside the seed set's when this build differs.

    The seed build states its times once (the sentence before this one), so it names only the
    chapter's rounded figures.
    """
    build = [out[f"fetch_{label}_us"] for label in BANDWIDTH_LABELS]
    seed = [out[f"seed_fetch_{label}_us"] for label in BANDWIDTH_LABELS]
    printed = words.listed([f"{out[f'chapter_fetch_{label}_us']:.0f}" for label in BANDWIDTH_LABELS])
    if not words.differs_as_printed(build, seed, ".2f"):
        return f"The source chapter prints them rounded as {printed} µs."
    return (
        f"With the seed assumptions these are {words.listed([f'{x:.2f}' for x in seed])} µs,"
        f" which the source chapter prints rounded as {printed} µs."
    )


COLUMNS = (
    Column("bracket", "bracket"),
    Column("bandwidth_GBps", "bandwidth", "GB/s"),
    Column("block_MiB", "block", "MiB"),
    Column("latency_us", "latency", "µs"),
    Column("fetch_us", "fetch time", "µs"),
    *named("hardware", "basis", "provenance"),
)
"""The columns of :func:`table`, in words with their units."""


def table(s: Scenario) -> pd.DataFrame:
    """Fetch time of one block for each bandwidth bracket."""
    rows = []
    for label in BANDWIDTH_LABELS:
        rec = s.a(f"bandwidth.{label}")
        rows.append(
            {
                "bracket": label,
                "bandwidth_GBps": rec.value / 1e9,
                "block_MiB": s.block_bytes / MIB,
                "latency_us": s.transfer_latency_s * 1e6,
                "fetch_us": float(s.fetch_s(rec.value)) * 1e6,
                "hardware": words.bracket_hardware(s, label) or "no link preset at this bandwidth",
                "basis": rec.basis,
                "provenance": rec.provenance,
            }
        )
    return declare(pd.DataFrame(rows), COLUMNS)


FIG_WIDTH_IN = 4.8
"""Figure width (in): under :data:`~kvtier.report.figures.MAX_WIDTH_IN` with room for the tight bounding box's
padding, so that 9 pt text is still 9 px where a 420 px screen shows the figure 370 px wide."""


def layout_latency(s: Scenario) -> tuple[float, str]:
    """The per-transfer latency the layouts are compared at, and where it comes from, in words.

    The set's per-transfer latency (``fetch_latency``, or the copy method's per-copy cost:
    :attr:`~kvtier.scenario.Scenario.transfer_latency_s`) where it is above zero; otherwise (the source
    chapter's zero) the per-transfer latency fitted to one H200's pinned host copies, as the ratio page does.
    """
    latency = s.transfer_latency_s
    if latency > 0:
        return latency, "this set's fetch_latency"
    rec = ms.shipped_fits().records["h2d_pinned_latency"]
    return float(rec.value), "fitted to H200 copies"


def fetch_vs_bandwidth(s: Scenario) -> tuple[Figure, str]:
    """Fetch time of one block against link bandwidth in both layouts, the three brackets marked."""
    from matplotlib.ticker import NullLocator

    fig, ax = new_figure(FIG_WIDTH_IN, 6.0)
    fetch = s.fetch_by_label()
    brackets = {label: s.bandwidth(label) for label in BANDWIDTH_LABELS}
    low = min(1.0, min(brackets.values()) / 1e9 / 2)
    bw = np.logspace(np.log10(low), 3, 200) * 1e9
    latency, source = layout_latency(s)
    chunks = s.layer_chunks
    contiguous = s.link_fetch_s(s.block_bytes, bw, latency, 1)
    per_layer = s.link_fetch_s(s.block_bytes, bw, latency, chunks)
    own_layout = str(s.assumptions.value("fetch_layout"))
    set_latency = s.transfer_latency_s
    # the set's own fetch (the table's values), then the layouts at the compared latency where they differ from it
    ax.loglog(
        bw / 1e9,
        s.fetch_s(bw) * 1e6,
        color=PALETTE[0],
        lw=2.0,
        label=f"this set: {own_layout}, {set_latency * 1e6:g} µs a transfer",
    )
    ax.plot(
        [b / 1e9 for b in brackets.values()], [t * 1e6 for t in fetch.values()], "o", color=PALETTE[0], ms=7, zorder=4
    )
    if set_latency == 0 or own_layout != "contiguous":
        ax.loglog(
            bw / 1e9,
            contiguous * 1e6,
            color=PALETTE[5],
            ls=":",
            lw=1.6,
            label=f"contiguous, one {latency * 1e6:.2f} µs transfer",
        )
    if own_layout != "per-layer":
        ax.loglog(
            bw / 1e9,
            per_layer * 1e6,
            color=PALETTE[1],
            ls=(0, (6, 3)),
            lw=1.8,
            label=f"per layer: {chunks:,} transfers of {latency * 1e6:.2f} µs",
        )
        ax.plot(
            [b / 1e9 for b in brackets.values()],
            [float(s.link_fetch_s(s.block_bytes, b, latency, chunks)) * 1e6 for b in brackets.values()],
            "s",
            color=PALETTE[1],
            ms=6,
            zorder=4,
        )
    for b in brackets.values():
        ax.axvline(b / 1e9, color="#999999", lw=0.8, zorder=1)
    # the brackets are named above the axes, where no line crosses their names
    top = ax.secondary_xaxis("top")
    top.set_xticks(
        [b / 1e9 for b in brackets.values()], [f"{label}, {b / 1e9:g} GB/s" for label, b in brackets.items()]
    )
    top.xaxis.set_minor_locator(NullLocator())
    top.tick_params(axis="x", rotation=90, labelsize=9, colors="#444444")
    plain_log_ticks(ax.xaxis)
    ax.set_xlabel("link bandwidth, one direction (GB/s)")
    ax.set_ylabel("fetch time of one block (µs)")
    ax.set_title(
        "\n".join(
            textwrap.wrap(
                f"Fetching one {s.block_tokens}-token block of {s.model.name} ({s.block_bytes / MIB:.2f} MiB)", 56
            )
        ),
        fontsize=10,
    )
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1, fontsize=9)
    fig.subplots_adjust(left=0.15, right=0.97, top=0.74)
    records = s.used(
        "model", "kv_dtype", "block_tokens", "fetch_latency", *[f"bandwidth.{b}" for b in BANDWIDTH_LABELS]
    )
    fast = max(brackets.values())
    break_even = s.block_bytes / (chunks * latency)  # per-layer latency equals the bytes' time here
    pl = float(s.link_fetch_s(s.block_bytes, fast, latency, chunks))
    ct = float(s.link_fetch_s(s.block_bytes, fast, latency, 1))
    lead = (
        f"In {chunks:,} per-layer chunks the block pays more in latency than in bytes above"
        f" {break_even / 1e9:.1f} GB/s"
        + (
            ": faster links barely help a paged cache."
            if fast > break_even
            else ", faster than every bracket: the bytes dominate."
        )
        + f" At {fast / 1e9:g} GB/s it takes {pl * 1e6:,.0f} µs, {pl / ct:,.1f} times one contiguous transfer."
    )
    where = f"at {latency * 1e6:.2f} µs a transfer ({source})"
    how = (
        f"Dots: the set's three brackets (the table's values); squares: the same links per layer, {where}."
        if own_layout != "per-layer"
        else f"Dots: the set's three brackets, per layer (the table's values); dotted: one transfer, {where}."
    )
    fig, text = finish(fig, records, how, lead=lead, drivers=("block_tokens", "fetch_latency"))
    below_axes(fig, 0.6)
    return fig, text


def below_axes(fig: Figure, inches: float) -> None:
    """Make ``inches`` more room under the axes, for a legend below them, above the footer of the inputs.

    :func:`~kvtier.report.figures.finish` places the axes above the footer with room for the
    tick labels and the axis label only; the legend goes between those and the footer.
    """
    fig.subplots_adjust(bottom=fig.subplotpars.bottom + inches / fig.get_size_inches()[1])


TABLES = (("fetch", table, ("bracket",)),)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (("fig_fetch", fetch_vs_bandwidth),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
