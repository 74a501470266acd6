"""kvtier.formulas.ttft, by hand: the prefix a request finds, its fetch, the rest's prefill, the pipelined TTFT."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvtier.formulas import ttft
from kvtier.formulas.cache.curve import Reuse
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.inputs import traces
from tests.conftest import trace_text

# Four requests, 4 tokens a block (ids as the trace gives them; equal ids: equal prefix):
#   r0  t=0 s  8 tokens  ids [1, 2]
#   r1  t=1 s 10 tokens  ids [1, 2, 3]   (blocks of 4, 4, 2 tokens)
#   r2  t=2 s  8 tokens  ids [5, 1]      (block 1 after a miss: not part of the prefix)
#   r3  t=3 s  8 tokens  ids [1, 2]      (the whole prompt is in the tier)
# references in order (dense ids): 0 1 | 0 1 2 | 3 0 | 0 1
# stack distances (distinct other blocks since the block's last use; -1 first use):
#   idx 2 (0): since idx 0, {1} -> 1        idx 3 (1): since idx 1, {0} -> 1
#   idx 6 (0): since idx 2, {1, 2, 3} -> 3  idx 7 (0): since idx 6, {} -> 0
#   idx 8 (1): since idx 3, {2, 3, 0} -> 3
HAND_DISTANCES = [-1, -1, 1, 1, -1, -1, 3, 0, 3]
ROWS = [
    {"timestamp": 0, "input_length": 8, "output_length": 1, "hash_ids": [1, 2]},
    {"timestamp": 1000, "input_length": 10, "output_length": 1, "hash_ids": [1, 2, 3]},
    {"timestamp": 2000, "input_length": 8, "output_length": 1, "hash_ids": [5, 1]},
    {"timestamp": 3000, "input_length": 8, "output_length": 1, "hash_ids": [1, 2]},
]

# k = 2 FLOP per parameter-token, N = 1000 parameters, no attention; 1e6 FLOP/s at 50 %:
#   compute(h) = 2000 h / 5e5 = 4 ms a token.  Weights 1e4 B at 1e6 B/s x 100 %: 10 ms a pass,
#   plus 100 B a token of prefix KV read: 0.1 ms a prefix token.
RC = RegenCosts(
    kv_bytes_per_token=100.0,
    active_params=1000.0,
    flops_per_param_token=2.0,
    attention_flops_per_position=0.0,
    peak_flop_per_s=1e6,
    mfu=0.5,
    weight_bytes=1e4,
    mem_bandwidth_bytes_per_s=1e6,
    mem_efficiency=1.0,
)
# a tier of 1e5 B/s and 1 ms a transfer; blocks of 4 tokens, 2 transfers each; 4 layers; 100 B a token
FETCH = ttft.Fetch(
    bandwidth_bytes_per_s=1e5,
    latency_s=1e-3,
    block_tokens=4,
    transfers_per_block=2,
    layers=4,
    overlap=False,
    link_bytes_per_token=100.0,
)


@pytest.fixture(scope="module")
def reuse() -> Reuse:
    return Reuse.of(traces.parse_trace(trace_text(ROWS), "hand", 4))


def test_the_hand_trace_has_the_distances_worked_out(reuse: Reuse) -> None:
    assert reuse.distance.tolist() == HAND_DISTANCES


@pytest.mark.parametrize(
    ("capacity", "blocks", "tokens"),
    [
        # unbounded: r1 finds blocks 1, 2 (8 tokens), r2's block 1 follows a miss (0), r3 finds both (8)
        (math.inf, [0, 2, 0, 2], [0, 8, 0, 8]),
        # 2 blocks: r1's distances 1, 1 < 2 hit; r3's idx 7 (d 0) hits, idx 8 (d 3) misses: 1 block, 4 tokens
        (2, [0, 2, 0, 1], [0, 8, 0, 4]),
        # 1 block: only d = 0 hits: r3's first block
        (1, [0, 0, 0, 1], [0, 0, 0, 4]),
        # nothing
        (0, [0, 0, 0, 0], [0, 0, 0, 0]),
    ],
)
def test_prefix_hits_stop_at_the_first_miss(reuse: Reuse, capacity: float, blocks: list, tokens: list) -> None:
    got_blocks, got_tokens = ttft.prefix_hit_tokens(reuse, capacity)
    assert got_blocks.tolist() == blocks
    assert got_tokens.tolist() == tokens


def test_a_hit_after_a_miss_is_left_out_where_the_plain_hit_count_takes_it(reuse: Reuse) -> None:
    # counted per block, Reuse.hit_tokens counts r2's block 1 (d 3 < inf): 4 tokens; the prefix stops at r2's first
    # block, a miss, and so does Reuse's default count (workload.hit_count: prefix)
    assert reuse.recounted("per-block").hit_tokens(math.inf)[1].tolist() == [0, 8, 4, 8]
    assert ttft.prefix_hit_tokens(reuse)[1].tolist() == [0, 8, 0, 8]
    assert reuse.recounted("prefix").hit_tokens(math.inf)[1].tolist() == [0, 8, 0, 8]


def test_the_prompts_last_token_is_always_computed() -> None:
    # 8 of 8 tokens in the tier: 7 are taken from it; a prompt of 1 token takes none; 5 of 10 stay 5
    assert ttft.usable_hit_tokens(np.array([8, 1, 5]), np.array([8, 1, 10])).tolist() == [7, 0, 5]


def test_prefix_fetch_counts_the_engines_blocks_and_transfers() -> None:
    # 8 tokens: 800 B / 1e5 B/s = 8 ms, plus ceil(8 / 4) = 2 blocks x 2 transfers x 1 ms = 4 ms: 12 ms
    # 7 tokens: 700 B -> 7 ms, still 2 blocks -> 4 ms: 11 ms; 0 tokens: nothing
    got = ttft.prefix_fetch_s(np.array([8.0, 7.0, 0.0]), 100.0, 1e5, 1e-3, 4, 2)
    assert got == pytest.approx([0.012, 0.011, 0.0])


def test_rest_prefill_in_both_regimes() -> None:
    prompt, hit = np.array([10.0, 10.0, 8.0]), np.array([8.0, 0.0, 7.0])
    # batch: the rest's 2, 10 and 1 tokens at 4 ms a token: 8, 40, 4 ms
    assert ttft.rest_prefill_s(RC, prompt, hit, "batch") == pytest.approx([0.008, 0.040, 0.004])
    # lone: max(compute, (1e4 + 100 x hit) / 1e6): max(8, 10.8) = 10.8 ms; max(40, 10) = 40 ms; max(4, 10.7) = 10.7 ms
    assert ttft.rest_prefill_s(RC, prompt, hit, "lone") == pytest.approx([0.0108, 0.040, 0.0107])
    # nothing left: no pass at all
    assert ttft.rest_prefill_s(RC, np.array([8.0]), np.array([8.0]), "lone").tolist() == [0.0]
    with pytest.raises(ValueError, match="regime"):
        ttft.rest_prefill_s(RC, prompt, hit, "alone")


def test_rest_prefill_counts_the_rests_attention_over_the_prefix() -> None:
    rc = RegenCosts(**{**vars(RC), "attention_flops_per_position": 10.0})
    # prefix_flops(h) = 2000 h + 10 h (h + 1) / 2: (20000 + 550) - (16000 + 360) = 4190 FLOP -> 4190 / 5e5 = 8.38 ms
    assert ttft.rest_prefill_s(rc, np.array([10.0]), np.array([8.0]), "batch") == pytest.approx([0.00838])


def test_the_whole_prompt_prefilled_is_the_recompute_cost_of_reuse() -> None:
    # no hit: rest_prefill_s is RegenCosts.regen_s of the prompt, in both regimes (one cost, two paths)
    prompt = np.array([1.0, 3.0, 10.0, 5000.0])
    for regime in ttft.REGIMES:
        assert ttft.rest_prefill_s(RC, prompt, np.zeros(4), regime) == pytest.approx(RC.regen_s(prompt, regime))


def test_overlap_pipelines_the_fetch_under_the_prefill_layer_by_layer() -> None:
    # F = 12, C = 8 ms over 4 layers: (12 + 8 + 3 x 12) / 4 = 14 ms (the fetch binds)
    # F = 4, C = 8 ms: (4 + 8 + 3 x 8) / 4 = 9 ms = f + C (the fetch hides but for its first layer)
    # one stage: no overlap, F + C
    got = ttft.overlapped_s(np.array([0.012, 0.004]), np.array([0.008, 0.008]), 4)
    assert got == pytest.approx([0.014, 0.009])
    assert ttft.overlapped_s(0.012, 0.008, 1) == pytest.approx(0.020)
    with pytest.raises(ValueError, match="stages"):
        ttft.overlapped_s(0.0, 0.0, 0)


def test_ttft_per_request_without_overlap(reuse: Reuse) -> None:
    t = ttft.ttft(reuse, RC, "batch", FETCH)
    # r0: nothing found, 8 tokens x 4 ms = 32 ms      r1: 8 tokens found: fetch 12 ms + 2 tokens 8 ms = 20 ms
    # r2: nothing in its prefix: 32 ms                 r3: 7 of 8 tokens: fetch 11 ms + 1 token 4 ms = 15 ms
    assert t.hit_tokens.tolist() == [0, 8, 0, 7]
    assert t.fetch_s == pytest.approx([0, 0.012, 0, 0.011])
    assert t.ttft_s == pytest.approx([0.032, 0.020, 0.032, 0.015])
    # no tier: 32, 40, 32, 32 ms; saved 0 + 32 + 0 + 28 = 60 ms of prefill
    assert t.full_prefill_s == pytest.approx([0.032, 0.040, 0.032, 0.032])
    assert t.gpu_s_saved.sum() == pytest.approx(0.060)
    # sorted 15, 20, 32, 32: p50 (20 + 32) / 2 = 26 ms; p90 and p99 32 ms (numpy's linear interpolation)
    assert t.percentiles() == pytest.approx({"p50": 0.026, "p90": 0.032, "p99": 0.032, "max": 0.032})


def test_ttft_with_layer_overlap(reuse: Reuse) -> None:
    t = ttft.ttft(reuse, RC, "batch", ttft.Fetch(**{**vars(FETCH), "overlap": True}))
    # r1: (12 + 8 + 3 x 12) / 4 = 14 ms      r3: (11 + 4 + 3 x 11) / 4 = 12 ms; no hit: the prefill alone
    assert t.ttft_s == pytest.approx([0.032, 0.014, 0.032, 0.012])


def test_ttft_lone_and_a_small_tier(reuse: Reuse) -> None:
    t = ttft.ttft(reuse, RC, "lone", FETCH, capacity_blocks=2)
    # r0: max(32, 10) = 32 ms   r1: fetch 12 + max(8, 10.8) = 22.8 ms   r2: 32 ms
    # r3: 4 tokens (one block) found: fetch 400 B -> 4 ms + 1 block x 2 x 1 ms = 6 ms;
    #     rest 4 tokens max(16, 10.4) = 16 ms
    assert t.ttft_s == pytest.approx([0.032, 0.0228, 0.032, 0.022])
    # lone, no tier: max(32, 10), max(40, 10), ...: a memory-bound rest saves less than its compute
    assert t.gpu_s_saved == pytest.approx([0.0, 0.040 - 0.0108, 0.0, 0.032 - 0.016])


def test_no_tier_is_the_whole_prompt(reuse: Reuse) -> None:
    for t in (ttft.ttft(reuse, RC, "batch"), ttft.ttft(reuse, RC, "batch", FETCH, capacity_blocks=0)):
        assert t.ttft_s == pytest.approx([0.032, 0.040, 0.032, 0.032])
        assert not t.hit_tokens.any() and not t.gpu_s_saved.any()


def test_a_memory_bound_lone_prefill_can_cost_more_after_a_hit() -> None:
    # weights 1e5 B: a lone pass takes >= 100 ms; 1 token of 2 recomputed reads 100 ms + 0.1 ms of prefix KV
    rc = RegenCosts(**{**vars(RC), "weight_bytes": 1e5})
    assert ttft.rest_prefill_s(rc, np.array([2.0]), np.array([1.0]), "lone") == pytest.approx([0.1001])
    assert ttft.rest_prefill_s(rc, np.array([2.0]), np.array([0.0]), "lone") == pytest.approx([0.1])


# RC placed on two accelerators (tp = 2): half the FLOPs, half the weights and half the KV on the
# busiest rank; the collectives 1 ms a pass plus 0.1 ms a token
PLACED = RegenCosts(
    **{
        **vars(RC),
        "tp": 2,
        "group": 2,
        "accelerators": 2,
        "compute_share": 0.5,
        "kv_rank_share": 0.5,
        "collective_latency_s": 1e-3,
        "collective_s_per_token": 1e-4,
    }
)


def test_a_placed_prefill() -> None:
    # 8 tokens, nothing cached: 16,000 FLOP x 0.5 / 5e5 = 16 ms against 5,000 B / 1e6 = 5 ms -> 16 ms;
    # plus 1 ms + 8 x 0.1 ms of collectives = 17.8 ms
    assert ttft.rest_prefill_s(PLACED, [8.0], [0.0], "lone") == pytest.approx([0.0178])
    # in a batch: 16,000 / (2 x 1e6 x 0.5) = 16 ms over both accelerators, + 8 x 0.1 ms / 1 stage = 16.8 ms
    assert ttft.rest_prefill_s(PLACED, [8.0], [0.0], "batch") == pytest.approx([0.0168])
    # 4 tokens after a 4-token hit, memory side: 5,000 B + 4 x 50 B of KV = 5,200 B -> 5.2 ms;
    # compute 8,000 x 0.5 / 5e5 = 8 ms binds; + 1 + 0.4 ms = 9.4 ms
    assert ttft.rest_prefill_s(PLACED, [8.0], [4.0], "lone") == pytest.approx([0.0094])


def test_accelerator_time_saved_counts_every_busy_accelerator(reuse: Reuse) -> None:
    t = ttft.ttft(reuse, PLACED, "batch", FETCH)
    assert t.busy_accelerators == 2
    assert t.gpu_s_saved == pytest.approx((t.full_prefill_s - t.prefill_s) * 2)
    # two stages of tp 2: a lone prefill keeps one stage (2 accelerators) busy at a time, a batch all 4
    staged = RegenCosts(**{**vars(PLACED), "accelerators": 4, "pipeline_stages": 2})
    assert (staged.busy_accelerators("lone"), staged.busy_accelerators("batch")) == (2.0, 4.0)


def test_the_prefix_fetch_takes_the_transfer_model() -> None:
    # 8 tokens at 50 B over 1e5 B/s at 50 %: 400 B / 5e4 = 8 ms + 2 blocks x 2 x 1 ms = 12 ms (above the 10 ms floor);
    # 4 tokens: 200 B -> 4 ms + 2 ms = 6 ms, floored at 10 ms; no tokens: nothing fetched, no floor
    got = ttft.prefix_fetch_s(np.array([8.0, 4.0, 0.0]), 50.0, 1e5, 1e-3, 4, 2, min_transfer_s=0.01, efficiency=0.5)
    assert got == pytest.approx([0.012, 0.010, 0.0])


def test_the_prefix_fetch_pays_the_pageable_overhead_per_copy() -> None:
    # as above with 0.5 ms more per copy: 8 tokens, 2 blocks x 2 copies x (1 + 0.5) ms = 6 ms + 8 ms = 14 ms;
    # 4 tokens: 1 block x 2 x 1.5 ms = 3 ms + 4 ms = 7 ms, floored at 10 ms; no tokens: nothing
    got = ttft.prefix_fetch_s(
        np.array([8.0, 4.0, 0.0]), 50.0, 1e5, 1e-3, 4, 2, min_transfer_s=0.01, efficiency=0.5, overhead_s=0.5e-3
    )
    assert got == pytest.approx([0.014, 0.010, 0.0])


def test_requests_counted_by_prompt_and_prefix_give_the_per_request_figures(reuse: Reuse) -> None:
    # the four requests of the hand trace as the streamed pass counts them: prompts 8, 10, 8, 8 tokens with
    # 0, 8, 0, 7 tokens found (r0 and r2 are one pair, counted twice): the same TTFTs, 15, 20, 32, 32 ms
    t = ttft.ttft_counted(
        np.array([8.0, 10.0, 8.0]), np.array([0.0, 8.0, 7.0]), RC, "batch", FETCH, np.array([2.0, 1.0, 1.0])
    )
    assert t.ttft_s == pytest.approx([0.032, 0.020, 0.015])
    assert t.n_requests == 4
    # p50 (20 + 32) / 2 = 26 ms, as numpy gives on the four; mean (32 x 2 + 20 + 15) / 4 = 24.75 ms; 60 ms saved
    assert t.percentiles() == pytest.approx({"p50": 0.026, "p90": 0.032, "p99": 0.032, "max": 0.032})
    assert t.mean(t.ttft_s) == pytest.approx(0.02475)
    assert t.total(t.gpu_s_saved) == pytest.approx(0.060)
    each = ttft.ttft(reuse, RC, "batch", FETCH)
    assert t.mean(t.ttft_s) == pytest.approx(each.mean(each.ttft_s)) and each.n_requests == 4
