"""kvtier.inputs.assumptions: the key specs, reading sets, layering and the whole-set check.

A key's kind, range, allowed values and help text live in one record, its KeySpec.
"""

from __future__ import annotations

import pytest

from kvtier import KvtierError
from kvtier.inputs.assumptions import load_assumptions, make_assumption
from kvtier.inputs.keys import SCHEMA


def test_a_bare_number_for_a_key_that_needs_a_unit_is_refused_with_the_specs_example():
    # 64 could be 64 B/s or 64 GB/s; 0 is 0 in every unit
    with pytest.raises(KvtierError) as err:
        make_assumption("bandwidth.mid", "64", basis="", provenance="assumed", source="t", where="here")
    assert str(err.value) == "here: key 'bandwidth.mid' = '64' needs a unit, for example 64GB/s"
    assert make_assumption("fetch_latency", "0", basis="", provenance="assumed", source="t", where="here").value == 0.0
    # a fraction reads a bare number: 0.4 is 40 %
    assert make_assumption("mfu.typical", "0.4", basis="", provenance="assumed", source="t", where="here").value == 0.4
    assert SCHEMA["bandwidth.mid"].unit_example == "64GB/s" and SCHEMA["mfu.typical"].unit_example is None
    assert SCHEMA["model"].unit_example is None  # a text key has no quantity kind


def test_every_link_preset_has_a_per_transfer_latency_key_with_its_provenance():
    from kvtier.inputs import hardware
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.inputs.keys import TIER_LATENCY_KEYS, tier_latency_key
    from tests.conftest import ROOT

    keys = {name: tier_latency_key(name) for name in hardware.load_links()}
    assert set(keys.values()) == set(TIER_LATENCY_KEYS) and set(TIER_LATENCY_KEYS) <= set(SCHEMA)
    # by link class: a copy over the host link reaches host DRAM (PCIe) and CXL expanders alike
    assert keys["pcie5-x16"] == keys["pcie6-x16"] == keys["cxl2-x8"] == keys["cxl3-x16"] == "tier_latency.host_link"
    assert keys["nvme-gen4-x4"] == keys["nvme-gen5-x4"] == "tier_latency.nvme"
    assert (keys["hbm"], keys["nvlink-c2c"], keys["rdma-400g"]) == (
        "tier_latency.hbm",
        "tier_latency.nvlink_c2c",
        "tier_latency.rdma",
    )
    with pytest.raises(KvtierError, match="link preset 'tape-x1' belongs to no link class"):
        tier_latency_key("tape-x1")
    seed = load_assumptions()
    # the host link: the H200's fitted 9.049 us a copy, derived from the measured file
    host = seed["tier_latency.host_link"]
    assert (host.value, host.provenance) == (9.049e-6, "derived")
    assert "kvtier/data/measurements/h200-2026-11-30/probe1.json" in host.source
    # NVMe: a datasheet's queue-depth-1 read, 92 us
    nvme = seed["tier_latency.nvme"]
    assert (nvme.value, nvme.provenance) == (92e-6, "published-spec") and "datasheet" in nvme.source
    assert seed.value("tier_latency.hbm") == 0.0
    # the measured set states the same fit as its fetch_latency
    measured = load_assumptions(ROOT / "kvtier" / "data" / "h200-measured.yaml")
    assert measured.value("tier_latency.host_link") == measured.value("fetch_latency") == 9.049e-6
    assert measured["tier_latency.host_link"].provenance == "derived"


def test_a_trace_format_given_without_a_block_size_brings_its_own(tmp_path):
    # issue 43: `--set workload.trace_format=qwen` kept Mooncake's 512-token blocks, so the README's Qwen rebuild
    # failed; the format's own block size (Qwen: 16 tokens) follows it, as `kvtier workload --format qwen` does
    got = load_assumptions(None, {"workload.trace_format": "qwen"})
    assert got.value("workload.block_tokens") == 16
    assert got["workload.block_tokens"].source == "workload.trace_format qwen"
    # a block size given with it wins, from --set or from the same file
    assert (
        load_assumptions(None, {"workload.trace_format": "qwen", "workload.block_tokens": "32"}).value(
            "workload.block_tokens"
        )
        == 32
    )
    path = tmp_path / "mine.yaml"
    path.write_text("assumptions:\n  workload.trace_format: qwen\n")
    assert load_assumptions(path).value("workload.block_tokens") == 16
    path.write_text("assumptions:\n  workload.trace_format: qwen\n  workload.block_tokens: {value: 64}\n")
    assert load_assumptions(path).value("workload.block_tokens") == 64
    assert load_assumptions(None, {}).value("workload.block_tokens") == 512  # the seed's, Mooncake's
