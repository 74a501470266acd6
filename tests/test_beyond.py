"""Beyond the source chapter: interior blocks, roofline, the tier ladder, many models, and the CLI
that answers the same questions.  Hand arithmetic beside every expected value."""

from __future__ import annotations

import csv
import json
import re
import shutil

import numpy as np
import pytest

from kvtier import costs, roofline
from kvtier.assumptions import load_assumptions
from kvtier.pages import models, tiers
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
    from kvtier.assumptions import check_consistency
    from kvtier.errors import KvtierError

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
