"""kvtier.report.flips: the accelerator, tensor-parallel size, copy method and kernels tried against the verdicts."""

from __future__ import annotations

import pytest

from kvtier.inputs.assumptions import load_assumptions
from kvtier.report import flips
from kvtier.report.pages import answer
from kvtier.scenario import Scenario, seed_scenario


@pytest.fixture(scope="module")
def table():
    return flips.flip_inputs(seed_scenario()).set_index(["input", "setting"])


def test_every_input_is_tried_and_the_builds_own_settings_are_marked(table):
    inputs = table.index.get_level_values("input")
    # seven accelerator presets with a peak (DGX Spark publishes none), TP 1/2/4/8, three copy methods, three engines
    assert [inputs.tolist().count(what) for what in flips.INPUTS] == [7, 4, 3, 3]
    assert table.loc[("accelerator", "chapter-implied (500 TFLOP/s)"), "is_build"]
    assert table.loc[("tensor-parallel size", "TP 1"), "is_build"]
    # the seed pays the H200's lone copy over the host link, 9.049 us
    assert table.loc[("copy method", "lone-dma (9.05 µs a copy over the host link)"), "is_build"]


def test_the_closest_call_moves_with_the_peak_as_hand_arithmetic_says(table):
    # the seed's closest call, nvme-gen4-x4 in 160 chunk copies inside a batch, 1.1586x: its regeneration is
    # compute alone, so the ratio scales with the peak. An A100's 312 TFLOP/s: 1.158632 x 500 / 312 = 1.85678
    closest = answer.closest_calls(seed_scenario()).iloc[0]
    assert (closest["tier"], closest["regime"], closest["layout"]) == ("nvme-gen4-x4", "in batch", "per-layer")
    assert table.loc[("accelerator", "a100-sxm (312 TFLOP/s)"), "closest_ratio"] == pytest.approx(
        closest["ratio"] * 500 / 312, rel=1e-9
    )
    # an H100's 989 TFLOP/s: 1.158632 x 500 / 989 = 0.58576, so both NVMe tiers flip in that layout and regime
    h100 = table.loc[("accelerator", "h100-sxm (989 TFLOP/s)")]
    assert h100["closest_ratio"] == pytest.approx(closest["ratio"] * 500 / 989, rel=1e-9)
    assert h100["verdicts_flipped"] == 2 and h100["wins_batch_per_layer"] == 8
    # continuously: the closest call flips at 500 x 1.158632 = 579.3 TFLOP/s
    assert flips.flip_peak(seed_scenario()) == pytest.approx(500e12 * closest["ratio"], rel=1e-5)


def test_the_copy_method_moves_only_the_host_link_which_already_wins(table):
    # the closest call is an NVMe read (92 us a copy, the flash's): no host-link copy cost flips anything
    rows = table.loc["copy method"]
    assert (rows["verdicts_flipped"] == 0).all() and (rows["closest_ratio"] == rows["closest_ratio"].iloc[0]).all()


def test_the_sentences_name_each_setting_that_flips(table):
    text = flips.flip_sentences(seed_scenario())
    assert text["copy method"] == "none of the 3 settings tried flips a verdict"
    assert text["tensor-parallel size"].startswith("TP 2 flips 2 (the closest call at 0.6×); TP 4 flips 4")
    assert text["peak"] == "the closest call flips at a dense peak of 579.3 TFLOP/s, 1.16 times this build's"


def test_under_the_engine_model_no_peak_flips_it():
    s = Scenario(load_assumptions(sets={"regen.model": "engine"}))
    assert flips.flip_peak(s) is None
    assert flips.flip_sentences(s)["peak"].startswith("no peak flips the closest call")
