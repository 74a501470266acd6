"""The Markdown form of a diff, for a pull request: headlines, a line per table, every cell folded, all inert.

:func:`format_markdown` (``--format md``) is for reading: the :data:`~kvtier.report.diff.headlines.HEADLINES`
before and after, one line per changed table, then every changed cell folded in a ``<details>``
block, numbers at display precision and SI duplicate columns left out.  Every text that comes
from the tables (a table's, column's or row's name, a cell) is inert there (:func:`_md`): no
link, image, mention, reference, emphasis, code, math, HTML, heading or new line or cell can
come of it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence

from kvtier.errors import show
from kvtier.report.diff.changes import ABSENT, Change, as_number
from kvtier.report.diff.headlines import HEADLINES, ILLUSTRATIVE, first_row, headline_value
from kvtier.report.diff.loading import CsvTable
from kvtier.report.diff.text import HEADER, format_rel, plural, summary, summary_parts
from kvtier.units import SIGNIFICANT_DIGITS, format_number

DISPLAY_DIGITS = SIGNIFICANT_DIGITS
"""Significant figures of a number in the Markdown form (more where old and new would read alike)."""

SI_SUFFIX = "_si"
"""A page module names a column ``X_si`` when it restates column ``X`` in SI base units
(``value_si`` beside ``value`` in assumptions.csv, with its unit in ``unit_si``)."""


def si_columns(tables: Mapping[str, CsvTable], name: str) -> set[str]:
    """The SI duplicate columns of table ``name`` in ``tables``: every ``*_si`` column of a table in
    which some ``X_si`` restates a column ``X`` (so ``unit_si``, the unit of ``value_si``, goes too)."""
    table = tables.get(name)
    if table is None:
        return set()
    si = {c for c in table.header if c.endswith(SI_SUFFIX)}
    return si if any(c[: -len(SI_SUFFIX)] in table.header for c in si) else set()


def display_number(text: str, digits: int = DISPLAY_DIGITS) -> str:
    """A numeric cell for reading, by the book's one rule (:func:`kvtier.units.format_number`)."""
    return format_number(text, digits)


def display_pair(old: str, new: str) -> tuple[str, str]:
    """Two numeric cells at :data:`DISPLAY_DIGITS` significant figures, or more where that would
    show two different numbers alike (``0.29252`` and ``0.29253``, not ``0.2925`` twice)."""
    a, b = display_number(old), display_number(new)
    digits = DISPLAY_DIGITS
    while float(a.replace(",", "")) == float(b.replace(",", "")) and float(old) != float(new) and digits < 17:
        digits += 1
        a, b = display_number(old, digits), display_number(new, digits)
    return a, b


_NEWLINE = re.compile("\r\n|[\n\r\x85\u2028\u2029]")
"""Every line break a renderer or an editor may honour: CommonMark's (LF, CR, CR LF) and Unicode's."""

_ZWSP = "\u200b"
"""A zero-width space (written ``&#8203;``): invisible, and no name, number, scheme or domain
continues across it.  GitHub finds mentions, ``#123`` and autolinks in the *rendered* text,
after character references are decoded, so ``&#64;octocat`` would still mention; a zero-width
space after the ``@`` is what Renovate writes into its pull requests for GitHub (``@&#8203;``,
``#&#8203;123``), and it renders as plain text."""

_GITHUB_LINKS = re.compile(r"(?=@)|(?<=[@#])|(?<=/)(?=/)|(?<=[Gg][Hh]-)(?=\d)|(?<=[Ww]{3})(?=\.)|(?<=:)(?=[\w+-])")
"""Where a zero-width space goes so that GitHub links nothing: on both sides of ``@`` (a
mention, ``user@sha``, an e-mail autolink), after ``#`` (``#123``, ``owner/repo#123``),
between two slashes (``http://``, ``//host``), in ``GH-12`` before the digits, in ``www.``
before the dot, and after a colon that a word follows (an emoji shortcode, ``:+1:``)."""

_LINK_CHARS = frozenset("@#/.:-")
"""The characters without one of which :data:`_GITHUB_LINKS` finds nothing."""

_MD_ESCAPES = {
    **{c: "\\" + c for c in "\\`*_[]!|~"},
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "$": "&#36;",
    _ZWSP: "&#8203;",
}
"""How each character that can start Markdown syntax is written in a cell: backslash-escaped
(escape, code span, emphasis, strikethrough, link or image, table cell), or as an HTML
character reference (``&``, ``<`` and ``>``, which also start raw HTML and autolinks; ``$``,
which starts GitHub's math: GitHub's own advice for a literal dollar beside math is HTML, not a
backslash, and a character reference is never a delimiter)."""

_HTML_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "$": "&#36;", _ZWSP: "&#8203;"}
"""The same for text inside an HTML block (the ``<summary>`` line), where Markdown is not read
(``$`` too, so that no dollar reaches GitHub's math from anywhere in the comment)."""


def _visible(text: str) -> str:
    """User ``text`` on one line, as it reads: every line break as ``↵``, every other character that
    is not printable as its Python escape (``\x1b``), GitHub's links broken (:data:`_GITHUB_LINKS`)."""
    if not text.isprintable():  # (fast tests first: most cells need nothing)
        text = show(_NEWLINE.sub("↵", text), limit=sys.maxsize)
    return text if _LINK_CHARS.isdisjoint(text) else _GITHUB_LINKS.sub(_ZWSP, text)


_MD_CHARS = frozenset(_MD_ESCAPES)
_MD_SPECIAL = re.compile("[" + re.escape("".join(_MD_ESCAPES)) + "]")


def _md_char(match: re.Match[str]) -> str:
    """One character of :data:`_MD_ESCAPES`, escaped; an underscore between two letters or digits
    stays as it is (it can neither open nor close emphasis: ``fetch_us``)."""
    c, text, at = match.group(), match.string, match.start()
    if c == "_" and 0 < at < len(text) - 1 and text[at - 1].isalnum() and text[at + 1].isalnum():
        return c
    return _MD_ESCAPES[c]


def _md(text: str) -> str:
    """User text for a Markdown table cell or line, inert: no link, image, mention, reference,
    emphasis, code, math, HTML or heading can come of it, nor a new line or a new cell."""
    text = _visible(text)
    return text if _MD_CHARS.isdisjoint(text) else _MD_SPECIAL.sub(_md_char, text)


def _html(text: str) -> str:
    """User text inside an HTML block of the Markdown form (the ``<details>`` summary): inert too."""
    return _visible(text).translate(str.maketrans(_HTML_ESCAPES))


def _row(cells: Sequence[str]) -> str:
    """``cells`` as one row of a Markdown table."""
    return "| " + " | ".join(cells) + " |"


def _headline_cell(text: str | None, shown: Mapping[str, str]) -> str:
    """A headline's value for the comment: absent, a number at display precision, or its text as shown."""
    if text is None:
        return ABSENT
    if as_number(text) is not None:
        return display_number(text)
    return shown.get(text, text or "n/a")


def _headline_lines(old: Mapping[str, CsvTable], new: Mapping[str, CsvTable]) -> list[str]:
    """The headline section: each headline either side has, before and after, at the illustrative point."""
    lines = []
    for h in HEADLINES:
        a, b = headline_value(old, h), headline_value(new, h)
        if a is None and b is None:
            continue
        before, after = _headline_cell(a, dict(h.shown)), _headline_cell(b, dict(h.shown))
        x, y = (as_number(a) if a is not None else None), (as_number(b) if b is not None else None)
        if a is None or b is None:
            change = "added" if a is None else "removed"
        elif x is not None and y is not None:
            change = "unchanged"
            if x != y:
                before, after = display_pair(a, b)
                change = format_rel(Change(h.table, "", h.column, a, b, (y - x) / abs(x) if x else None))
        else:
            change = "unchanged" if a == b else "changed"
        lines.append(_row([_md(h.label), _md(before), _md(after), change]))
    if not lines:
        return []
    points = [first_row(t.get(ILLUSTRATIVE[0]), ILLUSTRATIVE[1]) for t in (old, new)]
    said = [f"{p.get('bandwidth_bracket', '?')} bandwidth, {p.get('mfu_bracket', '?')} MFU" for p in points if p]
    where = f" at the illustrative point ({' → '.join(dict.fromkeys(said))})" if said else ""
    return [f"**Headline numbers**{_md(where)}", "", "| | before | after | change |", "|:--|--:|--:|--:|", *lines]


def _largest(changes: Sequence[Change]) -> str:
    """The largest relative change among ``changes`` and where it is (the first of equals, in order)."""
    numbers = [c for c in changes if c.kind == "number"]
    top = max((abs(c.rel_change) for c in numbers if c.rel_change is not None), default=None)
    if top is None:  # no number, or only numbers that were zero before
        pick = numbers[0] if numbers else None
    else:  # the first of those equal up to the CSVs' 10 significant figures
        pick = next(c for c in numbers if c.rel_change is not None and abs(c.rel_change) >= top * (1 - 1e-6))
    if pick is None:
        return "—"
    return f"{format_rel(pick)} ({_md(pick.column)} at {_md(pick.row)})"


def _table_lines(changes: Sequence[Change]) -> list[str]:
    """The summary line and the table of changed tables: each one's cells changed and largest change."""
    lines = [f"**{summary(changes)}**", "", "| table | cells changed | largest relative change |", "|:--|:--|:--|"]
    for name in dict.fromkeys(c.table for c in changes):
        mine = [c for c in changes if c.table == name]
        parts = summary_parts(mine)
        kinds = [p for p in parts if not p.startswith("0 ")]
        count = f"{len(mine)}" if kinds == parts[:1] else f"{len(mine)}: {', '.join(kinds)}"
        lines.append(_row([_md(name), count, _largest(mine)]))
    return lines


def _detail_cells(c: Change) -> tuple[str, ...]:
    """A change's cells for the folded list: numbers at display precision, an empty text as ``""``."""
    if c.kind == "number":
        old, new = display_pair(c.old, c.new)
    else:
        old, new = ((display_number(t) if as_number(t) is not None else t or '""') for t in (c.old, c.new))
    return (c.table, c.row, c.column, old, new, format_rel(c))


def format_markdown(
    changes: Sequence[Change],
    old: Mapping[str, CsvTable] | None = None,
    new: Mapping[str, CsvTable] | None = None,
) -> str:
    """The diff for a pull request (GitHub-flavoured Markdown); ``""`` when nothing changed.

    It opens with the :data:`HEADLINES`, before and after (given the two sets of tables
    ``old`` and ``new``); then one line per changed table: its cells changed and its
    largest relative change; then every changed cell inside a collapsed ``<details>``
    block, numbers at :data:`DISPLAY_DIGITS` significant figures.  SI duplicate columns
    (:func:`si_columns`) are left out of the lines and the list, and said so.
    """
    if not changes:
        return ""
    old, new = old or {}, new or {}
    dropped = {name: si_columns(old, name) | si_columns(new, name) for name in {c.table for c in changes}}
    shown = [c for c in changes if c.column not in dropped[c.table]]
    hidden = [c for c in changes if c.column in dropped[c.table]]
    out = _headline_lines(old, new)
    if out:
        out.append("")
    if shown:
        out += _table_lines(shown)
        out.append("")
    note = ""
    if hidden:
        cols = ", ".join(sorted({c.column for c in hidden}))
        note = f"; {plural(len(hidden), 'cell')} of SI duplicate columns ({cols}) left out"
    out += [
        f"<details><summary>All {plural(len(shown), 'changed cell')},"
        f" numbers to {DISPLAY_DIGITS} significant figures{_html(note)}</summary>",
        "",
    ]
    if shown:
        out += [_row(HEADER), "|:--|:--|:--|--:|--:|--:|"]
        out += [_row([_md(x) for x in _detail_cells(c)]) for c in shown]
        out.append("")
    out.append("</details>")
    return "\n".join(out) + "\n"
