"""The cost page's tornado: how far each price moves a small block's break-even interval in a CXL expander."""

from __future__ import annotations

from typing import Any

import pandas as pd

from kvtier.formulas import tiering
from kvtier.report.columns import Column, declare, phrase
from kvtier.report.pages.cost.intervals import CXL_TIER, END_LABELS, finite_or_nan
from kvtier.scenario import TORNADO_KEYS, Scenario


def tornado(s: Scenario) -> list[dict[str, float | str | None]]:
    """The interval tornado (:func:`kvtier.formulas.tiering.interval_tornado`): the CXL tier, the set's block, lone."""
    return tiering.interval_tornado(
        s.tier_prices(), s.price_ends(TORNADO_KEYS), s.tier_links, s.tier_block(), CXL_TIER, "lone"
    )


TORNADO_COLUMNS = (
    Column("input", "input"),
    Column("low_si", "low end", "SI units"),
    Column("high_si", "high end", "SI units"),
    *(Column(f"keep_usd_{end}_h", phrase("worth keeping by dollars", words), "h") for end, words in END_LABELS.items()),
    Column("swing_usd", "swing, by dollars"),
    *(Column(f"keep_J_{end}_h", phrase("worth keeping by energy", words), "h") for end, words in END_LABELS.items()),
    Column("swing_J", "swing, by energy"),
)
"""The columns of :func:`tornado_table`, in words with their units: the intervals at each end of an input, by
dollars and by energy (:data:`~kvtier.report.pages.cost.intervals.BY_LABELS`)."""


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
    return declare(pd.DataFrame(rows), TORNADO_COLUMNS)
