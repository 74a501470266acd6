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
    # the whole model (param_count null: the config's 70.55e9 parameters, 141.1 GB in bf16) with one sequence of
    # context.long tokens of KV (42.9 GB) is 184.1 GB, above a 141 GB accelerator; on two ranks 92.0 GB fits
    s = Scenario(load_assumptions(None, {"parallel.hbm_capacity": "141GB", "param_count": "null"}))
    assert s.weight_bytes == pytest.approx(141.107e9, rel=1e-5)
    assert s.rank_memory_bytes() == pytest.approx(184.057e9, rel=1e-5)
    with pytest.raises(KvtierError, match=r"184\.1 GB.*141\.0 GB.*at least 2 accelerators"):
        s.check_fit()
    two = s.with_placement(tp=2)
    assert two.rank_memory_bytes() == pytest.approx(92.0285e9, rel=1e-5)
    two.check_fit()
