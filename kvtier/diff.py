"""Diff two sets of tables of record: every cell that changed, and nothing else.

A *source* of tables is either a directory or a git revision:

- a directory holding ``NAME.csv`` files, or whose ``tables/`` (what ``kvtier build
  --out DIR`` writes) or ``book/tables/`` subdirectory holds them;
- a git revision (anything ``git rev-parse --verify REV^{commit}`` accepts), whose
  ``book/tables/*.csv`` are read from the object store with ``git ls-tree`` and
  ``git cat-file``, without a checkout.

An existing directory wins over a revision of the same name.

Cells are kept as the exact text of the CSV.  Rows are matched by the key columns of
:data:`kvtier.tables.TABLES` (for a table unknown there, by its first column), a repeated
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
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kvtier.errors import KvtierError
from kvtier.tables import TABLES

TABLES_DIR = "book/tables"
"""Where the tables of record live in the repository (the git-revision mode reads them here)."""

ABSENT = "(absent)"
"""The old or new side of a cell, column or table that does not exist on that side."""

COLUMN = "(column)"
"""The present side of an added or removed column."""

ROW = "(row)"
"""The present side of an added or removed row that has no value columns to show."""

FORMATS = ("text", "md")

_KEYS: dict[str, tuple[str, ...]] = {t.name: t.key for t in TABLES}


# ---------------------------------------------------------------------------
# reading tables
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CsvTable:
    """One CSV table as exact text: its header and its data rows (each as long as the header)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def parse_csv(text: str, where: str) -> CsvTable:
    """Parse CSV ``text`` into cells of exact text; ``where`` names it in errors."""
    try:
        records = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        raise KvtierError(f"{where}: not valid CSV ({exc})") from None
    if not records:
        return CsvTable((), ())
    header = tuple(records[0])
    dupes = sorted({c for c in header if header.count(c) > 1})
    if dupes:
        raise KvtierError(f"{where}: duplicate column name(s) {', '.join(map(repr, dupes))} in the header")
    rows = []
    for lineno, rec in enumerate(records[1:], start=2):
        if not rec:  # a blank line
            continue
        if len(rec) != len(header):
            raise KvtierError(f"{where}: record {lineno} has {len(rec)} cells, the header has {len(header)}")
        rows.append(tuple(rec))
    return CsvTable(header, tuple(rows))


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KvtierError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _table_dir(root: Path) -> Path | None:
    """The directory under ``root`` that holds the CSVs, or None."""
    for candidate in (root, root / "tables", root / TABLES_DIR):
        if candidate.is_dir() and any(p.is_file() for p in candidate.glob("*.csv")):
            return candidate
    return None


def _load_dir(source: str, root: Path) -> dict[str, CsvTable]:
    directory = _table_dir(root)
    if directory is None:
        raise KvtierError(f"{source}: no tables (*.csv) in this directory, nor in its tables/ or {TABLES_DIR}/")
    out = {}
    for path in sorted(p for p in directory.glob("*.csv") if p.is_file()):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise KvtierError(f"{path}: cannot read ({exc.strerror})") from None
        out[path.stem] = parse_csv(_decode(data, str(path)), str(path))
    return out


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    """Run ``git -C repo ARGS``; None when git itself is missing."""
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    except OSError:
        return None


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


def _load_git(source: str, repo: Path, commit: str) -> dict[str, CsvTable]:
    proc = _git(repo, "ls-tree", "-z", "--full-tree", commit, "--", f"{TABLES_DIR}/")
    if proc is None or proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip() if proc is not None else "git not found"
        raise KvtierError(f"{source}: cannot list {TABLES_DIR}/ at commit {commit[:12]} ({err})")
    blobs: dict[str, str] = {}
    for entry in proc.stdout.decode("utf-8", errors="surrogateescape").split("\0"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        _mode, kind, obj = meta.split()
        name = path.rsplit("/", 1)[-1]
        if kind == "blob" and name.endswith(".csv"):
            blobs[name[: -len(".csv")]] = obj
    if not blobs:
        raise KvtierError(f"{source}: no tables ({TABLES_DIR}/*.csv) at commit {commit[:12]} in {repo}")
    out = {}
    for name in sorted(blobs):
        where = f"{source}:{TABLES_DIR}/{name}.csv"
        shown = _git(repo, "cat-file", "blob", blobs[name])
        if shown is None or shown.returncode != 0:
            raise KvtierError(f"{where}: cannot read from git")
        out[name] = parse_csv(_decode(shown.stdout, where), where)
    return out


def load_tables(source: str, repo: Path | None = None) -> dict[str, CsvTable]:
    """Every table of ``source`` (a directory or a git revision), by name, as exact text.

    ``repo`` is the git repository for a revision (default: the toplevel of the current
    directory's repository).  Raises :class:`KvtierError` naming ``source`` when it is
    neither, or when it holds no tables.
    """
    path = Path(source)
    if source and path.is_dir():
        return _load_dir(source, path)
    resolved = _resolve_commit(source, Path(repo) if repo is not None else None)
    if resolved is None:
        where = f" in {repo}" if repo is not None else ""
        raise KvtierError(f"{source}: not a directory of tables nor a git revision{where}")
    return _load_git(source, *resolved)


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
    known = _KEYS.get(name)
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
    """A cell for display: empty reads ``""``, line breaks are escaped."""
    if text == "":
        return '""'
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _cells(c: Change) -> tuple[str, ...]:
    return (c.table, c.row, c.column, _show(c.old), _show(c.new), format_rel(c))


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


def summary(changes: Sequence[Change]) -> str:
    """One line: ``"N numbers changed in M tables"``, plus any other kinds of change."""
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
    tables = len({c.table for c in changes})
    return f"{', '.join(parts)} in {_plural(tables, 'table')}"


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def format_markdown(changes: Sequence[Change]) -> str:
    """A GitHub-flavoured Markdown table for a pull-request comment; ``""`` when none."""
    if not changes:
        return ""
    out = [f"### {summary(changes)}", "", "| " + " | ".join(_HEADER) + " |", "|:--|:--|:--|:--|:--|--:|"]
    out += ["| " + " | ".join(_md(x) for x in _cells(c)) + " |" for c in changes]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# command line: kvtier diff A B
# ---------------------------------------------------------------------------


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``diff A B [--format text|md] [--repo PATH]`` on ``subparsers``."""
    p = subparsers.add_parser(
        "diff",
        help="every number that changed between two sets of tables (directories or git revisions)",
        description="Print every cell of the tables of record that differs between A and B, and nothing"
        " else. Exit status: 0 when nothing changed, 1 when something did, 2 on error.",
    )
    p.add_argument(
        "old",
        metavar="A",
        help=f"directory of tables (or with tables/ inside), or a git revision (reads {TABLES_DIR}/)",
    )
    p.add_argument("new", metavar="B", help="the same, for the new side")
    p.add_argument("--format", choices=FORMATS, default="text", help="text (default) or md (a PR comment)")
    p.add_argument(
        "--numbers-only",
        action="store_true",
        help="leave out changed text cells (basis, source, provenance, labels) and added or removed rows",
    )
    p.add_argument("--repo", metavar="PATH", type=Path, help="git repository for revisions (default: the current one)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Print the diff of ``args.old`` against ``args.new``; return 0 if none, 1 if any."""
    repo = getattr(args, "repo", None)
    old = load_tables(args.old, repo)
    new = load_tables(args.new, repo)
    changes = diff_tables(old, new)
    if getattr(args, "numbers_only", False):
        changes = [c for c in changes if c.kind == "number"]
    fmt = getattr(args, "format", "text")
    out = format_markdown(changes) if fmt == "md" else format_text(changes)
    if out:
        print(out, end="")
    return 1 if changes else 0
