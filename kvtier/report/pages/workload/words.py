"""The workload page's sentences: what its trace, tiers, policies, sampling and windows mean, in words.

Each builder takes numbers already computed (the page's numbers, a report, a table's rows) and
returns prose; a trace with no reuse, or one that lasts 0 s, gets the sentence that says so.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from kvtier.data import SHIPPED_TRACES
from kvtier.errors import show
from kvtier.formulas.cache.policies import POLICY_NAMES
from kvtier.formulas.cache.report import TARGETS_PCT
from kvtier.inputs.traces.files import shadows_shipped
from kvtier.inputs.traces.formats import TRACE_FORMATS
from kvtier.report.pages.workload.summary import (
    LINKS_NAMED,
    SHOWN_TARGET,
    contrast_name,
    curve,
    link_of,
    tier_of,
    trace_name,
)
from kvtier.report.words import listed, no_duration, nothing_to_cache, times
from kvtier.scenario import Scenario
from kvtier.units import format_time


def page_words(s: Scenario, rep: dict[str, Any], n: dict[str, Any]) -> dict[str, str]:
    """The page's sentences that a trace with no reuse, or one of 0 s, changes; the usual ones otherwise."""
    tr, bl = rep["trace"], rep["blocks"]
    empty = nothing_to_cache(bl["references"], bl["hit_ratio_infinite_blocks"])
    still = no_duration(tr["requests"], tr["duration_s"])
    return {
        **trace_words(s),
        "finding_sentence": finding_sentence(n, empty, still),
        "span_sentence": span_sentence(n, still),
        "ceiling_sentence": (
            f"That ceiling is zero: {empty}, so there is nothing to cache, and no tier of any size saves any prefill"
            " on this trace."
            if empty
            else f"That is the ceiling for any tier, and it would take {n['unique_tib']:.1f} TiB."
        ),
        "capacity_sentence": capacity_sentence(n, empty),
        "reuse_paragraph": reuse_paragraph(n, empty, still),
        **saving_words(s, rep, n, empty, still),
    }


def trace_words(s: Scenario) -> dict[str, str]:
    """Where the page's trace comes from and what its ids name, from the trace's own record and format.

    ``trace_sentence``: a shipped trace is Mooncake's, published with its FAST'25 paper under Apache-2.0; any other
    is the team's own, named as the set names it, with its record's provenance and source.  ``ids_sentence``: a
    chained format's ids name a prompt up to their block; another's name one block's tokens, chained by the reader.
    """
    name = trace_name(s)
    record = s.a("workload.trace")
    if name in SHIPPED_TRACES and not shadows_shipped(name):
        origin = (
            f"the {name} trace of Mooncake, Kimi's serving system ({record.provenance}, published by its authors with"
            " their FAST'25 paper under the Apache-2.0 licence, and shipped with kvtier)"
        )
    else:
        source = f"; {record.source}" if record.source else ""
        origin = f"your own trace, {show(name)} ({record.provenance}{source})"
    fmt = TRACE_FORMATS[str(s.assumptions.value("workload.trace_format"))]
    head = f"Each request lists its prompt as hash ids, one per {s.v('workload.block_tokens'):,.0f}-token block"
    if fmt.chained:
        ids = f"{head}, chained: two equal ids mean an equal prompt up to and including that block"
    else:
        ids = (
            f"{head}, each naming that block's own tokens ({fmt.name} format); kvtier chains them as a prefix cache"
            " keys its blocks, so that two equal chained ids mean an equal prompt up to and including that block"
        )
    return {
        "trace_sentence": origin,
        "ids_sentence": f"{ids}, and a repeated id is a block whose KV a cache could have kept.",
    }


def finding_sentence(n: dict[str, Any], empty: str | None, still: str | None) -> str:
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
        f" would and {n['cap95_tib']:.2f} TiB catches 95 %; {reuse}, and under LRU the hits of a request always form a"
        " prefix of its prompt"
    )


def span_sentence(n: dict[str, Any], still: str | None) -> str:
    """How many requests over how long, at what rate; or that the trace lasts 0 s and has no rate."""
    if not still:
        return (
            f"It holds {n['requests']:,} requests over {n['duration_min']:.1f} minutes, {n['requests_per_s']:.2f} a"
            " second."
        )
    if n["requests"] == 1:
        return "It holds one request, so it lasts 0 s and has no rate per second."
    return f"It holds {n['requests']:,} requests, all at one timestamp, so it lasts 0 s and has no rate per second."


def capacity_sentence(n: dict[str, Any], empty: str | None) -> str:
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


def reuse_paragraph(n: dict[str, Any], empty: str | None, still: str | None) -> str:
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


def saving_words(
    s: Scenario, rep: dict[str, Any], n: dict[str, Any], empty: str | None, still: str | None
) -> dict[str, str]:
    """What recomputing the hits would keep busy, and what the shown tier saves and fetches; or why not."""
    bound = (  # the roofline's side of each lone prefix; the measured kernels have no such split
        "" if rep.get("engine") else f" with {n['lone_memory_bound_pct']:.1f} % of lone prefixes memory-bound,"
    )
    regimes = (
        f"the lone figure {n['lone_over_in_batch']:.2f} times the in-batch one{bound or ','} because the trace's unit"
        f" is a {n['trace_block_tokens']:,}-token block:"
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
        hits = curve(s, trace_name(s)).totals()
        cxl, nvme = (link_of(tier_of(rep, SHOWN_TARGET), k) for k in LINKS_NAMED)
        return {
            "inf_in_batch_clause": f"would take {hits.in_batch_s:.3g} accelerator-seconds",
            "inf_lone_clause": f"{hits.lone_s:.3g} if each request's hit prefix were recomputed",
            "regimes_sentence": f"These are totals, not rates ({still}). The regimes agree here, {regimes}",
            "shown_tier_paragraph": f"The {SHOWN_TARGET} % tier, {n['shown_tib']:.2f} TiB, serves its hits in one"
            f" instant ({still}): there is no rate of hits, no accelerators saved and no link busy per second"
            " (n/a in the table). Set against fetching them over a CXL 2.0 x8 expander, recomputing would take"
            f" {_times(cxl['in_batch_over_fetch'])} as long inside a batch and {_times(cxl['lone_over_fetch'])}"
            f" as lone passes; over an NVMe Gen4 x4 drive, {_times(nvme['in_batch_over_fetch']).removesuffix(' times')}"
            f" and {_times(nvme['lone_over_fetch'])}.",
        }
    return {
        "inf_in_batch_clause": f"would keep {n['inf_in_batch_gpus']:.1f} accelerators busy full time",
        "inf_lone_clause": f"{n['inf_lone_gpus']:.1f} if each request's hit prefix were recomputed",
        "regimes_sentence": f"The regimes agree here, {regimes}",
        "shown_tier_paragraph": f"The {SHOWN_TARGET} % tier, {n['shown_tib']:.2f} TiB, saves"
        f" {n['shown_in_batch_gpus']:.1f} accelerators inside a batch and {n['shown_lone_gpus']:.1f} as lone"
        f" passes, and has to deliver {n['shown_hit_gbps']:.2f} GB/s of hits on average. Over a CXL 2.0 x8 expander,"
        " the interface of the CXL memory shipping today, fetching them keeps the link"
        f" {n['cxl2_x8_busy_pct']:.1f} % busy, and recomputing would take {_times(n['cxl2_x8_in_batch_ratio'])}"
        f" as long inside a batch and {_times(n['cxl2_x8_lone_ratio'])} as lone passes. {_nvme_words(n)}",
    }


def _times(ratio: float) -> str:
    """A ratio in words, never rounded to 0 (:func:`kvtier.report.words.times`): ``1,234 times``, ``0.045 times``."""
    return times(ratio).replace("×", " times")


def _nvme_words(n: dict[str, Any]) -> str:
    """The NVMe drive against recomputing: "even" it fetches faster only where it does, in both regimes."""
    batch, lone = n["nvme_gen4_x4_in_batch_ratio"], n["nvme_gen4_x4_lone_ratio"]
    busy = f"{n['nvme_gen4_x4_busy_pct']:.1f} % busy"
    if min(batch, lone) >= 1:
        return (
            f"Even an NVMe Gen4 x4 drive, {busy}, fetches {_times(batch)} faster than the accelerators recompute"
            f" (both regimes: {_times(lone)} for lone passes)."
        )
    return (
        f"Over an NVMe Gen4 x4 drive, {busy}, recomputing would take {_times(batch)} as long as fetching inside a"
        f" batch and {_times(lone)} as lone passes."
    )


def targets_words() -> str:
    """The hit targets the LRU figure marks, in words: '50, 80, 90 and 95 %'."""
    t = [f"{x:g}" for x in TARGETS_PCT]
    return f"{', '.join(t[:-1])} and {t[-1]} %"


def trace_nothing_to_cache(s: Scenario) -> str | None:
    """Why the sized trace has nothing to cache, or ``None``."""
    reuse = curve(s, trace_name(s))
    return nothing_to_cache(reuse.n_refs, float(reuse.hit_ratio()))


def reuse_lead(s: Scenario, p90_min: dict[str, float]) -> str:
    """The reuse figure's lead: how long nine in ten repeats wait; or why the sized trace cannot say."""
    name, other = trace_name(s), contrast_name(s)
    t = curve(s, name)
    empty, still = trace_nothing_to_cache(s), no_duration(t.n_requests, t.duration_s)
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
        f" {wait_words(p90_min[name])}."
    )


def wait_words(minutes: float) -> str:
    """How long a tier keeps blocks, by the wait (min) that nine in ten repeats stay within."""
    if minutes < 1:
        return "seconds, not minutes"
    return "minutes, not seconds" if minutes < 60 else "hours, not minutes"


def policy_sentence(n: dict[str, Any]) -> str:
    """LRU against the optimum at the decision's capacity, in words; or why there is nothing to compare."""
    best = n["policy_min_pct"]
    if best is None or not math.isfinite(best) or best == 0:  # no references (0 / 0), or no hit for any policy
        return "No policy hits anything on this trace, the optimum included: there is nothing to compare."
    return (
        f"At the {n['policy_gib']:,.0f} GiB the decision recommends, LRU reaches {n['policy_lru_pct']:.1f} % of the"
        f" block references, {n['policy_lru_of_min_pct']:.0f} % of the {n['policy_min_pct']:.1f} % the optimum"
        f" (Belady's MIN, which knows every next use) reaches there; leaf-first LRU reaches"
        f" {n['policy_leaf_lru_pct']:.1f} %, S3-FIFO {n['policy_s3fifo_pct']:.1f} % and SIEVE"
        f" {n['policy_sieve_pct']:.1f} %. At"
        f" {n['policy_smallest_gib']:,.0f} GiB LRU gets {n['policy_smallest_lru_of_min_pct']:.0f} %"
        f" of the optimum's hits.{prefix_words(n)}{sampled_words(n['policy_sample_pct'])}"
    )


def prefix_words(n: dict[str, Any]) -> str:
    """Which hit rule the policy figures count, and what the other gives where it differs: a sentence."""
    differ = [
        (POLICY_NAMES[name], n[f"policy_{name}_prefix_pct"])
        for name in POLICY_NAMES
        if n.get(f"policy_{name}_prefix_pct") is not None
        and math.isfinite(n[f"policy_{name}_prefix_pct"])
        and round(n[f"policy_{name}_prefix_pct"], 1) != round(n[f"policy_{name}_pct"], 1)
    ]
    head = " These count every reference whose block is held (per block)"
    if not differ:
        return head + "; counted up to each request's first miss, as a prefix cache serves them, they are the same."
    parts = ", ".join(f"{name} {pct:.1f} %" for name, pct in differ)
    return f"{head}; counted up to each request's first miss, as a prefix cache serves them: {parts}."


def fleet_paragraph(n: dict[str, Any]) -> str:
    """The decision's tier split over a fleet under each router, against one pool, in words; or why nothing moves.

    ``n``: :func:`kvtier.report.pages.workload.fleet.fleet_numbers`.
    """
    pool = n["fleet_pool_hit_pct"]
    if pool is None or not math.isfinite(pool) or pool == 0:
        return (
            "On this trace a tier holds nothing anyone asks for again, so no split of it over instances, and no"
            " router, serves a token, and a pool serves none either."
        )
    return (
        f"Split the decision's tier evenly over {n['fleet_instances']:,} instances, {n['fleet_tier_gib']:,.0f} GiB"
        " each, and what they serve depends on the router. Sent without regard to the caches, a request finds its"
        " prefix on its instance only as often as chance puts it there: round robin serves"
        f" {n['fleet_round_robin_hit_pct']:.1f} % of the prompt tokens, a random pick {n['fleet_random_hit_pct']:.1f} %"
        f" and the instance with the fewest requests in flight {n['fleet_least_loaded_hit_pct']:.1f} %. Keeping a"
        f" conversation on one instance serves {n['fleet_session_hit_pct']:.1f} %, and sending each request to the"
        " instance that holds its longest cached prefix, as KV-aware routers do (balancing load when the busiest"
        f" instance runs too far ahead), {n['fleet_prefix_hit_pct']:.1f} %, its busiest instance prefilling"
        f" {n['fleet_prefix_prefill_x']:.2f} times the mean. One pooled tier of all {n['fleet_pool_gib']:,.0f} GiB,"
        " which every instance reads over its own RDMA NIC, holds whatever the whole fleet reused most recently,"
        f" whatever the router: it serves {pool:.1f} %, at a mean time to first token of"
        f" {n['fleet_pool_ttft_ms']:,.0f} ms against {n['fleet_prefix_ttft_ms']:,.0f} ms for a tier per instance"
        f" under the prefix router and {n['fleet_none_ttft_ms']:,.0f} ms with no tier."
    )


def sampled_words(pct: float) -> str:
    """What the policies were replayed on, when not every reference: a sentence, or nothing."""
    if pct >= 100:
        return ""
    return (
        f" The trace is too long to simulate whole, so these come from a spatially hashed sample of {pct:.2g} % of"
        " its blocks, replayed at capacities scaled by the same rate (SHARDS): estimates, where LRU's curve is exact."
    )


def sampling_sentence(name: str, own: pd.DataFrame) -> str:
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
    built = "; ".join(
        f"at {r.sample_rate_pct:g} %, the prefill saved {_off(r.saving_error_pct)} and a tier's size"
        f" {_off(r.capacity_error_pct)}"
        for r in rows
    )
    return (
        f"Sampled, the {name} trace's LRU curve comes from a fraction of its {refs:,} references: {'; '.join(parts)}."
        f" {trend}: a trace this small is measured exactly in a moment, and sampling pays on a fleet's logs of"
        " billions of references, where even the smallest rate keeps millions. The figures built on the curve"
        f" have errors of their own: {built} (the table gives the reuse intervals' too)."
    )


def _off(pct: float) -> str:
    """A sampled figure's largest relative error in words: ``up to 12 % off``, or that it has no bound."""
    if math.isfinite(pct):
        return f"up to {pct:.0f} % off"
    return "off by no finite share (the exact figure is zero, or undefined, where the sampled one is not)"


def first_window(minutes: float) -> str:
    """The first window in words: 'first minute', 'first 42 minutes'."""
    return "first minute" if minutes == 1 else f"first {minutes:g} minutes"


def over_time_sentence(name: str, n: dict[str, Any]) -> str:
    """Warm-up and drift in words; or why the trace shows neither."""
    if n["over_time_windows"] < 2 or n["over_time_late_pct"] is None or not math.isfinite(n["over_time_late_pct"]):
        return (
            f"The {name} trace fits in one {n['over_time_window_min']:g}-minute window, so it shows no change over"
            f" time: its hit ratio at the decision's capacity is {n['over_time_whole_pct']:.1f} %."
        )
    return (
        f"The tier starts empty: in the {first_window(n['over_time_window_min'])} it hits"
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


def _gap(diff_pts: float) -> str:
    """A recomputed share against a published one printed to a whole percent: agreement, or the points between."""
    if abs(diff_pts) < 0.5:
        return "the same to the paper's whole percent"
    return f"{abs(diff_pts):.1f} points {'below' if diff_pts < 0 else 'above'}"


COUNT_WORDS = {
    "prefix": "A request's hits count up to its first miss, as a prefix cache serves them.",
    "per-block": "Every cached block of a request counts as a hit, even after a miss.",
}
"""How the curve counts a request's hits (``workload.hit_count``), as the Mooncake paragraph says it."""


def mooncake_paragraph(n: dict[str, Any], traces: tuple[str, ...], count: str) -> str:
    """Where the recomputed Mooncake figures (``n``'s ``mc_*``) agree with the published ones, and where and why not."""

    def off(t: str, q: str) -> float:
        return abs(n[f"mc_{t}_{q}"] - n[f"mc_{t}_{q}_published"])

    same = all(
        off(t, "requests") == 0 and off(t, "mean_input_tokens") <= 0.5 and off(t, "mean_output_tokens") <= 0.5
        for t in traces
    )
    names = " and ".join(traces)
    stats = (
        f"The request counts and mean input and output lengths of the {names} traces are the paper's, to its whole"
        " tokens: these are the traces it measured."
        if same
        else f"The request counts or mean lengths of the {names} traces differ from the paper's (the table): the"
        " shipped files may not be the traces it measured."
    )
    ratio = ", and ".join(
        f"{n[f'mc_{t}_cache_ratio_pct']:.1f} % of the {t} trace's input tokens against the paper's"
        f" {n[f'mc_{t}_cache_ratio_pct_published']:g} % ({_gap(n[f'mc_{t}_cache_ratio_diff_pts'])})"
        for t in traces
    )
    blocks = " and ".join(f"{n[f'mc_{t}_cache_ratio_blocks_pct']:.1f} %" for t in traces)
    published = "cache_ratio_pct_published"
    far = [t for t in traces if min(abs(n[f"mc_{t}_{k}"] - n[f"mc_{t}_{published}"]) for k in RATIO_KEYS) >= 0.5]
    gaps = "gaps" if len(far) > 1 else "gap"
    unexplained = (
        f" Neither count gives the {' or the '.join(far)} trace's published ratio to its whole percent, and the paper"
        f" ({n['mc_ratio_where']}) says no more of how its ratio is counted or what it divides by, so the {gaps} cannot"
        f" be traced from the trace alone."
        if far
        else ""
    )
    shares = ", and ".join(
        f"{n[f'mc_{t}_hit_pct']:.1f} % of the {t} trace's input tokens, {n[f'mc_{t}_share_of_max_pct']:.1f} % of its"
        f" cache ratio, against the paper's {n[f'mc_{t}_share_of_max_pct_published']:g} %"
        f" ({_gap(n[f'mc_{t}_share_of_max_diff_pts'])})"
        for t in traces
    )
    reach = [n[f"mc_{t}_reach_mtokens"] for t in traces]
    local = n["mc_local_mtokens"]
    steep = ""
    if all(r is not None for r in reach):
        where = " and ".join(f"{r:.2f} M tokens on the {t} trace" for r, t in zip(reach, traces, strict=True))
        apart = min(reach) < local < max(reach)
        steep = f" The curve is steep there: it reaches the published shares at {where}" + (
            ", on either side of the paper's capacity, so no one capacity gives both." if apart else "."
        )
    under = [t for t in traces if n[f"mc_{t}_share_of_max_pct"] < 50]
    on = "both traces" if len(under) == len(traces) == 2 else "the " + " and the ".join(under) + " trace"
    verdict = (
        f" What the recomputation confirms is the figure's point: a local cache that size serves under half of what"
        f" an unbounded one would, on {on}."
        if under
        else " The recomputation does not confirm the figure's point: a local cache that size serves half or more of"
        " what an unbounded one would, on every shipped trace."
    )
    return (
        f"{stats} An unbounded cache serves {ratio}. Counted in block references instead of tokens, the ratios are"
        f" {blocks}.{unexplained} An LRU cache the size of the paper's local cache, {local:g} M tokens or"
        f" {n['mc_local_blocks']:,} whole blocks of {n['mc_block_tokens']:,} tokens (the trace's own block: its hash"
        f" ids allow no other), serves {shares}.{steep} {COUNT_WORDS[count]} The"
        f" paper's figure ({n['mc_share_where']}) replays only the sequence of requests, but names no eviction policy,"
        " does not say whether its capacity counts whole blocks or tokens, and prints its shares to a whole percent;"
        " the recomputation is LRU over whole blocks, a prompt's partial last block taking a whole one, so it checks"
        f" the figure's shape rather than its points.{verdict}"
    )


RATIO_KEYS = ("cache_ratio_pct", "cache_ratio_blocks_pct")
"""The two counts of the cache ratio the paragraph sets against the published one: by tokens and by blocks."""


def _dwpd(x: float) -> str:
    """Drive writes a day in words: one decimal from 10 up, two below, "under 0.01" below that."""
    if x >= 10:
        return f"{x:,.1f}"
    return f"{x:.2f}" if x >= 0.01 else "under 0.01"


def admission_paragraph(n: dict[str, Any]) -> str:
    """The decision's tier by what it admits and how long it keeps a block, in words; or why nothing is written.

    ``n``: :func:`kvtier.report.pages.workload.admission.admission_numbers` (NaN or None where a figure has none).
    """

    def given(key: str) -> float | None:
        x = n.get(key)
        return x if x is not None and math.isfinite(x) else None

    always = given("admission_always_dwpd")
    if always is None or not always > 0:
        return "On this trace the tier writes nothing, so no filter has a drive write to save."
    keys = ("second", "third", "tinylfu")
    got = [(n[f"admission_{k}_hit_pct"], n[f"admission_{k}_dwpd"], given(f"admission_{k}_pts_per_dwpd")) for k in keys]
    names = ("the second-reference filter", "the third-reference filter", "TinyLFU")

    def cost(pts: float | None) -> str:  # a negative cost is a gain: the filter hits more as it writes less
        if pts is None:
            return "none (it saves no write)"
        return f"{pts:,.2f}" if pts >= 0 else f"none: it gains {-pts:,.2f}"

    costs = listed(f"{name} {cost(pts)}" for name, (_, _, pts) in zip(names, got, strict=True))
    first = (
        f"Admitting every miss, the tier serves {n['admission_always_hit_pct']:.1f} % of the prompt tokens and, were"
        f" it on {n['admission_drives_tb']:,.2f} TB of NVMe drives, would write them {_dwpd(always)} times a day."
        f" Admitting a block only on its second reference serves {got[0][0]:.1f} % at {_dwpd(got[0][1])} drive"
        f" writes a day; only on its third, {got[1][0]:.1f} % at {_dwpd(got[1][1])}; by TinyLFU's frequency sketch,"
        f" {got[2][0]:.1f} % at {_dwpd(got[2][1])}. Per drive write a day saved they give up, in points of hit"
        f" ratio: {costs}."
    )
    dram, nvme = given("admission_ttl_pcie5_x16_ttl_h"), given("admission_ttl_nvme_gen4_x4_ttl_h")
    if dram is None or nvme is None:
        return first
    expired = (n.get("admission_ttl_pcie5_x16_expired") or 0) + (n.get("admission_ttl_nvme_gen4_x4_expired") or 0)
    ttl = (
        f" The five-minute rule keeps the trace's block in host DRAM for {dram:,.1f} h and on NVMe for"
        f" {nvme / 24:,.1f} days before recomputing it costs less than holding it"
    )
    if expired == 0:
        return (
            f"{first}{ttl}; set as a time to live, neither expires a block of a trace that lasts"
            f" {format_time(n['admission_duration_s'])}, so on it a TTL changes nothing and capacity alone decides."
        )
    return (
        f"{first}{ttl}; set as a time to live, they serve {n['admission_ttl_pcie5_x16_hit_pct']:.1f} % and"
        f" {n['admission_ttl_nvme_gen4_x4_hit_pct']:.1f} % of the prompt tokens."
    )
