"""The workload page's fleet: the decision's tier split over ``fleet.instances`` instances under each router,
against one pooled tier of the same bytes (:func:`kvtier.analysis.fleet_of`)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from kvtier import analysis
from kvtier.formulas.cache import fleet
from kvtier.report.columns import Column, declare, named
from kvtier.report.pages.workload.summary import trace_name
from kvtier.report.pages.workload.words import fleet_paragraph
from kvtier.scenario import Scenario

FLEET_COLUMNS = (
    Column("trace", "trace"),
    Column("tier", "tier"),
    Column("routing", "routing"),
    Column("instances", "instances"),
    Column("capacity_GiB", "capacity of each tier", "GiB"),
    Column("hit_tokens_pct", "prompt tokens hit", "%"),
    Column("busiest_requests_x", "busiest instance's requests", "× mean"),
    Column("busiest_prefill_x", "busiest instance's prefill", "× mean"),
    Column("ttft_mean_ms", "time to first token, mean", "ms"),
    Column("ttft_p90_ms", "time to first token, 90th percentile", "ms"),
    *named("provenance"),
)
"""The columns of :func:`fleet_table`, in words with their units."""

FLEET_SHOWN = (
    "tier",
    "routing",
    "hit_tokens_pct",
    "busiest_requests_x",
    "busiest_prefill_x",
    "ttft_mean_ms",
    "ttft_p90_ms",
)
"""The columns the page shows (the rest are in the CSV of record)."""


def _row(s: Scenario, tier: str, routing: str, instances: int, blocks: float, part: dict, rep: dict) -> dict:
    return {
        "trace": trace_name(s),
        "tier": tier,
        "routing": routing,
        "instances": instances,
        "capacity_GiB": blocks * s.tier_bytes_per_token * analysis.reuse(s).trace.block_tokens / 2**30,
        "hit_tokens_pct": part["hit_ratio_tokens"] * 100,
        "busiest_requests_x": rep["requests_imbalance"] if tier != "pooled" else math.nan,
        "busiest_prefill_x": rep["prefill_imbalance"] if tier != "pooled" else math.nan,
        "ttft_mean_ms": part["ttft_mean_s"] * 1e3,
        "ttft_p90_ms": part["ttft_p90_s"] * 1e3,
        "provenance": "derived",
    }


def fleet_table(s: Scenario) -> pd.DataFrame:
    """One row per router with a tier on each instance, then one pooled tier of all their bytes, then none.

    Each instance's tier is :func:`kvtier.analysis.fleet_capacity_blocks`; the pool holds ``fleet.instances``
    times that, read over each accelerator's RDMA NIC; routing does not change what the pool holds, so it is one
    row.  Hit ratios are of every prompt token, counted up to each request's first miss; times to first token are
    the hit prefix fetched then the rest prefilled alone (:func:`kvtier.formulas.cache.fleet.request_ttft_s`).
    """
    reps = analysis.fleet_replays(s)
    n = int(s.v("fleet.instances"))
    cap = analysis.fleet_capacity_blocks(s)
    rows = [_row(s, "per instance", routing, n, cap, rep["node"], rep) for routing, rep in reps.items()]
    any_rep = next(iter(reps.values()))
    rows.append(_row(s, "pooled", "any", n, n * cap, any_rep["pooled"], any_rep))
    none = {"hit_ratio_tokens": 0.0, **any_rep["none"]}
    rows.append(_row(s, "none", "any", n, 0.0, none, {"requests_imbalance": math.nan, "prefill_imbalance": math.nan}))
    return declare(pd.DataFrame(rows), FLEET_COLUMNS)


def shown_fleet(s: Scenario) -> pd.DataFrame:
    """The page's fleet table: :func:`fleet_table`'s display columns."""
    return fleet_table(s).loc[:, list(FLEET_SHOWN)]


def fleet_numbers(s: Scenario) -> dict[str, Any]:
    """What the page's fleet paragraph quotes: the split, each router's hit ratio, the pool's, and the TTFTs."""
    df = fleet_table(s).set_index(["tier", "routing"])
    out: dict[str, Any] = {
        "fleet_instances": int(s.v("fleet.instances")),
        "fleet_tier_gib": float(df.loc[("per instance", "prefix"), "capacity_GiB"]),
        "fleet_pool_gib": float(df.loc[("pooled", "any"), "capacity_GiB"]),
    }
    for routing in fleet.ROUTINGS:
        key = routing.replace("-", "_")
        out[f"fleet_{key}_hit_pct"] = float(df.loc[("per instance", routing), "hit_tokens_pct"])
        out[f"fleet_{key}_ttft_ms"] = float(df.loc[("per instance", routing), "ttft_mean_ms"])
    out["fleet_prefix_prefill_x"] = float(df.loc[("per instance", "prefix"), "busiest_prefill_x"])
    out["fleet_pool_hit_pct"] = float(df.loc[("pooled", "any"), "hit_tokens_pct"])
    out["fleet_pool_ttft_ms"] = float(df.loc[("pooled", "any"), "ttft_mean_ms"])
    out["fleet_none_ttft_ms"] = float(df.loc[("none", "any"), "ttft_mean_ms"])
    out["fleet_paragraph"] = fleet_paragraph(out)
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}
