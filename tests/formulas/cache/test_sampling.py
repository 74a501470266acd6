"""kvtier.formulas.cache.sampling: spatially hashed sampling (SHARDS) of a stream, exact on the sampled blocks."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas.cache.curve import Reuse, curve_error
from kvtier.formulas.cache.distances import stack_distances
from kvtier.formulas.cache.sampling import SAMPLE_SPACE, block_hash, sample_threshold
from kvtier.formulas.cache.stream import LruStream, histogram_of
from kvtier.inputs import traces


def test_a_sampled_stream_replays_exactly_the_sampled_blocks_with_scaled_distances():
    # SHARDS: the blocks whose hash is below R x P are replayed, their stack distances divided by R; the histogram is
    # that of the exact distances of the filtered stream (floor(d / R)), plus the SHARDS_adj difference at 0
    t = traces.generate_trace(400, seed=3, n_prefixes=30, new_blocks=(1, 6))
    rate = 0.25
    h = histogram_of(t, "per-block", sample_rate=rate, chunk_refs=500)
    kept = block_hash(t.blocks) < sample_threshold(rate)
    d = stack_distances(t.blocks[kept])
    used = sample_threshold(rate) / SAMPLE_SPACE
    expected = np.bincount(np.floor(d[d >= 0] / used).astype(int)).astype(float)
    expected[0] += used * t.n_refs - kept.sum()  # SHARDS_adj: rate x references read, less those sampled
    assert h.sampled_refs == int(kept.sum()) and h.counts["blocks"] == pytest.approx(expected)
    assert h.total["blocks"] == pytest.approx(used * t.n_refs)
    # at rate 1 the stream is the exact curve
    exact = histogram_of(t, "per-block", sample_rate=1.0)
    r = Reuse.of(t, "per-block")
    assert [exact.hit_ratio(c) for c in (1, 10, 100)] == pytest.approx([float(r.hit_ratio(c)) for c in (1, 10, 100)])
    assert curve_error(r, exact) == {
        "mean_abs": 0.0,
        "max_abs": 0.0,
        "points": pytest.approx(min(200, r.capacity_for(1.0))),
        "largest_capacity_blocks": float(r.capacity_for(1.0)),
    }


def test_fixed_size_sampling_holds_at_most_its_blocks_and_lowers_the_rate():
    t = traces.generate_trace(2000, seed=5, n_prefixes=100, new_blocks=(1, 8))
    stream = LruStream("per-block", max_blocks=300)
    for r in range(0, t.n_requests, 100):
        s = t.starts[r : r + 101]
        stream.feed(t.blocks[s[0] : s[-1]], s - s[0], t.input_tokens[r : r + 100], t.block_tokens)
        assert len(stream) <= 300  # never more than the bound after a chunk
    # the trace has far more than 300 distinct blocks, so the rate fell below 1, to the hash of the 301st block
    assert t.n_unique > 300 and stream.sample_rate < 1


def test_fixed_size_sampling_lowers_the_rate_before_a_chunk_not_after_it():
    # issue 43: a chunk was replayed whole and only then cut down to the bound, so a trace read in one chunk gave
    # the exact curve labelled as sampled, and the bound did not hold within the chunk; lowered before the chunk,
    # only the references whose hash falls under the final threshold are replayed, as a fixed rate would
    t = traces.generate_trace(2000, seed=5, n_prefixes=100, new_blocks=(1, 8))
    stream = LruStream("per-block", max_blocks=300)
    stream.feed(t.blocks, t.starts, t.input_tokens, t.block_tokens)
    assert len(stream) <= 300 and stream.sample_rate < 1
    under = int((block_hash(t.blocks) < stream.threshold).sum())
    assert stream.sampled_refs == under < t.n_refs / 2
    h = stream.histogram("t", t.n_requests, "mooncake", t.block_tokens)
    assert h.sample_rate == stream.sample_rate < 1
    assert abs(h.n_unique - t.n_unique) / t.n_unique < 0.15


def test_fixed_size_sampling_of_a_trace_that_fits_is_the_exact_curve():
    # every distinct block fits under the bound: nothing is sampled, and the curve says so (rate 1)
    t = traces.generate_trace(200, seed=5, n_prefixes=10, new_blocks=(1, 2))
    stream = LruStream("per-block", max_blocks=t.n_unique + 1)
    stream.feed(t.blocks, t.starts, t.input_tokens, t.block_tokens)
    h = stream.histogram("t", t.n_requests, "mooncake", t.block_tokens)
    assert h.sample_rate == 1.0 and h.n_unique == t.n_unique
