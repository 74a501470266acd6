"""Monte Carlo and tornado analysis of the regenerate/fetch ratio.

Seed numbers used throughout (the source chapter's tail block):
block = 16 tokens x 327,680 B/token = 5,242,880 B; regen FLOPs = 2 x 70e9 x 16 = 2.24e12 FLOP;
peak = 500 TFLOP/s.  At 25 % MFU regen = 2.24e12 / (500e12 x 0.25) = 17.92 ms; at 50 %, 8.96 ms.
Fetch at 64 GB/s = 5,242,880 / 64e9 = 81.92 us; at 32 GB/s, 163.84 us.

Statistical tolerances are stated in standard errors (SE) at n = 100,000 draws:
a proportion p has SE sqrt(p (1 - p) / n); a sample median has SE 1 / (2 f(m) sqrt(n)),
f the density at the median.  Every tolerance is at least 5 SE of the quantity compared,
so a correct implementation fails with probability well under 1e-6 per assertion; and
the seeds are fixed, so the run is deterministic anyway.
"""

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
