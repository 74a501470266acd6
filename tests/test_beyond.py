"""Beyond the source chapter: interior blocks, roofline, the tier ladder, many models, and the CLI
that answers the same questions.  Hand arithmetic beside every expected value."""

from __future__ import annotations

import csv
import json
import re
import shutil

import numpy as np
import pytest

from kvtier.formulas import costs, roofline
from kvtier.inputs.assumptions import load_assumptions
from kvtier.report.pages import models, tiers
from kvtier.scenario import Scenario
from tests.conftest import ROOT, run_cli, run_cli_json

TABLES = ROOT / "book" / "tables"


def scenario(**sets: str) -> Scenario:
    return Scenario(load_assumptions(sets=sets))


def csv_rows(name: str) -> list[dict[str, str]]:
    with (TABLES / f"{name}.csv").open(newline="") as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------------------
# interior blocks, two models
# ---------------------------------------------------------------------------


def test_interior_flops_by_hand_llama_3_70b():
    s = scenario()
    # attention FLOPs per token per position: 2 x 80 layers x 64 heads x (128 + 128) = 2,621,440
    assert s.model.attention_flops_per_position() == 2_621_440
    # resident, p = 50,000: 2 x 70e9 x 16 + 2,621,440 x (16 x 50,000 + 16 x 17 / 2)
    #   = 2.24e12 + 2,097,508,515,840 = 4,337,508,515,840 FLOP
    assert float(s.interior_flops(50_000, "resident")) == pytest.approx(2.24e12 + 2_621_440 * 800_136, rel=1e-12)
    # at 25 % of 500 TFLOP/s: 4.3375e12 / 1.25e14 = 34.70 ms
    assert float(s.interior_regen_s(50_000, "resident", 0.25)) == pytest.approx(34.700068e-3, rel=1e-6)
    # evicted, anchor at the start: 50,016 tokens from position 0:
    # 2 x 70e9 x 50,016 + 2,621,440 x 50,016 x 50,017 / 2 = 7.00224e15 + 3.2789802e15 = 1.0281203e16 FLOP -> 82.25 s
    expected = 2 * 70e9 * 50_016 + 2_621_440 * 50_016 * 50_017 / 2
    assert float(s.interior_flops(50_000, "evicted")) == pytest.approx(expected, rel=1e-12)
    assert float(s.interior_regen_s(50_000, "evicted", 0.25)) == pytest.approx(82.2496, rel=1e-5)


def test_interior_flops_by_hand_llama_3_8b_and_anchors():
    s = scenario(model="llama-3-8b")
    # 2 x 32 layers x 32 heads x (128 + 128) = 524,288 FLOPs per token per position
    assert s.model.attention_flops_per_position() == 524_288
    # resident, p = 10,000: 2 x 8,030,261,248 x 16 + 524,288 x (160,000 + 136)
    #   = 256,968,359,936 + 83,957,383,168 = 340,925,743,104 FLOP
    assert float(s.interior_flops(10_000, "resident")) == 340_925_743_104
    # evicted, p = 1,000 from the start: 1,016 tokens, 2 x N x 1,016 + 524,288 x 1,016 x 1,017 / 2
    #   = 16,317,490,855,936 + 270,866,055,168 = 16,588,356,911,104 FLOP
    assert float(s.interior_flops(1_000, "evicted")) == 16_588_356_911_104
    # anchors every 4,096 tokens: p = 50,000 restarts at 12 x 4,096 = 49,152 and recomputes 50,000 - 49,152 + 16 = 864
    first, n = costs.recompute_span(50_000, 16, "evicted", 4_096)
    assert (float(first), float(n)) == (49_152, 864)
    anchored = scenario(model="llama-3-8b", **{"interior.anchor_every": "4096"})
    # 2 x N x 864 + 524,288 x (864 x 49,152 + 864 x 865 / 2)
    expected = 2 * 8_030_261_248 * 864 + 524_288 * (864 * 49_152 + 864 * 865 / 2)
    assert float(anchored.interior_flops(50_000, "evicted")) == pytest.approx(expected, rel=1e-12)


def test_position_zero_is_the_tail_block_and_cost_grows_with_position():
    s = scenario()
    # at position 0 both cases recompute only the block; they differ from the chapter's tail figure by the
    # block's own attention: 2,621,440 x 16 x 17 / 2 = 356,515,840 FLOP, 0.016 % of 2.24e12
    assert float(s.interior_flops(0, "resident")) == float(s.interior_flops(0, "evicted"))
    assert float(s.interior_flops(0, "resident")) - s.block_flops == 2_621_440 * 136
    positions = np.unique(np.round(np.logspace(0, 6, 500)))
    for upstream in ("resident", "evicted"):
        t = s.interior_regen_s(positions, upstream, 0.25)
        assert np.all(np.diff(t) > 0), upstream
    # evicted never costs less than resident
    assert np.all(s.interior_flops(positions, "evicted") >= s.interior_flops(positions, "resident"))


# ---------------------------------------------------------------------------
# roofline, two models
# ---------------------------------------------------------------------------


def test_roofline_on_the_chapter_device_llama_3_70b():
    s = scenario(**{"regen.model": "roofline"})
    # lone block: reads all 140e9 B of weights at 3.35e12 B/s x 80 % = 2.68e12 B/s -> 52.2388 ms
    assert float(s.regen_time_s(0, "resident", 0.25)) == pytest.approx(140e9 / 2.68e12, rel=1e-12)
    # compute side: (2.24e12 + 356,515,840) / 1.25e14 = 17.92285 ms < 52.24 ms, so memory-bound
    compute = float(s.regen_time_s(0, "resident", 0.25, model="mfu"))
    assert compute == pytest.approx(17.92285e-3, rel=1e-6)
    # compute-bound from W x T / (t_c x bw x eff) = 140e9 x 16 / (17.92285e-3 x 2.68e12) = 46.63 tokens
    batch = roofline.compute_bound_batch_tokens(140e9, 16, 327_680, 0, compute, 3.35e12, 0.8)
    assert float(batch) == pytest.approx(46.634, rel=1e-4)
    # with 4,096 tokens in the pass the block is compute-bound and the roofline equals the MFU model
    assert float(s.regen_time_s(0, "resident", 0.25, batch_tokens=4096)) == compute


def test_roofline_llama_3_8b_on_h200():
    s = scenario(model="llama-3-8b", **{"regen.model": "roofline"})
    kw = {"peak_flop_per_s": 989e12, "mem_bandwidth_bytes_per_s": 4.8e12}
    # weights 8,030,261,248 x 2 B = 16,060,522,496 B; at a position of 4,096 the block also reads
    # 4,096 x 131,072 B = 536,870,912 B of KV: 16,597,393,408 B / (4.8e12 x 0.8) = 4.3222 ms
    t = float(s.regen_time_s(4096, "resident", 0.5, **kw))
    assert t == pytest.approx(16_597_393_408 / 3.84e12, rel=1e-12)
    # compute: 2 x 8,030,261,248 x 16 + 524,288 x (16 x 4,096 + 136) = 291,355,332,608 FLOP / 494.5e12 = 0.589 ms
    compute = float(s.regen_time_s(4096, "resident", 0.5, model="mfu", **kw))
    assert compute == pytest.approx((2 * 8_030_261_248 * 16 + 524_288 * (16 * 4096 + 136)) / 494.5e12, rel=1e-12)
    assert t > compute  # memory-bound


def test_break_even_bandwidth_times_regen_time_is_the_block():
    s = scenario()
    for position, upstream in ((0, "resident"), (50_000, "resident"), (50_000, "evicted")):
        t = float(s.regen_time_s(position, upstream, 0.25))
        # 5,242,880 B / t, and back: bandwidth x t = 5,242,880 B
        assert float(costs.bandwidth_for_ratio(s.block_bytes, t)) * t == pytest.approx(5_242_880, rel=1e-12)
    # the chapter's tail block: 5,242,880 B / 17.92 ms = 292.57 MB/s
    assert float(costs.bandwidth_for_ratio(5_242_880, 17.92e-3)) == pytest.approx(292.571e6, rel=1e-5)


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


def test_models_side_by_side_by_hand():
    rows = {r["model"]: r for r in models.table(scenario()).to_dict(orient="records")}
    # Llama-2 7B (MHA, 32 KV heads): 2 x 32 x 32 x 128 x 2 B = 524,288 B = 512 KiB per token, 4x Llama-3 8B's
    # 128 KiB (GQA, 8 KV heads); parameters 2 x 32,000 x 4,096 + 32 x (4 x 4,096^2 + 3 x 4,096 x 11,008 + 2 x 4,096)
    # + 4,096 = 262,144,000 + 6,476,267,520 + 4,096 = 6,738,415,616
    assert rows["llama-2-7b"]["attention"] == "MHA" and rows["llama-2-7b"]["kv_KiB_per_token"] == 512
    assert rows["llama-3-8b"]["kv_KiB_per_token"] == 128
    assert rows["llama-2-7b"]["total_params_B"] * 1e9 == pytest.approx(6_738_415_616, rel=1e-15)
    # DeepSeek-V3 (MLA): 61 layers x (512 + 64) x 2 B = 70,272 B = 68.625 KiB per token; fp8 halves it
    assert rows["deepseek-v3"]["kv_KiB_per_token"] == 68.625
    assert rows["deepseek-v3"]["kv_fp8_KiB_per_token"] == 68.625 / 2
    # Llama-3 70B with its exact 70,553,706,496 parameters: 141,107,412,992 B / 327,680 B = 430,625.65 tokens
    assert rows["llama-3-70b"]["crossover_tokens"] == pytest.approx(430_625.65, rel=1e-8)
    # Llama-3 8B at the illustrative point: 2 x 8,030,261,248 x 16 / 1.25e14 = 2.0557 ms over
    # 16 x 131,072 B / 64e9 = 32.768 us -> 62.74
    assert rows["llama-3-8b"]["ratio_illustrative"] == pytest.approx(2 * 8_030_261_248 * 16 / 1.25e14 / 32.768e-6)


# ---------------------------------------------------------------------------
# the CLI agrees with the tables of record (and so with the book)
# ---------------------------------------------------------------------------


def test_compare_at_a_position_agrees_with_the_interior_table():
    table = {(r["upstream"], r["position_tokens"]): r for r in csv_rows("interior")}
    for upstream in ("resident", "evicted"):
        out = run_cli_json("compare", "--position", "50000", "--upstream", upstream)
        assert out["regen_time_s"] * 1e3 == pytest.approx(float(table[(upstream, "50000")]["regen_ms"]), rel=1e-9)
        assert out["regen_to_fetch_ratio"] == pytest.approx(float(table[(upstream, "50000")]["ratio_to_fetch"]))
        assert out["upstream"] == upstream and out["position_tokens"] == 50_000


def test_tiers_json_agrees_with_the_tiers_table():
    out = run_cli_json("tiers")
    table = {r["link"]: r for r in csv_rows("tiers")}
    assert [row["link"] for row in out["tiers"]] == list(table)
    for row in out["tiers"]:
        ref = table[row["link"]]
        assert row["fetch_time_s"] * 1e6 == pytest.approx(float(ref["fetch_us"]), rel=1e-9)
        assert row["ratio_tail"] == pytest.approx(float(ref["ratio_tail"]), rel=1e-9)
        assert row["bandwidth_bytes_per_s"] == pytest.approx(float(ref["bandwidth_GBps"]) * 1e9)


def test_compare_roofline_with_an_accelerator_preset():
    out = run_cli_json("compare", "--regen-model", "roofline", "--accelerator", "h100-sxm", "--batch-tokens", "64")
    # the block's share of the weights: 140e9 x 16 / 64 = 35e9 B at 3.35e12 x 0.8 B/s = 13.06 ms;
    # compute (2.24e12 + 356,515,840) / (989e12 x 0.25) = 9.061 ms -> memory-bound
    assert out["regen_time_s"] == pytest.approx(35e9 / 2.68e12, rel=1e-12)
    assert out["bound"] == "memory" and out["batch_tokens"] == 64
    assert out["assumptions"]["peak_flops"]["provenance"] == "published-spec"
    assert out["assumptions"]["regen.mem_bandwidth"]["value"] == 3.35e12
    # DGX Spark publishes no bf16 peak: a peak is then a required assumption
    proc = run_cli("compare", "--regen-model", "roofline", "--accelerator", "dgx-spark-gb10")
    assert proc.returncode == 2 and "has no peak compute rate" in proc.stderr
    ok = run_cli_json(
        "compare", "--regen-model", "roofline", "--accelerator", "dgx-spark-gb10", "--peak-flops", "100TFLOP/s"
    )
    # 140e9 B / (273e9 x 0.8) = 641.03 ms
    assert ok["regen_time_s"] == pytest.approx(140e9 / (273e9 * 0.8), rel=1e-12)


def test_a_users_config_json_works_in_the_cli(tmp_path):
    config = tmp_path / "my-model" / "config.json"
    config.parent.mkdir()
    shutil.copy(ROOT / "kvtier" / "data" / "models" / "llama-3-8b.json", config)
    data = json.loads(config.read_text())
    data.pop("_source", None)
    config.write_text(json.dumps(data))
    out = run_cli_json("compare", "--model", str(config), "--position", "1000", "--upstream", "evicted")
    # same numbers as the preset it was copied from: 16,588,356,911,104 FLOP (see above) at 1.25e14 FLOP/s
    assert out["regen_time_s"] == pytest.approx(16_588_356_911_104 / 1.25e14, rel=1e-12)
    assert run_cli_json("model", str(config))["kv_bytes_per_token"] == 131_072
    table = run_cli_json("tiers", "--set", f"model={config}")
    # 16 x 131,072 B = 2,097,152 B over 64e9 B/s = 32.768 us for the mid bracket
    assert table["tiers"][1]["fetch_time_s"] == pytest.approx(32.768e-6, rel=1e-12)
    assert {r["model"] for r in models.table(scenario(model=str(config))).to_dict(orient="records")} >= {str(config)}


def test_json_never_prints_infinity():
    # a 1 s latency exceeds the 17.92 ms regeneration: no bandwidth breaks even, reported as null
    out = run_cli_json("compare", "--latency", "1s")
    assert out["break_even_bandwidth_bytes_per_s"] is None
    assert out["fetch_time_s"] == pytest.approx(1 + 81.92e-6)


def test_book_consistency_checks_name_the_keys():
    from kvtier.errors import KvtierError
    from kvtier.inputs.assumptions import check_consistency

    check_consistency(load_assumptions())  # the seed set is consistent
    cases = {
        "bandwidth.mid": ("20GB/s", "keys 'bandwidth.mid' (20 GB/s) and 'bandwidth.pessimistic' (32 GB/s)"),
        "mfu.typical": ("60%", "keys 'mfu.optimistic' (50%) and 'mfu.typical' (60%)"),
        "context.short": ("256K", "'context.short' must be smaller than 'context.long'"),
        "interior.position": ("200000", "'interior.position' must lie inside the sequence"),
        "uncertainty.mfu_low": ("60%", "keys 'uncertainty.mfu_high' (50%) and 'uncertainty.mfu_low' (60%)"),
    }
    for key, (value, message) in cases.items():
        with pytest.raises(KvtierError, match=re.escape(message)):
            check_consistency(load_assumptions(sets={key: value}))


# ---------------------------------------------------------------------------
# the two regimes: a lone block (roofline) and a block inside a batch (marginal compute)
# ---------------------------------------------------------------------------


def test_lone_block_regime_by_hand_on_the_seed_device():
    from kvtier.report.pages import ratio

    s = Scenario()
    # A lone 16-token block of Llama-3-70B reads every weight once: 70e9 x 2 B = 140e9 B, no cached KV at the
    # tail. On the seed's device: 140e9 B / (3.35e12 B/s x 0.80) = 52.2388 ms, memory-bound at every MFU
    # (compute at 25 % MFU: 2.24e12 FLOP / 125e12 FLOP/s = 17.92 ms, plus 16 x 17 / 2 x 2,621,440 FLOP of
    # attention over its own tokens, 0.36 GFLOP: negligible).
    lone_s = 140e9 / (3.35e12 * 0.80)
    assert float(s.lone_regen_s(0, "resident", 0.25)) == pytest.approx(lone_s, rel=1e-12)
    assert str(s.lone_bound(0, "resident", 0.50)) == "memory"
    # Inside a batch the same block costs its marginal compute, the chapter's model: 17.92 ms (+ attention).
    assert float(s.in_batch_regen_s(0, "resident", 0.25)) == pytest.approx(
        (2.24e12 + 2_621_440 * 16 * 17 / 2) / 125e12, rel=1e-12
    )
    n = ratio.numbers(s)
    # Against the 81.92 us fetch at 64 GB/s (5,242,880 B / 64e9 B/s): 52.2388 ms / 81.92 us = 637.68.
    assert n["lone_ratio_illustrative"] == pytest.approx(lone_s / 81.92e-6, rel=1e-12)
    assert n["lone_ratio_illustrative"] == pytest.approx(637.68, abs=0.01)
    # Over the 3 x 3 brackets the lone time does not depend on the MFU, so the range is set by the link:
    # 52.2388 ms / 163.84 us (32 GB/s) = 318.84 to 52.2388 ms / 43.3296 us (121 GB/s) = 1,205.62.
    assert n["lone_ratio_min"] == pytest.approx(lone_s / (5_242_880 / 32e9), rel=1e-12)
    assert n["lone_ratio_max"] == pytest.approx(lone_s / (5_242_880 / 121e9), rel=1e-12)
    assert n["n_lone_memory_bound"] == 9
    # The verdict on "two to three orders of magnitude", both regimes: inside a batch 7 of 9 hold and the
    # two 32 GB/s corners at 50 % and 40 % MFU fall below (54.7x, 68.4x); as a lone block 6 of 9 hold and
    # the three 121 GB/s corners exceed 1,000x (1,205.6x); none falls below 100x.
    assert (n["n_within_claim"], n["n_below_claim"], n["n_above_claim"]) == (7, 2, 0)
    assert (n["lone_n_within_claim"], n["lone_n_below_claim"], n["lone_n_above_claim"]) == (6, 0, 3)
    assert "exceeds 1,000× at 3" in n["lone_verdict"]
    rows = csv_rows("ratio")
    assert [r["lone_bound"] for r in rows] == ["memory"] * 9
    assert sum(r["lone_within_claim"] == "True" for r in rows) == 6
    # every lone ratio is above its in-batch ratio: the lone block is dearer at every corner
    assert all(float(r["lone_ratio"]) > float(r["ratio"]) for r in rows)


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


def test_what_was_measured_follows_the_provenance_classes():
    from kvtier.inputs.assumptions import make_assumption
    from kvtier.report.pages import assumptions

    s = Scenario()
    n = assumptions.numbers(s)
    # 76 records (workload.trace_format the 76th); the 3 reference.* figures (DGX Spark HBM, H200 host link,
    # H200 16-token pass energy) are measured
    # and enter no calculation; the serving trace of the workload page (workload.trace) and the cost page's
    # lone-block board power (energy.power_lone) are measured and enter one: 76 - 3 = 73 inputs
    assert (n["n_assumptions"], n["n_reference"], n["n_reference_measured"], n["n_used_measured"]) == (76, 3, 3, 2)
    assert n["answer_measured"].startswith(
        "Of the 73 inputs that enter a calculation, 2 of them measured (the serving trace the tier is sized for;"
        " accelerator board power while it regenerates a lone block): 2 measured,"
    )
    # a set whose mid bracket is measured says so
    measured = make_assumption(
        "bandwidth.mid", "50GB/s", basis="our expander", provenance="measured", source="lab", where="test"
    )
    m = assumptions.numbers(Scenario(s.assumptions.with_records({"bandwidth.mid": measured})))
    assert m["n_used_measured"] == 3
    assert (
        "3 of them measured (link bandwidth of the mid bracket; the serving trace the tier is sized for;"
        " accelerator board power while it regenerates a lone block)" in (m["answer_measured"])
    )


def test_a_per_layer_layout_pays_the_latency_once_per_chunk():
    from kvtier.formulas import costs
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
