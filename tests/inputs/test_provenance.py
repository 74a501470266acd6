"""kvtier.inputs.provenance: the one record type, its unit, its display and its label."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from kvtier.inputs.provenance import PROVENANCE_CLASSES, Record


def test_the_five_provenance_classes_in_order():
    assert PROVENANCE_CLASSES == ("measured", "published-spec", "assumed", "implied", "derived")


def test_a_bandwidth_record_displays_decimal_and_labels_its_class():
    rec = Record("bandwidth.mid", 64e9, "bandwidth", "64 GB/s", "assumed")
    assert rec.unit == "B/s"
    assert rec.display == "64 GB/s"  # 64e9 B/s in decimal units
    assert rec.label() == "bandwidth.mid = 64 GB/s [assumed]"


def test_a_size_record_displays_binary():
    # 5,242,880 B = 5 x 2**20 B = 5 MiB
    rec = Record("block", 5_242_880.0, "bytes", "5 MiB", "derived")
    assert rec.unit == "B" and rec.display == "5.00 MiB"  # sizes show three significant figures


def test_absent_values_show_what_stands_in_for_them():
    assert Record("param_count", None, "count", "null", "assumed", absent="from model config").display == (
        "from model config"
    )
    assert Record("x.peak", None, "flop_rate", "null").display == "not given"  # the default


def test_choices_show_as_written_and_have_no_unit():
    rec = Record("fetch_layout", "per-layer", "choice", "per-layer", "assumed")
    assert rec.display == "per-layer" and rec.unit == ""


def test_records_are_frozen():
    rec = Record("k", 1.0, "count", "1")
    with pytest.raises(FrozenInstanceError):
        rec.value = 2.0  # type: ignore[misc]
