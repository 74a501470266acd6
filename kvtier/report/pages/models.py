"""The models page (``notebooks/09_models.md``): every model preset side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import capacity
from kvtier.inputs.models import PRESETS
from kvtier.report.figures import PALETTE, finish, new_figure
from kvtier.scenario import Scenario
from kvtier.units import GIB, MIB

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "09_models"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "many models"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (
    "bandwidth.mid",
    "bandwidth.optimistic",
    "bandwidth.pessimistic",
    "block_tokens",
    "fetch_latency",
    "fetch_layout",
    "flops_per_param_token",
    "illustrative.bandwidth",
    "illustrative.mfu",
    "kv_dtype",
    "mfu.conservative",
    "mfu.optimistic",
    "mfu.typical",
    "model",
    "param_count",
    "peak_flops",
    "weight_dtype",
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""


def numbers(s: Scenario) -> dict[str, Any]:
    """Extremes across the model presets."""
    df = table(s).set_index("model")
    kv = df["kv_KiB_per_token"]
    cross = df["crossover_tokens"]
    ratio = df["ratio_illustrative"]
    return {
        "n_models": len(df),
        "kv_max_model": str(kv.idxmax()),
        "kv_max_kib": float(kv.max()),
        "kv_min_model": str(kv.idxmin()),
        "kv_min_kib": float(kv.min()),
        "crossover_min_model": str(cross.idxmin()),
        "crossover_min_tokens": float(cross.min()),
        "crossover_max_model": str(cross.idxmax()),
        "crossover_max_tokens": float(cross.max()),
        "ratio_min_model": str(ratio.idxmin()),
        "ratio_min": float(ratio.min()),
        "ratio_max_model": str(ratio.idxmax()),
        "ratio_max": float(ratio.max()),
        "kv_dtype": s.kv_dtype,
        "block_tokens": s.block_tokens,
    }


def table(s: Scenario) -> pd.DataFrame:
    """Every model preset side by side (exact parameter counts from the configs).

    The set's own model is included when it is not a preset (a config.json path).  The
    ratio is at the set's illustrative point with each model's block and FLOPs.
    """
    names = list(PRESETS)
    own = str(s.assumptions.value("model"))
    if own not in names:
        names.append(own)
    rows = []
    for name in names:
        m = Scenario(s.assumptions.with_values({"model": name, "param_count": None}, source="models table"))
        total, active = m.model.param_counts()
        fp8 = m.model.kv_bytes_per_token("fp8")
        point = m.illustrative
        rows.append(
            {
                "model": name,
                "attention": m.model.attention,
                "moe": m.model.is_moe,
                "layers": m.model.n_layers,
                "kv_heads": None if m.model.attention == "MLA" else m.model.n_kv_heads,
                "head_dim": None if m.model.attention == "MLA" else m.model.head_dim,
                "total_params_B": total / 1e9,
                "active_params_B": active / 1e9,
                "kv_KiB_per_token": m.kv_bytes_per_token / 1024,
                "kv_fp8_KiB_per_token": fp8 / 1024,
                "block_MiB": m.block_bytes / MIB,
                "weights_GiB": m.weight_bytes / GIB,
                "crossover_tokens": m.crossover_tokens,
                "crossover_fp8_kv_tokens": float(capacity.crossover_context_tokens(m.weight_bytes, fp8)),
                "max_positions": m.model.max_positions or None,
                "ratio_illustrative": point["ratio"],
                "note": model_note(m),
                "provenance": f"published-spec ({m.model.source}); derived",
            }
        )
    return pd.DataFrame(rows)


def model_note(s: Scenario) -> str:
    """What a reader must know before trusting a model's capacity row (empty if nothing)."""
    m = s.model
    notes = []
    if m.sliding_window and m.sliding_layers < m.n_layers:
        notes.append(
            f"sliding-window attention over {m.sliding_window:,} tokens on {m.sliding_layers} of {m.n_layers}"
            " layers: only those stop growing; the other layers' cache grows with the context"
        )
    elif m.sliding_window:
        capped = s.kv_bytes_per_token * m.sliding_window
        notes.append(
            f"sliding-window attention: the cache stops growing at {m.sliding_window:,} tokens"
            f" ({capped / GIB:.2f} GiB), so the crossover is never reached"
            if capped < s.weight_bytes
            else f"sliding-window attention over {m.sliding_window:,} tokens"
        )
    if m.max_positions and s.crossover_tokens > m.max_positions:
        notes.append(f"crossover beyond the {m.max_positions:,} positions the config allows")
    if m.weight_quantization:
        notes.append(
            f"weights published as {m.weight_quantization}; weights_GiB assumes"
            f" weight_dtype = {s.assumptions.value('weight_dtype')}"
        )
    return "; ".join(notes)


def models_crossover(s: Scenario) -> tuple[Figure, str]:
    """Each model's KV per token and the context at which one sequence's KV equals its weights."""
    df = table(s).iloc[::-1].reset_index(drop=True)
    fig, ax = new_figure(7.5, 4.8)
    colors = {"MHA": PALETTE[0], "GQA": PALETTE[1], "MLA": PALETTE[3]}
    y = np.arange(len(df))
    ax.barh(y, df["crossover_tokens"], color=[colors.get(a, PALETTE[6]) for a in df["attention"]])
    ax.set_xscale("log")
    ax.set_yticks(
        y,
        [
            f"{m} ({a}{', MoE' if moe else ''})"
            for m, a, moe in zip(df["model"], df["attention"], df["moe"], strict=True)
        ],
    )
    for yi, (x, kv) in enumerate(zip(df["crossover_tokens"], df["kv_KiB_per_token"], strict=True)):
        ax.annotate(
            f"{x:,.0f} tokens; {kv:g} KiB/token", (x, yi), xytext=(4, -3), textcoords="offset points", fontsize=8
        )
    ax.set_xlabel("context at which one sequence's KV cache equals the weights (tokens, log scale)")
    ax.set_xlim(right=df["crossover_tokens"].max() * 30)
    ax.grid(axis="y", visible=False)
    ax.set_title("KV cache against weights, model by model")
    records = s.used("kv_dtype", "weight_dtype")
    n = numbers(s)
    lead = (
        f"Where one sequence's cache outweighs the model depends on the model: the crossover runs from"
        f" {n['crossover_min_tokens']:,.0f} tokens ({n['crossover_min_model']}) to {n['crossover_max_tokens']:,.0f}"
        f" ({n['crossover_max_model']})."
    )
    return finish(
        fig,
        records,
        "Crossover context of every model preset (exact parameter counts from their configurations), with each "
        "model's KV bytes per token; colour marks the attention type.",
        extra="parameters and geometry from each published config.json [published-spec]",
        lead=lead,
        drivers=("kv_dtype", "weight_dtype"),
    )


TABLES = (
    (
        "models",
        table,
        ("model",),
        (
            "model",
            "attention",
            "kv_KiB_per_token",
            "block_MiB",
            "weights_GiB",
            "crossover_tokens",
            "max_positions",
            "ratio_illustrative",
            "note",
        ),
    ),
)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (("fig_models", models_crossover),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
