"""The cost page's numbers: the same recomputation as the workload page's, and the energy of a pass."""

from __future__ import annotations

import pytest

from kvtier.inputs.assumptions import seed
from kvtier.report.pages import cost
from kvtier.scenario import Scenario


def test_measured_power_and_energy_match_the_measurements():
    from kvtier.inputs import measurements

    m, a = measurements.load(), seed()
    assert a["energy.power_lone"].provenance == a["reference.h200_forward16_energy"].provenance == "measured"
    assert a.value("energy.power_lone") == pytest.approx(m.v("power_forward16_llama-3-70b_w"), abs=0.5)
    assert a.value("reference.h200_forward16_energy") == pytest.approx(m.v("energy_forward16_llama-3-70b_j"), abs=0.05)


def test_both_pages_charge_the_trace_s_reuses_the_same_recomputation():
    from kvtier.report.pages import workload

    s = Scenario()
    w, n = workload.numbers(s), cost.numbers(s)
    # the workload page: 21.6548 accelerators recompute an infinite cache's hits inside a batch (parameter FLOPs plus
    # attention over the hit prefix); the cost page's lower bound charges every reuse the same: 21.6548 x 3 USD/h
    assert w["inf_in_batch_gpus"] == pytest.approx(21.654790, rel=1e-6)
    assert n["mix_recompute_accelerators"] == pytest.approx(w["inf_in_batch_gpus"], rel=1e-12)
    assert n["mix_recompute_usd_per_h"] == pytest.approx(w["inf_in_batch_gpus"] * 3, rel=1e-12)
    # and the LRU tier's recomputation avoided is the workload page's for the same capacity: 95 %, 20.4531
    assert n["lru95_saved_accelerators"] == pytest.approx(w["cap95_in_batch_gpus"], rel=1e-12)
    assert n["lru95_tib"] == pytest.approx(w["cap95_tib"], rel=1e-12)


def test_the_lone_512_token_block_is_charged_the_compute_bound_power():
    n = cost.numbers(Scenario())
    # compute-bound alone: 576.19 ms x 700 W = 403.34 J, the same as inside a batch; the 16-token lone block is
    # memory-bound and draws the measured 467 W
    assert n["large_lone_bound"] == "compute"
    assert n["large_lone_recompute_j"] == pytest.approx(n["large_lone_regen_ms"] / 1e3 * 700.0, rel=1e-12)
    assert n["small_lone_recompute_j"] == pytest.approx(n["small_lone_regen_ms"] / 1e3 * 467.0, rel=1e-12)
