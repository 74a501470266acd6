"""kvtier.analysis: the plan of what the book asks of a trace, and one pair of passes per build for all of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvtier import analysis, store
from kvtier.scenario import Scenario
from tests.conftest import scenario


@pytest.fixture
def fresh_store():
    store.clear()
    yield
    store.clear()


def test_the_plan_is_the_serving_shares_with_the_target_and_every_mix_model():
    # TARGETS_PCT 50, 80, 90, 95 % and the whole (1.0); the seed's decision.hit_target is 90 %, already there
    shares, models, windows = analysis.plan(Scenario())
    assert shares == [0.5, 0.8, 0.9, 0.95, 1.0]
    # WINDOWS_MIN (5, 0), (5, 5), (15, 0), (15, 5) minutes in seconds
    assert windows == [(300.0, 0.0), (300.0, 300.0), (900.0, 0.0), (900.0, 300.0)]
    # the set's model (llama-3-70b) first in mix_models, then the others; the plan sorts them
    assert analysis.mix_models(Scenario()) == ("llama-3-70b", "llama-3-8b", "deepseek-v3")
    assert models == ["deepseek-v3", "llama-3-70b", "llama-3-8b"]
    # a target outside the shares joins them; a model outside MIX_MODELS leads the mix
    other = scenario(**{"decision.hit_target": "85%", "model": "llama-2-7b"})
    assert analysis.plan(other)[:2] == ([0.5, 0.8, 0.85, 0.9, 0.95, 1.0], sorted(["llama-2-7b", *analysis.MIX_MODELS]))


def test_a_command_streams_what_it_asks_for(fresh_store):
    # no store directory: the 95 % tier and the set's 90 % target, no mixes
    s = Scenario()
    streamed = analysis.stream(s, [0.95])
    h = streamed.curve
    assert streamed.prefixes.capacities == tuple(sorted({float(h.capacity_for(t)) for t in (0.9, 0.95)}))
    assert streamed.mixes == {} and streamed.windows == {}
    # asking for less is served by what is kept; asking for more streams again, for the union
    assert analysis.stream(s, [0.9]) is streamed
    more = analysis.stream(s, [0.5])
    assert more is not streamed and len(more.prefixes.capacities) == 3


def test_inside_a_build_every_request_within_the_plan_is_one_pair_of_passes(fresh_store, tmp_path: Path):
    with store.stored_in(tmp_path):
        first = analysis.stream(Scenario(), [0.95])  # the cost page's tier: the whole plan is streamed
        shares, models, windows = analysis.plan(Scenario())
        h = first.curve
        assert first.prefixes.capacities == tuple(sorted({float(h.capacity_for(t)) for t in shares}))
        assert {k[0] for k in first.mixes} == set(models) and sorted(first.windows) == windows
        # another kernel (a fresh process: nothing in memory) asking for a mix loads the same passes from disk
        store.clear()
        kernel = Scenario()
        second = analysis.stream(kernel, [], ["llama-3-8b"])
        assert second.prefixes.capacities == first.prefixes.capacities
        assert sorted(p.name.split("-")[0] for p in tmp_path.glob("two-passes-*.pickle")) == ["two"]
        # a share beyond the plan streams again, for the union of it and what the scenario holds
        beyond = analysis.stream(kernel, [0.3])
        assert len(beyond.prefixes.capacities) == len(first.prefixes.capacities) + 1
        assert len(list(tmp_path.glob("two-passes-*.pickle"))) == 2


def test_the_lru_tiers_read_the_passes_capacity(fresh_store):
    # the 90 % tier's capacity in bytes: the curve's capacity (blocks) x 512 tokens x the model's bytes per token
    s = Scenario()
    traffic = analysis.lru_traffic(s, 0.9)
    blocks = analysis.curve(s).capacity_for(0.9)
    assert traffic.capacity_bytes == pytest.approx(blocks * 512 * s.kv_bytes_per_token, rel=1e-12)
    assert traffic.hit_ratio == pytest.approx(analysis.curve(s).hit_ratio(blocks), rel=1e-12)
    # one tier per medium of LRU_TIERS, each of that capacity
    plan = analysis.lru_plan(s, 0.9)
    assert [t.tier for t in plan] == ["pcie5-x16", "cxl2-x8", "nvme-gen4-x4"]
    assert {t.capacity_bytes for t in plan} == {traffic.capacity_bytes}
