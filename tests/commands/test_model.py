"""`kvtier model`: a preset or config.json read into its KV geometry, text and JSON, and bad configs."""

import re

import pytest

from tests.conftest import run_cli, run_cli_json, write_config

MLA_KEYS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")


HEAD_KEYS = ("kv_heads", "head_dim")


def test_model_json_llama3_70b():
    out = run_cli_json("model", "llama-3-70b")
    assert out["kv_bytes_per_token"] == 327_680
    assert out["total_params"] == out["active_params"] == 70_553_706_496
    assert out["weight_bytes"] == 2 * 70_553_706_496
    assert out["param_flops_per_token"] == 2 * 70_553_706_496
    # attention term: 2 x 80 layers x 64 heads x (128 + 128) = 2,621,440 FLOP per cached position
    assert out["attention_flops_per_token_per_position"] == 2_621_440


def test_model_weights_in_the_published_dtype_unless_weight_dtype_names_one():
    # DeepSeek-V3 publishes fp8 weights (quantization_config fp8 e4m3): 671,026,419,200 params x 1 B = 671.03 GB,
    # not the 1,342.05 GB of bf16; --weight-dtype overrides it (int4: 0.5 B a weight, 335.51 GB)
    out = run_cli_json("model", "deepseek-v3")
    assert (out["weight_dtype"], out["weight_bytes"]) == ("fp8", 671_026_419_200)
    assert out["weight_dtype_source"] == "published: its quantization_config (quant_method fp8, fmt e4m3)"
    assert run_cli_json("model", "deepseek-v3", "--weight-dtype", "bf16")["weight_bytes"] == 2 * 671_026_419_200
    int4 = run_cli_json("model", "deepseek-v3", "--weight-dtype", "int4")
    assert (int4["weight_bytes"], int4["weight_dtype_source"]) == (671_026_419_200 / 2, "--weight-dtype")
    # Llama-3 70B's torch_dtype bfloat16: 2 B; the text names the dtype and where it came from
    proc = run_cli("model", "llama-3-70b")
    assert "141.11 GB = 131.42 GiB (bf16; published: its torch_dtype ('bfloat16'))" in proc.stdout


def test_model_text_and_moe():
    proc = run_cli("model", "mixtral-8x7b")
    assert proc.returncode == 0
    assert "46,702,792,704 total, 12,879,925,248 active" in proc.stdout
    assert "8 routed + 0 shared experts, 2 per token" in proc.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("model", "llama-9"), "model 'llama-9': unknown preset"),
        (("model", "/nonexistent/config.json"), "/nonexistent/config.json: model config file not found"),
        (("compare", "--mfu", "0"), "key 'mfu.conservative' = '0' is out of range; allowed: fraction in [0.0001, 1]"),
        (("compare", "--mfu", "1.5"), "key 'mfu.conservative' = '1.5' is out of range"),
        (("compare", "--bandwidth=-5GB/s"), "key 'bandwidth.mid' = '-5GB/s' is out of range"),
        (("compare", "--bandwidth", "0GB/s"), "key 'bandwidth.mid' = '0GB/s' is out of range"),
        (("compare", "--bandwidth", "inf"), "key 'bandwidth.mid' must be finite"),
        (("compare", "--peak-flops", "nan"), "key 'peak_flops' must be finite"),
        (("compare", "--peak-flops=-1TFLOP/s"), "key 'peak_flops' = '-1TFLOP/s' is out of range"),
        (("compare", "--bandwidth", "64 furlongs"), "cannot read '64 furlongs' as bandwidth"),
        (("compare", "--kv-dtype", "int3"), "key 'kv_dtype' must be one of bf16, fp16, fp32, fp8"),
        (("compare", "--set", "nonsense=1"), "unknown key 'nonsense'"),
        (("compare", "--assumptions", "/nonexistent.yaml"), "/nonexistent.yaml: assumptions file not found"),
        (("frobnicate",), "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_input_one_line_exit_2(args, needle):
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("kvtier: error: ")
    assert needle in lines[0]


def test_malformed_json_config(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"num_hidden_layers": 2,')
    proc = run_cli("model", str(bad))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{bad}: malformed JSON at line 1" in proc.stderr


def test_config_missing_field(tmp_path):
    cfg = write_config(tmp_path / "config.json", num_hidden_layers=2, num_attention_heads=8, vocab_size=10)
    proc = run_cli("compare", "--model", str(cfg))
    assert proc.returncode == 2
    assert f"{cfg}: missing required field 'hidden_size'" in proc.stderr


def test_model_mla_prints_latent_and_rope_widths_not_head_dim():
    """Under MLA, `model` gives MLA's own widths only : no `head_dim` of 56.

    deepseek-v3's config.json: kv_lora_rank 512, q_lora_rank 1536, qk_rope_head_dim 64,
    qk_nope_head_dim 128, v_head_dim 128; hidden 7168 / 128 heads = 56 describes no tensor.
    """
    proc = run_cli("model", "deepseek-v3")
    assert proc.returncode == 0
    assert "latent of 512 + a rope key of 64 per layer (q/k heads 128 + 64, v heads 128, q latent 1536)" in proc.stdout
    assert "head_dim" not in proc.stdout
    assert not re.search(r"\b56\b", proc.stdout)  # 7168 / 128 appears nowhere
    out = run_cli_json("model", "deepseek-v3")
    assert {k: out[k] for k in MLA_KEYS} == {
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
    }
    assert not set(HEAD_KEYS) & set(out)


def test_model_gqa_prints_heads_and_head_dim_and_no_mla_widths():
    # llama-3-70b: 64 query heads, 8 KV heads, 8192 / 64 = 128 head_dim
    assert "heads (q / kv)      64 / 8, head_dim 128" in run_cli("model", "llama-3-70b").stdout
    out = run_cli_json("model", "llama-3-70b")
    assert (out["kv_heads"], out["head_dim"]) == (8, 128)
    assert not set(MLA_KEYS) & set(out)
