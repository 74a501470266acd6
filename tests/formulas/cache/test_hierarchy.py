"""kvtier.formulas.cache.hierarchy: LRU hierarchies from stack distances, by hand and against a direct simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas.cache import hierarchy
from kvtier.formulas.cache.distances import stack_distances
from tests.oracles import simulate_hierarchy


def check(blocks: list[int], capacity: list[int], mode: str) -> hierarchy.Replay:
    got = hierarchy.replay(stack_distances(np.array(blocks, dtype=np.int64)), capacity, mode)
    hits, adm, dem = simulate_hierarchy(blocks, capacity, mode)
    assert got.hits.tolist() == hits
    assert got.admissions.tolist() == adm
    assert got.demotions.tolist() == dem
    return got


# references: a b a c b a d a   (ids 0 1 0 2 1 0 3 0), distances (blocks referenced in between):
#   a(-1) b(-1) a(1) c(-1) b(2) a(2) d(-1) a(1)
HAND = [0, 1, 0, 2, 1, 0, 3, 0]


def test_inclusive_by_hand():
    # tiers of 1 and 3 blocks: tier 0 serves d < 1 (none), tier 1 serves 1 <= d < 3 (all four reuses)
    r = check(HAND, [1, 3], hierarchy.INCLUSIVE)
    assert r.hits.tolist() == [0, 4]
    # tier 0 misses all 8 references and writes each; tier 1 misses the 4 first references
    assert r.admissions.tolist() == [8, 4]
    assert r.demotions.tolist() == [0, 0]
    assert r.misses == 4
    assert r.hit_ratio.tolist() == [0.0, 0.5]


def test_exclusive_by_hand():
    # tiers of 1 and 1 block: ranks [0, 1) and [1, 2): tier 1 serves the two d = 1 (idx 2 and 7)
    r = check(HAND, [1, 1], hierarchy.EXCLUSIVE)
    assert r.hits.tolist() == [0, 2]
    # tier 0 admits every reference it misses: all 8
    assert r.admissions.tolist() == [8, 0]
    # demotions into tier 1: references with d >= 1 (all 4 reuses) plus first references with at least
    # one distinct block before them (b, c, d: 3; a, the very first, finds tier 0 empty) -> 7
    assert r.demotions.tolist() == [0, 7]


def test_exclusive_holds_the_sum():
    # tiers of 1 and 2 (3 ranks in all): every reuse (d <= 2) hits; tier 1 serves 1 <= d < 3: all four
    r = check(HAND, [1, 2], hierarchy.EXCLUSIVE)
    assert r.hits.tolist() == [0, 4]
    # an inclusive hierarchy of the same tiers holds only 2 blocks: only the d = 1 reuses hit
    assert hierarchy.replay(stack_distances(np.array(HAND)), [1, 2], hierarchy.INCLUSIVE).hits.tolist() == [0, 2]


@settings(max_examples=150, deadline=None)
@given(
    blocks=st.lists(st.integers(0, 12), min_size=0, max_size=80),
    capacity=st.lists(st.integers(0, 6), min_size=1, max_size=3),
    mode=st.sampled_from(hierarchy.MODES),
)
def test_replay_equals_direct_simulation(blocks, capacity, mode):
    if mode == hierarchy.INCLUSIVE:
        capacity = sorted(capacity)
    check(blocks, capacity, mode)


def test_refuses_bad_hierarchies():
    with pytest.raises(ValueError, match="cannot fall"):
        hierarchy.bounds([4, 2], hierarchy.INCLUSIVE)
    with pytest.raises(ValueError, match="mode"):
        hierarchy.bounds([4], "victim")
    with pytest.raises(ValueError, match="blocks >= 0"):
        hierarchy.bounds([-1], hierarchy.EXCLUSIVE)


def test_traffic_by_hand():
    # the exclusive hand replay ([1, 1] blocks): hits [0, 2], writes [8, 7], over 10 s, blocks of 1e6 B
    r = hierarchy.replay(stack_distances(np.array(HAND)), [1, 1], hierarchy.EXCLUSIVE)
    t = hierarchy.tiers_traffic(
        r,
        ("hbm", "nvme-gen4-x4"),
        ("hbm", "nvme"),
        block_bytes=1e6,
        duration_s=10.0,
        read_bandwidth_bytes_per_s=np.array([1e12, 1e9]),
        write_bandwidth_bytes_per_s=np.array([1e12, 0.5e9]),
        latency_s=np.array([0.0, 1e-4]),
        transfers=2,
        hold_usd_per_byte_s=np.array([1e-9, 1e-12]),
        accelerator_usd_per_s=0.001,
        endurance_dwpd=1.0,
        endurance_period_s=5 * 86400.0,
        amortisation_s=10 * 86400.0,
    )
    hbm, nvme = t
    assert hbm.read_busy == 0.0 and hbm.fetch_usd_per_s == 0.0 and math.isnan(hbm.endurance_used)
    assert hbm.write_bytes_per_s == pytest.approx(8e6 / 10)  # 8 admissions x 1 MB over 10 s
    # NVMe: 2 hits x 1 MB / 10 s = 0.2 MB/s; each read 2 x 0.1 ms + 1e6 / 1e9 s = 1.2 ms -> 2.4 ms / 10 s
    assert nvme.read_bytes_per_s == pytest.approx(2e5)
    assert nvme.read_busy == pytest.approx(2.4e-4)
    assert nvme.fetch_usd_per_s == pytest.approx(2.4e-4 * 0.001)
    # 7 demotions x 1 MB / 10 s = 0.7 MB/s against 0.5 GB/s -> 1.4e-3 busy; a day: 60.48 GB over 1 MB -> 60,480
    assert nvme.write_bytes_per_s == pytest.approx(7e5)
    assert nvme.write_busy == pytest.approx(1.4e-3)
    assert nvme.drive_writes_per_day == pytest.approx(60480.0)
    # over 10 days 6.048e11 B against 1 DWPD x 1 MB x 5 days = 5e6 B -> 120,960 x
    assert nvme.endurance_used == pytest.approx(120960.0)
    assert nvme.hold_usd_per_s == pytest.approx(1e-12 * 1e6)
    assert nvme.hit_ratio == pytest.approx(2 / 8)
    # the same hierarchy placed: a quarter of each block over the link at 50 % of its rate, at least 2 ms a fetch:
    # 2 x 0.1 ms + 2.5e5 / 0.5e9 = 0.7 ms -> the 2 ms floor; 2 hits -> 4 ms busy over 10 s
    kw = {
        "block_bytes": 1e6,
        "duration_s": 10.0,
        "read_bandwidth_bytes_per_s": np.array([1e12, 1e9]),
        "write_bandwidth_bytes_per_s": np.array([1e12, 0.5e9]),
        "latency_s": np.array([0.0, 1e-4]),
        "transfers": 2,
        "hold_usd_per_byte_s": np.array([1e-9, 1e-12]),
        "accelerator_usd_per_s": 0.001,
        "endurance_dwpd": 1.0,
        "endurance_period_s": 5 * 86400.0,
        "amortisation_s": 10 * 86400.0,
    }
    placed = hierarchy.tiers_traffic(
        r, ("hbm", "nvme-gen4-x4"), ("hbm", "nvme"), **kw, min_transfer_s=2e-3, efficiency=0.5, link_block_bytes=2.5e5
    )[1]
    assert placed.read_busy == pytest.approx(4e-3 / 10)
    # the drive still reads and writes whole blocks
    assert (placed.read_bytes_per_s, placed.write_bytes_per_s) == (pytest.approx(2e5), pytest.approx(7e5))


def test_hbm_left_beside_the_weights():
    # the placement's shard of the weights on each accelerator: a 35 GB shard (140 GB at TP 4) on 80 GB leaves 45 GB
    assert hierarchy.hbm_left_bytes(80e9, 35e9) == pytest.approx(45e9)
    # 16 GB of weights on one 80 GB accelerator: 64 GB left
    assert hierarchy.hbm_left_bytes(80e9, 16e9) == pytest.approx(64e9)
    # a shard that does not fit leaves nothing (issue 43: no implicit split of the placement's own): 140 GB on 80 GB
    assert hierarchy.hbm_left_bytes(80e9, 140e9) == 0.0
    assert hierarchy.hbm_left_bytes(0.0, 1e9) == 0.0


def test_hierarchy_cost_by_hand():
    t = [
        hierarchy.TierTraffic("hbm", "hbm", 1.0, 0.1, 0, 0, 0, 0, 0, math.nan, hold_usd_per_s=2.0, fetch_usd_per_s=0.0),
        hierarchy.TierTraffic("x", "nvme", 1.0, 0.1, 0, 0, 0, 0, 0, 0, hold_usd_per_s=0.5, fetch_usd_per_s=0.25),
    ]
    # 40 accelerator-seconds of missed reuses over 10 s at 0.5 USD/s: 2 USD/s; total 2 + 0.5 + 0.25 + 2 = 4.75
    c = hierarchy.hierarchy_cost(t, 40.0, 0.5, 10.0)
    assert (c.hold_usd_per_s, c.fetch_usd_per_s, c.recompute_usd_per_s) == (2.5, 0.25, 2.0)
    assert c.usd_per_s == 4.75
    assert math.isnan(hierarchy.hierarchy_cost(t, 40.0, 0.5, 0.0).recompute_usd_per_s)
