"""Diff two sets of tables of record: every cell that changed, and nothing else.

A *source* of tables is either a directory or a git revision:

- a directory holding ``NAME.csv`` files, or whose ``tables/`` (what ``kvtier build
  --out DIR`` writes) or ``book/tables/`` subdirectory holds them;
- a git revision (anything ``git rev-parse --verify REV^{commit}`` accepts), whose
  ``book/tables/*.csv`` are read from the object store with ``git ls-tree`` and
  ``git cat-file``, without a checkout.

An existing directory wins over a revision of the same name.  Tables are bounded before
they are read, from the files' sizes (``st_size``) or the blobs' sizes (``git ls-tree
--long``, the size ``git cat-file -s`` gives): :data:`MAX_TABLE_BYTES` a table,
:data:`MAX_SOURCE_BYTES` and :data:`MAX_TABLES` a source; and while they are parsed,
:data:`MAX_CELLS` a source.  A ``*.csv`` that is not a regular file (a FIFO, a device, a
dangling link; a symbolic link in git) is refused, not skipped.

Cells are kept as the exact text of the CSV.  Rows are matched by the key columns of
:data:`kvtier.report.pages.TABLES` (for a table unknown there, by its first column), a repeated
key by its occurrence; a row's label quotes a key value that could be misread, so no two
rows share a label.  A cell
is numeric when both its old and its new text parse as finite floats; numeric cells are
equal when their float values are equal (``64`` equals ``64.0``), any other cell when
its text is equal.

Every difference is one :class:`Change`: a changed cell, a cell of an added or removed
row or column (the missing side reads :data:`ABSENT`), an added or removed column
(``row == ""``, the present side reads :data:`COLUMN`), or an added or removed table
(``row == column == ""``, the present side reads ``"(N rows)"``).  When nothing
changed, :func:`format_text` and :func:`format_markdown` return ``""`` and
``kvtier diff`` prints nothing and exits 0; otherwise it exits 1, like ``diff(1)``.

:func:`format_text` lists every change with the exact cell text (a character that is not
printable, a terminal's escape included, as its Python escape).  :func:`format_markdown`
(``--format md``, for a pull request) is for reading: the :data:`HEADLINES` before and
after, one line per changed table, then every changed cell folded in a ``<details>``
block, numbers at display precision and SI duplicate columns left out.  Every text that
comes from the tables (a table's, column's or row's name, a cell) is inert there
(:func:`_md`): no link, image, mention, reference, emphasis, code, math, HTML, heading or
new line or cell can come of it.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kvtier.errors import KvtierError, show
from kvtier.inputs.readers import read_text_bounded
from kvtier.units import SIGNIFICANT_DIGITS, format_number

TABLES_DIR = "book/tables"
"""Where the tables of record live in the repository (the git-revision mode reads them here)."""

ABSENT = "(absent)"
"""The old or new side of a cell, column or table that does not exist on that side."""

COLUMN = "(column)"
"""The present side of an added or removed column."""

ROW = "(row)"
"""The present side of an added or removed row that has no value columns to show."""

FORMATS = ("text", "md")


@cache
def _keys() -> dict[str, tuple[str, ...]]:
    """The key columns of every table of record, from the page registry :data:`kvtier.report.pages.TABLES`."""
    # Imported here, not at the top, for start-up time only (there is no cycle: kvtier.report.pages
    # sits below this module): the page modules import pandas and matplotlib, and the cli,
    # which imports this module, must answer `kvtier compare` without loading either.
    from kvtier.report.pages import TABLES

    return {t.name: t.key for t in TABLES}


# ---------------------------------------------------------------------------
# reading tables
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CsvTable:
    """One CSV table as exact text: its header and its data rows (each as long as the header)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


MAX_TABLE_BYTES = 2 << 20
"""Largest table read (bytes): 2 MiB, about 120 times the largest table of record
(``assumptions.csv``, 17.5 kB).  Checked from the file's ``st_size`` or the git blob's size
before anything is read."""

MAX_SOURCE_BYTES = 8 << 20
"""Largest sum of the tables of one source (bytes): 8 MiB, about 100 times all the tables of
record together (29 tables, 78 kB).  Checked, like :data:`MAX_TABLE_BYTES`, before reading."""

MAX_TABLES = 1000
"""Most tables (``*.csv``) in one source: about 35 times the 29 tables of record."""

MAX_CELLS = 100_000
"""Most cells (header included) in all the tables of one source: about 20 times the 5,061 of
the tables of record (the most in one table: 888, in workload_links.csv).  The cells, not the
bytes, set the memory of a diff: two sides at this limit in the worst shape (one column,
every row removed and added: 199,998 changes) need 300 to 350 MiB of address space for
``--format md`` (measured), and tests/test_bad_input_diff.py runs them under a cap of 1 GiB."""

MAX_GIT_LISTING_BYTES = 1 << 20
"""Most bytes of ``git ls-tree`` output read for one revision's tables (about 100 bytes a table)."""

_TOO_MANY_CELLS = f"the tables of one side of a diff may hold at most {MAX_CELLS:,} cells"


def parse_csv(text: str, where: str, max_cells: int = MAX_CELLS) -> CsvTable:
    """Parse CSV ``text`` into cells of exact text; ``where`` names it in errors.

    A table of more than ``max_cells`` cells (header included) is refused at the record
    that passes the limit, so a refused table is never held whole.  Blank lines after the
    header are skipped (and counted in record numbers).
    """
    header: tuple[str, ...] | None = None
    rows: list[tuple[str, ...]] = []
    cells = 0
    try:
        for number, rec in enumerate(csv.reader(io.StringIO(text, newline=""), strict=True), start=1):
            cells += len(rec)
            if cells > max_cells:
                raise KvtierError(f"{where}: refused at record {number:,}: {_TOO_MANY_CELLS}")
            if header is None:
                header = _header(rec, where)
            elif rec:
                if len(rec) != len(header):
                    raise KvtierError(f"{where}: record {number} has {len(rec)} cells, the header has {len(header)}")
                rows.append(tuple(rec))
    except csv.Error as exc:
        raise KvtierError(f"{where}: not valid CSV ({exc})") from None
    return CsvTable(header or (), tuple(rows))


def _header(record: list[str], where: str) -> tuple[str, ...]:
    """The header record as a tuple; a column name that appears twice is refused."""
    dupes = sorted({c for c in record if record.count(c) > 1})
    if dupes:
        raise KvtierError(f"{where}: duplicate column name(s) {', '.join(map(repr, dupes))} in the header")
    return tuple(record)


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KvtierError(f"{where}: table is not UTF-8 text (byte {exc.start})") from None


def _check_sizes(source: str, sizes: Mapping[str, int]) -> None:
    """Refuse a table larger than :data:`MAX_TABLE_BYTES`, or tables larger than :data:`MAX_SOURCE_BYTES`
    together; ``sizes`` maps how each table is named in messages to its size (bytes)."""
    for where, size in sizes.items():
        if size > MAX_TABLE_BYTES:
            raise KvtierError(f"{where}: table is larger than {MAX_TABLE_BYTES:,} bytes ({size:,}); refused")
    total = sum(sizes.values())
    if total > MAX_SOURCE_BYTES:
        raise KvtierError(
            f"{source}: its tables are larger than {MAX_SOURCE_BYTES:,} bytes together ({total:,}); refused"
        )


def _parse_all(texts: Iterator[tuple[str, str, str]]) -> dict[str, CsvTable]:
    """Parse ``(name, where, text)`` in turn into tables by name, within :data:`MAX_CELLS` for them all."""
    out: dict[str, CsvTable] = {}
    budget = MAX_CELLS
    for name, where, text in texts:
        table = parse_csv(text, where, max_cells=budget)
        budget -= len(table.header) * (1 + len(table.rows))
        out[name] = table
    return out


def _csv_entries(directory: Path) -> Iterator[os.DirEntry[str]]:
    """The ``*.csv`` entries of ``directory`` (scanned lazily: a huge directory is never listed whole)."""
    try:
        with os.scandir(directory) as entries:
            yield from (e for e in entries if e.name.endswith(".csv"))
    except OSError as exc:
        raise KvtierError(f"{show(directory)}: cannot list the directory ({exc.strerror})") from None


def _table_dir(root: Path) -> Path | None:
    """The directory under ``root`` that holds the CSVs, or None."""
    for candidate in (root, root / "tables", root / TABLES_DIR):
        if candidate.is_dir() and any(e.is_file() for e in _csv_entries(candidate)):
            return candidate
    return None


def _table_files(directory: Path) -> list[Path]:
    """The ``*.csv`` of ``directory``, sorted, each a regular file (a symbolic link to one is followed)."""
    found: list[Path] = []
    for entry in _csv_entries(directory):
        where = show(entry.path)
        try:
            regular = stat.S_ISREG(os.stat(entry.path).st_mode)
        except OSError as exc:  # a dangling symbolic link, a loop
            raise KvtierError(f"{where}: cannot read table ({exc.strerror})") from None
        if not regular:
            raise KvtierError(f"{where}: table is not a regular file; refused")
        found.append(Path(entry.path))
        if len(found) > MAX_TABLES:
            raise KvtierError(f"{show(directory)}: more than {MAX_TABLES:,} tables (*.csv); refused")
    return sorted(found)


def _load_dir(source: str, root: Path) -> dict[str, CsvTable]:
    directory = _table_dir(root)
    if directory is None:
        raise KvtierError(f"{source}: no tables (*.csv) in this directory, nor in its tables/ or {TABLES_DIR}/")
    paths = _table_files(directory)
    _check_sizes(source, {show(p): p.stat().st_size for p in paths})
    # read_text_bounded reads at most MAX_TABLE_BYTES + 1 bytes: a file that grew since is refused too
    return _parse_all(
        (p.stem, show(p), read_text_bounded(p, "table", MAX_TABLE_BYTES).removeprefix("\ufeff")) for p in paths
    )


def _git(repo: Path, *args: str, limit: int = 1 << 16) -> subprocess.CompletedProcess[bytes] | None:
    """Run ``git -C repo ARGS``; None when git itself is missing.

    At most ``limit + 1`` bytes of its output are read (more means the output was cut and
    git stopped), and at most 4 kB of its error output.
    """
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(["git", "-C", str(repo), *args], stdout=subprocess.PIPE, stderr=errors)
        except OSError:
            return None
        with proc:
            assert proc.stdout is not None  # stdout=PIPE
            out = proc.stdout.read(limit + 1)
            if len(out) > limit:
                proc.kill()
        errors.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, errors.read(4096))


def _default_repo() -> Path | None:
    proc = _git(Path.cwd(), "rev-parse", "--show-toplevel")
    if proc is None or proc.returncode != 0:
        return None
    return Path(proc.stdout.decode().strip())


def _resolve_commit(rev: str, repo: Path | None) -> tuple[Path, str] | None:
    """The (repo, commit id) ``rev`` names, or None when it names no commit."""
    if not rev or rev.startswith("-"):
        return None
    repo = repo if repo is not None else _default_repo()
    if repo is None:
        return None
    proc = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if proc is None or proc.returncode != 0:
        return None
    return repo, proc.stdout.decode().strip()


@dataclass(frozen=True)
class _Blob:
    """A table in git: its object id and its size (bytes, as ``git cat-file -s`` gives it)."""

    obj: str
    size: int


def _list_git(source: str, repo: Path, commit: str) -> dict[str, _Blob]:
    """The tables under :data:`TABLES_DIR` at ``commit``, by name, with their sizes (``git ls-tree --long``)."""
    listing = f"{TABLES_DIR}/ at commit {commit[:12]}"
    proc = _git(repo, "ls-tree", "-z", "--long", "--full-tree", commit, "--", f"{TABLES_DIR}/",
                limit=MAX_GIT_LISTING_BYTES)  # fmt: skip
    if proc is not None and len(proc.stdout) > MAX_GIT_LISTING_BYTES:
        raise KvtierError(f"{source}: {listing} lists more than {MAX_GIT_LISTING_BYTES:,} bytes of entries; refused")
    if proc is None or proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip() if proc is not None else "git not found"
        raise KvtierError(f"{source}: cannot list {listing} ({show(err)})")
    blobs: dict[str, _Blob] = {}
    for entry in proc.stdout.decode("utf-8", errors="surrogateescape").split("\0"):
        meta, _, path = entry.partition("\t")
        name = path.rsplit("/", 1)[-1]
        if not name.endswith(".csv"):
            continue
        mode, kind, obj, size = meta.split()
        if kind != "blob":  # a submodule or a directory named *.csv
            continue
        if mode == "120000":
            raise KvtierError(f"{source}:{show(path)}: table is a symbolic link in git; refused")
        blobs[name[: -len(".csv")]] = _Blob(obj, int(size))
        if len(blobs) > MAX_TABLES:
            raise KvtierError(f"{source}: more than {MAX_TABLES:,} tables in {listing}; refused")
    return blobs


def _load_git(source: str, repo: Path, commit: str) -> dict[str, CsvTable]:
    blobs = _list_git(source, repo, commit)
    if not blobs:
        raise KvtierError(f"{source}: no tables ({TABLES_DIR}/*.csv) at commit {commit[:12]} in {show(repo)}")
    where = {name: f"{source}:{TABLES_DIR}/{show(name)}.csv" for name in blobs}
    _check_sizes(source, {where[name]: blob.size for name, blob in blobs.items()})

    def texts() -> Iterator[tuple[str, str, str]]:
        for name in sorted(blobs):
            shown = _git(repo, "cat-file", "blob", blobs[name].obj, limit=blobs[name].size)
            if shown is None or shown.returncode != 0 or len(shown.stdout) != blobs[name].size:
                raise KvtierError(f"{where[name]}: cannot read from git")
            yield name, where[name], _decode(shown.stdout, where[name])

    return _parse_all(texts())


def load_tables(source: str, repo: Path | None = None) -> dict[str, CsvTable]:
    """Every table of ``source`` (a directory or a git revision), by name, as exact text.

    ``repo`` is the git repository for a revision (default: the toplevel of the current
    directory's repository).  Raises :class:`KvtierError` naming ``source`` when it is
    neither, or when it holds no tables.
    """
    path = Path(source)
    shown = show(source)  # messages name the source on one line, whatever it holds
    if source and path.is_dir():
        return _load_dir(shown, path)
    resolved = _resolve_commit(source, Path(repo) if repo is not None else None)
    if resolved is None:
        where = f" in {show(repo)}" if repo is not None else ""
        raise KvtierError(f"{shown}: not a directory of tables nor a git revision{where}")
    return _load_git(shown, *resolved)


# ---------------------------------------------------------------------------
# comparing tables
# ---------------------------------------------------------------------------


def _number(text: str) -> float | None:
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
        if _number(self.old) is not None and _number(self.new) is not None:
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
    a, b = _number(old), _number(new)
    if a is not None and b is not None:
        if a == b:
            return None
        return Change(table, row, column, old, new, (b - a) / abs(a) if a != 0 else None)
    return None if old == new else Change(table, row, column, old, new, None)


def _diff_table(name: str, old: CsvTable, new: CsvTable) -> Iterator[Change]:
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


# ---------------------------------------------------------------------------
# formatting
# ---------------------------------------------------------------------------

_HEADER = ("table", "row", "column", "old", "new", "change")


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
    table, row, column = (show(x, limit=sys.maxsize) for x in (c.table, c.row, c.column))
    return (table, row, column, _show(c.old), _show(c.new), format_rel(c))


def format_text(changes: Sequence[Change]) -> str:
    """An aligned plain-text table of ``changes``; ``""`` when there are none."""
    if not changes:
        return ""
    rows = [_HEADER, *(_cells(c) for c in changes)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    right = {5}

    def line(r: Sequence[str]) -> str:
        parts = [r[i].rjust(w) if i in right else r[i].ljust(w) for i, w in enumerate(widths)]
        return "  ".join(parts).rstrip()

    out = [line(rows[0]), line(["-" * w for w in widths])]
    out += [line(r) for r in rows[1:]]
    return "\n".join(out) + "\n"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _summary_parts(changes: Sequence[Change]) -> list[str]:
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
    parts = [f"{_plural(kinds.count('number'), 'number')} changed"]
    if n := kinds.count("text"):
        parts.append(f"{_plural(n, 'text cell')} changed")
    for what in ("row", "column", "table"):
        for how in ("added", "removed"):
            n = len(rows[how]) if what == "row" else kinds.count(f"{what} {how}")
            if n:
                parts.append(f"{_plural(n, what)} {how}")
    return parts


def summary(changes: Sequence[Change]) -> str:
    """One line: ``"N numbers changed in M tables"``, plus any other kinds of change."""
    tables = len({c.table for c in changes})
    return f"{', '.join(_summary_parts(changes))} in {_plural(tables, 'table')}"


# ---------------------------------------------------------------------------
# the Markdown form: headline numbers, one line per table, every cell folded away
# ---------------------------------------------------------------------------

DISPLAY_DIGITS = SIGNIFICANT_DIGITS
"""Significant figures of a number in the Markdown form (more where old and new would read alike)."""

ILLUSTRATIVE = ("ratio", (("illustrative", "True"),))
"""The illustrative point: the row of ``ratio.csv`` marked illustrative.  A headline's row
condition may name its brackets, ``{bandwidth_bracket}`` or ``{mfu_bracket}``, filled from
this row on the same side."""


@dataclass(frozen=True)
class Headline:
    """A headline number: ``column`` of the first row of ``table`` that meets every ``row`` condition.

    ``row`` holds (column, value) pairs.  With ``count`` set, the value is instead how many
    of the rows meeting ``row`` have ``count`` in ``column``, as ``"k of n"``.  ``shown``
    maps a cell's text to what the comment shows.  A headline that neither side's tables
    have (no such table, column or row) is left out.
    """

    label: str
    table: str
    row: tuple[tuple[str, str], ...]
    column: str
    shown: tuple[tuple[str, str], ...] = ()
    count: str | None = None


_AT_POINT = ILLUSTRATIVE[1]
_ROOFLINE_AT_POINT = (("device", "this assumption set"), ("mfu_bracket", "{mfu_bracket}"))

HEADLINES: tuple[Headline, ...] = (
    # The deployment every number below assumes: the model placed across accelerators (assumptions.csv's
    # parallel.* rows; tables of record older than the placement keys have none, and those lines are left out).
    Headline("deployment: tensor-parallel size (parallel.tp)", "assumptions", (("key", "parallel.tp"),), "value"),
    Headline("deployment: pipeline-parallel size (parallel.pp)", "assumptions", (("key", "parallel.pp"),), "value"),
    Headline("deployment: expert-parallel size (parallel.ep)", "assumptions", (("key", "parallel.ep"),), "value"),
    Headline("deployment: accelerators sharing one link (parallel.gpus_per_link)", "assumptions",
             (("key", "parallel.gpus_per_link"),), "value"),
    # The decision (the landing page): how many tiers fetch faster, in each regime and layout, and the closest call.
    Headline("tiers that fetch faster than a lone block regenerates, one copy", "decision",
             (("regime", "lone block"), ("layout", "contiguous")), "fetch_wins", count="True"),
    Headline("tiers that fetch faster than a block regenerates in a batch, one copy", "decision",
             (("regime", "in batch"), ("layout", "contiguous")), "fetch_wins", count="True"),
    Headline("tiers that fetch faster than a lone block regenerates, a copy per layer chunk", "decision",
             (("regime", "lone block"), ("layout", "per-layer")), "fetch_wins", count="True"),
    Headline("tiers that fetch faster than a block regenerates in a batch, a copy per layer chunk", "decision",
             (("regime", "in batch"), ("layout", "per-layer")), "fetch_wins", count="True"),
    Headline("closest call: the tier", "decision_margins", (), "tier"),
    Headline("closest call: regeneration / fetch", "decision_margins", (), "ratio"),
    Headline("LRU host-DRAM tier for 90 % of the achievable hits (GiB)", "cost_lru",
             (("target", "90%"), ("tier", "pcie5-x16")), "capacity_GiB"),
    Headline("its net saving against recomputing in a batch (USD/h)", "cost_lru",
             (("target", "90%"), ("tier", "pcie5-x16")), "saved_batch_usd_per_h"),
    # The ratio for each regeneration regime: ratio.csv carries the chapter's compute-only (in-batch)
    # regime in `ratio` and the lone block's roofline regime in `lone_ratio`; roofline.csv's lone-block
    # regeneration time is shown below, beside the compute-only time.
    Headline("ratio, regeneration / fetch (compute-only regeneration: the chapter's in-batch model)", "ratio",
             _AT_POINT, "ratio"),
    # The verdict on the source chapter's "two to three orders of magnitude" (100x to 1000x).
    Headline("ratio within the chapter's two to three orders of magnitude", "ratio", _AT_POINT, "within_claim",
             shown=(("True", "yes"), ("False", "no"))),
    Headline("bracket combinations within the chapter's claim", "ratio", (), "within_claim", count="True"),
    # the lone-block regime: the block's tokens are the whole forward pass (roofline on the set's device)
    Headline("ratio, regeneration / fetch (lone block: roofline on the set's device)", "ratio", _AT_POINT,
             "lone_ratio"),
    Headline("bracket combinations within the chapter's claim, lone block", "ratio", (), "lone_within_claim",
             count="True"),
    Headline("Monte Carlo draws below 100x (%)", "uncertainty", (("statistic", "below_100x"),), "value"),
    Headline("Monte Carlo draws below 100x, lone block (%)", "uncertainty",
             (("statistic", "lone_block_below_100x"),), "value"),
    Headline("Monte Carlo draws above 1000x (%)", "uncertainty", (("statistic", "above_1000x"),), "value"),
    Headline("break-even bandwidth, tail block (GB/s)", "tiers", (("link", "bracket {bandwidth_bracket}"),),
             "break_even_tail_GBps"),
    Headline("fetch (µs)", "ratio", _AT_POINT, "fetch_us"),
    Headline("regeneration, compute only (ms)", "ratio", _AT_POINT, "regen_ms"),
    Headline("regeneration of a lone block under the roofline (ms)", "roofline", _ROOFLINE_AT_POINT,
             "lone_block_ms"),
)  # fmt: skip
"""What a reviewer decides on, in the order the comment shows it; single cells are at the illustrative point."""

SI_SUFFIX = "_si"
"""A page module names a column ``X_si`` when it restates column ``X`` in SI base units
(``value_si`` beside ``value`` in assumptions.csv, with its unit in ``unit_si``)."""


def _rows_by_column(table: CsvTable) -> Iterator[dict[str, str]]:
    for row in table.rows:
        yield dict(zip(table.header, row, strict=True))


def _first_row(table: CsvTable | None, conditions: Sequence[tuple[str, str]]) -> dict[str, str] | None:
    if table is None or any(c not in table.header for c, _ in conditions):
        return None
    return next((r for r in _rows_by_column(table) if all(r[c] == v for c, v in conditions)), None)


def headline_value(tables: Mapping[str, CsvTable], headline: Headline) -> str | None:
    """The text of ``headline``'s cell in ``tables``, or None when they do not have it."""
    point = _first_row(tables.get(ILLUSTRATIVE[0]), ILLUSTRATIVE[1]) or {}
    try:
        conditions = [(c, v.format_map(point)) for c, v in headline.row]
    except KeyError:  # the condition names the illustrative point, and there is none
        return None
    table = tables.get(headline.table)
    if table is None or any(c not in table.header for c, _ in [*conditions, (headline.column, "")]):
        return None
    rows = [r for r in _rows_by_column(table) if all(r[c] == v for c, v in conditions)]
    if headline.count is not None:
        return f"{sum(r[headline.column] == headline.count for r in rows)} of {len(rows)}" if rows else None
    return rows[0][headline.column] if rows else None


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
    return "| " + " | ".join(cells) + " |"


def _headline_cell(text: str | None, shown: Mapping[str, str]) -> str:
    if text is None:
        return ABSENT
    if _number(text) is not None:
        return display_number(text)
    return shown.get(text, text or "n/a")


def _headline_lines(old: Mapping[str, CsvTable], new: Mapping[str, CsvTable]) -> list[str]:
    lines = []
    for h in HEADLINES:
        a, b = headline_value(old, h), headline_value(new, h)
        if a is None and b is None:
            continue
        before, after = _headline_cell(a, dict(h.shown)), _headline_cell(b, dict(h.shown))
        x, y = (_number(a) if a is not None else None), (_number(b) if b is not None else None)
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
    points = [_first_row(t.get(ILLUSTRATIVE[0]), ILLUSTRATIVE[1]) for t in (old, new)]
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
    lines = [f"**{summary(changes)}**", "", "| table | cells changed | largest relative change |", "|:--|:--|:--|"]
    for name in dict.fromkeys(c.table for c in changes):
        mine = [c for c in changes if c.table == name]
        parts = _summary_parts(mine)
        kinds = [p for p in parts if not p.startswith("0 ")]
        count = f"{len(mine)}" if kinds == parts[:1] else f"{len(mine)}: {', '.join(kinds)}"
        lines.append(_row([_md(name), count, _largest(mine)]))
    return lines


def _detail_cells(c: Change) -> tuple[str, ...]:
    if c.kind == "number":
        old, new = display_pair(c.old, c.new)
    else:
        old, new = ((display_number(t) if _number(t) is not None else t or '""') for t in (c.old, c.new))
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
        note = f"; {_plural(len(hidden), 'cell')} of SI duplicate columns ({cols}) left out"
    out += [
        f"<details><summary>All {_plural(len(shown), 'changed cell')},"
        f" numbers to {DISPLAY_DIGITS} significant figures{_html(note)}</summary>",
        "",
    ]
    if shown:
        out += [_row(_HEADER), "|:--|:--|:--|--:|--:|--:|"]
        out += [_row([_md(x) for x in _detail_cells(c)]) for c in shown]
        out.append("")
    out.append("</details>")
    return "\n".join(out) + "\n"
