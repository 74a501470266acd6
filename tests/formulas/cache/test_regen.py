"""kvtier.formulas.cache.regen, by hand: what recomputing or fetching a hit costs, and what a tier saves."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.formulas.cache.curve import Reuse
from kvtier.formulas.cache.regen import RegenCosts, saving
from kvtier.formulas.cache.report import report
from tests.conftest import trace_of
from tests.oracles import HAND_RC, hand_link, reuse_of


def test_prefix_flops_use_the_flops_per_parameter_token():
    # k = 3 instead of 2: 3 x 1e9 x 4 = 1.2e10; with 1e6 FLOP a position: + 1e6 x 4 x 5 / 2 = 1e7
    rc = RegenCosts(**{**vars(HAND_RC), "flops_per_param_token": 3.0, "attention_flops_per_position": 1e6})
    assert rc.prefix_flops(np.array([4.0])).tolist() == [1.2e10 + 1e7]


def test_lone_time_is_the_roofline_and_zero_without_tokens():
    # 0 tokens: 0; 1 and 500 tokens: memory-bound, 4 ms; 4000 tokens: compute 4e-6 x 4000 = 16 ms
    assert HAND_RC.lone_s(np.array([0, 1, 500, 4000])).tolist() == pytest.approx([0.0, 4e-3, 4e-3, 1.6e-2])
    # weights of 1e6 B (2 µs to read): one token is compute-bound at 4 µs, two at 8 µs
    light = RegenCosts(**{**vars(HAND_RC), "weight_bytes": 1e6})
    assert light.lone_s(np.array([1, 2])).tolist() == pytest.approx([4e-6, 8e-6])


def test_lone_memory_bound_where_the_weights_outlast_the_compute():
    # 0 tokens is no pass at all; 1 and 500 tokens (2 ms of compute) are memory-bound (4 ms);
    # at 1000 tokens compute is 4 ms too, a tie, which is not memory-bound; 4000 tokens are compute-bound
    assert HAND_RC.lone_memory_bound(np.array([0, 1, 500, 1000, 4000])).tolist() == [False, True, True, False, False]


def test_saving_per_second_of_trace():
    # A | A | B over 0.5 s at 4 tokens a block: in an unbounded cache the second A hits, 4 tokens
    r = reuse_of([[1], [1], [2]], times_ms=[0, 250, 500], block_tokens=4)
    sv = saving(r, HAND_RC, 2)
    assert sv.capacity_blocks == 2.0 and isinstance(sv.capacity_blocks, float)
    assert sv.hit_ratio_blocks == pytest.approx(1 / 3)  # 1 hit of 3 references
    assert sv.hit_tokens_per_s == pytest.approx(8.0)  # 4 tokens / 0.5 s
    assert sv.hit_bytes_per_s == pytest.approx(8000.0)  # 4 tokens x 1000 B / 0.5 s
    # inside a batch: 4 x 4e-6 s / 0.5 s = 3.2e-5; alone: 4 ms / 0.5 s = 8e-3
    assert sv.in_batch_gpu_s_per_s == pytest.approx(3.2e-5)
    assert sv.lone_gpu_s_per_s == pytest.approx(8e-3)
    assert sv.lone_memory_bound_share == 1.0


def test_saving_with_no_hits_and_with_no_duration():
    # no hit: nothing memory-bound (0, not the mean of nothing)
    assert saving(reuse_of([[1], [2]]), HAND_RC).lone_memory_bound_share == 0.0
    # a trace whose requests all arrive at once has no rate: NaN per second
    sv = saving(reuse_of([[1], [1]], times_ms=[0, 0]), HAND_RC)
    assert math.isnan(sv.hit_tokens_per_s) and math.isnan(sv.lone_gpu_s_per_s)


def test_a_one_token_hit_is_counted_in_the_memory_bound_share():
    # 1 token a block; the single hit holds 1 token and is memory-bound alone (4e-6 s of compute < 4 ms)
    assert saving(reuse_of([[1], [1]]), HAND_RC).lone_memory_bound_share == 1.0


def test_fetching_pays_the_latency_once_a_transfer_and_a_block_may_take_several():
    # 2 hit blocks of 8 tokens at 1,000 B a token over 1e6 B/s with 1 ms a transfer (costs.fetch_time_s):
    # 1 transfer a block: 2 x 1 ms + 8,000 / 1e6 = 10 ms; 3 a block (a per-layer layout): 6 x 1 ms + 8 ms = 14 ms
    assert HAND_RC.fetch_transfers == 1
    assert HAND_RC.fetch_s(np.array([2]), np.array([8]), 1e6, 1e-3).tolist() == pytest.approx([10e-3], rel=1e-12)
    chunked = RegenCosts(**{**vars(HAND_RC), "fetch_transfers": 3})
    assert chunked.fetch_s(np.array([2, 0]), np.array([8, 0]), 1e6, 1e-3).tolist() == pytest.approx([14e-3, 0.0])
    # the report's links: A | A | B over 0.5 s at 4 tokens a block, one hit of 1 block and 4,000 B:
    # 3 x 1 ms + 4 ms = 7 ms over 0.5 s = 0.014 link-seconds a second (0.01 with one transfer a block)
    r = reuse_of([[1], [1], [2]], times_ms=[0, 250, 500], block_tokens=4)
    one, three = (report(r, rc, [hand_link()], targets_pct=(100,))["tiers"][0]["links"][0] for rc in (HAND_RC, chunked))
    assert one["fetch_link_s_per_s"] == pytest.approx(0.01, rel=1e-12)
    assert three["fetch_link_s_per_s"] == pytest.approx(0.014, rel=1e-12)


def test_the_layout_reaches_the_workload_from_the_assumption_set():
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.scenario import Scenario

    # Llama-3-70B: a K and a V chunk in each of 80 layers, 160 transfers a block when fetched per layer
    assert Scenario().regen_costs(mfu_label="conservative").fetch_transfers == 1
    per_layer = Scenario(load_assumptions(sets={"fetch_layout": "per-layer"}))
    assert per_layer.regen_costs(mfu_label="conservative").fetch_transfers == 160


def test_recomputing_a_hit_costs_what_the_cost_page_charges_a_block():
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.report.pages import page_of
    from kvtier.scenario import Scenario

    # one implementation: costs.regen_flops and costs.compute_time_s inside a batch, the roofline alone.
    # Llama-3-70B at the seed, a 16-token prefix from position 0: 2 x 70e9 x 16 = 2.24e12 FLOP plus attention
    # 2 x 80 layers x 64 heads x (128 + 128) = 2,621,440 FLOP a position x 16 x 17 / 2 = 136 positions
    # = 356,515,840 FLOP; / (500e12 x 25 %) = 2,240,356,515,840 / 1.25e14 = 17.92285 ms.  Alone: the
    # weights' read, 140e9 B / (3.35e12 B/s x 80 %) = 52.2388 ms, outlasts the compute.  The cost page prices
    # the trace for the build's own set here (workload.deployment build), not the seed's named deployment
    s = Scenario(load_assumptions(sets={"workload.deployment": "build"}))
    rc = s.regen_costs(mfu_label="conservative")
    in_batch, lone = float(rc.in_batch_s(np.array([16.0]))[0]), float(rc.lone_s(np.array([16.0]))[0])
    assert in_batch == pytest.approx(2_240_356_515_840 / 1.25e14, rel=1e-12)
    assert lone == pytest.approx(140e9 / (3.35e12 * 0.8), rel=1e-12)
    assert rc.lone_memory_bound(np.array([16.0])).tolist() == [True]
    # the scenario's regimes, which the cost page prices, give the same numbers to the last bit
    assert in_batch == float(s.in_batch_regen_s(0, "resident", 0.25))
    assert lone == float(s.lone_regen_s(0, "resident", 0.25))
    blocks = next(t for t in page_of("13_cost").tables if t.name == "cost_blocks").build(s)
    regen_ms = blocks.set_index(["block_tokens", "regime"])["regen_ms"]
    assert regen_ms[(16, "batch")] == pytest.approx(in_batch * 1e3, rel=1e-12)
    assert regen_ms[(16, "lone")] == pytest.approx(lone * 1e3, rel=1e-12)


def test_each_reference_carries_its_share_of_its_prompt_s_prefix():
    # N = 10 parameters, 2 FLOPs each, attention 1 FLOP per position, peak x MFU = 1 FLOP/s; 2-token blocks.
    # prefix of h tokens: 2 x 10 x h + h (h + 1) / 2 FLOP: 2 tokens 43, 4 tokens 90, 6 tokens 141
    rc = RegenCosts(1.0, 10.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    t = trace_of([[1, 2, 3], [1, 2]], block_tokens=2)
    per = rc.per_reference_s(t, "batch")
    # request 0: 43, 90 - 43 = 47, 141 - 90 = 51; request 1 starts again from its prompt's first token: 43, 47
    assert per.tolist() == pytest.approx([43.0, 47.0, 51.0, 43.0, 47.0])
    # its hits (the second request's two blocks) add up to what saving() charges for its 4-token hit prefix
    r = Reuse.of(t)
    assert per[r.prev >= 0].sum() == pytest.approx(float(rc.in_batch_s(np.array([4.0]))[0]))
    with pytest.raises(ValueError, match="regime"):
        rc.regen_s(np.array([1.0]), "alone")


@pytest.mark.parametrize(
    ("model", "counts"),
    [
        ("llama-3-70b", {}),
        ("llama-3-70b", {"tp": 8}),
        ("llama-3-70b", {"tp": 4, "pp": 2}),
        ("deepseek-v3", {"tp": 8, "ep": 4}),
    ],
)
def test_regen_costs_time_a_block_as_the_scenario_does(model: str, counts: dict[str, int]) -> None:
    """The TTFT's prefill and the ratio pages' lone block are one forward-pass model, placed alike."""
    from kvtier.scenario import Scenario

    s = Scenario().with_block(16, model)
    s = s.with_placement(**counts) if counts else s
    mfu = s.mfu(str(s.assumptions.value("illustrative.mfu")))
    rc = s.regen_costs()
    flops = rc.prefix_flops(np.array(16.0))
    assert float(rc.pass_latency_s(flops, 16.0, 0.0)) == pytest.approx(float(s.lone_regen_s(0, "resident", mfu)))
    assert float(rc.in_batch_latency_s(flops, 16.0)) == pytest.approx(float(s.in_batch_compute_s(flops, mfu)))
    # accelerator time of a lone pass: its wall time x the ranks of one stage (accelerators / pp)
    busy = s.placement.accelerators / s.placement.pp
    assert float(rc.lone_s(np.array(16.0))) == pytest.approx(float(s.lone_regen_s(0, "resident", mfu)) * busy)


def test_a_prefix_fetch_pays_the_transfer_model():
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.scenario import Scenario

    rc = RegenCosts(
        100.0, 1e3, 2.0, 0.0, 1e6, 0.5, 1e4, 1e6, 1.0, fetch_transfers=2, link_efficiency=0.5, link_overhead_s=5e-4
    )
    # 2 blocks x 2 transfers x (1 ms + 0.5 ms) + 3,200 B / (1e5 x 0.5) = 6 + 64 = 70 ms; no hit fetches nothing
    got = rc.fetch_s(np.array([2.0, 0.0]), np.array([32.0, 0.0]), 1e5, 1e-3)
    assert got == pytest.approx([0.070, 0.0])
    # a pageable set brings its overhead per copy and its share of the rate with it
    sets = {"fetch.host_memory": "pageable", "fetch.pageable_overhead": "15 us", "fetch.pageable_efficiency": "20 %"}
    placed = Scenario(load_assumptions(None, sets)).regen_costs(mfu_label="conservative")
    assert (placed.link_overhead_s, placed.link_efficiency) == (pytest.approx(15e-6), pytest.approx(0.2))


# the engine model's curves (regen.model engine), by hand: three tabulated prefixes of 0, 10 and 20 tokens
HAND_ENGINE = RegenCosts(
    **{
        **vars(HAND_RC),
        "engine_tokens": (0.0, 10.0, 20.0),
        "engine_linear_s": (0.0, 1.0, 2.0),
        "engine_attention_s": (0.0, 0.5, 2.0),
        "engine_batch_s": (0.0, 0.4, 1.0),
        "engine_label": "hand tables",
        "engine_grid_tokens": 10.0,
    }
)


def test_the_engine_curves_price_a_prefix_alone_and_inside_a_batch():
    assert HAND_ENGINE.engine and not HAND_RC.engine
    # 15 tokens alone: linear halfway from 1 to 2 = 1.5, attention halfway from 0.5 to 2 = 1.25: 2.75 s; none: 0
    assert HAND_ENGINE.lone_s(np.array([0.0, 15.0])).tolist() == pytest.approx([0.0, 2.75])
    # inside a batch: halfway from 0.4 to 1.0 = 0.7 s
    assert HAND_ENGINE.regen_s(np.array([15.0]), "batch").tolist() == pytest.approx([0.7])
    # a block's share of its prompt: through 20 less through 10, alone (2 + 2) - (1 + 0.5) = 2.5 s
    assert HAND_ENGINE.share_s(np.array([20.0]), np.array([10.0]), "lone").tolist() == pytest.approx([2.5])
    # on 8 accelerators in 2 stages a pass keeps one stage's 4 busy: accelerator time 4 x 2.75 = 11 s
    placed = RegenCosts(**{**vars(HAND_ENGINE), "accelerators": 8, "pipeline_stages": 2})
    assert placed.lone_s(np.array([15.0])).tolist() == pytest.approx([11.0])
    assert placed.in_batch_s(np.array([15.0])).tolist() == pytest.approx([2.8])  # 4 x 0.7


def test_the_engine_curves_price_the_rest_of_a_prompt_after_its_hit():
    prompt, hit = np.array([20.0, 20.0, 10.0]), np.array([10.0, 0.0, 10.0])
    # lone: the rest's 10 tokens' other operations (1 s) plus attention of 20 less of 10 (2 - 0.5): 2.5 s;
    # nothing cached: the whole prompt's pass, 2 + 2 = 4 s, as lone_s; nothing left: 0
    assert HAND_ENGINE.rest_wall_s(prompt, hit, "lone").tolist() == pytest.approx([2.5, 4.0, 0.0])
    # inside a batch: the batched curve's 1.0 - 0.4 = 0.6 s, and 1.0 with nothing cached
    assert HAND_ENGINE.rest_wall_s(prompt, hit, "batch").tolist() == pytest.approx([0.6, 1.0, 0.0])


def test_a_prefix_past_the_engine_curves_is_refused_in_one_line():
    # the hand tables' grid is 10 tokens, and they stop at 20: 25 is past both, 15 is past the grid only
    with pytest.raises(KvtierError) as err:
        HAND_ENGINE.lone_s(np.array([5.0, 25.0]))
    assert str(err.value) == (
        "regen.model engine: a prompt prefix of 25 tokens is longer than 20 on hand tables (the extrapolated range"
        " the report tabulates ends there)"
    )
    assert HAND_ENGINE.engine_beyond_grid(np.array([10.0, 15.0])).tolist() == [False, True]
    assert HAND_RC.engine_beyond_grid(np.array([1e9])).tolist() == [False]  # the analytic model has no grid
    # tables that stop at their grid (regen.beyond_grid refuse) say so, and how to go past it
    at_grid = RegenCosts(**{**vars(HAND_ENGINE), "engine_grid_tokens": 20.0})
    with pytest.raises(KvtierError, match=r"measured grid ends there; regen.beyond_grid=extrapolate prices it"):
        at_grid.lone_s(np.array([25.0]))
