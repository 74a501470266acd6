"""What the measured set changes on the other pages: each compared page rebuilt with it, table cell by cell.

The pages are found through the registry (:func:`kvtier.report.pages.page_of`), never imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from kvtier.report.pages import Page, page_of
from kvtier.scenario import Scenario, measured_scenario, seed_scenario


def lone_ratio(s: Scenario) -> float:
    """The illustrative tail block's lone-block regenerate/fetch ratio under ``s``."""
    point = s.illustrative
    return float(s.lone_regen_s(0, "resident", point["mfu"])) / point["fetch_s"]


COMPARED = ("04_ratio", "05_interior", "06_capacity", "07_roofline", "08_tiers", "09_models")
"""The pages :func:`changes_under_measured_set` counts, by notebook stem: the analytical pages whose
tables do not draw random numbers."""


def compared_pages() -> tuple[Page, ...]:
    """The pages of :data:`COMPARED`, from the registry (:data:`kvtier.report.pages.PAGES`)."""
    found = {stem: page_of(stem) for stem in COMPARED}
    missing = [stem for stem, page in found.items() if page is None]
    if missing:
        raise LookupError(f"the measured page compares {', '.join(missing)}, which the registry does not hold")
    return tuple(page for page in found.values() if page is not None)


def changes_under_measured_set() -> dict[str, Any]:
    """What rebuilding the book with :data:`kvtier.scenario.MEASURED_SET` instead of the seed changes.

    For each page of :data:`COMPARED`, the number of cells of its tables of record that
    change (numbers beyond a relative 1e-9, or text), most first, by notebook stem; the
    pages' titles by stem; and the illustrative ratio in both regimes under each set.
    """
    seed, h200 = seed_scenario(), measured_scenario()
    counts = {}
    pages = compared_pages()
    for page in pages:
        changed = 0
        for table in page.tables:
            a, b = table.build(seed), table.build(h200)
            for col in a.columns:
                x, y = a[col], b[col]
                if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
                    changed += int((~np.isclose(x, y, rtol=1e-9, equal_nan=True)).sum())
                else:
                    changed += int((x.astype(str) != y.astype(str)).sum())
        counts[page.notebook] = changed
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return {
        "ranked": ranked,
        "titles": {page.notebook: page.title for page in pages},
        "seed_ratio": float(seed.illustrative["ratio"]),
        "h200_ratio": float(h200.illustrative["ratio"]),
        "seed_lone_ratio": lone_ratio(seed),
        "h200_lone_ratio": lone_ratio(h200),
    }
