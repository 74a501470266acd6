"""The uncertainty page: its numbers in both regimes, from the Monte Carlo and tornado formulas."""

from __future__ import annotations

import numpy as np
import pytest


def test_the_page_reports_both_regimes():
    from kvtier.report.pages import uncertainty as page
    from kvtier.scenario import Scenario

    s = Scenario()
    n = page.numbers(s)
    for key in ("p_below_claim_pct", "lone_p_below_claim_pct", "p_below_claim_fixed_peak_pct"):
        assert 0.0 <= n[key] <= 100.0
    # the seed's in-batch share below 100x, as before the lone regime was added (the same draws)
    assert n["p_below_claim_pct"] == pytest.approx(44.887, abs=1e-9)
    assert n["lone_p_below_claim_pct"] == 0.0
    assert n["lone_p50"] > n["p50"]
    # per draw, the lone block is never cheaper than the same draw inside a batch
    assert np.all(page.ratio_draws(s, "lone block") >= page.ratio_draws(s, "in-batch"))
    table = page.table(s)
    assert set(table["regime"]) == {"in-batch", "lone block"}
    assert {"below_100x", "lone_block_below_100x", "below_100x_fixed_peak"} <= set(table["statistic"])


def test_the_central_share_and_the_claim_band_are_glued_not_typed():
    from kvtier.report.pages import uncertainty as page
    from kvtier.scenario import Scenario

    n = page.numbers(Scenario())
    # the pages quote p5 to p95: 95 - 5 = 90 % of draws; the claim's band is 10^2 to 10^3
    assert (n["central_pct"], n["claim_low"], n["claim_high"]) == (90.0, 100.0, 1000.0)


def test_the_input_to_pin_down_first_is_qualified_by_what_the_draws_hold_fixed():
    from kvtier.report.pages import uncertainty as page
    from kvtier.scenario import Scenario

    s = Scenario()
    h = page.held_fixed(s)
    # regime on the H200: 44.4514 ms (lone, CUDA graph) / (260.53 µs x 16 = 4.1685 ms) = 10.66-fold;
    # layout: 1.3722 ms (faster per-chunk run) / 104.672 µs (contiguous) = 13.11-fold
    assert h["regime_fold"] == pytest.approx(10.664, abs=0.001)
    assert h["layout_fold"] == pytest.approx(13.110, abs=0.001)
    # the seed's link spans 32 to 121 GB/s with no per-transfer latency: the ratio moves 121 / 32 = 3.78-fold
    assert h["top_input"] == "bandwidth" and h["top_fold"] == pytest.approx(121 / 32, rel=1e-9)
    sentence = page.numbers(s)["pin_down_sentence"]
    assert sentence.startswith("The draws hold fixed the regime, the block's layout (contiguous, 1 transfer per block)")
    assert "the per-transfer latency (0 µs)" in sentence
    assert "so the regime and the layout come first; among the inputs the draws vary, the link bandwidth is" in sentence
    assert "the input to pin down first." not in page.numbers(s)["answer_sureness"]


def test_the_pin_down_verb_follows_the_numbers(monkeypatch):
    from kvtier.report.pages import uncertainty as page
    from kvtier.scenario import Scenario

    fixed = {"regime_fold": 2.0, "layout_fold": 3.0, "fixed_fold": 2.0, "top_fold": 3.78, "top_input": "bandwidth"}
    monkeypatch.setattr(page, "held_fixed", lambda s: {**fixed, "held": "the regime"})
    # the fixed choices moved the ratio 2-fold at least, less than the link's 3.78-fold: the link comes first
    assert page._pin_down_sentence(Scenario()).endswith(
        "so the link bandwidth is the input to pin down first, with the regime and the layout as this set has them."
    )
