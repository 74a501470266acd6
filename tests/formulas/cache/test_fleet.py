"""kvtier.formulas.cache.fleet: routing a trace over instances, each instance's LRU tier, and one pooled tier.

Checked against an independent computation: where the routing does not read the caches, each instance's
hits are those of the stack distances of its own requests (kvtier.formulas.cache.distances), and the
pooled tier's those of the whole trace's; and by hand on small traces.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas.cache import fleet
from kvtier.formulas.cache.distances import hit_distances, stack_distances
from kvtier.formulas.cache.trace import Trace


def make_trace(prompts: list[list[int]], block_tokens: int = 4, inputs: list[int] | None = None) -> Trace:
    """A trace of ``prompts`` (lists of chained ids), one request a second, full blocks unless ``inputs``."""
    starts = np.r_[0, np.cumsum([len(p) for p in prompts])].astype(np.int64)
    flat = np.array([b for p in prompts for b in p], dtype=np.int64)
    _, dense = np.unique(flat, return_inverse=True)
    n = len(prompts)
    tokens = np.array(inputs if inputs is not None else [len(p) * block_tokens for p in prompts], dtype=np.int64)
    return Trace("t", block_tokens, np.arange(n, dtype=float), tokens, np.ones(n, np.int64), starts, dense, "mooncake")


# LiteHit's worked example (alibaba/tair-kvcache, kv_cache_manager/optimizer/liteHit/README.md, section 11):
# A..E chained keys, 4-token blocks, full blocks only; prompts of 13, 12, 13, 8 and 8 tokens (54 in all)
A, B, C, D, E = range(5)
LITEHIT = make_trace([[A, B, C], [A, B, D], [A, B, C], [A, E], [A, E]], 4, [13, 12, 13, 8, 8])


@pytest.mark.parametrize(
    ("capacity", "commit", "hits", "tokens"),
    [
        # tail first (LiteHit's commit): request 2 finds A B (2), request 3 A B but C sits at depth 4 behind D
        # at capacities 2 and 3 (2), request 4 A (1), request 5 A E (2): 7 blocks, 28 of 54 tokens (51.85 %)
        (2, "tail-first", [0, 2, 2, 1, 2], 28),
        (3, "tail-first", [0, 2, 2, 1, 2], 28),
        # unbounded: request 3 finds C as well, 8 blocks, 32 of 54 tokens (59.26 %), whatever the order
        (math.inf, "tail-first", [0, 2, 3, 1, 2], 32),
        (math.inf, "head-first", [0, 2, 3, 1, 2], 32),
        # head first at 2 blocks: after [A B C] the tier holds B C, the head A evicted first; [A B D] misses A
        # and leaves B D... every request misses its head until [A E] twice: the last finds A E, 2 blocks, 8 tokens
        (2, "head-first", [0, 0, 0, 0, 2], 8),
        # head first at 3 holds a whole three-block prompt: 2 + 2 + 1 + 2 = 7 blocks, 28 tokens
        (3, "head-first", [0, 2, 2, 1, 2], 28),
    ],
)
def test_litehit_worked_example(capacity, commit, hits, tokens):
    got = fleet.replay_fleet(LITEHIT, 1, "round-robin", capacity, commit=commit)
    assert got.hit_blocks.tolist() == hits
    assert fleet.hit_tokens(LITEHIT, got.hit_blocks).sum() == tokens


def test_hit_tokens_counts_the_partial_last_block_only_when_it_hits():
    # 4-token blocks: a 10-token prompt in 3 blocks (4 + 4 + 2); 2 hit -> 8 tokens; all 3 -> 10
    t = make_trace([[0, 1, 2], [0, 1, 2]], 4, [10, 10])
    assert fleet.hit_tokens(t, np.array([2, 3])).tolist() == [8.0, 10.0]


def own_hits(t: Trace, where: np.ndarray, instance: int, capacity: float) -> np.ndarray:
    """Per request of ``instance``, its prefix hits from the stack distances of that instance's own requests."""
    mine = np.flatnonzero(where == instance)
    refs = np.concatenate([np.arange(t.starts[r], t.starts[r + 1]) for r in mine]) if mine.size else np.zeros(0, int)
    starts = np.r_[0, np.cumsum(np.diff(t.starts)[mine])].astype(np.int64)
    h = hit_distances(stack_distances(t.blocks[refs]), starts, "prefix")
    hit = (h >= 0) & (h < capacity)
    request = np.repeat(np.arange(mine.size), np.diff(starts))
    return np.bincount(request[hit], minlength=mine.size)


prompts = st.lists(
    st.lists(st.integers(0, 5), min_size=0, max_size=6).map(lambda p: [hash(tuple(p[: k + 1])) for k in range(len(p))]),
    min_size=1,
    max_size=40,
)


@settings(max_examples=80, deadline=None)
@given(prompts, st.integers(1, 4), st.sampled_from(fleet.STATE_FREE), st.integers(0, 8))
def test_each_instance_hits_what_its_own_stack_distances_say(ps, n, routing, capacity):
    t = make_trace(ps)
    got = fleet.replay_fleet(t, n, routing, capacity)
    for i in range(n):
        assert got.hit_blocks[got.instance == i].tolist() == own_hits(t, got.instance, i, capacity).tolist()


@settings(max_examples=60, deadline=None)
@given(prompts, st.integers(0, 8), st.sampled_from(fleet.ROUTINGS))
def test_one_instance_is_the_pooled_tier(ps, capacity, routing):
    # with one instance every routing sends everything to it, and its tier is the whole trace's LRU
    t = make_trace(ps)
    got = fleet.replay_fleet(t, 1, routing, capacity, busy_s=lambda r, h: 5.0)
    assert got.hit_blocks.tolist() == fleet.pooled_hits(t, capacity).tolist()


def test_round_robin_and_random_split():
    t = make_trace([[k] for k in range(10)])
    assert fleet.replay_fleet(t, 3, "round-robin", 1).instance.tolist() == [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]
    drawn = fleet.replay_fleet(t, 3, "random", 1).instance
    # numpy's PCG64 seeded 0, the same draws as np.random.default_rng(0).integers(0, 3, 10)
    assert drawn.tolist() == np.random.default_rng(0).integers(0, 3, 10).tolist()


def test_session_follows_a_conversation_not_a_shared_system_prompt():
    # every prompt opens with the system block S and ends in a partial block (1, 2, 3, 4); 2 instances
    s, x1, x2, y1 = 100, 101, 102, 103
    t = make_trace([[s, 1], [s, x1, 2], [s, x1, x2, 3], [s, y1, 4]])
    got = fleet.replay_fleet(t, 2, "session", 10)
    # request 0 [S 1] opens a session on instance 0; its last full block S closes it
    # request 1 [S x1 2] holds S, which closed request 0's prompt and nothing went on past yet: instance 0
    # request 2 [S x1 x2 3] holds x1, which closed request 1's: instance 0
    # request 3 [S y1 4]: its deepest closing block is S, but requests 1 and 2 went on past it (a shared
    # prefix, not a conversation): a new session, on instance 1
    assert got.instance.tolist() == [0, 0, 0, 1]
    # instance 0 finds S (request 1), S x1 (request 2); instance 1 starts empty
    assert got.hit_blocks.tolist() == [0, 1, 2, 0]


def test_prefix_routing_follows_the_longest_match():
    # [a b c] goes to 0, [d] to 1 (least loaded in turn), then [a b e]: instance 0 holds a b (2 of 3 > 0.3)
    t = make_trace([[1, 2, 3], [4], [1, 2, 5]])
    got = fleet.replay_fleet(t, 2, "prefix", 10)
    assert got.instance.tolist() == [0, 1, 0]
    assert got.hit_blocks.tolist() == [0, 0, 2]


def test_prefix_routing_balances_a_busy_fleet():
    # every request shares block 1 and stays in flight 100 s: with balance_abs 1 and balance_rel 1.5 the fleet
    # is out of balance once instance 0 has 2 in flight and instance 1 none: request 2 goes to instance 1
    t = make_trace([[1, 2], [1, 3], [1, 4], [1, 5]])
    router = fleet.Router(balance_abs=1, balance_rel=1.5, cache_threshold=0.3)
    got = fleet.replay_fleet(t, 2, "prefix", 10, busy_s=lambda r, h: 100.0, router=router)
    # request 0: nothing cached, least loaded in turn -> 0; request 1: instance 0 holds block 1 (1 of 2 > 0.3),
    # loads 1 and 0 (lead 1, not above 1) -> 0; request 2: loads 2 and 0, lead 2 > 1 and 2 > 1.5 x 0 -> 1;
    # request 3: loads 2 and 1 (lead 1) -> cache: instance 0 and 1 both hold block 1, ties to the least loaded, 1
    assert got.instance.tolist() == [0, 0, 1, 1]


def test_least_loaded_takes_ties_in_turn_and_then_the_idlest():
    t = make_trace([[1], [2], [3], [4]])
    # every request busy 10 s, one a second: loads rise 0 0 -> 1 0 -> 1 1 -> 2 1 ... in turn
    got = fleet.replay_fleet(t, 2, "least-loaded", 10, busy_s=lambda r, h: 10.0)
    assert got.instance.tolist() == [0, 1, 0, 1]


def test_imbalance():
    # busiest 6 over the mean 4 -> 1.5
    assert fleet.imbalance(np.array([2.0, 4.0, 6.0])) == 1.5
    assert math.isnan(fleet.imbalance(np.zeros(3)))


def test_bad_arguments():
    t = make_trace([[1]])
    with pytest.raises(ValueError, match="instances"):
        fleet.replay_fleet(t, 0, "random", 1)
    with pytest.raises(ValueError, match="routing"):
        fleet.replay_fleet(t, 1, "nearest", 1)
    with pytest.raises(ValueError, match="capacity"):
        fleet.replay_fleet(t, 1, "random", -1)
    with pytest.raises(ValueError, match="whole number"):
        fleet.replay_fleet(t, 1, "random", 1.5)
    with pytest.raises(ValueError, match="commit"):
        fleet.replay_fleet(t, 1, "random", 1, commit="sideways")
