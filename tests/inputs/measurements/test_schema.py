"""The probe files' schemas: the shipped files satisfy them, and each violation is one key and one problem."""

from __future__ import annotations

import json
import math

import pytest

from kvtier.inputs.measurements import schema
from tests.conftest import ROOT

DATA = ROOT / "kvtier" / "data" / "measurements" / "h200-2026-11-30"


def _probe(file: str) -> dict:
    return json.loads((DATA / file).read_text())


@pytest.mark.parametrize("file", sorted(schema.SCHEMAS))
def test_every_shipped_probe_file_satisfies_its_schema(file):
    assert schema.check(file, _probe(file)) is None


def test_a_key_is_written_with_dots_and_indices():
    assert schema.key_of(["copies", 3, "median_s"]) == "copies[3].median_s"
    assert schema.key_of(["overlap", "with_copies", 2]) == "overlap.with_copies[2]"
    assert schema.key_of([]) == ""


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        # JSON has no NaN or Infinity, Python's parser reads both: neither is a positive number
        (math.nan, "must be a positive number, got nan"),
        (math.inf, "must be a positive number, got inf"),
        (10**400, None),  # past the largest float: refused, its digits cut in the message
        (0, "must be a positive number, got 0"),
        (False, "must be a positive number, got False"),
        (1e-300, "ok"),
    ],
)
def test_a_positive_number_is_finite_and_above_0(value, problem):
    data = _probe("probe1.json")
    data["copies"][3]["median_s"] = value
    found = schema.check("probe1.json", data)
    if problem == "ok":
        # 1e-300 s is positive: the schema passes it (the reader then finds the timing out of order)
        assert found is None
    elif problem is None:
        assert found[0] == "copies[3].median_s" and found[1].startswith("must be a positive number, got 1000")
    else:
        assert found == ("copies[3].median_s", problem)


def test_a_whole_number_may_be_written_as_a_float():
    data = _probe("probe1.json")
    data["block_layouts"]["chunks"] = 160.0  # 160 chunks, written 160.0
    assert schema.check("probe1.json", data) is None
    data["block_layouts"]["chunks"] = 160.5
    assert schema.check("probe1.json", data) == ("block_layouts.chunks", "must be a whole number, got 160.5")


def test_what_should_be_an_object_and_is_not_reads_as_empty():
    data = _probe("probe1.json")
    data["block_layouts"] = 5  # its first field, chunk_bytes, is missing
    assert schema.check("probe1.json", data) == ("block_layouts.chunk_bytes", "is missing")
    data = _probe("probe3.json")
    data["overlap"]["with_copies"][1] = []
    assert schema.check("probe3.json", data) == ("overlap.with_copies[1].forward_s", "is missing")


def test_a_missing_group_is_named_as_missing_and_an_optional_field_may_be_left_out():
    data = _probe("probe1.json")
    del data["regenerate"]
    assert schema.check("probe1.json", data) == ("regenerate", "is missing")
    data = _probe("probe1.json")
    for row in data["regenerate"]["interior_evicted"]:
        row.pop("tokens_computed")  # the reader takes 16 tokens
    assert schema.check("probe1.json", data) is None
