"""Every number of the source chapter, recomputed from the seed assumption set.

The chapter rounds; these tests assert the unrounded values and, beside each, the
rounded figure the chapter prints.
"""

import pytest

from kvtier import Scenario, load_model, parse_quantity
from kvtier.formulas.costs import implied_peak_interval
from kvtier.inputs import chapter
from kvtier.report.pages import ratio

GIB = 2**30


def test_kv_per_token_is_320_kib(seed_scenario):
    # 2 (K,V) x 80 layers x 8 KV heads x 128 head_dim x 2 B (bf16) = 327,680 B = 320 KiB
    assert seed_scenario.kv_bytes_per_token == 327_680
    assert seed_scenario.kv_bytes_per_token / 1024 == 320


def test_block_is_5_mib(seed_scenario):
    # 16 tokens x 327,680 B = 5,242,880 B = 5,120 KiB = 5.00 MiB
    assert seed_scenario.block_bytes == 5_242_880
    assert seed_scenario.block_bytes / 2**20 == 5.0


def test_fetch_table(seed_scenario):
    fetch = seed_scenario.fetch_by_label()
    # 5,242,880 B / 121e9 B/s = 43.33 µs  (chapter: 43 µs)
    assert fetch["optimistic"] == pytest.approx(43.329587e-6, rel=1e-6)
    # 5,242,880 B / 64e9 B/s = 81.92 µs   (chapter: 82 µs)
    assert fetch["mid"] == pytest.approx(81.92e-6, rel=1e-12)
    # 5,242,880 B / 32e9 B/s = 163.84 µs  (chapter: 164 µs)
    assert fetch["pessimistic"] == pytest.approx(163.84e-6, rel=1e-12)
    assert [round(t * 1e6) for t in fetch.values()] == [43, 82, 164]


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


def test_the_chapters_printed_numbers_are_records_of_what_it_printed():
    quotes = {
        q.key: q
        for q in (
            *chapter.FETCH_S.values(),
            *chapter.REGEN_S.values(),
            chapter.REGEN_CONSERVATIVE_UNROUNDED_S,
            chapter.ILLUSTRATIVE_RATIO,
            chapter.CROSSOVER_TOKENS,
            chapter.SHARE_SHORT,
            chapter.SHARE_LONG,
        )
    }
    # 3 fetch times + 3 regeneration times + 17.9 ms + 218x + 427,000 tokens + 2 shares = 11
    assert len(quotes) == 11 and all(key.startswith("chapter.") for key in quotes)
    for q in quotes.values():
        # a quotation, not an input: no provenance class; its place in the chapter is its source
        assert q.provenance == "" and q.source.startswith(chapter.SOURCE + ", ") and q.half_width > 0
        if q.kind in ("time", "fraction"):
            # the text reads back as the value: "82 µs" = 82e-6 s, "8%" = 0.08
            assert parse_quantity(q.text, q.kind) == pytest.approx(q.value, rel=1e-12)
    # half the last printed digit: "82 µs" +- 0.5 µs, "17.9 ms" +- 0.05 ms
    assert quotes["chapter.fetch.mid"].half_width == 0.5e-6
    assert quotes["chapter.regen.conservative_unrounded"].half_width == 0.05e-3


def test_implied_peak_is_forced_by_the_chapter():
    # Each rounded time t (half-width w) at MFU m bounds the peak to (F/(m(t+w)), F/(m(t-w))].
    # 9 ms @50%: (471.6, 527.1]; 11 ms @40%: (487.0, 533.3]; 18 ms @25%: (484.3, 512.0];
    # 17.9 ms @25% (w = 0.05 ms): (2.24e12/(0.25 x 17.95e-3), 2.24e12/(0.25 x 17.85e-3)] = (499.16, 501.96] TFLOP/s
    low, high = implied_peak_interval(
        2.24e12, [0.5, 0.4, 0.25, 0.25], [9e-3, 11e-3, 18e-3, 17.9e-3], [5e-4, 5e-4, 5e-4, 5e-5]
    )
    assert low == pytest.approx(499.164e12, rel=1e-5)
    assert high == pytest.approx(501.961e12, rel=1e-5)
    assert low < Scenario().v("peak_flops") <= high  # the seed's 500 TFLOP/s lies inside


def test_illustrative_ratio_and_the_chapters_rounding(seed_scenario):
    point = seed_scenario.illustrative
    assert (point["bandwidth_label"], point["mfu_label"]) == ("mid", "conservative")
    # unrounded: 17.92 ms / 81.92 µs = 218.75 exactly
    assert point["ratio"] == pytest.approx(218.75, rel=1e-12)
    # the chapter divides its rounded figures: 17.9 ms / 82 µs = 218.29 -> "about 218x"
    assert 17.9e-3 / 82e-6 == pytest.approx(218.29, abs=0.01)


def test_ratio_grid_spans_the_chapters_claimed_range(seed_scenario):
    rows = ratio.table(seed_scenario).itertuples()  # the ratio page's grid, in-batch regime
    grid = {(row.bandwidth_bracket, row.mfu_bracket): row.ratio for row in rows}
    assert len(grid) == 9
    # smallest: 8.96 ms / 163.84 µs = 54.69 (optimistic MFU, pessimistic link)
    assert min(grid.values()) == pytest.approx(54.6875, rel=1e-12)
    # largest: 17.92 ms / 43.33 µs = 413.6 (conservative MFU, optimistic link)
    assert max(grid.values()) == pytest.approx(0.01792 / (5_242_880 / 121e9), rel=1e-12)
    # optimistic ends of both ranges: 8.96 ms / 43.33 µs = 206.8 ("closer to two orders")
    assert grid[("optimistic", "optimistic")] == pytest.approx(206.787, rel=1e-5)


def test_capacity_table(seed_scenario):
    # 32,768 x 327,680 B = 10,737,418,240 B = 10.0 GiB
    assert seed_scenario.kv_bytes(32_768) / GIB == 10.0
    # 131,072 x 327,680 B = 42,949,672,960 B = 40.0 GiB
    assert seed_scenario.kv_bytes(131_072) / GIB == 40.0
    # weights: 70e9 x 2 B = 140e9 B = 130.385 GiB
    assert seed_scenario.weight_bytes == 140e9
    assert seed_scenario.weight_bytes / GIB == pytest.approx(130.385, abs=1e-3)
    # 10 GiB / 130.385 GiB = 7.67 % (chapter: 8 %); 40 / 130.385 = 30.68 % (chapter: 31 %)
    assert seed_scenario.kv_share(32_768) == pytest.approx(0.076696, abs=1e-6)
    assert seed_scenario.kv_share(131_072) == pytest.approx(0.306783, abs=1e-6)
    assert round(seed_scenario.kv_share(32_768) * 100) == 8
    assert round(seed_scenario.kv_share(131_072) * 100) == 31


def test_crossover_near_427k_tokens(seed_scenario):
    # 140e9 B / 327,680 B per token = 427,246.09 tokens (chapter: "roughly 427,000")
    assert seed_scenario.crossover_tokens == pytest.approx(427_246.09375, rel=1e-12)


def test_exact_llama3_70b_params_move_the_crossover():
    model = load_model("llama-3-70b")
    # embeddings 128,256 x 8,192 = 1,050,673,152, twice (untied) = 2,101,346,304
    # per layer: q 8192^2 + k,v 2 x 8192 x 1024 + o 8192^2 = 150,994,944
    #            MLP 3 x 8192 x 28,672 = 704,643,072; norms 2 x 8192 = 16,384 -> 855,654,400
    # 80 layers = 68,452,352,000; + 2,101,346,304 + final norm 8,192 = 70,553,706,496
    assert model.total_params == 70_553_706_496
    exact = Scenario().assumptions.with_values({"param_count": None}, source="test")
    s = Scenario(exact)
    # weights 141,107,412,992 B / 327,680 B = 430,625.65 tokens, +3,379.56 (+0.79 %) over the nominal 427,246
    assert s.crossover_tokens == pytest.approx(430_625.65, abs=0.01)
    assert s.crossover_tokens - Scenario().crossover_tokens == pytest.approx(3_379.56, abs=0.01)
    # and regeneration at 25 % MFU: 16 x 2 x 70,553,706,496 / 125e12 = 18.06 ms
    assert float(s.regen_s(0.25)) == pytest.approx(18.0617e-3, rel=1e-4)


def test_no_seed_basis_restates_its_own_value():
    # a basis that repeats the value ("32K ... (32,768 tokens)") goes stale when the value is edited
    from kvtier.inputs.assumptions import seed

    for rec in seed().values():
        if not isinstance(rec.value, (int, float)) or rec.value in (0, 1, 2):
            continue  # small counts ("2 bytes", "0 = start only") read as words, not as the value
        forms = {rec.text, f"{rec.value:g}"} | ({f"{rec.value:,.0f}"} if rec.value >= 1000 else set())
        assert not [form for form in forms if form in rec.basis], (rec.key, rec.basis)


def test_the_seed_peak_basis_quotes_the_interval_the_chapter_forces():
    # the basis quotes 499.2 to 502.0 TFLOP/s: implied_peak_interval over the chapter's table, rounded to 0.1
    from kvtier.inputs.assumptions import seed

    low, high = implied_peak_interval(
        2.24e12, [0.5, 0.4, 0.25, 0.25], [9e-3, 11e-3, 18e-3, 17.9e-3], [5e-4, 5e-4, 5e-4, 5e-5]
    )
    assert f"{low / 1e12:.1f} to {high / 1e12:.1f} TFLOP/s" in seed()["peak_flops"].basis
