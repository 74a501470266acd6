"""The assumptions page (``notebooks/00_assumptions.md``): every assumption with its provenance."""

from __future__ import annotations

from typing import Any

import pandas as pd

from kvtier.scenario import Scenario

NOTEBOOK = "00_assumptions"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""


def numbers(s: Scenario) -> dict[str, Any]:
    """How many assumptions of each provenance class the set holds."""
    records = list(s.assumptions.values())
    out: dict[str, Any] = {
        "n_assumptions": len(records),
        "set_name": s.assumptions.name,
        "dgx_spark_gbps": s.v("reference.dgx_spark_hbm") / 1e9,
    }
    for cls in ("measured", "published-spec", "assumed", "implied", "derived"):
        out[f"n_{cls.replace('-', '_')}"] = sum(rec.provenance == cls for rec in records)
    return out


def table(s: Scenario) -> pd.DataFrame:
    """Every assumption: value, unit, basis, provenance class and source."""
    rows = [
        {
            "key": rec.key,
            "value": rec.display,
            "value_si": "" if not isinstance(rec.value, float) else rec.value,
            "unit_si": rec.unit,
            "provenance": rec.provenance,
            "basis": rec.basis,
            "source": rec.source,
        }
        for rec in s.assumptions.values()
    ]
    return pd.DataFrame(rows)


TABLES = (("assumptions", table, ("key",)),)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = ()
"""The page's figures: (glue name, function returning the figure and its caption)."""
