"""kvtier.scenario.timing: the block fetched and regenerated, checked by hand on the seed set.

The seed set: Llama-3-70B (80 layers, 8 KV heads of 128, bf16), 16-token blocks, 70e9 parameters,
500 TFLOP/s dense peak, brackets of 121/64/32 GB/s and 50/40/25 % MFU, no per-transfer latency.
"""

from __future__ import annotations

import numpy as np
import pytest

from kvtier import Scenario, load_assumptions
from kvtier.errors import KvtierError


def test_the_seed_block_by_hand(seed_scenario):
    s = seed_scenario
    # K and V: 2 x 80 layers x 8 heads x 128 dims x 2 B = 327,680 B per token
    assert s.kv_bytes_per_token == 327_680
    assert s.block_tokens == 16
    assert s.block_bytes == 5_242_880  # 16 x 327,680 B = 5 MiB
    assert s.params == 70e9 and s.params_source == "assumption"
    assert s.weight_bytes == 140e9  # 70e9 parameters x 2 B (bf16)


def test_the_illustrative_point_by_hand(seed_scenario):
    point = seed_scenario.illustrative
    assert (point["bandwidth_label"], point["mfu_label"]) == ("mid", "conservative")
    assert point["fetch_s"] == pytest.approx(81.92e-6, rel=1e-12)  # 5,242,880 B / 64e9 B/s
    # 2 FLOP x 70e9 x 16 tokens = 2.24e12 FLOP at 25 % of 500e12 FLOP/s = 125e12 FLOP/s
    assert seed_scenario.block_flops == pytest.approx(2.24e12, rel=1e-12)
    # plus the block's attention over itself: 4 x 80 layers x 8,192 = 2,621,440 FLOP per token pair x 136 pairs
    # (16 x 17 / 2) = 356,515,840 FLOP, so 2,240,356,515,840 FLOP in all
    assert point["regen_s"] == pytest.approx(17.92285212672e-3, rel=1e-12)  # 2,240,356,515,840 / 125e12
    assert point["ratio"] == pytest.approx(218.784816, rel=1e-12)  # 17.92285212672 ms / 81.92 µs


def test_the_brackets_by_hand(seed_scenario):
    fetch = seed_scenario.fetch_by_label()
    assert fetch["optimistic"] == pytest.approx(5_242_880 / 121e9, rel=1e-12)  # 43.33 µs
    assert fetch["pessimistic"] == pytest.approx(163.84e-6, rel=1e-12)  # 5,242,880 / 32e9
    regen = seed_scenario.regen_by_label()
    # 2,240,356,515,840 FLOP (parameters and the block's attention over itself) over 0.5 and 0.4 x 500e12
    assert regen["optimistic"] == pytest.approx(8.96142606336e-3, rel=1e-12)
    assert regen["typical"] == pytest.approx(11.2017825792e-3, rel=1e-12)


def test_a_per_layer_layout_pays_one_latency_per_chunk():
    s = Scenario(load_assumptions(sets={"fetch_layout": "per-layer", "fetch_latency": "5us"}))
    assert s.layer_chunks == 160  # 80 layers x (K, V)
    assert s.fetch_transfers == 160
    assert s.block_latency_s == pytest.approx(800e-6, rel=1e-12)  # 160 x 5 µs
    # 800 µs + 81.92 µs over the mid link
    assert float(s.fetch_s(64e9)) == pytest.approx(881.92e-6, rel=1e-12)


def test_transfers_by_layout_whatever_the_set_says():
    s = Scenario(load_assumptions())  # the seed set is contiguous
    assert (s.transfers("contiguous"), s.transfers("per-layer")) == (1, 160)  # 80 layers x (K, V)
    mla = Scenario(load_assumptions(sets={"model": "deepseek-v3", "param_count": "null"}))
    assert mla.transfers("per-layer") == 61  # 61 layers, one latent each under MLA
    with pytest.raises(ValueError, match="paged"):
        s.transfers("paged")


def test_a_contiguous_block_is_one_transfer_whatever_the_model():
    s = Scenario(load_assumptions(sets={"fetch_latency": "5us"}))
    assert s.fetch_transfers == 1
    assert float(s.fetch_s(64e9)) == pytest.approx(86.92e-6, rel=1e-12)  # 5 µs + 81.92 µs


def test_a_per_layer_fetch_over_the_measured_host_link_by_hand():
    from tests.conftest import ROOT

    m = Scenario(load_assumptions(ROOT / "kvtier" / "data" / "h200-measured.yaml", {"fetch_layout": "per-layer"}))
    tiers = m.tier_links
    i = tiers.names.index("pcie5-x16")
    # the measured set states the fit: 9.049 us a copy, the same as its fetch_latency
    assert tiers.latency_s[i] == m.v("fetch_latency") == 9.049e-6
    # 160 layer chunks (2 x 80 layers) x 9.049 us = 1,447.84 us; + 5,242,880 B / 63e9 B/s = 83.22 us
    from kvtier.formulas import tiering

    fetch = tiering.fetch_s(tiers.pick(["pcie5-x16"]), m.block_bytes, m.fetch_transfers)
    assert m.fetch_transfers * tiers.latency_s[i] == pytest.approx(1_447.84e-6, rel=1e-12)
    assert float(fetch[0]) == pytest.approx(1_447.84e-6 + 5_242_880 / 63e9, rel=1e-12)


# ---- the engine model: an engine's measured kernels (kvtier.inputs.kernels) ----------------------------------
def engine_scenario(**sets: str) -> Scenario:
    return Scenario(load_assumptions(sets={"regen.model": "engine", "model": "llama-3-8b", **sets}))


def test_the_engine_model_times_a_lone_block_and_an_evicted_prefix_with_the_estimators_pass():
    s = engine_scenario(**{"interior.anchor_every": "1024"})
    est = s.kernel_estimator
    # a lone 16-token block after 4,080 cached tokens: one sequence of 4,096, the first 4,080 cached
    assert float(s.lone_regen_s(4080, "resident", 0.25)) == est.pass_ms(1, 4096, 4080) / 1e3
    # evicted, anchors every 1,024: recompute from 4,096 - 1,024 = 3,072 through 4,095, 1,024 tokens
    assert float(s.lone_regen_s(4080, "evicted", 0.25)) == est.pass_ms(1, 4096, 3072) / 1e3
    # the MFU is not read: the kernels are measured
    assert float(s.lone_regen_s(0, "resident", 0.5)) == float(s.lone_regen_s(0, "resident", 0.25))
    # vectorized over positions, one pass each
    both = s.lone_regen_s(np.array([0, 4080]), "resident", 0.25)
    assert both.tolist() == [est.pass_ms(1, 16, 0) / 1e3, est.pass_ms(1, 4096, 4080) / 1e3]


def test_inside_a_batch_the_block_pays_its_share_of_the_step_and_its_own_attention():
    s = engine_scenario(**{"regen.step_tokens": "4096"})
    est = s.kernel_estimator
    step = est.op_ms(1, 4096, 0)
    # 16 of the step's 4,096 tokens: 16 / 4,096 of every operation but attention ...
    shared = (sum(step.values()) - step["context_attention"]) * 16 / 4096
    # ... plus attention of 4,096 / 16 = 256 sequences like it (the table's largest batch), per sequence
    own = est.op_ms(256, 2016, 2000)["context_attention"] / 256
    assert float(s.in_batch_regen_s(2000, "resident", 0.25)) == pytest.approx((shared + own) / 1e3, rel=1e-12)
    # the chapter's tail block inside a batch is the same block at position 0
    assert s.regen_s(0.25) == pytest.approx(float(s.in_batch_regen_s(0, "resident", 0.25)), rel=1e-12)
    # cheaper than the block alone, which reads every weight for 16 tokens
    assert s.regen_s(0.25) < float(s.lone_regen_s(0, "resident", 0.25)) / 10
    # regen.batch_tokens above the recomputed tokens makes regen_time_s the in-batch share too
    assert float(s.regen_time_s(2000, "resident", 0.25, batch_tokens=4096)) == float(
        s.in_batch_regen_s(2000, "resident", 0.25)
    )


@pytest.mark.parametrize(
    ("engine", "regen_engine", "kernels"),
    [
        ("none", "auto", "vllm"),
        ("vllm", "auto", "vllm"),
        ("lmcache", "auto", "vllm"),
        ("mooncake", "auto", "vllm"),
        ("sglang", "auto", "sglang"),
        ("tensorrt-llm", "auto", "trtllm"),
        ("sglang", "trtllm", "trtllm"),  # named, it wins over the engine key's
    ],
)
def test_whose_kernels_time_regeneration(engine, regen_engine, kernels):
    assert engine_scenario(engine=engine, **{"regen.engine": regen_engine}).kernel_engine == kernels


def test_the_seed_set_never_compiles_an_estimator():
    # the MFU model reads no table: the seed's numbers cannot move when the package does
    import subprocess
    import sys

    code = (
        "import sys; from kvtier.scenario import Scenario; s = Scenario(); s.illustrative;"
        "s.lone_regen_s(0, 'resident', 0.25); print('aiconfigurator_core' in sys.modules)"
    )
    from tests.conftest import ROOT

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.stdout.strip() == "False", proc.stderr


def test_beyond_the_tables_grid_a_sweep_is_nan_and_a_strict_call_refuses():
    s = engine_scenario()
    # 16,368 + 16 = 16,384 tokens is the grid's last sequence; 16,369 + 16 is one past it
    inside, beyond = s.lone_regen_s(np.array([16_368, 16_369]), "resident", 0.25)
    assert inside > 0 and np.isnan(beyond)
    from kvtier.inputs.kernels import OutsideGrid

    with pytest.raises(OutsideGrid, match="a sequence of 16,385 tokens"):
        s.engine_regen_s(16_369, "resident", strict=True)
    # regen.beyond_grid extrapolate: the same block is timed, just past the last one inside, and said to be beyond
    x = engine_scenario(**{"regen.beyond_grid": "extrapolate"})
    past = float(x.engine_regen_s(16_369, "resident", strict=True))
    assert past == pytest.approx(float(inside), rel=0.01)
    crossed = "a sequence of 16,385 tokens (context attention measured to 16,384)"
    assert x.engine_extrapolated(16_369, "resident") == crossed
    assert x.engine_extrapolated(16_368, "resident") == ""


def test_the_engine_models_prefix_curves_are_the_estimators_passes():
    s = engine_scenario(**{"model": "llama-3-70b"})
    rc, est = s.regen_costs(), s.kernel_estimator
    from kvtier.scenario.timing import _engine_pass_ms

    # 4,096 = 2^12 is a tabulated point (eight an octave): alone the estimator's pass, inside a batch the prefix's
    # share of an 8,192-token step (regen.step_tokens), both exact
    assert float(rc.lone_s(np.array(4096.0))) == pytest.approx(est.pass_ms(1, 4096, 0) / 1e3, rel=1e-12)
    assert float(rc.in_batch_s(np.array(4096.0))) == pytest.approx(_engine_pass_ms(est, 0, 4096, 8192) / 1e3)
    assert (rc.engine_label, rc.engine_grid_tokens, rc.engine_tokens[-1]) == ("h200_sxm vllm 0.24.0", 16384, 16384)
    # the rest of a prompt after a cached prefix, split into its own operations and the attention it adds, against
    # the estimator's own pass with that prefix cached: within 1.5 % from 512 new tokens, at most 6 % low for 16
    for hit, rest, within in ((3584, 512, 0.015), (8192, 8192, 0.015), (12000, 4000, 0.015), (4080, 16, 0.06)):
        split = float(rc.rest_wall_s(np.array(hit + rest), np.array(hit), "lone"))
        assert split == pytest.approx(est.pass_ms(1, hit + rest, hit) / 1e3, rel=within)
    # no block's share is negative: the curves never fall (the tables' noise at a few tokens is flattened)
    for curve in (rc.engine_linear_s, rc.engine_attention_s, rc.engine_batch_s):
        assert np.all(np.diff(curve) >= 0)
    # a prompt past the grid is refused under regen.beyond_grid refuse, and priced by extrapolation under extrapolate
    with pytest.raises(KvtierError, match="a prompt prefix of 20,000 tokens is longer than 16,384 on h200_sxm"):
        rc.lone_s(np.array([20_000.0]))
    far = engine_scenario(**{"model": "llama-3-70b", "regen.beyond_grid": "extrapolate"}).regen_costs()
    # 131,072 = 2^17 is tabulated: the estimator's extrapolated pass
    assert float(far.lone_s(np.array(131_072.0))) == pytest.approx(est.pass_ms(1, 131_072, 0, True) / 1e3, rel=1e-12)
    assert far.engine_tokens[-1] == 2**21 and far.engine_beyond_grid(np.array([16_384, 16_385])).tolist() == [
        False,
        True,
    ]
