"""The command line: quick answers (text and JSON) and one-line errors with exit status 2."""

import json
import re

import pytest

from tests.conftest import run_cli, run_cli_json, write_config


def test_compare_default_is_the_illustrative_point():
    out = run_cli_json("compare")
    assert out["block_bytes"] == 5_242_880  # 16 x 327,680 B
    assert out["fetch_time_s"] == pytest.approx(81.92e-6)  # 5,242,880 / 64e9
    assert out["regen_time_s"] == pytest.approx(17.92e-3)  # 2.24e12 / (500e12 x 0.25)
    assert out["regen_to_fetch_ratio"] == pytest.approx(218.75)  # 17.92 ms / 81.92 µs
    provenance = {k: v["provenance"] for k, v in out["assumptions"].items()}
    assert provenance["peak_flops"] == "implied"
    assert provenance["bandwidth.mid"] == "assumed"
    assert provenance["mfu.conservative"] == "assumed"


def test_compare_text_lists_assumptions_with_provenance():
    proc = run_cli("compare")
    assert proc.returncode == 0
    assert "5.00 MiB" in proc.stdout and "81.92 µs" in proc.stdout and "17.92 ms" in proc.stdout
    assert "218.75×" in proc.stdout  # 17.92 ms / 81.92 µs
    assert "[implied]" in proc.stdout and "peak_flops" in proc.stdout


def test_compare_options_override():
    out = run_cli_json("compare", "--bandwidth", "121GB/s", "--mfu", "50%", "--tokens", "32", "--kv-dtype", "fp8")
    # fp8 halves KV: 163,840 B/token x 32 tokens = 5,242,880 B; / 121e9 = 43.33 µs
    assert out["block_bytes"] == 5_242_880
    assert out["fetch_time_s"] == pytest.approx(5_242_880 / 121e9)
    # 32 x 2 x 70e9 = 4.48e12 FLOP / (500e12 x 0.5) = 17.92 ms
    assert out["regen_time_s"] == pytest.approx(17.92e-3)
    assert out["assumptions"]["bandwidth.mid"]["source"] == "command line"


def test_compare_with_another_model_uses_its_own_params():
    out = run_cli_json("compare", "--model", "llama-3-8b", "--peak-flops", "989TFLOP/s")
    # 8,030,261,248 params x 2 x 16 = 2.5697e11 FLOP / (989e12 x 0.25) = 1.0393 ms
    assert out["params"] == 8_030_261_248
    assert out["regen_time_s"] == pytest.approx(16 * 2 * 8_030_261_248 / (989e12 * 0.25))
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


def test_model_json_llama3_70b():
    out = run_cli_json("model", "llama-3-70b")
    assert out["kv_bytes_per_token"] == 327_680
    assert out["total_params"] == out["active_params"] == 70_553_706_496
    assert out["weight_bytes"] == 2 * 70_553_706_496
    assert out["param_flops_per_token"] == 2 * 70_553_706_496
    # attention term: 2 x 80 layers x 64 heads x (128 + 128) = 2,621,440 FLOP per cached position
    assert out["attention_flops_per_token_per_position"] == 2_621_440


def test_model_text_and_moe():
    proc = run_cli("model", "mixtral-8x7b")
    assert proc.returncode == 0
    assert "46,702,792,704 total, 12,879,925,248 active" in proc.stdout
    assert "8 routed + 0 shared experts, 2 per token" in proc.stdout


def test_python_dash_m_and_model_fp8():
    out = run_cli_json("model", "deepseek-v3", "--kv-dtype", "fp8")
    assert out["attention"] == "MLA"
    assert out["kv_bytes_per_token"] == 61 * 576  # 35,136 B at 1 B per element


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


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("assumptions: [1, 2", "malformed YAML"),
        ("", "assumptions file is empty"),
        ("assumptions:\n  bandwidth.mid: {value: fast}\n", "key 'bandwidth.mid': cannot read 'fast' as bandwidth"),
        ("assumptions:\n  warp_factor: 9\n", "unknown key 'warp_factor'"),
        ("assumptions:\n  mfu.typical: {value: 0.4, provenance: guessed}\n", "provenance 'guessed'"),
        ("assumptions:\n  block_tokens: 16.5\n", "key 'block_tokens' = 16.5 must be a whole number"),
        ("assumptions:\n  model: 7\n", "key 'model' must be a non-empty string"),
    ],
)
def test_bad_assumption_files(tmp_path, text, needle):
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    proc = run_cli("compare", "--assumptions", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert str(path) in proc.stderr
    assert needle in proc.stderr


def test_assumptions_file_layers_on_seed(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(
        "name: my-lab\nassumptions:\n  bandwidth.mid:\n    value: 100\n    unit: GB/s\n"
        "    provenance: measured\n    basis: our CXL box, STREAM-like copy\n    source: lab notebook 7\n"
    )
    out = run_cli_json("compare", "--assumptions", str(path))
    assert out["fetch_time_s"] == pytest.approx(5_242_880 / 100e9)  # 52.43 µs
    assert out["regen_to_fetch_ratio"] == pytest.approx(0.01792 / (5_242_880 / 100e9))  # 341.8
    rec = out["assumptions"]["bandwidth.mid"]
    assert (rec["provenance"], rec["source"]) == ("measured", "lab notebook 7")
    json.dumps(out)  # serializable


def test_version_and_usage():
    import kvtier

    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"kvtier {kvtier.__version__}"
    bare = run_cli()
    # no command: the usage line and one error line, status 2 like every usage error
    assert bare.returncode == 2 and bare.stdout == ""
    assert " ".join(bare.stderr.split()).startswith(
        "usage: kvtier [-h] [--version] {model,compare,tiers,build,diff,measure,workload,cost}"
    )
    assert bare.stderr.strip().splitlines()[-1] == "kvtier: error: name a command (kvtier --help lists them)"


def test_a_quick_answer_imports_neither_pandas_nor_matplotlib():
    # start-up time is measured in benchmarks/bench.py (e); here: the heavy imports it depends on stay out
    import subprocess
    import sys

    code = (
        "import sys; from kvtier.commands import main; status = main(['compare']);"
        "print(sorted(m for m in ('pandas', 'matplotlib', 'papermill', 'nbformat') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


MLA_KEYS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
HEAD_KEYS = ("kv_heads", "head_dim")


def test_model_mla_prints_latent_and_rope_widths_not_head_dim():
    """Under MLA, `model` gives MLA's own widths only (issue 22, item 18): no `head_dim` of 56.

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
