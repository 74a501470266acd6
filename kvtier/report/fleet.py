"""A fleet's tier priced: the decision's tier over ``fleet.instances`` instances, on each node under each router or in
one pool (:func:`kvtier.analysis.fleet_costs` of :func:`kvtier.analysis.fleet_replays`, the workload page's replays).

The cost page shows the table and its paragraph; the decision page quotes the same numbers.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from kvtier import analysis
from kvtier.formulas.cache import fleet
from kvtier.report import words
from kvtier.report.columns import Column, declare, named
from kvtier.scenario import Scenario
from kvtier.units import plural

FLEET_COST_COLUMNS = (
    Column("tier", "tier"),
    Column("routing", "routing"),
    Column("capacity_TB", "capacity in all", "TB"),
    Column("hit_tokens_pct", "prompt tokens hit", "%"),
    Column("servers", "pool servers", "count"),
    Column("ports", "pool network ports", "count"),
    Column("hardware_kusd", "hardware bought", "kUSD"),
    Column("hold_usd_per_h", "holding", "USD/h"),
    Column("fetch_usd_per_h", "fetching", "USD/h"),
    Column("avoided_usd_per_h", "recomputation avoided, in a batch", "USD/h"),
    Column("net_usd_per_h", "net saving", "USD/h"),
    Column("ttft_mean_ms", "time to first token, mean", "ms"),
    *named("provenance"),
)
"""The columns of :func:`fleet_cost_table`, in words with their units."""

FLEET_COST_SHOWN = (
    "tier",
    "routing",
    "hit_tokens_pct",
    "hardware_kusd",
    "hold_usd_per_h",
    "avoided_usd_per_h",
    "net_usd_per_h",
    "ttft_mean_ms",
)
"""The columns the page shows (the rest are in the CSV of record)."""


def _row(tier: str, routing: str, cost: Any, part: dict[str, Any]) -> dict[str, Any]:
    return {
        "tier": tier,
        "routing": routing,
        "capacity_TB": cost.capacity_bytes / 1e12,
        "hit_tokens_pct": part["hit_ratio_tokens"] * 100,
        "servers": cost.servers,
        "ports": cost.ports,
        "hardware_kusd": cost.hardware_usd / 1e3,
        "hold_usd_per_h": cost.hold_usd_per_s * 3600,
        "fetch_usd_per_h": cost.fetch_usd_per_s * 3600,
        "avoided_usd_per_h": cost.recompute_avoided_usd_per_s * 3600,
        "net_usd_per_h": cost.net_usd_per_s * 3600,
        "ttft_mean_ms": part["ttft_mean_s"] * 1e3,
        "provenance": "derived",
    }


def fleet_costs(s: Scenario) -> dict[str, dict[str, Any]]:
    """Per routing, the tier on each node and the pool priced: ``{routing: {"node": cost, "pooled": cost}}``."""
    block_tokens = analysis.reuse(s).trace.block_tokens
    return {r: analysis.fleet_costs(s, rep, block_tokens) for r, rep in analysis.fleet_replays(s).items()}


def fleet_cost_table(s: Scenario) -> pd.DataFrame:
    """One row per router with a tier on each instance, then the pool (whatever the router: it holds the same).

    The same bytes in all; the pool's servers and ports priced beside its memory; the saving is the prefill its hits
    avoid inside a batch less the fetches and the holding, per hour of the trace's traffic.
    """
    reps, costs = analysis.fleet_replays(s), fleet_costs(s)
    rows = [_row("per instance", r, costs[r]["node"], reps[r]["node"]) for r in fleet.ROUTINGS]
    any_routing = fleet.ROUTINGS[0]
    rows.append(_row("pooled", "any", costs[any_routing]["pooled"], reps[any_routing]["pooled"]))
    return declare(pd.DataFrame(rows), FLEET_COST_COLUMNS)


def shown_fleet_cost(s: Scenario) -> pd.DataFrame:
    """The page's fleet table: :func:`fleet_cost_table`'s display columns."""
    return fleet_cost_table(s).loc[:, list(FLEET_COST_SHOWN)]


def fleet_cost_numbers(s: Scenario) -> dict[str, Any]:
    """What the page's fleet paragraph (and the decision) quote: the pool and the set's router's tier per node."""
    df = fleet_cost_table(s).set_index(["tier", "routing"])
    routing = str(s.assumptions.value("fleet.routing"))
    node, pooled = df.loc[("per instance", routing)], df.loc[("pooled", "any")]
    nets = df.xs("per instance")["net_usd_per_h"]
    worst = nets.idxmin() if nets.notna().any() else nets.index[0]  # a trace of 0 s has no rate: no net saving
    out: dict[str, Any] = {
        "fleet_cost_instances": int(s.v("fleet.instances")),
        "fleet_cost_routing": routing,
        "fleet_cost_capacity_tb": float(pooled["capacity_TB"]),
        "fleet_cost_servers": int(pooled["servers"]),
        "fleet_cost_ports": int(pooled["ports"]),
        "fleet_cost_node_kusd": float(node["hardware_kusd"]),
        "fleet_cost_pool_kusd": float(pooled["hardware_kusd"]),
        "fleet_cost_node_net": float(node["net_usd_per_h"]),
        "fleet_cost_pool_net": float(pooled["net_usd_per_h"]),
        "fleet_cost_node_ttft_ms": float(node["ttft_mean_ms"]),
        "fleet_cost_pool_ttft_ms": float(pooled["ttft_mean_ms"]),
        "fleet_cost_worst_routing": str(worst),
        "fleet_cost_worst_net": float(df.loc[("per instance", worst), "net_usd_per_h"]),
    }
    out["fleet_cost_paragraph"] = fleet_cost_paragraph(out)
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}


def fleet_cost_paragraph(n: dict[str, Any]) -> str:
    """The fleet's tier on each node against one pool, priced, in words; or why there is no rate to price.

    ``n``: :func:`kvtier.report.pages.cost.fleet.fleet_cost_numbers` (NaN where a figure has no value).
    """
    nets = (n["fleet_cost_node_net"], n["fleet_cost_pool_net"], n["fleet_cost_worst_net"])
    if not all(x is not None and math.isfinite(x) for x in nets):
        return (
            "A trace with no duration has no rate, so neither a tier on each node nor a pool has a saving per hour"
            " to set against its price."
        )
    node, pool, worst = nets
    which = words.which_pays(pool, node, "the pool", "a tier on each node")
    return (
        f"Spread over {n['fleet_cost_instances']:,} instances, the decision's tier is"
        f" {n['fleet_cost_capacity_tb']:,.2f} TB in all. In the serving hosts' own DRAM that is"
        f" {n['fleet_cost_node_kusd']:,.1f} thousand dollars of memory, and under the {n['fleet_cost_routing']}"
        f" router it {words.nets(node)}. Pooled, the same bytes take {n['fleet_cost_servers']:,}"
        f" servers and {n['fleet_cost_ports']:,} network ports, {n['fleet_cost_pool_kusd']:,.1f} thousand dollars"
        f" in all, and {words.nets(pool).replace('nets', 'net', 1).replace('loses', 'lose', 1)}, at a mean time to"
        f" first token of {n['fleet_cost_pool_ttft_ms']:,.0f} ms against {n['fleet_cost_node_ttft_ms']:,.0f} ms:"
        f" {which}, by {abs(pool - node):,.2f} dollars an hour. Under a router blind to the caches"
        f" ({n['fleet_cost_worst_routing']}) a tier on each node {words.nets(worst).replace('nets', 'nets only', 1)}."
    )


def fleet_decision_sentence(n: dict[str, Any]) -> str:
    """The decision's tier over a fleet, per node against pooled, in one sentence (the decision page's and landing's).

    ``n``: :func:`fleet_cost_numbers`.
    """
    node, pool = n["fleet_cost_node_net"], n["fleet_cost_pool_net"]
    if node is None or pool is None or not (math.isfinite(node) and math.isfinite(pool)):
        return "With no duration the trace has no rate, so a fleet's tier per node and a pool are not priced."
    which = words.which_pays(pool, node, "one pool", "a tier in each node's DRAM")
    pooled = words.nets(pool, unit="")
    if pooled.split()[0] == words.nets(node).split()[0]:  # the same verb: said once ("nets 10.96 ... and 9.93")
        pooled = pooled.split()[1]
    return (
        f"Split over {n['fleet_cost_instances']:,} instances behind the {n['fleet_cost_routing']} router, the"
        f" decision's tier {words.nets(node)} in each node's own DRAM and {pooled} as one pool of"
        f" {plural(n['fleet_cost_servers'], 'memory server', ',')} read over RDMA (mean time to first token"
        f" {n['fleet_cost_node_ttft_ms']:,.0f} against {n['fleet_cost_pool_ttft_ms']:,.0f} ms): {which}."
    )
