"""`python -m kvtier` runs the same command line as the `kvtier` script."""

from tests.conftest import run_cli_json


def test_python_dash_m_and_model_fp8():
    out = run_cli_json("model", "deepseek-v3", "--kv-dtype", "fp8")
    assert out["attention"] == "MLA"
    assert out["kv_bytes_per_token"] == 61 * 576  # 35,136 B at 1 B per element
