"""`kvtier tiers`: the tier ladder from the command line, equal to the tiers table of record."""

from __future__ import annotations

import pytest

from tests.conftest import csv_rows, run_cli_json


def test_tiers_json_agrees_with_the_tiers_table():
    out = run_cli_json("tiers")
    table = {r["link"]: r for r in csv_rows("tiers")}
    assert [row["link"] for row in out["tiers"]] == list(table)
    for row in out["tiers"]:
        ref = table[row["link"]]
        assert row["fetch_time_s"] * 1e6 == pytest.approx(float(ref["fetch_us"]), rel=1e-9)
        assert row["ratio_tail"] == pytest.approx(float(ref["ratio_tail"]), rel=1e-9)
        assert row["bandwidth_bytes_per_s"] == pytest.approx(float(ref["bandwidth_GBps"]) * 1e9)
