"""The regeneration page: the chapter's regeneration table, recomputed from the seed set."""

import pytest


def test_regeneration_table(seed_scenario):
    regen = seed_scenario.regen_by_label()
    # 16 tokens x 2 FLOP x 70e9 params = 2.24e12 FLOP
    assert seed_scenario.block_flops == pytest.approx(2.24e12, rel=1e-12)
    # 2.24e12 / (500e12 x 0.50) = 8.96 ms  (chapter: 9 ms)
    assert regen["optimistic"] == pytest.approx(8.96e-3, rel=1e-12)
    # 2.24e12 / (500e12 x 0.40) = 11.2 ms  (chapter: 11 ms)
    assert regen["typical"] == pytest.approx(11.2e-3, rel=1e-12)
    # 2.24e12 / (500e12 x 0.25) = 17.92 ms (chapter: 18 ms, "17.9 ms before rounding")
    assert regen["conservative"] == pytest.approx(17.92e-3, rel=1e-12)
    assert [round(t * 1e3) for t in regen.values()] == [9, 11, 18]
