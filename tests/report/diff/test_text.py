"""kvtier.report.diff.text: the change column's percentages."""

from __future__ import annotations

from kvtier.report.diff import Change, text


def test_percent_format() -> None:
    assert text.format_rel(Change("t", "r", "c", "64", "100", 0.5625)) == "+56.25%"
    assert text.format_rel(Change("t", "r", "c", "100", "64", -0.36)) == "-36.00%"
    assert text.format_rel(Change("t", "r", "c", "1", "1.000000001", 1e-9)) == "+1.00e-07%"
    assert text.format_rel(Change("t", "r", "c", "0", "3", None)) == "from 0"
