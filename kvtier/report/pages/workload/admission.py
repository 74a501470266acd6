"""The workload page's admission and time to live: the decision's tier by what it writes and how long it keeps a
block (:func:`kvtier.analysis.admission_of`, the same replay as ``kvtier workload --admission``)."""

from __future__ import annotations

import math
from typing import Any
from weakref import WeakKeyDictionary

import pandas as pd

from kvtier import analysis
from kvtier.report.columns import Column, declare, named
from kvtier.report.pages.workload.summary import trace_name
from kvtier.report.pages.workload.words import admission_paragraph
from kvtier.scenario import Scenario

ADMISSION_COLUMNS = (
    Column("trace", "trace"),
    Column("filter", "what the tier admits"),
    Column("ttl_h", "time to live", "h"),
    Column("hit_tokens_pct", "prompt tokens hit", "%"),
    Column("writes", "blocks written", "count"),
    Column("expired", "blocks found expired", "count"),
    Column("drive_writes_per_day", "NVMe drive writes per day", "1/d"),
    Column("points_lost_per_dwpd", "hit points lost per drive write a day saved", "pp·d"),
    *named("provenance"),
)
"""The columns of :func:`admission_table`, in words with their units."""

ADMISSION_SHOWN = ("filter", "ttl_h", "hit_tokens_pct", "writes", "drive_writes_per_day", "points_lost_per_dwpd")
"""The columns the page shows (the rest are in the CSV of record)."""

_ADMISSION_CACHE: WeakKeyDictionary[Scenario, dict[str, Any]] = WeakKeyDictionary()


def admission_replays(s: Scenario) -> dict[str, Any]:
    """:func:`kvtier.analysis.admission_of` of the build's trace at the decision's tier (kept with ``s``)."""
    found = _ADMISSION_CACHE.get(s)
    if found is None:
        found = analysis.admission_of(s, analysis.reuse(s).trace, analysis.decision_blocks(s))
        _ADMISSION_CACHE[s] = found
    return found


def admission_table(s: Scenario) -> pd.DataFrame:
    """One row per admission filter, then one per tier whose five-minute-rule residency is the time to live.

    No time to live (admitting filters) is NaN hours; the first row, admitting every miss, is what the others give
    up hit ratio against (its points lost per drive write saved is NaN).
    """
    rep = admission_replays(s)
    rows = [
        {
            "trace": trace_name(s),
            "filter": row["filter"],
            "ttl_h": row["ttl_s"] / 3600 if math.isfinite(row["ttl_s"]) else math.nan,
            "hit_tokens_pct": row["hit_ratio_tokens"] * 100,
            "writes": row["writes"],
            "expired": row["expired"],
            "drive_writes_per_day": row["drive_writes_per_day"],
            "points_lost_per_dwpd": row["points_lost_per_dwpd_saved"],
            "provenance": "derived",
        }
        for row in rep["rows"]
    ]
    return declare(pd.DataFrame(rows), ADMISSION_COLUMNS)


def shown_admission(s: Scenario) -> pd.DataFrame:
    """The page's admission table: :func:`admission_table`'s display columns."""
    return admission_table(s).loc[:, list(ADMISSION_SHOWN)]


def admission_numbers(s: Scenario) -> dict[str, Any]:
    """What the page's admission paragraph quotes: each filter's hits and wear, the TTLs against the trace's reuses."""
    rep = admission_replays(s)
    rows = {row["filter"]: row for row in rep["rows"]}
    trace = analysis.reuse(s).trace
    out: dict[str, Any] = {
        "admission_drives_tb": rep["drives_bytes"] / 1e12,
        "admission_duration_s": trace.duration_s,
    }
    for name, row in rows.items():
        key = name.replace("ttl ", "ttl_").replace("-", "_")
        out[f"admission_{key}_hit_pct"] = row["hit_ratio_tokens"] * 100
        out[f"admission_{key}_dwpd"] = row["drive_writes_per_day"]
        out[f"admission_{key}_pts_per_dwpd"] = row["points_lost_per_dwpd_saved"]
        out[f"admission_{key}_expired"] = row["expired"]
        if math.isfinite(row["ttl_s"]):
            out[f"admission_{key}_ttl_h"] = row["ttl_s"] / 3600
    out["admission_paragraph"] = admission_paragraph(out)
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}
