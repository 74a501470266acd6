"""Every number of the source chapter, recomputed from the seed assumption set.

The chapter rounds; these tests assert the unrounded values and, beside each, the
rounded figure the chapter prints.
"""

import pytest

from kvtier import Scenario, parse_quantity
from kvtier.formulas.costs import implied_peak_interval
from kvtier.inputs import chapter


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
