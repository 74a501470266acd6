"""``kvtier measure`` on the CPU path: small shapes, a valid assumption set, atomic writes, refusals.

Refusals through the real command line (one line, exit 2, nothing lost) are in
tests/test_bad_input_measure.py; here the measurements, the ranges it writes, the layer
plan, the output file's ownership and permissions, and paths that work from any directory.
"""

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
    assert all(0 < t.fastest <= t.median <= t.slowest for _, t in result.copies)
    assert result.bandwidth > 0 and result.latency_s >= 0
    assert result.mem_bandwidth > 0 and result.matmul_rate > 0
    assert [t for t, _ in result.sweep] == [1, 16, 64]
    assert result.layers_built == result.layers_total == 3
    # float32 weights: 3 layers x 36,864 + embedding and head 2 x 256 x 64 = 143,360 parameters x 4 B
    assert result.weight_bytes == 143_360 * 4
    assert result.reps == 3


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
    measure.write_set(result, out)  # an earlier run's file, which a new run may replace
    old = out.read_bytes()

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(KvtierError, match=f"--out {out}: cannot write \\(No space left on device\\)"):
        measure.write_set(result, out)
    assert out.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["measured.yaml"]


def test_a_model_too_large_is_refused_in_one_line_offering_a_model_that_fits(monkeypatch):
    backend = measure.cpu_backend()
    monkeypatch.setattr(backend, "free_bytes", lambda: 10e9)
    spec = measure.load_model("llama-3-70b")
    with pytest.raises(KvtierError) as err:
        measure.plan_layers(spec, backend, None)
    # 60 % of 10 GB = 6 GB; the embedding and head take 2 x 128,256 x 8192 x 4 B = 8.4 GB and one layer
    # 855,638,016 x 4 B = 3.4 GB: not even one layer fits, so --layers 1 (which was advised) is not advised
    text = str(err.value)
    assert "\n" not in text and "--layers" not in text, text
    assert "not even one layer fits; its embedding and head take 8.4 GB and one layer 3.4 GB" in text, text
    # the largest dense preset of which a layer fits in 6 GB: llama-3-8b, 4.2 GB + 0.87 GB (32 x 218,103,808
    # + 2 x 128,256 x 4096 = 8.03e9 parameters, against mistral-7b's 7.24e9 and llama-2-7b's 6.74e9)
    assert text.endswith("measure a smaller model: --model llama-3-8b --quick"), text
    # and it works: (6 - 4.203) // 0.872 = 2 of its layers fit, which --quick builds
    assert measure.plan_layers(measure.load_model("llama-3-8b"), backend, None, quick=True) == 2
    with pytest.raises(KvtierError, match="not even one layer fits") as err:
        measure.plan_layers(spec, backend, 1)  # --layers 1 says the same
    monkeypatch.setattr(backend, "free_bytes", lambda: 1e9)  # 0.6 GB: no preset's embedding and head fit
    with pytest.raises(KvtierError, match="no preset fits either; free some memory or measure on a larger machine"):
        measure.plan_layers(spec, backend, None, quick=True)
    monkeypatch.setattr(backend, "free_bytes", lambda: 100e9)
    assert measure.plan_layers(spec, backend, 2) == 2
    with pytest.raises(KvtierError, match="--layers must be between 1 and 80"):
        measure.plan_layers(spec, backend, 81)


@pytest.mark.parametrize("free_gb", [10, 13, 14.3, 14.4, 20, 24, 50, 100, 400, 1000])
@pytest.mark.parametrize("preset", ["llama-2-7b", "llama-3-8b", "llama-3-70b", "llama-3.1-405b", "qwen2.5-72b"])
def test_every_layer_count_it_advises_is_accepted(monkeypatch, preset, free_gb):
    # the advice in a refusal is a command that works: the --layers N or --model M it names passes the same test
    backend = measure.cpu_backend()
    monkeypatch.setattr(backend, "free_bytes", lambda: free_gb * 1e9)
    spec = measure.load_model(preset)
    for layers in (None, spec.n_layers):
        try:
            measure.plan_layers(spec, backend, layers)
        except KvtierError as exc:
            text = str(exc)
            if "--layers " in text.rpartition(";")[2]:
                advised = int(text.rpartition("--layers ")[2].split()[0])
                assert 1 <= measure.plan_layers(spec, backend, advised) == advised < spec.n_layers
            else:
                other = text.rpartition("--model ")[2].split()[0] if "--model" in text else None
                assert other is None or measure.plan_layers(measure.load_model(other), backend, None, quick=True) >= 1
    # --quick never refuses what fits: it picks at most QUICK_LAYERS layers, all of which fit
    fit = measure.layers_that_fit(spec, backend, free_gb * 1e9 * measure.MEMORY_SHARE)
    if fit:
        assert measure.plan_layers(spec, backend, None, quick=True) == min(fit, measure.QUICK_LAYERS)


def test_quick_picks_the_layers_that_fit_by_hand(monkeypatch, tiny):
    backend = measure.cpu_backend()
    spec = measure.load_model("llama-3-70b")
    # 24 GB free: 60 % is 14.4 GB; (14.4 - 8.405) // 3.4226 = 1 layer of 70B fits, and --quick takes it
    monkeypatch.setattr(backend, "free_bytes", lambda: 24e9)
    assert measure.plan_layers(spec, backend, None, quick=True) == 1
    with pytest.raises(KvtierError, match="measure fewer layers and scale to all 80: --layers 1 \\(or --quick\\)"):
        measure.plan_layers(spec, backend, None)
    with pytest.raises(KvtierError, match="--layers 2: 2 layers of model 'llama-3-70b' need 15.3 GB .* at most 1 fit"):
        measure.plan_layers(spec, backend, 2)  # 8.405 + 2 x 3.4226 = 15.2505 GB
    # 100 GB free: (60 - 8.405) // 3.4226 = 15 fit, of which --quick takes QUICK_LAYERS = 2
    monkeypatch.setattr(backend, "free_bytes", lambda: 100e9)
    assert measure.plan_layers(spec, backend, None, quick=True) == 2
    # the tiny model's 3 layers all fit; --quick still builds 2 and scales
    assert measure.plan_layers(measure.load_model(tiny), backend, None, quick=True) == 2
    assert measure.plan_layers(measure.load_model(tiny), backend, None) == 3


def test_free_memory_is_the_least_of_machine_cgroup_and_address_space(monkeypatch):
    monkeypatch.setattr(measure, "_meminfo_available", lambda: 20e9)
    monkeypatch.setattr(measure, "_cgroup_available", lambda: None)
    monkeypatch.setattr(measure, "_address_space_available", lambda: 3e9)
    assert measure._cpu_free_bytes() == 3e9
    monkeypatch.setattr(measure, "_address_space_available", lambda: None)
    assert measure._cpu_free_bytes() == 20e9
    monkeypatch.setattr(measure, "_cgroup_available", lambda: -1.0)  # a cgroup over its limit: nothing free
    assert measure._cpu_free_bytes() == 0.0


def test_measuring_fewer_layers_scales_to_all_and_says_so(tiny, tmp_path):
    r = measure.measure(tiny, measure.cpu_backend(), layers=1, sizes=(4096, 2**20), sweep=(16,), matmul_n=512, reps=2)
    assert (r.layers_built, r.layers_total) == (1, 3)
    doc = measure.assumption_set(r)
    assert "ran 1 of 3 layers and, less the embedding and head timed alone, were scaled by 3/1" in (
        doc["assumptions"]["mfu.typical"]["basis"]
    )


def test_only_the_layers_share_of_a_pass_is_scaled():
    # a fake backend: the embedding and head take 1 ms, each layer 2 ms. Two of 80 layers built take 5 ms; the
    # pass over all 80 is 1 + 80 x 2 = 161 ms (scaling the whole 5 ms by 80/2 would give 200 ms, 24 % too slow)
    backend = measure.cpu_backend()
    backend.timer = lambda fn, reps: fn()
    make = lambda tokens, used: lambda: measure.Timing(1e-3 + 2e-3 * used, 0.9e-3 + 2e-3 * used, 2e-3 + 2e-3 * used)  # noqa: E731
    t = measure._pass_time(backend, make, 16, 2, 80, 3)
    assert t.median == pytest.approx(0.161)
    # fastest and slowest keep their ratio to the median: 4.9 / 5 and 6 / 5 of 161 ms
    assert (t.fastest, t.slowest) == (pytest.approx(0.161 * 4.9 / 5), pytest.approx(0.161 * 6 / 5))
    assert measure._pass_time(backend, make, 16, 80, 80, 3).median == pytest.approx(0.161)  # all built: as timed


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
