"""kvtier.formulas.reuse, by hand: stack distances, the LRU curve and the GPU time hits save.

The curve is checked in memory and streamed.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas import reuse as workload
from kvtier.inputs import traces
from tests.conftest import trace_of, trace_text
from tests.oracles import HAND_ROWS, lru_distances, lru_hits

# references in order: 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3   (11 references, 5 distinct blocks)
# stack distance = distinct other blocks used since the block's last use (-1: first use):
#   idx 2 (1): since idx 0, {2}          -> 1      idx 3 (2): since idx 1, {1}        -> 1
#   idx 6 (1): since idx 2, {2, 3, 4}    -> 3      idx 8 (1): since idx 6, {5}        -> 1
#   idx 9 (2): since idx 3, {3, 4, 1, 5} -> 4      idx 10 (3): since idx 4, {4, 1, 5, 2} -> 4
HAND_DISTANCES = [-1, -1, 1, 1, -1, -1, 3, -1, 1, 4, 4]


HAND_BLOCK_TOKENS = 4


# ---------------------------------------------------------------------------
# streaming: the same curve in memory proportional to the distinct blocks
# ---------------------------------------------------------------------------


def first_seen_dense(values: np.ndarray) -> np.ndarray:
    """Dense ids in order of first appearance, computed the obvious way."""
    ids: dict[int, int] = {}
    return np.array([ids.setdefault(int(v), len(ids)) for v in values], dtype=np.int64)


def _reuse(blocks_per_request, times_ms=None, block_tokens: int = 1) -> workload.Reuse:
    return workload.Reuse.of(trace_of(blocks_per_request, times_ms, block_tokens))


# ---------------------------------------------------------------------------
# what a hit is worth
# ---------------------------------------------------------------------------

# k = 2 FLOP per parameter-token, N = 1e9 parameters, no attention term; 1e15 FLOP/s at 50 %:
# compute(h) = 2e9 h / 5e14 = 4e-6 h s.  Weights 2e9 B at 1e12 B/s x 50 %: memory 2e9 / 5e11 = 4 ms
RC = workload.RegenCosts(
    kv_bytes_per_token=1000.0,
    active_params=1e9,
    flops_per_param_token=2.0,
    attention_flops_per_position=0.0,
    peak_flop_per_s=1e15,
    mfu=0.5,
    weight_bytes=2e9,
    mem_bandwidth_bytes_per_s=1e12,
    mem_efficiency=0.5,
)


def _link(name: str = "l") -> workload.LinkSpec:
    # 1e6 B/s and 1 ms a block
    return workload.LinkSpec(name, 1e6, 1e-3)


# ---------------------------------------------------------------------------
# the kernel and the dense ids
# ---------------------------------------------------------------------------

STREAM = [0, 1, 2, 0, 1, 3, 2, 2, 0, 4, 1, 3]


# most recent first, the stack after each reference, and the depth each block was found at:
#   0 -1 [0]; 1 -1 [1 0]; 2 -1 [2 1 0]; 0 at depth 2 [0 2 1]; 1 at 2 [1 0 2]; 3 -1 [3 1 0 2];
#   2 at 3 [2 3 1 0]; 2 at 0 [2 3 1 0]; 0 at 3 [0 2 3 1]; 4 -1 [4 0 2 3 1]; 1 at 4 [1 4 0 2 3]; 3 at 4
STREAM_DISTANCES = [-1, -1, -1, 2, 2, -1, 3, 0, 3, -1, 4, 4]


# ---------------------------------------------------------------------------
# stream_lru on a hand trace, in any chunks
# ---------------------------------------------------------------------------


# references: -1 -2 | -1 -2 5 | 7 7 | -1 7 |   (9 references; dense -1 -> 0, -2 -> 1, 5 -> 2, 7 -> 3)
# distances (most recent first): -1 -1 | 1 1 -1 | -1 0 | 3 ({-2, 5, 7}) 1 ({-1})
# tokens:                          4  4 | 4 4  1 |  4 1 | 4 2                     total 28
HAND_D = [-1, -1, 1, 1, -1, -1, 0, 3, 1]


def test_hand_trace_stack_distances_and_hit_ratios(hand):
    r = workload.Reuse.of(traces.read_trace(hand, HAND_BLOCK_TOKENS))
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
    r = workload.Reuse.of(trace)
    assert r.distance.tolist() == [-1, -1, -1, 1]
    assert (r.requests_with_a_hit_after_a_miss, r.requests_with_a_distance_that_falls) == (1, 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=80))
def test_stack_distances_equal_a_direct_lru_simulation(blocks):
    arr = np.array(blocks)
    d = workload.stack_distances(arr)
    assert d.tolist() == lru_distances(blocks)
    for capacity in (1, 2, 3, 5, 8, 13):
        assert int(((d >= 0) & (d < capacity)).sum()) == lru_hits(blocks, capacity)


def test_stack_distances_on_a_larger_random_trace():
    rng = np.random.default_rng(7)
    blocks = (rng.zipf(1.3, 3000) % 400).tolist()
    d = workload.stack_distances(np.array(blocks))
    assert d.tolist() == lru_distances(blocks)
    trace = workload.Trace(
        "t", 1, np.zeros(1), np.array([3000]), np.zeros(1, int), np.array([0, 3000]), np.array(blocks), "mooncake"
    )
    # one request of 3,000 blocks: counted per block, as the brute-force LRU counts (up to the first miss, the
    # request's first block, a cold miss, would end its hits)
    r = workload.Reuse(trace, workload.previous_reference(trace.blocks), d, "per-block")
    assert float(workload.Reuse(trace, r.prev, d).hit_ratio(200)) == 0.0
    for capacity in (1, 10, 50, 200):
        assert float(r.hit_ratio(capacity)) == pytest.approx(lru_hits(blocks, capacity) / 3000)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-3, 12), min_size=1, max_size=80),
    st.lists(st.integers(0, 80), max_size=5),
)
def test_the_stream_in_any_chunks_equals_the_whole(values, cuts):
    raw = np.array(values, dtype=np.int64) * 1_000_003
    cuts = sorted(c for c in cuts if c <= raw.size)
    dense_ids = workload.DenseIds()
    mapped = np.concatenate([dense_ids.map(part) for part in np.split(raw, cuts)])
    assert mapped.tolist() == first_seen_dense(raw).tolist()
    kernel = workload.StackDistanceStream()
    streamed = np.concatenate([kernel.feed(part) for part in np.split(mapped, cuts)])
    assert streamed.tolist() == lru_distances(values)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(-3, 3), max_size=6), min_size=1, max_size=8))
def test_chained_ids_are_equal_exactly_when_the_prefixes_are(requests):
    ids = np.array([h for r in requests for h in r], dtype=np.int64)
    starts = np.r_[0, np.cumsum([len(r) for r in requests])].astype(np.int64)
    chained = workload.chain_ids(ids, starts).tolist()
    prefixes = [tuple(r[: j + 1]) for r in requests for j in range(len(r))]
    assert len(chained) == len(prefixes)
    for a in range(len(prefixes)):
        for b in range(len(prefixes)):
            assert (chained[a] == chained[b]) == (prefixes[a] == prefixes[b])


# ---------------------------------------------------------------------------
# reuse: hit ratios, capacities, the curve, per request
# ---------------------------------------------------------------------------


def test_a_single_distance_below_the_capacity_counts():
    # references A A B C B: distances -1 0 -1 -1 1; a cache of 1 block hits only the distance 0: 1 / 5
    r = _reuse([[1], [1], [2], [3], [2]])
    assert r.distance.tolist() == [-1, 0, -1, -1, 1]
    assert r.hit_ratio(np.array([1.0, 2.0])).tolist() == [0.2, 0.4]
    # share 1 of the 2 achievable hits needs both: distance 1 + 1 = 2 blocks; half needs one: 0 + 1
    assert r.capacity_for(1.0) == 2 and r.capacity_for(0.5) == 1
    # an integer capacity gives a float ratio
    assert r.hit_ratio(1).dtype == np.float64


def test_a_trace_without_reuse_hits_nothing():
    r = _reuse([[1, 2], [3]])
    assert r.hit_ratio(5).tolist() == 0.0 and float(r.hit_ratio()) == 0.0
    assert r.capacity_for(1.0) == 0
    caps, ratios = r.curve()
    assert caps.tolist() == [1.0] and ratios.tolist() == [0.0]


def test_a_trace_without_references_has_ratio_zero():
    # empty prompts only: no references, no weight; the ratio is 0 (not 0 / 0), as floats
    r = workload.Reuse.of(
        traces.parse_trace(
            trace_text([{"timestamp": 0, "input_length": 0, "output_length": 3, "hash_ids": []}]), "t", 1
        )
    )
    ratio = r.hit_ratio(np.array([1, 2]))
    assert ratio.tolist() == [0.0, 0.0] and ratio.dtype == np.float64


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5])
def test_a_share_outside_0_to_1_is_refused(share):
    r = _reuse([[1], [1]])
    with pytest.raises(ValueError) as info:
        r.capacity_for(share)
    assert str(info.value) == f"share must be in (0, 1], got {share!r}"


def test_an_unknown_weighting_is_refused():
    r = _reuse([[1], [1]])
    for ask in (lambda: r.hit_ratio(weighting="bytes"), lambda: r.capacity_for(1.0, "bytes"), lambda: r.curve("bytes")):
        with pytest.raises(ValueError) as info:
            ask()
        assert str(info.value) == "weighting must be 'blocks' or 'tokens', got 'bytes'"


def test_the_curve_steps_at_each_distinct_distance():
    # references 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3 (the hand trace of test_workload): hit distances sorted
    # 1 1 1 3 4 4 of 11 references; the ratio steps at capacities 2 (3 hits), 4 (4) and 5 (6)
    r = _reuse([[1, 2], [1, 2, 3], [4], [1, 5], [1, 2, 3]])
    caps, ratios = r.curve()
    assert caps.tolist() == [2.0, 4.0, 5.0]
    assert ratios.tolist() == pytest.approx([3 / 11, 4 / 11, 6 / 11])
    # weighted by tokens at 2 tokens a block every block holds 2: the same fractions
    assert r.curve("tokens")[1].tolist() == pytest.approx([3 / 11, 4 / 11, 6 / 11])


def test_the_curve_with_one_hit_distance():
    # A A A: distances -1 0 0; one step, at capacity 1, to 2 of 3
    caps, ratios = _reuse([[1], [1], [1]]).curve()
    assert caps.tolist() == [1.0] and ratios.tolist() == pytest.approx([2 / 3])


def test_capacity_for_a_full_share_takes_the_farthest_hit():
    # one block reused at distance 50 among 199 reuses at distance 0 (200 hits): all of them need 51 blocks,
    # 99 % (198 hits) need 1
    blocks = [[1000], *[[i] for i in range(1, 51)], [1000], *[[7]] * 200]
    r = _reuse(blocks)
    assert r.capacity_for(1.0) == 51
    assert r.capacity_for(0.99) == 1


def test_hit_tokens_counts_distance_zero_and_every_request():
    # A | A | B: the second A hits at distance 0 in a 1-block cache; the last request has no hit
    # but still has its row (three requests, three rows)
    r = _reuse([[1], [1], [2]], block_tokens=4)
    blocks, tokens = r.hit_tokens(1)
    assert blocks.tolist() == [0, 1, 0] and tokens.tolist() == [0, 4, 0]
    # a last request with an empty prompt still has its row
    rows = [{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}] * 2
    rows.append({"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": []})
    blocks, tokens = workload.Reuse.of(traces.parse_trace(trace_text(rows), "t", 1)).hit_tokens()
    assert blocks.tolist() == [0, 1, 0] and tokens.tolist() == [0, 1, 0]
    # distance 1 does not fit a 1-block cache: A B A
    blocks, _ = _reuse([[1], [2], [1]]).hit_tokens(1)
    assert blocks.tolist() == [0, 0, 0]


def test_prefix_flops_use_the_flops_per_parameter_token():
    # k = 3 instead of 2: 3 x 1e9 x 4 = 1.2e10; with 1e6 FLOP a position: + 1e6 x 4 x 5 / 2 = 1e7
    rc = workload.RegenCosts(**{**vars(RC), "flops_per_param_token": 3.0, "attention_flops_per_position": 1e6})
    assert rc.prefix_flops(np.array([4.0])).tolist() == [1.2e10 + 1e7]


def test_lone_time_is_the_roofline_and_zero_without_tokens():
    # 0 tokens: 0; 1 and 500 tokens: memory-bound, 4 ms; 4000 tokens: compute 4e-6 x 4000 = 16 ms
    assert RC.lone_s(np.array([0, 1, 500, 4000])).tolist() == pytest.approx([0.0, 4e-3, 4e-3, 1.6e-2])
    # weights of 1e6 B (2 µs to read): one token is compute-bound at 4 µs, two at 8 µs
    light = workload.RegenCosts(**{**vars(RC), "weight_bytes": 1e6})
    assert light.lone_s(np.array([1, 2])).tolist() == pytest.approx([4e-6, 8e-6])


def test_lone_memory_bound_where_the_weights_outlast_the_compute():
    # 0 tokens is no pass at all; 1 and 500 tokens (2 ms of compute) are memory-bound (4 ms);
    # at 1000 tokens compute is 4 ms too, a tie, which is not memory-bound; 4000 tokens are compute-bound
    assert RC.lone_memory_bound(np.array([0, 1, 500, 1000, 4000])).tolist() == [False, True, True, False, False]


def test_saving_per_second_of_trace():
    # A | A | B over 0.5 s at 4 tokens a block: in an unbounded cache the second A hits, 4 tokens
    r = _reuse([[1], [1], [2]], times_ms=[0, 250, 500], block_tokens=4)
    sv = workload.saving(r, RC, 2)
    assert sv.capacity_blocks == 2.0 and isinstance(sv.capacity_blocks, float)
    assert sv.hit_ratio_blocks == pytest.approx(1 / 3)  # 1 hit of 3 references
    assert sv.hit_tokens_per_s == pytest.approx(8.0)  # 4 tokens / 0.5 s
    assert sv.hit_bytes_per_s == pytest.approx(8000.0)  # 4 tokens x 1000 B / 0.5 s
    # inside a batch: 4 x 4e-6 s / 0.5 s = 3.2e-5; alone: 4 ms / 0.5 s = 8e-3
    assert sv.in_batch_gpu_s_per_s == pytest.approx(3.2e-5)
    assert sv.lone_gpu_s_per_s == pytest.approx(8e-3)
    assert sv.lone_memory_bound_share == 1.0


def test_saving_with_no_hits_and_with_no_duration():
    # no hit: nothing memory-bound (0, not the mean of nothing)
    assert workload.saving(_reuse([[1], [2]]), RC).lone_memory_bound_share == 0.0
    # a trace whose requests all arrive at once has no rate: NaN per second
    sv = workload.saving(_reuse([[1], [1]], times_ms=[0, 0]), RC)
    assert math.isnan(sv.hit_tokens_per_s) and math.isnan(sv.lone_gpu_s_per_s)


def test_a_one_token_hit_is_counted_in_the_memory_bound_share():
    # 1 token a block; the single hit holds 1 token and is memory-bound alone (4e-6 s of compute < 4 ms)
    assert workload.saving(_reuse([[1], [1]]), RC).lone_memory_bound_share == 1.0


# ---------------------------------------------------------------------------
# percentiles and the report
# ---------------------------------------------------------------------------


def test_percentiles_by_hand():
    # numpy's linear interpolation over 1 2 3 4: p50 at rank 1.5 -> 2.5; p90 at 2.7 -> 3.7; p99 at 2.97 -> 3.97
    assert workload.percentiles(np.array([4, 1, 3, 2])) == pytest.approx(
        {"p50": 2.5, "p90": 3.7, "p99": 3.97, "max": 4}
    )
    assert workload.percentiles([1, 2, 3, 4], (25,)) == pytest.approx({"p25": 1.75, "max": 4.0})
    empty = workload.percentiles(np.array([]))
    assert list(empty) == ["p50", "p90", "p99", "max"] and all(math.isnan(v) for v in empty.values())


def test_the_report_by_hand():
    # A | A | B over 0.5 s at 4 tokens a block (inputs 4 4 4, outputs 1 1 1)
    r = _reuse([[1], [1], [2]], times_ms=[0, 250, 500], block_tokens=4)
    rep = workload.report(r, RC, [_link()], targets_pct=(50, 100))
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
    rep = workload.report(_reuse([[1], [1]], times_ms=[0, 0]), RC, [_link()], targets_pct=(50,))
    assert math.isnan(rep["trace"]["requests_per_s"])
    assert math.isnan(rep["tiers"][0]["links"][0]["fetch_link_s_per_s"])
    # no reuse at all: nothing to fetch, so no ratio to it; no interval to average
    rep = workload.report(_reuse([[1], [2]]), RC, [_link()], targets_pct=(50,))
    link = rep["tiers"][0]["links"][0]
    assert link["fetch_link_s_per_s"] == 0.0
    assert math.isnan(link["in_batch_over_fetch"]) and math.isnan(link["lone_over_fetch"])
    assert math.isnan(rep["blocks"]["reuse_interval_s"]["mean"])


def test_the_report_sizes_each_target_on_its_share():
    # the farthest-hit trace: 100 % needs 51 blocks; a share of 99 % needs 1 (see capacity_for above)
    blocks = [[1000], *[[i] for i in range(1, 51)], [1000], *[[7]] * 200]
    rep = workload.report(_reuse(blocks), RC, targets_pct=(99,))
    assert [(t["target_pct"], t["capacity_blocks"]) for t in rep["tiers"]] == [(99, 1.0), (100, 51.0)]


def test_a_half_second_trace_has_a_rate():
    # 2 requests 0.5 s apart: 4 a second (a duration under 1 s is still a duration)
    rep = workload.report(_reuse([[1], [1]], times_ms=[0, 500]), RC, [_link()], targets_pct=(50,))
    assert rep["trace"]["requests_per_s"] == 4.0
    # the hit: 1 ms + 1 token x 1000 B / 1e6 B/s = 2 ms, over 0.5 s = 4e-3
    assert rep["tiers"][0]["links"][0]["fetch_link_s_per_s"] == pytest.approx(4e-3)


@pytest.mark.parametrize("ids", [[], [5], [3, -1, 3, 2**63 - 1, -(2**63), -1]])
def test_dense_ids_are_the_ranks_np_unique_gives(ids):
    # [3, -1, 3, 2**63 - 1, -2**63, -1]: sorted distinct -2**63 < -1 < 3 < 2**63 - 1 -> ranks 2 1 2 3 0 1
    raw = np.array(ids, dtype=np.int64)
    dense = workload.dense_ids(raw)
    assert dense.dtype == np.int64 and dense.tolist() == np.unique(raw, return_inverse=True)[1].tolist()


def test_the_brute_force_stack_agrees_with_the_hand():
    assert lru_distances(STREAM) == STREAM_DISTANCES


@pytest.mark.parametrize("size", [1, 2, 3, 5, 12])
def test_the_kernel_in_chunks_gives_the_hand_distances(size):
    kernel = workload.StackDistanceStream()
    parts = [kernel.feed(np.array(STREAM[i : i + size])) for i in range(0, len(STREAM), size)]
    assert np.concatenate(parts).tolist() == STREAM_DISTANCES
    # the state: references fed so far, and each block's last reference
    # (0 at 8, 1 at 10, 2 at 7, 3 at 11, 4 at 9)
    assert kernel.offset == 12
    assert kernel.last[:6].tolist() == [8, 10, 7, 11, 9, -1]


def test_the_kernel_takes_whole_float_ids_and_gives_int64():
    # [0, 1, 0] as floats: -1, -1, then 1 (block 1 between)
    kernel = workload.StackDistanceStream()
    got = kernel.feed(np.array([0.0, 1.0, 0.0]))
    assert got.tolist() == [-1, -1, 1] and got.dtype == np.int64


def test_an_empty_chunk_gives_an_empty_int64_array():
    kernel = workload.StackDistanceStream()
    empty = kernel.feed(np.zeros(0, dtype=np.int64))
    assert empty.size == 0 and empty.dtype == np.int64
    # so chunks joined together stay integer: [-1, -1, 1] as above
    joined = np.concatenate((kernel.feed(np.array([0, 1])), empty, kernel.feed(np.array([0]))))
    assert joined.tolist() == [-1, -1, 1] and joined.dtype == np.int64
    assert kernel.offset == 3


def test_the_kernel_grows_its_state_for_ids_past_1024():
    kernel = workload.StackDistanceStream()
    # 1024 is one past the first 1024 slots: the state grows to 2048
    assert kernel.feed(np.array([1024])).tolist() == [-1]
    assert kernel.last.size == 2048
    # 5000 needs 5001 slots (more than twice 2048): 5000 -1, 1024 {5000} 1, 7 -1, 5000 {1024, 7} 2
    assert kernel.feed(np.array([5000, 1024, 7, 5000])).tolist() == [-1, 1, -1, 2]
    assert kernel.last.size == 5001
    # 1024 since its last use (index 2): {7, 5000} -> 2
    assert kernel.feed(np.array([1024])).tolist() == [2]


def test_the_kernel_past_two_to_the_32_references_equals_the_brute_force():
    # a stream that has already fed 2**32 - 3 references: positions pass 2**32 inside the second chunk
    blocks = [3, 3, 1, 1, 0, 0, 0, 1, 4, 3]
    kernel = workload.StackDistanceStream()
    kernel.offset = 2**32 - 3
    got = np.concatenate((kernel.feed(np.array(blocks[:4])), kernel.feed(np.array(blocks[4:]))))
    # by hand: 3 -1, 3 0, 1 -1, 1 0, 0 -1, 0 0, 0 0, 1 {0} 1, 4 -1, 3 {1, 0, 4} 3
    assert got.tolist() == [-1, 0, -1, 0, -1, 0, 0, 1, -1, 3] == lru_distances(blocks)


def test_dense_ids_follow_first_appearance_across_chunks():
    dense = workload.DenseIds()
    # 50 first (0), then 10 (1)
    assert dense.map(np.array([50, 10, 50])).tolist() == [0, 1, 0]
    # 10 known (1); 30 and 20 new in this order: 30 -> 2, 20 -> 3
    got = dense.map(np.array([30, 10, 20, 30]))
    assert got.tolist() == [2, 1, 3, 2] and got.dtype == np.int64
    # the state: sorted hashes [10, 20, 30, 50] with their ids [1, 3, 2, 0], both int64 (16 B a block)
    assert dense.keys.tolist() == [10, 20, 30, 50] and dense.values.tolist() == [1, 3, 2, 0]
    assert dense.keys.dtype == dense.values.dtype == np.int64
    assert len(dense) == 4


def test_dense_ids_tell_apart_hashes_a_float_would_merge():
    # 2**60 and 2**60 + 1 are one float64 but two int64 hashes: ids 0 and 1
    dense = workload.DenseIds()
    assert dense.map(np.array([2**60])).tolist() == [0]
    assert dense.map(np.array([2**60 + 1, 2**60])).tolist() == [1, 0]


def test_dense_ids_of_a_two_dimensional_chunk_are_flat_in_reading_order():
    # 7 -> 0, 9 -> 1, 9 -> 1, 8 -> 2
    dense = workload.DenseIds()
    assert dense.map(np.array([[7, 9], [9, 8]])).tolist() == [0, 1, 1, 2]


def test_the_hand_trace_by_brute_force():
    refs = [h for r in HAND_ROWS if isinstance(r, dict) for h in r["hash_ids"]]
    assert lru_distances(refs) == HAND_D


def test_fetching_pays_the_latency_once_a_transfer_and_a_block_may_take_several():
    # 2 hit blocks of 8 tokens at 1,000 B a token over 1e6 B/s with 1 ms a transfer (costs.fetch_time_s):
    # 1 transfer a block: 2 x 1 ms + 8,000 / 1e6 = 10 ms; 3 a block (a per-layer layout): 6 x 1 ms + 8 ms = 14 ms
    assert RC.fetch_transfers == 1
    assert RC.fetch_s(np.array([2]), np.array([8]), 1e6, 1e-3).tolist() == pytest.approx([10e-3], rel=1e-12)
    chunked = workload.RegenCosts(**{**vars(RC), "fetch_transfers": 3})
    assert chunked.fetch_s(np.array([2, 0]), np.array([8, 0]), 1e6, 1e-3).tolist() == pytest.approx([14e-3, 0.0])
    # the report's links: A | A | B over 0.5 s at 4 tokens a block, one hit of 1 block and 4,000 B:
    # 3 x 1 ms + 4 ms = 7 ms over 0.5 s = 0.014 link-seconds a second (0.01 with one transfer a block)
    r = _reuse([[1], [1], [2]], times_ms=[0, 250, 500], block_tokens=4)
    one, three = (workload.report(r, rc, [_link()], targets_pct=(100,))["tiers"][0]["links"][0] for rc in (RC, chunked))
    assert one["fetch_link_s_per_s"] == pytest.approx(0.01, rel=1e-12)
    assert three["fetch_link_s_per_s"] == pytest.approx(0.014, rel=1e-12)


def test_the_layout_reaches_the_workload_from_the_assumption_set():
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.scenario import Scenario

    # Llama-3-70B: a K and a V chunk in each of 80 layers, 160 transfers a block when fetched per layer
    assert workload.RegenCosts.of(Scenario(), "conservative").fetch_transfers == 1
    per_layer = Scenario(load_assumptions(sets={"fetch_layout": "per-layer"}))
    assert workload.RegenCosts.of(per_layer, "conservative").fetch_transfers == 160


def test_recomputing_a_hit_costs_what_the_cost_page_charges_a_block():
    from kvtier.report.pages import page_of
    from kvtier.scenario import Scenario

    # one implementation: costs.regen_flops and costs.compute_time_s inside a batch, the roofline alone.
    # Llama-3-70B at the seed, a 16-token prefix from position 0: 2 x 70e9 x 16 = 2.24e12 FLOP plus attention
    # 2 x 80 layers x 64 heads x (128 + 128) = 2,621,440 FLOP a position x 16 x 17 / 2 = 136 positions
    # = 356,515,840 FLOP; / (500e12 x 25 %) = 2,240,356,515,840 / 1.25e14 = 17.92285 ms.  Alone: the
    # weights' read, 140e9 B / (3.35e12 B/s x 80 %) = 52.2388 ms, outlasts the compute
    s = Scenario()
    rc = workload.RegenCosts.of(s, "conservative")
    in_batch, lone = float(rc.in_batch_s(np.array([16.0]))[0]), float(rc.lone_s(np.array([16.0]))[0])
    assert in_batch == pytest.approx(2_240_356_515_840 / 1.25e14, rel=1e-12)
    assert lone == pytest.approx(140e9 / (3.35e12 * 0.8), rel=1e-12)
    assert rc.lone_memory_bound(np.array([16.0])).tolist() == [True]
    # the scenario's regimes, which the cost page prices, give the same numbers to the last bit
    assert in_batch == float(s.in_batch_regen_s(0, "resident", 0.25))
    assert lone == float(s.lone_regen_s(0, "resident", 0.25))
    blocks = next(t for t in page_of("13_cost").tables if t.name == "cost_blocks").build(s)
    regen_ms = blocks.set_index(["block_tokens", "regime"])["regen_ms"]
    assert regen_ms[(16, "batch")] == pytest.approx(in_batch * 1e3, rel=1e-12)
    assert regen_ms[(16, "lone")] == pytest.approx(lone * 1e3, rel=1e-12)


@pytest.mark.parametrize("cut", [1, 2, 3, 4])
def test_lru_stream_fed_whole_requests_in_two_chunks_gives_the_hand_counts(cut):
    # the hand trace as arrays (HAND_ROWS): ids -1 -2 | -1 -2 5 | 7 7 | -1 7 | (none); inputs 8 9 5 6 0 at 4 tokens
    # a block, cut after request `cut`; the counts, totals and falls do not depend on where
    ids = [[-1, -2], [-1, -2, 5], [7, 7], [-1, 7], []]
    inputs = [8, 9, 5, 6, 0]
    stream = workload.LruStream("per-block")  # the hand counts are per block (prefix counts: test_traces)
    for part in (slice(0, cut), slice(cut, 5)):
        chunk = ids[part]
        starts = np.r_[0, np.cumsum([len(r) for r in chunk])].astype(np.int64)
        flat = np.array([h for r in chunk for h in r], dtype=np.int64)
        stream.feed(flat, starts, np.array(inputs[part], dtype=np.int64), 4)
    h = stream.histogram("hand", 5, "mooncake")
    # 9 references, 4 distinct blocks; 8 + 9 + 5 + 6 + 0 = 28 tokens
    assert (h.name, h.n_requests, h.n_refs, h.n_unique, h.trace_format) == ("hand", 5, 9, 4, "mooncake")
    assert h.total == {"blocks": 9.0, "tokens": 28.0}
    # blocks at distance 0, 1, 2, 3: 1, 3, 0, 1; tokens: 1, 4 + 4 + 2 = 10, 0, 4
    assert h.counts["blocks"].tolist() == [1, 3, 0, 1]
    assert h.counts["tokens"].tolist() == [1, 10, 0, 4]
    # falls: request 3 (7 7): inf then 0; request 4 (-1 7): 3 then 1.  A hit after a miss: request 3 only,
    # its second 7 hits (distance 0) after the first missed; request 2 (-1 -2 5) misses last, not first
    assert (h.requests_with_a_distance_that_falls, h.requests_with_a_hit_after_a_miss) == (2, 1)
    assert len(stream) == 4


def test_each_reference_carries_its_share_of_its_prompt_s_prefix():
    # N = 10 parameters, 2 FLOPs each, attention 1 FLOP per position, peak x MFU = 1 FLOP/s; 2-token blocks.
    # prefix of h tokens: 2 x 10 x h + h (h + 1) / 2 FLOP: 2 tokens 43, 4 tokens 90, 6 tokens 141
    rc = workload.RegenCosts(1.0, 10.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    t = trace_of([[1, 2, 3], [1, 2]], block_tokens=2)
    per = rc.per_reference_s(t, "batch")
    # request 0: 43, 90 - 43 = 47, 141 - 90 = 51; request 1 starts again from its prompt's first token: 43, 47
    assert per.tolist() == pytest.approx([43.0, 47.0, 51.0, 43.0, 47.0])
    # its hits (the second request's two blocks) add up to what saving() charges for its 4-token hit prefix
    r = workload.Reuse.of(t)
    assert per[r.prev >= 0].sum() == pytest.approx(float(rc.in_batch_s(np.array([4.0]))[0]))
    with pytest.raises(ValueError, match="regime"):
        rc.regen_s(np.array([1.0]), "alone")


# ---- hit counts, sampling, over time ------------------------------------------------------------------------


def test_hits_count_up_to_the_first_miss_or_per_block():
    # one request 1 2 3, then 9 2 3: 9 is new (a miss), 2 and 3 were seen (distance 2 each: 3 1 ... then 9 between)
    r = workload.Reuse.of(trace_of([[1, 2, 3], [9, 2, 3]]))
    assert r.distance.tolist() == [-1, -1, -1, -1, 2, 2]
    # up to the first miss the second request hits nothing: 9 missed first; per block 2 and 3 hit (2 of 6)
    assert r.count == "prefix" and r.hit_distance.tolist() == [-1] * 6 and float(r.hit_ratio()) == 0.0
    assert float(r.recounted("per-block").hit_ratio()) == 2 / 6
    rep = workload.report(r, workload.RegenCosts(1.0, 10.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0), targets_pct=())
    # the one tier (100 %) of an infinite cache: 0 hits; counted per block, 2 of 6 more
    assert rep["hit_count"] == {
        "count": "prefix",
        "other": "per-block",
        "capacity_blocks": [0.0],
        "other_minus_this": [0.0],  # capacity 0 hits nothing either way
    }
    # at an infinite capacity, counted per block: 2 of 6 more
    assert workload.count_difference(r, [math.inf])["other_minus_this"] == [pytest.approx(2 / 6)]
    with pytest.raises(ValueError, match="count must be one of"):
        workload.Reuse.of(r.trace, "first-miss")


def test_prefix_distances_are_the_running_largest_in_each_request():
    # requests (5 0 2) and (1 -1 0): running largest 5 5 5 | 1, then a miss ends the hits: -1 -1
    d = np.array([5, 0, 2, 1, -1, 0])
    assert workload.hit_distances(d, np.array([0, 3, 6])).tolist() == [5, 5, 5, 1, -1, -1]
    assert workload.hit_distances(d, np.array([0, 3, 6]), "per-block").tolist() == d.tolist()


def test_a_sampled_stream_replays_exactly_the_sampled_blocks_with_scaled_distances():
    # SHARDS: the blocks whose hash is below R x P are replayed, their stack distances divided by R; the histogram is
    # that of the exact distances of the filtered stream (floor(d / R)), plus the SHARDS_adj difference at 0
    t = traces.generate_trace(400, seed=3, n_prefixes=30, new_blocks=(1, 6))
    rate = 0.25
    h = workload.histogram_of(t, "per-block", sample_rate=rate, chunk_refs=500)
    kept = workload.block_hash(t.blocks) < workload.sample_threshold(rate)
    d = workload.stack_distances(t.blocks[kept])
    used = workload.sample_threshold(rate) / workload.SAMPLE_SPACE
    expected = np.bincount(np.floor(d[d >= 0] / used).astype(int)).astype(float)
    expected[0] += used * t.n_refs - kept.sum()  # SHARDS_adj: rate x references read, less those sampled
    assert h.sampled_refs == int(kept.sum()) and h.counts["blocks"] == pytest.approx(expected)
    assert h.total["blocks"] == pytest.approx(used * t.n_refs)
    # at rate 1 the stream is the exact curve
    exact = workload.histogram_of(t, "per-block", sample_rate=1.0)
    r = workload.Reuse.of(t, "per-block")
    assert [exact.hit_ratio(c) for c in (1, 10, 100)] == pytest.approx([float(r.hit_ratio(c)) for c in (1, 10, 100)])
    assert workload.curve_error(r, exact) == {
        "mean_abs": 0.0,
        "max_abs": 0.0,
        "points": pytest.approx(min(200, r.capacity_for(1.0))),
        "largest_capacity_blocks": float(r.capacity_for(1.0)),
    }


def test_fixed_size_sampling_holds_at_most_its_blocks_and_lowers_the_rate():
    t = traces.generate_trace(2000, seed=5, n_prefixes=100, new_blocks=(1, 8))
    stream = workload.LruStream("per-block", max_blocks=300)
    for r in range(0, t.n_requests, 100):
        s = t.starts[r : r + 101]
        stream.feed(t.blocks[s[0] : s[-1]], s - s[0], t.input_tokens[r : r + 100], t.block_tokens)
        assert len(stream) <= 300  # never more than the bound after a chunk
    # the trace has far more than 300 distinct blocks, so the rate fell below 1, to the hash of the 301st block
    assert t.n_unique > 300 and stream.sample_rate < 1


def test_the_hit_ratio_over_time_per_requests_and_per_seconds():
    # requests at 0, 1, 2, 3 s: (1 2) (1 2) (3) (1 2); capacity 2 blocks
    # distances: -1 -1 | 1 1 | -1 | 2 2: hits at capacity 2: request 1 (2 of 2), request 3 none (distance 2)
    r = workload.Reuse.of(trace_of([[1, 2], [1, 2], [3], [1, 2]]))
    start, refs, ratio = r.over_time(2, every_requests=2)
    # requests 0-1: 4 references, 2 hits; requests 2-3: 3 references, 0 hits
    assert start.tolist() == [0.0, 2.0] and refs.tolist() == [4, 3] and ratio.tolist() == [0.5, 0.0]
    start, refs, ratio = r.over_time(3, every_requests=None, every_s=1.5)
    # windows [0, 1.5) s: requests 0, 1 (2 hits of 4); [1.5, 3): request 2 (0 of 1); [3, 4.5): request 3 (2 of 2)
    assert start.tolist() == [0.0, 1.5, 3.0] and refs.tolist() == [4, 1, 2] and ratio.tolist() == [0.5, 0.0, 1.0]


def test_the_streamed_report_is_the_in_memory_one():
    # a synthetic trace with a third of its prompts shuffled (so that hits after a miss and falls exist), both
    # counts: every figure of report() agrees to rounding, the recompute costs (summed per reference) included
    t = traces.generate_trace(600, seed=2, n_prefixes=40, new_blocks=(1, 6))
    rng = np.random.default_rng(0)
    blocks = t.blocks.copy()
    for q in range(t.n_requests):
        if rng.random() < 0.3:
            rng.shuffle(blocks[t.starts[q] : t.starts[q + 1]])
    t = workload.Trace(
        t.name, t.block_tokens, t.timestamps_s, t.input_tokens, t.output_tokens, t.starts, blocks, "mooncake"
    )
    rc = workload.RegenCosts(2.0, 1e9, 2.0, 1e4, 1e14, 0.5, 2e9, 1e12, 0.8)
    links = [workload.LinkSpec("l", 1e10, 1e-6)]
    for count in workload.HIT_COUNTS:
        r = workload.Reuse.of(t, count)
        assert r.requests_with_a_distance_that_falls > 0
        a = workload.report(r, rc, links)
        b = workload.report(workload.histogram_of(t, count, rc, chunk_refs=300), rc, links)
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


@pytest.mark.parametrize(
    ("model", "counts"),
    [
        ("llama-3-70b", {}),
        ("llama-3-70b", {"tp": 8}),
        ("llama-3-70b", {"tp": 4, "pp": 2}),
        ("deepseek-v3", {"tp": 8, "ep": 4}),
    ],
)
def test_regen_costs_time_a_block_as_the_scenario_does(model: str, counts: dict[str, int]) -> None:
    """The TTFT's prefill and the ratio pages' lone block are one forward-pass model, placed alike."""
    from kvtier.scenario import Scenario

    s = Scenario().with_block(16, model)
    s = s.with_placement(**counts) if counts else s
    mfu = s.mfu(str(s.assumptions.value("illustrative.mfu")))
    rc = s.regen_costs()
    flops = rc.prefix_flops(np.array(16.0))
    assert float(rc.pass_latency_s(flops, 16.0, 0.0)) == pytest.approx(float(s.lone_regen_s(0, "resident", mfu)))
    assert float(rc.in_batch_latency_s(flops, 16.0)) == pytest.approx(float(s.in_batch_compute_s(flops, mfu)))
    # accelerator time of a lone pass: its wall time x the ranks of one stage (accelerators / pp)
    busy = s.placement.accelerators / s.placement.pp
    assert float(rc.lone_s(np.array(16.0))) == pytest.approx(float(s.lone_regen_s(0, "resident", mfu)) * busy)


def test_a_prefix_fetch_pays_the_transfer_model():
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.scenario import Scenario

    rc = workload.RegenCosts(
        100.0, 1e3, 2.0, 0.0, 1e6, 0.5, 1e4, 1e6, 1.0, fetch_transfers=2, link_efficiency=0.5, link_overhead_s=5e-4
    )
    # 2 blocks x 2 transfers x (1 ms + 0.5 ms) + 3,200 B / (1e5 x 0.5) = 6 + 64 = 70 ms; no hit fetches nothing
    got = rc.fetch_s(np.array([2.0, 0.0]), np.array([32.0, 0.0]), 1e5, 1e-3)
    assert got == pytest.approx([0.070, 0.0])
    # a pageable set brings its overhead per copy and its share of the rate with it
    sets = {"fetch.host_memory": "pageable", "fetch.pageable_overhead": "15 us", "fetch.pageable_efficiency": "20 %"}
    placed = workload.RegenCosts.of(Scenario(load_assumptions(None, sets)), "conservative")
    assert (placed.link_overhead_s, placed.link_efficiency) == (pytest.approx(15e-6), pytest.approx(0.2))


# ---------------------------------------------------------------------------
# The Fenwick-tree sweep of the exact stack distances, compiled and as written, against a brute-force stack.
# ---------------------------------------------------------------------------


def test_the_sweep_on_a_hand_chunk_after_a_first_one():
    kernel = workload.StackDistanceStream()
    assert kernel.feed(np.array([0, 1, 2])).tolist() == [-1, -1, -1]
    # second chunk: 1 (used at 1; since then 2) -> 1; 3 new -> -1; 0 (used at 0; since then 1, 2, 3) -> 3;
    # 3 again (0 between) -> 1; 2 (used at 2; since then 1, 3, 0) -> 3
    d, local = kernel.feed_local(np.array([1, 3, 0, 3, 2]))
    assert d.tolist() == [1, -1, 3, 1, 3]
    # previous references inside the chunk: only the second 3, at chunk position 1
    assert local.tolist() == [-1, -1, -1, 1, -1]
    # last uses: 0 at 5, 1 at 3, 2 at 7, 3 at 6; sorted as the state keeps them
    assert kernel.last[:4].tolist() == [5, 3, 7, 6]
    assert kernel.seen.tolist() == [3, 5, 6, 7]


def _swept_in_chunks(blocks: np.ndarray, cuts: np.ndarray) -> tuple[np.ndarray, workload.StackDistanceStream]:
    sweep = workload.StackDistanceStream()
    return np.concatenate([sweep.feed(part) for part in np.split(blocks, cuts)]), sweep


@pytest.mark.parametrize("seed", range(12))
def test_the_sweep_in_random_chunks_equals_the_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, distinct = int(rng.integers(1, 2000)), int(rng.integers(1, 150))
    blocks = rng.integers(0, distinct, n)
    cuts = np.sort(rng.integers(0, n, int(rng.integers(0, 8))))
    got, sweep = _swept_in_chunks(blocks, cuts)
    assert got.tolist() == lru_distances(blocks.tolist())
    # the state: each block's last use, and those last uses sorted
    last = {int(b): t for t, b in enumerate(blocks)}
    assert sweep.last[: max(last) + 1].tolist() == [last.get(b, -1) for b in range(max(last) + 1)]
    assert sweep.seen.tolist() == sorted(last.values())
    # the whole stream at once, in memory: the same distances
    assert np.array_equal(workload.stack_distances(blocks, workload.previous_reference(blocks)), got)


def test_the_sweep_as_written_equals_the_compiled_sweep(monkeypatch):
    # the kernels run as plain Python where numba is missing: the same distances and state, chunk by chunk
    rng = np.random.default_rng(5)
    blocks = rng.integers(0, 40, 600)
    cuts = np.array([100, 250, 251, 400])
    compiled, state = _swept_in_chunks(blocks, cuts)
    monkeypatch.setattr(workload, "_sweep_py", workload._sweep_py.py_func)
    monkeypatch.setattr(workload, "_last_uses_py", workload._last_uses_py.py_func)
    plain, plain_state = _swept_in_chunks(blocks, cuts)
    assert plain.tolist() == compiled.tolist() == lru_distances(blocks.tolist())
    assert np.array_equal(plain_state.last, state.last) and np.array_equal(plain_state.seen, state.seen)
    assert workload.stack_distances(blocks).tolist() == compiled.tolist()


def test_distinct_counts_by_hand():
    # 0, 512, 1024 and 700 appear: the distinct values sorted, each element's place among them
    values, (a, b) = workload._distinct_counts(np.array([512.0, 1024.0, 700.0]), np.array([0.0, 512.0, 512.0]))
    assert values.tolist() == [0.0, 512.0, 700.0, 1024.0]
    assert a.tolist() == [1, 3, 2] and b.tolist() == [0, 1, 1]
    # a fraction: the arrays stand for themselves
    values, (a, b) = workload._distinct_counts(np.array([0.5]), np.array([2.0]))
    assert values.tolist() == [0.5, 2.0] and a.tolist() == [0] and b.tolist() == [1]


@pytest.mark.parametrize("count", ["prefix", "per-block"])
def test_costs_by_distinct_token_counts_equal_them_reference_by_reference(monkeypatch, count):
    from kvtier.inputs import traces
    from kvtier.scenario import Scenario

    rc = workload.RegenCosts.of(Scenario(), "conservative")
    trace = traces.generate_trace(2000, seed=7, new_blocks=(1, 6))

    def run() -> workload.LruStream:
        stream = workload.LruStream(count, rc)
        for lo, hi in ((0, 900), (900, trace.n_requests)):  # two chunks
            base = int(trace.starts[lo])
            stream.feed(
                trace.blocks[base : int(trace.starts[hi])],
                trace.starts[lo : hi + 1] - base,
                trace.input_tokens[lo:hi],
                trace.block_tokens,
                trace.output_tokens[lo:hi],
                trace.timestamps_s[lo:hi],
            )
        return stream

    tabulated = run()
    monkeypatch.setattr(workload, "DISTINCT_TABLE", -1)  # every reference's cost computed on its own
    direct = run()
    for key in ("in_batch_s", "lone_s", "memory_bound_requests", "hit_requests"):
        assert tabulated.counts[key].dtype == direct.counts[key].dtype
        assert tabulated.counts[key].tobytes() == direct.counts[key].tobytes(), key
    assert tabulated.counts["lone_s"].sum() > 0  # something was priced
