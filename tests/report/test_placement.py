"""The serving-across-accelerators tables (kvtier.report.placement) a book page glues."""

from __future__ import annotations

import pytest

from kvtier.inputs.assumptions import load_assumptions
from kvtier.report import placement
from kvtier.scenario import Scenario

H200 = {"regen.mem_bandwidth": "4.8TB/s", "peak_flops": "989TFLOP/s"}


def test_ratio_table_both_regimes_by_tp():
    s = Scenario(load_assumptions(None, {**H200, "parallel.hbm_capacity": "141GB", "param_count": "null"}))
    df = placement.ratio_table(s).set_index("tp")
    assert list(df.index) == [1, 2, 4, 8]
    # the shard: 5,120 KiB over 8 KV heads -> 2,560 / 1,280 / 640 KiB; fetch at 64 GB/s: 81.92 / 40.96 / ... us
    assert df["shard_KiB"].tolist() == [5120.0, 2560.0, 1280.0, 640.0]
    assert df.loc[8, "fetch_us"] == pytest.approx(10.24, rel=1e-12)
    # one GPU has no collectives; tp 8's lone block pays 160 all-reduces of 11.0194 us = 1.7631 ms
    assert df.loc[1, "lone_collectives_ms"] == 0.0
    assert df.loc[8, "lone_collectives_ms"] == pytest.approx(1.76311, rel=1e-5)
    # lone tp 1: 141.107e9 B / 3.84e12 B/s = 36.747 ms (memory-bound); ratio 36.747 / 0.08192 = 448.57
    assert df.loc[1, "lone_regen_ms"] == pytest.approx(36.7467, rel=1e-5)
    assert df.loc[1, "lone_ratio"] == pytest.approx(448.568, rel=1e-5)
    # weights 141.1 GB + 2.68 GB of KV at its 8,192-token window do not fit one 141 GB H200; tp 2 (71.9 GB) does
    assert df["fits"].tolist() == [False, True, True, True]
    assert df.loc[2, "rank_memory_GB"] == pytest.approx((141.1074 + 2.6844) / 2, rel=1e-5)


def test_link_sharing_halves_the_bandwidth_per_gpu():
    df = placement.link_sharing_table(Scenario(), (1, 2)).set_index(["tier", "gpus_per_link"])
    # PCIe 5.0 x16 net 63 GB/s: 31.5 GB/s each for two GPUs; the bytes over the link double
    assert df.loc[("pcie5-x16", 2), "bandwidth_per_gpu_GBps"] == 31.5
    one, two = df.loc[("pcie5-x16", 1), "fetch_us"], df.loc[("pcie5-x16", 2), "fetch_us"]
    latency_us = Scenario().v("tier_latency.host_link") * 1e6
    assert two - latency_us == pytest.approx(2 * (one - latency_us), rel=1e-12)


def test_moe_table_deepseek():
    s = Scenario(load_assumptions(None, {**H200, "weight_dtype": "fp8"}))
    df = placement.moe_table(s).set_index(["tp", "pp", "ep"])
    # 16 tokens touch 256 (1 - (1 - 8/256)^16) = 101.96 experts per MoE layer
    assert df["experts_touched"].iloc[0] == pytest.approx(101.962, abs=1e-3)
    # tp 8, fp8: dense 17.12 GB / 8 + routed 653.9 GB x 101.96 / 256 / 8 = 2.140 + 32.555 = 34.695 GB
    assert df.loc[(8, 1, 1), "lone_weights_read_GB"] == pytest.approx(34.695, rel=1e-4)
    # two pipeline stages: each GPU caches 31 of 61 layers' latent: 0.5082 of the block
    assert df.loc[(8, 2, 8), "shard_share"] == pytest.approx(31 / 61, rel=1e-12)
    assert df.loc[(8, 2, 8), "accelerators"] == 16


def test_min_accelerators_table():
    df = placement.min_accelerators_table(Scenario(), ["llama-3.1-405b", "deepseek-v3"], 141e9).set_index("model")
    # 405B bf16: 811.7 GB / 8 = 101.46 GB + 131,072 x 516,096 B / 8 = 8.46 GB -> 109.9 GB fits 141 GB
    # (4 GPUs hold 202.9 GB of weights each: no); DeepSeek-V3 in its published fp8 (a new model brings its own
    # weight dtype): 671,026,419,200 params x 1 B = 671.0 GB / 8 = 83.88 GB + its whole MLA latent on every rank,
    # 131,072 x 70,272 B = 9.21 GB -> 93.09 GB fits 141 GB at tp 8 (4 GPUs: 167.8 GB of weights each, no)
    assert df.loc["llama-3.1-405b", "accelerators"] == 8
    assert df.loc["deepseek-v3", "weights_GB"] == pytest.approx(671.0264192, rel=1e-12)
    assert (df.loc["deepseek-v3", "accelerators"], df.loc["deepseek-v3", "tp"], df.loc["deepseek-v3", "pp"]) == (
        8,
        8,
        1,
    )
