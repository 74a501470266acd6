"""The measured page's engine check and Mooncake's Equation 2 (:mod:`kvtier.report.pages.measured.engines`)."""

from __future__ import annotations

import math
import shlex

import pytest

from kvtier.report.pages.measured import engines
from tests.conftest import run_cli_json


def test_each_counted_row_is_what_its_command_prints(seed_scenario):
    df = engines.engine_table(seed_scenario).set_index("id")
    for row_id in ("vllm-offload-h100-10k", "nim-h100-tp2-500"):
        row = df.loc[row_id]
        out = run_cli_json(*shlex.split(row["command"])[1:])
        assert out["regen_time_s"] * 1e3 == pytest.approx(row["model_ms"], rel=1e-12)
        # error = model / published - 1
        assert row["error_pct"] == pytest.approx((row["model_ms"] / row["measured_ms"] - 1) * 100, rel=1e-12)
        assert row["status"] == "counted"
    # a prompt beyond the tables' 16,384 tokens is refused by the model, shown and not counted
    beyond = df.loc["vllm-offload-h100-20k"]
    assert math.isnan(beyond["model_ms"]) and beyond["status"] == "beyond the grid"
    assert beyond["why"] == "20,000 tokens are beyond the tables' 16,384: the model refuses"
    assert (
        df.loc["vllm-fp8kv-b200-16k", "status"] == "unreadable"
        and "off an axis" in df.loc["vllm-fp8kv-b200-16k", "why"]
    )


def test_the_engine_numbers_count_only_counted_rows(seed_scenario):
    n = engines.engine_numbers(seed_scenario)
    df = engines.engine_table(seed_scenario)
    counted = df[df["status"] == "counted"]
    # six rows: two chart readings excluded, one prompt beyond the grid, three counted (two engines, one accelerator)
    assert (n["engine_rows"], n["engine_points"]) == (6, 3) == (len(df), len(counted))
    assert (n["engine_accelerators"], n["engine_engines"]) == (1, 2)
    assert n["engine_err_min_pct"] == counted["error_pct"].min() and n["engine_worst_abs_pct"] <= 10


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
