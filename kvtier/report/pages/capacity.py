"""The capacity page (``notebooks/06_capacity.md``): KV footprint against context, and the crossover."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import capacity
from kvtier.inputs import chapter
from kvtier.inputs.models import weight_dtype_bytes
from kvtier.report import words
from kvtier.report.columns import BATCH, LONE, Column, declare, named, phrase
from kvtier.report.figures import PALETTE, finish, keep_label_inside, mark_context_limit, new_figure
from kvtier.scenario import POINT_KEYS, Scenario, seed_scenario
from kvtier.units import GIB

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "06_capacity"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "capacity"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (*POINT_KEYS, "context.long", "context.short")
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""

FIG_WIDTH_IN = 4.8
"""Figure width (in): under :data:`~kvtier.report.figures.MAX_WIDTH_IN` with room for the tight bounding box's
padding, so that 9 pt text is still 9 px where a 420 px screen shows the figure 370 px wide."""

CAPACITY_CONTEXTS = (1_024, 4_096, 32_768, 131_072, 1_048_576)
"""Contexts (tokens) of the capacity table, besides ``context.short`` and ``context.long``."""


def window_cap_bytes(s: Scenario) -> float | None:
    """One sequence's KV ceiling when every layer attends only to a sliding window (None otherwise)."""
    m = s.model
    if m.sliding_window and m.sliding_layers >= m.n_layers:
        return float(s.kv_bytes(m.sliding_window))
    return None


def no_crossover(s: Scenario) -> bool:
    """True when a sliding window caps one sequence's KV below the weights: the two never meet."""
    cap = window_cap_bytes(s)
    return cap is not None and cap < s.weight_bytes


def _kv_bytes(s: Scenario, contexts: float | np.ndarray) -> np.ndarray:
    """One sequence's KV at ``contexts``, capped at the sliding window when every layer slides."""
    if window_cap_bytes(s) is None:
        return s.kv_bytes(contexts)
    return s.kv_bytes(np.minimum(contexts, s.model.sliding_window))


def no_crossover_text(s: Scenario) -> str:
    """What a capped model has instead of a crossover."""
    cap = window_cap_bytes(s) or 0.0
    return (
        f"no crossover: a {s.model.sliding_window:,}-token sliding window on every layer caps one sequence's KV at"
        f" {cap / GIB:.2f} GiB, below the {s.weight_bytes / GIB:.1f} GiB of weights, at any context"
    )


def numbers(s: Scenario) -> dict[str, Any]:
    """KV footprint at the reference contexts, the weights, and the crossover."""
    short, long = s.v("context.short"), s.v("context.long")
    exact_total, _ = s.model.param_counts()
    weight_elem = weight_dtype_bytes(s.weight_dtype)
    exact_crossover = float(
        capacity.crossover_context_tokens(capacity.weight_bytes(exact_total, weight_elem), s.kv_bytes_per_token)
    )
    window = s.model.max_positions
    if no_crossover(s):
        window_note = f"does not exist for this model: {no_crossover_text(s).split(': ', 1)[1]}"
    elif window and s.crossover_tokens > window:
        window_note = (
            f"lies beyond the {window:,} positions this model's configuration allows: for this model it is a"
            " sizing yardstick (or a statement about a long-context variant with the same cache geometry),"
            " not a state a deployment reaches"
        )
    elif window:
        window_note = f"lies within the {window:,} positions this model's configuration allows"
    else:
        window_note = "cannot be checked against a context limit: the configuration states none"
    params_note = (
        f"With the configuration's exact parameter count instead ({exact_total:,}) the crossover moves to"
        f" {exact_crossover:,.0f} tokens."
        if s.params_source == "assumption"
        else "The parameter count is the configuration's own."
    )
    point = s.illustrative
    last = max(s.crossover_tokens - s.block_tokens, 0.0)
    in_batch = float(s.in_batch_regen_s(last, "resident", point["mfu"]))
    lone = float(s.lone_regen_s(last, "resident", point["mfu"]))
    lone_tail = float(s.lone_regen_s(0, "resident", point["mfu"]))
    in_batch_tail = float(s.in_batch_regen_s(0, "resident", point["mfu"]))
    if math.isclose(lone, in_batch, rel_tol=1e-9):
        regimes = (
            "At that depth the two regimes meet: the attention arithmetic over the cached context outweighs even a"
            " lone block's memory read, so whether the block is regenerated alone or inside a batch no longer"
            " changes its cost"
        )
    else:
        regimes = (
            f"At that depth a lone block is still {str(s.lone_bound(last, 'resident', point['mfu']))}-bound and costs"
            f" {lone / in_batch:.2f} times its in-batch time"
        )
    crossover_sentence = (
        f"Were every layer's cache to keep growing, the two would be equal at {s.crossover_tokens:,.0f} tokens of"
        " context; with this model they never are, and the figures below for that context are hypothetical."
        if no_crossover(s)
        else f"The two are equal at {s.crossover_tokens:,.0f} tokens of context."
    )
    finding = (
        f"One sequence's cache never reaches the weights: {no_crossover_text(s).split(': ', 1)[1]}."
        if no_crossover(s)
        else f"One sequence's cache equals the weights at {s.crossover_tokens:,.0f} tokens of context; that"
        f" crossover {window_note}."
    )
    crossover_ratio_sentence = (
        f"The last block of such a sequence ({words.context_note(s, s.crossover_tokens)}) costs"
        f" {words.times(in_batch / point['fetch_s']).removesuffix('×')} times its fetch inside a batch and"
        f" {words.times(lone / point['fetch_s']).removesuffix('×')} times alone."
    )
    out = {
        "crossover_sentence": crossover_sentence,
        "crossover_ratio_sentence": crossover_ratio_sentence,
        "finding_sentence": finding,
        "crossover_regimes_sentence": regimes,
        "mfu_pct": point["mfu"] * 100,
        "fetch_us": point["fetch_s"] * 1e6,
        "lone_device": words.lone_device(s),
        "crossover_in_batch_ms": in_batch * 1e3,
        "crossover_lone_ms": lone * 1e3,
        "crossover_lone_bound": str(s.lone_bound(last, "resident", point["mfu"])),
        "crossover_in_batch_ratio": in_batch / point["fetch_s"],
        "crossover_lone_ratio": lone / point["fetch_s"],
        "crossover_in_batch_over_tail": in_batch / in_batch_tail,
        "crossover_lone_over_tail": lone / lone_tail,
        "window_note": window_note,
        "params_note": params_note,
        "kv_kib_per_token": s.kv_bytes_per_token / 1024,
        "params_b": s.params / 1e9,
        "weights_gb": s.weight_bytes / 1e9,
        "weights_gib": s.weight_bytes / GIB,
        "context_short_tokens": int(short),
        "context_long_tokens": int(long),
        "kv_short_gib": float(s.kv_bytes(short)) / GIB,
        "kv_long_gib": float(s.kv_bytes(long)) / GIB,
        "share_short_pct": float(s.kv_share(short)) * 100,
        "share_long_pct": float(s.kv_share(long)) * 100,
        "crossover_tokens": s.crossover_tokens,
        "crossover_exact_tokens": exact_crossover,
        "crossover_shift_tokens": exact_crossover - s.crossover_tokens,
        "weight_dtype": s.weight_dtype,  # auto resolved: the model's published type
        "chapter_crossover_tokens": chapter.CROSSOVER_TOKENS.value,
        "seed_crossover_tokens": seed_scenario().crossover_tokens,
        "seed_share_short_pct": float(seed_scenario().kv_share(seed_scenario().v("context.short"))) * 100,
        "seed_share_long_pct": float(seed_scenario().kv_share(seed_scenario().v("context.long"))) * 100,
        "chapter_share_short_pct": chapter.SHARE_SHORT.value * 100,
        "chapter_share_long_pct": chapter.SHARE_LONG.value * 100,
    }
    out["seed_sentence"] = seed_sentence(out)
    return out


def seed_sentence(out: dict[str, Any]) -> str:
    """The shares and the crossover as the source chapter prints them, beside the seed set's when this build differs.

    The seed build has just listed its shares and stated its crossover, so it names only the
    chapter's rounded figures.
    """
    printed = (
        f"{out['chapter_share_short_pct']:.0f} %, {out['chapter_share_long_pct']:.0f} % and"
        f' "roughly {out["chapter_crossover_tokens"]:,.0f}"'
    )
    shares = [out["share_short_pct"], out["share_long_pct"]]
    seed_shares = [out["seed_share_short_pct"], out["seed_share_long_pct"]]
    if not (
        words.differs_as_printed(shares, seed_shares, ".1f")
        or words.differs_as_printed([out["crossover_tokens"]], [out["seed_crossover_tokens"]], ",.0f")
    ):
        return f"The source chapter prints the two shares and the crossover as {printed}."
    return (
        f"With the seed assumptions the shares are {seed_shares[0]:.1f} % and {seed_shares[1]:.1f} % and the"
        f" crossover {out['seed_crossover_tokens']:,.0f} tokens, which the source chapter prints as {printed}."
    )


COLUMNS = (
    Column("point", "point"),
    Column("context_tokens", "context", "tokens"),
    Column("kv_GiB", "KV cache", "GiB"),
    Column("weights_GiB", "weights", "GiB"),
    Column("kv_share_of_weights_pct", "KV cache / weights", "%"),
    Column("reference", "reference"),
    Column("last_block_in_batch_ms", phrase("regeneration time of the last block", BATCH), "ms"),
    Column("last_block_lone_ms", phrase("regeneration time of the last block", LONE), "ms"),
    Column("last_block_lone_bound", phrase("last block bound by", LONE)),
    Column("last_block_in_batch_ratio", phrase("regeneration / fetch, last block", BATCH), "×"),
    Column("last_block_lone_ratio", phrase("regeneration / fetch, last block", LONE), "×"),
    *named("provenance"),
)
"""The columns of :func:`table`, in words with their units."""


def table(s: Scenario) -> pd.DataFrame:
    """KV footprint of one sequence against context length, its share of the weights, and its last block.

    The ``last_block_`` columns regenerate the sequence's last block (upstream resident) in
    both regimes, inside a batch (marginal compute, attention included) and alone (roofline:
    the weights plus every cached position's KV read from device memory), at the
    illustrative MFU, and divide by the illustrative fetch.
    """
    refs = {int(s.v("context.short")): "context.short", int(s.v("context.long")): "context.long"}
    contexts = sorted({*CAPACITY_CONTEXTS, *refs})
    point = s.illustrative

    def last_block(c: float) -> dict[str, Any]:
        # the sequence's last block, its upstream resident, in both regimes, against the illustrative fetch
        pos = max(c - s.block_tokens, 0.0)
        in_batch = float(s.in_batch_regen_s(pos, "resident", point["mfu"]))
        lone = float(s.lone_regen_s(pos, "resident", point["mfu"]))
        return {
            "last_block_in_batch_ms": in_batch * 1e3,
            "last_block_lone_ms": lone * 1e3,
            "last_block_lone_bound": str(s.lone_bound(pos, "resident", point["mfu"])),
            "last_block_in_batch_ratio": in_batch / point["fetch_s"],
            "last_block_lone_ratio": lone / point["fetch_s"],
        }

    rows = [
        {
            "point": f"context={c}",
            "context_tokens": c,
            "kv_GiB": float(_kv_bytes(s, c)) / GIB,
            "weights_GiB": s.weight_bytes / GIB,
            "kv_share_of_weights_pct": float(_kv_bytes(s, c)) / s.weight_bytes * 100,
            "reference": refs.get(c, ""),
            **last_block(c),
            "provenance": "derived",
        }
        for c in contexts
    ]
    if no_crossover(s):
        cap = window_cap_bytes(s) or 0.0
        rows.append(
            {
                "point": "no crossover",
                "context_tokens": int(s.model.sliding_window),
                "kv_GiB": cap / GIB,
                "weights_GiB": s.weight_bytes / GIB,
                "kv_share_of_weights_pct": cap / s.weight_bytes * 100,
                "reference": no_crossover_text(s),
                **last_block(s.model.sliding_window),
                "provenance": "derived",
            }
        )
        return declare(pd.DataFrame(rows).sort_values("context_tokens", kind="stable").reset_index(drop=True), COLUMNS)
    rows.append(
        {
            "point": "crossover",
            "context_tokens": round(s.crossover_tokens),
            "kv_GiB": s.weight_bytes / GIB,
            "weights_GiB": s.weight_bytes / GIB,
            "kv_share_of_weights_pct": 100.0,
            "reference": "crossover",
            **last_block(s.crossover_tokens),
            "provenance": "derived",
        }
    )
    return declare(pd.DataFrame(rows).sort_values("context_tokens", kind="stable").reset_index(drop=True), COLUMNS)


def capacity_vs_context(s: Scenario) -> tuple[Figure, str]:
    """KV bytes of one sequence against context length, the weights and the crossover marked."""
    from matplotlib.ticker import FixedLocator

    # the axis runs to 1M tokens, or far enough past the crossover for its label on the right
    top = 2**20 if no_crossover(s) else max(2**20, 24 * s.crossover_tokens)
    contexts = np.logspace(np.log10(1024), np.log10(top), 200)
    weights = s.weight_bytes / GIB
    fig, ax = new_figure(FIG_WIDTH_IN, 5.6)
    ax.loglog(contexts, _kv_bytes(s, contexts) / GIB, color=PALETTE[0], lw=2.0, label="KV cache of one sequence")
    ax.axhline(weights, color=PALETTE[1], ls="--", lw=1.5, label=f"weights ({weights:.1f} GiB)")
    bottom, ceiling = ax.get_ylim()
    ax.set_ylim(bottom, max(ceiling, weights * 8))  # room above the weights for the context limit's label
    halo = {"fc": "white", "ec": "none", "pad": 1.0}  # a line passing behind a label does not strike it
    if no_crossover(s):
        # the cache stops growing at the window: say so instead of drawing a crossover
        ax.annotate(
            f"capped by a {s.model.sliding_window:,}-token sliding\nwindow: never reaches the weights",
            (contexts[-1], weights),
            textcoords="offset points",
            xytext=(-4, -8),
            ha="right",
            va="top",
            fontsize=9,
        )
    else:
        x = s.crossover_tokens
        ax.axvline(x, color="#777777", lw=0.8)
        # right of the crossover and below the weights: the cache has risen above them there
        ax.annotate(
            f"crossover:\n{x:,.0f}\ntokens",
            (x, weights),
            textcoords="offset points",
            xytext=(5, -6),
            ha="left",
            va="top",
            fontsize=9,
        )
    short, long = s.v("context.short"), s.v("context.long")
    for c in (short, long):
        ax.plot(c, float(_kv_bytes(s, c)) / GIB, "o", color=PALETTE[2], ms=7, zorder=4)
    kv = float(_kv_bytes(s, short))
    if float(_kv_bytes(s, long)) == kv:  # a capped cache: one label for both points, below them
        ax.annotate(
            f"{short:,.0f} and {long:,.0f} tokens:\n{kv / GIB:.1f} GiB, {kv / s.weight_bytes * 100:.0f} %",
            (float(np.sqrt(short * long)), kv / GIB),
            textcoords="offset points",
            xytext=(0, -9),
            ha="center",
            va="top",
            fontsize=9,
            bbox=halo,
        )
    else:
        for c in (short, long):
            kv = float(_kv_bytes(s, c))
            # above and left of the point: the rising curve leaves that corner empty
            ax.annotate(
                f"{c:,.0f} tokens:\n{kv / GIB:.1f} GiB, {kv / s.weight_bytes * 100:.0f} %",
                (c, kv / GIB),
                textcoords="offset points",
                xytext=(-6, 6),
                ha="right",
                va="bottom",
                fontsize=9,
                bbox=halo,
            )
    limit = mark_context_limit(ax, s.model.name, s.model.max_positions, float(contexts[-1]))
    share = ax.secondary_yaxis(
        "right", functions=(lambda y: y * GIB / s.weight_bytes * 100, lambda p: p / 100 * s.weight_bytes / GIB)
    )
    low, high = (np.log10(y * GIB / s.weight_bytes * 100) for y in ax.get_ylim())
    share.yaxis.set_major_locator(FixedLocator(10.0 ** np.arange(np.ceil(low), np.floor(high) + 1)))
    share.yaxis.set_major_formatter(lambda v, _: f"{v:,g}")
    share.set_ylabel("share of the weights (%)")
    ax.set_xlabel("context length of one sequence (tokens)")
    ax.set_ylabel("KV cache (GiB)")
    ax.set_title(f"KV cache of one {s.model.name} sequence against its weights", fontsize=10, pad=10)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=9)
    fig.subplots_adjust(left=0.15, right=0.85)
    records = s.used("model", "kv_dtype", "weight_dtype", "param_count", "context.short", "context.long")
    if no_crossover(s):
        lead = (
            f"There is no crossover: a {s.model.sliding_window:,}-token sliding window caps one sequence's KV cache at"
            f" {(window_cap_bytes(s) or 0.0) / GIB:.2f} GiB, below the {weights:.1f} GiB of weights."
        )
    else:
        lead = (
            f"One sequence's KV cache grows in proportion to its context and equals the {weights:.1f} GiB of weights"
            f" at {s.crossover_tokens:,.0f} tokens."
        )
    limit_note = (
        f" Past the red line, {s.model.name}'s context limit ({s.model.max_positions:,} positions), the curve"
        " describes a long-context variant."
        if limit
        else ""
    )
    fig, text = finish(
        fig,
        records,
        "Log axes; the weights dashed; the right axis reads the cache as a share of them." + limit_note,
        lead=lead,
        drivers=("kv_dtype", "param_count"),
    )
    fig.subplots_adjust(bottom=fig.subplotpars.bottom + 0.35 / fig.get_size_inches()[1])
    if limit:
        label = next(t for t in ax.texts if "max_position_embeddings" in t.get_text())
        label.set_bbox({"fc": "white", "ec": "none", "pad": 1.0})
        keep_label_inside(ax, label)
    return fig, text


TABLES = (
    (
        "capacity",
        table,
        ("point",),
        (
            "point",
            "context_tokens",
            "kv_GiB",
            "kv_share_of_weights_pct",
            "last_block_in_batch_ms",
            "last_block_lone_ms",
            "last_block_lone_bound",
            "last_block_in_batch_ratio",
            "last_block_lone_ratio",
        ),
    ),
)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (("fig_capacity", capacity_vs_context),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
