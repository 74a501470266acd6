"""The workload page: its numbers, another trace named by the set, and rebuilds when the trace changes."""

from __future__ import annotations

import pytest

from kvtier.scenario import Scenario
from tests.conftest import HAND, write_trace


def test_the_page_numbers():
    from kvtier.report.pages import workload as page

    n = page.numbers(Scenario())
    # conversation: 288,500 references to 182,790 blocks; 160 MiB a block (327,680 B x 512)
    assert (n["references"], n["unique_blocks"], n["block_mib"]) == (288_500, 182_790, 160.0)
    assert n["hit_inf_blocks_pct"] == pytest.approx((1 - 182_790 / 288_500) * 100)
    assert n["unique_tib"] == pytest.approx(182_790 * 160 / 2**20)
    assert n["cap95_tib"] == pytest.approx(n["cap95_blocks"] * 160 / 2**20)
    assert (n["hit_after_miss_requests"], n["falling_requests"], n["prefix_ok_requests"]) == (0, 0, 12_031)
    # a lone 512-token block: 2 x 70e9 x 512 FLOP at 125 TFLOP/s = 573.4 ms (plus attention) against
    # 140e9 B / (3.35e12 x 0.8) = 52.24 ms; they meet at 52.24 ms x 125e12 / 140e9 = 46.6 tokens
    assert n["lone_weights_read_ms"] == pytest.approx(140e9 / 2.68e12 * 1e3)
    assert n["lone_block_compute_ms"] == pytest.approx((2 * 70e9 * 512 + 2_621_440 * 512 * 513 / 2) / 125e12 * 1e3)
    assert n["lone_meet_tokens"] == pytest.approx(140e9 / 2.68e12 * 125e12 / 140e9)
    # every hit prefix is whole 512-token blocks, past 46.6 tokens: compute-bound alone, so the regimes agree
    assert n["lone_memory_bound_pct"] == 0.0 and n["lone_over_in_batch"] == pytest.approx(1.0)
    assert n["cap50_tib"] < n["cap80_tib"] < n["cap90_tib"] < n["cap95_tib"] < n["unique_tib"]
    assert n["contrast"] == "synthetic" and n["contrast_prefix_ok_requests"] == 3_993


def test_the_page_sizes_another_trace_when_the_set_names_it(tmp_path):
    from kvtier.inputs.assumptions import seed
    from kvtier.report.pages import workload as page

    path = write_trace(tmp_path / "hand.jsonl", HAND)
    s = Scenario(seed().with_values({"workload.trace": str(path), "workload.block_tokens": "4"}, source="test"))
    n = page.numbers(s)
    assert (n["requests"], n["references"], n["unique_blocks"], n["contrast"]) == (5, 11, 5, "synthetic")
    assert n["cap50_blocks"] == 2


def test_editing_the_trace_file_re_executes_only_the_pages_that_read_it(tmp_path):
    from kvtier.inputs.assumptions import seed
    from kvtier.pipeline.build import plan
    from kvtier.report.pages import PAGES
    from tests.conftest import ROOT

    path = write_trace(tmp_path / "hand.jsonl", HAND)
    a = seed().with_values({"workload.trace": str(path), "workload.block_tokens": "4"}, source="test")
    before = {job.name: job.inputs_hash for job in plan(ROOT, a)}
    write_trace(path, HAND[:4])
    after = {job.name: job.inputs_hash for job in plan(ROOT, a)}
    # the assumptions page shows the key; the workload page analyses the trace; the cost page sizes its mix
    changed = sorted(name for name in before if before[name] != after[name])
    assert changed == sorted(p.notebook for p in PAGES if "workload.trace" in p.keys)
    # by hand, so that the line above cannot pass on an empty registry
    assert {"00_assumptions", "12_workload", "13_cost"} <= set(changed) and "02_fetch" not in changed


def test_the_links_table_takes_the_tiers_and_their_latency_from_the_scenario():
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.report.pages import workload

    links = {k.name: k for k in workload._links(Scenario())}
    # fastest first; CXL 2.0 x8 at 31.5 GB/s and the host link's 9.049 us a transfer (tier_latency.host_link)
    assert next(iter(links)) == "hbm"
    assert (links["cxl2-x8"].bandwidth_bytes_per_s, links["cxl2-x8"].latency_s) == (31.5e9, 9.049e-6)
    assert links["nvme-gen4-x4"].latency_s == 92e-6
    other = {k.name: k for k in workload._links(Scenario(load_assumptions(sets={"tier_latency.host_link": "1us"})))}
    assert other["cxl2-x8"].latency_s == other["pcie6-x16"].latency_s == 1e-6


def test_the_policies_table_by_hand(tmp_path):
    from kvtier.inputs.assumptions import seed
    from kvtier.report.pages import workload as page

    # HAND: 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3, distances -1 -1 1 1 -1 -1 3 -1 1 4 4: 6 achievable hits of 11
    # decision.hit_target 90 %: 5.4 hits -> all 6, the largest distance 4 + 1 = 5 blocks; its fractions
    # 1/32, 1/8, 1/2 of 5 blocks round down below S3-FIFO's least, 2: capacities 2 and 5
    path = write_trace(tmp_path / "hand.jsonl", HAND)
    s = Scenario(seed().with_values({"workload.trace": str(path), "workload.block_tokens": "4"}, source="test"))
    df = page.policies_table(s)
    assert df["capacity_blocks"].tolist() == [2, 5] and df["decision"].tolist() == [False, True]
    # at 2 blocks:
    #   LRU: the three distance-1 reuses -> 3
    #   leaf-first (2's parent 1, 3's 2, 5's 1): 1 and 2 hit at once (2); 3 evicts 2 (1 has a child), 4 evicts 1,
    #   1 evicts 3, 5 evicts 4, 1 hits (3); 2 evicts 5 (1 has a child), 3 evicts 2 -> 3
    #   S3-FIFO (small 1, main 1, ghost 1): 1 and 2 enter small and hit once each; every later miss pushes the
    #   oldest small block (at most one hit) to the ghost, and no ghost id comes back before it is dropped;
    #   1 hits once more after 5 -> 3
    #   MIN: 1 and 2 hit twice each; 3, 4 and 5 are not kept (each is used after the cached ones, or never);
    #   1 hits again after 5, then 2 once more -> 5
    # at 5 blocks every block fits: all 6
    hits = {
        k: (df[f"{k}_hit_pct"] * 11 / 100).round().astype(int).tolist() for k in ("lru", "leaf_lru", "s3fifo", "min")
    }
    assert hits == {"lru": [3, 6], "leaf_lru": [3, 6], "s3fifo": [3, 6], "min": [5, 6]}
    assert df["lru_of_min_pct"].tolist() == pytest.approx([3 / 5 * 100, 100.0])
    n = page.policy_numbers(s)
    assert n["policy_lru_pct"] == pytest.approx(6 / 11 * 100) and n["policy_lru_of_min_pct"] == pytest.approx(100.0)
    assert n["policy_smallest_lru_of_min_pct"] == pytest.approx(60.0)


def test_lru_stays_below_the_optimum_on_the_conversation_trace():
    from kvtier.report.pages import workload as page

    df = page.policies_table(Scenario())
    # the decision's capacity is the LRU tier for 90 % of the achievable hits: LRU gets 90 % of what an
    # infinite cache gets, and MIN, already at the infinite cache's 36.6 % there, no more than that
    at = df[df["decision"]].iloc[0]
    assert at["min_hit_pct"] == pytest.approx((1 - 182_790 / 288_500) * 100)
    assert at["lru_of_min_pct"] == pytest.approx(90.0, abs=0.1)
    for name in ("lru", "leaf_lru", "s3fifo"):
        assert (df[f"{name}_hit_pct"] <= df["min_hit_pct"]).all()


# ---- the sampled curve's stated error, and the hit ratio over time (issue 27, items 2 and 7) -----------------


def _hand_scenario(tmp_path, rows=HAND):
    from kvtier.inputs.assumptions import seed

    path = write_trace(tmp_path / "hand.jsonl", rows)
    return Scenario(seed().with_values({"workload.trace": str(path), "workload.block_tokens": "4"}, source="test"))


def test_sampling_at_rate_one_keeps_every_reference_and_has_no_error(tmp_path):
    from kvtier.report.pages import workload as page

    s = _hand_scenario(tmp_path)
    rows = page._sampling_rows(s, (1.0,))
    # rate 1: the threshold is the whole hash space, every reference is kept at its own distance, the curve is exact
    hand = next(r for r in rows if r["role"] == "sized")
    assert (hand["trace"], hand["block_references"], hand["sampled_references"]) == (
        str(tmp_path / "hand.jsonl"),
        11,
        11,
    )
    assert (hand["mean_abs_error_pts"], hand["max_abs_error_pts"]) == (0.0, 0.0)
    contrast = next(r for r in rows if r["role"] == "contrast")  # the synthetic trace: 121,877 references
    assert contrast["sampled_references"] == contrast["block_references"] == 121_877
    assert contrast["max_abs_error_pts"] == 0.0


def test_the_sampling_table_keeps_the_hashed_blocks_and_is_the_same_on_every_run():
    from kvtier.formulas.cache.sampling import block_hash, sample_threshold
    from kvtier.report.pages import workload as page

    s = Scenario()
    df = page.sampling_table(s)
    # two traces x the three rates of SAMPLE_RATES (0.1, 0.01, 0.001), as % of references
    assert df["trace"].tolist() == ["conversation"] * 3 + ["synthetic"] * 3
    assert df["sample_rate_pct"].tolist() == pytest.approx([10.0, 1.0, 0.1] * 2)
    assert df["block_references"].tolist() == [288_500] * 3 + [121_877] * 3
    # SHARDS keeps a reference when hash(id) mod P < R x P: counted here from the definition, independently
    t = s.trace_reuse().trace
    h = block_hash(t.blocks)
    kept = [int((h < sample_threshold(r)).sum()) for r in (0.1, 0.01, 0.001)]
    assert df["sampled_references"].tolist()[:3] == kept
    assert (df["mean_abs_error_pts"] <= df["max_abs_error_pts"]).all() and (df["mean_abs_error_pts"] > 0).all()
    # hashed, not random: a second scenario, measured afresh, gives the same table to the last bit
    assert page.sampling_table(Scenario()).equals(df)
    assert "seconds" not in " ".join(df.columns)  # timings belong to benchmarks/bench_scale.py
    n = page.numbers(s)
    assert n["sample_1_refs"] == kept[1] and n["sample_1_mean_pts"] == df["mean_abs_error_pts"].iloc[1]
    assert f"its 288,500 references: {kept[0]:,} at 10 %" in n["sampling_sentence"]
    assert f"; {kept[1]:,} at 1 %, off by {n['sample_1_mean_pts']:.2f}" in n["sampling_sentence"]


def test_the_over_time_window_is_a_minute_or_whole_minutes_up_to_240_windows():
    from kvtier.report.pages import workload as page

    assert page.over_time_window_s(0.0) == 60.0
    assert page.over_time_window_s(59 * 60) == 60.0  # the conversation trace's hour: 59 windows of a minute
    assert page.over_time_window_s(240 * 60) == 60.0
    assert page.over_time_window_s(240 * 60 + 1) == 120.0
    assert page.over_time_window_s(7 * 24 * 3600) == 42 * 60.0  # a week: 10,080 min / 240 = 42 min


def test_the_hit_ratio_over_time_by_hand(tmp_path):
    from kvtier.report.pages import workload as page

    # HAND with its requests a minute apart (0, 1, 2, 3 and 5 min): 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3
    rows = [{**r, "timestamp": r["timestamp"] * 60} for r in HAND]
    s = _hand_scenario(tmp_path, rows)
    o = page.over_time_series(s)
    # the decision's capacity: 90 % of the 6 achievable hits -> all of them, the largest distance 4 + 1 = 5 blocks;
    # hits up to each request's first miss: 0 | 2 (1, 2 at distance 1; 3 new) | 0 | 1 (5 new) | 3 (distances 1 4 4)
    assert (o["capacity_blocks"], o["window_s"]) == (5, 60.0)
    assert o["start_s"].tolist() == [0.0, 60.0, 120.0, 180.0, 300.0]  # minute 4 holds no request: no window
    assert o["references"].tolist() == [2, 3, 1, 2, 3]
    assert o["hit_ratio"].tolist() == pytest.approx([0, 2 / 3, 0, 1 / 2, 1])
    assert o["infinite_hit_ratio"].tolist() == pytest.approx([0, 2 / 3, 0, 1 / 2, 1])  # 5 blocks already hold all
    n = page.over_time_numbers(s)
    # second half: windows from 300 s / 2 = 150 s on, (1 + 3) hits of (2 + 3) references = 80 %, windows 50 and 100 %
    assert (n["over_time_first_pct"], n["over_time_late_pct"]) == (0.0, pytest.approx(80.0))
    assert (n["over_time_late_low_pct"], n["over_time_late_high_pct"]) == (50.0, 100.0)
    assert n["over_time_whole_pct"] == pytest.approx(6 / 11 * 100)
    assert n["over_time_windows"] == 5 and n["over_time_window_min"] == 1.0
    assert "in the first minute it hits 0.0 %" in n["over_time_sentence"]


def test_a_trace_of_one_instant_shows_no_change_over_time(tmp_path):
    from kvtier.report.pages import workload as page

    s = _hand_scenario(tmp_path, [{**r, "timestamp": 0} for r in HAND])
    n = page.over_time_numbers(s)
    # one window of every request: no second half to set against the first; same 6 of 11 hits as the whole
    assert n["over_time_windows"] == 1 and n["over_time_first_pct"] == pytest.approx(6 / 11 * 100)
    assert n["over_time_sentence"].startswith("The ") and "shows no change over time" in n["over_time_sentence"]


def test_the_over_time_series_weighted_by_references_is_the_whole_trace_at_the_decisions_capacity():
    from kvtier.report.pages import workload as page

    s = Scenario()
    o = page.over_time_series(s)
    r = s.trace_reuse()
    # every reference falls in one window, so the windows' references add up to the trace's 288,500 and the
    # windows' hits (ratio x references) add up to the trace's hits at that capacity
    assert int(o["references"].sum()) == 288_500
    hits = float((o["hit_ratio"] * o["references"]).sum())
    assert hits / 288_500 == pytest.approx(float(r.hit_ratio(o["capacity_blocks"])), rel=1e-12)
    assert o["whole"] == pytest.approx(hits / 288_500, rel=1e-12)
    # the decision's capacity is the policies' one (both at least 2 blocks here), 160 MiB a block
    assert o["capacity_blocks"] == page.policy_replays(s)["decision"]
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
    from kvtier.report.pages import workload as page

    s = Scenario()
    df = page.windows_table(s).set_index(["window_min", "warmup_min"])
    cold, warm = df.loc[(5.0, 0.0)], df.loc[(5.0, 5.0)]
    # a warm-up and longer windows each give back reuses the cold 5-minute windows lose; a gap is never negative
    assert (
        0 < warm["mean_gap_pts"] < cold["mean_gap_pts"] and df.loc[(15.0, 0.0)]["mean_gap_pts"] < cold["mean_gap_pts"]
    )
    assert (df["max_gap_pts"] >= df["mean_gap_pts"]).all()
    # the sentence quotes the table: 5-minute windows cold, then warmed up 5 minutes, then 15-minute windows cold
    sentence = page.window_numbers(s)["windows_sentence"]
    assert f"falls {cold['mean_gap_pts']:.2g} points below" in sentence
    assert f"brings that to {warm['mean_gap_pts']:.2g} ({warm['max_gap_pts']:.2g})" in sentence
    # the trace as one part replays to the trace's own exact curve, and one window warmed up by the whole trace before
    # it is the single pass (no reuse reaches back past it): gap 0
    t = s.trace_reuse().trace
    part = distributed.part_of(t)
    single = distributed.replay([part], t.block_tokens)
    r = s.trace_reuse()
    for cap in (1, 1000, 100_000):
        assert float(single.hit_ratio(cap)) == pytest.approx(float(r.hit_ratio(cap)), abs=1e-12)
    whole = distributed.windowed([part], 600.0, 1e9, t.block_tokens)
    assert curve_error(single, whole)["max_abs"] == 0.0


def test_the_page_streams_the_trace_and_gets_the_in_memory_figures():
    # the page reads the trace as `kvtier workload` does (streamed, bounded by its distinct blocks); the same
    # figures from the trace held in memory, every reference at once, agree to the order of the sums
    import math

    import numpy as np

    from kvtier.formulas.cache.report import report
    from kvtier.report.pages import workload as page

    s = Scenario()
    r, rc = s.trace_reuse(), s.regen_costs()
    streamed, whole = page.report(s, "conversation"), report(r, rc, page._links(s))
    for a, b in zip(streamed["tiers"], whole["tiers"], strict=True):
        assert a["capacity_blocks"] == b["capacity_blocks"]  # capacities: whole blocks, equal exactly
        for key in ("hit_ratio_blocks", "hit_ratio_tokens", "in_batch_gpu_s_per_s", "lone_gpu_s_per_s"):
            assert a[key] == pytest.approx(b[key], rel=1e-12), key
    # the curve over time: the same windows, references and ratios as the trace's in memory
    ot = page.over_time_series(s)
    start, refs, ratio = r.over_time(ot["capacity_blocks"], every_s=ot["window_s"])
    assert ot["start_s"].tolist() == start.tolist() and ot["references"].tolist() == refs.tolist()
    assert np.allclose(ot["hit_ratio"], ratio, rtol=1e-12, equal_nan=True)
    # the share of reuses in the same millisecond as the block's last use, and lone over in-batch recomputation
    n = page.numbers(s)
    assert n["reuse_zero_pct"] == pytest.approx(float(np.mean(r.reuse_interval_s == 0) * 100), rel=1e-12)
    _, tokens = r.hit_tokens()
    lone_over = float(rc.lone_s(tokens).sum()) / float(rc.in_batch_s(tokens).sum())
    assert n["lone_over_in_batch"] == pytest.approx(lone_over, rel=1e-12) and not math.isnan(lone_over)


def test_a_trace_past_the_in_memory_limit_has_its_policies_replayed_on_a_hashed_sample(monkeypatch):
    # the conversation trace's 288,500 references against an in-memory limit of 100,000: the policies replay a
    # sample of 50,000 / 288,500 = 17.3 % of its blocks, at capacities scaled by that rate, and the page says so
    import json

    import numpy as np

    from kvtier.formulas.cache.sampling import block_hash, sample_threshold
    from kvtier.inputs import traces
    from kvtier.report.pages import workload as page

    exact = page.policy_replays(Scenario())
    monkeypatch.setattr(traces, "MAX_TRACE_REFS", 100_000)  # what the page asks
    monkeypatch.setattr("kvtier.inputs.traces.load.MAX_TRACE_REFS", 100_000)  # what the reader holds
    monkeypatch.setattr(page, "POLICY_SAMPLE_REFS", 50_000)
    s = Scenario()
    p = page.policy_replays(s)
    rate = 50_000 / 288_500
    assert p["sample_rate"] == pytest.approx(rate) and p["capacities"] == exact["capacities"]
    # every reference to a kept block is replayed: those whose id (Mooncake's ids are prefix-chained already) hashes
    # below the rate, counted here from the file with the standard library's json; every request stays
    rows = [json.loads(line) for line in traces.trace_path("conversation")[1].read_text().splitlines()]
    ids = np.array([h for row in rows for h in row["hash_ids"]], dtype=np.int64)
    kept = int((block_hash(ids) < sample_threshold(rate)).sum())
    t = traces.read_sample("conversation", rate)
    assert (t.n_refs, t.n_requests) == (kept, len(rows))
    # 60,204 references (20.9 %), more than 17.3 %: the kept blocks are hotter than most.  SHARDS_adj counts the
    # 10,204 beyond 50,000 as hits of the hottest: LRU's 12,152 hits at the smallest capacity count as 1,948
    assert kept == 60_204 and p["n_refs"] == pytest.approx(50_000)
    assert p["hits"]["lru"][0] == 1_948
    # so adjusted, the sample's hit ratios estimate the whole trace's within 1 point at every capacity (0.57 at
    # most measured: MIN 18.38 % against 18.96 % at the smallest); unadjusted, LRU's 20.2 % against 4.45 %
    for name in ("lru", "leaf_lru", "s3fifo", "min"):
        got = np.asarray(p["hits"][name]) / p["n_refs"]
        want = np.asarray(exact["hits"][name]) / exact["n_refs"]
        assert np.abs(got - want).max() < 0.01, name
    n = page.policy_numbers(s)
    assert n["policy_sample_pct"] == pytest.approx(rate * 100)
    assert f"a spatially hashed sample of {rate * 100:.2g} % of its blocks" in n["policy_sentence"]
