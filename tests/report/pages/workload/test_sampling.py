"""The workload page's sampling: every reference at rate one, and the same sample on every run."""

from __future__ import annotations

import pytest

from kvtier import analysis
from kvtier.report.pages.workload import sampling
from kvtier.scenario import Scenario
from tests.conftest import HAND, write_trace


def _hand_scenario(tmp_path, rows=HAND):
    from kvtier.inputs.assumptions import seed

    path = write_trace(tmp_path / "hand.jsonl", rows)
    return Scenario(seed().with_values({"workload.trace": str(path), "workload.block_tokens": "4"}, source="test"))


def test_sampling_at_rate_one_keeps_every_reference_and_has_no_error(tmp_path):

    s = _hand_scenario(tmp_path)
    rows = sampling._sampling_rows(s, (1.0,))
    # rate 1: the threshold is the whole hash space, every reference is kept at its own distance, the curve is exact
    hand = next(r for r in rows if r["role"] == "sized")
    assert (hand["trace"], hand["block_references"], hand["sampled_references"]) == (
        str(tmp_path / "hand.jsonl"),
        11,
        11,
    )
    assert (hand["mean_abs_error_pts"], hand["max_abs_error_pts"]) == (0.0, 0.0)
    contrast = next(r for r in rows if r["role"] == "contrast")  # the synthetic trace: 121,877 references
    assert contrast["sampled_references"] == contrast["block_references"] == 121_877
    assert contrast["max_abs_error_pts"] == 0.0


def test_the_sampling_table_keeps_the_hashed_blocks_and_is_the_same_on_every_run():
    from kvtier.formulas.cache.sampling import block_hash, sample_threshold
    from kvtier.report.pages import workload as page

    s = Scenario()
    df = sampling.sampling_table(s)
    # two traces x the three rates of SAMPLE_RATES (0.1, 0.01, 0.001), as % of references
    assert df["trace"].tolist() == ["conversation"] * 3 + ["synthetic"] * 3
    assert df["sample_rate_pct"].tolist() == pytest.approx([10.0, 1.0, 0.1] * 2)
    assert df["block_references"].tolist() == [288_500] * 3 + [121_877] * 3
    # SHARDS keeps a reference when hash(id) mod P < R x P: counted here from the definition, independently
    t = analysis.reuse(s).trace
    h = block_hash(t.blocks)
    kept = [int((h < sample_threshold(r)).sum()) for r in (0.1, 0.01, 0.001)]
    assert df["sampled_references"].tolist()[:3] == kept
    assert (df["mean_abs_error_pts"] <= df["max_abs_error_pts"]).all() and (df["mean_abs_error_pts"] > 0).all()
    # hashed, not random: a second scenario, measured afresh, gives the same table to the last bit
    assert sampling.sampling_table(Scenario()).equals(df)
    assert "seconds" not in " ".join(df.columns)  # timings belong to benchmarks/bench_scale.py
    n = page.numbers(s)
    assert n["sample_1_refs"] == kept[1] and n["sample_1_mean_pts"] == df["mean_abs_error_pts"].iloc[1]
    assert f"its 288,500 references: {kept[0]:,} at 10 %" in n["sampling_sentence"]
    assert f"; {kept[1]:,} at 1 %, off by {n['sample_1_mean_pts']:.2f}" in n["sampling_sentence"]


def test_the_pages_sampled_errors_are_the_commands(capsys):
    # the page's sampling table and `kvtier workload --sample 0.01` measure the conversation trace's figures alike
    import json

    from kvtier.commands import main
    from kvtier.report.pages import workload as page

    df = page.sampling_table(page.SCENARIO(Scenario())).set_index(["trace", "sample_rate_pct"])
    assert main(["workload", "synthetic", "--sample", "0.01", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["sample_error"]["traces"]["conversation"]
    row = df.loc[("conversation", 1.0)]
    assert row["saving_error_pct"] == pytest.approx(got["saving_rel"] * 100, rel=1e-12)
    assert row["capacity_error_pct"] == pytest.approx(got["capacity_rel"] * 100, rel=1e-12)
    assert row["reuse_interval_error_pct"] == pytest.approx(got["reuse_interval_rel"] * 100, rel=1e-12)
