"""kvtier.formulas.cache.report, by hand: the workload report, in memory and streamed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvtier.formulas.cache.curve import Reuse
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.report import LinkSpec, cache_figures, count_difference, report
from kvtier.formulas.cache.stream import histogram_of
from kvtier.formulas.cache.trace import HIT_COUNTS, Trace
from kvtier.inputs import traces
from tests.conftest import trace_of, trace_text
from tests.oracles import HAND_RC, hand_link, reuse_of, row


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


# Mooncake's cache figures on a hand trace at 4 tokens a block, each prompt's last block partial where its length
# says so (hit tokens in brackets):
#   r0  [1, 2]     8 tokens  4 + 4       both new          (0)
#   r1  [1, 2, 3]  10 tokens 4 + 4 + 2   1 and 2 hit       (8)  stack distances 1 and 1
#   r2  [4]        3 tokens  3           new               (0)
#   r3  [1, 5]     7 tokens  4 + 3       1 hits, 5 new     (4)  distance 3 (2, 3 and 4 used since)
# cache ratio = (8 + 4) / (8 + 10 + 3 + 7) = 12 / 28 = 3/7; by block references 3 of 8
MOONCAKE_HAND = [row(0, [1, 2], 8), row(1, [1, 2, 3], 10), row(2, [4], 3), row(3, [1, 5], 7)]


def test_the_cache_figures_by_hand():
    t = traces.parse_trace(trace_text(MOONCAKE_HAND), "t", 4)
    f = cache_figures(Reuse.of(t), [0, 4, 8, 11, 16])
    assert (f.requests, f.mean_input_tokens, f.mean_output_tokens) == (4, 7.0, 1.0)  # 28 / 4; one output token each
    assert f.cache_ratio == pytest.approx(3 / 7) and f.cache_ratio_blocks == pytest.approx(3 / 8)
    # C tokens hold C // 4 whole blocks: 0, 1, 2, 2, 4
    assert f.capacity_blocks.tolist() == [0, 1, 2, 2, 4]
    # 1 block: no distance below 1; 2 blocks: r1's two hits (8 tokens); 4 blocks: all three (12 tokens)
    assert f.hit_ratio == pytest.approx([0, 0, 8 / 28, 8 / 28, 12 / 28])
    assert f.share_of_max == pytest.approx([0, 0, 2 / 3, 2 / 3, 1])  # (8/28) / (12/28)
    # streamed, the same figures
    g = cache_figures(histogram_of(t), [0, 4, 8, 11, 16])
    assert (g.requests, g.mean_input_tokens, g.mean_output_tokens) == (4, 7.0, 1.0)
    assert (g.cache_ratio, g.cache_ratio_blocks) == pytest.approx((3 / 7, 3 / 8))
    assert g.capacity_blocks.tolist() == f.capacity_blocks.tolist()
    assert g.hit_ratio == pytest.approx(f.hit_ratio) and g.share_of_max == pytest.approx(f.share_of_max)
    # a scalar capacity is an array of one
    assert cache_figures(Reuse.of(t), 8).hit_ratio == pytest.approx(8 / 28)


def test_the_cache_figures_of_a_trace_without_reuse_and_bad_capacities():
    # every block new: the cache ratio is 0 and no capacity has a share of it
    t = traces.parse_trace(trace_text([row(0, [1], 4), row(1, [2], 4)]), "t", 4)
    for measured in (Reuse.of(t), histogram_of(t)):
        f = cache_figures(measured, [4, 1e9])
        assert f.cache_ratio == 0 and f.hit_ratio.tolist() == [0, 0]
        assert np.isnan(f.share_of_max).all()
    with pytest.raises(ValueError, match="at least 0 tokens"):
        cache_figures(Reuse.of(t), [-1])
    with pytest.raises(ValueError, match="at least 0 tokens"):
        cache_figures(Reuse.of(t), [math.nan])
    h = histogram_of(t)
    h.block_tokens = 0  # a curve that does not say its block
    with pytest.raises(ValueError, match="tokens per block"):
        cache_figures(h, [4])


def test_the_cache_figures_of_the_shipped_traces():
    # Mooncake FAST'25 Table 2 prints 12031 and 3993 requests, mean input 12035 and 15325 tokens, mean output 343 and
    # 149, cache ratios 40 % and 66 %; Figure 9 marks 41 % and 46 % of the maximum at 3M tokens.  The traces give
    # the same counts and means to the paper's whole tokens; the cache ratio, by tokens, 37.36 % and 65.12 %
    # (by blocks 36.64 % and 63.96 %); at 3,000,000 // 512 = 5,859 blocks, LRU serves 13.82 % and 31.51 % of the
    # input tokens, 36.98 % and 48.38 % of the cache ratio (checked by an OrderedDict LRU over the JSON lines)
    expected = {
        "conversation": (12031, 12035.06, 342.62, 37.362, 36.641, 13.818, 36.982),
        "synthetic": (3993, 15325.48, 149.12, 65.124, 63.960, 31.509, 48.383),
    }
    for name, (n, mean_in, mean_out, ratio, blocks, hit, share) in expected.items():
        f = cache_figures(traces.stream_lru(name, 512), 3e6)
        assert f.requests == n and f.capacity_blocks.tolist() == [5859]
        assert (f.mean_input_tokens, f.mean_output_tokens) == pytest.approx((mean_in, mean_out), abs=0.005)
        assert f.cache_ratio * 100 == pytest.approx(ratio, abs=5e-4)
        assert f.cache_ratio_blocks * 100 == pytest.approx(blocks, abs=5e-4)
        assert f.hit_ratio[0] * 100 == pytest.approx(hit, abs=5e-4)
        assert f.share_of_max[0] * 100 == pytest.approx(share, abs=5e-4)


def test_figure_errors_take_the_largest_gap_of_each_figure():
    from kvtier.formulas.cache.report import _rel, figure_errors

    # two zeros or two undefined figures agree; a zero, undefined or infinite one against another does not
    assert _rel(0.0, 0.0) == 0.0 and _rel(math.nan, math.nan) == 0.0
    assert _rel(0.0, 1.0) == math.inf and _rel(1.0, math.nan) == math.inf and _rel(math.inf, 1.0) == math.inf
    # 4 -> 5: 25 %
    assert _rel(4.0, 5.0) == 0.25

    def rep(unique, caps, saved, p50, busy):
        return {
            "blocks": {
                "unique": unique,
                "hit_ratio_infinite_blocks": 0.5,
                "hit_ratio_infinite_tokens": 0.5,
                "reuse_interval_s": {"p50": p50, "p90": 10.0, "p99": 20.0, "max": 30.0},
            },
            "tiers": [
                {
                    "capacity_blocks": c,
                    "in_batch_gpu_s_per_s": v,
                    "lone_gpu_s_per_s": v,
                    "links": [{"fetch_link_s_per_s": busy, "in_batch_over_fetch": 2.0, "lone_over_fetch": 2.0}],
                }
                for c, v in zip(caps, saved, strict=True)
            ],
        }

    exact = rep(100, [10.0, 20.0], [1.0, 2.0], 4.0, 0.5)
    sampled = rep(90, [11.0, 20.0], [1.0, 1.5], 5.0, 0.6)
    got = figure_errors(exact, sampled, curve_pts=1.5)
    # distinct 100 -> 90: 10 %; tiers 10 -> 11 (10 %) and 20 -> 20: 10 %; saved 2 -> 1.5: 25 %; p50 4 -> 5: 25 %;
    # link time 0.5 -> 0.6: 20 %; the curve's 1.5 points above the infinite cache's 0
    assert got == pytest.approx(
        {
            "hit_ratio_pts": 1.5,
            "unique_rel": 0.1,
            "capacity_rel": 0.1,
            "saving_rel": 0.25,
            "reuse_interval_rel": 0.25,
            "link_rel": 0.2,
        }
    )
