"""The machinery of the tables of record: CSV text, display formatting, writing.

The tables themselves live with their pages (:mod:`kvtier.report.pages`): each builder takes a
:class:`~kvtier.scenario.Scenario` and returns a DataFrame whose column names carry units
and which has a ``provenance`` (or ``basis``) column.  The same builder feeds the book
(through the notebooks) and the CSV files under ``tables/``, so the two cannot disagree.
CSVs are deterministic: fixed row order, ``%.10g`` floats, ``\\n`` line ends.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kvtier.units import format_number, format_time


def to_csv_text(df: pd.DataFrame) -> str:
    """The CSV text of a table of record: ``%.10g`` floats, ``\\n`` line ends."""
    return df.to_csv(index=False, float_format="%.10g", lineterminator="\n")


def write_csv_texts(texts: dict[str, str], directory: str | Path) -> list[Path]:
    """Write ``NAME.csv`` for each table text under ``directory``; return the paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in texts.items():
        path = directory / f"{name}.csv"
        path.write_text(text, encoding="utf-8", newline="\n")
        paths.append(path)
    return paths


def formatted(df: pd.DataFrame) -> pd.DataFrame:
    """A display copy: every number by the one rule of :func:`kvtier.units.format_number`.

    A missing value (NaN, None) shows as "n/a"; a time column any of whose values reaches a
    minute gives each cell its own unit (:func:`kvtier.units.format_time`) and drops the unit
    from its header.
    """
    out = df.copy()
    renames = {}
    for col in out.columns:
        values = out[col]
        seconds = _time_seconds(col, values)
        if seconds is not None:
            # "3.22 h", not "11,606,123.95 ms"
            out[col] = ["n/a" if pd.isna(x) else format_time(x) for x in seconds]
            renames[col] = col[: col.rindex("_")]
            continue
        if (
            pd.api.types.is_numeric_dtype(values)
            and not pd.api.types.is_bool_dtype(values)
            or (values.dtype == object and values.map(_is_number).all())
        ):
            numbers = pd.to_numeric(values, errors="coerce")
            out[col] = ["n/a" if pd.isna(x) else format_number(float(x)) for x in numbers]
    return out.rename(columns=renames)


TIME_SUFFIXES = {"_s": 1.0, "_ms": 1e-3, "_us": 1e-6}
"""Column-name suffixes of time columns in the tables of record and the seconds each unit is."""


def _time_seconds(col: str, values: pd.Series) -> pd.Series | None:
    """``values`` in seconds when ``col`` is a numeric time column any of whose values reaches a minute."""
    scale = next((v for k, v in TIME_SUFFIXES.items() if str(col).endswith(k)), None)
    if scale is None or not pd.api.types.is_numeric_dtype(values):
        return None
    seconds = pd.to_numeric(values, errors="coerce") * scale
    return seconds if bool((seconds.abs() >= 60).any()) else None


def _is_number(x: object) -> bool:
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))
