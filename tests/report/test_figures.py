"""Figures: deterministic bytes without a date, assumptions on the figure and in the caption."""

from __future__ import annotations

import re

import matplotlib
import pytest
from IPython.core.pylabtools import print_figure

from kvtier.inputs.assumptions import load_assumptions
from kvtier.report import figures, pages
from kvtier.report.pages.fetch import fetch_vs_bandwidth
from kvtier.scenario import Scenario
from tests.conftest import ROOT, shared_scenario

matplotlib.use("Agg")  # tests draw without a display; notebooks keep the inline backend (kvtier.report.notebook.setup)
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from kvtier.report.figures import keep_label_inside, mark_context_limit, new_figure  # noqa: E402
from kvtier.report.pages import capacity, interior  # noqa: E402
from kvtier.scenario import seed_scenario  # noqa: E402

BUILDERS = [figure.draw for figure in pages.FIGURES]
"""Every figure function of the book, from the page registry."""


LEGIBILITY_SETS = {
    "seed": {},
    "mistral-sliding-window": {"model": "mistral-7b"},
    "deepseek-mla-roofline": {"model": "deepseek-v3", "regen.model": "roofline", "peak_flops": "2250 TFLOP/s"},
    "slow-links": {"bandwidth.optimistic": "8 GB/s", "bandwidth.mid": "4 GB/s", "bandwidth.pessimistic": "1 GB/s"},
}
"""Assumption sets under which every figure must stay legible: the seed and sets that move its marks."""


# ---------------------------------------------------------------------------
# user text is plain text
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


def test_printing_twice_as_a_notebook_does_gives_identical_svg_without_a_date():
    # the inline backend of a notebook (kvtier.report.notebook.setup) prints SVG with figures.SVG_PRINT
    s = Scenario()
    a, b = (print_figure(fetch_vs_bandwidth(s)[0], "svg", **figures.SVG_PRINT) for _ in range(2))
    assert a == b
    assert "<svg" in a and "<dc:date>" not in a


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda f: f.__name__)
def test_every_figure_names_what_drives_it_on_itself_and_says_what_to_conclude(builder):
    fig, caption = builder(shared_scenario())
    footer = [t.get_text() for t in fig.texts if t.get_text().startswith(figures.FOOTER_PREFIX)]
    provenance = r"\[(measured|published-spec|assumed|implied|derived)\]"
    assert len(footer) == 1 and re.search(provenance, footer[0])
    assert footer[0].replace("\n", " ").endswith("All inputs: the assumptions page.")
    drivers = re.findall(r"(\S+) = [^;\n]+? \[", footer[0].replace("\n", " ").removeprefix(figures.FOOTER_PREFIX))
    assert 1 <= len(drivers) <= 2
    # the caption: what to conclude, then how to read it, in a reader's sentences, not a list of key = value pairs
    words = caption.split()
    assert 8 <= len(words) <= figures.CAPTION_MAX_WORDS, (len(words), caption)
    assert "It depends most on" not in caption and "Assumptions:" not in caption
    assert not re.search(provenance, caption) and not re.search(r"\b[a-z_]+\.[a-z_]+ = ", caption)
    matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("values", LEGIBILITY_SETS.values(), ids=LEGIBILITY_SETS)
@pytest.mark.parametrize("builder", BUILDERS, ids=lambda f: f.__name__)
def test_every_figure_text_is_at_least_9_px_as_shown_at_1400_and_420_px_and_no_two_texts_overlap(builder, values):
    fig, _ = builder(shared_scenario(**values))
    assert fig.get_size_inches()[0] <= figures.MAX_WIDTH_IN
    assert figures.legibility_problems(fig) == []
    matplotlib.pyplot.close(fig)


def test_the_legibility_check_finds_small_and_overlapping_text():
    fig, ax = figures.new_figure()
    ax.text(0.5, 0.5, "a label", fontsize=10)
    ax.text(0.5, 0.5, "another label", fontsize=10)  # drawn on top of the first
    ax.text(0.1, 0.9, "tiny", fontsize=6)
    problems = figures.legibility_problems(fig)
    # a 5-inch figure prints about 5.2 in wide (499 px with its padding); at 420 px it is shown in 370 px, 74 %:
    # 6 pt = 8 px at full size, 5.9 px there
    assert any(p.startswith("'tiny' is shown at ") and p.endswith("at 420 px, below 9 px") for p in problems)
    assert any(p.startswith("'tiny' is shown at 8.0 px at 1400 px") for p in problems)
    assert "'a label' overlaps 'another label'" in problems
    matplotlib.pyplot.close(fig)


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
    # (the fetch, regeneration, capacity, models, LRU, policies, sampled-curve and tier-mix figures: counted from the
    # pages, 8)
    assert len(showing) == 8, showing


def test_the_log_axes_keep_their_mathtext_tick_labels():
    # the one intended mathtext of the book: matplotlib's log tick labels ($\mathdefault{10^{3}}$)
    s = shared_scenario()
    math = []
    for figure in pages.FIGURES:
        fig, _ = figure.draw(s)
        math += [text for text, is_math in drawn_texts(fig) if "\\mathdefault" in text and is_math]
        plain = [text for text, is_math in drawn_texts(fig) if "\\mathdefault" in text and not is_math]
        assert plain == [], figure.name
        matplotlib.pyplot.close(fig)
    assert math


@pytest.mark.parametrize("draw", [interior.regen_vs_position, capacity.capacity_vs_context])
def test_figures_past_the_seed_models_window_mark_it(draw):
    s = seed_scenario()
    assert s.model.max_positions == 8192
    fig, caption = draw(s)
    ax = fig.axes[0]
    xs = [line.get_xdata()[0] for line in ax.get_lines() if len(set(line.get_xdata())) == 1]
    assert 8192 in xs
    # the interior figure breaks the label's long line in the top-left corner: "= 8,192" on a line of its own
    assert any("max_position_embeddings" in t.get_text() and "= 8,192" in t.get_text() for t in ax.texts)
    assert "context limit (8,192 positions" in caption
    plt.close(fig)


def test_no_mark_inside_the_window_or_without_one():
    fig, ax = new_figure()
    assert mark_context_limit(ax, "m", 131_072, 100_000.0) == ""
    assert mark_context_limit(ax, "m", 0, 1e6) == ""
    assert not ax.get_lines()
    plt.close(fig)


def _limit_label(ax, x: float):
    """A label left of a line at ``x``, as mark_context_limit draws it in the right part of a log axis."""
    return ax.annotate(
        "llama context limit\nmax_position_embeddings = 8,192",
        xy=(x, 0.02),
        xycoords=ax.get_xaxis_transform(),
        xytext=(-4, 0),
        textcoords="offset points",
        ha="right",
        va="bottom",
    )


def test_a_label_that_runs_past_the_axes_goes_right_of_its_line_else_to_the_top_left_corner():
    fig, ax = new_figure()
    ax.set_xscale("log")
    ax.set_xlim(1, 1e6)
    fits = _limit_label(ax, 1e5)  # left of a line five decades in: room enough, left as it is
    right = _limit_label(ax, 3.0)  # left of a line near the left edge: past the axes, so right of it
    keep_label_inside(ax, fits)
    keep_label_inside(ax, right)
    assert (fits.get_ha(), fits.xyann) == ("right", (-4, 0))
    assert (right.get_ha(), right.xyann) == ("left", (4, 0))
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    for label in (fits, right):
        box = label.get_window_extent(renderer)
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1
    ax.set_xlim(1e2, 1e3)
    fig.set_size_inches(2.0, 3.0)  # too narrow for the label on either side of a line in the middle
    middle = _limit_label(ax, 3e2)
    keep_label_inside(ax, middle)
    assert (middle.xycoords, middle.xy, middle.get_ha(), middle.get_va()) == (
        "axes fraction",
        (0.0, 0.98),
        "left",
        "top",
    )
    plt.close(fig)


def test_a_model_whose_every_layer_slides_has_no_capacity_crossover():
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.scenario import Scenario

    s = Scenario(load_assumptions(sets={"model": "mistral-7b"}))
    assert capacity.no_crossover(s)
    df = capacity.table(s)
    assert "crossover" not in df["point"].tolist()
    row = df[df["point"] == "no crossover"].iloc[0]
    assert row["reference"].startswith("no crossover: a 4,096-token sliding window")
    assert df["kv_GiB"].max() == row["kv_GiB"]  # the cache stops growing at the window
    fig, caption = capacity.capacity_vs_context(s)
    assert "There is no crossover" in caption
    assert not any(t.get_text().startswith("crossover") for t in fig.axes[0].texts)
    plt.close(fig)
    assert "does not exist" in capacity.numbers(s)["window_note"]
    # the would-be crossover is still stated, as a hypothetical
    assert capacity.numbers(s)["crossover_sentence"].startswith(
        f"Were every layer's cache to keep growing, the two would be equal at {s.crossover_tokens:,.0f} tokens"
    )
    # the seed: 70e9 x 2 B of weights / 327,680 B per token = 427,246.1 tokens
    assert capacity.numbers(seed_scenario())["crossover_sentence"] == "The two are equal at 427,246 tokens of context."
    assert not capacity.no_crossover(seed_scenario())


def test_the_capacity_finding_is_conditional_on_a_crossover():
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.scenario import Scenario

    mistral = capacity.numbers(Scenario(load_assumptions(sets={"model": "mistral-7b"})))["finding_sentence"]
    assert mistral.startswith("One sequence's cache never reaches the weights: a 4,096-token sliding window")
    seed = capacity.numbers(seed_scenario())["finding_sentence"]
    # 70e9 x 2 B / 327,680 B per token = 427,246 tokens, beyond Llama-3-70B's 8,192 positions
    assert seed.startswith("One sequence's cache equals the weights at 427,246 tokens of context; that crossover lies")
