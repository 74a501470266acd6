"""kvtier.formulas.costs: bytes, fetch and regeneration times and ratios by hand.

And their properties, checked against independent computations, not against themselves.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier import load_model
from kvtier.formulas import costs
from kvtier.inputs.models import PRESETS
from tests.conftest import KV_70B, raw_config

bandwidths = st.floats(min_value=1e6, max_value=1e13, allow_nan=False)


sizes = st.floats(min_value=1.0, max_value=1e12, allow_nan=False)


def layer_by_layer_attention_flops(cfg: dict) -> int:
    """Attention FLOPs per cached position: per layer and head, 2 (d_qk + d_v)."""
    heads = cfg["num_attention_heads"]
    if cfg.get("kv_lora_rank") is not None:
        d_qk, d_v = cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    else:
        d_qk = d_v = cfg.get("head_dim") or cfg["hidden_size"] // heads
    return sum(2 * heads * (d_qk + d_v) for _layer in range(cfg["num_hidden_layers"]))


def token_by_token_flops(first: int, n: int, params: float, per_position: float, k: float = 2.0) -> float:
    """Each recomputed token i (0-based position) costs k N plus per_position x (i + 1) attended positions."""
    return sum(k * params + per_position * (i + 1) for i in range(first, first + n))


@given(sizes, bandwidths, bandwidths)
def test_fetch_time_falls_as_bandwidth_rises(n_bytes, b1, b2):
    lo, hi = sorted((b1, b2))
    assert costs.fetch_time_s(n_bytes, hi) <= costs.fetch_time_s(n_bytes, lo)


@given(st.integers(1, 1_000_000), st.integers(1, 1_000_000), st.floats(1e9, 1e12), st.floats(0.01, 1.0))
def test_regeneration_grows_with_tokens(t1, t2, params, mfu):
    lo, hi = sorted((t1, t2))
    assert costs.tail_regen_time_s(lo, params, 500e12, mfu) <= costs.tail_regen_time_s(hi, params, 500e12, mfu)


@given(st.lists(st.tuples(bandwidths, st.floats(0.01, 1.0)), min_size=1, max_size=50))
def test_scalar_and_vectorized_paths_agree(points):
    bw = np.array([p[0] for p in points])
    mfu = np.array([p[1] for p in points])
    block = costs.block_bytes(327_680, 16)
    vector = costs.ratio(costs.tail_regen_time_s(16, 70e9, 500e12, mfu), costs.fetch_time_s(block, bw))
    scalar = [
        float(costs.ratio(costs.tail_regen_time_s(16, 70e9, 500e12, m), costs.fetch_time_s(block, b)))
        for b, m in points
    ]
    np.testing.assert_allclose(vector, scalar, rtol=1e-15)


def test_block_bytes_is_kv_per_token_times_tokens():
    # 327,680 B x 16 tokens = 5,242,880 B (5 MiB)
    assert costs.block_bytes(KV_70B, 16) == 5_242_880


def test_fetch_time_defaults_to_one_transfer_without_latency():
    # 5,242,880 B / 64e9 B/s = 8.192e-5 s
    assert costs.fetch_time_s(5_242_880, 64e9) == pytest.approx(8.192e-5, rel=1e-12)


def test_fetch_time_pays_the_latency_once_per_transfer():
    # 80 transfers x 1e-5 s + 5,242,880 / 64e9 = 8e-4 + 8.192e-5 = 8.8192e-4 s
    assert costs.fetch_time_s(5_242_880, 64e9, 1e-5, 80) == pytest.approx(8.8192e-4, rel=1e-12)
    # one transfer (default): 1e-5 + 8.192e-5 = 9.192e-5 s
    assert costs.fetch_time_s(5_242_880, 64e9, 1e-5) == pytest.approx(9.192e-5, rel=1e-12)


def test_forward_flops_default_and_explicit_k():
    # 2 x 70e9 x 16 = 2.24e12 FLOP; with k = 6 (training): 6 x 70e9 x 16 = 6.72e12
    assert costs.forward_flops(16, 70e9) == pytest.approx(2.24e12, rel=1e-12)
    assert costs.forward_flops(16, 70e9, 6.0) == pytest.approx(6.72e12, rel=1e-12)


def test_attention_flops_sums_positions_from_the_first():
    # 10 FLOP x (16 x 100 + 16 x 17 / 2) = 10 x (1600 + 136) = 17,360
    assert costs.attention_flops(16, 100, 10) == pytest.approx(17_360, rel=1e-12)
    # at position 0: 10 x 16 x 17 / 2 = 1,360
    assert costs.attention_flops(16, 0, 10) == pytest.approx(1_360, rel=1e-12)


def test_compute_time_divides_by_peak_times_mfu():
    # 2.24e12 / (500e12 x 0.5) = 2.24e12 / 2.5e14 = 8.96e-3 s
    assert costs.compute_time_s(2.24e12, 500e12, 0.5) == pytest.approx(8.96e-3, rel=1e-12)


def test_tail_regen_time_uses_block_tokens_and_k():
    # 2 x 70e9 x 16 / (500e12 x 0.25) = 2.24e12 / 1.25e14 = 0.01792 s
    assert costs.tail_regen_time_s(16, 70e9, 500e12, 0.25) == pytest.approx(0.01792, rel=1e-12)
    # k = 3: 3 x 70e9 x 16 / 1.25e14 = 3.36e12 / 1.25e14 = 0.02688 s
    assert costs.tail_regen_time_s(16, 70e9, 500e12, 0.25, 3.0) == pytest.approx(0.02688, rel=1e-12)
    # 32 tokens: twice 0.01792 = 0.03584 s (the block's tokens are not dropped)
    assert costs.tail_regen_time_s(32, 70e9, 500e12, 0.25) == pytest.approx(0.03584, rel=1e-12)


def test_ratio_is_regen_over_fetch():
    # 0.01792 s / 8.192e-5 s = 218.75 (the source chapter's 25 % MFU case over 64 GB/s)
    assert costs.ratio(0.01792, 8.192e-5) == pytest.approx(218.75, rel=1e-12)


def test_implied_peak_interval_intersects_every_quoted_time():
    # time 10 +- 1 at MFU 1: peak in (100 / 11, 100 / 9] = (9.0909, 11.111]
    # time 19.5 +- 0.5 at MFU 0.5: peak in (100 / (0.5 x 20), 100 / (0.5 x 19)] = (10, 10.526]
    # intersection: (10, 10.526]
    low, high = costs.implied_peak_interval(100.0, [1.0, 0.5], [10.0, 19.5], [1.0, 0.5])
    assert low == pytest.approx(10.0, rel=1e-12)
    assert high == pytest.approx(100 / 9.5, rel=1e-12)
    # no quoted time: every peak fits, (0, inf)
    assert costs.implied_peak_interval(100.0, [], [], []) == (0.0, math.inf)


def test_recompute_span_resident_and_evicted():
    # resident: only the block, from its own position: (1000, 16)
    first, n = costs.recompute_span(1000, 16, "resident")
    assert (float(first), float(n)) == (1000.0, 16.0)
    # evicted, no anchors (default 0): from 0 through the block, 1000 + 16 = 1016 tokens
    first, n = costs.recompute_span(1000, 16, "evicted")
    assert (float(first), float(n)) == (0.0, 1016.0)
    # evicted, anchors every 256: floor(1000 / 256) x 256 = 768; 1000 - 768 + 16 = 248 tokens
    first, n = costs.recompute_span(1000, 16, "evicted", 256)
    assert (float(first), float(n)) == (768.0, 248.0)
    # anchors at every token: the anchor is the block itself, 16 tokens
    first, n = costs.recompute_span(1000, 16, "evicted", 1)
    assert (float(first), float(n)) == (1000.0, 16.0)


def test_recompute_span_broadcasts_both_ways():
    # resident: positions [0, 100] with one block size give two spans of 16 tokens
    first, n = costs.recompute_span(np.array([0.0, 100.0]), 16, "resident")
    assert first.tolist() == [0.0, 100.0] and n.tolist() == [16.0, 16.0]
    # evicted with two block sizes and one position: the anchor (0) is repeated
    first, n = costs.recompute_span(100, np.array([16.0, 32.0]), "evicted")
    assert first.tolist() == [0.0, 0.0] and n.tolist() == [116.0, 132.0]


def test_recompute_span_refuses_an_unknown_upstream_with_the_whole_message():
    with pytest.raises(ValueError) as info:
        costs.recompute_span(0, 16, "gone")
    assert str(info.value) == "upstream must be 'resident' or 'evicted', got 'gone'"


def test_regen_flops_resident_by_default():
    # 2 x 1e9 x 16 + 10 x (16 x 1000 + 16 x 17 / 2) = 3.2e10 + 161,360 = 32,000,161,360
    assert costs.regen_flops(1000, 16, 1e9, 10) == pytest.approx(32_000_161_360, rel=1e-12)
    # k = 3: 4.8e10 + 161,360
    assert costs.regen_flops(1000, 16, 1e9, 10, flops_per_param_token=3.0) == pytest.approx(48_000_161_360, rel=1e-12)


def test_regen_flops_evicted_walks_from_the_anchor():
    # 248 tokens from 768: 2 x 1e9 x 248 + 10 x (248 x 768 + 248 x 249 / 2)
    #   = 4.96e11 + 10 x (190,464 + 30,876) = 496,000,000,000 + 2,213,400
    assert costs.regen_flops(1000, 16, 1e9, 10, "evicted", 256) == pytest.approx(496_002_213_400, rel=1e-12)
    # no anchors: 1016 tokens from 0: 2.032e12 + 10 x 1016 x 1017 / 2 = 2.032e12 + 5,166,360
    assert costs.regen_flops(1000, 16, 1e9, 10, "evicted") == pytest.approx(2_032_005_166_360, rel=1e-12)


def test_bandwidth_for_ratio_defaults_to_break_even():
    # 5,242,880 B / 0.01792 s = 292,571,428.57 B/s
    assert costs.bandwidth_for_ratio(5_242_880, 0.01792) == pytest.approx(5_242_880 / 0.01792, rel=1e-12)


def test_bandwidth_for_ratio_divides_the_regen_time_by_the_target():
    # target 2: budget 0.01792 / 2 = 0.00896 s; 5,242,880 / 0.00896 = 585,142,857.14 B/s
    assert costs.bandwidth_for_ratio(5_242_880, 0.01792, 2.0) == pytest.approx(585_142_857.142857, rel=1e-12)
    # target 4 with 1 ms latency: 0.01792 / 4 - 0.001 = 0.00348 s; 5,242,880 / 0.00348 = 1,506,574,712.6 B/s
    assert costs.bandwidth_for_ratio(5_242_880, 0.01792, 4.0, 1e-3) == pytest.approx(5_242_880 / 0.00348, rel=1e-12)


def test_bandwidth_for_ratio_is_inf_when_latency_uses_the_budget():
    # latency 0.01792 s equals the whole budget: no bandwidth reaches parity
    assert costs.bandwidth_for_ratio(5_242_880, 0.01792, 1.0, 0.01792) == math.inf
    # latency 0.02 s exceeds it
    assert costs.bandwidth_for_ratio(5_242_880, 0.01792, 1.0, 0.02) == math.inf


def test_attention_parity_position_by_hand():
    # p = k N / fpp - (T + 1) / 2 = 2 x 1000 / 10 - 17 / 2 = 200 - 8.5 = 191.5
    assert costs.attention_parity_position(1000, 10, 16) == pytest.approx(191.5, rel=1e-12)
    # k = 4: 400 - 8.5 = 391.5
    assert costs.attention_parity_position(1000, 10, 16, 4.0) == pytest.approx(391.5, rel=1e-12)
    # at that position the attention FLOPs equal the parameter FLOPs: 10 x (16 x 191.5 + 136) = 32,000 = 2 x 1000 x 16
    assert costs.attention_flops(16, 191.5, 10) == pytest.approx(costs.forward_flops(16, 1000), rel=1e-12)


def test_costs_read_arguments_as_float64():
    # a count beyond int64 (2**70) is read as a float: 2**70 x 1 = 2**70 as float64, not an object array
    result = costs.block_bytes(2**70, 1)
    assert result.dtype == np.float64 and result == 2.0**70


def test_implied_peak_interval_refuses_lists_of_different_lengths():
    # two MFUs but one time: zip(strict=True) refuses rather than silently dropping a quoted time
    with pytest.raises(ValueError):
        costs.implied_peak_interval(100.0, [1.0, 0.5], [10.0], [1.0])


def test_recompute_span_edges():
    # an empty block (0 tokens) evicted behind anchors every 64: restart at floor(100 / 64) x 64 = 64, 36 tokens
    first, n = costs.recompute_span(100, 0, "evicted", 64)
    assert (float(first), float(n)) == (64.0, 36.0)
    # a spacing below one token is still a spacing: floor(3 / 0.5) x 0.5 = 3, so only the 16 block tokens
    first, n = costs.recompute_span(3, 16, "evicted", 0.5)
    assert (float(first), float(n)) == (3.0, 16.0)


@pytest.mark.parametrize("preset", PRESETS)
def test_attention_flops_per_position_against_the_published_config(preset):
    assert load_model(preset).attention_flops_per_position() == layer_by_layer_attention_flops(raw_config(preset))


@settings(max_examples=60)
@given(
    preset=st.sampled_from(PRESETS),
    position=st.integers(0, 5000),
    block=st.integers(1, 64),
    anchor=st.sampled_from([0, 1, 7, 256, 1000]),
)
def test_regen_flops_against_a_token_by_token_count(preset, position, block, anchor):
    m = load_model(preset)
    n_params, fpp = m.active_params, m.attention_flops_per_position()
    resident = costs.regen_flops(position, block, n_params, fpp, "resident")
    assert float(resident) == pytest.approx(token_by_token_flops(position, block, n_params, fpp), rel=1e-9)
    # evicted: restart at the last anchor at or before the position (0 when there are no anchors)
    start = (position // anchor) * anchor if anchor else 0
    evicted = costs.regen_flops(position, block, n_params, fpp, "evicted", anchor)
    expected = token_by_token_flops(start, position - start + block, n_params, fpp)
    assert float(evicted) == pytest.approx(expected, rel=1e-9)


@settings(max_examples=60)
@given(
    preset=st.sampled_from(PRESETS),
    block=st.integers(1, 128),
    bandwidth_gbps=st.floats(1.0, 1000.0),
    latency_us=st.floats(0.0, 50.0),
    mfu=st.floats(0.01, 1.0),
    peak_tflops=st.floats(10.0, 5000.0),
)
def test_ratio_against_its_definition(preset, block, bandwidth_gbps, latency_us, mfu, peak_tflops):
    m = load_model(preset)
    kv = m.kv_bytes_per_token("bf16")
    # definition: regen time / fetch time, regen = 2 N T / (peak x MFU), fetch = latency + T kv / bandwidth
    regen = 2.0 * m.active_params * block / (peak_tflops * 1e12 * mfu)
    fetch = latency_us * 1e-6 + block * kv / (bandwidth_gbps * 1e9)
    tail = costs.tail_regen_time_s(block, m.active_params, peak_tflops * 1e12, mfu)
    fetched = costs.fetch_time_s(costs.block_bytes(kv, block), bandwidth_gbps * 1e9, latency_us * 1e-6)
    assert float(costs.ratio(tail, fetched)) == pytest.approx(regen / fetch, rel=1e-12)
    # and the bandwidth at which the ratio reaches 1 makes the two times equal
    bw = float(costs.bandwidth_for_ratio(block * kv, regen, 1.0, latency_us * 1e-6))
    if math.isfinite(bw):
        assert latency_us * 1e-6 + block * kv / bw == pytest.approx(regen, rel=1e-9)
    else:
        assert latency_us * 1e-6 >= regen


@settings(max_examples=60)
@given(params=st.floats(1e6, 1e12), fpp=st.floats(1e3, 1e7), block=st.integers(1, 256), k=st.sampled_from([2.0, 6.0]))
def test_attention_parity_against_its_definition(params, fpp, block, k):
    # at the parity position the attention FLOPs of the block, summed token by token, equal k N T
    p = float(costs.attention_parity_position(params, fpp, block, k))
    attention = sum(fpp * (p + i + 1) for i in range(block))
    assert attention == pytest.approx(k * params * block, rel=1e-9)


# ---------------------------------------------------------------------------
# one fetch time on every path: the workload, the cost page, the tier ladder, compare
# ---------------------------------------------------------------------------

CXL_X8 = ("cxl2-x8", 31.5e9, 9.049e-6)
"""The link the paths are compared on: 31.5 GB/s net (kvtier/data/hardware.yaml), 9.049 µs a transfer (the seed's
tier_latency.host_link, the H200's fitted copy latency)."""

FETCH_BY_LAYOUT = {
    # Llama-3-70B bf16: 80 layers x 8 KV heads x 128 x 2 (K and V) x 2 B = 327,680 B a token, and
    # the seed's 16-token block is 16 x 327,680 = 5,242,880 B; 5,242,880 / 31.5e9 = 166.4406 µs.
    # contiguous: 1 transfer, 1 x 9.049 µs + 166.4406 µs = 175.4896 µs
    "contiguous": (1, 9.049e-6 + 5_242_880 / 31.5e9),
    # per layer: a K chunk and a V chunk in each of 80 layers, 160 transfers: 160 x 9.049 µs = 1,447.84 µs,
    # + 166.4406 µs = 1,614.2806 µs (the bytes cross the link once either way)
    "per-layer": (160, 160 * 9.049e-6 + 5_242_880 / 31.5e9),
}


@pytest.mark.parametrize("layout", FETCH_BY_LAYOUT)
def test_every_path_fetches_the_same_block_in_the_same_time(layout):
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.report.pages import page_of
    from kvtier.scenario import Scenario
    from tests.conftest import run_cli_json

    transfers, expected = FETCH_BY_LAYOUT[layout]
    assert expected == pytest.approx({"contiguous": 175.4896e-6, "per-layer": 1_614.2806e-6}[layout], rel=1e-6)
    name, bandwidth, latency = CXL_X8
    # the cost page prices the trace for the build's own set (workload.deployment build), as the other paths do
    s = Scenario(load_assumptions(sets={"fetch_layout": layout, "workload.deployment": "build"}))
    assert s.block_bytes == 5_242_880 and s.fetch_transfers == transfers
    # the workload: the hits of `kvtier workload` and the workload page, here one 16-token block
    rc = s.regen_costs(mfu_label="conservative")
    assert rc.fetch_transfers == transfers
    workload_s = float(rc.fetch_s(np.array([1]), np.array([16]), bandwidth, latency)[0])
    # the cost page: its table of record cost_intervals, fetch_us of the set's block from the tier
    intervals = next(t for t in page_of("13_cost").tables if t.name == "cost_intervals").build(s)
    cost_s = float(intervals.set_index("tier").loc[name, "fetch_us"]) * 1e-6
    # the tier ladder: `kvtier tiers` (the tiers page's table)
    tiers = run_cli_json("tiers", "--set", f"fetch_layout={layout}")["tiers"]
    tier = next(row for row in tiers if row["link"] == name)
    assert tier["transfers"] == transfers and tier["latency_s"] == pytest.approx(latency, rel=1e-12)
    # compare: `kvtier compare` at the link's bandwidth and latency
    compare = run_cli_json("compare", "--layout", layout, "--bandwidth", "31.5GB/s", "--latency", "9.049us")
    assert compare["fetch_transfers"] == transfers
    paths = {
        "costs.fetch_time_s": float(costs.fetch_time_s(s.block_bytes, bandwidth, latency, s.fetch_transfers)),
        "workload": workload_s,
        "cost page": cost_s,
        "kvtier tiers": tier["fetch_time_s"],
        "kvtier compare": compare["fetch_time_s"],
    }
    assert paths == pytest.approx(dict.fromkeys(paths, expected), rel=1e-12)


def test_latency_for_ratio_is_the_break_even_per_transfer_latency():
    # A 5 MiB block (5,242,880 B) over 64 GB/s takes 81.92 us of bytes; regenerated in 1 ms the
    # latency budget is 1,000 - 81.92 = 918.08 us: 918.08 us for one transfer, 918.08 / 160 =
    # 5.738 us for 160 layer chunks.
    got = costs.latency_for_ratio(5 * 2**20, 64e9, 1e-3, [1, 160])
    assert got == pytest.approx([918.08e-6, 918.08e-6 / 160])
    # At that latency the fetch takes exactly the regeneration time: the ratio is 1.
    assert costs.fetch_time_s(5 * 2**20, 64e9, got[1], 160) == pytest.approx(1e-3)
    # A target ratio of 10 leaves 100 - 81.92 = 18.08 us; a 50 us regeneration leaves nothing (0).
    assert costs.latency_for_ratio(5 * 2**20, 64e9, 1e-3, 1, 10) == pytest.approx(18.08e-6)
    assert costs.latency_for_ratio(5 * 2**20, 64e9, 50e-6) == 0.0
