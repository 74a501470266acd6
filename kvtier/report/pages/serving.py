"""The serving page: the model placed across accelerators, the engines' layouts, and the time to first token.

Every number is the scenario's (:class:`~kvtier.scenario.Scenario` and its
:class:`~kvtier.deployment.Deployment`) under placements varied from the set's own
(:mod:`kvtier.report.placement`), the engines' presets (:mod:`kvtier.inputs.engines`) and the
TTFT replay of the workload trace (:mod:`kvtier.report.serving`, :mod:`kvtier.formulas.ttft`).
Nothing here is a formula.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier import analysis
from kvtier.deployment import Deployment
from kvtier.formulas import tiering
from kvtier.formulas.cache.report import share_longer
from kvtier.report import placement, serving, words
from kvtier.report.columns import LONE, VERDICT, Column, declare, named, phrase, twins
from kvtier.report.figures import MIN_FONT_PT, PALETTE, finish, new_figure, plain_log_ticks
from kvtier.scenario import POINT_KEYS, Scenario
from kvtier.units import format_number

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "15_serving"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "serving across accelerators"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

SCENARIO = analysis.priced
"""The page presents the trace priced for ``workload.deployment`` (a named deployment, or the build's set)."""

TPS: tuple[int, ...] = (1, 2, 4, 8)
"""Tensor-parallel sizes the placement table compares."""
SHARING: tuple[int, ...] = (1, 2, 4, 8)
"""Accelerators sharing one link, for the link-sharing table."""
MOE_MODEL = "deepseek-v3"
"""The MoE model the expert-parallel table places."""
MIN_MODELS: tuple[str, ...] = (
    "llama-3-8b",
    "llama-3-70b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "mixtral-8x7b",
    "deepseek-v3",
)
"""Models whose minimum accelerator count the page lists (Llama-3-70B and Llama-3.1-70B differ only in their window)."""
TTFT_TIER = "pcie5-x16"
"""The medium the TTFT figure draws (host DRAM over the host link); the table holds every medium."""
TTFT_REGIME = "lone"
"""The regime the TTFT sentences and figure use: a request's prefill is its own forward pass."""

KEYS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            *POINT_KEYS,
            *serving.KEYS,
            "context.long",
            "parallel.tp",
            "parallel.pp",
            "parallel.ep",
            "parallel.gpus_per_link",
            "parallel.hbm_capacity",
            "cost.hbm_capacity",
            "workload.deployment",  # SCENARIO: the deployment the trace is priced for
        )
    )
)
"""The assumption keys the page reads."""


IN_BATCH_NAMES = {"batch_regen_ms": "regen_ms", "batch_ratio": "ratio", "batch_fetch_wins": "fetch_wins"}
"""The in-batch columns of :mod:`kvtier.report.placement` renamed as the twins of their ``lone_`` columns (the
tables of record's names)."""


TP = Column("tp", "tensor-parallel size")
PP = Column("pp", "pipeline stages")
ACCELERATORS = Column("accelerators", "accelerators")
GPUS_PER_LINK = Column("gpus_per_link", "accelerators per link")
FETCH = Column("fetch_us", "fetch time", "µs")
RATIOS = twins("ratio", "regeneration / fetch", "×")


PLACEMENT_COLUMNS = (
    Column("model", "model"),
    TP,
    PP,
    Column("ep", "expert-parallel size"),
    GPUS_PER_LINK,
    ACCELERATORS,
    Column("shard_share", "share of the block per accelerator"),
    Column("shard_KiB", "shard per accelerator", "KiB"),
    Column("link_KiB", "bytes over one link", "KiB"),
    FETCH,
    *twins("regen_ms", "regeneration time", "ms"),
    Column("lone_collectives_ms", phrase("collectives", LONE), "ms"),
    Column("lone_collectives_share", phrase("collectives' share", LONE)),
    *RATIOS,
    Column("rank_memory_GB", "memory per accelerator", "GB"),
    Column("fits", "fits in memory"),
)
"""The columns of :func:`placement_table`, in words with their units."""


def placement_table(s: Scenario) -> pd.DataFrame:
    """The tail block under tensor parallelism of each size in :data:`TPS`, both regimes."""
    return declare(placement.ratio_table(s, TPS).rename(columns=IN_BATCH_NAMES), PLACEMENT_COLUMNS)


SHARING_COLUMNS = (
    Column("tier", "tier"),
    GPUS_PER_LINK,
    Column("bandwidth_per_gpu_GBps", "bandwidth per accelerator", "GB/s"),
    FETCH,
    *RATIOS,
    *twins("fetch_wins", "verdict", words=VERDICT),
)
"""The columns of :func:`sharing_table`, in words with their units."""


def sharing_table(s: Scenario) -> pd.DataFrame:
    """Every tier's fetch and ratios when :data:`SHARING` accelerators share its link."""
    return declare(placement.link_sharing_table(s, SHARING).rename(columns=IN_BATCH_NAMES), SHARING_COLUMNS)


MOE_COLUMNS = (
    *PLACEMENT_COLUMNS,
    Column("experts_touched", "experts touched per MoE layer"),
    Column("lone_weights_read_GB", phrase("weights read along the pipeline, one accelerator a stage", LONE), "GB"),
    Column("lone_weights_read_per_accelerator_GB", phrase("weights each accelerator reads", LONE), "GB"),
)
"""The columns of :func:`moe_table`: :data:`PLACEMENT_COLUMNS` and what a lone block's tokens touch."""


def moe_table(s: Scenario) -> pd.DataFrame:
    """:data:`MOE_MODEL` under tensor, pipeline and expert parallelism."""
    return declare(placement.moe_table(s, MOE_MODEL).rename(columns=IN_BATCH_NAMES), MOE_COLUMNS)


def capacity_key(s: Scenario) -> str:
    """The key giving one accelerator's memory: ``parallel.hbm_capacity`` when set, else ``cost.hbm_capacity``."""
    return "parallel.hbm_capacity" if s.assumptions.value("parallel.hbm_capacity") is not None else "cost.hbm_capacity"


MIN_COLUMNS = (
    Column("model", "model"),
    Column("weights_GB", "weights", "GB"),
    Column("sequence_tokens", "sequence held (context.long, at most its window)", "tokens"),
    ACCELERATORS,
    TP,
    PP,
)
"""The columns of :func:`min_table`, in words with their units."""


def min_table(s: Scenario) -> pd.DataFrame:
    """The fewest accelerators of :func:`capacity_key`'s memory that hold each model of :data:`MIN_MODELS`.

    Each must hold its weights and one sequence's cache: ``context.long`` tokens, at most the model's own window
    (:meth:`~kvtier.scenario.Scenario.min_accelerators`).
    """
    return declare(placement.min_accelerators_table(s, MIN_MODELS, s.v(capacity_key(s))), MIN_COLUMNS)


ENGINES_COLUMNS = (
    Column("engine", "engine"),
    Column("block_tokens", "block", "tokens"),
    Column("block_bytes", "block", "bytes"),
    Column("version", "engine versions"),
    Column("transfers_per_block", "transfers per block"),
    Column("copy_method", "how each copy is issued"),
    Column("layer_overlap", "loads layer by layer under the pass"),
    Column("kv_storage", "how a tensor-parallel group stores a block"),
    Column("stored_copies", "copies of a block a tier holds", "count"),
    Column("source.block_tokens", "source of the block size"),
    Column("source.transfers", "source of the transfers per block"),
    Column("source.copy_method", "source of the copy method"),
    Column("source.layer_overlap", "source of the layer overlap"),
    Column("source.kv_storage", "source of the stored copies"),
    *(
        column
        for tier in tiering.LRU_TIERS
        for column in (
            Column(f"fetch_per_token_us.{tier}", phrase("fetch per token", tier), "µs"),
            Column(f"fetch_block_us.{tier}", phrase("fetch of one block", tier), "µs"),
        )
    ),
)
"""The columns of :func:`engines_table`, in words with their units: the engine's layout, the source of each of
its values, and a block's fetch per LRU medium (:data:`kvtier.formulas.tiering.LRU_TIERS`)."""


def engines_table(s: Scenario) -> pd.DataFrame:
    """The serving engines' layouts side by side, with a block's fetch per token from each LRU medium (µs).

    The fetch of one whole block per medium and the source of every value stay in the table's
    other columns (:func:`kvtier.report.serving.engine_rows`).
    """
    df = pd.DataFrame(serving.engine_rows(s))
    for tier in tiering.LRU_TIERS:
        df[f"fetch_per_token_us.{tier}"] = df.pop(f"fetch_s_per_token.{tier}") * 1e6
        df[f"fetch_block_us.{tier}"] = df.pop(f"fetch_s.{tier}") * 1e6
    return declare(df, ENGINES_COLUMNS)


TTFT_COLUMNS = (
    *named("regime", "tier"),
    Column("hit_share", "share of achievable hits"),
    Column("capacity_blocks", "capacity in blocks"),
    Column("capacity_bytes", "tier capacity", "bytes"),
    Column("prefix_hit_token_share", "prompt tokens from the tier"),
    *(
        Column(f"ttft_{stat}_s", f"time to first token, {words}", "s")
        for stat, words in (("p50", "median"), ("p90", "p90"), ("p99", "p99"), ("mean", "mean"))
    ),
    Column("fetch_mean_s", "fetch, mean", "s"),
    Column("gpu_saved_s", "accelerator time saved", "s"),
    Column("gpu_saved_s_per_s", "accelerators saved"),
)
"""The columns of :func:`ttft_table`, in words with their units."""


def ttft_table(s: Scenario) -> pd.DataFrame:
    """TTFT percentiles with no tier and with each LRU medium at each size, both regimes."""
    return declare(pd.DataFrame(serving.ttft_rows(s)), TTFT_COLUMNS)


def _pct_change(new: float, old: float) -> float:
    return (new / old - 1) * 100 if old else math.nan


def _collective_latency_ms(s: Scenario, tp: int) -> float:
    """The part of a lone block's collectives at tensor-parallel size ``tp`` that is each operation's latency (ms).

    The collectives of the block's tokens with every latency (``latency_share`` 1) less the same with none (0):
    what remains is the bandwidth part, the bytes over the links.
    """
    sc = s.with_placement(tp=tp)
    tokens = float(sc.block_tokens)
    return float(sc.collectives_s(tokens, 1.0) - sc.collectives_s(tokens, 0.0)) * 1e3


def numbers(s: Scenario) -> dict[str, Any]:
    """Every number the serving page's prose quotes, by glue name."""
    p = s.placement
    out: dict[str, Any] = {
        "tp": p.tp,
        "pp": p.pp,
        "ep": p.ep,
        "gpus_per_link": p.gpus_per_link,
        "accelerators": p.accelerators,
        "model_name": s.model.name,
        "priced_sentence": words.priced_sentence(s),
    }
    pt = placement_table(s).set_index("tp")
    big_tp = int(pt.index.max())  # the largest of TPS the model's heads allow (tp_refused drops the others)
    one, big = pt.loc[TPS[0]], pt.loc[big_tp]
    out |= {
        "tp_big": big_tp,
        "lone_ratio_tp1": float(one["lone_ratio"]),
        "lone_ratio_big": float(big["lone_ratio"]),
        "batch_ratio_tp1": float(one["ratio"]),
        "batch_ratio_big": float(big["ratio"]),
        "lone_ms_tp1": float(one["lone_regen_ms"]),
        "lone_ms_big": float(big["lone_regen_ms"]),
        "collectives_ms_big": float(big["lone_collectives_ms"]),
        "collectives_pct_big": float(big["lone_collectives_share"]) * 100,
        "collectives_latency_ms_big": _collective_latency_ms(s, big_tp),
        "shard_kib_tp1": float(one["shard_KiB"]),
        "shard_kib_big": float(big["shard_KiB"]),
    }
    sh = sharing_table(s)
    worst = int(max(SHARING))
    shared = sh[sh["gpus_per_link"] == worst]
    out["sharing_most"] = worst
    out["sharing_batch_wins"] = int(shared["fetch_wins"].sum())
    out["sharing_lone_wins"] = int(shared["lone_fetch_wins"].sum())
    out["sharing_layout"] = str(s.assumptions.value("fetch_layout"))
    other = "per-layer" if out["sharing_layout"] == "contiguous" else "contiguous"
    most = Deployment.of(s.with_placement(gpus_per_link=worst))
    out["sharing_batch_wins_other"] = most.n_fetch_wins("batch", other)
    out["sharing_other_transfers"] = most.transfers[other]
    out["n_tiers"] = int(len(shared))
    moe = moe_table(s)
    out["moe_experts_touched"] = float(moe["experts_touched"].iloc[0])
    out["moe_biggest_group"] = int(moe["tp"].max())
    out["moe_weights_read_gb_min"] = float(moe["lone_weights_read_per_accelerator_GB"].min())
    out["moe_weights_read_gb_max"] = float(moe["lone_weights_read_per_accelerator_GB"].max())
    out["moe_lone_ratio_min"] = float(moe["lone_ratio"].min())
    out["moe_lone_ratio_max"] = float(moe["lone_ratio"].max())
    eng = engines_table(s)
    per_token = eng.set_index("engine")[f"fetch_per_token_us.{tiering.LRU_TIERS[-1]}"]
    out["engine_nvme_fastest"] = str(per_token.idxmin())
    out["engine_nvme_slowest"] = str(per_token.idxmax())
    out["engine_nvme_spread"] = float(per_token.max() / per_token.min())
    tt = ttft_table(s)
    lone = tt[tt["regime"] == TTFT_REGIME]
    none = lone[lone["tier"] == "none"].iloc[0]
    target = s.v("decision.hit_target")
    at = lone[(lone["tier"] == TTFT_TIER) & np.isclose(lone["hit_share"], target)].iloc[0]
    out |= {
        "ttft_tier": TTFT_TIER,
        "ttft_target_pct": target * 100,
        "ttft_capacity_tib": float(at["capacity_bytes"]) / 2**40,
        **{f"ttft_none_{q}_s": float(none[f"ttft_{q}_s"]) for q in ("p50", "p90", "p99")},
        **{f"ttft_tier_{q}_s": float(at[f"ttft_{q}_s"]) for q in ("p50", "p90", "p99")},
        **{
            f"ttft_{q}_cut_pct": -_pct_change(float(at[f"ttft_{q}_s"]), float(none[f"ttft_{q}_s"]))
            for q in ("p50", "p90", "p99")
        },
        "ttft_hit_token_pct": float(at["prefix_hit_token_share"]) * 100,
        "ttft_gpu_saved_per_s": float(at["gpu_saved_s_per_s"]),
    }
    media = lone[np.isclose(lone["hit_share"], target) & (lone["tier"] != "none")]
    out["ttft_media_p50_spread_pct"] = float((media["ttft_p50_s"].max() / media["ttft_p50_s"].min() - 1) * 100)
    out["deployment_sentence"] = _deployment_sentence(s, out)
    out["tp_sentence"] = _tp_sentence(out)
    out["moe_sentence"] = _moe_sentence(out)
    out["sharing_sentence"] = _sharing_sentence(out)
    out["engines_sentence"] = _engines_sentence(s, out)
    out["ttft_sentence"] = _ttft_sentence(s, out)
    out["lead_sentence"] = _lead_sentence(s, out)
    return out


def _deployment_sentence(s: Scenario, n: dict[str, Any]) -> str:
    key = capacity_key(s)
    memory = "the placement's" if key == "parallel.hbm_capacity" else "the cost page's"
    mins = min_table(s).set_index("model")
    cap = f"{format_number(s.v(key) / 1e9)} GB"
    context = f"{s.long_sequence_tokens:,.0f}"  # context.long, at most the model's window
    own = int(mins.loc[s.model.name, "accelerators"]) if s.model.name in mins.index else 0
    if own > 1 and n["accelerators"] < own:
        need = (
            f" With {cap} per accelerator ({memory} memory), holding its weights and one {context}-token sequence's"
            f" cache takes at least {own} of them, so the single accelerator the source chapter prices is an unstated"
            " assumption of a larger memory."
        )
    elif own:
        need = (
            f" With {cap} per accelerator ({memory} memory), its weights and one {context}-token sequence's cache need"
            f" {own} {'accelerator' if own == 1 else 'accelerators'}."
        )
    else:
        need = ""
    where = (
        "as the workload and cost pages do (the named deployment they price); the pages that recompute the source"
        " chapter price its single accelerator"
        if words.named_deployment(s)
        else "and every other page of the book prices the block for that deployment"
    )
    return (
        f"This page serves {s.model.name} on {words.deployment_words(s)}, {where}.{need} The table gives the fewest"
        " accelerators for other models."
    )


def _tp_sentence(n: dict[str, Any]) -> str:
    grows = "grows" if n["lone_ratio_big"] > n["lone_ratio_tp1"] else "falls"
    return (
        f"From one accelerator to a group of {n['tp_big']}, the shard each one fetches goes from"
        f" {n['shard_kib_tp1']:,.0f} to {n['shard_kib_big']:,.0f} KiB and a lone block's pass from"
        f" {n['lone_ms_tp1']:.3g} to {n['lone_ms_big']:.3g} ms, of which {n['collectives_ms_big']:.3g} ms"
        f" ({n['collectives_pct_big']:.0f} %) is all-reduce: {n['collectives_latency_ms_big']:.3g} ms of it the"
        " operations' latency, which no further split removes, the rest their bytes over NVLink. The lone-block"
        f" ratio {grows} from {format_number(n['lone_ratio_tp1'], 3)}× to {format_number(n['lone_ratio_big'], 3)}×;"
        " inside a batch it goes from"
        f" {format_number(n['batch_ratio_tp1'], 3)}× to {format_number(n['batch_ratio_big'], 3)}×."
    )


def _moe_sentence(n: dict[str, Any]) -> str:
    return (
        f"Regenerated alone, a block of {MOE_MODEL} routes its tokens to about {n['moe_experts_touched']:.3g} distinct"
        " experts per MoE layer under uniform routing, not to every expert, so one accelerator reads between"
        f" {format_number(n['moe_weights_read_gb_min'])} and {format_number(n['moe_weights_read_gb_max'])} GB of"
        " weights across the"
        f" placements below; the lone-block ratio runs from {format_number(n['moe_lone_ratio_min'])}× to"
        f" {format_number(n['moe_lone_ratio_max'])}×. A group of {n['moe_biggest_group']} is timed as one NVLink"
        " domain, which only an NVLink-switched system of that size gives (an NVL72 rack, or NVLink switches across"
        " servers); over two 8-GPU servers joined by InfiniBand its all-reduces would take longer."
    )


def _sharing_sentence(n: dict[str, Any]) -> str:
    def wins(k: int) -> str:
        return "all" if k == n["n_tiers"] else f"{k} of the"

    copied = "in one piece" if n["sharing_layout"] == "contiguous" else "layer chunk by layer chunk"
    other = (
        f"as {n['sharing_other_transfers']:,} chunk copies" if n["sharing_layout"] == "contiguous" else "in one copy"
    )
    return (
        f"Accelerators behind one PCIe switch, one CXL expander or one NIC divide its bandwidth. With"
        f" {n['sharing_most']} sharing each link and the block copied {copied}, fetching still beats regenerating from"
        f" {wins(n['sharing_batch_wins'])} {n['n_tiers']} tiers inside a batch and from"
        f" {wins(n['sharing_lone_wins'])} {n['n_tiers']} for a lone block; copied {other}, from"
        f" {wins(n['sharing_batch_wins_other'])} {n['n_tiers']} inside a batch."
    )


def _engines_sentence(s: Scenario, n: dict[str, Any]) -> str:
    nvme = tiering.LRU_TIERS[-1]
    return (
        f"Per token fetched from {nvme}, {n['engine_nvme_fastest']}'s layout is the fastest and"
        f" {n['engine_nvme_slowest']}'s the slowest, {n['engine_nvme_spread']:.3g} times apart: many small copies"
        " each pay the drive's latency per transfer."
    )


def _lead_sentence(s: Scenario, n: dict[str, Any]) -> str:
    """The page's answer on its first screen: the trace's time to first token without a tier and with the LRU tier,
    and, in the same sentence, the share of the prompts past the model's window where the percentiles reach them."""
    window = s.model.max_positions
    share = _share_past_window(s)
    past = (
        f"; with no tier, every percentile above the {100 - share:.1f}th is a prompt longer than {s.model.name}'s"
        f" {window:,}-token"
        f" window ({share:.1f} % of them), timed as if the model could run it"
        if share
        else ""
    )
    acc = n["accelerators"]
    return (
        f"For the trace's requests, a {n['ttft_capacity_tib']:.3g} TiB tier in host DRAM brings the median time to"
        f" first token from {n['ttft_none_p50_s']:.3g} s to {n['ttft_tier_p50_s']:.3g} s and the 99th percentile from"
        f" {n['ttft_none_p99_s']:.3g} s to {n['ttft_tier_p99_s']:.3g} s ({acc} accelerator{'s' if acc != 1 else ''}"
        f" a replica, as placed below){past}."
    )


def _ttft_sentence(s: Scenario, n: dict[str, Any]) -> str:
    n_acc = s.placement.accelerators
    on = (
        f"on its {n_acc} accelerators (the busiest one's share of the pass, plus the collectives)"
        if n_acc > 1
        else "on the accelerator"
    )
    return (
        f"For each request of the {s.assumptions.value('workload.trace')} trace the replay finds the prefix an LRU"
        " tier still holds (up to the request's first miss), fetches it, and prefills the rest alone"
        f" {on}. With no tier the median request waits {n['ttft_none_p50_s']:.3g} s for its first"
        " token, the"
        f" 99th percentile {n['ttft_none_p99_s']:.3g} s. A {n['ttft_capacity_tib']:.3g} TiB tier in host DRAM"
        f" ({n['ttft_target_pct']:.0f} % of the achievable hits) serves {n['ttft_hit_token_pct']:.3g} % of the prompt"
        f" tokens and brings them to {n['ttft_tier_p50_s']:.3g} s and {n['ttft_tier_p99_s']:.3g} s, and saves"
        f" {n['ttft_gpu_saved_per_s']:.3g} accelerators' worth of prefill. The medium hardly matters: at that size"
        f" the median differs by {n['ttft_media_p50_spread_pct']:.2g} % between host DRAM, a CXL expander and NVMe."
        f"{_window_clause(s)}"
    )


def _share_past_window(s: Scenario) -> float:
    """Share of the trace's prompts longer than the model's context window (%; 0 where its config states none)."""
    window = s.model.max_positions
    return share_longer(analysis.curve(s), window) * 100 if window else 0.0


def _window_clause(s: Scenario) -> str:
    """Where the trace's prompts outrun the model's context window: how many, and what that makes of the tail."""
    window = s.model.max_positions
    if not window:
        return ""
    share = _share_past_window(s)
    if not share:
        return f" Every prompt of the trace fits {s.model.name}'s {window:,}-token window."
    longer = s.with_block(s.block_tokens, words.LONG_WINDOW_MODEL).model
    return (
        f" {share:.1f} % of the trace's prompts are longer than {s.model.name}'s {window:,}-token window, so with no"
        f" tier every percentile above the {100 - share:.1f}th is the time of a prefill this model cannot run,"
        f" computed as if it could; {longer.name}, with a {longer.max_positions:,}-token window, runs"
        f" {'them' if share_longer(analysis.curve(s), longer.max_positions) == 0 else 'more of them'}."
    )


def ttft_figure(s: Scenario) -> tuple[Figure, str]:
    """TTFT p50, p90 and p99 against the size of an LRU tier in host DRAM, with no tier as the reference."""
    tt = ttft_table(s)
    lone = tt[tt["regime"] == TTFT_REGIME]
    none = lone[lone["tier"] == "none"].iloc[0]
    rows = lone[lone["tier"] == TTFT_TIER].sort_values("capacity_bytes")
    fig, ax = new_figure(4.8, 4.4)
    styles = {"p50": ("-", "o"), "p90": ("--", "s"), "p99": (":", "^")}
    x = rows["capacity_bytes"].to_numpy() / 2**40
    for k, (q, (ls, marker)) in enumerate(styles.items()):
        y = rows[f"ttft_{q}_s"].to_numpy()
        ax.plot(x, y, ls=ls, marker=marker, color=PALETTE[k], label=f"{q}, with the tier")
        ax.axhline(float(none[f"ttft_{q}_s"]), ls=ls, color=PALETTE[k], lw=0.9, alpha=0.6)
        ax.annotate(
            f"{q}, no tier",
            (x.max(), float(none[f"ttft_{q}_s"])),
            xytext=(0, 3),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=MIN_FONT_PT,
            color=PALETTE[k],
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis)
    ax.set_xlabel("LRU tier in host DRAM (TiB)")
    ax.set_ylabel("time to first token (s)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=MIN_FONT_PT)
    n = numbers(s)
    lead = (
        f"A {n['ttft_capacity_tib']:.3g} TiB LRU tier ({n['ttft_target_pct']:.0f} % of the achievable hits) cuts the"
        f" median time to first token by {n['ttft_p50_cut_pct']:.0f} % and the p99 by {n['ttft_p99_cut_pct']:.0f} %:"
        " the long prompts that set the tail reuse the least."
    )
    on = f" on {words.deployment_words(s)}" if s.placement.accelerators > 1 else ""
    text = f"Faint lines: no tier. A request: its fetch, then its prefill alone{on}."
    drivers = words.regen_drivers(s)
    records = s.used("model", *drivers, "workload.trace")
    fig, caption = finish(fig, records, text, lead=lead, drivers=drivers)
    fig.subplots_adjust(bottom=fig.subplotpars.bottom + 0.4 / fig.get_size_inches()[1])
    return fig, caption


TABLES = (
    (
        "serving_placement",
        placement_table,
        ("tp",),
        ("tp", "accelerators", "shard_KiB", "fetch_us", "lone_regen_ms", "lone_collectives_ms", "lone_ratio", "ratio"),
    ),
    (
        "serving_moe",
        moe_table,
        ("tp", "pp", "ep"),
        (
            "tp",
            "pp",
            "ep",
            "experts_touched",
            "lone_weights_read_per_accelerator_GB",
            "lone_regen_ms",
            "lone_ratio",
            "ratio",
        ),
    ),
    ("serving_min_accelerators", min_table, ("model",)),
    (
        "serving_sharing",
        sharing_table,
        ("tier", "gpus_per_link"),
        ("tier", "gpus_per_link", "bandwidth_per_gpu_GBps", "fetch_us", "lone_ratio", "ratio"),
    ),
    (
        "serving_engines",
        engines_table,
        ("engine",),
        (
            "engine",
            "version",
            "block_tokens",
            "transfers_per_block",
            "copy_method",
            "layer_overlap",
            *(f"fetch_per_token_us.{t}" for t in tiering.LRU_TIERS),
        ),
    ),
    (
        "serving_ttft",
        ttft_table,
        ("regime", "tier", "hit_share"),
        (
            "regime",
            "tier",
            "hit_share",
            "capacity_bytes",
            "ttft_p50_s",
            "ttft_p90_s",
            "ttft_p99_s",
            "gpu_saved_s_per_s",
        ),
    ),
)
"""The page's tables of record: (name, builder, key columns, shown columns)."""
FIGURES = (("fig_ttft", ttft_figure),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
