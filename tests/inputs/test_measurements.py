"""kvtier.inputs.measurements: every measured record against the probe file it names, the fits and the measured set."""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.inputs import hardware
from kvtier.inputs import measurements as ms
from kvtier.inputs.assumptions import load_assumptions
from kvtier.scenario import Scenario
from kvtier.units import parse_quantity
from tests.conftest import MEASURED_SET, ROOT

DATA = ROOT / "kvtier" / "data" / "measurements" / ms.SET_NAME


SHARED = ROOT.parent / "shared" / "measurements" / ms.SET_NAME


# Read and fitted afresh for each test (10 ms and 60 ms), not once per module or through the cached
# ms.load(): mutation testing (scripts/mutation.sh) then sees every test that reads or fits.
@pytest.fixture
def m() -> ms.Measurements:
    return ms.read(DATA)


@pytest.fixture
def fits(m) -> ms.Fits:
    return ms.fit(m)


def _copy_set(tmp_path: Path) -> Path:
    target = tmp_path / ms.SET_NAME
    shutil.copytree(DATA, target)
    return target


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


BAD_FILES = [
    ("probe1.json", lambda d: d["regenerate"].pop("tail16_graph"), "key 'regenerate.tail16_graph' is missing"),
    (
        "probe1.json",
        lambda d: d["copies"][3].update(median_s=-1),
        "key 'copies[3].median_s' must be a positive number, got -1",
    ),
    (
        "probe1.json",
        lambda d: d["copies"][3].update(median_s="fast"),
        "key 'copies[3].median_s' must be a positive number, got 'fast'",
    ),
    (
        "probe1.json",
        lambda d: d["regenerate"]["tail16_eager"].update(min_s=1.0),
        "key 'regenerate.tail16_eager' has min_s <= median_s <= max_s out of order",
    ),
    (
        "probe1.json",
        lambda d: d["regenerate"].update(params=70_000_000_000),
        "key 'regenerate.params' = 70,000,000,000 disagrees with the shapes in 'regenerate.config'",
    ),
    ("probe2.json", lambda d: d.update(errors={"llama3_8b": "Traceback"}), "key 'errors' lists failed sections"),
    ("probe3.json", lambda d: d.update(smoke=True), "key 'smoke' is true: a smoke run"),
    (
        "probe1.json",
        lambda d: d["copies"][0].update(kind="h2d_magic"),
        "key 'copies[0].kind' must be one of h2d_pinned",
    ),
]


# The records whose value is worked from several fields, not read from the one the basis names.
WORKED = {
    # 2 x 8192^3 FLOP / 1.4156479835510255 ms = 776.684e12 FLOP/s; the probe's own tflops_median says 776.684
    "matmul_flop_rate": ("probe1.json", "matmul_ceiling.tflops_median", 1e12),
    # 2 x 2 GiB / 1.0117119550704956 ms = 4.24525e12 B/s; the probe's read_plus_write_GBps says 4,245.25
    "hbm_copy_rate": ("probe1.json", "hbm_copy.read_plus_write_GBps", 1e9),
}


# The notes that say how a value was taken, where it is not a median of timings or of runs.
NOTES = {
    "energy_forward16_llama-3-70b_j": "NVML board energy over an eager loop, divided by the passes",
    "energy_forward16_llama-3-8b_j": "NVML board energy over a CUDA-graph loop, divided by the passes",
    "energy_fetch_5mib_j": "NVML board energy while copying, static power included, divided by the copies",
    "overlap_copies_s": "median of the runs",
    "batching_one_copy": "64 blocks of 5 MiB",
    "batching_copy_per_block": "64 blocks of 5 MiB",
    "matmul_flop_rate": "2 x 8192^3 FLOP over the",
    "hbm_copy_rate": "read plus write of 2 GiB over the",
    "overlap_copy_rate": "median of 5 runs",
}


# The unit each shown text ends in, and the kind parse_quantity reads it as.
TEXT_KINDS = {"µs": "time", "ms": "time", "J": "energy", "mJ": "energy", "W": "power", "TFLOP/s": "flop_rate"}
TEXT_KINDS |= {"TB/s": "bandwidth", "GB/s": "bandwidth", "MiB": "bytes", "": "count"}


# The kind each record carries: energies (J) and powers (W) are recorded as plain numbers in SI units.
RECORD_KINDS = TEXT_KINDS | {"J": "count", "mJ": "count", "W": "count"}


def _raw(file: str) -> dict[str, Any]:
    return json.loads((DATA / file).read_text())


def _resolve(node: Any, path: str) -> Any:
    """The value at ``path`` in ``node``: dotted keys, ``[kind=..., bytes=...]`` to pick a list item,
    ``[*]`` to take every item (a list comes back)."""
    for part in re.findall(r"[^.\[\]]+|\[[^\]]*\]", path):
        if part == "[*]":
            return [_resolve(item, path.split("[*].", 1)[1]) for item in node]
        if part.startswith("["):
            wanted = dict(pair.split("=") for pair in part[1:-1].split(", "))
            node = next(i for i in node if all(str(i[k]) == v for k, v in wanted.items()))
        else:
            node = node[part]
    return node


def _basis(record) -> tuple[str, str, str]:
    file, rest = record.basis.split(": ", 1)
    field, _, how = rest.partition("; ")
    return file, field, how


def _bad_set(tmp_path: Path, file: str, change) -> Path:
    import shutil

    target = tmp_path / ms.SET_NAME
    shutil.copytree(DATA, target)
    data = json.loads((target / file).read_text())
    change(data)
    (target / file).write_text(json.dumps(data))
    return target


WHOLE_MESSAGES = [
    # one of each kind of refusal, the whole line after the file's path
    ("probe1.json", lambda d: d["regenerate"].pop("tail16_graph"), "key 'regenerate.tail16_graph' is missing"),
    (
        "probe1.json",
        lambda d: d["copies"][3].update(bytes=4096.5),
        "key 'copies[3].bytes' must be a whole number, got 4096.5",
    ),
    (
        "probe1.json",
        lambda d: d["copies"][3].update(median_s=True),
        "key 'copies[3].median_s' must be a positive number, got True",
    ),
    (
        # min_s set to 1 s above the file's median 0.056024 s and max 0.065948 s (six significant figures)
        "probe1.json",
        lambda d: d["regenerate"]["tail16_eager"].update(min_s=1.0),
        "key 'regenerate.tail16_eager' has min_s <= median_s <= max_s out of order (1, 0.056024, 0.065948)",
    ),
    ("probe1.json", lambda d: d.update(copies=[]), "key 'copies' must be a non-empty list"),
    ("probe1.json", lambda d: d["copies"].append(d["copies"][0]), "key 'copies' lists a (kind, bytes) pair twice"),
    (
        "probe1.json",
        lambda d: d["copies"][0].update(kind="h2d_magic"),
        "key 'copies[0].kind' must be one of h2d_pinned, d2h_pinned, h2d_pageable, d2d, got 'h2d_magic'",
    ),
    (
        "probe1.json",
        lambda d: d["copies"].__setitem__(0, "x"),
        "key 'copies[0].kind' must be one of h2d_pinned, d2h_pinned, h2d_pageable, d2d, got None",
    ),
    (
        "probe1.json",
        lambda d: d["copies"][2].update(median_s=0),
        "key 'copies[2].median_s' must be a positive number, got 0",
    ),
    (
        "probe1.json",
        lambda d: d["block_layouts"].update(chunks=2.5),
        "key 'block_layouts.chunks' must be a whole number, got 2.5",
    ),
    (
        "probe1.json",
        lambda d: d["hbm_copy"].update(median_s=-2),
        "key 'hbm_copy.median_s' must be a positive number, got -2",
    ),
    (
        "probe1.json",
        lambda d: d["regenerate"]["config"].update(layers=80.5),
        "key 'regenerate.config.layers' must be a whole number, got 80.5",
    ),
    (
        "probe1.json",
        lambda d: d["regenerate"]["token_sweep"][1].update(tokens=8.5),
        "key 'regenerate.token_sweep[1].tokens' must be a whole number, got 8.5",
    ),
    (
        "probe1.json",
        lambda d: d["regenerate"]["token_sweep"][1].update(reps=0),
        "key 'regenerate.token_sweep[1].reps' must be a positive number, got 0",
    ),
    (
        "probe1.json",
        lambda d: d["regenerate"]["interior_resident"][0].update(position=-1),
        "key 'regenerate.interior_resident[0].position' must be a positive number, got -1",
    ),
    (
        "probe1.json",
        lambda d: d["regenerate"]["interior_evicted"][1].update(tokens_computed="many"),
        "key 'regenerate.interior_evicted[1].tokens_computed' must be a positive number, got 'many'",
    ),
    (
        "probe1.json",
        lambda d: d["regenerate"]["interior_resident"][0].update(max_s=1e-9),
        # the file's min 57.3156 ms and median 62.1386 ms (six significant figures) above a max of 1 ns
        "key 'regenerate.interior_resident[0]' has min_s <= median_s <= max_s out of order"
        " (0.0573156, 0.0621386, 1e-09)",
    ),
    (
        "probe1.json",
        lambda d: d["regenerate"]["token_sweep"][2].pop("tokens"),
        "key 'regenerate.token_sweep[2].tokens' is missing",
    ),
    (
        "probe1.json",
        lambda d: d["regenerate"]["tail16_energy"].update(joules_per_forward=0),
        "key 'regenerate.tail16_energy.joules_per_forward' must be a positive number, got 0",
    ),
    (
        "probe1.json",
        lambda d: d["attention_vs_position"][0].update(position=0.5),
        "key 'attention_vs_position[0].position' must be a whole number, got 0.5",
    ),
    (
        "probe1.json",
        lambda d: d["attention_vs_position"][0].update(kv_bytes_one_layer=None),
        "key 'attention_vs_position[0].kv_bytes_one_layer' must be a positive number, got None",
    ),
    (
        "probe1.json",
        lambda d: d["attention_vs_position"][0]["masked"].update(median_s=0),
        "key 'attention_vs_position[0].masked.median_s' must be a positive number, got 0",
    ),
    (
        "probe1.json",
        lambda d: d["attention_vs_position"][0].pop("unmasked"),
        "key 'attention_vs_position[0].unmasked' is missing",
    ),
    (
        "probe1.json",
        lambda d: d["attention_vs_position"][0]["unmasked"].pop("min_s"),
        "key 'attention_vs_position[0].unmasked.min_s' is missing",
    ),
    (
        "probe3.json",
        lambda d: d["overlap"]["with_copies"][2].update(forward_s=0),
        "key 'overlap.with_copies[2].forward_s' must be a positive number, got 0",
    ),
    (
        "probe3.json",
        lambda d: d["overlap"]["with_copies"][2].update(copies=1.5),
        "key 'overlap.with_copies[2].copies' must be a whole number, got 1.5",
    ),
    (
        "probe3.json",
        lambda d: d["overlap"]["with_copies"][2].update(copies_s="x"),
        "key 'overlap.with_copies[2].copies_s' must be a positive number, got 'x'",
    ),
    (
        "probe3.json",
        lambda d: d["bidirectional"]["runs"][3].pop("d2h_together_s"),
        "key 'bidirectional.runs[3].d2h_together_s' is missing",
    ),
    (
        "probe4.json",
        lambda d: d["hf_llama3_70b"]["token_sweep"][0].update(median_s=-1),
        "key 'hf_llama3_70b.token_sweep[0].median_s' must be a positive number, got -1",
    ),
    (
        "probe1.json",
        lambda d: d.update(copies=[c for c in d["copies"] if c["bytes"] != 5 * 2**20 or c["kind"] != "d2h_pinned"]),
        "key 'copies' has no d2h_pinned copy of the 5 MiB block (5242880 bytes)",
    ),
    (
        "probe2.json",
        lambda d: d["strided_block"].update(chunks=80),
        "key 'strided_block' moves chunks of another size or count than probe1.json's block_layouts",
    ),
    (
        "probe2.json",
        lambda d: d["strided_block"].update(chunk_bytes=65536),
        "key 'strided_block' moves chunks of another size or count than probe1.json's block_layouts",
    ),
    (
        "probe1.json",
        lambda d: d["regenerate"]["interior_evicted"][0].update(tokens_computed=16),
        "key 'regenerate.interior_evicted' tokens_computed must be position + 16",
    ),
    (
        "probe1.json",
        lambda d: d["regenerate"]["token_sweep"].reverse(),
        "key 'regenerate.token_sweep' must list each token count once, in increasing order",
    ),
    (
        "probe4.json",
        lambda d: d["hf_llama3_8b"].update(params=8_030_261_249),
        "key 'hf_llama3_8b.params' disagrees with the llama-3-8b shapes of the plain-PyTorch passes",
    ),
    (
        "probe2.json",
        lambda d: d["fetch_energy"].update(bytes=4096),
        "key 'fetch_energy.bytes' must be the 5 MiB block (5242880 bytes)",
    ),
    (
        "probe1.json",
        lambda d: d["environment"].update(device_name=""),
        "key 'environment.device_name' must be a non-empty string",
    ),
    ("probe3.json", lambda d: d.update(errors=["x"]), "key 'errors' must be a mapping of section to error"),
    (
        "probe2.json",
        lambda d: d.update(errors={"b": "x", "a": "y"}),
        "key 'errors' lists failed sections: a, b",
    ),
    (
        "probe3.json",
        lambda d: d.update(smoke=True),
        "key 'smoke' is true: a smoke run on small shapes, not a measurement",
    ),
    (
        "probe1.json",
        lambda d: d["attention_vs_position"][1].pop("masked"),
        "key 'attention_vs_position[1].masked' is missing",
    ),
]


# ---------------------------------------------------------------------------
# the fitted records
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# the peers' predictions
# ---------------------------------------------------------------------------

PEERS = ROOT / "kvtier" / "data" / "peer-predictions.yaml"


GOOD_PEER = {
    "tool": "t",
    "version": "1",
    "shape": "llama-3-8b",
    "tokens": 16,
    "value": 8.5,
    "basis": "b",
    "source": "s",
}


# ---------------------------------------------------------------------------
# the forward-pass model on fits chosen by hand
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# the data of record
# ---------------------------------------------------------------------------


def test_every_file_is_the_copy_its_checksum_names():
    lines = (DATA / "SHA256SUMS").read_text().splitlines()
    listed = {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in lines}
    on_disk = {p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file() and p.name != "SHA256SUMS"}
    assert set(listed) == on_disk
    for name, digest in listed.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared measurement store is not beside this checkout")
def test_the_copy_equals_the_shared_store():
    for path in SHARED.rglob("*"):
        if path.is_file():
            rel = path.relative_to(SHARED).as_posix()
            copy = DATA / (rel + ".txt" if rel.startswith("method/") else rel)
            assert copy.read_bytes() == path.read_bytes(), rel


def test_the_reader_gives_typed_values_with_provenance(m):
    # probe1.json copies[kind=h2d_pinned, bytes=5242880].median_s = 0.00010467199981212616 s:
    # 5,242,880 B / 104.672 µs = 50.09 GB/s, the chapter's block over the host link
    rec = m.record("fetch_5mib_h2d_pinned")
    assert rec.value == 0.00010467199981212616 and rec.kind == "time" and rec.provenance == "measured"
    assert "probe1.json: copies[kind=h2d_pinned, bytes=5242880].median_s" in rec.basis
    assert "2026-11-30" in rec.source and "probe1.json" in rec.source
    assert m.device == "NVIDIA H200"
    # 11 sizes (4 KiB x 4^k for k = 0..9, plus 5 MiB) x 4 kinds = 44 copies
    assert len(m.copies) == 44 and len(m.copies_of("h2d_pinned")) == 11
    assert m.tail16[("llama-3-70b", "graph")].median_s == 0.04445135879516601
    assert m.tail16[("llama-3-70b", "graph")].reps == 30
    # a paged block: 2 (K, V) x 80 layers = 160 chunks of 16 tokens x 8 heads x 128 x 2 B = 32 KiB
    assert (m.chunks, m.chunk_bytes) == (160, 32768)
    assert [p.tokens for p in m.sweeps["llama-3-70b"]] == [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
    assert [p.tokens for p in m.evicted] == [1040, 4112, 16400]  # position + 16
    # overlap runs: forward_s 46.511, 46.364, 46.357, 46.374, 46.350 ms -> median 46.364 ms
    assert m.v("overlap_forward_with_copies") == pytest.approx(0.046364223480224606)
    # 600 copies x 5 MiB / 59.72 ms (median of the per-run rates) = 52.7 GB/s
    assert m.v("overlap_copy_rate") == pytest.approx(52.67e9, rel=1e-3)


def test_the_shapes_are_llama_3s_with_their_exact_parameter_counts(m):
    # per layer: q 8192x8192 + k, v 2 x 8192x1024 + o 8192x8192 + MLP 3 x 8192x28672 + 2 norms x 8192
    #   = 67,108,864 + 16,777,216 + 67,108,864 + 704,643,072 + 16,384 = 855,654,400
    # x 80 layers = 68,452,352,000; + embeddings and head 2 x 128,256 x 8192 = 2,101,346,304; + final norm 8192
    assert m.shapes["llama-3-70b"].params == 68_452_352_000 + 2_101_346_304 + 8192 == 70_553_706_496
    assert m.shapes["llama-3-8b"].params == 8_030_261_248
    # KV per token: 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B (320 KiB)
    assert m.shapes["llama-3-70b"].kv_bytes_per_token == 327_680


@pytest.mark.parametrize(("file", "change", "message"), BAD_FILES, ids=[m for *_, m in BAD_FILES])
def test_a_bad_measurement_file_is_refused_in_one_line_naming_file_and_key(tmp_path, file, change, message):
    target = _copy_set(tmp_path)
    _edit(target / file, change)
    with pytest.raises(KvtierError) as err:
        ms.read(target)
    text = str(err.value)
    assert "\n" not in text and text.startswith(str(target / file)) and message in text, text


def test_a_malformed_or_missing_file_is_refused_in_one_line(tmp_path):
    target = _copy_set(tmp_path)
    (target / "probe3.json").write_text('{"overlap": ')
    with pytest.raises(KvtierError, match=r"probe3\.json: malformed JSON at line 1"):
        ms.read(target)
    (target / "probe3.json").unlink()
    with pytest.raises(KvtierError, match=r"probe3\.json: measurement file not found"):
        ms.read(target)


def test_a_bad_peer_prediction_is_refused_in_one_line(tmp_path):
    path = tmp_path / "peers.yaml"
    path.write_text("predictions:\n  - tool: x\n    version: '1'\n    shape: llama-3-70b\n    tokens: 16\n")
    with pytest.raises(KvtierError, match=r"peers\.yaml: key 'predictions\[0\]\.value' is missing"):
        ms._read_peers(path)


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


def test_the_h200_constants_are_the_hardware_presets():
    acc = hardware.accelerator("h200")
    assert (ms.H200_PEAK_FLOP_PER_S, ms.H200_MEM_BANDWIDTH) == (acc.peak_flop_per_s, acc.mem_bandwidth_bytes_per_s)


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


def test_every_record_is_the_field_its_basis_names(m):
    assert len(m.values) == 34  # 3 fetches, 4 block layouts, 4 tail passes, 6 energy/power, 2 matmul, 1 HBM,
    # 5 overlap, 4 + 1 bidirectional, 2 + 1 batching
    for name, record in m.values.items():
        file, field, _ = _basis(record)
        assert record.key == f"measured.{name}" and record.provenance == "measured", name
        cite = "measured on one H200 SXM, 2026-11-30"
        assert record.source == f"{cite} (kvtier/data/measurements/h200-2026-11-30/{file})", name
        if name in WORKED:
            wfile, wfield, scale = WORKED[name]
            assert record.value == pytest.approx(_resolve(_raw(wfile), wfield) * scale, rel=1e-12), name
            continue
        if name == "overlap_copy_rate":
            # per run: copies x block_bytes / copies_s; the record is the median of the runs
            runs = _raw(file)["overlap"]["with_copies"]
            rates = [r["copies"] * _raw(file)["overlap"]["block_bytes"] / r["copies_s"] for r in runs]
            assert field == "overlap.with_copies[*]: copies x block_bytes / copies_s"
            assert record.value == statistics.median(rates)
            continue
        raw = _resolve(_raw(file), field)
        expected = statistics.median(raw) if isinstance(raw, list) else raw
        assert record.value == pytest.approx(expected, rel=1e-15), name


def test_every_shown_text_is_its_value_to_the_digits_shown(m):
    for name, record in m.values.items():
        number, _, unit = record.text.partition(" ")
        kind = TEXT_KINDS[unit]
        assert record.kind == RECORD_KINDS[unit], (name, record.kind)
        decimals = len(number.partition(".")[2])
        shown = parse_quantity(record.text, kind)
        # the text is the value rounded to the digits it shows: within half a unit of its last digit
        half_step = 0.5 * 10.0**-decimals * (shown / float(number))
        assert abs(shown - float(record.value)) <= half_step * (1 + 1e-9), (name, record.text, record.value)


def test_every_timing_note_quotes_the_files_reps_min_and_max(m):
    pattern = re.compile(r"median of (\d+) CUDA-event timings \(min ([\d.]+) ms, max ([\d.]+) ms\)")
    quoted = 0
    for name, record in m.values.items():
        file, field, how = _basis(record)
        found = pattern.search(how)
        if not found:
            continue
        quoted += 1
        timing = _resolve(_raw(file), field.removesuffix(".median_s"))
        assert int(found[1]) == timing["reps"], name
        # four significant figures of min_s and max_s in ms
        assert found[2] == f"{timing['min_s'] * 1e3:.4g}" and found[3] == f"{timing['max_s'] * 1e3:.4g}", name
    # 3 fetches + 4 block layouts + 4 tail passes + overlap alone + 2 batching + matmul + HBM = 16
    assert quoted == 16


def test_the_notes_that_are_not_timings(m):
    for name, note in NOTES.items():
        how = _basis(m.values[name])[2]
        assert how.startswith(note) and (how == note or how[len(note)] in " ;"), (name, how)
    # runs of probe3: five of each, 256 MiB each way for the bidirectional copies
    assert _basis(m.values["overlap_forward_with_copies"])[2] == "median of 5 runs"
    assert _basis(m.values["bidirectional_h2d_alone_s"])[2] == "median of 5 runs of 256 MiB each way"
    # values read as they stand have no note
    assert m.values["power_idle_w"].basis == "probe2.json: fetch_energy.idle_watts"
    assert m.values["matmul_n"].basis == "probe1.json: matmul_ceiling.n"


def test_the_typed_fields_are_the_files_fields(m):
    p1, p2, p4 = _raw("probe1.json"), _raw("probe2.json"), _raw("probe4.json")
    assert [(c.kind, c.n_bytes, c.timing.median_s) for c in m.copies] == [
        (c["kind"], c["bytes"], c["median_s"]) for c in p1["copies"]
    ]
    assert m.block["strided"].median_s == p2["strided_block"]["one_2d_copy"]["median_s"]
    assert m.block["per_chunk_probe1"].reps == p1["block_layouts"]["per_layer_chunks_h2d"]["reps"]
    for shape, group in (("llama-3-70b", "regenerate"), ("llama-3-8b", "llama3_8b")):
        raw = (p1 if shape == "llama-3-70b" else p2)[group]
        assert [(p.tokens, p.position, p.timing.max_s) for p in m.sweeps[shape]] == [
            (r["tokens"], 0, r["max_s"]) for r in raw["token_sweep"]
        ]
        for field in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab"):
            assert getattr(m.shapes[shape], field) == raw["config"][field], (shape, field)
    assert [(p.tokens, p.position, p.timing.median_s) for p in m.resident] == [
        (r.get("tokens_computed", 16), r["position"], r["median_s"]) for r in p1["regenerate"]["interior_resident"]
    ]
    assert [(p.tokens, p.position, p.timing.reps) for p in m.evicted] == [
        (r["tokens_computed"], r["position"], r["reps"]) for r in p1["regenerate"]["interior_evicted"]
    ]
    assert [(a[0], a[1], a[2].median_s, a[3].min_s) for a in m.attention] == [
        (r["position"], r["kv_bytes_one_layer"], r["masked"]["median_s"], r["unmasked"]["min_s"])
        for r in p1["attention_vs_position"]
    ]
    assert [p.timing.median_s for p in m.hf_sweeps["llama-3-8b"]] == [
        r["median_s"] for r in p4["hf_llama3_8b"]["token_sweep"]
    ]
    assert m.name == ms.SET_NAME and m.device == p1["environment"]["device_name"]


def test_the_shapes_other_properties(m):
    # Llama-3-8B: 2 x 8.030e9 B of weights; attention FLOPs per position 2 x 32 layers x 32 heads x 2 x 128
    # = 524,288; KV per token 2 x 32 x 8 x 128 x 2 B = 131,072 B
    shape = m.shapes["llama-3-8b"]
    assert [s.name for s in m.shapes.values()] == ["llama-3-70b", "llama-3-8b"]
    assert shape.weight_bytes == 2 * 8_030_261_248
    assert shape.attention_flops_per_position == 524_288
    assert shape.kv_bytes_per_token == 131_072
    # logits for one of 16 tokens instead of all 16: the other 15 skip the head's
    # 2 x vocab x hidden each, 15 x 2 x 128,256 x 4096 = 15,760,097,280 FLOP fewer
    # from position 0 by default: 2 x 16 x 8,030,261,248 + 524,288 x 16 x 17 / 2 = 256,968,359,936 + 71,303,168
    full = float(shape.flops(16))
    assert full == 2 * 16 * 8_030_261_248 + 524_288 * 136
    assert full - float(shape.flops(16, logits_tokens=1)) == 15 * 2 * 128_256 * 4096


def test_lookups_that_miss_say_what_exists(m):
    with pytest.raises(KvtierError) as info:
        m.record("fetch_1gib")
    known = "batching_blocks, batching_copy_per_block, batching_one_copy, "
    assert str(info.value).startswith(f"no measured value 'fetch_1gib'; known: {known}")
    with pytest.raises(KvtierError) as info:
        m.copy("h2d_pinned", 12345)
    assert str(info.value) == "no measured h2d_pinned copy of 12345 bytes in the set h200-2026-11-30"
    assert m.copy("d2d", 4096).kind == "d2d"
    assert [c.n_bytes for c in m.copies_of("d2d")][:3] == [4096, 16384, 65536]  # 4 KiB x 4^k, smallest first


@pytest.mark.parametrize(("file", "change", "message"), WHOLE_MESSAGES, ids=[m for *_, m in WHOLE_MESSAGES])
def test_whole_refusal_messages(tmp_path, file, change, message):
    target = _bad_set(tmp_path, file, change)
    with pytest.raises(KvtierError) as info:
        ms.read(target)
    assert str(info.value) == f"{target / file}: {message}"


def test_a_timing_of_one_repetition_and_a_file_without_errors_are_read(tmp_path):
    # min = median = max is in order; a probe file may leave out "errors" (none)
    def change(d):
        d["regenerate"]["tail16_graph"].update(min_s=0.044, median_s=0.044, max_s=0.044, reps=1)
        d.pop("errors")

    m = ms.read(_bad_set(tmp_path, "probe1.json", change))
    assert m.tail16[("llama-3-70b", "graph")] == ms.Timing(0.044, 0.044, 0.044, 1)


def test_a_file_that_is_not_an_object_is_refused_whole(tmp_path):
    target = _bad_set(tmp_path, "probe2.json", lambda d: None)
    (target / "probe2.json").write_text("[1, 2]")
    with pytest.raises(KvtierError) as info:
        ms.read(target)
    assert str(info.value) == f"{target / 'probe2.json'}: expected a JSON object at the top level"


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


def test_every_peer_prediction_is_its_row():
    import yaml

    rows = yaml.safe_load(PEERS.read_text())["predictions"]
    got = ms._read_peers(PEERS)
    assert len(got) == len(rows) == 4
    for (tool, version, shape, tokens, rec), row in zip(got, rows, strict=True):
        assert (tool, version, shape, tokens) == (row["tool"], row["version"], row["shape"], row["tokens"])
        # a time in ms becomes seconds: 29.0 ms -> 0.029 s
        assert rec.value == pytest.approx(row["value"] / 1e3, rel=1e-15)
        assert rec.kind == "time" and rec.provenance == "derived"
        assert rec.key == f"peer.{row['tool']}.{row['shape']}.{row['tokens']}"
        assert rec.text == f"{row['value']} ms"
        assert rec.basis == f"{row['tool']} {row['version']}: {row['basis']}" and rec.source == row["source"]
    assert got[0][4].value == 0.029 and got[0][4].text == "29.0 ms"


def test_the_shipped_peers_split_into_compared_and_excluded():
    # four rows in the file: llm-analysis's 4,096-token one carries `excluded`, the other three are compared
    compared = ms.peer_predictions()
    assert [(t, n) for t, _, _, n, _ in compared] == [("llm-analysis", 16), ("GenZ", 16), ("GenZ", 4096)]
    ((row, reason),) = ms.peer_exclusions()
    assert (row[0], row[3], row[4].value) == ("llm-analysis", 4096, 0.514)
    assert reason.startswith("llm-analysis 0.2.2 counts an MLP's FLOPs as 16 × hidden² per token")


def test_the_peak_bound_by_hand(m):
    shape = m.shapes["llama-3-70b"]
    # weights less the input embedding: 2 x (70,553,706,496 - 128,256 x 8,192) B = 139,006,066,688 B
    # over 4.8 TB/s = 28.9596 ms; 16 tokens of FLOPs at 989 TFLOP/s are far less
    assert ms.peak_bound_s(shape, 16) == pytest.approx(139_006_066_688 / 4.8e12, rel=1e-12)
    # 4,096 tokens: 2 x 69,503,033,344 x 4,096 = 569.3683e12 FLOP of matrix products, plus causal attention
    # 2,621,440 FLOP per token and position x 4,096 x 4,097 / 2 = 21.9961e12: 591.3644e12 / 989e12 = 597.94 ms
    attention = 2_621_440 * 4096 * 4097 / 2
    assert ms.peak_bound_s(shape, 4096) == pytest.approx((2 * 69_503_033_344 * 4096 + attention) / 989e12, rel=1e-12)
    assert ms.peak_bound_s(shape, 4096) == pytest.approx(0.59794, abs=1e-5)


def test_no_compared_peer_prediction_implies_more_than_the_h200s_peaks(m):
    # llm-analysis 29.0 ms and GenZ 29.5 ms >= 28.96 ms (16 tokens); GenZ 629 ms >= 597.94 ms (4,096 tokens)
    for tool, _version, shape, tokens, rec in ms.peer_predictions():
        assert rec.value >= ms.peak_bound_s(m.shapes[shape], tokens), (tool, tokens)
    # and an exclusion is one: llm-analysis's 514 ms < 597.94 ms, 591.36e12 FLOP / 0.514 s = 1,150.5 TFLOP/s
    for (tool, _version, shape, tokens, rec), _reason in ms.peer_exclusions():
        assert rec.value < ms.peak_bound_s(m.shapes[shape], tokens), (tool, tokens)


def test_an_empty_exclusion_is_refused(tmp_path):
    path = tmp_path / "peers.yaml"
    path.write_text(
        "predictions:\n  - {tool: t, version: '1', shape: llama-3-70b, tokens: 16, value: 30, basis: b, source: s,"
        " excluded: ''}\n"
    )
    with pytest.raises(KvtierError, match=r"peers\.yaml: key 'predictions\[0\]\.excluded' must be a sentence"):
        ms._read_peers(path)


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


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"predictions": []}, "key 'predictions' must be a non-empty list"),
        ([1, 2], "key 'predictions' must be a non-empty list"),
        ({"predictions": ["x"]}, "key 'predictions[0]' must be a mapping"),
        (
            {"predictions": [GOOD_PEER, {**GOOD_PEER, "shape": "gpt-2"}]},
            "key 'predictions[1].shape' must be one of llama-3-70b, llama-3-8b",
        ),
        ({"predictions": [{**GOOD_PEER, "tokens": 0}]}, "key 'predictions[0].tokens' must be a positive whole number"),
        (
            {"predictions": [{**GOOD_PEER, "tokens": 1.5}]},
            "key 'predictions[0].tokens' must be a positive whole number",
        ),
        ({"predictions": [{**GOOD_PEER, "value": 0}]}, "key 'predictions[0].value' must be a positive time in ms"),
        ({"predictions": [{**GOOD_PEER, "value": True}]}, "key 'predictions[0].value' must be a positive time in ms"),
        ({"predictions": [{**GOOD_PEER, "value": "8 ms"}]}, "key 'predictions[0].value' must be a positive time in ms"),
        (
            {"predictions": [{k: v for k, v in GOOD_PEER.items() if k != "tool"}]},
            "key 'predictions[0].tool' is missing",
        ),
    ],
)
def test_whole_messages_for_bad_peer_predictions(tmp_path, document, message):
    path = tmp_path / "peers.yaml"
    path.write_text(json.dumps(document))  # JSON is YAML
    with pytest.raises(KvtierError) as info:
        ms._read_peers(path)
    assert str(info.value) == f"{path}: {message}"


def test_a_one_token_peer_prediction_is_accepted(tmp_path):
    # the smallest positive values: 1 token, a value just above 0 ms
    path = tmp_path / "peers.yaml"
    path.write_text(json.dumps({"predictions": [{**GOOD_PEER, "tokens": 1, "value": 0.001}]}))
    ((*_, tokens, rec),) = ms._read_peers(path)
    assert tokens == 1 and rec.value == 1e-6


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


def test_a_missing_peer_file_is_named(tmp_path):
    with pytest.raises(KvtierError) as info:
        ms._read_peers(tmp_path / "peers.yaml")
    assert str(info.value) == f"{tmp_path / 'peers.yaml'}: peer predictions file not found"


def test_the_sides_start_at_position_0_by_default(m):
    # 16 tokens from position 0 at 50 % and 50 %: (2 N 16 + 2,621,440 x 136) / 4.945e14 and
    # (2N + 327,680 x 16) / 2.4e12
    compute, memory = ms._sides(m.shapes["llama-3-70b"], 0.5, 0.5, np.float64(16))
    assert float(compute) == pytest.approx((2 * N70 * 16 + 2_621_440 * 136) / 4.945e14, rel=1e-12)
    assert float(memory) == pytest.approx((2 * N70 + 327_680 * 16) / 2.4e12, rel=1e-12)


def test_the_knee_search_spans_1_to_2_to_the_20_tokens(m):
    # memory at 100 x 4.8 TB/s: (2N + 327,680 n) / 4.8e14 = 0.294 ms; compute of one token
    # 2N / 4.945e14 = 0.285 ms: the knee is just above 1 token, 1.03 (below e = 2.72, where a search from
    # log n = 1 would start)
    fast_memory = ms.Fits(**{**vars(HAND_FITS), "mem_efficiency": {"llama-3-70b": 100.0}})
    knee = ms.knee_tokens(m, fast_memory, "llama-3-70b", "graph")
    ratio = 4.945e14 / 4.8e14
    a, b, c = 1_310_720, 2 * N70 + 1_310_720 - 327_680 * ratio, -2 * N70 * ratio
    assert knee == pytest.approx((-b + math.sqrt(b * b - 4 * a * c)) / (2 * a), rel=1e-9)
    assert 1 < knee < 1.1
    # an MFU of 10^6: compute never reaches the floor below 2^20 tokens; the search ends at its top
    fast_compute = ms.Fits(**{**vars(HAND_FITS), "mfu": {"llama-3-70b": 1e6}})
    assert ms.knee_tokens(m, fast_compute, "llama-3-70b", "graph") == pytest.approx(2**20, rel=1e-12)


# ---------------------------------------------------------------------------
# shown texts at a rounding edge: the unit's factor must be exact
# ---------------------------------------------------------------------------


def test_measured_texts_round_at_the_edge(tmp_path):
    n = 8192

    def change_probe1(d):
        # 104.64996 µs shows as 104.6 (a factor 1e-6 too large would show 104.7)
        next(c for c in d["copies"] if c["kind"] == "h2d_pinned" and c["bytes"] == 5 * 2**20)["median_s"] = 104.64996e-6
        # 2 x 8192^3 / t = 776.50000000008e12 FLOP/s (1e-13 above the edge) shows as 777 TFLOP/s; dividing by
        # 1e12 + 1 (1e-12 less) would show 776
        d["matmul_ceiling"].update(median_s=2 * n**3 / 776.50000000008e12, min_s=1e-3, max_s=2e-3)
        # 2 x 2 GiB / t = 4.2450000000004e12 B/s shows as 4.25 TB/s (by 1e12 + 1: 4.24)
        d["hbm_copy"].update(median_s=2 * 2**31 / 4.2450000000004e12, min_s=1e-3, max_s=2e-3)

    def change_probe3(d):
        # every run moves 600 x 5 MiB in the same time: 52.650000005e9 B/s (1e-10 above the edge) shows as
        # 52.7 GB/s; by 1e9 + 1 (1e-9 less) it would show 52.6
        for run in d["overlap"]["with_copies"]:
            run["copies_s"] = 600 * 5 * 2**20 / 52.650000005e9

    target = _bad_set(tmp_path, "probe1.json", change_probe1)
    data = json.loads((target / "probe3.json").read_text())
    change_probe3(data)
    (target / "probe3.json").write_text(json.dumps(data))
    data = json.loads((target / "probe2.json").read_text())
    # 12.84996 mJ shows as 12.8 mJ (a factor 1001 would show 12.9)
    data["fetch_energy"]["joules_per_copy_board"] = 12.84996e-3
    (target / "probe2.json").write_text(json.dumps(data))
    values = ms.read(target).values
    texts = {k: values[k].text for k in ("fetch_5mib_h2d_pinned", "matmul_flop_rate", "hbm_copy_rate")}
    assert texts == {
        "fetch_5mib_h2d_pinned": "104.6 µs",
        "matmul_flop_rate": "777 TFLOP/s",
        "hbm_copy_rate": "4.25 TB/s",
    }
    assert values["overlap_copy_rate"].text == "52.7 GB/s"
    assert values["energy_fetch_5mib_j"].text == "12.8 mJ"


def test_fitted_texts_round_at_the_edge(m, monkeypatch):
    # a latency of 9.04499999 µs shows as 9.04 µs (times 1000001 instead of 1e6: 9.05);
    # 55.1450000001 GB/s shows as 55.15 GB/s (over 1e9 + 1: 55.14)
    monkeypatch.setattr(ms, "fit_latency_bandwidth", lambda b, t: (9.04499999e-6, 55.1450000001e9))
    # every floor 54.792 ms: 0.6849 ms a layer over 80 layers shows as 0.68 (times 1001: 0.69)
    monkeypatch.setattr(ms, "fit_floor", lambda compute, memory, times, p: (0.054792, 1.0))
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


def test_the_seed_labels_what_was_measured_assumed_or_derived(m):
    from kvtier.inputs.assumptions import load_assumptions

    seed = load_assumptions(ROOT / "kvtier" / "data" / "seed.yaml")
    # the TDP is a spec; that a batch draws it is assumed
    assert seed["energy.power_batch"].provenance == "assumed"
    # 55.3 GB/s is 1 GiB over the 1 GiB copy's median, 19.4297 ms: 55.26 GB/s, computed from a measured copy
    host = seed["reference.h200_host_link"]
    assert host.provenance == "derived"
    assert host.value == pytest.approx(2**30 / m.copy("h2d_pinned", 2**30).timing.median_s, rel=1e-3)
    # every figure still labelled measured names no fit in its basis
    for key in seed:
        rec = seed[key]
        if rec.provenance == "measured":
            assert "fit" not in rec.basis and "asymptote" not in rec.basis, key


@pytest.fixture(scope="module")
def checks() -> tuple[ms.Check, ...]:
    loaded = ms.load()
    return ms.forward_checks(loaded) + ms.copy_checks(loaded)


def test_the_fit_by_hand(m):
    ff = ms.shipped_forward_fit()
    # stream: 2 x 2 GiB / 1.0117 ms = 4.245 TB/s, 88.44 % of 4.8 TB/s
    assert ff.mem_efficiency == pytest.approx(2 * 2**31 / 1.0117119550704956e-3 / 4.8e12, rel=1e-9)
    # overhead: (44.451 ms - 141.107 GB / 4.245 TB/s) / 80 = (44.451 - 33.238) / 80 = 0.1402 ms
    s70 = m.shapes["llama-3-70b"]
    stream = s70.weight_bytes / (4.8e12 * ff.mem_efficiency)
    assert ff.mem_overhead_per_layer_s == pytest.approx((m.tail16[("llama-3-70b", "graph")].median_s - stream) / 80)
    assert ff.mem_overhead_per_layer_s == pytest.approx(140.2e-6, rel=1e-3)
    assert ff.launch_floor_per_layer_s == pytest.approx(680.5e-6, rel=1e-3)
    assert ff.sharpness == 2.7
    # attention: 16 queries masked, 79 us at 4.26 MB to 1.42 ms at 268.5 MB: about 5.36 us per MB, 196 GB/s
    assert ff.attention_efficiency * 4.8e12 == pytest.approx(196e9, rel=0.01)
    assert ff.attention_fixed_per_layer_s == pytest.approx(57.54e-6, rel=1e-3)


def test_the_8b_passes_from_70b_only_fits_land_within_15_percent_but_one(checks):
    held = {c.case: c.error_pct for c in checks if c.group == "llama-3-8b passes from llama-3-70b fits"}
    assert len(held) == 10  # 8 eager sweep points, the 16-token eager tail loop and the graph pass
    outliers = {case for case, err in held.items() if abs(err) > 15}
    # the 64-token eager pass measured 36.9 ms, slower than the 128-token pass's 24.2 ms: a glitch of the
    # measurement, which the model (21.8 ms) does not follow
    assert outliers == {"64 tokens, eager"}
    assert held["16 tokens, graph"] == pytest.approx(-3.9, abs=0.1)  # the single-efficiency model: -41 %


def test_leave_one_out_is_reported_apart_from_the_fit_and_is_no_better(checks):
    for group in ("llama-3-70b eager passes", "copies, h2d pinned"):
        ins = {c.case: c.error_pct for c in checks if c.group == group and c.sample == ms.IN_SAMPLE}
        loo = {c.case: c.error_pct for c in checks if c.group == group and c.sample == ms.LEAVE_ONE_OUT}
        assert ins.keys() == loo.keys() and len(ins) >= 7
        assert sum(abs(v) for v in loo.values()) > sum(abs(v) for v in ins.values())
    # the 256-token knee: in sample -1.8 %, refitted without it -3.8 %
    knee = {c.sample: c.error_pct for c in checks if c.case == "256 tokens" and c.group == "llama-3-70b eager passes"}
    assert knee[ms.IN_SAMPLE] == pytest.approx(-1.8, abs=0.1)
    assert knee[ms.LEAVE_ONE_OUT] == pytest.approx(-3.8, abs=0.1)


def test_the_issues_goal_holds_out_of_sample(checks):
    # every 70B pass of 128 tokens or more, every interior block and every copy of 1 MiB or more within 10 %
    out = [c for c in checks if c.sample != ms.IN_SAMPLE]
    passes = [
        c for c in out if c.group == "llama-3-70b eager passes" and int(c.case.split()[0].replace(",", "")) >= 128
    ]
    interior = [c for c in out if c.group == "llama-3-70b interior blocks"]
    copies = [c for c in out if c.group.startswith("copies")]
    assert len(passes) == 7 and len(interior) == 6 and len(copies) == 14
    assert max(abs(c.error_pct) for c in passes + interior + copies) < 10


def test_compare_uses_the_same_model_as_the_measured_page(m):
    # kvtier's scenario under the measured set against pass_s at the fitted values: the yaml rounds to 4 digits
    s = Scenario(load_assumptions(MEASURED_SET))
    ff, s70 = ms.shipped_forward_fit(), m.shapes["llama-3-70b"]
    mfu = s.mfu("typical")
    for position in (0, 1024, 8192):
        lone = float(s.lone_regen_s(position, "resident", mfu))
        assert lone == pytest.approx(float(ms.pass_s(ff, s70, 16, "eager", position)), rel=2e-4), position
    evicted = float(s.lone_regen_s(1024, "evicted", mfu))  # a prefill of 1,040 tokens from position 0
    assert evicted == pytest.approx(float(ms.pass_s(ff, s70, 1040, "eager")), rel=2e-4)


def test_a_knee_sharpness_between_0_and_1_is_refused_naming_the_key():
    s = Scenario(load_assumptions(MEASURED_SET).with_values({"regen.knee_sharpness": "0.5"}, source="test"))
    with pytest.raises(KvtierError, match="key 'regen.knee_sharpness' must be 0 .* or at least 1, got 0.5"):
        s.lone_regen_s(0, "resident", 0.5)


def test_the_transfer_fit_by_hand_and_in_the_measured_set(m):
    tf = ms.fit_transfer(m)
    # the floor: the median of 16.0, 25.2, 14.8 and 14.3 us, (14.8 + 16.0) / 2 = 15.42 us
    assert tf.min_transfer_s == pytest.approx((14.816000126302242e-6 + 16.03199914097786e-6) / 2, rel=1e-9)
    # duplex: 4.882 ms alone over 5.324 ms with the other direction busy, 91.7 %
    assert tf.duplex_efficiency == pytest.approx(4.88159990310669 / 5.323935985565185, rel=1e-9)
    # pageable: relative least squares over the eleven pageable copies at the pinned 9.049 us and 55.14 GB/s:
    # 15.26 us per copy, 26.37 % (14.54 GB/s) within the 128 MiB cache, 16.38 % (9.03 GB/s) beyond it
    assert tf.pageable_overhead_s == pytest.approx(15.26e-6, rel=1e-3)
    assert tf.pageable_warm_efficiency == pytest.approx(0.2637, rel=1e-3)
    assert tf.pageable_efficiency == pytest.approx(0.1638, rel=1e-3)
    assert tf.host_cache_bytes == 128 * 2**20
    # by hand from the fit: 1 GiB is cold, 9.049 + 15.26 us + 1,073,741,824 / (0.16379 x 55.1406e9) = 118.91 ms
    # against 116.0 ms measured (+2.5 %); 1 MiB is warm, 24.31 us + 1,048,576 / 14.5427e9 = 96.42 us against 98.53
    assert tf.pageable_s(2**30) == pytest.approx(118.91e-3, rel=1e-4)
    assert tf.pageable_s(2**20) == pytest.approx(96.42e-6, rel=1e-4)
    a = load_assumptions(MEASURED_SET)
    assert a.value("fetch.min_transfer_time") == pytest.approx(tf.min_transfer_s, rel=1e-3)
    assert a.value("fetch.pageable_efficiency") == pytest.approx(tf.pageable_efficiency, rel=1e-3)
    assert a.value("fetch.pageable_warm_efficiency") == pytest.approx(tf.pageable_warm_efficiency, rel=1e-3)
    assert a.value("fetch.pageable_overhead") == pytest.approx(tf.pageable_overhead_s, rel=1e-3)
    assert a.value("fetch.host_cache") == ms.HOST_CACHE_BYTES
    assert a["fetch.host_cache"].provenance == "assumed"
    assert a.value("fetch.duplex_efficiency") == pytest.approx(tf.duplex_efficiency, rel=1e-3)


def test_small_copies_and_duplex_out_of_sample(m):
    checks = ms.transfer_checks(m)
    d2h = [c for c in checks if c.group == "small copies, d2h pinned"]
    assert len(d2h) == 4 and max(abs(c.error_pct) for c in d2h) < 6  # held out: the floor from the other direction
    duplex = next(c for c in checks if c.group == "both directions at once" and c.sample == ms.HELD_OUT)
    # d2h together predicted as 256 MiB at 91.7 % of the h2d rate: +0.9 % of the 5.273 ms measured
    assert duplex.error_pct == pytest.approx(0.9, abs=0.1)
    # the 16 KiB h2d copy (25.2 us) stays a miss: the floor is the median, 15.4 us
    small = {c.case: c.error_pct for c in checks if c.group == "small copies, h2d pinned" and c.sample == ms.IN_SAMPLE}
    assert small["16 KiB"] == pytest.approx(-38.9, abs=0.1)


def test_every_pageable_copy_of_256_kib_or_more_within_10_pct_out_of_sample(m):
    checks = [c for c in ms.transfer_checks(m) if c.group.endswith("h2d pageable")]
    loo = {c.case: c.error_pct for c in checks if c.sample == ms.LEAVE_ONE_OUT}
    assert len(loo) == 11 and len([c for c in checks if c.sample == ms.IN_SAMPLE]) == 11
    goal = {k: v for k, v in loo.items() if k not in ("4 KiB", "16 KiB", "64 KiB")}
    assert len(goal) == 8 and max(abs(v) for v in goal.values()) < 10
    # the worst, 16 MiB: refitted without it the warm share is lower, 1,109 us measured against +8.3 %
    assert loo["16 MiB"] == pytest.approx(8.3, abs=0.1)
    # the cold copies: without 256 MiB the cold share is 1 GiB's alone, 9.25 GB/s against 8.79 measured: -5.0 %
    assert loo["256 MiB"] == pytest.approx((1 / 9.2500 * 8.7878) * 100 - 100, abs=0.3)
    small = [c for c in checks if c.group == "small copies, h2d pageable"]
    assert {c.case for c in small} == {"4 KiB", "16 KiB", "64 KiB", "256 KiB"}


def test_a_pageable_pool_fetch_is_the_cold_share_in_the_scenario_and_the_fit(m):
    tf = ms.fit_transfer(m)
    s = Scenario(load_assumptions(MEASURED_SET).with_values({"fetch.host_memory": "pageable"}, source="t"))
    bw = s.v("bandwidth.mid")
    # 5 MiB from a pool: 9.049 + 15.26 us + 5,242,880 / (0.1638 x 55.14 GB/s) = 24.31 + 580.5 = 604.8 us
    assert float(s.fetch_s(bw)) == pytest.approx(604.8e-6, rel=1e-3)
    assert float(s.fetch_s(bw)) == pytest.approx(tf.pageable_s(5 * 2**20, math.inf), rel=1e-3)
    # the same block from a buffer the cache holds (the probe's 405 us): 24.31 + 5,242,880 / 14.54 GB/s = 384.8 us
    assert tf.pageable_s(5 * 2**20) == pytest.approx(384.8e-6, rel=1e-3)
    # pinned, the overhead is not paid: 9.049 us + 95.08 us
    pinned = Scenario(load_assumptions(MEASURED_SET))
    assert float(pinned.fetch_s(bw)) == pytest.approx(s.v("fetch_latency") + 5 * 2**20 / bw, rel=1e-12)


def test_the_fetch_follows_the_transfer_keys():
    s = Scenario(load_assumptions(MEASURED_SET))
    lat, bw, floor = s.v("fetch_latency"), s.v("bandwidth.mid"), s.v("fetch.min_transfer_time")
    # contiguous 5 MiB, pinned, alone: 9.049 us + 5242880 / 55.14 GB/s = 104.1 us (above the floor)
    assert float(s.fetch_s(bw)) == pytest.approx(lat + 5 * 2**20 / bw, rel=1e-12)
    paged = Scenario(
        s.assumptions.with_values({"fetch.host_memory": "pageable", "fetch.contention": "duplex"}, source="t")
    )
    eff = s.v("fetch.pageable_efficiency") * s.v("fetch.duplex_efficiency")
    lat_paged = lat + s.v("fetch.pageable_overhead")
    assert float(paged.fetch_s(bw)) == pytest.approx(lat_paged + 5 * 2**20 / (bw * eff), rel=1e-12)
    tiny = Scenario(s.assumptions.with_values({"block_tokens": "1"}, source="t"))  # 320 KiB: 9.05 + 5.9 us < floor
    assert float(tiny.fetch_s(bw)) == floor


def test_the_workload_and_cost_pages_recompute_a_prefix_with_the_same_model():

    s = Scenario(load_assumptions(MEASURED_SET))
    rc = s.regen_costs(mfu_label="typical")
    mfu = s.mfu("typical")
    # a 16-token prefix alone is the tail block alone; 1,040 tokens the prefill of an evicted block at 1,024
    t = rc.lone_s(np.array([16.0, 1040.0]))
    assert t[0] == pytest.approx(float(s.lone_regen_s(0, "resident", mfu)), rel=1e-9)
    assert t[1] == pytest.approx(float(s.lone_regen_s(1024, "evicted", mfu)), rel=1e-9)
    # the launch floor binds the 16-token pass: 80 layers x 680.5 us = 54.44 ms, blended with 4.1 ms of compute
    assert t[0] == pytest.approx(54.46e-3, rel=1e-3)
