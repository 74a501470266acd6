"""The models page (``notebooks/09_models.md``): every model preset side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import capacity
from kvtier.inputs.models import PRESETS
from kvtier.report import words
from kvtier.report.columns import Column, declare, named
from kvtier.report.figures import PALETTE, finish, new_figure
from kvtier.scenario import ENGINE_KEYS, PLACEMENT_KEYS, TRANSFER_KEYS, Scenario
from kvtier.units import AUTO_DTYPE, GIB, MIB

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "09_models"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "many models"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            "bandwidth.mid",
            "bandwidth.optimistic",
            "bandwidth.pessimistic",
            "block_tokens",
            "fetch_latency",
            "engine",
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
            *PLACEMENT_KEYS,
            *TRANSFER_KEYS,
            *ENGINE_KEYS,
        )
    )
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""

FIG_WIDTH_IN = 4.8
"""Figure width (in): under :data:`~kvtier.report.figures.MAX_WIDTH_IN` with room for the tight bounding box's
padding, so that 9 pt text is still 9 px where a 420 px screen shows the figure 370 px wide."""


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


COLUMNS = (
    *named("model", "attention"),
    Column("moe", "experts", words=("mixture of experts", "dense")),
    Column("layers", "layers"),
    Column("kv_heads", "KV heads"),
    Column("head_dim", "head dimension"),
    Column("total_params_B", "parameters", "billions"),
    Column("active_params_B", "active parameters", "billions"),
    Column("kv_KiB_per_token", "KV cache", "KiB/token"),
    Column("kv_fp8_KiB_per_token", "KV cache in FP8", "KiB/token"),
    Column("block_MiB", "block", "MiB"),
    Column("weights_GiB", "weights", "GiB"),
    Column("crossover_tokens", "crossover context", "tokens"),
    Column("crossover_fp8_kv_tokens", "crossover context, FP8 KV cache", "tokens"),
    Column("max_positions", "longest context"),
    Column("ratio_illustrative", "regeneration / fetch, illustrative point", "×"),
    *named("note", "provenance"),
)
"""The columns of :func:`table`, in words with their units."""


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
        m = _scenario_of(s, name)
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
    return declare(pd.DataFrame(rows), COLUMNS)


def _scenario_of(s: Scenario, name: str) -> Scenario:
    """``s`` with model ``name`` and that model's exact parameter count."""
    return Scenario(s.assumptions.with_values({"model": name, "param_count": None}, source="models table"))


def window_cap_tokens(s: Scenario) -> int | None:
    """The context at which the model's whole cache stops growing (every layer slides), if it stays below its weights.

    Returns
    -------
    int or None
        The sliding window in tokens when every layer attends only to it and the capped cache
        (KV bytes per token × window) is smaller than the weights, so the crossover is never reached;
        None otherwise.
    """
    m = s.model
    full = m.sliding_window and m.sliding_layers >= m.n_layers
    return m.sliding_window if full and s.kv_bytes_per_token * m.sliding_window < s.weight_bytes else None


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
            if window_cap_tokens(s)
            else f"sliding-window attention over {m.sliding_window:,} tokens"
        )
    if m.max_positions and s.crossover_tokens > m.max_positions:
        notes.append(f"crossover beyond the {m.max_positions:,} positions the config allows")
    if m.weight_quantization and s.assumptions.value("weight_dtype") == AUTO_DTYPE:
        notes.append(
            f"weights_GiB in {s.weight_dtype}, the dtype its weights are published in ({m.weight_quantization})"
        )
    elif m.weight_quantization:
        notes.append(
            f"weights published as {m.weight_quantization}; weights_GiB assumes weight_dtype = {s.weight_dtype}"
        )
    return "; ".join(notes)


def models_crossover(s: Scenario) -> tuple[Figure, str]:
    """Each model's KV per token and the context at which one sequence's KV equals its weights."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    df = table(s).iloc[::-1].reset_index(drop=True)
    fig, ax = new_figure(FIG_WIDTH_IN, 0.62 * len(df) + 2.4)
    # colour, hatch and the row's own words name the attention type: never colour alone
    kinds = {"MHA": (PALETTE[0], "//"), "GQA": (PALETTE[1], ""), "MLA": (PALETTE[3], "..")}
    capped = False
    for yi, row in df.iterrows():
        color, hatch = kinds.get(row["attention"], (PALETTE[6], "xx"))
        window = window_cap_tokens(_scenario_of(s, str(row["model"])))
        # a cache capped by its sliding window never reaches the crossover: the bar beyond the window is pale
        reached = window or row["crossover_tokens"]
        ax.barh(yi, reached, height=0.42, color=color, hatch=hatch, edgecolor="white", lw=0)
        if window:
            capped = True
            ax.barh(
                yi,
                row["crossover_tokens"] - window,
                left=window,
                height=0.42,
                color=color,
                alpha=0.3,
                hatch=hatch,
                edgecolor="white",
                lw=0,
            )
            ax.plot(window, yi, "D", color="black", markerfacecolor="white", ms=7, mew=1.5, zorder=5)
        ax.annotate(
            f"{row['crossover_tokens']:,.0f}",
            (row["crossover_tokens"], yi),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=9,
        )
        moe = ", MoE" if row["moe"] else ""
        ax.annotate(
            f"{row['model']} ({row['attention']}{moe}): {row['kv_KiB_per_token']:g} KiB/token",
            (0, yi + 0.24),
            xycoords=ax.get_yaxis_transform(),
            xytext=(2, 0),
            textcoords="offset points",
            va="bottom",
            fontsize=9,
        )
        if row["max_positions"] and not np.isnan(row["max_positions"]):
            ax.plot(row["max_positions"], yi, "|", color="black", ms=16, mew=2.2, zorder=4)
    ax.set_xscale("log")
    ax.set_yticks([])
    ax.set_ylim(-0.6, len(df) - 0.1)
    left = min(df["crossover_tokens"].min(), df["max_positions"].min()) / 3
    ax.set_xlim(left, df["crossover_tokens"].max() * 12)
    ax.set_xlabel("context at which one sequence's KV\ncache equals the weights (tokens)")
    ax.grid(axis="y", visible=False)
    ax.spines["left"].set_visible(False)
    ax.set_title("KV cache against weights, model by model", fontsize=10)
    handles = [
        Patch(facecolor=color, hatch=hatch, edgecolor="white", label=kind) for kind, (color, hatch) in kinds.items()
    ]
    handles.append(Line2D([], [], color="black", marker="|", ls="", ms=12, mew=2.2, label="context limit"))
    if capped:
        handles.append(
            Line2D(
                [],
                [],
                color="black",
                marker="D",
                markerfacecolor="white",
                ls="",
                ms=7,
                mew=1.5,
                label="sliding window",
            )
        )
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, fontsize=9, handlelength=1.5)
    fig.subplots_adjust(left=0.04, right=0.97)
    records = s.used("kv_dtype", "weight_dtype")
    n = numbers(s)
    within = df[df["crossover_tokens"] <= df["max_positions"].fillna(np.inf)]
    reach = (
        "no context limit reaches the crossover, so one sequence's cache stays below the weights"
        if within.empty
        else f"{words.listed(within['model'])} {'reaches its' if len(within) == 1 else 'reach their'} crossover"
        f" within {'its' if len(within) == 1 else 'their'} context limit ({len(within)} of {len(df)})"
    )
    lead = (
        f"Across the {n['n_models']} models, {reach}; the crossover runs from {n['crossover_min_tokens']:,.0f}"
        f" tokens ({n['crossover_min_model']}) to {n['crossover_max_tokens']:,.0f} ({n['crossover_max_model']})."
    )
    fig, text = finish(
        fig,
        records,
        "Bars: the crossover (exact parameter counts from each configuration); ticks: each model's context limit"
        + (
            "; diamonds: where a sliding window stops the cache growing, so the pale bar beyond is never reached."
            if capped
            else "."
        ),
        extra="parameters, geometry and the other models' weight dtypes (auto) from each published config.json"
        " [published-spec]",
        lead=lead,
        drivers=("kv_dtype", "weight_dtype"),
    )
    legend_rows = -(-len(handles) // 3)
    fig.subplots_adjust(bottom=fig.subplotpars.bottom + (0.35 + 0.25 * legend_rows) / fig.get_size_inches()[1])
    return fig, text


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
