"""An LRU tier priced in each medium (kvtier.formulas.lru_tier): each number worked out by hand in a comment.

The seed prices and link presets are those of ``tests/formulas/test_tiering.py``, shared from there.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from kvtier.formulas import lru_tier
from tests.formulas.test_tiering import LINKS, SEED, YEAR_5_S


def test_an_lru_tier_by_hand():
    # one request of 2 hit blocks (2 tokens of 1e9 B each) and 3 tokens of missed blocks written, over a trace of
    # 100 s, a 10e9-B tier
    traffic = lru_tier.LruTraffic(
        capacity_bytes=10e9,
        hit_ratio=0.4,
        hit_blocks=np.array([2.0]),
        hit_tokens=np.array([2.0]),
        written_tokens=3.0,
        recompute_avoided_s=720.0,
        prefill_s=1800.0,
        duration_s=100.0,
    )
    links = LINKS.pick(("pcie5-x16", "nvme-gen4-x4"))
    dram, nvme = lru_tier.lru_tiers(SEED, links, np.array([63e9, 5.6e9]), traffic, "batch", 1e9, 1, 1.0, YEAR_5_S)
    # holding: 10e9 B x 6.7126e-17 USD/(B s) = 6.7126e-7 USD/s in host DRAM; 10e9 x 1.9263e-18 = 1.9263e-8 on NVMe
    assert dram.hold_usd_per_s == pytest.approx(6.7126e-7, rel=1e-4)
    assert nvme.hold_usd_per_s == pytest.approx(1.9263e-8, rel=1e-4)
    # fetch over PCIe: 2e9 B / 63e9 B/s + 2 x 0.5 us = 0.0317470 s per 100 s = 3.17470e-4 busy, x 3/3600 USD/s
    assert dram.read_busy == pytest.approx((2e9 / 63e9 + 1e-6) / 100, rel=1e-9)
    assert dram.fetch_usd_per_s == pytest.approx(dram.read_busy * 3 / 3600, rel=1e-12)
    # recompute avoided: 720 s / 100 s = 7.2 accelerators x 3/3600 = 6e-3 USD/s; saved = that - fetch - hold
    assert dram.saved_accelerators == pytest.approx(7.2) and dram.prefill_accelerators == pytest.approx(18.0)
    # stated per the 18 accelerators the prefill keeps busy; 0.1 busy is stated per one, none busy per none (NaN)
    assert dram.accelerators == pytest.approx(18.0)
    assert dataclasses.replace(dram, prefill_accelerators=0.1).accelerators == 1.0
    assert math.isnan(dataclasses.replace(dram, prefill_accelerators=0.0).accelerators)
    # servers of 8: 18 / 8 = 2.25; of 32, at least one (18 / 32 = 0.56 would state per server 1.8 x the total)
    assert dram.servers(8) == pytest.approx(2.25) and dram.servers(32) == 1.0
    assert dram.saved_usd_per_s == pytest.approx(6e-3 - dram.fetch_usd_per_s - 6.7126e-7, rel=1e-4)
    # reads 2e9 B / 100 s = 2e7 B/s; writes 3e9 / 100 = 3e7 B/s: 3e7 / 63e9 of the link, 3e7 / 5.6e9 of the drive
    assert (nvme.read_bytes_per_s, nvme.write_bytes_per_s) == (pytest.approx(2e7), pytest.approx(3e7))
    assert dram.write_busy == pytest.approx(3e7 / 63e9) and nvme.write_busy == pytest.approx(3e7 / 5.6e9)
    # 3e7 B/s x 86,400 s / 10e9 B = 259.2 drive writes a day against 1 for 5 years: 259.2 x the rated writes
    assert nvme.drive_writes_per_day == pytest.approx(259.2)
    assert nvme.endurance_used == pytest.approx(259.2)
    assert np.isnan(dram.endurance_used)


def test_an_lru_tier_fetches_a_shard_over_a_slow_pageable_link():
    # the same request as above; a placement's link carries 2.5e8 B a token (a quarter of the token's KV), at 50 %
    # of the rate, each fetch at least 0.1 s: 2 x 2.5e8 / (63e9 x 0.5) + 2 x 0.5 us = 15.874 ms -> the 0.1 s floor
    traffic = lru_tier.LruTraffic(10e9, 0.4, np.array([2.0, 0.0]), np.array([2.0, 0.0]), 3.0, 720.0, 1800.0, 100.0)
    links = LINKS.pick(("pcie5-x16",))
    (dram,) = lru_tier.lru_tiers(
        SEED, links, np.array([63e9]), traffic, "batch", 1e9, 1, 1.0, 1.0, 0.1, 0.5, link_bytes_per_token=2.5e8
    )
    # a request with no hit fetches nothing (no floor): 0.1 s busy over 100 s
    assert dram.read_busy == pytest.approx(0.1 / 100, rel=1e-12)
    # the tier still reads and writes whole tokens' KV: 2e9 B and 3e9 B over 100 s
    assert (dram.read_bytes_per_s, dram.write_bytes_per_s) == (pytest.approx(2e7), pytest.approx(3e7))
    # with no floor: 2 x 2.5e8 / 31.5e9 + 2 x 0.5 us = 15.874 ms + 1 us
    (fast,) = lru_tier.lru_tiers(
        SEED, links, np.array([63e9]), traffic, "batch", 1e9, 1, 1.0, 1.0, 0.0, 0.5, link_bytes_per_token=2.5e8
    )
    assert fast.read_busy == pytest.approx((5e8 / 31.5e9 + 1e-6) / 100, rel=1e-12)


def test_an_lru_tier_of_a_trace_of_no_duration_has_no_rates():
    traffic = lru_tier.LruTraffic(10e9, 0.4, np.array([2.0]), np.array([2.0]), 3.0, 720.0, 1800.0, 0.0)
    (dram,) = lru_tier.lru_tiers(SEED, LINKS.pick(("pcie5-x16",)), np.array([63e9]), traffic, "batch", 1e9, 1, 1.0, 1.0)
    assert np.isnan(dram.saved_usd_per_s) and np.isnan(dram.write_busy)
    assert dram.capacity_bytes == 10e9
