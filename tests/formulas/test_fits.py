"""kvtier.formulas.fits: the latency-bandwidth line, the rate fraction and the eager floor, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas import fits
from kvtier.formulas.fits import fit_latency_bandwidth, leave_one_out

# ---------------------------------------------------------------------------
# the fits
# ---------------------------------------------------------------------------


def test_the_latency_bandwidth_fit_recovers_an_exact_line():
    # t = 10 µs + bytes / 50 GB/s at 1 MiB and 1 GiB: 30.97 µs and 21.485 ms; the fit must give back both
    sizes = np.array([2**20, 2**24, 2**30], dtype=float)
    latency, bw = fits.fit_latency_bandwidth(sizes, 10e-6 + sizes / 50e9)
    assert latency == pytest.approx(10e-6, rel=1e-9) and bw == pytest.approx(50e9, rel=1e-9)


def test_the_pageable_fit_recovers_an_exact_warm_and_cold_model():
    # latency 10 us, bandwidth 50 GB/s, overhead 15 us; warm 25 % (12.5 GB/s) up to 128 MiB, cold 16 % (8 GB/s):
    # 1 MiB: 25 us + 1,048,576 / 12.5e9 = 25 + 83.886 = 108.886 us; 1 GiB: 25 us + 1,073,741,824 / 8e9 = 134.243 ms
    sizes = np.array([2**18, 2**20, 2**26, 2**28, 2**30], dtype=float)
    cache = 128 * 2**20
    rate = np.where(sizes <= cache, 12.5e9, 8e9)
    times = 10e-6 + 15e-6 + sizes / rate
    assert times[1] == pytest.approx(108.886e-6, rel=1e-5) and times[4] == pytest.approx(134.243e-3, rel=1e-5)
    overhead, warm, cold = fits.fit_pageable(sizes, times, 10e-6, 50e9, cache)
    assert overhead == pytest.approx(15e-6, rel=1e-9)
    assert warm == pytest.approx(0.25, rel=1e-9) and cold == pytest.approx(0.16, rel=1e-9)


def test_the_pageable_fit_needs_copies_on_both_sides_of_the_cache():
    with pytest.raises(ValueError, match="both within and beyond the cache"):
        fits.fit_pageable([2**20, 2**22], [1e-4, 4e-4], 10e-6, 50e9, 2**30)


def test_the_rate_fraction_is_the_geometric_mean_of_the_points():
    # 1e12 FLOP in 2 s and 4e12 FLOP in 2 s on a 1e12 FLOP/s peak: fractions 0.5 and 2 -> geometric mean 1
    assert fits.fit_rate_fraction([1e12], [2.0], 1e12) == pytest.approx(0.5)
    assert fits.fit_rate_fraction([1e12, 4e12], [2.0, 2.0], 1e12) == pytest.approx(1.0)


def test_the_floor_of_launch_limited_passes_is_the_grid_point_nearest_their_time():
    # no compute, no memory time: the model is the floor itself, and three passes of 1 s want a floor of 1 s.
    # The grid is 0.5 x 3 ** (k / 400), k = 0..400 (log-spaced from 0.5 to 1.5 times the fastest pass);
    # log(1 / 0.5) / log(3) x 400 = 252.4, so k = 252 is nearest in log: 0.5 x 3 ** 0.63 = 0.998985 s
    zeros = np.zeros(3)
    floor, cost = fits.fit_floor(zeros, zeros, np.ones(3), 4.0)
    assert floor == pytest.approx(0.5 * 3 ** (252 / 400), rel=1e-12)
    assert cost == pytest.approx(3 * np.log(0.5 * 3 ** (252 / 400)) ** 2, rel=1e-9)  # 3 x 1.03e-6


def test_a_memory_time_above_the_grid_makes_every_floor_below_it_fit_and_the_least_is_taken():
    # memory 2 s = measured 2 s: max(2, g) = 2 for every g <= 2, so the first grid point, 0.5 x 2 s = 1 s, costs 0
    floor, cost = fits.fit_floor(np.zeros(2), np.full(2, 2.0), np.full(2, 2.0), 4.0)
    assert (floor, cost) == (pytest.approx(1.0, rel=1e-12), 0.0)


def test_leave_one_out_by_hand_on_three_copies():
    # two copies on the line t = 10 us + b / 50 GB/s and a third 20 % above it
    b = np.array([1e6, 1e7, 1e8])
    line = 10e-6 + b / 50e9  # 30 us, 210 us, 2010 us
    t = line * np.array([1.0, 1.0, 1.2])  # 2412 us measured for the third

    def predict(fitted, x):
        return fitted[0] + x / fitted[1]

    loo = leave_one_out(b, t, fit_latency_bandwidth, predict)
    # without the third, the two exact points give back the line: its prediction is 2010 us, -16.7 % of 2412
    assert loo[2] == pytest.approx(2010e-6, rel=1e-9)
    assert (loo[2] / t[2] - 1) * 100 == pytest.approx(-16.6667, abs=1e-3)
    # without the first: the line through (1e7, 210 us) and (1e8, 2412 us): slope 2202 us / 9e7 B
    slope = (2412e-6 - 210e-6) / 9e7
    assert loo[0] == pytest.approx(210e-6 - slope * 9e6, rel=1e-9)  # 210 - 220.2 = -10.2 us
    # the in-sample fit of all three leaves the third point far closer than its leave-one-out error
    lat, bw = fit_latency_bandwidth(b, t)
    assert abs((lat + b[2] / bw) / t[2] - 1) < abs(loo[2] / t[2] - 1)
