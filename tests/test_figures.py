"""Figures: deterministic bytes without a date, assumptions on the figure and in the caption."""

from __future__ import annotations

import re

import matplotlib
import pytest
from IPython.core.pylabtools import print_figure

from kvtier import figures, pages
from kvtier.pages.fetch import fetch_vs_bandwidth
from kvtier.scenario import Scenario

matplotlib.use("Agg")  # tests draw without a display; notebooks keep the inline backend (kvtier.notebook.setup)

BUILDERS = [figure.draw for figure in pages.FIGURES]
"""Every figure function of the book, from the page registry."""


def test_printing_twice_as_a_notebook_does_gives_identical_svg_without_a_date():
    # the inline backend of a notebook (kvtier.notebook.setup) prints SVG with figures.SVG_PRINT
    s = Scenario()
    a, b = (print_figure(fetch_vs_bandwidth(s)[0], "svg", **figures.SVG_PRINT) for _ in range(2))
    assert a == b
    assert "<svg" in a and "<dc:date>" not in a


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda f: f.__name__)
def test_every_figure_states_its_assumptions_with_provenance(builder):
    fig, caption = builder(Scenario())
    footer = [t.get_text() for t in fig.texts if t.get_text().startswith("Assumptions: ")]
    provenance = r"\[(measured|published-spec|assumed|implied|derived)"
    assert len(footer) == 1 and re.search(provenance, footer[0])
    assert "Assumptions: " in caption and re.search(provenance, caption)
    matplotlib.pyplot.close(fig)
