"""Time to first token on the build's trace, with no tier and with an LRU tier of each size in each medium.

The data a page shows as the TTFT distribution serving teams cite when they decide on KV
offloading: for the workload trace (``workload.trace``) and the build's deployment, one row
per regime and tier: no tier (every prompt prefilled whole), then each medium of
:data:`kvtier.formulas.tiering.LRU_TIERS` (host DRAM over PCIe, a CXL expander, NVMe) sized
for each share of the trace's achievable hits (:data:`kvtier.analysis.SHARES`, with ``decision.hit_target``,
the size :meth:`kvtier.deployment.Deployment.plan` buys).  The arithmetic is
:mod:`kvtier.formulas.ttft`; the block, its transfers and whether the fetch overlaps the
prefill layer by layer follow the set's ``engine`` (:attr:`kvtier.scenario.Scenario.fetch_transfers`,
:attr:`~kvtier.scenario.Scenario.layer_overlap`).  Numbers only, SI units.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kvtier import analysis
from kvtier.data import ENGINE_PRESETS
from kvtier.formulas import split, tiering, ttft
from kvtier.formulas.cache.curve import counted_percentiles
from kvtier.inputs.keys import TIER_LATENCY_KEYS, keys_in
from kvtier.scenario import ENGINE_KEYS, FORWARD_KEYS, PLACEMENT_KEYS, TRANSFER_KEYS, Scenario

KEYS: tuple[str, ...] = (
    "model",
    "kv_dtype",
    "weight_dtype",
    "param_count",
    "flops_per_param_token",
    "peak_flops",
    "illustrative.mfu",
    "mfu.optimistic",
    "mfu.typical",
    "mfu.conservative",
    *FORWARD_KEYS,
    *PLACEMENT_KEYS,
    *TRANSFER_KEYS,
    "block_tokens",
    "engine",
    "fetch_layout",
    *TIER_LATENCY_KEYS,
    *keys_in("trace"),
    "decision.hit_target",
    *ENGINE_KEYS,  # the TTFT's recomputation under regen.model engine (Scenario.regen_costs)
)
"""The assumption keys :func:`ttft_rows` reads (for a page's ``KEYS``)."""


def fetch_of(s: Scenario, bandwidth_bytes_per_s: float, latency_s: float) -> ttft.Fetch:
    """A tier's link with the set's layout: ``block_tokens``, transfers per block and overlap (engine's or set's)."""
    return ttft.Fetch(
        bandwidth_bytes_per_s=float(bandwidth_bytes_per_s),
        latency_s=float(latency_s),
        block_tokens=s.block_tokens,
        transfers_per_block=s.fetch_transfers,
        layers=s.model.n_layers,
        overlap=s.layer_overlap,
        link_bytes_per_token=s.fetch_bytes / s.block_tokens,
        min_transfer_s=s.v("fetch.min_transfer_time"),
        efficiency=s.link_efficiency,
        overhead_s=s.link_overhead_s,
    )


def shares(s: Scenario) -> tuple[float, ...]:
    """:data:`kvtier.analysis.SHARES` with the set's ``decision.hit_target``, ascending, without repeats."""
    return tuple(analysis.plan(s)[0])


def _row(regime: str, tier: str, share: float, capacity_blocks: float, s: Scenario, t: ttft.Ttft) -> dict[str, Any]:
    curve = analysis.curve(s)
    duration = curve.duration_s
    prompts, per_prompt = curve.input_tokens
    prompt_tokens = float(np.sum(prompts * per_prompt))
    saved = t.total(t.gpu_s_saved)
    pct = t.percentiles()
    return {
        "regime": regime,
        "tier": tier,
        "hit_share": share,
        "capacity_blocks": capacity_blocks,
        "capacity_bytes": capacity_blocks * s.tier_bytes_per_token * curve.block_tokens,
        "prefix_hit_token_share": t.total(t.hit_tokens) / prompt_tokens if prompt_tokens else 0.0,
        "ttft_p50_s": pct["p50"],
        "ttft_p90_s": pct["p90"],
        "ttft_p99_s": pct["p99"],
        "ttft_mean_s": t.mean(t.ttft_s),
        "fetch_mean_s": t.mean(t.fetch_s),
        "gpu_saved_s": saved,
        "gpu_saved_s_per_s": saved / duration if duration > 0 else math.nan,
    }


def ttft_rows(s: Scenario, regimes: tuple[str, ...] = ttft.REGIMES) -> list[dict[str, Any]]:
    """Per regime: the TTFT distribution with no tier, then with each LRU medium sized for each of :func:`shares`.

    Each row: ``regime``, ``tier`` (``none`` or a link preset), ``hit_share`` (of the achievable
    hits the capacity is sized for; 0 for no tier), ``capacity_blocks`` (blocks of
    ``workload.block_tokens``) and ``capacity_bytes`` (B), ``prefix_hit_token_share`` (prompt
    tokens taken from the tier), ``ttft_p50_s``/``p90``/``p99``/``mean`` (s), ``fetch_mean_s``
    (s), ``gpu_saved_s`` (prefill accelerator-seconds the tier saves over the trace) and
    ``gpu_saved_s_per_s`` (per second of trace: accelerators' worth; NaN for a trace of 0 s).
    From the requests counted by prompt and hit prefix as the trace streams past
    (:func:`kvtier.analysis.stream`), bounded whatever its length.
    """
    streamed, rc = analysis.stream(s, shares(s)), s.regen_costs()
    prompts, per_prompt = (x.astype(float) for x in streamed.curve.input_tokens)
    links = s.tier_links.pick(tiering.LRU_TIERS)
    caps = {share: float(streamed.curve.capacity_for(share)) for share in shares(s)}
    rows = []
    for regime in regimes:
        none = ttft.ttft_counted(prompts, np.zeros_like(prompts), rc, regime, requests=per_prompt)
        rows.append(_row(regime, "none", 0.0, 0.0, s, none))
        for name, bw, lat in zip(links.names, links.bandwidth_bytes_per_s, links.latency_s, strict=True):
            fetch = fetch_of(s, bw, lat)
            for share, cap in caps.items():
                if cap <= 0:  # no capacity, no tier
                    t = none
                else:
                    _, tokens, prompt, requests = streamed.served.by_prompt(cap)
                    t = ttft.ttft_counted(prompt, tokens, rc, regime, fetch, requests)
                rows.append(_row(regime, name, share, cap, s, t))
    return rows


def engine_rows(s: Scenario) -> list[dict[str, Any]]:
    """The serving engines' layouts side by side, for the set's model, with a block's fetch from each LRU medium.

    One row per preset of :data:`kvtier.data.ENGINE_PRESETS`: ``engine``, ``block_tokens``
    (tokens), ``block_bytes`` (B), ``version`` (the engine versions the preset describes),
    ``transfers_per_block``, ``copy_method`` (how each copy is issued), ``layer_overlap``, ``kv_storage`` (how a
    tensor-parallel group writes a block to a tier) and ``stored_copies`` (the copies that makes under the set's
    placement), and per medium of
    :data:`kvtier.formulas.tiering.LRU_TIERS` ``fetch_s.TIER`` (one block: transfers x the medium's own
    ``tier_latency.*`` + bytes / bandwidth, s: the copy method's cost replaces only the brackets'
    ``fetch_latency``, :attr:`kvtier.scenario.Scenario.transfer_latency_s`) and ``fetch_s_per_token.TIER`` (s, the
    same per token, to compare blocks of different sizes); ``source.FIELD`` the source of each of the five values.
    """
    links = s.tier_links.pick(tiering.LRU_TIERS)
    rows = []
    for name in ENGINE_PRESETS:
        sc = Scenario(s.assumptions.with_values({"engine": name}, source="the serving engines' layouts"))
        engine = sc.engine
        assert engine is not None
        fetch = sc.link_fetch_s(sc.block_bytes, links.bandwidth_bytes_per_s, links.latency_s, sc.fetch_transfers)
        row: dict[str, Any] = {
            "engine": name,
            "block_tokens": sc.block_tokens,
            "block_bytes": sc.block_bytes,
            "version": engine.version,
            "transfers_per_block": sc.fetch_transfers,
            "copy_method": engine.copy_method,
            "layer_overlap": sc.layer_overlap,
            "kv_storage": engine.kv_storage,
            "stored_copies": sc.stored_copies,
        }
        for tier, f in zip(links.names, fetch, strict=True):
            row[f"fetch_s.{tier}"] = float(f)
            row[f"fetch_s_per_token.{tier}"] = float(f) / sc.block_tokens
        for field, rec in engine.records.items():
            row[f"source.{field}"] = rec.source
        rows.append(row)
    return rows


SPLIT_PREFIX_TOKENS: tuple[int, ...] = (1_024, 4_096, 16_384, 65_536)
"""The reused prefixes :func:`split_grid` serves (tokens); those past the model's window are left out."""


def split_grid(s: Scenario) -> list[dict[str, Any]]:
    """A prefix of each of :data:`SPLIT_PREFIX_TOKENS`, then one engine block of new tokens, from each LRU medium.

    One row per regime, medium of :data:`kvtier.formulas.tiering.LRU_TIERS` and prefix: ``regime``, ``tier``,
    ``prefix_tokens`` and ``new_tokens`` (tokens), and from :func:`kvtier.formulas.split.best_split` the time to the
    first token of regenerating the prompt, fetching the prefix (``fetch_s``; ``overlap_s`` loaded layer by layer
    under the prefill), and the best split (``split_tokens`` computed from the start, ``split_s``), the split's gain
    over the faster pure way and which way is fastest (:meth:`kvtier.formulas.split.Split.fastest`: the engine's own
    fetch is layer by layer where it overlaps, :attr:`kvtier.scenario.Scenario.layer_overlap`).  Seconds; tokens.
    """
    rc, links = s.regen_costs(), s.tier_links.pick(tiering.LRU_TIERS)
    window = s.model.max_positions
    new = s.block_tokens
    prefixes = np.array([n for n in SPLIT_PREFIX_TOKENS if not window or n + new <= window], dtype=float)
    rows = []
    for regime in ttft.REGIMES:
        for name, bw, lat in zip(links.names, links.bandwidth_bytes_per_s, links.latency_s, strict=True):
            fetch = fetch_of(s, bw, lat)
            r = split.best_split(rc, fetch, prefixes, prefixes + new, regime)
            fastest = r.fastest(s.layer_overlap)
            for i, n in enumerate(prefixes):
                rows.append(
                    {
                        "regime": regime,
                        "tier": name,
                        "prefix_tokens": int(n),
                        "new_tokens": new,
                        "regenerate_s": float(r.regenerate_s[i]),
                        "fetch_s": float(r.fetch_s[i]),
                        "overlap_s": float(r.overlap_s[i]),
                        "split_tokens": int(r.split_tokens[i]),
                        "split_s": float(r.split_s[i]),
                        "gain": float(r.gain[i]),
                        "fastest": fastest[i],
                    }
                )
    return rows


SPLIT_TOLERANCE = 1e-9
"""A split counts as faster than the engine's way when it saves more than this share of the time (rounding aside)."""


def split_ttft_rows(s: Scenario) -> list[dict[str, Any]]:
    """The trace's time to first token with each LRU medium at the hit target, the engine's way and with a split.

    Per regime and medium of :data:`kvtier.formulas.tiering.LRU_TIERS`, the tier sized for ``decision.hit_target``
    of the achievable hits: each request fetches its usable hit prefix the engine's way (:func:`ttft_rows`), or a
    split scheduler serves it the fastest of that and the best split (:func:`kvtier.formulas.split.best_split`,
    whose ends are the plain fetch and the prompt regenerated).  ``ttft_p50_s``/``p90``/``p99`` both ways (s,
    ``..._split``) and ``split_share`` (requests a strict split serves faster than the engine's way, fraction).
    """
    streamed, rc = analysis.stream(s, shares(s)), s.regen_costs()
    cap = float(streamed.curve.capacity_for(s.v("decision.hit_target")))
    links = s.tier_links.pick(tiering.LRU_TIERS)
    rows = []
    for regime in ttft.REGIMES:
        for name, bw, lat in zip(links.names, links.bandwidth_bytes_per_s, links.latency_s, strict=True):
            fetch = fetch_of(s, bw, lat)
            if cap > 0:
                _, tokens, prompt, requests = streamed.served.by_prompt(cap)
            else:
                prompt, requests = (x.astype(float) for x in streamed.curve.input_tokens)
                tokens = np.zeros_like(prompt)
            plain = ttft.ttft_counted(prompt, tokens, rc, regime, fetch, requests)
            r = split.best_split(rc, fetch, plain.hit_tokens, prompt, regime)
            faster = r.strict & (r.split_s < plain.ttft_s * (1.0 - SPLIT_TOLERANCE))
            both = np.where(faster, r.split_s, plain.ttft_s)
            order = np.argsort(both, kind="stable")
            before, after = plain.percentiles(), counted_percentiles(both[order], requests[order])
            rows.append(
                {
                    "regime": regime,
                    "tier": name,
                    "hit_share": float(s.v("decision.hit_target")),
                    "ttft_p50_s": before["p50"],
                    "ttft_p90_s": before["p90"],
                    "ttft_p99_s": before["p99"],
                    "ttft_p50_s_split": after["p50"],
                    "ttft_p90_s_split": after["p90"],
                    "ttft_p99_s_split": after["p99"],
                    "split_share": float(np.sum(requests * faster) / np.sum(requests)) if np.sum(requests) else 0.0,
                }
            )
    return rows


def split_prefix(s: Scenario, new_tokens: int | None = None) -> tuple[int, int, bool]:
    """The reused prefix split by default, the new tokens after it (one block unless given) and whether the prefix
    was capped (tokens): the chapter's interior position (``interior.position``), capped so that the prompt fits the
    model's window; ``kvtier compare --split`` and the decision's :func:`split_ladder` take it alike."""
    new = s.block_tokens if new_tokens is None else int(new_tokens)
    prefix = int(s.v("interior.position"))
    window = s.model.max_positions
    capped = bool(window) and prefix + new > window
    return (max(window - new, 0) if capped else prefix), new, capped


def _tier_splits(s: Scenario, layouts: dict[str, int] | None) -> list[dict[str, Any]]:
    """:func:`kvtier.formulas.split.best_split` of :func:`split_prefix`'s prefix from every tier of the decision, per
    layout (its copies a block; ``None``: the deployment's two layouts) and regime (tokens; a ratio)."""
    from dataclasses import replace

    from kvtier.deployment import Deployment

    d = Deployment.of(s)
    rc = s.regen_costs()
    prefix, new, _ = split_prefix(s)
    n, p = np.array([float(prefix)]), np.array([float(prefix + new)])
    rows = []
    for name, bw, lat in zip(d.tiers.names, d.tiers.bandwidth_bytes_per_s, d.tiers.latency_s, strict=True):
        for layout, copies in (d.transfers if layouts is None else layouts).items():
            fetch = replace(fetch_of(s, bw, lat), transfers_per_block=copies)
            for regime in ttft.REGIMES:
                r = split.best_split(rc, fetch, n, p, regime)
                rows.append(
                    {
                        "tier": name,
                        "layout": layout,
                        "regime": regime,
                        "prefix_tokens": prefix,
                        "new_tokens": new,
                        "split_tokens": int(r.split_tokens[0]),
                        "gain": float(r.gain[0]),
                        "fastest": r.fastest(s.layer_overlap)[0],
                    }
                )
    return rows


def engine_split(s: Scenario) -> list[dict[str, Any]]:
    """The split per tier and regime with the engine's own copies (:attr:`Scenario.fetch_transfers`, layout
    ``engine``), the prefix of :func:`split_prefix`: tokens computed, gain over the better pure way, the fastest way
    (tokens; a ratio)."""
    return _tier_splits(s, {"engine": s.fetch_transfers})


def split_ladder(s: Scenario) -> list[dict[str, Any]]:
    """The split as a third verdict on the tier ladder: per tier, regime and layout, the prefix of :func:`split_prefix`.

    Every link preset of the decision (:class:`kvtier.deployment.Deployment`, its latency per copy as the ladder
    sets it), each layout's copies a block (one, or one per layer chunk), in both regimes:
    :func:`kvtier.formulas.split.best_split`'s tokens computed, its gain over the better pure way and the fastest
    way (:meth:`kvtier.formulas.split.Split.fastest`).  Tokens; a ratio.
    """
    return _tier_splits(s, None)
