"""The roofline page: the lone block and the block in a batch on named accelerators, by hand."""

from __future__ import annotations

import pytest

from kvtier.formulas import costs, roofline
from kvtier.scenario import Scenario
from tests.conftest import csv_rows, scenario

# ---------------------------------------------------------------------------
# roofline, two models
# ---------------------------------------------------------------------------


def test_roofline_on_the_chapter_device_llama_3_70b():
    s = scenario(**{"regen.model": "roofline"})
    # lone block: reads all 140e9 B of weights at 3.35e12 B/s x 80 % = 2.68e12 B/s -> 52.2388 ms
    assert float(s.regen_time_s(0, "resident", 0.25)) == pytest.approx(140e9 / 2.68e12, rel=1e-12)
    # compute side: (2.24e12 + 356,515,840) / 1.25e14 = 17.92285 ms < 52.24 ms, so memory-bound
    compute = float(s.regen_time_s(0, "resident", 0.25, model="mfu"))
    assert compute == pytest.approx(17.92285e-3, rel=1e-6)
    # compute-bound from W x T / (t_c x bw x eff) = 140e9 x 16 / (17.92285e-3 x 2.68e12) = 46.63 tokens
    batch = roofline.compute_bound_batch_tokens(140e9, 16, 327_680, 0, compute, 3.35e12, 0.8)
    assert float(batch) == pytest.approx(46.634, rel=1e-4)
    # with 4,096 tokens in the pass the block is compute-bound and the roofline equals the MFU model
    assert float(s.regen_time_s(0, "resident", 0.25, batch_tokens=4096)) == compute


def test_roofline_llama_3_8b_on_h200():
    s = scenario(model="llama-3-8b", **{"regen.model": "roofline"})
    kw = {"peak_flop_per_s": 989e12, "mem_bandwidth_bytes_per_s": 4.8e12}
    # weights 8,030,261,248 x 2 B = 16,060,522,496 B; at a position of 4,096 the block also reads
    # 4,096 x 131,072 B = 536,870,912 B of KV: 16,597,393,408 B / (4.8e12 x 0.8) = 4.3222 ms
    t = float(s.regen_time_s(4096, "resident", 0.5, **kw))
    assert t == pytest.approx(16_597_393_408 / 3.84e12, rel=1e-12)
    # compute: 2 x 8,030,261,248 x 16 + 524,288 x (16 x 4,096 + 136) = 291,355,332,608 FLOP / 494.5e12 = 0.589 ms
    compute = float(s.regen_time_s(4096, "resident", 0.5, model="mfu", **kw))
    assert compute == pytest.approx((2 * 8_030_261_248 * 16 + 524_288 * (16 * 4096 + 136)) / 494.5e12, rel=1e-12)
    assert t > compute  # memory-bound


def test_break_even_bandwidth_times_regen_time_is_the_block():
    s = scenario()
    for position, upstream in ((0, "resident"), (50_000, "resident"), (50_000, "evicted")):
        t = float(s.regen_time_s(position, upstream, 0.25))
        # 5,242,880 B / t, and back: bandwidth x t = 5,242,880 B
        assert float(costs.bandwidth_for_ratio(s.block_bytes, t)) * t == pytest.approx(5_242_880, rel=1e-12)
    # the chapter's tail block: 5,242,880 B / 17.92 ms = 292.57 MB/s
    assert float(costs.bandwidth_for_ratio(5_242_880, 17.92e-3)) == pytest.approx(292.571e6, rel=1e-5)


# ---------------------------------------------------------------------------
# the two regimes: a lone block (roofline) and a block inside a batch (marginal compute)
# ---------------------------------------------------------------------------


def test_lone_block_regime_by_hand_on_the_seed_device():
    from kvtier.report.pages import ratio

    s = Scenario()
    # A lone 16-token block of Llama-3-70B reads every weight once: 70e9 x 2 B = 140e9 B, no cached KV at the
    # tail. On the seed's device: 140e9 B / (3.35e12 B/s x 0.80) = 52.2388 ms, memory-bound at every MFU
    # (compute at 25 % MFU: 2.24e12 FLOP / 125e12 FLOP/s = 17.92 ms, plus 16 x 17 / 2 x 2,621,440 FLOP of
    # attention over its own tokens, 0.36 GFLOP: negligible).
    lone_s = 140e9 / (3.35e12 * 0.80)
    assert float(s.lone_regen_s(0, "resident", 0.25)) == pytest.approx(lone_s, rel=1e-12)
    assert str(s.lone_bound(0, "resident", 0.50)) == "memory"
    # Inside a batch the same block costs its marginal compute, the chapter's model: 17.92 ms (+ attention).
    assert float(s.in_batch_regen_s(0, "resident", 0.25)) == pytest.approx(
        (2.24e12 + 2_621_440 * 16 * 17 / 2) / 125e12, rel=1e-12
    )
    n = ratio.numbers(s)
    # Against the 81.92 us fetch at 64 GB/s (5,242,880 B / 64e9 B/s): 52.2388 ms / 81.92 us = 637.68.
    assert n["lone_ratio_illustrative"] == pytest.approx(lone_s / 81.92e-6, rel=1e-12)
    assert n["lone_ratio_illustrative"] == pytest.approx(637.68, abs=0.01)
    # Over the 3 x 3 brackets the lone time does not depend on the MFU, so the range is set by the link:
    # 52.2388 ms / 163.84 us (32 GB/s) = 318.84 to 52.2388 ms / 43.3296 us (121 GB/s) = 1,205.62.
    assert n["lone_ratio_min"] == pytest.approx(lone_s / (5_242_880 / 32e9), rel=1e-12)
    assert n["lone_ratio_max"] == pytest.approx(lone_s / (5_242_880 / 121e9), rel=1e-12)
    assert n["n_lone_memory_bound"] == 9
    # The verdict on "two to three orders of magnitude", both regimes: inside a batch 7 of 9 hold and the
    # two 32 GB/s corners at 50 % and 40 % MFU fall below (54.7x, 68.4x); as a lone block 6 of 9 hold and
    # the three 121 GB/s corners exceed 1,000x (1,205.6x); none falls below 100x.
    assert (n["n_within_claim"], n["n_below_claim"], n["n_above_claim"]) == (7, 2, 0)
    assert (n["lone_n_within_claim"], n["lone_n_below_claim"], n["lone_n_above_claim"]) == (6, 0, 3)
    assert "exceeds 1,000× at 3" in n["lone_verdict"]
    rows = csv_rows("ratio")
    assert [r["lone_bound"] for r in rows] == ["memory"] * 9
    assert sum(r["lone_within_claim"] == "True" for r in rows) == 6
    # every lone ratio is above its in-batch ratio: the lone block is dearer at every corner
    assert all(float(r["lone_ratio"]) > float(r["ratio"]) for r in rows)


def test_the_roofline_figure_gives_each_device_a_marker():
    import matplotlib.pyplot as plt

    from kvtier.report.pages import roofline as page

    fig, caption = page.roofline_vs_batch(Scenario())
    lines = [line for line in fig.axes[0].get_lines() if line.get_label() and not line.get_label().startswith("_")]
    markers = [line.get_marker() for line in lines]
    # the set's own device and the six presets with a dense peak: seven lines, seven markers
    assert len(markers) == 7 and len(set(markers)) == 7
    # 140e9 B / (3.35e12 x 0.8) = 52.2 ms against 17.9 ms of compute at 25 % MFU
    assert caption.startswith("A lone block is memory-bound on this set's device: its 16-token pass takes 52.2 ms")
    plt.close(fig)


def test_the_lone_verdict_quotes_the_tables_lone_block_time_not_the_weights_read_alone():
    from kvtier.report.pages import roofline as page
    from kvtier.scenario import measured_scenario, seed_scenario

    # the seed: 140e9 B / (3.35e12 B/s x 80 %) = 52.24 ms at every bracket, nothing added
    assert (
        "takes 52.2 ms whatever the MFU (the table's lone-block time)" in page.numbers(seed_scenario())["lone_verdict"]
    )
    # the measured set: the weights read in 33.2 ms, but its per-layer launch floor and overheads make the pass
    # 54.4 to 54.5 ms; the verdict said "33.2 ms whatever the MFU" while the table said 54.5
    n = page.numbers(measured_scenario())
    assert round(n["memory_ms"], 1) == 33.2
    assert "takes 54.4 to 54.5 ms (the table's lone-block time)" in n["lone_verdict"]
    assert "whatever the MFU" not in n["lone_verdict"]
