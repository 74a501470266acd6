"""The cost page's hierarchies: a trace replayed through two- and three-tier LRU hierarchies.

The replays (:mod:`kvtier.formulas.cache.hierarchy`) are cached per scenario: the table and the numbers
read the same replays.
"""

from __future__ import annotations

import math
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np
import pandas as pd

from kvtier import analysis
from kvtier.formulas import tiering
from kvtier.formulas.cache import hierarchy
from kvtier.report.columns import Column, declare, named
from kvtier.report.pages.cost.intervals import CXL_TIER
from kvtier.report.pages.cost.mix import per_h, trace_mixes
from kvtier.report.pages.cost.words import hierarchy_result_sentence, hierarchy_sizes_sentence
from kvtier.scenario import Scenario

HIERARCHIES: dict[str, tuple[str, ...]] = {
    "host DRAM": ("hbm", "pcie5-x16", "nvme-gen4-x4"),
    "CXL": ("hbm", CXL_TIER, "nvme-gen4-x4"),
}
"""The hierarchies replayed, by their middle medium: HBM, then host DRAM over PCIe 5.0 or a CXL expander, then NVMe."""


HIERARCHY_BOUND: dict[str, str] = {"host DRAM": "with host DRAM", "CXL": "host DRAM full"}
"""The ladder of :data:`LADDERS` whose least-cost mix bounds each hierarchy's cost from below (it holds its tiers)."""


_HIERARCHY_CACHE: WeakKeyDictionary[Scenario, dict[str, Any]] = WeakKeyDictionary()


def hierarchy_sizes(s: Scenario) -> dict[str, Any]:
    """The replayed hierarchies' tiers, in blocks of ``workload.block_tokens`` tokens, sized per accelerator.

    - ``accelerators``: those the trace's prefill keeps busy inside a batch with no cache, at least one
      (the LRU plan's, :attr:`kvtier.formulas.lru_tier.LruTier.accelerators`).
    - HBM: what each of them has left beside its shard of the weights under the set's placement
      (:attr:`kvtier.scenario.placement.Placed.hbm_left_bytes`), an upper bound.
    - the middle tier: the decision's LRU capacity (``decision.hit_target`` of the achievable hits).
    - NVMe: inclusive, the capacity that catches every achievable hit; exclusive, what the tiers
      above leave of it (so that both hierarchies hold it in all).
    """
    r = analysis.curve(s)
    target = s.v("decision.hit_target")
    n = analysis.lru_plan(s, target)[0].accelerators  # at least one
    # what a block takes in a tier (its stored copies counted); HBM holds every rank's copy whatever the tier does,
    # so where the tier stores once the HBM count below is an upper bound, as its docstring says
    block_bytes = s.tier_bytes_per_token * s.v("workload.block_tokens")
    left = s.hbm_left_bytes
    hbm = int(n * left // block_bytes) if math.isfinite(n) and block_bytes > 0 else 0
    mid, full = r.capacity_for(target), r.capacity_for(1.0)
    return {
        "accelerators": n,
        "block_bytes": block_bytes,
        "hbm_left_bytes": left,
        "target": target,
        hierarchy.INCLUSIVE: [hbm, max(hbm, mid), max(hbm, mid, full)],
        hierarchy.EXCLUSIVE: [hbm, mid, max(full - hbm - mid, 0)],
    }


def hierarchy_replays(s: Scenario) -> dict[str, Any]:
    """Every hierarchy of :data:`HIERARCHIES`, inclusive and exclusive, replayed on the trace and priced (cached).

    Returns ``{"sizes": hierarchy_sizes(s), (middle, mode): (Replay, [TierTraffic], HierarchyCost)}``;
    the recomputation of the reuses no tier serves is priced inside a batch, as the LRU plan's saving is.
    Replayed from the histogram of the stack distances the trace's streamed pass keeps
    (:func:`kvtier.formulas.cache.hierarchy.replay_counts`), bounded whatever the trace's length.
    """
    found = _HIERARCHY_CACHE.get(s)
    if found is not None:
        return found
    sizes = hierarchy_sizes(s)
    streamed, prices = analysis.stream(s), s.tier_prices()
    dist, duration_s = streamed.distances, streamed.curve.duration_s
    hold = tiering.hold_usd_per_byte_s(prices)
    out: dict[Any, Any] = {"sizes": sizes}
    for middle, names in HIERARCHIES.items():
        links = s.tier_links.pick(names)
        media = links.media
        write_bw = np.where(np.array(media) == "nvme", s.v("nvme.write_bandwidth"), links.bandwidth_bytes_per_s)
        for mode in hierarchy.MODES:
            counts = hierarchy.replay_counts(dist.counts, dist.first_refs, sizes[mode], mode)
            traffic = hierarchy.tiers_traffic(
                counts,
                names,
                media,
                sizes["block_bytes"],
                duration_s,
                links.bandwidth_bytes_per_s,
                write_bw,
                links.latency_s,
                # a trace block is fetched as the serving engine's blocks it spans, each in fetch_transfers copies
                s.fetch_transfers * math.ceil(streamed.curve.block_tokens / s.block_tokens),
                np.array([hold[m] for m in media]),
                prices.accelerator_usd_per_s,
                s.v("nvme.endurance_dwpd"),
                s.v("nvme.endurance_period"),
                prices.amortisation_s,
                s.v("fetch.min_transfer_time"),
                s.link_efficiency,
                s.fetch_bytes * s.v("workload.block_tokens") / s.block_tokens,
                overhead_s=s.link_overhead_s,
                drive_bytes=s.v("nvme.drive_capacity"),
            )
            missed_s = dist.seconds_beyond(int(hierarchy.bounds(sizes[mode], mode)[-1]))  # past the last tier
            cost = hierarchy.hierarchy_cost(traffic, missed_s, prices.accelerator_usd_per_s, duration_s)
            out[(middle, mode)] = (counts, traffic, cost)
    _HIERARCHY_CACHE[s] = out
    return out


HIERARCHY_COLUMNS = (
    *named("hierarchy", "mode", "tier", "medium"),
    Column("capacity_GiB", "capacity", "GiB"),
    Column("per_accelerator_GiB", "capacity per accelerator", "GiB"),
    Column("hit_blocks_pct", "hits, share of blocks", "%"),
    Column("read_GBps", "read bandwidth", "GB/s"),
    Column("write_GBps", "write bandwidth", "GB/s"),
    Column("read_busy_pct", "reads busy", "%"),
    Column("write_busy_pct", "writes busy", "%"),
    Column("drive_writes_per_day", "drive writes per day"),
    Column("nvme_wear_pct", "NVMe wear", "%"),
    Column("hold_usd_per_h", "holding", "USD/h"),
    Column("fetch_usd_per_h", "fetching", "USD/h"),
    Column("hierarchy_hit_blocks_pct", "whole hierarchy's hits", "%"),
    Column("hierarchy_usd_per_h", "whole hierarchy's cost", "USD/h"),
    Column("lower_bound_usd_per_h", "lower bound", "USD/h"),
    *named("accelerators", "provenance"),
)
"""The columns of :func:`hierarchy_table`, in words with their units."""


def hierarchy_table(s: Scenario) -> pd.DataFrame:
    """The hierarchy replayed: per hierarchy, kind and tier, its capacity in all and per accelerator, the references
    it serves, the bytes it reads and writes against its device, its wear and its cost; and the whole hierarchy's
    hits and cost per hour against the least-cost mix with perfect knowledge (the lower bound, inside a batch).

    Writes are whole blocks: admissions (a block the tier missed) and, exclusive, demotions (a block pushed down
    from the tier above).  NaN where the trace has no rate (0 s) and for the wear of media that do not wear.
    """
    rep = hierarchy_replays(s)
    sizes = rep["sizes"]
    n = sizes["accelerators"]
    own = str(s.assumptions.value("model"))
    mixes = trace_mixes(s)
    rows = []
    for middle in HIERARCHIES:
        bound = mixes[(own, "batch", HIERARCHY_BOUND[middle])][0]
        for mode in hierarchy.MODES:
            counts, traffic, cost = rep[(middle, mode)]
            for t in traffic:
                rows.append(
                    {
                        "hierarchy": middle,
                        "mode": mode,
                        "tier": t.name,
                        "medium": t.medium,
                        "capacity_GiB": t.capacity_bytes / 2**30,
                        "per_accelerator_GiB": t.capacity_bytes / 2**30 / n if n > 0 else math.nan,
                        "hit_blocks_pct": t.hit_ratio * 100,
                        "read_GBps": t.read_bytes_per_s / 1e9,
                        "write_GBps": t.write_bytes_per_s / 1e9,
                        "read_busy_pct": t.read_busy * 100,
                        "write_busy_pct": t.write_busy * 100,
                        "drive_writes_per_day": t.drive_writes_per_day,
                        "nvme_wear_pct": t.endurance_used * 100,
                        "hold_usd_per_h": t.hold_usd_per_s * 3600,
                        "fetch_usd_per_h": t.fetch_usd_per_s * 3600,
                        "hierarchy_hit_blocks_pct": float(counts.hit_ratio.sum()) * 100,
                        "hierarchy_usd_per_h": cost.usd_per_s * 3600,
                        "lower_bound_usd_per_h": per_h(bound.usd_per_s),
                        "accelerators": n,
                        "provenance": "derived",
                    }
                )
    return declare(pd.DataFrame(rows), HIERARCHY_COLUMNS)


def hierarchy_numbers(s: Scenario) -> dict[str, Any]:
    """The numbers of the hierarchy paragraph: the exclusive host-DRAM hierarchy and its inclusive twin."""
    rep = hierarchy_replays(s)
    sizes = rep["sizes"]
    n = sizes["accelerators"]
    own = str(s.assumptions.value("model"))
    bound = trace_mixes(s)[(own, "batch", HIERARCHY_BOUND["host DRAM"])][0]
    out: dict[str, Any] = {
        "hier_accelerators": n,
        "hier_hbm_left_gib": sizes["hbm_left_bytes"] / 2**30,
        "hier_target_pct": sizes["target"] * 100,
        "hier_lower_bound_usd_per_h": per_h(bound.usd_per_s),
    }
    for mode in hierarchy.MODES:
        counts, traffic, cost = rep[("host DRAM", mode)]
        key = mode[:3]
        for t, label in zip(traffic, ("hbm", "dram", "nvme"), strict=True):
            out[f"hier_{key}_{label}_per_acc_gib"] = t.capacity_bytes / 2**30 / n if n > 0 else math.nan
            out[f"hier_{key}_{label}_hit_pct"] = t.hit_ratio * 100
            out[f"hier_{key}_{label}_write_gbps"] = t.write_bytes_per_s / 1e9
            out[f"hier_{key}_{label}_write_busy_pct"] = t.write_busy * 100
        nv = traffic[-1]
        out[f"hier_{key}_nvme_dwpd"] = nv.drive_writes_per_day
        out[f"hier_{key}_nvme_wear_pct"] = nv.endurance_used * 100
        out[f"hier_{key}_hit_pct"] = float(counts.hit_ratio.sum()) * 100
        out[f"hier_{key}_usd_per_h"] = cost.usd_per_s * 3600
        out[f"hier_{key}_hbm_hold_usd_per_h"] = traffic[0].hold_usd_per_s * 3600  # HBM's share of the hour it holds
    out = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}
    out["hier_sizes_sentence"] = hierarchy_sizes_sentence(out)
    out["hier_result_sentence"] = hierarchy_result_sentence(out)
    return out
