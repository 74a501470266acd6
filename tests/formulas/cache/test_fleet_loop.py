"""kvtier.formulas.cache.fleet_loop: the fleet's compiled replay, fed chunk by chunk, against its Python oracle.

The oracle (kvtier.formulas.cache.fleet_oracle) replays each instance as an OrderedDict, request by request;
the compiled loop keeps every tier in one hash table.  They must agree request for request (instance and hits)
for every routing and commit, on the shipped conversation trace and on generated ones, whether the trace is fed
at once or in chunks; and the streamed report must be the one of the whole trace.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas.cache import fleet, fleet_loop, fleet_oracle
from kvtier.formulas.cache.fleet_loop import FleetState
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.inputs import traces
from tests.formulas.cache.test_fleet import make_trace, prompts


@pytest.fixture(scope="module")
def conversation():
    return traces.read_trace("conversation")


def busy_table(t) -> np.ndarray:
    """A made-up busy time per request and hit count, 0.5 to 3.5 s, varied so that loads differ."""
    r, h = fleet.busy_offsets(t.starts)
    return (r * 0.37 + h * 0.11) % 3.0 + 0.5


def test_busy_offsets_enumerate_each_request_and_hit_count():
    # prompts of 2, 0 and 1 blocks: request 0 with 0, 1, 2 hits, request 1 with 0, request 2 with 0 and 1
    r, h = fleet.busy_offsets(np.array([0, 2, 2, 3]))
    assert r.tolist() == [0, 0, 0, 1, 2, 2]
    assert h.tolist() == [0, 1, 2, 0, 0, 1]


@pytest.mark.parametrize("routing", fleet.ROUTINGS)
@pytest.mark.parametrize("commit", fleet.COMMITS)
def test_compiled_fleet_is_the_oracle_on_the_conversation_trace(conversation, routing, commit):
    t = conversation
    table = busy_table(t)

    def busy(r: int, h: int) -> float:
        return float(table[t.starts[r] + r + h])

    for capacity in (700, math.inf):  # 8 x 700 blocks evict all along; unbounded never does
        got = fleet.replay_fleet(t, 8, routing, capacity, busy, commit=commit)
        want = fleet_oracle.replay_fleet_py(t, 8, routing, capacity, busy, commit=commit)
        assert got.instance.tolist() == want.instance.tolist()
        assert got.hit_blocks.tolist() == want.hit_blocks.tolist()
        assert got.hit_blocks.sum() > 0


@settings(max_examples=120, deadline=None)
@given(
    prompts,
    st.integers(1, 4),
    st.sampled_from(fleet.ROUTINGS),
    st.integers(0, 6),
    st.sampled_from(fleet.COMMITS),
    st.floats(0.0, 3.0),
)
def test_compiled_fleet_is_the_oracle_on_generated_traces(ps, n, routing, capacity, commit, busy_s):
    # small tiers over few blocks: the hash table is four slots a node at most, so probes collide and
    # evictions shift entries back on nearly every request
    t = make_trace(ps)
    got = fleet.replay_fleet(t, n, routing, capacity, lambda r, h: busy_s + 0.5 * h, commit=commit)
    want = fleet_oracle.replay_fleet_py(t, n, routing, capacity, lambda r, h: busy_s + 0.5 * h, commit=commit)
    assert got.instance.tolist() == want.instance.tolist()
    assert got.hit_blocks.tolist() == want.hit_blocks.tolist()


@pytest.mark.parametrize("capacity", [1, 3, 8])
def test_tens_of_thousands_of_evictions_in_a_small_table_lose_no_entry(capacity):
    # 5,000 requests of 1-6 blocks drawn from 40 ids, 3 instances of a few blocks: a table of 8-64 slots where
    # every run of entries wraps past the end again and again as entries leave by backward shift
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 7, 5000)
    t = make_trace([rng.integers(0, 40, k).tolist() for k in sizes])
    for routing in ("prefix", "round-robin"):
        got = fleet.replay_fleet(t, 3, routing, capacity)
        want = fleet_oracle.replay_fleet_py(t, 3, routing, capacity)
        assert got.hit_blocks.tolist() == want.hit_blocks.tolist()
        assert got.instance.tolist() == want.instance.tolist()
        assert 0 < got.hit_blocks.sum() < t.n_refs


@pytest.mark.parametrize("routing", fleet.ROUTINGS)
def test_fed_in_chunks_it_is_the_trace_fed_at_once(conversation, routing):
    # chunks of 1,000 requests: the tiers, the requests in flight, the router's turn and random's draws
    # carry over from chunk to chunk
    t = conversation
    table = busy_table(t)
    whole = FleetState(6, routing, 500)
    want = whole.feed(t.blocks.astype(np.int32), t.starts, t.timestamps_s, table)
    chunked = FleetState(6, routing, 500)
    got_where, got_hits = [], []
    for lo in range(0, t.n_requests, 1000):
        hi = min(lo + 1000, t.n_requests)
        s = t.starts[lo : hi + 1]
        busy = table[s[0] + lo : s[-1] + hi + 1]  # request r's entries start at starts[r] + r
        w, h = chunked.feed(t.blocks[s[0] : s[-1]].astype(np.int32), s - s[0], t.timestamps_s[lo:hi], busy)
        got_where.append(w)
        got_hits.append(h)
    assert np.concatenate(got_where).tolist() == want[0].tolist()
    assert np.concatenate(got_hits).tolist() == want[1].tolist()


def test_the_table_grows_and_holds_at_most_the_tiers_or_the_references():
    # 3 instances of 4 blocks: 12 entries at most, however long the trace
    state = FleetState(3, "round-robin", 4)
    blocks = np.arange(100, dtype=np.int32)
    state.feed(blocks, np.arange(0, 101, 10), np.arange(10.0))
    assert state.node_key.size == 12
    assert state.count.tolist() == [4, 4, 4]
    # unbounded: as many entries as distinct (instance, block) pairs, 100 here
    state = FleetState(3, "round-robin", math.inf)
    state.feed(blocks, np.arange(0, 101, 10), np.arange(10.0))
    assert int(state.st[0]) == 100
    assert state.tab.size >= 200  # a power of two, at least twice the nodes


RC = RegenCosts(2.0, 1e9, 2.0, 1e4, 1e14, 0.5, 2e9, 1e12, 0.8)
NODE = fleet.Link("node", 50e9, 10e-6)
POOL = fleet.Link("pool", 20e9, 20e-6)


@pytest.mark.parametrize("routing", ["prefix", "session"])
def test_the_streamed_report_is_the_whole_traces(conversation, routing):
    t = conversation

    def stream():
        return fleet.FleetStream(RC, 4, routing, 2000, NODE, POOL, 0.02, t.block_tokens)

    whole = stream()
    whole.feed(t.blocks, t.starts, t.input_tokens, t.output_tokens, t.timestamps_s, dense=True)
    want = whole.report()
    parts = stream()
    for lo in range(0, t.n_requests, 3000):
        hi = min(lo + 3000, t.n_requests)
        s = t.starts[lo : hi + 1]
        args = (t.blocks[s[0] : s[-1]], s - s[0], t.input_tokens[lo:hi], t.output_tokens[lo:hi], t.timestamps_s[lo:hi])
        parts.feed(*args, dense=True)
    got = parts.report()
    assert got["per_instance"]["requests"] == want["per_instance"]["requests"]
    assert got["prompt_tokens"] == want["prompt_tokens"] == int(t.input_tokens.sum())
    assert got["duration_s"] == want["duration_s"] == t.duration_s
    for choice in ("node", "pooled"):
        for key in ("hit_ratio_tokens", "hit_ratio_blocks", "ttft_mean_s", "ttft_p90_s", "avoided_batch_s"):
            assert got[choice][key] == pytest.approx(want[choice][key], rel=1e-12)
    # the pooled tier of 4 x 2,000 blocks, replayed, is what the whole trace's stack distances say
    assert want["pooled"]["hit_ratio_blocks"] == fleet.pooled_hits(t, 8000).sum() / t.n_refs


def test_a_stream_of_nothing_reports_no_ratio():
    rep = fleet.FleetStream(RC, 2, "random", 10, NODE, POOL, 0.02, 16).report()
    assert rep["per_instance"]["requests"] == [0, 0]
    assert math.isnan(rep["node"]["hit_ratio_tokens"]) and rep["duration_s"] == 0.0


@pytest.mark.parametrize("routing", ["prefix", "session", "random"])
def test_without_numba_the_loop_as_written_gives_the_same(monkeypatch, routing):
    # kvtier.formulas.jit runs the loop as plain Python where numba is missing: same ints, no overflow
    rng = np.random.default_rng(3)
    t = make_trace([rng.integers(0, 30, k).tolist() for k in rng.integers(1, 6, 300)])
    want = fleet.replay_fleet(t, 3, routing, 4, lambda r, h: 2.0 + h)
    monkeypatch.setattr(fleet_loop, "_fleet_loop", fleet_loop._fleet_loop.py_func)
    monkeypatch.setattr(fleet_loop, "_rehash", fleet_loop._rehash.py_func)
    got = fleet.replay_fleet(t, 3, routing, 4, lambda r, h: 2.0 + h)
    assert got.instance.tolist() == want.instance.tolist()
    assert got.hit_blocks.tolist() == want.hit_blocks.tolist() and want.hit_blocks.sum() > 0
