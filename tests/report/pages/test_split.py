"""The split page: a prefix's head computed while its tail is fetched, by hand in the chapter's world."""

from __future__ import annotations

import pytest

from kvtier.inputs.assumptions import load_assumptions
from kvtier.report.pages import split
from kvtier.report.preview import shown_text
from kvtier.scenario import Scenario

BUILD = {"workload.deployment": "build"}
"""The chapter's world on the trace pages: Llama-3-70B inside a batch at 25 % of 500 TFLOP/s, blocks of 16 tokens."""


def _build() -> Scenario:
    return split.SCENARIO(Scenario(load_assumptions(sets=BUILD)))


def test_a_4096_token_prefix_from_nvme_inside_a_batch_by_hand():
    grid = split.grid_table(_build())
    row = grid[(grid["regime"] == "batch") & (grid["tier"] == "nvme-gen4-x4") & (grid["prefix_tokens"] == 4096)]
    r = row.iloc[0]
    # the new tokens: 16, attending to the 4,096 before them and among themselves: 2 x 70e9 x 16 + 2,621,440 x
    # (16 x 4,096 + 16 x 17 / 2) = 2.412155e12 FLOP over 1.25e14 FLOP/s = 19.297 ms
    rest_ms = (2 * 70e9 * 16 + 2_621_440 * (16 * 4096 + 136)) / 1.25e14 * 1e3
    # fetched whole: 256 blocks x 92 us + 4,096 x 327,680 B / 7 GB/s = 23.552 + 191.739 ms, then the rest: 234.589 ms
    assert r["fetch_ms"] == pytest.approx(256 * 92e-3 + 4096 * 327_680 / 7e9 * 1e3 + rest_ms, rel=1e-9)
    # regenerated: (2 x 70e9 x 4,112 + 2,621,440 x 4,112 x 4,113 / 2) / 1.25e14 = 4,782.78 ms
    assert r["regenerate_ms"] == pytest.approx((2 * 70e9 * 4112 + 2_621_440 * 4112 * 4113 / 2) / 1.25e14 * 1e3)
    # split at 176: the head (2 x 70e9 x 176 + 2,621,440 x 176 x 177 / 2) / 1.25e14 = 197.45 ms runs under the
    # tail's 245 blocks x 92 us + 3,920 x 327,680 / 7e9 = 206.04 ms; at 192 the head (215.43 ms) would outlast its
    # tail (205.20 ms): 206.04 + 19.297 = 225.34 ms, 234.589 / 225.338 = 1.0411 times faster than fetching
    assert r["split_tokens"] == 176 and r["fastest"] == "split"
    tail_ms = (245 * 92e-6 + 3920 * 327_680 / 7e9) * 1e3
    assert r["split_ms"] == pytest.approx(tail_ms + rest_ms, rel=1e-9)
    assert r["gain"] == pytest.approx(r["fetch_ms"] / (tail_ms + rest_ms), rel=1e-9)
    # the chapter's model has an 8,192-token window: only the prefixes of 1,024 and 4,096 tokens (and 16 new) fit
    assert sorted(set(grid["prefix_tokens"])) == [1024, 4096]


def test_the_lead_chooses_its_comparisons_by_the_numbers():
    # the chapter's world: from host DRAM over PCIe 5.0 (63 GB/s) a 4,096-token prefix alone is fetched in
    # 4,096 x 327,680 / 63e9 = 21.3 ms, while any head of a block or more costs 16 x 1.12 ms = 17.9 ms of a lone
    # pass and its rest a pass of its own: no split beats fetching, and the lead says so
    n = split.numbers(_build())
    assert n["dram_gain_pct"] == 0 and "From host DRAM the split gains nothing." in n["lead"]
    assert n["lead"].startswith("From NVMe flash, a 4,096-token prefix reaches its first token")
    # the seed's named deployment (Llama-3.1-70B on 4 H100, vLLM): the split gains a little from host DRAM, and
    # the lead sets it against loading the same fetch layer by layer, the comparison's verb chosen by the numbers
    n = split.numbers(split.SCENARIO(Scenario()))
    assert n["dram_gain_pct"] > 0 and n["dram_overlap_gain_pct"] > 0
    than = "more than" if n["dram_gain_pct"] > n["dram_overlap_gain_pct"] else "less than"
    gains = f"it gains {shown_text(n['dram_gain_pct'])} %, {than} loading the fetch layer by layer under the prefill"
    assert gains in n["lead"]
    # the split is never slower than the better pure way
    grid = split.grid_table(_build())
    assert (grid["split_ms"] <= grid[["fetch_ms", "regenerate_ms"]].min(axis=1) * (1 + 1e-12)).all()


def test_on_the_trace_a_split_only_ever_shortens_a_requests_time():
    tt = split.ttft_table(_build()).set_index(["regime", "tier"])
    for q in ("p50", "p90", "p99"):
        assert (tt[f"ttft_{q}_s_split"] <= tt[f"ttft_{q}_s"] * (1 + 1e-12)).all()
    # from NVMe flash alone about a third of the requests are split (35.2 % here): those whose hit prefix is long
    # enough that its fetch outlasts a block's head; from PCIe 5.0, with a link 9 times faster, fewer (12.6 %)
    nvme, dram = tt.loc[("lone", "nvme-gen4-x4"), "split_share_pct"], tt.loc[("lone", "pcie5-x16"), "split_share_pct"]
    assert 20 < nvme < 50 and 0 < dram < nvme


def test_hidden_states_beat_the_kv_only_for_multi_head_attention_and_only_on_slow_links():
    hid = split.hidden_table(_build()).set_index("model")
    # Llama-2-7B's hidden states are half its KV (256 against 512 KiB a token in bf16); every GQA model's are larger
    assert hid.loc["llama-2-7b", "hidden_to_kv"] == 0.5 and (hid.drop("llama-2-7b")["hidden_to_kv"] > 1).all()
    # its block's projections: 16 x 2 x 4,096 x 262,144 = 3.436e10 FLOP at 500 TFLOP/s x 25 % = 0.27488 ms; its KV,
    # 16 x 524,288 B = 8,388,608 B, takes longer than that below 8,388,608 / 0.27488e-3 = 30.5 GB/s
    assert hid.loc["llama-2-7b", "restore_beats_fetch_below_GBps"] == pytest.approx(
        16 * 524_288 / (16 * 2 * 4096 * 262_144 / 1.25e14) / 1e9
    )
    assert hid["restore_beats_fetch_below_GBps"].drop("llama-2-7b").isna().all()
    # over PCIe 5.0 (63 GB/s, faster than 30.5) fetching the KV wins for every model
    assert (hid["fastest"] == "fetch").all()
    n = split.numbers(_build())
    assert (n["hidden_smaller_models"], n["hidden_max_gain"], n["n_restore_fastest"]) == ("llama-2-7b", 2.0, 0)


def test_the_measured_slowdown_applied_to_the_head_shrinks_the_split_s_gain_or_leaves_it():
    # the H200's copies slowed a forward pass beside them by (busy / alone - 1), about 4.3 %
    n = split.numbers(_build())
    assert 3 < n["copy_slowdown_pct"] < 6
    # the chapter's world, 4,096 tokens from NVMe alone: the best split computes 176 tokens, whose head (197.45 ms)
    # slowed by 4.3 % (205.9 ms) still fits under its tail's 206.04 ms: the time, and the gain, do not move
    assert n["nvme_gain_slowed"] == pytest.approx(n["nvme_gain"], rel=1e-12)
    # the seed's deployment, 65,536 tokens: the head sets the time near the crossing, so a slower head gains less
    n = split.numbers(split.SCENARIO(Scenario()))
    assert 1 < n["nvme_gain_slowed"] < n["nvme_gain"]


def test_the_papers_setups_are_worded_by_the_numbers():
    s = Scenario()
    assert split._count_words(15, 15) == "all 15 rows" and split._count_words(0, 15) == "none of the 15 rows"
    assert split._count_words(4, 15) == "4 of the 15 rows"
    # a restore that loses is worded as taking longer (1 / 0.705 = 1.42 times), one that wins as faster
    assert split._fast_link_sentence(28.0, 0.705, s).startswith("Over 28 GB/s restoring takes 1.42 times as long")
    assert "MFU of 25 %" in split._fast_link_sentence(28.0, 0.705, s)
    assert split._fast_link_sentence(28.0, 1.2, s).startswith("Over 28 GB/s restoring is still 1.2 times faster")
    n = split.numbers(split.SCENARIO(s))
    # the seed's MFU of 25 % on the A100: over one drive restoring wins (1.94x), over four it loses
    assert n["hcache_vs_fetch_slow"] == pytest.approx(1.941, abs=1e-3) and n["hcache_vs_fetch_fast"] < 1
    assert n["cake_beats_both"] == "in every row"
    assert n["cake_faster_sentence"].startswith("Loading alone is the faster pure way in all 15 rows")
    # 8 KV heads of 32 query heads: the KV is a quarter of a multi-head model's
    assert "grouped-query KV being 25 % of a multi-head model's" in n["cake_faster_sentence"]
    assert split._faster_sentence(3, 15, 25.0).startswith("Computing alone is the faster pure way in 12 of the 15 rows")
    # a reduction of 68.1 % is a gain of 1 / 0.319 = 3.13; of 94.6 %, 1 / 0.054 = 18.5
    assert n["cake_vs_compute_published"] == pytest.approx(3.1348, abs=1e-4)
    assert n["cake_vs_io_published"] == pytest.approx(18.519, abs=1e-3)
