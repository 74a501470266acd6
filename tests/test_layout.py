"""The tests mirror the package: ``kvtier/FOLDER/NAME.py`` is tested in ``tests/FOLDER/test_NAME.py``.

A folder's package that defines more than its docstring and imports (``kvtier/commands/__init__.py``
holds ``main``) is tested in ``tests/FOLDER/test_FOLDER.py``; ``kvtier/__main__.py`` in
``tests/test_main.py``.  The other way round, every test file names the module it tests, except
the project's own checks (:data:`PROJECT`) and the bad-input catalogue (:data:`CATALOGUE`), which
follows the surfaces a user sees rather than the modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "kvtier"
TESTS = ROOT / "tests"

PROJECT = {
    "test_layers.py",
    "test_layout.py",
    "test_adding.py",
    "test_catalogue.py",
    "test_parameters.py",
    "test_workflow.py",
    "test_prose.py",
    "test_agreement.py",
    "test_precision.py",
}
"""Tests of the project as a whole: import layers, this layout, adding a page, the bad-input catalogue's table,
the notebooks' generated parameters cells (scripts/parameters.py), the CI workflow, the prose's
figures (no number typed into a page source), one value shown alike everywhere (agreement) and at one precision."""

CATALOGUE = "commands/test_bad_input*.py"
"""The bad-input catalogue (scripts/catalogue.py counts it), one file per group of surfaces."""


def defines_something(init: Path) -> bool:
    """Whether a package's ``__init__.py`` holds more than a docstring, imports, ``__all__`` and ``__version__``."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) or (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        ):
            continue
        if isinstance(node, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id in ("__all__", "__version__") for t in node.targets
        ):
            continue
        return True
    return False


def mirrored(module: Path) -> Path | None:
    """Where the tests of the module at ``module`` live (None: a package with nothing of its own)."""
    relative = module.relative_to(PACKAGE)
    if module.name == "__main__.py":
        return TESTS / "test_main.py"
    if module.name == "__init__.py":
        if not relative.parent.parts or not defines_something(module):
            return None
        return TESTS / relative.parent / f"test_{relative.parent.name}.py"
    return TESTS / relative.parent / f"test_{module.stem}.py"


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_has_its_test_file(module):
    where = mirrored(module)
    assert where is None or where.is_file(), f"{module.relative_to(ROOT)} has no {where.relative_to(ROOT)}"


def test_every_test_file_names_its_module():
    expected = {mirrored(m) for m in MODULES} - {None}
    files = {p for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts}
    stray = sorted(
        str(p.relative_to(ROOT))
        for p in files - expected
        if not (p.parent == TESTS and p.name in PROJECT) and not p.relative_to(TESTS).match(CATALOGUE)
    )
    assert not stray, f"test files that mirror no module: {', '.join(stray)}"


def test_every_test_folder_is_a_package_with_an_init():
    # the folders share basenames (tests/formulas/test_roofline.py, tests/report/pages/test_roofline.py)
    folders = {p.parent for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts}
    assert all((folder / "__init__.py").is_file() for folder in folders)


def test_the_mapping_by_hand():
    assert mirrored(PACKAGE / "formulas" / "roofline.py") == TESTS / "formulas" / "test_roofline.py"
    assert mirrored(PACKAGE / "report" / "pages" / "ratio.py") == TESTS / "report" / "pages" / "test_ratio.py"
    assert mirrored(PACKAGE / "report" / "pages" / "__init__.py") == TESTS / "report" / "pages" / "test_pages.py"
    assert mirrored(PACKAGE / "units.py") == TESTS / "test_units.py"
    assert mirrored(PACKAGE / "__main__.py") == TESTS / "test_main.py"
    assert mirrored(PACKAGE / "formulas" / "__init__.py") is None  # a docstring only
    assert mirrored(PACKAGE / "__init__.py") is None  # re-exports only
