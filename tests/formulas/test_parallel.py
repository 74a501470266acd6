"""The placement formulas: shards, shared links, collectives, routed experts (kvtier.formulas.parallel)."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas import parallel


def test_kv_heads_per_rank_splits_then_replicates_as_vllm_does():
    # vLLM ModelConfig.get_num_kv_heads: max(1, kv_heads // tp); Llama-3-70B has 8 KV heads
    assert parallel.kv_heads_per_rank(8, [1, 2, 4, 8, 16]).tolist() == [8, 4, 2, 1, 1]  # 16 > 8: replicated


def test_stage_layers_is_the_largest_stage():
    # 80 layers over 3 stages: 27 + 27 + 26, the largest holds ceil(80 / 3) = 27; 61 over 2: 31
    assert parallel.stage_layers([80, 80, 61], [1, 3, 2]).tolist() == [80, 27, 31]


def test_kv_shard_share_gqa_mla_and_pipeline():
    # GQA, 8 KV heads, 80 layers: tp 4 -> 2 of 8 heads = 0.25; tp 16 -> 1 of 8 = 0.125 (not 1/16: replicated)
    assert parallel.kv_shard_share(8, 80, 4, 1, latent=False) == pytest.approx(0.25, abs=0)
    assert parallel.kv_shard_share(8, 80, 16, 1, latent=False) == pytest.approx(0.125, abs=0)
    # MLA (DeepSeek-V3, 61 layers): the latent is whole on every TP rank; pp 2 -> 31 of 61 layers
    assert parallel.kv_shard_share(128, 61, 8, 1, latent=True) == 1.0
    assert parallel.kv_shard_share(128, 61, 8, 2, latent=True) == pytest.approx(31 / 61, rel=1e-15)
    # one accelerator: exactly 1, so the single-accelerator numbers are unchanged bit for bit
    assert parallel.kv_shard_share(8, 80, 1, 1, latent=False) == 1.0


def test_stored_copies_per_rank_and_once():
    # MLA (DeepSeek-V3) at TP 8 written by every rank: the latent is whole on each, so 8 copies
    assert float(parallel.stored_copies(128, 8, latent=True, storage="per-rank")) == 8.0
    # stored once per group: 1, whatever the placement
    assert float(parallel.stored_copies(128, 8, latent=True, storage="once")) == 1.0
    # GQA, 8 KV heads: TP 8 splits them 1 a rank, 8 x 1 / 8 = 1 copy; TP 16 replicates each twice, 16 x 1 / 8 = 2
    assert float(parallel.stored_copies(8, 8, latent=False, storage="per-rank")) == 1.0
    assert float(parallel.stored_copies(8, 16, latent=False, storage="per-rank")) == 2.0
    # 8 heads over TP 3 (uneven, which vLLM refuses): 8 // 3 = 2 heads a rank, 3 x 2 / 8 = 0.75, at least one copy
    assert float(parallel.stored_copies(8, 3, latent=False, storage="per-rank")) == 1.0
    # one accelerator: 1 either way
    assert float(parallel.stored_copies(8, 1, latent=False, storage="per-rank")) == 1.0
    # mla-once: one rank writes the latent (1 copy), replicated GQA heads still per rank (TP 16 over 8 heads: 2)
    assert float(parallel.stored_copies(128, 8, latent=True, storage="mla-once")) == 1.0
    assert float(parallel.stored_copies(8, 16, latent=False, storage="mla-once")) == 2.0
    with pytest.raises(ValueError, match="storage must be one of"):
        parallel.stored_copies(8, 8, latent=False, storage="twice")


def test_link_bytes_counts_every_shard_behind_one_link():
    # two GPUs behind one PCIe switch each fetch 655,360 B: 1,310,720 B cross the switch's uplink
    assert parallel.link_bytes(655_360.0, 2) == 1_310_720.0


def test_distinct_experts_under_uniform_routing():
    # DeepSeek-V3, E = 256, k = 8, t = 16: 256 (1 - (1 - 8/256)^16) = 256 (1 - 0.96875^16)
    # 0.96875^16 = 0.60171...; 256 x 0.39829 = 101.96 (the guide's "about 102")
    assert float(parallel.distinct_experts(256, 8, 16)) == pytest.approx(101.962, abs=1e-3)
    # one token touches exactly k; Mixtral (E = 8, k = 2) over 16 tokens: 8 (1 - 0.75^16) = 7.920
    assert float(parallel.distinct_experts(256, 8, 1)) == pytest.approx(8.0, rel=1e-12)
    assert float(parallel.distinct_experts(8, 2, 16)) == pytest.approx(7.9198, abs=1e-4)
    # a dense model has none
    assert float(parallel.distinct_experts(0, 0, 16)) == 0.0


def test_rank_weight_bytes_and_compute_share():
    # dense 100 B over tp 4 = 25; routed 800 B over a group of 8 = 100; pp 2 halves it: (25 + 100) / 2
    assert float(parallel.rank_weight_bytes(100.0, 800.0, 4, 8, 2)) == 62.5
    # share of FLOPs: (30 / 2 + 10 / 8) / 40 = (15 + 1.25) / 40 = 0.40625; exactly 1 on one accelerator
    assert float(parallel.compute_share(30.0, 10.0, 2, 8)) == pytest.approx(0.40625, abs=0)
    assert float(parallel.compute_share(0.1, 0.2, 1, 1)) == 1.0
    assert parallel.group_size(2, 8) == 8 and parallel.accelerators(8, 2, 8) == 16


def test_allreduce_and_all_to_all():
    # 8 ranks, 1 MB, 10 us, 450 GB/s: 10e-6 + 2 x 7/8 x 1e6 / 450e9 = 10e-6 + 3.889e-6
    assert float(parallel.allreduce_time_s(1e6, 8, 10e-6, 450e9)) == pytest.approx(13.889e-6, rel=1e-4)
    # all-to-all: 10e-6 + 7/8 x 1e6 / 450e9 = 10e-6 + 1.944e-6
    assert float(parallel.all_to_all_time_s(1e6, 8, 10e-6, 450e9)) == pytest.approx(11.944e-6, rel=1e-4)
    # one rank: no collective at all, latency included
    assert float(parallel.allreduce_time_s(1e6, 1, 10e-6, 450e9)) == 0.0
    assert float(parallel.all_to_all_time_s(1e6, 1, 10e-6, 450e9)) == 0.0


def test_collectives_of_a_lone_block_on_tp8_is_the_latency_floor():
    # Llama-3-70B (80 layers, hidden 8192), 16 tokens bf16: message 16 x 8192 x 2 = 262,144 B
    # per all-reduce: 10 us + 2 x 7/8 x 262,144 / 450e9 = 10 us + 1.0194 us; 160 of them = 1.7631 ms
    t = parallel.collectives_time_s(16, 8192, 2, 80, 0, 0, 8, 1, 1, 10e-6, 450e9, 15e-6, 50e9)
    assert float(t) == pytest.approx(160 * (10e-6 + 1.75 * 262_144 / 450e9), rel=1e-12)
    assert float(t) == pytest.approx(1.7631e-3, rel=1e-4)
    # inside a batch the latency is shared (latency_share 0): 160 x 1.0194 us = 0.1631 ms
    t0 = parallel.collectives_time_s(16, 8192, 2, 80, 0, 0, 8, 1, 1, 10e-6, 450e9, 15e-6, 50e9, 0.0)
    assert float(t0) == pytest.approx(160 * 1.75 * 262_144 / 450e9, rel=1e-12)


def test_collectives_add_expert_all_to_alls_and_stage_hand_offs():
    # DeepSeek-V3-like: 58 MoE layers, k 8, ep 8, 16 tokens, hidden 7168, bf16: message 229,376 B, x 8 = 1,835,008 B
    # each all-to-all: 10 us + 7/8 x 1,835,008 / 450e9 = 10 us + 3.568 us; 116 of them (dispatch and combine)
    # plus one hand-off (pp 2) over InfiniBand: 15 us + 229,376 / 50e9 = 19.588 us
    t = parallel.collectives_time_s(16, 7168, 2, 61, 58, 8, 1, 8, 2, 10e-6, 450e9, 15e-6, 50e9)
    expected = 116 * (10e-6 + 0.875 * 1_835_008 / 450e9) + (15e-6 + 229_376 / 50e9)
    assert float(t) == pytest.approx(expected, rel=1e-12)
    assert float(t) == pytest.approx(1.5935e-3, rel=1e-3)
    # one accelerator: nothing at all
    assert float(parallel.collectives_time_s(16, 8192, 2, 80, 0, 0, 1, 1, 1, 10e-6, 450e9, 15e-6, 50e9)) == 0.0


def test_fits():
    assert parallel.fits(np.array([140e9, 142e9]), 141e9).tolist() == [True, False]


def test_touched_rank_weight_bytes() -> None:
    # dense model (E = 0): dense / tp = 1,000 / 4 = 250 B, whatever the tokens
    assert parallel.touched_rank_weight_bytes(1000.0, 0.0, 0, 0, 16, 4, 4) == pytest.approx(250.0)
    # E = 4 experts, k = 1, one token: 4 x (1 - 3/4) = 1 expert touched -> routed 800 x 1/4 = 200 B;
    # over a group of 2: 100; dense 200 / tp 2 = 100 -> 200 B
    assert parallel.touched_rank_weight_bytes(200.0, 800.0, 4, 1, 1, 2, 2) == pytest.approx(200.0)
    # two tokens: 4 x (1 - (3/4)^2) = 1.75 experts -> 800 x 1.75 / 4 / 2 = 175; + 100 = 275 B
    assert parallel.touched_rank_weight_bytes(200.0, 800.0, 4, 1, 2, 2, 2) == pytest.approx(275.0)
