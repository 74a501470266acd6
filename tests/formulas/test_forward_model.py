"""The one forward-pass model (issue 28): roofline.forward_pass_time_s, attention_time_s, fits.leave_one_out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.formulas import roofline
from kvtier.formulas.fits import fit_latency_bandwidth, leave_one_out


def test_with_every_keyword_at_its_default_it_is_the_chapters_roofline_exactly():
    flops = np.array([1e12, 5e14])
    args = (flops, 1.4e11, 989e12, 0.5, 3.35e12, 0.8)
    # byte-identical, not approximately: the seed set's tables of record depend on it
    assert np.array_equal(roofline.forward_pass_time_s(*args), roofline.roofline_time_s(*args))


def test_the_forward_pass_by_hand():
    # compute = 1e12 / (1e15 x 0.5) = 2 ms; memory = 1e10 / (1e12 x 0.5) + 10 x 0.1 ms = 20 + 1 = 21 ms;
    # launch = 10 x 3 ms = 30 ms; floor = max(21, 30) = 30 ms; p = 1: the sum 2 + 30 = 32 ms; + serial 5 ms = 37 ms
    t = roofline.forward_pass_time_s(
        1e12,
        1e10,
        1e15,
        0.5,
        1e12,
        0.5,
        layers=10,
        mem_overhead_per_layer_s=1e-4,
        launch_floor_per_layer_s=3e-3,
        sharpness=1.0,
        serial_s=5e-3,
    )
    assert float(t) == pytest.approx(37e-3, rel=1e-12)
    # a block of a quarter of the pass: memory 20 ms (bytes given already shared) + 0.25 ms, launch 7.5 ms;
    # p = 2: sqrt(2^2 + 20.25^2) = 20.3485... ms
    t = roofline.forward_pass_time_s(
        1e12, 1e10, 1e15, 0.5, 1e12, 0.5, layers=10, mem_overhead_per_layer_s=1e-4,
        launch_floor_per_layer_s=3e-3, sharpness=2.0, share=0.25,
    )  # fmt: skip
    assert float(t) == pytest.approx(math.hypot(2e-3, 20.25e-3), rel=1e-12)


def test_attention_by_hand_and_none_without_cached_kv():
    # 80 layers x 50 us + 1.6e8 B / (4.8e12 B/s x 0.05) = 4 ms + 0.6667 ms
    t = roofline.attention_time_s(np.array([1.6e8, 0.0]), 80, 50e-6, 4.8e12, 0.05)
    assert t[0] == pytest.approx(4e-3 + 1.6e8 / 2.4e11, rel=1e-12)
    assert t[1] == 0.0  # a pass over fresh tokens: its attention calls are inside its other terms


def test_a_sharpness_below_1_is_refused():
    with pytest.raises(KvtierError, match="sharpness must be >= 1"):
        roofline.forward_pass_time_s(1e12, 1e10, 1e15, 0.5, 1e12, 0.5, sharpness=0.5)


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


def test_the_transfer_model_by_hand_and_the_chapters_fetch_at_its_defaults():
    from kvtier.formulas import costs, transfer

    # defaults: exactly transfers x latency + bytes / bandwidth
    b, bw = np.array([4096.0, 5 * 2**20]), 55e9
    assert np.array_equal(transfer.fetch_time_s(b, bw, 9e-6, 160), costs.fetch_time_s(b, bw, 9e-6, 160))
    # a 4 KiB copy: 9 us + 4096 / 55e9 = 9.074 us, below the 15 us floor: 15 us
    # 5 MiB at 22 % of the rate: 9 us + 5242880 / 12.1e9 = 9 + 433.3 = 442.3 us, above the floor
    t = transfer.fetch_time_s(b, bw, 9e-6, 1, 15e-6, np.array([1.0, 0.22]))
    assert t[0] == pytest.approx(15e-6, rel=1e-12)
    assert t[1] == pytest.approx(9e-6 + 5 * 2**20 / (55e9 * 0.22), rel=1e-12)
    # the floor is paid once: 160 chunks of 32 KiB, 160 x 9 us + 5 MiB / 55 GB/s = 1440 + 95.3 us
    assert float(transfer.fetch_time_s(5 * 2**20, bw, 9e-6, 160, 15e-6)) == pytest.approx(
        160 * 9e-6 + 5 * 2**20 / bw, rel=1e-12
    )


def test_the_link_efficiency_multiplies_what_applies():
    from kvtier.formulas import transfer

    assert float(transfer.link_efficiency(False, 0.22, False, 0.9)) == 1.0
    assert float(transfer.link_efficiency(True, 0.22, False, 0.9)) == 0.22
    assert float(transfer.link_efficiency(True, 0.22, True, 0.9)) == pytest.approx(0.198, rel=1e-12)
