"""Every difference between two sets of tables, one :class:`Change` each, rows matched by their keys.

Rows are matched by the key columns of :data:`kvtier.report.pages.TABLES` (for a table unknown
there, by its first column), a repeated key by its occurrence; a row's label quotes a key value
that could be misread, so no two rows share a label.  A cell is numeric when both its old and
its new text parse as finite floats; numeric cells are equal when their float values are equal
(``64`` equals ``64.0``), any other cell when its text is equal.

Every difference is one :class:`Change`: a changed cell, a cell of an added or removed row or
column (the missing side reads :data:`ABSENT`), an added or removed column (``row == ""``, the
present side reads :data:`COLUMN`), or an added or removed table (``row == column == ""``, the
present side reads ``"(N rows)"``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache

from kvtier.report.diff.loading import CsvTable

ABSENT = "(absent)"
"""The old or new side of a cell, column or table that does not exist on that side."""

COLUMN = "(column)"
"""The present side of an added or removed column."""

ROW = "(row)"
"""The present side of an added or removed row that has no value columns to show."""


@cache
def _keys() -> dict[str, tuple[str, ...]]:
    """The key columns of every table of record, from the page registry :data:`kvtier.report.pages.TABLES`."""
    # Imported here, not at the top, for start-up time only (there is no cycle: kvtier.report.pages
    # sits below this module): the page modules import pandas and matplotlib, and the cli,
    # which imports this module, must answer `kvtier compare` without loading either.
    from kvtier.report.pages import TABLES

    return {t.name: t.key for t in TABLES}


def as_number(text: str) -> float | None:
    """``text`` as a finite float, else None."""
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class Change:
    """One difference between two sets of tables.

    ``row`` is the row's key as ``"k1=v1, k2=v2"``; ``old``/``new`` are exact cell text
    (or a marker: :data:`ABSENT`, :data:`COLUMN`, :data:`ROW`, ``"(N rows)"``);
    ``rel_change`` is ``(new - old) / |old|`` for a numeric cell, else None (also when
    ``old`` is zero).
    """

    table: str
    row: str
    column: str
    old: str
    new: str
    rel_change: float | None = None

    @property
    def kind(self) -> str:
        """What changed: ``number``, ``text``, or ``{cell,row,column,table} {added,removed}``."""
        if self.old == ABSENT or self.new == ABSENT:
            what = ("cell" if self.column else "row") if self.row else ("column" if self.column else "table")
            return f"{what} {'added' if self.old == ABSENT else 'removed'}"
        if as_number(self.old) is not None and as_number(self.new) is not None:
            return "number"
        return "text"


def _key_columns(name: str, old: CsvTable, new: CsvTable) -> tuple[str, ...]:
    """The columns that identify a row in both versions; () means "by position"."""
    known = _keys().get(name)
    if known and all(c in old.header and c in new.header for c in known):
        return known
    if new.header and new.header[0] in old.header:
        return (new.header[0],)
    return ()


_QUOTED = (",", '"', "(#", "\n", "\r")


def _label_value(value: str) -> str:
    """A key value as it appears in a row label: as is, or CSV-style quoted when it could be misread.

    A value is quoted (``"..."``, inner quotes doubled) when it is empty, has leading or
    trailing blanks, or holds a comma, a quote, a line break or ``(#``.  So an unquoted
    value never contains ``,`` (the field separator) nor ``(#`` (the occurrence suffix),
    and a quoted one ends in ``"``: a label reads back to exactly one key and occurrence.
    """
    if value == "" or value != value.strip() or any(s in value for s in _QUOTED):
        return '"' + value.replace('"', '""') + '"'
    return value


_RowId = tuple[tuple[str, ...], int]


def _labelled(table: CsvTable, keys: tuple[str, ...]) -> dict[_RowId, tuple[str, dict[str, str]]]:
    """Rows of ``table`` in order, by identity: (key values, occurrence of those values).

    Rows are matched on this identity, never on the label text, so two rows can never be
    confused; the label (``k1=v1, k2=v2``, `` (#2)``, `` (#3)``... for a repeated key) is
    for display and is unambiguous too (see :func:`_label_value`).  Without key columns a
    row is identified by its position (``row=N``).
    """
    idx = [table.header.index(k) for k in keys]
    names = keys if keys else ("row",)
    out: dict[_RowId, tuple[str, dict[str, str]]] = {}
    seen: dict[tuple[str, ...], int] = {}
    for n, row in enumerate(table.rows, start=1):
        values = tuple(row[i] for i in idx) if keys else (str(n),)
        seen[values] = occurrence = seen.get(values, 0) + 1
        label = ", ".join(f"{k}={_label_value(v)}" for k, v in zip(names, values, strict=True))
        if occurrence > 1:
            label = f"{label} (#{occurrence})"
        out[(values, occurrence)] = (label, dict(zip(table.header, row, strict=True)))
    return out


def _cell_change(table: str, row: str, column: str, old: str, new: str) -> Change | None:
    """The change of one cell from ``old`` to ``new``, or None when they are equal (as numbers, or as text)."""
    a, b = as_number(old), as_number(new)
    if a is not None and b is not None:
        if a == b:
            return None
        return Change(table, row, column, old, new, (b - a) / abs(a) if a != 0 else None)
    return None if old == new else Change(table, row, column, old, new, None)


def _diff_table(name: str, old: CsvTable, new: CsvTable) -> Iterator[Change]:
    """Every difference between two versions of table ``name``, in :func:`diff_tables`' order."""
    keys = _key_columns(name, old, new)
    new_cols = [c for c in new.header if c not in keys]
    gone_cols = [c for c in old.header if c not in keys and c not in new.header]
    for c in new_cols:
        if c not in old.header:
            yield Change(name, "", c, ABSENT, COLUMN)
    for c in gone_cols:
        yield Change(name, "", c, COLUMN, ABSENT)
    old_rows, new_rows = _labelled(old, keys), _labelled(new, keys)
    for row_id, (label, cells) in new_rows.items():
        before = old_rows[row_id][1] if row_id in old_rows else None
        if before is None:
            if not new_cols:
                yield Change(name, label, "", ABSENT, ROW)
            for c in new_cols:
                yield Change(name, label, c, ABSENT, cells[c])
            continue
        for c in new_cols:
            if c not in before:
                yield Change(name, label, c, ABSENT, cells[c])
            elif (ch := _cell_change(name, label, c, before[c], cells[c])) is not None:
                yield ch
        for c in gone_cols:
            yield Change(name, label, c, before[c], ABSENT)
    old_value_cols = [c for c in old.header if c not in keys]
    for row_id, (label, cells) in old_rows.items():
        if row_id in new_rows:
            continue
        if not old_value_cols:
            yield Change(name, label, "", ROW, ABSENT)
        for c in old_value_cols:
            yield Change(name, label, c, cells[c], ABSENT)


def _rows(n: int) -> str:
    """The present side of an added or removed table: its row count, ``(N rows)``."""
    return f"({n} row{'' if n == 1 else 's'})"


def diff_tables(old: Mapping[str, CsvTable], new: Mapping[str, CsvTable]) -> list[Change]:
    """Every difference from ``old`` to ``new``, in a fixed order.

    Tables by name; within a table, added/removed columns first, then rows in the new
    table's order, then removed rows in the old order; within a row, columns in the new
    header's order, then removed columns.
    """
    changes: list[Change] = []
    for name in sorted(set(old) | set(new)):
        if name not in old:
            changes.append(Change(name, "", "", ABSENT, _rows(len(new[name].rows))))
        elif name not in new:
            changes.append(Change(name, "", "", _rows(len(old[name].rows)), ABSENT))
        else:
            changes.extend(_diff_table(name, old[name], new[name]))
    return changes
