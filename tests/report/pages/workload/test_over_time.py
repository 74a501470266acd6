"""The workload page's trace over time: the window, the hit ratio per window, and the warm-up."""

from __future__ import annotations

import pytest

from kvtier import analysis
from kvtier.report.pages.workload import over_time, policies
from kvtier.scenario import Scenario
from tests.conftest import HAND, write_trace


def _hand_scenario(tmp_path, rows=HAND):
    from kvtier.inputs.assumptions import seed

    path = write_trace(tmp_path / "hand.jsonl", rows)
    return Scenario(seed().with_values({"workload.trace": str(path), "workload.block_tokens": "4"}, source="test"))


def test_the_over_time_window_is_a_minute_or_whole_minutes_up_to_240_windows():

    assert over_time.over_time_window_s(0.0) == 60.0
    assert over_time.over_time_window_s(59 * 60) == 60.0  # the conversation trace's hour: 59 windows of a minute
    assert over_time.over_time_window_s(240 * 60) == 60.0
    assert over_time.over_time_window_s(240 * 60 + 1) == 120.0
    assert over_time.over_time_window_s(7 * 24 * 3600) == 42 * 60.0  # a week: 10,080 min / 240 = 42 min


def test_the_hit_ratio_over_time_by_hand(tmp_path):

    # HAND with its requests a minute apart (0, 1, 2, 3 and 5 min): 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3
    rows = [{**r, "timestamp": r["timestamp"] * 60} for r in HAND]
    s = _hand_scenario(tmp_path, rows)
    o = over_time.over_time_series(s)
    # the decision's capacity: 90 % of the 6 achievable hits -> all of them, the largest distance 4 + 1 = 5 blocks;
    # hits up to each request's first miss: 0 | 2 (1, 2 at distance 1; 3 new) | 0 | 1 (5 new) | 3 (distances 1 4 4)
    assert (o["capacity_blocks"], o["window_s"]) == (5, 60.0)
    assert o["start_s"].tolist() == [0.0, 60.0, 120.0, 180.0, 300.0]  # minute 4 holds no request: no window
    assert o["references"].tolist() == [2, 3, 1, 2, 3]
    assert o["hit_ratio"].tolist() == pytest.approx([0, 2 / 3, 0, 1 / 2, 1])
    assert o["infinite_hit_ratio"].tolist() == pytest.approx([0, 2 / 3, 0, 1 / 2, 1])  # 5 blocks already hold all
    n = over_time.over_time_numbers(s)
    # second half: windows from 300 s / 2 = 150 s on, (1 + 3) hits of (2 + 3) references = 80 %, windows 50 and 100 %
    assert (n["over_time_first_pct"], n["over_time_late_pct"]) == (0.0, pytest.approx(80.0))
    assert (n["over_time_late_low_pct"], n["over_time_late_high_pct"]) == (50.0, 100.0)
    assert n["over_time_whole_pct"] == pytest.approx(6 / 11 * 100)
    assert n["over_time_windows"] == 5 and n["over_time_window_min"] == 1.0
    assert "in the first minute it hits 0.0 %" in n["over_time_sentence"]


def test_a_trace_of_one_instant_shows_no_change_over_time(tmp_path):

    s = _hand_scenario(tmp_path, [{**r, "timestamp": 0} for r in HAND])
    n = over_time.over_time_numbers(s)
    # one window of every request: no second half to set against the first; same 6 of 11 hits as the whole
    assert n["over_time_windows"] == 1 and n["over_time_first_pct"] == pytest.approx(6 / 11 * 100)
    assert n["over_time_sentence"].startswith("The ") and "shows no change over time" in n["over_time_sentence"]


def test_the_over_time_series_weighted_by_references_is_the_whole_trace_at_the_decisions_capacity():
    from kvtier.report.pages import workload as page

    s = Scenario()
    o = over_time.over_time_series(s)
    r = analysis.reuse(s)
    # every reference falls in one window, so the windows' references add up to the trace's 288,500 and the
    # windows' hits (ratio x references) add up to the trace's hits at that capacity
    assert int(o["references"].sum()) == 288_500
    hits = float((o["hit_ratio"] * o["references"]).sum())
    assert hits / 288_500 == pytest.approx(float(r.hit_ratio(o["capacity_blocks"])), rel=1e-12)
    assert o["whole"] == pytest.approx(hits / 288_500, rel=1e-12)
    # the decision's capacity is the policies' one (both at least 2 blocks here), 160 MiB a block
    assert o["capacity_blocks"] == policies.policy_replays(s)["decision"]
    n = page.numbers(s)
    assert n["over_time_capacity_gib"] == pytest.approx(o["capacity_blocks"] * 160 / 1024)
    # the conversation trace's 59 minutes: 59 windows of a minute (its last request at 58.95 min)
    assert (n["over_time_windows"], n["over_time_window_min"]) == (59, 1.0)
    # a cache starts empty: its first minute hits less than the warm second half does
    assert n["over_time_first_pct"] < n["over_time_late_pct"]
    assert n["over_time_first_pct"] <= n["over_time_first_inf_pct"]


def test_the_windowed_replay_loses_what_reaches_past_its_warm_up():
    from kvtier.formulas.cache.curve import curve_error
    from kvtier.inputs import distributed

    s = Scenario()
    df = over_time.windows_table(s).set_index(["window_min", "warmup_min"])
    cold, warm = df.loc[(5.0, 0.0)], df.loc[(5.0, 5.0)]
    # a warm-up and longer windows each give back reuses the cold 5-minute windows lose; a gap is never negative
    assert (
        0 < warm["mean_gap_pts"] < cold["mean_gap_pts"] and df.loc[(15.0, 0.0)]["mean_gap_pts"] < cold["mean_gap_pts"]
    )
    assert (df["max_gap_pts"] >= df["mean_gap_pts"]).all()
    # the sentence quotes the table: 5-minute windows cold, then warmed up 5 minutes, then 15-minute windows cold
    sentence = over_time.window_numbers(s)["windows_sentence"]
    assert f"falls {cold['mean_gap_pts']:.2g} points below" in sentence
    assert f"brings that to {warm['mean_gap_pts']:.2g} ({warm['max_gap_pts']:.2g})" in sentence
    # the trace as one part replays to the trace's own exact curve, and one window warmed up by the whole trace before
    # it is the single pass (no reuse reaches back past it): gap 0
    t = analysis.reuse(s).trace
    part = distributed.part_of(t)
    single = distributed.replay([part], t.block_tokens)
    r = analysis.reuse(s)
    for cap in (1, 1000, 100_000):
        assert float(single.hit_ratio(cap)) == pytest.approx(float(r.hit_ratio(cap)), abs=1e-12)
    whole = distributed.windowed([part], 600.0, 1e9, t.block_tokens)
    assert curve_error(single, whole)["max_abs"] == 0.0
