"""The workload page (``notebooks/12_workload.md``): how big a tier a real serving trace needs, and what it saves."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import numpy as np
import pandas as pd

from kvtier.formulas import roofline
from kvtier.formulas.cache import policies
from kvtier.formulas.cache.curve import LruHistogram, Reuse, counted_percentiles, curve_error
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.report import TARGETS_PCT, LinkSpec
from kvtier.formulas.cache.report import report as workload_report
from kvtier.inputs import traces
from kvtier.inputs.assumptions import TIER_LATENCY_KEYS
from kvtier.report import words
from kvtier.report.figures import MIN_FONT_PT, PALETTE, finish, new_figure, plain_log_ticks
from kvtier.report.words import no_duration, nothing_to_cache
from kvtier.scenario import FORWARD_KEYS, PLACEMENT_KEYS, TRANSFER_KEYS, Scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "12_workload"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "the workload"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (
    "decision.hit_target",
    "engine",
    "fetch_layout",
    "flops_per_param_token",
    "illustrative.mfu",
    "kv_dtype",
    "mfu.conservative",
    "mfu.optimistic",
    "mfu.typical",
    "model",
    "param_count",
    "peak_flops",
    *FORWARD_KEYS,
    "weight_dtype",
    "workload.block_tokens",
    "workload.hit_count",
    "workload.trace",
    "workload.trace_format",
    *TIER_LATENCY_KEYS,
    *PLACEMENT_KEYS,
    *TRANSFER_KEYS,
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""

TIB = 2.0**40
SHOWN_TARGET = 95
"""The target (% of the achievable hit ratio) whose tier the link table prices."""
LINKS_NAMED = ("cxl2-x8", "nvme-gen4-x4")
"""Link presets the prose quotes: the CXL expanders shipping today, and the slowest tier."""


def trace_name(s: Scenario) -> str:
    """The trace the page sizes the tier for (``workload.trace``)."""
    return str(s.assumptions.value("workload.trace"))


def contrast_name(s: Scenario) -> str:
    """The shipped trace shown beside it for contrast: synthetic, or conversation when the set names synthetic."""
    return "conversation" if trace_name(s) == "synthetic" else "synthetic"


def _links(s: Scenario) -> list[LinkSpec]:
    """The tiers of :attr:`Scenario.tier_links`, fastest first: each bandwidth and the set's latency per transfer.

    The set's ``fetch_layout`` sets how many transfers a block's fetch pays it
    (:meth:`kvtier.formulas.reuse.RegenCosts.of` reads ``Scenario.fetch_transfers``).
    """
    tiers = s.tier_links
    order = sorted(range(len(tiers.names)), key=lambda i: (-tiers.bandwidth_bytes_per_s[i], tiers.names[i]))
    return [LinkSpec(tiers.names[i], float(tiers.bandwidth_bytes_per_s[i]), float(tiers.latency_s[i])) for i in order]


_CONTRAST_CACHE: WeakKeyDictionary[Scenario, LruHistogram] = WeakKeyDictionary()


def _curve(s: Scenario, trace: str) -> LruHistogram:
    """The sized trace's streamed curve (:meth:`Scenario.trace_stream`), or the shipped contrast's, as published.

    Each with what recomputing its hits costs for the set's model, read in memory bounded by its
    distinct blocks, the way ``kvtier workload`` reads it.
    """
    if trace == trace_name(s):
        return s.trace_curve()
    found = _CONTRAST_CACHE.get(s)
    if found is None:
        count = str(s.assumptions.value("workload.hit_count"))
        found = traces.stream_lru(trace, traces.TRACE_BLOCK_TOKENS, count=count, rc=s.regen_costs())
        _CONTRAST_CACHE[s] = found
    return found


def report(s: Scenario, trace: str) -> dict[str, Any]:
    """:func:`kvtier.formulas.cache.report.report` of ``trace`` for the set's model, at its illustrative MFU bracket."""
    return workload_report(_curve(s, trace), s.regen_costs(), _links(s))


def _tier(rep: dict[str, Any], target: float) -> dict[str, Any]:
    return next(t for t in rep["tiers"] if t["target_pct"] == target)


def _link(tier: dict[str, Any], name: str) -> dict[str, Any]:
    return next(k for k in tier["links"] if k["link"] == name)


def _lone_numbers(s: Scenario, rep: dict[str, Any]) -> dict[str, Any]:
    """One trace block recomputed alone: its compute against one read of the weights, and where they meet."""
    rc = RegenCosts(**rep["regen"])
    block = float(rep["trace"]["block_tokens"])
    compute = float(rc.in_batch_s(np.array(block)))
    weights = float(roofline.memory_time_s(rc.weight_bytes, rc.mem_bandwidth_bytes_per_s, rc.mem_efficiency))
    meet = roofline.lone_knee_tokens(
        rc.weight_bytes,
        rc.mem_bandwidth_bytes_per_s,
        rc.mem_efficiency,
        rc.peak_flop_per_s,
        rc.mfu,
        rc.active_params,
        rc.flops_per_param_token,
    )
    return {
        "lone_block_compute_ms": compute * 1e3,
        "lone_weights_read_ms": weights * 1e3,
        "lone_meet_tokens": float(meet),
    }


def numbers(s: Scenario) -> dict[str, Any]:
    """The trace, its reuse, the capacity per target and what the tier saves, in both regimes.

    A figure the trace leaves undefined is ``None``, never NaN: a reuse interval of a trace
    with no reuse, a rate of a trace that lasts 0 s.  The sentences the prose quotes
    (``*_sentence``, ``*_paragraph``, ``*_clause``) say what such a trace gives in words.
    """
    name, other = trace_name(s), contrast_name(s)
    rep, con = report(s, name), report(s, other)
    tr, bl, pf = rep["trace"], rep["blocks"], rep["prefix"]
    record = s.a("workload.trace")
    shown = _tier(rep, SHOWN_TARGET)
    whole = _tier(rep, 100)
    out: dict[str, Any] = {
        "trace": name,
        "trace_provenance": record.provenance,
        "trace_source": record.source,
        "contrast": other,
        "model_name": s.model.name,
        "kv_dtype": s.kv_dtype,
        "trace_block_tokens": tr["block_tokens"],
        "requests": tr["requests"],
        "duration_min": tr["duration_s"] / 60,
        "requests_per_s": tr["requests_per_s"],
        "input_p50_tokens": tr["input_tokens"]["p50"],
        "input_p90_tokens": tr["input_tokens"]["p90"],
        "input_p99_tokens": tr["input_tokens"]["p99"],
        "output_p50_tokens": tr["output_tokens"]["p50"],
        "references": bl["references"],
        "unique_blocks": bl["unique"],
        "refs_per_request": bl["references"] / tr["requests"],
        "hit_inf_blocks_pct": bl["hit_ratio_infinite_blocks"] * 100,
        "hit_inf_tokens_pct": bl["hit_ratio_infinite_tokens"] * 100,
        "prefix_ok_requests": tr["requests"] - pf["requests_with_a_distance_that_falls"],
        "hit_after_miss_requests": pf["requests_with_a_hit_after_a_miss"],
        "falling_requests": pf["requests_with_a_distance_that_falls"],
        "kv_kib_per_token": rep["kv_bytes_per_token"] / 1024,
        "block_mib": rep["block_bytes"] / 2**20,
        "unique_tib": bl["unique"] * rep["block_bytes"] / TIB,
        "reuse_p50_min": bl["reuse_interval_s"]["p50"] / 60,
        "reuse_p90_min": bl["reuse_interval_s"]["p90"] / 60,
        "reuse_p99_min": bl["reuse_interval_s"]["p99"] / 60,
        "reuse_max_min": bl["reuse_interval_s"]["max"] / 60,
        "reuse_zero_pct": _zero_interval_pct(_curve(s, name)),
        "mfu_pct": rep["regen"]["mfu"] * 100,
        "peak_tflops": rep["regen"]["peak_flop_per_s"] / 1e12,
        "lone_device": words.lone_device(s),
        "inf_in_batch_gpus": whole["in_batch_gpu_s_per_s"],
        "inf_lone_gpus": whole["lone_gpu_s_per_s"],
        "lone_memory_bound_pct": whole["lone_memory_bound_share"] * 100,
        "lone_over_in_batch": _lone_over_in_batch(s, name),
        **_lone_numbers(s, rep),
        "cap100_tib": whole["capacity_bytes"] / TIB,
        "shown_target_pct": SHOWN_TARGET,
        "targets_text": ", ".join(f"{x:g}" for x in TARGETS_PCT[:-1]) + f" and {TARGETS_PCT[-1]:g} %",
        "shown_tib": shown["capacity_bytes"] / TIB,
        "shown_share_of_unique_pct": shown["capacity_blocks"] / bl["unique"] * 100 if bl["unique"] else math.nan,
        "shown_in_batch_gpus": shown["in_batch_gpu_s_per_s"],
        "shown_lone_gpus": shown["lone_gpu_s_per_s"],
        "shown_hit_gbps": shown["hit_bytes_per_s"] / 1e9,
    }
    for target in TARGETS_PCT:
        tier = _tier(rep, target)
        out[f"cap{target}_tib"] = tier["capacity_bytes"] / TIB
        out[f"cap{target}_blocks"] = int(tier["capacity_blocks"])
        out[f"cap{target}_hit_blocks_pct"] = tier["hit_ratio_blocks"] * 100
        out[f"cap{target}_in_batch_gpus"] = tier["in_batch_gpu_s_per_s"]
    for link in LINKS_NAMED:
        key = link.replace("-", "_")
        k = _link(shown, link)
        out[f"{key}_busy_pct"] = k["fetch_link_s_per_s"] * 100
        out[f"{key}_in_batch_ratio"] = k["in_batch_over_fetch"]
        out[f"{key}_lone_ratio"] = k["lone_over_fetch"]
    ctr, cbl = con["trace"], con["blocks"]
    out.update(
        {
            "contrast_requests": ctr["requests"],
            "contrast_duration_min": ctr["duration_s"] / 60,
            "contrast_hit_inf_blocks_pct": cbl["hit_ratio_infinite_blocks"] * 100,
            "contrast_shown_tib": _tier(con, SHOWN_TARGET)["capacity_bytes"] / TIB,
            "contrast_unique_tib": cbl["unique"] * con["block_bytes"] / TIB,
            "contrast_reuse_p50_min": cbl["reuse_interval_s"]["p50"] / 60,
            "contrast_inf_in_batch_gpus": _tier(con, 100)["in_batch_gpu_s_per_s"],
            "contrast_prefix_ok_requests": ctr["requests"] - con["prefix"]["requests_with_a_distance_that_falls"],
        }
    )
    out.update(_words(s, rep, out))
    out.update(policy_numbers(s))
    out.update(sampling_numbers(s))
    out.update(over_time_numbers(s))
    out.update(window_numbers(s))
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}


def _lone_over_in_batch(s: Scenario, trace: str) -> float:
    """Recomputing an infinite cache's hits as lone passes over recomputing them inside a batch (NaN: no hits).

    A ratio of totals over the trace, the same as of the rates and defined for a trace of 0 s too.
    """
    hits = _curve(s, trace).totals()
    return hits.lone_s / hits.in_batch_s if hits.in_batch_s else math.nan


def _zero_interval_pct(h: LruHistogram) -> float:
    """Share of the reuses that come at the instant of the block's previous use (%; NaN: no reuse)."""
    values, counts = h.intervals
    n = int(counts.sum())
    return float(counts[values == 0].sum() / n * 100) if n else math.nan


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _words(s: Scenario, rep: dict[str, Any], n: dict[str, Any]) -> dict[str, str]:
    """The page's sentences that a trace with no reuse, or one of 0 s, changes; the usual ones otherwise."""
    tr, bl = rep["trace"], rep["blocks"]
    empty = nothing_to_cache(bl["references"], bl["hit_ratio_infinite_blocks"])
    still = no_duration(tr["requests"], tr["duration_s"])
    return {
        "finding_sentence": _finding_sentence(n, empty, still),
        "span_sentence": _span_sentence(n, still),
        "ceiling_sentence": (
            f"That ceiling is zero: {empty}, so there is nothing to cache, and no tier of any size saves any prefill"
            " on this trace."
            if empty
            else f"That is the ceiling for any tier, and it would take {n['unique_tib']:.1f} TiB."
        ),
        "capacity_sentence": _capacity_sentence(n, empty),
        "reuse_paragraph": _reuse_paragraph(n, empty, still),
        **_saving_words(s, rep, n, empty, still),
    }


def _finding_sentence(n: dict[str, Any], empty: str | None, still: str | None) -> str:
    """The key finding on the workload (the findings page quotes it): tier sizes and reuse, or why there are none."""
    if empty:
        return f"The {n['trace']} trace has nothing to cache ({empty}): an LRU tier of any size hits nothing"
    reuse = (
        f"every repeat reference comes in the same millisecond as its block's last use ({still})"
        if still
        else f"nine in ten repeat references come within {n['reuse_p90_min']:.1f} minutes"
    )
    return (
        f"For the {n['trace']} trace, an LRU tier of {n['cap50_tib']:.2f} TiB catches half of what an infinite cache"
        f" would and {n['cap95_tib']:.2f} TiB catches 95 %; {reuse}, and the hits of a request always form a prefix"
        " of its prompt"
    )


def _span_sentence(n: dict[str, Any], still: str | None) -> str:
    """How many requests over how long, at what rate; or that the trace lasts 0 s and has no rate."""
    if not still:
        return (
            f"It holds {n['requests']:,} requests over {n['duration_min']:.1f} minutes, {n['requests_per_s']:.2f} a"
            " second."
        )
    if n["requests"] == 1:
        return "It holds one request, so it lasts 0 s and has no rate per second."
    return f"It holds {n['requests']:,} requests, all at one timestamp, so it lasts 0 s and has no rate per second."


def _capacity_sentence(n: dict[str, Any], empty: str | None) -> str:
    """The capacity for half, 95 % and all of the achievable hit ratio; or that every tier is empty."""
    if empty:
        return (
            "With nothing to cache, every tier in the table below is empty: 0 blocks already catch all that an"
            " infinite cache would, which is nothing."
        )
    return (
        f"A tier of {n['cap50_tib']:.2f} TiB ({n['cap50_blocks']:,} blocks) catches half of what the infinite cache"
        f" catches, {n['cap50_hit_blocks_pct']:.1f} % of all references; {n['cap95_tib']:.2f} TiB catches"
        f" {n['shown_target_pct']} % of it, which is {n['shown_share_of_unique_pct']:.1f} % of what holding every"
        f" block would take. Catching all of it takes {n['cap100_tib']:.2f} TiB: the last points of hit ratio come"
        " from blocks reused only after many others."
    )


def _reuse_paragraph(n: dict[str, Any], empty: str | None, still: str | None) -> str:
    """How long blocks wait between uses; or why the trace cannot say."""
    if empty:
        return f"There are no reuse intervals to measure: {empty} (the {n['contrast']} trace's are drawn for contrast)."
    if still:
        return (
            f"Every repeat reference comes in the same millisecond as its block's last use ({still}), so the trace"
            " cannot say how long a tier must keep a block."
        )
    return (
        f"Half of all repeat references come within {n['reuse_p50_min']:.1f} minutes of the block's previous use,"
        f" nine in ten within {n['reuse_p90_min']:.1f} and ninety-nine in a hundred within"
        f" {n['reuse_p99_min']:.1f} minutes; the longest wait is {n['reuse_max_min']:.1f} minutes."
        f" {n['reuse_zero_pct']:.1f} % come in the same millisecond, from requests that arrive together and share a"
        f" prefix. A cache that kept each block for {n['reuse_p90_min']:.1f} minutes after its last use would catch"
        " nine in ten of the repeats that an infinite cache catches."
    )


def _saving_words(
    s: Scenario, rep: dict[str, Any], n: dict[str, Any], empty: str | None, still: str | None
) -> dict[str, str]:
    """What recomputing the hits would keep busy, and what the shown tier saves and fetches; or why not."""
    regimes = (
        f"the lone figure {n['lone_over_in_batch']:.2f} times the in-batch one with"
        f" {n['lone_memory_bound_pct']:.1f} % of lone prefixes memory-bound, because the trace's unit is a"
        f" {n['trace_block_tokens']:,}-token block:"
    )
    if empty:
        return {
            "inf_in_batch_clause": "would keep 0 accelerators busy",
            "inf_lone_clause": "0 if each request's hit prefix were recomputed",
            "regimes_sentence": "With nothing to cache, neither regime has anything to recompute. The trace's unit is"
            f" a {n['trace_block_tokens']:,}-token block:",
            "shown_tier_paragraph": f"With nothing to cache, the {SHOWN_TARGET} % tier is empty: it holds, saves and"
            " fetches nothing, so no link is busy and there is no fetch to set against a recomputation (n/a in the"
            " table).",
        }
    if still:
        hits = _curve(s, trace_name(s)).totals()
        cxl, nvme = (_link(_tier(rep, SHOWN_TARGET), k) for k in LINKS_NAMED)
        return {
            "inf_in_batch_clause": f"would take {hits.in_batch_s:.3g} accelerator-seconds",
            "inf_lone_clause": f"{hits.lone_s:.3g} if each request's hit prefix were recomputed",
            "regimes_sentence": f"These are totals, not rates ({still}). The regimes agree here, {regimes}",
            "shown_tier_paragraph": f"The {SHOWN_TARGET} % tier, {n['shown_tib']:.2f} TiB, serves its hits in one"
            f" instant ({still}): there is no rate of hits, no accelerators saved and no link busy per second"
            " (n/a in the table). Set against fetching them over a CXL 2.0 x8 expander, recomputing would take"
            f" {cxl['in_batch_over_fetch']:,.0f} times as long inside a batch and {cxl['lone_over_fetch']:,.0f} times"
            f" as lone passes; over an NVMe Gen4 x4 drive, {nvme['in_batch_over_fetch']:,.0f} and"
            f" {nvme['lone_over_fetch']:,.0f} times.",
        }
    return {
        "inf_in_batch_clause": f"would keep {n['inf_in_batch_gpus']:.1f} accelerators busy full time",
        "inf_lone_clause": f"{n['inf_lone_gpus']:.1f} if each request's hit prefix were recomputed",
        "regimes_sentence": f"The regimes agree here, {regimes}",
        "shown_tier_paragraph": f"The {SHOWN_TARGET} % tier, {n['shown_tib']:.2f} TiB, saves"
        f" {n['shown_in_batch_gpus']:.1f} accelerators inside a batch and {n['shown_lone_gpus']:.1f} as lone"
        f" passes, and has to deliver {n['shown_hit_gbps']:.2f} GB/s of hits on average. Over a CXL 2.0 x8 expander,"
        " the interface of the CXL memory shipping today, fetching them keeps the link"
        f" {n['cxl2_x8_busy_pct']:.1f} % busy, and recomputing would take {n['cxl2_x8_in_batch_ratio']:,.0f} times"
        f" as long inside a batch and {n['cxl2_x8_lone_ratio']:,.0f} times as lone passes. Even an NVMe Gen4 x4"
        f" drive, {n['nvme_gen4_x4_busy_pct']:.1f} % busy, fetches {n['nvme_gen4_x4_in_batch_ratio']:,.0f} times"
        " faster than the accelerators recompute (both regimes: "
        f"{n['nvme_gen4_x4_lone_ratio']:,.0f} times for lone passes).",
    }


def _target_label(target: float) -> str:
    return f"{target:g}%"


def traces_table(s: Scenario) -> pd.DataFrame:
    """One row per trace: requests, lengths, block reuse, reuse intervals, the prefix property checked."""
    rows = []
    for name in (trace_name(s), contrast_name(s)):
        rep = report(s, name)
        tr, bl, pf = rep["trace"], rep["blocks"], rep["prefix"]
        rows.append(
            {
                "trace": name,
                "role": "sized" if name == trace_name(s) else "contrast",
                "requests": tr["requests"],
                "duration_s": tr["duration_s"],
                "requests_per_second": tr["requests_per_s"],
                "input_p50_tokens": tr["input_tokens"]["p50"],
                "input_p90_tokens": tr["input_tokens"]["p90"],
                "input_p99_tokens": tr["input_tokens"]["p99"],
                "output_p50_tokens": tr["output_tokens"]["p50"],
                "block_references": bl["references"],
                "unique_blocks": bl["unique"],
                "hit_infinite_blocks_pct": bl["hit_ratio_infinite_blocks"] * 100,
                "hit_infinite_tokens_pct": bl["hit_ratio_infinite_tokens"] * 100,
                "reuse_p50_s": bl["reuse_interval_s"]["p50"],
                "reuse_p90_s": bl["reuse_interval_s"]["p90"],
                "reuse_p99_s": bl["reuse_interval_s"]["p99"],
                "requests_hit_after_miss": pf["requests_with_a_hit_after_a_miss"],
                "requests_distance_falls": pf["requests_with_a_distance_that_falls"],
                "provenance": "derived",
            }
        )
    return pd.DataFrame(rows)


def tiers_table(s: Scenario) -> pd.DataFrame:
    """Per trace and target: the LRU capacity, its hit ratios and the prefill it avoids, in both regimes."""
    rows = []
    for name in (trace_name(s), contrast_name(s)):
        rep = report(s, name)
        for tier in rep["tiers"]:
            rows.append(
                {
                    "trace": name,
                    "target": _target_label(tier["target_pct"]),
                    "capacity_blocks": tier["capacity_blocks"],
                    "capacity_TiB": tier["capacity_bytes"] / TIB,
                    "hit_blocks_pct": tier["hit_ratio_blocks"] * 100,
                    "hit_tokens_pct": tier["hit_ratio_tokens"] * 100,
                    "hit_GBps": tier["hit_bytes_per_s"] / 1e9,
                    "prefill_avoided_in_batch_gpus": tier["in_batch_gpu_s_per_s"],
                    "prefill_avoided_lone_gpus": tier["lone_gpu_s_per_s"],
                    "lone_memory_bound_pct": tier["lone_memory_bound_share"] * 100,
                    "provenance": "derived",
                }
            )
    return pd.DataFrame(rows)


def links_table(s: Scenario) -> pd.DataFrame:
    """Per trace, target and link preset: how busy fetching the tier's hits keeps the link, against recomputing.

    Each link is a tier of :attr:`Scenario.tier_links` (its bandwidth, and the set's latency per transfer,
    ``latency_us``), fetched in the set's ``fetch_layout`` (``transfers`` per block).
    """
    links = {k.name: k for k in _links(s)}
    rows = []
    for name in (trace_name(s), contrast_name(s)):
        rep = report(s, name)
        for tier in rep["tiers"]:
            for k in tier["links"]:
                rows.append(
                    {
                        "trace": name,
                        "target": _target_label(tier["target_pct"]),
                        "link": k["link"],
                        "bandwidth_GBps": links[k["link"]].bandwidth_bytes_per_s / 1e9,
                        "latency_us": links[k["link"]].latency_s * 1e6,
                        "transfers": s.fetch_transfers,
                        "link_busy_pct": k["fetch_link_s_per_s"] * 100,
                        "recompute_over_fetch_in_batch": k["in_batch_over_fetch"],
                        "recompute_over_fetch_lone": k["lone_over_fetch"],
                        "provenance": "derived",
                    }
                )
    return pd.DataFrame(rows)


TIER_COLUMNS = {
    "target": "share of the achievable hit ratio",
    "capacity_TiB": "capacity (TiB)",
    "capacity_blocks": "capacity (blocks)",
    "hit_blocks_pct": "hits (% of blocks)",
    "hit_tokens_pct": "hits (% of tokens)",
    "hit_GBps": "hits (GB/s)",
    "prefill_avoided_in_batch_gpus": "accelerators saved, in batch",
    "prefill_avoided_lone_gpus": "accelerators saved, lone",
}
"""The columns of :func:`tiers_table` the page shows, and their display names."""

LINK_COLUMNS = {
    "link": "link preset",
    "bandwidth_GBps": "bandwidth (GB/s)",
    "link_busy_pct": "link busy (%)",
    "recompute_over_fetch_in_batch": "recompute / fetch, in batch",
    "recompute_over_fetch_lone": "recompute / fetch, lone",
}
"""The columns of :func:`links_table` the page shows, and their display names."""


def shown_tiers(s: Scenario) -> pd.DataFrame:
    """The page's capacity table: the sized trace's rows of :func:`tiers_table`, display columns."""
    df = tiers_table(s)
    return df.loc[df["trace"] == trace_name(s), list(TIER_COLUMNS)].reset_index(drop=True)


def shown_links(s: Scenario) -> pd.DataFrame:
    """The page's link table: the sized trace at the shown target, from :func:`links_table`, display columns."""
    df = links_table(s)
    keep = (df["trace"] == trace_name(s)) & (df["target"] == _target_label(SHOWN_TARGET))
    return df.loc[keep, list(LINK_COLUMNS)].reset_index(drop=True)


def show(df: pd.DataFrame) -> pd.DataFrame:
    """A shown table with its display column names."""
    return df.rename(columns={**TIER_COLUMNS, **LINK_COLUMNS})


def _footer_records(s: Scenario, *keys: str) -> list:
    return s.used("workload.trace", "workload.block_tokens", *keys)


def _targets_words() -> str:
    """The hit targets the LRU figure marks, in words: '50, 80, 90 and 95 %'."""
    t = [f"{x:g}" for x in TARGETS_PCT]
    return f"{', '.join(t[:-1])} and {t[-1]} %"


def lru_curve(s: Scenario) -> tuple[Figure, str]:
    """Exact LRU hit ratio against the tier's capacity in TiB, both traces, with the targets marked.

    The sized trace is a thick solid line, the contrast a thin dashed grey one; each is named
    on the figure, at its infinite cache's ceiling, so that colour is not the only key.
    """
    from matplotlib.ticker import LogLocator

    name, other = trace_name(s), contrast_name(s)
    fig, ax = new_figure(4.8, 4.4)
    marks: list[tuple[int, float]] = []
    for trace, color, width, style in ((name, PALETTE[0], 2.2, "-"), (other, PALETTE[6], 1.3, "--")):
        reuse = _curve(s, trace)
        caps, ratio = reuse.curve("blocks")
        block_bytes = s.kv_bytes_per_token * reuse.block_tokens
        x = np.r_[caps[0], caps] * block_bytes / TIB
        y = np.r_[0.0, ratio] * 100
        ax.step(x, y, where="post", color=color, lw=width, ls=style)
        inf = float(reuse.hit_ratio()) * 100
        ax.axhline(inf, color=color, lw=0.8, ls=":")
        role = "sized" if trace == name else "contrast"
        ax.annotate(
            f"{trace} ({role}): {inf:.1f} %",
            (0.01, inf),
            xycoords=("axes fraction", "data"),
            textcoords="offset points",
            xytext=(0, 3),
            fontsize=MIN_FONT_PT,
            color=color,
        )
        if trace == name and inf > 0:  # no reuse: no capacity to mark
            for target in TARGETS_PCT:
                cap = reuse.capacity_for(target / 100)
                cx, cy = cap * block_bytes / TIB, float(reuse.hit_ratio(cap)) * 100
                marks.append((target, cx))
                ax.plot(cx, cy, "o", color=PALETTE[1], ms=5, zorder=3)
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))  # five decades: 1, 2, 5 of each would crowd
    ax.set_ylim(0, 100)
    listing = "\n".join(f"{target} %: {cx:,.2f} TiB" for target, cx in marks)
    empty = _nothing_to_cache(s)
    ax.text(
        0.98,
        0.97,
        f"{name} trace:\nnothing to cache" if empty else f"red dots, {name}:\n{listing}",
        transform=ax.transAxes,
        ha="right",
        va="top",
        fontsize=MIN_FONT_PT,
        color=PALETTE[1],
    )
    ax.set_xlabel(f"tier capacity (TiB of {s.model.name} KV, log)")
    ax.set_ylabel("LRU hit ratio (% of block references)")
    records = _footer_records(s, "model", "kv_dtype")
    if empty:
        lead = f"The {name} trace has nothing to cache ({empty}): an LRU tier of any size hits nothing."
    else:
        first, last = marks[0], marks[-1]
        grows = f"grows {last[1] / first[1]:.1f} times" if last[1] > first[1] else "stays the same"
        lead = (
            f"The {name} trace's tier {grows}, from {first[1]:.2f} to {last[1]:.2f} TiB, to go from {first[0]} to"
            f" {last[0]} % of an infinite cache's hits: the last points are the dear ones."
        )
    return finish(
        fig,
        records,
        "Hit ratio against capacity (log axis); dotted: each trace's infinite cache, named with its hit ratio;"
        f" dots: the capacities for {_targets_words()} of it.",
        lead=lead,
        drivers=("workload.trace", "model"),
    )


def reuse_intervals(s: Scenario) -> tuple[Figure, str]:
    """Distribution of the time between consecutive references to a block, both traces.

    The sized trace is a thick solid line, the contrast a thin dashed grey one, both named in the legend.
    """
    from matplotlib.ticker import LogLocator

    name, other = trace_name(s), contrast_name(s)
    fig, ax = new_figure(4.8, 4.0)
    p90 = {}
    for trace, color, width, style in ((name, PALETTE[0], 2.2, "-"), (other, PALETTE[6], 1.3, "--")):
        values, counts = _curve(s, trace).intervals  # distinct waits (s), ascending, and how many reuses each
        if not counts.sum():
            continue
        iv = values / 60
        floor = 1e-3 / 60  # the traces' timestamps are whole milliseconds
        y = np.cumsum(counts) / counts.sum() * 100
        role = "sized" if trace == name else "contrast"
        ax.step(np.maximum(iv, floor), y, where="post", color=color, lw=width, ls=style, label=f"{trace} ({role})")
        pct = counted_percentiles(iv, counts, (50, 90))
        p90[trace] = pct["p90"]
        for q in (50, 90):
            v = pct[f"p{q}"]
            if trace == name:
                ax.plot(max(v, floor), q, "o", color=PALETTE[1], ms=5, zorder=3)
                ax.annotate(
                    f"p{q}: {v:.1f} min",
                    (max(v, floor), q),
                    textcoords="offset points",
                    xytext=(8, -12),
                    fontsize=MIN_FONT_PT,
                    color=PALETTE[1],
                )
    ax.set_xscale("log")
    ax.set_xlim(left=1e-2)
    plain_log_ticks(ax.xaxis)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))  # 1, 2, 5 of each decade would crowd
    ax.set_ylim(0, 100)
    ax.set_xlabel("time since the block's previous use (min, log)")
    ax.set_ylabel("share of repeat references (%)")
    ax.legend(loc="upper left")
    return finish(
        fig,
        _footer_records(s),
        "Cumulative share of repeat references against the wait since the block's previous use (log axis);"
        " repeats within the same millisecond sit at the left edge.",
        lead=_reuse_lead(s, p90),
        drivers=("workload.trace",),
    )


def _nothing_to_cache(s: Scenario) -> str | None:
    """Why the sized trace has nothing to cache, or ``None``."""
    reuse = _curve(s, trace_name(s))
    return nothing_to_cache(reuse.n_refs, float(reuse.hit_ratio()))


def _reuse_lead(s: Scenario, p90_min: dict[str, float]) -> str:
    """The reuse figure's lead: how long nine in ten repeats wait; or why the sized trace cannot say."""
    name, other = trace_name(s), contrast_name(s)
    t = _curve(s, name)
    empty, still = _nothing_to_cache(s), no_duration(t.n_requests, t.duration_s)
    contrast = f"nine in ten repeat references in the {other} trace come within {p90_min[other]:.1f} minutes"
    if empty:
        return f"The {name} trace has no reuse intervals ({empty}); {contrast} of the previous one."
    if still:
        return (
            f"Every repeat reference in the {name} trace comes in the same millisecond as its block's last use"
            f" ({still}), so it cannot say how long a tier must keep a block; {contrast}."
        )
    return (
        f"Nine in ten repeat references in the {name} trace come within {p90_min[name]:.1f} minutes of the block's"
        f" previous use ({p90_min[other]:.1f} in the {other} trace): a tier keeps blocks for"
        f" {_wait_words(p90_min[name])}."
    )


def _wait_words(minutes: float) -> str:
    """How long a tier keeps blocks, by the wait (min) that nine in ten repeats stay within."""
    if minutes < 1:
        return "seconds, not minutes"
    return "minutes, not seconds" if minutes < 60 else "hours, not minutes"


# ---- policies and the optimum --------------------------------------------------------------

POLICY_NAMES: dict[str, str] = {
    "lru": "LRU",
    "leaf_lru": "leaf-first LRU",
    "s3fifo": "S3-FIFO",
    "min": "Belady's MIN",
}
"""The policies of :data:`kvtier.formulas.policies.POLICIES` in words."""
POLICY_FRACTIONS: tuple[float, ...] = (1 / 32, 1 / 8, 1 / 2, 1.0)
"""The capacities the policies are replayed at, as fractions of the decision's LRU capacity (the last is it)."""

_POLICY_CACHE: WeakKeyDictionary[Scenario, dict[str, Any]] = WeakKeyDictionary()


def decision_blocks(s: Scenario) -> int:
    """The capacity the decision recommends (blocks): the LRU tier for ``decision.hit_target`` of the achievable hits.

    :meth:`kvtier.formulas.reuse.Reuse.capacity_for` on the build's trace, the landing page's tier
    (0 for a trace with nothing to cache).
    """
    return int(s.trace_curve().capacity_for(s.v("decision.hit_target")))


POLICY_SAMPLE_REFS = 1 << 24
"""Block references the policies replay of a trace longer than the in-memory analysis holds
(:data:`kvtier.inputs.traces.MAX_TRACE_REFS`): a spatially hashed sample of about this many (16,777,216)."""


def policy_replays(s: Scenario) -> dict[str, Any]:
    """Every policy's hits on the build's trace at each capacity of :data:`POLICY_FRACTIONS` (kept with ``s``).

    The decision's capacity is the LRU tier for ``decision.hit_target`` of the achievable hits
    (:meth:`kvtier.formulas.reuse.LruHistogram.capacity_for`, the landing page's tier); each capacity is at
    least 2 blocks (S3-FIFO's least).  The policies simulate the whole reference sequence in
    memory, exactly up to :data:`kvtier.inputs.traces.MAX_TRACE_REFS` references (what the
    in-memory analysis holds); a longer trace is replayed on a spatially hashed sample of its
    blocks (:func:`kvtier.inputs.traces.read_sample`, about :data:`POLICY_SAMPLE_REFS`
    references) at capacities scaled by the rate, as SHARDS does.
    Sampled, the hits are adjusted as SHARDS adjusts a sampled curve: the references the sample
    holds beyond ``rate`` x the trace's count as hits of its hottest blocks.  Returns
    ``capacities`` (blocks), ``decision`` (blocks), ``hits`` (per policy, references replayed),
    ``n_refs`` (references replayed: ``rate`` x the trace's when sampled), ``sample_rate`` (1:
    every one) and ``block_bytes`` (B).
    """
    found = _POLICY_CACHE.get(s)
    if found is not None:
        return found
    curve = s.trace_curve()
    decision = max(decision_blocks(s), 2)
    caps = sorted({max(int(decision * f), 2) for f in POLICY_FRACTIONS})
    rate = 1.0
    if curve.n_refs > traces.MAX_TRACE_REFS:
        rate = POLICY_SAMPLE_REFS / curve.n_refs
        value = s.assumptions.value
        t = traces.read_sample(trace_name(s), rate, curve.block_tokens, str(value("workload.trace_format")))
        r = Reuse.of(t, str(value("workload.hit_count")))
    else:
        r = s.trace_reuse()
        t = r.trace
    hits = policies.hit_counts(t.blocks, t.starts, r.distance, [max(round(c * rate), 2) for c in caps])
    n_refs: float = t.n_refs
    if rate < 1:
        # SHARDS_adj (Waldspurger et al., FAST'15, section 4.3), as the sampled curve has it: the references the
        # sample holds beyond rate x the trace's are hits of its hottest blocks, at every capacity
        n_refs = rate * curve.n_refs
        hits = {k: np.maximum(v - (t.n_refs - n_refs), 0.0) for k, v in hits.items()}
    found = {
        "capacities": caps,
        "decision": decision,
        "hits": hits,
        "n_refs": n_refs,
        "sample_rate": rate,
        "block_bytes": s.kv_bytes_per_token * t.block_tokens,
    }
    _POLICY_CACHE[s] = found
    return found


def policies_table(s: Scenario) -> pd.DataFrame:
    """Per capacity: each policy's hit ratio on the build's trace, and LRU's as a share of the optimum's (MIN).

    ``decision`` marks the capacity the decision recommends (``decision.hit_target`` of the
    achievable hits, under LRU); the others are fractions of it.  Hits are per block reference.
    """
    p = policy_replays(s)
    n = p["n_refs"]
    rows = []
    for i, cap in enumerate(p["capacities"]):
        row: dict[str, Any] = {
            "trace": trace_name(s),
            "capacity_blocks": cap,
            "capacity_GiB": cap * p["block_bytes"] / 2**30,
            "decision": cap == p["decision"],
        }
        for name in policies.POLICIES:
            row[f"{name}_hit_pct"] = p["hits"][name][i] / n * 100 if n else math.nan
        best = p["hits"]["min"][i]
        row["lru_of_min_pct"] = p["hits"]["lru"][i] / best * 100 if best else math.nan
        row["provenance"] = "derived"
        rows.append(row)
    return pd.DataFrame(rows)


def policy_numbers(s: Scenario) -> dict[str, Any]:
    """The policies' hit ratios at the decision's capacity, and the sentence that sets LRU against the optimum."""
    df = policies_table(s)
    at = df[df["decision"]].iloc[0]
    out: dict[str, Any] = {
        "policy_target_pct": s.v("decision.hit_target") * 100,
        "policy_gib": float(at["capacity_GiB"]),
        "policy_smallest_gib": float(df["capacity_GiB"].iloc[0]),
        "policy_smallest_lru_of_min_pct": float(df["lru_of_min_pct"].iloc[0]),
    }
    for name in policies.POLICIES:
        out[f"policy_{name}_pct"] = float(at[f"{name}_hit_pct"])
    out["policy_lru_of_min_pct"] = float(at["lru_of_min_pct"])
    out["policy_sample_pct"] = policy_replays(s)["sample_rate"] * 100
    out["policy_sentence"] = _policy_sentence(out)
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}


def _policy_sentence(n: dict[str, Any]) -> str:
    """LRU against the optimum at the decision's capacity, in words; or why there is nothing to compare."""
    best = n["policy_min_pct"]
    if best is None or not math.isfinite(best) or best == 0:  # no references (0 / 0), or no hit for any policy
        return "No policy hits anything on this trace, the optimum included: there is nothing to compare."
    return (
        f"At the {n['policy_gib']:,.0f} GiB the decision recommends, LRU reaches {n['policy_lru_pct']:.1f} % of the"
        f" block references, {n['policy_lru_of_min_pct']:.0f} % of the {n['policy_min_pct']:.1f} % the optimum"
        f" (Belady's MIN, which knows every next use) reaches there; leaf-first LRU reaches"
        f" {n['policy_leaf_lru_pct']:.1f} % and S3-FIFO {n['policy_s3fifo_pct']:.1f} %. At"
        f" {n['policy_smallest_gib']:,.0f} GiB LRU gets {n['policy_smallest_lru_of_min_pct']:.0f} %"
        f" of the optimum's hits.{_sampled_words(n['policy_sample_pct'])}"
    )


def _sampled_words(pct: float) -> str:
    """What the policies were replayed on, when not every reference: a sentence, or nothing."""
    if pct >= 100:
        return ""
    return (
        f" The trace is too long to simulate whole, so these come from a spatially hashed sample of {pct:.2g} % of"
        " its blocks, replayed at capacities scaled by the same rate (SHARDS): estimates, where LRU's curve is exact."
    )


_POLICY_STYLE = {"leaf_lru": ("s", PALETTE[3]), "s3fifo": ("^", PALETTE[4]), "min": ("D", PALETTE[1])}


def policies_figure(s: Scenario) -> tuple[Figure, str]:
    """LRU's exact curve against capacity, with leaf-first LRU, S3-FIFO and MIN at the capacities replayed."""
    p = policy_replays(s)
    r = s.trace_curve()
    gib = p["block_bytes"] / 2**30
    fig, ax = new_figure(4.8, 3.6)
    caps, ratio = r.curve("blocks")
    ax.step(
        np.r_[caps[0], caps] * gib,
        np.r_[0.0, ratio] * 100,
        where="post",
        color=PALETTE[0],
        lw=2.0,
        label="LRU (every capacity)",
    )
    x = np.array(p["capacities"], dtype=float) * gib
    for name, (marker, color) in _POLICY_STYLE.items():
        y = np.asarray(p["hits"][name], dtype=float) / max(p["n_refs"], 1) * 100
        ax.plot(
            x,
            y,
            marker=marker,
            color=color,
            ls="-" if name == "min" else "none",
            lw=1.0,
            ms=5,
            label=POLICY_NAMES[name],
        )
    from matplotlib.ticker import LogLocator

    ax.axvline(p["decision"] * gib, color=PALETTE[6], lw=0.8, ls="--")
    ax.annotate(
        "the decision's\ncapacity",
        (p["decision"] * gib, 0.97),
        xycoords=("data", "axes fraction"),
        textcoords="offset points",
        xytext=(3, 0),
        ha="left",
        va="top",
        fontsize=MIN_FONT_PT,
        color=PALETTE[6],
    )
    ax.set_xscale("log")
    ax.set_xlim(x[0] / 4, max(float(caps[-1]) * gib, x[-1]) * 2)
    plain_log_ticks(ax.xaxis)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))
    ax.set_ylim(0, 100)
    ax.legend(loc="upper left", fontsize=MIN_FONT_PT, frameon=False)
    ax.set_xlabel(f"cache capacity (GiB of {s.model.name} KV, log)")
    ax.set_ylabel("hit ratio (% of block references)")
    n = policy_numbers(s)
    lead = (
        f"LRU reaches {n['policy_lru_of_min_pct']:.0f} % of the optimum's hits at the capacity the decision recommends."
        if n["policy_min_pct"]
        else "No policy hits anything on this trace."
    )
    return finish(
        fig,
        _footer_records(s, "model", "kv_dtype", "decision.hit_target"),
        "LRU's exact curve (line); leaf-first LRU, S3-FIFO and Belady's MIN, the offline optimum, replayed at"
        " fractions of the decision's capacity (marks); hits per block reference."
        + (
            f" Marks from a hashed sample of {n['policy_sample_pct']:.2g} % of the blocks."
            if n["policy_sample_pct"] < 100
            else ""
        ),
        lead=lead,
        drivers=("workload.trace", "decision.hit_target"),
    )


# ---- sampled curves and their error ---------------------------------------------------------

SAMPLE_RATES: tuple[float, ...] = traces.SAMPLE_RATES
"""The sampling rates whose error the page states (:data:`kvtier.inputs.traces.SAMPLE_RATES`)."""
SAMPLE_SHOWN_RATE = 0.01
"""The rate whose sampled curve the page draws beside the exact one (the issue's goal rate)."""

_SAMPLING_CACHE: WeakKeyDictionary[Scenario, list[dict[str, Any]]] = WeakKeyDictionary()


def _sampling_rows(s: Scenario, rates: tuple[float, ...]) -> list[dict[str, Any]]:
    """:func:`kvtier.inputs.traces.sampling_error` of both traces the page reads, without the timings.

    Each trace as the page reads it (:func:`_curve`: the sized one at the set's block size and
    format, streamed), counted as ``workload.hit_count`` counts.  Sampling is spatially hashed (SHARDS), so
    the rows are the same on every run.
    """
    count = str(s.assumptions.value("workload.hit_count"))
    rows = []
    for name in (trace_name(s), contrast_name(s)):
        if name == trace_name(s):
            fmt, bt = str(s.assumptions.value("workload.trace_format")), int(s.v("workload.block_tokens"))
        else:
            fmt, bt = traces.DEFAULT_FORMAT, traces.TRACE_BLOCK_TOKENS
        for row in traces.sampling_error(name, rates, bt, fmt, count):
            rows.append(
                {
                    "trace": name,
                    "role": "sized" if name == trace_name(s) else "contrast",
                    "sample_rate_pct": row["rate"] * 100,
                    "block_references": int(row["refs"]),
                    # an unsampled stream (rate 1) keeps every reference but counts none as sampled
                    "sampled_references": int(row["sampled_refs"] if row["rate_used"] < 1 else row["refs"]),
                    "mean_abs_error_pts": row["mean_abs"] * 100,
                    "max_abs_error_pts": row["max_abs"] * 100,
                    "provenance": "derived",
                }
            )
    return rows


def sampling_table(s: Scenario) -> pd.DataFrame:
    """Per trace and rate of :data:`SAMPLE_RATES`: the sampled references and the sampled curve's error.

    The error is :func:`kvtier.formulas.reuse.curve_error`'s: the mean and the largest absolute
    difference of the sampled LRU hit ratio from the exact one, in points of hit ratio (% of block
    references), over evenly spaced capacities up to the one that catches every achievable hit.
    No wall-clock time: that is ``benchmarks/bench_scale.py``'s (tables of record are the same
    on every run).
    """
    found = _SAMPLING_CACHE.get(s)
    if found is None:
        found = _SAMPLING_CACHE[s] = _sampling_rows(s, SAMPLE_RATES)
    return pd.DataFrame(found)


def sampled_curve_of(s: Scenario, rate: float = SAMPLE_SHOWN_RATE) -> LruHistogram:
    """The build's trace sampled at ``rate`` as it streams (:func:`kvtier.inputs.traces.stream_lru`, hashed ids)."""
    value = s.assumptions.value
    return traces.stream_lru(
        trace_name(s),
        int(s.v("workload.block_tokens")),
        trace_format=str(value("workload.trace_format")),
        count=str(value("workload.hit_count")),
        sample_rate=rate,
    )


def sampling_numbers(s: Scenario) -> dict[str, Any]:
    """The sized trace's sampled references and error at each rate, and the sentence that states them."""
    df = sampling_table(s)
    own = df[df["role"] == "sized"]
    out: dict[str, Any] = {"sample_shown_rate_pct": SAMPLE_SHOWN_RATE * 100}
    for _, row in own.iterrows():
        key = _rate_key(row["sample_rate_pct"])
        out[f"sample_{key}_refs"] = int(row["sampled_references"])
        out[f"sample_{key}_mean_pts"] = float(row["mean_abs_error_pts"])
        out[f"sample_{key}_max_pts"] = float(row["max_abs_error_pts"])
    out["sampling_sentence"] = _sampling_sentence(trace_name(s), own)
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}


def _rate_key(pct: float) -> str:
    """A rate in % as a glue-name part: 10 -> '10', 1 -> '1', 0.1 -> '0_1'."""
    return f"{pct:g}".replace(".", "_")


def _sampling_sentence(name: str, own: pd.DataFrame) -> str:
    """What sampling keeps and what it costs in accuracy on the sized trace, at each rate."""
    if own.empty or not int(own["block_references"].iloc[0]):
        return f"The {name} trace holds no block references: there is nothing to sample."
    refs = int(own["block_references"].iloc[0])
    rows = list(own.itertuples())
    first, rest = rows[0], rows[1:]
    parts = [
        f"{first.sampled_references:,} at {first.sample_rate_pct:g} %, off by {first.mean_abs_error_pts:.2f} points"
        f" of hit ratio on average and {first.max_abs_error_pts:.2f} at most",
        *(
            f"{r.sampled_references:,} at {r.sample_rate_pct:g} %, off by {r.mean_abs_error_pts:.2f} and"
            f" {r.max_abs_error_pts:.2f}"
            for r in rest
        ),
    ]
    means = [r.mean_abs_error_pts for r in rows]
    fewest = int(own["sampled_references"].min())
    trend = (
        f"The mean error grows as the sample shrinks to {fewest:,} references"
        if all(a <= b for a, b in zip(means, means[1:], strict=False))
        else f"The error follows how many references the sample keeps, as few as {fewest:,}"
    )
    return (
        f"Sampled, the {name} trace's LRU curve comes from a fraction of its {refs:,} references: {'; '.join(parts)}."
        f" {trend}: a trace this small is measured exactly in a moment, and sampling pays on a fleet's logs of"
        " billions of references, where even the smallest rate keeps millions."
    )


def sampled_figure(s: Scenario) -> tuple[Figure, str]:
    """The build's trace's exact LRU curve and its curve sampled at :data:`SAMPLE_SHOWN_RATE`, against capacity."""
    from matplotlib.ticker import LogLocator

    name = trace_name(s)
    r = s.trace_curve()
    gib = s.kv_bytes_per_token * r.block_tokens / 2**30
    fig, ax = new_figure(4.8, 3.8)
    caps, ratio = r.curve("blocks")
    ax.step(np.r_[caps[0], caps] * gib, np.r_[0.0, ratio] * 100, where="post", color=PALETTE[0], lw=2.2, label="exact")
    h = sampled_curve_of(s)
    scaps, sratio = h.curve("blocks")
    rate_pct = SAMPLE_SHOWN_RATE * 100
    ax.step(
        np.r_[scaps[0], scaps] * gib,
        np.clip(np.r_[0.0, sratio], 0.0, 1.0) * 100,  # SHARDS_adj may step past 0 or 1; hit_ratio clips as well
        where="post",
        color=PALETTE[1],
        lw=1.4,
        ls="--",
        label=f"sampled at {rate_pct:g} %",
    )
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))
    ax.set_ylim(0, 100)
    ax.legend(loc="upper left", fontsize=MIN_FONT_PT, frameon=False)
    ax.set_xlabel(f"tier capacity (GiB of {s.model.name} KV, log)")
    ax.set_ylabel("LRU hit ratio (% of block references)")
    df = sampling_table(s)
    at = df[(df["role"] == "sized") & np.isclose(df["sample_rate_pct"], rate_pct)].iloc[0]
    if int(at["block_references"]):
        lead = (
            f"Sampled at {rate_pct:g} %, {int(at['sampled_references']):,} of the {name} trace's"
            f" {int(at['block_references']):,} references draw its LRU curve within"
            f" {at['mean_abs_error_pts']:.2f} points of hit ratio on average, {at['max_abs_error_pts']:.2f} at most."
        )
    else:
        lead = f"The {name} trace holds no block references: there is nothing to sample."
    return finish(
        fig,
        _footer_records(s, "model", "kv_dtype"),
        "Solid: exact, from every reference; dashed: SHARDS sampling, which keeps the blocks whose hashed id falls"
        " below the rate and scales their distances by its inverse.",
        lead=lead,
        drivers=("workload.trace", "model"),
    )


# ---- the hit ratio over time ----------------------------------------------------------------

OVER_TIME_MAX_WINDOWS = 240
"""The most windows the over-time series draws: a window is a minute, or as many whole minutes as keep below it."""


def over_time_window_s(duration_s: float) -> float:
    """The series' window (s): one minute, or the fewest whole minutes that cut the trace into at most
    :data:`OVER_TIME_MAX_WINDOWS` windows (a week-long trace: 42 minutes)."""
    return 60.0 * max(1, math.ceil(duration_s / 60 / OVER_TIME_MAX_WINDOWS))


_OVER_TIME_CACHE: WeakKeyDictionary[Scenario, dict[str, Any]] = WeakKeyDictionary()


def over_time_series(s: Scenario) -> dict[str, Any]:
    """The build's trace's hit ratio per window at the decision's capacity, and an infinite cache's (kept with ``s``).

    The streamed curve over time (:func:`kvtier.inputs.traces.stream_lru`) with windows of
    :func:`over_time_window_s`.
    Returns ``window_s``, ``capacity_blocks`` (:func:`decision_blocks`), ``start_s`` (each window's
    start from the first request), ``references``, ``hit_ratio`` and ``infinite_hit_ratio`` (fractions;
    NaN with no references), and ``whole`` (the whole trace's hit ratio at the capacity).
    """
    found = _OVER_TIME_CACHE.get(s)
    if found is not None:
        return found
    r = s.trace_curve()
    window = over_time_window_s(r.duration_s)
    cap = decision_blocks(s)
    value = s.assumptions.value

    def series(capacity_blocks: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        h = traces.stream_lru(
            trace_name(s),
            r.block_tokens,
            trace_format=str(value("workload.trace_format")),
            count=str(value("workload.hit_count")),
            over_time=(capacity_blocks, None, window),
        )
        assert h.over_time is not None
        return h.over_time

    start, refs, ratio = series(cap)
    found = {
        "window_s": window,
        "capacity_blocks": cap,
        "start_s": start,
        "references": refs,
        "hit_ratio": ratio,
        "infinite_hit_ratio": series(math.inf)[2],
        "whole": float(r.hit_ratio(cap)),
        "duration_s": r.duration_s,
        "block_bytes": s.kv_bytes_per_token * r.block_tokens,
    }
    _OVER_TIME_CACHE[s] = found
    return found


def _weighted(ratio: np.ndarray, refs: np.ndarray) -> float:
    """The hit ratio of windows together: their hits over their references (NaN: none)."""
    n = float(refs.sum())
    return float(np.nansum(ratio * refs)) / n if n else math.nan


def over_time_numbers(s: Scenario) -> dict[str, Any]:
    """The series in numbers: first window, second half, whole trace, and the sentence a reader concludes from.

    The second half is the windows that start at or after half the trace's span: the tier is warm
    there, and the spread of its windows is the drift.
    """
    o = over_time_series(s)
    start, refs, ratio = o["start_s"], o["references"], o["hit_ratio"]
    late = start >= o["duration_s"] / 2 if start.size else np.zeros(0, dtype=bool)
    late_ratio = ratio[late & (refs > 0)]
    out: dict[str, Any] = {
        "over_time_window_min": o["window_s"] / 60,
        "over_time_windows": int(start.size),
        "over_time_capacity_gib": o["capacity_blocks"] * o["block_bytes"] / 2**30,
        "over_time_first_pct": float(ratio[0]) * 100 if start.size else math.nan,
        "over_time_first_inf_pct": float(o["infinite_hit_ratio"][0]) * 100 if start.size else math.nan,
        "over_time_late_pct": _weighted(ratio[late], refs[late]) * 100,
        "over_time_late_low_pct": float(late_ratio.min()) * 100 if late_ratio.size else math.nan,
        "over_time_late_high_pct": float(late_ratio.max()) * 100 if late_ratio.size else math.nan,
        "over_time_whole_pct": o["whole"] * 100,
    }
    out["over_time_sentence"] = _over_time_sentence(trace_name(s), out)
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}


def _first_window(minutes: float) -> str:
    """The first window in words: 'first minute', 'first 42 minutes'."""
    return "first minute" if minutes == 1 else f"first {minutes:g} minutes"


def _over_time_sentence(name: str, n: dict[str, Any]) -> str:
    """Warm-up and drift in words; or why the trace shows neither."""
    if n["over_time_windows"] < 2 or n["over_time_late_pct"] is None or not math.isfinite(n["over_time_late_pct"]):
        return (
            f"The {name} trace fits in one {n['over_time_window_min']:g}-minute window, so it shows no change over"
            f" time: its hit ratio at the decision's capacity is {n['over_time_whole_pct']:.1f} %."
        )
    return (
        f"The tier starts empty: in the {_first_window(n['over_time_window_min'])} it hits"
        f" {n['over_time_first_pct']:.1f} % of the references (an infinite cache, {n['over_time_first_inf_pct']:.1f} %:"
        " a block must be seen once before it can hit), and over the second half of the trace"
        f" {n['over_time_late_pct']:.1f} %, its windows between {n['over_time_late_low_pct']:.1f} and"
        f" {n['over_time_late_high_pct']:.1f} %. Over the whole trace it hits {n['over_time_whole_pct']:.1f} %"
        + (
            ": the warm-up pulls the whole trace's figure down, and weighs less the longer the trace, so size on the"
            " longest log you have."
            if n["over_time_late_pct"] > n["over_time_whole_pct"]
            else ": the warm tier hits no more than the whole trace, so the spread of the windows is the traffic's"
            " drift, not a warm-up."
        )
    )


def over_time_figure(s: Scenario) -> tuple[Figure, str]:
    """The build's trace's hit ratio per window at the decision's capacity, with an infinite cache's beside it."""
    o = over_time_series(s)
    n = over_time_numbers(s)
    minutes = o["start_s"] / 60
    width = o["window_s"] / 60
    fig, ax = new_figure(4.8, 3.6)
    if minutes.size:
        x = np.r_[minutes, minutes[-1] + width]
        for key, color, lw, ls, label in (
            ("hit_ratio", PALETTE[0], 2.0, "-", f"LRU, {n['over_time_capacity_gib']:,.0f} GiB"),
            ("infinite_hit_ratio", PALETTE[6], 1.2, "--", "infinite cache"),
        ):
            y = np.r_[o[key], o[key][-1]] * 100
            ax.step(x, y, where="post", color=color, lw=lw, ls=ls, label=label)
        ax.axhline(
            o["whole"] * 100, color=PALETTE[0], lw=0.8, ls=":", label=f"LRU, whole trace: {o['whole'] * 100:.1f} %"
        )
    ax.set_ylim(0, 100)
    ax.legend(loc="upper right", fontsize=MIN_FONT_PT, frameon=False)
    ax.set_xlabel("time since the trace's first request (min)")
    ax.set_ylabel(f"hit ratio per {width:g}-min window (%)")
    name = trace_name(s)
    if n["over_time_windows"] >= 2 and n["over_time_late_pct"] is not None:
        lead = (
            f"At the decision's capacity the {name} trace's tier hits {n['over_time_first_pct']:.1f} % in its"
            f" {_first_window(width)} and {n['over_time_late_pct']:.1f} % over the second half; the gap to the"
            " dashed line is the tier's size, the rest warm-up and drift."
        )
    else:
        lead = f"The {name} trace fits in one window: it shows no change over time."
    return finish(
        fig,
        _footer_records(s, "model", "kv_dtype", "decision.hit_target"),
        "Solid: each window's hit ratio at the decision's capacity; dashed: an infinite cache's; dotted: the whole"
        " trace's at that capacity.",
        lead=lead,
        drivers=("workload.trace", "decision.hit_target"),
    )


WINDOWS_MIN: tuple[tuple[float, float], ...] = ((5.0, 0.0), (5.0, 5.0), (15.0, 0.0), (15.0, 5.0))
"""(window, warm-up) pairs in minutes the windowed replay is measured at (``kvtier workload --parts --window``)."""

_WINDOW_CACHE: WeakKeyDictionary[Scenario, list[dict[str, Any]]] = WeakKeyDictionary()


def windows_table(s: Scenario) -> pd.DataFrame:
    """Per (window, warm-up) of :data:`WINDOWS_MIN`: the windowed exact curve's gap to the single pass.

    :func:`kvtier.inputs.traces.stream_windows` on the build's trace (each window replayed on its
    own after its warm-up, the histograms added: :func:`kvtier.inputs.distributed.windowed`'s curve,
    streamed) against the single pass (:meth:`kvtier.scenario.Scenario.trace_curve`), by
    :func:`kvtier.formulas.reuse.curve_error`: the mean and largest gap in points of hit ratio.  A
    reuse that reaches back past a window's warm-up is a miss, so the gap is a loss.
    """
    found = _WINDOW_CACHE.get(s)
    if found is None:
        value = s.assumptions.value
        single = s.trace_curve()
        fmt, count = str(value("workload.trace_format")), str(value("workload.hit_count"))
        found = []
        for window, warmup in WINDOWS_MIN:
            h = traces.stream_windows(trace_name(s), window * 60, warmup * 60, single.block_tokens, fmt, count)
            gap = curve_error(single, h)
            found.append(
                {
                    "window_min": window,
                    "warmup_min": warmup,
                    "mean_gap_pts": gap["mean_abs"] * 100,
                    "max_gap_pts": gap["max_abs"] * 100,
                    "provenance": "derived",
                }
            )
        _WINDOW_CACHE[s] = found
    return pd.DataFrame(found)


def window_numbers(s: Scenario) -> dict[str, Any]:
    """The windows' sentence and its numbers: the shortest window cold and warmed up, the longest cold."""
    df = windows_table(s)
    cold = df[df["warmup_min"] == 0]
    short = df["window_min"] == df["window_min"].min()
    first, warm = df[short & (df["warmup_min"] == 0)].iloc[0], df[short & (df["warmup_min"] > 0)].iloc[0]
    long = cold[cold["window_min"] == cold["window_min"].max()].iloc[0]
    sentence = (
        f"Replayed in {first['window_min']:g}-minute windows that each start cold, the {trace_name(s)} trace's curve"
        f" falls {first['mean_gap_pts']:.2g} points below the single pass on average ({first['max_gap_pts']:.2g} at"
        f" most): every reuse that reaches back into an earlier window is lost. A {warm['warmup_min']:g}-minute"
        f" warm-up before each window brings that to {warm['mean_gap_pts']:.2g} ({warm['max_gap_pts']:.2g}), and"
        f" {long['window_min']:g}-minute windows to {long['mean_gap_pts']:.2g} ({long['max_gap_pts']:.2g}) with no"
        " warm-up: a warm-up should span the reuse intervals that matter (the next section gives them)."
    )
    return {"windows_sentence": sentence}


TABLES = (
    ("workload_traces", traces_table, ("trace",)),
    ("workload_tiers", tiers_table, ("trace", "target")),
    ("workload_links", links_table, ("trace", "target", "link")),
    ("workload_policies", policies_table, ("trace", "capacity_blocks")),
    ("workload_sampling", sampling_table, ("trace", "sample_rate_pct")),
    ("workload_windows", windows_table, ("window_min", "warmup_min")),
)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (
    ("fig_workload_lru", lru_curve),
    ("fig_workload_reuse", reuse_intervals),
    ("fig_workload_policies", policies_figure),
    ("fig_workload_sampled", sampled_figure),
    ("fig_workload_over_time", over_time_figure),
)
"""The page's figures: (glue name, function returning the figure and its caption)."""
