"""The cost page's figures: the tornado's inputs in words, the mix's bar labels, readable ticks on a log axis."""

from __future__ import annotations

import math
from types import SimpleNamespace

import matplotlib.pyplot as plt

from kvtier.report.pages.cost import figures, tornado
from kvtier.scenario import Scenario


def test_the_tornado_names_each_input_in_words_with_the_widest_swing_on_top():
    s = Scenario()
    fig, caption = figures.tornado_figure(s)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    plt.close(fig)
    # the table lists the widest swing first; the figure draws bottom-up, so the widest is the last tick:
    # the CXL price per GB (test_tornado.py), the price that moves the CXL interval most
    widest_first = tornado.tornado_table(s)["input"].tolist()
    assert labels == [figures.TORNADO_NAMES[key] for key in reversed(widest_first)]
    assert labels[-1] == "CXL expander price per GB"
    assert "CXL expander price per GB moves a block's break-even interval in CXL most" in caption


def test_a_mix_bar_says_its_cost_per_hour_or_why_it_has_none():
    nan = math.nan
    # no reuse: no share of any tier, nothing to cache
    assert figures._bar_label(SimpleNamespace(share_hbm_pct=nan, mix_usd_per_h=nan)) == "nothing to cache: 0 USD/h"
    # reuse over a trace of 0 s: shares but no rate
    assert figures._bar_label(SimpleNamespace(share_hbm_pct=40.0, mix_usd_per_h=nan)) == (
        "no cost per hour: the trace lasts 0 s"
    )
    # 12.345 USD/h to 3 significant figures, against 100 USD/h to recompute every reuse
    row = SimpleNamespace(share_hbm_pct=40.0, mix_usd_per_h=12.345, recompute_all_usd_per_h=100.0)
    assert figures._bar_label(row) == "12.3 USD/h; recomputing: 100 USD/h"


def test_a_log_axis_of_seconds_is_labelled_in_durations():
    fig, ax = plt.subplots()
    ax.set_xscale("log")
    # 30 s to 2 h: 1 min, 5 min and 1 h fall inside, three coarse marks, so no fine ones are added
    figures.interval_ticks(ax, 30.0, 7200.0)
    assert [(float(v), t.get_text()) for v, t in zip(ax.get_xticks(), ax.get_xticklabels(), strict=True)] == [
        (60.0, "1 min"),
        (300.0, "5 min"),
        (3600.0, "1 h"),
    ]
    # 2 s to 2 min: only 1 min of the coarse marks; the fine 10 s joins it
    figures.interval_ticks(ax, 2.0, 120.0)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["10 s", "1 min"]
    plt.close(fig)
