"""The cost page's sentences: what the longest reuse is shorter or longer than, in words."""

from __future__ import annotations

import pytest

from kvtier.report.pages.cost import mix, words
from kvtier.scenario import Scenario


def test_the_recompute_sentence_names_the_tiers_the_longest_reuse_falls_within():
    # 60 s of longest reuse against 120 s (HBM) and 3,600 s (host DRAM): within both
    assert words.recompute_sentence(0.0, 60.0, {"HBM": 120.0, "host DRAM": 3600.0}) == (
        "none is recomputed: the longest reuse interval in the trace, 1 min, is shorter than every tier's"
        " break-even interval."
    )
    # 600 s: past HBM's 120 s (2 min), within host DRAM's 3,600 s (1 h)
    assert words.recompute_sentence(0.0, 600.0, {"HBM": 120.0, "host DRAM": 3600.0}) == (
        "none is recomputed: the longest reuse interval in the trace, 10 min, is shorter than the break-even"
        " interval of host DRAM (1 h), though longer than that of HBM (2 min)."
    )
    assert words.recompute_sentence(12.5, 600.0, {"HBM": 120.0}).startswith("12.5 % are recomputed")
    # the seed trace: its longest reuse, 50.5 min, is past HBM's 9.16 min but within the other tiers'
    sentence = mix.mix_numbers(Scenario())["mix_recompute_sentence"]
    assert "50.5 min" in sentence and "though longer than that of HBM (9.16 min)." in sentence


def test_the_lru_tier_is_set_against_the_mix_at_equal_service():
    from kvtier.report.pages.cost import glue
    from kvtier.report.pages.cost.words import _mix_serves

    n = glue.numbers(Scenario())
    # the mix recomputes none of the reuses; the LRU tier that serves them all is the 100 % tier: 158,282 blocks x
    # 512 tokens x 327,680 B = 24,733.1 GiB, 19.5 times the mix's 1,271.4 GiB peak; the 90 % tier 3.9 times
    assert n["lru_all_gib"] == pytest.approx(158_282 * 512 * 327_680 / 2**30, rel=1e-12)
    assert (
        "while it serves every reuse from memory. An LRU tier that serves every reuse an infinite cache"
        in (n["lru_paragraph"])
    )
    assert f"holds {n['lru_all_gib'] / n['mix_peak_total_gib']:.1f} times those bytes" in n["lru_paragraph"]
    assert f"{n['lru_all_gib'] / n['mix_peak_total_gib']:.1f}" == "19.5"
    # a mix that recomputes a fifth of the reuses says so
    assert _mix_serves({"mix_recompute_share_pct": 20.0}) == (
        "serves 80.0 % of the reuses from memory and recomputes the rest"
    )
