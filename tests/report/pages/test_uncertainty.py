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
