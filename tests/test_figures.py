"""Figures: deterministic bytes without a date, assumptions on the figure and in the caption."""

from __future__ import annotations

import re

import matplotlib
import pytest
from IPython.core.pylabtools import print_figure

from kvtier.inputs.assumptions import SCHEMA, load_assumptions
from kvtier.report import figures, pages
from kvtier.report.pages.fetch import fetch_vs_bandwidth
from kvtier.scenario import Scenario
from tests.conftest import ROOT

matplotlib.use("Agg")  # tests draw without a display; notebooks keep the inline backend (kvtier.report.notebook.setup)

BUILDERS = [figure.draw for figure in pages.FIGURES]
"""Every figure function of the book, from the page registry."""


def test_printing_twice_as_a_notebook_does_gives_identical_svg_without_a_date():
    # the inline backend of a notebook (kvtier.report.notebook.setup) prints SVG with figures.SVG_PRINT
    s = Scenario()
    a, b = (print_figure(fetch_vs_bandwidth(s)[0], "svg", **figures.SVG_PRINT) for _ in range(2))
    assert a == b
    assert "<svg" in a and "<dc:date>" not in a


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda f: f.__name__)
def test_every_figure_names_what_drives_it_on_itself_and_everything_in_its_caption(builder):
    fig, caption = builder(Scenario())
    footer = [t.get_text() for t in fig.texts if t.get_text().startswith(figures.FOOTER_PREFIX)]
    provenance = r"\[(measured|published-spec|assumed|implied|derived)\]"
    assert len(footer) == 1 and re.search(provenance, footer[0])
    assert footer[0].replace("\n", " ").endswith("All assumptions: see the caption.")
    # the caption: a lead sentence, how to read it, the drivers in words, then every assumption
    lead, _, rest = caption.partition(". ")
    assert lead and "Assumptions: " in rest and re.search(provenance, rest)
    drivers = re.findall(r"(\S+) = [^;\n]+? \[", footer[0].replace("\n", " ").removeprefix(figures.FOOTER_PREFIX))
    assert 1 <= len(drivers) <= 2
    for key in drivers:  # an assumption key is named by what it is (a measured record by its figure)
        assert key not in SCHEMA or SCHEMA[key].help in caption.split(" It depends most on ")[1], key
    matplotlib.pyplot.close(fig)


LEGIBILITY_SETS = {
    "seed": {},
    "mistral-sliding-window": {"model": "mistral-7b"},
    "deepseek-mla-roofline": {"model": "deepseek-v3", "regen.model": "roofline", "peak_flops": "2250 TFLOP/s"},
    "slow-links": {"bandwidth.optimistic": "8 GB/s", "bandwidth.mid": "4 GB/s", "bandwidth.pessimistic": "1 GB/s"},
}
"""Assumption sets under which every figure must stay legible: the seed and sets that move its marks."""


@pytest.mark.parametrize("values", LEGIBILITY_SETS.values(), ids=LEGIBILITY_SETS)
@pytest.mark.parametrize("builder", BUILDERS, ids=lambda f: f.__name__)
def test_every_figure_text_is_at_least_8_pt_and_no_two_texts_overlap(builder, values):
    # 8 pt is 10.7 CSS px at full size; the browser test checks no figure is shown below 84 % of it
    fig, _ = builder(Scenario(load_assumptions(sets=values)))
    assert figures.legibility_problems(fig) == []
    matplotlib.pyplot.close(fig)


def test_the_legibility_check_finds_small_and_overlapping_text():
    fig, ax = figures.new_figure()
    ax.text(0.5, 0.5, "a label", fontsize=10)
    ax.text(0.5, 0.5, "another label", fontsize=10)  # drawn on top of the first
    ax.text(0.1, 0.9, "tiny", fontsize=6)
    problems = figures.legibility_problems(fig)
    assert "'tiny' is 6 pt, below 8 pt" in problems
    assert "'a label' overlaps 'another label'" in problems
    matplotlib.pyplot.close(fig)


# ---------------------------------------------------------------------------
# user text is plain text (issue 22, item 8)
# ---------------------------------------------------------------------------


def shown(artist: matplotlib.text.Text) -> tuple[str, bool]:
    """What ``artist`` draws and whether as mathtext: matplotlib's own decision (Text._preprocess_math,
    which every renderer calls), so the test follows matplotlib rather than copying its rules."""
    text, ismath = artist._preprocess_math(artist.get_text())
    return text, ismath is not False


def drawn_texts(fig) -> list[tuple[str, bool]]:
    """Every visible text of ``fig`` after drawing it (tick labels are made by the draw), as shown."""
    fig.canvas.draw()
    return [shown(t) for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text()]


MODEL_DIRS = ["$\\frac{a$", "$x^2$"]
"""A model directory's name is the model's name: invalid mathtext (the build failed with a 13-line
ParseSyntaxException) and valid mathtext (drawn as x squared, silently)."""


@pytest.mark.parametrize("dirname", MODEL_DIRS)
def test_a_model_name_with_dollars_is_drawn_as_written_in_every_figure(tmp_path, dirname):
    config = tmp_path / dirname / "config.json"
    config.parent.mkdir()
    config.write_bytes((ROOT / "kvtier" / "data" / "models" / "llama-3-8b.json").read_bytes())
    s = Scenario(load_assumptions(sets={"model": str(config)}))
    showing = []
    # a matplotlibrc asking for TeX (none is installed here) must not reach the figures either
    with matplotlib.rc_context({"text.usetex": True}):
        for figure in pages.FIGURES:
            fig, _ = figure.draw(s)
            print_figure(fig, "svg", **figures.SVG_PRINT)  # as the notebook prints it: raised on invalid mathtext
            texts = [(text, math) for text, math in drawn_texts(fig) if dirname in text]
            assert texts == [(text, False) for text, _ in texts], figure.name
            showing += [figure.name] * bool(texts)
            matplotlib.pyplot.close(fig)
    # titles, axis labels, legends, annotations, tick labels and footers: the figures that name the model
    # (the fetch, regeneration, capacity, models, LRU and tier-mix figures: counted from the pages, 6)
    assert len(showing) == 6, showing


def test_the_log_axes_keep_their_mathtext_tick_labels():
    # the one intended mathtext of the book: matplotlib's log tick labels ($\mathdefault{10^{3}}$)
    s = Scenario()
    math = []
    for figure in pages.FIGURES:
        fig, _ = figure.draw(s)
        math += [text for text, is_math in drawn_texts(fig) if "\\mathdefault" in text and is_math]
        plain = [text for text, is_math in drawn_texts(fig) if "\\mathdefault" in text and not is_math]
        assert plain == [], figure.name
        matplotlib.pyplot.close(fig)
    assert math
