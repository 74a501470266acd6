"""One deployment resolved once: fetch per tier and layout, ratios per regime, break-evens, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.deployment import Deployment
from kvtier.errors import KvtierError
from kvtier.formulas import tiering
from kvtier.inputs.assumptions import load_assumptions
from kvtier.scenario import Scenario

MIB5 = 5 * 2**20  # 5,242,880 B: a 16-token Llama-3-70B block (16 x 327,680 B)


def _hand() -> Deployment:
    """Two tiers with round numbers: 7 GB/s at 60 us a transfer (an NVMe drive), 63 GB/s at 9 us (host DRAM)."""
    block = tiering.Block(tokens=16, block_bytes=MIB5, transfers=1, regen_s={"lone": 52e-3, "batch": 18e-3})
    tiers = tiering.Tiers(("nvme", "host"), np.array([7e9, 63e9]), np.array([60e-6, 9e-6]))
    # one accelerator with its own link: the bytes over the link are the whole block
    return Deployment(Scenario(), block, tiers, {"contiguous": 1, "per-layer": 160}, MIB5)


def test_fetch_and_ratio_per_layout_and_regime_by_hand():
    d = _hand()
    # NVMe contiguous: 60 us + 5,242,880 / 7e9 = 60 + 748.983 = 808.983 us; per layer: 160 x 60 + 748.983 = 10,348.98 us
    assert d.fetch_s("contiguous")[0] == pytest.approx(808.983e-6, rel=1e-6)
    assert d.fetch_s("per-layer")[0] == pytest.approx(10_348.983e-6, rel=1e-6)
    # host per layer: 160 x 9 + 83.22 = 1,523.22 us; in a batch 18 ms / 1,523.22 us = 11.817
    assert d.ratio("batch", "per-layer")[1] == pytest.approx(18e-3 / 1_523.2203e-6, rel=1e-6)
    # NVMe per layer in a batch: 18 / 10.349 = 1.739 (wins); alone 52 / 10.349 = 5.02
    assert d.ratio("batch", "per-layer")[0] == pytest.approx(1.7393, rel=1e-4)
    assert d.fetch_wins("batch", "per-layer").tolist() == [True, True]
    assert d.n_fetch_wins("lone", "contiguous") == 2


def test_break_evens_by_hand():
    d = _hand()
    # bandwidth at which NVMe per layer in a batch breaks even: 5,242,880 B / (18,000 - 9,600 us) = 624.15 MB/s
    assert d.break_even_bandwidth("batch", "per-layer")[0] == pytest.approx(MIB5 / 8.4e-3, rel=1e-9)
    # latency per transfer at which it breaks even: (18,000 - 748.983) / 160 = 107.819 us
    assert d.break_even_latency("batch", "per-layer")[0] == pytest.approx(107.8186e-6, rel=1e-5)
    # transfers it may take: (18,000 - 748.983) / 60 = 287.52; host: (18,000 - 83.22) / 9 = 1,990.8
    assert d.break_even_transfers("batch") == pytest.approx([287.517, 1_990.75], rel=1e-5)
    # a regeneration shorter than the bytes alone: no bandwidth/latency/count rescues the fetch
    slow_block = tiering.Block(16, MIB5, 1, {"lone": 0.5e-3, "batch": 0.5e-3})
    slow = Deployment(d.scenario, slow_block, d.tiers, d.transfers, MIB5)
    assert slow.break_even_latency("batch", "contiguous")[0] == 0.0  # 500 us < 749 us of bytes
    assert slow.break_even_transfers("batch")[0] == 0.0
    assert np.isinf(slow.break_even_bandwidth("batch", "per-layer")[0])  # 160 x 60 us > 500 us


def test_a_scenario_resolves_once_without_hbm():
    s = Scenario()
    d = Deployment.of(s)
    assert Deployment.of(s) is d
    assert "hbm" not in d.tiers.names and "pcie5-x16" in d.tiers.names
    assert d.transfers == {"contiguous": 1, "per-layer": 160}  # 80 layers x (K, V)
    assert d.block.block_bytes == MIB5
    # the seed's tail block inside a batch: 2 x 70e9 x 16 = 2.24e12 FLOP of parameters plus attention over its own
    # 16 x 17 / 2 = 136 positions at 2,621,440 FLOP each = 3.565e8 FLOP; at 25 % of 500 TFLOP/s: 17.92285 ms
    assert d.regen_s("batch") == pytest.approx((2.24e12 + 136 * 2_621_440) / 1.25e14, rel=1e-12)
    assert Deployment.of(Scenario()) is not d


def test_the_best_tier_is_the_largest_saving_its_device_can_carry():
    d = Deployment.of(Scenario())
    best, feasible = d.best_tier()
    plan = {t.tier: t for t in d.plan()}
    # NVMe would admit 9.17 GB/s of missed blocks against a 5.6 GB/s drive (164 %): it cannot carry the tier;
    # of the other two, host DRAM saves more (56.23 against CXL's 55.78 USD/h): cheaper to hold and to fetch
    assert plan["nvme-gen4-x4"].write_busy > 1 and feasible
    assert best.tier == "pcie5-x16"
    assert best.saved_usd_per_s > plan["cxl2-x8"].saved_usd_per_s


# The model placed across accelerators: Scenario and Deployment under parallel.*

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
    # 17.92 ms at 25 % of 500 TFLOP/s: (2 x 70e9 x 16 + 356,515,840 FLOP of the block's attention over itself)
    # / (500e12 x 0.25), unchanged by a placement of one
    assert s.illustrative["regen_s"] == pytest.approx((2 * 70e9 * 16 + 356_515_840) / (500e12 * 0.25), rel=1e-15)
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
    # tp 8: (2 x 70e9 x 16 + 356,515,840) / (8 x 500e12 x 0.25) = 2.2404 ms, plus the all-reduce bytes, latency shared:
    # 160 all-reduces x 2 x 7/8 x (16 x 8192 x 2 B) / 450e9 = 160 x 1.01945 us = 0.16311 ms
    s = Scenario().with_placement(tp=8)
    comm = 160 * 1.75 * 16 * 8192 * 2 / 450e9
    assert s.illustrative["regen_s"] == pytest.approx(
        (2 * 70e9 * 16 + 356_515_840) / (8 * 500e12 * 0.25) + comm, rel=1e-12
    )


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
    s = _s(model="deepseek-v3", weight_dtype="bf16", **H200)
    dense, routed = s.weight_split()
    assert dense + routed == pytest.approx(s.weight_bytes, rel=1e-15)
    assert float(s.touched_weight_bytes(16)) == pytest.approx(dense + routed * 101.96216 / 256, rel=1e-6)
    assert float(s.touched_weight_bytes(16)) / 1e9 == pytest.approx(555.1255, rel=1e-6)
    # ep 8 spreads the experts over 8 GPUs: each reads dense + routed x 101.96 / 256 / 8
    e = s.with_placement(ep=8)
    assert float(e.touched_weight_bytes(16)) == pytest.approx(dense + routed * 101.96216 / 256 / 8, rel=1e-6)
    # the model alone brings its published fp8 (quantization_config fp8 e4m3): 1 B a weight, half of every term,
    # 17.118 + 260.445 = 277.563 GB read by the same block
    fp8 = _s(model="deepseek-v3", **H200)
    assert fp8.weight_dtype == "fp8" and fp8.weight_bytes == 671_026_419_200
    assert float(fp8.touched_weight_bytes(16)) / 1e9 == pytest.approx(555.1255 / 2, rel=1e-6)


def test_placements_that_cannot_exist_are_refused():
    with pytest.raises(KvtierError, match="'parallel.tp' \\(3\\) and 'parallel.ep' \\(2\\)"):
        _ = Scenario().with_placement(tp=3).with_placement(ep=2).placement
    with pytest.raises(KvtierError, match="'parallel.ep' \\(2\\) needs an MoE model"):
        _ = Scenario().with_placement(ep=2).placement
    with pytest.raises(KvtierError, match="'parallel.pp' \\(81\\) exceeds the 80 layers"):
        _ = Scenario().with_placement(pp=81).placement


def test_a_placement_that_does_not_fit_is_refused_naming_the_keys():
    # Llama-3-70B exact count 70,553,706,496 x 2 B = 141.1 GB, plus one sequence of its 8,192-token window (context.long
    # is 131,072) x 327,680 B = 2.68 GB of KV: 143.79 GB on one 141 GB H200 does not fit; tp 2 holds 71.9 GB and does
    s = _s(param_count="null", parallel__hbm_capacity="141GB")
    assert s.rank_memory_bytes() / 1e9 == pytest.approx(141.1074 + 2.6844, rel=1e-5)
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
    assert _s(model="deepseek-v3", weight_dtype="bf16").min_accelerators(141e9) == (16, 8, 2)
    # in fp8 its 671 GB fit 8 (83.9 GB + 9.2 GB of latent each): the dtype it publishes, so what the model
    # alone brings (weight_dtype follows the model to auto), and what auto and fp8 give
    assert _s(model="deepseek-v3", weight_dtype="fp8").min_accelerators(141e9) == (8, 8, 1)
    assert _s(model="deepseek-v3").min_accelerators(141e9) == (8, 8, 1)
    assert _s(model="deepseek-v3", weight_dtype="auto").min_accelerators(141e9) == (8, 8, 1)
    with pytest.raises(KvtierError, match="parallel.hbm_capacity"):
        Scenario().min_accelerators()


def test_every_fetch_takes_the_transfer_model():
    """compare's fetch (Scenario.fetch_s), the tier table's (Deployment) and the break-evens agree under a floor
    and a pageable link with its overhead per transfer: one transfer model everywhere."""
    sets = {
        "fetch.min_transfer_time": "2 ms",
        "fetch.host_memory": "pageable",
        "fetch.pageable_efficiency": "40 %",
        "fetch.pageable_overhead": "20 us",
    }
    s = Scenario(load_assumptions(None, sets))
    d = Deployment.of(s)
    layout = str(s.assumptions.value("fetch_layout"))
    fetch = d.fetch_s(layout)
    for i in range(len(d.tiers.names)):
        bw, lat = float(d.tiers.bandwidth_bytes_per_s[i]), float(d.tiers.latency_s[i])
        # compare's fetch at the tier's bandwidth and latency: max(2 ms, n x (lat + 20 us) + bytes / (0.4 bw))
        n = s.fetch_transfers
        assert fetch[i] == pytest.approx(max(2e-3, n * (lat + 20e-6) + s.fetch_bytes / (0.4 * bw)), rel=1e-12)
        assert fetch[i] == pytest.approx(float(s.link_fetch_s(s.fetch_bytes, bw, lat, n)), rel=1e-12)
    # at the break-even bandwidth a fetch takes exactly the regeneration, where one exists
    regen = d.regen_s("batch")
    be = d.break_even_bandwidth("batch", layout)
    for i in np.flatnonzero(np.isfinite(be)):
        t = float(s.link_fetch_s(s.fetch_bytes, be[i], d.tiers.latency_s[i], s.fetch_transfers))
        assert t == pytest.approx(regen, rel=1e-9)
    # the 2 ms floor lies below the batch regeneration, so a break-even bandwidth exists
    assert regen > 2e-3
    # at the break-even latency (the overhead taken off) and transfers (each paying latency + 20 us) too
    lat_be = d.break_even_latency("batch", layout)
    n_be = d.break_even_transfers("batch")
    for i in range(len(d.tiers.names)):
        bw = float(d.tiers.bandwidth_bytes_per_s[i])
        if lat_be[i] > 0:
            t = float(s.link_fetch_s(s.fetch_bytes, bw, lat_be[i], s.fetch_transfers))
            assert t == pytest.approx(regen, rel=1e-9)
        if 0 < n_be[i] < np.inf:
            t = float(s.link_fetch_s(s.fetch_bytes, bw, d.tiers.latency_s[i], n_be[i]))
            assert t == pytest.approx(regen, rel=1e-9)
    assert np.any(lat_be > 0) and np.any((n_be > 0) & np.isfinite(n_be))
