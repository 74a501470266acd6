"""The tier-pricing model (kvtier.formulas.tiering): each number worked out by hand in a comment.

The seed prices are typed in here as seed.yaml states them, so that these tests read no
assumption set: 3 USD/h for the accelerator, HBM half of it over 80 GB, host DRAM 10 USD/GB,
CXL memory 12 USD/GB, NVMe 0.3 USD/GB, written off over 5 years, energy at 0.09 USD/kWh,
DRAM drawing 0.15 W/GB and NVMe 1 mW/GB, boards at 467 W (lone block) and 700 W (batch).
"""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas import economics, tiering
from kvtier.formulas.tiering import Block, Prices, Tiers

YEAR_5_S = 5 * 365.25 * 86400  # 157,788,000 s
SEED = Prices(
    accelerator_usd_per_s=3 / 3600,
    hbm_share=0.5,
    hbm_bytes=80e9,
    dram_usd_per_byte=10e-9,
    cxl_usd_per_byte=12e-9,
    nvme_usd_per_byte=0.3e-9,
    amortisation_s=YEAR_5_S,
    usd_per_j=0.09 / 3.6e6,
    dram_w_per_byte=0.15e-9,
    nvme_w_per_byte=1e-12,
    power_lone_w=467.0,
    power_batch_w=700.0,
)
# four of the link presets (hardware.yaml): bandwidth B/s, latency s
LINKS = Tiers(
    ("hbm", "pcie5-x16", "cxl2-x8", "nvme-gen4-x4"),
    np.array([3.35e12, 63e9, 31.5e9, 7e9]),
    np.array([0.0, 0.5e-6, 0.5e-6, 60e-6]),
)
# Llama-3-70B's 16-token block: 16 x 327,680 B = 5 MiB; regenerated alone it streams 140e9 B of weights at
# 3.35e12 B/s x 0.8 = 52.2388 ms; inside a batch its FLOPs, 2 x 70e9 x 16 = 2.24e12 and 3.5652e8 of attention
# within the block, at 500e12 x 0.25 FLOP/s take 17.9229 ms
SMALL = Block(
    tokens=16,
    block_bytes=5_242_880.0,
    transfers=1,
    regen_s={"lone": 140e9 / (3.35e12 * 0.8), "batch": 0.01792285212672},
)


def test_each_tier_name_maps_to_the_medium_behind_it():
    # HBM is itself; CXL and NVMe links reach their own media; PCIe, NVLink-C2C and RDMA reach host DRAM
    got = [
        tiering.medium(t)
        for t in ("hbm", "cxl2-x8", "cxl3-x16", "nvme-gen5-x4", "pcie6-x16", "nvlink-c2c", "rdma-400g")
    ]
    assert got == ["hbm", "cxl", "cxl", "nvme", "dram", "dram", "dram"]
    assert LINKS.media == ("hbm", "dram", "cxl", "nvme")


def test_holding_prices_per_byte_second_by_hand():
    usd = tiering.hold_usd_per_byte_s(SEED)
    # HBM: 3/3600 USD/s x 0.5 / 80e9 B = 5.2083e-15 USD/(B s)
    assert usd["hbm"] == pytest.approx(3 / 3600 * 0.5 / 80e9, rel=1e-12)
    assert usd["hbm"] == pytest.approx(5.2083e-15, rel=1e-4)
    # energy to hold DRAM: 0.15e-9 W/B x 0.09 USD / 3.6e6 J = 3.75e-18 USD/(B s)
    # host DRAM: 10e-9 USD/B / 157,788,000 s = 6.3376e-17, + 3.75e-18 = 6.7126e-17 USD/(B s)
    assert usd["dram"] == pytest.approx(6.7126e-17, rel=1e-4)
    # CXL memory: 12e-9 / 157,788,000 = 7.6051e-17, + 3.75e-18 (DRAM's power) = 7.9801e-17 USD/(B s)
    assert usd["cxl"] == pytest.approx(7.9801e-17, rel=1e-4)
    # NVMe: 0.3e-9 / 157,788,000 = 1.9013e-18, + 1e-12 W/B x 2.5e-8 USD/J = 2.5e-20: 1.9263e-18 USD/(B s)
    assert usd["nvme"] == pytest.approx(1.9263e-18, rel=1e-4)
    # joules: HBM, host DRAM and CXL memory draw DRAM's 0.15 W/GB = 1.5e-10 W/B; NVMe 1 mW/GB = 1e-12 W/B
    assert tiering.hold_w_per_byte(SEED) == {"hbm": 1.5e-10, "dram": 1.5e-10, "cxl": 1.5e-10, "nvme": 1e-12}


def test_fetch_times_per_tier_and_none_from_hbm():
    got = tiering.fetch_s(LINKS, 5_242_880.0, 1)
    # HBM: used where it lies, 0; PCIe 5.0 x16: 0.5 us + 5,242,880 B / 63e9 B/s = 83.7203 us;
    # CXL 2.0 x8: 0.5 us + 5,242,880 / 31.5e9 = 166.9406 us; NVMe 4.0 x4: 60 us + 5,242,880 / 7e9 = 808.9829 us
    assert got.tolist() == pytest.approx([0.0, 83.7203e-6, 166.9406e-6, 808.9829e-6], rel=1e-6)
    # a paged cache in 160 transfers pays the latency 160 times: CXL 160 x 0.5 us + 166.4406 us = 246.4406 us
    assert tiering.fetch_s(LINKS, 5_242_880.0, 160)[2] == pytest.approx(246.4406e-6, rel=1e-6)


def test_the_cxl_tier_s_intervals_for_a_lone_16_token_block_by_hand():
    iv = tiering.intervals(SEED, LINKS, SMALL, "lone")
    cxl = iv.at("cxl2-x8")
    # recomputing: 52.2388 ms x 3/3600 USD/s = 4.35323e-5 USD; x 467 W = 24.3955 J
    assert iv.recompute_usd == pytest.approx(4.35323e-5, rel=1e-5)
    assert iv.recompute_j == pytest.approx(24.3955, rel=1e-5)
    # one fetch over CXL 2.0 x8: 166.9406 us x 3/3600 = 1.39117e-7 USD; x 467 W = 0.0779613 J
    assert cxl["fetch_usd"] == pytest.approx(1.39117e-7, rel=1e-5)
    # holding 5,242,880 B: 7.9801e-17 x 5,242,880 = 4.18391e-10 USD/s
    # dollars: (4.35323e-5 - 1.39117e-7) / 4.18391e-10 = 103,715 s = 28.81 h (the cost page's 28.8 h)
    assert cxl["keep_usd_s"] == pytest.approx(103_715, rel=1e-4)
    # joules: (24.3955 - 0.0779613) / (1.5e-10 x 5,242,880 = 7.86432e-4 W) = 30,921 s = 8.589 h
    assert cxl["keep_j_s"] == pytest.approx(30_921, rel=1e-4)
    # Gray: keep it in HBM rather than fetch it from CXL while 1.39117e-7 / (5.2083e-15 x 5,242,880 = 2.73067e-8)
    # = 5.0946 s
    assert cxl["hbm_over_tier_s"] == pytest.approx(5.0946, rel=1e-4)
    # HBM itself: nothing to fetch, so 4.35323e-5 / 2.73067e-8 = 1,594.2 s = 26.6 min, and no Gray interval
    hbm = iv.at("hbm")
    assert (hbm["fetch_s"], hbm["hbm_over_tier_s"]) == (0.0, 0.0)
    assert hbm["keep_usd_s"] == pytest.approx(1_594.2, rel=1e-4)


def test_a_batch_block_is_cheaper_to_recompute_and_burns_the_batch_power():
    iv = tiering.intervals(SEED, LINKS, SMALL, "batch")
    # 17.9229 ms x 3/3600 = 1.49357e-5 USD; x 700 W = 12.5460 J
    assert (iv.recompute_usd, iv.recompute_j) == pytest.approx((1.49357e-5, 12.5460), rel=1e-5)
    # host DRAM over PCIe 5.0 x16: (1.49357e-5 - 83.7203e-6 x 3/3600) / (6.7126e-17 x 5,242,880) = 42,242 s = 11.73 h
    assert iv.at("pcie5-x16")["keep_usd_s"] == pytest.approx(42_242, rel=1e-4)


def test_a_fetch_dearer_than_recomputing_is_never_worth_holding():
    # a 1 kB/s link: 5,242,880 B take 5,243 s, far more than the 52 ms recomputation: interval 0, not negative
    slow = Tiers(("pcie5-x16",), np.array([1e3]), np.array([0.0]))
    iv = tiering.intervals(SEED, slow, SMALL, "lone")
    assert iv.keep_usd_s.tolist() == [0.0] and iv.keep_j_s.tolist() == [0.0]


def test_the_grid_holds_every_block_and_regime_in_order():
    large = Block(tokens=512, block_bytes=167_772_160.0, transfers=1, regen_s={"lone": 0.576194, "batch": 0.576194})
    grid = tiering.interval_grid(SEED, LINKS, [SMALL, large])
    assert list(grid) == [(16, "lone"), (16, "batch"), (512, "lone"), (512, "batch")]
    # a 512-token block both regimes regenerate in 576.194 ms: the same dollars, 700/467 = 1.4989 times the joules
    assert grid[(512, "batch")].recompute_usd == grid[(512, "lone")].recompute_usd
    assert grid[(512, "batch")].recompute_j / grid[(512, "lone")].recompute_j == pytest.approx(700 / 467)


def test_vary_moves_one_price_and_refuses_an_unknown_one():
    dear = tiering.vary(SEED, "cxl_usd_per_byte", 25e-9)
    assert dear.cxl_usd_per_byte == 25e-9 and dear.dram_usd_per_byte == SEED.dram_usd_per_byte
    with pytest.raises(ValueError, match="no field 'cxl_gb'"):
        tiering.vary(SEED, "cxl_gb", 1.0)


def test_swing_is_the_larger_over_the_smaller_and_undefined_at_zero():
    # 8 / 2 = 4 either way round; a 0 or an undefined cost has no swing
    assert tiering.swing(2.0, 8.0) == tiering.swing(8.0, 2.0) == 4.0
    assert tiering.swing(0.0, 5.0) is None and tiering.swing(None, 1.0) is None


def test_the_tornado_ranks_the_cxl_price_first_and_the_power_moves_only_joules():
    ends = {
        # CXL memory from 5 to 25 USD/GB
        "cost.cxl_gb": (tiering.vary(SEED, "cxl_usd_per_byte", 5e-9), tiering.vary(SEED, "cxl_usd_per_byte", 25e-9)),
        # the board power from the lone block's 467 W to the batch's 700 W
        "energy.power_lone": (SEED, tiering.vary(SEED, "power_lone_w", 700.0)),
    }
    rows = tiering.interval_tornado(SEED, ends, LINKS, SMALL)
    assert [r["input"] for r in rows] == ["cost.cxl_gb", "energy.power_lone"]
    cxl, power = rows
    # CXL holding at 5 USD/GB: 5e-9 / 157,788,000 + 3.75e-18 = 3.5438e-17; at 25: 1.58440e-16 + 3.75e-18 = 1.6219e-16;
    # the numerator (recompute - fetch) does not move, so the interval swings by 1.6219e-16 / 3.5438e-17 = 4.5767
    assert cxl["swing_usd"] == pytest.approx(4.5767, rel=1e-4)
    assert cxl["keep_usd_base_s"] == pytest.approx(103_715, rel=1e-4)
    # a dollar price moves no joule
    assert cxl["swing_j"] == 1.0
    # power: 700 W recomputing and fetching against the same holding power: the joule interval x 700/467 = 1.4989;
    # the dollars do not move
    assert power["swing_j"] == pytest.approx(700 / 467, rel=1e-12) and power["swing_usd"] == 1.0


# ---- a trace's mix: two tiers with round numbers ------------------------------------------
# the accelerator at 1 USD/s; HBM its whole price over 1 B: 1 USD/(B s); host DRAM 0.1 USD/B over 1 s and no power:
# 0.1 USD/(B s); a 1-byte block fetched over 1 B/s with 4 s latency: 5 s, 5 USD; recomputing it takes 20 s: 20 USD
ROUND = Prices(1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0)
TWO = Tiers(("hbm", "pcie5-x16"), np.array([1e12, 1.0]), np.array([0.0, 4.0]))
BYTE = Block(tokens=1, block_bytes=1.0, transfers=1, regen_s={"lone": 20.0, "batch": 20.0})
DT = np.array([1.0, 5.0, 6.0, 100.0, 200.0])


def test_the_mix_serves_each_reuse_the_cheapest_way():
    mix = tiering.trace_mix(ROUND, TWO, BYTE, "batch", DT, 100.0)
    # HBM costs 1 x dt, DRAM 0.1 x dt + 5, recomputing 20: HBM below dt = 5 / 0.9 = 5.56 s (1, 5), DRAM up to
    # (20 - 5) / 0.1 = 150 s (6, 100), recomputing beyond (200): shares 2/5, 2/5, 1/5
    assert mix.share.tolist() == [0.4, 0.4, 0.2]
    # per second: holding (1 + 5) x 1 + (6 + 100) x 0.1 = 16.6 USD, fetching 2 x 5 = 10, recomputing 20: 46.6 / 100 s
    assert mix.usd_per_s == pytest.approx(0.466)
    assert tiering.by_medium(mix.share, TWO.names) == pytest.approx(
        {"hbm": 0.4, "dram": 0.4, "cxl": 0.0, "nvme": 0.0, "recompute": 0.2}
    )
    # Little's law: HBM holds 6 B s / 100 s = 0.06 B, host DRAM 106 / 100 = 1.06 B: DRAM holds the most
    assert tiering.largest_medium(mix, TWO.names) == "dram"


def test_by_medium_adds_the_tiers_of_one_medium():
    # two DRAM tiers and a CXL one: DRAM 1 + 2 = 3, CXL 4, recomputation 5 (last)
    got = tiering.by_medium([1.0, 2.0, 4.0, 5.0], ("pcie5-x16", "nvlink-c2c", "cxl2-x8"))
    assert got == {"hbm": 0.0, "dram": 3.0, "cxl": 4.0, "nvme": 0.0, "recompute": 5.0}


def test_a_mix_that_holds_nothing_has_no_largest_medium():
    # every reuse 1,000 s on: DRAM would cost 0.1 x 1,000 + 5 = 105 > 20, so every reuse is recomputed
    mix = tiering.trace_mix(ROUND, TWO, BYTE, "lone", np.array([1_000.0]), 1_000.0)
    assert mix.share.tolist() == [0.0, 0.0, 1.0] and tiering.largest_medium(mix, TWO.names) is None


def test_the_mix_tornado_ranks_by_the_swing_of_the_cost_per_second():
    ends = {
        "cost.hbm_share": (tiering.vary(ROUND, "hbm_share", 0.5), tiering.vary(ROUND, "hbm_share", 2.0)),
        "cost.dram_gb": (tiering.vary(ROUND, "dram_usd_per_byte", 0.05), tiering.vary(ROUND, "dram_usd_per_byte", 0.2)),
    }
    rows = tiering.mix_tornado(ROUND, ends, TWO, BYTE, "batch", DT, 100.0)
    assert [r["input"] for r in rows] == ["cost.dram_gb", "cost.hbm_share"]
    dram, hbm = rows
    # DRAM at 0.05: HBM below 5 / 0.95 = 5.26 s (1, 5: 6 USD), DRAM up to 15 / 0.05 = 300 s (6, 100, 200:
    # 306 x 0.05 = 15.3 USD held, 3 x 5 = 15 fetched): 36.3 USD / 100 s = 0.363 USD/s; DRAM holds 3.06 B
    # DRAM at 0.2: HBM below 5 / 0.8 = 6.25 s (1, 5, 6: 12 USD), DRAM up to 15 / 0.2 = 75 s (none), 100 and 200
    # recomputed (40 USD): 0.52 USD/s; HBM holds 0.12 B, DRAM none
    assert (dram["usd_per_s_at_low"], dram["usd_per_s_at_high"]) == pytest.approx((0.363, 0.52))
    assert (dram["largest_at_low"], dram["largest_at_high"], dram["largest_base"]) == ("dram", "hbm", "dram")
    # 0.52 / 0.363 = 1.43251
    assert dram["swing"] == pytest.approx(0.52 / 0.363) and dram["usd_per_s_base"] == pytest.approx(0.466)
    # HBM at half: below 5 / 0.4 = 12.5 s (1, 5, 6: 6 USD), DRAM 100 (10 + 5), 200 recomputed (20): 0.41 USD/s;
    # HBM at twice: below 5 / 1.9 = 2.63 s (1: 2 USD), DRAM 5, 6, 100 (11.1 + 15), 200 recomputed (20): 0.481 USD/s
    assert hbm["swing"] == pytest.approx(0.481 / 0.41)


def test_a_mix_tornado_of_a_trace_of_no_duration_has_no_swing():
    # two reuses at once over a trace of 0 s: no cost per second at any price, so no swing, and HBM holds them
    ends = {"cost.dram_gb": (tiering.vary(ROUND, "dram_usd_per_byte", 0.05), ROUND)}
    (row,) = tiering.mix_tornado(ROUND, ends, TWO, BYTE, "batch", np.array([0.0, 0.0]), 0.0)
    assert row["usd_per_s_base"] is None and row["swing"] is None
    # byte-seconds held are all 0 at dt = 0: no medium holds any
    assert row["largest_base"] is None


def test_pick_orders_the_tiers_as_a_ladder():
    ladder = LINKS.pick(("cxl2-x8", "hbm"))
    assert ladder.names == ("cxl2-x8", "hbm")
    assert ladder.bandwidth_bytes_per_s.tolist() == [31.5e9, 3.35e12] and ladder.latency_s.tolist() == [0.5e-6, 0.0]


def test_the_board_power_follows_what_binds_the_pass_not_the_regime():
    # a 512-token block regenerated alone is compute-bound: 0.576194 s x 700 W = 403.336 J, not x 467 W
    large = Block(
        tokens=512,
        block_bytes=167_772_160.0,
        transfers=1,
        regen_s={"lone": 0.576194, "batch": 0.576194},
        bound={"lone": "compute", "batch": "compute"},
    )
    lone = tiering.intervals(SEED, LINKS, large, "lone")
    assert lone.recompute_j == pytest.approx(0.576194 * 700.0, rel=1e-12)
    assert lone.recompute_j == pytest.approx(tiering.intervals(SEED, LINKS, large, "batch").recompute_j, rel=1e-12)
    # with no bound given a lone block is memory-bound: 52.2388 ms x 467 W = 24.3955 J
    assert tiering.intervals(SEED, LINKS, SMALL, "lone").recompute_j == pytest.approx(0.0522388 * 467.0, rel=1e-5)
    assert SEED.power_w("memory") == 467.0 and SEED.power_w("compute") == 700.0


def test_a_mix_charges_each_reuse_its_own_recompute_and_finds_the_peak():
    # two reuses 10 s apart of a 1-byte block in one tier at 1 USD per byte-second and no fetch: holding costs 10 USD;
    # recomputing the first costs 5 (recompute it), the second 50 (hold it)
    one = Tiers(("pcie5-x16",), np.array([1e9]), np.array([0.0]))
    prices = tiering.vary(SEED, "dram_usd_per_byte", 1.0 * SEED.amortisation_s)  # 1 USD/(B s), + 3.75e-18 of energy
    accel = SEED.accelerator_usd_per_s
    byte = Block(tokens=1, block_bytes=1.0, transfers=1, regen_s={"lone": 1.0, "batch": 1.0})
    mix = tiering.trace_mix(
        prices,
        one,
        byte,
        "batch",
        np.array([10.0, 10.0]),
        100.0,
        recompute_s=np.array([5.0, 50.0]) / accel,
        reuse_at_s=np.array([20.0, 25.0]),
    )
    assert mix.share.tolist() == [0.5, 0.5]
    assert mix.recompute_usd == pytest.approx(5.0) and mix.recompute_all_usd == pytest.approx(55.0)
    # the held one occupies [15, 25): one block at its peak
    assert mix.peak_bytes_held.tolist() == [1.0, 0.0]


def test_peak_held_counts_overlaps_and_not_a_handover():
    # [0, 10) and [5, 15) overlap: 2; [10, 20) starts as [0, 10) ends: not counted twice; [3, 3) is never open
    assert economics.peak_held([0.0, 5.0], [10.0, 15.0]) == 2.0
    assert economics.peak_held([0.0, 10.0], [10.0, 20.0]) == 1.0
    assert economics.peak_held([3.0], [3.0]) == 0.0
    assert economics.peak_held([], []) == 0.0
