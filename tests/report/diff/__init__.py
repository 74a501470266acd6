"""Tests of kvtier.report.diff, a module each; :func:`write` puts hand-made tables in a directory."""

from __future__ import annotations

from pathlib import Path


def write(directory: Path, **tables: str) -> Path:
    """Write each ``NAME=TEXT`` of ``tables`` to ``directory/NAME.csv`` (created if need be); return it."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in tables.items():
        (directory / f"{name}.csv").write_text(text, encoding="utf-8", newline="\n")
    return directory
