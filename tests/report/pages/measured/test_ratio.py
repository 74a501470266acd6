"""The measured page's ratio: the in-batch reference labelled a fitted slope, and its figure's panels."""

from __future__ import annotations

import pytest

from kvtier.report.pages.measured import ratio, residuals, shipped
from kvtier.scenario import Scenario


def test_the_in_batch_reference_is_labelled_a_fitted_slope_in_sample():
    df = residuals.residual_table(Scenario())
    row = df[df["quantity"].str.startswith("16 more tokens")].iloc[0]
    assert "in-sample" in row["quantity"] and "1,024, 2,048 and 4,096 tokens" in row["quantity"]
    assert row["measured_provenance"].startswith("derived: least-squares slope")
    # 260.53 µs x 16 = 4.1685 ms: the slope, not a measured pass
    assert row["measured_ms"] == pytest.approx(4.1685, abs=1e-4)
    assert set(df["measured_provenance"]) == {"measured", row["measured_provenance"]}
    table = ratio.ratio_table(Scenario())
    in_batch = table[table["regime"] == "in batch"]
    assert not in_batch["case"].str.startswith("H200 measured").any()
    assert set(in_batch[in_batch["case"] == shipped.SLOPE_CASE]["provenance"]) == {shipped.SLOPE_PROVENANCE}


def test_the_ratio_figure_puts_each_regime_in_its_own_panel_and_hatches_what_was_not_measured():
    import matplotlib.pyplot as plt

    fig, caption = ratio.ratio_figure(Scenario())
    lone, batch = fig.axes[:2]
    # the regime is the panel, not only the colour: 7 lone-block rows above, 6 in-batch rows below
    assert (lone.get_title(loc="left"), batch.get_title(loc="left")) == ("a. a lone block", "b. inside a batch")
    # one bar container per row, in the table's order: the top row first
    hatched = {
        ax.get_title(loc="left"): [bool(c.patches[0].get_hatch()) for c in ax.containers] for ax in (lone, batch)
    }
    # measured on the H200 (solid): the CUDA-graph, eager, strided and two per-chunk passes of a lone block; inside a
    # batch every row is a fit (the slope fitted to measured passes, the model) or an assumption set (hatched)
    assert hatched["a. a lone block"] == [True, False, False, False, False, False, True]
    assert hatched["b. inside a batch"] == [True] * 6
    # 44.4514 ms / 104.672 µs = 425 (lone, CUDA graph); 260.53 µs x 16 / 104.672 µs = 39.8 (in a batch); per layer
    # chunk the fetch takes 1.37 to 2.02 ms: 22 to 32 as a lone block, 2.1 to 3.0 inside a batch, both lower
    assert caption.startswith(
        "On one H200 a lone block costs 425 times its fetch and a block inside a batch 40 times; fetched as one copy"
        " per layer chunk, the ratios drop to 22 to 32 and 2.1 to 3.0."
    )
    plt.close(fig)
