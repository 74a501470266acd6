"""The assumptions page (``notebooks/00_assumptions.md``): every assumption with its provenance."""

from __future__ import annotations

from typing import Any

import pandas as pd

from kvtier.inputs.assumptions import PROVENANCE_CLASSES
from kvtier.inputs.keys import SCHEMA
from kvtier.report.columns import Column, declare, named
from kvtier.scenario import Scenario

REFERENCE_PREFIX = "reference."
"""Keys of figures kept for comparison only: shown, labelled, read by no calculation."""

NOTEBOOK = "00_assumptions"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "the assumptions"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = tuple(SCHEMA)
"""The assumption keys the page reads: all of them (its ``parameters`` cell declares each)."""


def numbers(s: Scenario) -> dict[str, Any]:
    """How many assumptions of each provenance class the set holds."""
    records = list(s.assumptions.values())
    out: dict[str, Any] = {
        "n_assumptions": len(records),
        "set_name": s.assumptions.name,
        "dgx_spark_gbps": s.v("reference.dgx_spark_hbm") / 1e9,
        "h200_host_link_gbps": s.v("reference.h200_host_link") / 1e9,
    }
    for cls in PROVENANCE_CLASSES:
        out[f"n_{cls.replace('-', '_')}"] = sum(rec.provenance == cls for rec in records)
    # what enters a calculation: every record but the reference figures, which are shown only
    used = [rec for rec in records if not rec.key.startswith(REFERENCE_PREFIX)]
    counts = {cls: sum(rec.provenance == cls for rec in used) for cls in PROVENANCE_CLASSES}
    out["n_inputs_used"] = len(used)
    out["n_used_measured"] = counts["measured"]
    out["n_reference"] = len(records) - len(used)
    out["n_reference_measured"] = out["n_measured"] - counts["measured"]
    listed = ", ".join(f"{counts[cls]} {cls}" for cls in PROVENANCE_CLASSES if counts[cls])
    names = [SCHEMA[rec.key].help.split(",")[0] for rec in used if rec.provenance == "measured"]
    measured = "none of them measured" if not names else f"{len(names)} of them measured ({'; '.join(names)})"
    shown = [
        "the " + SCHEMA[rec.key].help.split(",")[0].removeprefix("a measured ")
        for rec in records
        if rec.key.startswith(REFERENCE_PREFIX) and rec.provenance == "measured"
    ]
    n_shown = len(shown)
    figures = "figure" if n_shown == 1 else "figures"
    out["answer_measured"] = (
        f"Of the {len(used)} inputs that enter a calculation, {measured}: {listed}."
        f" Another {n_shown} measured {figures} in the set {'is' if n_shown == 1 else 'are'} shown beside the"
        " results for comparison only, and no CXL link was measured; the page measured on one H200 sets the model"
        " against real copies and forward passes."
        if n_shown
        else f"Of the {len(used)} inputs that enter a calculation, {measured}: {listed}; no CXL link was measured,"
        " and the page measured on one H200 sets the model against real copies and forward passes."
    )
    out["reference_sentence"] = (
        f"Elsewhere, {n_shown} measured {figures} {'is' if n_shown == 1 else 'are'} shown apart, labelled, and"
        f" used by no calculation: {_series(shown)}."
        if n_shown
        else "No other measured figure is shown."
    )
    return out


def _series(items: list[str]) -> str:
    """Items in words, 'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


COLUMNS = (
    *named("key", "value"),
    Column("value_si", "value in SI units"),
    Column("unit_si", "SI unit"),
    *named("provenance", "basis", "source"),
)
"""The columns of :func:`table`, in words."""


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
    return declare(pd.DataFrame(rows), COLUMNS)


TABLES = (("assumptions", table, ("key",)),)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = ()
"""The page's figures: (glue name, function returning the figure and its caption)."""
