"""Reading tables of record from a directory or a git revision, bounded, as cells of exact text.

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
dangling link; a symbolic link in git) is refused, not skipped.  Cells are kept as the exact
text of the CSV.
"""

from __future__ import annotations

import csv
import io
import os
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kvtier.errors import KvtierError, show
from kvtier.inputs.readers import read_text_bounded

TABLES_DIR = "book/tables"
"""Where the tables of record live in the repository (the git-revision mode reads them here)."""


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
    """A git blob's bytes as text (UTF-8, a byte-order mark dropped); other bytes are refused."""
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
    """The tables of directory ``root`` (or its ``tables/`` or ``book/tables/``), bounded, by name."""
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
    """The toplevel of the git repository of the current directory, or None."""
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
    """The tables under :data:`TABLES_DIR` at ``commit`` of ``repo``, bounded, by name."""
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
