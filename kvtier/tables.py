"""The machinery of the tables of record: CSV text, display formatting, writing.

The tables themselves live with their pages (:mod:`kvtier.pages`): each builder takes a
:class:`~kvtier.scenario.Scenario` and returns a DataFrame whose column names carry units
and which has a ``provenance`` (or ``basis``) column.  The same builder feeds the book
(through the notebooks) and the CSV files under ``tables/``, so the two cannot disagree.
CSVs are deterministic: fixed row order, ``%.10g`` floats, ``\\n`` line ends.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pandas as pd

from kvtier.units import format_time


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


def formatted(df: pd.DataFrame, digits: dict[str, int] | None = None) -> pd.DataFrame:
    """A display copy: floats rounded per column (default 2 decimals), thousands separators.

    A float column whose values are all whole numbers is shown as integers; a missing
    value (NaN, None) as "n/a". Numbers are rounded by :func:`display_number`.
    """
    digits = digits or {}
    out = df.copy()
    renames = {}
    for col in out.columns:
        values = out[col]
        seconds = _time_seconds(col, values)
        if seconds is not None:
            # a time column that reaches a minute: each cell carries its own unit ("3.22 h", not
            # "11,606,123.95 ms"), and the header drops the unit suffix the cells now show
            d = digits.get(col, 2)
            out[col] = ["n/a" if pd.isna(x) else format_time(x, d) for x in seconds]
            renames[col] = col[: col.rindex("_")]
            continue
        if pd.api.types.is_float_dtype(values) or (values.dtype == object and values.map(_is_number).all()):
            numbers = pd.to_numeric(values, errors="coerce")
            whole = bool(numbers.dropna().map(float.is_integer).all()) and col not in digits
            d = 0 if whole else digits.get(col, 2)
            out[col] = ["n/a" if pd.isna(x) else display_number(x, d) for x in numbers]
        elif pd.api.types.is_integer_dtype(values) and col.endswith("tokens"):
            out[col] = [f"{x:,}" for x in values]
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


def display_number(x: float, digits: int) -> str:
    """``x`` as its table of record holds it (``%.10g``), rounded once, half away from zero.

    Rounding the recorded text rather than the binary float keeps a display consistent
    with the CSV and with prose: 218.74999999999997 is recorded as 218.75 and shows as
    218.8 at one decimal (Python's own ``f"{x:.1f}"`` would show 218.7).
    """
    exact = Decimal(f"{x:.10g}").quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    text = f"{exact:,.{digits}f}"
    return "0" + text[2:] if text.startswith("-0") and not exact else text


def _is_number(x: object) -> bool:
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))
