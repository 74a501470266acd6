"""The five-minute intervals of the cost page: how long a block is worth keeping in each tier.

The break-even interval of every tier (:mod:`kvtier.formulas.economics`, through the scenario's tier
pricing) for a small and a large block, each regenerated alone or inside a batch, in dollars and in
joules; the tables of the intervals, of one block's costs and of the page's inputs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from kvtier.formulas import tiering
from kvtier.inputs.keys import COST_RANGES, SCHEMA
from kvtier.report.columns import REGIME_LABELS, Column, declare, named, phrase
from kvtier.scenario import Scenario
from kvtier.units import format_number, format_time

REGIMES: dict[str, str] = {"lone": "regenerated alone", "batch": "regenerated inside a batch"}
"""The regimes of regeneration (:data:`kvtier.formulas.tiering.REGIMES`) in words, by the names the tables use."""


MEDIA: dict[str, str] = {"hbm": "HBM", "dram": "host DRAM", "cxl": "CXL expander", "nvme": "NVMe flash"}
"""The media a tier holds its blocks in (:data:`kvtier.formulas.tiering.MEDIA`) in words."""


CXL_TIER = tiering.CXL_TIER
"""The tier the tornado follows: a CXL 2.0 x8 expander, the interface of those shipping today."""


YEAR_S = 365.25 * 86400.0


BY_LABELS: dict[str, str] = {"usd": "dollars", "J": "energy"}
"""What a break-even interval is priced by, as a column name spells it (``keep_usd_...``, ``keep_J_...``), in a
header's words."""


END_LABELS: dict[str, str] = {"at_low": "at the low end", "at_high": "at the high end", "base": "at the base value"}
"""Where a tornado holds an input, as a column name spells it (``keep_usd_at_low_h``), in a header's words."""


def duration(seconds: float) -> str:
    """A holding interval for reading, in the largest unit up to years, three significant figures.

    Years from one year on, days from two days on, then :func:`kvtier.units.format_time`'s
    units: ``"28.8 h"``, ``"49.2 d"``, ``"26.6 min"``; ``"0 s"`` for a block never worth holding.
    """
    if seconds <= 0:
        return "0 s"
    for unit, size, start in (("y", YEAR_S, YEAR_S), ("d", 86400.0, 2 * 86400.0), ("h", 3600.0, 3600.0)):
        if seconds >= start:
            return f"{format_number(seconds / size, 3)} {unit}"
    for unit, size in (("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= size:
            return f"{format_number(seconds / size, 3)} {unit}"
    return format_time(seconds)


def finite_or_nan(x: float | None) -> float:
    """``x``, or NaN (a table's n/a) where the model leaves it undefined (``None``)."""
    return math.nan if x is None else float(x)


def mfu(s: Scenario) -> float:
    """The illustrative MFU bracket's value (fraction): the MFU both regimes run at here."""
    return s.mfu(str(s.assumptions.value("illustrative.mfu")))


def block_sizes(s: Scenario) -> tuple[int, int]:
    """The two block sizes priced: the set's own and ``cost.large_block_tokens``."""
    return s.block_tokens, int(s.v("cost.large_block_tokens"))


def intervals(s: Scenario, overrides: Mapping[str, float] | None = None) -> dict[tuple[int, str], tiering.Intervals]:
    """The tier model's intervals for both block sizes and regimes (:func:`kvtier.formulas.tiering.interval_grid`).

    ``overrides`` replaces some prices, by assumption key, in SI base units.
    """
    return tiering.interval_grid(s.tier_prices(overrides), s.tier_links, s.cost_blocks)


def long_table(s: Scenario, overrides: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Every tier x block size x regime: the costs of holding, fetching and recomputing, and the intervals.

    :func:`intervals` in display units (MiB, µs, ms, USD per GB-hour, mW per GB); the
    intervals stay in seconds.
    """
    parts = []
    for (tokens, regime), iv in intervals(s, overrides).items():
        n = len(iv.tiers)
        parts.append(
            pd.DataFrame(
                {
                    "tier": list(iv.tiers),
                    "medium": list(iv.media),
                    "block_tokens": [tokens] * n,
                    "regime": [regime] * n,
                    "block_MiB": [iv.block.block_bytes / 2**20] * n,
                    "fetch_us": iv.fetch_s * 1e6,
                    "regen_ms": [iv.regen_s * 1e3] * n,
                    "hold_usd_per_GB_h": iv.hold_usd_per_byte_s * 1e9 * 3600,
                    "hold_mW_per_GB": iv.hold_w_per_byte * 1e9 * 1e3,
                    "recompute_usd": [iv.recompute_usd] * n,
                    "fetch_usd": iv.fetch_usd,
                    "recompute_J": [iv.recompute_j] * n,
                    "keep_usd_s": iv.keep_usd_s,
                    "keep_J_s": iv.keep_j_s,
                    "hbm_over_tier_s": iv.hbm_over_tier_s,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def _columns() -> tuple[Column, ...]:
    """The columns of :func:`table` in words: the tier, then each block size's intervals by dollars and by energy in
    each regime, and how long it is worth keeping in HBM over the tier."""
    columns = [
        *named("tier", "medium"),
        Column("hold_usd_per_TB_month", "holding", "USD per TB-month"),
        Column("hold_mW_per_GB", "holding power", "mW/GB"),
        Column("fetch_us", "fetch time", "µs"),
    ]
    for size in ("small", "large"):
        for regime in REGIMES:
            for by, words in BY_LABELS.items():
                label = phrase(f"worth keeping by {words}", f"{size} block", REGIME_LABELS[regime])
                columns.append(Column(f"keep_{by}_{size}_{regime}_h", label, "h"))
        columns.append(Column(f"hbm_over_tier_{size}_s", f"worth keeping in HBM over this tier, {size} block", "s"))
    return tuple(columns)


COLUMNS = _columns()
"""The columns of :func:`table`, in words with their units."""


def table(s: Scenario) -> pd.DataFrame:
    """One row per tier: its holding costs and how long a block is worth keeping there, both regimes, both sizes.

    ``keep_usd_S_R_h`` is the dollar interval (hours) for the ``small`` block (the set's
    ``block_tokens``) or the ``large`` one (``cost.large_block_tokens``) in regime ``R``
    (``lone`` or ``batch``); ``keep_J_S_R_h`` the same in joules; ``hbm_over_tier_S_s`` how
    long such a block is worth keeping in HBM rather than fetching it from this tier (Gray's
    form, seconds, the same in both regimes).
    """
    df = long_table(s)
    small, large = block_sizes(s)
    out = df[(df["block_tokens"] == small) & (df["regime"] == "lone")][
        ["tier", "medium", "hold_usd_per_GB_h", "hold_mW_per_GB", "fetch_us"]
    ].reset_index(drop=True)
    # per TB and month (a twelfth of a year), so that no price needs more than five decimals
    out.insert(2, "hold_usd_per_TB_month", out.pop("hold_usd_per_GB_h") * 1e3 * YEAR_S / 12 / 3600)
    for tokens, label in ((small, "small"), (large, "large")):
        for regime in REGIMES:
            part = df[(df["block_tokens"] == tokens) & (df["regime"] == regime)].reset_index(drop=True)
            out[f"keep_usd_{label}_{regime}_h"] = part["keep_usd_s"] / 3600
            out[f"keep_J_{label}_{regime}_h"] = part["keep_J_s"] / 3600
        part = df[(df["block_tokens"] == tokens) & (df["regime"] == "lone")].reset_index(drop=True)
        out[f"hbm_over_tier_{label}_s"] = part["hbm_over_tier_s"]
    return declare(out, COLUMNS)


BLOCK_COLUMNS = (
    Column("block_tokens", "block", "tokens"),
    Column("regime", "regime"),
    Column("block_MiB", "block", "MiB"),
    Column("regen_ms", "regeneration time", "ms"),
    Column("recompute_usd_per_1M", "one million recomputations", "USD"),
    Column("recompute_J", "one recomputation", "J"),
)
"""The columns of :func:`block_table`, in words with their units (each row names its regime)."""


def block_table(s: Scenario) -> pd.DataFrame:
    """Per block size and regime: regeneration time, and what one recomputation costs in dollars and joules."""
    df = long_table(s)
    rows = df[df["tier"] == "hbm"][["block_tokens", "regime", "block_MiB", "regen_ms", "recompute_usd", "recompute_J"]]
    out = rows.drop_duplicates(["block_tokens", "regime"]).reset_index(drop=True)
    # per million recomputations, so that no price needs more than five decimals
    out.insert(4, "recompute_usd_per_1M", out.pop("recompute_usd") * 1e6)
    return declare(out, BLOCK_COLUMNS)


INPUTS_COLUMNS = named("input", "value", "low", "high", "provenance", "what", "basis", "source")
"""The columns of :func:`inputs_table`: words a reader reads as they are (each value carries its unit)."""


def inputs_table(s: Scenario) -> pd.DataFrame:
    """The cost and energy inputs: value, range, provenance, basis and source, as the assumption set holds them."""
    rows = []
    for key in (
        *COST_RANGES,
        "cost.hbm_capacity",
        "energy.power_lone",
        "energy.power_batch",
        "reference.h200_forward16_energy",
    ):
        rec = s.a(key)
        ranged = key in COST_RANGES
        rows.append(
            {
                "input": key,
                "value": rec.text,
                "low": s.a(f"{key}_low").text if ranged else "",
                "high": s.a(f"{key}_high").text if ranged else "",
                "provenance": rec.provenance,
                "what": SCHEMA[key].help,
                "basis": rec.basis,
                "source": rec.source,
            }
        )
    return declare(pd.DataFrame(rows), INPUTS_COLUMNS)
