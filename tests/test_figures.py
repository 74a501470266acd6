"""Figures: deterministic bytes, no dates or software tags, assumptions on the figure and in the caption."""

from __future__ import annotations

import re

import matplotlib
import pytest

from kvtier import figures, pages
from kvtier.pages.fetch import fetch_vs_bandwidth
from kvtier.scenario import Scenario

matplotlib.use("Agg")  # tests save files; notebooks keep the inline backend (see kvtier.notebook.setup)

BUILDERS = [figure.draw for figure in pages.FIGURES]
"""Every figure function of the book, from the page registry."""


@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_saving_twice_gives_identical_bytes_without_dates_or_software(tmp_path, suffix):
    s = Scenario()
    a = figures.save(fetch_vs_bandwidth(s)[0], tmp_path / f"a{suffix}").read_bytes()
    b = figures.save(fetch_vs_bandwidth(s)[0], tmp_path / f"b{suffix}").read_bytes()
    assert a == b
    if suffix == ".svg":
        assert b"<dc:date>" not in a and b"Matplotlib v" not in a
    else:
        assert b"Software" not in a and b"matplotlib" not in a.lower()


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda f: f.__name__)
def test_every_figure_states_its_assumptions_with_provenance(builder):
    fig, caption = builder(Scenario())
    footer = [t.get_text() for t in fig.texts if t.get_text().startswith("Assumptions: ")]
    provenance = r"\[(measured|published-spec|assumed|implied|derived)"
    assert len(footer) == 1 and re.search(provenance, footer[0])
    assert "Assumptions: " in caption and re.search(provenance, caption)
    matplotlib.pyplot.close(fig)
