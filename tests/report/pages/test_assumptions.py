"""The assumptions page: consistency checks that name their keys, and what was measured by provenance class."""

from __future__ import annotations

import re

import pytest

from kvtier.inputs.assumptions import load_assumptions
from kvtier.scenario import Scenario


def test_book_consistency_checks_name_the_keys():
    from kvtier.errors import KvtierError
    from kvtier.inputs.assumptions import check_consistency

    check_consistency(load_assumptions())  # the seed set is consistent
    cases = {
        "bandwidth.mid": ("20GB/s", "keys 'bandwidth.mid' (20 GB/s) and 'bandwidth.pessimistic' (32 GB/s)"),
        "mfu.typical": ("60%", "keys 'mfu.optimistic' (50%) and 'mfu.typical' (60%)"),
        "context.short": ("256K", "'context.short' must be smaller than 'context.long'"),
        "interior.position": ("200000", "'interior.position' must lie inside the sequence"),
        "uncertainty.mfu_low": ("70%", "keys 'uncertainty.mfu_high' (60%) and 'uncertainty.mfu_low' (70%)"),
    }
    for key, (value, message) in cases.items():
        with pytest.raises(KvtierError, match=re.escape(message)):
            check_consistency(load_assumptions(sets={key: value}))


def test_what_was_measured_follows_the_provenance_classes():
    from kvtier.inputs.assumptions import make_assumption
    from kvtier.report.pages import assumptions

    s = Scenario()
    n = assumptions.numbers(s)
    # 86 records (the cost page's LRU tier added three nvme.* keys to the 76, the tier ladder five tier_latency.*
    # keys, the decision decision.hit_target, the serving engine's layout engine); the 3 reference.* figures (DGX Spark
    # HBM, H200 host link, H200 16-token pass energy) enter no calculation, 2 of them measured (the host link's
    # 55.3 GB/s is derived: 1 GiB over a measured copy's time); the serving trace of the workload page
    # (workload.trace) and the cost page's lone-block board power (energy.power_lone) are measured and enter one:
    # 86 - 3 = 83 inputs; 18 more for the placement (parallel.*, collective.*) and 2 for the workload
    # (workload.hit_count, workload.sample_rate): 106 records, 103 inputs; 11 more (six regen.* forward-pass
    # terms, five fetch.* transfer terms): 117 records, 114 inputs; 3 more for pageable copies (fetch.pageable_overhead,
    # fetch.pageable_warm_efficiency, fetch.host_cache): 120 records, 117 inputs; 4 more for how each copy is issued
    # (fetch.copy_method, fetch.copy_cost.lone_dma, .batched_dma, .kernel): 124 records, 121 inputs; 4 more for the
    # engine model's kernel tables (regen.system, regen.engine, regen.engine_version, regen.step_tokens): 128, 125;
    # 1 more for a pass beyond the tables' grid (regen.beyond_grid): 129, 126; 1 more for the NVMe drive an LRU tier
    # buys (nvme.drive_capacity): 130, 127; 1 more for the deployment the trace pages price (workload.deployment):
    # 131, 128; 7 more for a fleet behind a router (fleet.*: instances, routing, balance_abs, balance_rel,
    # cache_threshold, decode_time_per_token, pool_bandwidth): 138, 135; 1 for how a tensor-parallel group stores a
    # block (parallel.kv_storage) and 3 for the pool's hardware (fleet.pool_server, .pool_server_memory, .pool_port):
    # 142, 139
    assert (n["n_assumptions"], n["n_reference"], n["n_reference_measured"], n["n_used_measured"]) == (142, 3, 2, 2)
    assert n["answer_measured"].startswith(
        "Of the 139 inputs that enter a calculation, 2 of them measured (the serving trace the tier is sized for;"
        " accelerator board power while it regenerates a lone block): 2 measured,"
    )
    # the 2 measured reference figures are "another 2", not "the 2 measured figures" after "2 of them measured"
    assert (
        "Another 2 measured figures in the set are shown beside the results for comparison only"
        in (n["answer_measured"])
    )
    assert n["reference_sentence"] == (
        "Elsewhere, 2 measured figures are shown apart, labelled, and used by no calculation: the DGX Spark memory"
        " read and the H200 energy of one 16-token 70B-shaped forward pass."
    )
    # a set whose mid bracket is measured says so
    measured = make_assumption(
        "bandwidth.mid", "50GB/s", basis="our expander", provenance="measured", source="lab", where="test"
    )
    m = assumptions.numbers(Scenario(s.assumptions.with_records({"bandwidth.mid": measured})))
    assert m["n_used_measured"] == 3
    assert (
        "3 of them measured (link bandwidth of the mid bracket; the serving trace the tier is sized for;"
        " accelerator board power while it regenerates a lone block)" in (m["answer_measured"])
    )
