"""kvtier.formulas.cache.fleet_oracle: the fleet's Python replay, itself checked before it checks the compiled one.

Where the routing does not read the caches, each instance's hits must be those of the stack distances of its
own requests (kvtier.formulas.cache.distances), computed without any LRU; and LiteHit's published worked example
must come out as its README gives it.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas.cache import fleet, fleet_oracle
from tests.formulas.cache.test_fleet import LITEHIT, make_trace, own_hits, prompts


@settings(max_examples=60, deadline=None)
@given(prompts, st.integers(1, 4), st.sampled_from(fleet.STATE_FREE), st.integers(0, 8))
def test_the_oracle_hits_what_each_instances_stack_distances_say(ps, n, routing, capacity):
    t = make_trace(ps)
    got = fleet_oracle.replay_fleet_py(t, n, routing, capacity)
    for i in range(n):
        assert got.hit_blocks[got.instance == i].tolist() == own_hits(t, got.instance, i, capacity).tolist()


def test_the_oracle_gives_litehits_worked_example():
    # committed tail first at 2 blocks: 0 + 2 + 2 + 1 + 2 = 7 blocks (28 of 54 tokens, 51.85 %); unbounded, request
    # 3 finds C as well: 8 blocks (32 of 54, 59.26 %)
    tail_first = fleet_oracle.replay_fleet_py(LITEHIT, 1, "round-robin", 2, commit="tail-first")
    assert tail_first.hit_blocks.tolist() == [0, 2, 2, 1, 2]
    assert fleet_oracle.replay_fleet_py(LITEHIT, 1, "round-robin", math.inf).hit_blocks.sum() == 8
