"""kvtier.scenario.placement: where the model sits, each rank's share and memory, and the fit, by hand on the seed set.

The seed set: Llama-3-70B (80 layers, 8 KV heads of 128, bf16), 16-token blocks, one accelerator (TP 1, PP 1, EP 1).
"""

from __future__ import annotations

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs.assumptions import load_assumptions
from kvtier.scenario import Placement, Scenario


def test_the_seed_sits_on_one_accelerator_with_the_whole_block():
    s = Scenario()
    assert s.placement == Placement(tp=1, pp=1, ep=1, gpus_per_link=1)
    # 16 tokens x 80 layers x 2 (K, V) x 8 heads x 128 x 2 B = 5,242,880 B, all of it on the one rank
    assert s.shard_share == 1.0 and s.fetch_bytes == s.block_bytes == 5_242_880


def test_tensor_parallel_ranks_share_the_kv_heads():
    t = Scenario().with_placement(tp=8)
    assert type(t) is Scenario and t.placement.accelerators == 8
    assert t.placement.label == "TP 8 × PP 1 × EP 1 (8 accelerators), 1 per link"
    # 8 KV heads over 8 ranks: one head each, 1/8 of the block: 5,242,880 / 8 = 655,360 B fetched per rank
    assert t.shard_share == 0.125 and t.shard_bytes == t.fetch_bytes == 655_360


def test_the_fit_names_the_keys_and_the_fewest_accelerators():
    # the whole model (param_count null: the config's 70.55e9 parameters, 141.1 GB in bf16) with one long sequence
    # of KV: context.long is 131,072 tokens but Llama-3-70B's window is 8,192, so 8,192 x 327,680 B = 2.684 GB;
    # 143.79 GB is above a 141 GB accelerator; on two ranks 70.55 + 1.34 = 71.9 GB fits
    s = Scenario(load_assumptions(None, {"parallel.hbm_capacity": "141GB", "param_count": "null"}))
    assert s.weight_bytes == pytest.approx(141.107e9, rel=1e-5)
    assert s.long_sequence_tokens == 8192
    assert s.rank_memory_bytes() == pytest.approx(141.107e9 + 8192 * 327_680, rel=1e-5)
    with pytest.raises(KvtierError, match=r"143\.8 GB.*8,192 tokens of KV.*141\.0 GB.*at least 2 accelerators"):
        s.check_fit()
    two = s.with_placement(tp=2)
    assert two.rank_memory_bytes() == pytest.approx((141.107e9 + 8192 * 327_680) / 2, rel=1e-5)
    two.check_fit()
    # Llama-3.1-70B's window is 131,072: the whole context.long sequence, 131,072 x 327,680 B = 42.95 GB
    assert s.with_block(16, "llama-3.1-70b").long_sequence_tokens == 131_072
