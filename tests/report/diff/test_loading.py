"""kvtier.report.diff.loading: sources (build directories, git revisions) and malformed tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvtier.errors import KvtierError
from kvtier.report.diff import diff_tables, load_tables
from tests.conftest import write_tables
from tests.report.diff import write

# ---------------------------------------------------------------------------
# sources: build directories, git revisions, errors
# ---------------------------------------------------------------------------


def test_build_output_dir_with_tables_subdir(seed_dir: Path, tmp_path: Path) -> None:
    write_tables(tmp_path / "site" / "tables")
    assert diff_tables(load_tables(str(seed_dir)), load_tables(str(tmp_path / "site"))) == []


def test_directory_wins_over_revision(git_repo: Path, seed_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(git_repo)
    write_tables(git_repo / "HEAD")  # a directory named like a revision
    assert diff_tables(load_tables(str(seed_dir)), load_tables("HEAD")) == []


def test_malformed_csv_names_file(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad", t="k,v\na,1,2\n")
    with pytest.raises(KvtierError, match=r"t\.csv: record 2 has 3 cells, the header has 2"):
        load_tables(str(bad))
    dup = write(tmp_path / "dup", t="k,k\na,1\n")
    with pytest.raises(KvtierError, match=r"t\.csv: duplicate column name"):
        load_tables(str(dup))
