"""The workload page's trace summary: the sized trace and its contrast, each read and reported once.

The report of a trace (:func:`kvtier.formulas.cache.report.report`) for the set's model, over the set's tier
links; :func:`trace_summary` is the one summary of a trace that both the table of record and the page's
numbers read.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from kvtier import analysis, store
from kvtier.formulas import roofline
from kvtier.formulas.cache.curve import LruHistogram
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.report import LinkSpec
from kvtier.formulas.cache.report import report as workload_report
from kvtier.inputs import traces
from kvtier.report.columns import Column, declare, named
from kvtier.scenario import Scenario

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


def link_specs(s: Scenario) -> list[LinkSpec]:
    """The tiers of :attr:`Scenario.tier_links`, fastest first: each bandwidth and the set's latency per transfer.

    The set's ``fetch_layout`` sets how many transfers a block's fetch pays it
    (:meth:`kvtier.scenario.Scenario.regen_costs` reads ``Scenario.fetch_transfers``).
    """
    tiers = s.tier_links
    order = sorted(range(len(tiers.names)), key=lambda i: (-tiers.bandwidth_bytes_per_s[i], tiers.names[i]))
    return [LinkSpec(tiers.names[i], float(tiers.bandwidth_bytes_per_s[i]), float(tiers.latency_s[i])) for i in order]


def curve(s: Scenario, trace: str) -> LruHistogram:
    """The sized trace's streamed curve (:func:`kvtier.analysis.stream`), or the shipped contrast's, as published.

    Each with what recomputing its hits costs for the set's model, read in memory bounded by its
    distinct blocks, the way ``kvtier workload`` reads it.
    """
    if trace == trace_name(s):
        return analysis.curve(s)
    count, rc = str(s.assumptions.value("workload.hit_count")), s.regen_costs()

    def compute() -> LruHistogram:
        return traces.stream_lru(trace, traces.TRACE_BLOCK_TOKENS, count=count, rc=rc)

    key = {"trace": traces.version_key(trace), "count": count, "rc": rc}
    return compute() if key["trace"] is None else store.memoized("contrast-curve", key, compute)


def report(s: Scenario, trace: str) -> dict[str, Any]:
    """:func:`kvtier.formulas.cache.report.report` of ``trace`` for the set's model, at its illustrative MFU bracket."""
    return workload_report(curve(s, trace), s.regen_costs(), link_specs(s))


def tier_of(rep: dict[str, Any], target: float) -> dict[str, Any]:
    """The tier of a report at a hit-ratio ``target`` (% of the achievable)."""
    return next(t for t in rep["tiers"] if t["target_pct"] == target)


def link_of(tier: dict[str, Any], name: str) -> dict[str, Any]:
    """The link ``name`` of a report's tier."""
    return next(k for k in tier["links"] if k["link"] == name)


def engine_grid_sentence(rep: dict[str, Any]) -> str:
    """Under the engine model, how many of the trace's prompts are longer than its kernel tables measured; else ''."""
    engine = rep.get("engine")
    if not engine:
        return ""
    share = engine["prompts_beyond_grid"] * 100
    if not share:
        return (
            f"Every prompt of the trace is inside the {engine['grid_tokens']:,.0f} tokens the kernel tables measured."
        )
    return (
        f"{share:.1f} % of the trace's prompts are longer than the {engine['grid_tokens']:,.0f} tokens the kernel"
        " tables measured; their prefixes are priced by aiconfigurator-core's extrapolation past the tables' grid"
        " (attention grows as the square of the sequence)."
    )


def lone_numbers(s: Scenario, rep: dict[str, Any]) -> dict[str, Any]:
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
    if rc.engine:  # the measured kernels: the block alone and inside a batch, no roofline
        alone, inside = (float(rc.regen_s(np.array(block), regime)) for regime in ("lone", "batch"))
        clause = (
            f"alone, one such block takes {alone * 1e3:,.0f} ms as its own pass and {inside * 1e3:,.0f} ms as its"
            " share of a batched step."
        )
    else:
        clause = (
            f"alone, one such block takes {compute * 1e3:,.0f} ms of compute against {weights * 1e3:.1f} ms to stream"
            f" the weights once, and a lone pass turns compute-bound past about {float(meet):.0f} tokens."
        )
    return {
        "lone_block_compute_ms": compute * 1e3,
        "lone_weights_read_ms": weights * 1e3,
        "lone_meet_tokens": float(meet),
        "lone_block_clause": clause,
    }


def lone_over_in_batch(s: Scenario, trace: str) -> float:
    """Recomputing an infinite cache's hits as lone passes over recomputing them inside a batch (NaN: no hits).

    A ratio of totals over the trace, the same as of the rates and defined for a trace of 0 s too.
    """
    hits = curve(s, trace).totals()
    return hits.lone_s / hits.in_batch_s if hits.in_batch_s else math.nan


def zero_interval_pct(h: LruHistogram) -> float:
    """Share of the reuses that come at the instant of the block's previous use (%; NaN: no reuse)."""
    values, counts = h.intervals
    n = int(counts.sum())
    return float(counts[values == 0].sum() / n * 100) if n else math.nan


def trace_summary(s: Scenario, name: str) -> dict[str, Any]:
    """One trace in figures: requests, lengths, block reuse, reuse intervals, the prefix property checked.

    The one summary of a trace: :func:`traces_table` lays out one row of it per trace, and the
    page's numbers quote it.  Counts are plain, durations in s, shares in %.
    """
    rep = report(s, name)
    tr, bl, pf = rep["trace"], rep["blocks"], rep["prefix"]
    return {
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
        "reuse_max_s": bl["reuse_interval_s"]["max"],
        "requests_hit_after_miss": pf["requests_with_a_hit_after_a_miss"],
        "requests_distance_falls": pf["requests_with_a_distance_that_falls"],
        "unique_tib": bl["unique"] * rep["tier_block_bytes"] / TIB,
        "provenance": "derived",
    }


TRACE_COLUMNS = (
    *named("trace", "role", "requests"),
    Column("duration_s", "duration", "s"),
    Column("requests_per_second", "requests per second"),
    *(Column(f"input_p{q}_tokens", f"input p{q}", "tokens") for q in (50, 90, 99)),
    Column("output_p50_tokens", "output p50", "tokens"),
    Column("block_references", "block references"),
    Column("unique_blocks", "unique blocks"),
    Column("hit_infinite_blocks_pct", "hit infinite blocks", "%"),
    Column("hit_infinite_tokens_pct", "hit infinite tokens", "%"),
    *(Column(f"reuse_p{q}_s", f"reuse p{q}", "s") for q in (50, 90, 99)),
    Column("requests_hit_after_miss", "requests hit after a miss"),
    Column("requests_distance_falls", "requests whose reuse distance falls"),
    *named("provenance"),
)
"""The columns of the traces table, in words with their units: the summary of :func:`trace_summary` but the
longest wait and the TiB."""


def traces_table(s: Scenario) -> pd.DataFrame:
    """One row per trace, the sized one first: its :func:`trace_summary`."""
    rows = [trace_summary(s, name) for name in (trace_name(s), contrast_name(s))]
    return declare(pd.DataFrame([{c.name: row[c.name] for c in TRACE_COLUMNS} for row in rows]), TRACE_COLUMNS)
