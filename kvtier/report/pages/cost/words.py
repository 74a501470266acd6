"""The cost page's sentences: what its intervals, tiers, hierarchies and mix mean, in words.

Each builder takes numbers already computed (a page's ``numbers`` dictionary, or a table's rows)
and returns prose; none computes a figure of its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from kvtier.formulas.cache.curve import LruHistogram, counted_percentiles
from kvtier.formulas.tiering import MIX_MEDIA
from kvtier.inputs.keys import SCHEMA
from kvtier.report.pages.cost.intervals import MEDIA, duration
from kvtier.report.words import capitalized, listed, nothing_to_cache, saves
from kvtier.report.words import days as in_days
from kvtier.scenario import Scenario


def more_or_less(a: float, b: float) -> str:
    """``a`` against ``b`` in words: 'more than', 'less than' or 'as much as'."""
    return "more than" if a > b else "less than" if a < b else "as much as"


def lru_paragraph(n: Mapping[str, Any], mix: Mapping[str, Any]) -> str:
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
        f" fetch from, and {saves(n[f'lru{lo}_{key}_saved_usd_per_h'], 'USD an hour')} net against recomputing"
        f" its hits inside a batch ({saves(n[f'lru{lo}_{key}_saved_lone_usd_per_h'], 'USD an hour')} as lone"
        " passes): the prefill of"
        f" {n[f'lru{lo}_saved_accelerators']:.1f} accelerators, out of the {n[f'lru{lo}_prefill_accelerators']:.1f}"
        f" the trace's prefill keeps busy inside a batch with no cache. The cheapest mix with perfect knowledge of"
        f" each block's next use, the lower bound below, peaks at {bound:,.0f} GiB and costs"
        f" {mix['mix_usd_per_h']:.3g} USD an hour while it {_mix_serves(mix)}. An LRU tier that serves every reuse"
        f" an infinite cache would holds {n['lru_all_gib'] / bound:.1f} times those bytes; the {lo} % tier, which"
        f" serves fewer, {n[f'lru{lo}_gib'] / bound:.1f} times."
        if bound
        else f"An LRU tier that catches {lo} % of the hits an infinite cache would needs {n[f'lru{lo}_tib']:.2f} TiB."
    )


def _mix_serves(mix: Mapping[str, Any]) -> str:
    """What share of the reuses the lower bound's mix serves from memory, in words."""
    recompute = mix["mix_recompute_share_pct"]
    if not recompute:
        return "serves every reuse from memory"
    return f"serves {100 - recompute:.1f} % of the reuses from memory and recomputes the rest"


def lru_nvme_paragraph(n: Mapping[str, Any], mix: Mapping[str, Any]) -> str:
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
        f" {more_or_less(n[f'lru{hi}_write_gbps'], n[f'lru{hi}_read_gbps'])} it reads. On one NVMe Gen4 x4 drive"
        f" the reads keep its link {read:.1f} % busy and the writes {write:.1f} % of its"
        f" {n['nvme_write_text']} sequential write: {verdict}. Written over {n[f'lru{hi}_dwpd']:,.0f} times a day,"
        f" against a rating of {n['nvme_dwpd_text']} drive writes a day for {n['nvme_period_text']}, the flash"
        f" {lasts}: over the {n['amortisation_text']} amortisation it takes {wear:,.0f} % of its rated writes."
        f"{_drives_sentence(n, hi)}"
        f" In host DRAM the same writes keep the PCIe link's other direction {n[f'lru{hi}_dram_write_busy_pct']:.1f} %"
        " busy, and DRAM does not wear."
    )


def _drives_sentence(n: Mapping[str, Any], hi: Any) -> str:
    """The drives an NVMe tier buys and why, with the wear-out time of flash of its own size; '' where none apply."""
    count = n.get(f"lru{hi}_nvme_drives_count")
    if count is None:
        return ""
    days = n[f"lru{hi}_nvme_wearout_days"]
    held = n[f"lru{hi}_nvme_drives_for_capacity"]
    lasts = f"would wear out in {in_days(days * 86400)}" if days is not None else "would never wear"
    return (
        f" Flash of the tier's own size {lasts} at this write rate, so the tier is priced for the drives of"
        f" {n['nvme_drive_text']} it must buy: {count:,.0f} in all, {held:,.0f} to hold it,"
        f" {n[f'lru{hi}_nvme_drives_for_bandwidth']:,.0f} for its write bandwidth and"
        f" {n[f'lru{hi}_nvme_drives_for_endurance']:,.0f} to absorb its writes within the rating."
    )


def hierarchy_sizes_sentence(n: Mapping[str, Any]) -> str:
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


def hierarchy_result_sentence(n: Mapping[str, Any]) -> str:
    """What the exclusive and inclusive host-DRAM hierarchies serve, write and cost (words for an undefined rate)."""
    served = (
        f"Exclusive, with host DRAM in the middle, HBM serves {n['hier_exc_hbm_hit_pct']:.1f} % of the block"
        f" references, host DRAM {n['hier_exc_dram_hit_pct']:.1f} % and NVMe {n['hier_exc_nvme_hit_pct']:.1f} %"
        f" ({n['hier_exc_hit_pct']:.1f} % in all)."
    )
    rates = ("hier_exc_nvme_write_gbps", "hier_exc_nvme_write_busy_pct", "hier_inc_nvme_write_gbps")
    if any(n[k] is None for k in (*rates, "hier_exc_usd_per_h", "hier_inc_usd_per_h", "hier_exc_hbm_hold_usd_per_h")):
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
    hbm = n["hier_exc_hbm_hold_usd_per_h"]
    head = (
        f"{served} {writes}. Holding, fetching and recomputing what it misses, the exclusive hierarchy costs"
        f" {n['hier_exc_usd_per_h']:,.2f} USD an hour, the inclusive one {n['hier_inc_usd_per_h']:,.2f}, {against}"
    )
    if not n["hier_hbm_left_gib"]:
        return (
            f"{head}. HBM holds no prefix cache here: the placement's shard of the weights leaves its accelerators"
            " nothing beside it."
        )
    return (
        f"{head}; {hbm:,.2f} USD of the exclusive hierarchy's hour is the HBM its prefix cache holds (priced at HBM's"
        " share of the accelerator hour), which the mix barely pays, since it keeps a block in HBM only for a reuse"
        f" moments away: without it the hierarchy costs {n['hier_exc_usd_per_h'] - hbm:,.2f}."
    )


NOTHING_HELD = "nothing held"
"""The largest tier of a mix that holds no block (a trace with no reuse, or one of 0 s)."""


def medium_words(m: str | None) -> str:
    """A medium in words; :data:`NOTHING_HELD` for ``None``."""
    return NOTHING_HELD if m is None else MEDIA[m]


def trace_sentence(name: str, t: LruHistogram) -> str:
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


def mix_paragraph(n: Mapping[str, Any], empty: str | None, still: str | None) -> str:
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
            f"{shares}; {n['mix_recompute_sentence']} {capitalized(still)}, so the mean GiB each tier holds and the"
            " cost per hour are undefined (n/a in the table). Over the whole trace the mix costs"
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


def mix_lead(n: Mapping[str, Any], empty: str | None, still: str | None) -> str:
    """The mix figure's lead: what the trace keeps and what it costs, or why it holds or costs nothing per hour."""
    if empty:
        return f"The trace has nothing to cache ({empty}): no tier holds a block of any model; the mix costs nothing."
    if still:
        return (
            f"{capitalized(still)}, so the mix has no cost per hour; over the trace it costs {n['mix_usd']:.3g} USD"
            f" against {n['mix_recompute_usd']:.3g} USD to recompute every reuse inside a batch."
        )
    return (
        f"Knowing each block's next use, holding {n['mix_model']}'s reusable blocks ({n['mix_total_gib']:,.0f} GiB on"
        f" average, most in {n['mix_main_tier']}) costs {n['mix_usd_per_h']:.3g} USD an hour,"
        f" {times(n['mix_usd_per_h'], n['mix_recompute_usd_per_h'])} recomputing every reuse inside a batch."
    )


def times(a: float, b: float) -> str:
    """``a`` against ``b`` as a factor in words: '140 times less than', '2.5 times more than', 'as much as'.

    Where either is 0 there is no factor: 'against ``b`` USD an hour for'.
    """
    if a == b:
        return "as much as"
    if a == 0 or b == 0:
        return f"against {b:.3g} USD an hour for"  # no factor of nothing
    factor = max(a, b) / min(a, b)
    return f"{factor:,.{0 if factor >= 10 else 1}f} times {'less' if a < b else 'more'} than"


def mix_tornado_sentence(n: Mapping[str, Any], empty: str | None, still: str | None) -> str:
    """Which price moves the mix's cost per hour most, and which changes its largest tier; or why none can."""
    if empty:
        return "With nothing to cache it costs nothing at any price, and no tier holds a block."
    if still:
        return f"{capitalized(still)}, so the mix has no cost per hour for a price to move."
    return (
        f"Its cost per hour moves most with the {n['mix_tornado_top_words']} (a factor of"
        f" {n['mix_tornado_top_swing']:.2f} across its range). {n['mix_decider_sentence']}"
    )


def recompute_sentence(recompute_pct: float, longest_s: float, keep_s: Mapping[str, float]) -> str:
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

        def with_intervals(tiers: list[str]) -> str:
            return listed(f"{tier} ({duration(keep_s[tier])})" for tier in tiers)

        return (
            f"none is recomputed: the longest reuse interval in the trace, {duration(longest_s)}, is shorter than"
            f" the break-even interval of {with_intervals(within)}, though longer than that of"
            f" {with_intervals(beyond)}."
        )
    return f"{recompute_pct:.1f} % are recomputed, their next use too far off to pay for holding them anywhere."


def mix_finding_sentence(n: Mapping[str, Any], empty: str | None, still: str | None) -> str:
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
        f" its busiest instant, all media together), mostly in {n['mix_main_tier']}, for {n['mix_usd_per_h']:.2f}"
        " USD an hour against"
        f" {n['mix_recompute_usd_per_h']:.1f} USD to recompute every reuse inside a batch"
    )


def finding_sentence(n: Mapping[str, Any]) -> str:
    """The key finding on the trace (the findings page quotes it, after a semicolon): the LRU tier, then the bound."""
    lo = n["lru_target_low"]
    if n["mix_empty"] or n[f"lru{lo}_dram_saved_usd_per_h"] is None:
        return n["mix_finding_sentence"]
    m = {v: k for k, v in MEDIA.items()}[n[f"lru{lo}_best_medium"]]
    return (
        f"for the {n['trace_name']} trace an LRU tier in {n[f'lru{lo}_best_medium']} that catches {lo} % of the"
        f" achievable hits holds {n[f'lru{lo}_tib']:.2f} TiB, costs {n[f'lru{lo}_{m}_cost_usd_per_h']:.3g} USD an"
        f" hour and {saves(n[f'lru{lo}_{m}_saved_usd_per_h'], 'USD an hour')} net of recomputing its hits inside a"
        f" batch; {n['mix_finding_sentence']}, a lower bound that knows each block's next use"
    )


def decider_sentence(s: Scenario, mt: pd.DataFrame, top: str) -> str:
    """The price that changes which tier holds the most of the mix's bytes, if one does."""
    base = mt["largest_tier_base"]
    flips = mt[(mt["largest_tier_at_low"] != base) | (mt["largest_tier_at_high"] != base)]
    if len(flips):
        f = flips.iloc[0]
        end = "low" if f["largest_tier_at_low"] != f["largest_tier_base"] else "high"
        return (
            f"The one price that changes which tier holds the blocks is the {SCHEMA[str(f['input'])].help}:"
            f" at the {end} end of its range ({s.a(str(f['input']) + '_' + end).text})"
            f" the {f[f'largest_tier_at_{end}']} takes the place of the {f['largest_tier_base']}."
        )
    if top == NOTHING_HELD:
        return "No price across its range makes any tier hold a block."
    return f"No price across its range changes which tier holds most of the blocks: the {top} does throughout."


def models_sentence(batch: pd.DataFrame, own: str) -> str:
    """The other models' mixes inside a batch: GiB held, block size, cost per hour against recomputing."""
    return "; ".join(
        f"{m}: {sum(float(batch.loc[m, f'{x}_GiB']) for x in MIX_MEDIA[:-1]):,.0f} GiB"
        f" ({float(batch.loc[m, 'block_MiB']):,.1f} MiB a block), {float(batch.loc[m, 'mix_usd_per_h']):.3g} USD/h"
        f" against {float(batch.loc[m, 'recompute_all_usd_per_h']):.3g}"
        for m in batch.index
        if m != own
    )
