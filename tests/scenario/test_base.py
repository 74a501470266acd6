"""kvtier.scenario.base: the values and the model resolved, checked by hand on the seed set.

The seed set: Llama-3-70B (80 layers, 8 KV heads of 128, bf16), 16-token blocks, 70e9 parameters,
500 TFLOP/s dense peak, brackets of 121/64/32 GB/s and 50/40/25 % MFU, no per-transfer latency.
"""

from __future__ import annotations

from kvtier import Scenario, load_assumptions


def test_without_param_count_the_config_counts_and_an_moe_activates_a_share():
    s = Scenario(load_assumptions(sets={"model": "mixtral-8x7b", "param_count": "null"}))
    total, active = s.model.param_counts()
    assert s.params_source == "config" and s.params == total
    assert s.active_params == active < total  # two experts of eight per token
    assert 0.25 < active / total < 0.3  # about 12.9e9 of 46.7e9
