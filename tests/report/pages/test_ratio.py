"""The ratio page: the chapter's illustrative ratio and its claimed range, recomputed from the seed set."""

import pytest

from kvtier.report.pages import ratio


def test_illustrative_ratio_and_the_chapters_rounding(seed_scenario):
    point = seed_scenario.illustrative
    assert (point["bandwidth_label"], point["mfu_label"]) == ("mid", "conservative")
    # unrounded: 17.92285212672 ms (the chapter's 2.24e12 FLOP and the block's 356,515,840 FLOP of attention over
    # itself, at 125e12 FLOP/s) / 81.92 µs = 218.784816
    assert point["ratio"] == pytest.approx(218.784816, rel=1e-12)
    # the chapter divides its rounded figures: 17.9 ms / 82 µs = 218.29 -> "about 218x"
    assert 17.9e-3 / 82e-6 == pytest.approx(218.29, abs=0.01)


def test_ratio_grid_spans_the_chapters_claimed_range(seed_scenario):
    rows = ratio.table(seed_scenario).itertuples()  # the ratio page's grid, in-batch regime
    grid = {(row.bandwidth_bracket, row.mfu_bracket): row.ratio for row in rows}
    assert len(grid) == 9
    # smallest: 8.96142606336 ms / 163.84 µs = 54.696204 (optimistic MFU, pessimistic link)
    assert min(grid.values()) == pytest.approx(54.696204, rel=1e-12)
    # largest: 17.92285212672 ms / 43.33 µs = 413.6 (conservative MFU, optimistic link)
    assert max(grid.values()) == pytest.approx(0.01792285212672 / (5_242_880 / 121e9), rel=1e-12)
    # optimistic ends of both ranges: 8.96142606336 ms / 43.33 µs = 206.82 ("closer to two orders")
    assert grid[("optimistic", "optimistic")] == pytest.approx(0.00896142606336 / (5_242_880 / 121e9), rel=1e-12)


def test_the_seed_ratio_is_quoted_only_when_the_build_differs(seed_scenario):
    from tests.conftest import scenario

    # the chapter divides its unrounded 17.92 ms by its rounded 82 us: 218.29, printed "about 218"
    rounding = "because it divides its rounded figures, which give 218.29: rounding, not a different model."
    seed = ratio.numbers(seed_scenario)["seed_sentence"]
    assert seed == f"The source chapter prints about 218 {rounding}"  # 219 was stated just before
    # at 100 GB/s mid: 17.92 ms / 52.43 us = 341.8, so the seed's 218.784816 is quoted, as the tables show it: 219
    changed = ratio.numbers(scenario(**{"bandwidth.mid": "100GB/s"}))["seed_sentence"]
    assert (
        changed
        == f"With the seed assumptions the in-batch ratio is 219; the source chapter prints about 218 {rounding}"
    )


def test_the_layout_sentence_is_plain_text(seed_scenario):
    # glued with glue:text, so Markdown would show as typed: no backticks, and the input named in words, not its key
    sentence = ratio.layout_numbers(seed_scenario)["layout_sentence"]
    assert "`" not in sentence and "fetch_layout" not in sentence
    assert sentence.endswith("Setting the set's block layout to per layer applies that layout on every page.")


def test_the_heat_map_stacks_the_regimes_with_a_colour_bar_in_times(seed_scenario):
    import matplotlib.pyplot as plt

    fig, caption = ratio.ratio_heatmap(seed_scenario)
    heat, lone, bar = fig.axes[0], fig.axes[1], fig.axes[2]
    # stacked: the lone-block panel lies below the in-batch one, not beside it
    assert lone.get_position().y1 < heat.get_position().y0
    assert lone.get_position().x0 == heat.get_position().x0
    # the scale runs from 30x (0.3 x the band's 100x) to 3,000x (3 x its 1,000x): ticks in the ratio's own units
    assert [t.get_text() for t in bar.get_yticklabels()] == ["30×", "100×", "300×", "1,000×", "3,000×"]
    # 55x and 68x fall below the band inside a batch; 1,206x exceeds it three times as a lone block
    cells = [t.get_text() for t in heat.texts]
    assert sum("below band" in c for c in cells) == 2
    assert sum("above band" in t.get_text() for t in lone.texts) == 3
    assert caption.startswith("Regenerating costs more than fetching in every cell: 55× to 414× inside a batch (7 of 9")
    plt.close(fig)


def test_the_verdict_says_whose_brackets_it_spans():
    # issue 43: "for the seed set, the source chapter's own" was printed in every build, whatever its brackets
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.report.pages.ratio import brackets_whose
    from kvtier.scenario import Scenario, seed_scenario

    assert brackets_whose(seed_scenario()) == "the source chapter's own"
    mine = Scenario(load_assumptions(None, {"bandwidth.mid": "100GB/s"}))
    assert brackets_whose(mine) == "this set's own, not the source chapter's"
