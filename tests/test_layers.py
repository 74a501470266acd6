"""Imports run one way: every kvtier module imports only from its own layer or the layers below.

The imports are read from the source with :mod:`ast`, at module level and inside
functions alike, so that a function-local import cannot hide an upward one.  A
function-local import of a kvtier module is allowed only where :data:`LAZY` lists it,
with its reason: start-up time, never a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "kvtier"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("kvtier.errors", "kvtier.data"),
    ("kvtier.units",),
    ("kvtier.formulas.*",),
    ("kvtier.inputs.*",),
    ("kvtier.scenario", "kvtier.deployment", "kvtier"),
    ("kvtier.report.*",),
    ("kvtier.pipeline.*",),
    ("kvtier.commands.*",),
    ("kvtier.__main__",),
)
"""Each module's layer, lowest first, by folder: the errors and the shipped data; units; the
formulas (numbers in, numbers out); the inputs (files read into records, some fitted with the
formulas); the scenario (and the package's public names, which re-export it); the report;
the build pipeline; the commands; ``python -m kvtier``.  ``kvtier.FOLDER.*`` is the folder's
package and every module in it, at any depth.  Inside a folder a module may import any other
but the package that holds it; :func:`test_there_is_no_import_cycle` keeps those imports one way."""

LAZY: dict[tuple[str, str], str] = {
    ("kvtier.report.diff", "kvtier.report.pages"): "start-up time: the registry's page modules import pandas and "
    "matplotlib",
    (
        "kvtier.commands.tiers",
        "kvtier.report.pages.tiers",
    ): "start-up time: `kvtier compare` loads neither pandas nor matplotlib",
    (
        "kvtier.commands.build",
        "kvtier.pipeline.build",
    ): "start-up time: the build imports nbformat, pandas and matplotlib",
    (
        "kvtier.commands.cost",
        "kvtier.report.pages.cost",
    ): "start-up time: registering `kvtier cost` loads neither pandas nor matplotlib",
}
"""The function-local imports of kvtier modules, each downward, and why each is not at the top."""

REGISTRY = "kvtier.report.pages"
"""The page registry, the one package that the modules it holds may import: it names none of
them (it lists its folder), so a page that presents other pages asks it for them
(``page_of``, at call time) instead of importing one.  No page imports another
(:func:`test_no_page_module_imports_another`)."""


def module_name(path: Path) -> str:
    """The dotted name of the module at ``path`` under the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


def _in(module: str, name: str) -> bool:
    """Whether ``module`` is ``name``, or lies in the folder ``name`` names as ``FOLDER.*``."""
    if name.endswith(".*"):
        return module == name[:-2] or module.startswith(name[:-1])
    return module == name


def layer(module: str) -> int:
    """The rank of ``module``: the index of its layer in :data:`LAYERS` (fails the test for a module without one)."""
    for rank, names in enumerate(LAYERS):
        if any(_in(module, name) for name in names):
            return rank
    pytest.fail(f"{module} has no layer: add its folder to LAYERS in tests/test_layers.py")


def packages_around(module: str) -> list[str]:
    """The packages below ``kvtier`` itself that hold ``module`` (``kvtier.report.pages.ratio``: ``kvtier.report``
    and ``kvtier.report.pages``); a module must not import them, since a folder's package gathers its modules."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts)) if ".".join(parts[:i]) in MODULES]


def _is_module(name: str) -> bool:
    return name in MODULES


def imports(path: Path, source: str | None = None) -> list[tuple[str, int, bool]]:
    """The kvtier modules the module at ``path`` imports: ``(module, line, inside a function)``.

    ``from kvtier.x import y`` imports ``kvtier.x.y`` when that is a module, else ``kvtier.x``;
    relative imports are resolved against the importing module.  ``source`` replaces the
    file's text.
    """
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source, str(path))
    local: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            local.update(id(n) for n in ast.walk(node) if n is not node)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            names = [f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base for a in node.names]
        else:
            continue
        for name in names:
            if name == "kvtier" or name.startswith("kvtier."):
                target = name if _is_module(name) else name.rpartition(".")[0]
                found.append((target, node.lineno, id(node) in local))
    return sorted(found, key=lambda item: item[1])


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports_only_its_layer_and_below(module):
    rank = layer(module)
    upward = [
        f"{MODULES[module].relative_to(ROOT)}:{line} imports {target} (layer {layer(target)} > {rank})"
        for target, line, _ in imports(MODULES[module])
        if layer(target) > rank
    ]
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_function_local_import_of_kvtier_is_only_for_start_up_time(module):
    lazy = [(target, line) for target, line, inside in imports(MODULES[module]) if inside]
    unlisted = [
        f"{MODULES[module].relative_to(ROOT)}:{line} imports {target} inside a function" + " (move it to the top)"
        for target, line in lazy
        if (module, target) not in LAZY
    ]
    assert not unlisted, "\n".join(unlisted)


def test_the_lazy_imports_listed_are_real_and_downward():
    seen = {(module, target) for module, path in MODULES.items() for target, _, inside in imports(path) if inside}
    for (module, target), reason in LAZY.items():
        assert (module, target) in seen, f"{module} no longer imports {target} lazily: drop it from LAZY"
        assert layer(target) <= layer(module) and reason


def test_there_is_no_import_cycle():
    graph = {m: {t for t, _, _ in imports(p) if t != m} for m, p in MODULES.items()}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        if module in path:
            pytest.fail("import cycle: " + " -> ".join((*path[path.index(module) :], module)))
        if module in done:
            return
        for target in sorted(graph[module]):
            visit(target, (*path, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())


def test_the_reader_sees_upward_and_function_local_imports():
    # the checks above are only as good as the import reader: show it both kinds of import
    source = (
        "from kvtier.formulas import costs\n\n"
        "def f():\n    from kvtier.report.pages import fetch\n    import kvtier.commands\n"
    )
    path = PACKAGE / "formulas" / "roofline.py"
    assert imports(path, source) == [
        ("kvtier.formulas.costs", 1, False),
        ("kvtier.report.pages.fetch", 4, True),
        ("kvtier.commands", 5, True),
    ]
    here = layer("kvtier.formulas.roofline")
    assert layer("kvtier.report.pages.fetch") > here and layer("kvtier.commands") > here
    assert layer("kvtier.units") < here


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_the_package_that_holds_it(module):
    inward = [
        f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}, the package that holds it"
        for target, line, _ in imports(MODULES[module])
        if target in packages_around(module) and target != REGISTRY
    ]
    assert not inward, "\n".join(inward)


def test_the_ranks_are_the_folders():
    # the folder decides; inside a folder any module may import any other, the cycle check keeps them one way
    assert layer("kvtier.errors") == layer("kvtier.data") < layer("kvtier.units")
    assert layer("kvtier.units") < layer("kvtier.formulas.costs") == layer("kvtier.formulas.roofline")
    assert layer("kvtier.formulas.reuse") < layer("kvtier.inputs.readers") == layer("kvtier.inputs.probe")
    assert layer("kvtier.inputs.probe") < layer("kvtier.scenario") == layer("kvtier")
    assert layer("kvtier.scenario") < layer("kvtier.report.tables") == layer("kvtier.report.pages.cost")
    assert layer("kvtier.report.pages") < layer("kvtier.pipeline.build") < layer("kvtier.commands.options")
    assert layer("kvtier.commands") < layer("kvtier.__main__")
    assert packages_around("kvtier.report.pages.ratio") == ["kvtier.report", "kvtier.report.pages"]
    assert packages_around("kvtier.scenario") == []  # kvtier itself is ranked by LAYERS, not by this rule


PAGE_MODULES = sorted(m for m in MODULES if m.startswith(f"{REGISTRY}."))
"""Every page module: the modules of ``kvtier/report/pages`` but its registry, a page's package and its modules."""


def page_name(module: str) -> str:
    """The page ``module`` belongs to: ``kvtier.report.pages.cost`` for ``kvtier.report.pages.cost.mix``."""
    return ".".join(module.split(".")[:4])


@pytest.mark.parametrize("module", PAGE_MODULES)
def test_no_page_module_imports_another(module):
    # pages know the registry, not each other: what one page takes from another belongs in the
    # formulas, the report's shared modules, or the registry (kvtier.report.pages.PAGES); a page
    # that is a package imports its own modules
    siblings = [
        f"{MODULES[module].relative_to(ROOT)}:{line} imports the page {target}"
        for target, line, _ in imports(MODULES[module])
        if target in PAGE_MODULES and page_name(target) != page_name(module)
    ]
    assert not siblings, "\n".join(siblings)


def test_the_registry_names_no_page():
    # it finds its pages by listing its folder, so a page may import it without a cycle
    assert not [target for target, _, _ in imports(MODULES[REGISTRY]) if target in PAGE_MODULES]


def test_the_sibling_check_sees_a_page_import():
    # the check above is only as good as the import reader: a sibling named either way, at the
    # top or inside a function, is seen; the registry itself is not a sibling
    path = PACKAGE / "report" / "pages" / "measured.py"
    source = (
        "from kvtier.report.pages import page_of, tiers\n"
        "import kvtier.report.pages.ratio\n\n"
        "def f():\n    from kvtier.report.pages.models import table\n"
    )
    assert {target for target, _, _ in imports(path, source)} == {
        REGISTRY,
        "kvtier.report.pages.tiers",
        "kvtier.report.pages.ratio",
        "kvtier.report.pages.models",
    }
    assert len(PAGE_MODULES) >= 14 and REGISTRY not in PAGE_MODULES
    assert (
        page_name("kvtier.report.pages.cost.mix")
        == page_name("kvtier.report.pages.cost")
        != page_name("kvtier.report.pages.costs")
    )
