"""kvtier.formulas.uncertainty: draws, ratios and summaries worked out by hand, and whole messages (issue 15)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.formulas.uncertainty import (
    DEFAULT_PERCENTILES,
    DISTS,
    INPUTS,
    LONE_INPUTS,
    Range,
    monte_carlo,
    ratio_draws,
    sample,
    summarize,
    tornado,
)

# the source chapter's 25 % MFU case: 5 MiB over 64 GB/s, 2.24e12 FLOP at 500 TFLOP/s
BLOCK = 5_242_880
FLOPS = 2.24e12
BASE = {"bandwidth": 64e9, "mfu": 0.25, "peak": 500e12}


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
