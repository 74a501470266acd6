"""The workload page (``notebooks/12_workload.md``): how big a tier a real serving trace needs, and what it saves."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier import hardware, workload
from kvtier.figures import PALETTE, finish, new_figure, plain_log_ticks
from kvtier.scenario import Scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "12_workload"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""

KEYS: tuple[str, ...] = (
    "flops_per_param_token",
    "illustrative.mfu",
    "kv_dtype",
    "mfu.conservative",
    "mfu.optimistic",
    "mfu.typical",
    "model",
    "param_count",
    "peak_flops",
    "regen.mem_bandwidth",
    "regen.mem_efficiency",
    "weight_dtype",
    "workload.block_tokens",
    "workload.trace",
    "workload.trace_format",
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


def _links() -> list[workload.LinkSpec]:
    presets = sorted(hardware.load_links().values(), key=lambda k: (-k.bandwidth_bytes_per_s, k.name))
    return [workload.LinkSpec(k.name, k.bandwidth_bytes_per_s, k.latency_s) for k in presets]


def _reuse(s: Scenario, trace: str) -> workload.Reuse:
    """The sized trace at ``workload.block_tokens`` in ``workload.trace_format``; the shipped contrast as published."""
    if trace == trace_name(s):
        fmt = str(s.assumptions.value("workload.trace_format"))
        return workload.analyse(trace, int(s.v("workload.block_tokens")), fmt)
    return workload.analyse(trace, workload.TRACE_BLOCK_TOKENS)


def report(s: Scenario, trace: str) -> dict[str, Any]:
    """:func:`kvtier.workload.report` of ``trace`` for the set's model, at its illustrative MFU bracket."""
    rc = workload.RegenCosts.of(s, str(s.assumptions.value("illustrative.mfu")))
    return workload.report(_reuse(s, trace), rc, _links())


def _tier(rep: dict[str, Any], target: float) -> dict[str, Any]:
    return next(t for t in rep["tiers"] if t["target_pct"] == target)


def _link(tier: dict[str, Any], name: str) -> dict[str, Any]:
    return next(k for k in tier["links"] if k["link"] == name)


def _lone_numbers(s: Scenario, rep: dict[str, Any]) -> dict[str, Any]:
    """One trace block recomputed alone: its compute against one read of the weights, and where they meet."""
    regen = rep["regen"]
    rc = workload.RegenCosts(**regen)
    block = float(rep["trace"]["block_tokens"])
    compute = float(rc.in_batch_s(np.array(block)))
    weights = regen["weight_bytes"] / (regen["mem_bandwidth_bytes_per_s"] * regen["mem_efficiency"])
    # k N h / (peak x MFU) = weights / (bandwidth x efficiency), attention left out (it only adds compute)
    meet = weights * regen["peak_flop_per_s"] * regen["mfu"] / (regen["flops_per_param_token"] * regen["active_params"])
    return {
        "lone_block_compute_ms": compute * 1e3,
        "lone_weights_read_ms": weights * 1e3,
        "lone_meet_tokens": meet,
    }


def numbers(s: Scenario) -> dict[str, Any]:
    """The trace, its reuse, the capacity per target and what the tier saves, in both regimes."""
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
        "reuse_zero_pct": float(np.mean(_reuse(s, name).reuse_interval_s == 0) * 100),
        "mfu_pct": rep["regen"]["mfu"] * 100,
        "peak_tflops": rep["regen"]["peak_flop_per_s"] / 1e12,
        "lone_device": s.lone_device,
        "inf_in_batch_gpus": whole["in_batch_gpu_s_per_s"],
        "inf_lone_gpus": whole["lone_gpu_s_per_s"],
        "lone_memory_bound_pct": whole["lone_memory_bound_share"] * 100,
        "lone_over_in_batch": whole["lone_gpu_s_per_s"] / whole["in_batch_gpu_s_per_s"],
        **_lone_numbers(s, rep),
        "cap100_tib": whole["capacity_bytes"] / TIB,
        "shown_target_pct": SHOWN_TARGET,
        "targets_text": ", ".join(f"{x:g}" for x in workload.TARGETS_PCT[:-1]) + f" and {workload.TARGETS_PCT[-1]:g} %",
        "shown_tib": shown["capacity_bytes"] / TIB,
        "shown_share_of_unique_pct": shown["capacity_blocks"] / bl["unique"] * 100,
        "shown_in_batch_gpus": shown["in_batch_gpu_s_per_s"],
        "shown_lone_gpus": shown["lone_gpu_s_per_s"],
        "shown_hit_gbps": shown["hit_bytes_per_s"] / 1e9,
    }
    for target in workload.TARGETS_PCT:
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
    return out


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
    """Per trace, target and link preset: how busy fetching the tier's hits keeps the link, against recomputing."""
    bandwidth = {k.name: k.bandwidth_bytes_per_s for k in hardware.load_links().values()}
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
                        "bandwidth_GBps": bandwidth[k["link"]] / 1e9,
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


def lru_curve(s: Scenario) -> tuple[Figure, str]:
    """Exact LRU hit ratio against the tier's capacity in TiB, both traces, with the targets marked."""
    from matplotlib.ticker import LogLocator

    name, other = trace_name(s), contrast_name(s)
    fig, ax = new_figure(7.5, 4.8)
    marks: list[tuple[int, float]] = []
    for trace, color, width in ((name, PALETTE[0], 2.0), (other, PALETTE[6], 1.3)):
        reuse = _reuse(s, trace)
        caps, ratio = reuse.curve("blocks")
        block_bytes = s.kv_bytes_per_token * reuse.trace.block_tokens
        x = np.r_[caps[0], caps] * block_bytes / TIB
        y = np.r_[0.0, ratio] * 100
        role = "sized" if trace == name else "contrast"
        ax.step(x, y, where="post", color=color, lw=width, label=f"{trace} trace ({role})")
        inf = float(reuse.hit_ratio()) * 100
        ax.axhline(inf, color=color, lw=0.8, ls=":")
        ax.annotate(
            f"{trace}, infinite cache: {inf:.1f} %",
            (0.01, inf),
            xycoords=("axes fraction", "data"),
            textcoords="offset points",
            xytext=(0, 3),
            fontsize=9,
            color=color,
        )
        if trace == name:
            for target in workload.TARGETS_PCT:
                cap = reuse.capacity_for(target / 100)
                cx, cy = cap * block_bytes / TIB, float(reuse.hit_ratio(cap)) * 100
                marks.append((target, cx))
                ax.plot(cx, cy, "o", color=PALETTE[1], ms=5, zorder=3)
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))  # five decades: 1, 2, 5 of each would crowd
    ax.set_ylim(0, 100)
    listing = "\n".join(f"{target} %: {cx:,.2f} TiB" for target, cx in marks)
    ax.text(
        0.98,
        0.97,
        f"{name} trace: the capacity for this share\nof its infinite cache's hit ratio\n{listing}",
        transform=ax.transAxes,
        ha="right",
        va="top",
        fontsize=9,
        color=PALETTE[1],
    )
    ax.set_xlabel(f"tier capacity (TiB of {s.model.name} KV in {s.kv_dtype}, log scale)")
    ax.set_ylabel("LRU hit ratio (% of block references)")
    ax.set_title("Hit ratio of an LRU tier against its size, exact (stack distances)")
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, 0.97))
    records = _footer_records(s, "model", "kv_dtype")
    first, last = marks[0], marks[-1]
    return finish(
        fig,
        records,
        f"Exact LRU hit ratio of block references against the tier's capacity (log axis) for the {name} trace"
        f" and, for contrast, Mooncake's shipped {other} trace (grey); dotted lines: each trace's infinite cache;"
        " red dots: the capacities for 50, 80, 90 and 95 % of it.",
        lead=f"Going from {first[0]} to {last[0]} % of the hit ratio an infinite cache reaches takes the {name}"
        f" trace's tier from {first[1]:.2f} TiB to {last[1]:.2f} TiB, {last[1] / first[1]:.1f} times the capacity:"
        " the last points of hit ratio are the dear ones.",
        drivers=("workload.trace", "model"),
    )


def reuse_intervals(s: Scenario) -> tuple[Figure, str]:
    """Distribution of the time between consecutive references to a block, both traces."""
    name, other = trace_name(s), contrast_name(s)
    fig, ax = new_figure(7.5, 4.4)
    p90 = {}
    for trace, color, width in ((name, PALETTE[0], 2.0), (other, PALETTE[6], 1.3)):
        iv = np.sort(_reuse(s, trace).reuse_interval_s) / 60
        if not iv.size:
            continue
        floor = 1e-3 / 60  # the traces' timestamps are whole milliseconds
        y = np.arange(1, iv.size + 1) / iv.size * 100
        role = "sized" if trace == name else "contrast"
        ax.step(np.maximum(iv, floor), y, where="post", color=color, lw=width, label=f"{trace} ({role})")
        p90[trace] = float(np.percentile(iv, 90))
        for q in (50, 90):
            v = float(np.percentile(iv, q))
            if trace == name:
                ax.plot(v, q, "o", color=PALETTE[1], ms=5, zorder=3)
                ax.annotate(
                    f"p{q}: {v:.1f} min",
                    (v, q),
                    textcoords="offset points",
                    xytext=(8, -12),
                    fontsize=9,
                    color=PALETTE[1],
                )
    ax.set_xscale("log")
    ax.set_xlim(left=1e-2)
    plain_log_ticks(ax.xaxis)
    ax.set_ylim(0, 100)
    ax.set_xlabel("reuse interval: time since the block's previous reference (minutes, log scale)")
    ax.set_ylabel("share of repeat references (%)")
    ax.set_title("How long a block waits between uses")
    ax.legend(loc="upper left")
    return finish(
        fig,
        _footer_records(s),
        "Cumulative distribution of the time between consecutive references to the same block, for the"
        f" {name} trace and, for contrast, Mooncake's shipped {other} trace (grey); references within the same"
        " millisecond are drawn at the left edge.",
        lead=f"Nine in ten repeat references to a block in the {name} trace come within"
        f" {p90.get(name, math.nan):.1f} minutes of the previous one ({p90.get(other, math.nan):.1f} minutes in the"
        f" {other} trace): a tier has to keep a block for minutes, not seconds, which is why its size runs to"
        " terabytes.",
        drivers=("workload.trace",),
    )


TABLES = (
    ("workload_traces", traces_table, ("trace",)),
    ("workload_tiers", tiers_table, ("trace", "target")),
    ("workload_links", links_table, ("trace", "target", "link")),
)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (("fig_workload_lru", lru_curve), ("fig_workload_reuse", reuse_intervals))
"""The page's figures: (glue name, function returning the figure and its caption)."""
