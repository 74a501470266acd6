"""The pages of the book: one module per page, and :data:`PAGES`, the one registry of them.

A page is one text notebook, ``notebooks/NOTEBOOK.md``, and one module here that holds
everything the notebook presents, so that adding a page touches nothing else in the
package.  A large page is a package instead (``cost/``: a module per job, its sentences in
``words.py``, its numbers in ``glue.py``) whose ``__init__`` is the page module.  The page
module defines:

``NOTEBOOK``
    The stem of the page's text notebook (``"02_fetch"``).
``TITLE``
    The page's name as another page writes it mid-sentence (``"fetching a block"``).  It
    lives here, not in the notebook's heading: the package ships without the notebooks,
    and the heading is a page title, not a name for running prose.  A page that names
    another reads it from :data:`PAGES` (``Page.title``).
``KEYS``
    The assumption keys the page reads.  Its notebook's ``parameters`` cell must declare
    exactly these (as ``bandwidth_mid`` for ``bandwidth.mid``), with their seed values,
    so that papermill and Jupyter can run the page alone; the build refuses a page whose
    cell and ``KEYS`` disagree.
``numbers(s)``
    Every number the page's prose quotes, by glue name, for a
    :class:`~kvtier.scenario.Scenario` ``s``.  Names carry units (``_us``, ``_ms``,
    ``_gib``, ``_pct``, ``_tokens``).
``TABLES``
    Its tables of record, each ``(name, builder, key columns)`` or ``(name, builder, key
    columns, shown columns)``: ``builder(s)`` returns a DataFrame whose column names carry
    units and whose every column is declared with its header's words and unit
    (:func:`kvtier.report.columns.declare`), written as ``tables/NAME.csv``; the key columns
    identify a row, so that ``kvtier diff`` can match rows of two runs; the shown columns,
    when given, are the ones the page shows first (the rest sit in a details block under
    the table).
``FIGURES``
    Its figures, each ``(glue name, function)``: ``function(s)`` returns the figure, with
    the assumptions footer drawn, and its caption.

and may define ``SCENARIO``, a function of the build's scenario that returns the one the page
presents: the trace pages present the trace priced for ``workload.deployment``
(:func:`kvtier.analysis.priced`).  Its notebook applies it to the scenario of its parameters, and
the registry applies it before the page's numbers, tables and figures, so that the build's
tables of record and the page's notebook show one computation.

The registry finds every module and package of this package by itself: nothing here names a page.
The pipeline writes the tables of record from :data:`PAGES`, ``kvtier diff`` reads their
key columns from it, and the tests derive their lists of pages, numbers and figures
from it.

Pages know the registry, not each other: no page module imports another.  A page that
presents other pages (the measured page counts what the measured set changes on each)
asks for them here, by notebook stem, at call time (:func:`page_of`): the registry
imports no page by name, so it sits below the page modules, and its page list is built
once every page module has been read.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pandas as pd

from kvtier.report.tables import to_csv_text
from kvtier.scenario import Scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MplFigure


@dataclass(frozen=True)
class Table:
    """A table of record: its name, the page that presents it, its builder, its key columns.

    ``key`` names the columns that identify a row, so that two runs can be compared row
    by row (:mod:`kvtier.report.diff`); every other column is a value.
    """

    name: str
    notebook: str
    build: Callable[[Scenario], pd.DataFrame]
    key: tuple[str, ...]
    shown: tuple[str, ...] = ()
    """The columns the page shows first, in order; empty: every column but long text."""


@dataclass(frozen=True)
class Figure:
    """A figure of the book: its glue name (``fig_*``, also its SVG's name) and its function."""

    name: str
    notebook: str
    draw: Callable[[Scenario], tuple[MplFigure, str]]


@dataclass(frozen=True)
class Page:
    """One page of the book: its notebook, its numbers, its tables of record and figures."""

    notebook: str
    """Stem of the page's text notebook, ``notebooks/NOTEBOOK.md``."""
    title: str
    """The page's name as another page writes it mid-sentence (its ``TITLE``)."""
    module: str
    """The page module, ``kvtier.report.pages.NAME``."""
    keys: tuple[str, ...]
    """The assumption keys the page reads (its ``KEYS``)."""
    numbers: Callable[[Scenario], dict[str, Any]]
    """Every number the page's prose quotes, by glue name."""
    tables: tuple[Table, ...]
    figures: tuple[Figure, ...]
    presents: Callable[[Scenario], Scenario]
    """The scenario the page presents, of the build's (its ``SCENARIO``; the build's own by default)."""


def _itself(s: Scenario) -> Scenario:
    """The build's scenario, which a page without ``SCENARIO`` presents."""
    return s


def _page(module: ModuleType) -> Page:
    """The :class:`Page` a page module describes (its ``NOTEBOOK``, ``TITLE``, ``KEYS``, ``numbers``, ``TABLES``,
    ``FIGURES``, and the ``SCENARIO`` it presents where it has one)."""
    missing = [
        name for name in ("NOTEBOOK", "TITLE", "KEYS", "numbers", "TABLES", "FIGURES") if not hasattr(module, name)
    ]
    if missing:
        raise TypeError(f"page module {module.__name__} does not define {', '.join(missing)}")
    notebook = module.NOTEBOOK
    scenario = getattr(module, "SCENARIO", None)

    def of(function: Callable[[Scenario], Any]) -> Any:
        """``function`` of the scenario the page presents."""
        return function if scenario is None else lambda s: function(scenario(s))

    return Page(
        notebook=notebook,
        title=module.TITLE,
        module=module.__name__,
        keys=tuple(module.KEYS),
        numbers=of(module.numbers),
        tables=tuple(
            Table(name, notebook, of(build), tuple(key), *map(tuple, shown))
            for name, build, key, *shown in module.TABLES
        ),
        figures=tuple(Figure(name, notebook, of(draw)) for name, draw in module.FIGURES),
        presents=scenario or _itself,
    )


def _discover() -> tuple[Page, ...]:
    """Every page module of this package, as pages in notebook order; names must not repeat."""
    pages = sorted(
        (_page(importlib.import_module(f"{__name__}.{info.name}")) for info in pkgutil.iter_modules(__path__)),
        key=lambda page: page.notebook,
    )
    for kind, names in (
        ("notebook", [p.notebook for p in pages]),
        ("table", [t.name for p in pages for t in p.tables]),
        ("figure", [f.name for p in pages for f in p.figures]),
    ):
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise TypeError(f"more than one page module claims the {kind}(s) {', '.join(repeated)}")
    return tuple(pages)


def csv_texts(s: Scenario) -> dict[str, str]:
    """The CSV text of every table of record, by name (computing them validates the scenario)."""
    return {table.name: to_csv_text(table.build(s)) for table in _registry("TABLES")}


def page_of(notebook: str) -> Page | None:
    """The page whose text notebook is ``notebooks/NOTEBOOK.md``, or None."""
    return next((page for page in _registry("PAGES") if page.notebook == notebook), None)


def table_of(name: str) -> Table:
    """The table of record ``name`` (``tables/NAME.csv``), whichever page presents it."""
    found = next((table for table in _registry("TABLES") if table.name == name), None)
    if found is None:
        raise KeyError(f"no table of record {name!r}")
    return found


if TYPE_CHECKING:
    PAGES: tuple[Page, ...]
    """Every page of the book with a page module, in notebook order."""
    TABLES: tuple[Table, ...]
    """Every table of record, in page order."""
    FIGURES: tuple[Figure, ...]
    """Every figure of the book, in page order."""


def _registry(name: str) -> tuple[Any, ...]:
    """:data:`PAGES`, :data:`TABLES` or :data:`FIGURES`, the three discovered together the first time one is read
    and kept as the module's names from then on."""
    if name not in globals():
        pages = _discover()
        tables = tuple(table for page in pages for table in page.tables)
        globals().update(PAGES=pages, TABLES=tables, FIGURES=tuple(f for page in pages for f in page.figures))
    return globals()[name]


def __getattr__(name: str) -> Any:
    """:data:`PAGES`, :data:`TABLES` and :data:`FIGURES`, discovered the first time one is read, so that importing
    one page module (``kvtier tiers`` imports its page) imports no other page and none of what they import."""
    if name not in ("PAGES", "TABLES", "FIGURES"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _registry(name)
