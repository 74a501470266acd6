"""kvtier.formulas.cache.stream, by hand: the LRU curve and its costs fed in chunks."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas.cache.stream import LruStream, _distinct_counts
from kvtier.inputs import traces


@pytest.mark.parametrize("cut", [1, 2, 3, 4])
def test_lru_stream_fed_whole_requests_in_two_chunks_gives_the_hand_counts(cut):
    # the hand trace as arrays (HAND_ROWS): ids -1 -2 | -1 -2 5 | 7 7 | -1 7 | (none); inputs 8 9 5 6 0 at 4 tokens
    # a block, cut after request `cut`; the counts, totals and falls do not depend on where
    ids = [[-1, -2], [-1, -2, 5], [7, 7], [-1, 7], []]
    inputs = [8, 9, 5, 6, 0]
    stream = LruStream("per-block")  # the hand counts are per block (prefix counts: test_traces)
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


def test_distinct_counts_by_hand():
    # 0, 512, 1024 and 700 appear: the distinct values sorted, each element's place among them
    values, (a, b) = _distinct_counts(np.array([512.0, 1024.0, 700.0]), np.array([0.0, 512.0, 512.0]))
    assert values.tolist() == [0.0, 512.0, 700.0, 1024.0]
    assert a.tolist() == [1, 3, 2] and b.tolist() == [0, 1, 1]
    # a fraction: the arrays stand for themselves
    values, (a, b) = _distinct_counts(np.array([0.5]), np.array([2.0]))
    assert values.tolist() == [0.5, 2.0] and a.tolist() == [0] and b.tolist() == [1]


@pytest.mark.parametrize("count", ["prefix", "per-block"])
def test_costs_by_distinct_token_counts_equal_them_reference_by_reference(monkeypatch, count):
    from kvtier.scenario import Scenario

    rc = Scenario().regen_costs(mfu_label="conservative")
    trace = traces.generate_trace(2000, seed=7, new_blocks=(1, 6))

    def run() -> LruStream:
        stream = LruStream(count, rc)
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
    monkeypatch.setattr("kvtier.formulas.cache.stream.DISTINCT_TABLE", -1)  # every reference's cost computed on its own
    direct = run()
    for key in ("in_batch_s", "lone_s", "memory_bound_requests", "hit_requests"):
        assert tabulated.counts[key].dtype == direct.counts[key].dtype
        assert tabulated.counts[key].tobytes() == direct.counts[key].tobytes(), key
    assert tabulated.counts["lone_s"].sum() > 0  # something was priced


def _float_time_stream(monkeypatch, bound, cuts):
    """A stream of 3 blocks reused in turn at float arrivals: every reuse interval distinct."""
    import kvtier.formulas.cache.stream as stream_module

    monkeypatch.setattr(stream_module, "MAX_EXACT_INTERVALS", bound)
    rng = np.random.default_rng(3)
    n = 600
    arrivals = np.cumsum(rng.uniform(0.001, 1.0, n))  # s, float: no two gaps alike
    ids = np.arange(n, dtype=np.int64) % 3
    stream = LruStream("per-block")
    for lo, hi in zip((0, *cuts), (*cuts, n), strict=True):
        starts = np.arange(hi - lo + 1, dtype=np.int64)  # one block a request
        stream.feed(ids[lo:hi], starts, np.full(hi - lo, 4, dtype=np.int64), 4, timestamps_s=arrivals[lo:hi])
    return stream, arrivals


@pytest.mark.parametrize("cuts", [(), (100,), (10, 300, 590)])
def test_reuse_intervals_past_the_bound_are_binned_alike_at_once_or_in_chunks(monkeypatch, cuts):
    from kvtier.formulas.cache.curve import bin_intervals

    # 600 one-block requests over 3 blocks: 597 reuses, each 3 arrivals back, every interval distinct
    stream, arrivals = _float_time_stream(monkeypatch, 100, cuts)
    exact = arrivals[3:] - arrivals[:-3]
    assert stream.binned and stream.intervals[1].sum() == 597
    want = bin_intervals(*np.unique(exact, return_counts=True))
    assert stream.intervals[0].tolist() == want[0].tolist()
    assert stream.intervals[1].tolist() == want[1].tolist()


def test_reuse_intervals_under_the_bound_stay_exact(monkeypatch):
    # the same 597 distinct intervals under a bound of 1,000: held as they are
    stream, arrivals = _float_time_stream(monkeypatch, 1000, (250,))
    assert not stream.binned
    assert stream.intervals[0].tolist() == np.unique(arrivals[3:] - arrivals[:-3]).tolist()
