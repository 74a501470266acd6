"""The measured page's engine check: published engine measurements on other accelerators against the engine model,
and Mooncake's bandwidth criterion (FAST'25, Equation 2) recomputed with its own FLOP count and with kvtier's."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from kvtier.formulas import costs
from kvtier.inputs import hardware, kernels
from kvtier.inputs.assumptions import load_assumptions
from kvtier.inputs.measurements.published import Published, published_measurements
from kvtier.report import words
from kvtier.report.columns import Column, declare, named
from kvtier.scenario import Scenario

ENGINE_COLUMNS = (
    *named("id", "accelerator", "engine", "model", "tp"),
    Column("tokens", "prompt", "tokens"),
    *named("group"),
    Column("measured_ms", "published", "ms"),
    *named("reading"),
    Column("model_ms", "engine model", "ms"),
    Column("error_pct", "error", "%"),
    Column("floor_ms", "FLOP floor", "ms"),
    Column("tables", "kernel tables"),
    Column("beyond", "grid bound crossed"),
    *named("status"),
    Column("why", "why not counted"),
    Column("engine_setup", "engine measured"),
    *named("source", "date", "command"),
)
"""The columns of :func:`engine_table`, in words with their units."""

IN_GRID = "inside the measured grid"
PAST_GRID = "past the measured grid, extrapolated"
GROUPS = (IN_GRID, PAST_GRID)
"""The engine check's two groups: passes the kernel tables measured, and passes timed by the package's extrapolation
(``regen.beyond_grid: extrapolate``, context attention grown as the square of the sequence)."""

FLOOR_DTYPES = ("bf16", "fp16")
"""Weight types whose FLOP floor the datasheet peak in ``kvtier/data/hardware.yaml`` (dense bf16) bounds; a row with
others (fp8 runs at a higher peak, which no preset states) has no floor."""


def published_scenario(row: Published) -> Scenario:
    """The set that times ``row``'s prefill under the engine model: its model, engine, placement and types, on the
    kernel tables of its accelerator (no fit check: the published run fitted), a prompt past the tables' grid timed
    by the package's extrapolation (``regen.beyond_grid: extrapolate``; inside the grid it changes nothing)."""
    system = kernels.ACCELERATOR_SYSTEMS[row.accelerator]
    sets = {**row.sets, "regen.system": system, "parallel.hbm_capacity": "null", "regen.beyond_grid": "extrapolate"}
    return Scenario(load_assumptions(sets=sets))


def layer_params(s: Scenario) -> float:
    """The parameters every prompt token passes through in a prefill: the active ones less the embedding table and
    the LM head (a lookup, and a head an engine applies to the last token only)."""
    m = s.model
    return s.active_params - m.vocab_size * m.hidden_size * (1 if m.tie_embeddings else 2)


def flop_floor_ms(row: Published, s: Scenario) -> float:
    """The least time any engine can take for ``row``'s prefill (ms): the layers' weight FLOPs of its prompt
    (``flops_per_param_token x`` :func:`layer_params` ``x tokens``, attention left out) at the accelerator's
    datasheet dense bf16 peak on each of its ``tp`` accelerators; NaN for weights not in :data:`FLOOR_DTYPES`."""
    if row.weight_dtype not in FLOOR_DTYPES:
        return float("nan")
    peak = hardware.accelerator(row.accelerator).require_peak()
    flops = costs.forward_flops(row.tokens, layer_params(s), s.v("flops_per_param_token"))
    return float(flops) / (row.tp * peak) * 1e3


@cache
def _grid_tokens() -> tuple[int, ...]:
    """Each row's kernel tables' longest measured sequence (tokens), in the file's order."""
    return tuple(published_scenario(r).kernel_tables.max_sequence_tokens for r in published_measurements())


@cache
def _engine_rows() -> tuple[dict[str, Any], ...]:
    rows = []
    for r in published_measurements():
        s = published_scenario(r)
        model_s = float(s.lone_regen_s(0, "resident", 0.0))
        beyond = s.engine_extrapolated(0, "resident", s.block_tokens)  # the grid bound crossed, empty inside
        floor_ms = flop_floor_ms(r, s)
        tables = s.kernel_tables
        if r.excluded:
            status, why = "unreadable", r.excluded
        elif r.value_ms < floor_ms:
            status = "below the FLOP floor"
            peak = hardware.accelerator(r.accelerator).require_peak()
            why = (
                f"{r.value_ms:,.0f} ms is less than the {floor_ms:,.0f} ms that {layer_params(s) / 1e9:.2f} billion"
                f" layer parameters x {r.tokens:,} tokens take at {peak / 1e12:,.0f} TFLOP/s ({r.accelerator}"
                " dense bf16 peak), attention aside: no engine is that fast"
            )
        elif np.isnan(model_s):
            status, why = "not timed", "the engine model gives no time"
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
                "group": PAST_GRID if beyond else IN_GRID,
                "measured_ms": r.value_ms,
                "reading": r.reading,
                "model_ms": model_s * 1e3,
                "error_pct": (model_s * 1e3 / r.value_ms - 1) * 100,
                "floor_ms": floor_ms,
                "tables": tables.label,
                "beyond": beyond,
                "status": status,
                "why": why,
                "engine_setup": r.engine_setup,
                "source": " ".join(r.source.split()),
                "date": r.date,
                "command": r.command(extrapolate=bool(beyond)),
            }
        )
    rows.sort(key=lambda row: GROUPS.index(row["group"]))  # stable: the file's order inside each group
    return tuple(rows)


def engine_table(s: Scenario) -> pd.DataFrame:
    """Each published engine measurement against the engine model's prediction; the assumption set is not read.

    A time to first token includes what a prefill does not (the client, tokenization, scheduling), so
    the model should sit a little below it.  The rows come in two groups: prompts inside the kernel
    tables' measured grid, and prompts past it, timed by the package's extrapolation
    (``regen.beyond_grid: extrapolate``; each such row's command says so).  A row is counted unless the
    file excludes it (a value unreadable off its chart) or its value is below its FLOP floor
    (:func:`flop_floor_ms`), which no engine can beat.
    """
    return declare(pd.DataFrame(list(_engine_rows())), ENGINE_COLUMNS)


GROUP_COLUMNS = (
    *named("group"),
    Column("points", "points counted"),
    Column("rows", "rows shown"),
    *named("accelerators", "engines"),
    Column("tokens_min", "shortest prompt", "tokens"),
    Column("tokens_max", "longest prompt", "tokens"),
    Column("err_min_pct", "lowest error", "%"),
    Column("err_median_pct", "median error", "%"),
    Column("err_max_pct", "highest error", "%"),
)
"""The columns of :func:`engine_group_table`, in words with their units."""


def engine_group_table(s: Scenario) -> pd.DataFrame:
    """The engine check by group (:data:`GROUPS`): the counted points, the accelerators and engines they ran on,
    their prompts' range and the errors' range and median; the assumption set is not read."""
    df = engine_table(s)
    rows = []
    for group in GROUPS:
        shown = df[df["group"] == group]
        counted = shown[shown["status"] == "counted"]
        err = counted["error_pct"].to_numpy()
        rows.append(
            {
                "group": group,
                "points": len(counted),
                "rows": len(shown),
                "accelerators": words.listed(sorted(set(counted["accelerator"]))),
                "engines": words.listed(sorted(set(counted["engine"]))),
                "tokens_min": int(counted["tokens"].min()),
                "tokens_max": int(counted["tokens"].max()),
                "err_min_pct": float(err.min()),
                "err_median_pct": float(np.median(err)),
                "err_max_pct": float(err.max()),
            }
        )
    return declare(pd.DataFrame(rows), GROUP_COLUMNS)


def engine_numbers(s: Scenario) -> dict[str, Any]:
    """The engine check in numbers: points counted and shown, per group (``engine_in_*`` inside the tables' grid,
    ``engine_past_*`` past it) the errors' range and median, the accelerators and engines; the rows left out."""
    df = engine_table(s)
    counted = df[df["status"] == "counted"]
    err = counted["error_pct"].to_numpy()
    out: dict[str, Any] = {
        "engine_points": len(counted),
        "engine_rows": len(df),
        "engine_left_out": len(df) - len(counted),
        "engine_below_floor": int((df["status"] == "below the FLOP floor").sum()),
        "engine_unreadable": int((df["status"] == "unreadable").sum()),
        "engine_worst_abs_pct": float(np.abs(err).max()),
        "engine_accelerators": len(set(counted["accelerator"])),
        "engine_accelerator_names": words.listed(sorted(set(counted["accelerator"]))),
        "engine_engines": len(set(counted["engine"])),
        "engine_package": f"{kernels.PACKAGE} {kernels.package_version()}",
        "engine_grid_tokens": words.listed(f"{n:,}" for n in sorted(set(_grid_tokens()))),
    }
    for prefix, row in zip(("engine_in", "engine_past"), engine_group_table(s).itertuples(index=False), strict=True):
        out |= {
            f"{prefix}_points": int(row.points),
            f"{prefix}_accelerators": row.accelerators,
            f"{prefix}_accelerator_count": len(set(counted[counted["group"] == row.group]["accelerator"])),
            f"{prefix}_plot_points": int(((counted["group"] == row.group) & (counted["reading"] == "plot")).sum()),
            f"{prefix}_engines": row.engines,
            f"{prefix}_tokens_min": int(row.tokens_min),
            f"{prefix}_tokens_max": int(row.tokens_max),
            f"{prefix}_err_min_pct": float(row.err_min_pct),
            f"{prefix}_err_median_pct": float(row.err_median_pct),
            f"{prefix}_err_max_pct": float(row.err_max_pct),
        }
    inside = set(counted[counted["group"] == IN_GRID]["accelerator"])
    past = set(counted[counted["group"] == PAST_GRID]["accelerator"])
    out["engine_past_only_accelerators"] = words.listed(sorted(past - inside))
    return {**out, **mooncake_numbers(), **position_numbers(), **stack_numbers(s)}


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
