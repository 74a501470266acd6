"""Tables for a page on serving across accelerators: the ratio under each placement, in both regimes.

Each function takes a :class:`~kvtier.scenario.Scenario` and returns a :class:`pandas.DataFrame`
of numbers (units in the column names), computed by the scenario and its
:class:`~kvtier.deployment.Deployment` under placements varied from the set's own
(:meth:`~kvtier.scenario.Scenario.with_placement`); nothing here is a formula.  Every regeneration
time and ratio names its regime: ``lone`` (the block's tokens are the whole forward pass, the
roofline on the set's device) and ``batch`` (its marginal compute inside a full batch).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from kvtier.deployment import Deployment
from kvtier.formulas import parallel
from kvtier.scenario import Scenario
from kvtier.scenario.placement import tp_refused

MOE_PLACEMENTS: tuple[tuple[int, int, int], ...] = (
    (8, 1, 1),
    (8, 1, 8),
    (1, 1, 8),
    (8, 2, 8),
    (16, 1, 16),
)
"""(tp, pp, ep) placements :func:`moe_table` compares: tensor parallelism alone, experts spread
over the same 8 GPUs, attention data-parallel with 8-way expert parallelism, two pipeline stages
of 8, and one 16-GPU group."""


def _point(s: Scenario) -> dict[str, float]:
    """The tail block at the illustrative bracket, under ``s``'s placement: fetch and both regimes (s)."""
    point = s.illustrative
    mfu = point["mfu"]
    return {
        "fetch_s": point["fetch_s"],
        "lone_s": float(s.lone_regen_s(0, "resident", mfu)),
        "batch_s": float(s.in_batch_regen_s(0, "resident", mfu)),
        "lone_collectives_s": float(s.collectives_s(s.block_tokens)),
    }


def _row(s: Scenario) -> dict[str, float | int | str | bool | None]:
    p = s.placement
    t = _point(s)
    cap = s.assumptions.value("parallel.hbm_capacity")
    need = s.rank_memory_bytes()
    return {
        "model": s.model.name,
        "tp": p.tp,
        "pp": p.pp,
        "ep": p.ep,
        "gpus_per_link": p.gpus_per_link,
        "accelerators": p.accelerators,
        "shard_share": s.shard_share,
        "shard_KiB": s.shard_bytes / 1024,
        "link_KiB": s.fetch_bytes / 1024,
        "fetch_us": t["fetch_s"] * 1e6,
        "lone_regen_ms": t["lone_s"] * 1e3,
        "lone_collectives_ms": t["lone_collectives_s"] * 1e3,
        "lone_collectives_share": t["lone_collectives_s"] / t["lone_s"],
        "batch_regen_ms": t["batch_s"] * 1e3,
        "lone_ratio": t["lone_s"] / t["fetch_s"],
        "batch_ratio": t["batch_s"] / t["fetch_s"],
        "rank_memory_GB": need / 1e9,
        "fits": None if cap is None else bool(parallel.fits(need, float(cap))),
    }


def ratio_table(s: Scenario, tps: Sequence[int] = (1, 2, 4, 8)) -> pd.DataFrame:
    """The tail block under tensor parallelism of each size in ``tps``, the set's other counts kept.

    One row per size: the shard one accelerator fetches (its share, KiB, and the KiB over one shared
    link), the fetch at the illustrative bandwidth (µs), the regeneration alone and inside a batch
    (ms), the collectives a lone block's pass pays (ms, and their share of it: the latency floor
    that a large group leaves), both ratios, what one accelerator must hold (GB: weights and one
    sequence of ``context.long``) and whether it fits ``parallel.hbm_capacity`` (None: not set).  A size serving
    engines refuse for the model's heads (:func:`kvtier.scenario.placement.tp_refused`) has no row.
    """
    m = s.model
    runs = [tp for tp in tps if not tp_refused(tp, m.n_heads, m.n_kv_heads, m.attention == "MLA")]
    return pd.DataFrame([_row(s.with_placement(tp=tp)) for tp in runs])


def link_sharing_table(s: Scenario, gpus_per_link: Iterable[int] = (1, 2, 4, 8)) -> pd.DataFrame:
    """What sharing a link does to the tiers: every tier's fetch and ratios for each count sharing it.

    One row per tier and count: the fetch of the block in the set's layout (µs), the ratio in both
    regimes, and whether fetching still wins, read from the :class:`~kvtier.deployment.Deployment`.
    """
    layout = str(s.assumptions.value("fetch_layout"))
    rows = []
    for g in gpus_per_link:
        d = Deployment.of(s.with_placement(gpus_per_link=g))
        fetch = d.fetch_s(layout)
        ratios = {regime: d.ratio(regime, layout) for regime in ("lone", "batch")}
        for i, tier in enumerate(d.tiers.names):
            rows.append(
                {
                    "tier": tier,
                    "gpus_per_link": g,
                    "bandwidth_per_gpu_GBps": d.tiers.bandwidth_bytes_per_s[i] / g / 1e9,
                    "fetch_us": fetch[i] * 1e6,
                    "lone_ratio": ratios["lone"][i],
                    "batch_ratio": ratios["batch"][i],
                    "lone_fetch_wins": bool(ratios["lone"][i] > 1),
                    "batch_fetch_wins": bool(ratios["batch"][i] > 1),
                }
            )
    return pd.DataFrame(rows)


def moe_table(
    s: Scenario, model: str = "deepseek-v3", placements: Sequence[tuple[int, int, int]] = MOE_PLACEMENTS
) -> pd.DataFrame:
    """An MoE model under tensor, pipeline and expert parallelism: one row per (tp, pp, ep) of ``placements``.

    Besides :func:`ratio_table`'s columns: the experts a lone block's tokens touch per MoE layer
    (uniform routing) and the weight bytes one accelerator reads for it (GB), over every stage.
    """
    base = s.with_block(s.block_tokens, model)
    m = base.model
    touched = float(parallel.distinct_experts(m.n_routed_experts, m.experts_per_token, base.block_tokens))
    rows = []
    for tp, pp, ep in placements:
        sc = base.with_placement(tp=tp, pp=pp, ep=ep)
        row = _row(sc)
        row["experts_touched"] = touched
        along = float(sc.touched_weight_bytes(sc.block_tokens))  # summed over the stages the pass crosses
        row["lone_weights_read_GB"] = along / 1e9
        row["lone_weights_read_per_accelerator_GB"] = along / sc.placement.pp / 1e9  # each stage's rank, its share
        rows.append(row)
    return pd.DataFrame(rows)


def min_accelerators_table(
    s: Scenario, models: Sequence[str], capacity_bytes: float, kv_tokens: float | None = None
) -> pd.DataFrame:
    """The fewest accelerators of ``capacity_bytes`` each that hold each model and one sequence's KV.

    :meth:`~kvtier.scenario.Scenario.min_accelerators` per model (``kv_tokens``: each model's own
    :attr:`~kvtier.scenario.Scenario.long_sequence_tokens` by default, ``context.long`` at most its window): the
    sequence held, the count and the (tp, pp) that reaches it, 0 where none up to 1,024 does.
    """
    rows = []
    for name in models:
        sc = s.with_block(s.block_tokens, name)
        n, tp, pp = sc.min_accelerators(capacity_bytes, kv_tokens)
        tokens = sc.long_sequence_tokens if kv_tokens is None else kv_tokens
        rows.append(
            {
                "model": name,
                "weights_GB": sc.weight_bytes / 1e9,
                "sequence_tokens": tokens,
                "accelerators": n,
                "tp": tp,
                "pp": pp,
            }
        )
    return pd.DataFrame(rows)
