"""kvtier.report.diff.headlines: the headline numbers need their tables, one side may lack one, the deployment."""

from __future__ import annotations

from pathlib import Path

from kvtier.report.diff import diff_tables, format_markdown, load_tables
from tests.conftest import write_tables
from tests.report.diff import write


def test_headline_numbers_need_the_tables(tmp_path: Path) -> None:
    old = write(tmp_path / "old", custom="name,v\na,1\n")
    new = write(tmp_path / "new", custom="name,v\na,2\n")
    a, b = load_tables(str(old)), load_tables(str(new))
    lines = format_markdown(diff_tables(a, b), a, b).splitlines()
    # no table of record, so no headline section: the summary comes first
    assert lines[:5] == [
        "**1 number changed in 1 table**",
        "",
        "| table | cells changed | largest relative change |",
        "|:--|:--|:--|",
        "| custom | 1 | +100.00% (v at name=a) |",  # (2 - 1) / 1
    ]


def test_headline_present_on_one_side(seed_dir: Path, tmp_path: Path) -> None:
    # The new side has no roofline table: its headline reads as removed, the others as they were.
    fewer = tmp_path / "fewer"
    write_tables(fewer)
    (fewer / "roofline.csv").unlink()
    old, new = load_tables(str(seed_dir)), load_tables(str(fewer))
    lines = format_markdown(diff_tables(old, new), old, new).splitlines()
    assert "| regeneration of a lone block under the roofline (ms) | 52.239 | (absent) | removed |" in lines
    assert "| roofline | 1: 1 table removed | — |" in lines


def test_markdown_headline_names_the_deployment(seed_dir: Path, tmp_path: Path) -> None:
    # the placement is read from assumptions.csv, the table of record that lists every key: tp 1 -> 8
    import shutil

    new_dir = tmp_path / "tp8"
    shutil.copytree(seed_dir, new_dir)
    path = new_dir / "assumptions.csv"
    text = path.read_text()
    row = next(line for line in text.splitlines() if line.startswith("parallel.tp,"))
    path.write_text(text.replace(row, row.replace("parallel.tp,1,1.0,", "parallel.tp,8,8.0,", 1)))
    old, new = load_tables(str(seed_dir)), load_tables(str(new_dir))
    lines = format_markdown(diff_tables(old, new), old, new).splitlines()
    # (8 - 1) / 1 = +700 %
    assert "| deployment: tensor-parallel size (parallel.tp) | 1 | 8 | +700.00% |" in lines
    assert "| deployment: pipeline-parallel size (parallel.pp) | 1 | 1 | unchanged |" in lines
    # tables of record from before the placement keys have no such rows: the lines are left out
    for tables in (old, new):
        tables.pop("assumptions")
    assert not [li for li in format_markdown(diff_tables(old, new), old, new).splitlines() if "deployment" in li]
