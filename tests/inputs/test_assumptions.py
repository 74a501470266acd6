"""kvtier.inputs.assumptions: the key specs, reading sets, layering and the whole-set check."""

from __future__ import annotations

from kvtier.inputs.assumptions import SCHEMA, describe


def test_every_schema_key_has_a_one_line_description():
    from kvtier.inputs.assumptions import HELP

    assert set(HELP) == set(SCHEMA)
    assert all("\n" not in describe(key) and "=" not in describe(key) for key in SCHEMA)  # papermill reads one line
    assert (
        describe("peak_flops")
        == "dense peak of the accelerator that regenerates; flop rate with a unit, e.g. 500TFLOP/s"
    )
    assert describe("mfu.typical").endswith("; fraction, e.g. 40% or 0.4")
