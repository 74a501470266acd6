"""The fetch page (``notebooks/02_fetch.md``): fetch time of one block for each bandwidth bracket."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.inputs import chapter
from kvtier.inputs.assumptions import BANDWIDTH_LABELS
from kvtier.report import words
from kvtier.report.figures import PALETTE, finish, new_figure
from kvtier.scenario import Scenario, seed_scenario
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
    "fetch_layout",
    "kv_dtype",
    "model",
    "reference.h200_host_link",
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""


def numbers(s: Scenario) -> dict[str, Any]:
    """Fetch time of one block for each bandwidth bracket, beside the chapter's figures."""
    out: dict[str, Any] = {"block_mib": s.block_bytes / MIB, "latency_us": s.v("fetch_latency") * 1e6}
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
                "latency_us": s.v("fetch_latency") * 1e6,
                "fetch_us": float(s.fetch_s(rec.value)) * 1e6,
                "hardware": words.bracket_hardware(s, label) or "no link preset at this bandwidth",
                "basis": rec.basis,
                "provenance": rec.provenance,
            }
        )
    return pd.DataFrame(rows)


def fetch_vs_bandwidth(s: Scenario) -> tuple[Figure, str]:
    """Fetch time of one block against link bandwidth, the brackets marked."""
    fig, ax = new_figure()
    bw = np.logspace(0, 3, 200) * 1e9
    ax.loglog(bw / 1e9, s.fetch_s(bw) * 1e6, color=PALETTE[0], label="fetch time = latency + block bytes / bandwidth")
    for i, (label, fetch_s) in enumerate(s.fetch_by_label().items()):
        b = s.bandwidth(label)
        ax.plot(
            b / 1e9,
            fetch_s * 1e6,
            "o",
            color=PALETTE[1 + i],
            label=f"{label}: {b / 1e9:g} GB/s, {fetch_s * 1e6:.1f} µs",
        )
    ax.set_xlabel("link bandwidth, one direction (GB/s, decimal)")
    ax.set_ylabel("fetch time of one block (µs)")
    ax.set_title(f"Fetching one {s.block_tokens}-token block of {s.model.name} ({s.block_bytes / MIB:.2f} MiB)")
    ax.legend(loc="upper right")
    records = s.used(
        "model", "kv_dtype", "block_tokens", "fetch_latency", *[f"bandwidth.{b}" for b in BANDWIDTH_LABELS]
    )
    fetch = s.fetch_by_label()
    lead = (
        f"Fetching one block takes time inversely proportional to the link bandwidth: the {s.block_bytes / MIB:.2f}"
        f" MiB block needs {fetch['pessimistic'] * 1e6:.1f} µs at the pessimistic bracket and"
        f" {fetch['optimistic'] * 1e6:.1f} µs at the optimistic one."
    )
    return finish(
        fig,
        records,
        "The line is the fetch time against link bandwidth; dots mark the three bracketing bandwidths.",
        lead=lead,
        drivers=("block_tokens", "bandwidth.mid"),
    )


TABLES = (("fetch", table, ("bracket",)),)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (("fig_fetch", fetch_vs_bandwidth),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
