"""The cost page: the five-minute rule for KV blocks, its inputs, and ``kvtier cost``."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.formulas import economics
from kvtier.inputs.assumptions import COST_RANGES, load_assumptions, seed
from kvtier.report.pages import cost
from kvtier.scenario import Scenario


def _row(df, tier: str, tokens: int = 16, regime: str = "lone"):
    return df[(df["tier"] == tier) & (df["block_tokens"] == tokens) & (df["regime"] == regime)].iloc[0]


def test_keep_interval_by_hand():
    # recomputing costs 1 USD, one fetch 0.2 USD, holding 0.01 USD/s: (1 - 0.2) / 0.01 = 80 s
    assert float(economics.keep_interval_s(1.0, 0.2, 0.01)) == pytest.approx(80.0)
    # a fetch that costs more than recomputing: never worth holding
    assert float(economics.keep_interval_s(1.0, 1.5, 0.01)) == 0.0
    # Gray's form: fetch from below 0.3 USD over holding 0.01 USD/s here = 30 s
    assert float(economics.gray_interval_s(0.3, 0.01)) == pytest.approx(30.0)


def test_seed_host_dram_interval_by_hand():
    df = cost.long_table(Scenario())
    row = _row(df, "pcie5-x16")
    # block: 16 tokens x 327,680 B = 5,242,880 B (5 MiB)
    block = 5_242_880
    # lone regeneration is memory-bound: 140e9 B of weights / (3.35e12 B/s x 0.8) = 52.2388 ms
    # (compute alone: 16 x 2 x 70e9 / (500e12 x 0.25) = 17.92 ms)
    regen = 140e9 / (3.35e12 * 0.8)
    assert row["regen_ms"] == pytest.approx(regen * 1e3, rel=1e-9)
    accel = 3 / 3600  # 3 USD/h in USD/s
    recompute = regen * accel  # 4.3532e-5 USD
    # fetch over PCIe 5.0 x16: 9.049 us (tier_latency.host_link) + 5,242,880 B / 63e9 B/s = 92.2693 us,
    # charged as accelerator time
    fetch = (9.049e-6 + block / 63e9) * accel  # 7.6891e-8 USD
    # holding in host DRAM: 10 USD/GB over 5 years + 0.15 W/GB x 0.09 USD/kWh
    #   10e-9 USD/B / (5 x 365.25 x 86,400 s) = 6.3376e-17 USD/(B s)
    #   0.15e-9 W/B x 0.09 / 3.6e6 USD/J = 3.75e-18 USD/(B s)
    hold = (10e-9 / (5 * 365.25 * 86400) + 0.15e-9 * 0.09 / 3.6e6) * block  # 3.5193e-10 USD/s
    # (4.3532e-5 - 7.689e-8) / 3.5193e-10 = 123,476 s = 34.30 h
    assert row["keep_usd_s"] == pytest.approx((recompute - fetch) / hold, rel=1e-9)
    assert row["keep_usd_s"] / 3600 == pytest.approx(34.30, abs=0.01)
    # in joules: regen x 467 W = 24.396 J against 0.15 W/GB x 5.24288e-3 GB = 0.78643 mW:
    # (24.396 - 92.27e-6 x 467) / 0.78643e-3 = 30,966 s = 8.60 h
    j = (regen * 467 - (9.049e-6 + block / 63e9) * 467) / (0.15e-9 * block)
    assert row["keep_J_s"] == pytest.approx(j, rel=1e-9)
    assert row["keep_J_s"] / 3600 == pytest.approx(8.60, abs=0.01)


def test_hbm_interval_holds_no_price():
    # HBM priced as a share of the accelerator: the accelerator price cancels, leaving
    # regen x capacity / (block bytes x share) = 52.2388 ms x 80e9 / (5,242,880 x 0.5) = 1,594.2 s = 26.6 min
    s = Scenario()
    base = _row(cost.long_table(s), "hbm")["keep_usd_s"]
    assert base == pytest.approx(140e9 / (3.35e12 * 0.8) * 80e9 / (5_242_880 * 0.5), rel=1e-9)
    dearer = _row(cost.long_table(s, {"cost.accelerator_hour": 5 / 3600}), "hbm")["keep_usd_s"]
    assert dearer == pytest.approx(base, rel=1e-12)


def test_a_dearer_accelerator_lengthens_every_interval_below_hbm():
    s = Scenario()
    cheap = cost.long_table(s, {"cost.accelerator_hour": 2 / 3600})
    dear = cost.long_table(s, {"cost.accelerator_hour": 5 / 3600})
    below = cheap["medium"] != "hbm"
    assert (dear["keep_usd_s"][below] > cheap["keep_usd_s"][below]).all()
    # HBM's own interval does not move (its holding cost scales with the same price); the joules do not either
    assert np.allclose(dear["keep_usd_s"][~below], cheap["keep_usd_s"][~below], rtol=1e-12)
    assert np.allclose(dear["keep_J_s"], cheap["keep_J_s"], rtol=1e-12)
    # and Gray's HBM-over-tier interval does not move: fetch and HBM holding both scale with it
    assert np.allclose(dear["hbm_over_tier_s"], cheap["hbm_over_tier_s"], rtol=1e-12)


@pytest.mark.parametrize("medium", ["dram", "cxl", "nvme"])
def test_dearer_capacity_shortens_its_own_tier_and_no_other(medium):
    s = Scenario()
    key = f"cost.{medium}_gb"
    low = cost.long_table(s, {key: s.v(f"{key}_low")})
    high = cost.long_table(s, {key: s.v(f"{key}_high")})
    own = low["medium"] == medium
    assert (high["keep_usd_s"][own] < low["keep_usd_s"][own]).all()
    assert np.allclose(high["keep_usd_s"][~own], low["keep_usd_s"][~own], rtol=1e-12)


def test_a_dearer_hbm_share_shortens_hbm_and_gray_intervals():
    s = Scenario()
    low = cost.long_table(s, {"cost.hbm_share": 0.05})
    high = cost.long_table(s, {"cost.hbm_share": 1.0})
    hbm = low["medium"] == "hbm"
    assert (high["keep_usd_s"][hbm] < low["keep_usd_s"][hbm]).all()
    assert (high["hbm_over_tier_s"][~hbm] < low["hbm_over_tier_s"][~hbm]).all()


def test_longer_intervals_favour_slower_tiers_in_the_mix():
    # two tiers: fast (hold 1 USD/(B s), fetch 0) and slow (hold 0.1, fetch 5); recompute 20
    # per byte-second with 1-byte blocks: fast wins below 5 / 0.9 = 5.56 s, slow up to (20 - 5) / 0.1 = 150 s
    dt = np.array([1.0, 5.0, 6.0, 100.0, 200.0])
    choice = economics.cheapest_tier(dt, [1.0, 0.1], [0.0, 5.0], 20.0)
    assert choice.tolist() == [0, 0, 1, 1, 2]
    mix = economics.tier_mix(dt, 100.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0)
    assert mix.share.tolist() == [0.4, 0.4, 0.2]
    # Little's law: fast holds (1 + 5) B s / 100 s = 0.06 B; slow (6 + 100) / 100 = 1.06 B
    assert mix.bytes_held.tolist() == pytest.approx([0.06, 1.06, 0.0])
    # cost per second: hold 0.06 x 1 + 1.06 x 0.1 = 0.166; fetch 2 x 5 / 100 = 0.1; recompute 20 / 100 = 0.2
    assert mix.usd_per_s == pytest.approx(0.466)
    assert mix.recompute_all_usd_per_s == pytest.approx(5 * 20 / 100)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("cost.accelerator_hour", "-3 USD/h", "is out of range"),
        ("cost.accelerator_hour", "0 USD/h", "is out of range"),
        ("cost.dram_gb", "10", "needs a unit, for example 10USD/GB"),
        ("cost.dram_gb", "10/GB", "is not in US dollars: write USD or $"),
        ("cost.energy_kwh", "0.09 EUR/kWh", "is not in US dollars: write USD or $"),
        ("cost.amortisation", "5", "needs a unit, for example 5y"),
        ("energy.power_lone", "467", "needs a unit, for example 467W"),
    ],
)
def test_bad_prices_are_one_line_errors_naming_the_key(key, value, message):
    with pytest.raises(KvtierError) as err:
        load_assumptions(sets={key: value})
    text = str(err.value)
    assert "\n" not in text and f"'{key}'" in text and message in text, text


def test_a_range_must_hold_its_value():
    from kvtier.inputs.assumptions import check_consistency

    with pytest.raises(KvtierError, match="'cost.cxl_gb_high' .* and 'cost.cxl_gb' .* are out of order"):
        check_consistency(load_assumptions(sets={"cost.cxl_gb_high": "8 USD/GB"}))


def test_every_price_has_a_dated_source_and_a_range():
    a = seed()
    for key in COST_RANGES:
        for end in ("", "_low", "_high"):
            rec = a[f"{key}{end}"]
            assert any(ch.isdigit() for ch in rec.source), (rec.key, rec.source)  # a year or a date
            assert rec.provenance in ("assumed", "published-spec", "measured"), rec.key


def test_measured_power_and_energy_match_the_measurements():
    from kvtier.inputs import measurements

    m, a = measurements.load(), seed()
    assert a["energy.power_lone"].provenance == a["reference.h200_forward16_energy"].provenance == "measured"
    assert a.value("energy.power_lone") == pytest.approx(m.v("power_forward16_llama-3-70b_w"), abs=0.5)
    assert a.value("reference.h200_forward16_energy") == pytest.approx(m.v("energy_forward16_llama-3-70b_j"), abs=0.05)


def test_the_tornado_names_the_price_that_moves_the_cxl_interval_most():
    t = cost.tornado_table(Scenario())
    assert t["swing_usd"].is_monotonic_decreasing
    assert t.iloc[0]["input"] == "cost.cxl_gb"
    # 12 USD/GB at 5 y: CXL holding 7.98e-17 USD/(B s); 5 USD/GB: 3.54e-17; 25: 1.62e-16 -> factor about 4.6
    assert t.iloc[0]["swing_usd"] == pytest.approx(4.58, abs=0.01)


def test_the_trace_mix_serves_every_reuse_and_scales_with_the_bytes_per_token():
    s = Scenario()
    mix = cost.mix_table(s)
    shares = mix[[f"share_{m}_pct" for m in cost.MIX_MEDIA]].sum(axis=1)
    assert np.allclose(shares, 100.0)
    assert (mix["mix_usd_per_h"] < mix["recompute_all_usd_per_h"]).all()
    # no room in host DRAM: nothing is held there
    assert (mix.loc[mix["ladder"] == "host DRAM full", "dram_GiB"] == 0).all()
    batch = mix[(mix["regime"] == "batch") & (mix["ladder"] == "with host DRAM")].set_index("model")
    # DeepSeek-V3 caches 61 x (512 + 64) x 2 B = 70,272 B a token against Llama-3-70B's 327,680 B: 0.21445;
    # the same reuses go to the same tiers, so the GiB held scale with it
    ratio = batch.loc["deepseek-v3", "dram_GiB"] / batch.loc["llama-3-70b", "dram_GiB"]
    assert ratio == pytest.approx(70_272 / 327_680, rel=1e-3)


def test_the_mix_tornado_names_the_price_that_changes_the_largest_tier():
    t = cost.mix_tornado_table(Scenario())
    assert t["swing"].is_monotonic_decreasing
    # dearer host DRAM (20 USD/GB) than the CXL expander (12 USD/GB): the expander takes its place
    row = t.set_index("input").loc["cost.dram_gb"]
    assert (row["largest_tier_base"], row["largest_tier_at_high"]) == ("host DRAM", "CXL expander")
    n = cost.numbers(Scenario())
    assert "(cost.dram_gb)" in n["mix_decider_sentence"] and "CXL expander takes the place" in n["mix_decider_sentence"]


def test_a_trace_of_no_duration_has_totals_and_a_saving_but_no_rates():
    # all reuses at one instant: intervals 0 s over a trace of 0 s; tiers (hold 1, fetch 0) and (hold 0.1, fetch 5),
    # recompute 20: at dt = 0 tier 0 costs 1 x 0 + 0 = 0, the cheapest, so both reuses are served from it
    mix = economics.tier_mix([0.0, 0.0], 0.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0)
    assert mix.share.tolist() == [1.0, 0.0, 0.0]
    # totals: the mix 0 USD, recomputing both reuses 2 x 20 = 40 USD; saving 1 - 0 / 40 = 100 %
    assert (mix.usd, mix.recompute_all_usd, mix.saving) == (0.0, 40.0, 1.0)
    # rates and Little's law divide by the trace's 0 s: undefined, None (never NaN or a ZeroDivisionError)
    assert mix.usd_per_s is None and mix.recompute_all_usd_per_s is None and mix.bytes_held is None
    assert not mix.rates_defined


def test_a_trace_with_no_reuse_and_no_duration_costs_nothing_and_saves_nothing_to_speak_of():
    # nothing to cache: every rate is 0 even over 0 s (no cost ever arises), and the saving is 0 / 0: None
    mix = economics.tier_mix([], 0.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0)
    assert (mix.usd_per_s, mix.recompute_all_usd_per_s, mix.saving) == (0.0, 0.0, None)
    assert mix.bytes_held.tolist() == [0.0, 0.0, 0.0] and not mix.has_reuse and mix.rates_defined


def test_the_saving_is_a_ratio_of_totals_and_a_negative_duration_is_refused():
    dt = np.array([1.0, 5.0, 6.0, 100.0, 200.0])
    mix = economics.tier_mix(dt, 100.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0)
    # 0.466 USD/s against 1 USD/s (test_longer_intervals_favour_slower_tiers_in_the_mix): 53.4 % saved
    assert mix.saving == pytest.approx(1 - 0.466 / 1.0)
    with pytest.raises(ValueError, match="duration_s must be >= 0"):
        economics.tier_mix(dt, -1.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0)


def test_the_recompute_sentence_names_the_tiers_the_longest_reuse_falls_within():
    page = cost
    # 60 s of longest reuse against 120 s (HBM) and 3,600 s (host DRAM): within both
    assert page._recompute_sentence(0.0, 60.0, {"HBM": 120.0, "host DRAM": 3600.0}) == (
        "none is recomputed: the longest reuse interval in the trace, 1 min, is shorter than every tier's"
        " break-even interval."
    )
    # 600 s: past HBM's 120 s (2 min), within host DRAM's 3,600 s (1 h)
    assert page._recompute_sentence(0.0, 600.0, {"HBM": 120.0, "host DRAM": 3600.0}) == (
        "none is recomputed: the longest reuse interval in the trace, 10 min, is shorter than the break-even"
        " interval of host DRAM (1 h), though longer than that of HBM (2 min)."
    )
    assert page._recompute_sentence(12.5, 600.0, {"HBM": 120.0}).startswith("12.5 % are recomputed")
    # the seed trace: its longest reuse, 50.5 min, is past HBM's 9.16 min but within the other tiers'
    sentence = page.mix_numbers(Scenario())["mix_recompute_sentence"]
    assert "50.5 min" in sentence and "though longer than that of HBM (9.16 min)." in sentence


def test_both_pages_charge_the_trace_s_reuses_the_same_recomputation():
    from kvtier.report.pages import workload

    s = Scenario()
    w, n = workload.numbers(s), cost.numbers(s)
    # the workload page: 21.6548 accelerators recompute an infinite cache's hits inside a batch (parameter FLOPs plus
    # attention over the hit prefix); the cost page's lower bound charges every reuse the same: 21.6548 x 3 USD/h
    assert w["inf_in_batch_gpus"] == pytest.approx(21.654790, rel=1e-6)
    assert n["mix_recompute_accelerators"] == pytest.approx(w["inf_in_batch_gpus"], rel=1e-12)
    assert n["mix_recompute_usd_per_h"] == pytest.approx(w["inf_in_batch_gpus"] * 3, rel=1e-12)
    # and the LRU tier's recomputation avoided is the workload page's for the same capacity: 95 %, 20.4531
    assert n["lru95_saved_accelerators"] == pytest.approx(w["cap95_in_batch_gpus"], rel=1e-12)
    assert n["lru95_tib"] == pytest.approx(w["cap95_tib"], rel=1e-12)


def test_the_lru_tier_by_hand_for_the_conversation_trace():
    df = cost.lru_table(Scenario())
    dram = df[(df["target"] == "95%") & (df["tier"] == "pcie5-x16")].iloc[0]
    # 37,645 blocks x 512 tokens x 327,680 B = 6.3158e12 B = 5,882.0 GiB, its peak occupancy
    assert dram["capacity_GiB"] == pytest.approx(37_645 * 512 * 327_680 / 2**30, rel=1e-12)
    # holding it in host DRAM: 6.3158e12 B x 6.7126e-17 USD/(B s) x 3600 s = 1.5262 USD/h
    assert dram["hold_usd_per_h"] == pytest.approx(1.5262, rel=1e-4)
    # recomputation avoided 20.4531 accelerators x 3 USD/h = 61.359 USD/h; less fetches and holding: 59.61 USD/h
    assert dram["recompute_avoided_batch_usd_per_h"] == pytest.approx(61.359, rel=1e-4)
    assert dram["saved_batch_usd_per_h"] == pytest.approx(61.359 - 1.5262 - dram["fetch_usd_per_h"], rel=1e-4)
    nvme = df[(df["target"] == "95%") & (df["tier"] == "nvme-gen4-x4")].iloc[0]
    # every miss written once: 8.6514 GB/s against a 5.6 GB/s drive = 154.5 %; reads keep its link 68.3 % busy:
    # 4.7628 GB/s / 7 GB/s = 68.04 % for the bytes, plus 4.7628e9 / (512 x 327,680 B) = 28.39 blocks/s x 92 us
    # (tier_latency.nvme, one read a block) = 0.26 % (the trace counts its hit blocks, some partly filled: within
    # 1e-5 of bytes over full blocks)
    assert nvme["write_GBps"] == pytest.approx(8.6514, rel=1e-4)
    assert nvme["write_busy_pct"] == pytest.approx(8.6514 / 5.6 * 100, rel=1e-4)
    assert nvme["read_GBps"] == pytest.approx(4.7628, rel=1e-4)
    assert nvme["read_busy_pct"] == pytest.approx(
        (nvme["read_GBps"] / 7 + nvme["read_GBps"] * 1e9 / (512 * 327_680) * 92e-6) * 100, rel=1e-5
    )
    # 8.6514e9 B/s x 86,400 s / 6.3158e12 B = 118.35 drive writes a day, against 1 for 5 years: 11,835 %
    assert nvme["drive_writes_per_day"] == pytest.approx(118.35, rel=1e-4)
    assert nvme["nvme_wear_pct"] == pytest.approx(11_835, rel=1e-4)
    assert np.isnan(dram["nvme_wear_pct"])


def test_the_lone_512_token_block_is_charged_the_compute_bound_power():
    n = cost.numbers(Scenario())
    # compute-bound alone: 576.19 ms x 700 W = 403.34 J, the same as inside a batch; the 16-token lone block is
    # memory-bound and draws the measured 467 W
    assert n["large_lone_bound"] == "compute"
    assert n["large_lone_recompute_j"] == pytest.approx(n["large_lone_regen_ms"] / 1e3 * 700.0, rel=1e-12)
    assert n["small_lone_recompute_j"] == pytest.approx(n["small_lone_regen_ms"] / 1e3 * 467.0, rel=1e-12)


def test_the_measured_set_prices_an_h200():
    from pathlib import Path

    import kvtier

    s = Scenario(load_assumptions(Path(kvtier.__file__).parent / "data" / "h200-measured.yaml"))
    # 141 GB of HBM3e and 4 USD/h, the H200's own; 4 / 3600 x 0.5 / 141e9 = 3.9401e-15 USD/(B s) of HBM
    assert s.v("cost.hbm_capacity") == 141e9 and s.v("cost.accelerator_hour") == pytest.approx(4 / 3600)
    assert s.tier_prices().hbm_bytes == 141e9
    assert "H200" in s.a("cost.accelerator_hour").basis and "H200" in s.a("energy.power_batch").basis


def test_the_hierarchy_replayed_on_the_conversation_trace():
    from kvtier.formulas.cache import hierarchy
    from kvtier.report.pages import cost as page

    s = Scenario()
    sizes = page.hierarchy_sizes(s)
    # HBM per accelerator: 80 GB less a 70 GB shard of Llama-3-70B's 140 GB (2 shards) = 10 GB; blocks of
    # 327,680 B x 512 = 167,772,160 B; the middle tier is the decision's 90 % LRU tier
    assert sizes["hbm_left_bytes"] == pytest.approx(10e9)
    hbm = int(sizes["accelerators"] * 10e9 // 167_772_160)
    mid = s.trace_reuse().capacity_for(0.9)
    full = s.trace_reuse().capacity_for(1.0)
    assert sizes[hierarchy.INCLUSIVE] == [hbm, mid, full]
    assert sizes[hierarchy.EXCLUSIVE] == [hbm, mid, full - hbm - mid]
    df = page.hierarchy_table(s)
    assert len(df) == 2 * 2 * 3
    # the middle tier of the inclusive hierarchy is the cost_lru table's 90 % tier, GiB for GiB
    lru = page.lru_table(s)
    dram = df[(df["hierarchy"] == "host DRAM") & (df["mode"] == "inclusive") & (df["tier"] == "pcie5-x16")].iloc[0]
    assert dram["capacity_GiB"] == pytest.approx(lru[(lru["target"] == "90%")]["capacity_GiB"].iloc[0])
    # both hierarchies hold every achievable hit: 1 - 182,790 / 288,500 of the references
    assert df["hierarchy_hit_blocks_pct"].tolist() == pytest.approx([(1 - 182_790 / 288_500) * 100] * 12)
    # HBM is on top in both and of the same size: the same hits either way
    top = df[df["tier"] == "hbm"]["hit_blocks_pct"]
    assert top.nunique() == 1
    # no hierarchy costs less than the least-cost mix with perfect knowledge
    assert (df["hierarchy_usd_per_h"] >= df["lower_bound_usd_per_h"]).all()
    # NVMe wears; the others do not
    assert (
        df[df["medium"] != "nvme"]["nvme_wear_pct"].isna().all()
        and (df[df["medium"] == "nvme"]["nvme_wear_pct"] > 0).all()
    )


def test_the_hierarchy_from_the_streamed_histogram_is_the_replay_of_every_distance():
    # the page replays each hierarchy from the histogram of stack distances its streamed pass keeps; here the same
    # from the trace in memory, every reference's distance, and the recomputation of the reuses no tier serves
    from kvtier.formulas.cache import hierarchy
    from kvtier.report.pages import cost as page

    s = Scenario()
    r = s.trace_reuse()
    again = r.prev >= 0
    recompute = s.regen_costs().per_reference_s(r.trace, "batch")[again]
    rep = page.hierarchy_replays(s)
    for middle in page.HIERARCHIES:
        for mode in hierarchy.MODES:
            counts, _, cost = rep[(middle, mode)]
            whole = hierarchy.replay(r.distance, rep["sizes"][mode], mode)
            for field in ("hits", "admissions", "demotions"):
                assert getattr(counts, field).tolist() == getattr(whole, field).tolist()
            missed = hierarchy.serving_tier(r.distance[again], rep["sizes"][mode], mode) == 3
            # 1e-12: the same seconds summed in the order of their distances, not of the trace
            assert cost.recompute_usd_per_s * r.trace.duration_s == pytest.approx(
                float(recompute[missed].sum()) * s.tier_prices().accelerator_usd_per_s, rel=1e-12
            )
