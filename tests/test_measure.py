"""``kvtier measure`` on the CPU path: small shapes, a valid assumption set, atomic writes, refusals."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest
import yaml

from kvtier import measure
from kvtier.assumptions import check_consistency, load_assumptions
from kvtier.errors import KvtierError
from kvtier.pages import csv_texts
from kvtier.scenario import Scenario

TINY = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 256,
    "num_hidden_layers": 3,
    "tie_word_embeddings": False,
    "max_position_embeddings": 4096,
}
"""A Llama-shaped model small enough to measure in a test: 3 layers of 64 wide."""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("tiny") / "config.json"
    path.write_text(json.dumps(TINY))
    return str(path)


@pytest.fixture(scope="module")
def result(tiny) -> measure.Result:
    return measure.measure(
        tiny, measure.cpu_backend(), sizes=(4096, 2**20, 4 * 2**20), sweep=(1, 16, 64), matmul_n=512, reps=3
    )


def test_layer_params_by_hand(tiny):
    # one layer of the tiny model: q, k, v 64 x (64 + 2 x 32) + o 64 x 64 + MLP 3 x 64 x 128
    #   = 8,192 + 4,096 + 24,576 = 36,864
    assert measure.layer_params(measure.load_model(tiny)) == 36_864
    spec = measure.load_model("llama-3-70b")
    # Llama-3-70B: 8192 x (8192 + 2 x 1024) + 8192 x 8192 + 3 x 8192 x 28672 = 855,638,016 (the norms left out)
    assert measure.layer_params(spec) == 855_638_016


def test_the_cpu_run_measures_every_side(result):
    assert result.backend == "cpu" and "no GPU" in result.machine
    assert [n for n, _ in result.copies] == [4096, 2**20, 4 * 2**20]
    assert all(t > 0 for _, t in result.copies) and result.bandwidth > 0 and result.latency_s >= 0
    assert result.mem_bandwidth > 0 and result.matmul_rate > 0
    assert [t for t, _ in result.sweep] == [1, 16, 64]
    assert result.layers_built == result.layers_total == 3
    # float32 weights held: 3 layers x 36,864 + embedding and head 2 x 256 x 64 = 143,360 parameters x 4 B
    assert result.weight_bytes == 143_360 * 4


def test_the_set_it_writes_loads_validates_and_computes_every_table(result, tmp_path):
    out = tmp_path / "measured.yaml"
    measure.write_set(result, out)
    a = load_assumptions(out)
    check_consistency(a)
    assert a.name == "measured-cpu"
    for key in ("fetch_latency", "bandwidth.mid", "peak_flops", "mfu.typical", "regen.mem_bandwidth"):
        rec = a[key]
        assert rec.provenance in ("measured", "derived") and "CPU" in rec.source and "no GPU" in rec.source, key
    assert a.value("bandwidth.mid") == pytest.approx(result.bandwidth, rel=1e-3)  # written to 4 significant digits
    assert a.value("peak_flops") == pytest.approx(result.matmul_rate, rel=1e-3)
    assert a.value("regen.model") == "roofline"
    texts = csv_texts(Scenario(a))  # every table of record computes from it
    assert texts and all(texts.values())
    # no temporary file is left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["measured.yaml"]


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(result, tmp_path, monkeypatch):
    out = tmp_path / "measured.yaml"
    out.write_text("old\n")

    def broken(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        measure.write_set(result, out)
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["measured.yaml"]


def test_a_model_too_large_is_refused_in_one_line_offering_layers(monkeypatch):
    backend = measure.cpu_backend()
    monkeypatch.setattr(backend, "free_bytes", lambda: 10e9)
    spec = measure.load_model("llama-3-70b")
    with pytest.raises(KvtierError) as err:
        measure.plan_layers(spec, backend, None)
    # 80 layers x 855,638,016 x 4 B + 2 x 128,256 x 8192 x 4 B = 282.2 GB against 60 % of 10 GB = 6 GB;
    # one layer takes 3.42 GB and embeddings and head 8.4 GB: not even one fits, so it offers --layers 1
    text = str(err.value)
    assert "\n" not in text and "282.2 GB" in text and "--layers 1" in text, text
    monkeypatch.setattr(backend, "free_bytes", lambda: 100e9)
    assert measure.plan_layers(spec, backend, 2) == 2
    with pytest.raises(KvtierError, match="--layers must be between 1 and 80"):
        measure.plan_layers(spec, backend, 81)


def test_measuring_fewer_layers_scales_to_all_and_says_so(tiny, tmp_path):
    r = measure.measure(tiny, measure.cpu_backend(), layers=1, sizes=(4096, 2**20), sweep=(16,), matmul_n=512, reps=2)
    assert (r.layers_built, r.layers_total) == (1, 3)
    doc = measure.assumption_set(r)
    assert "ran 1 of 3 layers and were scaled by 3/1" in doc["assumptions"]["mfu.typical"]["basis"]


def test_the_command_line_refuses_a_model_without_dense_attention(tmp_path):
    parser = argparse.ArgumentParser(prog="kvtier")
    measure.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        ["measure", "--out", str(tmp_path / "m.yaml"), "--model", "deepseek-v3", "--device", "cpu"]
    )
    with pytest.raises(KvtierError, match="dense MHA/GQA decoders only; this one is MLA"):
        args.func(args)
    assert not (tmp_path / "m.yaml").exists()


def test_the_command_line_writes_a_set(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(measure, "SIZES_QUICK", (4096, 2**20))
    monkeypatch.setattr(measure, "SWEEP_QUICK", (1, 16))
    parser = argparse.ArgumentParser(prog="kvtier")
    measure.add_parser(parser.add_subparsers(dest="command", required=True))
    out = tmp_path / "m.yaml"
    args = parser.parse_args(["measure", "--out", str(out), "--model", tiny, "--device", "cpu", "--quick"])
    assert args.func(args) == 0
    assert yaml.safe_load(out.read_text())["name"] == "measured-cpu"
    assert Path(out).read_text().startswith("# Written by kvtier measure")
