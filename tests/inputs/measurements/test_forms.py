"""The model's forms left out with their groups, and the peers' form on equal terms (the shipped H200 set)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvtier.inputs import measurements as ms
from kvtier.inputs.measurements import forms
from kvtier.units import MIB


@pytest.fixture(scope="module")
def checks() -> dict[str, forms.FormCheck]:
    return {f.key: f for f in forms.form_checks(ms.load())}


def test_the_floor_left_out_misses_its_passes(checks):
    floor = checks["regen.launch_floor_per_layer"]
    # the eager 70B passes of at most 128 tokens: 1, 8, 16, 32, 64, 128 (the sweep has no 2 or 4)
    assert [c.split()[0] for c in floor.cases] == ["1", "8", "16", "32", "64", "128"]
    # without any pass on the floor the fit's floor sits at the bottom of its search, half the fastest pass left:
    # the 256-token pass, 79.45 ms / 2 = 39.7 ms, below the 44.45 ms graph pass: the passes fall short
    assert "floor 39.7 ms (at the bottom of its search" in floor.refit
    left = floor.errors_pct("left_out")
    assert left.min() == pytest.approx(-20.34, abs=0.01) and left.max() == pytest.approx(-3.33, abs=0.01)
    # with the floor fitted on every pass, all six within 5 % (the in-sample fit)
    assert np.abs(floor.errors_pct("in_sample")).max() < 5.0


def test_the_knee_group_is_the_256_token_pass(checks):
    knee = checks["regen.knee_sharpness"]
    assert knee.cases == ("256 tokens, eager",)
    # the plain maximum, floor refitted: issue 28's -17.6 % at the knee
    assert knee.errors_pct("without")[0] == pytest.approx(-17.61, abs=0.01)
    # p refitted without the pass (2.95, the 512-token pass still bends): -3.8 %
    assert knee.errors_pct("left_out")[0] == pytest.approx(-3.78, abs=0.01)
    assert "p = 2.95" in knee.refit


def test_the_overhead_and_attention_groups_are_never_fitted(checks):
    over = checks["regen.mem_overhead_per_layer"]
    # one memory efficiency, the 70B graph pass's 66.1 %, on the 8B weights: 16.06e9 B / (4.8e12 x 0.6613)
    # = 5.06 ms against 8.61 ms measured: -41.2 %
    assert over.errors_pct("without")[0] == pytest.approx(-41.19, abs=0.01)
    assert over.left_out_s == over.in_sample_s  # the group is never in the fit
    att = checks["regen.attention"]
    assert len(att.cases) == 3 and att.left_out_s == att.in_sample_s
    assert att.errors_pct("without").min() == pytest.approx(-22.47, abs=0.01)


def test_the_host_cache_left_out_is_one_share(checks):
    cache = checks["fetch.host_cache"]
    assert cache.cases == ("256 MiB", "1024 MiB")
    m = ms.load()
    tf = ms.fit_transfer(m)
    within = [c.n_bytes for c in m.copies_of("h2d_pageable") if c.n_bytes <= 128 * MIB]
    overhead, share = forms.fit_single_pageable(m, tf, within)
    assert share == pytest.approx(0.2640, abs=5e-4)  # the refit's 26.4 % of the pinned rate
    # 256 MiB: 9.05 us + overhead + 268,435,456 / (55.14e9 x 0.264) = 18.44 ms against 30.55 ms: -39.5 %
    expected = tf.latency_s + overhead + 256 * MIB / (tf.bandwidth_bytes_per_s * share)
    assert cache.left_out_s[0] == pytest.approx(expected)
    assert cache.errors_pct("left_out")[0] == pytest.approx(-39.49, abs=0.01)


def test_floor_and_knee_left_out_together(checks):
    both = checks["regen.launch_floor_per_layer, regen.knee_sharpness"]
    assert len(both.cases) == 7
    # half the 512-token pass, 139.3 ms / 2 = 69.7 ms: above every pass of the group's 53 to 58 ms floor
    assert "floor 69.7 ms" in both.refit
    assert both.errors_pct("left_out").min() > 10.0


def test_peers_form_on_equal_terms():
    m = ms.load()
    peer = forms.fit_peer(m)
    # the 70B graph pass: 141.1e9 B / 4.8e12 B/s = 29.40 ms over 44.45 ms measured: 66.1 %
    assert peer.mem_efficiency == pytest.approx(0.6613, abs=1e-4)
    assert peer.pass_s(m, ms.FIT_SHAPE, 16, "graph") == pytest.approx(m.tail16[(ms.FIT_SHAPE, "graph")].median_s)
    checks = forms.peer_checks(m)
    kv = sum(abs(c.kvtier_s / c.measured_s - 1) <= 0.1 for c in checks)
    pe = sum(abs(c.peer_s / c.measured_s - 1) <= 0.1 for c in checks)
    # 12 eager 70B + 1 graph + 10 8B + 6 interior = 29; kvtier misses the 8B 64-token pass and the 8B tail loop
    assert (len(checks), kv, pe) == (29, 27, 17)


def test_transformers_floor_is_its_own():
    m = ms.load()
    ff = ms.shipped_forward_fit()
    per_layer = ms.fit_stack_floor(m, ff)
    # the 8B transformers passes of 16 and 256 tokens sit at 20.0 and 18.6 ms over 32 layers: about 0.6 ms a layer,
    # below plain PyTorch's 0.68 ms
    assert per_layer == pytest.approx(596.6e-6, rel=1e-3)
    assert per_layer < ff.launch_floor_per_layer_s
    hf = [c for c in ms.forward_checks(m) if "transformers" in c.group]
    assert all(c.sample == ms.LEAVE_ONE_OUT for c in hf) and len(hf) == 8
    assert max(abs(c.error_pct) for c in hf) == pytest.approx(7.56, abs=0.01)


def test_every_check_carries_its_repetitions():
    m = ms.load()
    every = ms.forward_checks(m) + ms.copy_checks(m) + ms.transfer_checks(m)
    assert all(c.spread is not None and c.spread.min_s <= c.measured_s <= c.spread.max_s for c in every)
    eight = next(c for c in every if c.case == "64 tokens, eager")
    # the 8B 64-token pass: 10 repetitions, 26.96 to 47.90 ms, median 36.87 ms
    assert eight.spread.reps == 10 and eight.spread.min_s == pytest.approx(26.956e-3, rel=1e-4)
    pool = [c for c in every if c.group == ms.POOL_GROUP and not math.isnan(c.model_s)]
    assert len(pool) == 11  # every pageable copy, 4 KiB to 1 GiB
