"""Column specs: what each column of a table of record is called in words, and its unit, declared where it is built.

A table of record names its columns as code does (``fetch_us``, ``break_even_tail_GBps_per_layer``); the book
shows each under a header in words with the unit in parentheses ("fetch time (µs)", "break-even bandwidth, in a
batch, per-layer transfers (GB/s)") and keeps the name in the header's ``title``.  The words and the unit are
not read back out of the name: the builder that makes the table declares one :class:`Column` per column, as
xarray keeps ``long_name`` and ``units`` in a variable's ``attrs``, and :func:`declare` attaches them to the
DataFrame it returns::

    COLUMNS = (Column("bracket", "bracket"), Column("fetch_us", "fetch time", "µs"), *provenance())
    return declare(pd.DataFrame(rows), COLUMNS)

:func:`declare` refuses a frame with a column it does not declare, or a declaration with no column, so a
table cannot be built (for the book, the CSV or a test) with a column a reader would see as an identifier.
The renderer (:func:`kvtier.report.notebook.show_table`) and the display copy
(:func:`kvtier.report.tables.formatted`) read each column's spec with :func:`column_of`, which refuses a frame
or a column nobody declared: there is no fallback that guesses.

Why the declaration travels in ``DataFrame.attrs`` rather than beside the builder in the page's ``TABLES``:

* a table's columns can depend on the assumption set (``serving_engines`` has a column per link preset of the
  set), which the builder knows as it makes them and a static list beside ``TABLES`` could not name;
* the notebooks pass the builder's frame, or a selection of its rows and columns (``df[[...]]``, ``.head()``,
  a boolean mask, ``.loc[rows, cols]``), to ``show_table``; pandas carries ``attrs`` through each of these, so
  the declaration reaches the renderer by the path the values take, with nothing to look up;
* the CSV writer ignores ``attrs``, so the tables of record are what they were.

pandas deep-copies ``attrs`` into every frame and series derived from a frame, so the declaration is one
immutable :class:`Columns` whose deep copy is itself.

Most columns are one line, ``Column(name, label, unit)``.  Families are built with the helpers here, so that a
page writes the pattern once: :func:`named` for text columns whose name is already a word (``tier``,
``provenance``), :func:`twins` for a value in a batch and its ``lone_`` twin, :data:`REGIME_LABELS` and
:data:`LAYOUT_LABELS` for the words of a regime and a layout, :func:`phrase` to join a label's parts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

ATTR = "columns"
"""The key of ``DataFrame.attrs`` that holds a table's :class:`Columns`."""

LONE = "lone block"
"""The lone-block regime, as a header says it."""
BATCH = "in a batch"
"""The in-batch regime, as a header says it."""
REGIME_LABELS: dict[str, str] = {"batch": BATCH, "lone": LONE}
"""Each regime (as the tables of record spell it in code) in a header's words."""
LAYOUT_LABELS: dict[str, str] = {"contiguous": "contiguous", "per-layer": "per-layer transfers"}
"""Each layout (as ``fetch_layout`` spells it) in a header's words."""

YES_NO = ("yes", "no")
"""The words a boolean column shows for True and False unless it declares its own."""
VERDICT = ("fetch", "regenerate")
"""The words of a verdict column (``fetch_wins``): which of the two is faster."""


@dataclass(frozen=True)
class Column:
    """One column of a table of record: its name in the CSV, its header in words, its unit.

    Parameters
    ----------
    name : str
        The column's name in the table of record (``fetch_us``).
    label : str
        What the column is, in a reader's words ("fetch time"), with any regime or layout after commas.
    unit : str
        The unit as a reader reads it ("µs", "GB/s", "×"), or "" for text, counts and plain numbers.  A time
        column ("s", "ms", "µs") any of whose values reaches a minute shows each cell with its own unit and its
        header without one (:func:`kvtier.report.tables.unit_in_cells`).
    words : tuple of str
        For a boolean column, what it shows for True and for False.
    """

    name: str
    label: str
    unit: str = ""
    words: tuple[str, str] = YES_NO

    def __post_init__(self) -> None:
        if not self.label or "_" in self.label:
            raise ValueError(f"column {self.name!r}: the label {self.label!r} must be words, not an identifier")

    def header(self, unit: bool = True) -> str:
        """The header a reader sees: the label, and the unit in parentheses unless ``unit`` is False."""
        return f"{self.label} ({self.unit})" if unit and self.unit else self.label


class Columns(Mapping[str, Column]):
    """A table's declared columns, by name: immutable, so that a deep copy (pandas makes one) is itself."""

    __slots__ = ("_by_name",)

    def __init__(self, columns: Iterable[Column]) -> None:
        by_name: dict[str, Column] = {}
        for column in columns:
            if column.name in by_name:
                raise ValueError(f"column {column.name!r} is declared twice")
            by_name[column.name] = column
        self._by_name = by_name

    def __getitem__(self, name: str) -> Column:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __deepcopy__(self, memo: dict[int, Any]) -> Columns:
        return self

    def __repr__(self) -> str:
        return f"Columns({', '.join(self._by_name)})"


def phrase(*parts: str) -> str:
    """A label's parts joined as a header joins them ("break-even bandwidth, in a batch"), empty parts left out."""
    return ", ".join(part for part in parts if part)


def named(*names: str) -> tuple[Column, ...]:
    """Text columns whose name a reader reads as it is (``tier``, ``provenance``): each its own label, no unit."""
    return tuple(Column(name, name) for name in names)


def twins(name: str, label: str, unit: str = "", words: tuple[str, str] = YES_NO) -> tuple[Column, Column]:
    """A value in a batch, ``name``, and the same value for a lone block, ``lone_name``.

    ``twins("regen_ms", "regeneration time", "ms")`` declares ``regen_ms`` ("regeneration time, in a batch
    (ms)") and ``lone_regen_ms`` ("regeneration time, lone block (ms)").
    """
    return (
        Column(name, phrase(label, BATCH), unit, words),
        Column(f"lone_{name}", phrase(label, LONE), unit, words),
    )


def declare(df: pd.DataFrame, columns: Iterable[Column]) -> pd.DataFrame:
    """``df`` with ``columns`` attached as its declared columns (``df.attrs["columns"]``); returns ``df``.

    Raises
    ------
    TypeError
        When a column of ``df`` is not declared, or a declared column is not in ``df``: a table's builder
        declares exactly the columns it makes.
    """
    declared = Columns(columns)
    names = [str(c) for c in df.columns]
    missing = [name for name in names if name not in declared]
    extra = [name for name in declared if name not in names]
    if missing or extra:
        raise TypeError(
            "a table's declared columns must be its columns:"
            + (f" not declared: {', '.join(missing)};" if missing else "")
            + (f" declared but not in the table: {', '.join(extra)};" if extra else "")
            + " declare each with kvtier.report.columns.Column where the table is built"
        )
    df.attrs[ATTR] = declared
    return df


def declared(df: pd.DataFrame) -> Columns:
    """The columns declared for ``df`` (by its builder, through :func:`declare`).

    Raises
    ------
    TypeError
        When ``df`` carries no declaration.
    """
    found = df.attrs.get(ATTR)
    if not isinstance(found, Columns):
        raise TypeError(
            f"a table with columns {', '.join(map(str, df.columns))} declares none of them:"
            " its builder must return kvtier.report.columns.declare(df, columns)"
        )
    return found


def column_of(df: pd.DataFrame, name: Any) -> Column:
    """The declared spec of column ``name`` of ``df``.

    Raises
    ------
    TypeError
        When ``df`` carries no declaration, or none for ``name``.
    """
    found = declared(df).get(str(name))
    if found is None:
        raise TypeError(
            f"column {name!r} has no declared label and unit: declare it with kvtier.report.columns.Column"
            " where its table is built"
        )
    return found


SOFT_BREAKS: dict[str, str] = {
    "regeneration": "regen-eration",
    "recomputation": "recom-putation",
    "recomputations": "recom-putations",
    "recomputing": "recom-puting",
    "contiguous": "con-tiguous",
    "transfers": "trans-fers",
    "provenance": "prov-enance",
    "accelerators": "accel-erators",
    "interior": "inte-rior",
    "prefilling": "pre-filling",
    "crossover": "cross-over",
    "parameters": "param-eters",
    "evicted": "evict-ed",
    "resident": "resi-dent",
}
"""Long header words and where they may break (``-``), so that a narrow column need not widen for them."""


def soft_hyphenated(text: str) -> str:
    """``text`` with a soft hyphen (U+00AD) where each long word of :data:`SOFT_BREAKS` may break."""
    return re.sub(
        r"[A-Za-z]+",
        lambda m: SOFT_BREAKS.get(m[0], m[0]).replace("-", "\u00ad") if m[0] in SOFT_BREAKS else m[0],
        text,
    )
