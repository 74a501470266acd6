"""`kvtier compare`: the illustrative point, overrides, other models and accelerators, JSON."""

from __future__ import annotations

import json
import shutil

import pytest

from kvtier.report.pages import models
from tests.conftest import ROOT, run_cli, run_cli_json, scenario, write_config


def test_compare_roofline_with_an_accelerator_preset():
    # the preset's 80 GB: Llama-3-70B's 140 GB of bf16 weights plus one sequence of its 8,192-token window (context.long
    # is longer), 8,192 x 327,680 B = 2.68 GB of KV, do not fit one H100, so the preset refuses it in one line;
    # TP 2 holds 70 + 1.34 = 71.3 GB each
    proc = run_cli("compare", "--regen-model", "roofline", "--accelerator", "h100-sxm")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "must hold 142.7 GB" in proc.stderr and "'parallel.hbm_capacity' (80.0 GB)" in proc.stderr
    assert "at least 2 accelerators (e.g. --set parallel.tp=2 --set parallel.pp=1)" in proc.stderr
    what_if = ("--set", "parallel.hbm_capacity=null")  # the check off: one accelerator priced anyway
    out = run_cli_json(
        "compare", "--regen-model", "roofline", "--accelerator", "h100-sxm", "--batch-tokens", "64", *what_if
    )
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
        "compare",
        "--regen-model",
        "roofline",
        "--accelerator",
        "dgx-spark-gb10",
        "--peak-flops",
        "100TFLOP/s",
        *what_if,
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


def test_compare_default_is_the_illustrative_point():
    out = run_cli_json("compare")
    assert out["block_bytes"] == 5_242_880  # 16 x 327,680 B
    assert out["fetch_time_s"] == pytest.approx(81.92e-6)  # 5,242,880 / 64e9
    # 2 x 70e9 x 16 = 2.24e12 FLOP of parameters, plus the block's attention over itself:
    # 4 x 80 layers x 8,192 (d_model) = 2,621,440 FLOP per token pair x 16 x 17 / 2 = 136 pairs = 356,515,840 FLOP
    # 2,240,356,515,840 / (500e12 x 0.25) = 17.92285212672 ms
    assert out["regen_time_s"] == pytest.approx(17.92285212672e-3, rel=1e-12)
    assert out["regen_to_fetch_ratio"] == pytest.approx(218.784816, rel=1e-12)  # 17.92285212672 ms / 81.92 µs
    provenance = {k: v["provenance"] for k, v in out["assumptions"].items()}
    assert provenance["peak_flops"] == "implied"
    assert provenance["bandwidth.mid"] == "assumed"
    assert provenance["mfu.conservative"] == "assumed"


def test_compare_text_lists_assumptions_with_provenance():
    proc = run_cli("compare")
    assert proc.returncode == 0
    assert "5.00 MiB" in proc.stdout and "81.92 µs" in proc.stdout and "17.92 ms" in proc.stdout
    assert "218.78×" in proc.stdout  # 17.92285 ms / 81.92 µs = 218.784816
    assert "[implied]" in proc.stdout and "peak_flops" in proc.stdout


def test_compare_options_override():
    out = run_cli_json("compare", "--bandwidth", "121GB/s", "--mfu", "50%", "--tokens", "32", "--kv-dtype", "fp8")
    # fp8 halves KV: 163,840 B/token x 32 tokens = 5,242,880 B; / 121e9 = 43.33 µs
    assert out["block_bytes"] == 5_242_880
    assert out["fetch_time_s"] == pytest.approx(5_242_880 / 121e9)
    # 32 x 2 x 70e9 = 4.48e12 FLOP, plus attention 2,621,440 x 32 x 33 / 2 = 1,384,120,320 FLOP,
    # / (500e12 x 0.5) = 17.92553648128 ms
    assert out["regen_time_s"] == pytest.approx(17.92553648128e-3, rel=1e-12)
    assert out["assumptions"]["bandwidth.mid"]["source"] == "command line"


def test_compare_with_another_model_uses_its_own_params():
    out = run_cli_json("compare", "--model", "llama-3-8b", "--peak-flops", "989TFLOP/s")
    # 8,030,261,248 params x 2 x 16 = 2.5697e11 FLOP / (989e12 x 0.25) = 1.0393 ms
    assert out["params"] == 8_030_261_248
    # plus the block's attention over itself: 4 x 32 layers x 4,096 x 136 token pairs = 71,303,168 FLOP
    assert out["regen_time_s"] == pytest.approx((16 * 2 * 8_030_261_248 + 71_303_168) / (989e12 * 0.25))
    # 131,072 B/token x 16 = 2 MiB; / 64e9 = 32.77 µs
    assert out["fetch_time_s"] == pytest.approx(2_097_152 / 64e9)


def test_compare_with_config_path(tmp_path):
    cfg = write_config(
        tmp_path / "config.json",
        num_hidden_layers=2,
        hidden_size=64,
        num_attention_heads=8,
        intermediate_size=128,
        vocab_size=100,
    )
    out = run_cli_json("compare", "--model", str(cfg))
    assert out["kv_bytes_per_token"] == 512  # 2 x 2 x 8 x 8 x 2 B (MHA)
    assert out["params"] == 95_040


def test_compare_placement_options_and_json():
    # --tp 8 is --set parallel.tp=8: each GPU fetches 1 of Llama-3-70B's 8 KV heads, 655,360 B,
    # at 64 GB/s in 10.24 us; the chapter's compute-only regeneration spreads over 8 GPUs
    out = run_cli_json("compare", "--tp", "8")
    p = out["placement"]
    assert (p["tp"], p["pp"], p["ep"], p["gpus_per_link"], p["accelerators"]) == (8, 1, 1, 1, 8)
    assert p["shard_bytes"] == 655_360.0 and p["link_bytes"] == 655_360.0
    assert out["fetch_time_s"] == pytest.approx(655_360 / 64e9, rel=1e-12)
    # 2 x 70e9 x 16 / (8 x 500e12 x 0.25) = 2.24 ms + the block's all-reduce bytes (160 x 1.0194 us)
    # the tail block's 2,240,356,515,840 FLOP (its attention over itself included) over 8 x 500e12 x 0.25
    assert out["regen_time_s"] == pytest.approx(2.24035651584e-3 + 160 * 1.75 * 262_144 / 450e9, rel=1e-12)
    # a lone block's pass pays each all-reduce's 10 us: 160 x 11.0194 us = 1.7631 ms
    assert p["lone_collectives_s"] == pytest.approx(1.76311e-3, rel=1e-5)
    assert p["hbm_capacity_bytes"] is None and p["min_accelerators"] is None
    assert out["assumptions"]["parallel.tp"]["value"] == 8
    # --gpus-per-link 2: the link carries two shards
    shared = run_cli_json("compare", "--tp", "8", "--gpus-per-link", "2")
    assert shared["placement"]["link_bytes"] == 1_310_720.0
    assert shared["fetch_time_s"] == pytest.approx(2 * out["fetch_time_s"], rel=1e-12)
    # one accelerator, the default: the placement is there, and nothing moved
    one = run_cli_json("compare")
    assert one["placement"]["accelerators"] == 1 and one["fetch_time_s"] == 5_242_880 / 64e9


def test_compare_deepseek_reads_only_the_touched_experts_and_refuses_what_does_not_fit():
    # DeepSeek-V3 bf16 on one H200, lone block: dense 34.235 GB + 1,307.8 GB x 101.96 / 256 routed = 555.1 GB
    # (+ no cached KV at position 0) at 4.8 TB/s x 80 %: 144.56 ms, not the 349 ms of reading every expert
    out = run_cli_json(
        "compare", "--model", "deepseek-v3", "--regen-model", "roofline", "--accelerator", "h200",
        "--set", "parallel.hbm_capacity=null", "--weight-dtype", "bf16",
    )  # fmt: skip
    assert out["bytes_read"] / 1e9 == pytest.approx(555.1255, rel=1e-6)
    assert out["regen_time_s"] == pytest.approx(555.1255e9 / 3.84e12, rel=1e-6)
    assert out["assumptions"]["weight_dtype"]["value"] == "bf16"
    # without --weight-dtype the model brings the fp8 its config publishes (quantization_config fp8 e4m3), 1 B a
    # weight: every term halves, 277.56 GB read in 72.28 ms; the record says auto resolved, and from what
    fp8 = run_cli_json(
        "compare", "--model", "deepseek-v3", "--regen-model", "roofline", "--accelerator", "h200",
        "--set", "parallel.hbm_capacity=null",
    )  # fmt: skip
    assert fp8["bytes_read"] / 1e9 == pytest.approx(555.1255 / 2, rel=1e-6)
    assert fp8["regen_time_s"] == pytest.approx(555.1255e9 / 2 / 3.84e12, rel=1e-6)
    rec = fp8["assumptions"]["weight_dtype"]
    assert (rec["value"], rec["provenance"]) == ("fp8", "published-spec") and "quantization_config" in rec["basis"]
    assert fp8 == run_cli_json(
        "compare", "--model", "deepseek-v3", "--regen-model", "roofline", "--accelerator", "h200",
        "--set", "parallel.hbm_capacity=null", "--weight-dtype", "auto",
    )  # fmt: skip
    # the preset brings the H200's 141 GB: one accelerator is refused in one line naming the keys; in bf16 it must
    # hold 1,342.05 + 9.21 GB of latent (131,072 x 70,272 B) = 1,351.3 GB, and 8 still hold 167.8 GB of weights
    # each: 16 (tp 8, pp 2)
    proc = run_cli("compare", "--model", "deepseek-v3", "--accelerator", "h200", "--weight-dtype", "bf16")
    assert proc.returncode == 2
    assert "'parallel.tp' (1)" in proc.stderr and "'parallel.hbm_capacity' (141.0 GB)" in proc.stderr
    assert "must hold 1,351.3 GB (its weights in bf16" in proc.stderr
    assert "at least 16 accelerators (e.g. --set parallel.tp=8 --set parallel.pp=2)" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    # in its published fp8: 671.03 + 9.21 = 680.2 GB on one; 8 hold 671.03 / 8 = 83.9 GB + 9.2 GB each
    proc = run_cli("compare", "--model", "deepseek-v3", "--accelerator", "h200")
    assert proc.returncode == 2 and "must hold 680.2 GB (its weights in fp8" in proc.stderr
    assert "at least 8 accelerators (e.g. --set parallel.tp=8 --set parallel.pp=1)" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    # 8 H200s with the experts spread over them (fp8 weights): 83.9 GB + 9.2 GB of latent each, fits
    for dtype in (["--set", "weight_dtype=fp8"], ["--weight-dtype", "fp8"], []):
        ok = run_cli_json(
            "compare", "--model", "deepseek-v3", "--regen-model", "roofline", "--accelerator", "h200",
            "--tp", "8", "--ep", "8", "--set", "parallel.hbm_capacity=141GB", *dtype,
        )  # fmt: skip
        assert ok["placement"]["accelerators"] == 8 and ok["placement"]["min_accelerators"]["accelerators"] == 8
        assert ok["placement"]["rank_memory_bytes"] == pytest.approx(671_026_419_200 / 8 + 131_072 * 70_272)


def test_compare_engine_option_is_the_engine_key():
    # --engine mooncake is --set engine=mooncake: Mooncake's 512-token block of Llama-3-70B is
    # 512 x 327,680 B = 167,772,160 B, moved as one copy per layer (80 transfers) issued back to back
    # (batched-dma, 3.53 us each, in place of the chapter's zero fetch_latency); at 64 GB/s that is
    # 80 x 3.53 us + 167,772,160 / 64e9 = 282.4 us + 2,621.44 us = 2,903.84 us
    out = run_cli_json("compare", "--engine", "mooncake")
    assert out["assumptions"]["engine"]["value"] == "mooncake"
    assert out["block_bytes"] == 167_772_160
    assert (out["fetch_transfers"], out["copy_method"]) == (80, "batched-dma")
    assert out["transfer_latency_s"] == pytest.approx(3.53e-6, rel=1e-12)
    assert out["fetch_time_s"] == pytest.approx(80 * 3.53e-6 + 167_772_160 / 64e9, rel=1e-12)
    # the per-copy cost's record replaces fetch_latency's among the assumptions used
    assert "fetch.copy_cost.batched_dma" in out["assumptions"] and "fetch_latency" not in out["assumptions"]
    assert out == run_cli_json("compare", "--set", "engine=mooncake")


def test_compare_says_how_many_copies_and_how_each_is_issued():
    # vLLM >= 0.12: Llama-3-70B's 5 MiB block in one cross-layer copy, issued back to back at 3.53 us:
    # 3.53 + 5,242,880 / 64e9 = 3.53 + 81.92 = 85.45 us
    out = run_cli("compare", "--engine", "vllm")
    assert out.returncode == 0
    assert "copies           1 per block (one-unless-mla, engine vllm), batched-dma: 3.53 µs each" in out.stdout
    assert "fetch            85.45 µs  at 64 GB/s\n" in out.stdout
    # vLLM 0.11 on DeepSeek-V3 (MLA): 61 copies, one latent per layer; 61 x 3.53 us = 215.33 us + 1,124,352 / 64e9
    # = 17.57 us: 232.90 us
    old = run_cli("compare", "--engine", "vllm-0.11", "--model", "deepseek-v3")
    assert "copies           61 per block (per-layer-kv, engine vllm-0.11), batched-dma: 3.53 µs each" in old.stdout
    assert "fetch            232.90 µs  at 64 GB/s, 61 transfers × 3.53 µs" in old.stdout
    # SGLang's kernel: 80 launches of 0.5 us = 40 us + 20,971,520 / 64e9 = 327.68 us: 367.68 us
    sg = run_cli("compare", "--engine", "sglang")
    assert "copies           80 per block (per-layer, engine sglang), kernel: 500.00 ns each" in sg.stdout
    assert "fetch            367.68 µs" in sg.stdout
    # the seed names no copy method: no copies line
    assert "copies " not in run_cli("compare").stdout


def test_compare_a_pageable_pool_under_the_measured_set_breaks_even_at_the_link_rate_it_needs():
    out = run_cli_json(
        "compare", "--assumptions", str(ROOT / "kvtier/data/h200-measured.yaml"), "--set", "fetch.host_memory=pageable"
    )
    # 5 MiB from a pageable pool, staged from DRAM: 9.049 us + 15.26 us + 5,242,880 / (16.38 % x 55.14 GB/s)
    # = 24.31 + 580.5 = 604.8 us
    assert out["fetch_time_s"] == pytest.approx(604.8e-6, rel=1e-3)
    assert {"fetch.pageable_efficiency", "fetch.pageable_overhead"} <= set(out["assumptions"])
    # break-even: 5,242,880 / (regen - 24.31 us) of reached rate, over 16.38 % of it on the link
    regen = out["regen_time_s"]
    expected = 5_242_880 / (regen - (9.049e-6 + 15.26e-6)) / 0.1638
    assert out["break_even_bandwidth_bytes_per_s"] == pytest.approx(expected, rel=1e-3)


def test_compare_with_an_engines_measured_kernels():
    # the spelling scripts rely on: --regen-model engine --accelerator NAME --engine NAME
    out = run_cli_json(
        "compare", "--regen-model", "engine", "--accelerator", "h100-sxm", "--engine", "vllm", "--model", "llama-3-8b"
    )
    tables = out["kernel_tables"]
    assert (tables["system"], tables["engine"]) == ("h100_sxm", "vllm")
    assert out["regen_regime"] == "lone" and out["recomputed_tokens"] == 16
    assert out["assumptions"]["regen.kernel_tables"]["provenance"] == "measured"
    assert out["assumptions"]["regen.system"]["source"] == "command line (--accelerator h100-sxm)"
    assert "peak_flops" not in out["assumptions"]  # the kernels are measured: no peak, no MFU
    # the ratio is the regeneration over the fetch the output states
    assert out["regen_to_fetch_ratio"] == pytest.approx(out["regen_time_s"] / out["fetch_time_s"], rel=1e-12)
    # a whole 4,096-token prefill run alone: --tokens N --position 0 --batch-tokens N
    prefill = ("compare", "--regen-model", "engine", "--model", "llama-3-8b", "--tokens", "4096", "--position", "0")
    whole = run_cli_json(*prefill, "--batch-tokens", "4096")
    assert whole["regen_case"] == "block at position 0, upstream resident: a lone pass of 4,096 tokens after 0 cached"
    from kvtier.inputs import kernels

    est = kernels.estimator(kernels.model_config("llama-3-8b"), "llama-3-8b", kernels.tables("h200_sxm", "vllm"))
    assert whole["regen_time_s"] == est.pass_ms(1, 4096, 0) / 1e3
    # tensor parallel across two: the estimator's own all-reduces
    tp2 = run_cli_json(*prefill, "--batch-tokens", "4096", "--tp", "2")
    assert whole["regen_time_s"] / 2 < tp2["regen_time_s"] < whole["regen_time_s"]
    assert tp2["placement"]["tp"] == 2
    # a block inside a batch of 4,096 tokens: its share, far below the lone pass
    batch = run_cli_json(
        "compare", "--regen-model", "engine", "--model", "llama-3-8b", "--batch-tokens", "4096", "--position", "1024"
    )
    assert batch["regen_regime"] == "batch" and batch["regen_time_s"] < out["regen_time_s"] / 10
    assert whole["beyond_grid"] is None  # inside the grid


def test_compare_beyond_the_kernel_grid_refuses_unless_told_to_extrapolate():
    prefill = ("compare", "--regen-model", "engine", "--model", "llama-3-8b", "--position", "0")
    long = (*prefill, "--tokens", "20000", "--batch-tokens", "20000")
    proc = run_cli(*long)
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1 and "--beyond-grid extrapolate" in proc.stderr
    out = run_cli_json(*long, "--beyond-grid", "extrapolate")
    assert out["beyond_grid"] == "a sequence of 20,000 tokens (context attention measured to 16,384)"
    assert out["assumptions"]["regen.beyond_grid"]["value"] == "extrapolate"
    from kvtier.inputs import kernels

    est = kernels.estimator(kernels.model_config("llama-3-8b"), "llama-3-8b", kernels.tables("h200_sxm", "vllm"))
    assert out["regen_time_s"] == est.pass_ms(1, 20000, 0, extrapolate=True) / 1e3
    # 20,000 tokens cost more than the grid's last 16,384 and less than (20,000 / 16,384)^2 = 1.49x as much
    edge = est.pass_ms(1, 16384, 0) / 1e3
    assert edge < out["regen_time_s"] < 1.49 * edge


def test_compare_host_memory_selects_the_pageable_share():
    # the measured set: 9.049 us latency, 55.14 GB/s, 15.26 us pageable overhead, the 5 MiB block (5,242,880 B);
    # pageable (a KV pool, staged from DRAM): 16.38 % of the rate, 5,242,880 / (55.14e9 x 0.1638) = 580.48 us,
    # + 24.31 us = 604.79 us; pageable-warm (a buffer the host cache holds): 26.37 %, 360.57 + 24.31 = 384.88 us
    measured = str(ROOT / "kvtier" / "data" / "h200-measured.yaml")
    pool = run_cli_json("compare", "--assumptions", measured, "--host-memory", "pageable")
    warm = run_cli_json("compare", "--assumptions", measured, "--host-memory", "pageable-warm")
    pinned = run_cli_json("compare", "--assumptions", measured, "--host-memory", "pinned")
    assert pool["fetch_time_s"] == pytest.approx(604.79e-6, rel=2e-4)
    assert warm["fetch_time_s"] == pytest.approx(384.88e-6, rel=2e-4)
    # pinned: 9.049 us + 5,242,880 / 55.14e9 = 9.05 + 95.08 = 104.13 us
    assert pinned["fetch_time_s"] == pytest.approx(104.13e-6, rel=2e-4)
    share = warm["assumptions"]["fetch.pageable_efficiency"]
    assert share["value"] == pytest.approx(0.2637) and "pageable_warm_efficiency" in share["basis"]
    assert warm["assumptions"]["fetch.host_memory"]["value"] == "pageable"
    bad = run_cli("compare", "--host-memory", "warm")
    assert bad.returncode == 2 and "invalid choice: 'warm'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


CONFIGS = ROOT / "tests" / "inputs" / "configs"
ENGINE_PREFILL = ("compare", "--regen-model", "engine", "--accelerator", "h100-sxm", "--engine", "vllm")
ENGINE_PREFILL += ("--tokens", "4096", "--position", "0", "--batch-tokens", "4096")


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        # kvtier's own reading of Falcon's config would fail first on a missing intermediate_size: the architecture
        # is what the engine model cannot time, and the refusal says so
        ("falcon-7b", "the engine model cannot time FalconForCausalLM: aiconfigurator-core"),
        ("gemma-3-27b", "the engine model cannot time Gemma3ForConditionalGeneration: aiconfigurator-core"),
        ("qwen2-57b-a14b", "the engine model cannot time Qwen2MoeForCausalLM: its shared expert"),
    ],
)
def test_compare_refuses_an_architecture_the_engine_model_cannot_time_in_one_line(name, needle):
    path = str(CONFIGS / f"{name}.json")
    proc = run_cli(*ENGINE_PREFILL, "--model", path, "--tp", "8")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"kvtier: error: model {path}: {needle}") and proc.stderr.count("\n") == 1


def test_compare_a_qwen3_moe_is_held_to_all_its_experts_weights():
    # Qwen3-235B-A22B (experts under num_experts) was read as a dense 22-billion model and fitted one H100.  By hand:
    # 94 layers of hidden 4096; attention 4096 x 8192 x 2 (64 heads of 128) + 2 x 4096 x 512 (4 KV heads)
    # = 71,303,168; 128 experts of 3 x 4096 x 1536 = 18,874,368 each = 2,415,919,104; router 4096 x 128 = 524,288;
    # norms 8,192: 2,487,754,752 a layer x 94 = 233,848,946,688, embeddings 2 x 151,936 x 4096 = 1,244,659,712,
    # final norm 4,096: 235,093,610,496 weights x 2 B (bf16) = 470.19 GB; with the KV of one sequence of its
    # 40,960-token window (context.long is longer) at 94 x 2 x 4 x 128 x 2 B = 192,512 B a token, 7.885 GB: 478.1 GB
    path = str(CONFIGS / "qwen3-235b-a22b.json")
    proc = run_cli(*ENGINE_PREFILL, "--model", path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "each accelerator must hold 478.1 GB" in proc.stderr
    assert "above 'parallel.hbm_capacity' (80.0 GB)" in proc.stderr
    out = run_cli_json("compare", "--model", path)
    assert out["params"] == 235_093_610_496


def test_compare_engine_trtllm_is_tensorrt_llm():
    # the kernel tables call TensorRT-LLM trtllm; --engine takes that spelling for the tensorrt-llm preset
    short = run_cli_json(*ENGINE_PREFILL[:6], "trtllm", *ENGINE_PREFILL[7:], "--model", "llama-3-8b")
    long = run_cli_json(*ENGINE_PREFILL[:6], "tensorrt-llm", *ENGINE_PREFILL[7:], "--model", "llama-3-8b")
    assert short == long and short["kernel_tables"]["engine"] == "trtllm"


def test_compare_engine_lists_weight_dtype_once():
    out = run_cli(*ENGINE_PREFILL, "--model", "llama-3-8b").stdout
    assert out.count("\n  weight_dtype ") == 1


NVME_PER_LAYER = ("--bandwidth", "7GB/s", "--latency", "92us", "--layout", "per-layer")
"""An NVMe Gen4 x4 drive's link (7 GB/s, 92 us a copy), each block copied as its 160 layer chunks."""


def test_split_serves_a_prefix_from_an_nvme_tier_per_layer_faster_than_either_pure_way():
    out = run_cli_json("compare", "--split", *NVME_PER_LAYER)["split"]
    # the chapter's interior position (50,000) is past Llama-3-70B's 8,192-token window: the prefix is capped at
    # 8,192 - 16 = 8,176 tokens, then one block of 16 new tokens
    assert (out["prefix_tokens"], out["new_tokens"], out["prompt_tokens"]) == (8176, 16, 8192)
    b = out["batch"]
    # the new tokens inside a batch: 2 x 70e9 x 16 + 2,621,440 x (16 x 8,176 + 16 x 17 / 2) = 2.583285e12 FLOP over
    # 500e12 x 25 % = 20.666 ms; the fetch: 511 blocks x 160 copies x 92 us = 7.52192 s + 8,176 x 327,680 B / 7e9 =
    # 0.38273 s, so fetching costs 7.9253 s and regenerating 9.8788 s
    assert b["rest_s"] == pytest.approx(2.583285e12 / 1.25e14, rel=1e-6)
    assert b["fetch_s"] == pytest.approx(7.52192 + 2_679_111_680 / 7e9 + b["rest_s"], rel=1e-9)
    # the split computes 3,712 tokens, (2 x 70e9 x 3,712 + 2,621,440 x 3,712 x 3,713 / 2) / 1.25e14 = 4.30196 s,
    # while the other 4,464 (279 blocks) arrive in 279 x 160 x 92 us + 4,464 x 327,680 / 7e9 = 4.31585 s:
    # 4.31585 s + 20.666 ms = 4.3365 s, 7.9253 / 4.3365 = 1.8276 times faster than fetching
    assert b["split_tokens"] == 3712 and b["splits"] and b["fastest"] == "split"
    assert b["head_s"] == pytest.approx((2 * 70e9 * 3712 + 2_621_440 * 3712 * 3713 / 2) / 1.25e14, rel=1e-9)
    assert b["tail_s"] == pytest.approx(279 * 160 * 92e-6 + 4464 * 327_680 / 7e9, rel=1e-9)
    assert b["split_s"] == pytest.approx(b["tail_s"] + b["rest_s"], rel=1e-12)
    assert b["gain_over_better_pure"] == pytest.approx(1.8276, rel=1e-4) and b["better_pure"] == "fetch"
    # at 3,712 the tail still outlasts the head, at 3,728 the head the tail: the closed form's crossing (the latency
    # spread over the tail's tokens) lies between the two boundaries
    assert 3712 <= b["closed_form_tokens"] <= 3728
    text = run_cli("compare", "--split", *NVME_PER_LAYER).stdout
    assert "split at 3,712 tokens: 4.34 s, 1.83× faster than the better pure way (fetch); fastest: split" in text
    assert "(the chapter's interior position, capped by the model's 8,192-token window)" in text


def test_split_at_the_books_link_gains_nothing_that_matters_and_says_which_way_is_fastest():
    out = run_cli_json("compare", "--split", "--prefix", "4096", "--suffix", "512")["split"]
    # 64 GB/s carries the 4,096-token prefix (4,096 x 327,680 B) in 20.97 ms, while the head computes 1.12 ms a
    # token (2 x 70e9 FLOP over 1.25e14 FLOP/s): they cross near 20.97 / (1.12 + 0.005) = 18.6 tokens, so the split
    # computes at most a block or two and gains under 1 %
    for regime in ("batch", "lone"):
        r = out[regime]
        assert r["split_s"] <= min(r["fetch_s"], r["regenerate_s"])
        assert r["gain_over_better_pure"] < 1.01 and r["fastest"] in ("split", "fetch")
        # loading layer by layer under the 512 new tokens' prefill, which outlasts the fetch, would beat both
        assert r["layer_overlap_s"] < r["split_s"]
    # an engine that loads layer by layer (LMCache's layerwise mode) makes that the fastest way
    out = run_cli_json("compare", "--split", "--prefix", "4096", "--suffix", "512", "--engine", "lmcache-layerwise")
    assert {out["split"][regime]["fastest"] for regime in ("batch", "lone")} == {"layer-by-layer fetch"}


def test_split_options_are_checked_in_one_line():
    for argv, message in (
        (("compare", "--prefix", "10"), "--prefix and --suffix need --split"),
        (("compare", "--split", "--prefix", "-3"), "--prefix '-3': must be a whole number of tokens from 0"),
        (("compare", "--split", "--suffix", "0"), "--suffix '0': must be a whole number of tokens from 1"),
        (("compare", "--split", "--prefix", "lots"), "--prefix 'lots': not a number of tokens"),
    ):
        proc = run_cli(*argv)
        assert proc.returncode != 0 and proc.stderr.strip().count("\n") == 0, proc.stderr
        assert message in proc.stderr


def test_compare_says_how_many_copies_of_a_block_a_tier_holds():
    # DeepSeek-V3's MLA latent is whole on each of TP 8's ranks: SGLang's host pool keeps one per rank (8 copies),
    # vLLM's CPU offloading (since 0.27) writes it once; Llama-3-70B's 8 KV heads split evenly over TP 8: 1 either way
    args = ("--model", "deepseek-v3", "--set", "param_count=null", "--tp", "8")
    sglang = run_cli_json("compare", *args, "--engine", "sglang")
    assert (sglang["kv_storage"], sglang["stored_copies"]) == ("per-rank", 8.0)
    vllm = run_cli_json("compare", *args, "--engine", "vllm")
    assert (vllm["kv_storage"], vllm["stored_copies"]) == ("mla-once", 1.0)
    llama = run_cli_json("compare", "--tp", "8", "--engine", "sglang")
    assert llama["stored_copies"] == 1.0
    text = run_cli("compare", *args, "--engine", "sglang").stdout
    assert "a tier holds 8 copies of each block (per-rank)" in text


def test_a_ratio_below_one_and_a_latency_that_outlasts_regeneration_are_said_in_words():
    # issue 43: at 1 MB/s the 5 MiB block takes 5.24 s against 17.92 ms: 0.0034x, printed "0.00x"
    out = run_cli("compare", "--bandwidth", "1MB/s").stdout
    assert "ratio            0.0034×  (regenerate / fetch)" in out
    # a 1 s latency alone outlasts the 17.92 ms pass: no bandwidth makes fetching faster (it printed "inf TB/s")
    out = run_cli("compare", "--bandwidth", "100MB/s", "--latency", "1s").stdout
    assert (
        "break-even       none: the link's latency alone (1.00 s) outlasts regenerating (17.92 ms), so regenerating"
        " is faster at any bandwidth" in out
    )
    # a split 0.21 % faster than regenerating (9.86 s against 9.88 s) said as such, not "1.00x faster"
    out = run_cli("compare", "--split", "--bandwidth", "1MB/s").stdout
    assert "split at 8,160 tokens: 9.86 s, 0.21 % faster than the better pure way (regenerate)" in out
