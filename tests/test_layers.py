"""Imports run one way: the contracts of ``[tool.importlinter]`` in ``pyproject.toml``, checked by import-linter.

The contracts name the layers, lowest first: the errors, the shipped data and the deferred
import; units; the formulas; the inputs; the scenario (with the package's public names); the
report; the build pipeline; the commands; ``python -m kvtier``.  Pages never import each other,
the page registry names no page, no module imports the package that holds it, and no import
runs in a cycle.  import-linter reads every import, at module level, inside functions and under
``TYPE_CHECKING`` alike, so a function-local import can hide neither an upward import nor a cycle.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
"""import-linter's command, installed beside this interpreter by the ``test`` extra."""


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with this project's contracts, on the ``kvtier`` package found first from ``cwd``."""
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", "--config", str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def _all_but_python(folder: str, names: list[str]) -> list[str]:
    """The names under ``folder`` that a copy of the package's Python source leaves out (for copytree)."""
    return [n for n in names if n == "__pycache__" or (Path(folder, n).is_file() and not n.endswith(".py"))]


def test_the_import_contracts_are_kept():
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_an_upward_or_sibling_import_breaks_a_contract(tmp_path):
    # the check above is only as good as the contracts: on a copy of the package, an upward import
    # hidden in a function (formulas -> commands) and a page importing another page are both reported
    shutil.copytree(ROOT / "kvtier", tmp_path / "kvtier", ignore=_all_but_python)
    costs = tmp_path / "kvtier" / "formulas" / "costs.py"
    costs.write_text(costs.read_text() + "\n\ndef _upward():\n    from kvtier.commands import output\n")
    ratio = tmp_path / "kvtier" / "report" / "pages" / "ratio.py"
    ratio.write_text(ratio.read_text() + "\nfrom kvtier.report.pages import tiers\n")
    proc = lint_imports(tmp_path)
    report = " ".join(proc.stdout.split())
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "kvtier.formulas.costs -> kvtier.commands.output" in report
    assert "kvtier.report.pages.ratio -> kvtier.report.pages.tiers" in report
    assert "Pages know the registry, not each other: no page imports another BROKEN" in report
