"""The cost page's break-even intervals: by hand for host DRAM, and how each price moves them."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas import economics
from kvtier.report.pages.cost import intervals
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
    df = intervals.long_table(Scenario())
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
    base = _row(intervals.long_table(s), "hbm")["keep_usd_s"]
    assert base == pytest.approx(140e9 / (3.35e12 * 0.8) * 80e9 / (5_242_880 * 0.5), rel=1e-9)
    dearer = _row(intervals.long_table(s, {"cost.accelerator_hour": 5 / 3600}), "hbm")["keep_usd_s"]
    assert dearer == pytest.approx(base, rel=1e-12)


def test_a_dearer_accelerator_lengthens_every_interval_below_hbm():
    s = Scenario()
    cheap = intervals.long_table(s, {"cost.accelerator_hour": 2 / 3600})
    dear = intervals.long_table(s, {"cost.accelerator_hour": 5 / 3600})
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
    low = intervals.long_table(s, {key: s.v(f"{key}_low")})
    high = intervals.long_table(s, {key: s.v(f"{key}_high")})
    own = low["medium"] == medium
    assert (high["keep_usd_s"][own] < low["keep_usd_s"][own]).all()
    assert np.allclose(high["keep_usd_s"][~own], low["keep_usd_s"][~own], rtol=1e-12)


def test_a_dearer_hbm_share_shortens_hbm_and_gray_intervals():
    s = Scenario()
    low = intervals.long_table(s, {"cost.hbm_share": 0.05})
    high = intervals.long_table(s, {"cost.hbm_share": 1.0})
    hbm = low["medium"] == "hbm"
    assert (high["keep_usd_s"][hbm] < low["keep_usd_s"][hbm]).all()
    assert (high["hbm_over_tier_s"][~hbm] < low["hbm_over_tier_s"][~hbm]).all()
