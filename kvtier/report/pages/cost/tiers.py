"""The cost page's LRU tiers: what an LRU tier sized to a hit-ratio target holds, and what it costs, per tier."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from kvtier import analysis
from kvtier.formulas import lru_tier
from kvtier.report.columns import REGIME_LABELS, Column, declare, named, phrase
from kvtier.report.pages.cost.intervals import MEDIA, REGIMES
from kvtier.report.pages.cost.words import lru_nvme_paragraph, lru_paragraph
from kvtier.scenario import Scenario

LRU_TARGETS: tuple[int, ...] = analysis.LRU_TARGETS_PCT
"""The shares of the achievable hit ratio (%) an LRU tier is sized for: the workload page's capacities."""


def lru_plans(s: Scenario) -> dict[tuple[int, str], list[lru_tier.LruTier]]:
    """:func:`kvtier.analysis.lru_plan` for each target of :data:`LRU_TARGETS` and each regime."""
    return {
        (target, regime): analysis.lru_plan(s, target / 100, regime) for target in LRU_TARGETS for regime in REGIMES
    }


LRU_COLUMNS = (
    *named("target", "tier", "medium"),
    Column("capacity_GiB", "capacity", "GiB"),
    Column("hit_blocks_pct", "hits, share of blocks", "%"),
    Column("hold_usd_per_h", "holding", "USD/h"),
    Column("fetch_usd_per_h", "fetching", "USD/h"),
    *(
        Column(f"{name}_{regime}_usd_per_h", phrase(label, REGIME_LABELS[regime]), "USD/h")
        for regime in ("batch", "lone")
        for name, label in (("recompute_avoided", "recompute avoided"), ("saved", "saved"))
    ),
    Column("read_GBps", "read bandwidth", "GB/s"),
    Column("write_GBps", "write bandwidth", "GB/s"),
    Column("device_read_GBps", "device read bandwidth", "GB/s"),
    Column("device_write_GBps", "device write bandwidth", "GB/s"),
    Column("read_busy_pct", "reads busy", "%"),
    Column("write_busy_pct", "writes busy", "%"),
    Column("drive_writes_per_day", "drive writes per day"),
    Column("nvme_wear_pct", "NVMe wear", "%"),
    Column("saved_batch_accelerators", phrase("accelerators saved", REGIME_LABELS["batch"])),
    Column("prefill_batch_accelerators", phrase("accelerators prefilling", REGIME_LABELS["batch"])),
    *named("provenance"),
)
"""The columns of :func:`lru_table`, in words with their units."""


def lru_table(s: Scenario) -> pd.DataFrame:
    """Per hit target and tier: an LRU tier's capacity, holding, fetches, saving in both regimes, reads and writes.

    The capacity is the workload page's for the target and is the tier's peak occupancy; the
    saving is the recomputation of the hits it avoids (the workload page's, in each regime)
    less its fetches and its holding, per hour of the trace; the busy shares set its reads
    (the fetches, latency included) and its writes (every miss admitted once) against one
    device; ``nvme_wear_pct`` is the bytes written over the amortisation period over a drive's
    rated writes in it (NaN for DRAM and CXL memory, and wherever the trace has no rate).
    """
    plans = lru_plans(s)
    rows = []
    for target in LRU_TARGETS:
        for batch, lone in zip(plans[(target, "batch")], plans[(target, "lone")], strict=True):
            rows.append(
                {
                    "target": f"{target}%",
                    "tier": batch.tier,
                    "medium": batch.medium,
                    "capacity_GiB": batch.capacity_bytes / 2**30,
                    "hit_blocks_pct": batch.hit_ratio * 100,
                    "hold_usd_per_h": batch.hold_usd_per_s * 3600,
                    "fetch_usd_per_h": batch.fetch_usd_per_s * 3600,
                    "recompute_avoided_batch_usd_per_h": batch.recompute_avoided_usd_per_s * 3600,
                    "saved_batch_usd_per_h": batch.saved_usd_per_s * 3600,
                    "recompute_avoided_lone_usd_per_h": lone.recompute_avoided_usd_per_s * 3600,
                    "saved_lone_usd_per_h": lone.saved_usd_per_s * 3600,
                    "read_GBps": batch.read_bytes_per_s / 1e9,
                    "write_GBps": batch.write_bytes_per_s / 1e9,
                    "device_read_GBps": batch.read_bandwidth_bytes_per_s / 1e9,
                    "device_write_GBps": batch.write_bandwidth_bytes_per_s / 1e9,
                    "read_busy_pct": batch.read_busy * 100,
                    "write_busy_pct": batch.write_busy * 100,
                    "drive_writes_per_day": batch.drive_writes_per_day,
                    "nvme_wear_pct": batch.endurance_used * 100,
                    "saved_batch_accelerators": batch.saved_accelerators,
                    "prefill_batch_accelerators": batch.prefill_accelerators,
                    "provenance": "derived",
                }
            )
    return declare(pd.DataFrame(rows), LRU_COLUMNS)


def lru_at(plan: list[lru_tier.LruTier], medium: str) -> lru_tier.LruTier:
    """The tier of an LRU plan held in ``medium``."""
    return next(t for t in plan if t.medium == medium)


def lru_numbers(s: Scenario, mix: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers and sentences of the LRU part: the tier to buy, what it costs and saves, NVMe's writes.

    ``mix`` holds the lower bound's figures (:func:`mix_numbers`) the sentences set the LRU tier against.
    """
    plans = lru_plans(s)
    out: dict[str, Any] = {"lru_target_low": LRU_TARGETS[0], "lru_target_high": LRU_TARGETS[-1]}
    # the LRU tier that serves every reuse an infinite cache would: its capacity at 100 % of the achievable hits
    streamed = analysis.curve(s)
    out["lru_all_gib"] = float(streamed.capacity_for(1.0)) * s.tier_bytes_per_token * streamed.block_tokens / 2**30
    for target in LRU_TARGETS:
        plan = plans[(target, "batch")]
        lone = plans[(target, "lone")]
        best = max(plan, key=lambda t: t.saved_usd_per_s)  # NaN compares False: the first
        out[f"lru{target}_best_tier"] = best.tier
        out[f"lru{target}_best_medium"] = MEDIA[best.medium]
        out[f"lru{target}_tib"] = best.capacity_bytes / 2**40
        out[f"lru{target}_gib"] = best.capacity_bytes / 2**30
        out[f"lru{target}_hit_pct"] = best.hit_ratio * 100
        out[f"lru{target}_saved_accelerators"] = best.saved_accelerators
        out[f"lru{target}_prefill_accelerators"] = best.prefill_accelerators
        for m in ("dram", "cxl", "nvme"):
            t, tl = lru_at(plan, m), lru_at(lone, m)
            out[f"lru{target}_{m}_hold_usd_per_h"] = t.hold_usd_per_s * 3600
            out[f"lru{target}_{m}_fetch_usd_per_h"] = t.fetch_usd_per_s * 3600
            out[f"lru{target}_{m}_cost_usd_per_h"] = (t.hold_usd_per_s + t.fetch_usd_per_s) * 3600
            out[f"lru{target}_{m}_avoided_usd_per_h"] = t.recompute_avoided_usd_per_s * 3600
            out[f"lru{target}_{m}_saved_usd_per_h"] = t.saved_usd_per_s * 3600
            out[f"lru{target}_{m}_saved_lone_usd_per_h"] = tl.saved_usd_per_s * 3600
            out[f"lru{target}_{m}_read_busy_pct"] = t.read_busy * 100
            out[f"lru{target}_{m}_write_busy_pct"] = t.write_busy * 100
        nv = lru_at(plan, "nvme")
        out[f"lru{target}_read_gbps"] = nv.read_bytes_per_s / 1e9
        out[f"lru{target}_write_gbps"] = nv.write_bytes_per_s / 1e9
        out[f"lru{target}_dwpd"] = nv.drive_writes_per_day
        out[f"lru{target}_nvme_wear_pct"] = nv.endurance_used * 100
        drives = nv.drives
        for what in ("count", "for_capacity", "for_bandwidth", "for_endurance"):
            out[f"lru{target}_nvme_drives_{what}"] = math.nan if drives is None else getattr(drives, what)
        out[f"lru{target}_nvme_wearout_days"] = math.nan if drives is None else drives.wearout_s / 86400
    out["nvme_write_text"] = s.a("nvme.write_bandwidth").text
    out["nvme_dwpd_text"] = s.a("nvme.endurance_dwpd").text
    out["nvme_period_text"] = s.a("nvme.endurance_period").text
    out["nvme_drive_text"] = s.a("nvme.drive_capacity").text
    out["amortisation_text"] = s.a("cost.amortisation").text
    clean = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}
    clean["lru_paragraph"] = lru_paragraph(clean, mix)
    clean["lru_nvme_paragraph"] = lru_nvme_paragraph(clean, mix)
    return clean
