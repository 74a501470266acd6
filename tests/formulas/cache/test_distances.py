"""kvtier.formulas.cache.distances, by hand and against a brute-force stack: exact LRU stack distances, in memory
and chunk by chunk."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas.cache import distances
from kvtier.formulas.cache.curve import Reuse
from kvtier.formulas.cache.distances import (
    StackDistanceStream,
    hit_distances,
    previous_reference,
    stack_distances,
)
from kvtier.formulas.cache.ids import DenseIds
from kvtier.formulas.cache.trace import Trace
from tests.oracles import HAND_ROWS, lru_distances, lru_hits

# ---------------------------------------------------------------------------
# streaming: the same curve in memory proportional to the distinct blocks
# ---------------------------------------------------------------------------


def first_seen_dense(values: np.ndarray) -> np.ndarray:
    """Dense ids in order of first appearance, computed the obvious way."""
    ids: dict[int, int] = {}
    return np.array([ids.setdefault(int(v), len(ids)) for v in values], dtype=np.int64)


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


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=80))
def test_stack_distances_equal_a_direct_lru_simulation(blocks):
    arr = np.array(blocks)
    d = stack_distances(arr)
    assert d.tolist() == lru_distances(blocks)
    for capacity in (1, 2, 3, 5, 8, 13):
        assert int(((d >= 0) & (d < capacity)).sum()) == lru_hits(blocks, capacity)


def test_stack_distances_on_a_larger_random_trace():
    rng = np.random.default_rng(7)
    blocks = (rng.zipf(1.3, 3000) % 400).tolist()
    d = stack_distances(np.array(blocks))
    assert d.tolist() == lru_distances(blocks)
    trace = Trace(
        "t", 1, np.zeros(1), np.array([3000]), np.zeros(1, int), np.array([0, 3000]), np.array(blocks), "mooncake"
    )
    # one request of 3,000 blocks: counted per block, as the brute-force LRU counts (up to the first miss, the
    # request's first block, a cold miss, would end its hits)
    r = Reuse(trace, previous_reference(trace.blocks), d, "per-block")
    assert float(Reuse(trace, r.prev, d).hit_ratio(200)) == 0.0
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
    dense_ids = DenseIds()
    mapped = np.concatenate([dense_ids.map(part) for part in np.split(raw, cuts)])
    assert mapped.tolist() == first_seen_dense(raw).tolist()
    kernel = StackDistanceStream()
    streamed = np.concatenate([kernel.feed(part) for part in np.split(mapped, cuts)])
    assert streamed.tolist() == lru_distances(values)


def test_the_brute_force_stack_agrees_with_the_hand():
    assert lru_distances(STREAM) == STREAM_DISTANCES


@pytest.mark.parametrize("size", [1, 2, 3, 5, 12])
def test_the_kernel_in_chunks_gives_the_hand_distances(size):
    kernel = StackDistanceStream()
    parts = [kernel.feed(np.array(STREAM[i : i + size])) for i in range(0, len(STREAM), size)]
    assert np.concatenate(parts).tolist() == STREAM_DISTANCES
    # the state: references fed so far, and each block's last reference
    # (0 at 8, 1 at 10, 2 at 7, 3 at 11, 4 at 9)
    assert kernel.offset == 12
    assert kernel.last[:6].tolist() == [8, 10, 7, 11, 9, -1]


def test_the_kernel_takes_whole_float_ids_and_gives_int64():
    # [0, 1, 0] as floats: -1, -1, then 1 (block 1 between)
    kernel = StackDistanceStream()
    got = kernel.feed(np.array([0.0, 1.0, 0.0]))
    assert got.tolist() == [-1, -1, 1] and got.dtype == np.int64


def test_an_empty_chunk_gives_an_empty_int64_array():
    kernel = StackDistanceStream()
    empty = kernel.feed(np.zeros(0, dtype=np.int64))
    assert empty.size == 0 and empty.dtype == np.int64
    # so chunks joined together stay integer: [-1, -1, 1] as above
    joined = np.concatenate((kernel.feed(np.array([0, 1])), empty, kernel.feed(np.array([0]))))
    assert joined.tolist() == [-1, -1, 1] and joined.dtype == np.int64
    assert kernel.offset == 3


def test_the_kernel_grows_its_state_for_ids_past_1024():
    kernel = StackDistanceStream()
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
    kernel = StackDistanceStream()
    kernel.offset = 2**32 - 3
    got = np.concatenate((kernel.feed(np.array(blocks[:4])), kernel.feed(np.array(blocks[4:]))))
    # by hand: 3 -1, 3 0, 1 -1, 1 0, 0 -1, 0 0, 0 0, 1 {0} 1, 4 -1, 3 {1, 0, 4} 3
    assert got.tolist() == [-1, 0, -1, 0, -1, 0, 0, 1, -1, 3] == lru_distances(blocks)


def test_the_hand_trace_by_brute_force():
    refs = [h for r in HAND_ROWS if isinstance(r, dict) for h in r["hash_ids"]]
    assert lru_distances(refs) == HAND_D


def test_prefix_distances_are_the_running_largest_in_each_request():
    # requests (5 0 2) and (1 -1 0): running largest 5 5 5 | 1, then a miss ends the hits: -1 -1
    d = np.array([5, 0, 2, 1, -1, 0])
    assert hit_distances(d, np.array([0, 3, 6])).tolist() == [5, 5, 5, 1, -1, -1]
    assert hit_distances(d, np.array([0, 3, 6]), "per-block").tolist() == d.tolist()


# ---------------------------------------------------------------------------
# The Fenwick-tree sweep of the exact stack distances, compiled and as written, against a brute-force stack.
# ---------------------------------------------------------------------------


def test_the_sweep_on_a_hand_chunk_after_a_first_one():
    kernel = StackDistanceStream()
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


def _swept_in_chunks(blocks: np.ndarray, cuts: np.ndarray) -> tuple[np.ndarray, StackDistanceStream]:
    sweep = StackDistanceStream()
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
    assert np.array_equal(stack_distances(blocks, previous_reference(blocks)), got)


def test_the_sweep_as_written_equals_the_compiled_sweep(monkeypatch):
    # the kernels run as plain Python where numba is missing: the same distances and state, chunk by chunk
    rng = np.random.default_rng(5)
    blocks = rng.integers(0, 40, 600)
    cuts = np.array([100, 250, 251, 400])
    compiled, state = _swept_in_chunks(blocks, cuts)
    monkeypatch.setattr(distances, "_sweep_py", distances._sweep_py.py_func)
    monkeypatch.setattr(distances, "_last_uses_py", distances._last_uses_py.py_func)
    plain, plain_state = _swept_in_chunks(blocks, cuts)
    assert plain.tolist() == compiled.tolist() == lru_distances(blocks.tolist())
    assert np.array_equal(plain_state.last, state.last) and np.array_equal(plain_state.seen, state.seen)
    assert stack_distances(blocks).tolist() == compiled.tolist()
