"""Shared fixtures: the seed scenario and a helper that runs the CLI as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
