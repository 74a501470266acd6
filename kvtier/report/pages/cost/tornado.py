"""The cost page's tornado: how far each price moves a small block's break-even interval in a CXL expander."""

from __future__ import annotations

from typing import Any

import pandas as pd

from kvtier.formulas import tiering
from kvtier.report.pages.cost.intervals import CXL_TIER, finite_or_nan
from kvtier.scenario import TORNADO_KEYS, Scenario


def tornado(s: Scenario) -> list[dict[str, float | str | None]]:
    """The interval tornado (:func:`kvtier.formulas.tiering.interval_tornado`): the CXL tier, the set's block, lone."""
    return tiering.interval_tornado(
        s.tier_prices(), s.price_ends(TORNADO_KEYS), s.tier_links, s.tier_block(), CXL_TIER, "lone"
    )


def tornado_table(s: Scenario) -> pd.DataFrame:
    """Each price (and the board power) at its low and high end, the others held: the CXL tier's intervals (h).

    The board power swings from the measured lone-block power to the datasheet TDP.
    """
    ranges = s.price_ranges(TORNADO_KEYS)
    rows = []
    for r in tornado(s):
        key = str(r["input"])
        row: dict[str, Any] = {"input": key, "low_si": ranges[key][0], "high_si": ranges[key][1]}
        for unit, col in (("usd", "usd"), ("j", "J")):
            for end in ("at_low", "at_high", "base"):
                row[f"keep_{col}_{end}_h"] = finite_or_nan(r[f"keep_{unit}_{end}_s"]) / 3600
            row[f"swing_{col}"] = finite_or_nan(r[f"swing_{unit}"])
        rows.append(row)
    return pd.DataFrame(rows)
