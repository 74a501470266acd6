"""Display rounding: tables and prose round once, from the recorded value, half away from zero."""

from __future__ import annotations

import re

import pandas as pd

from kvtier.report import tables
from kvtier.report.columns import Column, column_of, declare
from kvtier.report.pages import ratio
from kvtier.report.tables import formatted, unit_in_cells
from kvtier.scenario import seed_scenario
from kvtier.units import format_number
from tests.conftest import ROOT

# the source chapter's own description of its one measurement (quoted here to test against)
CHAPTER_ON_236 = (
    "Chapter 4 reports the one hardware-measured bandwidth result in this document, 236.5 GB/s of on-GPU"
    " HBM/unified-memory streaming bandwidth on a DGX Spark. That is a different link, a different distance, and a"
    " different measurement method than anything discussed here, and the two should never be cited interchangeably."
)


def _shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:

    words = re.findall(r"[a-z0-9./-]+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def test_one_rule_rounds_the_recorded_value_half_away_from_zero_to_five_figures():
    # 81.92 µs / 17.92 ms is 218.74999999999997 in binary; its record (%.10g) is 218.75, shown whole
    assert format_number(218.74999999999997) == "218.75"
    assert format_number(0.125) == "0.125"  # three figures need no trailing zeros
    assert format_number(2.339948062) == "2.3399"  # five significant figures, half up
    assert format_number(0.292524870) == "0.29252"
    assert format_number(12_345.6) == "12,346"  # five integer digits: to the unit
    assert format_number(1_234_567.5) == "1,234,568"
    assert format_number(5_242_880) == "5,242,880"  # a whole number exactly
    assert format_number(-0.04) == "-0.04"
    assert format_number(-0.0) == "0"
    assert format_number(5e14) == "5e+14"  # from 1e9 on, scientific
    assert format_number(0.00001234) == "1.234e-05"  # below 1e-4 too
    assert format_number(9.999996e9) == "1e+10"  # a mantissa that rounds up to 10 moves the exponent


def test_ratio_table_shows_the_illustrative_ratio_to_three_figures():
    df = ratio.table(seed_scenario())
    row = (df["bandwidth_bracket"] == "mid") & (df["mfu_bracket"] == "conservative")
    # 17.92285 ms / 81.92 µs = 218.784816: its inputs are known to a factor, so the table shows three figures
    assert formatted(df).loc[row, "ratio"].item() == "219"
    assert formatted(df, digits=5).loc[row, "ratio"].item() == "218.78"  # the one rule at five, for the diff


def test_formatted_keeps_whole_columns_and_missing_values():
    df = pd.DataFrame({"a": [1.0, 2.0], "b": [0.25, None]})
    out = formatted(declare(df, (Column("a", "a"), Column("b", "b"))))
    assert out["a"].tolist() == ["1", "2"]
    assert out["b"].tolist() == ["0.25", "n/a"]


def test_formatted_shows_three_figures_integers_whole_and_infinity_as_a_sign():
    df = pd.DataFrame({"x": [0.2925248706, 17879.52254, 5_242_880.0, float("inf")]})
    out = formatted(declare(df, (Column("x", "x", "GB/s"),)))
    # 0.29252 GB/s is known to a factor of two: 0.293; five integer digits stay to the unit, a count exact
    assert out["x"].tolist() == ["0.293", "17,880", "5,242,880", "∞"]


def test_roofline_prose_and_table_share_one_rounding_of_the_compute_bound_batch():
    from kvtier.report.pages import roofline

    s = seed_scenario()
    df = roofline.table(s)
    known = df["compute_bound_batch_tokens"].dropna()
    assert (known == known.round()).all()  # whole tokens in the record itself
    n = roofline.numbers(s)
    shown = formatted(df)["compute_bound_batch_tokens"]
    assert f"{n['preset_batch_min_tokens']:,}" in shown.tolist()
    assert f"{n['preset_batch_max_tokens']:,}" in shown.tolist()
    for label in ("conservative", "optimistic"):
        assert f"{n[f'batch_{label}_tokens']:,}" in shown.tolist()


def test_time_columns_that_reach_hours_scale_their_unit():
    from kvtier.report.pages import interior
    from kvtier.units import format_time

    assert format_time(11_606.12395) == "3.22 h"
    assert format_time(82.25) == "1.37 min"
    assert format_time(59.0) == "59.00 s"
    df = interior.table(seed_scenario())
    shown = formatted(df)
    assert list(shown.columns) == list(df.columns)  # the display copy keeps the table of record's names
    assert not any("," in cell and cell.endswith(" ms") for cell in shown["regen_ms"])
    longest = df["regen_ms"].idxmax()
    assert shown.loc[longest, "regen_ms"] == format_time(df.loc[longest, "regen_ms"] * 1e-3)
    assert shown.loc[0, "regen_ms"] == "17.92 ms"
    # each cell carries its unit, so the header drops it: "regeneration time, in a batch", not "(ms)"
    assert unit_in_cells(df, "regen_ms")
    assert column_of(df, "regen_ms").header(unit=False) == "regeneration time, in a batch"
    # a time column that stays under a minute keeps its header and plain numbers
    small = declare(pd.DataFrame({"fetch_us": [81.92, 163.84]}), (Column("fetch_us", "fetch time", "µs"),))
    assert formatted(small)["fetch_us"].tolist() == ["81.9", "164"]  # three significant figures
    assert not unit_in_cells(small, "fetch_us")
    # the declared unit decides, not the name: a count per second is no time however large
    count = declare(pd.DataFrame({"gpu_s_per_s": [90.0]}), (Column("gpu_s_per_s", "accelerators saved"),))
    assert formatted(count)["gpu_s_per_s"].tolist() == ["90"] and not unit_in_cells(count, "gpu_s_per_s")


def test_dgx_spark_measurement_is_described_in_our_own_words():
    from kvtier.inputs.assumptions import seed

    root = ROOT
    page = (root / "notebooks" / "00_assumptions.md").read_text(encoding="utf-8")
    start = page.index("Measured elsewhere")
    admonition = page[start : page.index("```", start)]
    basis = seed()["reference.dgx_spark_hbm"].basis
    chapter = _shingles(CHAPTER_ON_236)
    for ours in (admonition, basis):
        assert not _shingles(ours) & chapter, ours
    assert "HBM/unified-memory" not in admonition + basis


def test_a_rows_anchor_is_its_tables_name_and_key_values():
    # cost_lru's row of the 90 % target in host DRAM over PCIe 5.0: every run of other characters a hyphen
    assert tables.row_anchor("cost_lru", (0.9, "pcie5-x16")) == "row-cost-lru-0-9-pcie5-x16"
    assert tables.row_anchor("decision_named", ("this build",)) == "row-decision-named-this-build"


def test_a_carriage_return_in_a_text_field_stays_inside_its_row():
    # issue 43: a lone CR in a basis string was written unquoted (only "\n" ends a row here), so a CSV reader split
    # the row and `kvtier diff` refused the build's own tables; it is written as a quoted line break
    import csv
    import io

    df = pd.DataFrame({"key": ["a", "b"], "basis": ["one\rtwo", "three\r\nfour"], "value": [1.5, 2.0]})
    text = tables.to_csv_text(df)
    assert list(csv.reader(io.StringIO(text))) == [
        ["key", "basis", "value"],
        ["a", "one\ntwo", "1.5"],
        ["b", "three\nfour", "2"],
    ]
