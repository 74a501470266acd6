"""The measured page's engine check and Mooncake's Equation 2 (:mod:`kvtier.report.pages.measured.engines`)."""

from __future__ import annotations

import math
import shlex

import pytest

from kvtier.report.pages.measured import engines
from tests.conftest import run_cli_json


def test_each_counted_row_is_what_its_command_prints(seed_scenario):
    df = engines.engine_table(seed_scenario).set_index("id")
    for row_id in ("vllm-offload-h100-10k", "nim-h100-tp2-500", "vllm-offload-h100-20k", "vllm-fp8kv-b200-128k"):
        row = df.loc[row_id]
        out = run_cli_json(*shlex.split(row["command"])[1:])
        assert out["regen_time_s"] * 1e3 == pytest.approx(row["model_ms"], rel=1e-12)
        # error = model / published - 1
        assert row["error_pct"] == pytest.approx((row["model_ms"] / row["measured_ms"] - 1) * 100, rel=1e-12)
        assert row["status"] == "counted"
        # past the grid the command asks for the extrapolation, and compare names the bound it crosses
        past = row["group"] == engines.PAST_GRID
        assert row["command"].endswith(" --beyond-grid extrapolate") == past
        assert (out["beyond_grid"] or "") == row["beyond"] and bool(row["beyond"]) == past  # None inside the grid
    beyond = df.loc["vllm-offload-h100-20k", "beyond"]
    assert beyond == "a sequence of 20,000 tokens (context attention measured to 16,384)"
    assert (
        df.loc["vllm-fp8kv-b200-16k", "status"] == "unreadable"
        and "off an axis" in df.loc["vllm-fp8kv-b200-16k", "why"]
    )


def test_a_row_past_the_grid_is_the_estimators_extrapolated_pass(seed_scenario):
    from kvtier.inputs import kernels

    df = engines.engine_table(seed_scenario).set_index("id")
    cfg = kernels.model_config("llama-3-8b")
    h100 = kernels.estimator(cfg, "llama-3-8b", kernels.tables("h100_sxm", "vllm"))
    b200 = kernels.estimator(cfg, "llama-3-8b", kernels.tables("b200_sxm", "vllm"))
    # vLLM blog of 2026-01-08, H100, 20,000 tokens, 640 ms read off the chart: one pass of 20,000 tokens, none cached,
    # past the 16,384-token grid: 563.07 ms, so (563.07 - 640) / 640 = -12.02 %
    row = df.loc["vllm-offload-h100-20k"]
    assert row["model_ms"] == h100.pass_ms(1, 20_000, 0, extrapolate=True)
    assert row["model_ms"] == pytest.approx(563.07, abs=0.01)
    assert row["error_pct"] == pytest.approx((563.07 - 640) / 640 * 100, abs=0.01)
    # vLLM FP8 KV blog of 2026-04-22, B200, 131,072 tokens, 4,860 ms: 4,938.66 ms, (4,938.66 - 4,860) / 4,860 = +1.62 %
    row = df.loc["vllm-fp8kv-b200-128k"]
    assert row["model_ms"] == b200.pass_ms(1, 131_072, 0, extrapolate=True)
    assert row["error_pct"] == pytest.approx((4938.66 - 4860) / 4860 * 100, abs=0.01)
    # the same blog's H100 at 32,768 tokens, 1,330 ms: 1,082.12 ms, (1,082.12 - 1,330) / 1,330 = -18.64 %
    row = df.loc["vllm-fp8kv-h100-32k"]
    assert row["model_ms"] == h100.pass_ms(1, 32_768, 0, extrapolate=True)
    assert row["error_pct"] == pytest.approx((1082.12 - 1330) / 1330 * 100, abs=0.01)
    # inside the grid the extrapolation changes nothing: 10,000 tokens, 248.66 ms against 260, -4.36 %
    row = df.loc["vllm-offload-h100-10k"]
    assert row["group"] == engines.IN_GRID and row["beyond"] == ""
    assert row["model_ms"] == h100.pass_ms(1, 10_000, 0)
    assert row["error_pct"] == pytest.approx((248.66 - 260) / 260 * 100, abs=0.01)


def test_a_value_below_its_flop_floor_is_shown_and_not_counted(seed_scenario):
    df = engines.engine_table(seed_scenario).set_index("id")
    # Llama-3-8B's 8,030,261,248 parameters less its embedding and LM head, 2 x 128,256 x 4,096 = 1,050,673,152:
    # 6,979,588,096 in the layers; x 2 FLOP x 16,384 tokens / 989e12 FLOP/s (the H100's dense bf16 peak) = 231.25 ms
    assert engines.layer_params(engines.published_scenario(engines.published_measurements()[0])) == 6_979_588_096
    row = df.loc["vllm-fp8kv-h100-16k"]
    assert row["floor_ms"] == pytest.approx(2 * 6_979_588_096 * 16_384 / 989e12 * 1e3, rel=1e-12)
    assert row["floor_ms"] == pytest.approx(231.25, abs=0.01)
    # the chart's 160 ms is under it: no engine is that fast, so the row is shown and not counted
    assert row["status"] == "below the FLOP floor" and row["why"].startswith("160 ms is less than the 231 ms")
    # the B200's floor at the same prompt: x 989 / 2,250 = 101.65 ms, under its 140 ms (excluded as unreadable)
    assert df.loc["vllm-fp8kv-b200-16k", "floor_ms"] == pytest.approx(231.25 * 989 / 2250, abs=0.01)
    # fp8 weights run at a peak no preset states: no floor
    assert math.isnan(df.loc["nim-h100-tp2-500", "floor_ms"])
    # every counted row is above its floor
    counted = df[df["status"] == "counted"]
    assert (counted["measured_ms"] > counted["floor_ms"].fillna(0)).all()


def test_the_engine_numbers_count_each_group_on_its_own(seed_scenario):
    n = engines.engine_numbers(seed_scenario)
    df = engines.engine_table(seed_scenario)
    counted = df[df["status"] == "counted"]
    # 28 rows: one unreadable chart reading, one below its FLOP floor (both at 16,384 tokens, inside the grid);
    # 26 counted: 3 inside the grid, 23 past it (9 of the offloading blog's H100 series, 7 each of the FP8 blog's
    # H100 and B200 series)
    assert (n["engine_rows"], n["engine_points"], n["engine_left_out"]) == (28, 26, 2) == (len(df), len(counted), 2)
    assert (n["engine_unreadable"], n["engine_below_floor"]) == (1, 1)
    assert (n["engine_in_points"], n["engine_past_points"]) == (3, 23)
    assert n["engine_grid_tokens"] == "16,384"
    # inside: the three H100 points of 500 to 10,000 tokens, -6.75 % (NIM, 500) to -4.36 % (vLLM, 10,000); the
    # median is the middle one, NIM's 5,000 tokens: 388.53 ms against 406.77, -4.48 %
    assert (n["engine_in_accelerators"], n["engine_in_engines"]) == ("h100-sxm", "tensorrt-llm and vllm")
    assert (n["engine_in_tokens_min"], n["engine_in_tokens_max"]) == (500, 10_000)
    assert n["engine_in_err_min_pct"] == pytest.approx((44.55 - 47.77) / 47.77 * 100, abs=0.01)
    assert n["engine_in_err_max_pct"] == pytest.approx((248.66 - 260) / 260 * 100, abs=0.01)
    assert n["engine_in_err_median_pct"] == pytest.approx((388.53 - 406.77) / 406.77 * 100, abs=0.01)
    # past: 20,000 to 131,072 tokens on the B200 and the H100, all vLLM and all read off charts; -19.23 % (B200,
    # 32,768: 557.34 ms against 690) to +1.62 % (B200, 131,072); the median, 12th of 23, is the H100's 20,000, -12.02 %
    assert (n["engine_past_accelerators"], n["engine_past_engines"]) == ("b200 and h100-sxm", "vllm")
    assert (n["engine_past_tokens_min"], n["engine_past_tokens_max"], n["engine_past_plot_points"]) == (
        20_000,
        131_072,
        23,
    )
    assert n["engine_past_err_min_pct"] == pytest.approx((557.34 - 690) / 690 * 100, abs=0.01)
    assert n["engine_past_err_max_pct"] == pytest.approx((4938.66 - 4860) / 4860 * 100, abs=0.01)
    assert n["engine_past_err_median_pct"] == pytest.approx((563.07 - 640) / 640 * 100, abs=0.01)
    # the B200 is checked only past the grid: its one reading inside it is unreadable
    assert n["engine_past_only_accelerators"] == "b200"
    assert (n["engine_accelerators"], n["engine_engines"]) == (2, 2)
    assert n["engine_worst_abs_pct"] == pytest.approx(-n["engine_past_err_min_pct"], rel=1e-12)
    # the group table is the same numbers
    groups = engines.engine_group_table(seed_scenario).set_index("group")
    assert list(groups.index) == list(engines.GROUPS)
    assert groups.loc[engines.PAST_GRID, "err_median_pct"] == n["engine_past_err_median_pct"]
    assert tuple(groups["points"]) == (3, 23) and tuple(groups["rows"]) == (5, 23)


def test_mooncakes_equation_2_by_hand():
    n = engines.mooncake_numbers()
    # KV of 8,192 tokens: 8,192 x 80 layers x (2 x 8,192 / 8) x 2 B = 2,684,354,560 B, kvtier's 327,680 B/token too
    assert n["mc_kv_bytes"] == n["mc_kv_bytes_kvtier"] == 2_684_354_560
    # Equation 1 at n = p = d = 8,192: 80 x (4 + 22) x 8,192^3 = 1,143,492,092,887,040 FLOP
    assert n["mc_flops_theirs"] == 80 * 26 * 8192**3 == 1_143_492_092_887_040
    # B > bytes x G / FLOPs: 2,684,354,560 x 2.496e15 / 1.143492e15 = 5.859 GB/s (paper: 6); x 989 / 312 = 18.57 (19)
    assert n["mc_a800_theirs_gbps"] == pytest.approx(5.859375, rel=1e-12)
    assert n["mc_h800_theirs_gbps"] == pytest.approx(5.859375 * 989 / 312, rel=1e-12)
    # kvtier: 2 x 70,553,706,496 parameters x 8,192 = 1.15595e15 linear FLOP, 19.5 % above 80 x 22 x 8,192^3
    assert n["mc_linear_ours"] == 2 * 70_553_706_496 * 8192
    assert n["mc_linear_extra_pct"] == pytest.approx((2 * 70_553_706_496 / (80 * 22 * 8192**2) - 1) * 100, rel=1e-12)
    # causal attention: 2 x 80 layers x 64 heads x 256 = 2,621,440 FLOP per (token, earlier position) over
    # 8,192 x 8,191 / 2 pairs ... about half of Equation 1's 4 x n^2 x d a layer
    assert 45 < n["mc_attention_share_pct"] < 55
    # more FLOPs, lower bandwidth: 5.386 and 17.07 GB/s
    assert n["mc_a800_ours_gbps"] == pytest.approx(n["mc_a800_theirs_gbps"] / n["mc_flops_ratio"], rel=1e-12)
    assert 5.3 < n["mc_a800_ours_gbps"] < 5.5 and 17.0 < n["mc_h800_ours_gbps"] < 17.2


def test_the_position_check_is_the_estimators_lone_pass():
    from kvtier.inputs import kernels

    n = engines.position_numbers()
    est = kernels.estimator(kernels.model_config("llama-3-8b"), "llama-3-8b", kernels.tables("h200_sxm", "vllm"))
    # 16 tokens after 0, 4,080 and 16,368 cached (16,384 - 16: the last block the grid holds)
    assert (n["pos_mid"], n["pos_last"]) == (4080, 16_368)
    assert n["pos_first_ms"] == est.pass_ms(1, 16, 0)
    assert n["pos_mid_ms"] == est.pass_ms(1, 4096, 4080)
    assert n["pos_last_ms"] == est.pass_ms(1, 16_384, 16_368)
    assert n["pos_mid_drop_pct"] == pytest.approx((1 - n["pos_mid_ms"] / n["pos_first_ms"]) * 100, rel=1e-12)


def test_the_stack_comparison_is_each_measured_pass_over_the_engines(seed_scenario):
    from kvtier.inputs import kernels

    df = engines.stack_table(seed_scenario).set_index(["shape", "runner", "tokens"])
    est = kernels.estimator(kernels.model_config("llama-3-70b"), "llama-3-70b", kernels.tables("h200_sxm", "vllm"))
    row = df.loc[("llama-3-70b", "eager", 4096)]
    # the measured 1,070.2 ms eager pass over the engine's lone 4,096-token pass (832.4 ms with 0.12.0's tables)
    assert row["engine_ms"] == est.pass_ms(1, 4096, 0)
    assert row["slower"] == pytest.approx(row["measured_ms"] / row["engine_ms"], rel=1e-12)
    assert 1.0 < row["slower"] < 2.0
    # only plain PyTorch's passes (eager and CUDA graph): 12 + 1 of 70B, 8 + 1 of 8B
    assert len(df) == 22 and set(df.index.get_level_values("runner")) == {"eager", "CUDA graph"}
    n = engines.stack_numbers(seed_scenario)
    long = df[(df.index.get_level_values("runner") == "eager") & (df.index.get_level_values("tokens") >= 1024)]
    assert (n["stack_long_min"], n["stack_long_max"]) == (long["slower"].min(), long["slower"].max())
    assert n["stack_graph70"] == df.loc[("llama-3-70b", "CUDA graph", 16), "slower"]
