"""kvtier.inputs.probe.document: every value and range of the set by hand, and paths that work from any directory."""

from __future__ import annotations

import argparse
import json

import yaml

from kvtier.commands import measure as measure_command
from kvtier.inputs.assumptions import load_assumptions
from kvtier.inputs.probe import backends, document, measuring
from kvtier.scenario import Scenario
from tests.conftest import TINY


def _synthetic(tiny: str) -> measuring.Result:
    """A result with round timings, so that every value and range can be worked out by hand."""
    ms = 1e-3
    return measuring.Result(
        backend="cpu",
        machine="a test machine",
        copy_what="copies",
        dtype="float32",
        model=tiny,
        layers_built=3,
        layers_total=3,
        # 10 MB in 1 ms is 10 GB/s; 20 MB in 2 ms too: latency 0, bandwidth 10 GB/s
        copies=(
            (10_000_000, backends.Timing(1 * ms, 1 * ms, 1 * ms)),
            (20_000_000, backends.Timing(2 * ms, 1.6 * ms, 2.5 * ms)),
        ),
        latency_s=0.0,
        bandwidth=10e9,
        mem_bytes=40_000_000,  # read plus write of 20 MB in 2 ms: 20 GB/s
        mem_copy=backends.Timing(2 * ms, 2 * ms, 2 * ms),
        matmul_n=500,  # 2 x 500^3 = 2.5e8 FLOP in 2.5 ms: 100 GFLOP/s
        matmul=backends.Timing(2.5 * ms, 2.5 * ms, 2.5 * ms),
        # the tiny model: 143,360 parameters, 2 x 143,360 x tokens FLOP; at 100 GFLOP/s 16 tokens take 45.875 us
        sweep=(
            (1, backends.Timing(28.672e-6, 28.672e-6, 28.672e-6)),  # 286,720 FLOP: 10 GFLOP/s, an MFU of 10 %
            (16, backends.Timing(91.75e-6, 91.75e-6, 91.75e-6)),  # 4,587,520 FLOP: 50 GFLOP/s, 50 %
            (64, backends.Timing(367e-6, 293.6e-6, 458.75e-6)),  # 18,350,080 FLOP: 50 %; fastest 62.5 %, slowest 40 %
        ),
        weight_bytes=573_440.0,  # 143,360 x 4 B
        reps=5,
        date="2026-12-01",
    )


def test_every_measured_value_gets_a_range_by_hand(tiny):
    a = document.assumption_set(_synthetic(tiny))["assumptions"]
    value = {key: rec["value"] for key, rec in a.items()}
    # bandwidth: the largest copy's spread, 2 / 2.5 and 2 / 1.6 of 10 GB/s = 8 and 12.5 GB/s (wider than +-10 %);
    # the brackets are the range's ends around the fitted 10 GB/s
    assert (value["uncertainty.bandwidth_low"], value["uncertainty.bandwidth_high"]) == ("8 GB/s", "12.5 GB/s")
    assert (value["bandwidth.pessimistic"], value["bandwidth.mid"], value["bandwidth.optimistic"]) == (
        "8 GB/s",
        "10 GB/s",
        "12.5 GB/s",
    )
    # peak: 0.1 TFLOP/s with no spread between repetitions: the stated band, 90 % and 110 % of it
    assert value["peak_flops"] == "0.1 TFLOP/s"
    assert (value["uncertainty.peak_low"], value["uncertainty.peak_high"]) == ("0.09 TFLOP/s", "0.11 TFLOP/s")
    # memory: 20 GB/s, no spread: 18 to 22 GB/s
    assert (value["uncertainty.mem_bandwidth_low"], value["uncertainty.mem_bandwidth_high"]) == ("18 GB/s", "22 GB/s")
    # MFU: passes at 10 %, 50 %, 50 %; the upper half (16 and 64 tokens) gives typical 50 %, conservative 50 %;
    # optimistic the best, 50 %. Range: the slowest of the upper half, 40 %, and the fastest of all, 62.5 %
    assert (value["mfu.conservative"], value["mfu.typical"], value["mfu.optimistic"]) == ("50%", "50%", "50%")
    assert (value["uncertainty.mfu_low"], value["uncertainty.mfu_high"]) == ("40%", "62.5%")
    # memory efficiency: 573,440 B / 91.75 us = 6.25 GB/s over 20 GB/s = 31.25 %; no spread: 28.125 % (0.9 x 31.25,
    # a hair above in floating point: 28.13) to 34.375 % (34.38)
    assert value["regen.mem_efficiency"] == "31.25%"
    assert (value["uncertainty.mem_efficiency_low"], value["uncertainty.mem_efficiency_high"]) == ("28.13%", "34.38%")
    for name in ("bandwidth", "mfu", "peak", "mem_bandwidth", "mem_efficiency"):
        for end in ("low", "high"):
            rec = a[f"uncertainty.{name}_{end}"]
            assert rec["provenance"] == "derived" and "measured by kvtier measure" in rec["source"], name
            assert "repetition (5 timed)" in rec["basis"] and "10%" in rec["basis"], rec["basis"]


def test_a_model_path_is_written_absolute_and_the_set_works_from_elsewhere(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(measuring, "SIZES_QUICK", (4096, 2**20))
    monkeypatch.setattr(measuring, "SWEEP_QUICK", (1, 16))
    lab = tmp_path / "lab"
    (lab / "tiny").mkdir(parents=True)
    (lab / "tiny" / "config.json").write_text(json.dumps(TINY))
    monkeypatch.chdir(lab)
    parser = argparse.ArgumentParser(prog="kvtier")
    measure_command.add_parser(parser.add_subparsers(dest="command", required=True))
    argv = ["measure", "--out", "m.yaml", "--model", "tiny/config.json", "--device", "cpu", "--quick"]
    args = parser.parse_args(argv)
    assert args.func(args) == 0
    written = yaml.safe_load((lab / "m.yaml").read_text())["assumptions"]["model"]["value"]
    assert written == str(lab / "tiny" / "config.json")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert Scenario(load_assumptions(lab / "m.yaml")).model.name == "tiny"
    assert document.resolve_model("llama-3-8b") == "llama-3-8b"  # a preset stays a name


def test_paths_in_a_set_resolve_against_the_set_file(tmp_path, monkeypatch):
    # a hand-written set names its model and trace relative to itself; loaded from another directory they
    # still name the same files (they were taken relative to the current directory: "config file not found")
    lab = tmp_path / "lab"
    (lab / "models" / "tiny").mkdir(parents=True)
    (lab / "models" / "tiny" / "config.json").write_text(json.dumps(TINY))
    (lab / "set.yaml").write_text("assumptions:\n  model: models/tiny/config.json\n  workload.trace: traces/t.jsonl\n")
    monkeypatch.chdir(tmp_path)  # below the current directory: relative to it, so no absolute path is published
    a = load_assumptions("lab/set.yaml")
    assert (a.value("model"), a.value("workload.trace")) == ("lab/models/tiny/config.json", "lab/traces/t.jsonl")
    assert Scenario(a).model.name == "tiny"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # elsewhere: absolute
    a = load_assumptions(lab / "set.yaml")
    assert a.value("model") == str(lab / "models" / "tiny" / "config.json")
    assert Scenario(a).model.name == "tiny"
    # a model directory (holding config.json) too, and names stay names
    (lab / "set.yaml").write_text("assumptions:\n  model: models/tiny\n  workload.trace: synthetic\n")
    a = load_assumptions(lab / "set.yaml")
    assert (a.value("model"), a.value("workload.trace")) == (str(lab / "models" / "tiny"), "synthetic")
    (lab / "set.yaml").write_text("assumptions:\n  model: llama-3-8b\n")
    assert load_assumptions(lab / "set.yaml").value("model") == "llama-3-8b"
    # --set on the command line still resolves against the current directory
    assert load_assumptions(sets={"model": "tiny/config.json"}).value("model") == "tiny/config.json"
