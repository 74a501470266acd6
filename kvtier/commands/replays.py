"""``kvtier workload``'s request-by-request replays: a fleet against a pool, the policies, admission and TTLs.

The fleet and admission replays read the trace a chunk of whole requests at a time
(:class:`kvtier.inputs.traces.RequestChunks`), the policies its block ids alone
(:func:`kvtier.inputs.traces.read_dense`); each returns plain data in SI base units that
:mod:`kvtier.commands.workload` adds to its report (``fleet``, ``policies``, ``admission``); the ``*_lines``
functions give the same as text.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from kvtier import analysis
from kvtier.commands.output import num as _num
from kvtier.commands.output import pct as _pct
from kvtier.formulas.cache import policies
from kvtier.formulas.cache.trace import HIT_COUNTS
from kvtier.inputs import distributed, traces
from kvtier.scenario import Scenario
from kvtier.units import format_bytes, format_time, plural

FLEET_CHUNK_REFS = 1 << 20
"""About how many references the fleet and admission replays read at a time (a chunk of whole requests)."""


def _chunks(s: Scenario, trace: str, parts: dict[str, Any] | None) -> Iterator[tuple[np.ndarray, ...]]:
    """``trace`` in chunks of whole requests, ``(chained ids, starts, prompt tokens, output tokens, arrivals in s)``:
    read line by line (:class:`kvtier.inputs.traces.RequestChunks`), or with ``parts`` (``scheduler``, ``workers``)
    the files ``trace`` names parsed on Dask, a file a chunk in the order of their timestamps."""
    bt, fmt = int(s.v("workload.block_tokens")), str(s.assumptions.value("workload.trace_format"))
    if parts is None:
        yield from traces.RequestChunks(trace, bt, fmt, lambda: FLEET_CHUNK_REFS)
        return
    with distributed.client(parts.get("scheduler"), int(parts.get("workers") or 2)) as c:
        for p in distributed.Parts(distributed.files(trace), bt, fmt, c):
            yield p["ids"], p["starts"], p["input_tokens"], p["output_tokens"], p["timestamps_s"]


def fleet_analysis(
    s: Scenario,
    trace: str,
    cap: int,
    instances: int | None,
    routing: str | None,
    commit: str,
    parts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The trace replayed request by request through ``instances`` tiers of ``cap`` blocks (one without it),
    routed by ``routing``, against one pooled tier (:func:`kvtier.analysis.fleet_stream`), chunk by chunk
    (:func:`_chunks`: one file, or with ``parts`` many on Dask)."""
    bt = int(s.v("workload.block_tokens"))
    stream = analysis.fleet_stream(s, cap, bt, instances or 1, routing, commit)
    for chunk in _chunks(s, trace, parts):
        stream.feed(*chunk)
    out = stream.report()
    out["commit"] = commit
    out["capacity_bytes"] = cap * s.tier_bytes_per_token * bt
    return out


def policy_analysis(s: Scenario, trace: str, capacities_blocks: list[float]) -> dict[str, Any]:
    """Each policy's hit ratio (of block references) at ``capacities_blocks`` (at least 2 blocks each), counted
    per block and up to each request's first miss (:func:`kvtier.formulas.cache.policies.hit_counts_by_rule`),
    every policy replayed on the trace's ids alone (:func:`kvtier.inputs.traces.read_dense`): exact up to
    :data:`kvtier.inputs.traces.DENSE_MAX_REFS` references."""
    blocks, starts = traces.read_dense(
        trace, int(s.v("workload.block_tokens")), str(s.assumptions.value("workload.trace_format"))
    )
    caps = [max(int(round(c)), 2) for c in capacities_blocks]
    out: dict[str, Any] = {"capacity_blocks": caps}
    for count, hits in policies.hit_counts_by_rule(blocks, starts, None, caps).items():
        out[count] = {name: (v / max(blocks.size, 1)).tolist() for name, v in hits.items()}
    return out


def admission_analysis(
    s: Scenario, trace: str, capacity_blocks: float, parts: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``trace``'s tier of ``capacity_blocks`` by what it admits and keeps, chunk by chunk (:func:`_chunks`):
    :func:`kvtier.analysis.admission_chunks`, the workload page's computation."""
    return analysis.admission_chunks(s, _chunks(s, trace, parts), int(s.v("workload.block_tokens")), capacity_blocks)


def admission_lines(rep: dict[str, Any]) -> list[str]:
    """Each admission filter and time to live: what it hits, writes and wears, and what it gives up per write saved."""
    ad = rep.get("admission")
    if not ad:
        return []
    out = [
        "",
        f"the tier of {plural(ad['capacity_blocks'], 'block', ',.0f')} by what it admits and keeps (NVMe wear on"
        f" {format_bytes(ad['drives_bytes'])} of drives)",
        f"{'filter':<20} {'TTL':>10} {'hit tokens':>11} {'writes':>10} {'DWPD':>8} {'pts lost / DWPD saved':>22}",
    ]
    for row in ad["rows"]:
        ttl = "none" if row["ttl_s"] is None or not math.isfinite(row["ttl_s"]) else format_time(row["ttl_s"])
        out.append(
            f"{row['filter']:<20} {ttl:>10} {_pct(row['hit_ratio_tokens']):>11} {row['writes']:>10,}"
            f" {_num(row['drive_writes_per_day'], '.2f'):>8} {_lost(row['points_lost_per_dwpd_saved']):>22}"
        )
    out.append(
        "TTL: the five-minute rule's residency in that tier for the trace's block in a batch (kvtier cost);"
        " a block idle longer is gone when next asked for"
    )
    return out


def _lost(points: float | None) -> str:
    """Points of hit ratio lost per drive write a day saved; below 0 the filter gains hits as it saves writes,
    said as ``gains 0.01`` (a negative loss read as a loss)."""
    if points is not None and math.isfinite(points) and points < 0:
        return f"gains {-points:.2f}"
    return _num(points, ".2f")


def policy_lines(rep: dict[str, Any]) -> list[str]:
    """Each policy's hit ratio at each tier's capacity, both hit rules where they differ."""
    pol = rep.get("policies")
    if not pol:
        return []
    this = rep["hit_count"]["count"]
    other = HIT_COUNTS[1 - HIT_COUNTS.index(this)]
    out = [
        "",
        f"policies at each tier's capacity: hits of all block references, counted {this}"
        f" (in brackets, counted {other}, where it differs)",
        f"{'capacity':>10} " + " ".join(f"{policies.POLICY_NAMES[name]:>20}" for name in policies.POLICIES),
    ]
    for i, cap in enumerate(pol["capacity_blocks"]):
        cells = []
        for name in policies.POLICIES:
            a, b = pol[this][name][i], pol[other][name][i]
            cells.append(f"{_pct(a) + ('' if a == b else ' (' + _pct(b) + ')'):>20}")
        out.append(f"{cap:>10,} " + " ".join(cells))
    return out


def fleet_lines(rep: dict[str, Any]) -> list[str]:
    """The fleet's replay: one tier, or each instance's and one pooled tier of the same bytes."""
    ft = rep.get("fleet")
    if not ft:
        return []
    node, pool = ft["node"], ft["pooled"]
    cap = f"{plural(ft['capacity_blocks'], 'block', ',.0f')} ({format_bytes(ft['capacity_bytes'])})"
    tokens = round(node["hit_ratio_tokens"] * ft["prompt_tokens"])
    served = f"{tokens:,} of {ft['prompt_tokens']:,} prompt tokens hit ({_pct(node['hit_ratio_tokens'])})"
    order = f"blocks touched {ft['commit']} after each lookup; hits counted up to each request's first miss"
    if ft["instances"] == 1:
        return ["", f"an LRU tier of {cap}, replayed request by request: {served}", f"  {order}"]
    per = ft["per_instance"]
    out = [
        "",
        f"{ft['instances']} instances, {ft['routing']} routing, an LRU tier of {cap} each: {served}",
        f"  {order}",
        f"{'instance':>8} {'requests':>9} {'hit tokens':>11} {'prefill s':>10}",
    ]
    for i, (n, hit, pre) in enumerate(zip(per["requests"], per["hit_ratio_tokens"], per["prefill_s"], strict=True)):
        out.append(f"{i:>8} {n:>9,} {_num(hit * 100 if hit is not None else None, '.1f'):>10}% {pre:>10,.1f}")
    out += [
        f"  busiest instance: {ft['requests_imbalance']:.2f}x the mean requests,"
        f" {ft['prefill_imbalance']:.2f}x the mean prefill seconds",
        "",
        f"{'tier':<46} {'hit tokens':>11} {'TTFT mean':>10} {'TTFT p90':>10}",
        f"{'one per instance (' + node['link'] + ')':<46} {_pct(node['hit_ratio_tokens']):>11}"
        f" {format_time(node['ttft_mean_s']):>10} {format_time(node['ttft_p90_s']):>10}",
        f"{'one pooled, ' + plural(pool['capacity_blocks'], 'block', ',.0f') + ' (' + pool['link'] + ')':<46}"
        f" {_pct(pool['hit_ratio_tokens']):>11} {format_time(pool['ttft_mean_s']):>10}"
        f" {format_time(pool['ttft_p90_s']):>10}",
        f"{'none':<46} {'':>11} {format_time(ft['none']['ttft_mean_s']):>10}"
        f" {format_time(ft['none']['ttft_p90_s']):>10}",
        "TTFT: the hit prefix fetched, then the rest prefilled alone; queueing for the instance not counted",
    ]
    return out
