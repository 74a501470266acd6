"""kvtier.inputs.hardware: accelerator and link presets, their values with provenance, by hand, and their limits.

Every expected number has the arithmetic behind it in a comment.  Bandwidths are
decimal (1 GB/s = 1e9 B/s, 1 TB/s = 1e12 B/s).
"""

import pytest

from kvtier import load_assumptions
from kvtier.errors import KvtierError
from kvtier.formulas import costs, roofline
from kvtier.inputs import hardware
from kvtier.inputs.provenance import PROVENANCE_CLASSES
from tests.conftest import BLOCK70, W70

# ---------------------------------------------------------------------------
# Presets
# ---------------------------------------------------------------------------


def test_preset_names_in_file_order():
    assert list(hardware.load_accelerators()) == [
        "h100-sxm",
        "h200",
        "b200",
        "gb200",
        "a100-sxm",
        "l40s",
        "dgx-spark-gb10",
        "chapter-implied",
    ]
    assert list(hardware.load_links()) == [
        "hbm",
        "nvlink-c2c",
        "pcie5-x16",
        "pcie6-x16",
        "cxl2-x8",
        "cxl2-x16",
        "cxl3-x8",
        "cxl3-x16",
        "rdma-400g",
        "nvme-gen4-x4",
        "nvme-gen5-x4",
    ]


def test_every_record_has_valid_provenance_and_text():
    records = [
        (name, r)
        for name, a in hardware.load_accelerators().items()
        for r in (a.peak_record, a.mem_bandwidth_record, a.memory_record)
        if r
    ]
    for name, link in hardware.load_links().items():
        records += [(name, r) for r in (link.bandwidth_record, link.raw_bandwidth_record, link.latency_record) if r]
    # 8 accelerators x 2 records + 7 memory sizes (all but the chapter's unnamed one) + 11 links x (bandwidth +
    # latency) + 9 net links with a raw bandwidth (pcie5, pcie6, 4 cxl, 2 nvme, rdma) = 16 + 7 + 22 + 9 = 54
    assert len(records) == 8 * 2 + 7 + 11 * 2 + 9
    for name, record in records:
        assert record.key.startswith(f"{name}."), record.key
        if record.value is None:  # a figure nobody publishes carries no class
            assert record.provenance == "" and record.key == "dgx-spark-gb10.peak_flops"
            continue
        assert record.provenance in PROVENANCE_CLASSES, record.key
        assert record.figure and record.source, record.key
        if record.provenance in ("assumed", "implied", "derived"):
            assert record.basis, record.key
        assert record.label() == f"{record.key} = {record.display} [{record.provenance}]"


def test_accelerator_values():
    acc = hardware.load_accelerators()
    # 989 TFLOP/s dense bf16 = 989e12 FLOP/s; 3.35 TB/s = 3.35e12 B/s
    assert acc["h100-sxm"].peak_flop_per_s == 989e12
    assert acc["h100-sxm"].mem_bandwidth_bytes_per_s == 3.35e12
    assert acc["h100-sxm"].peak_record.provenance == "published-spec"
    assert "sparse" in acc["h100-sxm"].peak_record.figure
    # H200: same compute, 4.8 TB/s HBM3e
    assert (acc["h200"].peak_flop_per_s, acc["h200"].mem_bandwidth_bytes_per_s) == (989e12, 4.8e12)
    # B200: 4.5 PFLOP/s sparse / 2 = 2.25e15 dense; 64 TB/s / 8 GPUs = 8 TB/s; both computed, so derived
    assert (acc["b200"].peak_flop_per_s, acc["b200"].mem_bandwidth_bytes_per_s) == (2.25e15, 8e12)
    assert acc["b200"].peak_record.provenance == acc["b200"].mem_bandwidth_record.provenance == "derived"
    # GB200 per GPU: 10 PFLOP/s sparse per superchip / 2 GPUs / 2 = 2.5e15, marked derived
    assert acc["gb200"].peak_flop_per_s == 2.5e15
    assert acc["gb200"].peak_record.provenance == "derived"
    # DGX Spark: 273 GB/s LPDDR5x, no bf16 peak
    # A100 SXM4 80GB and L40S: dense bf16 312 and 362.05 TFLOP/s (half their sparse figures), 2,039 and 864 GB/s
    assert (acc["a100-sxm"].peak_flop_per_s, acc["a100-sxm"].mem_bandwidth_bytes_per_s) == (312e12, 2.039e12)
    assert (acc["l40s"].peak_flop_per_s, acc["l40s"].mem_bandwidth_bytes_per_s) == (362.05e12, 864e9)
    assert acc["dgx-spark-gb10"].peak_flop_per_s is None
    assert acc["dgx-spark-gb10"].mem_bandwidth_bytes_per_s == 273e9
    assert acc["dgx-spark-gb10"].peak_record.display == "not published"
    assert acc["dgx-spark-gb10"].peak_record.provenance == ""  # no figure, so no class
    # the chapter's unstated 500 TFLOP/s (implied) with an assumed H100-class 3.35 TB/s
    chapter = acc["chapter-implied"]
    assert chapter.peak_flop_per_s == 500e12
    assert chapter.peak_record.provenance == "implied"
    assert chapter.mem_bandwidth_record.provenance == "assumed"
    # device memory: 80 GB and 141 GB published; B200 1,440 GB / 8 = 180 GB and GB200 13.4 TB / 72 = 186 GB derived;
    # the chapter names no accelerator, so no memory
    sizes = {name: a.memory_bytes for name, a in acc.items()}
    assert sizes == {
        "h100-sxm": 80e9,
        "h200": 141e9,
        "b200": 180e9,
        "gb200": 186e9,
        "a100-sxm": 80e9,
        "l40s": 48e9,
        "dgx-spark-gb10": 128e9,
        "chapter-implied": None,
    }
    assert (
        acc["b200"].memory_record.provenance == "derived" and acc["h200"].memory_record.provenance == "published-spec"
    )


def test_chapter_implied_peak_matches_the_seed_set():
    seed = load_assumptions()
    preset = hardware.accelerator("chapter-implied").peak_record
    record = seed.with_records({"peak_flops": preset})["peak_flops"]
    # both 500 TFLOP/s = 5e14 FLOP/s, both implied
    assert record.value == seed["peak_flops"].value == preset.value == 500e12
    assert record.provenance == seed["peak_flops"].provenance == "implied"


def test_link_values():
    links = hardware.load_links()
    # HBM link is the H100 SXM's 3.35 TB/s
    assert links["hbm"].bandwidth_bytes_per_s == hardware.accelerator("h100-sxm").mem_bandwidth_bytes_per_s
    # NVLink-C2C: 900 GB/s total / 2 directions = 450 GB/s
    assert links["nvlink-c2c"].bandwidth_bytes_per_s == 450e9
    # PCIe 5.0 x16: 32 GT/s x 16 / 8 = 64 GB/s raw; x 128/130 = 63.02 GB/s net (stored as 63)
    assert (links["pcie5-x16"].raw_bandwidth_bytes_per_s, links["pcie5-x16"].bandwidth_bytes_per_s) == (64e9, 63e9)
    assert links["pcie5-x16"].bandwidth_bytes_per_s == pytest.approx(64e9 * 128 / 130, rel=1e-3)
    # PCIe 6.0 x16: 128 GB/s raw; x 242/256 = 121.0 GB/s FLIT payload
    assert links["pcie6-x16"].bandwidth_bytes_per_s == pytest.approx(128e9 * 242 / 256, rel=1e-3)
    # CXL rides the PCIe PHY: 2.0 = PCIe 5.0, 3.x = PCIe 6.0; x8 is half of x16
    assert links["cxl2-x16"].bandwidth_bytes_per_s == links["pcie5-x16"].bandwidth_bytes_per_s
    assert links["cxl3-x16"].bandwidth_bytes_per_s == links["pcie6-x16"].bandwidth_bytes_per_s
    assert links["cxl2-x8"].bandwidth_bytes_per_s == 31.5e9  # 63 / 2
    assert links["cxl3-x8"].bandwidth_bytes_per_s == 60.5e9  # 121 / 2
    # the source chapter's optimistic 121 GB/s is the CXL 3.x x16 net figure
    assert links["cxl3-x16"].bandwidth_bytes_per_s == load_assumptions().value("bandwidth.optimistic")
    # 400 Gb/s / 8 = 50 GB/s data rate, net of line coding and FEC; raw 4 x 106.25 Gb/s / 8 = 53.125 GB/s
    assert links["rdma-400g"].bandwidth_bytes_per_s == 50e9
    assert links["rdma-400g"].raw_or_net == "net"
    assert links["rdma-400g"].raw_bandwidth_bytes_per_s == 53.125e9
    assert (links["nvme-gen4-x4"].bandwidth_bytes_per_s, links["nvme-gen5-x4"].bandwidth_bytes_per_s) == (7e9, 14e9)
    for link in links.values():
        assert link.raw_or_net in hardware.RAW_OR_NET
        assert link.bandwidth_bytes_per_s > 0
        # no shipped preset carries a latency: it is the assumption key tier_latency.CLASS (Scenario.tier_links)
        assert link.latency_s == 0 and link.latency_record.basis == "none given in the preset"
        if link.raw_bandwidth_bytes_per_s is not None:
            assert link.bandwidth_bytes_per_s <= link.raw_bandwidth_bytes_per_s
        if link.raw_or_net == "net":
            assert link.raw_bandwidth_bytes_per_s is not None


def test_link_fetch_time():
    cxl = hardware.link("cxl2-x16")
    # the bytes at the preset's bandwidth; the tiers page adds the latency of tier_latency.host_link per transfer
    fetch = costs.fetch_time_s(BLOCK70, cxl.bandwidth_bytes_per_s, cxl.latency_s)
    # 5,242,880 B / 63e9 B/s = 83.22 us (the preset's latency is 0)
    assert float(fetch) == pytest.approx(BLOCK70 / 63e9, rel=1e-12)
    assert float(fetch) == pytest.approx(83.22e-6, rel=1e-3)
    # without latency: 5,242,880 / 63e9 = 83.22 us
    assert float(costs.fetch_time_s(BLOCK70, cxl.bandwidth_bytes_per_s)) == pytest.approx(83.22e-6, rel=1e-3)


def test_a_preset_record_stands_for_an_assumption():
    preset = hardware.link("cxl2-x16").bandwidth_record
    assert preset.key == "cxl2-x16.bandwidth"
    rec = load_assumptions().with_records({"bandwidth.mid": preset})["bandwidth.mid"]
    # 63 GB/s = 6.3e10 B/s, provenance and source carried over, the preset named in the basis
    assert (rec.key, rec.value, rec.provenance, rec.source) == ("bandwidth.mid", 63e9, "derived", preset.source)
    assert rec.basis == f"cxl2-x16 bandwidth: {preset.figure}; {preset.basis}"
    # validated as a value of its new key: a compute rate is no bandwidth
    with pytest.raises(KvtierError, match=r"record 'h100-sxm.peak_flops': key 'bandwidth.mid'"):
        load_assumptions().with_records({"bandwidth.mid": hardware.accelerator("h100-sxm").peak_record})


def test_unknown_preset_names_raise_naming_the_name():
    with pytest.raises(KvtierError, match=r"unknown accelerator 'h300'; known: h100-sxm, h200"):
        hardware.accelerator("h300")
    with pytest.raises(KvtierError, match=r"unknown link 'cxl9-x4'; known: hbm, nvlink-c2c"):
        hardware.link("cxl9-x4")


def test_dgx_spark_needs_a_user_peak():
    spark = hardware.accelerator("dgx-spark-gb10")
    with pytest.raises(KvtierError, match=r"accelerator 'dgx-spark-gb10' has no peak .*a peak is required"):
        spark.require_peak()
    # the bare formula refuses a missing peak too
    with pytest.raises(KvtierError, match="peak_flop_per_s"):
        roofline.roofline_time_s(2.24e12, W70, spark.peak_flop_per_s, 0.25, spark.mem_bandwidth_bytes_per_s)
    # with a user peak of 100 TFLOP/s: compute 2.24e12 / (100e12 x 0.25) = 89.6 ms;
    # memory 140e9 / 273e9 = 512.8 ms -> memory-bound, 512.8 ms
    t = roofline.roofline_time_s(2.24e12, W70, 100e12, 0.25, spark.mem_bandwidth_bytes_per_s)
    assert float(t) == pytest.approx(140e9 / 273e9, rel=1e-12)
    assert float(t) == pytest.approx(0.5128, rel=1e-3)
    assert str(roofline.bound(2.24e12, W70, 100e12, 0.25, spark.mem_bandwidth_bytes_per_s)) == "memory"


def test_preset_file_errors_name_file_and_key(tmp_path):
    bad = tmp_path / "hw.yaml"
    bad.write_text("accelerators: [unclosed\n")
    with pytest.raises(KvtierError, match=r"hw\.yaml: malformed YAML at line"):
        hardware.load_accelerators(bad)
    with pytest.raises(KvtierError, match=r"missing\.yaml: hardware file not found"):
        hardware.load_links(tmp_path / "missing.yaml")
    bad.write_text(
        "accelerators:\n  x1:\n    title: X\n"
        "    peak_flops: {value: 1 PFLOP/s, provenance: guessed, figure: f, source: s}\n"
        "    mem_bandwidth: {value: 1 TB/s, provenance: assumed, figure: f, basis: b, source: s}\n"
    )
    with pytest.raises(KvtierError, match=r"accelerator 'x1' field 'peak_flops' has provenance 'guessed'"):
        hardware.load_accelerators(bad)
    bad.write_text(
        "links:\n  l1:\n    title: L\n"
        "    bandwidth: {value: 70 GB/s, raw_or_net: net, provenance: published-spec, figure: f, source: s}\n"
        "    raw_bandwidth: {value: 64 GB/s, provenance: published-spec, figure: f, source: s}\n"
    )
    with pytest.raises(KvtierError, match=r"link 'l1' bandwidth 70 GB/s exceeds its raw_bandwidth 64 GB/s"):
        hardware.load_links(bad)
    bad.write_text(
        "links:\n  l1:\n    title: L\n"
        "    bandwidth: {value: 70 furlongs, raw_or_net: raw, provenance: published-spec, figure: f, source: s}\n"
    )
    with pytest.raises(KvtierError, match=r"link 'l1' field 'bandwidth': cannot read '70 furlongs'"):
        hardware.load_links(bad)
    bad.write_text(
        "links:\n  l1:\n    title: L\n"
        "    bandwidth: {value: 70 GB/s, raw_or_net: raw, provenance: assumed, figure: f, source: s}\n"
    )
    with pytest.raises(KvtierError, match=r"link 'l1' field 'bandwidth' is assumed and needs a 'basis'"):
        hardware.load_links(bad)
    bad.write_text(
        "accelerators:\n  x1:\n    title: X\n"
        "    peak_flops: {value: null, provenance: published-spec, figure: f, source: s}\n"
        "    mem_bandwidth: {value: 1 TB/s, provenance: assumed, figure: f, basis: b, source: s}\n"
    )
    with pytest.raises(KvtierError) as err:
        hardware.load_accelerators(bad)
    assert str(err.value) == (
        f"{bad}: accelerator 'x1' field 'peak_flops' has no value, so it takes no provenance class;"
        " remove its 'provenance'"
    )


def test_custom_file_link_without_latency_defaults_to_zero(tmp_path):
    path = tmp_path / "hw.yaml"
    path.write_text(
        "links:\n  l1:\n    title: L\n"
        "    bandwidth: {value: 400 Gb/s, raw_or_net: raw, provenance: published-spec, figure: f, source: s}\n"
    )
    link = hardware.link("l1", path)
    # 400 Gb/s / 8 = 50 GB/s; no latency given -> 0 s, labelled assumed
    assert (link.bandwidth_bytes_per_s, link.raw_bandwidth_bytes_per_s, link.latency_s) == (50e9, 50e9, 0.0)
    assert link.latency_record.provenance == "assumed"
