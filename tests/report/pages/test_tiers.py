"""The tier ladder: fetch against regeneration per tier in both regimes, by hand, and `kvtier tiers`."""

from __future__ import annotations

import json

import pytest

from kvtier.formulas import costs
from kvtier.inputs.assumptions import load_assumptions
from kvtier.report.pages import tiers
from kvtier.scenario import Scenario
from tests.conftest import run_cli, scenario

# ---------------------------------------------------------------------------
# the tier ladder and many models
# ---------------------------------------------------------------------------


def test_tier_ladder_by_hand():
    rows = {r["link"]: r for r in tiers.table(scenario()).to_dict(orient="records")}
    # NVMe Gen4 x4: 60 us + 5,242,880 B / 7e9 B/s = 60 + 748.98 = 808.98 us; 17.9229 ms / 808.98 us = 22.15
    nvme = rows["nvme-gen4-x4"]
    assert nvme["fetch_us"] == pytest.approx(60 + 5_242_880 / 7e9 * 1e6, rel=1e-12)
    assert nvme["ratio_tail"] == pytest.approx(17.922852e-3 / 808.982857e-6, rel=1e-6)
    # CXL 2.0 x16 (PCIe 5.0 PHY, 64 GB/s raw x 128/130 = 63 GB/s net): 0.5 us + 83.22 us = 83.72 us
    assert rows["cxl2-x16"]["fetch_us"] == pytest.approx(0.5 + 5_242_880 / 63e9 * 1e6, rel=1e-12)
    assert all(r["fetch_wins_tail"] for r in rows.values())


def test_interior_tiers_and_capacity_in_both_regimes_by_hand():
    from kvtier.report.pages import capacity, interior

    s = Scenario()
    n = interior.numbers(s)
    # Lone block at 50,000, upstream resident: weights 140e9 B + KV of 50,000 positions x 327,680 B
    # = 16.384e9 B; 156.384e9 B / 2.68e12 B/s = 58.352 ms, memory-bound; / 81.92 us = 712.31.
    assert n["lone_resident_regen_ms"] == pytest.approx(156.384e9 / 2.68e12 * 1e3, rel=1e-12)
    assert n["lone_resident_bound"] == "memory"
    assert n["lone_resident_ratio"] == pytest.approx(156.384e9 / 2.68e12 / 81.92e-6, rel=1e-12)
    # Evicted upstream: 50,016 tokens are one pass, compute-bound, so both regimes give the same 82.25 s.
    assert n["lone_evicted_bound"] == "compute"
    assert n["lone_evicted_regen_s"] == pytest.approx(n["evicted_regen_s"], rel=1e-12)
    # the prose scales the unit: 82.25 s / 60 = 1.37 min in both regimes
    assert n["evicted_regen_time"] == n["lone_evicted_regen_time"] == "1.37 min"
    # The tier ladder: a lone tail block breaks even at 5,242,880 B / 52.2388 ms = 100.36 MB/s.
    t = tiers.numbers(s)
    assert t["lone_break_even_tail_gbps"] == pytest.approx(5_242_880 / (140e9 / 2.68e12) / 1e9, rel=1e-12)
    assert t["lone_n_fetch_wins"] == t["n_links"]
    # Capacity: the last block of a 427,246-token sequence reads KV as large as the weights (2 x 140e9 B,
    # 104.5 ms), but its attention over 427,230 cached positions at 25 % MFU takes longer:
    # (2.24e12 + 2,621,440 x (16 x 427,230 + 136)) / 125e12 = 161.28 ms, so it is compute-bound alone too.
    c = capacity.numbers(s)
    last = 140e9 / 327_680 - 16
    compute = (2.24e12 + 2_621_440 * (16 * last + 16 * 17 / 2)) / 125e12
    assert c["crossover_lone_bound"] == "compute"
    assert c["crossover_lone_ms"] == pytest.approx(compute * 1e3, rel=1e-9)
    assert c["crossover_in_batch_ms"] == pytest.approx(compute * 1e3, rel=1e-9)
    assert "the two regimes meet" in c["crossover_regimes_sentence"]


def test_brackets_are_named_by_the_hardware_they_stand_for():
    from kvtier.report.pages import fetch

    s = Scenario()
    n = fetch.numbers(s)
    # 121 GB/s = 128 GB/s x 242/256: PCIe 6.0 x16 / CXL 3.x x16 after flit overhead
    assert n["bandwidth_optimistic_hardware"] == "PCIe 6.0 x16 or CXL 3.x x16 after line coding and flit overhead"
    # 64 GB/s = 32 GT/s x 16 lanes / 8, raw: PCIe 5.0 x16, CXL 2.0 x16 (and CXL 3.x x8, 64 GT/s x 8 / 8)
    assert n["bandwidth_mid_hardware"] == "the raw rate of PCIe 5.0 x16, CXL 2.0 x16 or CXL 3.x x8"
    # 32 GB/s = 32 GT/s x 8 lanes / 8, raw: CXL 2.0 x8, the shipping expanders' interface: the realistic case
    assert n["bandwidth_pessimistic_hardware"] == "the raw rate of CXL 2.0 x8"
    assert "realistic case" in n["realistic_note"]
    # 121 GB/s is above the 64 GB/s raw rate of an H100/H200's PCIe 5.0 x16 host link (55.3 GB/s measured)
    assert (
        "55.3 GB/s" in n["host_link_note"] and "121 GB/s, the optimistic bracket, needs PCIe 6.0" in n["host_link_note"]
    )
    # The names follow the values under a rerun: no preset at 45 GB/s, and no bracket above the host link.
    other = fetch.numbers(scenario(**{"bandwidth.optimistic": "60GB/s", "bandwidth.mid": "45GB/s"}))
    assert other["bandwidth_mid_hardware"] == "no link preset at this bandwidth"
    assert other["host_link_note"].endswith("no bracket here is faster than that link's raw rate.")
    assert fetch.numbers(scenario(**{"bandwidth.pessimistic": "20GB/s"}))["realistic_note"] == ""
    # Basis strings carry no hand-typed derived value of their own bracket
    seed_records = Scenario().assumptions
    for label, value in (("optimistic", "121"), ("mid", "64"), ("pessimistic", "32 GB")):
        assert value not in seed_records[f"bandwidth.{label}"].basis


def test_a_per_layer_layout_pays_the_latency_once_per_chunk():
    from kvtier.report.pages import ratio

    # 5,242,880 B at 64 GB/s = 81.92 µs; 160 chunks (2 x 80 layers) x 9 µs = 1,440 µs more
    assert float(costs.fetch_time_s(5_242_880, 64e9, 9e-6, 160)) == pytest.approx(1_521.92e-6, rel=1e-12)
    s = Scenario(load_assumptions(sets={"fetch_layout": "per-layer", "fetch_latency": "9us"}))
    assert (s.layer_chunks, s.fetch_transfers) == (160, 160)
    assert s.block_latency_s == pytest.approx(1_440e-6, rel=1e-12)
    assert s.illustrative["fetch_s"] == pytest.approx(1_521.92e-6, rel=1e-12)
    # 17.92 ms / 1,521.92 µs = 11.775 inside a batch
    assert s.illustrative["ratio"] == pytest.approx(17.92 / 1.52192, rel=1e-12)
    # contiguous is one transfer whatever the latency; DeepSeek-V3 caches one latent per layer: 61 chunks
    assert Scenario(load_assumptions(sets={"fetch_latency": "9us"})).fetch_transfers == 1
    assert Scenario(load_assumptions(sets={"model": "deepseek-v3"})).layer_chunks == 61
    # the ratio page sets both layouts side by side at the set's latency (here 9 µs, not the fitted one)
    n = ratio.layout_numbers(Scenario(load_assumptions(sets={"fetch_latency": "9us"})))
    assert n["layout_chunks"] == 160
    assert n["layout_contiguous_us"] == pytest.approx(81.92 + 9, rel=1e-12)
    assert n["layout_per_layer_us"] == pytest.approx(1_521.92, rel=1e-12)
    assert n["layout_ratio_per_layer"] == pytest.approx(17.92e-3 / 1_521.92e-6, rel=1e-12)
    assert "this set's 9 µs fetch latency" in n["layout_sentence"]


def test_compare_and_the_tier_ladder_count_the_transfers():
    from kvtier.report.pages import tiers

    s = Scenario(load_assumptions(sets={"fetch_layout": "per-layer"}))
    df = tiers.table(s).set_index("link")
    # PCIe 5.0 x16: 0.5 µs per transfer x 160 = 80 µs; + 5,242,880 B / 63e9 B/s = 83.22 µs -> 163.22 µs
    assert df.loc["pcie5-x16", "transfers"] == 160
    assert df.loc["pcie5-x16", "fetch_us"] == pytest.approx(80 + 5_242_880 / 63e9 * 1e6, rel=1e-12)
    proc = run_cli("compare", "--layout", "per-layer", "--latency", "9us", "--json")
    out = json.loads(proc.stdout)
    assert out["fetch_transfers"] == 160 and out["fetch_time_s"] == pytest.approx(1_521.92e-6, rel=1e-12)
