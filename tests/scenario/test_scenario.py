"""kvtier.scenario: the scenario's own figures (capacity), checked by hand on the seed set.

The seed set: Llama-3-70B (80 layers, 8 KV heads of 128, bf16), 16-token blocks, 70e9 parameters,
500 TFLOP/s dense peak, brackets of 121/64/32 GB/s and 50/40/25 % MFU, no per-transfer latency.
"""

from __future__ import annotations

import pytest


def test_the_kv_share_and_crossover(seed_scenario):
    # 427,246 tokens x 327,680 B = 140e9 B: the KV cache equals the weights near 427K tokens
    assert seed_scenario.crossover_tokens == pytest.approx(140e9 / 327_680, rel=1e-9)
    assert float(seed_scenario.kv_bytes(1000)) == 327_680_000


# ---- the tier-pricing model's inputs -----------------------------------------------------
