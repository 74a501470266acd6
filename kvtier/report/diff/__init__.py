"""``kvtier diff``: two sets of tables of record compared, every cell that changed and nothing else.

A source of tables is a directory or a git revision; when nothing changed, both forms are
``""`` and ``kvtier diff`` prints nothing and exits 0, otherwise it exits 1, like ``diff(1)``.
One module per job:

- :mod:`.loading`, the tables of a directory or a git revision, bounded, as cells of exact text;
- :mod:`.changes`, every difference between two sets of tables, one :class:`Change` each;
- :mod:`.text`, the text form (``--format text``) and the changes counted in words;
- :mod:`.headlines`, the headline numbers a reviewer decides on, and where each is found;
- :mod:`.markdown`, the Markdown form for a pull request (``--format md``), every table's text inert.

The names the command and the tests use are re-exported here (``from kvtier.report import diff``).
"""

from __future__ import annotations

from kvtier.report.diff.changes import ABSENT, COLUMN, ROW, Change, diff_tables
from kvtier.report.diff.headlines import HEADLINES, ILLUSTRATIVE, Headline, headline_value
from kvtier.report.diff.loading import (
    MAX_CELLS,
    MAX_GIT_LISTING_BYTES,
    MAX_SOURCE_BYTES,
    MAX_TABLE_BYTES,
    MAX_TABLES,
    TABLES_DIR,
    CsvTable,
    load_tables,
    parse_csv,
)
from kvtier.report.diff.markdown import (
    DISPLAY_DIGITS,
    SI_SUFFIX,
    display_number,
    display_pair,
    format_markdown,
    si_columns,
)
from kvtier.report.diff.text import FORMATS, format_rel, format_text, summary

__all__ = [
    "ABSENT",
    "COLUMN",
    "DISPLAY_DIGITS",
    "FORMATS",
    "HEADLINES",
    "ILLUSTRATIVE",
    "MAX_CELLS",
    "MAX_GIT_LISTING_BYTES",
    "MAX_SOURCE_BYTES",
    "MAX_TABLES",
    "MAX_TABLE_BYTES",
    "ROW",
    "SI_SUFFIX",
    "TABLES_DIR",
    "Change",
    "CsvTable",
    "Headline",
    "diff_tables",
    "display_number",
    "display_pair",
    "format_markdown",
    "format_rel",
    "format_text",
    "headline_value",
    "load_tables",
    "parse_csv",
    "si_columns",
    "summary",
]
