"""The regeneration page: the chapter's regeneration table, recomputed from the seed set."""

import pytest


def test_regeneration_table(seed_scenario):
    regen = seed_scenario.regen_by_label()
    # 16 tokens x 2 FLOP x 70e9 params = 2.24e12 FLOP
    assert seed_scenario.block_flops == pytest.approx(2.24e12, rel=1e-12)
    # plus the block's attention over itself, which the chapter leaves out: 4 x 80 layers x 8,192 = 2,621,440
    # FLOP per token pair x 136 pairs (16 x 17 / 2) = 356,515,840 FLOP; 2,240,356,515,840 FLOP in all
    # / (500e12 x 0.50) = 8.9614 ms  (chapter: 9 ms)
    assert regen["optimistic"] == pytest.approx(8.96142606336e-3, rel=1e-12)
    # / (500e12 x 0.40) = 11.2018 ms  (chapter: 11 ms)
    assert regen["typical"] == pytest.approx(11.2017825792e-3, rel=1e-12)
    # / (500e12 x 0.25) = 17.9229 ms (chapter: 18 ms, "17.9 ms before rounding")
    assert regen["conservative"] == pytest.approx(17.92285212672e-3, rel=1e-12)
    assert [round(t * 1e3) for t in regen.values()] == [9, 11, 18]


def test_the_page_counts_the_attention_the_chapter_leaves_out(seed_scenario):
    from kvtier.report.pages import regenerate

    out = regenerate.numbers(seed_scenario)
    table = regenerate.table(seed_scenario).set_index("bracket")
    # 356,515,840 FLOP of the block's attention over itself: 0.3565 GFLOP, 0.015913 % of 2,240,356,515,840
    assert out["block_attention_gflop"] == pytest.approx(0.35651584, rel=1e-12)
    assert out["block_attention_pct"] == pytest.approx(356_515_840 / 2_240_356_515_840 * 100, rel=1e-12)
    assert out["block_tflop"] == pytest.approx(2.24, rel=1e-12)  # the chapter's parameter term, as it counts it
    # the table's work per block is the whole count, and its time is that work at the bracket's MFU
    assert table.loc["conservative", "block_TFLOP"] == pytest.approx(2.24035651584, rel=1e-12)
    assert table.loc["conservative", "regen_ms"] == pytest.approx(2.24035651584e12 / 125e12 * 1e3, rel=1e-12)


def test_the_build_is_set_beside_the_seed_only_when_it_differs(seed_scenario):
    from kvtier.report.pages import regenerate
    from tests.conftest import scenario

    seed = regenerate.numbers(seed_scenario)
    # the seed's 500 TFLOP/s (implied) is stated as the seed's a sentence before: not again as the build's
    assert seed["peak_sentence"] == ""
    assert seed["params_sentence"].startswith("This build keeps that count; the published configuration gives")
    changed = regenerate.numbers(scenario(peak_flops="989TFLOP/s"))
    assert changed["peak_sentence"] == "This build uses 989 TFLOP/s (assumed)."


def test_the_exact_parameter_count_is_quoted_as_the_tables_show_regeneration(seed_scenario):
    from kvtier.report.pages import regenerate

    # Llama-3-70B's config counts 70,553,706,496 parameters, 0.79 % over the nominal 70e9: at 25 % MFU of 500 TFLOP/s
    # (2 x 70,553,706,496 x 16 + 356,515,840) / 125e12 = 18.0646 ms against 17.9229 ms, three figures as the table
    sentence = regenerate.numbers(seed_scenario)["params_sentence"]
    assert "means 18.1 ms instead of 17.9 ms (as the tables show them)" in sentence
