"""The shared --assumptions/--set options: assumption files layered on the seed set, and bad files."""

import json

import pytest

from kvtier.commands import options
from kvtier.errors import KvtierError
from tests.conftest import run_cli, run_cli_json


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
    # 17.92285212672 ms (the tail block, its attention over itself included) / 52.43 µs = 341.85
    assert out["regen_to_fetch_ratio"] == pytest.approx(0.01792285212672 / (5_242_880 / 100e9), rel=1e-12)
    rec = out["assumptions"]["bandwidth.mid"]
    assert (rec["provenance"], rec["source"]) == ("measured", "lab notebook 7")
    json.dumps(out)  # serializable


@pytest.mark.parametrize(
    ("option", "value", "key", "other"),
    [
        # issue 43: "4" and "4.0", "64GB/s" and "64e9B/s" were refused as two values of one key
        ("--tp", "4", "parallel.tp", "4.0"),
        ("--bandwidth", "64GB/s", "bandwidth.mid", "64e9B/s"),
    ],
)
def test_an_option_and_a_set_of_the_same_value_written_otherwise_agree(option, value, key, other):
    sets = {key: other}
    options.alias(sets, option, value, key)
    assert sets == {key: value}


def test_a_bad_option_value_is_named_as_the_option_not_as_set():
    # issue 43: "--sample 0" said "--set: key 'workload.sample_rate' = '0' is out of range"
    with pytest.raises(KvtierError, match=r"^--sample 0: key 'workload.sample_rate' = '0' is out of range"):
        options.alias({}, "--sample", "0", "workload.sample_rate")


@pytest.mark.parametrize(("a", "b"), [("2us", "2000ns"), ("0.1ms", "100us"), ("0.3us", "300ns")])
def test_equal_times_written_in_other_units_agree(a, b):
    # second round: 2e-6 and 2000e-9 differ in their last bit; compared to 1e-12 relative they are one value
    sets = {"fetch_latency": b}
    options.alias(sets, "--latency", a, "fetch_latency")
    assert sets == {"fetch_latency": a}
