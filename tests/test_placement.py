"""The model placed across accelerators: Scenario and Deployment under parallel.* (issue 26 items 1-3)."""

from __future__ import annotations

import pytest

from kvtier.deployment import Deployment
from kvtier.errors import KvtierError
from kvtier.inputs.assumptions import load_assumptions
from kvtier.scenario import Scenario

H200 = {"regen.mem_bandwidth": "4.8TB/s", "peak_flops": "989TFLOP/s"}


def _s(**values: str) -> Scenario:
    return Scenario(load_assumptions(None, {k.replace("__", "."): v for k, v in values.items()}))


def test_one_accelerator_changes_nothing():
    # the seed: tp = pp = ep = gpus_per_link = 1, so the shard is the block and the link carries it alone
    s = Scenario()
    assert (s.placement.tp, s.placement.pp, s.placement.ep, s.placement.gpus_per_link) == (1, 1, 1, 1)
    assert s.shard_share == 1.0 and s.fetch_bytes == s.block_bytes == 5_242_880.0
    assert s.compute_share == 1.0
    assert float(s.collectives_s(16)) == 0.0
    # the chapter's 17.92 ms at 25 % of 500 TFLOP/s: 2 x 70e9 x 16 / (500e12 x 0.25), unchanged
    assert s.illustrative["regen_s"] == 2 * 70e9 * 16 / (500e12 * 0.25)
    assert s.illustrative["fetch_s"] == 5_242_880 / 64e9


def test_tensor_parallel_splits_the_kv_heads_and_replicates_past_them():
    # Llama-3-70B: 8 KV heads; tp 4 -> each GPU 2 heads = 1/4 of 5 MiB = 1,310,720 B
    s = Scenario().with_placement(tp=4)
    assert s.shard_bytes == 1_310_720.0
    # tp 16 (two nodes' worth): 1 head each, 1/8 of the block, not 1/16: replicated as vLLM does
    assert Scenario().with_placement(tp=16).shard_bytes == 655_360.0
    # the fetch at 64 GB/s follows: 1,310,720 / 64e9 = 20.48 us
    assert s.illustrative["fetch_s"] == pytest.approx(20.48e-6, rel=1e-12)


def test_pipeline_stages_hold_their_layers_and_their_chunks():
    # 80 layers over pp 3: the largest stage holds 27 -> share 27/80; per-layer chunks 27 x 2 = 54
    s = Scenario().with_placement(pp=3)
    assert s.shard_share == pytest.approx(27 / 80, rel=1e-15)
    assert s.layer_chunks == 54


def test_mla_latent_is_replicated_on_every_tensor_parallel_rank():
    # DeepSeek-V3: 61 layers x (512 + 64) x 2 B = 70,272 B/token; x 16 = 1,124,352 B whatever tp is
    s = _s(model="deepseek-v3").with_placement(tp=8)
    assert s.shard_bytes == 1_124_352.0


def test_link_sharing_doubles_the_bytes_over_one_link():
    # tp 8, two GPUs behind one PCIe switch: 655,360 B each, 1,310,720 B over the switch's uplink
    s = Scenario().with_placement(tp=8, gpus_per_link=2)
    assert s.fetch_bytes == 1_310_720.0
    d = Deployment.of(s)
    # PCIe 5.0 x16 net 63 GB/s, host_link latency from the seed: fetch = latency + 1,310,720 / 63e9
    i = d.tiers.names.index("pcie5-x16")
    latency = Scenario().v("tier_latency.host_link")
    assert d.fetch_s("contiguous")[i] == pytest.approx(latency + 1_310_720 / 63e9, rel=1e-12)


def test_in_batch_regeneration_spreads_over_every_accelerator():
    # tp 8: 2 x 70e9 x 16 / (8 x 500e12 x 0.25) = 2.24 ms, plus the block's all-reduce bytes, latency shared:
    # 160 all-reduces x 2 x 7/8 x (16 x 8192 x 2 B) / 450e9 = 160 x 1.01945 us = 0.16311 ms
    s = Scenario().with_placement(tp=8)
    comm = 160 * 1.75 * 16 * 8192 * 2 / 450e9
    assert s.illustrative["regen_s"] == pytest.approx(2 * 70e9 * 16 / (8 * 500e12 * 0.25) + comm, rel=1e-12)


def test_lone_block_pays_the_collective_latency_floor():
    # tp 8, lone block: every all-reduce pays 10 us: 160 x (10 us + 1.01945 us) = 1.7631 ms
    s = _s(**H200).with_placement(tp=8)
    assert float(s.collectives_s(16)) == pytest.approx(160 * (10e-6 + 1.75 * 262_144 / 450e9), rel=1e-12)
    # memory side: 140e9 B / 8 read at 4.8 TB/s x 80 % = 4.557 ms, above compute; lone = 4.557 + 1.763 ms
    lone = float(s.lone_regen_s(0, "resident", 0.25))
    assert lone == pytest.approx(140e9 / 8 / (4.8e12 * 0.8) + 1.76311e-3, rel=1e-4)


def test_moe_lone_block_reads_only_the_experts_its_tokens_touch():
    # DeepSeek-V3 bf16 on one accelerator: dense 34.235 GB + routed 1,307.818 GB x 101.962 / 256
    # = 34.235 + 520.890 = 555.126 GB read by a lone 16-token block (not all 1,342 GB)
    s = _s(model="deepseek-v3", **H200)
    dense, routed = s.weight_split()
    assert dense + routed == pytest.approx(s.weight_bytes, rel=1e-15)
    assert float(s.touched_weight_bytes(16)) == pytest.approx(dense + routed * 101.96216 / 256, rel=1e-6)
    assert float(s.touched_weight_bytes(16)) / 1e9 == pytest.approx(555.1255, rel=1e-6)
    # ep 8 spreads the experts over 8 GPUs: each reads dense + routed x 101.96 / 256 / 8
    e = s.with_placement(ep=8)
    assert float(e.touched_weight_bytes(16)) == pytest.approx(dense + routed * 101.96216 / 256 / 8, rel=1e-6)


def test_placements_that_cannot_exist_are_refused():
    with pytest.raises(KvtierError, match="'parallel.tp' \\(3\\) and 'parallel.ep' \\(2\\)"):
        _ = Scenario().with_placement(tp=3).with_placement(ep=2).placement
    with pytest.raises(KvtierError, match="'parallel.ep' \\(2\\) needs an MoE model"):
        _ = Scenario().with_placement(ep=2).placement
    with pytest.raises(KvtierError, match="'parallel.pp' \\(81\\) exceeds the 80 layers"):
        _ = Scenario().with_placement(pp=81).placement


def test_a_placement_that_does_not_fit_is_refused_naming_the_keys():
    # Llama-3-70B exact count 70,553,706,496 x 2 B = 141.1 GB, plus 131,072 x 327,680 B = 42.9 GB of KV:
    # 184.06 GB on one 141 GB H200 does not fit; tp 2 holds 70.55 + 21.47 = 92.03 GB and does
    s = _s(param_count="null", parallel__hbm_capacity="141GB")
    assert s.rank_memory_bytes() / 1e9 == pytest.approx(141.1074 + 42.9497, rel=1e-5)
    with pytest.raises(KvtierError, match="'parallel.hbm_capacity' \\(141.0 GB\\).*at least 2 accelerators"):
        s.check_fit()
    with pytest.raises(KvtierError, match="parallel.tp"):
        Deployment.of(s)
    s.with_placement(tp=2).check_fit()  # fits: no error
    # the seed leaves the capacity null: nothing is checked
    Scenario().check_fit()


def test_min_accelerators():
    # DeepSeek-V3 in bf16 (1,342 GB) on 141 GB H200s: 8 hold 167.8 GB of weights each, too much;
    # 16 (tp 8, pp 2) hold 83.9 GB + the latent of one 128K sequence over 31 of 61 layers (4.7 GB)
    assert _s(model="deepseek-v3").min_accelerators(141e9) == (16, 8, 2)
    # in fp8 its 671 GB fit 8 (83.9 GB + 9.2 GB of latent each)
    assert _s(model="deepseek-v3", weight_dtype="fp8").min_accelerators(141e9) == (8, 8, 1)
    with pytest.raises(KvtierError, match="parallel.hbm_capacity"):
        Scenario().min_accelerators()
