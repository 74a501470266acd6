"""kvtier.commands.output: the text or JSON emitter the quick-answer commands share."""

from __future__ import annotations

import json
import math

from kvtier.commands.output import emit, finite, record_json
from kvtier.inputs.assumptions import seed


def test_finite_replaces_every_non_finite_float_at_any_depth():
    payload = {"a": math.inf, "b": [1.0, -math.inf, (math.nan, 2)], "c": {"d": 3, "e": "inf"}}
    assert finite(payload) == {"a": None, "b": [1.0, None, [None, 2]], "c": {"d": 3, "e": "inf"}}


def test_json_is_sorted_indented_and_valid_with_infinity(capsys):
    emit(True, {"ratio": math.inf, "block_bytes": 5_242_880}, ["not printed"])
    out = capsys.readouterr().out
    assert out == '{\n  "block_bytes": 5242880,\n  "ratio": null\n}\n'
    assert json.loads(out) == {"block_bytes": 5242880, "ratio": None}


def test_text_is_the_lines_joined(capsys):
    emit(False, {"ignored": 1}, ["first", "second"])
    assert capsys.readouterr().out == "first\nsecond\n"


def test_a_record_in_json_keeps_its_value_unit_text_and_provenance():
    rec = seed()["bandwidth.mid"]
    # the seed's mid bracket: "64 GB/s" = 64e9 B/s, an assumption
    assert record_json(rec) == {
        "value": 64e9,
        "unit": "B/s",
        "text": rec.text,
        "provenance": "assumed",
        "basis": rec.basis,
        "source": rec.source,
    }
    assert rec.text.replace(" ", "") == "64GB/s"


def test_pct_and_num():
    from kvtier.commands.output import num, pct

    # 0.1234 -> 12.34 % -> one decimal 12.3 %; a number by its spec, n/a where undefined
    assert pct(0.1234) == "12.3 %"
    assert num(2.345, ".1f") == "2.3" and num(None, ".1f") == "n/a" and num(float("nan"), ".1f") == "n/a"
