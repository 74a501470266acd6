"""kvtier.inputs.probe, the work of `kvtier measure` on the CPU path: small shapes, the set it writes, refusals.

Refusals through the real command line (one line, exit 2, nothing lost) are in
tests/commands/test_bad_input_measure.py; here the measurements, the ranges it writes, the layer
plan, the output file's ownership and permissions, and paths that work from any directory.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import types
from typing import Any

import numpy as np
import pytest
import yaml

from kvtier.commands import measure as measure_command
from kvtier.errors import KvtierError
from kvtier.inputs import probe
from kvtier.inputs import probe as measure
from kvtier.inputs.assumptions import check_consistency, load_assumptions
from kvtier.inputs.keys import UNCERTAIN_POINTS
from kvtier.report.pages import csv_texts
from kvtier.scenario import Scenario
from tests.conftest import ROOT, TINY


@pytest.fixture(scope="module")
def result(tiny) -> measure.Result:
    return measure.measure(
        tiny, measure.cpu_backend(), sizes=(4096, 2**20, 4 * 2**20), sweep=(1, 16, 64), matmul_n=512, reps=3
    )


# ---------------------------------------------------------------------------
# ranges of its own: the set holds together
# ---------------------------------------------------------------------------


def _synthetic(tiny: str) -> measure.Result:
    """A result with round timings, so that every value and range can be worked out by hand."""
    ms = 1e-3
    return measure.Result(
        backend="cpu",
        machine="a test machine",
        copy_what="copies",
        dtype="float32",
        model=tiny,
        layers_built=3,
        layers_total=3,
        # 10 MB in 1 ms is 10 GB/s; 20 MB in 2 ms too: latency 0, bandwidth 10 GB/s
        copies=(
            (10_000_000, measure.Timing(1 * ms, 1 * ms, 1 * ms)),
            (20_000_000, measure.Timing(2 * ms, 1.6 * ms, 2.5 * ms)),
        ),
        latency_s=0.0,
        bandwidth=10e9,
        mem_bytes=40_000_000,  # read plus write of 20 MB in 2 ms: 20 GB/s
        mem_copy=measure.Timing(2 * ms, 2 * ms, 2 * ms),
        matmul_n=500,  # 2 x 500^3 = 2.5e8 FLOP in 2.5 ms: 100 GFLOP/s
        matmul=measure.Timing(2.5 * ms, 2.5 * ms, 2.5 * ms),
        # the tiny model: 143,360 parameters, 2 x 143,360 x tokens FLOP; at 100 GFLOP/s 16 tokens take 45.875 us
        sweep=(
            (1, measure.Timing(28.672e-6, 28.672e-6, 28.672e-6)),  # 286,720 FLOP: 10 GFLOP/s, an MFU of 10 %
            (16, measure.Timing(91.75e-6, 91.75e-6, 91.75e-6)),  # 4,587,520 FLOP: 50 GFLOP/s, 50 %
            (64, measure.Timing(367e-6, 293.6e-6, 458.75e-6)),  # 18,350,080 FLOP: 50 %; fastest 62.5 %, slowest 40 %
        ),
        weight_bytes=573_440.0,  # 143,360 x 4 B
        reps=5,
        date="2026-12-01",
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
    # 855,638,016 x 4 B = 3.4 GB: not even one layer fits, so --layers 1 is not advised
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
    assert (
        "ran 1 of 3 layers and, less the embedding and head timed alone, were scaled by 3/1"
        in (doc["assumptions"]["mfu.typical"]["basis"])
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


def test_every_measured_value_gets_a_range_by_hand(tiny):
    a = measure.assumption_set(_synthetic(tiny))["assumptions"]
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


def test_the_set_a_run_writes_passes_the_whole_set_check(result, tmp_path):
    # the seed's ranges (500-989 TFLOP/s, 32-121 GB/s, 25-50 %) do not travel with measured values: every
    # range the book draws from is the machine's own and holds the values it stands for
    out = tmp_path / "m.yaml"
    measure.write_set(result, out)
    a = load_assumptions(out)
    check_consistency(a)
    for name, points in UNCERTAIN_POINTS.items():
        low, high = a.value(f"uncertainty.{name}_low"), a.value(f"uncertainty.{name}_high")
        assert all(low <= a.value(p) <= high for p in points), name
        assert "kvtier measure" in a[f"uncertainty.{name}_low"].source, name


def test_widen_keeps_the_spread_or_the_band_and_the_cap():
    assert measure.widen(100.0, 95.0, 104.0) == (90.0, pytest.approx(110.0))  # the spread inside +-10 %
    assert measure.widen(100.0, 80.0, 130.0) == (80.0, 130.0)  # the spread beyond it
    assert measure.widen(0.95, 0.93, 0.97, cap=1.0) == (pytest.approx(0.855), 1.0)  # 104.5 % capped at 100 %


def test_the_shipped_sets_hold_together():
    # both shipped sets pass the whole-set check; h200-measured needed ranges of its own for its x8 bracket
    # (27.57 GB/s below the seed's 32) and its MFUs (49.67 % to 78.53 %, beyond the seed's 50 %)
    check_consistency(load_assumptions())
    measured = load_assumptions(ROOT / "kvtier" / "data" / "h200-measured.yaml")
    check_consistency(measured)
    assert measured.value("uncertainty.bandwidth_low") == measured.value("bandwidth.pessimistic")
    assert measured.value("uncertainty.mfu_low") == measured.value("mfu.conservative")
    assert measured.value("uncertainty.mfu_high") == measured.value("mfu.optimistic")


# ---------------------------------------------------------------------------
# the output file
# ---------------------------------------------------------------------------


def test_its_own_file_is_replaced_and_a_changed_one_refused(result, tmp_path):
    out = tmp_path / "m.yaml"
    measure.write_set(result, out)
    first = out.read_text()
    assert measure.MARK.match(first.splitlines()[0])
    measure.write_set(result, out)  # a file it wrote, unchanged: replaced
    assert out.read_text() == first
    out.write_text(first.replace("measured-cpu", "my-lab", 1))  # a user's edit: refused, then kept
    edited = out.read_bytes()
    with pytest.raises(KvtierError, match="exists and was not written by kvtier measure, or was changed since"):
        measure.write_set(result, out)
    assert out.read_bytes() == edited
    measure.write_set(result, out, force=True)  # --force replaces it
    assert out.read_text() == first


def test_a_file_that_appears_while_measuring_is_not_lost(result, tmp_path):
    # checked before measuring (nothing there) and again just before the rename: a file a user saved
    # meanwhile is kept, and the temporary file is removed
    out = tmp_path / "m.yaml"
    measure.check_out(out)
    out.write_text("name: my-lab\n")
    with pytest.raises(KvtierError, match="was not written by kvtier measure"):
        measure.write_set(result, out)
    assert out.read_text() == "name: my-lab\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.yaml"]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_the_file_gets_the_permissions_of_the_umask(result, tmp_path, umask, mode):
    # a new file is 0o666 & ~umask, as any program writes it (not 0o600, mkstemp's mode)
    out = tmp_path / "m.yaml"
    old = os.umask(umask)
    try:
        measure.write_set(result, out)
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == mode


# ---------------------------------------------------------------------------
# paths that work from any directory
# ---------------------------------------------------------------------------


def test_a_model_path_is_written_absolute_and_the_set_works_from_elsewhere(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(measure, "SIZES_QUICK", (4096, 2**20))
    monkeypatch.setattr(measure, "SWEEP_QUICK", (1, 16))
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
    assert measure.resolve_model("llama-3-8b") == "llama-3-8b"  # a preset stays a name


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


CALLS: list[tuple[Any, ...]] = []


EVENT_MS = 0.5  # every timed call takes 0.5 ms on the fake GPU


class T:
    """A fake tensor over a numpy array, on a device, with a dtype name."""

    def __init__(self, a: Any, device: str = "cpu", dtype: str = "float32", pinned: bool = False):
        self.a, self.device, self.dtype, self.pinned = np.asarray(a), device, dtype, pinned

    # creation-side methods
    def pin_memory(self) -> T:
        CALLS.append(("pin_memory", self.a.nbytes))
        return T(self.a, self.device, self.dtype, pinned=True)

    def copy_(self, other: T, non_blocking: bool = False) -> T:
        CALLS.append(("copy_", other.device, self.device, other.pinned, non_blocking, other.a.nbytes))
        self.a[...] = other.a
        return self

    def normal_(self, mean: float, std: float, generator: Any = None) -> T:
        self.a = generator.rng.normal(mean, std, self.a.shape).astype(np.float32)
        return self

    def numel(self) -> int:
        return int(self.a.size)

    # arithmetic the forward pass uses
    def t(self) -> T:
        return T(self.a.T, self.device, self.dtype)

    def __matmul__(self, o: T) -> T:
        CALLS.append(("matmul", self.device, o.device, self.dtype, o.dtype, self.a.shape, o.a.shape))
        return T(self.a @ o.a, self.device, self.dtype)

    def __mul__(self, o: Any) -> T:
        return T(self.a * (o.a if isinstance(o, T) else o), self.device, self.dtype)

    __rmul__ = __mul__

    def __add__(self, o: Any) -> T:
        return T(self.a + (o.a if isinstance(o, T) else o), self.device, self.dtype)

    def __getitem__(self, i: Any) -> T:
        return T(self.a[i], self.device, self.dtype)

    def split(self, sizes: list[int], dim: int = -1) -> list[T]:
        cuts = np.cumsum(sizes)[:-1]
        assert sum(sizes) == self.a.shape[dim]
        return [T(p, self.device, self.dtype) for p in np.split(self.a, cuts, axis=dim)]

    def view(self, *shape: int) -> T:
        return T(self.a.reshape(shape), self.device, self.dtype)

    reshape = view

    def transpose(self, i: int, j: int) -> T:
        return T(np.swapaxes(self.a, i, j), self.device, self.dtype)

    def float(self) -> T:
        return T(self.a, self.device, "float32")

    def pow(self, p: float) -> T:
        return T(self.a**p, self.device, self.dtype)

    def mean(self, dim: int, keepdim: bool = False) -> T:
        return T(self.a.mean(axis=dim, keepdims=keepdim), self.device, self.dtype)

    def to(self, dtype: str) -> T:
        return T(self.a, self.device, dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.a.shape


class Event:
    def __init__(self, enable_timing: bool = False):
        assert enable_timing
        self.recorded = self.synced = False

    def record(self) -> None:
        self.recorded = True
        CALLS.append(("event.record",))

    def synchronize(self) -> None:
        self.synced = True
        CALLS.append(("event.synchronize",))

    def elapsed_time(self, end: Event) -> float:
        assert self.recorded and end.recorded and end.synced  # read only after the end event completed
        return EVENT_MS


class Generator:
    def __init__(self, device: Any = None):
        self.device, self.rng = device, np.random.default_rng(0)

    def manual_seed(self, seed: int) -> None:
        CALLS.append(("manual_seed", seed))
        self.rng = np.random.default_rng(seed)


def _fake_torch() -> tuple[types.ModuleType, types.ModuleType]:
    torch = types.ModuleType("torch")
    torch.__version__ = "0.0-fake"
    torch.bfloat16, torch.uint8 = "bfloat16", "uint8"
    torch.version = types.SimpleNamespace(cuda="12.fake")
    torch.device = lambda name: str(name)
    torch.Generator = Generator

    def dev(device: Any) -> str:
        return str(device) if device is not None else "cpu"

    torch.ones = lambda *shape, dtype=None, device=None: T(
        np.ones(shape, np.uint8 if dtype == "uint8" else np.float32), dev(device), dtype
    )
    torch.empty = lambda *shape, dtype=None, device=None: T(
        np.zeros(shape, np.uint8 if dtype == "uint8" else np.float32), dev(device), dtype
    )
    torch.empty_like = lambda t: T(np.zeros_like(t.a), t.device, t.dtype)

    def randn(*shape: int, device: Any = None, dtype: Any = None) -> T:
        return T(np.random.default_rng(1).normal(size=shape).astype(np.float32), dev(device), dtype)

    def randint(low: int, high: int, size: tuple[int, ...], device: Any = None, generator: Any = None) -> T:
        return T(generator.rng.integers(low, high, size), dev(device), "int64")

    torch.randn, torch.randint = randn, randint
    torch.rsqrt = lambda t: T(1.0 / np.sqrt(t.a), t.device, t.dtype)
    torch.inference_mode = lambda: lambda fn: fn
    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        get_device_properties=lambda i: types.SimpleNamespace(name="Fake GPU", multi_processor_count=132),
        synchronize=lambda: CALLS.append(("cuda.synchronize",)),
        Event=Event,
        mem_get_info=lambda: (80e9, 80e9),
    )
    torch.cuda = cuda
    functional = types.ModuleType("torch.nn.functional")

    def embedding(ids: T, w: T) -> T:
        return T(w.a[ids.a], w.device, w.dtype)

    def sdpa(q: T, k: T, v: T, is_causal: bool = False, enable_gqa: bool = False) -> T:
        CALLS.append(("sdpa", q.shape, k.shape, v.shape, is_causal, enable_gqa))
        return T(np.zeros(q.shape, np.float32), q.device, q.dtype)

    functional.embedding = embedding
    functional.scaled_dot_product_attention = sdpa
    functional.silu = lambda t: T(t.a / (1 + np.exp(-t.a)), t.device, t.dtype)
    nn = types.ModuleType("torch.nn")
    nn.functional = functional
    torch.nn = nn
    return torch, functional


@pytest.fixture
def fake_torch(monkeypatch):
    torch, functional = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.nn", torch.nn)
    monkeypatch.setitem(sys.modules, "torch.nn.functional", functional)
    CALLS.clear()
    return torch


def test_the_cuda_path_runs_what_a_gpu_run_would(fake_torch, tiny):
    backend = probe.pick_backend("cuda")
    assert backend.name == "cuda" and backend.dtype == "bf16" and backend.element_bytes == 2
    assert backend.what == "Fake GPU (132 SMs; PyTorch 0.0-fake, CUDA 12.fake)"
    r = probe.measure(tiny, backend, sizes=(4096, 2**20, 4 * 2**20), sweep=(1, 16, 64), matmul_n=64, reps=3)
    copies = [c for c in CALLS if c[0] == "copy_"]
    # host to device: a pinned host buffer, copied without blocking, one per size and timing (warm-up + 3 reps)
    h2d = [c for c in copies if c[1] == "cpu"]
    assert {c[5] for c in h2d} == {4096, 2**20, 4 * 2**20}
    assert all(c[2] == "cuda" and c[3] and c[4] for c in h2d)
    assert len(h2d) == 3 * (1 + 3)
    assert ("pin_memory", 4096) in CALLS
    # the memory copy: device to device, 4 MiB, the largest size
    d2d = [c for c in copies if c[1] == "cuda"]
    assert d2d and {c[5] for c in d2d} == {4 * 2**20} and not any(c[3] for c in d2d)
    # bf16 products on the device: the 64-cubed one, then the passes' matrices
    assert ("matmul", "cuda", "cuda", "bfloat16", "bfloat16", (64, 64), (64, 64)) in CALLS
    # every timing: a start and an end event recorded, the end synchronised before reading
    assert CALLS.count(("event.record",)) == 2 * CALLS.count(("event.synchronize",))
    # the passes: causal grouped-query attention with the tiny model's 4 query and 2 KV heads of 16
    sdpa = {c[1:] for c in CALLS if c[0] == "sdpa"}
    assert sdpa == {((1, 4, n, 16), (1, 2, n, 16), (1, 2, n, 16), True, True) for n in (1, 16, 64)}
    assert ("manual_seed", 0) in CALLS
    # each timed call took 0.5 ms by the fake events: the copies and passes read it back, in seconds
    assert r.backend == "cuda" and r.layers_built == r.layers_total == 3
    assert all(t.median == pytest.approx(EVENT_MS / 1e3) for _, t in r.copies)
    assert [n for n, _ in r.sweep] == [1, 16, 64]
    assert all(t.median == pytest.approx(EVENT_MS / 1e3) for _, t in r.sweep)


def test_no_gpu_is_one_line(fake_torch):
    fake_torch.cuda.is_available = lambda: False
    with pytest.raises(probe.KvtierError, match="--device cuda: PyTorch sees no CUDA GPU on this machine"):
        probe.pick_backend("cuda")
