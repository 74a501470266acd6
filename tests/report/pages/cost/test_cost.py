"""The cost page's contract: its prices are assumption keys, each dated, ranged and checked in one line."""

from __future__ import annotations

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs.assumptions import load_assumptions, seed
from kvtier.inputs.keys import COST_RANGES
from kvtier.scenario import Scenario


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("cost.accelerator_hour", "-3 USD/h", "is out of range"),
        ("cost.accelerator_hour", "0 USD/h", "is out of range"),
        ("cost.dram_gb", "10", "needs a unit, for example 10USD/GB"),
        ("cost.dram_gb", "10/GB", "is not in US dollars: write USD or $"),
        ("cost.energy_kwh", "0.09 EUR/kWh", "is not in US dollars: write USD or $"),
        ("cost.amortisation", "5", "needs a unit, for example 5y"),
        ("energy.power_lone", "467", "needs a unit, for example 467W"),
    ],
)
def test_bad_prices_are_one_line_errors_naming_the_key(key, value, message):
    with pytest.raises(KvtierError) as err:
        load_assumptions(sets={key: value})
    text = str(err.value)
    assert "\n" not in text and f"'{key}'" in text and message in text, text


def test_a_range_must_hold_its_value():
    from kvtier.inputs.assumptions import check_consistency

    with pytest.raises(KvtierError, match="'cost.cxl_gb_high' .* and 'cost.cxl_gb' .* are out of order"):
        check_consistency(load_assumptions(sets={"cost.cxl_gb_high": "8 USD/GB"}))


def test_every_price_has_a_dated_source_and_a_range():
    a = seed()
    for key in COST_RANGES:
        for end in ("", "_low", "_high"):
            rec = a[f"{key}{end}"]
            assert any(ch.isdigit() for ch in rec.source), (rec.key, rec.source)  # a year or a date
            assert rec.provenance in ("assumed", "published-spec", "measured"), rec.key


def test_the_measured_set_prices_an_h200():
    from pathlib import Path

    import kvtier

    s = Scenario(load_assumptions(Path(kvtier.__file__).parent / "data" / "h200-measured.yaml"))
    # 141 GB of HBM3e and 4 USD/h, the H200's own; 4 / 3600 x 0.5 / 141e9 = 3.9401e-15 USD/(B s) of HBM
    assert s.v("cost.hbm_capacity") == 141e9 and s.v("cost.accelerator_hour") == pytest.approx(4 / 3600)
    assert s.tier_prices().hbm_bytes == 141e9
    assert "H200" in s.a("cost.accelerator_hour").basis and "H200" in s.a("energy.power_batch").basis
