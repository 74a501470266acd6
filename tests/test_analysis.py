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


def passes(monkeypatch) -> list[int]:
    """Count the streamed passes over the trace (each call of traces.stream_lru) from now on."""
    from kvtier.inputs import traces

    calls: list[int] = []
    real = traces.stream_lru

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(traces, "stream_lru", counted)
    return calls


def test_a_command_streams_what_it_asks_for_once(fresh_store, monkeypatch):
    # the 95 % tier and the set's 90 % target, no mixes, no windows: the curve, then one second pass
    s = Scenario()
    calls = passes(monkeypatch)
    streamed = analysis.stream(s, [0.95])
    h = streamed.curve
    assert streamed.prefixes.capacities == tuple(sorted({float(h.capacity_for(t)) for t in (0.9, 0.95)}))
    assert streamed.mixes == {} and streamed.windows == {}
    assert len(calls) == 2
    # asking for less reads the stored parts; asking for more streams once, for the new part only
    assert analysis.stream(s, [0.9]).prefixes.capacities == (float(h.capacity_for(0.9)),)
    assert len(calls) == 2
    more = analysis.stream(s, [0.5, 0.95])
    assert len(more.prefixes.capacities) == 3 and len(calls) == 3
    assert more.prefixes.at(h.capacity_for(0.95))[2].tolist() == streamed.prefixes.at(h.capacity_for(0.95))[2].tolist()


def test_primed_every_page_finds_its_parts_in_a_kernel(fresh_store, tmp_path: Path, monkeypatch):
    with store.stored_in(tmp_path):
        analysis.prime(Scenario())  # the build, before the pages compute
        shares, models, windows = analysis.plan(Scenario())
        kinds = sorted(p.name.split("-")[0] for p in tmp_path.glob("*.pickle"))
        # the curve; one hit-prefixes part per share's capacity (the seed counts hits by prefix, as the serving
        # engines match a prompt: one count serves both); the distances; one mixes part per model; one per window
        n_caps = len({analysis.curve(Scenario()).capacity_for(t) for t in shares})
        # ... and the same again for the set the trace pages price (Llama-3.1-70B on H100s, analysis.priced):
        # its own curve, distances and mixes (its recompute costs and prices differ), the hit prefixes and
        # windows shared (they depend on the trace and the capacity alone)
        priced_models = analysis.plan(analysis.priced(Scenario()))[1]
        assert priced_models == ["deepseek-v3", "llama-3-70b", "llama-3-8b", "llama-3.1-70b"]
        assert kinds.count("hit") == n_caps == 5 and kinds.count("mixes") == len(models) + 4 == 7
        assert kinds.count("window") == len(windows) == 4
        assert kinds.count("distances") == kinds.count("curve") == 2
        # a kernel (nothing in memory) asking for any of it reads it: no pass over the trace
        store.clear()
        calls = passes(monkeypatch)
        kernel = Scenario()
        got = analysis.stream(kernel, [0.95], ["llama-3-8b"], windows[:1])
        assert calls == [] and set(got.windows) == {windows[0]}
        assert {k[0] for k in got.mixes} == {"llama-3-8b"}
        # a share beyond the plan streams once more, for its own capacity only
        analysis.stream(kernel, [0.3])
        assert len(calls) == 1


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


def test_the_trace_is_priced_for_the_named_deployment_unless_the_set_says_otherwise():
    from kvtier.errors import KvtierError
    from kvtier.inputs import deployments
    from kvtier.inputs.assumptions import RestrictedAssumptionSet, load_assumptions, seed

    s = Scenario()
    priced = analysis.priced(s)
    # the seed prices the trace for Llama-3.1-70B on 4 H100s (TP 4, two sharing a link) under vLLM, timed on the
    # H100's kernel tables at its 3 USD/h: the landing's row for that deployment, record for record; once per set
    assert dict(priced.assumptions) == dict(deployments.on_seed("llama-3.1-70b-h100"))
    assert (priced.model.name, priced.placement.tp, priced.v("cost.accelerator_hour") * 3600) == ("llama-3.1-70b", 4, 3)
    assert analysis.priced(s) is priced
    # build: the set itself; a set with its own model: itself too (the deployment's TP was chosen for another)
    build = Scenario(load_assumptions(sets={"workload.deployment": "build"}))
    assert analysis.priced(build) is build
    own = Scenario(load_assumptions(sets={"model": "llama-3-8b"}))
    assert analysis.priced(own) is own
    # a notebook's set stays limited to its page's keys and the ones the deployment sets
    from kvtier.report.pages import workload

    limited = analysis.priced(Scenario(RestrictedAssumptionSet(seed(), set(workload.KEYS), "page")))
    assert limited.assumptions.value("model") == "llama-3.1-70b"
    assert limited.assumptions.value("regen.system") == "h100_sxm"  # set by the deployment, readable
    with pytest.raises(KvtierError, match="page reads assumption 'uncertainty.draws' but does not declare it"):
        limited.assumptions.value("uncertainty.draws")
    # a placement the deployment's accelerators cannot hold is refused naming the key that chose it
    tight = Scenario(load_assumptions(sets={"parallel.tp": "1"}))
    with pytest.raises(KvtierError, match=r"^workload.deployment llama-3.1-70b-h100: keys 'parallel.tp' \(1\)"):
        analysis.priced(tight)
