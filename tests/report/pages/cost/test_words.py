"""The cost page's sentences: what the longest reuse is shorter or longer than, in words."""

from __future__ import annotations

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
