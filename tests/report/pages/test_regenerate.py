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


def test_the_build_is_set_beside_the_seed_only_when_it_differs(seed_scenario):
    from kvtier.report.pages import regenerate
    from tests.conftest import scenario

    seed = regenerate.numbers(seed_scenario)
    # the seed's 500 TFLOP/s (implied) is stated as the seed's a sentence before: not again as the build's
    assert seed["peak_sentence"] == ""
    assert seed["params_sentence"].startswith("This build keeps that count; the published configuration gives")
    changed = regenerate.numbers(scenario(peak_flops="989TFLOP/s"))
    assert changed["peak_sentence"] == "This build uses 989 TFLOP/s (assumed)."
