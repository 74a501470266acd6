"""The measured page's engine check: published engine measurements on other accelerators against the engine model,
and Mooncake's bandwidth criterion (FAST'25, Equation 2) recomputed with its own FLOP count and with kvtier's."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from kvtier.formulas import costs
from kvtier.inputs import kernels
from kvtier.inputs.assumptions import load_assumptions
from kvtier.inputs.measurements.published import Published, published_measurements
from kvtier.report.columns import Column, declare, named
from kvtier.scenario import Scenario

ENGINE_COLUMNS = (
    *named("id", "accelerator", "engine", "model", "tp"),
    Column("tokens", "prompt", "tokens"),
    Column("measured_ms", "published", "ms"),
    *named("reading"),
    Column("model_ms", "engine model", "ms"),
    Column("error_pct", "error", "%"),
    Column("tables", "kernel tables"),
    *named("status"),
    Column("why", "why not counted"),
    Column("engine_setup", "engine measured"),
    *named("source", "date", "command"),
)
"""The columns of :func:`engine_table`, in words with their units."""


def published_scenario(row: Published) -> Scenario:
    """The set that times ``row``'s prefill under the engine model: its model, engine, placement and types, on the
    kernel tables of its accelerator (no fit check: the published run fitted)."""
    system = kernels.ACCELERATOR_SYSTEMS[row.accelerator]
    return Scenario(load_assumptions(sets={**row.sets, "regen.system": system, "parallel.hbm_capacity": "null"}))


@cache
def _engine_rows() -> tuple[dict[str, Any], ...]:
    rows = []
    for r in published_measurements():
        s = published_scenario(r)
        model_s = float(s.lone_regen_s(0, "resident", 0.0))  # NaN beyond the tables' grid (Timed.engine_regen_s)
        tables = s.kernel_tables
        if r.excluded:
            status, why = "unreadable", r.excluded
        elif np.isnan(model_s):
            status = "beyond the grid"
            why = f"{r.tokens:,} tokens are beyond the tables' {tables.max_sequence_tokens:,}: the model refuses"
        else:
            status, why = "counted", ""
        rows.append(
            {
                "id": r.id,
                "accelerator": r.accelerator,
                "engine": r.engine,
                "model": r.model,
                "tp": r.tp,
                "tokens": r.tokens,
                "measured_ms": r.value_ms,
                "reading": r.reading,
                "model_ms": model_s * 1e3,
                "error_pct": (model_s * 1e3 / r.value_ms - 1) * 100,
                "tables": tables.label,
                "status": status,
                "why": why,
                "engine_setup": r.engine_setup,
                "source": " ".join(r.source.split()),
                "date": r.date,
                "command": r.command,
            }
        )
    return tuple(rows)


def engine_table(s: Scenario) -> pd.DataFrame:
    """Each published engine measurement against the engine model's prediction; the assumption set is not read.

    A time to first token includes what a prefill does not (the client, tokenization, scheduling), so
    the model should sit a little below it.  A row is counted unless the file excludes it (a value
    unreadable off its chart) or its prompt lies beyond the kernel tables' measured grid, where the
    engine model refuses.
    """
    return declare(pd.DataFrame(list(_engine_rows())), ENGINE_COLUMNS)


def engine_numbers(s: Scenario) -> dict[str, Any]:
    """The engine check in numbers: points counted and shown, the errors' range, the systems and engines."""
    df = engine_table(s)
    counted = df[df["status"] == "counted"]
    err = counted["error_pct"].to_numpy()
    return {
        "engine_points": len(counted),
        "engine_rows": len(df),
        "engine_err_min_pct": float(err.min()),
        "engine_err_max_pct": float(err.max()),
        "engine_worst_abs_pct": float(np.abs(err).max()),
        "engine_accelerators": len(set(counted["accelerator"])),
        "engine_engines": len(set(counted["engine"])),
        "engine_package": f"{kernels.PACKAGE} {kernels.package_version()}",
        **mooncake_numbers(),
        **position_numbers(),
        **stack_numbers(s),
    }


POSITION_PROBE = {"model": "llama-3-8b", "regen.model": "engine", "regen.system": "h200_sxm", "engine": "vllm"}
"""The block the position check times: a lone 16-token Llama-3-8B block on the H200's vLLM tables."""


@cache
def position_numbers() -> dict[str, Any]:
    """A lone block's engine-model time at three positions, where the tables have no cached-prefix axis (ms)."""
    s = Scenario(load_assumptions(sets=POSITION_PROBE))
    t = s.kernel_tables
    block = s.block_tokens
    last = t.max_sequence_tokens - block
    times = s.lone_regen_s(np.array([0, 4096 - block, last]), "resident", 0.0) * 1e3
    return {
        "pos_tables": t.label,
        "pos_block_tokens": block,
        "pos_mid": 4096 - block,
        "pos_last": last,
        "pos_first_ms": float(times[0]),
        "pos_mid_ms": float(times[1]),
        "pos_last_ms": float(times[2]),
        "pos_mid_drop_pct": float((1 - times[1] / times[0]) * 100),
    }


# ---- the same passes, the measured stack against an engine's kernels ---------------------------------------
STACK_RUNNERS = ("eager", "CUDA graph")
"""The measured page's own passes compared with the engine's kernels: plain PyTorch, eager and as a CUDA graph."""

STACK_COLUMNS = (
    *named("shape", "runner", "tokens"),
    Column("measured_ms", "plain PyTorch, measured", "ms"),
    Column("engine_ms", "vLLM's kernels, engine model", "ms"),
    Column("slower", "measured / engine model", "×"),
    *named("tables"),
)
"""The columns of :func:`stack_table`, in words with their units."""


@cache
def _stack_rows() -> tuple[dict[str, Any], ...]:
    from kvtier.report.pages.measured.forward import forward_table

    passes = forward_table(Scenario())
    rows = []
    for shape, runner, tokens, measured_ms in passes[["shape", "runner", "tokens", "measured_ms"]].itertuples(
        index=False
    ):
        if runner not in STACK_RUNNERS:
            continue
        sets = {"model": shape, "regen.model": "engine", "regen.system": "h200_sxm", "engine": "vllm"}
        sets |= {"block_tokens": str(tokens), "parallel.hbm_capacity": "null"}
        e = Scenario(load_assumptions(sets=sets))
        engine_ms = float(e.lone_regen_s(0, "resident", 0.0)) * 1e3
        rows.append(
            {
                "shape": shape,
                "runner": runner,
                "tokens": int(tokens),
                "measured_ms": float(measured_ms),
                "engine_ms": engine_ms,
                "slower": float(measured_ms) / engine_ms,
                "tables": e.kernel_tables.label,
            }
        )
    return tuple(rows)


def stack_table(s: Scenario) -> pd.DataFrame:
    """The H200's measured plain-PyTorch passes against vLLM's kernels on the same accelerator (engine model).

    Each pass the page measured (eager and CUDA graph; the transformers cross-check aside), timed again by the
    engine model as a lone pass of the same tokens with the H200's vLLM tables: how much of a measured time is
    the software stack.  The assumption set is not read.
    """
    return declare(pd.DataFrame(list(_stack_rows())), STACK_COLUMNS)


def stack_numbers(s: Scenario) -> dict[str, Any]:
    """The stack comparison in numbers: the compute-bound passes' range and the CUDA-graph 16-token passes (×)."""
    df = stack_table(s)
    bound = df[(df["runner"] == "eager") & (df["tokens"] >= 1024)]
    graph = df[df["runner"] == "CUDA graph"].set_index("shape")
    return {
        "stack_long_tokens": int(bound["tokens"].min()),
        "stack_long_min": float(bound["slower"].min()),
        "stack_long_max": float(bound["slower"].max()),
        "stack_graph70": float(graph.loc["llama-3-70b", "slower"]),
        "stack_graph8": float(graph.loc["llama-3-8b", "slower"]),
        "stack_graph70_engine_ms": float(graph.loc["llama-3-70b", "engine_ms"]),
        "stack_graph70_ms": float(graph.loc["llama-3-70b", "measured_ms"]),
    }


# ---- Mooncake FAST'25, Equation 2 --------------------------------------------------------------------
MOONCAKE = {
    "layers": 80,
    "d": 8192,
    "gqa": 8,
    "bytes_per_element": 2,
    "a": 4,
    "b": 22,
    "prefix_tokens": 8192,
    "gpus": 8,
    "a800_flop_per_s": 312e12,
    "h800_flop_per_s": 989e12,
    "published_a800_gbps": 6,
    "published_h800_gbps": 19,
}
"""Mooncake FAST'25 (Qin et al.), Section 2.2 and Table 1: LLaMA3-70B (80 layers, d = 8,192, 8 query heads per KV
head, 2-byte elements), Equation 1's coefficients a = 4 and b = 22, an 8,192-token prefix; G = 8 x 312 TFLOP/s for
8 x A800 (Table 1) and 8 x 989 TFLOP/s for 8 x H800 (the H800's dense bf16 datasheet peak, which reproduces the
paper's 19 GB/s); the paper's results, 6 and 19 GB/s (published-spec; the paper's PDF in kvcache-ai/Mooncake,
FAST25-release/Mooncake-FAST25.pdf, read 2026-12-06)."""


def mooncake_min_bandwidth(flops: float, kv_bytes: float, flop_per_s: float) -> float:
    """Least loading bandwidth at which fetching a prefix's KV beats recomputing it (B/s).

    Equation 2 of Mooncake FAST'25 rearranged: the transfer ``kv_bytes / B`` must be shorter than the
    recompute ``flops / G``, so ``B > kv_bytes x G / flops``; no per-copy latency, no overlap.
    """
    return kv_bytes * flop_per_s / flops


@cache
def mooncake_numbers() -> dict[str, Any]:
    """Equation 2 with Mooncake's own FLOP count and with kvtier's (Llama-3-70B's config), GB/s and FLOP."""
    m = MOONCAKE
    p, d, layers = m["prefix_tokens"], m["d"], m["layers"]
    kv_bytes = p * layers * (2 * d / m["gqa"]) * m["bytes_per_element"]
    theirs = layers * (m["a"] * p * p * d + m["b"] * p * d * d)  # Equation 1 at n = p
    s = Scenario(load_assumptions(sets={"model": "llama-3-70b", "block_tokens": str(p), "param_count": "null"}))
    ours = float(s.interior_flops(0, "resident"))  # the prefix recomputed: parameters and causal attention
    linear_ours = float(costs.forward_flops(p, s.active_params, s.v("flops_per_param_token")))
    return {
        "mc_prefix_tokens": p,
        "mc_a": m["a"],
        "mc_b": m["b"],
        "mc_gpus": m["gpus"],
        "mc_flops_extra_pct": (ours / theirs - 1) * 100,
        "mc_linear_extra_pct": (linear_ours / (layers * m["b"] * p * d * d) - 1) * 100,
        "mc_attention_share_pct": (ours - linear_ours) / (layers * m["a"] * p * p * d) * 100,
        "mc_kv_bytes": kv_bytes,
        "mc_kv_bytes_kvtier": s.kv_bytes_per_token * p,
        "mc_flops_theirs": theirs,
        "mc_flops_ours": ours,
        "mc_flops_ratio": ours / theirs,
        "mc_linear_theirs": layers * m["b"] * p * d * d,
        "mc_linear_ours": linear_ours,
        "mc_attention_theirs": layers * m["a"] * p * p * d,
        "mc_attention_ours": ours - linear_ours,
        "mc_a800_theirs_gbps": mooncake_min_bandwidth(theirs, kv_bytes, m["gpus"] * m["a800_flop_per_s"]) / 1e9,
        "mc_h800_theirs_gbps": mooncake_min_bandwidth(theirs, kv_bytes, m["gpus"] * m["h800_flop_per_s"]) / 1e9,
        "mc_a800_ours_gbps": mooncake_min_bandwidth(ours, kv_bytes, m["gpus"] * m["a800_flop_per_s"]) / 1e9,
        "mc_h800_ours_gbps": mooncake_min_bandwidth(ours, kv_bytes, m["gpus"] * m["h800_flop_per_s"]) / 1e9,
        "mc_a800_published_gbps": m["published_a800_gbps"],
        "mc_h800_published_gbps": m["published_h800_gbps"],
    }
