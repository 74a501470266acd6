"""The workload page's trace summary: another trace named by the set, the streamed report, the tier links."""

from __future__ import annotations

import pytest

from kvtier import analysis
from kvtier.report.pages import workload as page
from kvtier.report.pages.workload import over_time, summary
from kvtier.scenario import Scenario
from tests.conftest import HAND, write_trace


def test_the_page_sizes_another_trace_when_the_set_names_it(tmp_path):
    from kvtier.inputs.assumptions import seed
    from kvtier.report.pages import workload as page

    path = write_trace(tmp_path / "hand.jsonl", HAND)
    s = Scenario(seed().with_values({"workload.trace": str(path), "workload.block_tokens": "4"}, source="test"))
    n = page.numbers(s)
    assert (n["requests"], n["references"], n["unique_blocks"], n["contrast"]) == (5, 11, 5, "synthetic")
    assert n["cap50_blocks"] == 2


def test_the_page_streams_the_trace_and_gets_the_in_memory_figures():
    # the page reads the trace as `kvtier workload` does (streamed, bounded by its distinct blocks); the same
    # figures from the trace held in memory, every reference at once, agree to the order of the sums
    import math

    import numpy as np

    from kvtier.formulas.cache.report import report as workload_report
    from kvtier.report.pages import workload as page

    s = Scenario()
    r, rc = analysis.reuse(s), s.regen_costs()
    streamed, whole = summary.report(s, "conversation"), workload_report(r, rc, summary.link_specs(s))
    for a, b in zip(streamed["tiers"], whole["tiers"], strict=True):
        assert a["capacity_blocks"] == b["capacity_blocks"]  # capacities: whole blocks, equal exactly
        for key in ("hit_ratio_blocks", "hit_ratio_tokens", "in_batch_gpu_s_per_s", "lone_gpu_s_per_s"):
            assert a[key] == pytest.approx(b[key], rel=1e-12), key
    # the curve over time: the same windows, references and ratios as the trace's in memory
    ot = over_time.over_time_series(s)
    start, refs, ratio = r.over_time(ot["capacity_blocks"], every_s=ot["window_s"])
    assert ot["start_s"].tolist() == start.tolist() and ot["references"].tolist() == refs.tolist()
    assert np.allclose(ot["hit_ratio"], ratio, rtol=1e-12, equal_nan=True)
    # the share of reuses in the same millisecond as the block's last use, and lone over in-batch recomputation
    n = page.numbers(s)
    assert n["reuse_zero_pct"] == pytest.approx(float(np.mean(r.reuse_interval_s == 0) * 100), rel=1e-12)
    _, tokens = r.hit_tokens()
    lone_over = float(rc.lone_s(tokens).sum()) / float(rc.in_batch_s(tokens).sum())
    assert n["lone_over_in_batch"] == pytest.approx(lone_over, rel=1e-12) and not math.isnan(lone_over)


def test_the_links_table_takes_the_tiers_and_their_latency_from_the_scenario():
    from kvtier.inputs.assumptions import load_assumptions

    links = {k.name: k for k in summary.link_specs(Scenario())}
    # fastest first; CXL 2.0 x8 at 31.5 GB/s and the host link's 9.049 us a transfer (tier_latency.host_link)
    assert next(iter(links)) == "hbm"
    assert (links["cxl2-x8"].bandwidth_bytes_per_s, links["cxl2-x8"].latency_s) == (31.5e9, 9.049e-6)
    assert links["nvme-gen4-x4"].latency_s == 92e-6
    other = {k.name: k for k in summary.link_specs(Scenario(load_assumptions(sets={"tier_latency.host_link": "1us"})))}
    assert other["cxl2-x8"].latency_s == other["pcie6-x16"].latency_s == 1e-6


def test_the_traces_table_and_the_numbers_read_one_summary():
    s = Scenario()
    sized, contrast = summary.trace_summary(s, "conversation"), summary.trace_summary(s, "synthetic")
    table = summary.traces_table(s)
    names = [c.name for c in summary.TRACE_COLUMNS]
    assert list(table.columns) == names
    assert table.to_dict("records") == [{c: t[c] for c in names} for t in (sized, contrast)]
    n = page.numbers(s)
    # conversation: 288,500 references to 182,790 blocks of 160 MiB; the prose quotes the same summary
    assert (
        (sized["block_references"], sized["unique_blocks"])
        == (n["references"], n["unique_blocks"])
        == (
            288_500,
            182_790,
        )
    )
    assert n["unique_tib"] == sized["unique_tib"] == pytest.approx(182_790 * 160 / 2**20)
    assert n["reuse_max_min"] == sized["reuse_max_s"] / 60
    assert n["contrast_requests"] == contrast["requests"] and n["contrast_unique_tib"] == contrast["unique_tib"]


def test_the_engine_models_words_say_how_many_prompts_are_extrapolated():
    from kvtier.report.pages.workload.summary import engine_grid_sentence

    assert engine_grid_sentence({"engine": None}) == ""
    # 2 of 8 prompts past a 16,384-token grid: 25.0 %
    rep = {"engine": {"tables": "t", "grid_tokens": 16384.0, "prompts_beyond_grid": 0.25}}
    assert engine_grid_sentence(rep).startswith(
        "25.0 % of the trace's prompts are longer than the 16,384 tokens the kernel tables measured; their prefixes"
        " are priced by aiconfigurator-core's extrapolation"
    )
    rep["engine"]["prompts_beyond_grid"] = 0.0
    assert (
        engine_grid_sentence(rep) == "Every prompt of the trace is inside the 16,384 tokens the kernel tables measured."
    )
