"""kvtier.formulas.cache.admission_oracle: the admission replay in Python, itself checked before it checks the loop.

Admitting every miss with no time to live it must be the book's LRU (the stack distances, without any replay); its
filters and TTL are checked by hand in tests/formulas/cache/test_admission.py through the compiled replay, which
tests/formulas/cache/test_admission_loop.py holds equal to it.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas.cache import admission_oracle
from tests.formulas.cache.test_fleet import make_trace, own_hits, prompts


@settings(max_examples=60, deadline=None)
@given(prompts, st.integers(0, 8))
def test_the_oracle_admitting_every_miss_is_the_stack_distance_lru(ps, capacity):
    t = make_trace(ps)
    got = admission_oracle.replay_admission_py(t, capacity)
    everyone = t.starts[:-1] * 0  # one instance: every request on instance 0
    assert got.hit_blocks.tolist() == own_hits(t, everyone, 0, capacity).tolist()
    assert got.expired == 0


def test_the_oracle_expires_an_idle_block():
    # a at 0 s, b at 1 s, a at 2 s, a at 3 s; TTL 1.5 s: a at 2 s was idle 2 s, gone; at 3 s idle 1 s, a hit
    got = admission_oracle.replay_admission_py(make_trace([[1], [2], [1], [1]]), 10, "always", 1.5)
    assert got.hit_blocks.tolist() == [0, 0, 0, 1] and (got.expired, got.writes) == (1, 3)
