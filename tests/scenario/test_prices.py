"""kvtier.scenario.prices: the tier-pricing model's inputs, checked by hand on the seed set.

The seed set: Llama-3-70B (80 layers, 8 KV heads of 128, bf16), 16-token blocks, 70e9 parameters,
500 TFLOP/s dense peak, brackets of 121/64/32 GB/s and 50/40/25 % MFU, no per-transfer latency.
"""

from __future__ import annotations

import pytest

from kvtier import Scenario, load_assumptions


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
