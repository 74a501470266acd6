"""kvtier.scenario: an assumption set resolved into the report's numbers, checked by hand on the seed set.

The seed set: Llama-3-70B (80 layers, 8 KV heads of 128, bf16), 16-token blocks, 70e9 parameters,
500 TFLOP/s dense peak, brackets of 121/64/32 GB/s and 50/40/25 % MFU, no per-transfer latency.
"""

from __future__ import annotations

import pytest

from kvtier import Scenario, load_assumptions


def test_the_seed_block_by_hand(seed_scenario):
    s = seed_scenario
    # K and V: 2 x 80 layers x 8 heads x 128 dims x 2 B = 327,680 B per token
    assert s.kv_bytes_per_token == 327_680
    assert s.block_tokens == 16
    assert s.block_bytes == 5_242_880  # 16 x 327,680 B = 5 MiB
    assert s.params == 70e9 and s.params_source == "assumption"
    assert s.weight_bytes == 140e9  # 70e9 parameters x 2 B (bf16)


def test_the_illustrative_point_by_hand(seed_scenario):
    point = seed_scenario.illustrative
    assert (point["bandwidth_label"], point["mfu_label"]) == ("mid", "conservative")
    assert point["fetch_s"] == pytest.approx(81.92e-6, rel=1e-12)  # 5,242,880 B / 64e9 B/s
    # 2 FLOP x 70e9 x 16 tokens = 2.24e12 FLOP at 25 % of 500e12 FLOP/s = 125e12 FLOP/s
    assert seed_scenario.block_flops == pytest.approx(2.24e12, rel=1e-12)
    assert point["regen_s"] == pytest.approx(17.92e-3, rel=1e-12)
    assert point["ratio"] == pytest.approx(218.75, rel=1e-12)  # 17.92 ms / 81.92 µs


def test_the_brackets_by_hand(seed_scenario):
    fetch = seed_scenario.fetch_by_label()
    assert fetch["optimistic"] == pytest.approx(5_242_880 / 121e9, rel=1e-12)  # 43.33 µs
    assert fetch["pessimistic"] == pytest.approx(163.84e-6, rel=1e-12)  # 5,242,880 / 32e9
    regen = seed_scenario.regen_by_label()
    assert regen["optimistic"] == pytest.approx(8.96e-3, rel=1e-12)  # 2.24e12 / (0.5 x 500e12)
    assert regen["typical"] == pytest.approx(11.2e-3, rel=1e-12)  # 2.24e12 / (0.4 x 500e12)


def test_a_per_layer_layout_pays_one_latency_per_chunk():
    s = Scenario(load_assumptions(sets={"fetch_layout": "per-layer", "fetch_latency": "5us"}))
    assert s.layer_chunks == 160  # 80 layers x (K, V)
    assert s.fetch_transfers == 160
    assert s.block_latency_s == pytest.approx(800e-6, rel=1e-12)  # 160 x 5 µs
    # 800 µs + 81.92 µs over the mid link
    assert float(s.fetch_s(64e9)) == pytest.approx(881.92e-6, rel=1e-12)


def test_transfers_by_layout_whatever_the_set_says():
    s = Scenario(load_assumptions())  # the seed set is contiguous
    assert (s.transfers("contiguous"), s.transfers("per-layer")) == (1, 160)  # 80 layers x (K, V)
    mla = Scenario(load_assumptions(sets={"model": "deepseek-v3", "param_count": "null"}))
    assert mla.transfers("per-layer") == 61  # 61 layers, one latent each under MLA
    with pytest.raises(ValueError, match="paged"):
        s.transfers("paged")


def test_a_contiguous_block_is_one_transfer_whatever_the_model():
    s = Scenario(load_assumptions(sets={"fetch_latency": "5us"}))
    assert s.fetch_transfers == 1
    assert float(s.fetch_s(64e9)) == pytest.approx(86.92e-6, rel=1e-12)  # 5 µs + 81.92 µs


def test_without_param_count_the_config_counts_and_an_moe_activates_a_share():
    s = Scenario(load_assumptions(sets={"model": "mixtral-8x7b", "param_count": "null"}))
    total, active = s.model.param_counts()
    assert s.params_source == "config" and s.params == total
    assert s.active_params == active < total  # two experts of eight per token
    assert 0.25 < active / total < 0.3  # about 12.9e9 of 46.7e9


def test_the_kv_share_and_crossover(seed_scenario):
    # 427,246 tokens x 327,680 B = 140e9 B: the KV cache equals the weights near 427K tokens
    assert seed_scenario.crossover_tokens == pytest.approx(140e9 / 327_680, rel=1e-9)
    assert float(seed_scenario.kv_bytes(1000)) == 327_680_000


# ---- the tier-pricing model's inputs -----------------------------------------------------


def test_the_tier_prices_in_si_units(seed_scenario):
    p = seed_scenario.tier_prices()
    # 3 USD/h = 8.3333e-4 USD/s; 10 and 12 USD/GB = 1e-8 and 1.2e-8 USD/B; 5 y = 157,788,000 s;
    # 0.09 USD/kWh = 2.5e-8 USD/J; 0.15 W/GB = 1.5e-10 W/B
    assert p.accelerator_usd_per_s == pytest.approx(3 / 3600, rel=1e-12)
    assert (p.dram_usd_per_byte, p.cxl_usd_per_byte) == pytest.approx((1e-8, 1.2e-8), rel=1e-12)
    assert p.amortisation_s == 5 * 365.25 * 86400 and p.usd_per_j == pytest.approx(2.5e-8, rel=1e-12)
    assert (p.dram_w_per_byte, p.power_lone_w, p.power_batch_w) == pytest.approx((1.5e-10, 467.0, 700.0))
    # an override by assumption key, in SI units; a key the model does not read is refused
    assert seed_scenario.tier_prices({"cost.cxl_gb": 5e-9}).cxl_usd_per_byte == 5e-9
    with pytest.raises(ValueError, match="cost.cxl"):
        seed_scenario.tier_prices({"cost.cxl": 5e-9})


def test_the_price_ranges_and_the_board_power_s(seed_scenario):
    ranges = seed_scenario.price_ranges(("cost.cxl_gb", "energy.power_lone"))
    # CXL memory from 5 to 25 USD/GB; the board power from the lone block's 467 W to the batch's 700 W
    assert ranges["cost.cxl_gb"] == pytest.approx((5e-9, 25e-9), rel=1e-12)
    assert ranges["energy.power_lone"] == (467.0, 700.0)
    low, high = seed_scenario.price_ends(("cost.cxl_gb",))["cost.cxl_gb"]
    assert (low.cxl_usd_per_byte, high.cxl_usd_per_byte) == pytest.approx((5e-9, 25e-9), rel=1e-12)
    assert low.dram_usd_per_byte == high.dram_usd_per_byte == pytest.approx(1e-8, rel=1e-12)


def test_the_blocks_the_tier_model_prices(seed_scenario):
    small, large = seed_scenario.cost_blocks
    # 16 tokens x 327,680 B = 5 MiB; alone, 140e9 B of weights at 3.35e12 B/s x 0.8 = 52.2388 ms
    assert (small.tokens, small.block_bytes, small.transfers) == (16, 5_242_880, 1)
    assert small.regen_s["lone"] == pytest.approx(140e9 / (3.35e12 * 0.8), rel=1e-12)
    # inside a batch at the illustrative 25 %: 2.24e12 FLOP and the block's attention over itself, 17.9229 ms
    assert small.regen_s["batch"] == pytest.approx(17.9229e-3, rel=1e-5)
    # 512 tokens (cost.large_block_tokens): 160 MiB, compute-bound alone too: the same time in both regimes
    assert (large.tokens, large.block_bytes) == (512, 512 * 327_680)
    assert large.regen_s["lone"] == large.regen_s["batch"]
    # the trace's mix prices workload.block_tokens = 512-token blocks; DeepSeek-V3's cache 70,272 B a token
    assert seed_scenario.mix_block().block_bytes == 512 * 327_680
    assert seed_scenario.mix_block("deepseek-v3").block_bytes == 512 * 70_272


def test_every_link_preset_is_a_tier(seed_scenario):
    links = seed_scenario.tier_links
    assert links.names[:3] == ("hbm", "nvlink-c2c", "pcie5-x16") and len(links.names) == 11
    # PCIe 5.0 x16: 63 GB/s net (hardware.yaml), 9.049 us a transfer (tier_latency.host_link: the H200 fit)
    i = links.names.index("pcie5-x16")
    assert (links.bandwidth_bytes_per_s[i], links.latency_s[i]) == (63e9, 9.049e-6)


def test_each_tier_pays_the_latency_of_its_link_class():
    s = Scenario(load_assumptions(sets={"tier_latency.host_link": "2us", "tier_latency.nvme": "70us"}))
    lat = dict(zip(s.tier_links.names, s.tier_links.latency_s.tolist(), strict=True))
    # PCIe and CXL share the host link's key, NVMe Gen4 and Gen5 the drive's; the others keep the seed's
    assert lat["pcie5-x16"] == lat["pcie6-x16"] == lat["cxl2-x8"] == lat["cxl3-x16"] == 2e-6
    assert lat["nvme-gen4-x4"] == lat["nvme-gen5-x4"] == 70e-6
    assert (lat["hbm"], lat["nvlink-c2c"], lat["rdma-400g"]) == (0.0, 0.5e-6, 3e-6)
    # the bandwidths stay the presets': 63 GB/s net for PCIe 5.0 x16
    assert s.tier_links.bandwidth_bytes_per_s[s.tier_links.names.index("pcie5-x16")] == 63e9


def test_a_per_layer_fetch_over_the_measured_host_link_by_hand():
    from tests.conftest import ROOT

    m = Scenario(load_assumptions(ROOT / "kvtier" / "data" / "h200-measured.yaml", {"fetch_layout": "per-layer"}))
    tiers = m.tier_links
    i = tiers.names.index("pcie5-x16")
    # the measured set states the fit: 9.049 us a copy, the same as its fetch_latency
    assert tiers.latency_s[i] == m.v("fetch_latency") == 9.049e-6
    # 160 layer chunks (2 x 80 layers) x 9.049 us = 1,447.84 us; + 5,242,880 B / 63e9 B/s = 83.22 us
    from kvtier.formulas import tiering

    fetch = tiering.fetch_s(tiers.pick(["pcie5-x16"]), m.block_bytes, m.fetch_transfers)
    assert m.fetch_transfers * tiers.latency_s[i] == pytest.approx(1_447.84e-6, rel=1e-12)
    assert float(fetch[0]) == pytest.approx(1_447.84e-6 + 5_242_880 / 63e9, rel=1e-12)
