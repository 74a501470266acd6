"""kvtier.formulas.cache.report, by hand: the workload report, in memory and streamed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvtier.formulas.cache.curve import Reuse
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.report import LinkSpec, count_difference, report
from kvtier.formulas.cache.stream import histogram_of
from kvtier.formulas.cache.trace import HIT_COUNTS, Trace
from kvtier.inputs import traces
from tests.conftest import trace_of
from tests.oracles import HAND_RC, hand_link, reuse_of


def test_the_report_by_hand():
    # A | A | B over 0.5 s at 4 tokens a block (inputs 4 4 4, outputs 1 1 1)
    r = reuse_of([[1], [1], [2]], times_ms=[0, 250, 500], block_tokens=4)
    rep = report(r, HAND_RC, [hand_link()], targets_pct=(50, 100))
    assert [t["target_pct"] for t in rep["tiers"]] == [50, 100]  # 100 once, though asked for
    assert rep["trace"]["requests_per_s"] == 6.0  # 3 requests / 0.5 s
    assert rep["trace"]["input_tokens"] == {"p50": 4.0, "p90": 4.0, "p99": 4.0, "max": 4.0, "mean": 4.0}
    assert rep["blocks"]["hit_ratio_infinite_blocks"] == pytest.approx(1 / 3)
    assert rep["blocks"]["hit_ratio_infinite_tokens"] == pytest.approx(4 / 12)
    # the one reuse comes 0.25 s after its first reference
    assert rep["blocks"]["reuse_interval_s"]["mean"] == 0.25
    tier = rep["tiers"][1]
    assert list(tier) == [
        "target_pct",
        "capacity_blocks",
        "capacity_bytes",
        "hit_ratio_blocks",
        "hit_ratio_tokens",
        "hit_tokens_per_s",
        "hit_bytes_per_s",
        "in_batch_gpu_s_per_s",
        "lone_gpu_s_per_s",
        "lone_memory_bound_share",
        "links",
    ]
    assert tier["capacity_blocks"] == 1.0 and tier["capacity_bytes"] == 4000.0  # 1 block x 4 tokens x 1000 B
    # fetching the hit: 1 ms + 4,000 B / 1e6 B/s = 5 ms, over 0.5 s: 0.01 link-seconds a second
    link = tier["links"][0]
    assert link["fetch_link_s_per_s"] == pytest.approx(0.01)
    # saved per second inside a batch 3.2e-5 and alone 8e-3, over 0.01: 3.2e-3 and 0.8
    assert link["in_batch_over_fetch"] == pytest.approx(3.2e-3)
    assert link["lone_over_fetch"] == pytest.approx(0.8)


def test_the_report_of_a_trace_without_duration_or_hits():
    # both requests at once: no rates
    rep = report(reuse_of([[1], [1]], times_ms=[0, 0]), HAND_RC, [hand_link()], targets_pct=(50,))
    assert math.isnan(rep["trace"]["requests_per_s"])
    assert math.isnan(rep["tiers"][0]["links"][0]["fetch_link_s_per_s"])
    # no reuse at all: nothing to fetch, so no ratio to it; no interval to average
    rep = report(reuse_of([[1], [2]]), HAND_RC, [hand_link()], targets_pct=(50,))
    link = rep["tiers"][0]["links"][0]
    assert link["fetch_link_s_per_s"] == 0.0
    assert math.isnan(link["in_batch_over_fetch"]) and math.isnan(link["lone_over_fetch"])
    assert math.isnan(rep["blocks"]["reuse_interval_s"]["mean"])


def test_the_report_sizes_each_target_on_its_share():
    # the farthest-hit trace: 100 % needs 51 blocks; a share of 99 % needs 1 (see capacity_for above)
    blocks = [[1000], *[[i] for i in range(1, 51)], [1000], *[[7]] * 200]
    rep = report(reuse_of(blocks), HAND_RC, targets_pct=(99,))
    assert [(t["target_pct"], t["capacity_blocks"]) for t in rep["tiers"]] == [(99, 1.0), (100, 51.0)]


def test_a_half_second_trace_has_a_rate():
    # 2 requests 0.5 s apart: 4 a second (a duration under 1 s is still a duration)
    rep = report(reuse_of([[1], [1]], times_ms=[0, 500]), HAND_RC, [hand_link()], targets_pct=(50,))
    assert rep["trace"]["requests_per_s"] == 4.0
    # the hit: 1 ms + 1 token x 1000 B / 1e6 B/s = 2 ms, over 0.5 s = 4e-3
    assert rep["tiers"][0]["links"][0]["fetch_link_s_per_s"] == pytest.approx(4e-3)


# ---- hit counts, sampling, over time ------------------------------------------------------------------------


def test_hits_count_up_to_the_first_miss_or_per_block():
    # one request 1 2 3, then 9 2 3: 9 is new (a miss), 2 and 3 were seen (distance 2 each: 3 1 ... then 9 between)
    r = Reuse.of(trace_of([[1, 2, 3], [9, 2, 3]]))
    assert r.distance.tolist() == [-1, -1, -1, -1, 2, 2]
    # up to the first miss the second request hits nothing: 9 missed first; per block 2 and 3 hit (2 of 6)
    assert r.count == "prefix" and r.hit_distance.tolist() == [-1] * 6 and float(r.hit_ratio()) == 0.0
    assert float(r.recounted("per-block").hit_ratio()) == 2 / 6
    rep = report(r, RegenCosts(1.0, 10.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0), targets_pct=())
    # the one tier (100 %) of an infinite cache: 0 hits; counted per block, 2 of 6 more
    assert rep["hit_count"] == {
        "count": "prefix",
        "other": "per-block",
        "capacity_blocks": [0.0],
        "other_minus_this": [0.0],  # capacity 0 hits nothing either way
    }
    # at an infinite capacity, counted per block: 2 of 6 more
    assert count_difference(r, [math.inf])["other_minus_this"] == [pytest.approx(2 / 6)]
    with pytest.raises(ValueError, match="count must be one of"):
        Reuse.of(r.trace, "first-miss")


def test_the_streamed_report_is_the_in_memory_one():
    # a synthetic trace with a third of its prompts shuffled (so that hits after a miss and falls exist), both
    # counts: every figure of report() agrees to rounding, the recompute costs (summed per reference) included
    t = traces.generate_trace(600, seed=2, n_prefixes=40, new_blocks=(1, 6))
    rng = np.random.default_rng(0)
    blocks = t.blocks.copy()
    for q in range(t.n_requests):
        if rng.random() < 0.3:
            rng.shuffle(blocks[t.starts[q] : t.starts[q + 1]])
    t = Trace(t.name, t.block_tokens, t.timestamps_s, t.input_tokens, t.output_tokens, t.starts, blocks, "mooncake")
    rc = RegenCosts(2.0, 1e9, 2.0, 1e4, 1e14, 0.5, 2e9, 1e12, 0.8)
    links = [LinkSpec("l", 1e10, 1e-6)]
    for count in HIT_COUNTS:
        r = Reuse.of(t, count)
        assert r.requests_with_a_distance_that_falls > 0
        a = report(r, rc, links)
        b = report(histogram_of(t, count, rc, chunk_refs=300), rc, links)
        assert b["hit_count"]["other_minus_this"] == pytest.approx(a["hit_count"]["other_minus_this"], abs=1e-12)
        for ta, tb in zip(a["tiers"], b["tiers"], strict=True):
            for key in (
                "capacity_blocks",
                "hit_ratio_blocks",
                "hit_ratio_tokens",
                "in_batch_gpu_s_per_s",
                "lone_gpu_s_per_s",
                "lone_memory_bound_share",
                "hit_tokens_per_s",
            ):
                assert tb[key] == pytest.approx(ta[key], rel=1e-9), (count, key)
            assert tb["links"][0]["fetch_link_s_per_s"] == pytest.approx(ta["links"][0]["fetch_link_s_per_s"], rel=1e-9)
        for part in ("input_tokens", "output_tokens"):
            assert b["trace"][part] == pytest.approx(a["trace"][part], rel=1e-12)
        assert b["blocks"]["reuse_interval_s"] == pytest.approx(a["blocks"]["reuse_interval_s"], rel=1e-12)
