"""The workload report of a measured trace, for the command line and the book.

:func:`report` gathers the curve, the capacities for :data:`TARGETS_PCT` of the achievable hits,
reuse intervals, the prefill work the hits avoid in both regimes and the time to fetch them over each
:class:`LinkSpec`; :func:`count_difference` compares the two hit counts; :func:`cache_figures` gives a trace's
statistics and cache figures as Mooncake's FAST'25 paper states them (its cache ratio, and the share of it an LRU
cache of a given number of tokens reaches).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kvtier.formulas.cache.curve import LruHistogram, Reuse, counted_stats, percentiles
from kvtier.formulas.cache.regen import RegenCosts, hit_totals, saving
from kvtier.formulas.cache.trace import HIT_COUNTS

TARGETS_PCT: tuple[int, ...] = (50, 80, 90, 95)
"""Shares of the achievable (infinite-cache) hit ratio whose capacity the report gives (%)."""


# ---------------------------------------------------------------------------
# the whole report, for the command line and the book
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LinkSpec:
    """A link the hits could be fetched over: name, bandwidth (B/s, one direction), per-transfer latency (s)."""

    name: str
    bandwidth_bytes_per_s: float
    latency_s: float


def _stats(values: np.ndarray) -> dict[str, float]:
    out = percentiles(values)
    out["mean"] = float(np.mean(values)) if np.size(values) else math.nan
    return out


def _trace_parts(reuse: Reuse | LruHistogram) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``trace`` and ``blocks`` parts of :func:`report` (less the hit ratios), in memory or streamed."""
    if isinstance(reuse, LruHistogram):
        h = reuse
        duration = h.duration_s
        trace = {
            "name": h.name,
            "format": h.trace_format,
            "block_tokens": h.block_tokens,
            "requests": h.n_requests,
            "duration_s": duration,
            "requests_per_s": h.n_requests / duration if duration > 0 else math.nan,
            "input_tokens": counted_stats(*h.input_tokens),
            "output_tokens": counted_stats(*h.output_tokens),
        }
        return trace, {"references": h.n_refs, "unique": h.n_unique, "reuse_interval_s": counted_stats(*h.intervals)}
    t = reuse.trace
    duration = t.duration_s
    trace = {
        "name": t.name,
        "format": t.trace_format,
        "block_tokens": t.block_tokens,
        "requests": t.n_requests,
        "duration_s": duration,
        "requests_per_s": t.n_requests / duration if duration > 0 else math.nan,
        "input_tokens": _stats(t.input_tokens),
        "output_tokens": _stats(t.output_tokens),
    }
    return trace, {"references": t.n_refs, "unique": t.n_unique, "reuse_interval_s": _stats(reuse.reuse_interval_s)}


def report(
    reuse: Reuse | LruHistogram,
    rc: RegenCosts,
    links: Sequence[LinkSpec] = (),
    targets_pct: Sequence[float] = TARGETS_PCT,
) -> dict[str, Any]:
    """Everything the analysis says about one trace, in SI base units (a JSON-ready mapping).

    Parameters
    ----------
    reuse : Reuse or LruHistogram
        The measured trace: in memory, or streamed (:class:`LruStream` fed with the same
        ``rc``), which gives the same figures up to the order of floating-point sums.
    rc : RegenCosts
        The model and accelerator that price the hits.
    links : sequence of LinkSpec
        Links to fetch the hits over.
    targets_pct : sequence of float
        Shares of the achievable hit ratio to size the tier for (%).

    Returns
    -------
    dict
        ``trace`` (requests, duration, rate, length percentiles), ``blocks`` (references,
        unique blocks, infinite-cache hit ratios, reuse-interval percentiles), ``prefix``
        (the prefix property, checked), ``hit_count`` (how hits are counted, and what counting
        them the other way would change), ``block_bytes`` (one logical block, B),
        ``tier_block_bytes`` (what it takes in the tier: ``stored_copies`` times that, B) and
        ``tiers``: one entry per target and one for 100 %, each with its capacity, hit ratios,
        the prefill avoided per second in both regimes and, per link, the link-seconds per second
        its fetches take and how many times longer recomputing takes.
        The last tier is ``target_pct`` 100: the smallest LRU tier that hits every reference an
        infinite cache would (the largest stack distance plus one).
    """
    trace, blocks = _trace_parts(reuse)
    duration = trace["duration_s"]
    block_bytes = rc.kv_bytes_per_token * trace["block_tokens"]
    tier_block_bytes = rc.tier_bytes_per_token * trace["block_tokens"]  # what one block takes in the tier
    tiers = []
    for target in [*(x for x in targets_pct if x != 100), 100]:
        cap = float(reuse.capacity_for(target / 100))
        sv = saving(reuse, rc, cap)
        tot = hit_totals(reuse, rc, cap)
        if tot.per_request is not None:
            (hit_blocks, hit_tokens), copies = tot.per_request, None
        else:  # a streamed trace's totals: the engine's blocks its requests' prefixes lie in, counted as it streamed
            hit_blocks, hit_tokens, copies = tot.hit_blocks, tot.hit_tokens, tot.fetch_copies
        per_link = []
        for link in links:
            fetch_s = rc.fetch_s(hit_blocks, hit_tokens, link.bandwidth_bytes_per_s, link.latency_s, copies)
            fetch = float(fetch_s.sum()) / duration if duration > 0 else math.nan
            in_batch, lone, per = sv.in_batch_gpu_s_per_s, sv.lone_gpu_s_per_s, fetch
            if not duration > 0:  # a trace of 0 s has no rates, but its totals have a ratio; no hits: 0
                per = float(fetch_s.sum())
                fetch = math.nan if per else 0.0
                in_batch, lone = tot.in_batch_s, tot.lone_s
            per_link.append(
                {
                    "link": link.name,
                    "fetch_link_s_per_s": fetch,
                    "in_batch_over_fetch": in_batch / per if per else math.nan,
                    "lone_over_fetch": lone / per if per else math.nan,
                }
            )
        tiers.append(
            {
                "target_pct": target,
                "capacity_blocks": cap,
                "capacity_bytes": cap * tier_block_bytes,
                **vars(sv),  # its capacity_blocks is cap, already in place
                "links": per_link,
            }
        )
    blocks["hit_ratio_infinite_blocks"] = float(reuse.hit_ratio())
    blocks["hit_ratio_infinite_tokens"] = float(reuse.hit_ratio(weighting="tokens"))
    return {
        "trace": trace,
        "blocks": {k: blocks[k] for k in ("references", "unique", *_HIT_KEYS, "reuse_interval_s")},
        "prefix": {
            "requests_with_a_hit_after_a_miss": reuse.requests_with_a_hit_after_a_miss,
            "requests_with_a_distance_that_falls": reuse.requests_with_a_distance_that_falls,
        },
        "hit_count": count_difference(reuse, [t["capacity_blocks"] for t in tiers]),
        "sample_rate": reuse.sample_rate if isinstance(reuse, LruHistogram) else 1.0,
        "block_bytes": block_bytes,
        "tier_block_bytes": tier_block_bytes,
        "stored_copies": rc.stored_copies,
        "kv_bytes_per_token": rc.kv_bytes_per_token,
        "regen": vars(rc).copy(),
        "engine": _engine_part(reuse, rc),
        "tiers": tiers,
    }


def _engine_part(reuse: Reuse | LruHistogram, rc: RegenCosts) -> dict[str, Any] | None:
    """Under the engine model: its tables, their grid and the share of the trace's prompts longer than it; else None.

    A prompt longer than the grid is priced by the package's extrapolation (``regen.beyond_grid:
    extrapolate``; under ``refuse`` such a trace is refused before this).
    """
    if not rc.engine:
        return None
    return {
        "tables": rc.engine_label,
        "grid_tokens": rc.engine_grid_tokens,
        "prompts_beyond_grid": share_longer(reuse, rc.engine_grid_tokens),
    }


def share_longer(reuse: Reuse | LruHistogram, tokens: float) -> float:
    """Share of the trace's requests whose prompt is longer than ``tokens`` (fraction; 0 for no requests).

    In memory or streamed alike (the streamed trace keeps its prompt lengths as values and counts).
    """
    if isinstance(reuse, LruHistogram):
        values, counts = (np.asarray(x, dtype=float) for x in reuse.input_tokens)
    else:
        values = np.asarray(reuse.trace.input_tokens, dtype=float)
        counts = np.ones_like(values)
    total = float(counts.sum())
    return float(counts[values > tokens].sum()) / total if total else 0.0


_HIT_KEYS = ("hit_ratio_infinite_blocks", "hit_ratio_infinite_tokens")


def count_difference(reuse: Reuse | LruHistogram, capacities: Sequence[float]) -> dict[str, Any]:
    """How the hits are counted, and the block hit ratio the other count gives at each capacity, less this one's.

    Returns
    -------
    dict
        ``count`` (:data:`HIT_COUNTS`), ``other`` (the other count), ``capacity_blocks`` and
        ``other_minus_this`` (fraction of references, one per capacity; all 0 where no stack
        distance falls along a prompt).
    """
    other = next(c for c in HIT_COUNTS if c != reuse.count)
    alt = reuse.recounted(other) if isinstance(reuse, Reuse) else reuse.other
    diff = [0.0 if alt is None else float(alt.hit_ratio(c)) - float(reuse.hit_ratio(c)) for c in capacities]
    return {
        "count": reuse.count,
        "other": other,
        "capacity_blocks": [float(c) for c in capacities],
        "other_minus_this": diff,
    }


# ---------------------------------------------------------------------------
# a trace's cache figures as Mooncake (FAST'25) publishes them
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheFigures:
    """A trace's workload statistics and cache figures as Mooncake's FAST'25 paper states them (Table 2, Figure 9).

    Attributes
    ----------
    requests : int
        Requests in the trace.
    mean_input_tokens, mean_output_tokens : float
        Mean prompt and output length (tokens).
    cache_ratio : float
        Share of the prompt tokens an unbounded cache serves: every token of a block whose prefix was seen
        before, a prompt's partial last block by its own tokens (fraction; Table 2's "cache ratio").
    cache_ratio_blocks : float
        The same share counted in block references (fraction).
    capacity_blocks : ndarray of int
        The whole blocks each capacity holds (``capacity_tokens // block_tokens``).
    hit_ratio : ndarray of float
        Share of the prompt tokens an LRU cache of each capacity serves, hits counted as the curve counts them
        (fraction).
    share_of_max : ndarray of float
        ``hit_ratio / cache_ratio``: how much of the unbounded cache's hits each capacity reaches (fraction;
        NaN where the trace reuses nothing; Figure 9's annotations).
    """

    requests: int
    mean_input_tokens: float
    mean_output_tokens: float
    cache_ratio: float
    cache_ratio_blocks: float
    capacity_blocks: np.ndarray
    hit_ratio: np.ndarray
    share_of_max: np.ndarray


def cache_figures(reuse: Reuse | LruHistogram, capacity_tokens: float | Sequence[float] | np.ndarray) -> CacheFigures:
    """The workload statistics and cache figures of a measured trace, at each of ``capacity_tokens`` (tokens).

    Read off the exact LRU curve (in memory or streamed, :func:`report`'s input): the unbounded cache's token
    hit ratio is Mooncake's cache ratio; an LRU cache of ``C`` tokens holds ``C // block_tokens`` whole blocks
    (a prompt's partial last block takes a whole one) and hits the references whose stack distance is below
    that.  Vectorized over the capacities.

    Parameters
    ----------
    reuse : Reuse or LruHistogram
        The measured trace; it says its tokens per block.
    capacity_tokens : float or array_like
        Cache capacities (tokens, at least 0); a scalar is one capacity (each result an array of one).

    Raises
    ------
    ValueError
        A negative capacity, or a streamed curve that does not say its tokens per block.
    """
    caps = np.atleast_1d(np.asarray(capacity_tokens, dtype=float))
    if np.any(~(caps >= 0)):
        raise ValueError(f"capacities must be at least 0 tokens, got {capacity_tokens!r}")
    if isinstance(reuse, LruHistogram):
        block_tokens = reuse.block_tokens
        cum = np.cumsum(reuse.counts["tokens"])
        total = reuse.total["tokens"]
        inputs, outputs = counted_stats(*reuse.input_tokens)["mean"], counted_stats(*reuse.output_tokens)["mean"]
        requests = reuse.n_requests
    else:
        t = reuse.trace
        block_tokens = t.block_tokens
        inputs = float(np.mean(t.input_tokens)) if t.n_requests else math.nan
        outputs = float(np.mean(t.output_tokens)) if t.n_requests else math.nan
        requests = t.n_requests
    if not block_tokens > 0:
        raise ValueError("the curve does not say its tokens per block")
    blocks = np.floor(caps / block_tokens).astype(np.int64)
    if isinstance(reuse, LruHistogram):
        upto = np.minimum(blocks, cum.size)  # hits: the weight at distances below the capacity
        hits = np.where(upto > 0, cum[np.maximum(upto, 1) - 1] if cum.size else 0.0, 0.0)
        hit = hits / total if total else np.zeros_like(caps)
        if reuse.sample_rate < 1:
            hit = np.clip(hit, 0.0, 1.0)
    else:
        hit = np.asarray(reuse.hit_ratio(blocks.astype(float), weighting="tokens"), dtype=float)
    ratio = float(reuse.hit_ratio(weighting="tokens"))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(ratio > 0, hit / ratio, math.nan)
    return CacheFigures(
        requests=requests,
        mean_input_tokens=inputs,
        mean_output_tokens=outputs,
        cache_ratio=ratio,
        cache_ratio_blocks=float(reuse.hit_ratio()),
        capacity_blocks=blocks,
        hit_ratio=hit,
        share_of_max=share,
    )


SAMPLED_FIGURES: dict[str, str] = {
    "hit_ratio_pts": "hit ratios (the curve at every capacity, and the infinite cache's)",
    "unique_rel": "distinct blocks",
    "capacity_rel": "tier sizes",
    "saving_rel": "prefill saved per second",
    "reuse_interval_rel": "reuse intervals",
    "link_rel": "link time and recompute / fetch",
}
"""The figures of a sampled report whose error :func:`figure_errors` measures, with what each is in words:
``*_pts`` in points of hit ratio, ``*_rel`` relative (0.1: 10 %)."""


def _rel(exact: float, sampled: float) -> float:
    """``|sampled / exact - 1|``: 0 for two zeros or two undefined figures (NaN), infinite for a zero, an undefined
    or an infinite figure against another."""
    if math.isnan(exact) and math.isnan(sampled):
        return 0.0
    if not (math.isfinite(exact) and math.isfinite(sampled)):
        return 0.0 if exact == sampled else math.inf
    if exact == 0:
        return 0.0 if sampled == 0 else math.inf
    return abs(sampled / exact - 1)


def figure_errors(exact: dict[str, Any], sampled: dict[str, Any], curve_pts: float) -> dict[str, float]:
    """How far each figure of a sampled :func:`report` lies from the exact one's, the largest over its entries.

    Parameters
    ----------
    exact, sampled : dict
        :func:`report` of one trace, exact and sampled, with the same targets and links.
    curve_pts : float
        The largest gap between the two LRU curves (points of hit ratio,
        :func:`kvtier.formulas.cache.curve.curve_error`'s ``max_abs`` x 100).

    Returns
    -------
    dict
        Keyed as :data:`SAMPLED_FIGURES`: ``hit_ratio_pts`` the larger of ``curve_pts`` and the infinite cache's
        gap (points); the others relative: each tier's capacity, each tier's prefill saved per second in both
        regimes, the reuse interval's p50, p90, p99 and maximum, each tier's and link's link time per second and
        recompute / fetch ratios.
    """
    eb, sb = exact["blocks"], sampled["blocks"]
    inf_gap = max(abs(sb[k] - eb[k]) for k in ("hit_ratio_infinite_blocks", "hit_ratio_infinite_tokens")) * 100
    pairs = list(zip(exact["tiers"], sampled["tiers"], strict=True))
    links = [(a, b) for te, ts in pairs for a, b in zip(te["links"], ts["links"], strict=True)]
    return {
        "hit_ratio_pts": max(curve_pts, inf_gap),
        "unique_rel": _rel(eb["unique"], sb["unique"]),
        "capacity_rel": max(_rel(te["capacity_blocks"], ts["capacity_blocks"]) for te, ts in pairs),
        "saving_rel": max(_rel(te[k], ts[k]) for te, ts in pairs for k in ("in_batch_gpu_s_per_s", "lone_gpu_s_per_s")),
        "reuse_interval_rel": max(
            _rel(eb["reuse_interval_s"][k], sb["reuse_interval_s"][k]) for k in ("p50", "p90", "p99", "max")
        ),
        "link_rel": max(
            (
                _rel(a[k], b[k])
                for a, b in links
                for k in ("fetch_link_s_per_s", "in_batch_over_fetch", "lone_over_fetch")
            ),
            default=0.0,
        ),
    }
