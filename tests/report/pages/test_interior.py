"""The interior page: blocks deep in the context, by hand, and their agreement with `kvtier compare`."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas import costs
from tests.conftest import csv_rows, run_cli_json, scenario

# ---------------------------------------------------------------------------
# interior blocks, two models
# ---------------------------------------------------------------------------


def test_interior_flops_by_hand_llama_3_70b():
    s = scenario()
    # attention FLOPs per token per position: 2 x 80 layers x 64 heads x (128 + 128) = 2,621,440
    assert s.model.attention_flops_per_position() == 2_621_440
    # resident, p = 50,000: 2 x 70e9 x 16 + 2,621,440 x (16 x 50,000 + 16 x 17 / 2)
    #   = 2.24e12 + 2,097,508,515,840 = 4,337,508,515,840 FLOP
    assert float(s.interior_flops(50_000, "resident")) == pytest.approx(2.24e12 + 2_621_440 * 800_136, rel=1e-12)
    # at 25 % of 500 TFLOP/s: 4.3375e12 / 1.25e14 = 34.70 ms
    assert float(s.interior_regen_s(50_000, "resident", 0.25)) == pytest.approx(34.700068e-3, rel=1e-6)
    # evicted, anchor at the start: 50,016 tokens from position 0:
    # 2 x 70e9 x 50,016 + 2,621,440 x 50,016 x 50,017 / 2 = 7.00224e15 + 3.2789802e15 = 1.0281203e16 FLOP -> 82.25 s
    expected = 2 * 70e9 * 50_016 + 2_621_440 * 50_016 * 50_017 / 2
    assert float(s.interior_flops(50_000, "evicted")) == pytest.approx(expected, rel=1e-12)
    assert float(s.interior_regen_s(50_000, "evicted", 0.25)) == pytest.approx(82.2496, rel=1e-5)


def test_interior_flops_by_hand_llama_3_8b_and_anchors():
    s = scenario(model="llama-3-8b")
    # 2 x 32 layers x 32 heads x (128 + 128) = 524,288 FLOPs per token per position
    assert s.model.attention_flops_per_position() == 524_288
    # resident, p = 10,000: 2 x 8,030,261,248 x 16 + 524,288 x (160,000 + 136)
    #   = 256,968,359,936 + 83,957,383,168 = 340,925,743,104 FLOP
    assert float(s.interior_flops(10_000, "resident")) == 340_925_743_104
    # evicted, p = 1,000 from the start: 1,016 tokens, 2 x N x 1,016 + 524,288 x 1,016 x 1,017 / 2
    #   = 16,317,490,855,936 + 270,866,055,168 = 16,588,356,911,104 FLOP
    assert float(s.interior_flops(1_000, "evicted")) == 16_588_356_911_104
    # anchors every 4,096 tokens: p = 50,000 restarts at 12 x 4,096 = 49,152 and recomputes 50,000 - 49,152 + 16 = 864
    first, n = costs.recompute_span(50_000, 16, "evicted", 4_096)
    assert (float(first), float(n)) == (49_152, 864)
    anchored = scenario(model="llama-3-8b", **{"interior.anchor_every": "4096"})
    # 2 x N x 864 + 524,288 x (864 x 49,152 + 864 x 865 / 2)
    expected = 2 * 8_030_261_248 * 864 + 524_288 * (864 * 49_152 + 864 * 865 / 2)
    assert float(anchored.interior_flops(50_000, "evicted")) == pytest.approx(expected, rel=1e-12)


def test_position_zero_is_the_tail_block_and_cost_grows_with_position():
    s = scenario()
    # at position 0 both cases recompute only the block; they differ from the chapter's tail figure by the
    # block's own attention: 2,621,440 x 16 x 17 / 2 = 356,515,840 FLOP, 0.016 % of 2.24e12
    assert float(s.interior_flops(0, "resident")) == float(s.interior_flops(0, "evicted"))
    assert float(s.interior_flops(0, "resident")) - s.block_flops == 2_621_440 * 136
    positions = np.unique(np.round(np.logspace(0, 6, 500)))
    for upstream in ("resident", "evicted"):
        t = s.interior_regen_s(positions, upstream, 0.25)
        assert np.all(np.diff(t) > 0), upstream
    # evicted never costs less than resident
    assert np.all(s.interior_flops(positions, "evicted") >= s.interior_flops(positions, "resident"))


# ---------------------------------------------------------------------------
# the CLI agrees with the tables of record (and so with the book)
# ---------------------------------------------------------------------------


def test_compare_at_a_position_agrees_with_the_interior_table():
    table = {(r["upstream"], r["position_tokens"]): r for r in csv_rows("interior")}
    for upstream in ("resident", "evicted"):
        out = run_cli_json("compare", "--position", "50000", "--upstream", upstream)
        assert out["regen_time_s"] * 1e3 == pytest.approx(float(table[(upstream, "50000")]["regen_ms"]), rel=1e-9)
        assert out["regen_to_fetch_ratio"] == pytest.approx(float(table[(upstream, "50000")]["ratio_to_fetch"]))
        assert out["upstream"] == upstream and out["position_tokens"] == 50_000


def test_the_example_position_is_marked_past_the_context_window():
    from kvtier.report.pages import interior as page

    # the seed's example block starts at position 50,000 and ends at 50,016 > 8,192, Llama-3-70B's window
    n = page.numbers(scenario())
    assert n["position_words"] == "at position 50,000 (past the 8,192-position context window of llama-3-70b)"
    # at 8,176 the 16-token block ends at 8,192: the last block the window holds
    inside = page.numbers(scenario(**{"interior.position": "8176 tokens"}))
    assert inside["position_words"] == "at position 8,176 (within the 8,192-position context window of llama-3-70b)"


def test_the_interior_figure_keeps_the_limit_label_clear_of_the_fetch_line():
    import matplotlib.pyplot as plt

    from kvtier.report.pages import interior as page

    s = scenario()
    fig, caption = page.regen_vs_position(s)
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    label = next(t for t in ax.texts if "max_position_embeddings" in t.get_text())
    box = label.get_window_extent(renderer)
    # in the top-left corner, its long line broken in two, the label ends left of its own line at 8,192 positions
    assert label.get_text() == "llama-3-70b context limit\nmax_position_embeddings\n= 8,192"
    assert box.x1 < ax.transData.transform((8192, 1.0))[0]
    # the fetch line (81.92 µs = 0.08192 ms) does not run through the label, and the label stays inside the axes
    fetch_y = ax.transData.transform((1.0, 0.08192))[1]
    assert not box.y0 <= fetch_y <= box.y1
    frame = ax.get_window_extent(renderer)
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1
    # 34.70 / 17.923 ms = 1.94 and 82.25 s / 17.923 ms = 4,589 times the tail block
    assert "1.94× the tail block with the upstream KV resident, 4,589× evicted" in caption
    plt.close(fig)
