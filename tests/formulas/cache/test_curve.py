"""kvtier.formulas.cache.curve, by hand: the LRU curve in memory (hit ratios, capacities, hit tokens, over time)
and its summaries."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kvtier.formulas.cache.curve import Reuse, hits_below, percentiles
from kvtier.inputs import traces
from tests.conftest import trace_of, trace_text
from tests.oracles import reuse_of

# references in order: 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3   (11 references, 5 distinct blocks)
# stack distance = distinct other blocks used since the block's last use (-1: first use):
#   idx 2 (1): since idx 0, {2}          -> 1      idx 3 (2): since idx 1, {1}        -> 1
#   idx 6 (1): since idx 2, {2, 3, 4}    -> 3      idx 8 (1): since idx 6, {5}        -> 1
#   idx 9 (2): since idx 3, {3, 4, 1, 5} -> 4      idx 10 (3): since idx 4, {4, 1, 5, 2} -> 4
HAND_DISTANCES = [-1, -1, 1, 1, -1, -1, 3, -1, 1, 4, 4]


HAND_BLOCK_TOKENS = 4


def test_hand_trace_stack_distances_and_hit_ratios(hand):
    r = Reuse.of(traces.read_trace(hand, HAND_BLOCK_TOKENS))
    assert r.distance.tolist() == HAND_DISTANCES
    assert (r.trace.n_requests, r.trace.n_refs, r.trace.n_unique) == (5, 11, 5)
    # infinite cache: the 6 references with a distance >= 0 hit: 6 / 11
    assert float(r.hit_ratio()) == pytest.approx(6 / 11)
    # LRU of C blocks hits distances < C: C=1 none; C=2 idx 2, 3, 8; C=4 adds idx 6; C=5 all six
    assert r.hit_ratio(np.array([1, 2, 3, 4, 5, 100])).tolist() == pytest.approx(
        [0, 3 / 11, 3 / 11, 4 / 11, 6 / 11, 6 / 11]
    )
    # tokens: blocks of 4 but the last of a 10-token prompt holds 2 and of a 7-token prompt 3; 39 tokens in all;
    # hits: idx 2, 3, 6, 8, 9 hold 4 each, idx 10 holds 2: 22 / 39
    assert r.trace.ref_tokens.tolist() == [4, 4, 4, 4, 2, 4, 4, 3, 4, 4, 2]
    assert float(r.hit_ratio(weighting="tokens")) == pytest.approx(22 / 39)
    # capacity for a share of the 6 achievable hits (sorted distances 1 1 1 3 4 4): 50 % needs 3 hits -> C = 1 + 1;
    # 80 % needs 4.8 -> 5 hits -> C = 4 + 1; 95 % and 100 % the same
    assert [r.capacity_for(x) for x in (0.5, 0.6, 0.8, 0.95, 1.0)] == [2, 4, 5, 5, 5]
    # reuse intervals (s): idx 2, 3: 1 - 0; idx 6: 3 - 1; idx 8: 5 - 3; idx 9, 10: 5 - 1
    assert r.reuse_interval_s.tolist() == pytest.approx([1, 1, 2, 2, 4, 4])
    # hits form a prefix of every prompt, and distances never fall along one (R2: 1 1 -; R4: 3 -; R5: 1 4 4)
    assert (r.requests_with_a_hit_after_a_miss, r.requests_with_a_distance_that_falls) == (0, 0)
    # per request at C = 2: R2 hits blocks 1, 2 (8 tokens), R5 hits block 1 (4 tokens)
    blocks, tokens = r.hit_tokens(2)
    assert blocks.tolist() == [0, 2, 0, 0, 1] and tokens.tolist() == [0, 8, 0, 0, 4]


def test_the_prefix_checks_can_fail():
    # a block that hits after its predecessor missed: request 2 reuses block 9 under a new first block 7
    trace = traces.parse_trace(
        "\n".join(
            json.dumps(r)
            for r in [
                {"timestamp": 0, "input_length": 2, "output_length": 1, "hash_ids": [8, 9]},
                {"timestamp": 1, "input_length": 2, "output_length": 1, "hash_ids": [7, 9]},
            ]
        ),
        "broken-chain",
        1,
    )
    r = Reuse.of(trace)
    assert r.distance.tolist() == [-1, -1, -1, 1]
    assert (r.requests_with_a_hit_after_a_miss, r.requests_with_a_distance_that_falls) == (1, 1)


# ---------------------------------------------------------------------------
# reuse: hit ratios, capacities, the curve, per request
# ---------------------------------------------------------------------------


def test_a_single_distance_below_the_capacity_counts():
    # references A A B C B: distances -1 0 -1 -1 1; a cache of 1 block hits only the distance 0: 1 / 5
    r = reuse_of([[1], [1], [2], [3], [2]])
    assert r.distance.tolist() == [-1, 0, -1, -1, 1]
    assert r.hit_ratio(np.array([1.0, 2.0])).tolist() == [0.2, 0.4]
    # share 1 of the 2 achievable hits needs both: distance 1 + 1 = 2 blocks; half needs one: 0 + 1
    assert r.capacity_for(1.0) == 2 and r.capacity_for(0.5) == 1
    # an integer capacity gives a float ratio
    assert r.hit_ratio(1).dtype == np.float64


def test_a_trace_without_reuse_hits_nothing():
    r = reuse_of([[1, 2], [3]])
    assert r.hit_ratio(5).tolist() == 0.0 and float(r.hit_ratio()) == 0.0
    assert r.capacity_for(1.0) == 0
    caps, ratios = r.curve()
    assert caps.tolist() == [1.0] and ratios.tolist() == [0.0]


def test_a_trace_without_references_has_ratio_zero():
    # empty prompts only: no references, no weight; the ratio is 0 (not 0 / 0), as floats
    r = Reuse.of(
        traces.parse_trace(
            trace_text([{"timestamp": 0, "input_length": 0, "output_length": 3, "hash_ids": []}]), "t", 1
        )
    )
    ratio = r.hit_ratio(np.array([1, 2]))
    assert ratio.tolist() == [0.0, 0.0] and ratio.dtype == np.float64


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5])
def test_a_share_outside_0_to_1_is_refused(share):
    r = reuse_of([[1], [1]])
    with pytest.raises(ValueError) as info:
        r.capacity_for(share)
    assert str(info.value) == f"share must be in (0, 1], got {share!r}"


def test_an_unknown_weighting_is_refused():
    r = reuse_of([[1], [1]])
    for ask in (lambda: r.hit_ratio(weighting="bytes"), lambda: r.capacity_for(1.0, "bytes"), lambda: r.curve("bytes")):
        with pytest.raises(ValueError) as info:
            ask()
        assert str(info.value) == "weighting must be 'blocks' or 'tokens', got 'bytes'"


def test_the_curve_steps_at_each_distinct_distance():
    # references 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3 (the hand trace of test_workload): hit distances sorted
    # 1 1 1 3 4 4 of 11 references; the ratio steps at capacities 2 (3 hits), 4 (4) and 5 (6)
    r = reuse_of([[1, 2], [1, 2, 3], [4], [1, 5], [1, 2, 3]])
    caps, ratios = r.curve()
    assert caps.tolist() == [2.0, 4.0, 5.0]
    assert ratios.tolist() == pytest.approx([3 / 11, 4 / 11, 6 / 11])
    # weighted by tokens at 2 tokens a block every block holds 2: the same fractions
    assert r.curve("tokens")[1].tolist() == pytest.approx([3 / 11, 4 / 11, 6 / 11])


def test_the_curve_with_one_hit_distance():
    # A A A: distances -1 0 0; one step, at capacity 1, to 2 of 3
    caps, ratios = reuse_of([[1], [1], [1]]).curve()
    assert caps.tolist() == [1.0] and ratios.tolist() == pytest.approx([2 / 3])


def test_capacity_for_a_full_share_takes_the_farthest_hit():
    # one block reused at distance 50 among 199 reuses at distance 0 (200 hits): all of them need 51 blocks,
    # 99 % (198 hits) need 1
    blocks = [[1000], *[[i] for i in range(1, 51)], [1000], *[[7]] * 200]
    r = reuse_of(blocks)
    assert r.capacity_for(1.0) == 51
    assert r.capacity_for(0.99) == 1


def test_hit_tokens_counts_distance_zero_and_every_request():
    # A | A | B: the second A hits at distance 0 in a 1-block cache; the last request has no hit
    # but still has its row (three requests, three rows)
    r = reuse_of([[1], [1], [2]], block_tokens=4)
    blocks, tokens = r.hit_tokens(1)
    assert blocks.tolist() == [0, 1, 0] and tokens.tolist() == [0, 4, 0]
    # a last request with an empty prompt still has its row
    rows = [{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}] * 2
    rows.append({"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": []})
    blocks, tokens = Reuse.of(traces.parse_trace(trace_text(rows), "t", 1)).hit_tokens()
    assert blocks.tolist() == [0, 1, 0] and tokens.tolist() == [0, 1, 0]
    # distance 1 does not fit a 1-block cache: A B A
    blocks, _ = reuse_of([[1], [2], [1]]).hit_tokens(1)
    assert blocks.tolist() == [0, 0, 0]


# ---------------------------------------------------------------------------
# percentiles and the report
# ---------------------------------------------------------------------------


def test_percentiles_by_hand():
    # numpy's linear interpolation over 1 2 3 4: p50 at rank 1.5 -> 2.5; p90 at 2.7 -> 3.7; p99 at 2.97 -> 3.97
    assert percentiles(np.array([4, 1, 3, 2])) == pytest.approx({"p50": 2.5, "p90": 3.7, "p99": 3.97, "max": 4})
    assert percentiles([1, 2, 3, 4], (25,)) == pytest.approx({"p25": 1.75, "max": 4.0})
    empty = percentiles(np.array([]))
    assert list(empty) == ["p50", "p90", "p99", "max"] and all(math.isnan(v) for v in empty.values())


def test_the_hit_ratio_over_time_per_requests_and_per_seconds():
    # requests at 0, 1, 2, 3 s: (1 2) (1 2) (3) (1 2); capacity 2 blocks
    # distances: -1 -1 | 1 1 | -1 | 2 2: hits at capacity 2: request 1 (2 of 2), request 3 none (distance 2)
    r = Reuse.of(trace_of([[1, 2], [1, 2], [3], [1, 2]]))
    start, refs, ratio = r.over_time(2, every_requests=2)
    # requests 0-1: 4 references, 2 hits; requests 2-3: 3 references, 0 hits
    assert start.tolist() == [0.0, 2.0] and refs.tolist() == [4, 3] and ratio.tolist() == [0.5, 0.0]
    start, refs, ratio = r.over_time(3, every_requests=None, every_s=1.5)
    # windows [0, 1.5) s: requests 0, 1 (2 hits of 4); [1.5, 3): request 2 (0 of 1); [3, 4.5): request 3 (2 of 2)
    assert start.tolist() == [0.0, 1.5, 3.0] and refs.tolist() == [4, 1, 2] and ratio.tolist() == [0.5, 0.0, 1.0]


@pytest.mark.parametrize(
    ("capacity", "hits"), [(0, 0.0), (-1, 0.0), (1, 1.0), (2, 4.0), (2.5, 4.0), (4, 5.0), (math.inf, 5.0)]
)
def test_hits_below_a_capacity_in_a_histogram_of_distances(capacity, hits):
    # weight 1 at distance 0, 3 at 1, 0 at 2, 1 at 3: a cache of C blocks hits the distances below C;
    # 2 blocks: 1 + 3 = 4; 2.5 rounds up to 3: 1 + 3 + 0 = 4; 4 blocks and the infinite cache: 1 + 3 + 0 + 1 = 5
    assert hits_below(np.array([1.0, 3.0, 0.0, 1.0]), capacity) == hits


def test_bin_intervals_by_hand():
    from kvtier.formulas.cache.curve import INTERVAL_FLOOR_S, bin_intervals

    # 1 + 2**-16 keeps 14 bits: 1 = 0.5 x 2**1, 0.5 x 2**14 = 8192 exactly, and 2**-16 is below half
    # a step (2**-14 at 1), so it rounds to 1; 1 + 2**-13 is a whole step and stays.  3e-7 s is below the
    # floor (2**-20 = 9.54e-7 s): 3e-7 / 9.54e-7 = 0.31 rounds to 0; 7e-7 (0.73) rounds to the floor
    values = np.array([3e-7, 7e-7, 1.0, 1.0 + 2.0**-16, 1.0 + 2.0**-13])
    v, c = bin_intervals(values, np.array([1, 2, 3, 4, 5]))
    assert v.tolist() == [0.0, INTERVAL_FLOOR_S, 1.0, 1.0 + 2.0**-13]
    assert c.tolist() == [1, 2, 7, 5]
    again = bin_intervals(v, c)  # idempotent
    assert again[0].tolist() == v.tolist() and again[1].tolist() == c.tolist()


def test_bin_intervals_stay_within_their_relative_error_and_bounded():
    from kvtier.formulas.cache.curve import INTERVAL_BITS, INTERVAL_FLOOR_S, bin_intervals

    rng = np.random.default_rng(7)
    values = np.sort(10.0 ** rng.uniform(-5, 15, 200_000))  # 10 us to 1e15 s, nearly every one distinct
    v, c = bin_intervals(values, np.ones(values.size, dtype=np.int64))
    assert c.sum() == values.size
    # the nearest binned value lies within half a step: the mantissa in [0.5, 1) moves by at most 2**-15,
    # at most 2**-15 / 0.5 = 2**-14 of the value
    near = v[np.clip(np.searchsorted(v, values), 0, v.size - 1)]
    lower = v[np.clip(np.searchsorted(v, values) - 1, 0, v.size - 1)]
    err = np.minimum(abs(near - values), abs(lower - values)) / values
    assert err.max() <= 2.0**-14
    # at most 2**13 + 1 values a binade from the floor (2**-20) up to 2**50 (1e15 < 2**50): 70 binades
    assert v.size <= 70 * (2 ** (INTERVAL_BITS - 1) + 1) + 2
    assert v[0] >= INTERVAL_FLOOR_S
