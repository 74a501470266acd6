"""Shared fixtures: the seed scenario and a helper that runs the CLI as a user would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from ast import literal_eval
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import settings

from kvtier import Scenario

# Property tests check values, not speed: no per-example deadline (timing lives in benchmarks/).
settings.register_profile("kvtier", deadline=None)
settings.load_profile("kvtier")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def seed_scenario() -> Scenario:
    return Scenario()


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m kvtier ARGS`` in a subprocess; return the completed process."""
    return subprocess.run(
        [sys.executable, "-m", "kvtier", *args], capture_output=True, text=True, cwd=cwd or ROOT, timeout=600
    )


def run_cli_json(*args: str) -> dict:
    proc = run_cli(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def write_config(path: Path, **fields) -> Path:
    path.write_text(json.dumps(fields))
    return path


def write_tables(scenario: Scenario, directory: Path) -> list[Path]:
    """Write every table of record of ``scenario`` as ``NAME.csv`` under ``directory``, as a build does."""
    from kvtier.report.pages import csv_texts
    from kvtier.report.tables import write_csv_texts

    return write_csv_texts(csv_texts(scenario), directory)


def build(out: Path, *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None):
    """``kvtier build --out OUT ARGS`` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "kvtier", "build", "--out", str(out), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        env=env,
    )


@pytest.fixture(scope="session")
def seed_build(tmp_path_factory) -> Path:
    """One build with the seed assumptions, shared by every test that needs a finished book."""
    out = tmp_path_factory.mktemp("builds") / "seed"
    proc = build(out)
    assert proc.returncode == 0, proc.stderr
    return out


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` with its bytes."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def copy_project(tmp_path: Path) -> Path:
    """A copy of the book's sources (config, pages, notebooks) to break without touching the checkout."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(ROOT / name, project / name)
    shutil.copytree(ROOT / "book", project / "book")
    shutil.copytree(ROOT / "notebooks", project / "notebooks")
    return project


def glued_values(notebook: Path) -> dict[str, Any]:
    """Every plain value an executed notebook glued (numbers and strings), by name."""
    nb = nbformat.read(notebook, as_version=4)
    values: dict[str, Any] = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook", {})
            data = output.get("data", {})
            prefix = record.get("mime_prefix", "")
            if record.get("name") and prefix + "text/plain" in data and prefix + "image/svg+xml" not in data:
                values[record["name"]] = literal_eval(data[prefix + "text/plain"])
    return values
