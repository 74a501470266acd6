"""Hardware presets and the roofline: values with provenance, hand-checked arithmetic, limits.

Every expected number has the arithmetic behind it in a comment.  Bandwidths are
decimal (1 GB/s = 1e9 B/s, 1 TB/s = 1e12 B/s).
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvtier import load_assumptions, load_model
from kvtier.errors import KvtierError
from kvtier.formulas import costs, roofline
from kvtier.inputs import hardware
from kvtier.inputs.provenance import PROVENANCE_CLASSES

# Llama-3 70B as the source chapter counts it: nominal 70e9 parameters in bf16
P70 = 70e9
W70 = 140e9  # 70e9 params x 2 B = 140e9 B
KV70 = 327_680  # 2 (K,V) x 80 layers x 8 KV heads x 128 head_dim x 2 B
BLOCK70 = 5_242_880  # 16 tokens x 327,680 B = 5 MiB

# Llama-3 8B from its published config
P8 = 8_030_261_248
W8 = 16_060_522_496  # 8,030,261,248 params x 2 B
KV8 = 131_072  # 2 x 32 layers x 8 KV heads x 128 head_dim x 2 B = 128 KiB


# ---------------------------------------------------------------------------
# Presets
# ---------------------------------------------------------------------------


def test_preset_names_in_file_order():
    assert list(hardware.load_accelerators()) == [
        "h100-sxm",
        "h200",
        "b200",
        "gb200",
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
        (name, r) for name, a in hardware.load_accelerators().items() for r in (a.peak_record, a.mem_bandwidth_record)
    ]
    for name, link in hardware.load_links().items():
        records += [(name, r) for r in (link.bandwidth_record, link.raw_bandwidth_record, link.latency_record) if r]
    # 6 accelerators x 2 records + 11 links x (bandwidth + latency)
    # + 9 net links with a raw bandwidth (pcie5, pcie6, 4 cxl, 2 nvme, rdma) = 12 + 22 + 9 = 43
    assert len(records) == 6 * 2 + 11 * 2 + 9
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
    assert acc["dgx-spark-gb10"].peak_flop_per_s is None
    assert acc["dgx-spark-gb10"].mem_bandwidth_bytes_per_s == 273e9
    assert acc["dgx-spark-gb10"].peak_record.display == "not published"
    assert acc["dgx-spark-gb10"].peak_record.provenance == ""  # no figure, so no class
    # the chapter's unstated 500 TFLOP/s (implied) with an assumed H100-class 3.35 TB/s
    chapter = acc["chapter-implied"]
    assert chapter.peak_flop_per_s == 500e12
    assert chapter.peak_record.provenance == "implied"
    assert chapter.mem_bandwidth_record.provenance == "assumed"


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
        assert link.bandwidth_bytes_per_s > 0 and link.latency_s >= 0
        assert link.latency_record.provenance == "assumed"
        if link.raw_bandwidth_bytes_per_s is not None:
            assert link.bandwidth_bytes_per_s <= link.raw_bandwidth_bytes_per_s
        if link.raw_or_net == "net":
            assert link.raw_bandwidth_bytes_per_s is not None


def test_link_fetch_time():
    cxl = hardware.link("cxl2-x16")
    fetch = costs.fetch_time_s(BLOCK70, cxl.bandwidth_bytes_per_s, cxl.latency_s)  # as the tiers page does
    # 0.5 us + 5,242,880 B / 63e9 B/s = 0.5 us + 83.22 us = 83.72 us
    assert float(fetch) == pytest.approx(0.5e-6 + BLOCK70 / 63e9, rel=1e-12)
    assert float(fetch) == pytest.approx(83.72e-6, rel=1e-3)
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


# ---------------------------------------------------------------------------
# Roofline: worked examples
# ---------------------------------------------------------------------------


def test_llama3_70b_lone_block_on_h100_is_memory_bound():
    h100 = hardware.accelerator("h100-sxm")
    peak, hbm = h100.peak_flop_per_s, h100.mem_bandwidth_bytes_per_s
    flops = costs.forward_flops(16, P70)  # 2 x 70e9 x 16 = 2.24e12 FLOP
    # lone block: batch_tokens == block_tokens, so the block pays for all 140e9 B of weights;
    # the tail block at position 0 reads no cached KV
    read = roofline.regen_bytes_read(W70, 16, 16, KV70, 0)
    assert float(read) == 140e9
    # compute: 2.24e12 / (989e12 x 0.25) = 2.24e12 / 2.4725e14 = 9.06 ms
    compute = costs.compute_time_s(flops, h100.peak_flop_per_s, 0.25)
    assert float(compute) == pytest.approx(9.0597e-3, rel=1e-4)
    # memory: 140e9 / (3.35e12 x 1.0) = 41.79 ms
    memory = roofline.memory_time_s(read, h100.mem_bandwidth_bytes_per_s)
    assert float(memory) == pytest.approx(41.791e-3, rel=1e-4)
    # roofline = max(9.06, 41.79) ms = 41.79 ms, memory-bound
    assert float(roofline.roofline_time_s(flops, read, peak, 0.25, hbm)) == pytest.approx(140e9 / 3.35e12, rel=1e-12)
    assert str(roofline.bound(flops, read, peak, 0.25, hbm)) == "memory"


def test_llama3_70b_batched_block_on_h100_is_compute_bound():
    h100 = hardware.accelerator("h100-sxm")
    peak, hbm = h100.peak_flop_per_s, h100.mem_bandwidth_bytes_per_s
    flops = 2 * P70 * 16  # 2.24e12 FLOP
    # 4096 tokens share one weight read: 140e9 x 16 / 4096 = 546,875,000 B = 546.9 MB
    read = roofline.regen_bytes_read(W70, 16, 4096, KV70, 0)
    assert float(read) == pytest.approx(546_875_000, rel=1e-12)
    # memory: 546.875e6 / 3.35e12 = 0.1632 ms < compute 9.06 ms -> compute-bound
    assert float(roofline.memory_time_s(read, 3.35e12)) == pytest.approx(0.16325e-3, rel=1e-4)
    assert str(roofline.bound(flops, read, peak, 0.25, hbm)) == "compute"
    # and then the roofline is exactly the chapter's MFU model: 2.24e12 / (989e12 x 0.25)
    assert float(roofline.roofline_time_s(flops, read, peak, 0.25, hbm)) == float(
        costs.compute_time_s(flops, 989e12, 0.25)
    )


def test_llama3_8b_interior_block_on_h200():
    model = load_model("llama-3-8b")
    assert model.total_params == P8
    assert model.kv_bytes_per_token("bf16") == KV8
    h200 = hardware.accelerator("h200")
    peak, hbm = h200.peak_flop_per_s, h200.mem_bandwidth_bytes_per_s
    flops = costs.forward_flops(16, P8)  # 2 x 8,030,261,248 x 16 = 256,968,359,936 FLOP
    assert float(flops) == 256_968_359_936
    # lone block at position 4096, prefix resident: 16,060,522,496 B weights + 131,072 x 4096 = 536,870,912 B KV
    read = roofline.regen_bytes_read(W8, 16, 16, KV8, 4096)
    assert float(read) == 16_597_393_408  # 16,060,522,496 + 536,870,912
    # compute: 256,968,359,936 / (989e12 x 0.40) = 0.6496 ms
    assert float(costs.compute_time_s(flops, 989e12, 0.40)) == pytest.approx(0.64956e-3, rel=1e-4)
    # memory: 16,597,393,408 / 4.8e12 = 3.4578 ms -> memory-bound
    assert float(roofline.roofline_time_s(flops, read, peak, 0.40, hbm)) == pytest.approx(3.4578e-3, rel=1e-4)
    assert str(roofline.bound(flops, read, peak, 0.40, hbm)) == "memory"
    # batch of 8192 tokens: 16,060,522,496 x 16 / 8192 = 31,368,208 B weights + 536,870,912 B KV
    # = 568,239,120 B -> 568,239,120 / 4.8e12 = 0.1184 ms < 0.6496 ms -> compute-bound
    batched = roofline.regen_bytes_read(W8, 16, 8192, KV8, 4096)
    assert float(batched) == 568_239_120
    assert float(roofline.memory_time_s(batched, 4.8e12)) == pytest.approx(0.11838e-3, rel=1e-4)
    assert str(roofline.bound(flops, batched, peak, 0.40, hbm)) == "compute"
    # at half the memory efficiency the memory side doubles: 0.2368 ms, still compute-bound
    assert float(roofline.memory_time_s(batched, 4.8e12, 0.5)) == pytest.approx(0.23675e-3, rel=1e-4)


def test_break_even_bandwidth_examples():
    # chapter's conservative regeneration, 17.92 ms: 5,242,880 B / 17.92e-3 s = 292.57 MB/s
    assert float(roofline.break_even_bandwidth(BLOCK70, 17.92e-3)) == pytest.approx(292.571e6, rel=1e-5)
    # lone 70B block on an H100 under the roofline, 140e9 / 3.35e12 = 41.79 ms:
    # 5,242,880 x 3.35e12 / 140e9 = 125.45 MB/s
    assert float(roofline.break_even_bandwidth(BLOCK70, 140e9 / 3.35e12)) == pytest.approx(125.455e6, rel=1e-5)
    # with latency: 5,242,880 / (1 ms - 60 us) = 5,242,880 / 0.94e-3 = 5.5775 GB/s
    assert float(roofline.break_even_bandwidth(BLOCK70, 1e-3, 60e-6)) == pytest.approx(5.57753e9, rel=1e-5)
    # latency >= regeneration time: no bandwidth makes fetching win
    assert float(roofline.break_even_bandwidth(BLOCK70, 1e-3, 1e-3)) == math.inf
    assert float(roofline.break_even_bandwidth(BLOCK70, 1e-3, 2e-3)) == math.inf
    assert math.isnan(float(roofline.break_even_bandwidth(BLOCK70, math.nan)))


# ---------------------------------------------------------------------------
# Roofline: limits and properties
# ---------------------------------------------------------------------------

times = st.floats(min_value=1e-7, max_value=10.0, allow_nan=False)
sizes = st.floats(min_value=1.0, max_value=1e12, allow_nan=False)
fractions = st.floats(min_value=0.01, max_value=1.0)


@given(sizes, times)
def test_break_even_times_regen_time_is_block_bytes(block, regen):
    # fetch time at the break-even bandwidth equals the regeneration time
    bw = roofline.break_even_bandwidth(block, regen)
    assert float(bw * regen) == pytest.approx(block, rel=1e-12)
    assert float(costs.fetch_time_s(block, bw)) == pytest.approx(regen, rel=1e-12)


@given(sizes, times, st.floats(0.0, 0.99))
def test_break_even_with_latency_equalizes_fetch_and_regen(block, regen, latency_share):
    latency = regen * latency_share
    bw = roofline.break_even_bandwidth(block, regen, latency)
    assert float(costs.fetch_time_s(block, bw, latency)) == pytest.approx(regen, rel=1e-9)


@given(sizes, times, times)
def test_break_even_falls_as_regeneration_slows(block, r1, r2):
    lo, hi = sorted((r1, r2))
    assert roofline.break_even_bandwidth(block, hi) <= roofline.break_even_bandwidth(block, lo)
    # and rises with latency
    assert roofline.break_even_bandwidth(block, hi, lo / 2) >= roofline.break_even_bandwidth(block, hi)


@given(st.floats(1e9, 1e16), sizes, fractions, fractions)
def test_roofline_is_the_mfu_model_when_compute_bound(flops, n_bytes, mfu, eff):
    t = roofline.roofline_time_s(flops, n_bytes, 989e12, mfu, 3.35e12, eff)
    mfu_model = costs.compute_time_s(flops, 989e12, mfu)
    assert t >= mfu_model
    assert t >= n_bytes / (3.35e12 * eff)
    if str(roofline.bound(flops, n_bytes, 989e12, mfu, 3.35e12, eff)) == "compute":
        assert float(t) == float(mfu_model)
    # no bytes read: always the MFU model
    assert float(roofline.roofline_time_s(flops, 0.0, 989e12, mfu, 3.35e12, eff)) == float(mfu_model)


@given(st.floats(1e9, 1e16), st.floats(1e9, 1e16), sizes, sizes, fractions, fractions)
def test_roofline_grows_with_work_and_bytes(f1, f2, b1, b2, mfu, eff):
    f_lo, f_hi = sorted((f1, f2))
    b_lo, b_hi = sorted((b1, b2))
    args = (989e12, mfu, 3.35e12, eff)
    assert roofline.roofline_time_s(f_lo, b_lo, *args) <= roofline.roofline_time_s(f_hi, b_lo, *args)
    assert roofline.roofline_time_s(f_lo, b_lo, *args) <= roofline.roofline_time_s(f_lo, b_hi, *args)


@given(fractions, fractions, st.floats(1e11, 1e13), st.floats(1e11, 1e13))
def test_roofline_falls_as_hardware_improves(m1, m2, bw1, bw2):
    m_lo, m_hi = sorted((m1, m2))
    bw_lo, bw_hi = sorted((bw1, bw2))
    flops, n_bytes = 2.24e12, 140e9
    assert roofline.roofline_time_s(flops, n_bytes, 989e12, m_hi, bw_lo) <= roofline.roofline_time_s(
        flops, n_bytes, 989e12, m_lo, bw_lo
    )
    assert roofline.roofline_time_s(flops, n_bytes, 989e12, m_lo, bw_hi) <= roofline.roofline_time_s(
        flops, n_bytes, 989e12, m_lo, bw_lo
    )


@given(st.integers(1, 1024), st.integers(0, 1_000_000), st.integers(0, 1_000_000))
def test_weight_share_falls_with_batch(block, extra1, extra2):
    small, large = sorted((block + extra1, block + extra2))
    assert roofline.regen_bytes_read(W70, block, large, KV70, 1000) <= roofline.regen_bytes_read(
        W70, block, small, KV70, 1000
    )
    # the lone block pays the whole weight read, plus its KV
    assert float(roofline.regen_bytes_read(W70, block, block, KV70, 1000)) == W70 + KV70 * 1000


def test_bad_roofline_inputs_raise():
    with pytest.raises(KvtierError, match="batch_tokens must be >= block_tokens"):
        roofline.regen_bytes_read(W70, 16, 8, KV70, 0)
    with pytest.raises(KvtierError, match="block_tokens must be positive"):
        roofline.regen_bytes_read(W70, 0, 8, KV70, 0)
    with pytest.raises(KvtierError, match=r"mfu must be in \(0, 1\], got 1.5"):
        roofline.roofline_time_s(2.24e12, W70, 989e12, 1.5, 3.35e12)
    with pytest.raises(KvtierError, match=r"mem_efficiency must be in \(0, 1\], got 0"):
        roofline.roofline_time_s(2.24e12, W70, 989e12, 0.5, 3.35e12, 0.0)
    with pytest.raises(KvtierError, match="mem_bandwidth_bytes_per_s must be positive"):
        roofline.roofline_time_s(2.24e12, W70, 989e12, 0.5, -1.0)
    with pytest.raises(KvtierError, match="peak_flop_per_s .* is required"):
        roofline.roofline_time_s(2.24e12, W70, None, 0.5, 3.35e12)
    with pytest.raises(KvtierError, match="peak_flop_per_s .* must be positive"):
        roofline.roofline_time_s(2.24e12, W70, 0.0, 0.5, 3.35e12)


def test_vectorized_equals_scalar():
    mfu = np.array([0.25, 0.4, 0.5])[:, None, None]
    batch = np.array([16, 256, 4096, 65536])[None, :, None]
    accs = [hardware.accelerator(n) for n in ("h100-sxm", "h200", "b200", "chapter-implied")]
    peak = np.array([a.peak_flop_per_s for a in accs])[None, None, :]
    bw = np.array([a.mem_bandwidth_bytes_per_s for a in accs])[None, None, :]
    flops = 2 * P70 * 16
    read = roofline.regen_bytes_read(W70, 16, batch, KV70, 50_000)
    grid = roofline.roofline_time_s(flops, read, peak, mfu, bw, 0.8)
    which = roofline.bound(flops, read, peak, mfu, bw, 0.8)
    even = roofline.break_even_bandwidth(BLOCK70, grid, 0.5e-6)
    assert grid.shape == which.shape == even.shape == (3, 4, 4)
    for i, m in enumerate(mfu.ravel()):
        for j, b in enumerate(batch.ravel()):
            for k, acc in enumerate(accs):
                r = float(roofline.regen_bytes_read(W70, 16, int(b), KV70, 50_000))
                hw = (acc.peak_flop_per_s, float(m), acc.mem_bandwidth_bytes_per_s, 0.8)
                t = float(roofline.roofline_time_s(flops, r, *hw))
                assert grid[i, j, k] == t
                assert which[i, j, k] == str(roofline.bound(flops, r, *hw))
                assert even[i, j, k] == float(roofline.break_even_bandwidth(BLOCK70, t, 0.5e-6))
    # the grid spans both regimes: lone blocks memory-bound, large batches compute-bound
    assert set(which.ravel()) == {"compute", "memory"}
