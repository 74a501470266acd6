"""Reading a measurement set: typed values with provenance, each record the field it names, refusals in one line."""

from __future__ import annotations

import json
import re
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs import measurements as ms
from kvtier.inputs.assumptions import load_assumptions
from kvtier.units import parse_quantity
from tests.conftest import ROOT

DATA = ROOT / "kvtier" / "data" / "measurements" / ms.SET_NAME


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


def test_the_seed_labels_what_was_measured_assumed_or_derived(m):

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
