"""CONTRIBUTING.md's table of bad-input cases per surface is the catalogue's own count."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.conftest import ROOT


def _catalogue():
    spec = importlib.util.spec_from_file_location("catalogue", ROOT / "scripts" / "catalogue.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _item(own=(), id_=None, module=()):
    """A stand-in for a collected case: marks on its function, a parameter id, marks of its module."""
    return SimpleNamespace(
        function=SimpleNamespace(pytestmark=[pytest.mark.surface(s).mark for s in own]),
        callspec=None if id_ is None else SimpleNamespace(id=id_),
        iter_markers=lambda name: iter([pytest.mark.surface(s).mark for s in (*own, *module)]),
    )


def test_contributing_counts_the_catalogue_per_surface():
    # scripts/catalogue.py collects tests/commands/test_bad_input*.py and tests/pipeline/test_outdir.py and counts each
    # case under its surface; --check exits 1 (printing the table it expected) when CONTRIBUTING.md disagrees
    proc = subprocess.run(
        [sys.executable, "scripts/catalogue.py", "--check"], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        # the function's own mark wins over an id that names another surface
        (_item(own=["build"], id_="workload-no-reuse", module=["cost"]), "build"),
        # then the id's first word, when it names a surface
        (_item(id_="tiers-set-unknown-key", module=["compare"]), "tiers"),
        # an id whose first word is no surface falls back to the module's mark
        (_item(id_="latency-option", module=["compare"]), "compare"),
        # nothing names a surface: None, which the count refuses by name
        (_item(id_="latency-option"), None),
    ],
)
def test_a_case_takes_its_surface_from_its_mark_then_its_id_then_its_module(item, expected):
    assert _catalogue().surface_of(item) == expected


def test_the_table_lists_every_surface_and_the_total():
    catalogue = _catalogue()
    counted = {"build": 3, "pr-comment": 2, "topic:placement": 1}
    text = catalogue.table(catalogue.Counter(counted))
    # 10 surfaces (the calculator's too) + header + rule + total + 3 topics = 16 rows; 3 + 2 = 5 in all (a
    # topic's cases are counted again)
    assert len(text.splitlines()) == 16
    assert "| PR comment | 2 |" in text and "| calculator | 0 |" in text and "| all | 5 |" in text
    assert text.endswith("| of which placement | 1 |\n| of which Dask (--parts) | 0 |\n| of which sampling | 0 |")


def test_the_table_is_read_between_its_markers_in_contributing():
    catalogue = _catalogue()
    assert catalogue.TARGET == ROOT / "CONTRIBUTING.md"
    text = f"intro\n{catalogue.BEGIN}\n| surface | cases |\n{catalogue.END}\noutro"
    # the lines between the two markers, stripped; a text without them has no table
    assert catalogue.marked_table(text) == "| surface | cases |"
    assert catalogue.marked_table("intro\n| surface | cases |\n") is None


def test_a_case_is_counted_in_each_topic_its_name_or_id_names():
    # issue 43: the cases of placement, Dask and sampling are counted across surfaces too
    catalogue = _catalogue()
    item = SimpleNamespace(originalname="test_bad_input", callspec=SimpleNamespace(id="compare-tp-3-divides-no-heads"))
    assert catalogue.topics_of(item) == ["placement"]
    item = SimpleNamespace(originalname="test_a_bad_option", callspec=SimpleNamespace(id="parts-window-sample"))
    assert catalogue.topics_of(item) == ["Dask (--parts)", "sampling"]
    assert catalogue.topics_of(SimpleNamespace(originalname="test_x", callspec=None)) == []
