"""The page registry: every notebook is a page, every page module is presented, pages read only their keys."""

from __future__ import annotations

import csv
import importlib
import re

import pytest
import yaml

from kvtier.inputs.assumptions import seed
from kvtier.inputs.keys import SCHEMA
from kvtier.pipeline.build import page_parameters
from kvtier.report import notebook, pages
from kvtier.scenario import Scenario
from tests.conftest import NOTEBOOKS, NUMBERS, ROOT, parameter_defaults


def test_every_notebook_is_a_page_and_has_a_numbers_function():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = {ch["file"] for part in toc["parts"] for ch in part["chapters"]}
    assert {f"notebooks/{p.stem}" for p in NOTEBOOKS} <= files
    assert set(NUMBERS) == {p.stem for p in NOTEBOOKS}


@pytest.mark.parametrize("page", pages.PAGES, ids=lambda p: p.notebook)
def test_every_page_module_is_presented_by_its_notebook(page):
    text = (ROOT / "notebooks" / f"{page.notebook}.md").read_text()
    name = page.module.rsplit(".", 1)[1]
    assert re.search(rf"^from kvtier\.report\.pages import {name} as page$", text, re.MULTILINE)
    assert "notebook.glue_numbers(page.numbers(s))" in text
    # a page that presents another scenario than the build's (its SCENARIO) applies it in its notebook as the
    # registry does before its tables: the trace pages, priced for workload.deployment
    module = importlib.import_module(page.module)
    applied = f'page.SCENARIO(notebook.scenario_from_parameters(globals(), "{page.notebook}"))' in text
    assert applied == hasattr(module, "SCENARIO"), page.notebook
    for figure in page.figures:
        assert f"```{{glue:figure}} {figure.name}\n" in text, figure.name


@pytest.mark.parametrize("page", pages.PAGES, ids=lambda p: p.notebook)
@pytest.mark.parametrize(
    "values",
    [
        {},
        # the illustrative point may name any bracket, and the roofline model reads other keys
        {"illustrative.bandwidth": "optimistic", "illustrative.mfu": "conservative", "regen.model": "roofline"},
        {"illustrative.bandwidth": "pessimistic", "illustrative.mfu": "optimistic"},
        # the forward-pass model's other keys: serial attention, a launch floor, a knee
        {
            "regen.model": "roofline",
            "regen.attention": "serial",
            "regen.launch_floor_per_layer": "0.5 ms",
            "regen.knee_sharpness": "3",
        },
    ],
    ids=["seed", "other-brackets-roofline", "pessimistic-optimistic", "forward-model"],
)
def test_a_page_reads_only_the_keys_it_declares(page, values):
    import matplotlib.pyplot as plt

    from kvtier.inputs.assumptions import RestrictedAssumptionSet

    # a restricted set raises on any key outside KEYS, as inside the page's notebook
    s = Scenario(RestrictedAssumptionSet(seed().with_values(values, source="test"), set(page.keys), page.notebook))
    assert page.numbers(s)
    for table in page.tables:
        assert len(table.build(s)) > 0, table.name
    for figure in page.figures:
        fig, caption = figure.draw(s)
        plt.close(fig)
        assert caption, figure.name
    assert page_parameters(ROOT / "notebooks" / f"{page.notebook}.md")


def test_every_schema_key_is_declared_by_the_assumptions_page():
    params = parameter_defaults(ROOT / "notebooks" / "00_assumptions.md")
    assert {notebook.PARAM_KEYS[name] for name in params if name not in ("provenance", "set_name")} == set(SCHEMA)


def test_every_page_has_a_title_of_its_own():
    # the name other pages write mid-sentence, from its module's TITLE: starts lower case, one per page
    titles = [page.title for page in pages.PAGES]
    assert all(title and title[0].islower() for title in titles)
    assert len(set(titles)) == len(titles)
    assert pages.page_of("08_tiers").title == "the tier ladder"
    assert pages.page_of("04_ratio").title == "the ratio"


def test_a_page_module_without_a_title_is_refused():
    import types

    from kvtier.report.pages import fetch

    module = types.ModuleType("kvtier.report.pages.untitled")
    for name in ("NOTEBOOK", "KEYS", "numbers", "TABLES", "FIGURES"):
        setattr(module, name, getattr(fetch, name))
    with pytest.raises(TypeError, match="page module kvtier.report.pages.untitled does not define TITLE"):
        pages._page(module)
    module.TITLE = "fetching again"
    assert pages._page(module).title == "fetching again"


def test_a_page_that_is_a_package_is_found_by_its_init():
    import importlib

    # the cost page is a package: its __init__ is the page module, its modules are not pages
    page = pages.page_of("13_cost")
    assert page is not None and page.module == "kvtier.report.pages.cost"
    assert importlib.import_module(page.module).__file__.endswith("cost/__init__.py")
    modules = {p.module for p in pages.PAGES}
    assert "kvtier.report.pages.cost.mix" not in modules and len(modules) == len(pages.PAGES)


@pytest.mark.parametrize("table", pages.TABLES, ids=lambda t: t.name)
def test_every_key_and_shown_column_is_a_column_of_its_table(table):
    # a shown column the table does not have would be left out of the page without a word (the renderer keeps the
    # shown columns the frame has); the committed tables of record are the seed's columns
    with (ROOT / "book" / "tables" / f"{table.name}.csv").open(encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert [c for c in (*table.key, *table.shown) if c not in header] == []


def test_the_registry_presents_the_trace_pages_for_the_named_deployment_and_the_others_for_the_build():
    from kvtier import analysis
    from kvtier.report.pages import workload

    s = Scenario()
    presenting = {page.notebook for page in pages.PAGES if page.presents is not pages.PAGES[0].presents}
    assert presenting == {"12_workload", "13_cost", "15_serving", "16_split"}
    page = pages.page_of("12_workload")
    assert page.presents(s) is analysis.priced(s)
    # the registry's page and its notebook: the seed's named deployment, Llama-3.1-70B on 4 H100s; the module's
    # own function is a function of whatever scenario it is given (the seed's Llama-3-70B here)
    assert page.numbers(s)["model_name"] == "llama-3.1-70b" and workload.numbers(s)["model_name"] == "llama-3-70b"
    assert pages.page_of("04_ratio").presents(s) is s
