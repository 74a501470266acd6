"""The compiled Fenwick-tree sweep of the exact stack distances against the numpy wavelet matrix it replaced."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas import reuse


def brute_distances(blocks: list[int]) -> list[int]:
    """LRU stack distances with the most recent block first: a block's distance is its depth in the stack."""
    stack: list[int] = []
    out = []
    for b in blocks:
        depth = stack.index(b) if b in stack else -1
        out.append(depth)
        if depth >= 0:
            del stack[depth]
        stack.insert(0, b)
    return out


def test_the_sweep_on_a_hand_chunk_after_a_first_one():
    kernel = reuse.StackDistanceStream()
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


@pytest.mark.parametrize("seed", range(12))
def test_the_sweep_in_random_chunks_equals_the_wavelet_matrix_and_the_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, distinct = int(rng.integers(1, 2000)), int(rng.integers(1, 150))
    blocks = rng.integers(0, distinct, n)
    cuts = np.sort(rng.integers(0, n, int(rng.integers(0, 8))))
    sweep, wave = reuse.StackDistanceStream(), reuse.StackDistanceStream()
    got, want = [], []
    for part in np.split(blocks, cuts):
        got.append(sweep.feed(part))
        if part.size:
            wave._grow(int(part.max()))
            want.append(wave._feed_numpy(part.astype(np.int64), None)[0])
    got_all, want_all = np.concatenate(got), np.concatenate(want)
    assert np.array_equal(got_all, want_all)
    assert got_all.tolist() == brute_distances(blocks.tolist())
    assert np.array_equal(sweep.last, wave.last) and np.array_equal(sweep.seen, wave.seen)
    # the whole stream at once, in memory: the same distances, and the wavelet matrix's own count agrees
    prev = reuse.previous_reference(blocks)
    assert np.array_equal(reuse.stack_distances(blocks, prev), got_all)
    again = np.flatnonzero(prev >= 0)
    counted = reuse._count_below(prev + 1, prev[again] + 1, again, prev[again] + 2)
    assert np.array_equal(counted, got_all[again])


def test_distinct_counts_by_hand():
    # 0, 512, 1024 and 700 appear: the distinct values sorted, each element's place among them
    values, (a, b) = reuse._distinct_counts(np.array([512.0, 1024.0, 700.0]), np.array([0.0, 512.0, 512.0]))
    assert values.tolist() == [0.0, 512.0, 700.0, 1024.0]
    assert a.tolist() == [1, 3, 2] and b.tolist() == [0, 1, 1]
    # a fraction: the arrays stand for themselves
    values, (a, b) = reuse._distinct_counts(np.array([0.5]), np.array([2.0]))
    assert values.tolist() == [0.5, 2.0] and a.tolist() == [0] and b.tolist() == [1]


@pytest.mark.parametrize("count", ["prefix", "per-block"])
def test_costs_by_distinct_token_counts_equal_them_reference_by_reference(monkeypatch, count):
    from kvtier.inputs import traces
    from kvtier.scenario import Scenario

    rc = reuse.RegenCosts.of(Scenario(), "conservative")
    trace = traces.generate_trace(2000, seed=7, new_blocks=(1, 6))

    def run() -> reuse.LruStream:
        stream = reuse.LruStream(count, rc)
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
    monkeypatch.setattr(reuse, "DISTINCT_TABLE", -1)  # every reference's cost computed on its own
    direct = run()
    for key in ("in_batch_s", "lone_s", "memory_bound_requests", "hit_requests"):
        assert tabulated.counts[key].dtype == direct.counts[key].dtype
        assert tabulated.counts[key].tobytes() == direct.counts[key].tobytes(), key
    assert tabulated.counts["lone_s"].sum() > 0  # something was priced
