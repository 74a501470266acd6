"""The measurements of record, their fits, the measured page and the measured assumption set.

Expected values are worked out by hand from the probe files in
``kvtier/data/measurements/h200-2026-11-30/`` (the arithmetic is in the comments), so a
change to the reader or a fit that moves a number fails here.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.formulas import roofline
from kvtier.inputs import hardware
from kvtier.inputs import measurements as ms
from kvtier.inputs.assumptions import load_assumptions
from kvtier.report.pages import measured as page
from kvtier.scenario import Scenario
from tests.conftest import ROOT, build, glued_values

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


@pytest.fixture(scope="module")
def numbers() -> dict:
    return page.numbers(Scenario())


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


# ---------------------------------------------------------------------------
# the fits
# ---------------------------------------------------------------------------


def test_the_latency_bandwidth_fit_recovers_an_exact_line():
    # t = 10 µs + bytes / 50 GB/s at 1 MiB and 1 GiB: 30.97 µs and 21.485 ms; the fit must give back both
    sizes = np.array([2**20, 2**24, 2**30], dtype=float)
    latency, bw = ms.fit_latency_bandwidth(sizes, 10e-6 + sizes / 50e9)
    assert latency == pytest.approx(10e-6, rel=1e-9) and bw == pytest.approx(50e9, rel=1e-9)


def test_the_rate_fraction_is_the_geometric_mean_of_the_points():
    # 1e12 FLOP in 2 s and 4e12 FLOP in 2 s on a 1e12 FLOP/s peak: fractions 0.5 and 2 -> geometric mean 1
    assert ms.fit_rate_fraction([1e12], [2.0], 1e12) == pytest.approx(0.5)
    assert ms.fit_rate_fraction([1e12, 4e12], [2.0, 2.0], 1e12) == pytest.approx(1.0)


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


def test_the_blended_time():
    # p = 2: sqrt(3^2 + 4^2) = 5; equal sides: 2^(1/p) x either; large p: the plain maximum
    assert roofline.blended_time_s(3.0, 4.0, 2.0) == pytest.approx(5.0)
    assert roofline.blended_time_s(1.0, 1.0, 4.0) == pytest.approx(2**0.25)
    assert roofline.blended_time_s(1.0, 100.0, 3.75) == pytest.approx(100.0, rel=1e-6)
    assert roofline.blended_time_s(0.0, 0.0, 2.0) == 0.0
    assert roofline.blended_time_s([1.0, 3.0], [1.0, 4.0], 1.0).tolist() == [2.0, 7.0]  # p = 1: the sum
    with pytest.raises(KvtierError, match="sharpness must be >= 1, got 0.5"):
        roofline.blended_time_s(1.0, 1.0, 0.5)
    with pytest.raises(KvtierError, match="must not be negative"):
        roofline.blended_time_s(-1.0, 1.0, 2.0)


def test_the_knee_is_where_compute_meets_the_floor(m, fits):
    for shape in ms.SHAPES:
        for mode in ("eager", "graph"):
            knee = ms.knee_tokens(m, fits, shape, mode)
            sides = ms.forward_model_s(m, fits, shape, knee, mode)
            assert float(sides["compute"]) == pytest.approx(float(sides["floor"]), rel=1e-9)
    # 70B as a CUDA graph: 44.45 ms of weight stream = 2 x 70.55e9 x n / (989e12 x 0.5593) -> n = 174 tokens
    assert ms.knee_tokens(m, fits, "llama-3-70b", "graph") == pytest.approx(174, abs=1)


# ---------------------------------------------------------------------------
# the page
# ---------------------------------------------------------------------------


def test_the_illustrative_point_measured(numbers):
    # lone block: 44.4514 ms (CUDA graph) / 104.672 µs = 424.67; in batch: 260.53 µs x 16 = 4.1685 ms / 104.672 µs
    assert numbers["measured_lone_ratio"] == pytest.approx(0.04445135879516601 / 0.00010467199981212616)
    assert numbers["measured_lone_ratio"] == pytest.approx(424.67, abs=0.01)
    assert numbers["measured_in_batch_ratio"] == pytest.approx(39.82, abs=0.01)
    # the chapter: 2 x 70e9 x 16 FLOP / (500 TFLOP/s x 25 %) = 17.92 ms over 5 MiB / 64 GB/s = 81.92 µs: 218.75
    assert numbers["chapter_ratio"] == pytest.approx(218.75)
    # the seed's lone block: 140 GB / (3.35 TB/s x 80 %) = 52.24 ms / 81.92 µs = 637.7
    assert numbers["set_lone_ratio"] == pytest.approx(637.68, abs=0.01)
    # per-chunk layout: 44.4514 ms / 2.0204 ms = 22.0 and / 1.3722 ms = 32.4
    assert (numbers["per_chunk_lone_ratio_min"], numbers["per_chunk_lone_ratio_max"]) == pytest.approx(
        (22.00, 32.39), abs=0.01
    )


def test_the_accuracy_target_is_checked_honestly(numbers):
    df = page.forward_table(Scenario())
    plain = df[df["runner"] != "transformers eager (cross-check)"]
    # 12 passes of the 70B sweep + 8 of the 8B sweep + 2 CUDA-graph passes
    assert numbers["n_passes"] == len(plain) == 22
    assert numbers["n_within"] == int((plain["blended_error_pct"].abs() <= 10).sum()) == 20
    # every 70B pass within 10 %; the misses are eager 8B passes on the launch floor
    assert numbers["worst_70b_error_pct"] < 10
    assert numbers["misses"] == "8B shapes, 1 token (eager): +12.4 %; 8B shapes, 64 tokens (eager): -30.7 %"
    # at the knee (256 tokens, 79.45 ms) the plain maximum is 65.46 ms, -17.6 %; the blend 73.22 ms, -7.8 %
    assert numbers["knee_probe_tokens"] == 256
    assert numbers["knee_probe_max_error_pct"] == pytest.approx(-17.61, abs=0.01)
    assert numbers["knee_probe_blend_error_pct"] == pytest.approx(-7.85, abs=0.01)


def test_the_residual_table_names_the_peers_and_their_versions():
    df = page.residual_table(Scenario())
    peers = df[df["model"].str.contains("llm-analysis 0.2.2|GenZ 0.0.16")]
    assert len(peers) == 4 and set(peers["model_provenance"]) == {"derived"}
    # llm-analysis 0.2.2, 16 tokens: 29.0 ms against 44.4514 ms measured = -34.76 %
    row = peers[peers["model"].str.startswith("llm-analysis") & peers["quantity"].str.startswith("16-token")]
    assert float(row["error_pct"].iloc[0]) == pytest.approx((29.0 / 44.45135879516601 - 1) * 100)
    assert not df.duplicated(["quantity", "model"]).any()


def test_every_table_of_record_has_unique_keys():
    s = Scenario()
    for name, builder, key in page.TABLES:
        df = builder(s)
        assert len(df) and not df.duplicated(list(key)).any(), name


def test_the_fetch_fit_error_over_its_points(numbers):
    # 5 MiB: 9.049 µs + 5,242,880 B / 55.14 GB/s = 104.13 µs against 104.67 µs measured: -0.52 %
    assert numbers["fit_5mib_us"] == pytest.approx(104.13, abs=0.01)
    assert numbers["fit_5mib_error_pct"] == pytest.approx(-0.52, abs=0.01)
    assert numbers["fit_max_abs_error_pct"] < 1
    # per chunk: 160 x 9.049 µs + 5 MiB / 55.14 GB/s = 1.448 + 0.095 = 1.543 ms
    assert numbers["per_chunk_model_ms"] == pytest.approx(1.543, abs=0.001)


# ---------------------------------------------------------------------------
# the measured assumption set
# ---------------------------------------------------------------------------

MEASURED_SET = ROOT / "kvtier" / "data" / "h200-measured.yaml"


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
        "regen.mem_efficiency": fits.mem_efficiency["llama-3-70b"],
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


@pytest.mark.book
def test_the_book_builds_from_the_measured_set(tmp_path):
    out = tmp_path / "measured"
    proc = build(out, "--assumptions", str(MEASURED_SET), "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    glued = glued_values(out / "notebooks" / "11_measured.ipynb")
    # the set's in-batch ratio: 2 x 70,553,706,496 x 16 FLOP / (989 TFLOP/s x 55.93 %) = 4.0816 ms
    # over 9.049 µs + 5 MiB / 55.14 GB/s = 104.13 µs: 39.20, the measured slope's 39.8 within 2 %
    assert glued["set_in_batch_ratio"] == pytest.approx(39.20, abs=0.01)
    assert glued["set_name"] == "h200-measured"
    ratio = glued_values(out / "notebooks" / "04_ratio.ipynb")
    assert ratio


def test_the_tables_of_record_do_not_depend_on_the_assumption_set():
    # a rerun with other assumptions must leave the record of a measurement alone; only the page's
    # comparison adds this set's two rows
    other = Scenario(load_assumptions(sets={"bandwidth.mid": "100GB/s", "peak_flops": "989TFLOP/s"}))
    for name, builder, _key in page.TABLES:
        assert builder(other).equals(builder(Scenario())), name
    assert len(page.comparison_table(other)) == len(page.ratio_table(other)) + 2


def test_the_intro_says_which_pages_the_measured_set_changes_most():
    from kvtier.report.pages import measured

    change = measured.changes_under_measured_set()
    # both sets' illustrative in-batch ratio: the seed's 17.92 ms / 81.92 us = 218.75; the H200 set's is far lower
    assert change["seed_ratio"] == pytest.approx(218.75, rel=1e-12)
    assert change["h200_ratio"] < 50 and change["h200_lone_ratio"] < change["seed_lone_ratio"]
    counts = dict(change["ranked"])
    assert counts["09_models"] >= 0 and counts["07_roofline"] > 0
    assert [c for _, c in change["ranked"]] == sorted(counts.values(), reverse=True)
    sentence = measured.numbers(Scenario())["measured_set_sentence"]
    assert sentence.startswith("Rebuilt with it instead of the seed set, the pages that change most are ")
    assert "from 218.75 to " in sentence
    assert (
        "{glue:text}`../notebooks/11_measured.ipynb::measured_set_sentence:s`"
        in (ROOT / "book" / "intro.md").read_text()
    )
