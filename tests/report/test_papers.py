"""kvtier's formulas in Cake's and HCache's kinds of setup (kvtier/report/papers.py), against hand arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas import costs
from kvtier.inputs.published import setups
from kvtier.report import papers
from kvtier.scenario import Scenario


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return papers.rows(Scenario())


def test_a_setup_runs_its_model_alone_on_its_accelerator_and_keeps_the_builds_mfu():
    sc = papers.setup_scenario(Scenario(), setups()["cake"])
    assert sc.assumptions.value("model") == "llama-3.1-8b" and sc.placement.accelerators == 1
    # the A100 preset's dense bf16 peak and HBM bandwidth replace the chapter's 500 TFLOP/s
    assert sc.v("peak_flops") == 312e12 and sc.v("regen.mem_bandwidth") == 2039e9
    assert sc.illustrative["mfu"] == Scenario().illustrative["mfu"] == 0.25
    assert sc.params == pytest.approx(8_030_261_248)  # the config's own count, not the seed's 70e9


def test_hcache_restore_by_hand(rows):
    """Llama-2-7B (multi-head: 32 layers, 32 KV heads of 128, hidden 4,096), bf16, a 4,080-token history.

    KV per token: 2 x 32 x 32 x 128 x 2 B = 524,288 B; hidden states: 4,096 x 32 x 2 B = 262,144 B, half of it.
    Restore FLOPs per token: 2 x 4,096 x 262,144 elements = 2,147,483,648; for 4,080 tokens 8.7617e12 FLOP at
    312e12 x 0.25 = 78e12 FLOP/s: 0.112330 s.  At 7 GB/s the hidden states take 4,080 x 262,144 / 7e9 =
    0.152795 s (the transfer binds); the KV 0.305590 s.  At 28 GB/s the hidden states take 0.038199 s, the
    projections bind (0.112330 s), the KV 0.076398 s.  The new tokens' prefill is the same after either.
    """
    hc = {r["bandwidth_GBps"]: r for r in rows if r["paper"] == "HCache"}
    slow, fast = hc[7.0], hc[28.0]
    assert slow["hidden_to_kv"] == 0.5 and slow["method"] == "restore"
    kv_slow, kv_fast = 4080 * 524_288 / 7e9, 4080 * 524_288 / 28e9
    assert slow["restore_s"] == pytest.approx(slow["fetch_s"] - kv_slow + 4080 * 262_144 / 7e9, rel=1e-12)
    projections = 4080 * 2 * 4096 * 262_144 / (312e12 * 0.25)
    assert projections == pytest.approx(0.112330, abs=1e-6)
    assert fast["restore_s"] == pytest.approx(fast["fetch_s"] - kv_fast + projections, rel=1e-12)
    # over one drive restoring beats loading the KV (0.1528 s saved of 0.3056 + rest); over four it loses
    assert slow["method_vs_fetch"] > 1.9 and fast["method_vs_fetch"] < 1
    assert slow["method_vs_regenerate"] == pytest.approx(slow["regenerate_s"] / slow["restore_s"])


def test_cake_regeneration_by_hand_and_the_split_beats_both_pure_ways(rows):
    """Llama-3.1-8B alone on an A100: a 4,096-token prefix then 16 new tokens, computed whole.

    4,112 tokens x (2 x 8,030,261,248 + the attention's f x 4,113 / 2) FLOP at 78e12 FLOP/s (compute-bound: the
    weights' 16.06 GB read once take 16.06e9 / 2,039e9 = 7.9 ms of a pass of about 0.9 s).
    """
    cake = [r for r in rows if r["paper"] == "Cake"]
    assert len(cake) == 3 * 5  # three prefixes x five links
    sc = papers.setup_scenario(Scenario(), setups()["cake"])
    f = sc.model.attention_flops_per_position()
    flops = float(costs.regen_flops(0.0, 4112.0, 8_030_261_248, f))
    first = next(r for r in cake if r["prefix_tokens"] == 4096 and r["bandwidth_GBps"] == 1.0)
    assert first["regenerate_s"] == pytest.approx(flops / 78e12, rel=1e-9)
    for r in cake:
        assert r["split_s"] <= min(r["regenerate_s"], r["fetch_s"])
        assert r["method_vs_regenerate"] == pytest.approx(r["regenerate_s"] / r["split_s"])
        # two costs in proportion to their tokens balance at C F / (C + F): at most twice the faster way
        assert 1.0 <= r["split_vs_better"] < 2.0
    # the slower the link, the more the split gains over loading alone
    at_16k = sorted((r["bandwidth_GBps"], r["method_vs_fetch"]) for r in cake if r["prefix_tokens"] == 16384)
    assert [g for _, g in at_16k] == sorted((g for _, g in at_16k), reverse=True)
    assert np.isfinite([r["split_s"] for r in cake]).all()
