"""The workload page's LRU curve: each tier priced per link at the set's rates, and what the page shows."""

from __future__ import annotations

import pytest

from kvtier.report.pages.workload import curve
from kvtier.scenario import Scenario


def test_the_links_table_prices_each_tier_at_the_link_s_bandwidth_and_latency():
    s = Scenario()
    df = curve.links_table(s)
    sized = df[(df["trace"] == "conversation") & (df["target"] == "95%")]
    cxl = sized[sized["link"] == "cxl2-x8"].iloc[0]
    # CXL 2.0 x8: 31.5 GB/s, and the host link's 9.049 us a transfer (tier_latency.host_link), one transfer a block
    assert (cxl["bandwidth_GBps"], cxl["latency_us"], cxl["transfers"]) == pytest.approx((31.5, 9.049, 1))
    # the page shows the sized trace at its 95 % target: the same links, in the same order, display columns only
    shown = curve.shown_links(s)
    assert list(shown.columns) == list(curve.LINKS_SHOWN)
    assert shown["link"].tolist() == sized["link"].tolist()


def test_the_shown_tiers_are_the_sized_trace_s_rows_and_a_target_is_labelled_in_percent():
    s = Scenario()
    tiers = curve.tiers_table(s)
    shown = curve.shown_tiers(s)
    assert list(shown.columns) == list(curve.TIERS_SHOWN)
    assert shown["target"].tolist() == tiers[tiers["trace"] == "conversation"]["target"].tolist()
    assert (curve.target_label(95), curve.target_label(99.5)) == ("95%", "99.5%")
