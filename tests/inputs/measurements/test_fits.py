"""The fits of the measurements: the shipped values by hand, their records, the forward model and the knee."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.inputs import measurements as ms
from kvtier.inputs.assumptions import load_assumptions
from kvtier.inputs.measurements import fits as fitting
from kvtier.scenario import Scenario
from kvtier.units import parse_quantity
from tests.conftest import MEASURED_SET, ROOT

DATA = ROOT / "kvtier" / "data" / "measurements" / ms.SET_NAME


# Read and fitted afresh for each test (10 ms and 60 ms), not once per module or through the cached
# ms.load(): mutation testing (scripts/mutation.sh) then sees every test that reads or fits.
@pytest.fixture
def m() -> ms.Measurements:
    return ms.read(DATA)


@pytest.fixture
def fits(m) -> ms.Fits:
    return ms.fit(m)


def _bad_set(tmp_path: Path, file: str, change) -> Path:

    target = tmp_path / ms.SET_NAME
    shutil.copytree(DATA, target)
    data = json.loads((target / file).read_text())
    change(data)
    (target / file).write_text(json.dumps(data))
    return target


FIT_TEXT_KINDS = {"µs": "time", "ms": "time", "GB/s": "bandwidth", "%": "fraction", "": "count"}


FIT_KINDS = {
    "latency": "time",
    "bandwidth": "bandwidth",
    "mfu": "fraction",
    "mem_efficiency": "fraction",
    "sharpness": "count",
    "eager_floor": "time",
    "slope_s_per_token": "time",
}


# Llama-3-70B as probed: N = 70,553,706,496 parameters; attention 2 x 80 x 64 x 2 x 128 = 2,621,440 FLOP a
# position; KV 327,680 B a token; weights 2N = 141,107,412,992 B.  Fits by hand: MFU 50 % of 989 TFLOP/s,
# memory efficiency 50 % of 4.8 TB/s, eager floor 70 ms, sharpness 1 (compute + floor).
N70 = 70_553_706_496


HAND_FITS = ms.Fits(
    fetch={},
    mfu={"llama-3-70b": 0.5},
    mem_efficiency={"llama-3-70b": 0.5},
    eager_floor_s={"llama-3-70b": 0.07},
    sharpness=1.0,
    slope_s_per_token=0.0,
    records={},
)


def test_the_shipped_fits(fits, m):
    # fetch: the 7 pinned H2D copies of 1 MiB to 1 GiB; e.g. 4 MiB in 85.408 µs and 1 GiB in 19.4297 ms alone give
    # B = (1 GiB - 4 MiB) / (19.4297 ms - 85.4 µs) = 55.29 GB/s and L = 85.4 µs - 4 MiB / B = 9.55 µs (the README's
    # two-point fit); weighting all 7 points by relative error gives 9.05 µs and 55.14 GB/s
    latency, bw = fits.fetch["h2d_pinned"]
    assert latency == pytest.approx(9.049e-6, rel=1e-3) and bw == pytest.approx(55.14e9, rel=1e-3)
    # memory efficiency: (141,107,412,992 B weights + 327,680 B x 16 KV) / 44.4514 ms = 3.1745 TB/s = 0.6614 x 4.8
    assert fits.mem_efficiency["llama-3-70b"] == pytest.approx(141_112_655_872 / 0.04445135879516601 / 4.8e12)
    assert fits.mem_efficiency["llama-3-70b"] == pytest.approx(0.6614, abs=1e-4)
    # MFU (70B): FLOPs / (989 TFLOP/s x t) at 1,024 / 2,048 / 4,096 / 8,192 tokens; with attention
    # 2 x 80 x 64 x 256 = 2,621,440 FLOP per token-position pair, e.g. at 2,048 tokens
    # 2 x 70,553,706,496 x 2,048 + 2,621,440 x 2,048 x 2,049 / 2 = 2.9449e14 FLOP over 533.81 ms = 0.5578;
    # the four fractions' geometric mean is 0.5593
    assert fits.mfu["llama-3-70b"] == pytest.approx(0.5593, abs=1e-4)
    assert fits.mfu["llama-3-8b"] == pytest.approx(0.4967, abs=1e-4)
    # slope of (1,024, 270.559 ms), (2,048, 533.806 ms), (4,096, 1,070.210 ms): least squares 260.53 µs per token
    # (the README's two-point (1,070.2 - 533.8) / 2,048 = 261.9 µs); x 16 tokens = 4.17 ms inside a batch
    assert fits.slope_s_per_token == pytest.approx(260.53e-6, rel=1e-4)
    # the knee and the eager floors, fitted on grids (regression values)
    assert fits.sharpness == 3.75
    assert fits.eager_floor_s["llama-3-70b"] == pytest.approx(55.04e-3, rel=1e-3)
    assert fits.eager_floor_s["llama-3-8b"] == pytest.approx(25.54e-3, rel=1e-3)


def test_every_fitted_value_is_derived_with_a_basis_naming_its_file(fits):
    assert fits.records
    for rec in fits.records.values():
        assert rec.provenance == "derived" and rec.basis and ".json" in rec.basis + rec.source, rec.key


def test_the_knee_is_where_compute_meets_the_floor(m, fits):
    for shape in ms.SHAPES:
        for mode in ("eager", "graph"):
            knee = ms.knee_tokens(m, fits, shape, mode)
            sides = ms.forward_model_s(m, fits, shape, knee, mode)
            assert float(sides["compute"]) == pytest.approx(float(sides["floor"]), rel=1e-9)
    # 70B as a CUDA graph: 44.45 ms of weight stream = 2 x 70.55e9 x n / (989e12 x 0.5593) -> n = 174 tokens
    assert ms.knee_tokens(m, fits, "llama-3-70b", "graph") == pytest.approx(174, abs=1)


def test_the_measured_set_carries_the_fits(fits, m):
    a = load_assumptions(MEASURED_SET)
    latency, bw = fits.fetch["h2d_pinned"]
    expected = {
        "fetch_latency": latency,
        "bandwidth.mid": bw,
        "bandwidth.pessimistic": bw / 2,  # a x8 link: half the lanes of the measured x16
        "mfu.optimistic": m.v("matmul_flop_rate") / ms.H200_PEAK_FLOP_PER_S,
        "mfu.typical": fits.mfu["llama-3-70b"],
        "mfu.conservative": fits.mfu["llama-3-8b"],
        "regen.mem_efficiency": ms.shipped_forward_fit().mem_efficiency,  # the stream's rate (issue 28)
        "regen.mem_overhead_per_layer": ms.shipped_forward_fit().mem_overhead_per_layer_s,
        "regen.launch_floor_per_layer": ms.shipped_forward_fit().launch_floor_per_layer_s,
        "regen.knee_sharpness": ms.shipped_forward_fit().sharpness,
        "regen.attention_fixed_per_layer": ms.shipped_forward_fit().attention_fixed_per_layer_s,
        "regen.attention_efficiency": ms.shipped_forward_fit().attention_efficiency,
        "peak_flops": ms.H200_PEAK_FLOP_PER_S,
        "regen.mem_bandwidth": ms.H200_MEM_BANDWIDTH,
        "param_count": m.shapes["llama-3-70b"].params,
    }
    for key, value in expected.items():
        assert a.value(key) == pytest.approx(value, rel=1e-3), key  # the file rounds to 4 significant digits
        rec = a[key]
        assert rec.provenance in ("measured", "derived", "published-spec"), key
        if rec.provenance in ("measured", "derived"):
            assert ".json" in rec.basis and ms.SET_NAME in rec.source, key
    assert a.value("regen.model") == "roofline" and a.name == "h200-measured"
    assert a.value("regen.attention") == "serial"


def test_every_fitted_record_is_derived_and_shows_its_value(fits):
    # 4 fetch (latency, bandwidth x 2 kinds) + 2 x 2 (MFU, memory efficiency) + sharpness + 2 floors + slope = 12
    assert len(fits.records) == 12
    for name, record in fits.records.items():
        assert record.key == f"fit.{name}" and record.provenance == "derived", name
        assert (
            record.kind
            == FIT_KINDS[name.rsplit("_llama", 1)[0].removeprefix("h2d_pinned_").removeprefix("d2h_pinned_")]
        ), name
        files = (
            "probe1.json, probe2.json" if name == "sharpness" else ("probe2.json" if "8b" in name else "probe1.json")
        )
        assert record.source == f"fitted by kvtier.measurements to kvtier/data/measurements/h200-2026-11-30/{files}"
        number, unit = (record.text[:-1], "%") if record.text.endswith("%") else record.text.partition(" ")[::2]
        decimals = len(number.partition(".")[2])
        shown = parse_quantity(record.text, FIT_TEXT_KINDS[unit])
        half_step = 0.5 * 10.0**-decimals * (shown / float(number))
        assert abs(shown - float(record.value)) <= half_step * (1 + 1e-9), (name, record.text, record.value)


def test_the_fitted_records_are_the_fits(fits):
    r = {k: v.value for k, v in fits.records.items()}
    for kind in ("h2d_pinned", "d2h_pinned"):
        assert (r[f"{kind}_latency"], r[f"{kind}_bandwidth"]) == fits.fetch[kind]
    for shape in ms.SHAPES:
        assert r[f"mfu_{shape}"] == fits.mfu[shape] and r[f"mem_efficiency_{shape}"] == fits.mem_efficiency[shape]
        assert r[f"eager_floor_{shape}"] == fits.eager_floor_s[shape]
    assert r["sharpness"] == fits.sharpness and r["slope_s_per_token"] == fits.slope_s_per_token


def test_the_fitted_bases_name_the_points_used(fits):
    b = {k: v.basis for k, v in fits.records.items()}
    # copies of at least 1 MiB: 1, 4, 16, 64, 256 MiB, 1 GiB (4 KiB x 4^k, k = 5..9) and the 5 MiB block: 7
    assert b["h2d_pinned_latency"] == (
        "relative least squares of t = latency + bytes / bandwidth over the 7 h2d_pinned copies of 1 MiB to 1 GiB"
        " (probe1.json copies[*].median_s)"
    )
    assert b["d2h_pinned_bandwidth"].endswith(
        "over the 7 d2h_pinned copies of 1 MiB to 1 GiB (probe1.json copies[*].median_s)"
    )
    # sweep points of at least 1,024 tokens: 70B 1,024 to 8,192; the 8B sweep has 1,024 and 4,096
    assert (
        "over the eager llama-3-70b passes of 1,024, 2,048, 4,096, 8,192 tokens (regenerate.token_sweep"
        in (b["mfu_llama-3-70b"])
    )
    assert "over the eager llama-3-8b passes of 1,024, 4,096 tokens (llama3_8b.token_sweep" in b["mfu_llama-3-8b"]
    assert b["mem_efficiency_llama-3-8b"].endswith("as a fraction of 4.8 TB/s (llama3_8b.tail16_graph.median_s)")
    assert b["sharpness"] == (
        "least squares on log time of blended_time_s(compute, max(memory, floor), p) over the eager sweeps of both"
        " shapes (probe1.json regenerate.token_sweep, probe2.json llama3_8b.token_sweep): p on a grid of"
        " 1 to 12 in steps of 0.05, one floor per shape"
    )
    # the floor per layer: 55.04 ms / 80 layers = 0.69 ms; 25.54 ms / 32 layers = 0.80 ms
    assert b["eager_floor_llama-3-70b"].endswith("; 0.69 ms per layer")
    assert b["eager_floor_llama-3-8b"].endswith("; 0.80 ms per layer")
    assert b["slope_s_per_token"].startswith(
        "least-squares slope of time against tokens over the eager llama-3-70b passes of 1,024, 2,048, 4,096 tokens"
    )


def test_a_sweep_without_a_slope_point_is_refused_by_name(tmp_path):
    # drop the 2,048-token pass of the 70B sweep: the slope needs 1,024, 2,048 and 4,096
    target = _bad_set(
        tmp_path,
        "probe1.json",
        lambda d: d["regenerate"].update(
            token_sweep=[r for r in d["regenerate"]["token_sweep"] if r["tokens"] != 2048]
        ),
    )
    with pytest.raises(KvtierError) as info:
        ms.fit(ms.read(target))
    assert str(info.value) == "h200-2026-11-30/probe1.json: key 'regenerate.token_sweep' has no pass of 2048 tokens"


def test_the_energy_check_in_sample_and_held_out(m):
    check = ms.energy_check(m)
    # in sample: 466.78 W x 56.024 ms (the 70B eager median) = 26.151 J against the loop's 26.197 J, which is
    # 466.78 W x 3.0307 s / 54 passes: only the per-pass time can differ
    assert check["in_sample_j"] == pytest.approx(check["power_w"] * m.v("forward16_llama-3-70b_eager"))
    assert check["in_sample_measured_j"] == pytest.approx(466.7834499595288 * 3.030658006668091 / 54, rel=1e-9)
    # held out: 466.78 W x 8.6078 ms (8B, CUDA graph) = 4.0180 J against 3.2461 J measured in its own loop: +23.8 %
    assert check["held_out_j"] == pytest.approx(466.7834499595288 * 0.008607775688171386, rel=1e-12)
    assert check["held_out_error_pct"] == pytest.approx((4.01797 / 3.246137 - 1) * 100, abs=0.01)
    assert check["held_out_power_w"] == pytest.approx(376.82, abs=0.01)


def test_the_forward_model_by_hand(m):
    # 16 tokens from position 100: FLOPs 2 N 16 + 2,621,440 x (16 x 100 + 16 x 17 / 2) = 2 N 16 + 2,621,440 x 1,736
    flops = 2 * N70 * 16 + 2_621_440 * 1_736
    compute = flops / (989e12 * 0.5)  # 4.57 ms
    # bytes: weights + KV of 116 positions, 141,107,412,992 + 327,680 x 116 = 141,145,423,872 B at 2.4 TB/s: 58.8 ms
    memory = (2 * N70 + 327_680 * 116) / 2.4e12
    eager = ms.forward_model_s(m, HAND_FITS, "llama-3-70b", 16, "eager", position=100)
    assert float(eager["compute"]) == pytest.approx(compute, rel=1e-12)
    assert float(eager["memory"]) == pytest.approx(memory, rel=1e-12)
    # eager: the floor is the launch floor, 70 ms > 58.8 ms; the roofline takes it; p = 1 adds compute to it
    assert float(eager["floor"]) == 0.07 and float(eager["roofline"]) == 0.07
    assert float(eager["blended"]) == pytest.approx(0.07 + compute, rel=1e-12)
    graph = ms.forward_model_s(m, HAND_FITS, "llama-3-70b", 16, "graph", position=100)
    assert float(graph["floor"]) == pytest.approx(memory, rel=1e-12)
    assert float(graph["blended"]) == pytest.approx(memory + compute, rel=1e-12)
    # logits for 1 of the 16 tokens: 15 x 2 x 128,256 x 8192 FLOP fewer
    one = ms.forward_model_s(m, HAND_FITS, "llama-3-70b", 16, "graph", position=100, logits_tokens=1)
    assert float(one["compute"]) == pytest.approx((flops - 15 * 2 * 128_256 * 8192) / (989e12 * 0.5), rel=1e-12)


def test_the_forward_model_refuses_an_unknown_mode(m):
    with pytest.raises(KvtierError) as info:
        ms.forward_model_s(m, HAND_FITS, "llama-3-70b", 16, "compiled")
    assert str(info.value) == "mode must be 'eager' or 'graph', got 'compiled'"


def test_the_knee_on_hand_fits(m):
    # graph: compute(n) = (2 N n + 2,621,440 n (n + 1) / 2) / 4.945e14 meets memory (2N + 327,680 n) / 2.4e12;
    # with the attention and KV terms small, n is near 2N x 4.945e14 / (2.4e12 x 2N) = 206 tokens.  Exactly:
    # solve the quadratic 1,310,720 n^2 + (2N + 1,310,720 - 327,680 x 206.0417) n - 2N x 206.0417 = 0
    ratio = 4.945e14 / 2.4e12  # 206.0417 tokens
    a = 2_621_440 / 2
    b = 2 * N70 + 2_621_440 / 2 - 327_680 * ratio
    c = -2 * N70 * ratio
    root = (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
    assert ms.knee_tokens(m, HAND_FITS, "llama-3-70b", "graph") == pytest.approx(root, rel=1e-9)
    # eager: the 70 ms launch floor is above the weights' 58.8 ms, so compute must reach 70 ms:
    # 2 N n + 1,310,720 n (n + 1) = 0.07 x 4.945e14
    b_eager = 2 * N70 + 1_310_720
    root_eager = (-b_eager + math.sqrt(b_eager**2 + 4 * 1_310_720 * 0.07 * 4.945e14)) / (2 * 1_310_720)
    assert ms.knee_tokens(m, HAND_FITS, "llama-3-70b", "eager") == pytest.approx(root_eager, rel=1e-9)


def test_the_sides_start_at_position_0_by_default(m):
    # 16 tokens from position 0 at 50 % and 50 %: (2 N 16 + 2,621,440 x 136) / 4.945e14 and
    # (2N + 327,680 x 16) / 2.4e12
    compute, memory = fitting.sides(m.shapes["llama-3-70b"], 0.5, 0.5, np.float64(16))
    assert float(compute) == pytest.approx((2 * N70 * 16 + 2_621_440 * 136) / 4.945e14, rel=1e-12)
    assert float(memory) == pytest.approx((2 * N70 + 327_680 * 16) / 2.4e12, rel=1e-12)


def test_the_knee_search_spans_1_to_2_to_the_20_tokens(m):
    # memory at the whole 4.8 TB/s: (2N + 327,680 n) / 4.8e12 = 29.4 ms; compute of one token at an MFU of
    # 0.5 %: 2N / 4.945e12 = 28.5 ms: the knee is just above 1 token, 1.03 (below e = 2.72, where a search from
    # log n = 1 would start)
    slow_compute = ms.Fits(**{**vars(HAND_FITS), "mfu": {"llama-3-70b": 0.005}, "mem_efficiency": {"llama-3-70b": 1.0}})
    knee = ms.knee_tokens(m, slow_compute, "llama-3-70b", "graph")
    ratio = 4.945e12 / 4.8e12
    a, b, c = 1_310_720, 2 * N70 + 1_310_720 - 327_680 * ratio, -2 * N70 * ratio
    assert knee == pytest.approx((-b + math.sqrt(b * b - 4 * a * c)) / (2 * a), rel=1e-9)
    assert 1 < knee < 1.1
    # an MFU of 10^6: compute never reaches the floor below 2^20 tokens; the search ends at its top
    fast_compute = ms.Fits(**{**vars(HAND_FITS), "mfu": {"llama-3-70b": 1e6}})
    assert ms.knee_tokens(m, fast_compute, "llama-3-70b", "graph") == pytest.approx(2**20, rel=1e-12)


def test_fitted_texts_round_at_the_edge(m, monkeypatch):
    # a latency of 9.04499999 µs shows as 9.04 µs (times 1000001 instead of 1e6: 9.05);
    # 55.1450000001 GB/s shows as 55.15 GB/s (over 1e9 + 1: 55.14)
    monkeypatch.setattr(fitting, "fit_latency_bandwidth", lambda b, t: (9.04499999e-6, 55.1450000001e9))
    # every floor 54.792 ms: 0.6849 ms a layer over 80 layers shows as 0.68 (times 1001: 0.69)
    monkeypatch.setattr(fitting, "fit_floor", lambda compute, memory, times, p: (0.054792, 1.0))
    fits = ms.fit(m)
    assert fits.records["h2d_pinned_latency"].text == "9.04 µs"
    assert fits.records["h2d_pinned_bandwidth"].text == "55.15 GB/s"
    assert fits.records["eager_floor_llama-3-70b"].basis.endswith("; 0.68 ms per layer")


def test_the_slope_text_rounds_at_the_edge(tmp_path):
    # 70B passes of 1,024, 2,048 and 4,096 tokens on the line 0.3 s + 260.549999 µs x n: the slope
    # shows as 260.5 µs (times 1000001 instead of 1e6: 260.6)
    slope = 260.549999e-6

    def change(d):
        for row in d["regenerate"]["token_sweep"]:
            if row["tokens"] in (1024, 2048, 4096):
                t = 0.3 + slope * row["tokens"]
                row.update(median_s=t, min_s=t, max_s=t)

    fits = ms.fit(ms.read(_bad_set(tmp_path, "probe1.json", change)))
    assert fits.slope_s_per_token == pytest.approx(slope, rel=1e-12)
    assert fits.records["slope_s_per_token"].text == "260.5 µs"


def test_a_knee_sharpness_between_0_and_1_is_refused_naming_the_key():
    s = Scenario(load_assumptions(MEASURED_SET).with_values({"regen.knee_sharpness": "0.5"}, source="test"))
    with pytest.raises(KvtierError, match="key 'regen.knee_sharpness' must be 0 .* or at least 1, got 0.5"):
        s.lone_regen_s(0, "resident", 0.5)
