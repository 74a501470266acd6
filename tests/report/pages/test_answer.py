"""The decision page: verdicts per tier, regime and layout, the closest call, the measured points, by hand."""

from __future__ import annotations

import pytest

from kvtier import analysis
from kvtier.inputs import measurements as ms
from kvtier.inputs.assumptions import load_assumptions
from kvtier.report.pages import answer
from kvtier.scenario import Scenario
from tests.conftest import MEASURED_SET


def test_the_decision_table_has_every_tier_regime_and_layout():
    s = Scenario()
    df = answer.decision_table(s)
    n = len(set(df["tier"]))
    assert len(df) == n * 2 * 2  # tiers x (lone block, in batch) x (contiguous, per-layer)
    assert "hbm" not in set(df["tier"])
    row = df[(df["tier"] == "pcie5-x16") & (df["regime"] == "in batch") & (df["layout"] == "per-layer")].iloc[0]
    # the verdict and its break-evens agree: at the break-even latency the fetch takes the regeneration time
    fetch_at_flip_us = 160 * row["break_even_latency_us"] + 5_242_880 / (row["bandwidth_GBps"] * 1e9) * 1e6
    assert fetch_at_flip_us == pytest.approx(row["regen_ms"] * 1e3, rel=1e-9)
    assert row["fetch_wins"] == (row["ratio"] > 1)


def test_the_closest_call_comes_first_and_the_rule_names_it():
    s = Scenario(load_assumptions(MEASURED_SET))
    calls = answer.closest_calls(s)
    # |log ratio| never falls down the table
    distance = abs(calls["ratio"].map(__import__("math").log))
    assert list(distance) == sorted(distance)
    first = calls.iloc[0]
    # with 9.049 us a host-link copy and 92 us an NVMe read (tier_latency.*), NVMe per layer chunk loses by far
    # (15.47 ms of fetch against a 4.17 ms in-batch regeneration), so the closest call is the slowest host-link
    # tier that wins: CXL 2.0 x8 per layer chunk, 160 x 9.049 us + 5,242,880 B / 31.5e9 B/s = 1,614.28 us
    assert (first["tier"], first["regime"], first["layout"]) == ("cxl2-x8", "in batch", "per-layer")
    row = answer.decision_table(s).set_index(["tier", "regime", "layout"]).loc[("cxl2-x8", "in batch", "per-layer")]
    assert first["fetch_wins"] and row["fetch_us"] == pytest.approx(160 * 9.049 + 5_242_880 / 31.5e9 * 1e6)
    rule = answer.rule_sentence(s)
    assert f"closest call is {first['tier']} as 160 chunk copies, regenerated inside a batch, which still wins" in rule
    assert "flips below" in rule  # a winning call flips when the bandwidth falls below its break-even
    # the two NVMe tiers lose inside a batch per layer chunk (15.47 ms and 15.09 ms against 4.17 ms): named
    assert "from 10 and 8 as 160 layer chunks" in rule
    assert "regenerating is quicker than fetching from nvme-gen4-x4 and nvme-gen5-x4 inside a batch as one copy" in rule
    # the seed's tiers all win: no such clause
    assert "quicker than fetching" not in answer.rule_sentence(Scenario())
    # the rule names how regeneration is timed: the seed's 25 % MFU of 500 TFLOP/s, or an engine's measured kernels
    assert "beats regenerating it at 25 % MFU of 500 TFLOP/s from all 10 tiers" in answer.rule_sentence(Scenario())
    engine = answer.rule_sentence(Scenario(load_assumptions(sets={"regen.model": "engine"})))
    assert "beats regenerating it with the kernels NVIDIA measured for vllm 0.24.0 on h200_sxm" in engine


def test_the_measured_points_are_the_measured_pages_runs():
    m, f = ms.load(), ms.shipped_fits()
    pts = answer.measured_points(Scenario())
    fetch = m.v("fetch_5mib_h2d_pinned")  # 104.672 us for 5 MiB in one pinned copy
    # lone: the CUDA graph's 44.451 ms over 104.672 us = 424.7; in a batch: 16 x 260.53 us per token = 4.1685 ms,
    # over 104.672 us = 39.82
    assert pts[("lone", "contiguous")][0] == pytest.approx(m.v("forward16_llama-3-70b_graph") / fetch, rel=1e-12)
    assert pts[("batch", "contiguous")][1] == pytest.approx(16 * f.slope_s_per_token / fetch, rel=1e-12)
    # per chunk: 160 copies of 32 KiB (5 MiB) in 2.0204 ms and 1.3722 ms: in a batch 4.1685 / 2.0204 = 2.063 to
    # 4.1685 / 1.3722 = 3.038
    lo, hi = pts[("batch", "per-layer")]
    assert lo == pytest.approx(16 * f.slope_s_per_token / m.v("block_per_chunk_probe1"), rel=1e-12)
    assert hi == pytest.approx(16 * f.slope_s_per_token / m.v("block_per_chunk_probe2"), rel=1e-12)
    assert "39.8× and 2.1–3.0×" in answer.measured_sentence(Scenario())


def test_the_position_from_which_fetching_wins_by_hand():
    # at 60 us an NVMe read (the seed's 92 us puts the flip past Llama-3.1's window, at about 150,000 positions)
    s = Scenario(load_assumptions(MEASURED_SET, sets={"model": "llama-3.1-70b", "tier_latency.nvme": "60us"}))
    # NVMe Gen4 x4 per layer chunk: 160 x 60 us + 748.98 us = 10,348.98 us. Inside a batch a block at position p
    # costs 2 x 70,553,706,496 x 16 + 2,621,440 x (16 p + 136) FLOP at 55.93 % of 989 TFLOP/s; equal to the
    # fetch at p = (10.34898e-3 x 5.531477e14 - 2.257719e12 - 3.565e8) / 4.194304e7 = 82,646.5: the first
    # whole position past it is 82,647, inside Llama-3.1's 131,072-position window.
    assert answer.flip_position(s, "nvme-gen4-x4", "batch", "per-layer") == 82_647
    # a tier that already wins for the tail block: 0; Llama-3-70B's 8,192 positions are too few: None
    assert answer.flip_position(s, "pcie5-x16", "batch", "contiguous") == 0
    assert (
        answer.flip_position(
            Scenario(load_assumptions(MEASURED_SET, sets={"model": "llama-3.1-70b"})),
            "nvme-gen4-x4",
            "batch",
            "per-layer",
        )
        is None
    )  # 92 us: past 131,072 positions
    short = Scenario(load_assumptions(MEASURED_SET, sets={"tier_latency.nvme": "60us"}))
    assert answer.flip_position(short, "nvme-gen4-x4", "batch", "per-layer") is None


def test_the_count_words():
    assert answer._tiers_word(0, 10) == "none of the 10 tiers"
    assert answer._tiers_word(10, 10) == "all 10 tiers"
    assert answer._tiers_word(3, 10) == "3 of the 10 tiers"
    assert answer._span(2.06, 3.04, ".1f") == "2.1–3.0×"
    assert answer._span(39.81, 39.84, ".1f") == "39.8×"


def test_the_plan_is_the_cost_pages_lru_tier_and_its_price_flips_by_hand():
    s = Scenario()
    flips = answer.price_flips(s).set_index(["tier", "input"])
    host = {t.tier: t for t in analysis.lru_plan(s, 0.9)}["pcie5-x16"]
    hold_h, fetch_h = host.hold_usd_per_s * 3600, host.fetch_usd_per_s * 3600
    avoided_h = host.recompute_avoided_usd_per_s * 3600
    # holding = purchase written off + energy: 0.15 W/GB x capacity x 0.09 USD/kWh
    energy_h = 0.15e-9 * host.capacity_bytes * 0.09 / 1000
    purchase_h = hold_h - energy_h
    saved_h = avoided_h - fetch_h - hold_h  # 57.73 - 0.215 - 1.281 = 56.23 USD/h
    assert flips.loc[("pcie5-x16", "cost.dram_gb"), "saved_usd_per_h"] == pytest.approx(saved_h, rel=1e-9)
    # DRAM's price must rise until its write-off eats the saving: (56.23 + 1.209) / 1.209 = 47.5-fold
    got = flips.loc[("pcie5-x16", "cost.dram_gb"), "flips_at_times"]
    assert got == pytest.approx((saved_h + purchase_h) / purchase_h, rel=1e-6)
    # the accelerator hour scales what recomputing and fetching cost, not holding: 1.281 / (57.73 - 0.215) = 2.23 %
    got = flips.loc[("pcie5-x16", "cost.accelerator_hour"), "flips_at_times"]
    assert got == pytest.approx(hold_h / (avoided_h - fetch_h), rel=1e-6)
    # the landing sentence is this tier's: 4.82 TiB, 90 % of the achievable hits, 56.2 USD/h saved
    plan = answer.plan_sentence(s)
    assert f"an LRU tier of {host.capacity_bytes / 2**40:.3g} TiB in host DRAM" in plan
    assert "serves 90 % of the achievable hits" in plan and f"saves {saved_h:.3g} USD/h net" in plan
    # per accelerator of the 59.9 the trace's prefill keeps busy: 1.496 / 59.93 = 0.025 and 56.23 / 59.93 = 0.938 USD/h
    per = host.prefill_accelerators
    assert f"or per accelerator {(hold_h + fetch_h) / per:.3g} USD/h and {saved_h / per:.3g} USD/h" in plan
    assert f"{saved_h / per:.3g}" == "0.938"
    # NVMe would admit the same misses, each a whole block: 193,346 missed blocks of 512 tokens x 327,680 B over the
    # trace's 3,536.999 s = 9.1711 GB/s;
    # 9.1711e9 x 86,400 = 7.92e14 B a day over a 15.36 TB drive rated for 1 drive write a day is 51.59, so 52 drives
    # where 1 holds the 4.82 TiB; 4.82 TiB x 1,826.25 days / 9.17 GB/s = 12.2 days for flash of its own size
    nvme = {t.tier: t for t in analysis.lru_plan(s, 0.9)}["nvme-gen4-x4"]
    assert nvme.write_bytes_per_s * 86400 / 15.36e12 == pytest.approx(51.59, abs=0.01)
    assert (nvme.drives.count, nvme.drives.for_capacity, nvme.drives.for_bandwidth) == (52, 1, 2)
    assert nvme.drives.wearout_s / 86400 == pytest.approx(
        nvme.capacity_bytes * 5 * 365.25 / nvme.write_bytes_per_s / 86400, rel=1e-3
    )
    assert "on NVMe flash the same tier would need 52 drives of 15.36 TB for its writes where 1 would hold it" in plan
    assert "(flash of its own size would wear out in 12.2 days)" in plan
    # DRAM's flip price: today's USD/GB times (saved + purchase) / purchase, 47.5-fold
    fold = (saved_h + purchase_h) / purchase_h
    dram_usd_per_gb = s.v("cost.dram_gb") * 1e9
    assert f"{fold:.3g}-fold, to {dram_usd_per_gb * fold:.1f} USD/GB" in answer.prices_sentence(s)
    assert f"{fold:.3g}" == "47.5"


def test_an_energy_price_moves_the_accelerator_hour_so_it_flips_nothing():
    s = Scenario()
    # doubling energy to 0.18 USD/kWh moves the all-in hour by the board's 0.7 kW x 0.09 USD/kWh: 3.063 USD/h
    moved = answer.moved_prices(s, "cost.energy_kwh", 2 * s.v("cost.energy_kwh"))
    assert moved["cost.accelerator_hour"] * 3600 == pytest.approx(3 + 0.7 * 0.09, rel=1e-12)
    assert answer.moved_prices(s, "cost.dram_gb", 1.0) == {"cost.dram_gb": 1.0}
    flips = answer.price_flips(s).set_index(["tier", "input"])
    # recomputing grows with energy faster than holding does, once the hour moves too: no energy price flips it
    assert flips.loc[("pcie5-x16", "cost.energy_kwh"), "flips_at"] == "never"
    assert "no energy price would (the accelerator hour moving with the energy price" in answer.prices_sentence(s)
    # the old wording held the hour fixed: energy alone then zeroes the saving near 70.8 USD/kWh, while at 0.7 kW the
    # board's power alone would cost 70.8 x 0.7 = 49.6 USD/h, sixteen times the hour it was held at
    host = {t.tier: t for t in analysis.lru_plan(s, 0.9)}["pcie5-x16"]
    e0 = s.v("cost.energy_kwh")
    alone = {t.tier: t for t in analysis.lru_plan(s, 0.9, "batch", s.tier_prices({"cost.energy_kwh": 2 * e0}))}
    slope = (alone["pcie5-x16"].saved_usd_per_s - host.saved_usd_per_s) / e0
    held = (e0 - host.saved_usd_per_s / slope) * 3.6e6  # USD/J to USD/kWh
    assert held == pytest.approx(70.80, abs=0.01)


def test_the_hit_target_is_an_input():
    s = Scenario(load_assumptions(sets={"decision.hit_target": "50%"}))
    half = {t.tier: t for t in analysis.lru_plan(s, 0.5)}["pcie5-x16"]
    assert "serves 50 % of the achievable hits" in answer.plan_sentence(s)
    sentence = answer.target_sentence(s)
    # the target's sizes are the plan's: 50 % first, then 99 %
    assert sentence.startswith(
        f"In host DRAM, serving 50 % of the achievable hits takes {half.capacity_bytes / 2**40:.3g}"
    )
    assert "; 99 %, " in sentence and "90 %" not in sentence


def test_the_split_verdict_counts_the_tiers_a_split_wins_from_and_names_the_largest_gain():
    from kvtier.report.pages.answer import split_sentence, split_table

    df = split_table(Scenario())
    # 10 tiers x 2 layouts x 2 regimes; a prefix of Llama-3-70B's 8,192-token window less one 16-token block
    assert len(df) == 40 and set(df["prefix_tokens"]) == {8176}
    # NVLink-C2C in one piece: 8,176 x 327,680 B at 450 GB/s = 5.95 ms, under one 16-token head (17.9 ms): no split
    nvlink = df[(df["tier"] == "nvlink-c2c") & (df["layout"] == "contiguous")]
    assert set(nvlink["fastest"]) == {"fetch"} and (nvlink["split_tokens"] == 0).all()
    # every other tier takes longer than that head to carry the prefix in one piece (the fastest, PCIe 6.0 and
    # CXL 3 x16 at 121 GB/s: 22.1 ms), so computing a block or more while the rest arrives wins from 9 of the 10;
    # copied per layer chunk (511 blocks x 160 copies, each paying its latency) even NVLink-C2C's fetch outlasts it
    batch = df[df["regime"] == "batch"]
    wins = {
        lay: int(((batch["layout"] == lay) & (batch["fastest"] == "split")).sum())
        for lay in ("contiguous", "per-layer")
    }
    assert wins == {"contiguous": 9, "per-layer": 10}
    sentence = split_sentence(Scenario())
    assert "copied in one piece, from 9 of the 10 tiers, by at most 1.04 times (nvme-gen4-x4)" in sentence
    assert "copied layer chunk by chunk, from 10 of the 10 tiers, by at most 1.83 times (nvme-gen4-x4)" in sentence


def test_a_trace_that_keeps_under_one_accelerator_busy_is_stated_per_whole_accelerator(monkeypatch):
    # issue 43 (7): "per accelerator" for 0.1 accelerators gave ten times the totals; a trace whose prefill keeps one
    # accelerator 10 % busy still runs on one, so per accelerator is the whole tier and the whole money
    import dataclasses

    from kvtier.deployment import Deployment

    real = Deployment.best_tier

    def light(self, regime):
        best, feasible = real(self, regime)
        return dataclasses.replace(best, prefill_accelerators=0.1), feasible

    monkeypatch.setattr(Deployment, "best_tier", light)
    s = Scenario()
    best, _ = Deployment.of(s).best_tier("batch")
    assert best.accelerators == 1.0  # max(0.1, 1)
    plan = answer.plan_sentence(s)
    assert "(all of it for the one accelerator its prefill keeps 10 % busy)" in plan
    cost_h = (best.hold_usd_per_s + best.fetch_usd_per_s) * 3600
    # per accelerator = the totals over one accelerator: the same numbers twice, never ten times them
    assert f"for {cost_h:.3g} USD/h of holding" in plan and f"or per accelerator {cost_h:.3g} USD/h" in plan


def test_the_target_sentence_words_a_loss_as_a_loss():
    # issue 43: at a 100,000 TFLOP/s peak recomputing is so cheap that the tier loses money at every target; the
    # sentence said "saves -0.315 USD/h"
    s = Scenario(load_assumptions(sets={"peak_flops": "100000TFLOP/s"}))
    sentence = answer.target_sentence(s)
    assert "saves -" not in sentence and " -" not in sentence
    assert "of the achievable hits takes 1.28 TiB and loses 0.315 USD/h; 90 %, 4.82 TiB and 1.23 USD/h;" in sentence
