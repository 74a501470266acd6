"""The workload page's check against the traces' authors: Mooncake FAST'25's published cache figures, recomputed.

The paper's Table 2 gives each trace's requests, mean lengths and cache ratio, and its Figure 9 the share of the
maximum hit rate that a local cache of a few million tokens reaches (``kvtier/data/mooncake-fast25.yaml``,
:func:`kvtier.inputs.traces.published_cache`).  Each is recomputed from the trace's exact LRU curve, the one the page
already has (:func:`~kvtier.report.pages.workload.summary.curve`: the build's primed first pass for the sized trace,
the stored contrast curve for the other), by :func:`kvtier.formulas.cache.report.cache_figures`: no new pass over a
trace, no new simulator.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from kvtier.formulas.cache.report import CacheFigures, cache_figures
from kvtier.inputs import traces
from kvtier.inputs.traces.published import PublishedCache
from kvtier.report.columns import Column, declare, named
from kvtier.report.pages.workload.summary import curve
from kvtier.report.pages.workload.words import mooncake_paragraph
from kvtier.scenario import Scenario


def published() -> PublishedCache:
    """The published figures (:func:`kvtier.inputs.traces.published_cache`)."""
    return traces.published_cache()


def recomputed(s: Scenario, trace: str) -> CacheFigures:
    """The shipped ``trace``'s figures from its exact LRU curve, at the paper's local-cache capacity."""
    return cache_figures(curve(s, trace), [published().local_cache.value])


def recomputed_value(figures: CacheFigures, quantity: str) -> float:
    """The value of ``quantity`` (:data:`kvtier.inputs.traces.published.QUANTITIES`) in ``figures``, in its unit."""
    values = {
        "requests": float(figures.requests),
        "mean_input_tokens": figures.mean_input_tokens,
        "mean_output_tokens": figures.mean_output_tokens,
        "cache_ratio_pct": figures.cache_ratio * 100,
        "share_of_max_pct": float(figures.share_of_max[0]) * 100,
    }
    return values[quantity]


def figure_label(quantity: str) -> str:
    """What a row of the table is, in words."""
    mtokens = published().local_cache.value / 1e6
    return {
        "requests": "requests",
        "mean_input_tokens": "mean input length",
        "mean_output_tokens": "mean output length",
        "cache_ratio_pct": "cache ratio (unbounded cache, share of input tokens)",
        "share_of_max_pct": f"LRU hit ratio of a {mtokens:g}M-token cache, share of the cache ratio",
    }[quantity]


MOONCAKE_COLUMNS = (
    *named("trace"),
    Column("quantity", "published figure"),
    *named("unit"),
    Column("published", "published"),
    Column("recomputed", "recomputed"),
    Column("difference", "recomputed less published"),
    Column("where", "where published"),
    Column("provenance", "provenance of the published value"),
)
"""The columns of :func:`mooncake_table`: each row carries its own unit (requests, tokens or %; a difference of
shares is in points)."""


def mooncake_table(s: Scenario) -> pd.DataFrame:
    """Every published figure of a shipped trace, in the file's order, beside the value the trace gives."""
    pub = published()
    mine = {trace: recomputed(s, trace) for trace in pub.traces}
    rows = []
    for f in pub.figures:
        value = recomputed_value(mine[f.trace], f.quantity)
        rows.append(
            {
                "trace": f.trace,
                "quantity": figure_label(f.quantity),
                "unit": f.unit,
                "published": f.value,
                "recomputed": value,
                "difference": value - f.value,
                "where": f.where,
                "provenance": f.provenance,
            }
        )
    return declare(pd.DataFrame(rows), MOONCAKE_COLUMNS)


def mooncake_numbers(s: Scenario) -> dict[str, Any]:
    """The figures the page's paragraph quotes (``mc_*``): per trace, published and recomputed, and the sentences.

    Per trace ``T``, each quantity of the table recomputed as ``mc_T_<quantity>`` and published as
    ``mc_T_<quantity>_published`` (:data:`kvtier.inputs.traces.published.QUANTITIES`); ``mc_T_cache_ratio_blocks_pct``
    (the cache ratio counted in block references), ``mc_T_hit_pct`` (the LRU hit ratio at the local cache, of input
    tokens), ``mc_T_cache_ratio_diff_pts`` and ``mc_T_share_of_max_diff_pts`` (recomputed less published, points),
    ``mc_T_reach_mtokens`` (the capacity at which the curve reaches the published share, M tokens).
    """
    pub = published()
    local = pub.local_cache
    out: dict[str, Any] = {
        "mc_local_mtokens": local.value / 1e6,
        "mc_ratio_where": pub.value(pub.traces[0], "cache_ratio_pct").where,
        "mc_share_where": pub.value(pub.traces[0], "share_of_max_pct").where,
        "mc_local_blocks": int(recomputed(s, pub.traces[0]).capacity_blocks[0]),
        "mc_block_tokens": int(curve(s, pub.traces[0]).block_tokens),
    }
    for trace in pub.traces:
        h = curve(s, trace)
        mine = recomputed(s, trace)
        t = f"mc_{trace}"
        for f in (x for x in pub.figures if x.trace == trace):
            out[f"{t}_{f.quantity}_published"] = f.value
            out[f"{t}_{f.quantity}"] = recomputed_value(mine, f.quantity)
        out[f"{t}_cache_ratio_blocks_pct"] = mine.cache_ratio_blocks * 100
        out[f"{t}_hit_pct"] = float(mine.hit_ratio[0]) * 100
        for q in ("cache_ratio", "share_of_max"):
            out[f"{t}_{q}_diff_pts"] = out[f"{t}_{q}_pct"] - out[f"{t}_{q}_pct_published"]
        share = out[f"{t}_share_of_max_pct_published"] / 100
        out[f"{t}_reach_mtokens"] = h.capacity_for(share, "tokens") * h.block_tokens / 1e6 if mine.cache_ratio else None
    out["mc_paragraph"] = mooncake_paragraph(out, pub.traces, str(curve(s, pub.traces[0]).count))
    return out
