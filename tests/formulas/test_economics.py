"""kvtier.formulas.economics: keep intervals, prices and savings worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas import economics

YEAR_S = 365.25 * 86400.0  # a Julian year: 31,557,600 s


def test_capacity_price_without_power_is_purchase_over_amortisation():
    # 10 USD/GB = 1e-8 USD/B written off over five years (157,788,000 s):
    # 1e-8 / 1.57788e8 = 6.33761e-17 USD/(B s); no power term unless one is given
    assert float(economics.capacity_price_per_byte_s(10e-9, 5 * YEAR_S)) == pytest.approx(6.337617e-17, rel=1e-6)


def test_capacity_price_with_power_or_price_alone_adds_nothing():
    # a holding power with no energy price (or a price with no power) costs nothing more: 1e-8 / 1e8 = 1e-16
    assert float(economics.capacity_price_per_byte_s(1e-8, 1e8, hold_w_per_byte=1.5e-10)) == pytest.approx(1e-16)
    assert float(economics.capacity_price_per_byte_s(1e-8, 1e8, usd_per_joule=2.5e-8)) == pytest.approx(1e-16)


def test_capacity_price_adds_the_energy_it_draws_while_holding():
    # 1e-8 USD/B over 1e8 s = 1e-16; plus 0.15 W/GB = 1.5e-10 W/B at 0.09 USD/kWh = 2.5e-8 USD/J:
    # 1.5e-10 x 2.5e-8 = 3.75e-18; total 1.0375e-16 USD/(B s)
    value = economics.capacity_price_per_byte_s(1e-8, 1e8, 1.5e-10, 0.09 / 3.6e6)
    assert float(value) == pytest.approx(1.0375e-16, rel=1e-12)


def test_hbm_price_is_the_accelerators_share_spread_over_its_capacity():
    # 3 USD/h = 1/1200 USD/s; half of it over 141e9 B: (1/1200) x 0.5 / 141e9 = 2.95508e-15 USD/(B s)
    assert float(economics.hbm_price_per_byte_s(3 / 3600, 0.5, 141e9)) == pytest.approx(2.955083e-15, rel=1e-6)


def test_time_cost_is_seconds_times_the_rate():
    # 2 s at 1.5 USD/s = 3 USD; 0.5 s at 400 W = 200 J
    assert economics.time_cost([2.0, 0.5], [1.5, 400.0]).tolist() == [3.0, 200.0]


def test_integers_are_read_as_floats_and_do_not_wrap():
    # 2**62 s x 4 = 2**64 = 1.8446744073709552e19: as int64 it would wrap to 0
    result = economics.time_cost(2**62, 4)
    assert result.dtype == np.float64
    assert float(result) == 2.0**64
    # whole-number prices give a float interval: (3 - 1) / 4 = 0.5 s, not 0
    assert float(economics.keep_interval_s(3, 1, 4)) == 0.5


def test_tier_costs_has_one_row_per_tier_and_one_for_recomputing():
    # intervals 10 s and 20 s; tiers (hold 1, fetch 0) and (hold 0.1, fetch 5); recompute 20:
    # tier 0: 1 x 10 + 0 = 10, 1 x 20 + 0 = 20; tier 1: 0.1 x 10 + 5 = 6, 0.1 x 20 + 5 = 7; last row 20, 20
    costs = economics.tier_costs([10.0, 20.0], [1.0, 0.1], [0.0, 5.0], 20.0)
    assert costs.shape == (3, 2)
    assert costs.tolist() == [[10.0, 20.0], [6.0, 7.0], [20.0, 20.0]]


def test_a_tie_goes_to_the_faster_tier():
    # at 10 s: tier 0 costs 1 x 10 = 10, tier 1 costs 0.5 x 10 + 5 = 10, recomputing 10: tier 0 wins
    assert economics.cheapest_tier([10.0], [1.0, 0.5], [0.0, 5.0], 10.0).tolist() == [0]


def test_a_trace_with_no_reuse_holds_nothing_and_costs_nothing():
    # no reuses: every share 0 (not 0/0), nothing held, no cost
    mix = economics.tier_mix([], 100.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0)
    assert mix.share.tolist() == [0.0, 0.0, 0.0]
    assert mix.bytes_held.tolist() == [0.0, 0.0, 0.0]
    assert mix.usd_per_s == 0.0
    assert mix.recompute_all_usd_per_s == 0.0


def test_distinct_intervals_with_their_counts_make_the_same_mix():
    # reuses after 5, 5, 5, 50 and 50 s; holding 1 USD/s (fast) or 0.1 USD/s and 5 USD a fetch; recomputing 20 USD.
    # 5 s: fast 5, slow 5.5, so fast; 50 s: fast 50, slow 10, recompute 20, so slow
    each = economics.tier_mix([5.0, 5.0, 5.0, 50.0, 50.0], 100.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0)
    counted = economics.tier_mix([5.0, 50.0], 100.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0, weights=[3, 2])
    assert counted.share.tolist() == each.share.tolist() == [0.6, 0.4, 0.0]
    assert counted.byte_s_held.tolist() == each.byte_s_held.tolist() == [15.0, 100.0, 0.0]
    # 15 x 1 + 100 x 0.1 = 25 USD held, 2 x 5 fetched, against 5 x 20 = 100 USD recomputing everything
    assert (counted.hold_usd, counted.fetch_usd, counted.recompute_all_usd) == pytest.approx((25.0, 10.0, 100.0))
    assert (counted.reuses, counted.usd) == (5, pytest.approx(each.usd))
    with pytest.raises(ValueError, match="not weights"):
        economics.MixTally(1.0, [1.0], [0.0], peak=True).add([1.0], 1.0, weights=[2.0])


def test_count_at_adds_one_per_index_repeats_included():
    # indices 0, 2, 2, 5, 2: counts[0] = 1, counts[2] = 3, counts[5] = 1, as np.add.at(counts, at, 1) gives
    at = np.array([0, 2, 2, 5, 2], dtype=np.int64)
    for kernel in (economics._count_at, economics._count_at.py_func):
        counts = np.zeros(6, dtype=np.int32)
        kernel(counts, at)
        assert counts.tolist() == [1, 0, 3, 0, 0, 1]


def test_the_joint_peak_is_the_busiest_instant_of_all_tiers_together():
    from kvtier.formulas.economics import MixTally

    # two tiers of 1-byte blocks: tier 0 holds at 10 USD/(B s) and fetches free, tier 1 holds at 1 and fetches for
    # 5, recomputing costs 100. A reuse 0.1 s away goes to tier 0 (1 USD against 5.1), one 2 s away to tier 1 (7
    # against 20). Tier 0 holds from instant 0 to 1, tier 1 from instant 2 to 3: each peaks at 1 block, together
    # never more than 1 at once, where the sum of the two peaks says 2
    tally = MixTally(1.0, [10.0, 1.0], [0.0, 5.0], peak=True, instants=4)
    tally.add([0.1, 2.0], [100.0, 100.0], np.array([0, 2]), np.array([1, 3]))
    mix = tally.mix(4.0)
    assert mix.peak_bytes_held.tolist() == [1.0, 1.0, 0.0]
    assert mix.joint_peak_bytes_held == 1.0
    # overlapping holdings: tier 1 from 1 to 3 instead, open together with tier 0's at instant 1? no: tier 0's ends
    # at 1 as tier 1's begins (ends first at equal instants), so still 1; from 0 to 3 it overlaps: 2
    both = MixTally(1.0, [10.0, 1.0], [0.0, 5.0], peak=True, instants=4)
    both.add([0.1, 2.0], [100.0, 100.0], np.array([0, 0]), np.array([1, 3]))
    assert both.mix(4.0).joint_peak_bytes_held == 2.0
