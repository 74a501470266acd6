"""kvtier.formulas.cache.ids, by hand: prefix-chained ids and dense ids, in memory and chunk by chunk."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas.cache.ids import DenseIds, chain_ids, dense_ids


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(-3, 3), max_size=6), min_size=1, max_size=8))
def test_chained_ids_are_equal_exactly_when_the_prefixes_are(requests):
    ids = np.array([h for r in requests for h in r], dtype=np.int64)
    starts = np.r_[0, np.cumsum([len(r) for r in requests])].astype(np.int64)
    chained = chain_ids(ids, starts).tolist()
    prefixes = [tuple(r[: j + 1]) for r in requests for j in range(len(r))]
    assert len(chained) == len(prefixes)
    for a in range(len(prefixes)):
        for b in range(len(prefixes)):
            assert (chained[a] == chained[b]) == (prefixes[a] == prefixes[b])


@pytest.mark.parametrize("ids", [[], [5], [3, -1, 3, 2**63 - 1, -(2**63), -1]])
def test_dense_ids_are_the_ranks_np_unique_gives(ids):
    # [3, -1, 3, 2**63 - 1, -2**63, -1]: sorted distinct -2**63 < -1 < 3 < 2**63 - 1 -> ranks 2 1 2 3 0 1
    raw = np.array(ids, dtype=np.int64)
    dense = dense_ids(raw)
    assert dense.dtype == np.int64 and dense.tolist() == np.unique(raw, return_inverse=True)[1].tolist()


def test_dense_ids_follow_first_appearance_across_chunks():
    dense = DenseIds()
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
    dense = DenseIds()
    assert dense.map(np.array([2**60])).tolist() == [0]
    assert dense.map(np.array([2**60 + 1, 2**60])).tolist() == [1, 0]


def test_dense_ids_of_a_two_dimensional_chunk_are_flat_in_reading_order():
    # 7 -> 0, 9 -> 1, 9 -> 1, 8 -> 2
    dense = DenseIds()
    assert dense.map(np.array([[7, 9], [9, 8]])).tolist() == [0, 1, 1, 2]
