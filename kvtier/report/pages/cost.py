"""The cost page (``notebooks/13_cost.md``): how long a KV block is worth keeping in each tier.

The five-minute rule for KV caches (:mod:`kvtier.formulas.economics`): a block is worth holding in
a tier while its next use comes sooner than the cost of re-obtaining it (recomputing it,
in either regime, or fetching it from a slower tier) divided by the cost of holding its
bytes there for a second, in dollars and in joules.  Every link preset is a tier; the
medium behind it (HBM, host DRAM, a CXL expander, NVMe flash) sets its holding cost.
With the workload page's trace (:mod:`kvtier.formulas.reuse`), each reuse of a block is served the
cheapest way, which gives the GiB each tier must hold at the trace's rate and the mix's
cost per hour against recomputing every reuse, for several models.  A trace with no reuse
has nothing to cache (the mix is empty and costs nothing); one that lasts 0 s has no GiB
held or cost per hour, only costs over the whole trace; the page says which in words.

The arithmetic is the tier-pricing model's (:mod:`kvtier.formulas.tiering`, in SI units, its
inputs gathered by the scenario); this page converts its values to display units, lays them
out in tables and figures and says what they mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import PurePath
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import numpy as np
import pandas as pd

from kvtier.formulas import economics, tiering
from kvtier.formulas.cache import hierarchy
from kvtier.formulas.cache.curve import LruHistogram, counted_percentiles
from kvtier.inputs import measurements as ms
from kvtier.inputs.assumptions import COST_RANGES, SCHEMA, TIER_LATENCY_KEYS
from kvtier.report import words
from kvtier.report.figures import MIN_FONT_PT, PALETTE, finish, new_figure
from kvtier.report.words import no_duration, nothing_to_cache
from kvtier.scenario import FORWARD_KEYS, PLACEMENT_KEYS, TORNADO_KEYS, TRANSFER_KEYS, Scenario
from kvtier.units import format_number, format_time

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "13_cost"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "what it costs"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (
    "block_tokens",
    "cost.accelerator_hour",
    "cost.accelerator_hour_high",
    "cost.accelerator_hour_low",
    "cost.amortisation",
    "cost.amortisation_high",
    "cost.amortisation_low",
    "cost.cxl_gb",
    "cost.cxl_gb_high",
    "cost.cxl_gb_low",
    "cost.dram_gb",
    "cost.dram_gb_high",
    "cost.dram_gb_low",
    "cost.energy_kwh",
    "cost.energy_kwh_high",
    "cost.energy_kwh_low",
    "cost.hbm_capacity",
    "cost.hbm_share",
    "cost.hbm_share_high",
    "cost.hbm_share_low",
    "cost.large_block_tokens",
    "cost.nvme_gb",
    "cost.nvme_gb_high",
    "cost.nvme_gb_low",
    "decision.hit_target",
    "energy.dram_w_per_gb",
    "energy.dram_w_per_gb_high",
    "energy.dram_w_per_gb_low",
    "reference.h200_forward16_energy",
    "energy.nvme_w_per_gb",
    "energy.nvme_w_per_gb_high",
    "energy.nvme_w_per_gb_low",
    "energy.power_batch",
    "energy.power_lone",
    "engine",
    "fetch_layout",
    "flops_per_param_token",
    "illustrative.mfu",
    "interior.anchor_every",
    "kv_dtype",
    "mfu.conservative",
    "mfu.optimistic",
    "mfu.typical",
    "model",
    "nvme.endurance_dwpd",
    "nvme.endurance_period",
    "nvme.write_bandwidth",
    "param_count",
    "peak_flops",
    *FORWARD_KEYS,
    *TRANSFER_KEYS,
    "weight_dtype",
    "workload.block_tokens",
    "workload.trace",
    "workload.trace_format",
    "workload.hit_count",
    *TIER_LATENCY_KEYS,
    *PLACEMENT_KEYS,
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""

REGIMES: dict[str, str] = {"lone": "regenerated alone", "batch": "regenerated inside a batch"}
"""The regimes of regeneration (:data:`kvtier.formulas.tiering.REGIMES`) in words, by the names the tables use."""

MEDIA: dict[str, str] = {"hbm": "HBM", "dram": "host DRAM", "cxl": "CXL expander", "nvme": "NVMe flash"}
"""The media a tier holds its blocks in (:data:`kvtier.formulas.tiering.MEDIA`) in words."""

CXL_TIER = tiering.CXL_TIER
"""The tier the tornado follows: a CXL 2.0 x8 expander, the interface of those shipping today."""

YEAR_S = 365.25 * 86400.0


def duration(seconds: float) -> str:
    """A holding interval for reading, in the largest unit up to years, three significant figures.

    Years from one year on, days from two days on, then :func:`kvtier.units.format_time`'s
    units: ``"28.8 h"``, ``"49.2 d"``, ``"26.6 min"``; ``"0 s"`` for a block never worth holding.
    """
    if seconds <= 0:
        return "0 s"
    for unit, size, start in (("y", YEAR_S, YEAR_S), ("d", 86400.0, 2 * 86400.0), ("h", 3600.0, 3600.0)):
        if seconds >= start:
            return f"{format_number(seconds / size, 3)} {unit}"
    for unit, size in (("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= size:
            return f"{format_number(seconds / size, 3)} {unit}"
    return format_time(seconds)


def _nan(x: float | None) -> float:
    """``x``, or NaN (a table's n/a) where the model leaves it undefined (``None``)."""
    return math.nan if x is None else float(x)


def mfu(s: Scenario) -> float:
    """The illustrative MFU bracket's value (fraction): the MFU both regimes run at here."""
    return s.mfu(str(s.assumptions.value("illustrative.mfu")))


def block_sizes(s: Scenario) -> tuple[int, int]:
    """The two block sizes priced: the set's own and ``cost.large_block_tokens``."""
    return s.block_tokens, int(s.v("cost.large_block_tokens"))


def intervals(s: Scenario, overrides: Mapping[str, float] | None = None) -> dict[tuple[int, str], tiering.Intervals]:
    """The tier model's intervals for both block sizes and regimes (:func:`kvtier.formulas.tiering.interval_grid`).

    ``overrides`` replaces some prices, by assumption key, in SI base units.
    """
    return tiering.interval_grid(s.tier_prices(overrides), s.tier_links, s.cost_blocks)


def long_table(s: Scenario, overrides: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Every tier x block size x regime: the costs of holding, fetching and recomputing, and the intervals.

    :func:`intervals` in display units (MiB, µs, ms, USD per GB-hour, mW per GB); the
    intervals stay in seconds.
    """
    parts = []
    for (tokens, regime), iv in intervals(s, overrides).items():
        n = len(iv.tiers)
        parts.append(
            pd.DataFrame(
                {
                    "tier": list(iv.tiers),
                    "medium": list(iv.media),
                    "block_tokens": [tokens] * n,
                    "regime": [regime] * n,
                    "block_MiB": [iv.block.block_bytes / 2**20] * n,
                    "fetch_us": iv.fetch_s * 1e6,
                    "regen_ms": [iv.regen_s * 1e3] * n,
                    "hold_usd_per_GB_h": iv.hold_usd_per_byte_s * 1e9 * 3600,
                    "hold_mW_per_GB": iv.hold_w_per_byte * 1e9 * 1e3,
                    "recompute_usd": [iv.recompute_usd] * n,
                    "fetch_usd": iv.fetch_usd,
                    "recompute_J": [iv.recompute_j] * n,
                    "keep_usd_s": iv.keep_usd_s,
                    "keep_J_s": iv.keep_j_s,
                    "hbm_over_tier_s": iv.hbm_over_tier_s,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def table(s: Scenario) -> pd.DataFrame:
    """One row per tier: its holding costs and how long a block is worth keeping there, both regimes, both sizes.

    ``keep_usd_S_R_h`` is the dollar interval (hours) for the ``small`` block (the set's
    ``block_tokens``) or the ``large`` one (``cost.large_block_tokens``) in regime ``R``
    (``lone`` or ``batch``); ``keep_J_S_R_h`` the same in joules; ``hbm_over_tier_S_s`` how
    long such a block is worth keeping in HBM rather than fetching it from this tier (Gray's
    form, seconds, the same in both regimes).
    """
    df = long_table(s)
    small, large = block_sizes(s)
    out = df[(df["block_tokens"] == small) & (df["regime"] == "lone")][
        ["tier", "medium", "hold_usd_per_GB_h", "hold_mW_per_GB", "fetch_us"]
    ].reset_index(drop=True)
    # per TB and month (a twelfth of a year), so that no price needs more than five decimals
    out.insert(2, "hold_usd_per_TB_month", out.pop("hold_usd_per_GB_h") * 1e3 * YEAR_S / 12 / 3600)
    for tokens, label in ((small, "small"), (large, "large")):
        for regime in REGIMES:
            part = df[(df["block_tokens"] == tokens) & (df["regime"] == regime)].reset_index(drop=True)
            out[f"keep_usd_{label}_{regime}_h"] = part["keep_usd_s"] / 3600
            out[f"keep_J_{label}_{regime}_h"] = part["keep_J_s"] / 3600
        part = df[(df["block_tokens"] == tokens) & (df["regime"] == "lone")].reset_index(drop=True)
        out[f"hbm_over_tier_{label}_s"] = part["hbm_over_tier_s"]
    return out


def block_table(s: Scenario) -> pd.DataFrame:
    """Per block size and regime: regeneration time, and what one recomputation costs in dollars and joules."""
    df = long_table(s)
    rows = df[df["tier"] == "hbm"][["block_tokens", "regime", "block_MiB", "regen_ms", "recompute_usd", "recompute_J"]]
    out = rows.drop_duplicates(["block_tokens", "regime"]).reset_index(drop=True)
    # per million recomputations, so that no price needs more than five decimals
    out.insert(4, "recompute_usd_per_1M", out.pop("recompute_usd") * 1e6)
    return out


def inputs_table(s: Scenario) -> pd.DataFrame:
    """The cost and energy inputs: value, range, provenance, basis and source, as the assumption set holds them."""
    rows = []
    for key in (
        *COST_RANGES,
        "cost.hbm_capacity",
        "energy.power_lone",
        "energy.power_batch",
        "reference.h200_forward16_energy",
    ):
        rec = s.a(key)
        ranged = key in COST_RANGES
        rows.append(
            {
                "input": key,
                "value": rec.text,
                "low": s.a(f"{key}_low").text if ranged else "",
                "high": s.a(f"{key}_high").text if ranged else "",
                "provenance": rec.provenance,
                "what": SCHEMA[key].help,
                "basis": rec.basis,
                "source": rec.source,
            }
        )
    return pd.DataFrame(rows)


def tornado(s: Scenario) -> list[dict[str, float | str | None]]:
    """The interval tornado (:func:`kvtier.formulas.tiering.interval_tornado`): the CXL tier, the set's block, lone."""
    return tiering.interval_tornado(
        s.tier_prices(), s.price_ends(TORNADO_KEYS), s.tier_links, s.tier_block(), CXL_TIER, "lone"
    )


def tornado_table(s: Scenario) -> pd.DataFrame:
    """Each price (and the board power) at its low and high end, the others held: the CXL tier's intervals (h).

    The board power swings from the measured lone-block power to the datasheet TDP.
    """
    ranges = s.price_ranges(TORNADO_KEYS)
    rows = []
    for r in tornado(s):
        key = str(r["input"])
        row: dict[str, Any] = {"input": key, "low_si": ranges[key][0], "high_si": ranges[key][1]}
        for unit, col in (("usd", "usd"), ("j", "J")):
            for end in ("at_low", "at_high", "base"):
                row[f"keep_{col}_{end}_h"] = _nan(r[f"keep_{unit}_{end}_s"]) / 3600
            row[f"swing_{col}"] = _nan(r[f"swing_{unit}"])
        rows.append(row)
    return pd.DataFrame(rows)


def numbers(s: Scenario) -> dict[str, Any]:
    """The page's numbers: block costs, the CXL and HBM intervals, the tornado's verdict, the trace's mix.

    A figure a trace leaves undefined (a rate of a trace that lasts 0 s, a share of no reuse)
    is ``None``, never NaN; the prose quotes the sentences that say why.
    """
    grid = intervals(s)
    small, large = block_sizes(s)
    out: dict[str, Any] = {
        "small_tokens": small,
        "large_tokens": large,
        "mfu_pct": mfu(s) * 100,
        "lone_device": words.lone_device(s),
        "n_tiers": len(grid[(small, "lone")].tiers),
        "accelerator_hour_text": s.a("cost.accelerator_hour").text,
        "hbm_share_pct": s.v("cost.hbm_share") * 100,
        "hbm_capacity_text": s.a("cost.hbm_capacity").text,
        "forward16_measured_j": s.v("reference.h200_forward16_energy"),
        "power_lone_w": s.v("energy.power_lone"),
        "power_batch_w": s.v("energy.power_batch"),
    }
    for tokens, label in ((small, "small"), (large, "large")):
        for regime in REGIMES:
            iv = grid[(tokens, regime)]
            out[f"{label}_{regime}_regen_ms"] = iv.regen_s * 1e3
            out[f"{label}_{regime}_recompute_usd"] = iv.recompute_usd
            out[f"{label}_{regime}_recompute_j"] = iv.recompute_j
            for unit in ("usd", "j"):
                for tier in ("hbm", CXL_TIER, "pcie5-x16", "nvme-gen4-x4"):
                    name = tier.replace("-", "_")
                    out[f"{label}_{regime}_{name}_keep_{unit}"] = duration(iv.at(tier)[f"keep_{unit}_s"])
    out["large_lone_bound"] = grid[(large, "lone")].block.bound_in("lone")
    out["small_lone_model_j"] = out["small_lone_recompute_j"]
    off = (out["small_lone_recompute_j"] / out["forward16_measured_j"] - 1) * 100
    out["energy_model_vs_measured_pct"] = off
    out["energy_model_vs_measured"] = f"{abs(off):.1f} % {'below' if off < 0 else 'above'}"
    held = ms.energy_check(ms.load())
    out["energy_held_out"] = (
        f"{abs(held['held_out_error_pct']):.1f} % {'below' if held['held_out_error_pct'] < 0 else 'above'}"
    )
    out["energy_held_out_j"] = held["held_out_measured_j"]
    small_lone = grid[(small, "lone")]
    out["hbm_over_cxl"] = duration(small_lone.at(CXL_TIER)["hbm_over_tier_s"])
    out["hbm_over_nvme"] = duration(small_lone.at("nvme-gen4-x4")["hbm_over_tier_s"])
    t = tornado(s)
    top, second = t[0], t[1]
    out["tornado_top_key"] = str(top["input"])
    out["tornado_top_words"] = SCHEMA[str(top["input"])].help
    out["tornado_top_words_cap"] = out["tornado_top_words"][0].upper() + out["tornado_top_words"][1:]
    out["tornado_top_swing"] = _nan(top["swing_usd"])
    ends = (_nan(top["keep_usd_at_low_s"]), _nan(top["keep_usd_at_high_s"]))
    out["tornado_top_low"] = duration(min(ends))
    out["tornado_top_high"] = duration(max(ends))
    out["tornado_second_key"] = str(second["input"])
    out["tornado_second_words"] = SCHEMA[str(second["input"])].help
    out["tornado_second_swing"] = _nan(second["swing_usd"])
    jt = max(t, key=lambda r: -math.inf if r["swing_j"] is None else r["swing_j"])  # the first of the widest
    out["tornado_top_j_key"] = str(jt["input"])
    out["tornado_top_j_words"] = SCHEMA[str(jt["input"])].help
    out["tornado_top_j_swing"] = _nan(jt["swing_j"])
    out["cxl_shortest_keep"] = duration(min(iv.at(CXL_TIER)["keep_usd_s"] for iv in grid.values()))
    out.update(mix_numbers(s))
    out.update(lru_numbers(s, out))
    out.update(hierarchy_numbers(s))
    out["mix_finding_sentence"] = _finding_sentence(out)
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}


# ---- a realistic tier: LRU, sized for a hit target -------------------------------------------

LRU_TARGETS: tuple[int, ...] = (90, 95)
"""The shares of the achievable hit ratio (%) an LRU tier is sized for: the workload page's capacities."""


def lru_plans(s: Scenario) -> dict[tuple[int, str], list[tiering.LruTier]]:
    """:meth:`kvtier.scenario.Scenario.lru_plan` for each target of :data:`LRU_TARGETS` and each regime."""
    return {(target, regime): s.lru_plan(target / 100, regime) for target in LRU_TARGETS for regime in REGIMES}


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
    return pd.DataFrame(rows)


def _lru_at(plan: list[tiering.LruTier], medium: str) -> tiering.LruTier:
    return next(t for t in plan if t.medium == medium)


def lru_numbers(s: Scenario, mix: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers and sentences of the LRU part: the tier to buy, what it costs and saves, NVMe's writes.

    ``mix`` holds the lower bound's figures (:func:`mix_numbers`) the sentences set the LRU tier against.
    """
    plans = lru_plans(s)
    out: dict[str, Any] = {"lru_target_low": LRU_TARGETS[0], "lru_target_high": LRU_TARGETS[-1]}
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
            t, tl = _lru_at(plan, m), _lru_at(lone, m)
            out[f"lru{target}_{m}_hold_usd_per_h"] = t.hold_usd_per_s * 3600
            out[f"lru{target}_{m}_fetch_usd_per_h"] = t.fetch_usd_per_s * 3600
            out[f"lru{target}_{m}_cost_usd_per_h"] = (t.hold_usd_per_s + t.fetch_usd_per_s) * 3600
            out[f"lru{target}_{m}_avoided_usd_per_h"] = t.recompute_avoided_usd_per_s * 3600
            out[f"lru{target}_{m}_saved_usd_per_h"] = t.saved_usd_per_s * 3600
            out[f"lru{target}_{m}_saved_lone_usd_per_h"] = tl.saved_usd_per_s * 3600
            out[f"lru{target}_{m}_read_busy_pct"] = t.read_busy * 100
            out[f"lru{target}_{m}_write_busy_pct"] = t.write_busy * 100
        nv = _lru_at(plan, "nvme")
        out[f"lru{target}_read_gbps"] = nv.read_bytes_per_s / 1e9
        out[f"lru{target}_write_gbps"] = nv.write_bytes_per_s / 1e9
        out[f"lru{target}_dwpd"] = nv.drive_writes_per_day
        out[f"lru{target}_nvme_wear_pct"] = nv.endurance_used * 100
    out["nvme_write_text"] = s.a("nvme.write_bandwidth").text
    out["nvme_dwpd_text"] = s.a("nvme.endurance_dwpd").text
    out["nvme_period_text"] = s.a("nvme.endurance_period").text
    out["amortisation_text"] = s.a("cost.amortisation").text
    clean = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}
    clean["lru_paragraph"] = _lru_paragraph(clean, mix)
    clean["lru_nvme_paragraph"] = _lru_nvme_paragraph(clean, mix)
    return clean


def _more_or_less(a: float, b: float) -> str:
    """``a`` against ``b`` in words: 'more than', 'less than' or 'as much as'."""
    return "more than" if a > b else "less than" if a < b else "as much as"


def _lru_paragraph(n: Mapping[str, Any], mix: Mapping[str, Any]) -> str:
    """The LRU tier to buy for the trace, its cost and saving against the lower bound; or why there is none."""
    hi, lo = n["lru_target_high"], n["lru_target_low"]
    if mix["mix_empty"]:
        return (
            f"With nothing to cache ({mix['mix_empty']}) an LRU tier of any size hits nothing: there is no tier to buy."
        )
    if n[f"lru{hi}_dram_saved_usd_per_h"] is None:
        return (
            f"An LRU tier for {hi} % of the achievable hits holds {n[f'lru{hi}_tib']:.2f} TiB, but"
            f" {mix['mix_still']}, so it has no cost or saving per hour."
        )
    m = n[f"lru{lo}_best_medium"]
    key = {v: k for k, v in MEDIA.items()}[m]
    bound = mix["mix_peak_total_gib"]
    return (
        f"An LRU tier that catches {lo} % of the hits an infinite cache would catches"
        f" {n[f'lru{lo}_hit_pct']:.1f} % of all block references and needs {n[f'lru{lo}_tib']:.2f} TiB, full from"
        f" the moment it has filled, so that is also its peak occupancy; {hi} % needs {n[f'lru{hi}_tib']:.2f} TiB."
        f" Built in {m}, the {lo} % tier costs {n[f'lru{lo}_{key}_cost_usd_per_h']:.3g} USD an hour to hold and"
        f" fetch from, and saves {n[f'lru{lo}_{key}_saved_usd_per_h']:.3g} USD an hour net against recomputing its"
        f" hits inside a batch ({n[f'lru{lo}_{key}_saved_lone_usd_per_h']:.3g} as lone passes): the prefill of"
        f" {n[f'lru{lo}_saved_accelerators']:.1f} accelerators, out of the {n[f'lru{lo}_prefill_accelerators']:.1f}"
        f" the trace's prefill keeps busy inside a batch with no cache. The cheapest mix with perfect knowledge of"
        f" each block's next use, the lower bound below, peaks at {bound:,.0f} GiB and costs"
        f" {mix['mix_usd_per_h']:.3g} USD an hour: an LRU tier that cannot see the future needs"
        f" {n[f'lru{lo}_gib'] / bound:.1f} times the bytes."
        if bound
        else f"An LRU tier that catches {lo} % of the hits an infinite cache would needs {n[f'lru{lo}_tib']:.2f} TiB."
    )


def _lru_nvme_paragraph(n: Mapping[str, Any], mix: Mapping[str, Any]) -> str:
    """What an NVMe LRU tier reads, writes and wears; or why the trace gives none of it."""
    hi = n["lru_target_high"]
    if mix["mix_empty"]:
        return "It reads nothing back, so there is no traffic to set against a drive."
    if n[f"lru{hi}_write_gbps"] is None or n[f"lru{hi}_nvme_wear_pct"] is None:
        return "With no rate per second there is no read or write traffic to set against a drive."
    read, write = n[f"lru{hi}_nvme_read_busy_pct"], n[f"lru{hi}_nvme_write_busy_pct"]
    wear = n[f"lru{hi}_nvme_wear_pct"]
    verdict = "one drive cannot keep up with the writes" if write > 100 else "one drive keeps up with the writes"
    lasts = "wears out before it is written off" if wear > 100 else "outlasts its write-off"
    return (
        f"Reads are not the whole traffic. An LRU tier admits every block it misses, so the {hi} % tier reads"
        f" {n[f'lru{hi}_read_gbps']:.2f} GB/s of hits and writes {n[f'lru{hi}_write_gbps']:.2f} GB/s of new blocks,"
        f" {_more_or_less(n[f'lru{hi}_write_gbps'], n[f'lru{hi}_read_gbps'])} it reads. On one NVMe Gen4 x4 drive"
        f" the reads keep its link {read:.1f} % busy and the writes {write:.1f} % of its"
        f" {n['nvme_write_text']} sequential write: {verdict}. Written over {n[f'lru{hi}_dwpd']:,.0f} times a day,"
        f" against a rating of {n['nvme_dwpd_text']} drive writes a day for {n['nvme_period_text']}, the flash"
        f" {lasts}: over the {n['amortisation_text']} amortisation it takes {wear:,.0f} % of its rated writes."
        f" In host DRAM the same writes keep the PCIe link's other direction {n[f'lru{hi}_dram_write_busy_pct']:.1f} %"
        " busy, and DRAM does not wear."
    )


# ---- the hierarchy replayed: HBM, then host DRAM or CXL, then NVMe ---------------------------

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

    - ``accelerators``: those the trace's prefill keeps busy inside a batch with no cache (the LRU
      plan's, :attr:`kvtier.formulas.tiering.LruTier.prefill_accelerators`).
    - HBM: what each of them has left beside its shard of the weights
      (:func:`kvtier.formulas.hierarchy.hbm_left_bytes` of ``cost.hbm_capacity``), an upper bound.
    - the middle tier: the decision's LRU capacity (``decision.hit_target`` of the achievable hits).
    - NVMe: inclusive, the capacity that catches every achievable hit; exclusive, what the tiers
      above leave of it (so that both hierarchies hold it in all).
    """
    r = s.trace_curve()
    target = s.v("decision.hit_target")
    n = s.lru_plan(target)[0].prefill_accelerators
    block_bytes = s.kv_bytes_per_token * s.v("workload.block_tokens")
    left = hierarchy.hbm_left_bytes(s.v("cost.hbm_capacity"), s.weight_bytes)
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
    (:func:`kvtier.formulas.hierarchy.replay_counts`), bounded whatever the trace's length.
    """
    found = _HIERARCHY_CACHE.get(s)
    if found is not None:
        return found
    sizes = hierarchy_sizes(s)
    streamed, prices = s.trace_stream(), s.tier_prices()
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
                s.fetch_transfers,
                np.array([hold[m] for m in media]),
                prices.accelerator_usd_per_s,
                s.v("nvme.endurance_dwpd"),
                s.v("nvme.endurance_period"),
                prices.amortisation_s,
                s.v("fetch.min_transfer_time"),
                s.link_efficiency,
                sizes["block_bytes"] * s.fetch_bytes / s.block_bytes,
                overhead_s=s.link_overhead_s,
            )
            missed_s = dist.seconds_beyond(int(hierarchy.bounds(sizes[mode], mode)[-1]))  # past the last tier
            cost = hierarchy.hierarchy_cost(traffic, missed_s, prices.accelerator_usd_per_s, duration_s)
            out[(middle, mode)] = (counts, traffic, cost)
    _HIERARCHY_CACHE[s] = out
    return out


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
                        "lower_bound_usd_per_h": _per_h(bound.usd_per_s),
                        "accelerators": n,
                        "provenance": "derived",
                    }
                )
    return pd.DataFrame(rows)


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
        "hier_lower_bound_usd_per_h": _per_h(bound.usd_per_s),
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
    out = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}
    out["hier_sizes_sentence"] = _hierarchy_sizes_sentence(out)
    out["hier_result_sentence"] = _hierarchy_result_sentence(out)
    return out


def _hierarchy_sizes_sentence(n: Mapping[str, Any]) -> str:
    """How the hierarchy's tiers are sized, in words; a trace with no rate has no accelerator count to size HBM by."""
    middle = (
        f"the middle tier is the decision's LRU tier ({n['hier_target_pct']:g} % of the achievable hits), and NVMe"
        " takes the rest of what catches every achievable hit. Blocks move whole."
    )
    if n["hier_accelerators"] is None or n["hier_hbm_left_gib"] is None:
        return f"The trace has no rate per second, so no count of busy accelerators sizes HBM; {middle}"
    return (
        f"Per accelerator of the {n['hier_accelerators']:,.1f} the trace's prefill keeps busy, HBM gives the prefix"
        f" cache what it has left beside its shard of the weights, at most {n['hier_hbm_left_gib']:,.1f} GiB; {middle}"
    )


def _hierarchy_result_sentence(n: Mapping[str, Any]) -> str:
    """What the exclusive and inclusive host-DRAM hierarchies serve, write and cost (words for an undefined rate)."""
    served = (
        f"Exclusive, with host DRAM in the middle, HBM serves {n['hier_exc_hbm_hit_pct']:.1f} % of the block"
        f" references, host DRAM {n['hier_exc_dram_hit_pct']:.1f} % and NVMe {n['hier_exc_nvme_hit_pct']:.1f} %"
        f" ({n['hier_exc_hit_pct']:.1f} % in all)."
    )
    rates = ("hier_exc_nvme_write_gbps", "hier_exc_nvme_write_busy_pct", "hier_inc_nvme_write_gbps")
    if any(n[k] is None for k in (*rates, "hier_exc_usd_per_h", "hier_inc_usd_per_h")):
        return (
            f"{served} The trace lasts 0 s, so the tiers' write bandwidths and the hierarchies' hourly costs are not"
            " defined."
        )
    if n["hier_exc_nvme_dwpd"] is None or n["hier_inc_nvme_dwpd"] is None:
        writes = (
            f"NVMe is sized at nothing (every achievable hit is caught above it), so it writes"
            f" {n['hier_exc_nvme_write_gbps']:.2f} GB/s"
        )
    else:
        writes = (
            f"The demotions make NVMe write {n['hier_exc_nvme_write_gbps']:.2f} GB/s"
            f" ({n['hier_exc_nvme_write_busy_pct']:,.0f} % of one drive's sequential write, its capacity over"
            f" {n['hier_exc_nvme_dwpd']:,.1f} times a day); inclusive, NVMe writes {n['hier_inc_nvme_write_gbps']:.2f}"
            f" GB/s, {n['hier_inc_nvme_dwpd']:,.1f} drive writes a day"
        )
    bound = n["hier_lower_bound_usd_per_h"]
    against = (
        f"against {bound:,.2f} for the least-cost mix with perfect knowledge of each block's next use, the lower bound"
        " above"
        if bound is not None
        else "with no lower bound to compare (the trace's mix has no cost per hour)"
    )
    return (
        f"{served} {writes}. Holding, fetching and recomputing what it misses, the exclusive hierarchy costs"
        f" {n['hier_exc_usd_per_h']:,.2f} USD an hour, the inclusive one {n['hier_inc_usd_per_h']:,.2f}, {against}."
    )


# ---- meeting the workload: the tier mix a trace calls for ----------------------------------

MIX_MODELS = ("llama-3-70b", "llama-3-8b", "deepseek-v3")
"""The models the mix is set out for, besides the set's own."""

LADDERS = tiering.LADDERS
"""The tiers a block may be served from, fastest first: with room in host DRAM, and with none left."""

MIX_MEDIA = tiering.MIX_MEDIA
"""The ways a mix serves a reuse, by medium, recomputation last."""


def mix_models(s: Scenario) -> tuple[str, ...]:
    """The set's model first, then the others of :data:`MIX_MODELS`."""
    own = str(s.assumptions.value("model"))
    return (own, *(m for m in MIX_MODELS if m != own))


def model_label(model: str) -> str:
    """A model for a figure label: a preset's name, or a config file's folder (``my-model (config.json)``)."""
    if model.endswith(".json") or "/" in model or "\\" in model:
        path = PurePath(model)
        return f"{path.parent.name or path.stem} ({path.name})"
    return model


def trace_mixes(
    s: Scenario, models: tuple[str, ...] | None = None
) -> dict[tuple[str, str, str], tuple[economics.Mix, tiering.Block]]:
    """Every least-cost mix the page sets out, by (model, regime, ladder), with the block it priced.

    The mixes of :meth:`kvtier.scenario.Scenario.trace_stream` (each reuse's interval and
    recompute cost tallied as the trace streams past) for ``models`` (:func:`mix_models` by default).
    """
    models = mix_models(s) if models is None else models
    streamed = s.trace_stream([t / 100 for t in LRU_TARGETS], models)
    return {
        (model, regime, ladder): (streamed.mixes[(model, regime, ladder)], s.mix_block(model))
        for model in models
        for regime in REGIMES
        for ladder in LADDERS
    }


def _per_h(usd_per_s: float | None) -> float:
    """USD/s as USD/h; NaN (a table's n/a) where the rate is undefined (a trace of 0 s)."""
    return math.nan if usd_per_s is None else usd_per_s * 3600


def _mix_row(model: str, regime: str, ladder: str, mix: economics.Mix, block: tiering.Block) -> dict[str, Any]:
    """One row of :func:`mix_table`; NaN where the trace leaves a figure undefined."""
    row: dict[str, Any] = {"model": model, "regime": regime, "ladder": ladder, "block_MiB": block.block_bytes / 2**20}
    share = tiering.by_medium(mix.share, LADDERS[ladder])
    for m in MIX_MEDIA:  # no reuse: nothing to share out
        row[f"share_{m}_pct"] = share[m] * 100 if mix.has_reuse else math.nan
    held = mix.bytes_held
    gib = tiering.by_medium(held, LADDERS[ladder]) if held is not None else {}
    for m in MIX_MEDIA[:-1]:  # a trace of 0 s: no mean over time
        row[f"{m}_GiB"] = gib[m] / 2**30 if gib else math.nan
    peak = tiering.by_medium(mix.peak_bytes_held, LADDERS[ladder]) if mix.peak_bytes_held is not None else {}
    for m in MIX_MEDIA[:-1]:
        row[f"{m}_peak_GiB"] = peak[m] / 2**30 if peak else math.nan
    row["mix_usd_per_h"] = _per_h(mix.usd_per_s)
    row["recompute_all_usd_per_h"] = _per_h(mix.recompute_all_usd_per_s)
    row["saving_pct"] = math.nan if mix.saving is None else mix.saving * 100
    return row


def mix_table(s: Scenario) -> pd.DataFrame:
    """Per model, regime and ladder: the share of reuses each tier serves, the GiB it holds, the cost per hour.

    Each reuse of a block in the trace is served the cheapest way (held in a tier until
    then and fetched, or recomputed); the GiB a tier holds is the mean over the trace, by
    Little's law, at the trace's own request rate.  ``mix_usd_per_h`` is the mix's cost per
    hour of trace time (capacity, fetches, recomputations), ``recompute_all_usd_per_h`` the
    cost of recomputing every reuse instead.  A trace with no reuse has no shares (NaN) and
    holds and costs nothing; one that lasts 0 s has no GiB or cost per hour (NaN), while its
    shares and its saving (a ratio of totals) stand.
    """
    return pd.DataFrame([_mix_row(*key, mix, block) for key, (mix, block) in trace_mixes(s).items()])


NOTHING_HELD = "nothing held"
"""The largest tier of a mix that holds no block (a trace with no reuse, or one of 0 s)."""


def _medium_words(m: str | None) -> str:
    """A medium in words; :data:`NOTHING_HELD` for ``None``."""
    return NOTHING_HELD if m is None else MEDIA[m]


def mix_tornado_table(s: Scenario) -> pd.DataFrame:
    """Each price at its low and high end, the others held: the mix's cost per hour and the tier that holds most.

    The set's model, regenerating inside a batch, with room in host DRAM
    (:func:`kvtier.formulas.tiering.mix_tornado`).  A trace with no reuse costs nothing at any
    price, one of 0 s has no cost per hour: their swings are NaN.
    """
    curve = s.trace_curve()
    regime, ladder = "batch", "with host DRAM"
    rows = tiering.mix_tornado(
        s.tier_prices(),
        s.price_ends(COST_RANGES),
        s.tier_links.pick(LADDERS[ladder]),
        s.mix_block(),
        regime,
        curve.intervals[0],
        curve.duration_s,
        weights=curve.intervals[1],
    )
    return pd.DataFrame(
        [
            {
                "input": r["input"],
                "mix_usd_per_h_at_low": _per_h(r["usd_per_s_at_low"]),
                "mix_usd_per_h_at_high": _per_h(r["usd_per_s_at_high"]),
                "mix_usd_per_h_base": _per_h(r["usd_per_s_base"]),
                "swing": _nan(r["swing"]),
                "largest_tier_at_low": _medium_words(r["largest_at_low"]),
                "largest_tier_at_high": _medium_words(r["largest_at_high"]),
                "largest_tier_base": _medium_words(r["largest_base"]),
            }
            for r in rows
        ]
    )


def _trace_sentence(name: str, t: LruHistogram) -> str:
    """What the trace holds: its requests, their rate, its reuses; or why it has no rate, or nothing to cache."""
    values, counts = t.intervals
    held = f"The workload page's {name} trace holds {t.n_requests:,} request{'' if t.n_requests == 1 else 's'}"
    if t.duration_s > 0:
        rate = f", {t.n_requests / t.duration_s:.2f} a second,"
    else:
        when = "all at one timestamp, so it lasts" if t.n_requests > 1 else "so it lasts"
        rate = f" ({when} 0 s and has no rate per second),"
    empty = nothing_to_cache(t.n_refs, float(t.hit_ratio()))
    if empty:
        return f"{held}{rate} and nothing to cache: {empty}."
    median = duration(counted_percentiles(values, counts, (50,))["p50"])
    return (
        f"{held}{rate} and {int(counts.sum()):,} reuses of a block seen before, the median one {median} after the last."
    )


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _mix_paragraph(n: Mapping[str, Any], empty: str | None, still: str | None) -> str:
    """The mix of the set's model in words: shares, GiB, cost per hour; or why the trace leaves them undefined."""
    if empty:
        return (
            f"With nothing to cache ({empty}) the mix is empty for every model: no tier holds a block, nothing is"
            " fetched or recomputed, and it costs 0 USD an hour, as recomputing every reuse does: there is none."
        )
    shares = (
        f"With perfect knowledge of each block's next use, for {n['mix_model']} inside a batch,"
        f" {n['mix_main_share_pct']:.0f} % of the reuses are served from {n['mix_main_tier']}"
    )
    if still:
        return (
            f"{shares}; {n['mix_recompute_sentence']} {_cap(still)}, so the mean GiB each tier holds and the cost per"
            " hour are undefined (n/a in the table). Over the whole trace the mix costs"
            f" {n['mix_usd']:.3g} USD against {n['mix_recompute_usd']:.3g} USD to recompute every reuse:"
            f" {n['mix_saving_pct']:.1f} % less."
        )
    return (
        f"{shares}, {n['mix_hbm_share_pct']:.0f} % from HBM (reuses that come within seconds, which hold HBM too"
        f" briefly to add up to a GiB) and {n['mix_nvme_share_pct']:.1f} % from NVMe; {n['mix_recompute_sentence']}"
        f" The mix holds {n['mix_dram_gib']:,.0f} GiB in host DRAM on average ({n['mix_dram_peak_gib']:,.0f} GiB at"
        f" its peak) and {n['mix_nvme_gib']:,.0f} GiB on NVMe ({n['mix_nvme_peak_gib']:,.0f} at its peak) and costs"
        f" {n['mix_usd_per_h']:.3g} USD an hour, against {n['mix_recompute_usd_per_h']:.3g} USD an hour to"
        f" recompute every reuse inside a batch ({n['mix_recompute_accelerators']:.2f} accelerators, the same"
        f" recomputation the workload page charges): {n['mix_saving_pct']:.1f} % less. With no room left in host"
        f" DRAM, the CXL expander takes its place with {n['mix_full_cxl_gib']:,.0f} GiB on average for"
        f" {n['mix_full_usd_per_h']:.3g} USD an hour. Recomputed as lone passes the mix costs"
        f" {n['mix_lone_usd_per_h']:.3g} USD an hour against {n['mix_lone_recompute_usd_per_h']:.3g}."
        f" The mix moves with the model's bytes per token: {n['mix_models_sentence']}."
    )


def _mix_lead(n: Mapping[str, Any], empty: str | None, still: str | None) -> str:
    """The mix figure's lead: what the trace keeps and what it costs, or why it holds or costs nothing per hour."""
    if empty:
        return f"The trace has nothing to cache ({empty}): no tier holds a block of any model; the mix costs nothing."
    if still:
        return (
            f"{_cap(still)}, so the mix has no cost per hour; over the trace it costs {n['mix_usd']:.3g} USD against"
            f" {n['mix_recompute_usd']:.3g} USD to recompute every reuse inside a batch."
        )
    return (
        f"Knowing each block's next use, holding {n['mix_model']}'s reusable blocks ({n['mix_total_gib']:,.0f} GiB on"
        f" average, most in {n['mix_main_tier']}) costs {n['mix_usd_per_h']:.3g} USD an hour,"
        f" {_times(n['mix_usd_per_h'], n['mix_recompute_usd_per_h'])} recomputing every reuse inside a batch."
    )


def _times(a: float, b: float) -> str:
    """``a`` against ``b`` as a factor in words: '140 times less than', '2.5 times more than', 'as much as'.

    Where either is 0 there is no factor: 'against ``b`` USD an hour for'.
    """
    if a == b:
        return "as much as"
    if a == 0 or b == 0:
        return f"against {b:.3g} USD an hour for"  # no factor of nothing
    factor = max(a, b) / min(a, b)
    return f"{factor:,.{0 if factor >= 10 else 1}f} times {'less' if a < b else 'more'} than"


def _mix_tornado_sentence(n: Mapping[str, Any], empty: str | None, still: str | None) -> str:
    """Which price moves the mix's cost per hour most, and which changes its largest tier; or why none can."""
    if empty:
        return "With nothing to cache it costs nothing at any price, and no tier holds a block."
    if still:
        return f"{_cap(still)}, so the mix has no cost per hour for a price to move."
    return (
        f"Its cost per hour moves most with the {n['mix_tornado_top_words']} (a factor of"
        f" {n['mix_tornado_top_swing']:.2f} across its range). {n['mix_decider_sentence']}"
    )


def _and(items: Iterable[str]) -> str:
    """Items in words: 'a', 'a and b', 'a, b and c'."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _recompute_sentence(recompute_pct: float, longest_s: float, keep_s: Mapping[str, float]) -> str:
    """How many reuses the mix recomputes (%; NaN: there is no reuse), given the longest reuse interval (s).

    ``keep_s`` maps each tier of the mix's ladder, in words, to its break-even interval by the dollar (s)
    for the mix's block and regime; the sentence names the tiers whose interval the longest reuse falls
    within, and those it does not.
    """
    if math.isnan(recompute_pct):
        return "none is recomputed: there is no reuse."
    if recompute_pct == 0:
        within = [tier for tier, keep in keep_s.items() if longest_s <= keep]
        beyond = [tier for tier in keep_s if tier not in within]
        if not beyond:
            return (
                f"none is recomputed: the longest reuse interval in the trace, {duration(longest_s)}, is shorter"
                " than every tier's break-even interval."
            )

        def listed(tiers: list[str]) -> str:
            return _and(f"{tier} ({duration(keep_s[tier])})" for tier in tiers)

        return (
            f"none is recomputed: the longest reuse interval in the trace, {duration(longest_s)}, is shorter than"
            f" the break-even interval of {listed(within)}, though longer than that of {listed(beyond)}."
        )
    return f"{recompute_pct:.1f} % are recomputed, their next use too far off to pay for holding them anywhere."


def _mix_finding_sentence(n: Mapping[str, Any], empty: str | None, still: str | None) -> str:
    """The key finding on the mix (the findings page quotes it, after a semicolon), or why it holds or costs nothing."""
    name = n["trace_name"]
    if empty:
        return f"the {name} trace has nothing to cache ({empty}), so its mix holds nothing and costs nothing"
    if still:
        return (
            f"for the {name} trace, {still}, so its mix has no GiB held or cost per hour: over the whole trace it"
            f" costs {n['mix_usd']:.3g} USD against {n['mix_recompute_usd']:.3g} USD to recompute every reuse"
        )
    return (
        f"the cheapest mix holds {n['mix_total_gib']:,.0f} GiB on average ({n['mix_peak_total_gib']:,.0f} GiB at"
        f" its peaks), mostly in {n['mix_main_tier']}, for {n['mix_usd_per_h']:.2f} USD an hour against"
        f" {n['mix_recompute_usd_per_h']:.1f} USD to recompute every reuse inside a batch"
    )


def _finding_sentence(n: Mapping[str, Any]) -> str:
    """The key finding on the trace (the findings page quotes it, after a semicolon): the LRU tier, then the bound."""
    lo = n["lru_target_low"]
    if n["mix_empty"] or n[f"lru{lo}_dram_saved_usd_per_h"] is None:
        return n["mix_finding_sentence"]
    m = {v: k for k, v in MEDIA.items()}[n[f"lru{lo}_best_medium"]]
    return (
        f"for the {n['trace_name']} trace an LRU tier in {n[f'lru{lo}_best_medium']} that catches {lo} % of the"
        f" achievable hits holds {n[f'lru{lo}_tib']:.2f} TiB, costs {n[f'lru{lo}_{m}_cost_usd_per_h']:.3g} USD an"
        f" hour and saves {n[f'lru{lo}_{m}_saved_usd_per_h']:.3g} USD an hour net of recomputing its hits inside a"
        f" batch; {n['mix_finding_sentence']}, a lower bound that knows each block's next use"
    )


def _decider_sentence(s: Scenario, mt: pd.DataFrame, top: str) -> str:
    """The price that changes which tier holds the most of the mix's bytes, if one does."""
    base = mt["largest_tier_base"]
    flips = mt[(mt["largest_tier_at_low"] != base) | (mt["largest_tier_at_high"] != base)]
    if len(flips):
        f = flips.iloc[0]
        end = "low" if f["largest_tier_at_low"] != f["largest_tier_base"] else "high"
        return (
            f"The one price that changes which tier holds the blocks is the {SCHEMA[str(f['input'])].help}"
            f" ({f['input']}): at the {end} end of its range ({s.a(str(f['input']) + '_' + end).text})"
            f" the {f[f'largest_tier_at_{end}']} takes the place of the {f['largest_tier_base']}."
        )
    if top == NOTHING_HELD:
        return "No price across its range makes any tier hold a block."
    return f"No price across its range changes which tier holds most of the blocks: the {top} does throughout."


def _models_sentence(batch: pd.DataFrame, own: str) -> str:
    """The other models' mixes inside a batch: GiB held, block size, cost per hour against recomputing."""
    return "; ".join(
        f"{m}: {sum(float(batch.loc[m, f'{x}_GiB']) for x in MIX_MEDIA[:-1]):,.0f} GiB"
        f" ({float(batch.loc[m, 'block_MiB']):,.1f} MiB a block), {float(batch.loc[m, 'mix_usd_per_h']):.3g} USD/h"
        f" against {float(batch.loc[m, 'recompute_all_usd_per_h']):.3g}"
        for m in batch.index
        if m != own
    )


def _keep_s(s: Scenario, block: tiering.Block) -> dict[str, float]:
    """Break-even interval by the dollar (s) of ``block`` inside a batch in each tier of the mix's ladder, by tier."""
    iv = tiering.intervals(s.tier_prices(), s.tier_links.pick(LADDERS["with host DRAM"]), block, "batch")
    return {MEDIA[medium]: iv.at(tier)["keep_usd_s"] for tier, medium in zip(iv.tiers, iv.media, strict=True)}


def mix_numbers(s: Scenario) -> dict[str, Any]:
    """The numbers and sentences of the page's part on the trace's mix (NaN where the trace leaves one undefined).

    A trace with no reuse has nothing to cache: its mix holds and costs nothing, and its
    shares are undefined.  A trace of 0 s (one request, or all at one timestamp) has no rate:
    its GiB held and costs per hour are undefined, while its shares, its totals over the
    trace (``mix_usd``, ``mix_recompute_usd``, USD) and its saving stand.
    """
    t = s.trace_curve()
    values, counts = t.intervals  # the distinct reuse intervals, ascending, with their counts
    reuses = int(counts.sum())
    mixes = trace_mixes(s)
    df = pd.DataFrame([_mix_row(*key, mix, block) for key, (mix, block) in mixes.items()])
    own = str(s.assumptions.value("model"))
    pick = {
        (regime, ladder): df[(df["regime"] == regime) & (df["ladder"] == ladder)].set_index("model")
        for regime in REGIMES
        for ladder in LADDERS
    }
    batch, full = pick[("batch", "with host DRAM")], pick[("batch", "host DRAM full")]
    lone = pick[("lone", "with host DRAM")]
    main, (main_mix, main_block) = batch.loc[own], mixes[(own, "batch", "with host DRAM")]
    gib = {m: float(main[f"{m}_GiB"]) for m in MIX_MEDIA[:-1]}
    top = tiering.largest_medium(main_mix, LADDERS["with host DRAM"])
    if top is None and main_mix.has_reuse:  # a trace of 0 s: the medium that serves the most reuses
        top = max(MIX_MEDIA[:-1], key=lambda m: float(main[f"share_{m}_pct"]))
    recompute_pct = float(main["share_recompute_pct"])  # NaN: no reuse
    longest = float(values[-1]) if reuses else 0.0
    out: dict[str, Any] = {
        "trace_name": str(s.assumptions.value("workload.trace")),
        "trace_requests": int(t.n_requests),
        "trace_rate_per_s": t.n_requests / t.duration_s if t.duration_s > 0 else math.nan,
        "trace_reuses": reuses,
        "trace_median_reuse": duration(counted_percentiles(values, counts, (50,))["p50"]) if reuses else "none",
        "trace_sentence": _trace_sentence(str(s.assumptions.value("workload.trace")), t),
        "large_tokens": block_sizes(s)[1],
        "mix_model": own,
        "mix_total_gib": sum(gib.values()),
        "mix_main_tier": MEDIA[top] if top else NOTHING_HELD,
        "mix_main_share_pct": float(main[f"share_{top}_pct"]) if top else math.nan,
        "mix_hbm_share_pct": float(main["share_hbm_pct"]),
        "mix_nvme_share_pct": float(main["share_nvme_pct"]),
        "mix_recompute_share_pct": recompute_pct,
        "mix_recompute_sentence": _recompute_sentence(recompute_pct, longest, _keep_s(s, main_block)),
        "mix_hbm_gib": gib["hbm"],
        "mix_dram_gib": gib["dram"],
        "mix_nvme_gib": gib["nvme"],
        "mix_usd_per_h": float(main["mix_usd_per_h"]),
        "mix_recompute_usd_per_h": float(main["recompute_all_usd_per_h"]),
        "mix_saving_pct": float(main["saving_pct"]),
        "mix_usd": main_mix.usd,
        "mix_recompute_usd": main_mix.recompute_all_usd,
        "mix_dram_peak_gib": float(main["dram_peak_GiB"]),
        "mix_nvme_peak_gib": float(main["nvme_peak_GiB"]),
        "mix_peak_total_gib": sum(float(main[f"{m}_peak_GiB"]) for m in MIX_MEDIA[:-1]),
        "mix_recompute_accelerators": _per_h(main_mix.recompute_all_usd_per_s) / 3600 / s.v("cost.accelerator_hour"),
        "mix_full_cxl_gib": float(full.loc[own, "cxl_GiB"]),
        "mix_full_usd_per_h": float(full.loc[own, "mix_usd_per_h"]),
        "mix_lone_usd_per_h": float(lone.loc[own, "mix_usd_per_h"]),
        "mix_lone_recompute_usd_per_h": float(lone.loc[own, "recompute_all_usd_per_h"]),
        "mix_models_sentence": _models_sentence(batch, own),
    }
    mt = mix_tornado_table(s)
    out["mix_tornado_top_key"] = str(mt.iloc[0]["input"])
    out["mix_tornado_top_words"] = SCHEMA[str(mt.iloc[0]["input"])].help
    out["mix_tornado_top_swing"] = float(mt.iloc[0]["swing"])
    out["mix_decider_sentence"] = _decider_sentence(s, mt, out["mix_main_tier"])
    empty = nothing_to_cache(t.n_refs, float(t.hit_ratio()))
    still = no_duration(t.n_requests, t.duration_s)
    out["mix_empty"], out["mix_still"] = empty, still
    out["mix_paragraph"] = _mix_paragraph(out, empty, still)
    out["mix_lead"] = _mix_lead(out, empty, still)
    out["mix_tornado_sentence"] = _mix_tornado_sentence(out, empty, still)
    out["mix_finding_sentence"] = _mix_finding_sentence(out, empty, still)
    return out


def _bar_label(row: Any) -> str:
    """A mix figure's bar label: the mix's cost per hour against recomputing, or why it has none."""
    if math.isnan(row.share_hbm_pct):
        return "nothing to cache: 0 USD/h"
    if math.isnan(row.mix_usd_per_h):
        return "no cost per hour: the trace lasts 0 s"
    return f"{row.mix_usd_per_h:.3g} USD/h; recomputing: {row.recompute_all_usd_per_h:.3g} USD/h"


MIX_STYLE: dict[str, tuple[str, str]] = {
    "hbm": (PALETTE[5], "xx"),
    "dram": (PALETTE[0], ""),
    "cxl": (PALETTE[3], "//"),
    "nvme": (PALETTE[2], ".."),
}
"""Each tier of the mix figure: its colour and its hatch, so that colour is not the only key."""


def mix_figure(s: Scenario) -> tuple[Figure, str]:
    """GiB each tier holds for the trace, per model and ladder, with the mix's cost per hour against recomputing.

    One bar per model and ladder, each labelled above with its cost per hour; the tiers are
    keyed by colour and hatch.
    """
    df = mix_table(s)
    df = df[df["regime"] == "batch"].reset_index(drop=True)
    n = numbers(s)
    fig, ax = new_figure(4.8, 6.2)
    labels = [f"{model_label(r.model)}\n{r.ladder}" for r in df.itertuples()]
    y = np.arange(len(df))[::-1].astype(float)
    left = np.zeros(len(df))
    for m, (color, hatch) in MIX_STYLE.items():
        gib = np.nan_to_num(df[f"{m}_GiB"].to_numpy())  # a trace of 0 s holds no GiB on average: no bar
        ax.barh(y, gib, left=left, color=color, hatch=hatch, edgecolor="white", lw=0.5, height=0.5, label=MEDIA[m])
        left += gib
    for yi, r in zip(y, df.itertuples(), strict=True):
        ax.text(0, yi + 0.3, _bar_label(r), va="bottom", ha="left", fontsize=MIN_FONT_PT)
    ax.set_yticks(y, labels)
    ax.set_ylim(-0.5, len(df) - 0.2)
    ax.set_xlim(0, float(left.max()) * 1.05 or 1.0)  # nothing held: an axis of its own
    ax.set_xlabel("mean GiB each tier holds for the trace")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower center", bbox_to_anchor=(0.4, 1.0), ncol=2)
    fig.subplots_adjust(left=0.3, right=0.95, top=0.88)
    records = s.used(
        "workload.trace",
        "workload.block_tokens",
        "cost.accelerator_hour",
        "cost.hbm_share",
        "cost.dram_gb",
        "cost.cxl_gb",
        "cost.nvme_gb",
        "cost.amortisation",
        "cost.energy_kwh",
        "energy.dram_w_per_gb",
        "energy.nvme_w_per_gb",
        "model",
        "peak_flops",
        f"mfu.{s.assumptions.value('illustrative.mfu')}",
    )
    return finish(
        fig,
        records,
        "Bars: each model's cheapest mix, with room in host DRAM and with none; segments: the mean GiB each tier"
        " holds; labels: cost per hour.",
        lead=n["mix_lead"],
        drivers=("cost.dram_gb", "cost.cxl_gb"),
    )


# ---- figures ---------------------------------------------------------------------------

_MARKS = (("lone", "o", True), ("batch", "o", False))


def _interval_ticks(ax: Any, low: float, high: float) -> None:
    """Label a log axis of seconds at readable durations."""
    from matplotlib.ticker import NullLocator

    coarse = [(1, "1 s"), (60, "1 min"), (300, "5 min"), (3600, "1 h"), (86400, "1 d"), (30 * 86400, "30 d")]
    coarse += [(YEAR_S, "1 y"), (10 * YEAR_S, "10 y")]
    fine = [(10, "10 s"), (900, "15 min"), (3 * 3600, "3 h"), (12 * 3600, "12 h"), (2 * 86400, "2 d")]
    fine += [(7 * 86400, "7 d"), (90 * 86400, "90 d")]
    marks = [(v, t) for v, t in coarse if low <= v <= high]
    if len(marks) < 3:
        marks = sorted((v, t) for v, t in coarse + fine if low <= v <= high)
    ax.set_xticks([v for v, _ in marks], [t for _, t in marks])
    ax.xaxis.set_minor_locator(NullLocator())


def interval_figure(s: Scenario) -> tuple[Figure, str]:
    """Each tier's break-even holding interval against recomputation, in dollars (top) and joules (below), log axis.

    Block size is keyed by colour and marker (circle, square), the regime by fill (filled: alone,
    open: inside a batch), so that colour is never the only key; both panels share the time axis.
    """
    df = long_table(s)
    small, large = block_sizes(s)
    tiers = list(dict.fromkeys(df["tier"]))
    order = sorted(tiers, key=lambda t: float(df[(df["tier"] == t)]["keep_usd_s"].median()))
    fig, axes = new_figure(4.8, 9.4)
    fig.delaxes(axes)
    ax_usd = fig.add_subplot(2, 1, 1)
    ax_j = fig.add_subplot(2, 1, 2, sharex=ax_usd)
    y = {t: i for i, t in enumerate(order)}
    regime_words = {"lone": "alone", "batch": "in a batch"}
    styles = {  # colour, marker, fill and the row's offset within its tier: equal intervals stay apart
        (small, "lone"): (PALETTE[0], "o", "full", -0.27),
        (small, "batch"): (PALETTE[0], "o", "none", -0.09),
        (large, "lone"): (PALETTE[1], "s", "full", 0.09),
        (large, "batch"): (PALETTE[1], "s", "none", 0.27),
    }
    values = np.r_[df["keep_usd_s"].to_numpy(), df["keep_J_s"].to_numpy()]
    positive = values[values > 0]
    low, high = float(positive.min()) / 3, float(positive.max()) * 3
    for ax, col, title in ((ax_usd, "keep_usd_s", "by the dollar"), (ax_j, "keep_J_s", "by the joule")):
        for (tokens, regime), (color, marker, fill, offset) in styles.items():
            part = df[(df["block_tokens"] == tokens) & (df["regime"] == regime)]
            yy = np.array([y[t] for t in part["tier"]]) + offset
            ax.scatter(
                np.maximum(part[col].to_numpy(), low),
                yy,
                s=30,
                marker=marker,
                facecolors=color if fill == "full" else "white",
                edgecolors=color,
                linewidths=1.4,
                label=f"{tokens} tokens, {regime_words[regime]}",
                zorder=3,
            )
        ax.set_xscale("log")
        ax.set_xlim(low, high)
        _interval_ticks(ax, low, high)
        ax.tick_params(labelbottom=True)
        ax.axvline(300, color="#888888", lw=0.8, ls=":")
        ax.set_title(f"break-even interval {title}", fontsize=10)
        ax.set_yticks(range(len(order)), order)
        ax.set_ylim(-0.6, len(order) - 0.4)
        ax.grid(axis="y", visible=False)
    ax_j.set_xlabel("keep a block while its next use comes sooner (log)")
    handles, labels = ax_usd.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=2, bbox_to_anchor=(0.5, 0.995), columnspacing=1.0)
    fig.subplots_adjust(top=0.9, hspace=0.3, left=0.25, right=0.96)
    n = numbers(s)
    records = s.used(
        "cost.accelerator_hour",
        "cost.hbm_share",
        "cost.hbm_capacity",
        "cost.dram_gb",
        "cost.cxl_gb",
        "cost.nvme_gb",
        "cost.amortisation",
        "cost.energy_kwh",
        "energy.power_lone",
        "energy.power_batch",
        "energy.dram_w_per_gb",
        "energy.nvme_w_per_gb",
        "model",
        "block_tokens",
        "cost.large_block_tokens",
        "peak_flops",
        f"mfu.{s.assumptions.value('illustrative.mfu')}",
        "regen.mem_bandwidth",
        "regen.mem_efficiency",
    )
    lone = intervals(s)[(small, "lone")]
    cxl, hbm = lone.at(CXL_TIER)["keep_usd_s"], lone.at("hbm")["keep_usd_s"]
    than = "longer than" if cxl > hbm else "shorter than" if cxl < hbm else "as long as"
    lead = (
        f"By the dollar, a {small}-token block regenerated alone is worth keeping {n['small_lone_cxl2_x8_keep_usd']}"
        f" in a CXL expander, {than} the {n['small_lone_hbm_keep_usd']} in HBM"
        f" ({n['small_lone_cxl2_x8_keep_j']} by the joule)."
    )
    return finish(
        fig,
        records,
        "Each mark: the longest wait for a block's next use at which holding it in that tier costs less than"
        " recomputing it; top by the dollar, bottom by the joule.",
        extra="tier presets: see the cost table (published-spec, derived, assumed)",
        lead=lead,
        drivers=("cost.accelerator_hour", "cost.cxl_gb"),
    )


TORNADO_NAMES: dict[str, str] = {
    "cost.accelerator_hour": "accelerator price per hour",
    "cost.hbm_share": "HBM share of that price",
    "cost.dram_gb": "host DRAM price per GB",
    "cost.cxl_gb": "CXL expander price per GB",
    "cost.nvme_gb": "NVMe price per GB",
    "cost.amortisation": "amortisation period",
    "cost.energy_kwh": "energy price per kWh",
    "energy.dram_w_per_gb": "DRAM power per GB",
    "energy.nvme_w_per_gb": "NVMe power per GB",
    "energy.power_lone": "board power, lone block",
}
"""Each input of the tornado as its tick labels name it (the tables of record keep the keys)."""


def tornado_figure(s: Scenario) -> tuple[Figure, str]:
    """The CXL tier's dollar interval as each price moves across its range, widest swing on top.

    The low end of a range is a plain bar, the high end a hatched one, so that colour is not the only key.
    """
    from matplotlib.patches import Patch

    t = tornado_table(s).iloc[::-1].reset_index(drop=True)
    n = numbers(s)
    fig, ax = new_figure(4.8, 5.2)
    base = float(t["keep_usd_base_h"].iloc[0]) * 3600
    ends = {"low": (PALETTE[0], ""), "high": (PALETTE[1], "//")}
    for i, row in t.iterrows():
        for end, (color, hatch) in ends.items():
            x = float(row[f"keep_usd_at_{end}_h"]) * 3600
            ax.barh(i, x - base, left=base, color=color, hatch=hatch, edgecolor="white", lw=0.5, height=0.6)
        if float(row["keep_usd_at_low_h"]) == float(row["keep_usd_at_high_h"]) == base / 3600:
            ax.annotate(
                "no effect",
                (base, i),
                textcoords="offset points",
                xytext=(4, 0),
                va="center",
                fontsize=MIN_FONT_PT,
                color="#666666",
            )
    ax.axvline(base, color="#333333", lw=1.0)
    ax.set_yticks(range(len(t)), [TORNADO_NAMES[key] for key in t["input"]])
    ax.set_xscale("log")
    lows = np.r_[t["keep_usd_at_low_h"], t["keep_usd_at_high_h"]] * 3600
    ax.set_xlim(float(lows.min()) / 1.6, float(lows.max()) * 1.6)
    _interval_ticks(ax, float(lows.min()) / 1.6, float(lows.max()) * 1.6)
    ax.set_xlabel(
        f"how long a {s.block_tokens}-token block regenerated\nalone is worth keeping in a CXL expander,"
        "\nby the dollar (log)"
    )
    ax.grid(axis="y", visible=False)
    ax.legend(
        [Patch(facecolor=color, hatch=hatch, edgecolor="white") for color, hatch in ends.values()],
        ["input at its low end", "input at its high end"],
        loc="lower center",
        bbox_to_anchor=(0.35, 1.0),
        ncol=1,
    )
    fig.subplots_adjust(left=0.4, right=0.95, top=0.86)
    records = s.used(*(f"{k}{end}" for k in COST_RANGES for end in ("", "_low", "_high")), "energy.power_lone")
    lead = (
        f"Of all the inputs, the {TORNADO_NAMES[n['tornado_top_key']]} moves a block's break-even interval in"
        " CXL most:"
        f" from {n['tornado_top_low']} to {n['tornado_top_high']} across its range, a factor of"
        f" {n['tornado_top_swing']:.1f}."
    )
    fig, caption = finish(
        fig,
        records,
        "Each bar moves one input across its range, the others held: plain to its low end, hatched to its high end;"
        " the line: the interval at the set's values.",
        lead=lead,
        drivers=(n["tornado_top_key"], n["tornado_second_key"]),
    )
    # the footer leaves room for a one-line axis label; this one has three
    fig.subplots_adjust(bottom=fig.subplotpars.bottom + 2 * 12 / (fig.get_size_inches()[1] * 72))
    return fig, caption


TABLES = (
    ("cost_inputs", inputs_table, ("input",), ("input", "value", "low", "high", "provenance", "what")),
    (
        "cost_intervals",
        table,
        ("tier",),
        (
            "tier",
            "hold_usd_per_TB_month",
            "fetch_us",
            "keep_usd_small_lone_h",
            "keep_usd_small_batch_h",
            "keep_usd_large_lone_h",
            "keep_J_small_lone_h",
            "keep_J_small_batch_h",
            "hbm_over_tier_small_s",
        ),
    ),
    ("cost_blocks", block_table, ("block_tokens", "regime")),
    (
        "cost_tornado",
        tornado_table,
        ("input",),
        (
            "input",
            "keep_usd_at_low_h",
            "keep_usd_at_high_h",
            "swing_usd",
            "keep_J_at_low_h",
            "keep_J_at_high_h",
            "swing_J",
        ),
    ),
    (
        "cost_lru",
        lru_table,
        ("target", "tier"),
        (
            "target",
            "tier",
            "capacity_GiB",
            "hold_usd_per_h",
            "fetch_usd_per_h",
            "saved_batch_usd_per_h",
            "saved_lone_usd_per_h",
            "read_busy_pct",
            "write_busy_pct",
            "nvme_wear_pct",
        ),
    ),
    (
        "cost_hierarchy",
        hierarchy_table,
        ("hierarchy", "mode", "tier"),
        (
            "hierarchy",
            "mode",
            "tier",
            "per_accelerator_GiB",
            "hit_blocks_pct",
            "write_GBps",
            "drive_writes_per_day",
            "hierarchy_usd_per_h",
        ),
    ),
    (
        "cost_mix",
        mix_table,
        ("model", "regime", "ladder"),
        (
            "model",
            "regime",
            "ladder",
            "dram_GiB",
            "dram_peak_GiB",
            "cxl_GiB",
            "nvme_GiB",
            "nvme_peak_GiB",
            "mix_usd_per_h",
            "recompute_all_usd_per_h",
            "saving_pct",
        ),
    ),
    (
        "cost_mix_tornado",
        mix_tornado_table,
        ("input",),
        (
            "input",
            "mix_usd_per_h_at_low",
            "mix_usd_per_h_at_high",
            "swing",
            "largest_tier_at_low",
            "largest_tier_at_high",
        ),
    ),
)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES: tuple[tuple[str, Callable[[Scenario], tuple[Any, str]]], ...] = (
    ("fig_cost_intervals", interval_figure),
    ("fig_cost_mix", mix_figure),
    ("fig_cost_tornado", tornado_figure),
)
"""The page's figures: (glue name, function returning the figure and its caption)."""
