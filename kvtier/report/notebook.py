"""The notebook helpers: parameters in, a scenario out, numbers, figures and tables onto the page.

A notebook declares the assumptions it depends on in its cell tagged ``parameters``:
one variable per assumption key (``.`` written as ``_``, e.g. ``bandwidth_mid``)
holding the value as text, defaulting to the seed set, plus ``provenance``, a mapping
``key -> {provenance, basis, source}`` for the keys whose records differ from the
seed.  :func:`notebook_parameters` computes those parameters for the build;
:func:`scenario_from_parameters` turns them back into a :class:`~kvtier.scenario.Scenario`
inside the notebook, which refuses to read any undeclared key so that the build's
re-execution bookkeeping cannot miss a dependency.

What a page shows comes from its page module (:mod:`kvtier.report.pages`); a notebook only
presents it with the helpers here: :func:`glue_numbers` and :func:`glue_figure` for the
prose (myst-nb glue; they also fill :data:`kvtier.report.preview.GLUED` for a page run in
Jupyter), :func:`show_table` for a table of record, :func:`setup` once at the top.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kvtier.errors import KvtierError
from kvtier.inputs.assumptions import AssumptionSet, RestrictedAssumptionSet, check_consistency, make_assumption
from kvtier.inputs.keys import SCHEMA, describe
from kvtier.report import pages, preview, tables
from kvtier.report.columns import column_of, soft_hyphenated
from kvtier.report.figures import SVG_PRINT, apply_style
from kvtier.report.preview import SHOWN, shown_text
from kvtier.report.tables import formatted, unit_in_cells
from kvtier.scenario import Scenario, seed_scenario

PROVENANCE_PARAM = "provenance"
"""The parameter holding provenance records of keys that differ from the seed."""
SET_NAME_PARAM = "set_name"
"""The parameter holding the assumption set's name (declared by the assumptions page)."""


def param_name(key: str) -> str:
    """The notebook parameter name of assumption ``key`` (``bandwidth.mid`` -> ``bandwidth_mid``)."""
    return key.replace(".", "_")


PARAM_KEYS: dict[str, str] = {param_name(key): key for key in SCHEMA}
"""Notebook parameter name -> assumption key."""


PARAMETERS_HEADER = (
    "# Parameters: the assumptions this page reads, with the seed set's values.\n"
    "# `kvtier build` injects the values of the assumption set being built."
)


def parameters_cell(keys: Iterable[str], set_name: bool = False) -> str:
    """The source of a page's ``parameters`` cell for assumption ``keys``, in schema order.

    Each line assigns the seed set's value text and says in a comment what the key is and
    which values it takes, which ``papermill --help-notebook`` shows.  ``set_name`` adds
    the assumption set's name (the assumptions page shows it).
    """
    base = seed_scenario().assumptions
    wanted = set(keys)
    lines = [PARAMETERS_HEADER]
    if set_name:
        lines.append(f'{SET_NAME_PARAM}: str = "{base.name}"  # name of the assumption set')
    for key in (key for key in SCHEMA if key in wanted):
        lines.append(f"{param_name(key)}: str = {json.dumps(base[key].text, ensure_ascii=False)}  # {describe(key)}")
    lines.append(
        f"{PROVENANCE_PARAM}: dict = {{}}  # key -> {{provenance, basis, source}} of the keys that differ from the seed"
    )
    return "\n".join(lines)


def notebook_parameters(declared: Iterable[str], assumptions: AssumptionSet, owner: str) -> dict[str, Any]:
    """The papermill parameters for a notebook that declares ``declared``.

    Parameters
    ----------
    declared : iterable of str
        Parameter names found in the notebook's ``parameters`` cell.
    assumptions : AssumptionSet
        The assumption set of this build.
    owner : str
        Notebook name, for error messages.

    Returns
    -------
    dict
        Each declared assumption's value text (None for a null optional key), and
        ``provenance`` for the declared keys whose record differs from the seed.
    """
    base = seed_scenario().assumptions
    params: dict[str, Any] = {}
    prov: dict[str, dict[str, str]] = {}
    for name in sorted(declared):
        if name == SET_NAME_PARAM:
            params[name] = assumptions.name
            continue
        if name == PROVENANCE_PARAM:
            continue
        key = PARAM_KEYS.get(name)
        if key is None:
            raise KvtierError(f"{owner}: parameter '{name}' is not an assumption key; known: {', '.join(PARAM_KEYS)}")
        rec = assumptions[key]
        params[name] = None if rec.value is None else rec.text
        if rec != base[key]:
            prov[key] = {"provenance": rec.provenance, "basis": rec.basis, "source": rec.source}
    params[PROVENANCE_PARAM] = prov
    return params


def scenario_from_parameters(namespace: Mapping[str, Any], owner: str) -> Scenario:
    """The scenario a notebook's parameters describe, limited to the keys it declares.

    Parameters
    ----------
    namespace : mapping
        The notebook's globals after the parameters (and papermill's injected) cell.
    owner : str
        Notebook name, for error messages.
    """
    base = seed_scenario().assumptions
    prov = namespace.get(PROVENANCE_PARAM) or {}
    declared = {key for name, key in PARAM_KEYS.items() if name in namespace}
    records = {}
    for key in sorted(declared):
        raw = namespace[param_name(key)]
        old = base[key]
        text = "null" if raw is None else str(raw)
        if key in prov or text != old.text:
            info = prov.get(key, {})
            records[key] = make_assumption(
                key,
                raw,
                basis=info.get("basis", f"notebook parameter (the seed has {old.display})"),
                provenance=info.get("provenance", "assumed"),
                source=info.get("source", f"{owner} parameter"),
                where=f"{owner}: parameter '{param_name(key)}'",
            )
    full = base.with_records(records, name=str(namespace.get(SET_NAME_PARAM, base.name)))
    restricted = RestrictedAssumptionSet(full, declared, owner)
    try:  # run alone with papermill, a page checks what `kvtier build` checks
        check_consistency(restricted)
    except KvtierError as exc:
        raise KvtierError(f"{owner}: {exc}") from None
    return Scenario(restricted)


def setup() -> None:
    """House style plus inline SVG output without dates, for a notebook's first code cell."""
    apply_style()
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the notebook stack
        return
    ip = get_ipython()
    if ip is None:
        return
    ip.run_line_magic("config", "InlineBackend.figure_formats = ['svg']")
    ip.run_line_magic("config", f"InlineBackend.print_figure_kwargs = {SVG_PRINT!r}")


def plain(value: Any) -> Any:
    """A glue-safe value: numpy scalars become Python ``float``/``int`` (myst-nb formats those)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return value


def glue_numbers(numbers: Mapping[str, Any]) -> None:
    """Glue every number (plain Python values) for the page's prose, without displaying them.

    Each real number is glued a second time as text, ``NAME__shown`` (:data:`SHOWN`), at the tables' precision.
    """
    from myst_nb import glue

    for name, value in numbers.items():
        value = plain(value)
        glue(name, value, display=False)
        preview.GLUED[name] = value
        if isinstance(value, float):
            glue(name + SHOWN, shown_text(value), display=False)
            preview.GLUED[name + SHOWN] = shown_text(value)


def glue_html(name: str, html: str) -> None:
    """Glue ``html`` (a paragraph with links) for another page to paste with ``{glue:any}``, unshown here."""
    from IPython.display import HTML
    from myst_nb import glue

    glue(name, HTML(html), display=False)
    preview.GLUED[name] = html


def glue_figure(name: str, fig: Any, caption: str) -> None:
    """Glue a figure and its caption (``NAME_caption``) and close it."""
    import matplotlib.pyplot as plt
    from myst_nb import glue

    glue(name, fig, display=False)
    glue(f"{name}_caption", caption, display=False)
    preview.GLUED.update({name: fig, f"{name}_caption": caption})
    plt.close(fig)


def glue_table(glue_name: str, df: Any, name: str) -> None:
    """Glue the table of record ``name`` (rows of ``df``) as another page pastes it (``{glue:any}``), unshown here."""
    from myst_nb import glue

    shown = show_table(df, name)
    glue(glue_name, shown, display=False)
    preview.GLUED[glue_name] = shown


DETAIL_COLUMNS = ("title", "hardware", "figure", "basis", "source", "note", "what")
"""Long text columns of the tables of record: in the CSV, and shown in a details block under a table."""


SHORT_FIRST_COLUMN = 24
"""Characters up to which a table's first column is kept on one line."""


def _is_detail(column: str) -> bool:
    """Whether ``column`` is long text or an SI duplicate (``value_si``) rather than a value to read."""
    return column in DETAIL_COLUMNS or column.endswith("_si")


def _is_numeric(values: Any) -> bool:
    """Whether a column holds numbers (missing values aside): it is right-aligned, header and cells."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(values):
        return False
    if pd.api.types.is_numeric_dtype(values):
        return True
    present = [x for x in values if x is not None and not (isinstance(x, float) and np.isnan(x))]
    return (
        bool(present)
        and all(isinstance(x, (int, float, np.integer, np.floating)) for x in present)
        and not any(isinstance(x, (bool, np.bool_)) for x in present)
    )


def key_anchor(key: str) -> str:
    """The HTML id of ``key``'s row on the assumptions page: ``key-`` and the key, every run of other characters
    a hyphen (``fetch.pageable_efficiency`` -> ``key-fetch-pageable-efficiency``); the ``{input}`` role links it."""
    return "key-" + re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")


def row_anchors(df: Any, name: str, key: Iterable[str]) -> list[str] | None:
    """Every row's :func:`kvtier.report.tables.row_anchor` in ``df`` (the table of record ``name`` keyed by ``key``),
    from the key columns ``df`` shows (a page may leave out one it holds fixed); ``None`` where none is shown or two
    rows would share one (no ids rather than ambiguous ones)."""
    columns = [c for c in key if c in df.columns]
    if not columns:
        return None
    ids = [tables.row_anchor(name, row) for row in df[columns].itertuples(index=False)]
    return ids if len(set(ids)) == len(ids) else None


def table_html(df: Any, columns: list[Any], row_ids: list[str] | None = None) -> str:
    """The HTML table of ``columns`` of ``df``: human headers, the column's name in each header's title.

    Numbers are right-aligned under right-aligned headers (class ``kvtier-num``), text
    left-aligned under left-aligned ones; each header is the column's declared label and unit
    (:meth:`kvtier.report.columns.Column.header`; no unit where each cell carries its own,
    :func:`kvtier.report.tables.unit_in_cells`), its ``title`` the name in the table of record.
    ``row_ids``, when given, are the rows' HTML ids, one per row (the assumptions page's :func:`key_anchor`, every
    other table's :func:`row_anchors`).

    Raises
    ------
    TypeError
        When a column is not declared where its table is built (:func:`kvtier.report.columns.column_of`).
    """
    from html import escape

    shown = formatted(df[columns])
    headers = [column_of(df, c).header(unit=not unit_in_cells(df, c)) for c in columns]
    numeric = [_is_numeric(df[c]) for c in columns]
    # a short first column (a name, a bracket) stays on one line; a long one may wrap
    short = shown[shown.columns[0]].astype(str).str.len().max() <= SHORT_FIRST_COLUMN if len(shown) else True
    classes = "kvtier-table kvtier-nowrap-first" if short else "kvtier-table"

    def cls(i: int) -> str:
        return ' class="kvtier-num"' if numeric[i] else ""

    heads = "".join(
        f'<th{cls(i)} title="{escape(str(c))}">{escape(soft_hyphenated(text))}</th>'
        for i, (c, text) in enumerate(zip(columns, headers, strict=True))
    )
    ids = [f' id="{escape(i)}"' for i in row_ids] if row_ids is not None else [""] * len(shown)
    rows = "\n".join(
        f"<tr{rid}>" + "".join(f"<td{cls(i)}>{escape(str(v))}</td>" for i, v in enumerate(row)) + "</tr>"
        for rid, row in zip(ids, shown.itertuples(index=False), strict=True)
    )
    return f'<table class="{classes}">\n<thead><tr>{heads}</tr></thead>\n<tbody>\n{rows}\n</tbody>\n</table>'


def show_table(df: Any, name: str, folded: str | None = None) -> Any:
    """An HTML display of the table of record ``name`` (rows of ``df``, its builder's output).

    The values to read come first (the table's shown columns, else every column but long
    text), under headers in words with units (each column's :class:`~kvtier.report.columns.Column`,
    declared where the table is built; the column's name in the CSV is each header's
    ``title``), in a box that scrolls sideways on a narrow screen with its first column kept
    in view and a cue that it scrolls (``book/_static/kvtier.js`` marks a box that
    overflows); the other columns (bases, sources, notes, titles, SI duplicates) follow in a
    details block keyed by the table's key columns; a link downloads the CSV of record
    (``tables/NAME.csv``, which the build copies beside the pages).  Numbers show three significant figures
    (:func:`kvtier.report.tables.formatted`); the markup is deterministic.

    ``folded``, when given, folds the whole table (a long reference table the prose has
    already summed up) into a details block whose summary line it is; the CSV link stays open.
    """
    from html import escape

    from IPython.display import HTML

    table = next((t for t in pages.TABLES if t.name == name), None)
    if table is None:
        raise KvtierError(f"show_table: no table of record named {name!r}")
    if table.shown:
        shown = [c for c in table.shown if c in df.columns and not _is_detail(str(c))]
    else:
        shown = [c for c in df.columns if not _is_detail(str(c))]
    detail = [c for c in df.columns if c not in shown]

    # the assumptions page's rows carry their key's anchor, which the book's {input} role links from the prose;
    # every other table's rows their key columns' (row_anchor), which a headline number links to
    if name == "assumptions":
        row_ids = [key_anchor(str(k)) for k in df["key"]]
    else:
        row_ids = row_anchors(df, name, table.key)

    def box(columns: list[Any], ids: list[str] | None = None, anchor: str = "") -> str:
        wrap = f' id="{anchor}"' if anchor else ""
        return (
            f'<div class="kvtier-table-wrap"{wrap}><div class="kvtier-table-box">{table_html(df, columns, ids)}</div>'
            '<p class="kvtier-scroll-cue" aria-hidden="true">scroll sideways for more columns →</p></div>'
        )

    parts = [box(shown, row_ids, tables.table_anchor(name))]
    if detail:
        key = [c for c in table.key if c in shown]
        names = [column_of(df, c).header() for c in detail]
        parts.append(
            f'<details class="kvtier-details"><summary>More columns: {escape(", ".join(names))}</summary>'
            f"{box(key + detail)}</details>"
        )
    if folded is not None:
        rows = f"{len(df):,} row{'s' if len(df) != 1 else ''}"
        parts = [f'<details class="kvtier-details"><summary>{escape(folded)} ({rows})</summary>', *parts, "</details>"]
    parts.append(
        f'<p class="kvtier-csv">Table of record: <a href="../tables/{name}.csv" download>{name}.csv</a>'
        " (every row and column, full precision; hover over a header for its column name there).</p>"
    )
    return HTML("\n".join(parts))
