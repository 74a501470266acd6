"""One deployment resolved once: fetch per tier and layout, ratios per regime, break-evens, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.deployment import Deployment
from kvtier.formulas import tiering
from kvtier.scenario import Scenario

MIB5 = 5 * 2**20  # 5,242,880 B: a 16-token Llama-3-70B block (16 x 327,680 B)


def _hand() -> Deployment:
    """Two tiers with round numbers: 7 GB/s at 60 us a transfer (an NVMe drive), 63 GB/s at 9 us (host DRAM)."""
    block = tiering.Block(tokens=16, block_bytes=MIB5, transfers=1, regen_s={"lone": 52e-3, "batch": 18e-3})
    tiers = tiering.Tiers(("nvme", "host"), np.array([7e9, 63e9]), np.array([60e-6, 9e-6]))
    return Deployment(Scenario(), block, tiers, {"contiguous": 1, "per-layer": 160})


def test_fetch_and_ratio_per_layout_and_regime_by_hand():
    d = _hand()
    # NVMe contiguous: 60 us + 5,242,880 / 7e9 = 60 + 748.983 = 808.983 us; per layer: 160 x 60 + 748.983 = 10,348.98 us
    assert d.fetch_s("contiguous")[0] == pytest.approx(808.983e-6, rel=1e-6)
    assert d.fetch_s("per-layer")[0] == pytest.approx(10_348.983e-6, rel=1e-6)
    # host per layer: 160 x 9 + 83.22 = 1,523.22 us; in a batch 18 ms / 1,523.22 us = 11.817
    assert d.ratio("batch", "per-layer")[1] == pytest.approx(18e-3 / 1_523.2203e-6, rel=1e-6)
    # NVMe per layer in a batch: 18 / 10.349 = 1.739 (wins); alone 52 / 10.349 = 5.02
    assert d.ratio("batch", "per-layer")[0] == pytest.approx(1.7393, rel=1e-4)
    assert d.fetch_wins("batch", "per-layer").tolist() == [True, True]
    assert d.n_fetch_wins("lone", "contiguous") == 2


def test_break_evens_by_hand():
    d = _hand()
    # bandwidth at which NVMe per layer in a batch breaks even: 5,242,880 B / (18,000 - 9,600 us) = 624.15 MB/s
    assert d.break_even_bandwidth("batch", "per-layer")[0] == pytest.approx(MIB5 / 8.4e-3, rel=1e-9)
    # latency per transfer at which it breaks even: (18,000 - 748.983) / 160 = 107.819 us
    assert d.break_even_latency("batch", "per-layer")[0] == pytest.approx(107.8186e-6, rel=1e-5)
    # transfers it may take: (18,000 - 748.983) / 60 = 287.52; host: (18,000 - 83.22) / 9 = 1,990.8
    assert d.break_even_transfers("batch") == pytest.approx([287.517, 1_990.75], rel=1e-5)
    # a regeneration shorter than the bytes alone: no bandwidth/latency/count rescues the fetch
    slow = Deployment(d.scenario, tiering.Block(16, MIB5, 1, {"lone": 0.5e-3, "batch": 0.5e-3}), d.tiers, d.transfers)
    assert slow.break_even_latency("batch", "contiguous")[0] == 0.0  # 500 us < 749 us of bytes
    assert slow.break_even_transfers("batch")[0] == 0.0
    assert np.isinf(slow.break_even_bandwidth("batch", "per-layer")[0])  # 160 x 60 us > 500 us


def test_a_scenario_resolves_once_without_hbm():
    s = Scenario()
    d = Deployment.of(s)
    assert Deployment.of(s) is d
    assert "hbm" not in d.tiers.names and "pcie5-x16" in d.tiers.names
    assert d.transfers == {"contiguous": 1, "per-layer": 160}  # 80 layers x (K, V)
    assert d.block.block_bytes == MIB5
    # the seed's tail block inside a batch: 2 x 70e9 x 16 = 2.24e12 FLOP of parameters plus attention over its own
    # 16 x 17 / 2 = 136 positions at 2,621,440 FLOP each = 3.565e8 FLOP; at 25 % of 500 TFLOP/s: 17.92285 ms
    assert d.regen_s("batch") == pytest.approx((2.24e12 + 136 * 2_621_440) / 1.25e14, rel=1e-12)
    assert Deployment.of(Scenario()) is not d


def test_the_best_tier_is_the_largest_saving_its_device_can_carry():
    d = Deployment.of(Scenario())
    best, feasible = d.best_tier()
    plan = {t.tier: t for t in d.plan()}
    # NVMe would admit 8.90 GB/s of misses against a 5.6 GB/s drive (159 %): it cannot carry the tier;
    # of the other two, host DRAM saves more (56.23 against CXL's 55.78 USD/h): cheaper to hold and to fetch
    assert plan["nvme-gen4-x4"].write_busy > 1 and feasible
    assert best.tier == "pcie5-x16"
    assert best.saved_usd_per_s > plan["cxl2-x8"].saved_usd_per_s
