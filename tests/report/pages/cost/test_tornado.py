"""The cost page's tornado: the price that moves a small block's CXL interval most comes first."""

from __future__ import annotations

import pytest

from kvtier.report.pages.cost import tornado
from kvtier.scenario import Scenario


def test_the_tornado_names_the_price_that_moves_the_cxl_interval_most():
    t = tornado.tornado_table(Scenario())
    assert t["swing_usd"].is_monotonic_decreasing
    assert t.iloc[0]["input"] == "cost.cxl_gb"
    # 12 USD/GB at 5 y: CXL holding 7.98e-17 USD/(B s); 5 USD/GB: 3.54e-17; 25: 1.62e-16 -> factor about 4.6
    assert t.iloc[0]["swing_usd"] == pytest.approx(4.58, abs=0.01)
