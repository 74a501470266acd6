"""The text form of a diff: every change with its exact cell text, and the changes counted in words.

:func:`format_text` lists every change with the exact cell text (a character that is not
printable, a terminal's escape included, as its Python escape); it returns ``""`` when nothing
changed, so that ``kvtier diff`` prints nothing and exits 0 (otherwise 1, like ``diff(1)``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from kvtier.errors import show
from kvtier.report.diff.changes import Change
from kvtier.units import plural

FORMATS = ("text", "md")
"""The forms ``kvtier diff --format`` writes: this text table, or Markdown (:mod:`kvtier.report.diff.markdown`)."""

HEADER = ("table", "row", "column", "old", "new", "change")
"""The columns of both forms' list of changes."""


def format_rel(change: Change) -> str:
    """The change column: a signed percentage (``+56.25%``), or what kind of change it is."""
    kind = change.kind
    if kind == "number":
        r = change.rel_change
        if r is None:
            return "from 0"
        pct = 100.0 * r
        return f"{pct:+.2f}%" if abs(pct) >= 0.01 else f"{pct:+.2e}%"
    if kind == "text":
        return "text"
    return kind.split()[-1] if kind.startswith("cell") else kind


def _show(text: str) -> str:
    """A cell for the text form: empty reads ``""``; a line break or any other character that is
    not printable (a terminal's escape sequence) reads as its Python escape (``\\n``, ``\\x1b``)."""
    return '""' if text == "" else show(text, limit=sys.maxsize)


def _cells(c: Change) -> tuple[str, ...]:
    """A change's cells for the text form, every character that is not printable escaped."""
    table, row, column = (show(x, limit=sys.maxsize) for x in (c.table, c.row, c.column))
    return (table, row, column, _show(c.old), _show(c.new), format_rel(c))


def format_text(changes: Sequence[Change]) -> str:
    """An aligned plain-text table of ``changes``; ``""`` when there are none."""
    if not changes:
        return ""
    rows = [HEADER, *(_cells(c) for c in changes)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    right = {5}

    def line(r: Sequence[str]) -> str:
        parts = [r[i].rjust(w) if i in right else r[i].ljust(w) for i, w in enumerate(widths)]
        return "  ".join(parts).rstrip()

    out = [line(rows[0]), line(["-" * w for w in widths])]
    out += [line(r) for r in rows[1:]]
    return "\n".join(out) + "\n"


def summary_parts(changes: Sequence[Change]) -> list[str]:
    """``["N numbers changed", ...]``: the count of numbers, then any other kind of change that occurred."""
    kinds = [c.kind for c in changes]
    # A row was added (removed) when it has a cell added (removed) outside the added (removed) columns.
    columns = {
        (c.table, c.column, k.split()[-1]) for c, k in zip(changes, kinds, strict=True) if k.startswith("column")
    }
    rows: dict[str, set[tuple[str, str]]] = {"added": set(), "removed": set()}
    for c, k in zip(changes, kinds, strict=True):
        how = k.split()[-1]
        if k.startswith("row ") or (k.startswith("cell ") and (c.table, c.column, how) not in columns):
            rows[how].add((c.table, c.row))
    parts = [f"{plural(kinds.count('number'), 'number')} changed"]
    if n := kinds.count("text"):
        parts.append(f"{plural(n, 'text cell')} changed")
    for what in ("row", "column", "table"):
        for how in ("added", "removed"):
            n = len(rows[how]) if what == "row" else kinds.count(f"{what} {how}")
            if n:
                parts.append(f"{plural(n, what)} {how}")
    return parts


def summary(changes: Sequence[Change]) -> str:
    """One line: ``"N numbers changed in M tables"``, plus any other kinds of change."""
    tables = len({c.table for c in changes})
    return f"{', '.join(summary_parts(changes))} in {plural(tables, 'table')}"
