"""The cost page's mix: each reuse of the trace served the cheapest way, for several models.

The GiB each tier holds at the trace's rate, the mix's cost per hour against recomputing every
reuse (:mod:`kvtier.formulas.tiering`), and how the mix moves when a price does.
"""

from __future__ import annotations

import math
from pathlib import PurePath
from typing import Any

import pandas as pd

from kvtier import analysis
from kvtier.analysis import mix_models
from kvtier.formulas import economics, tiering
from kvtier.formulas.cache.curve import counted_percentiles
from kvtier.inputs.keys import COST_RANGES, SCHEMA
from kvtier.report.columns import Column, declare, named, phrase
from kvtier.report.pages.cost.intervals import END_LABELS, MEDIA, REGIMES, block_sizes, duration, finite_or_nan
from kvtier.report.pages.cost.tiers import LRU_TARGETS
from kvtier.report.pages.cost.words import (
    NOTHING_HELD,
    decider_sentence,
    medium_words,
    mix_finding_sentence,
    mix_lead,
    mix_paragraph,
    mix_tornado_sentence,
    models_sentence,
    recompute_sentence,
    trace_sentence,
)
from kvtier.report.words import no_duration, nothing_to_cache
from kvtier.scenario import Scenario

LADDERS = tiering.LADDERS
"""The tiers a block may be served from, fastest first: with room in host DRAM, and with none left."""


MIX_MEDIA = tiering.MIX_MEDIA
"""The ways a mix serves a reuse, by medium, recomputation last."""


def model_label(model: str) -> str:
    """A model for a figure label: a preset's name, or a config file's folder (``my-model (config.json)``)."""
    if model.endswith(".json") or "/" in model or "\\" in model:
        path = PurePath(model)
        return f"{path.parent.name or path.stem} ({path.name})"
    return model


def trace_mixes(
    s: Scenario, models: tuple[str, ...] | None = None
) -> dict[tuple[str, str, str], tuple[economics.Mix, tiering.Block]]:
    """Every least-cost mix the page sets out, by (model, regime, ladder), with the block it priced.

    The mixes of :func:`kvtier.analysis.stream` (each reuse's interval and
    recompute cost tallied as the trace streams past) for ``models`` (:func:`mix_models` by default).
    """
    models = mix_models(s) if models is None else models
    streamed = analysis.stream(s, [t / 100 for t in LRU_TARGETS], models)
    return {
        (model, regime, ladder): (streamed.mixes[(model, regime, ladder)], s.mix_block(model))
        for model in models
        for regime in REGIMES
        for ladder in LADDERS
    }


def per_h(usd_per_s: float | None) -> float:
    """USD/s as USD/h; NaN (a table's n/a) where the rate is undefined (a trace of 0 s)."""
    return math.nan if usd_per_s is None else usd_per_s * 3600


def _mix_row(model: str, regime: str, ladder: str, mix: economics.Mix, block: tiering.Block) -> dict[str, Any]:
    """One row of :func:`mix_table`; NaN where the trace leaves a figure undefined."""
    row: dict[str, Any] = {"model": model, "regime": regime, "ladder": ladder, "block_MiB": block.block_bytes / 2**20}
    share = tiering.by_medium(mix.share, LADDERS[ladder])
    for m in MIX_MEDIA:  # no reuse: nothing to share out
        row[f"share_{m}_pct"] = share[m] * 100 if mix.has_reuse else math.nan
    held = mix.bytes_held
    gib = tiering.by_medium(held, LADDERS[ladder]) if held is not None else {}
    for m in MIX_MEDIA[:-1]:  # a trace of 0 s: no mean over time
        row[f"{m}_GiB"] = gib[m] / 2**30 if gib else math.nan
    peak = tiering.by_medium(mix.peak_bytes_held, LADDERS[ladder]) if mix.peak_bytes_held is not None else {}
    for m in MIX_MEDIA[:-1]:
        row[f"{m}_peak_GiB"] = peak[m] / 2**30 if peak else math.nan
    # all media together at their one busiest instant: each medium may peak at another
    joint = mix.joint_peak_bytes_held
    row["joint_peak_GiB"] = joint / 2**30 if joint is not None else math.nan
    row["mix_usd_per_h"] = per_h(mix.usd_per_s)
    row["recompute_all_usd_per_h"] = per_h(mix.recompute_all_usd_per_s)
    row["saving_pct"] = math.nan if mix.saving is None else mix.saving * 100
    return row


MEDIUM_LABELS: dict[str, str] = {"hbm": "HBM", "dram": "DRAM", "cxl": "CXL", "nvme": "NVMe", "recompute": "recompute"}
"""The ways of :data:`MIX_MEDIA` as a header names them."""


MIX_COLUMNS = (
    *named("model", "regime", "ladder"),
    Column("block_MiB", "block", "MiB"),
    *(Column(f"share_{m}_pct", f"served by {MEDIUM_LABELS[m]}", "%") for m in MIX_MEDIA),
    *(Column(f"{m}_GiB", f"{MEDIUM_LABELS[m]} held, mean", "GiB") for m in MIX_MEDIA[:-1]),
    *(Column(f"{m}_peak_GiB", f"{MEDIUM_LABELS[m]} held, peak", "GiB") for m in MIX_MEDIA[:-1]),
    Column("joint_peak_GiB", "all media held together, peak", "GiB"),
    Column("mix_usd_per_h", "mix cost", "USD/h"),
    Column("recompute_all_usd_per_h", "recomputing every reuse", "USD/h"),
    Column("saving_pct", "saving", "%"),
)
"""The columns of :func:`mix_table`, in words with their units: per medium, its share of the reuses and what it
holds."""


def mix_table(s: Scenario) -> pd.DataFrame:
    """Per model, regime and ladder: the share of reuses each tier serves, the GiB it holds, the cost per hour.

    Each reuse of a block in the trace is served the cheapest way (held in a tier until
    then and fetched, or recomputed); the GiB a tier holds is the mean over the trace, by
    Little's law, at the trace's own request rate.  ``mix_usd_per_h`` is the mix's cost per
    hour of trace time (capacity, fetches, recomputations), ``recompute_all_usd_per_h`` the
    cost of recomputing every reuse instead.  A trace with no reuse has no shares (NaN) and
    holds and costs nothing; one that lasts 0 s has no GiB or cost per hour (NaN), while its
    shares and its saving (a ratio of totals) stand.
    """
    return declare(
        pd.DataFrame([_mix_row(*key, mix, block) for key, (mix, block) in trace_mixes(s).items()]), MIX_COLUMNS
    )


MIX_TORNADO_COLUMNS = (
    Column("input", "input"),
    *(Column(f"mix_usd_per_h_{end}", phrase("mix cost", words), "USD/h") for end, words in END_LABELS.items()),
    Column("swing", "swing"),
    *(Column(f"largest_tier_{end}", phrase("tier holding most", words)) for end, words in END_LABELS.items()),
)
"""The columns of :func:`mix_tornado_table`, in words with their units: the mix at each end of an input."""


def mix_tornado_table(s: Scenario) -> pd.DataFrame:
    """Each price at its low and high end, the others held: the mix's cost per hour and the tier that holds most.

    The set's model, regenerating inside a batch, with room in host DRAM
    (:func:`kvtier.formulas.tiering.mix_tornado`).  A trace with no reuse costs nothing at any
    price, one of 0 s has no cost per hour: their swings are NaN.
    """
    curve = analysis.curve(s)
    regime, ladder = "batch", "with host DRAM"
    rows = tiering.mix_tornado(
        s.tier_prices(),
        s.price_ends(COST_RANGES),
        s.tier_links.pick(LADDERS[ladder]),
        s.mix_block(),
        regime,
        curve.intervals[0],
        curve.duration_s,
        weights=curve.intervals[1],
    )
    return declare(
        pd.DataFrame(
            [
                {
                    "input": r["input"],
                    "mix_usd_per_h_at_low": per_h(r["usd_per_s_at_low"]),
                    "mix_usd_per_h_at_high": per_h(r["usd_per_s_at_high"]),
                    "mix_usd_per_h_base": per_h(r["usd_per_s_base"]),
                    "swing": finite_or_nan(r["swing"]),
                    "largest_tier_at_low": medium_words(r["largest_at_low"]),
                    "largest_tier_at_high": medium_words(r["largest_at_high"]),
                    "largest_tier_base": medium_words(r["largest_base"]),
                }
                for r in rows
            ]
        ),
        MIX_TORNADO_COLUMNS,
    )


def keep_s(s: Scenario, block: tiering.Block) -> dict[str, float]:
    """Break-even interval by the dollar (s) of ``block`` inside a batch in each tier of the mix's ladder, by tier."""
    iv = tiering.intervals(s.tier_prices(), s.tier_links.pick(LADDERS["with host DRAM"]), block, "batch")
    return {MEDIA[medium]: iv.at(tier)["keep_usd_s"] for tier, medium in zip(iv.tiers, iv.media, strict=True)}


def mix_numbers(s: Scenario) -> dict[str, Any]:
    """The numbers and sentences of the page's part on the trace's mix (NaN where the trace leaves one undefined).

    A trace with no reuse has nothing to cache: its mix holds and costs nothing, and its
    shares are undefined.  A trace of 0 s (one request, or all at one timestamp) has no rate:
    its GiB held and costs per hour are undefined, while its shares, its totals over the
    trace (``mix_usd``, ``mix_recompute_usd``, USD) and its saving stand.
    """
    t = analysis.curve(s)
    values, counts = t.intervals  # the distinct reuse intervals, ascending, with their counts
    reuses = int(counts.sum())
    mixes = trace_mixes(s)
    df = pd.DataFrame([_mix_row(*key, mix, block) for key, (mix, block) in mixes.items()])
    own = str(s.assumptions.value("model"))
    pick = {
        (regime, ladder): df[(df["regime"] == regime) & (df["ladder"] == ladder)].set_index("model")
        for regime in REGIMES
        for ladder in LADDERS
    }
    batch, full = pick[("batch", "with host DRAM")], pick[("batch", "host DRAM full")]
    lone = pick[("lone", "with host DRAM")]
    main, (main_mix, main_block) = batch.loc[own], mixes[(own, "batch", "with host DRAM")]
    gib = {m: float(main[f"{m}_GiB"]) for m in MIX_MEDIA[:-1]}
    top = tiering.largest_medium(main_mix, LADDERS["with host DRAM"])
    if top is None and main_mix.has_reuse:  # a trace of 0 s: the medium that serves the most reuses
        top = max(MIX_MEDIA[:-1], key=lambda m: float(main[f"share_{m}_pct"]))
    recompute_pct = float(main["share_recompute_pct"])  # NaN: no reuse
    longest = float(values[-1]) if reuses else 0.0
    out: dict[str, Any] = {
        "trace_name": str(s.assumptions.value("workload.trace")),
        "trace_requests": int(t.n_requests),
        "trace_rate_per_s": t.n_requests / t.duration_s if t.duration_s > 0 else math.nan,
        "trace_reuses": reuses,
        "trace_median_reuse": duration(counted_percentiles(values, counts, (50,))["p50"]) if reuses else "none",
        "trace_sentence": trace_sentence(str(s.assumptions.value("workload.trace")), t),
        "large_tokens": block_sizes(s)[1],
        "mix_model": own,
        "mix_total_gib": sum(gib.values()),
        "mix_main_tier": MEDIA[top] if top else NOTHING_HELD,
        "mix_main_share_pct": float(main[f"share_{top}_pct"]) if top else math.nan,
        "mix_hbm_share_pct": float(main["share_hbm_pct"]),
        "mix_nvme_share_pct": float(main["share_nvme_pct"]),
        "mix_recompute_share_pct": recompute_pct,
        "mix_recompute_sentence": recompute_sentence(recompute_pct, longest, keep_s(s, main_block)),
        "mix_hbm_gib": gib["hbm"],
        "mix_dram_gib": gib["dram"],
        "mix_nvme_gib": gib["nvme"],
        "mix_usd_per_h": float(main["mix_usd_per_h"]),
        "mix_recompute_usd_per_h": float(main["recompute_all_usd_per_h"]),
        "mix_saving_pct": float(main["saving_pct"]),
        "mix_usd": main_mix.usd,
        "mix_recompute_usd": main_mix.recompute_all_usd,
        "mix_dram_peak_gib": float(main["dram_peak_GiB"]),
        "mix_nvme_peak_gib": float(main["nvme_peak_GiB"]),
        "mix_peak_total_gib": float(main["joint_peak_GiB"]),  # one instant, not the sum of each medium's peak
        "mix_recompute_accelerators": per_h(main_mix.recompute_all_usd_per_s) / 3600 / s.v("cost.accelerator_hour"),
        "mix_full_cxl_gib": float(full.loc[own, "cxl_GiB"]),
        "mix_full_usd_per_h": float(full.loc[own, "mix_usd_per_h"]),
        "mix_lone_usd_per_h": float(lone.loc[own, "mix_usd_per_h"]),
        "mix_lone_recompute_usd_per_h": float(lone.loc[own, "recompute_all_usd_per_h"]),
        "mix_models_sentence": models_sentence(batch, own),
    }
    mt = mix_tornado_table(s)
    out["mix_tornado_top_key"] = str(mt.iloc[0]["input"])
    out["mix_tornado_top_words"] = SCHEMA[str(mt.iloc[0]["input"])].help
    out["mix_tornado_top_swing"] = float(mt.iloc[0]["swing"])
    out["mix_decider_sentence"] = decider_sentence(s, mt, out["mix_main_tier"])
    empty = nothing_to_cache(t.n_refs, float(t.hit_ratio()))
    still = no_duration(t.n_requests, t.duration_s)
    out["mix_empty"], out["mix_still"] = empty, still
    out["mix_paragraph"] = mix_paragraph(out, empty, still)
    out["mix_lead"] = mix_lead(out, empty, still)
    out["mix_tornado_sentence"] = mix_tornado_sentence(out, empty, still)
    out["mix_finding_sentence"] = mix_finding_sentence(out, empty, still)
    return out
