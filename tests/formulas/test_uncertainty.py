"""Monte Carlo and tornado analysis of the regenerate/fetch ratio.

Seed numbers used throughout (the source chapter's tail block):
block = 16 tokens x 327,680 B/token = 5,242,880 B; regen FLOPs = 2 x 70e9 x 16 = 2.24e12 FLOP;
peak = 500 TFLOP/s.  At 25 % MFU regen = 2.24e12 / (500e12 x 0.25) = 17.92 ms; at 50 %, 8.96 ms.
Fetch at 64 GB/s = 5,242,880 / 64e9 = 81.92 us; at 32 GB/s, 163.84 us.

Statistical tolerances are stated in standard errors (SE) at n = 100,000 draws:
a proportion p has SE sqrt(p (1 - p) / n); a sample median has SE 1 / (2 f(m) sqrt(n)),
f the density at the median.  Every tolerance is at least 5 SE of the quantity compared,
so a correct implementation fails with probability well under 1e-6 per assertion; and
the seeds are fixed, so the run is deterministic anyway.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.formulas.uncertainty import (
    DEFAULT_PERCENTILES,
    DISTS,
    INPUTS,
    LONE_INPUTS,
    Range,
    TornadoRow,
    monte_carlo,
    ratio_draws,
    sample,
    summarize,
    tornado,
)

BLOCK = 16 * 327_680  # 5,242,880 B


FLOPS = 2 * 70e9 * 16  # 2.24e12 FLOP


PEAK = 500e12  # FLOP/s


N = 100_000


# The chapter's brackets as distributions: bandwidth 32..121 GB/s log-uniform, MFU 25..50 % uniform.
BRACKETS = {
    "bandwidth": Range(32e9, 121e9),
    "mfu": Range(0.25, 0.5, "uniform"),
    "peak": Range.fixed(PEAK),
}


def fixed(bandwidth: float, mfu: float, peak: float = PEAK) -> dict[str, Range]:
    return {"bandwidth": Range.fixed(bandwidth), "mfu": Range.fixed(mfu), "peak": Range.fixed(peak)}


# ---- tornado -------------------------------------------------------------------------


BASE = {"bandwidth": 64e9, "mfu": 0.25, "peak": PEAK}


# ---- reduces to the deterministic ratio --------------------------------------


def test_fixed_ranges_reduce_to_the_deterministic_ratio():
    summary = monte_carlo(BLOCK, FLOPS, fixed(64e9, 0.25), n=1_000, seed=0)
    # 17.92 ms / 81.92 us = 17,920 / 81.92 = 218.75
    for value in summary["percentiles"].values():
        assert value == pytest.approx(218.75, rel=1e-12)
    assert summary["mean"] == pytest.approx(218.75, rel=1e-12)
    # 218.75 >= 100 for every draw, so P(ratio < 100) = 0 with SE 0
    assert summary["p_below"] == 0.0
    assert summary["p_below_se"] == 0.0
    assert summary["n"] == 1_000
    assert summary["seed"] == 0


def test_ratio_draws_matches_hand_arithmetic_with_latency():
    draws = {"bandwidth": np.array([64e9, 32e9]), "mfu": np.array([0.25, 0.5]), "peak": np.array([PEAK, PEAK])}
    # [17.92 ms / 81.92 us, 8.96 ms / 163.84 us] = [218.75, 54.6875]
    np.testing.assert_allclose(ratio_draws(BLOCK, FLOPS, draws), [218.75, 54.6875], rtol=1e-12)
    # with 10 us latency: 17,920 us / (81.92 + 10) us = 17,920 / 91.92 = 194.95213...
    with_latency = ratio_draws(BLOCK, FLOPS, {k: v[0] for k, v in draws.items()}, latency_s=10e-6)
    assert float(with_latency) == pytest.approx(17_920 / 91.92, rel=1e-12)


# ---- reproducibility -----------------------------------------------------------


def test_same_seed_gives_identical_arrays():
    a = sample(BRACKETS, N, seed=7)
    b = sample(BRACKETS, N, seed=7)
    assert list(a) == ["bandwidth", "mfu", "peak"]  # sorted draw order
    for name in a:
        assert a[name].shape == (N,)
        np.testing.assert_array_equal(a[name], b[name])
    c = sample(BRACKETS, N, seed=8)
    assert not np.array_equal(a["bandwidth"], c["bandwidth"])


def test_changing_one_input_leaves_the_others_draws_unchanged():
    base = sample(BRACKETS, 1_000, seed=3)
    variant = sample({**BRACKETS, "bandwidth": Range.fixed(64e9)}, 1_000, seed=3)
    # each input consumes one uniform vector in sorted order, fixed or not
    np.testing.assert_array_equal(base["mfu"], variant["mfu"])
    assert np.all(variant["bandwidth"] == 64e9)


def test_two_seeds_agree_within_sampling_error():
    a = monte_carlo(BLOCK, FLOPS, BRACKETS, n=N, seed=1)
    b = monte_carlo(BLOCK, FLOPS, BRACKETS, n=N, seed=2)
    # P(ratio < 100) ~ 0.226 (10 million draws): SE = sqrt(0.226 x 0.774 / 1e5) = 0.0013 per run,
    # sqrt(2) x 0.0013 = 0.0019 for the difference of two runs; 0.01 is > 5 SE of the difference.
    assert abs(a["p_below"] - b["p_below"]) < 0.01
    assert 0.2 < a["p_below"] < 0.25
    assert a["p_below_se"] == pytest.approx(math.sqrt(a["p_below"] * (1 - a["p_below"]) / N))
    # median ~ 144.5; density there ~ 0.0052 per unit ratio (10 million draws), so
    # SE = 1 / (2 x 0.0052 x sqrt(1e5)) = 0.30, i.e. 0.21 % of the median per run and
    # 0.30 % for the difference of two runs; 2 % relative is > 6 SE of the difference.
    assert a["percentiles"][50] == pytest.approx(b["percentiles"][50], rel=0.02)


def test_hundred_thousand_draws_take_well_under_a_second():
    start = time.perf_counter()
    monte_carlo(BLOCK, FLOPS, BRACKETS, n=N, seed=0)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"100,000 draws took {elapsed:.3f} s"


# ---- the distributions -----------------------------------------------------------


def test_log_uniform_draws_stay_in_range_and_are_uniform_in_log():
    rng = Range(16e9, 64e9)
    x = sample({"bandwidth": rng}, N, seed=11)["bandwidth"]
    assert x.min() >= 16e9 and x.max() <= 64e9
    logs = np.log(x)
    # median of log(x) ~ midpoint ln(sqrt(16e9 x 64e9)) = ln(32e9); the log range is
    # ln 4 = 1.386 wide, density 1 / 1.386, so SE = 1.386 / (2 sqrt(1e5)) = 0.0022; 0.015 is ~7 SE
    assert float(np.median(logs)) == pytest.approx(math.log(32e9), abs=0.015)
    # four equal bins in log space each hold 1/4 of the draws: SE = sqrt(0.25 x 0.75 / 1e5) = 0.0014;
    # 0.01 is > 7 SE
    counts, _ = np.histogram(logs, bins=4, range=(math.log(16e9), math.log(64e9)))
    np.testing.assert_allclose(counts / N, 0.25, atol=0.01)


def test_uniform_draws_stay_in_range_with_the_right_mean():
    x = sample({"mfu": Range(0.25, 0.5, "uniform")}, N, seed=12)["mfu"]
    assert x.min() >= 0.25 and x.max() <= 0.5
    # mean (0.25 + 0.5) / 2 = 0.375; SD = 0.25 / sqrt(12) = 0.0722, SE = 0.0722 / sqrt(1e5) = 0.00023;
    # 0.002 is ~9 SE
    assert float(x.mean()) == pytest.approx(0.375, abs=0.002)


def test_analytic_probability_below_100x_when_only_bandwidth_is_uncertain():
    ranges = {"bandwidth": Range(16e9, 64e9), "mfu": Range.fixed(0.5), "peak": Range.fixed(PEAK)}
    summary = monte_carlo(BLOCK, FLOPS, ranges, n=N, seed=5)
    # ratio = 8.96e-3 s x bw / 5,242,880 B < 100  iff  bw < 100 x 5,242,880 / 8.96e-3 = 58.514 GB/s;
    # log-uniform on [16, 64] GB/s: P = ln(58.514 / 16) / ln(64 / 16) = 1.29668 / 1.38629 = 0.93536.
    # SE = sqrt(0.935 x 0.065 / 1e5) = 0.00078; 0.005 is > 6 SE
    assert summary["p_below"] == pytest.approx(0.93536, abs=0.005)
    # the ratio is increasing in bw, so its median is the ratio at the median bw, 32 GB/s:
    # 8.96 ms / 163.84 us = 54.6875.  log-median SE 0.0022 (see above) -> 0.22 %; 1.5 % is ~7 SE
    assert summary["percentiles"][50] == pytest.approx(54.6875, rel=0.015)


def test_probability_below_100x_is_zero_when_every_draw_is_above():
    ranges = {"bandwidth": Range(32e9, 128e9), "mfu": Range.fixed(0.25), "peak": Range.fixed(PEAK)}
    summary = monte_carlo(BLOCK, FLOPS, ranges, n=N, seed=5)
    # smallest ratio at 32 GB/s: 17.92 ms / 163.84 us = 109.375 > 100, so P = 0 exactly
    assert summary["p_below"] == 0.0
    assert summary["percentiles"][5] >= 109.375 * (1 - 1e-12)


def test_summarize_hand_values():
    s = summarize([50.0, 100.0, 150.0, 200.0], percentiles=(25, 50), threshold=100.0)
    assert s["n"] == 4
    assert s["mean"] == 125.0  # (50 + 100 + 150 + 200) / 4
    # linear interpolation: 25th at index 0.75 -> 50 + 0.75 x 50 = 87.5; 50th at 1.5 -> 125
    assert s["percentiles"] == {25: 87.5, 50: 125.0}
    assert s["p_below"] == 0.25  # only 50 is strictly below 100
    assert s["p_below_se"] == pytest.approx(math.sqrt(0.25 * 0.75 / 4))  # 0.2165


def test_tornado_ranks_the_widest_swing_first():
    rows = tornado(BLOCK, FLOPS, BASE, BRACKETS)
    assert [row.name for row in rows] == ["bandwidth", "mfu", "peak"]
    bw, mfu, peak = rows
    # bandwidth 32 -> 121 GB/s at 25 % MFU: 109.375 -> 218.75 x 121 / 64 = 413.57421875; swing 304.19921875
    assert isinstance(bw, TornadoRow)
    assert tuple(bw[1:]) == pytest.approx((32e9, 121e9, 109.375, 413.57421875, 304.19921875), rel=1e-12)
    # MFU 25 -> 50 % at 64 GB/s: 218.75 -> 109.375; swing 109.375
    assert (mfu.ratio_at_low, mfu.ratio_at_high, mfu.swing) == pytest.approx((218.75, 109.375, 109.375))
    # peak fixed at 500 TFLOP/s: no swing
    assert peak.swing == 0.0


def test_tornado_order_follows_swing_not_name():
    ranges = {**BRACKETS, "peak": Range(250e12, 1000e12)}
    rows = tornado(BLOCK, FLOPS, BASE, ranges)
    # peak 250 -> 1000 TFLOP/s at 64 GB/s, 25 %: 218.75 x 2 = 437.5 -> 218.75 / 2 = 109.375; swing 328.125,
    # wider than bandwidth's 304.199
    assert [row.name for row in rows] == ["peak", "bandwidth", "mfu"]
    assert rows[0].swing == pytest.approx(328.125)


def test_tornado_breaks_ties_by_name():
    ranges = {"peak": Range.fixed(PEAK), "bandwidth": Range.fixed(64e9)}
    assert [row.name for row in tornado(BLOCK, FLOPS, BASE, ranges)] == ["bandwidth", "peak"]  # both swing 0


# ---- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((-1.0, 2.0), "low must be > 0"),
        ((0.0, 2.0), "low must be > 0"),
        ((2.0, 1.0), "high must be >= low"),
        ((float("nan"), 2.0), "low must be a finite number"),
        ((1.0, float("inf")), "high must be a finite number"),
        ((True, 2.0), "low must be a finite number"),
        (("1", 2.0), "low must be a finite number"),
        ((1.0, 2.0, "normal"), "dist must be one of"),
        ((1.0, 2.0, "fixed"), "fixed range needs low == high"),
    ],
)
def test_bad_range_raises_naming_the_input(args, match):
    with pytest.raises(KvtierError, match=match) as info:
        Range(*args, name="bandwidth")
    assert "'bandwidth'" in str(info.value)
    assert "\n" not in str(info.value)


def test_monte_carlo_rejects_missing_unknown_and_out_of_range_inputs():
    with pytest.raises(KvtierError, match="missing input 'peak'"):
        monte_carlo(BLOCK, FLOPS, {"bandwidth": Range(32e9, 121e9), "mfu": Range.fixed(0.25)})
    with pytest.raises(KvtierError, match="unknown input 'bandwith'"):
        monte_carlo(BLOCK, FLOPS, {**BRACKETS, "bandwith": Range(1.0, 2.0)})
    with pytest.raises(KvtierError, match="'mfu'.*mfu must lie in \\(0, 1\\]"):
        monte_carlo(BLOCK, FLOPS, {**BRACKETS, "mfu": Range(0.5, 1.5, "uniform")})
    with pytest.raises(KvtierError, match="'bandwidth'.*expected a Range"):
        monte_carlo(BLOCK, FLOPS, {**BRACKETS, "bandwidth": 64e9})
    with pytest.raises(KvtierError, match="n \\(number of draws\\)"):
        monte_carlo(BLOCK, FLOPS, BRACKETS, n=0)
    with pytest.raises(KvtierError, match="seed"):
        monte_carlo(BLOCK, FLOPS, BRACKETS, seed=-1)


def test_tornado_and_summarize_reject_bad_input():
    with pytest.raises(KvtierError, match="base 'mfu'.*must be > 0"):
        tornado(BLOCK, FLOPS, {**BASE, "mfu": 0.0}, BRACKETS)
    with pytest.raises(KvtierError, match="'latency'.*unknown input"):
        tornado(BLOCK, FLOPS, BASE, {"latency": Range(1e-6, 1e-5)})
    with pytest.raises(KvtierError, match="ratios"):
        summarize([])
    with pytest.raises(KvtierError, match="percentile"):
        summarize([1.0], percentiles=(101,))


# ---- the lone-block regime -------------------------------------------------------


def test_lone_block_ratio_draws_by_hand():
    # A lone block reads 140e9 B of weights. At 3.35e12 B/s x 0.8: 52.2388 ms, above the 17.92 ms of compute
    # at 25 % MFU of 500 TFLOP/s, so the roofline takes the memory side: / 81.92 us = 637.68.
    draws = {
        "bandwidth": np.array([64e9, 64e9]),
        "mfu": np.array([0.25, 0.25]),
        "peak": np.array([PEAK, 5e12]),
        "mem_bandwidth": np.array([3.35e12, 3.35e12]),
        "mem_efficiency": np.array([0.8, 0.8]),
    }
    r = ratio_draws(BLOCK, FLOPS, draws, bytes_read=140e9)
    assert r[0] == pytest.approx(140e9 / 2.68e12 / 81.92e-6, rel=1e-12)
    # at a 5 TFLOP/s peak the compute side binds instead: 2.24e12 / 1.25e12 = 1.792 s / 81.92 us = 21,875
    assert r[1] == pytest.approx(1.792 / 81.92e-6, rel=1e-12)
    with pytest.raises(KvtierError, match="missing input 'mem_bandwidth'"):
        ratio_draws(BLOCK, FLOPS, {k: v for k, v in draws.items() if k != "mem_bandwidth"}, bytes_read=140e9)
    with pytest.raises(KvtierError, match="mem_efficiency must lie in"):
        ratio_draws(BLOCK, FLOPS, {**draws, "mem_efficiency": np.array([0.8, 1.5])}, bytes_read=140e9)


def test_memory_inputs_leave_the_in_batch_draws_unchanged():
    mem = {"mem_bandwidth": Range(3.35e12, 4.8e12), "mem_efficiency": Range(0.6, 0.9, "uniform")}
    base = sample(BRACKETS, 1000, 7)
    both = sample({**BRACKETS, **mem}, 1000, 7)
    for name in BRACKETS:
        assert np.array_equal(base[name], both[name])
    lone = monte_carlo(BLOCK, FLOPS, {**BRACKETS, **mem}, n=N, seed=0, bytes_read=140e9)
    in_batch = monte_carlo(BLOCK, FLOPS, BRACKETS, n=N, seed=0)
    # The lone block's memory time is at least 140e9 / (4.8e12 x 0.9) = 32.4 ms, above the 17.92 ms most
    # the compute takes here; over the slowest fetch (163.84 us) that is 197.8x, so no draw is below 100x.
    assert lone["p_below"] == 0.0 and 0.0 < in_batch["p_below"] < 1.0
    assert lone["percentiles"][50] > in_batch["percentiles"][50]
    with pytest.raises(KvtierError, match="missing input 'mem_bandwidth'"):
        monte_carlo(BLOCK, FLOPS, BRACKETS, bytes_read=140e9)


def test_summarize_counts_draws_strictly_above_the_high_threshold():
    # draws 1, 2, 3, 4: below 2 only the 1 (1/4); above 3 only the 4 (1/4); the 3 itself is not above 3
    out = summarize([1.0, 2.0, 3.0, 4.0], percentiles=(), threshold=2.0, threshold_high=3.0)
    assert out["p_below"] == 0.25 and out["p_above"] == 0.25
    assert "p_above" not in summarize([1.0, 2.0], percentiles=())
    with pytest.raises(KvtierError, match="threshold_high"):
        summarize([1.0], threshold_high=float("nan"))


def test_monte_carlo_passes_the_high_threshold_through():
    # every draw is the fixed point: 17.92 ms / 81.92 us = 218.75 (see the test above)
    summary = monte_carlo(BLOCK, FLOPS, fixed(64e9, 0.25), n=10, seed=0, threshold=100, threshold_high=218)
    assert summary["p_below"] == 0.0 and summary["p_above"] == 1.0
    assert monte_carlo(BLOCK, FLOPS, fixed(64e9, 0.25), n=10, seed=0, threshold_high=219)["p_above"] == 0.0


def test_names():
    assert DISTS == ("log-uniform", "uniform", "fixed")
    assert INPUTS == ("bandwidth", "mfu", "peak")
    assert LONE_INPUTS == ("bandwidth", "mfu", "peak", "mem_bandwidth", "mem_efficiency")
    assert DEFAULT_PERCENTILES == (5, 25, 50, 75, 95)


def test_from_unit_by_hand():
    u = np.array([0.0, 0.5, 1.0])
    # uniform on [1, 3]: 1 + 2u = 1, 2, 3
    assert Range(1.0, 3.0, "uniform").from_unit(u).tolist() == [1.0, 2.0, 3.0]
    # log-uniform (the default) on [1, 100]: exp(u log 100) = 1, 10, 100
    assert Range(1.0, 100.0).from_unit(u) == pytest.approx([1.0, 10.0, 100.0], rel=1e-12)
    # log-uniform on [4, 16] at 0.5: the geometric mean 8
    assert Range(4.0, 16.0, "log-uniform").from_unit(0.5) == pytest.approx(8.0, rel=1e-12)
    # fixed: always the value
    assert Range.fixed(5.0).from_unit(u).tolist() == [5.0, 5.0, 5.0]
    assert Range.fixed(5.0, name="peak").dist == "fixed"
    # clipped to the bounds: u outside [0, 1] stays inside
    assert Range(1.0, 3.0, "uniform").from_unit([-1.0, 2.0]).tolist() == [1.0, 3.0]


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0, 1), {"name": "bandwidth"}, "uncertainty range 'bandwidth': low must be > 0, got 0.0"),
        ((2, 1), {}, "uncertainty range: high must be >= low, got low=2.0, high=1.0"),
        (
            (1, 2, "normal"),
            {"name": "mfu"},
            "uncertainty range 'mfu': dist must be one of log-uniform, uniform, fixed, got 'normal'",
        ),
        ((1, 2, "fixed"), {}, "uncertainty range: a fixed range needs low == high, got low=1.0, high=2.0"),
        ((math.nan, 1), {}, "uncertainty range: low must be a finite number, got nan"),
        ((1, math.inf), {"name": "peak"}, "uncertainty range 'peak': high must be a finite number, got inf"),
        ((True, 1), {}, "uncertainty range: low must be a finite number, got True"),
        (("1", 2), {}, "uncertainty range: low must be a finite number, got '1'"),
    ],
)
def test_range_whole_messages(args, kwargs, message):
    with pytest.raises(KvtierError) as info:
        Range(*args, **kwargs)
    assert str(info.value) == message


def test_equal_bounds_are_a_range_of_one_value():
    r = Range(2, 2)
    assert (r.low, r.high, r.dist) == (2.0, 2.0, "log-uniform") and type(r.low) is float
    assert r.from_unit(0.3).tolist() == 2.0


def test_sample_order_is_fixed_inputs_first_then_the_rest_sorted():
    ranges = {name: Range(1.0, 2.0, "uniform") for name in ("peak", "mem_bandwidth", "bandwidth", "mfu")}
    drawn = sample(ranges, 3, 7)
    rng = np.random.default_rng(7)
    # one vector per input, in the order bandwidth, mfu, peak, then mem_bandwidth: 1 + u each
    for name in ("bandwidth", "mfu", "peak", "mem_bandwidth"):
        assert drawn[name].tolist() == (1.0 + rng.random(3)).tolist()
    assert list(drawn) == ["bandwidth", "mem_bandwidth", "mfu", "peak"]


@pytest.mark.parametrize(
    ("n", "seed", "message"),
    [
        (0, 1, "n (number of draws) must be a positive integer, got 0"),
        (True, 1, "n (number of draws) must be a positive integer, got True"),
        (2.0, 1, "n (number of draws) must be a positive integer, got 2.0"),
        (2, -1, "seed must be a non-negative integer, got -1"),
        (2, False, "seed must be a non-negative integer, got False"),
        (2, 1.5, "seed must be a non-negative integer, got 1.5"),
    ],
)
def test_sample_whole_messages(n, seed, message):
    with pytest.raises(KvtierError) as info:
        sample({"mfu": Range(0.25, 0.5)}, n, seed)
    assert str(info.value) == message


def test_sample_accepts_one_draw_and_seed_zero():
    drawn = sample({"mfu": Range(0.25, 0.5, "uniform")}, 1, 0)
    # 0.25 + 0.25 x the first draw of default_rng(0)
    assert drawn["mfu"].tolist() == [0.25 + 0.25 * np.random.default_rng(0).random(1)[0]]


def test_sample_refuses_what_is_not_a_range():
    with pytest.raises(KvtierError) as info:
        sample({"mfu": 0.5}, 2, 0)
    assert str(info.value) == "uncertainty range 'mfu': expected a Range, got 0.5"


def test_ratio_draws_in_batch_by_hand():
    # (2.24e12 / (500e12 x 0.25)) / (5,242,880 / 64e9) = 0.01792 / 8.192e-5 = 218.75
    assert ratio_draws(BLOCK, FLOPS, BASE) == pytest.approx(218.75, rel=1e-12)
    # 10 us of latency: 0.01792 / (1e-5 + 8.192e-5) = 0.01792 / 9.192e-5 = 194.95...
    assert ratio_draws(BLOCK, FLOPS, BASE, 1e-5) == pytest.approx(0.01792 / 9.192e-5, rel=1e-12)
    # MFU of exactly 1 is allowed: 2.24e12 / 500e12 = 4.48e-3 s; / 8.192e-5 = 54.6875
    assert ratio_draws(BLOCK, FLOPS, {**BASE, "mfu": 1.0}) == pytest.approx(54.6875, rel=1e-12)


def test_ratio_draws_lone_block_takes_the_slower_side():
    lone = {**BASE, "mem_bandwidth": 4.8e12, "mem_efficiency": 1.0}
    # memory 1.4e11 / 4.8e12 = 0.0291667 s > compute 0.01792 s: 0.0291667 / 8.192e-5 = 356.038...
    assert ratio_draws(BLOCK, FLOPS, lone, bytes_read=1.4e11) == pytest.approx(1.4e11 / 4.8e12 / 8.192e-5, rel=1e-12)
    # efficiency 0.5 doubles the memory side
    half = {**lone, "mem_efficiency": 0.5}
    assert ratio_draws(BLOCK, FLOPS, half, bytes_read=1.4e11) == pytest.approx(
        2 * 1.4e11 / 4.8e12 / 8.192e-5, rel=1e-12
    )
    # few bytes: the compute side binds, 218.75
    assert ratio_draws(BLOCK, FLOPS, lone, bytes_read=1e3) == pytest.approx(218.75, rel=1e-12)


@pytest.mark.parametrize(
    ("draws", "bytes_read", "message"),
    [
        ({"bandwidth": 1.0, "mfu": 0.5}, None, "draws: missing input 'peak'; needs bandwidth, mfu, peak"),
        (
            {**BASE, "mem_bandwidth": 1.0},
            1.0,
            "draws: missing input 'mem_efficiency'; needs bandwidth, mfu, peak, mem_bandwidth, mem_efficiency",
        ),
        ({**BASE, "mfu": [0.0, 0.5]}, None, "draws: mfu must lie in (0, 1], got values from 0.0 to 0.5"),
        ({**BASE, "mfu": [0.5, 1.5]}, None, "draws: mfu must lie in (0, 1], got values from 0.5 to 1.5"),
        ({**BASE, "mfu": math.nan}, None, "draws: mfu must lie in (0, 1], got values from nan to nan"),
        (
            {**BASE, "mem_bandwidth": 1.0, "mem_efficiency": 2.0},
            1.0,
            "draws: mem_efficiency must lie in (0, 1], got values from 2.0 to 2.0",
        ),
    ],
)
def test_ratio_draws_whole_messages(draws, bytes_read, message):
    with pytest.raises(KvtierError) as info:
        ratio_draws(BLOCK, FLOPS, draws, bytes_read=bytes_read)
    assert str(info.value) == message


def test_ratio_draws_ignores_extra_keys():
    assert ratio_draws(BLOCK, FLOPS, {**BASE, "other": 1.0}) == pytest.approx(218.75, rel=1e-12)


def test_summarize_by_hand():
    out = summarize([50.0, 100.0, 150.0, 200.0], percentiles=(0, 25, 50, 100), threshold_high=150.0)
    # mean (50 + 100 + 150 + 200) / 4 = 125; linear percentiles: 0 -> 50, 25 -> 87.5, 50 -> 125, 100 -> 200
    # below 100 (strictly): one of four, 0.25; SE sqrt(0.25 x 0.75 / 4) = 0.21651; above 150 strictly: 0.25
    assert out == {
        "n": 4,
        "mean": 125.0,
        "percentiles": {0: 50.0, 25: 87.5, 50: 125.0, 100: 200.0},
        "threshold": 100.0,
        "p_below": 0.25,
        "p_below_se": pytest.approx(math.sqrt(0.25 * 0.75 / 4), rel=1e-12),
        "p_above": 0.25,
    }


def test_summarize_defaults():
    out = summarize(np.arange(1.0, 201.0))
    # default threshold 100: 1..99 below, 99 of 200; default percentiles 5, 25, 50, 75, 95; no p_above
    assert out["threshold"] == 100.0 and out["p_below"] == 99 / 200
    assert list(out["percentiles"]) == [5, 25, 50, 75, 95]
    # 50th percentile of 1..200: (100 + 101) / 2 = 100.5
    assert out["percentiles"][50] == 100.5
    assert "p_above" not in out
    assert summarize([5.0], percentiles=())["percentiles"] == {}


@pytest.mark.parametrize(
    ("ratios", "kwargs", "message"),
    [
        ([], {}, "ratios: need at least one draw"),
        ([1.0, math.inf], {}, "ratios: every draw must be finite"),
        ([1.0], {"percentiles": (101,)}, "percentile must lie in [0, 100], got 101.0"),
        ([1.0], {"percentiles": (-0.5,)}, "percentile must lie in [0, 100], got -0.5"),
        ([1.0], {"percentiles": ("a",)}, "percentile must be a finite number, got 'a'"),
        ([1.0], {"threshold": math.nan}, "threshold must be a finite number, got nan"),
        ([1.0], {"threshold_high": "x"}, "threshold_high must be a finite number, got 'x'"),
    ],
)
def test_summarize_whole_messages(ratios, kwargs, message):
    with pytest.raises(KvtierError) as info:
        summarize(ratios, **kwargs)
    assert str(info.value) == message


def test_tornado_by_hand():
    rows = tornado(BLOCK, FLOPS, BASE, {"bandwidth": Range(32e9, 128e9), "mfu": Range(0.25, 0.5)})
    # bandwidth: 0.01792 / (5,242,880 / 32e9) = 109.375 and / (5,242,880 / 128e9) = 437.5, swing 328.125
    # mfu: 218.75 at 0.25, 109.375 at 0.5, swing 109.375; sorted by swing, largest first
    assert [tuple(row) for row in rows] == [
        ("bandwidth", 32e9, 128e9, pytest.approx(109.375), pytest.approx(437.5), pytest.approx(328.125)),
        ("mfu", 0.25, 0.5, pytest.approx(218.75), pytest.approx(109.375), pytest.approx(109.375)),
    ]
    # equal swings sort by name
    tied = tornado(BLOCK, FLOPS, BASE, {"peak": Range(500e12, 500e12), "bandwidth": Range(64e9, 64e9)})
    assert [row.name for row in tied] == ["bandwidth", "peak"] and tied[0].swing == 0.0


def test_tornado_lone_block_swings_memory_efficiency():
    base = {**BASE, "mem_bandwidth": 4.8e12, "mem_efficiency": 1.0}
    (row,) = tornado(BLOCK, FLOPS, base, {"mem_efficiency": Range(0.5, 1.0)}, bytes_read=1.4e11)
    # at 0.5: 2 x 0.0291667 / 8.192e-5 = 712.08; at 1: 356.04
    assert row.ratio_at_low == pytest.approx(2 * 1.4e11 / 4.8e12 / 8.192e-5, rel=1e-12)
    assert row.ratio_at_high == pytest.approx(1.4e11 / 4.8e12 / 8.192e-5, rel=1e-12)


@pytest.mark.parametrize(
    ("base", "ranges", "message"),
    [
        (BASE, {"x": Range(1.0, 2.0)}, "uncertainty range 'x': unknown input; allowed bandwidth, mfu, peak"),
        ({**BASE, "peak": 0.0}, {}, "base 'peak' must be > 0, got 0.0"),
        ({**BASE, "mfu": 1.5}, {}, "base: mfu must lie in (0, 1], got values from 1.5 to 1.5"),
        ({**BASE, "bandwidth": "x"}, {}, "base 'bandwidth' must be a finite number, got 'x'"),
        ({"mfu": 0.5}, {}, "base: missing input 'bandwidth'; needs bandwidth, mfu, peak"),
        (BASE, {"mfu": Range(0.5, 2.0)}, "uncertainty range 'mfu': mfu must lie in (0, 1], got values from 0.5 to 2.0"),
    ],
)
def test_tornado_whole_messages(base, ranges, message):
    with pytest.raises(KvtierError) as info:
        tornado(BLOCK, FLOPS, base, ranges)
    assert str(info.value) == message


def test_tornado_lone_block_refuses_an_efficiency_above_one():
    base = {**BASE, "mem_bandwidth": 4.8e12, "mem_efficiency": 1.0}
    with pytest.raises(KvtierError) as info:
        tornado(BLOCK, FLOPS, base, {"mem_efficiency": Range(0.5, 2.0)}, bytes_read=1.0)
    assert str(info.value) == (
        "uncertainty range 'mem_efficiency': mem_efficiency must lie in (0, 1], got values from 0.5 to 2.0"
    )


def test_monte_carlo_fixed_inputs_and_defaults():
    ranges = {name: Range.fixed(value) for name, value in BASE.items()}
    out = monte_carlo(BLOCK, FLOPS, ranges, n=3)
    # every draw is the chapter's 218.75; none below 100; default seed 0
    assert out["n"] == 3 and out["mean"] == pytest.approx(218.75) and out["p_below"] == 0.0 and out["seed"] == 0
    assert list(out["percentiles"]) == [5, 25, 50, 75, 95] and out["threshold"] == 100.0
    # threshold 300: all below; latency 1e-5: 194.95
    assert monte_carlo(BLOCK, FLOPS, ranges, n=2, threshold=300.0)["p_below"] == 1.0
    assert monte_carlo(BLOCK, FLOPS, ranges, n=2, latency_s=1e-5)["mean"] == pytest.approx(0.01792 / 9.192e-5)
    assert monte_carlo(BLOCK, FLOPS, ranges, n=2, threshold_high=200.0)["p_above"] == 1.0
    # default 100,000 draws
    assert monte_carlo(BLOCK, FLOPS, ranges)["n"] == 100_000
    lone = {**ranges, "mem_bandwidth": Range.fixed(4.8e12), "mem_efficiency": Range.fixed(1.0)}
    assert monte_carlo(BLOCK, FLOPS, lone, n=2, bytes_read=1.4e11)["mean"] == pytest.approx(
        1.4e11 / 4.8e12 / 8.192e-5, rel=1e-12
    )


def test_monte_carlo_whole_messages():
    ranges = {name: Range.fixed(value) for name, value in BASE.items()}
    with pytest.raises(KvtierError) as info:
        monte_carlo(BLOCK, FLOPS, {**ranges, "x": Range.fixed(1.0)})
    assert str(info.value) == "ranges: unknown input 'x'; allowed bandwidth, mfu, peak"
    with pytest.raises(KvtierError) as info:
        monte_carlo(BLOCK, FLOPS, {**ranges, "mfu": Range(0.5, 2.0)})
    assert str(info.value) == "uncertainty range 'mfu': mfu must lie in (0, 1], got values from 0.5 to 2.0"
    lone = {**ranges, "mem_bandwidth": Range.fixed(4.8e12), "mem_efficiency": Range(0.5, 2.0)}
    with pytest.raises(KvtierError) as info:
        monte_carlo(BLOCK, FLOPS, lone, bytes_read=1.0)
    assert str(info.value) == (
        "uncertainty range 'mem_efficiency': mem_efficiency must lie in (0, 1], got values from 0.5 to 2.0"
    )


def test_both_bounds_are_stored_as_floats():
    r = Range(2, 3)
    assert (r.low, r.high) == (2.0, 3.0) and type(r.low) is float and type(r.high) is float


def test_fixed_ranges_name_themselves_in_messages():
    with pytest.raises(KvtierError) as info:
        Range.fixed(math.nan)
    assert str(info.value) == "uncertainty range: low must be a finite number, got nan"
    with pytest.raises(KvtierError) as info:
        Range.fixed(-1.0, name="peak")
    assert str(info.value) == "uncertainty range 'peak': low must be > 0, got -1.0"


def test_from_unit_reads_integer_draws_as_floats():
    # integer draws 0 and 1 are the ends of the unit interval: a fixed 2.5 gives 2.5 for each
    assert Range.fixed(2.5).from_unit([0, 1]).tolist() == [2.5, 2.5]
    # uniform on [1, 2] at 1: 2.0
    assert Range(1.0, 2.0, "uniform").from_unit(1).tolist() == 2.0
