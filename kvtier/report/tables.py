"""The machinery of the tables of record: CSV text, display formatting, writing.

The tables themselves live with their pages (:mod:`kvtier.report.pages`): each builder takes a
:class:`~kvtier.scenario.Scenario` and returns a DataFrame whose column names carry units,
which has a ``provenance`` (or ``basis``) column, and whose every column is declared with its
label and unit (:mod:`kvtier.report.columns`).  The same builder feeds the book
(through the notebooks) and the CSV files under ``tables/``, so the two cannot disagree.
CSVs are deterministic: fixed row order, ``%.10g`` floats, ``\\n`` line ends.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kvtier.report.columns import Column, column_of
from kvtier.units import format_number, format_time


def to_csv_text(df: pd.DataFrame) -> str:
    """The CSV text of a table of record: ``%.10g`` floats, ``\\n`` line ends, a carriage return in text written as
    a line break (quoted)."""
    text = [c for c in df.columns if pd.api.types.is_object_dtype(df[c]) or pd.api.types.is_string_dtype(df[c])]
    if text:  # a lone CR would end a row for a CSV reader yet go unquoted (only "\n" ends one here): as "\n"
        df = df.copy()
        for c in text:
            df[c] = df[c].map(lambda v: v.replace("\r\n", "\n").replace("\r", "\n") if isinstance(v, str) else v)
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


DISPLAY_DIGITS = 3
"""Significant figures a table shows: its inputs are known to a factor, not to five figures (the CSV keeps ten)."""


def formatted(df: pd.DataFrame, digits: int = DISPLAY_DIGITS) -> pd.DataFrame:
    """A display copy of ``df``, its columns and their names kept: every number by the one rule of
    :func:`kvtier.units.format_number`.

    Numbers show ``digits`` significant figures (a whole number, or one of ``digits`` or more
    integer digits, to the unit); an infinite one as "∞"; a boolean as the words its column
    declares (:attr:`kvtier.report.columns.Column.words`: "fetch"/"regenerate", "yes"/"no"). A
    missing value (NaN, None) shows as "n/a"; a time column (declared in s, ms or µs) any of
    whose values reaches a minute gives each cell its own unit (:func:`kvtier.units.format_time`),
    and its header then none (:func:`unit_in_cells`).

    Raises
    ------
    TypeError
        When a column of ``df`` is not declared (:func:`kvtier.report.columns.column_of`).
    """
    out = df.copy()
    for col in out.columns:
        column = column_of(df, col)
        values = out[col]
        seconds = _time_seconds(column, values)
        if seconds is not None:
            # "3.22 h", not "11,606,123.95 ms"
            out[col] = ["n/a" if pd.isna(x) else format_time(x) for x in seconds]
            continue
        if _is_bool_column(values):
            yes, no = column.words
            out[col] = ["n/a" if _missing(x) else (yes if x else no) for x in values]
        elif (
            pd.api.types.is_numeric_dtype(values)
            and not pd.api.types.is_bool_dtype(values)
            or (values.dtype == object and values.map(_is_number).all())
        ):
            numbers = pd.to_numeric(values, errors="coerce")
            out[col] = [_number(x, digits) for x in numbers]
    return out


def _number(x: float, digits: int) -> str:
    """One cell: "n/a" for a missing value, "∞" (or "-∞") for an infinite one, else the one rule."""
    if pd.isna(x):
        return "n/a"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    return format_number(float(x), digits)


def _missing(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _is_bool_column(values: pd.Series) -> bool:
    """Whether every value present is a boolean (a bool column, or objects with a missing value)."""
    if pd.api.types.is_bool_dtype(values):
        return True
    present = [x for x in values if not _missing(x)]
    return values.dtype == object and bool(present) and all(isinstance(x, (bool, np.bool_)) for x in present)


TIME_UNITS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6}
"""The declared units of time columns in the tables of record and the seconds each unit is."""


def _time_seconds(column: Column, values: pd.Series) -> pd.Series | None:
    """``values`` in seconds when ``column`` is a numeric time column any of whose values reaches a minute."""
    scale = TIME_UNITS.get(column.unit)
    if scale is None or not pd.api.types.is_numeric_dtype(values):
        return None
    seconds = pd.to_numeric(values, errors="coerce") * scale
    return seconds if bool((seconds.abs() >= 60).any()) else None


def unit_in_cells(df: pd.DataFrame, name: object) -> bool:
    """Whether column ``name`` of ``df`` shows each cell with its own unit (a time column that reaches a minute).

    Its header then shows no unit (:meth:`kvtier.report.columns.Column.header` with ``unit=False``).
    """
    return _time_seconds(column_of(df, name), df[name]) is not None


def _is_number(x: object) -> bool:
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))


def row_anchor(table: str, values: Iterable[Any]) -> str:
    """The HTML id of a row of the table of record ``table``: ``row-``, the table and its key columns' ``values``
    (as the table holds them), every run of other characters a hyphen (``cost_lru``, ``(0.9, "pcie5-x16")`` ->
    ``row-cost-lru-0-9-pcie5-x16``); a page links a headline number to the row it is read from."""
    text = "-".join([table, *(str(v) for v in values)])
    return "row-" + re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def table_anchor(table: str) -> str:
    """The HTML id of the table of record ``table`` where a page shows it: ``table-`` and its name, hyphenated."""
    return row_anchor(table, ()).replace("row-", "table-", 1)
