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
    # NVMe Gen4 x4, the seed's contiguous layout: 92 us (tier_latency.nvme, datasheet QD1 read)
    # + 5,242,880 B / 7e9 B/s = 92 + 748.98 = 840.98 us; 17.9229 ms / 840.98 us = 21.31 inside a batch
    nvme = rows["nvme-gen4-x4"]
    assert nvme["fetch_us"] == pytest.approx(92 + 5_242_880 / 7e9 * 1e6, rel=1e-12)
    assert nvme["ratio_tail"] == pytest.approx(17.922852e-3 / 840.982857e-6, rel=1e-6)
    assert (nvme["latency_key"], nvme["latency_provenance"]) == ("tier_latency.nvme", "published-spec")
    # CXL 2.0 x16 (PCIe 5.0 PHY, 64 GB/s raw x 128/130 = 63 GB/s net): 9.049 us (tier_latency.host_link,
    # the H200 fit) + 83.22 us = 92.27 us
    assert rows["cxl2-x16"]["fetch_us"] == pytest.approx(9.049 + 5_242_880 / 63e9 * 1e6, rel=1e-12)
    assert all(r["fetch_wins_tail"] for r in rows.values())


def test_the_tier_ladder_shows_both_layouts_in_both_regimes_by_hand():
    s = scenario()
    rows = {r["link"]: r for r in tiers.table(s).to_dict(orient="records")}
    lone_tail = 140e9 / 2.68e12  # a lone tail block streams the weights at 3.35 TB/s x 80 %: 52.2388 ms
    batch_tail = 17.922852e-3  # inside a batch: 2.24e12 FLOP (and its own attention) at 125 TFLOP/s
    # NVMe Gen4 x4 per layer chunk: 160 x 92 us = 14,720 us + 748.98 us = 15,468.98 us
    nvme = rows["nvme-gen4-x4"]
    assert nvme["transfers_per_layer"] == 160 and nvme["transfers_contiguous"] == 1
    assert nvme["fetch_us_per_layer"] == pytest.approx(160 * 92 + 5_242_880 / 7e9 * 1e6, rel=1e-12)
    assert nvme["fetch_us_contiguous"] == pytest.approx(nvme["fetch_us"], rel=1e-12)  # the seed's layout
    # 17.9229 ms / 15.469 ms = 1.159 inside a batch: near break-even; 52.2388 / 15.469 = 3.377 as a lone block
    assert nvme["ratio_tail_per_layer"] == pytest.approx(batch_tail / 15_468.982857e-6, rel=1e-6)
    assert nvme["ratio_tail_per_layer"] == pytest.approx(1.1586, abs=1e-4)
    assert nvme["lone_ratio_tail_per_layer"] == pytest.approx(lone_tail / 15_468.982857e-6, rel=1e-6)
    assert nvme["lone_ratio_tail_contiguous"] == pytest.approx(lone_tail / 840.982857e-6, rel=1e-6)
    # the break-even latency per transfer at 7 GB/s: (17.9229 ms - 748.98 us) / 160 = 107.34 us per layer chunk,
    # 17.9229 ms - 748.98 us = 17.1739 ms as one transfer; lone: (52.2388 ms - 748.98 us) / 160 = 321.81 us
    assert nvme["break_even_latency_tail_us_per_layer"] == pytest.approx(
        (batch_tail - 5_242_880 / 7e9) / 160 * 1e6, rel=1e-6
    )
    assert nvme["break_even_latency_tail_us_contiguous"] == pytest.approx(
        (batch_tail - 5_242_880 / 7e9) * 1e6, rel=1e-6
    )
    assert nvme["lone_break_even_latency_tail_us_per_layer"] == pytest.approx(
        (lone_tail - 5_242_880 / 7e9) / 160 * 1e6, rel=1e-9
    )
    # the break-even bandwidth at 92 us a transfer, per layer: 5,242,880 B / (17.9229 ms - 14.72 ms) = 1.637 GB/s
    assert nvme["break_even_tail_GBps_per_layer"] == pytest.approx(
        5_242_880 / (batch_tail - 160 * 92e-6) / 1e9, rel=1e-6
    )
    # HBM pays no latency: both layouts fetch in 5,242,880 B / 3.35e12 B/s = 1.565 us
    assert rows["hbm"]["fetch_us_per_layer"] == rows["hbm"]["fetch_us_contiguous"] == pytest.approx(1.56504, rel=1e-5)


def test_a_per_layer_fetch_over_the_host_link_pays_160_fitted_latencies():
    s = scenario()
    n = tiers.numbers(s)
    # 160 layer chunks x 9.049 us (the H200's fitted copy latency) = 1,447.84 us before a byte moves
    assert (n["host_tier"], n["layer_chunks"]) == ("pcie5-x16", 160)
    assert n["host_per_layer_latency_us"] == pytest.approx(1_447.84, rel=1e-12)
    # + 5,242,880 B / 63e9 B/s = 83.22 us: 1,531.06 us; one transfer: 9.049 + 83.22 = 92.27 us
    assert n["host_fetch_us_per_layer"] == pytest.approx(1_447.84 + 5_242_880 / 63e9 * 1e6, rel=1e-12)
    assert n["host_fetch_us_contiguous"] == pytest.approx(9.049 + 5_242_880 / 63e9 * 1e6, rel=1e-12)
    # 17.9229 ms / 1,531.06 us = 11.71 inside a batch; 52.2388 ms / 1,531.06 us = 34.12 as a lone block
    assert n["host_ratio_tail_per_layer"] == pytest.approx(17.922852e-3 / 1_531.060317e-6, rel=1e-6)
    assert n["lone_host_ratio_tail_per_layer"] == pytest.approx(140e9 / 2.68e12 / 1_531.060317e-6, rel=1e-6)
    # break-even latency per layer chunk inside a batch: (17.9229 ms - 83.22 us) / 160 = 111.50 us
    assert n["host_break_even_latency_us_per_layer"] == pytest.approx(
        (17.922852e-3 - 5_242_880 / 63e9) / 160 * 1e6, rel=1e-6
    )
    assert "is below all four" in n["break_even_latency_sentence"]
    assert "1.45 ms is latency alone" in n["host_sentence"] and "derived" in n["host_sentence"]
    # NVMe per layer chunk: 1.16x inside a batch, the narrowest margin of the ladder
    assert "at the narrowest, inside a batch per layer chunk, by 1.16×" in n["nvme_sentence"]
    assert "nvme-gen4-x4's 1.16× inside a batch per layer chunk, under 2×" in n["ladder_sentence"]
    # every one of the 10 tiers below HBM (11 presets, HBM left out: the block lies there already)
    assert n["n_fetch_wins_per_layer"] == n["lone_n_fetch_wins_per_layer"] == n["n_links"] == 10


def test_the_ladder_says_where_recomputing_wins_when_a_tier_loses():
    # 200 us per NVMe read: 160 x 200 us = 32 ms + 748.98 us per layer chunk, longer than 17.92 ms inside a batch
    # (ratio 0.55) but shorter than 52.24 ms as a lone block (1.60); Gen5: 32 ms + 374.49 us, ratio 0.55 too
    n = tiers.numbers(scenario(**{"tier_latency.nvme": "200us"}))
    assert n["nvme_ratio_tail_per_layer"] == pytest.approx(17.922852e-3 / (32e-3 + 5_242_880 / 7e9), rel=1e-6)
    assert n["n_fetch_wins_per_layer"] == 8 and n["lone_n_fetch_wins_per_layer"] == 10
    assert n["nvme_sentence"].endswith("Recomputing wins inside a batch per layer chunk.")
    assert n["ladder_sentence"].startswith("Not every tier clears the break-even")
    # its 200 us is past the per-layer break-even inside a batch, (17.9229 ms - 748.98 us) / 160 = 107.34 us
    assert (
        "past the break-even inside a batch per layer chunk, where recomputing wins"
        in (n["nvme_break_even_latency_sentence"])
    )


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
    # 17.92285 ms (the tail block, its attention over itself included) / 1,521.92 µs = 11.776 inside a batch
    assert s.illustrative["ratio"] == pytest.approx(17.92285212672 / 1.52192, rel=1e-12)
    # contiguous is one transfer whatever the latency; DeepSeek-V3 caches one latent per layer: 61 chunks
    assert Scenario(load_assumptions(sets={"fetch_latency": "9us"})).fetch_transfers == 1
    assert Scenario(load_assumptions(sets={"model": "deepseek-v3"})).layer_chunks == 61
    # the ratio page sets both layouts side by side at the set's latency (here 9 µs, not the fitted one)
    n = ratio.layout_numbers(Scenario(load_assumptions(sets={"fetch_latency": "9us"})))
    assert n["layout_chunks"] == 160
    assert n["layout_contiguous_us"] == pytest.approx(81.92 + 9, rel=1e-12)
    assert n["layout_per_layer_us"] == pytest.approx(1_521.92, rel=1e-12)
    assert n["layout_ratio_per_layer"] == pytest.approx(17.92285212672e-3 / 1_521.92e-6, rel=1e-12)
    assert "this set's 9 µs fetch latency" in n["layout_sentence"]


def test_compare_and_the_tier_ladder_count_the_transfers():
    from kvtier.report.pages import tiers

    s = Scenario(load_assumptions(sets={"fetch_layout": "per-layer"}))
    df = tiers.table(s).set_index("link")
    # PCIe 5.0 x16: 9.049 µs per transfer x 160 = 1,447.84 µs; + 5,242,880 B / 63e9 B/s = 83.22 µs -> 1,531.06 µs
    assert df.loc["pcie5-x16", "transfers"] == 160 and df.loc["pcie5-x16", "layout"] == "per-layer"
    assert df.loc["pcie5-x16", "fetch_us"] == pytest.approx(1_447.84 + 5_242_880 / 63e9 * 1e6, rel=1e-12)
    assert df.loc["pcie5-x16", "fetch_us"] == df.loc["pcie5-x16", "fetch_us_per_layer"]
    proc = run_cli("compare", "--layout", "per-layer", "--latency", "9us", "--json")
    out = json.loads(proc.stdout)
    assert out["fetch_transfers"] == 160 and out["fetch_time_s"] == pytest.approx(1_521.92e-6, rel=1e-12)


def test_the_ladder_says_each_count_once():
    n = tiers.numbers(scenario())
    # every count is all 10 tiers: said once, not four times
    assert (
        n["wins_sentence"]
        == "Fetching the tail block beats regenerating it on all 10 tiers, in both regimes and both layouts."
    )
    # the paragraph defines the break-even latency; each tier's sentence gives its four values only
    assert n["break_even_latency_sentence"].startswith("For pcie5-x16 it is 17.84 ms (one transfer)")
    # 200 us per NVMe read: NVMe Gen4 and Gen5 lose per layer chunk inside a batch (see the test above)
    lost = tiers.numbers(scenario(**{"tier_latency.nvme": "200us"}))["wins_sentence"]
    assert lost == (
        "Fetching the tail block beats regenerating it inside a batch on 10 of the 10 tiers as one contiguous"
        " transfer and on 8 per layer chunk; as a lone block, on 10 and 10."
    )


def test_the_ladders_break_evens_take_a_pageable_pools_overhead_and_share():
    sets = {"fetch.host_memory": "pageable", "fetch.pageable_efficiency": "25 %", "fetch.pageable_overhead": "20 us"}
    s = Scenario(load_assumptions(None, sets))
    df = tiers.table(s)
    tail = float(s.in_batch_regen_s(0, "resident", s.illustrative["mfu"]))  # the table's in-batch tail block
    for row in df.itertuples():
        for suffix, n in (("", s.fetch_transfers), ("_per_layer", s.transfers("per-layer"))):
            # at the break-even bandwidth, n x (latency + 20 us) + bytes / (25 % x bandwidth) is the regeneration
            bw = getattr(row, f"break_even_tail_GBps{suffix}") * 1e9
            lat = row.latency_us * 1e-6
            fetch = float(s.link_fetch_s(s.fetch_bytes, bw, lat, n))
            assert fetch == pytest.approx(n * (lat + 20e-6) + s.fetch_bytes / (0.25 * bw), rel=1e-12)
            assert fetch == pytest.approx(tail, rel=1e-9), (row.link, suffix)
            # at the break-even latency (the tier's own, the overhead taken off) the same, where one exists
            lat_be = getattr(row, f"break_even_latency_tail_us{suffix}") * 1e-6
            if lat_be > 0:
                at = float(s.link_fetch_s(s.fetch_bytes, row.bandwidth_GBps * 1e9, lat_be, n))
                assert at == pytest.approx(tail, rel=1e-9), (row.link, suffix)


def test_the_break_even_sentence_follows_the_transfer_model():
    s = scenario(
        **{"fetch.host_memory": "pageable", "fetch.pageable_efficiency": "50%", "fetch.pageable_overhead": "10us"}
    )
    n = tiers.numbers(s)
    # tail block inside a batch: 17.922852 ms; contiguous: 1 transfer of 0 us latency + 10 us pageable overhead;
    # the fetch reaches 50 % of the link: 5,242,880 B / ((17,922.852 - 10) us x 0.5) = 0.58538 GB/s
    # (the plain roofline, no overhead and the whole rate: 5,242,880 / 17,922.852 us = 0.29253 GB/s)
    assert n["break_even_tail_gbps"] == pytest.approx(5_242_880 / ((17.922852e-3 - 10e-6) * 0.5) / 1e9, rel=1e-6)
    assert n["break_even_tail_gbps"] == pytest.approx(0.58538, abs=1e-5)
    # and it is the ladder table's rule: a link at that bandwidth, 0 us and the overhead fetches in the regeneration
    fetch = float(s.link_fetch_s(s.fetch_bytes, n["break_even_tail_gbps"] * 1e9, 0.0, 1))
    assert fetch == pytest.approx(17.922852e-3, rel=1e-6)
