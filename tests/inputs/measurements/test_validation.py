"""Validation on the measurements: in sample, leave-one-out and held out, for passes and copies."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvtier.inputs import measurements as ms
from kvtier.inputs.assumptions import load_assumptions
from kvtier.scenario import Scenario
from tests.conftest import MEASURED_SET, ROOT

DATA = ROOT / "kvtier" / "data" / "measurements" / ms.SET_NAME


# Read and fitted afresh for each test (10 ms and 60 ms), not once per module or through the cached
# ms.load(): mutation testing (scripts/mutation.sh) then sees every test that reads or fits.
@pytest.fixture
def m() -> ms.Measurements:
    return ms.read(DATA)


@pytest.fixture
def fits(m) -> ms.Fits:
    return ms.fit(m)


@pytest.fixture(scope="module")
def checks() -> tuple[ms.Check, ...]:
    loaded = ms.load()
    return ms.forward_checks(loaded) + ms.copy_checks(loaded)


def test_the_fit_by_hand(m):
    ff = ms.shipped_forward_fit()
    # stream: 2 x 2 GiB / 1.0117 ms = 4.245 TB/s, 88.44 % of 4.8 TB/s
    assert ff.mem_efficiency == pytest.approx(2 * 2**31 / 1.0117119550704956e-3 / 4.8e12, rel=1e-9)
    # overhead: (44.451 ms - 141.107 GB / 4.245 TB/s) / 80 = (44.451 - 33.238) / 80 = 0.1402 ms
    s70 = m.shapes["llama-3-70b"]
    stream = s70.weight_bytes / (4.8e12 * ff.mem_efficiency)
    assert ff.mem_overhead_per_layer_s == pytest.approx((m.tail16[("llama-3-70b", "graph")].median_s - stream) / 80)
    assert ff.mem_overhead_per_layer_s == pytest.approx(140.2e-6, rel=1e-3)
    assert ff.launch_floor_per_layer_s == pytest.approx(680.5e-6, rel=1e-3)
    assert ff.sharpness == 2.7
    # attention: 16 queries masked, 79 us at 4.26 MB to 1.42 ms at 268.5 MB: about 5.36 us per MB, 196 GB/s
    assert ff.attention_efficiency * 4.8e12 == pytest.approx(196e9, rel=0.01)
    assert ff.attention_fixed_per_layer_s == pytest.approx(57.54e-6, rel=1e-3)


def test_the_8b_passes_from_70b_only_fits_land_within_15_percent_but_one(checks):
    held = {c.case: c.error_pct for c in checks if c.group == "llama-3-8b passes from llama-3-70b fits"}
    assert len(held) == 10  # 8 eager sweep points, the 16-token eager tail loop and the graph pass
    outliers = {case for case, err in held.items() if abs(err) > 15}
    # the 64-token eager pass measured 36.9 ms, slower than the 128-token pass's 24.2 ms: a glitch of the
    # measurement, which the model (21.8 ms) does not follow
    assert outliers == {"64 tokens, eager"}
    assert held["16 tokens, graph"] == pytest.approx(-3.9, abs=0.1)  # the single-efficiency model: -41 %


def test_leave_one_out_is_reported_apart_from_the_fit_and_is_no_better(checks):
    for group in ("llama-3-70b eager passes", "copies, h2d pinned"):
        ins = {c.case: c.error_pct for c in checks if c.group == group and c.sample == ms.IN_SAMPLE}
        loo = {c.case: c.error_pct for c in checks if c.group == group and c.sample == ms.LEAVE_ONE_OUT}
        assert ins.keys() == loo.keys() and len(ins) >= 7
        assert sum(abs(v) for v in loo.values()) > sum(abs(v) for v in ins.values())
    # the 256-token knee: in sample -1.8 %, refitted without it -3.8 %
    knee = {c.sample: c.error_pct for c in checks if c.case == "256 tokens" and c.group == "llama-3-70b eager passes"}
    assert knee[ms.IN_SAMPLE] == pytest.approx(-1.8, abs=0.1)
    assert knee[ms.LEAVE_ONE_OUT] == pytest.approx(-3.8, abs=0.1)


def test_the_issues_goal_holds_out_of_sample(checks):
    # every 70B pass of 128 tokens or more, every interior block and every copy of 1 MiB or more within 10 %
    out = [c for c in checks if c.sample != ms.IN_SAMPLE]
    passes = [
        c for c in out if c.group == "llama-3-70b eager passes" and int(c.case.split()[0].replace(",", "")) >= 128
    ]
    interior = [c for c in out if c.group == "llama-3-70b interior blocks"]
    copies = [c for c in out if c.group.startswith("copies")]
    assert len(passes) == 7 and len(interior) == 6 and len(copies) == 14
    assert max(abs(c.error_pct) for c in passes + interior + copies) < 10


def test_compare_uses_the_same_model_as_the_measured_page(m):
    # kvtier's scenario under the measured set against pass_s at the fitted values: the yaml rounds to 4 digits
    s = Scenario(load_assumptions(MEASURED_SET))
    ff, s70 = ms.shipped_forward_fit(), m.shapes["llama-3-70b"]
    mfu = s.mfu("typical")
    for position in (0, 1024, 8192):
        lone = float(s.lone_regen_s(position, "resident", mfu))
        assert lone == pytest.approx(float(ms.pass_s(ff, s70, 16, "eager", position)), rel=2e-4), position
    evicted = float(s.lone_regen_s(1024, "evicted", mfu))  # a prefill of 1,040 tokens from position 0
    assert evicted == pytest.approx(float(ms.pass_s(ff, s70, 1040, "eager")), rel=2e-4)


def test_the_transfer_fit_by_hand_and_in_the_measured_set(m):
    tf = ms.fit_transfer(m)
    # the floor: the median of 16.0, 25.2, 14.8 and 14.3 us, (14.8 + 16.0) / 2 = 15.42 us
    assert tf.min_transfer_s == pytest.approx((14.816000126302242e-6 + 16.03199914097786e-6) / 2, rel=1e-9)
    # duplex: 4.882 ms alone over 5.324 ms with the other direction busy, 91.7 %
    assert tf.duplex_efficiency == pytest.approx(4.88159990310669 / 5.323935985565185, rel=1e-9)
    # pageable: relative least squares over the eleven pageable copies at the pinned 9.049 us and 55.14 GB/s:
    # 15.26 us per copy, 26.37 % (14.54 GB/s) within the 128 MiB cache, 16.38 % (9.03 GB/s) beyond it
    assert tf.pageable_overhead_s == pytest.approx(15.26e-6, rel=1e-3)
    assert tf.pageable_warm_efficiency == pytest.approx(0.2637, rel=1e-3)
    assert tf.pageable_efficiency == pytest.approx(0.1638, rel=1e-3)
    assert tf.host_cache_bytes == 128 * 2**20
    # by hand from the fit: 1 GiB is cold, 9.049 + 15.26 us + 1,073,741,824 / (0.16379 x 55.1406e9) = 118.91 ms
    # against 116.0 ms measured (+2.5 %); 1 MiB is warm, 24.31 us + 1,048,576 / 14.5427e9 = 96.42 us against 98.53
    assert tf.pageable_s(2**30) == pytest.approx(118.91e-3, rel=1e-4)
    assert tf.pageable_s(2**20) == pytest.approx(96.42e-6, rel=1e-4)
    a = load_assumptions(MEASURED_SET)
    assert a.value("fetch.min_transfer_time") == pytest.approx(tf.min_transfer_s, rel=1e-3)
    assert a.value("fetch.pageable_efficiency") == pytest.approx(tf.pageable_efficiency, rel=1e-3)
    assert a.value("fetch.pageable_warm_efficiency") == pytest.approx(tf.pageable_warm_efficiency, rel=1e-3)
    assert a.value("fetch.pageable_overhead") == pytest.approx(tf.pageable_overhead_s, rel=1e-3)
    assert a.value("fetch.host_cache") == ms.HOST_CACHE_BYTES
    assert a["fetch.host_cache"].provenance == "assumed"
    assert a.value("fetch.duplex_efficiency") == pytest.approx(tf.duplex_efficiency, rel=1e-3)


def test_small_copies_and_duplex_out_of_sample(m):
    checks = ms.transfer_checks(m)
    d2h = [c for c in checks if c.group == "small copies, d2h pinned"]
    assert len(d2h) == 4 and max(abs(c.error_pct) for c in d2h) < 6  # held out: the floor from the other direction
    duplex = next(c for c in checks if c.group == "both directions at once" and c.sample == ms.HELD_OUT)
    # d2h together predicted as 256 MiB at 91.7 % of the h2d rate: +0.9 % of the 5.273 ms measured
    assert duplex.error_pct == pytest.approx(0.9, abs=0.1)
    # the 16 KiB h2d copy (25.2 us) stays a miss: the floor is the median, 15.4 us
    small = {c.case: c.error_pct for c in checks if c.group == "small copies, h2d pinned" and c.sample == ms.IN_SAMPLE}
    assert small["16 KiB"] == pytest.approx(-38.9, abs=0.1)


def test_every_pageable_copy_of_256_kib_or_more_within_10_pct_out_of_sample(m):
    checks = [c for c in ms.transfer_checks(m) if c.group.endswith("h2d pageable")]
    loo = {c.case: c.error_pct for c in checks if c.sample == ms.LEAVE_ONE_OUT}
    assert len(loo) == 11 and len([c for c in checks if c.sample == ms.IN_SAMPLE]) == 11
    goal = {k: v for k, v in loo.items() if k not in ("4 KiB", "16 KiB", "64 KiB")}
    assert len(goal) == 8 and max(abs(v) for v in goal.values()) < 10
    # the worst, 16 MiB: refitted without it the warm share is lower, 1,109 us measured against +8.3 %
    assert loo["16 MiB"] == pytest.approx(8.3, abs=0.1)
    # the cold copies: without 256 MiB the cold share is 1 GiB's alone, 9.25 GB/s against 8.79 measured: -5.0 %
    assert loo["256 MiB"] == pytest.approx((1 / 9.2500 * 8.7878) * 100 - 100, abs=0.3)
    small = [c for c in checks if c.group == "small copies, h2d pageable"]
    assert {c.case for c in small} == {"4 KiB", "16 KiB", "64 KiB", "256 KiB"}


def test_a_pageable_pool_fetch_is_the_cold_share_in_the_scenario_and_the_fit(m):
    tf = ms.fit_transfer(m)
    s = Scenario(load_assumptions(MEASURED_SET).with_values({"fetch.host_memory": "pageable"}, source="t"))
    bw = s.v("bandwidth.mid")
    # 5 MiB from a pool: 9.049 + 15.26 us + 5,242,880 / (0.1638 x 55.14 GB/s) = 24.31 + 580.5 = 604.8 us
    assert float(s.fetch_s(bw)) == pytest.approx(604.8e-6, rel=1e-3)
    assert float(s.fetch_s(bw)) == pytest.approx(tf.pageable_s(5 * 2**20, math.inf), rel=1e-3)
    # the same block from a buffer the cache holds (the probe's 405 us): 24.31 + 5,242,880 / 14.54 GB/s = 384.8 us
    assert tf.pageable_s(5 * 2**20) == pytest.approx(384.8e-6, rel=1e-3)
    # pinned, the overhead is not paid: 9.049 us + 95.08 us
    pinned = Scenario(load_assumptions(MEASURED_SET))
    assert float(pinned.fetch_s(bw)) == pytest.approx(s.v("fetch_latency") + 5 * 2**20 / bw, rel=1e-12)


def test_the_fetch_follows_the_transfer_keys():
    s = Scenario(load_assumptions(MEASURED_SET))
    lat, bw, floor = s.v("fetch_latency"), s.v("bandwidth.mid"), s.v("fetch.min_transfer_time")
    # contiguous 5 MiB, pinned, alone: 9.049 us + 5242880 / 55.14 GB/s = 104.1 us (above the floor)
    assert float(s.fetch_s(bw)) == pytest.approx(lat + 5 * 2**20 / bw, rel=1e-12)
    paged = Scenario(
        s.assumptions.with_values({"fetch.host_memory": "pageable", "fetch.contention": "duplex"}, source="t")
    )
    eff = s.v("fetch.pageable_efficiency") * s.v("fetch.duplex_efficiency")
    lat_paged = lat + s.v("fetch.pageable_overhead")
    assert float(paged.fetch_s(bw)) == pytest.approx(lat_paged + 5 * 2**20 / (bw * eff), rel=1e-12)
    tiny = Scenario(s.assumptions.with_values({"block_tokens": "1"}, source="t"))  # 320 KiB: 9.05 + 5.9 us < floor
    assert float(tiny.fetch_s(bw)) == floor


def test_the_workload_and_cost_pages_recompute_a_prefix_with_the_same_model():
    s = Scenario(load_assumptions(MEASURED_SET))
    rc = s.regen_costs(mfu_label="typical")
    mfu = s.mfu("typical")
    # a 16-token prefix alone is the tail block alone; 1,040 tokens the prefill of an evicted block at 1,024
    t = rc.lone_s(np.array([16.0, 1040.0]))
    assert t[0] == pytest.approx(float(s.lone_regen_s(0, "resident", mfu)), rel=1e-9)
    assert t[1] == pytest.approx(float(s.lone_regen_s(1024, "evicted", mfu)), rel=1e-9)
    # the launch floor binds the 16-token pass: 80 layers x 680.5 us = 54.44 ms, blended with 4.1 ms of compute
    assert t[0] == pytest.approx(54.46e-3, rel=1e-3)
