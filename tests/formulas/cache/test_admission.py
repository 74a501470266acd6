"""kvtier.formulas.cache.admission: admission filters and a time to live on an LRU tier, by hand and against LRU."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas.cache import admission, fleet
from tests.formulas.cache.test_fleet import make_trace, prompts


@settings(max_examples=60, deadline=None)
@given(prompts, st.integers(0, 8))
def test_admitting_every_miss_with_no_ttl_is_lru(ps, capacity):
    # the fleet's one-instance replay is the book's LRU (held to the stack distances there)
    t = make_trace(ps)
    got = admission.replay_admission(t, capacity)
    assert got.hit_blocks.tolist() == fleet.replay_fleet(t, 1, "round-robin", capacity).hit_blocks.tolist()
    assert got.expired == 0


def test_the_kth_reference_filters_by_hand():
    # one block per request: a b a c a b, one request a second, capacity 2
    a, b, c = 1, 2, 3
    t = make_trace([[a], [b], [a], [c], [a], [b]])
    # always: a b written; a hits; c evicts b (least recent); a hits; b evicts c: 2 hits, 4 writes
    got = admission.replay_admission(t, 2, "always")
    assert (int(got.hit_blocks.sum()), got.writes) == (2, 4)
    # second: a and b skipped on their first reference; a written on its second; c skipped; a hits; b written on
    # its second: 1 hit, 2 writes
    got = admission.replay_admission(t, 2, "second")
    assert (int(got.hit_blocks.sum()), got.writes) == (1, 2)
    # third: only a, on its third reference: 0 hits, 1 write
    got = admission.replay_admission(t, 2, "third")
    assert (int(got.hit_blocks.sum()), got.writes) == (0, 1)


def test_a_ttl_drops_an_idle_block():
    # a at 0 s, b at 1 s, a at 2 s, a at 3 s, one request a second; TTL 1.5 s: a's return at 2 s finds it idle 2 s,
    # gone (1 expired, rewritten); at 3 s idle 1 s: a hit
    t = make_trace([[1], [2], [1], [1]])
    got = admission.replay_admission(t, 10, "always", ttl_s=1.5)
    assert got.hit_blocks.tolist() == [0, 0, 0, 1] and got.expired == 1 and got.writes == 3
    assert admission.replay_admission(t, 10).hit_blocks.tolist() == [0, 0, 1, 1]


def test_tinylfu_keeps_the_frequent_block_against_a_scan():
    # a hot block h referenced between a scan of 30 one-off blocks, capacity 1: LRU loses h to every scan block,
    # TinyLFU admits a scan block only if the sketch saw it more often than h (never): h hits every time
    h = 999
    ps = [[h]] + [p for k in range(30) for p in ([k], [h])]
    t = make_trace(ps)
    lru = admission.replay_admission(t, 1, "always")
    tiny = admission.replay_admission(t, 1, "tinylfu")
    assert int(lru.hit_blocks.sum()) == 0
    assert int(tiny.hit_blocks.sum()) == 30 and tiny.writes == 1


def test_drive_writes_per_day():
    # 1 TB written in an hour onto 2 TB of drives: 24 TB a day, 12 drive writes per day
    assert admission.drive_writes_per_day(1e12, 3600.0, 2e12) == pytest.approx(12.0)
    assert math.isnan(admission.drive_writes_per_day(1e12, 0.0, 2e12))


def test_bad_arguments():
    t = make_trace([[1]])
    with pytest.raises(ValueError, match="admission"):
        admission.replay_admission(t, 1, "lfu")
    with pytest.raises(ValueError, match="whole number"):
        admission.replay_admission(t, 1.5)
    with pytest.raises(ValueError, match="ttl"):
        admission.replay_admission(t, 1, ttl_s=0.0)
    assert np.array_equal(admission.replay_admission(t, 0).hit_blocks, [0])
