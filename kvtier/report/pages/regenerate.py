"""The regeneration page (``notebooks/03_regenerate.md``): the tail block recomputed for each MFU bracket."""

from __future__ import annotations

from functools import cache
from typing import Any

import pandas as pd

from kvtier.formulas import costs
from kvtier.inputs import chapter
from kvtier.inputs.keys import MFU_LABELS
from kvtier.report import words
from kvtier.report.columns import Column, declare
from kvtier.scenario import ENGINE_KEYS, PLACEMENT_KEYS, Scenario, seed_scenario
from kvtier.units import format_number

NOTEBOOK = "03_regenerate"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "regenerating a block"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            "block_tokens",
            "flops_per_param_token",
            "mfu.conservative",
            "mfu.optimistic",
            "mfu.typical",
            "model",
            "param_count",
            "peak_flops",
            *PLACEMENT_KEYS,
            *ENGINE_KEYS,
        )
    )
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""


@cache
def implied_peak_tflops() -> tuple[float, float]:
    """The peak FLOP/s range (TFLOP/s) that the chapter's printed regeneration times allow.

    Solved with the chapter's own FLOP count (the seed set), whatever this build assumes.
    """
    s = seed_scenario()
    quotes = chapter.IMPLIED_PEAK_QUOTES
    low, high = costs.implied_peak_interval(
        s.block_flops,
        [s.mfu(label) for label, _ in quotes],
        [q.value for _, q in quotes],
        [q.half_width for _, q in quotes],
    )
    return low / 1e12, high / 1e12


def _attention_flops(s: Scenario) -> float:
    """FLOPs of the tail block's attention over its own tokens, which the chapter's count leaves out (FLOP)."""
    return float(s.interior_flops(0, "resident")) - s.block_flops


def numbers(s: Scenario) -> dict[str, Any]:
    """Tail-block regeneration for each MFU bracket, the implied peak, exact vs nominal parameters."""
    exact_total, exact_active = s.model.param_counts()
    low, high = implied_peak_tflops()
    out: dict[str, Any] = {
        "params_b": s.params / 1e9,
        "params_source": s.params_source,
        "exact_params": exact_total,
        "exact_params_b": exact_total / 1e9,
        "exact_over_nominal_pct": (exact_total / s.params - 1) * 100,
        "flops_per_param_token": s.v("flops_per_param_token"),
        "block_tokens": s.block_tokens,
        "block_tflop": s.block_flops / 1e12,
        "block_attention_gflop": _attention_flops(s) / 1e9,
        "block_attention_pct": _attention_flops(s) / float(s.interior_flops(0, "resident")) * 100,
        "peak_tflops": s.v("peak_flops") / 1e12,
        "implied_peak_low_tflops": low,
        "implied_peak_high_tflops": high,
    }
    for label, regen_s in s.regen_by_label().items():
        out[f"mfu_{label}_pct"] = s.mfu(label) * 100
        out[f"regen_{label}_ms"] = regen_s * 1e3
        out[f"chapter_regen_{label}_ms"] = chapter.REGEN_S[label].value * 1e3
        out[f"seed_regen_{label}_ms"] = seed_scenario().regen_by_label()[label] * 1e3
        out[f"seed_mfu_{label}_pct"] = seed_scenario().mfu(label) * 100
        exact_flops = costs.forward_flops(s.block_tokens, exact_active, s.v("flops_per_param_token"))
        exact = s.in_batch_compute_s(exact_flops + _attention_flops(s), s.mfu(label))
        out[f"regen_exact_{label}_ms"] = float(exact) * 1e3
    out["chapter_regen_unrounded_ms"] = chapter.REGEN_CONSERVATIVE_UNROUNDED_S.value * 1e3
    out["params_note"] = (
        f"the published configuration gives {exact_total:,} parameters, {out['exact_over_nominal_pct']:.2f} per cent"
        f" more, which at the conservative MFU means {format_number(out['regen_exact_conservative_ms'], 3)} ms"
        f" instead of {format_number(out['regen_conservative_ms'], 3)} ms (as the tables show them): small, but worth"
        " knowing when figures are compared digit by digit"
        if s.params_source == "assumption"
        else "the published configuration's exact count"
    )
    out["seed_params_b"] = seed_scenario().params / 1e9
    out["seed_peak_tflops"] = seed_scenario().v("peak_flops") / 1e12
    out["peak_provenance"] = s.a("peak_flops").provenance
    out["seed_model"] = seed_scenario().model.name
    out["peak_sentence"] = (
        f"This build uses {out['peak_tflops']:g} TFLOP/s ({out['peak_provenance']})."
        if words.differs_as_printed([out["peak_tflops"]], [out["seed_peak_tflops"]], "g")
        or out["peak_provenance"] != seed_scenario().a("peak_flops").provenance
        else ""
    )
    # the seed build counts the chapter's nominal figure: "this build counts 70.00 billion" would say it twice
    counts = (
        "This build keeps that count"
        if s.model.name == out["seed_model"]
        and not words.differs_as_printed([out["params_b"]], [out["seed_params_b"]], ".2f")
        else f"This build counts {out['params_b']:.2f} billion"
    )
    out["params_sentence"] = f"{counts}; {out['params_note']}."
    return out


COLUMNS = (
    Column("bracket", "bracket"),
    Column("mfu_pct", "MFU", "%"),
    Column("peak_TFLOPps", "peak compute", "TFLOP/s"),
    Column("block_TFLOP", "work per block", "TFLOP"),
    Column("regen_ms", "regeneration time", "ms"),
    Column("mfu_provenance", "MFU provenance"),
    Column("peak_provenance", "peak provenance"),
)
"""The columns of :func:`table`, in words with their units."""


def table(s: Scenario) -> pd.DataFrame:
    """Tail-block regeneration time for each MFU bracket inside a batch (its attention over itself included)."""
    peak = s.a("peak_flops")
    rows = []
    for label in MFU_LABELS:
        rec = s.a(f"mfu.{label}")
        rows.append(
            {
                "bracket": label,
                "mfu_pct": rec.value * 100,
                "peak_TFLOPps": peak.value / 1e12,
                "block_TFLOP": float(s.interior_flops(0, "resident")) / 1e12,
                "regen_ms": float(s.regen_s(rec.value)) * 1e3,
                "mfu_provenance": rec.provenance,
                "peak_provenance": peak.provenance,
            }
        )
    return declare(pd.DataFrame(rows), COLUMNS)


TABLES = (("regenerate", table, ("bracket",)),)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = ()
"""The page's figures: (glue name, function returning the figure and its caption)."""
