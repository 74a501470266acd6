"""The workload page's eviction policies: LRU against the others on the sized trace, replayed once per set."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import numpy as np
import pandas as pd

from kvtier import analysis, store
from kvtier.formulas.cache import policies
from kvtier.formulas.cache.curve import Reuse
from kvtier.formulas.cache.policies import POLICY_NAMES
from kvtier.inputs import traces
from kvtier.report.columns import Column, declare, named
from kvtier.report.figures import MIN_FONT_PT, PALETTE, finish, new_figure, plain_log_ticks
from kvtier.report.pages.workload.curve import footer_records
from kvtier.report.pages.workload.summary import trace_name
from kvtier.report.pages.workload.words import policy_sentence
from kvtier.scenario import Scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure


POLICY_FRACTIONS: tuple[float, ...] = (1 / 32, 1 / 8, 1 / 2, 1.0)
"""The capacities the policies are replayed at, as fractions of the decision's LRU capacity (the last is it)."""


_POLICY_CACHE: WeakKeyDictionary[Scenario, dict[str, Any]] = WeakKeyDictionary()


POLICY_SAMPLE_REFS = 1 << 24
"""Block references the policies replay of a trace longer than they replay exactly
(:data:`kvtier.inputs.traces.DENSE_MAX_REFS`): a spatially hashed sample of about this many (16,777,216)."""


def policy_replays(s: Scenario) -> dict[str, Any]:
    """Every policy's hits on the build's trace at each capacity of :data:`POLICY_FRACTIONS` (kept with ``s``).

    The decision's capacity is the LRU tier for ``decision.hit_target`` of the achievable hits
    (:meth:`kvtier.formulas.cache.curve.LruHistogram.capacity_for`, the landing page's tier); each capacity is at
    least 2 blocks (S3-FIFO's least).  The policies simulate the whole reference sequence:
    with the in-memory analysis's stack distances up to :data:`kvtier.inputs.traces.MAX_TRACE_REFS`
    references, then on the trace's ids alone (:func:`kvtier.inputs.traces.read_dense`, 4 B a reference, LRU
    replayed too) up to :data:`kvtier.inputs.traces.DENSE_MAX_REFS`; a longer trace is replayed on a spatially
    hashed sample of its blocks (:func:`kvtier.inputs.traces.read_sample`, about :data:`POLICY_SAMPLE_REFS`
    references) at capacities scaled by the rate, as SHARDS does.
    Sampled, the hits are adjusted as SHARDS adjusts a sampled curve: the references the sample
    holds beyond ``rate`` x the trace's count as hits of its hottest blocks.  Returns
    ``capacities`` (blocks), ``decision`` (blocks), ``hits`` (per policy, references replayed, per block) and
    ``prefix_hits`` (those before each request's first miss; NaN on a sample),
    ``n_refs`` (references replayed: ``rate`` x the trace's when sampled), ``sample_rate`` (1:
    every one) and ``block_bytes`` (B).
    """
    found = _POLICY_CACHE.get(s)
    if found is not None:
        return found
    curve = analysis.curve(s)
    decision = max(analysis.decision_blocks(s), 2)
    caps = sorted({max(int(decision * f), 2) for f in POLICY_FRACTIONS})
    rate = POLICY_SAMPLE_REFS / curve.n_refs if curve.n_refs > traces.DENSE_MAX_REFS else 1.0
    value = s.assumptions.value
    trace_format, count = str(value("workload.trace_format")), str(value("workload.hit_count"))

    def replay() -> dict[str, Any]:
        scaled = [max(round(c * rate), 2) for c in caps]
        if rate < 1:
            t = traces.read_sample(trace_name(s), rate, curve.block_tokens, trace_format)
            r = Reuse.of(t, count)
            blocks, starts, distance, held = t.blocks, t.starts, r.distance, t.n_refs
        elif curve.n_refs > traces.MAX_TRACE_REFS:  # every reference, held as its id alone
            blocks, starts = traces.read_dense(trace_name(s), curve.block_tokens, trace_format)
            distance, held = None, blocks.size
        else:
            r = analysis.reuse(s)
            blocks, starts, distance, held = r.trace.blocks, r.trace.starts, r.distance, r.trace.n_refs
        both = policies.hit_counts_by_rule(blocks, starts, distance, scaled)
        hits, prefix = both["per-block"], both["prefix"]
        n_refs: float = held
        if rate < 1:
            # SHARDS_adj (Waldspurger et al., FAST'15, section 4.3), as the sampled curve has it: the references the
            # sample holds beyond rate x the trace's are hits of its hottest blocks, at every capacity
            n_refs = rate * curve.n_refs
            hits = {k: np.maximum(v - (held - n_refs), 0.0) for k, v in hits.items()}
            # a sample keeps a prompt's blocks apart, so where its first miss falls is not measured
            prefix = {k: np.full(len(v), np.nan) for k, v in prefix.items()}
        return {"hits": hits, "prefix_hits": prefix, "n_refs": n_refs, "block_tokens": curve.block_tokens}

    # the replays depend on the trace and the capacities alone, not on the model: one per key in a build
    key = {
        "trace": analysis.trace_key(s),
        "capacities": caps,
        "sample_rate": rate,
        "name": trace_name(s),
        "rules": list(policies.HIT_COUNTS),
        "policies": list(policies.POLICIES),
    }
    replayed = replay() if key["trace"] is None else store.memoized("policies", key, replay)
    found = {
        "capacities": caps,
        "decision": decision,
        "hits": replayed["hits"],
        "prefix_hits": replayed["prefix_hits"],
        "n_refs": replayed["n_refs"],
        "sample_rate": rate,
        "block_bytes": s.tier_bytes_per_token * replayed["block_tokens"],  # as a tier stores it
    }
    _POLICY_CACHE[s] = found
    return found


POLICIES_COLUMNS = (
    Column("trace", "trace"),
    Column("capacity_blocks", "capacity in blocks"),
    Column("capacity_GiB", "capacity", "GiB"),
    Column("decision", "decision", words=("the decision's capacity", "")),
    *(Column(f"{name}_hit_pct", f"{POLICY_NAMES[name]} hits", "%") for name in policies.POLICIES),
    *(
        Column(f"{name}_prefix_hit_pct", f"{POLICY_NAMES[name]} hits before a request's first miss", "%")
        for name in policies.POLICIES
    ),
    Column("lru_of_min_pct", "LRU's share of MIN's hits", "%"),
    *named("provenance"),
)
"""The columns of :func:`policies_table`, in words with their units: a hit ratio per policy."""


def policies_table(s: Scenario) -> pd.DataFrame:
    """Per capacity: each policy's hit ratio on the build's trace, and LRU's as a share of the optimum's (MIN).

    ``decision`` marks the capacity the decision recommends (``decision.hit_target`` of the
    achievable hits, under LRU); the others are fractions of it.  Hits are of all block references, counted
    per block (``*_hit_pct``) and before each request's first miss (``*_prefix_hit_pct``: what a prefix cache
    serves).
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
        for name in policies.POLICIES:
            row[f"{name}_prefix_hit_pct"] = p["prefix_hits"][name][i] / n * 100 if n else math.nan
        best = p["hits"]["min"][i]
        row["lru_of_min_pct"] = p["hits"]["lru"][i] / best * 100 if best else math.nan
        row["provenance"] = "derived"
        rows.append(row)
    return declare(pd.DataFrame(rows), POLICIES_COLUMNS)


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
        out[f"policy_{name}_prefix_pct"] = float(at[f"{name}_prefix_hit_pct"])
    out["policy_lru_of_min_pct"] = float(at["lru_of_min_pct"])
    out["policy_sample_pct"] = policy_replays(s)["sample_rate"] * 100
    out["policy_sentence"] = policy_sentence(out)
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}


_POLICY_STYLE = {
    "leaf_lru": ("s", PALETTE[3]),
    "s3fifo": ("^", PALETTE[4]),
    "sieve": ("v", PALETTE[2]),
    "min": ("D", PALETTE[1]),
}


def policies_figure(s: Scenario) -> tuple[Figure, str]:
    """LRU's exact curve against capacity, with leaf-first LRU, S3-FIFO, SIEVE and MIN at the capacities replayed."""
    p = policy_replays(s)
    r = analysis.curve(s)
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
        footer_records(s, "model", "kv_dtype", "decision.hit_target"),
        "LRU's exact curve (line); leaf-first LRU, S3-FIFO, SIEVE and Belady's MIN, the offline optimum, replayed at"
        " fractions of the decision's capacity (marks); hits per block reference."
        + (
            f" Marks from a hashed sample of {n['policy_sample_pct']:.2g} % of the blocks."
            if n["policy_sample_pct"] < 100
            else ""
        ),
        lead=lead,
        drivers=("workload.trace", "decision.hit_target"),
    )
