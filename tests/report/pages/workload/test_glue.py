"""The workload page's numbers: the conversation trace's reuse and capacity, by hand."""

from __future__ import annotations

import pytest

from kvtier.scenario import Scenario


def test_the_page_numbers():
    from kvtier.report.pages import workload as page

    n = page.numbers(Scenario())
    # conversation: 288,500 references to 182,790 blocks; 160 MiB a block (327,680 B x 512)
    assert (n["references"], n["unique_blocks"], n["block_mib"]) == (288_500, 182_790, 160.0)
    assert n["hit_inf_blocks_pct"] == pytest.approx((1 - 182_790 / 288_500) * 100)
    assert n["unique_tib"] == pytest.approx(182_790 * 160 / 2**20)
    assert n["cap95_tib"] == pytest.approx(n["cap95_blocks"] * 160 / 2**20)
    assert (n["hit_after_miss_requests"], n["falling_requests"], n["prefix_ok_requests"]) == (0, 0, 12_031)
    # a lone 512-token block: 2 x 70e9 x 512 FLOP at 125 TFLOP/s = 573.4 ms (plus attention) against
    # 140e9 B / (3.35e12 x 0.8) = 52.24 ms; they meet at 52.24 ms x 125e12 / 140e9 = 46.6 tokens
    assert n["lone_weights_read_ms"] == pytest.approx(140e9 / 2.68e12 * 1e3)
    assert n["lone_block_compute_ms"] == pytest.approx((2 * 70e9 * 512 + 2_621_440 * 512 * 513 / 2) / 125e12 * 1e3)
    assert n["lone_meet_tokens"] == pytest.approx(140e9 / 2.68e12 * 125e12 / 140e9)
    # every hit prefix is whole 512-token blocks, past 46.6 tokens: compute-bound alone, so the regimes agree
    assert n["lone_memory_bound_pct"] == 0.0 and n["lone_over_in_batch"] == pytest.approx(1.0)
    assert n["cap50_tib"] < n["cap80_tib"] < n["cap90_tib"] < n["cap95_tib"] < n["unique_tib"]
    assert n["contrast"] == "synthetic" and n["contrast_prefix_ok_requests"] == 3_993
